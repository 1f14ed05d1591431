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

pub(crate) fn web_dir() -> PathBuf {
    root().join("web")
}

/// The example game's pages (served with `ackwire-signal --static /pong=...`).
pub(crate) fn pong_web_dir() -> PathBuf {
    root().join("examples/pong/web")
}

/// Separate target dirs per wasm toolchain so native and wasm builds (and the two wasm
/// routes) never invalidate each other.
pub(crate) fn wasm_target_dir(route: &str) -> PathBuf {
    root().join("target").join(format!("wasm-{route}"))
}
