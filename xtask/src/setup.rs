//! `cargo xtask setup`: system packages, the wasm32 toolchain, wasm-bindgen-cli and the
//! page's npm packages. Every step checks first and says whether it skipped or installed.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use crate::{
    paths,
    process::{self, Result, have, run_with_timeout},
};

const WASM_TARGET: &str = "wasm32-unknown-unknown";
/// rustup needs the network; the machines may only reach package registries, so a hang is
/// possible and the Debian route takes over after this long.
const RUSTUP_TIMEOUT: Duration = Duration::from_secs(120);
/// Debian packages of the fallback route (bookworm updates), extracted, never installed.
const RUSTC_WEB_DEBS: &[&str] = &[
    "rustc-web",
    "cargo-web",
    "rust-web-src",
    "libstd-rust-web-dev",
    "libstd-rust-web-1.96",
];
/// Runtime libraries of Debian's rustc-web, installed as ordinary packages.
const RUSTC_WEB_LIBS: &[&str] = &["libllvm22", "lld-22", "libgit2-1.5"];
const WASM_LINKER: &str = "wasm-ld-22";
/// What a fresh clone's `cargo xtask test` leaves under `target/` (14 GiB measured on these
/// machines), with a margin: below this, setup warns before a build runs out of disk.
const DISK_WANTED_GIB: u64 = 16;
/// Below this nothing builds: setup stops with the figure instead of npm's or rustc's ENOSPC.
const DISK_NEEDED_GIB: u64 = 1;

/// What later steps need from setup.
#[derive(Debug)]
pub(crate) struct Tools {
    pub(crate) wasm: WasmToolchain,
    pub(crate) wasm_bindgen: PathBuf,
    pub(crate) wasm_bindgen_test_runner: PathBuf,
    pub(crate) cargo_fuzz: PathBuf,
}

/// How to invoke cargo for the wasm32 target.
#[derive(Debug)]
pub(crate) enum WasmToolchain {
    /// rustup's stable toolchain with the wasm32 target added.
    Rustup,
    /// Debian's rustc-web extracted under this prefix, with a wasm32 std built from source.
    Debian { usr: PathBuf },
}

impl WasmToolchain {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Rustup => "rustup",
            Self::Debian { .. } => "debian",
        }
    }

    /// The `cargo` binary for wasm32 builds with this toolchain.
    pub(crate) fn cargo_program(&self) -> PathBuf {
        match self {
            Self::Rustup => PathBuf::from(env!("CARGO")),
            Self::Debian { usr } => usr.join("bin/cargo"),
        }
    }

    /// Adds the environment this toolchain needs to `cmd`.
    pub(crate) fn apply_env(&self, cmd: &mut Command) {
        if let Self::Debian { usr } = self {
            debian_env(cmd, usr);
        }
        paths::use_build_cache(cmd, &format!("wasm-{}", self.name()));
    }

    /// A `cargo` command set up for wasm32 builds with this toolchain.
    pub(crate) fn cargo(&self) -> Command {
        let mut cmd = Command::new(self.cargo_program());
        self.apply_env(&mut cmd);
        cmd
    }
}

/// The wasm-only environment of the Debian route (never exported globally: native crates
/// stay on rustup stable).
fn debian_env(cmd: &mut Command, usr: &Path) {
    cmd.env("LD_LIBRARY_PATH", usr.join("lib/x86_64-linux-gnu"))
        .env("RUSTC", usr.join("bin/rustc"))
        .env("RUSTDOC", usr.join("bin/rustdoc"))
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER", WASM_LINKER)
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO");
}

