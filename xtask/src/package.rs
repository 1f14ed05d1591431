//! `cargo xtask package`: the crates this workspace publishes, packaged and verified as
//! `cargo publish` would (a `.crate` each, unpacked and built on its own, outside the
//! workspace, against the others' packages), so that none reaches crates.io unable to build.
//!
//! The signal server embeds the pages and the wasm bundle, which live in `web/`, outside its
//! crate, and the bundle is built by `cargo xtask bundle` (wasm32, wasm-bindgen, wasm-opt),
//! which no build script can run. So its package carries a copy of them: [`stage_assets`]
//! puts the files the server embeds into `signal-server/assets/` (ignored by git, listed in
//! its `include`), and its `build.rs` embeds that folder when built from the package.

use std::{
    fs,
    path::{Path, PathBuf},
};

use crate::{
    paths,
    process::{Result, run},
};

/// Names the server never embeds from `web/`, at any depth (besides dotfiles): tooling,
/// tests and their output. The same list as `#[exclude]` on `Embedded` and `skipped` in
/// `signal-server/src/pages.rs` (a test below holds them together).
const NOT_EMBEDDED: &[&str] = &["node_modules", "e2e", "test-results", "npm", "types-check"];

/// Whether the server embeds `web/`'s file or folder `name`.
fn embedded(name: &str) -> bool {
    !(name.starts_with('.')
        || NOT_EMBEDDED.contains(&name)
        || (name.starts_with("package") && name.ends_with(".json")))
}

/// Files a server without them would serve broken pages: the wasm bundle and the dashboard's
/// vendored chart library, built by `cargo xtask bundle`.
const BUILT: &[&str] = &[
    "pkg/ackwire_wasm.js",
    "pkg/ackwire_wasm_bg.wasm",
    "vendor/uPlot.esm.js",
    "vendor/uPlot.min.css",
];

fn assets_dir() -> PathBuf {
    paths::root().join("signal-server/assets")
}

/// Replaces `signal-server/assets/` with the files of `web/` the server embeds (the bundle
/// built already); returns how many files and bytes.
pub(crate) fn stage_assets() -> Result<(usize, u64)> {
    let web = paths::web_dir();
    for file in BUILT {
        if !web.join(file).is_file() {
            return Err(format!(
                "web/{file} is missing: `cargo xtask bundle` builds it (the signal server's package carries it)"
            ));
        }
    }
    let to = assets_dir();
    if to.exists() {
        fs::remove_dir_all(&to).map_err(|e| format!("cannot empty {}: {e}", to.display()))?;
    }
    let mut count = (0, 0);
    copy_tree(&web, &to, &mut count)?;
    Ok(count)
}

fn copy_tree(from: &Path, to: &Path, count: &mut (usize, u64)) -> Result<()> {
    fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries = fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    let mut names: Vec<_> = entries
        .map(|e| e.map(|e| e.file_name()))
        .collect::<std::io::Result<_>>()
        .map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    names.sort();
    for name in names {
        let Some(text) = name.to_str() else {
            return Err(format!("{}: a file name that is not UTF-8", from.display()));
        };
        if !embedded(text) {
            continue;
        }
        let (src, dst) = (from.join(&name), to.join(&name));
        // Follows symlinks, as the server does.
        let meta = fs::metadata(&src).map_err(|e| format!("{}: {e}", src.display()))?;
        if meta.is_dir() {
            copy_tree(&src, &dst, count)?;
        } else {
            count.1 += fs::copy(&src, &dst)
                .map_err(|e| format!("cannot copy {} to {}: {e}", src.display(), dst.display()))?;
            count.0 += 1;
        }
    }
    Ok(())
}

/// The workspace's members that may be published: every member whose manifest does not say
/// `publish = false`, by package name, in the order of `members`.
pub(crate) fn published_crates() -> Result<Vec<String>> {
    let root = paths::root();
    let manifest = read(&root.join("Cargo.toml"))?;
    let members = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("members = ["))
        .and_then(|l| l.split(']').next())
        .ok_or("Cargo.toml: no one-line `members = [...]`")?;
    let mut crates = Vec::new();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')) {
        if member.is_empty() {
            continue;
        }
        let path = root.join(member).join("Cargo.toml");
        let text = read(&path)?;
        let package = text
            .split("\n[")
            .find(|table| table.trim_start_matches('[').starts_with("package]"))
            .ok_or_else(|| format!("{}: no [package]", path.display()))?;
        let value = |key: &str| {
            package.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
            })
        };
        let name = value("name").ok_or_else(|| format!("{}: no name", path.display()))?;
        if value("publish").as_deref() != Some("false") {
            crates.push(name);
        }
    }
    Ok(crates)
}

fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// The sections of the workspace's `[profile.dev]` that shape how dependencies are compiled
/// (`[profile.dev]` and the package overrides, except those of `own` crates), as a cargo
/// configuration file: a package's verification is a build outside the workspace, which
/// reads no `[profile]` of the workspace's manifest.
fn dev_profile(manifest: &str, own: &[String]) -> String {
    let mut out = String::new();
    let mut keep = false;
    for line in manifest.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            let table = trimmed.trim_matches(['[', ']']);
            keep = table == "profile.dev"
                || table
                    .strip_prefix("profile.dev.package.")
                    .is_some_and(|p| !own.iter().any(|c| c == p.trim_matches('"')));
        }
        if keep && !trimmed.starts_with('#') && !trimmed.is_empty() {
            out.push_str(trimmed);
            out.push('\n');
        }
    }
    out
}

/// Writes [`dev_profile`] of the workspace's manifest (the published crates' own overrides
/// left out) to `path`, for [`built_as_the_workspace`].
pub(crate) fn write_dev_profile(path: &Path) -> Result<()> {
    let manifest = read(&paths::root().join("Cargo.toml"))?;
    fs::write(path, dev_profile(&manifest, &published_crates()?))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Cargo arguments for a build outside the workspace (a package's verification, the outside
/// game) that reuses what the workspace's builds compiled: their build directory (CI's cache
/// of it, else the target directory) and their dev profile for dependencies (`profile`, as
/// [`write_dev_profile`] wrote it), as configuration, so that the build's manifest stays its own.
pub(crate) fn built_as_the_workspace(profile: &Path) -> [std::ffi::OsString; 4] {
    let build_dir = paths::native_build_dir();
    [
        "--config".into(),
        format!("build.build-dir={:?}", build_dir.display().to_string()).into(),
        "--config".into(),
        profile.into(),
    ]
}

/// `cargo package` of every published crate, then each `.crate` checked on its own, outside
/// the workspace: unpacked into `target/packages/verify/`, a workspace of the packages alone
/// whose `[patch.crates-io]` points each one's dependencies on the others at their fresh
/// packages, and no other patch (so against the crates crates.io has, as a user's build would
/// be); then `cargo check -p NAME` of each, which resolves the features of that package and
/// its dependencies alone, as `cargo publish`'s own verification does. The bundle must be
/// built already (`cargo xtask bundle`).
///
/// Checked rather than built (what `cargo package` would do): a check runs every build script
/// (the server's embedding of its assets among them), resolves every dependency and
/// type-checks every line of the package, which is what a package can get wrong (a file left
/// out of `include`, a feature a dependency lacks); codegen and linking see the same files.
/// Built, the five verifications took 290 s of CPU of a CI run (2026-11-30), most of it
/// compiling the stock `webrtc` stack's code twice more.
///
/// The checks share the workspace's build directory (`build.build-dir`) and its profile for
/// dependencies, so every dependency already checked with the same features (`cargo doc`'s
/// in the lints) is reused. The `.crate` files go to `target/packages/package/`.
pub(crate) fn package() -> Result<()> {
    let (files, bytes) = stage_assets()?;
    println!(
        "   signal-server/assets/: {files} files, {} KB copied from web/",
        bytes / 1000
    );
    let crates = published_crates()?;
    let out = paths::target_dir().join("packages");
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let profile = out.join("dev-profile.toml");
    write_dev_profile(&profile)?;
    let mut cmd = paths::cargo();
    cmd.arg("package").arg("--no-verify");
    for name in &crates {
        cmd.args(["-p", name]);
    }
    // The packages are made from the files as they are (a CI run's tree may carry the very
    // change under test): whether git has them committed is `cargo publish`'s question.
    cmd.arg("--allow-dirty").arg("--target-dir").arg(&out);
    run(&mut cmd)?;
    let verify = out.join("verify");
    let dirs = unpack_all(&out.join("package"), &verify, &crates)?;
    fs::write(verify.join("Cargo.toml"), verify_manifest(&crates, &dirs))
        .map_err(|e| format!("cannot write {}: {e}", verify.display()))?;
    // The workspace's locked versions: the check resolves what the test build built.
    fs::copy(paths::root().join("Cargo.lock"), verify.join("Cargo.lock"))
        .map_err(|e| format!("cannot copy Cargo.lock: {e}"))?;
    for name in &crates {
        run(paths::cargo()
            .current_dir(&verify)
            .args(["check", "-p", name, "--target-dir"])
            .arg(out.join("verify-target"))
            .args(built_as_the_workspace(&profile))
            // Incremental state of builds nothing rebuilds would only cost disk.
            .env("CARGO_INCREMENTAL", "0"))?;
    }
    println!("   packages: {}", out.join("package").display());
    Ok(())
}

/// Unpacks each crate's `.crate` (`NAME-VERSION.crate` in `packages`) into `into/`, emptied
/// first; returns each one's directory name (`NAME-VERSION`), in `crates`' order.
fn unpack_all(packages: &Path, into: &Path, crates: &[String]) -> Result<Vec<String>> {
    if into.exists() {
        fs::remove_dir_all(into).map_err(|e| format!("cannot empty {}: {e}", into.display()))?;
    }
    fs::create_dir_all(into).map_err(|e| format!("cannot create {}: {e}", into.display()))?;
    let mut dirs = Vec::new();
    for name in crates {
        let newest = fs::read_dir(packages)
            .map_err(|e| format!("cannot read {}: {e}", packages.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix(&format!("{name}-")))
                    .and_then(|rest| rest.strip_suffix(".crate"))
                    .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
            })
            .max_by_key(|p| fs::metadata(p).and_then(|m| m.modified()).ok())
            .ok_or_else(|| format!("no {name}-*.crate in {}", packages.display()))?;
        let file = fs::File::open(&newest).map_err(|e| format!("{}: {e}", newest.display()))?;
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
        // Unpacked as new files: a package keeps its files' old times, and the shared build
        // directory keys a path crate's artifacts by its path in the verify workspace, the same
        // in every clone, so an artifact of an earlier run's package would pass for fresh.
        archive.set_preserve_mtime(false);
        archive
            .unpack(into)
            .map_err(|e| format!("cannot unpack {}: {e}", newest.display()))?;
        let stem = newest
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        dirs.push(stem);
    }
    Ok(dirs)
}

/// The manifest of the workspace the packages are checked in: the unpacked packages as its
/// members, each one's crates.io name patched to its directory, nothing else.
fn verify_manifest(crates: &[String], dirs: &[String]) -> String {
    let members: Vec<String> = dirs.iter().map(|d| format!("{d:?}")).collect();
    let mut manifest = format!(
        "# Written by `cargo xtask package`: the packages, checked as crates.io would build them.\n\
         [workspace]\nresolver = \"3\"\nmembers = [{}]\n\n[patch.crates-io]\n",
        members.join(", ")
    );
    for (name, dir) in crates.iter().zip(dirs) {
        manifest.push_str(&format!("{name} = {{ path = {dir:?} }}\n"));
    }
    manifest
}

/// `cargo xtask package`: setup, the bundle, then [`package`].
pub(crate) fn command() -> Result<()> {
    let tools = crate::setup::run()?;
    crate::bundle::build(&tools)?;
    package()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_crates_are_the_libraries_and_the_server() {
        assert_eq!(
            published_crates().unwrap(),
            [
                "ackwire-core",
                "ackwire-signalling",
                "ackwire-room",
                "ackwire",
                "ackwire-signal",
            ]
        );
    }

    #[test]
    fn verification_compiles_dependencies_as_the_workspace_does() {
        let manifest = "[profile.release]\nlto = true\n\n[profile.dev]\ndebug = 1\n\n\
                        # a comment\n[profile.dev.package.\"*\"]\ndebug = false\n\
                        [profile.dev.package.mine]\nopt-level = 2\n\
                        [profile.dev.package.brotli]\nopt-level = 3\n[patch.crates-io]\nx = 1\n";
        assert_eq!(
            dev_profile(manifest, &["mine".to_owned()]),
            "[profile.dev]\ndebug = 1\n[profile.dev.package.\"*\"]\ndebug = false\n\
             [profile.dev.package.brotli]\nopt-level = 3\n"
        );
    }

    #[test]
    fn the_packages_are_checked_against_each_other_and_nothing_else_patched() {
        let manifest = verify_manifest(
            &["ackwire-core".to_owned(), "ackwire".to_owned()],
            &["ackwire-core-0.1.0".to_owned(), "ackwire-0.1.0".to_owned()],
        );
        assert!(
            manifest.contains("members = [\"ackwire-core-0.1.0\", \"ackwire-0.1.0\"]\n"),
            "{manifest}"
        );
        let patches = &manifest[manifest.find("[patch.crates-io]\n").unwrap()..];
        assert_eq!(
            patches,
            "[patch.crates-io]\nackwire-core = { path = \"ackwire-core-0.1.0\" }\n\
             ackwire = { path = \"ackwire-0.1.0\" }\n"
        );
        assert!(!manifest.contains("third_party"));
    }

    #[test]
    fn the_staged_assets_leave_out_what_the_server_does_not_embed() {
        let pages = read(&paths::root().join("signal-server/src/pages.rs")).unwrap();
        for name in NOT_EMBEDDED {
            assert!(
                pages.contains(&format!("#[exclude = \"{name}/**\"]")),
                "pages.rs does not exclude {name}/ from its embedded copy"
            );
            assert!(
                pages.contains(&format!("\"{name}\"")),
                "pages.rs's `skipped` does not name {name}"
            );
            assert!(!embedded(name));
        }
        assert!(pages.contains("#[exclude = \"package*.json\"]"));
        for name in ["package.json", "package-lock.json", ".gitignore"] {
            assert!(!embedded(name), "{name}");
        }
        for name in ["room.html", "ackwire.js", "pkg", "vendor", "style.css"] {
            assert!(embedded(name), "{name}");
        }
    }
}
