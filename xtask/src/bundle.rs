//! The browser bundle: the `ackwire-wasm` crate compiled to wasm32 together with its own
//! build of std, bound with wasm-bindgen (`--target web`) and shrunk with binaryen's
//! `wasm-opt -Oz` from npm. The example game's Rust client (`examples/pong`) is built the
//! same way.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use crate::{
    paths,
    process::{Result, output, run},
    setup::Tools,
};

/// Crates of native links' encryption. Browser links ride DTLS, so the bundle must carry
/// none of them (they sit behind the core's `aead` feature, which the wasm crate leaves off).
const NATIVE_CRYPTO: &[&str] = &["ring", "snow", "hkdf", "curve25519-dalek"];

/// The most the wasm module may weigh, gzipped at level 9: the build fails above it, so a
/// change that drags a JSON parser, float formatting or a crypto crate (the cookies' SHA-256
/// and HMAC, ~4 KB gzipped) back into the bundle is seen at once. Today's module is 125.1 KB
/// (docs/architecture.md, "What the bundle weighs"); issue #22's goal is 60 KB. Raised from
/// 123,600 for the WebSocket to the host (+0.8 KB the member's fallback, +1.0 KB the driver's).
const GZIP_CEILING: u64 = 125_400;

/// The ceiling of the stable route's module (std prebuilt, panic messages and locations kept):
/// about 129.4 KB today, with a similar margin over it.
const STABLE_GZIP_CEILING: u64 = 135_000;

/// Builds the bundle into `web/pkg/` (served at `/pkg/`).
/// Always the `wasm-release` cargo profile (opt-level z, fat LTO), std built alongside with
/// panics as traps when the toolchain allows, plus `wasm-opt -Oz`: the tests run the bundle
/// users get.
pub(crate) fn build(tools: &Tools) -> Result<()> {
    let (wasm, route) = build_package(tools, "ackwire-wasm", &paths::web_dir().join("pkg"))?;
    vendor_scripts()?;
    let ceiling = route.ceiling();
    let gzip_bytes = report_size(
        &wasm,
        &format!("; ceiling {ceiling}, {} route", route.name()),
    )?;
    if gzip_bytes > ceiling {
        return Err(format!(
            "the wasm bundle is {gzip_bytes} bytes gzipped, above its ceiling of {ceiling}: \
             find what grew with `twiggy top` on a `wasm-opt -g` build (docs/architecture.md)"
        ));
    }
    Ok(())
}

/// The example game's Rust client (`examples/pong`, the `pong` crate's lib) into
/// `examples/pong/web/pkg/`, built as the bundle is. No ceiling: it carries the whole room
/// and core as the bundle does, plus the game; its size is printed.
pub(crate) fn build_pong(tools: &Tools) -> Result<()> {
    let (wasm, route) = build_package(tools, "pong", &paths::pong_web_dir().join("pkg"))?;
    report_size(&wasm, &format!("; {} route", route.name()))?;
    Ok(())
}

/// The rollback game's browser player (`examples/rollback`, the `rollback` crate's lib, with
/// ggrs) into `examples/rollback/web/pkg/`, built as the bundle is; its size is printed.
pub(crate) fn build_rollback(tools: &Tools) -> Result<()> {
    let (wasm, route) = build_package(tools, "rollback", &paths::rollback_web_dir().join("pkg"))?;
    report_size(&wasm, &format!("; {} route", route.name()))?;
    Ok(())
}

/// Builds the lib of `package` for wasm32 (profile `wasm-release`), binds it with
/// wasm-bindgen (`--target web`) into `out_dir` and shrinks it with `wasm-opt -Oz`.
/// Returns the module's path and the route it was compiled on. A browser package must not
/// carry native links' crypto.
fn build_package(tools: &Tools, package: &str, out_dir: &Path) -> Result<(PathBuf, Route)> {
    let cargo_profile = "wasm-release";
    let target_dir = paths::wasm_target_dir(tools.wasm.name());
    println!(
        "== wasm package {package} ({cargo_profile}, {} toolchain)",
        tools.wasm.name()
    );
    let tree = output(tools.wasm.cargo().current_dir(paths::root()).args([
        "tree",
        "-p",
        package,
        "--target",
        "wasm32-unknown-unknown",
        "-e",
        "normal",
        "--prefix",
        "none",
    ]))?;
    let carried: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| NATIVE_CRYPTO.contains(name))
        .collect();
    if !carried.is_empty() {
        return Err(format!(
            "the wasm build of {package} depends on native links' crypto ({}): keep the core's `aead` feature off on wasm32",
            carried.join(", ")
        ));
    }
    let route = compile(tools, package, cargo_profile, &target_dir)?;
    let lib = package.replace('-', "_");
    let module = target_dir
        .join("wasm32-unknown-unknown")
        .join(cargo_profile)
        .join(format!("{lib}.wasm"));
    run(Command::new(&tools.wasm_bindgen)
        .args(["--target", "web", "--no-typescript", "--out-dir"])
        .arg(out_dir)
        .arg(&module))?;
    let wasm = out_dir.join(format!("{lib}_bg.wasm"));
    let wasm_opt = paths::web_dir().join("node_modules/.bin/wasm-opt");
    // Rust's wasm32 target emits these post-MVP features by default; wasm-opt must accept them.
    run(Command::new(wasm_opt)
        .arg(&wasm)
        .args([
            "-Oz",
            "--enable-bulk-memory",
            "--enable-nontrapping-float-to-int",
        ])
        .args([
            "--enable-sign-ext",
            "--enable-mutable-globals",
            "--enable-reference-types",
        ])
        // The toolchain's metadata sections: nothing in a browser reads them.
        .args(["--strip-producers", "--strip-target-features"])
        .args(["--enable-multivalue", "-o"])
        .arg(&wasm))?;
    Ok((wasm, route))
}

