//! `cargo xtask third-party`: proves that each directory of `third_party/` is the crate
//! crates.io publishes, pinned by its `.crate`'s SHA-256 in `third_party/published.txt`, with
//! the directory's `ackwire.diff` applied: no file more, none missing, no byte different. It
//! also checks that the workspace builds those directories (`[patch.crates-io]` names each
//! one, and `Cargo.lock` resolves the crate to it).
//!
//! The `.crate` files come from cargo's download cache (`$CARGO_HOME/registry/cache`); one
//! that is not there is downloaded by cargo itself (`cargo fetch` of a throwaway manifest
//! that depends on the pinned versions), so it is checked against the registry's index on the
//! way, and then against the pin here. The diff is applied strictly: every hunk where its
//! header says, its context exact, no fuzz.

use std::{
    collections::BTreeMap,
    fs,
    io::Read,
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

use crate::{
    paths,
    process::{Result, run},
};

/// Files of a package cargo writes itself (`cargo package`), never part of the source.
const CARGO_OWN: &[&str] = &["Cargo.toml.orig", ".cargo_vcs_info.json", "Cargo.lock"];

/// Ackwire's files in each directory, not compared: they must be there.
const OURS: &[&str] = &["ackwire.diff", "PATCHED.md", "UPSTREAM.md"];

/// A published crate, pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pinned {
    name: String,
    version: String,
    sha256: String,
}

impl Pinned {
    fn file_name(&self) -> String {
        format!("{}-{}.crate", self.name, self.version)
    }
}

/// One directory's recipe (a `[dir]` block of `published.txt`).
#[derive(Debug, Default)]
struct Recipe {
    dir: String,
    krate: Option<Pinned>,
    drop: Vec<String>,
    /// (file here, the crate it comes from, its path there)
    copy: Vec<(String, Pinned, String)>,
}

fn parse(text: &str) -> Result<Vec<Recipe>> {
    let mut recipes: Vec<Recipe> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = || format!("published.txt line {}", n + 1);
        if let Some(dir) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            recipes.push(Recipe {
                dir: dir.to_owned(),
                ..Recipe::default()
            });
            continue;
        }
        let recipe = recipes
            .last_mut()
            .ok_or_else(|| format!("{}: a line before any [dir]", at()))?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let pinned = |w: &[&str]| -> Result<Pinned> {
            let sha256 = w[2].to_ascii_lowercase();
            if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!("{}: `{}` is not a SHA-256", at(), w[2]));
            }
            Ok(Pinned {
                name: w[0].to_owned(),
                version: w[1].to_owned(),
                sha256,
            })
        };
        match words[..] {
            ["crate", ref rest @ ..] if rest.len() == 3 && recipe.krate.is_none() => {
                recipe.krate = Some(pinned(rest)?)
            }
            ["drop", path] => recipe.drop.push(path.to_owned()),
            ["copy", file, ref rest @ ..] if rest.len() == 4 => {
                recipe
                    .copy
                    .push((file.to_owned(), pinned(&rest[..3])?, rest[3].to_owned()))
            }
            _ => return Err(format!("{}: cannot read `{line}`", at())),
        }
    }
    for r in &recipes {
        if r.krate.is_none() {
            return Err(format!("published.txt: [{}] names no crate", r.dir));
        }
    }
    Ok(recipes)
}

/// A package's files by path inside it, and their bytes.
type Files = BTreeMap<String, Vec<u8>>;

/// The files of a `.crate` (a gzipped tar whose paths all start with `name-version/`).
fn unpack(krate: &[u8], pinned: &Pinned) -> Result<Files> {
    let prefix = format!("{}-{}/", pinned.name, pinned.version);
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(krate));
    let mut files = Files::new();
    let bad = |e: std::io::Error| format!("{}: {e}", pinned.file_name());
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let path = entry.path().map_err(bad)?.to_string_lossy().into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        let Some(rel) = path.strip_prefix(&prefix).filter(|_| kind.is_file()) else {
            return Err(format!(
                "{}: unexpected entry {path} ({kind:?})",
                pinned.file_name()
            ));
        };
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(bad)?;
        files.insert(rel.to_owned(), bytes);
    }
    Ok(files)
}

