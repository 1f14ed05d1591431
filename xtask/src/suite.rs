//! The user-facing commands: `demo`, `test`, `e2e` (and what they share with `bench`).

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use crate::{
    bundle, npm, outside_game, package, paths,
    process::{Result, describe, in_loopback_namespace, run},
    setup::{self, Tools},
    third_party,
};

use paths::cargo;

const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// `cargo` for the test build, with clippy as the workspace's compiler (what `cargo clippy`
/// does, in a full build instead of a check): one compile both lints every target and builds
/// the tests, instead of a check of the whole tree and then a build of it. Clippy's warnings
/// are errors. Every test build of the suite uses it, so they share their artifacts.
fn cargo_linted() -> Command {
    let mut cmd = cargo();
    cmd.env("RUSTC_WORKSPACE_WRAPPER", "clippy-driver").env(
        "CLIPPY_ARGS",
        "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
    );
    cmd
}

/// Builds the signal server (debug or release) and returns the binary's path.
/// Builds binary `bin` of package `package` and returns its path.
pub(crate) fn build_bin(package: &str, bin: &str, release: bool) -> Result<PathBuf> {
    let mut cmd = cargo();
    cmd.args(["build", "-p", package, "--bin", bin]);
    if release {
        cmd.arg("--release");
    }
    run(&mut cmd)?;
    let profile = if release { "release" } else { "debug" };
    Ok(paths::root().join("target").join(profile).join(bin))
}

pub(crate) fn build_signal_server(release: bool) -> Result<PathBuf> {
    build_bin("ackwire-signal", "ackwire-signal", release)
}

pub(crate) fn demo() -> Result<()> {
    let tools = setup::run()?;
    bundle::build(&tools)?;
    let server = build_signal_server(true)?;
    let peer = build_bin("ackwire-peer", "ackwire-peer", true)?;
    let bind = std::env::var("ACKWIRE_BIND").unwrap_or_else(|_| "127.0.0.1:8080".into());
    // `ACKWIRE_TURN=1`: a coturn beside the server, which hands it out with short-lived
    // credentials (docs/signalling.md, "TURN credentials").
    let mut turn = match std::env::var("ACKWIRE_TURN").as_deref() {
        Ok("1") => Some(DemoTurn::start(&bind)?),
        _ => None,
    };
    // `ACKWIRE_INSTANCES=N`: N servers sharing rooms through a Redis of the demo's own
    // (docs/scale-out.md), on the port after `ACKWIRE_BIND`'s and the next ones.
    let instances: u16 = match std::env::var("ACKWIRE_INSTANCES") {
        Ok(n) => n
            .parse()
            .ok()
            .filter(|n| (1..=8).contains(n))
            .ok_or_else(|| format!("ACKWIRE_INSTANCES={n}: a number from 1 to 8"))?,
        Err(_) => 1,
    };
    let first: std::net::SocketAddr = bind
        .parse()
        .map_err(|e| format!("ACKWIRE_BIND {bind}: {e}"))?;
    let mut redis = if instances > 1 {
        Some(DemoRedis::start(first.ip())?)
    } else {
        None
    };
    let binds: Vec<String> = (0..instances)
        .map(|i| std::net::SocketAddr::new(first.ip(), first.port() + i).to_string())
        .collect();
    let mut signals = Vec::new();
    for bind in &binds {
        let mut signal = Command::new(&server);
        signal
            .arg("--bind")
            .arg(bind)
            .arg("--web-dir")
            .arg(paths::web_dir());
        if let Some(turn) = &turn {
            signal
                .arg("--turn-url")
                .arg(&turn.url)
                .env("ACKWIRE_TURN_SECRET", &turn.secret);
        }
        if let Some(redis) = &redis {
            signal.arg("--redis").arg(&redis.url);
        }
        signals.push(
            signal
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", server.display()))?,
        );
    }
    // A native player in the lobby, so someone opening the URL alone sees another player and
    // live charts at once. It retries until the server is up.
    let lobby = format!("http://{bind}/room/lobby");
    // Warnings only: its link changes would push the URLs below off the screen.
    let native = Command::new(&peer)
        .args(["join", &lobby])
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG")
                .unwrap_or_else(|_| "warn,rtc_dtls::handshake=error,rtc_ice::agent=error".into()),
        )
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", peer.display()))?;
    println!();
    println!("ackwire demo is running (Ctrl-C to stop):");
    println!("  front page:      http://{bind}/");
    println!("  play in a room:  {lobby}   (a native peer is already there; open more tabs too)");
    for other in binds.iter().skip(1) {
        println!("  same room, another server: http://{other}/room/lobby");
    }
    if let Some(redis) = &redis {
        println!(
            "  ({instances} servers share their rooms through the Redis at {})",
            redis.url
        );
    }
    println!("  with a bad link: {lobby}?latency=150&loss=5");
    println!("  dashboard:       {lobby}/dashboard   (all rooms: http://{bind}/dashboard)");
    println!("  metrics:         http://{bind}/metrics");
    if let Some(turn) = &turn {
        println!(
            "  over TURN only:  {lobby}?relay   (coturn at {}, credentials from the welcome)",
            turn.url
        );
    }
    println!();
    let mut signals = signals.into_iter();
    let mut signal = signals.next().ok_or("no server started")?;
    let status = signal.wait().map_err(|e| e.to_string())?;
    // Ctrl-C reaches them all (one process group); if the first server ended on its own,
    // stop the rest.
    for mut child in std::iter::once(native).chain(signals) {
        if child.try_wait().map_err(|e| e.to_string())?.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
    if let Some(turn) = &mut turn {
        turn.stop();
    }
    if let Some(redis) = &mut redis {
        redis.stop();
    }
    if status.success() {
        Ok(())
    } else {
        Err(format!("signal server exited: {status}"))
    }
}