pub(crate) fn run() -> Result<Tools> {
    let start = Instant::now();
    println!("== setup (tools in {})", paths::tools_dir().display());
    disk_space()?;
    // The packages (apt, npm: mostly waiting on downloads and dpkg) install beside the tools
    // cargo compiles (both cores busy), not before them: on a fresh machine their minutes
    // overlap.
    let (packages, tools) = std::thread::scope(|s| {
        let packages = s.spawn(|| system_packages().and_then(|()| npm_packages()));
        let tools = (|| {
            let wasm = wasm_toolchain()?;
            let bindgen = wasm_bindgen_cli()?;
            Ok::<_, String>((wasm, bindgen, cargo_fuzz()?))
        })();
        let packages = packages
            .join()
            .unwrap_or_else(|_| Err("installing the system and npm packages panicked".into()));
        (packages, tools)
    });
    packages?;
    let (wasm, (wasm_bindgen, wasm_bindgen_test_runner), cargo_fuzz) = tools?;
    println!("== setup done in {:.1}s", start.elapsed().as_secs_f64());
    Ok(Tools {
        wasm,
        wasm_bindgen,
        wasm_bindgen_test_runner,
        cargo_fuzz,
    })
}

/// Checks the free space where builds go. A full disk otherwise shows up minutes later as
/// an ENOSPC deep in npm's or the linker's output.
fn disk_space() -> Result<()> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(paths::root);
    let df = process::output(Command::new("df").arg("-Pk").arg(&target))?;
    let free_kib = df_available_kib(&df).ok_or_else(|| {
        format!(
            "cannot read free space from `df -Pk {}`:\n{df}",
            target.display()
        )
    })?;
    let free_gib = free_kib as f64 / (1024.0 * 1024.0);
    let place = target.display();
    if free_kib < DISK_NEEDED_GIB * 1024 * 1024 {
        return Err(format!(
            "{free_gib:.1} GiB free under {place}: builds need at least {DISK_NEEDED_GIB} GiB \
             (the suite ~{DISK_WANTED_GIB}); free some space (an old target/ is the usual one)"
        ));
    }
    if free_kib < DISK_WANTED_GIB * 1024 * 1024 {
        step(
            "disk",
            &format!(
                "warning: {free_gib:.1} GiB free under {place}; `cargo xtask test` from a \
                 fresh clone writes ~14 GiB and may run out"
            ),
        );
    } else {
        step("disk", &format!("{free_gib:.0} GiB free under {place}"));
    }
    Ok(())
}

/// The "Available" column (KiB) of `df -Pk`'s one data line (POSIX format: fixed columns,
/// never wrapped).
fn df_available_kib(df: &str) -> Option<u64> {
    df.lines().nth(1)?.split_whitespace().nth(3)?.parse().ok()
}

fn step(name: &str, what: &str) {
    println!("[setup] {name}: {what}");
}

/// apt takes one caller at a time: the system packages and the Debian wasm route install
/// from two threads of `run`.
static APT: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn apt_install(packages: &[&str]) -> Result<()> {
    let _apt = APT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let install = |cmd: &mut Command| {
        cmd.env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(packages);
        process::status(cmd)
    };
    if install(&mut Command::new("apt-get"))?.success() {
        return Ok(());
    }
    // Stale package lists are the usual reason; refresh once and retry.
    process::run(Command::new("apt-get").args(["update", "-q"]))?;
    process::run(
        Command::new("apt-get")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(packages),
    )
}

/// Chromium + chromedriver and Firefox ESR for browser tests, iproute2/util-linux for the
/// loopback-only namespace the browser tests run in, coturn (the TURN server users run) for
/// the tests of the signal server's TURN credentials, iptables for the home routers (NAT) of
/// the e2e test that puts players behind symmetric NATs, tcpdump for the packet capture that
/// shows an encrypted native link carries no plaintext, redis-server (the broker users run
/// for several signal servers) for the scale-out tests, which start their own; for the
/// cold-start bench's delayed path, python3 (its delay bridge) and ethtool (the veths'
/// offloads off, so the bridge forwards real frames); WebKitWebDriver (webkit2gtk-driver,
/// which brings WebKitGTK's MiniBrowser) and Xvfb, its headless X display, for the e2e tests
/// that drive WebKit, the third browser engine (`web/e2e/webkit.mjs`).
fn system_packages() -> Result<()> {
    let wanted = [
        ("/usr/bin/chromium", "chromium"),
        ("/usr/bin/chromedriver", "chromium-driver"),
        ("/usr/bin/firefox-esr", "firefox-esr"),
        ("/usr/sbin/ip", "iproute2"),
        ("/usr/bin/unshare", "util-linux"),
        ("/usr/bin/turnserver", "coturn"),
        ("/usr/sbin/iptables", "iptables"),
        ("/usr/bin/tcpdump", "tcpdump"),
        ("/usr/bin/redis-server", "redis-server"),
        ("/usr/bin/python3", "python3"),
        ("/usr/sbin/ethtool", "ethtool"),
        ("/usr/bin/WebKitWebDriver", "webkit2gtk-driver"),
        ("/usr/bin/Xvfb", "xvfb"),
    ];
    let missing: Vec<&str> = wanted
        .iter()
        .filter(|(path, _)| !Path::new(path).exists())
        .map(|(_, pkg)| *pkg)
        .collect();
    if missing.is_empty() {
        step(
            "system packages",
            "chromium, chromedriver, firefox-esr, ip, unshare, turnserver, iptables, tcpdump, redis-server, python3, ethtool, WebKitWebDriver, Xvfb present; skipping",
        );
        return Ok(());
    }
    step(
        "system packages",
        &format!("installing {}", missing.join(" ")),
    );
    apt_install(&missing)
}