/// Applies a unified diff (`-p1`: paths after `a/` and `b/`) to `files`, each file's part by
/// `diffy` (every context and removed line as it says; a hunk may sit a few lines off, as GNU
/// patch allows, since the tree it makes is compared byte for byte anyway).
fn apply(diff: &str, files: &mut Files) -> Result<()> {
    // diffy reads one file's patch at a time: a part starts at each `---` line followed by a
    // `+++` one.
    let lines: Vec<&str> = diff.split_inclusive('\n').collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
        })
        .collect();
    if starts.is_empty() && !diff.trim().is_empty() {
        return Err("no `---`/`+++` file header".into());
    }
    for (n, &at) in starts.iter().enumerate() {
        let part: String = lines[at..starts.get(n + 1).copied().unwrap_or(lines.len())].concat();
        let path_of = |header: &str, side: &str| -> Option<String> {
            let path = header[4..].trim_end_matches(['\n', '\r']);
            let path = path.split('\t').next().unwrap_or(path);
            (path != "/dev/null").then(|| path.strip_prefix(side).unwrap_or(path).to_owned())
        };
        let (old_path, new_path) = (path_of(lines[at], "a/"), path_of(lines[at + 1], "b/"));
        let path = new_path
            .clone()
            .or(old_path.clone())
            .ok_or("a diff of /dev/null to /dev/null")?;
        let source: Vec<u8> = match &old_path {
            Some(p) => files
                .get(p)
                .cloned()
                .ok_or_else(|| format!("the diff changes {p}, which the package has not"))?,
            None if files.contains_key(&path) => {
                return Err(format!("the diff creates {path}, which the package has"));
            }
            None => Vec::new(),
        };
        let patch = diffy::Patch::from_bytes(part.as_bytes())
            .map_err(|e| format!("{path}: diff line {}: {e}", at + 1))?;
        let out = diffy::apply_bytes(&source, &patch).map_err(|e| {
            format!("{path}: {e}: the published file has other lines than the diff says")
        })?;
        if let Some(p) = &old_path {
            files.remove(p);
        }
        if let Some(p) = new_path {
            files.insert(p, out);
        }
    }
    Ok(())
}

/// What `recipe`'s directory must hold, built from the published crates in `crates`.
fn expected(recipe: &Recipe, diff: &str, crates: &BTreeMap<String, Files>) -> Result<Files> {
    let krate = recipe.krate.as_ref().expect("parse checks it");
    let mut files = crates[&krate.file_name()].clone();
    for own in CARGO_OWN {
        files.remove(*own);
    }
    for drop in &recipe.drop {
        let before = files.len();
        match drop.strip_suffix('/') {
            Some(folder) => files.retain(|p, _| !p.starts_with(&format!("{folder}/"))),
            None => {
                files.remove(drop);
            }
        }
        if files.len() == before {
            return Err(format!(
                "[{}] drops {drop}, which {} has not",
                recipe.dir,
                krate.file_name()
            ));
        }
    }
    apply(diff, &mut files).map_err(|e| format!("{}/ackwire.diff: {e}", recipe.dir))?;
    for (file, from, path) in &recipe.copy {
        let bytes = crates[&from.file_name()].get(path).ok_or_else(|| {
            format!(
                "[{}] copies {path} of {}, which has none",
                recipe.dir,
                from.file_name()
            )
        })?;
        files.insert(file.clone(), bytes.clone());
    }
    Ok(files)
}

/// Every file under `dir`, by its path relative to it (`/`-separated), dotfiles included.
fn read_tree(dir: &Path) -> Result<Files> {
    fn walk(dir: &Path, rel: &str, files: &mut Files) -> Result<()> {
        let entries =
            fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| e.to_string())?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let kind = entry.file_type().map_err(|e| e.to_string())?;
            if kind.is_dir() {
                walk(&entry.path(), &rel, files)?;
            } else {
                let bytes = fs::read(entry.path())
                    .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
                files.insert(rel, bytes);
            }
        }
        Ok(())
    }
    let mut files = Files::new();
    walk(dir, "", &mut files)?;
    Ok(files)
}