/// `cargo xtask bundle`: the wasm bundle into `web/pkg/`, the example game's Rust client
/// into `examples/pong/web/pkg/` and the rollback game's player into
/// `examples/rollback/web/pkg/`.
pub(crate) fn bundles() -> Result<()> {
    let tools = setup::run()?;
    bundle::build(&tools)?;
    bundle::build_pong(&tools)?;
    bundle::build_rollback(&tools)
}

/// `cargo xtask pong`: the example game, ready to play: both wasm builds, a signal server
/// (debug build) serving the game's pages under `/pong/`, and its host in room `table`.
pub(crate) fn pong() -> Result<()> {
    bundles()?;
    let server = build_signal_server(false)?;
    let host = build_bin("pong", "pong-host", false)?;
    let bind = std::env::var("ACKWIRE_BIND").unwrap_or_else(|_| "127.0.0.1:8080".into());
    let mut signal = Command::new(&server)
        .arg("--bind")
        .arg(&bind)
        .arg("--web-dir")
        .arg(paths::web_dir())
        .arg("--static")
        .arg(format!("/pong={}", paths::pong_web_dir().display()))
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", server.display()))?;
    let url = format!("http://{bind}/pong/?room=table");
    // Its JSON lines would push the URLs off the screen; it retries until the server is up.
    let mut game = Command::new(&host)
        .arg(&url)
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", host.display()))?;
    println!();
    println!("pong is running (Ctrl-C to stop); the host waits in room `table`:");
    println!("  players (JS):    {url}   (open it twice: left and right)");
    println!("  player (Rust):   http://{bind}/pong/rust.html?room=table");
    println!("  let a paddle play by itself: add &auto=track (or &auto=miss)");
    println!("  the room's dashboard: http://{bind}/room/table/dashboard");
    println!();
    let status = signal.wait().map_err(|e| e.to_string())?;
    if game.try_wait().map_err(|e| e.to_string())?.is_none() {
        let _ = game.kill();
        let _ = game.wait();
    }
    if status.success() {
        Ok(())
    } else {
        Err(format!("signal server exited: {status}"))
    }
}

/// `ip` as a URL writes it (an IPv6 address in brackets).
fn url_host(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        v4 => v4.to_string(),
    }
}

/// The demo's Redis (`ACKWIRE_INSTANCES` above 1): on the servers' address, port 6390
/// (`ACKWIRE_REDIS_PORT`), without persistence.
struct DemoRedis {
    child: std::process::Child,
    url: String,
}