fn wasm_toolchain() -> Result<WasmToolchain> {
    let forced = std::env::var("ACKWIRE_WASM_ROUTE").ok();
    match forced.as_deref() {
        Some("debian") => {
            step(
                "wasm32 toolchain",
                "ACKWIRE_WASM_ROUTE=debian: using the Debian rustc-web route",
            );
            debian_toolchain()
        }
        Some("rustup") => {
            if rustup_target()? {
                Ok(WasmToolchain::Rustup)
            } else {
                Err("ACKWIRE_WASM_ROUTE=rustup but rustup could not add the wasm32 target or rust-src".into())
            }
        }
        None | Some("") => {
            if rustup_target()? {
                Ok(WasmToolchain::Rustup)
            } else {
                step(
                    "wasm32 toolchain",
                    "rustup route failed; falling back to Debian rustc-web",
                );
                debian_toolchain()
            }
        }
        Some(other) => Err(format!(
            "ACKWIRE_WASM_ROUTE={other}: expected `rustup` or `debian`"
        )),
    }
}

/// True when rustup's toolchain has (or could add in time) the wasm32 target and the
/// standard library's source, which the bundle is built with (`bundle.rs`).
fn rustup_target() -> Result<bool> {
    if !have("rustup") {
        step("wasm32 toolchain", "no rustup on PATH");
        return Ok(false);
    }
    let targets = process::output(Command::new("rustup").args(["target", "list", "--installed"]))?;
    let components =
        process::output(Command::new("rustup").args(["component", "list", "--installed"]))?;
    let src_present = components.lines().any(|l| l.trim().starts_with("rust-src"));
    let parts = [
        (
            "target wasm32-unknown-unknown",
            targets.lines().any(|l| l.trim() == WASM_TARGET),
            ["target", "add", WASM_TARGET],
        ),
        (
            "component rust-src",
            src_present,
            ["component", "add", "rust-src"],
        ),
    ];
    for (what, present, add) in parts {
        if present {
            step(
                "wasm32 toolchain",
                &format!("rustup {what} present; skipping"),
            );
            continue;
        }
        step("wasm32 toolchain", &format!("adding rustup {what}"));
        let start = Instant::now();
        let ok = run_with_timeout(Command::new("rustup").args(add), RUSTUP_TIMEOUT)
            .map_err(|e| format!("cannot run rustup: {e}"))?;
        if !ok {
            return Ok(false);
        }
        step(
            "wasm32 toolchain",
            &format!(
                "rustup {what} added in {:.0}s",
                start.elapsed().as_secs_f64()
            ),
        );
    }
    Ok(true)
}