/// Where `expected` and `actual` part: one line per file missing, extra or different.
fn differences(expected: &Files, actual: &Files) -> Vec<String> {
    let mut out = Vec::new();
    for (path, want) in expected {
        match actual.get(path) {
            None => out.push(format!("missing: {path} (the patched package has it)")),
            Some(have) if have != want => {
                let line = want
                    .split(|&b| b == b'\n')
                    .zip(have.split(|&b| b == b'\n'))
                    .position(|(a, b)| a != b)
                    .unwrap_or_else(|| {
                        // One is the other and more: the first line only one of them has.
                        let lines = |v: &[u8]| v.split(|&b| b == b'\n').count();
                        lines(want).min(lines(have))
                    })
                    + 1;
                out.push(format!(
                    "differs: {path}, first at line {line} ({} bytes here, {} in the patched package)",
                    have.len(),
                    want.len()
                ));
            }
            Some(_) => {}
        }
    }
    for path in actual.keys().filter(|p| !expected.contains_key(*p)) {
        out.push(format!(
            "extra: {path} (neither the patched package's nor ackwire's own)"
        ));
    }
    out
}

/// The `.crate` files of `pinned`, read from cargo's cache, fetched by cargo when missing,
/// each checked against its pin; then unpacked.
fn published(pinned: &[Pinned]) -> Result<BTreeMap<String, Files>> {
    let cache = cargo_home().join("registry/cache");
    let find = |p: &Pinned| -> Option<PathBuf> {
        let entries = fs::read_dir(&cache).ok()?;
        entries
            .flatten()
            .map(|e| e.path().join(p.file_name()))
            .find(|f| f.is_file())
    };
    let missing: Vec<&Pinned> = pinned.iter().filter(|p| find(p).is_none()).collect();
    if !missing.is_empty() {
        fetch(&missing)?;
    }
    let mut out = BTreeMap::new();
    for p in pinned {
        let path = find(p).ok_or_else(|| {
            format!(
                "{} is not in {} even after `cargo fetch`",
                p.file_name(),
                cache.display()
            )
        })?;
        let bytes = fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let sha256 = hex(&Sha256::digest(&bytes));
        if sha256 != p.sha256 {
            return Err(format!(
                "{} has SHA-256 {sha256}, not the {} pinned in third_party/published.txt",
                path.display(),
                p.sha256
            ));
        }
        out.insert(p.file_name(), unpack(&bytes, p)?);
    }
    Ok(out)
}

fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"))
}

/// Has cargo download the `.crate` of each of `crates` into its cache: `cargo fetch` of a
/// throwaway package depending on exactly those versions, its lock file seeded with the
/// workspace's so that the rest of the graph resolves to crates already downloaded.
fn fetch(crates: &[&Pinned]) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("ackwire-third-party-{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut manifest = String::from(
        "[package]\nname = \"ackwire-third-party-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[lib]\npath = \"lib.rs\"\n\n[workspace]\n\n[dependencies]\n",
    );
    for (n, c) in crates.iter().enumerate() {
        manifest.push_str(&format!(
            "dep{n} = {{ package = \"{}\", version = \"={}\" }}\n",
            c.name, c.version
        ));
    }
    let written = fs::write(dir.join("Cargo.toml"), manifest)
        .and_then(|()| fs::write(dir.join("lib.rs"), ""))
        .and_then(|()| {
            fs::copy(paths::root().join("Cargo.lock"), dir.join("Cargo.lock")).map(|_| ())
        });
    let result = written
        .map_err(|e| {
            format!(
                "cannot write the throwaway package in {}: {e}",
                dir.display()
            )
        })
        .and_then(|()| {
            run(std::process::Command::new(env!("CARGO"))
                .current_dir(&dir)
                .args(["fetch", "--target"])
                .arg(host_triple()))
        });
    let _ = fs::remove_dir_all(&dir);
    result
}

/// The triple xtask was built for: the machine's (only its dependencies are fetched).
fn host_triple() -> String {
    let out = std::process::Command::new("rustc").arg("-vV").output();
    out.ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        })
        .unwrap_or_else(|| "x86_64-unknown-linux-gnu".into())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// That the workspace builds `recipe`'s directory: `[patch.crates-io]` names it, and
/// `Cargo.lock` has its crate at the pinned version from a path (no `source`), which it has
/// only when the patch is used.
fn check_patched(recipe: &Recipe, manifest: &str, lock: &str) -> Result<()> {
    let krate = recipe.krate.as_ref().expect("parse checks it");
    let entry = format!(
        "{} = {{ path = \"third_party/{}\" }}",
        krate.name, recipe.dir
    );
    let patch = manifest
        .split("\n[patch.crates-io]\n")
        .nth(1)
        .map(|t| t.split("\n[").next().unwrap_or(t))
        .unwrap_or("");
    if !patch.lines().any(|l| l.trim() == entry) {
        return Err(format!(
            "Cargo.toml's [patch.crates-io] has no `{entry}`: the workspace does not build third_party/{}",
            recipe.dir
        ));
    }
    let used = lock.split("[[package]]").any(|block| {
        block.contains(&format!("\nname = \"{}\"\n", krate.name))
            && block.contains(&format!("\nversion = \"{}\"\n", krate.version))
            && !block.contains("\nsource = ")
    });
    if !used {
        return Err(format!(
            "Cargo.lock has no {} {} from a path: the patch of third_party/{} is not used \
             (does a dependency want another version?)",
            krate.name, krate.version, recipe.dir
        ));
    }
    Ok(())
}