impl DemoRedis {
    fn start(ip: std::net::IpAddr) -> Result<DemoRedis> {
        let port = std::env::var("ACKWIRE_REDIS_PORT").unwrap_or_else(|_| "6390".into());
        let ip = if ip.is_unspecified() {
            std::net::IpAddr::from([127, 0, 0, 1])
        } else {
            ip
        };
        let child = Command::new("redis-server")
            .args(["--bind", &ip.to_string(), "--port", &port])
            .args(["--save", "", "--appendonly", "no", "--loglevel", "warning"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start redis-server: {e}"))?;
        let host = url_host(ip);
        Ok(DemoRedis {
            child,
            url: format!("redis://{host}:{port}/"),
        })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The demo's coturn (`ACKWIRE_TURN=1`): on the server's address, port 3478
/// (`ACKWIRE_TURN_PORT`), taking credentials made with a secret new at each start.
struct DemoTurn {
    child: std::process::Child,
    url: String,
    secret: String,
    /// Its pid file and (unused) user database, removed at `stop`.
    dir: PathBuf,
}

impl DemoTurn {
    fn start(bind: &str) -> Result<DemoTurn> {
        let ip = bind
            .parse::<std::net::SocketAddr>()
            .map_err(|e| format!("ACKWIRE_BIND {bind}: {e}"))?
            .ip();
        if ip.is_unspecified() {
            return Err(format!(
                "ACKWIRE_TURN=1 needs ACKWIRE_BIND on the address players reach, not {ip}"
            ));
        }
        let port = std::env::var("ACKWIRE_TURN_PORT").unwrap_or_else(|_| "3478".into());
        let mut random = [0u8; 16];
        std::io::Read::read_exact(
            &mut std::fs::File::open("/dev/urandom").map_err(|e| e.to_string())?,
            &mut random,
        )
        .map_err(|e| e.to_string())?;
        let secret: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let dir = std::env::temp_dir().join(format!("ackwire-demo-turn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut cmd = Command::new("turnserver");
        cmd.args(["-n", "--no-cli", "--no-tls", "--no-dtls"])
            .args([
                "--listening-ip",
                &ip.to_string(),
                "--relay-ip",
                &ip.to_string(),
            ])
            .args(["--listening-port", &port, "--realm", "ackwire.demo"])
            .args(["--use-auth-secret", "--static-auth-secret", &secret])
            .arg("--pidfile")
            .arg(dir.join("turnserver.pid"))
            .arg("--db")
            .arg(dir.join("turndb"))
            .args(["--log-file", "stdout"])
            .stdout(std::process::Stdio::null())
            // It reports the transports it cannot open (SCTP) there, which is noise here.
            .stderr(std::process::Stdio::null());
        if ip.is_loopback() {
            // Every player of a loopback demo is on this machine: relay between them.
            cmd.arg("--allow-loopback-peers");
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start turnserver (coturn): {e}"))?;
        let host = url_host(ip);
        Ok(DemoTurn {
            child,
            url: format!("turn:{host}:{port}?transport=udp"),
            secret,
            dir,
        })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

struct Stage {
    name: String,
    outcome: Result<()>,
    /// When it began, seconds after `cargo xtask test` started.
    began: f64,
    seconds: f64,
    /// CPU seconds (user + system) of the processes it ran: on two cores the stages share,
    /// this, not the wall time, says what cutting a stage would give back.
    cpu: f64,
}

/// CPU seconds (user + system) used so far by this process's children that have ended and
/// been waited for (`cutime` + `cstime` of /proc/self/stat; cargo waits for its rustcs, so
/// a stage's delta is all it ran). Linux reports them in USER_HZ ticks, 100 a second on
/// every architecture's ABI.
fn children_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis start at the third (state).
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(13) + ticks(14)) / 100.0
}

/// When `cargo xtask test` started, so every stage's start, in this process or a lane's, is
/// on one clock: its lanes are told by `ACKWIRE_CI_T0` (unix milliseconds).
fn run_start() -> std::time::SystemTime {
    static T0: std::sync::OnceLock<std::time::SystemTime> = std::sync::OnceLock::new();
    *T0.get_or_init(|| {
        std::env::var("ACKWIRE_CI_T0")
            .ok()
            .and_then(|ms| ms.parse::<u64>().ok())
            .map(|ms| std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
            .unwrap_or_else(std::time::SystemTime::now)
    })
}

fn since_start() -> f64 {
    run_start().elapsed().map_or(0.0, |d| d.as_secs_f64())
}

fn stage(name: &str, f: impl FnOnce() -> Result<()>) -> Stage {
    println!("== {name}");
    let began = since_start();
    let start = Instant::now();
    let cpu_before = children_cpu();
    let outcome = f();
    let seconds = start.elapsed().as_secs_f64();
    let cpu = children_cpu() - cpu_before;
    match &outcome {
        Ok(()) => println!("== {name}: ok ({seconds:.1}s, {cpu:.0} s of CPU)"),
        Err(e) => println!("== {name}: FAILED ({seconds:.1}s, {cpu:.0} s of CPU): {e}"),
    }
    Stage {
        name: name.to_owned(),
        outcome,
        began,
        seconds,
        cpu,
    }
}

/// The stages that run beside the builds and then the browser e2e suite, in lanes: each
/// lane is its own process (`cargo xtask lane NAME`, niced as given: the e2e's pages, relays
/// and natives come first, whose RTT bounds a starved process could miss, then the lane whose
/// native tests have timing bounds of their own), whose output goes to `target/ci/NAME.log`
/// and is printed in one piece when it ends. The lanes start as soon as the test build is
/// done, beside the builds (the wasm bundle's whole-program optimisation keeps one core
/// busy); the stages named in [`NEED_BUILDS`] wait for them. The lints, the packages'
/// verification and the doctests share one lane because all three use `target/`'s build
/// directory, which cargo locks for a whole build; the fuzz smoke comes first in the other
/// lane, so that its two fuzzing processes are over long before the native tests run. The
/// native tests, mostly waiting on real sockets, have a lane of their own at the e2e's
/// priority, from the e2e suite's end: they need no cargo (the test build listed their
/// executables), and beside the other lanes' compiles, niced below them, they neither wait
/// for those nor are starved by them. Last in the checks lane, they were the run's last
/// minute on a fresh machine, with one core idle.
const LANES: &[(&str, i32, &[&str])] = &[
    (
        "checks",
        10,
        &["third-party", "lints", "package", "doctests"],
    ),
    ("browser", 15, &["fuzz", "wasm", "types", "outside-game"]),
    ("native", 0, &["native"]),
];

/// Stages that use what the builds make (the wasm bundle, the npm package): a lane waits for
/// `cargo xtask test` to say the builds are done before it starts one.
const NEED_BUILDS: &[&str] = &["package", "types", "outside-game"];

/// What `cargo xtask test` writes to a lane's stdin once the builds are done; an end of input
/// without it means they failed.
const BUILT: &str = "built";

/// Stages with timing bounds of their own (real sockets' RTTs, link times) that start only once
/// the browser e2e suite has ended: beside its pages, at a lane's lower priority, they were
/// starved past their bounds (a 50 ms emulated RTT read as 116 ms, 2026-11-30, when compiled
/// dependencies came from CI's cache and the lanes caught up with the e2e).
const AFTER_E2E: &[&str] = &["native"];

/// What `cargo xtask test` writes to a lane's stdin once the e2e suite has ended; an end of
/// input (no e2e suite ran) lets the stage go on too.
const E2E_ENDED: &str = "e2e ended";

fn lane_stage(key: &str, tools: &Tools) -> Stage {
    match key {
        "third-party" => stage(
            "third_party/ is the published crates + ackwire.diff",
            third_party::check,
        ),
        "lints" => stage("lints (fmt, rustdoc, no-default-features)", lints),
        "package" => stage(
            "packages (cargo package, each checked on its own)",
            package::package,
        ),
        "types" => stage("types (tsc --noEmit: example, README snippets)", npm::types),
        "native" => stage(
            "native tests (the test build's executables, three at a time)",
            native_tests,
        ),
        "doctests" => stage("doctests (cargo test --doc)", doctests),
        "wasm" => stage("wasm tests in headless Chromium", || {
            wasm_browser_tests(tools)
        }),
        "fuzz" => stage("fuzz smoke (cargo fuzz, every target)", || {
            fuzz_smoke(tools)
        }),
        "outside-game" => stage(
            "a game outside the workspace (built as the guide says; its handshake)",
            outside_game_stage,
        ),
        other => stage("unknown stage", || Err(format!("no stage `{other}`"))),
    }
}

/// `cargo xtask lane NAME` (run by `cargo xtask test`): one lane's stages in order, each
/// line of its profile written to `target/ci/NAME.stages` (name, outcome, began, seconds,
/// CPU seconds).
pub(crate) fn lane(name: &str) -> Result<()> {
    let (_, _, keys) = LANES
        .iter()
        .find(|(n, ..)| *n == name)
        .ok_or_else(|| format!("no lane `{name}`"))?;
    // Present already (`cargo xtask test` ran setup): this only finds the tools.
    let tools = setup::run()?;
    let mut record = String::new();
    let mut failed = false;
    let mut built = None;
    for key in keys.iter() {
        if AFTER_E2E.contains(key) {
            built.get_or_insert_with(builds_done);
            e2e_ended();
        }
        let s = if NEED_BUILDS.contains(key) && !*built.get_or_insert_with(builds_done) {
            stage(&format!("{key} (not run)"), || {
                Err("the builds it needs failed".into())
            })
        } else {
            lane_stage(key, &tools)
        };
        failed |= s.outcome.is_err();
        record.push_str(&format!(
            "{}\t{}\t{:.1}\t{:.1}\t{:.1}\n",
            s.name,
            s.outcome.as_ref().err().map_or("ok", |_| "FAILED"),
            s.began,
            s.seconds,
            s.cpu
        ));
    }
    std::fs::write(ci_dir().join(format!("{name}.stages")), record).map_err(|e| e.to_string())?;
    if failed {
        Err(format!("lane {name}: a stage failed"))
    } else {
        Ok(())
    }
}

/// Blocks until `cargo xtask test` says the builds are done ([`BUILT`] on stdin): whether
/// they succeeded.
fn builds_done() -> bool {
    std::io::stdin()
        .lines()
        .map_while(std::result::Result::ok)
        .any(|line| line.trim() == BUILT)
}

/// Blocks until `cargo xtask test` says the e2e suite has ended ([`E2E_ENDED`] on stdin), or
/// has closed this lane's stdin.
fn e2e_ended() {
    for line in std::io::stdin().lines().map_while(std::result::Result::ok) {
        if line.trim() == E2E_ENDED {
            break;
        }
    }
}

fn ci_dir() -> PathBuf {
    paths::root().join("target/ci")
}

/// A process running beside this one (a lane, the e2e suite) with its output in a log.
struct Beside {
    name: String,
    child: std::process::Child,
    log: PathBuf,
    began: f64,
    /// Called as soon as the process has ended (by its waiting thread).
    then: Option<Box<dyn FnOnce() + Send>>,
}

impl Beside {
    /// Starts `cmd` with its output to `log` and its stdin a pipe (closed when dropped).
    fn spawn(name: &str, mut cmd: Command, log: PathBuf) -> Result<Self> {
        let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        cmd.stdout(out)
            .stderr(err)
            .stdin(std::process::Stdio::piped());
        eprintln!("  $ {}   (output: {})", describe(&cmd), log.display());
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", describe(&cmd)))?;
        Ok(Beside {
            name: name.to_owned(),
            child,
            log,
            began: since_start(),
            then: None,
        })
    }

    /// Waits for all of them, each in its own thread so that each one's length is its own;
    /// prints each one's output in one piece, in the order they ended.
    fn finish_all(all: Vec<Beside>) -> Vec<Stage> {
        let mut ended: Vec<(f64, Beside, Result<()>)> = std::thread::scope(|s| {
            let waiting: Vec<_> = all
                .into_iter()
                .map(|mut b| {
                    s.spawn(move || {
                        let outcome = match b.child.wait() {
                            Ok(status) if status.success() => Ok(()),
                            Ok(status) => Err(format!("{} failed ({status})", b.name)),
                            Err(e) => Err(e.to_string()),
                        };
                        if let Some(then) = b.then.take() {
                            then();
                        }
                        (since_start(), b, outcome)
                    })
                })
                .collect();
            waiting
                .into_iter()
                .map(|w| w.join().expect("a waiting thread panicked"))
                .collect()
        });
        ended.sort_by(|a, b| a.0.total_cmp(&b.0));
        ended
            .into_iter()
            .map(|(end, b, outcome)| {
                let seconds = end - b.began;
                println!("== {} (its output, from {}):", b.name, b.log.display());
                print!("{}", std::fs::read_to_string(&b.log).unwrap_or_default());
                match &outcome {
                    Ok(()) => println!("== {}: ok ({seconds:.1}s)", b.name),
                    Err(e) => println!("== {}: FAILED ({seconds:.1}s): {e}", b.name),
                }
                Stage {
                    name: b.name,
                    outcome,
                    began: b.began,
                    seconds,
                    // Told apart by the caller: the waits above run in threads of one process.
                    cpu: 0.0,
                }
            })
            .collect()
    }
}

/// What `cargo test` builds (examples as the programs they are), then the benches, so that
/// clippy sees all that `cargo clippy --all-targets` would.
///
/// Cargo's messages of the tests' build are kept ([`TEST_BUILD_MESSAGES`]): they list the
/// executables the native tests run, which the native lane then finds without asking cargo,
/// whose lock on the build directory another lane may hold for minutes.
fn build_tests() -> Result<()> {
    let messages = crate::process::output(cargo_linted().args([
        "test",
        "--workspace",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]))?;
    std::fs::create_dir_all(ci_dir()).map_err(|e| e.to_string())?;
    std::fs::write(ci_dir().join(TEST_BUILD_MESSAGES), messages).map_err(|e| e.to_string())?;
    run(cargo_linted().args(["test", "--workspace", "--benches", "--no-run"]))
}

/// Where [`build_tests`] keeps cargo's messages, in [`ci_dir`].
const TEST_BUILD_MESSAGES: &str = "test-build.json";

/// `cargo xtask test`, as three overlapping parts, each step started as soon as what it
/// needs is there (the profile it prints gives each stage's start and length):
/// 1. setup beside the test build: the build needs only cargo, and setup's minutes on a
///    fresh machine (downloads, dpkg, two tool compiles) overlap it;
/// 2. the bundles, the npm package and the e2e's certificate, then the browser e2e suite in
///    the background (the long pole, mostly waiting: idle timeouts, restarts, page loads);
/// 3. beside it, the lanes ([`LANES`]): the third_party/ drift check, lints, the packages'
///    verification, then native tests; the type check, wasm tests and the fuzz smoke.
pub(crate) fn test() -> Result<()> {
    let start = Instant::now();
    let t0_ms = run_start()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
        .to_string();
    let (tools, built) = std::thread::scope(|s| {
        let tools = s.spawn(setup::run);
        let built = stage(
            "test build (tests, examples, benches; clippy as the compiler)",
            build_tests,
        );
        let tools = tools
            .join()
            .unwrap_or_else(|_| Err("setup panicked".into()));
        (tools, built)
    });
    let mut stages = vec![built];
    let tools = match tools {
        Ok(tools) => tools,
        Err(e) => {
            stages.push(Stage {
                name: "setup".into(),
                outcome: Err(e),
                began: 0.0,
                seconds: since_start(),
                cpu: 0.0,
            });
            return summarize("test", &stages, start);
        }
    };
    if stages[0].outcome.is_err() {
        return summarize("test", &stages, start);
    }
    std::fs::create_dir_all(ci_dir()).map_err(|e| e.to_string())?;
    let cpu_before = children_cpu();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut beside = Vec::new();
    for (name, nice, _) in LANES {
        let mut cmd = Command::new("nice");
        cmd.args(["-n", &nice.to_string()])
            .arg(&exe)
            .args(["lane", name])
            .current_dir(paths::root())
            .env("ACKWIRE_CI_T0", &t0_ms);
        beside.push(Beside::spawn(
            &format!("lane {name}"),
            cmd,
            ci_dir().join(format!("{name}.log")),
        )?);
    }
    let mut e2e_cmd = None;
    let builds = stage("builds (bundles, npm package, e2e programs)", || {
        e2e_cmd = Some(prepare_e2e(&tools, &[], false)?);
        Ok(())
    });
    let builds_cpu = builds.cpu;
    stages.push(builds);
    // Tells the lanes the builds are done (or, by closing their stdin unsaid, that they failed),
    // then, once the e2e suite has ended, that too.
    let mut told = Vec::new();
    for lane in &mut beside {
        if let Some(mut stdin) = lane.child.stdin.take()
            && e2e_cmd.is_some()
        {
            use std::io::Write;
            // A lane that cannot be told has ended already, and its own outcome says why.
            let _ = writeln!(stdin, "{BUILT}");
            told.push(stdin);
        }
    }
    if let Some(e2e_cmd) = e2e_cmd {
        let mut e2e = Beside::spawn(
            "browser e2e (playwright-core + chromium)",
            e2e_cmd,
            paths::root().join("target/e2e.log"),
        )?;
        e2e.then = Some(Box::new(move || {
            use std::io::Write;
            for mut stdin in told {
                let _ = writeln!(stdin, "{E2E_ENDED}");
            }
        }));
        beside.push(e2e);
    }
    let side_by_side = stages.len();
    let ended_all = Beside::finish_all(beside);
    // The builds stage's own processes ended before these, counted in its stage.
    let cpu_beside = children_cpu() - cpu_before - builds_cpu;
    let mut e2e_index = None;
    let mut why = String::new();
    for ended in ended_all {
        let Some(lane) = ended.name.strip_prefix("lane ") else {
            if ended.outcome.is_err() {
                why += &failure_digest(&ended.name, &paths::root().join("target/e2e.log"));
            }
            e2e_index = Some(stages.len());
            stages.push(ended);
            continue;
        };
        // A lane's own stages, from the profile it wrote; a lane that failed outside them
        // (in its setup) shows as itself.
        let record =
            std::fs::read_to_string(ci_dir().join(format!("{lane}.stages"))).unwrap_or_default();
        let mut stage_failed = false;
        let mut any = false;
        for line in record.lines() {
            if let [name, mark, began, seconds, cpu] = line.split('\t').collect::<Vec<_>>()[..] {
                any = true;
                stage_failed |= mark != "ok";
                stages.push(Stage {
                    name: name.to_owned(),
                    outcome: if mark == "ok" {
                        Ok(())
                    } else {
                        Err(format!("{name} failed"))
                    },
                    began: began.parse().unwrap_or(0.0),
                    seconds: seconds.parse().unwrap_or(0.0),
                    cpu: cpu.parse().unwrap_or(0.0),
                });
            }
        }
        if stage_failed || ended.outcome.is_err() {
            why += &failure_digest(&ended.name, &ci_dir().join(format!("{lane}.log")));
        }
        if !any || (ended.outcome.is_err() && !stage_failed) {
            stages.push(ended);
        }
    }
    // The e2e suite's CPU: all that ran beside, less what the lanes' stages counted (a lane
    // process itself only waits).
    if let Some(i) = e2e_index {
        let lanes: f64 = stages[side_by_side..]
            .iter()
            .enumerate()
            .filter(|(j, _)| side_by_side + j != i)
            .map(|(_, s)| s.cpu)
            .sum();
        stages[i].cpu = (cpu_beside - lanes).max(0.0);
    }
    let outcome = summarize("test", &stages, start);
    // Last, where a reader of the run's tail (a CI page) sees it: the full outputs above are
    // thousands of lines, and the failure is in one of them.
    if !why.is_empty() {
        println!("\n{why}");
    }
    outcome
}

/// The part of a failed process's log that says why: node's `failing tests` section, or
/// cargo test's `failures:` onwards, else the log's last lines; without stack frames.
fn failure_digest(name: &str, log: &std::path::Path) -> String {
    const MAX_LINES: usize = 80;
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines
        .iter()
        .position(|l| l.starts_with("✖ failing tests:"))
        .or_else(|| lines.iter().position(|l| *l == "failures:"))
        .unwrap_or(lines.len().saturating_sub(40));
    // Stack frames say where in the harness; the messages above them say what.
    let mut part: Vec<&str> = lines[from..]
        .iter()
        .filter(|l| !l.trim_start().starts_with("at "))
        .copied()
        .collect();
    let mut more = String::new();
    if part.len() > MAX_LINES {
        more = format!("; {} more lines there", part.len() - MAX_LINES);
        part.truncate(MAX_LINES);
    }
    format!(
        "== why {name} failed (from {}{more}):\n{}\n",
        log.display(),
        part.join("\n")
    )
}

/// Prints the profile (each stage's outcome, start and length, in seconds after the start)
/// and a summary line; fails if any stage failed.
fn summarize(command: &str, stages: &[Stage], start: Instant) -> Result<()> {
    let failed = stages.iter().filter(|s| s.outcome.is_err()).count();
    println!();
    println!(
        "  {:<6} {:<62} {:>7} {:>7} {:>7}",
        "", "stage", "began", "took", "cpu"
    );
    let mut by_start: Vec<&Stage> = stages.iter().collect();
    by_start.sort_by(|a, b| a.began.total_cmp(&b.began));
    for s in by_start {
        let mark = if s.outcome.is_ok() { "ok" } else { "FAILED" };
        println!(
            "  {mark:<6} {:<62} {:>6.1}s {:>6.1}s {:>6.0}s",
            s.name, s.began, s.seconds, s.cpu
        );
    }
    println!(
        "xtask {command}: {}/{} stages passed in {:.1}s ({:.0} s of CPU, setup's included)",
        stages.len() - failed,
        stages.len(),
        start.elapsed().as_secs_f64(),
        children_cpu()
    );
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} stage(s) failed"))
    }
}

/// What a reviewer would otherwise catch: an unformatted file, a broken intra-doc link or any
/// rustdoc warning, and the UDP peer built without the room driver (`ackwire-peer
/// --no-default-features`). A clippy warning anywhere (the workspace lints included) fails
/// the test build, which runs clippy ([`cargo_linted`]).
fn lints() -> Result<()> {
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(cargo()
        .args(["doc", "--no-deps", "--workspace"])
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    // Checked, not built: it only has to compile without the room API (a build would link a
    // binary nothing runs).
    run(cargo().args(["check", "-p", "ackwire-peer", "--no-default-features"]))
}

/// `cargo test --workspace`'s executables, run several at a time ([`crate::test_binaries`]), as
/// the test build's kept messages ([`TEST_BUILD_MESSAGES`]) list them.
fn native_tests() -> Result<()> {
    let kept = ci_dir().join(TEST_BUILD_MESSAGES);
    let messages = std::fs::read_to_string(&kept)
        .map_err(|e| format!("{}: {e} (the test build writes it)", kept.display()))?;
    let binaries = crate::test_binaries::from_messages(&messages)?;
    println!("   {} test executables", binaries.len());
    crate::test_binaries::run_all(binaries, &ci_dir().join("native"))
}

/// `cargo test --workspace --doc` (the README's Rust example compiles as one): rustdoc
/// compiles each against the test build's libraries, under cargo's lock on the build
/// directory, so in the lane that holds it.
fn doctests() -> Result<()> {
    run(cargo_linted().args(["test", "--workspace", "--doc"]))
}

/// `wasm-bindgen-test` suites, run by wasm-bindgen-test-runner through chromedriver in
/// headless Chromium (options in each crate's `webdriver.json`), inside a loopback-only
/// namespace: the JS bindings (`ackwire-wasm`, every test) and the browser driver (`ackwire`'s
/// unit tests: its frame decoding against serde; its integration tests are native).
fn wasm_browser_tests(tools: &Tools) -> Result<()> {
    let target_dir = paths::wasm_target_dir(tools.wasm.name());
    for (package, targets) in [("ackwire-wasm", &[][..]), ("ackwire", &["--lib"][..])] {
        let args = |extra: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = ["test", "-p", package]
                .iter()
                .chain(targets)
                .chain(&["--target", WASM_TARGET, "--target-dir"])
                .map(|s| s.to_string())
                .collect();
            v.push(target_dir.to_string_lossy().into_owned());
            v.extend(extra.iter().map(|s| s.to_string()));
            v
        };
        // Compile (and fetch crates) outside the namespace, which has no route to the registry.
        run(tools
            .wasm
            .cargo()
            .current_dir(paths::root())
            .args(args(&["--no-run"])))?;
        let program = tools.wasm.cargo_program();
        let run_args = args(&["--offline"]);
        let run_args: Vec<&str> = run_args.iter().map(String::as_str).collect();
        let mut cmd = in_loopback_namespace(&program.to_string_lossy(), &run_args);
        tools.wasm.apply_env(&mut cmd);
        cmd.current_dir(paths::root())
            .env(
                "CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER",
                &tools.wasm_bindgen_test_runner,
            )
            .env("CHROMEDRIVER", "/usr/bin/chromedriver")
            .env("WASM_BINDGEN_TEST_TIMEOUT", "60");
        run(&mut cmd)?;
    }
    Ok(())
}

/// The e2e suite in `web/e2e/`: node's test runner drives Debian's Chromium through
/// playwright-core against the real `ackwire-signal` binary, all inside a namespace where
/// only loopback exists.
/// With `only`, just the files whose name contains one of those strings.
pub(crate) fn browser_e2e(tools: &Tools, only: &[&str]) -> Result<()> {
    let mut cmd = prepare_e2e(tools, only, true)?;
    run(&mut cmd).map_err(|e| format!("{e}\n   (command: {})", describe(&cmd)))
}

/// Builds everything the e2e files in `only` (all without) need and returns the command that
/// runs them.
/// The builds the e2e suite needs, and its command. With `build_tests`, the test build too
/// (`cargo xtask e2e`); `cargo xtask test` made it already, and its lanes hold cargo's lock
/// on `target/` while the bundles build.
fn prepare_e2e(tools: &Tools, only: &[&str], build_tests: bool) -> Result<Command> {
    bundle::build(tools)?;
    // `package.test.mjs` loads the JS API from the tarball a game would install.
    let tarball = npm::pack()?;
    // The binaries and examples the e2e drives come from the very build the native tests run
    // (`cargo test` builds every package's binaries and examples): one feature set, one
    // compile. A `cargo build -p` of each resolves its own features and rebuilt ~140 crates.
    if build_tests {
        self::build_tests()?;
    }
    let debug = paths::root().join("target/debug");
    let server = debug.join("ackwire-signal");
    let peer = debug.join("ackwire-peer");
    let files = e2e_files(only)?;
    let artifacts = e2e_artifacts_dir();
    std::fs::create_dir_all(&artifacts).map_err(|e| e.to_string())?;
    // A fresh self-signed certificate for the tests that serve over TLS (`wss.test.mjs`).
    let tls = paths::root().join("target/e2e-tls");
    run(Command::new(debug.join("examples/self_signed_cert"))
        .arg(&tls)
        .args(["127.0.0.1", "localhost"]))?;
    // The native side of `api.test.mjs`: a program on the `ackwire` crate's API.
    let exchange = debug.join("examples/exchange");
    let mut cmd = e2e_command(&files, &[], &server, &peer);
    // `pong.test.mjs`: the example game's host and its Rust client, built only for it.
    if files.iter().any(|f| f.ends_with("pong.test.mjs")) {
        bundle::build_pong(tools)?;
        // Built by `cargo test` for the game's own test of it (examples/pong/tests).
        let host = debug.join("pong-host");
        cmd.env("ACKWIRE_PONG_HOST_BIN", host)
            .env("ACKWIRE_PONG_WEB_DIR", paths::pong_web_dir());
    }
    // `rollback.test.mjs`: the rollback game's browser player and its native one.
    if files.iter().any(|f| f.ends_with("rollback.test.mjs")) {
        bundle::build_rollback(tools)?;
        cmd.env("ACKWIRE_ROLLBACK_PLAYER_BIN", debug.join("rollback-player"))
            .env("ACKWIRE_ROLLBACK_WEB_DIR", paths::rollback_web_dir());
    }
    if files.iter().any(|f| f.ends_with(OUTSIDE_GAME_E2E)) {
        cmd.env("ACKWIRE_OUTSIDE_GAME_BIN", outside_game::build()?);
    }
    cmd.env("ACKWIRE_EXCHANGE_BIN", exchange)
        .env("ACKWIRE_NPM_TARBALL", &tarball)
        .env("ACKWIRE_ARTIFACTS", &artifacts)
        .env("ACKWIRE_E2E_TLS_CERT", tls.join("cert.pem"))
        .env("ACKWIRE_E2E_TLS_KEY", tls.join("key.pem"));
    println!(
        "   e2e artifacts (screenshots) go to {}",
        artifacts.display()
    );
    Ok(cmd)
}

/// Builds the game [`outside_game`] writes, then runs [`OUTSIDE_GAME_E2E`] with it against
/// the test build's server, beside the e2e suite (in a namespace of its own).
fn outside_game_stage() -> Result<()> {
    let game = outside_game::build()?;
    let debug = paths::root().join("target/debug");
    let file = paths::web_dir().join("e2e").join(OUTSIDE_GAME_E2E);
    run(e2e_command(
        &[file.to_string_lossy().into_owned()],
        &[],
        &debug.join("ackwire-signal"),
        &debug.join("ackwire-peer"),
    )
    .env("ACKWIRE_OUTSIDE_GAME_BIN", game)
    .env("ACKWIRE_ARTIFACTS", e2e_artifacts_dir()))
}

/// Where the e2e tests put their screenshots and captures.
fn e2e_artifacts_dir() -> PathBuf {
    paths::root().join("target/e2e-artifacts")
}

/// The e2e file of the stage "a game outside the workspace", left out of the suite: it needs
/// that game's build, which the stage makes beside the suite.
const OUTSIDE_GAME_E2E: &str = "outside-game.test.mjs";

/// The e2e files whose name contains one of `only` (without, all but [`OUTSIDE_GAME_E2E`]).
pub(crate) fn e2e_files(only: &[&str]) -> Result<Vec<String>> {
    let e2e = paths::web_dir().join("e2e");
    let mut files: Vec<String> = std::fs::read_dir(&e2e)
        .map_err(|e| format!("cannot read {}: {e}", e2e.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".test.mjs"))
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            if only.is_empty() {
                name != OUTSIDE_GAME_E2E
            } else {
                only.iter().any(|o| name.contains(o))
            }
        })
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no *.test.mjs files in {}", e2e.display()));
    }
    Ok(files)
}

/// node's test runner on `files` (with `extra` arguments), in the loopback-only namespace,
/// against these server and native peer binaries.
pub(crate) fn e2e_command(files: &[String], extra: &[&str], server: &Path, peer: &Path) -> Command {
    // A test that hangs fails after 5 minutes (the longest take about one) instead of
    // holding the suite until CI's own limit.
    let mut args = vec!["--test", "--test-reporter=spec", "--test-timeout=300000"];
    args.extend(extra);
    args.extend(files.iter().map(String::as_str));
    let mut cmd = in_loopback_namespace("node", &args);
    cmd.current_dir(paths::web_dir())
        .env("ACKWIRE_SIGNAL_BIN", server)
        .env("ACKWIRE_PEER_BIN", peer)
        .env("ACKWIRE_WEB_DIR", paths::web_dir())
        .env("CHROMIUM", "/usr/bin/chromium");
    cmd
}

/// Seconds each fuzz target runs in `cargo xtask test` (`ACKWIRE_FUZZ_SECONDS`); a smoke run
/// that keeps every target building and shakes out shallow crashes. Long runs: core/fuzz/README.md.
const FUZZ_SECONDS_DEFAULT: u32 = 10;

/// Targets that feed forged packets to a protected connection. libFuzzer's comparison
/// feedback hands the mutator both sides of every compare, the authentication tag the
/// receiver computed from its key among them, so with it a fuzzer "forges" a packet no
/// attacker could (it copies the expected tag in); these run without that feedback, as
/// core/fuzz/README.md says.
const SEALED_TARGETS: [&str; 2] = ["protected_receive", "listener_receive"];

fn fuzz_smoke(tools: &Tools) -> Result<()> {
    let seconds = std::env::var("ACKWIRE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(FUZZ_SECONDS_DEFAULT);
    let core = paths::root().join("core");
    // cargo-fuzz passes -Z flags to rustc; only stable is installed, which accepts them
    // with RUSTC_BOOTSTRAP.
    let fuzz = |args: &[&str]| {
        let mut cmd = Command::new(&tools.cargo_fuzz);
        cmd.arg("fuzz")
            .args(args)
            .current_dir(&core)
            .env("RUSTC_BOOTSTRAP", "1");
        paths::use_build_cache(&mut cmd, "fuzz");
        cmd
    };
    // Without AddressSanitizer: the core forbids unsafe code, so ASan has nothing of ours to
    // watch, and its instrumentation was ~40 % of the targets' build (199 s of CPU against
    // 122 s, `cargo fuzz build -O` with and without `-s none`, 2026-11-29). Coverage-guided
    // fuzzing and every assertion and panic are the same; long runs keep ASan
    // (core/fuzz/README.md).
    run(&mut fuzz(&["build", "-O", "-s", "none"]))?;
    let list = crate::process::output(&mut fuzz(&["list"]))?;
    let max_time = format!("-max_total_time={seconds}");
    let targets: Vec<&str> = list
        .lines()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    // Each target is one process on one core: two at a time.
    for pair in targets.chunks(2) {
        let mut running = Vec::new();
        for &target in pair {
            let mut args = vec!["run", "-O", "-s", "none", target, "--", &max_time];
            if SEALED_TARGETS.contains(&target) {
                args.extend(["-use_cmp=0", "-use_value_profile=0"]);
            }
            let mut cmd = fuzz(&args);
            eprintln!("  $ {}", describe(&cmd));
            let child = cmd.spawn().map_err(|e| e.to_string())?;
            running.push((target, child));
        }
        for (target, mut child) in running {
            let status = child.wait().map_err(|e| e.to_string())?;
            if !status.success() {
                return Err(format!("fuzz target {target} failed ({status})"));
            }
        }
    }
    Ok(())
}

/// `cargo xtask sim [--seeds N] [--from S]`: the room's schedule explorer over seeds
/// `S..S+N`, split across the machine's cores (one process each, disjoint
/// seeds), each printing its count and time; fails if any seed breaks the promise.
pub(crate) fn sim(args: &[String]) -> Result<()> {
    let mut seeds: u64 = 100_000;
    let mut from: u64 = 0;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let value = it
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| format!("{arg} takes a number"))?;
        match arg.as_str() {
            "--seeds" => seeds = value,
            "--from" => from = value,
            other => return Err(format!("sim: unknown option {other}")),
        }
    }
    let explorer = || {
        let mut cmd = cargo();
        // Release: the world and the checker optimised too run 2x the seeds a second of the
        // test profile (where only the protocol's crates are), worth one build for many seeds.
        cmd.args([
            "test",
            "--release",
            "-p",
            "ackwire-room",
            "--test",
            "explorer",
        ]);
        cmd
    };
    run(explorer().arg("--no-run"))?;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let share = seeds.div_ceil(workers);
    let start = Instant::now();
    let mut children = Vec::new();
    for w in 0..workers {
        let first = from + w * share;
        let count = share.min((from + seeds).saturating_sub(first));
        if count == 0 {
            continue;
        }
        let mut cmd = explorer();
        cmd.args(["--", "--nocapture"])
            .env("ACKWIRE_SEED_FROM", first.to_string())
            .env("ACKWIRE_SEEDS", count.to_string());
        children.push((first, count, cmd.spawn().map_err(|e| e.to_string())?));
    }
    let mut failed = Vec::new();
    for (first, count, mut child) in children {
        let status = child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            failed.push(format!("seeds {first}..{}", first + count));
        }
    }
    println!(
        "xtask sim: {seeds} seeds from {from} in {:.1}s on {workers} cores: {}",
        start.elapsed().as_secs_f64(),
        if failed.is_empty() {
            "all clean".to_owned()
        } else {
            format!("failures in {}", failed.join(", "))
        }
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err("the explorer found a broken promise".into())
    }
}

#[cfg(test)]
mod tests {
    use super::failure_digest;

