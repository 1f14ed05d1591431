//! A game outside this workspace, built exactly as the docs say (`cargo xtask test`'s stage
//! "a game outside the workspace", `web/e2e/outside-game.test.mjs`): a crate beside a checkout
//! named `ackwire`, its manifest docs/api.md's "From Rust" block word for word, its `main.rs`
//! the README's example with the room's URL read from its first argument. Cargo reads
//! `[patch]` only from the manifest at the top of a build, so this is the build a game gets:
//! whatever the guide's block leaves out, it builds as crates.io publishes it.

use std::path::PathBuf;

use crate::{
    package, paths,
    process::{Result, run},
};

/// Where the game and the checkout's link sit: `target/outside-game/{ackwire,game}`.
fn dir() -> PathBuf {
    paths::root().join("target/outside-game")
}

/// The body of the first block opened by `fence` (a fence line: three backticks and a
/// language) after `heading` in `text`.
fn block_after(text: &str, heading: &str, fence: &str) -> Result<String> {
    let section = &text[text
        .find(heading)
        .ok_or_else(|| format!("no `{heading}` to take the game from"))?..];
    let start = section
        .find(fence)
        .ok_or_else(|| format!("no {fence} block after `{heading}`"))?
        + fence.len();
    let body = &section[start..];
    let end = body
        .find("```")
        .ok_or_else(|| format!("an unclosed {fence} block after `{heading}`"))?;
    Ok(body[..end].to_owned())
}

/// The README's example reads its room's URL from its first argument.
const README_URL: &str = "\"http://127.0.0.1:8080/room/lobby\"";

/// Writes the game and builds it; returns the program's path.
pub(crate) fn build() -> Result<PathBuf> {
    let read = |name: &str| {
        std::fs::read_to_string(paths::root().join(name))
            .map_err(|e| format!("cannot read {name}: {e}"))
    };
    let manifest = block_after(&read("docs/api.md")?, "## From Rust", "```toml\n")?;
    let main = block_after(
        &read("README.md")?,
        "Then a game only sends",
        "```rust,no_run\n",
    )?;
    if !main.contains(README_URL) {
        return Err(format!(
            "the README's example no longer joins {README_URL}: say here where its URL is"
        ));
    }
    let main = main.replace(
        README_URL,
        "&std::env::args().nth(1).expect(\"a room URL\")",
    );

    let dir = dir();
    let game = dir.join("game");
    std::fs::create_dir_all(game.join("src")).map_err(|e| e.to_string())?;
    let link = dir.join("ackwire");
    if std::fs::read_link(&link).ok() != Some(paths::root()) {
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(paths::root(), &link).map_err(|e| e.to_string())?;
    }
    let write = |name: &str, text: &str| {
        std::fs::write(game.join(name), text).map_err(|e| format!("cannot write {name}: {e}"))
    };
    write(
        "Cargo.toml",
        &format!(
            "[package]\nname = \"outside-game\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n{manifest}\n[workspace]\n"
        ),
    )?;
    write("src/main.rs", &main)?;
    // The workspace's versions, already fetched: the game builds offline.
    std::fs::copy(paths::root().join("Cargo.lock"), game.join("Cargo.lock"))
        .map_err(|e| format!("cannot copy Cargo.lock: {e}"))?;

    // Its own target directory, the workspace's build directory, and the workspace's dev
    // profile for dependencies (a build setting, given as configuration: the manifest stays
    // the guide's): the dependencies it shares with the workspace's build, compiled alike, are
    // compiled once. What it builds again: ackwire's own crates and the patched ones (from
    // another path, so other units), those built on them, and crates whose features the
    // workspace's other members widen.
    let profile = dir.join("dev-profile.toml");
    package::write_dev_profile(&profile)?;
    let target = dir.join("target");
    run(paths::cargo()
        .current_dir(&game)
        .args(["build", "--offline", "--target-dir"])
        .arg(&target)
        .args(package::built_as_the_workspace(&profile)))?;
    Ok(target.join("debug/outside-game"))
}
