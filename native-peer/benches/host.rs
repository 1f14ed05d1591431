//! A host room at scale: one host process (an `ackwire::Room` with `Role::Host`, as a game's
//! authoritative server would run) serving players that join from a load generator in another
//! process (this one), all on loopback. The host sends each player its state every tick
//! (`broadcast_latest`, 30 ticks/s) and takes each player's input (`send_latest` every tick
//! from each player); the core paces both ways at its 30 packets/s.
//!
//! Players come in two kinds, as a public host meets them: natives over raw UDP (encrypted,
//! one socket on the host for all), and WebRTC players: load-generator members that announce
//! no key, which an encrypting host reaches over a WebRTC data channel (on the host, the same
//! ICE-lite session on one socket and data channel a browser's link has). The UDP players join first, then
//! the WebRTC ones, one after the other, each timed from `Room::join` to its link to the host
//! connected (signalling, the data channel or UDP path, and the core's handshake). The host's
//! RSS is read before, between and after, so each kind's cost per player is its own.
//!
//! Then, with every player in, a steady-state window: the host's CPU (user + system from
//! `/proc/PID/stat`, as a share of one core), threads, sockets, and every link's packets lost
//! on both ends.
//!
//! Run: `cargo bench -p ackwire-peer --bench host` (`-- --players 256 --udp 128 --seconds 10`).
//! Half the players are natives: a per-player figure from a few dozen would mostly be the
//! allocator's steps (glibc grows a heap by fixed amounts), as 32 UDP players read 28 KiB
//! each where 128 read 14.6 KiB, for about the same live heap per player (14.4 and 13.1 KiB).
//! Prints a summary, the goals of `docs/host-rooms.md` met or not, and one JSON line. The
//! machine is shared by the host, the load generator (which holds every player's side of
//! every link) and the signal server: read the figures as what this machine gave, not as a
//! host's ceiling.

#[path = "support/signal.rs"]
mod signal;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ackwire::{App, ChannelKind, Event, LinkState, PeerId, Role, Room, RoomConfig};
use serde_json::json;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

/// The host's heap, counted: what its data holds, apart from what the allocator keeps
/// resident around it (RSS). A few atomic adds per allocation, in both processes.
#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

/// Bytes the process has allocated and not freed.
fn heap_bytes() -> i64 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64 + s.bytes_reallocated as i64
}

/// The environment variable that makes this binary the host, with the room's URL.
const HOST_ENV: &str = "ACKWIRE_BENCH_HOST_URL";
/// The host's tick: state to every player, 30 times a second.
const TICK: Duration = Duration::from_millis(33);
/// Inputs (player → host) and state (host → players).
const INPUT: u8 = 0;
const STATE: u8 = 1;
const STATE_BYTES: usize = 64;
const INPUT_BYTES: usize = 16;

fn app() -> App {
    App::new(
        "host-bench",
        1,
        [
            ChannelKind::UnreliableSequenced,
            ChannelKind::UnreliableSequenced,
        ],
    )
}

fn main() {
    if let Ok(url) = std::env::var(HOST_ENV) {
        host(&url);
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str, default: f64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(default)
    };
    let players = flag("--players", 256.0) as usize;
    let udp = (flag("--udp", 128.0) as usize).min(players);
    let seconds = flag("--seconds", 10.0);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(load(players, udp, seconds));
}

// ----- the host process -----

