//! Where things live: the repository root and the per-user tools directory.

use std::path::PathBuf;

/// The workspace root (xtask lives one level below it).
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits inside the workspace")
        .to_path_buf()
}

/// Tools installed by `setup` (wasm-bindgen-cli, the Debian rustc-web prefix), kept outside
/// the repository so that fresh clones on this machine (CI) reuse them.
pub(crate) fn tools_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ACKWIRE_TOOLS") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| root().join(".tools"));
    cache.join("ackwire")
}

/// Where cargo keeps the intermediate artifacts (`build.build-dir`) of the builds into one
/// target directory, `name` (`native`, `wasm-ROUTE`, `fuzz`), when `ACKWIRE_BUILD_CACHE` names a
/// directory: `.ci/run` sets it beside the tools, so the dependencies one CI run compiled serve
/// the next run's fresh clone (cargo's fingerprints decide what is still fresh; the clone's own
/// crates always rebuild). One per target directory: cargo locks a build directory for a whole
/// build, and the lanes build into several at once. `None` otherwise: each target directory
/// keeps its own, as cargo does by default.
pub(crate) fn build_cache(name: &str) -> Option<PathBuf> {
    std::env::var_os("ACKWIRE_BUILD_CACHE")
        .filter(|dir| !dir.is_empty())
        .map(|dir| PathBuf::from(dir).join(name))
}

/// Points `cmd`'s cargo at the build cache's `name` directory ([`build_cache`]), if there is
/// one, and gives it the environment a cargo run from a shell has.
///
/// `cargo xtask` is `cargo run`, which sets the variables cargo sets for a crate
/// (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, …) in xtask's environment, and a child cargo passes
/// them on to build scripts. `ring`'s watches several (`rerun-if-env-changed`), so every CI
/// clone, its `CARGO_MANIFEST_DIR` at a new path, rebuilt `ring` and the 19 crates above it
/// (rustls, quinn, axum, …), and so did a build after a plain `cargo build` in the same
/// checkout.
pub(crate) fn use_build_cache(cmd: &mut std::process::Command, name: &str) {
    for (key, _) in std::env::vars_os() {
        let set_for_xtask = key.to_str().is_some_and(|key| {
            key.starts_with("CARGO_PKG_")
                || [
                    "CARGO_MANIFEST_DIR",
                    "CARGO_MANIFEST_PATH",
                    "CARGO_MANIFEST_LINKS",
                    "CARGO_CRATE_NAME",
                    "CARGO_BIN_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                ]
                .contains(&key)
        });
        if set_for_xtask {
            cmd.env_remove(key);
        }
    }
    if let Some(dir) = build_cache(name) {
        cmd.env("CARGO_BUILD_BUILD_DIR", dir);
    }
}

/// The cargo that runs xtask, in the workspace's root, its native builds in the build cache:
/// every native cargo command of xtask starts here, so they share their artifacts.
pub(crate) fn cargo() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO"));
    cmd.current_dir(root());
    use_build_cache(&mut cmd, "native");
    cmd
}

/// Where the workspace's builds put their artifacts (`CARGO_TARGET_DIR`, else `target/`).
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// The build directory of the workspace's native builds: the build cache's when there is one,
/// else the target directory (cargo's default). Builds outside the workspace (the packages'
/// verification, the outside game) use it too, to reuse the dependencies it compiled.
pub(crate) fn native_build_dir() -> PathBuf {
    build_cache("native").unwrap_or_else(target_dir)
}

pub(crate) fn web_dir() -> PathBuf {
    root().join("web")
}

/// The example game's pages (served with `ackwire-signal --static /pong=...`).
pub(crate) fn pong_web_dir() -> PathBuf {
    root().join("examples/pong/web")
}

/// The rollback game's page (served with `ackwire-signal --static /rollback=...`).
pub(crate) fn rollback_web_dir() -> PathBuf {
    root().join("examples/rollback/web")
}

/// Separate target dirs per wasm toolchain so native and wasm builds (and the two wasm
/// routes) never invalidate each other.
pub(crate) fn wasm_target_dir(route: &str) -> PathBuf {
    root().join("target").join(format!("wasm-{route}"))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    #[test]
    fn xtasks_cargo_runs_without_what_cargo_set_for_xtask_and_keeps_the_rest() {
        // `cargo test` sets these for this test as `cargo run` does for xtask.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
        let cmd = super::cargo();
        let envs: Vec<_> = cmd.get_envs().collect();
        for removed in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
        ] {
            assert!(
                envs.contains(&(OsStr::new(removed), None)),
                "{removed} is passed on: {envs:?}"
            );
        }
        // Only those: nothing a user set for cargo (CARGO_HOME, CARGO_TARGET_DIR, …) is taken.
        assert!(
            envs.iter()
                .filter(|(_, value)| value.is_none())
                .all(|(key, _)| {
                    let key = key.to_str().unwrap();
                    key.starts_with("CARGO_PKG_")
                        || key.starts_with("CARGO_MANIFEST_")
                        || [
                            "CARGO_CRATE_NAME",
                            "CARGO_BIN_NAME",
                            "CARGO_PRIMARY_PACKAGE",
                        ]
                        .contains(&key)
                }),
            "{envs:?}"
        );
    }
}