/// Checks every directory of `published.txt`; all that drifted are reported together.
pub(crate) fn check() -> Result<()> {
    let root = paths::root();
    let third_party = root.join("third_party");
    let text = fs::read_to_string(third_party.join("published.txt"))
        .map_err(|e| format!("cannot read third_party/published.txt: {e}"))?;
    let recipes = parse(&text)?;
    let mut pins: Vec<Pinned> = Vec::new();
    for r in &recipes {
        for p in r.krate.iter().chain(r.copy.iter().map(|(_, p, _)| p)) {
            match pins.iter().find(|q| q.file_name() == p.file_name()) {
                Some(q) if q.sha256 != p.sha256 => {
                    return Err(format!(
                        "published.txt pins {} twice, differently",
                        p.file_name()
                    ));
                }
                Some(_) => {}
                None => pins.push(p.clone()),
            }
        }
    }
    let crates = published(&pins)?;
    let manifest = fs::read_to_string(root.join("Cargo.toml")).map_err(|e| e.to_string())?;
    let lock = fs::read_to_string(root.join("Cargo.lock")).map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    let listed: Vec<&str> = recipes.iter().map(|r| r.dir.as_str()).collect();
    for entry in fs::read_dir(&third_party)
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() && !listed.contains(&name.as_str()) {
            problems.push(format!("third_party/{name}: not in published.txt"));
        }
    }
    for recipe in &recipes {
        let dir = third_party.join(&recipe.dir);
        let outcome = (|| -> Result<Vec<String>> {
            check_patched(recipe, &manifest, &lock)?;
            let mut actual = read_tree(&dir)?;
            for own in OURS {
                if actual.remove(*own).is_none() {
                    return Err(format!("{own} is missing"));
                }
            }
            let diff = fs::read_to_string(dir.join("ackwire.diff")).map_err(|e| e.to_string())?;
            let want = expected(recipe, &diff, &crates)?;
            let krate = recipe.krate.as_ref().expect("parse checks it");
            let found = differences(&want, &actual);
            if found.is_empty() {
                println!(
                    "   third_party/{}: {} {} ({}…) + ackwire.diff, {} files: identical",
                    recipe.dir,
                    krate.name,
                    krate.version,
                    &krate.sha256[..12],
                    want.len()
                );
            }
            Ok(found)
        })();
        match outcome {
            Ok(found) => problems.extend(
                found
                    .into_iter()
                    .map(|d| format!("third_party/{}: {d}", recipe.dir)),
            ),
            Err(e) => problems.push(format!("third_party/{}: {e}", recipe.dir)),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "third_party/ drifted from the published crates plus their ackwire.diff ({} problem(s)):\n  {}",
            problems.len(),
            problems.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(name: &str) -> Pinned {
        Pinned {
            name: name.into(),
            version: "1.0.0".into(),
            sha256: "0".repeat(64),
        }
    }

    fn files(list: &[(&str, &str)]) -> Files {
        list.iter()
            .map(|(p, b)| (p.to_string(), b.as_bytes().to_vec()))
            .collect()
    }

    /// A `.crate` as cargo makes one: a gzipped tar under `name-version/`.
    fn krate(p: &Pinned, list: &[(&str, &str)]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        for (path, body) in list {
            let mut header = tar::Header::new_gnu();
            header.set_size(body.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(
                &mut header,
                format!("{}-{}/{path}", p.name, p.version),
                body.as_bytes(),
            )
            .unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap()
    }

    const SRC: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";

    const DIFF: &str = "\
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -2,3 +2,4 @@
 two
-three
+three, patched
+three and a half
 four
@@ -7 +8 @@
-seven
+seven
\\ No newline at end of file
";

    #[test]
    fn a_diff_applies_where_its_hunks_say() {
        let mut f = files(&[("src/lib.rs", SRC), ("README.md", "hi\n")]);
        apply(DIFF, &mut f).unwrap();
        assert_eq!(
            f["src/lib.rs"],
            b"one\ntwo\nthree, patched\nthree and a half\nfour\nfive\nsix\nseven"
        );
        assert_eq!(f["README.md"], b"hi\n");
    }

    #[test]
    fn a_diff_that_does_not_match_the_published_file_is_refused() {
        // A line that differs under a hunk's context.
        let mut f = files(&[("src/lib.rs", &SRC.replace("four", "FOUR"))]);
        let e = apply(DIFF, &mut f).unwrap_err();
        assert!(e.contains("src/lib.rs") && e.contains("other lines"), "{e}");
        // A file the package has not.
        let mut f = files(&[("README.md", "hi\n")]);
        assert!(apply(DIFF, &mut f).unwrap_err().contains("src/lib.rs"));
    }

    #[test]
    fn a_diff_creates_and_deletes_files() {
        let diff = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n\
                    --- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n";
        let mut f = files(&[("old.txt", "gone\n")]);
        apply(diff, &mut f).unwrap();
        assert_eq!(f, files(&[("new.txt", "a\nb\n")]));
    }

    /// The whole check on a made-up crate: the directory equal to the package plus its diff
    /// passes; a changed byte, a file more and a file less are each reported by name.
    #[test]
    fn a_directory_that_drifted_is_named_file_by_file() {
        let (main, sibling) = (pin("thing"), pin("sibling"));
        let published = krate(
            &main,
            &[
                ("Cargo.toml", "[package]\n"),
                ("Cargo.toml.orig", "orig\n"),
                ("src/lib.rs", SRC),
                ("examples/demo.rs", "fn main() {}\n"),
            ],
        );
        let licence = krate(&sibling, &[("LICENSE-MIT", "MIT\n")]);
        let mut crates = BTreeMap::new();
        crates.insert(main.file_name(), unpack(&published, &main).unwrap());
        crates.insert(sibling.file_name(), unpack(&licence, &sibling).unwrap());
        let recipe = parse(&format!(
            "[thing]\ncrate thing 1.0.0 {z}\ndrop examples/\ncopy LICENSE-MIT sibling 1.0.0 {z} LICENSE-MIT\n",
            z = "0".repeat(64)
        ))
        .unwrap()
        .remove(0);
        let want = expected(&recipe, DIFF, &crates).unwrap();
        let mut here = want.clone();
        assert!(differences(&want, &here).is_empty());
        assert_eq!(
            want.keys().collect::<Vec<_>>(),
            ["Cargo.toml", "LICENSE-MIT", "src/lib.rs"]
        );

        here.get_mut("src/lib.rs").unwrap()[40] ^= 1;
        here.insert("src/extra.rs".into(), b"\n".to_vec());
        here.remove("LICENSE-MIT");
        let found = differences(&want, &here);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found
                .iter()
                .any(|d| d.starts_with("differs: src/lib.rs, first at line 5")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|d| d.starts_with("extra: src/extra.rs")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|d| d.starts_with("missing: LICENSE-MIT")),
            "{found:?}"
        );

        // A drop that matches nothing is an error too (the recipe went stale).
        let stale = parse(&format!(
            "[thing]\ncrate thing 1.0.0 {}\ndrop benches/\n",
            "0".repeat(64)
        ))
        .unwrap()
        .remove(0);
        assert!(
            expected(&stale, DIFF, &crates)
                .unwrap_err()
                .contains("benches/")
        );
    }

    #[test]
    fn the_pins_name_every_directory_once() {
        let text = fs::read_to_string(paths::root().join("third_party/published.txt")).unwrap();
        let recipes = parse(&text).unwrap();
        let mut dirs: Vec<&str> = recipes.iter().map(|r| r.dir.as_str()).collect();
        dirs.sort_unstable();
        // Every directory of third_party/ is pinned, once.
        let mut present: Vec<String> = fs::read_dir(paths::root().join("third_party"))
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        present.sort_unstable();
        assert_eq!(dirs, present);
        let manifest = fs::read_to_string(paths::root().join("Cargo.toml")).unwrap();
        let lock = fs::read_to_string(paths::root().join("Cargo.lock")).unwrap();
        for r in &recipes {
            check_patched(r, &manifest, &lock).unwrap();
        }
    }
}