/// Debian's rustc-web extracted into `<tools>/rustc-web`, plus a wasm32 std built once from
/// the shipped std source (Debian ships none prebuilt for wasm32).
fn debian_toolchain() -> Result<WasmToolchain> {
    let prefix = paths::tools_dir().join("rustc-web");
    let usr = prefix.join("root/usr");
    let done = prefix.join(".complete");
    if done.exists() {
        step(
            "wasm32 toolchain",
            &format!("Debian rustc-web present in {}; skipping", prefix.display()),
        );
        return Ok(WasmToolchain::Debian { usr });
    }
    let start = Instant::now();
    if !have(WASM_LINKER) || !Path::new("/usr/lib/x86_64-linux-gnu/libgit2.so.1.5").exists() {
        step(
            "wasm32 toolchain",
            &format!("installing {}", RUSTC_WEB_LIBS.join(" ")),
        );
        apt_install(RUSTC_WEB_LIBS)?;
    }
    let debs = prefix.join("debs");
    let root = prefix.join("root");
    let _ = fs::remove_dir_all(&debs);
    let _ = fs::remove_dir_all(&root);
    mkdir(&debs)?;
    mkdir(&root)?;
    step("wasm32 toolchain", "downloading rustc-web packages");
    {
        let _apt = APT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        process::run(
            Command::new("apt-get")
                .current_dir(&debs)
                .arg("download")
                .args(RUSTC_WEB_DEBS),
        )
        .or_else(|_| {
            process::run(Command::new("apt-get").args(["update", "-q"]))?;
            process::run(
                Command::new("apt-get")
                    .current_dir(&debs)
                    .arg("download")
                    .args(RUSTC_WEB_DEBS),
            )
        })?;
    }
    for entry in fs::read_dir(&debs).map_err(|e| e.to_string())? {
        let deb = entry.map_err(|e| e.to_string())?.path();
        process::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root))?;
    }
    build_wasm_sysroot(&prefix, &usr)?;
    fs::write(&done, "").map_err(|e| e.to_string())?;
    step(
        "wasm32 toolchain",
        &format!(
            "Debian rustc-web ready in {:.0}s",
            start.elapsed().as_secs_f64()
        ),
    );
    Ok(WasmToolchain::Debian { usr })
}

/// Builds std for wasm32 from Debian's rust-web-src in a throwaway `#![no_std]` crate and
/// copies the resulting rlibs into the prefix's sysroot.
fn build_wasm_sysroot(prefix: &Path, usr: &Path) -> Result<()> {
    step(
        "wasm32 toolchain",
        "building the wasm32 std from source (one time, a few minutes)",
    );
    let krate = prefix.join("sysroot-builder");
    let _ = fs::remove_dir_all(&krate);
    mkdir(&krate.join("src"))?;
    fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"sysroot-builder\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .map_err(|e| e.to_string())?;
    fs::write(krate.join("src/lib.rs"), "#![no_std]\n").map_err(|e| e.to_string())?;
    let mut cargo = Command::new(usr.join("bin/cargo"));
    debian_env(&mut cargo, usr);
    process::run(
        cargo
            .current_dir(&krate)
            .env("RUSTC_BOOTSTRAP", "1")
            .env("RUSTFLAGS", "-Cembed-bitcode=yes")
            .args(["build", "--release", "-j", "2", "--target", WASM_TARGET])
            .arg("-Zbuild-std=std,panic_abort,test"),
    )?;
    let deps = krate.join("target").join(WASM_TARGET).join("release/deps");
    let lib = usr.join("lib/rustlib").join(WASM_TARGET).join("lib");
    mkdir(&lib)?;
    let mut copied = 0;
    for entry in fs::read_dir(&deps).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let is_lib =
            name.starts_with("lib") && (name.ends_with(".rlib") || name.ends_with(".rmeta"));
        if is_lib && !name.starts_with("libsysroot_builder") {
            fs::copy(&path, lib.join(&name)).map_err(|e| e.to_string())?;
            copied += 1;
        }
    }
    if copied == 0 {
        return Err(format!("no std libraries were built in {}", deps.display()));
    }
    let _ = fs::remove_dir_all(&krate);
    Ok(())
}

/// The version of the `wasm-bindgen` crate the workspace resolved; the CLI must match it.
fn locked_wasm_bindgen_version() -> Result<String> {
    let lock = fs::read_to_string(paths::root().join("Cargo.lock"))
        .map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"wasm-bindgen\""
            && let Some(v) = lines.next().and_then(|l| l.strip_prefix("version = \""))
        {
            return Ok(v.trim_end_matches('"').to_owned());
        }
    }
    Err("wasm-bindgen is not in Cargo.lock".into())
}

