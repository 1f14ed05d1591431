//! The npm package `ackwire`: the JS API (`web/ackwire.js`, the file the demo page loads too),
//! its declarations (`web/ackwire.d.ts`) and the wasm bundle (`web/pkg/`), with the
//! package.json and README of `web/npm/`. [`pack`] assembles it in `target/npm/ackwire/` and
//! runs `npm pack`; [`types`] type-checks an example and the READMEs' snippets against it.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use crate::{
    paths,
    process::{Result, output, run},
};

/// The package's version: xtask's own, which is the workspace's (`version.workspace = true`).
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What `web/npm/package.json` says in place of the version (once), for [`assemble`] to fill.
const VERSION_PLACEHOLDER: &str = "\"0.0.0-set-by-xtask\"";

/// Files of `web/` the package carries, at the same paths; the bundle's only in a full build.
const SOURCES: &[&str] = &["ackwire.js", "ackwire.d.ts"];
const BUNDLE: &[&str] = &["pkg/ackwire_wasm.js", "pkg/ackwire_wasm_bg.wasm"];

/// Every path in the tarball: npm adds package.json and README.md to `files`. Anything more
/// or less fails [`pack`], so the package never ships a stray file or misses one.
const TARBALL: &[&str] = &[
    "package/package.json",
    "package/README.md",
    "package/ackwire.js",
    "package/ackwire.d.ts",
    "package/pkg/ackwire_wasm.js",
    "package/pkg/ackwire_wasm_bg.wasm",
];

fn copy(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

/// Writes the package into `dir` (emptied first): package.json with the workspace's version,
/// the README, the JS and its declarations, and with `bundle` the wasm bundle built into
/// `web/pkg/` (type-checking needs no bundle).
fn assemble(dir: &Path, bundle: bool) -> Result<()> {
    let web = paths::web_dir();
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| format!("cannot empty {}: {e}", dir.display()))?;
    }
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let template_path = web.join("npm/package.json");
    let template = fs::read_to_string(&template_path)
        .map_err(|e| format!("cannot read {}: {e}", template_path.display()))?;
    if template.matches(VERSION_PLACEHOLDER).count() != 1 {
        return Err(format!(
            "{} must say \"version\": {VERSION_PLACEHOLDER} once (xtask writes the workspace's version there)",
            template_path.display()
        ));
    }
    let manifest = template.replace(VERSION_PLACEHOLDER, &format!("\"{VERSION}\""));
    fs::write(dir.join("package.json"), manifest).map_err(|e| e.to_string())?;
    copy(&web.join("npm/README.md"), &dir.join("README.md"))?;
    let files = SOURCES.iter().chain(if bundle { BUNDLE } else { &[] });
    for file in files {
        copy(&web.join(file), &dir.join(file))?;
    }
    Ok(())
}

/// Assembles the package after the bundle build (`bundle::build`) into `target/npm/ackwire/`
/// and packs it with `npm pack` into `target/npm/ackwire-<version>.tgz`; returns its path.
pub(crate) fn pack() -> Result<PathBuf> {
    let out = paths::root().join("target/npm");
    let dir = out.join("ackwire");
    println!("== npm package ackwire {VERSION}");
    assemble(&dir, true)?;
    let tarball = out.join(format!("ackwire-{VERSION}.tgz"));
    let _ = fs::remove_file(&tarball);
    // npm prints the contents table on stderr and the tarball's name on stdout.
    let name = output(
        Command::new("npm")
            .current_dir(&dir)
            .args(["pack", "--no-update-notifier", "--pack-destination"])
            .arg(&out),
    )?;
    let name = name.lines().last().unwrap_or_default().trim();
    if out.join(name) != tarball || !tarball.exists() {
        return Err(format!("npm pack made {name:?}, not {}", tarball.display()));
    }
    let listing = output(Command::new("tar").arg("-tzf").arg(&tarball))?;
    let mut listed: Vec<&str> = listing.lines().collect();
    let mut expected = TARBALL.to_vec();
    listed.sort_unstable();
    expected.sort_unstable();
    if listed != expected {
        return Err(format!(
            "{} holds {listed:?}; the package is {expected:?}",
            tarball.display()
        ));
    }
    let bytes = fs::metadata(&tarball).map_err(|e| e.to_string())?.len();
    println!("   {}: {bytes} bytes", tarball.display());
    Ok(tarball)
}

/// Where the type check lives: `web/types-check/` (its tsconfig.json and example.ts).
fn check_dir() -> PathBuf {
    paths::web_dir().join("types-check")
}