/// The host: joins as the room's host, sends its state every tick, counts inputs, and prints
/// one JSON line a second (from the room's stats) for the load generator to read.
fn host(url: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut config = RoomConfig::new(app()).with_role(Role::Host);
        config.native.bind = "127.0.0.1:0".parse().unwrap();
        let mut room = Room::join(url, config).expect("the host joins");
        let mut tick = tokio::time::interval(TICK);
        let mut state = [0u8; STATE_BYTES];
        let mut inputs: u64 = 0;
        let mut out = std::io::stdout();
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    state[..8].copy_from_slice(&inputs.to_le_bytes());
                    let _ = room.broadcast_latest(STATE, &state);
                }
                event = room.next_event() => match event {
                    Some(Event::Joined { .. }) => {
                        let _ = writeln!(out, "{}", json!({"type": "joined"}));
                    }
                    Some(Event::Message { channel: INPUT, .. }) => inputs += 1,
                    Some(Event::Stats { links }) => {
                        let connected = links.iter().filter(|l| l.state == LinkState::Connected).count();
                        let (mut lost, mut sent, mut received) = (0u64, 0u64, 0u64);
                        for s in links.iter().filter_map(|l| l.stats.as_ref()) {
                            lost += s.counters.packets_lost;
                            sent += s.counters.packets_sent;
                            received += s.counters.packets_received;
                        }
                        let line = json!({"type": "stats", "links": links.len(), "connected": connected,
                            "lost": lost, "sent": sent, "received": received, "inputs": inputs,
                            "heap": heap_bytes()});
                        let _ = writeln!(out, "{line}");
                    }
                    Some(_) => {}
                    None => break,
                },
            }
        }
    });
}

// ----- the load generator -----

/// The host process and its JSON lines.
struct Host {
    child: Child,
    lines: std::sync::mpsc::Receiver<serde_json::Value>,
    last: Option<serde_json::Value>,
}

