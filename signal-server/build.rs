//! Release builds embed `web/` (see `src/pages.rs`). rust-embed tracks the files it embedded,
//! but not files added later (a fresh `web/pkg/` bundle, `web/vendor/`), so release builds
//! rerun when anything under `web/` changes. Debug builds read `web/` at run time and skip it.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("PROFILE").as_deref() == Ok("release") {
        for dir in ["../web", "../web/pkg", "../web/vendor"] {
            println!("cargo:rerun-if-changed={dir}");
        }
    }
}
