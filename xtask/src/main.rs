//! `cargo xtask setup | demo | test | bench | sim`: everything this project needs, in the repo.
//!
//! Setup is idempotent: it checks before it installs, prints what it does and what it skips,
//! and keeps downloaded tools outside the repository tree (see [`paths::tools_dir`]) so a
//! fresh clone on the same machine reuses them.

mod bench;
mod bundle;
mod npm;
mod outside_game;
mod package;
mod paths;
mod process;
mod setup;
mod suite;
mod test_binaries;
mod third_party;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  setup   install what building and testing need (idempotent; skips what is present)
  demo    setup, build the wasm bundle (release), start the signal server on 127.0.0.1:8080
          (ACKWIRE_INSTANCES=2: a Redis and two servers sharing rooms, on 8080 and 8081)
  bundle  setup, build the wasm bundle (web/pkg/), the example game's Rust client
          (examples/pong/web/pkg/) and the rollback player (examples/rollback/web/pkg/),
          each size printed
  pong    setup, both wasm builds, a signal server serving the example game at /pong/ and
          its host in room `table`; prints the URLs to play (examples/pong/README.md)
  test    setup beside the test build (clippy as its compiler), then the bundles and the
          browser e2e tests in the background, and beside them three lanes: the
          third_party/ drift check, lints, the packages' verification, the doctests; the
          fuzz smoke, wasm tests in headless Chromium, the type check and a game outside the
          workspace; the native tests once the e2e tests end; prints each stage's start and
          length
  types   setup, then `tsc --noEmit` on web/types-check/ (an example and the READMEs' JS
          snippets) against the npm package's declarations
  pack    setup, build the wasm bundle, assemble the npm package in target/npm/ackwire/ and
          `npm pack` it into target/npm/ackwire-<version>.tgz
  package  setup, build the wasm bundle, then `cargo package` (verified) of every crate to
          be published, the signal server carrying the pages and bundle it embeds; the
          .crate files go to target/packages/package/
  third-party  check that each third_party/ directory is the crates.io crate pinned in
          third_party/published.txt with its ackwire.diff applied, byte for byte
  bench [NAME..]  run the benchmarks (all, or the stages whose name contains one of NAME,
          e.g. `joins`, `cold-start`)
  e2e [NAME..]  setup, then only the browser e2e suite (files of web/e2e/ whose name
          contains one of NAME; without, all but outside-game, which builds a game
          outside the workspace first: `cargo xtask e2e outside-game`)
  sim [--seeds N] [--from S]  the room's schedule explorer (room/tests/explorer.rs), N seeds
          (default 100000) from seed S (default 0), over every core; a failing
          seed prints its shrunk schedule and the command that replays it

environment:
  ACKWIRE_TOOLS       where tools are kept (default: $XDG_CACHE_HOME/ackwire or ~/.cache/ackwire)
  ACKWIRE_WASM_ROUTE  `rustup` or `debian`: force one route to the wasm32 toolchain
                      (default: rustup target, falling back to Debian's rustc-web)
  ACKWIRE_BIND        address for `demo` (default 127.0.0.1:8080)
  ACKWIRE_BUNDLE_ROUTE  `unstable` or `stable`: force one way of compiling the bundle
                      (default: std rebuilt with unstable options, falling back to stable
                      flags and a bigger module if that fails)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("setup") => setup::run().map(|_| ()),
        Some("demo") => suite::demo(),
        Some("bundle") => suite::bundles(),
        Some("pong") => suite::pong(),
        Some("test") => suite::test(),
        Some("types") => setup::run().and_then(|_| npm::types()),
        Some("pack") => setup::run()
            .and_then(|tools| bundle::build(&tools))
            .and_then(|()| npm::pack())
            .map(|tarball| println!("{}", tarball.display())),
        Some("bench") => {
            let only: Vec<&str> = args[1..].iter().map(String::as_str).collect();
            bench::bench(&only)
        }
        Some("e2e") => setup::run().and_then(|tools| {
            let only: Vec<&str> = args[1..].iter().map(String::as_str).collect();
            suite::browser_e2e(&tools, &only)
        }),
        Some("package") => package::command(),
        Some("third-party") => third_party::check(),
        Some("sim") => suite::sim(&args[1..]),
        // Run by `test` (one process per lane); not a command of its own.
        Some("lane") => match args.get(1) {
            Some(name) => suite::lane(name),
            None => Err("lane: which lane?".into()),
        },
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            Ok(())
        }
        _ => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}