/// The ```js blocks of `markdown` (of its section headed `section` only, when given), as a
/// script whose lines are the markdown's: the blocks' lines at their own numbers, in order,
/// every other line empty but the first, which says where it comes from. So the check reads
/// exactly what the README says, and tsc's line numbers are the README's.
fn js_snippets(markdown: &str, source: &str, section: Option<&str>) -> Result<String> {
    let mut lines = vec![format!(
        "// Generated by `cargo xtask types` from {source}: edit that, not this."
    )];
    let mut in_section = section.is_none();
    // Inside a fenced block: `Some(true)` for a ```js one of the section, which is kept.
    let mut fence: Option<bool> = None;
    let mut found = 0;
    for (i, line) in markdown.lines().enumerate() {
        let mut keep = String::new();
        let fenced = line.trim_start().starts_with("```");
        match fence {
            Some(_) if fenced => fence = None,
            Some(js) => {
                if js {
                    keep = line.to_owned();
                }
            }
            None if fenced => {
                let js = in_section && line.trim() == "```js";
                found += usize::from(js);
                fence = Some(js);
            }
            None => {
                if let Some(heading) = line.strip_prefix("## ") {
                    in_section = section.is_none_or(|s| heading.trim() == s);
                }
            }
        }
        if i > 0 {
            lines.push(keep);
        }
    }
    if found == 0 {
        let place = section.map_or(String::new(), |s| format!(", section \"{s}\""));
        return Err(format!("no ```js block in {source}{place}"));
    }
    lines.push(String::new());
    Ok(lines.join("\n"))
}

/// `tsc --noEmit` on `web/types-check/`: its example program and the JS snippets of the README
/// ("Use it in your game"), of the package's README and of the guide's "Options" and "Clocks", each importing `ackwire` by name from
/// the package as assembled into `web/types-check/node_modules/ackwire/` (resolved through
/// its `exports`, as a game's compiler does). Any type error fails it.
pub(crate) fn types() -> Result<()> {
    let check = check_dir();
    assemble(&check.join("node_modules/ackwire"), false)?;
    let generated = check.join("generated");
    fs::create_dir_all(&generated).map_err(|e| e.to_string())?;
    let root = paths::root();
    for (markdown, name, section, out) in [
        (
            "README.md",
            "README.md",
            Some("Use it in your game"),
            "README.md.js",
        ),
        (
            "web/npm/README.md",
            "web/npm/README.md",
            None,
            "npm-README.md.js",
        ),
        (
            "docs/api.md",
            "docs/api.md",
            Some("Options"),
            "docs-api.md.js",
        ),
        (
            "docs/api.md",
            "docs/api.md",
            Some("Clocks"),
            "docs-api-clocks.md.js",
        ),
    ] {
        let markdown = root.join(markdown);
        let text = fs::read_to_string(&markdown)
            .map_err(|e| format!("cannot read {}: {e}", markdown.display()))?;
        let script = js_snippets(&text, name, section)?;
        let file = generated.join(out);
        fs::write(&file, script).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    }
    let tsc = paths::web_dir().join("node_modules/.bin/tsc");
    run(Command::new(tsc)
        .current_dir(&check)
        .args(["--noEmit", "-p", "tsconfig.json"]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARKDOWN: &str = "# t\n\n```js\nnot this\n```\n## Use\n\ntext\n```js\nlet a = 1;\n\nlet b = a;\n```\n```rust\nfn f() {}\n```\n```js\nb;\n```\n## Next\n```js\nnor this\n```\n";

    #[test]
    fn snippets_keep_their_line_numbers_and_only_their_section() {
        let script = js_snippets(MARKDOWN, "T.md", Some("Use")).unwrap();
        let lines: Vec<&str> = script.lines().collect();
        assert!(lines[0].starts_with("// Generated"));
        assert_eq!(lines[9], "let a = 1;");
        assert_eq!(lines[11], "let b = a;");
        assert_eq!(lines[17], "b;");
        let code: Vec<&str> = lines[1..]
            .iter()
            .copied()
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(code, ["let a = 1;", "let b = a;", "b;"]);
    }

    #[test]
    fn without_a_section_every_block_is_taken_and_none_is_an_error() {
        let script = js_snippets(MARKDOWN, "T.md", None).unwrap();
        assert!(script.contains("not this") && script.contains("nor this"));
        assert!(js_snippets("# none\n```rust\n```\n", "T.md", None).is_err());
        assert!(js_snippets(MARKDOWN, "T.md", Some("Missing")).is_err());
    }
}