    #[test]
    fn a_failed_e2e_run_is_summed_up_by_its_failing_tests_without_stack_frames() {
        let dir = std::env::temp_dir().join(format!("xtask-digest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("e2e.log");
        let mut text = String::from("✔ passes\n").repeat(500);
        text += "✖ failing tests:\n\ntest at web/e2e/wss.test.mjs:40:1\n✖ two players (10ms)\n  \
                 TimeoutError: page.waitForFunction: Timeout 10000ms exceeded.\n      \
                 at file:///web/e2e/wss.test.mjs:42:16\n";
        std::fs::write(&log, &text).unwrap();
        let digest = failure_digest("browser e2e", &log);
        assert!(digest.starts_with("== why browser e2e failed"), "{digest}");
        assert!(digest.contains("✖ two players"), "{digest}");
        assert!(digest.contains("Timeout 10000ms exceeded"), "{digest}");
        assert!(!digest.contains("wss.test.mjs:42:16"), "{digest}");
        assert!(!digest.contains("✔ passes"), "{digest}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_cargo_test_is_summed_up_by_its_failures_section() {
        let dir = std::env::temp_dir().join(format!("xtask-digest-c-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("native.log");
        std::fs::write(
            &log,
            "test a ... ok\ntest b ... FAILED\n\nfailures:\n\n---- b stdout ----\n\
             assertion failed: rtt < 60\n\nfailures:\n    b\n\ntest result: FAILED. 1 passed\n",
        )
        .unwrap();
        let digest = failure_digest("native tests", &log);
        assert!(digest.contains("assertion failed: rtt < 60"), "{digest}");
        assert!(!digest.contains("test a ... ok"), "{digest}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