fn wasm_bindgen_cli() -> Result<(PathBuf, PathBuf)> {
    let version = locked_wasm_bindgen_version()?;
    let install_root = paths::tools_dir().join(format!("wasm-bindgen-{version}"));
    let bin = install_root.join("bin");
    let cli = bin.join("wasm-bindgen");
    let runner = bin.join("wasm-bindgen-test-runner");
    let reported = Command::new(&cli).arg("--version").output().ok();
    let matches = reported
        .map(|o| String::from_utf8_lossy(&o.stdout).contains(&version))
        .unwrap_or(false);
    if matches && runner.exists() {
        step("wasm-bindgen-cli", &format!("{version} present; skipping"));
    } else {
        // Without its default feature, TLS for its HTTP client: the test runner speaks
        // plain HTTP to a chromedriver on loopback, and rustls with its `ring` is 7 % of
        // the tool's compile (138 s of CPU against 129 s, 2026-11-30).
        cargo_install(
            "wasm-bindgen-cli",
            &version,
            &install_root,
            &["--no-default-features"],
            "~1.5 min",
        )?;
    }
    Ok((cli, runner))
}

/// `cargo install` of an exact version into a private root under the tools directory, in the
/// dev profile: these tools run for a second per use, and a debug build compiles in ~60 % of
/// a release one's time (wasm-bindgen-cli 2 min 48 s against ~4.5 min here) and writes the
/// same bytes (the bundle's glue and wasm compared: identical).
fn cargo_install(
    krate: &str,
    version: &str,
    root: &Path,
    extra: &[&str],
    takes: &str,
) -> Result<()> {
    step(
        krate,
        &format!("installing {version} into {} ({takes})", root.display()),
    );
    process::run(
        Command::new(env!("CARGO"))
            // Tools, not code to step through: without debug info a dev build compiles
            // ~16 % faster (cargo-fuzz: 44 s of CPU against 37 s).
            .env("CARGO_PROFILE_DEV_DEBUG", "false")
            .args([
                "install",
                "--debug",
                "-j",
                "2",
                "--quiet",
                krate,
                "--version",
                version,
                "--root",
            ])
            .arg(root)
            .args(extra),
    )
}

/// cargo-fuzz (libFuzzer driver) for the fuzz stage of `cargo xtask test`.
const CARGO_FUZZ_VERSION: &str = "0.13.1";

fn cargo_fuzz() -> Result<PathBuf> {
    let root = paths::tools_dir().join(format!("cargo-fuzz-{CARGO_FUZZ_VERSION}"));
    let bin = root.join("bin/cargo-fuzz");
    if bin.exists() {
        step(
            "cargo-fuzz",
            &format!("{CARGO_FUZZ_VERSION} present; skipping"),
        );
    } else {
        cargo_install("cargo-fuzz", CARGO_FUZZ_VERSION, &root, &[], "~1 min")?;
    }
    Ok(bin)
}

/// `npm ci` when `node_modules` is missing or older than the committed lock file.
fn npm_packages() -> Result<()> {
    let web = paths::web_dir();
    let lock = web.join("package-lock.json");
    let installed = web.join("node_modules/.package-lock.json");
    let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = match (modified(&installed), modified(&lock)) {
        (Some(i), Some(l)) => i >= l,
        _ => false,
    };
    if fresh {
        step(
            "npm packages",
            "web/node_modules up to date with package-lock.json; skipping",
        );
        return Ok(());
    }
    step("npm packages", "npm ci in web/");
    process::run(Command::new("npm").current_dir(&web).args([
        "ci",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
    ]))
}

fn mkdir(p: &Path) -> Result<()> {
    fs::create_dir_all(p).map_err(|e| format!("cannot create {}: {e}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::df_available_kib;

    #[test]
    fn free_space_is_read_from_posix_df() {
        let df = "Filesystem     1024-blocks     Used Available Capacity Mounted on\n\
                  /dev/vda         264140800 95420416    178176     100% /\n";
        assert_eq!(df_available_kib(df), Some(178_176));
    }

    #[test]
    fn unreadable_df_output_is_none() {
        assert_eq!(df_available_kib("Filesystem 1024-blocks\n"), None);
        assert_eq!(df_available_kib(""), None);
    }
}
