//! Which copy of the pages and assets the server embeds (`src/pages.rs`).
//!
//! - Built in the repository: `../web/`, the folder the pages are written in and the bundle
//!   is built into (`cargo xtask bundle`).
//! - Built from the published package (`cargo install ackwire-signal`, or `cargo package`'s
//!   verification): `assets/`, the copy of those files `cargo xtask package` puts in the
//!   package, wasm bundle included. `cargo package` writes the original manifest into every
//!   package as `Cargo.toml.orig`, so that file tells the two apart.
//!
//! Release builds embed the folder (rust-embed tracks the files it embedded, but not files added
//! later, such as a fresh `web/pkg/` bundle, so they rerun when it changes); debug builds read
//! it at run time.
use std::path::Path;

/// Files a working server cannot do without: its pages and the wasm bundle they load.
const REQUIRED: &[&str] = &[
    "index.html",
    "room.html",
    "dashboard.html",
    "ackwire.js",
    "pkg/ackwire_wasm.js",
    "pkg/ackwire_wasm_bg.wasm",
];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(ackwire_packaged)");
    println!("cargo::rerun-if-changed=build.rs");
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let manifest_dir = Path::new(&manifest_dir);
    let packaged = manifest_dir.join("Cargo.toml.orig").exists();
    let dir = if packaged {
        println!("cargo::rustc-cfg=ackwire_packaged");
        let missing: Vec<&str> = REQUIRED
            .iter()
            .copied()
            .filter(|f| !manifest_dir.join("assets").join(f).is_file())
            .collect();
        if !missing.is_empty() {
            panic!(
                "this package of ackwire-signal lacks web assets it serves ({} under assets/): \
                 make it with `cargo xtask package`, which builds the bundle and copies them in",
                missing.join(", ")
            );
        }
        "assets"
    } else {
        "../web"
    };
    if std::env::var("PROFILE").as_deref() == Ok("release") {
        for sub in ["", "/pkg", "/vendor"] {
            println!("cargo::rerun-if-changed={dir}{sub}");
        }
    }
}