/// Prints a module's size, raw and gzipped (level 9, with `note` after); returns the latter.
fn report_size(wasm: &Path, note: &str) -> Result<u64> {
    let bytes = fs::metadata(wasm).map_err(|e| e.to_string())?.len();
    let gzip_bytes = gzip_size(wasm)?;
    println!(
        "   {}: {bytes} bytes, {gzip_bytes} bytes gzipped (-9{note})",
        wasm.strip_prefix(paths::root()).unwrap_or(wasm).display()
    );
    Ok(gzip_bytes)
}

/// How std is compiled into the module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// std rebuilt with the bundle (`-Zbuild-std`), panics as traps, no panic locations:
    /// unstable options, taken with `RUSTC_BOOTSTRAP`.
    Unstable,
    /// The toolchain's prebuilt std and stable flags only: what any toolchain can build.
    Stable,
}

impl Route {
    fn name(self) -> &'static str {
        match self {
            Route::Unstable => "unstable-options",
            Route::Stable => "stable",
        }
    }

    fn ceiling(self) -> u64 {
        match self {
            Route::Unstable => GZIP_CEILING,
            Route::Stable => STABLE_GZIP_CEILING,
        }
    }
}

/// Compiles the module, on the unstable route unless it fails (a toolchain that refuses
/// `RUSTC_BOOTSTRAP` or has no std source) or `ACKWIRE_BUNDLE_ROUTE=stable` asks for the other.
fn compile(tools: &Tools, package: &str, cargo_profile: &str, target_dir: &Path) -> Result<Route> {
    let build = |route: Route| {
        let mut cargo = tools.wasm.cargo();
        cargo.current_dir(paths::root()).args([
            "build",
            "-p",
            package,
            "--lib",
            "--target",
            "wasm32-unknown-unknown",
            "--profile",
            cargo_profile,
            "--target-dir",
        ]);
        cargo.arg(target_dir);
        match route {
            // std is rebuilt with the bundle (opt-level z, LTO with our code), and panics
            // compile to a trap: no formatting machinery, messages or locations for them. A
            // panic on wasm32 has nowhere to print anyway. Unstable options, taken with
            // RUSTC_BOOTSTRAP as the fuzz stage does (docs/architecture.md, "What the bundle
            // weighs"). No file names, lines or columns of panic locations either: nothing
            // would print them (1 KB gzipped of paths).
            Route::Unstable => cargo
                .arg("-Zbuild-std=std,panic_abort")
                .env("RUSTC_BOOTSTRAP", "1")
                .env(
                    "RUSTFLAGS",
                    "-Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none",
                ),
            Route::Stable => cargo.env_remove("RUSTFLAGS"),
        };
        run(&mut cargo)
    };
    match std::env::var("ACKWIRE_BUNDLE_ROUTE").as_deref() {
        Ok("stable") => build(Route::Stable).map(|()| Route::Stable),
        Ok("unstable") => build(Route::Unstable).map(|()| Route::Unstable),
        Ok(other) => Err(format!(
            "ACKWIRE_BUNDLE_ROUTE={other}: expected `stable` or `unstable`"
        )),
        Err(_) => match build(Route::Unstable) {
            Ok(()) => Ok(Route::Unstable),
            Err(e) => {
                println!(
                    "   warning: the unstable-options build failed ({e}); building with stable \
                     flags, a bigger module (ceiling {STABLE_GZIP_CEILING} bytes gzipped)"
                );
                build(Route::Stable).map(|()| Route::Stable)
            }
        },
    }
}

/// The pages' JavaScript libraries, copied from `web/node_modules` (installed from the
/// committed lock file) to `web/vendor/`, which the server serves at `/vendor/`.
const VENDORED: &[&str] = &["uplot/dist/uPlot.esm.js", "uplot/dist/uPlot.min.css"];

fn vendor_scripts() -> Result<()> {
    let web = paths::web_dir();
    let vendor = web.join("vendor");
    fs::create_dir_all(&vendor).map_err(|e| format!("cannot create {}: {e}", vendor.display()))?;
    for file in VENDORED {
        let from = web.join("node_modules").join(file);
        let name = from.file_name().unwrap_or_default();
        fs::copy(&from, vendor.join(name))
            .map_err(|e| format!("cannot copy {}: {e}", from.display()))?;
    }
    Ok(())
}

fn gzip_size(path: &Path) -> Result<u64> {
    let out = Command::new("gzip")
        .args(["-9", "-c"])
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run gzip: {e}"))?;
    Ok(out.stdout.len() as u64)
}
