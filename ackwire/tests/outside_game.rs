//! A game outside this workspace, written as docs/api.md ("From Rust") says: a crate beside
//! the checkout (`../ackwire`), its manifest the guide's block word for word. Cargo resolves it
//! (offline, from the crates this workspace's build fetched, at this workspace's locked
//! versions) and the test reads what the game would build (`cargo tree`): `ackwire` from the checkout, and
//! every crate this workspace patches from `third_party/`, not from crates.io. So the block
//! cannot fall behind the workspace's `[patch.crates-io]`: a patch added there and not to the
//! guide, or a path the guide gets wrong, fails here.

#![cfg(not(target_arch = "wasm32"))]

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// The first ```toml block of docs/api.md's "From Rust" section.
fn guide_manifest() -> String {
    let guide = std::fs::read_to_string(root().join("docs/api.md")).unwrap();
    let section = &guide[guide.find("## From Rust").expect("a From Rust section")..];
    let block = &section[section.find("```toml\n").expect("a toml block") + 8..];
    block[..block.find("```").unwrap()].to_owned()
}

/// The crate names under the workspace's `[patch.crates-io]`.
fn workspace_patches() -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let table = &manifest[manifest.find("[patch.crates-io]\n").expect("a patch table") + 18..];
    table
        .lines()
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| l.split_once('=').map(|(name, _)| name.trim().to_owned()))
        .filter(|name| !name.is_empty() && !name.starts_with('#'))
        .collect()
}

#[test]
fn a_game_outside_the_workspace_built_as_the_guide_says_gets_every_patched_crate() {
    let patches = workspace_patches();
    assert!(patches.len() >= 3, "{patches:?}");
    let manifest = guide_manifest();
    for name in &patches {
        assert!(
            manifest.contains(&format!(
                "{name} = {{ path = \"../ackwire/third_party/{name}\" }}"
            )),
            "docs/api.md's block lacks the patch of {name}:\n{manifest}"
        );
    }

    // The game's directory beside a checkout named `ackwire`, as the guide's paths assume.
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("outside-game-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("game/src")).unwrap();
    std::os::unix::fs::symlink(root(), dir.join("ackwire")).unwrap();
    let game = dir.join("game");
    std::fs::write(
        game.join("Cargo.toml"),
        format!(
            "[package]\nname = \"outside-game\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n{manifest}\n[workspace]\n"
        ),
    )
    .unwrap();
    std::fs::write(game.join("src/main.rs"), "fn main() {}\n").unwrap();
    // The workspace's versions: the game resolves the same crates this build fetched.
    std::fs::copy(root().join("Cargo.lock"), game.join("Cargo.lock")).unwrap();

    // `cargo tree` reads the graph the game builds for this machine (no download: `cargo
    // metadata` would fetch every platform's crates).
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}"])
        .current_dir(&game)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cargo tree failed:\n{stderr}");
    assert!(
        !stderr.contains("was not used in the crate graph"),
        "a patch reached nothing:\n{stderr}"
    );
    let tree = String::from_utf8(out.stdout).unwrap();
    // Each line: `name vVERSION`, then ` (PATH)` for a path crate, ` (*)` when seen before.
    let sources = |name: &str| -> Vec<String> {
        let mut found: Vec<String> = tree
            .lines()
            .filter(|l| l.split(' ').next() == Some(name))
            .map(|l| l.trim_end_matches(" (*)").to_owned())
            .collect();
        found.sort();
        found.dedup();
        found
    };
    let checkout = dir.join("ackwire");
    let ackwire = sources("ackwire");
    assert_eq!(ackwire.len(), 1, "{ackwire:?}");
    assert!(
        ackwire[0].ends_with(&format!("({})", checkout.join("ackwire").display())),
        "{ackwire:?}"
    );
    for name in &patches {
        let found = sources(name);
        let patched = format!("({})", checkout.join("third_party").join(name).display());
        assert!(
            !found.is_empty() && found.iter().all(|l| l.ends_with(&patched)),
            "the game builds {name} as {found:?}, not from third_party/"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