impl Host {
    fn start(url: &str) -> Host {
        let mut child = Command::new(std::env::current_exe().expect("this binary"))
            .env(HOST_ENV, url)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the host");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        Host {
            child,
            lines,
            last: None,
        }
    }

    /// The next line the host prints that `pred` takes.
    fn wait(&mut self, what: &str, timeout: Duration, pred: impl Fn(&serde_json::Value) -> bool) {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("the host: no {what} within {timeout:?}"));
            let hit = pred(&line);
            if line["type"] == "stats" {
                self.last = Some(line);
            }
            if hit {
                return;
            }
        }
    }

    /// A stats line the host printed from now on (the ones queued meanwhile are stale).
    fn stats(&mut self) -> serde_json::Value {
        while self.lines.try_recv().is_ok() {}
        self.wait("a stats line", Duration::from_secs(5), |l| {
            l["type"] == "stats"
        });
        self.last.clone().unwrap()
    }

    fn proc_status(&self, key: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Resident memory, KiB.
    fn rss_kib(&self) -> u64 {
        self.proc_status("VmRSS:")
    }

    fn threads(&self) -> u64 {
        self.proc_status("Threads:")
    }

    /// Open sockets.
    fn sockets(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| {
                        std::fs::read_link(e.path())
                            .is_ok_and(|t| t.to_string_lossy().starts_with("socket:"))
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    /// CPU time (user + system) so far.
    fn cpu(&self) -> Duration {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let fields: Vec<u64> = rest
            .split_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        // utime and stime are the 14th and 15th fields; `rest` starts at the 3rd. USER_HZ 100.
        Duration::from_millis((fields.get(11).unwrap_or(&0) + fields.get(12).unwrap_or(&0)) * 10)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the load generator counts across its players.
#[derive(Default)]
struct Counters {
    states: AtomicU64,
}

/// One player: joins, waits for its link to the host, then sends an input every tick and
/// takes what comes, until the run ends; `linked` gets the join's time.
async fn player(
    url: String,
    udp: bool,
    counters: Arc<Counters>,
    linked: tokio::sync::oneshot::Sender<Duration>,
) {
    let mut config = RoomConfig::new(app()).with_role(Role::Client);
    config.native.bind = "127.0.0.1:0".parse().unwrap();
    // A player with no key is reached over WebRTC by an encrypting host.
    config.native.encrypt = udp;
    let began = Instant::now();
    let mut room = Room::join(&url, config).expect("a player joins");
    let mut host: Option<PeerId> = None;
    let mut linked = Some(linked);
    let mut tick = tokio::time::interval(TICK);
    let input = [7u8; INPUT_BYTES];
    loop {
        tokio::select! {
            _ = tick.tick(), if host.is_some() => {
                let _ = room.send_latest(host.unwrap(), INPUT, &input);
            }
            event = room.next_event() => match event {
                Some(Event::Link(info)) if info.state == LinkState::Connected && host.is_none() => {
                    host = Some(info.peer);
                    if let Some(tx) = linked.take() {
                        let _ = tx.send(began.elapsed());
                    }
                }
                Some(Event::Message { channel: STATE, .. }) => {
                    counters.states.fetch_add(1, Ordering::Relaxed);
                }
                Some(Event::Refused { code, message, .. }) => panic!("a player refused: {code}: {message}"),
                Some(_) => {}
                None => break,
            },
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn load(players: usize, udp: usize, seconds: f64) {
    let addr = signal::start(|server| {
        server.max_peers_per_host_room = players + 1;
        server.max_connections_per_ip = players + 16;
    })
    .await;
    let url = format!("http://{addr}/room/arena");

    let mut host = Host::start(&url);
    host.wait("its welcome", Duration::from_secs(20), |l| {
        l["type"] == "joined"
    });
    // The host idle in its room: the baseline its players add to.
    let heap_empty = host.stats()["heap"].as_i64().unwrap_or(0);
    let rss_empty = host.rss_kib();
    let counters = Arc::new(Counters::default());
    let mut joins: Vec<(bool, f64)> = Vec::new();
    let (mut rss_after_udp, mut heap_after_udp) = (rss_empty, heap_empty);
    for i in 0..players {
        let is_udp = i < udp;
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(player(url.clone(), is_udp, counters.clone(), tx));
        let took = tokio::time::timeout(Duration::from_secs(30), rx)
            .await
            .unwrap_or_else(|_| panic!("player {} not linked within 30 s", i + 1))
            .expect("the player's task");
        joins.push((is_udp, took.as_secs_f64() * 1e3));
        if i + 1 == udp {
            // Let the host's allocations for them settle into its RSS.
            heap_after_udp = host.stats()["heap"].as_i64().unwrap_or(0);
            rss_after_udp = host.rss_kib();
        }
        if (i + 1) % 32 == 0 {
            eprintln!(
                "  {} players in; the last joined in {:.0} ms",
                i + 1,
                took.as_secs_f64() * 1e3
            );
        }
    }
    // Every link connected at the host, then a settled second before the window.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = host.stats();
        if s["connected"].as_u64() == Some(players as u64) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the host holds {} of {players} players",
            s["connected"]
        );
    }
    let heap_full = host.stats()["heap"].as_i64().unwrap_or(0);
    let rss_full = host.rss_kib();
    let before = host.stats();
    let (cpu0, t0, states0) = (
        host.cpu(),
        Instant::now(),
        counters.states.load(Ordering::Relaxed),
    );
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let (cpu1, t1, states1) = (
        host.cpu(),
        Instant::now(),
        counters.states.load(Ordering::Relaxed),
    );
    let after = host.stats();
    let window = (t1 - t0).as_secs_f64();
    let cpu_share = (cpu1 - cpu0).as_secs_f64() / window;
    let delta = |k: &str| after[k].as_u64().unwrap_or(0) - before[k].as_u64().unwrap_or(0);
    let (lost, sent, received, inputs) = (
        delta("lost"),
        delta("sent"),
        delta("received"),
        delta("inputs"),
    );
    let webrtc = players - udp;
    let udp_kib = (rss_after_udp as f64 - rss_empty as f64) / udp.max(1) as f64;
    let webrtc_kib = (rss_full as f64 - rss_after_udp as f64) / webrtc.max(1) as f64;
    let udp_heap_kib = (heap_after_udp - heap_empty) as f64 / 1024.0 / udp.max(1) as f64;
    let webrtc_heap_kib = (heap_full - heap_after_udp) as f64 / 1024.0 / webrtc.max(1) as f64;
    let mut all: Vec<f64> = joins.iter().map(|(_, ms)| *ms).collect();
    let last_join = *all.last().unwrap_or(&f64::NAN);
    all.sort_by(f64::total_cmp);
    let kind = |want_udp: bool| {
        let mut v: Vec<f64> = joins
            .iter()
            .filter(|(u, _)| *u == want_udp)
            .map(|(_, ms)| *ms)
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let (udp_joins, webrtc_joins) = (kind(true), kind(false));
    let held = after["connected"].as_u64().unwrap_or(0);
    let per_player_pps_out = sent as f64 / window / players as f64;
    let per_player_pps_in = received as f64 / window / players as f64;
    println!(
        "host room: {held} players held ({udp} UDP, {webrtc} WebRTC) by one host process, {window:.1} s window"
    );
    println!(
        "  host CPU: {:.2} of one core; threads {}; sockets {}",
        cpu_share,
        host.threads(),
        host.sockets()
    );
    println!(
        "  host RSS: {} KiB empty, {} KiB with {udp} UDP players, {} KiB with all: {udp_kib:.1} KiB per UDP player, {webrtc_kib:.1} KiB per WebRTC player",
        rss_empty, rss_after_udp, rss_full
    );
    println!(
        "  host heap (live bytes): {:.0} KiB empty; {udp_heap_kib:.1} KiB per UDP player, {webrtc_heap_kib:.1} KiB per WebRTC player",
        heap_empty as f64 / 1024.0
    );
    println!(
        "  packets per player per second at the host: {per_player_pps_out:.1} out, {per_player_pps_in:.1} in; inputs taken {inputs}, states delivered to players {}",
        states1 - states0
    );
    println!(
        "  join (Room::join -> link to the host connected), ms: all p50 {:.0} p99 {:.0}; UDP p50 {:.0} p99 {:.0}; WebRTC p50 {:.0} p99 {:.0}; the {}th (last) {last_join:.0}",
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        percentile(&udp_joins, 0.5),
        percentile(&udp_joins, 0.99),
        percentile(&webrtc_joins, 0.5),
        percentile(&webrtc_joins, 0.99),
        players
    );
    println!("  packets lost on the host's links in the window: {lost} of {sent} sent");
    let goal = |ok: bool| if ok { "met" } else { "MISSED" };
    println!("goals (issue #37):");
    println!(
        "  host CPU <= 1 core: {} ({cpu_share:.2})",
        goal(cpu_share <= 1.0)
    );
    println!(
        "  RSS <= 256 KiB per WebRTC player: {} ({webrtc_kib:.1})",
        goal(webrtc_kib <= 256.0)
    );
    println!(
        "  RSS <= 16 KiB per UDP player: {} ({udp_kib:.1})",
        goal(udp_kib <= 16.0)
    );
    println!(
        "  the {players}th join <= 500 ms: {} ({last_join:.0} ms)",
        goal(last_join <= 500.0)
    );
    println!("  no packet loss on loopback: {} ({lost})", goal(lost == 0));
    println!(
        "{}",
        json!({
            "bench": "host", "players": players, "udp": udp, "webrtc": webrtc, "held": held,
            "cpu_cores": cpu_share, "rss_empty_kib": rss_empty, "rss_per_udp_kib": udp_kib,
            "rss_per_webrtc_kib": webrtc_kib,
            "heap_per_udp_kib": udp_heap_kib, "heap_per_webrtc_kib": webrtc_heap_kib, "threads": host.threads(), "sockets": host.sockets(),
            "join_p50_ms": percentile(&all, 0.5), "join_p99_ms": percentile(&all, 0.99),
            "join_last_ms": last_join, "lost": lost, "sent": sent, "received": received,
            "pps_out_per_player": per_player_pps_out, "pps_in_per_player": per_player_pps_in,
        })
    );
    drop(host);
}
