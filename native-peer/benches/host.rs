//! A host room at scale: one host process (an `ackwire::Room` with `Role::Host`, as a game's
//! authoritative server would run) serving players that join from a load generator in another
//! process (this one), all on loopback. The host sends each player its state every tick
//! (`broadcast_latest`, 30 ticks/s) and takes each player's input (`send_latest` every tick
//! from each player); the core paces both ways at its 30 packets/s.
//!
//! Players come in four kinds, as a public host meets them: natives over raw UDP (encrypted,
//! one socket on the host for all); WebRTC players: load-generator members that announce no
//! key, which an encrypting host reaches over a WebRTC data channel (on the host, the same
//! ICE-lite session on one socket and data channel a browser's link has); WebTransport
//! players: load-generator members that dial the host's WebTransport service as a browser
//! does (`NativeOptions::dial_webtransport`; on the host, the same session on one socket a
//! browser's has); and WebSocket players, which dial the host's WebSocket as a browser
//! without WebRTC does (`NativeOptions::dial_websocket`; on the host, a TCP connection
//! each). The UDP players join first; then half the WebRTC ones, half the WebTransport ones,
//! the other half of those, the other half of the WebRTC ones (ABBA: the two kinds the goal
//! compares get the same average place, as a window's CPU per player grows with everyone
//! already in); the WebSocket ones last. Each join is timed from `Room::join` to its link to
//! the host connected (signalling, the data channel, session, connection or UDP path, and the
//! core's handshake).
//!
//! After each group is in (and once before anyone), with every link so far connected at the
//! host, a steady-state window: the host's CPU (user + system from `/proc/PID/stat`, as a
//! share of one core), its RSS and live heap, and every link's packets lost on both ends. A
//! kind's cost per player is what its groups' windows added to the ones before them, divided
//! by its players: CPU, RSS and heap per player of each kind, from one run. The last window
//! (every player in) gives the host's totals, threads and sockets.
//!
//! Run: `cargo bench -p ackwire-peer --bench host`
//! (`-- --players 256 --udp 64 --webtransport 64 --websocket 64 --seconds 10`; the WebRTC
//! players are the rest). A quarter of the players of each kind: a per-player figure from a
//! few dozen would
//! mostly be the allocator's steps (glibc grows a heap by fixed amounts), as 32 UDP players
//! read 28 KiB each where 128 read 14.6 KiB, for about the same live heap per player (14.4
//! and 13.1 KiB).
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

use ackwire::{App, ChannelKind, Event, LinkState, PeerId, Role, Room, RoomConfig, TransportKind};
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
    // `ACKWIRE_BENCH_LOG=<filter>`: both processes log to stderr (the host's JSON lines stay
    // on stdout).
    if let Ok(filter) = std::env::var("ACKWIRE_BENCH_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
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
    let udp = (flag("--udp", players.div_ceil(4) as f64) as usize).min(players);
    let webtransport = (flag("--webtransport", (players / 4) as f64) as usize).min(players - udp);
    let websocket =
        (flag("--websocket", (players / 4) as f64) as usize).min(players - udp - webtransport);
    let seconds = flag("--seconds", 10.0);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(load(players, [udp, webtransport, websocket], seconds));
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

/// How a player reaches the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Udp,
    WebRtc,
    WebTransport,
    WebSocket,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Udp => "UDP",
            Kind::WebRtc => "WebRTC",
            Kind::WebTransport => "WebTransport",
            Kind::WebSocket => "WebSocket",
        }
    }

    fn transport(self) -> TransportKind {
        match self {
            Kind::Udp => TransportKind::Udp,
            Kind::WebRtc => TransportKind::WebRtc,
            Kind::WebTransport => TransportKind::WebTransport,
            Kind::WebSocket => TransportKind::WebSocket,
        }
    }
}

/// One player: joins, waits for its link to the host, then sends an input every tick and
/// takes what comes, until the run ends; `linked` gets the join's time.
async fn player(
    url: String,
    kind: Kind,
    counters: Arc<Counters>,
    linked: tokio::sync::oneshot::Sender<Duration>,
) {
    let mut config = RoomConfig::new(app()).with_role(Role::Client);
    config.native.bind = "127.0.0.1:0".parse().unwrap();
    // A player with no key is reached over WebRTC by an encrypting host.
    config.native.encrypt = kind != Kind::WebRtc;
    // One that dials the host's WebTransport stands in for a browser that has it.
    config.native.dial_webtransport = kind == Kind::WebTransport;
    // One that dials its WebSocket, for a browser with neither WebTransport nor WebRTC.
    config.native.dial_websocket = kind == Kind::WebSocket;
    let began = Instant::now();
    let mut room = Room::join(&url, config).expect("a player joins");
    let mut host: Option<PeerId> = None;
    let mut linked = Some(linked);
    let mut failed = None;
    let mut trail: Vec<String> = Vec::new();
    let mut tick = tokio::time::interval(TICK);
    let input = [7u8; INPUT_BYTES];
    loop {
        tokio::select! {
            _ = tick.tick(), if host.is_some() => {
                let _ = room.send_latest(host.unwrap(), INPUT, &input);
            }
            event = room.next_event() => match event {
                Some(Event::Link(info)) if info.state == LinkState::Connected && host.is_none() => {
                    assert_eq!(
                        info.transport,
                        kind.transport(),
                        "a {} player's link (its last failure: {failed:?}) {trail:#?}",
                        kind.name(),
                    );
                    host = Some(info.peer);
                    if let Some(tx) = linked.take() {
                        let _ = tx.send(began.elapsed());
                    }
                }
                Some(Event::Link(info)) => {
                    trail.push(format!("{:?} {:?} {:?} {:?}", began.elapsed(), info.state, info.transport, info.reason));
                    if info.reason.is_some() { failed = info.reason; }
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

/// What the host did in one steady-state window.
struct Window {
    /// Players in.
    players: usize,
    /// A share of one core.
    cpu: f64,
    rss_kib: u64,
    heap: i64,
    lost: u64,
    sent: u64,
    received: u64,
    inputs: u64,
    /// States the players took.
    states: u64,
    seconds: f64,
}

/// A steady-state window of `seconds` once every one of the `players` in is connected at the
/// host (and a settled stats line after).
async fn window(host: &mut Host, counters: &Counters, players: usize, seconds: f64) -> Window {
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
    let before = host.stats();
    let rss_kib = host.rss_kib();
    let heap = before["heap"].as_i64().unwrap_or(0);
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
    let delta = |k: &str| after[k].as_u64().unwrap_or(0) - before[k].as_u64().unwrap_or(0);
    Window {
        players,
        cpu: (cpu1 - cpu0).as_secs_f64() / window,
        rss_kib,
        heap,
        lost: delta("lost"),
        sent: delta("sent"),
        received: delta("received"),
        inputs: delta("inputs"),
        states: states1 - states0,
        seconds: window,
    }
}

/// One kind's players, what they cost the host (the window after them less the one before)
/// and how long they took to join.
struct Cost {
    kind: Kind,
    players: usize,
    /// Per player: a share of one core, RSS KiB, live heap KiB.
    cpu: f64,
    rss_kib: f64,
    heap_kib: f64,
    /// Join times, ms, sorted.
    joins: Vec<f64>,
    lost: u64,
    sent: u64,
}

async fn load(players: usize, [udp, webtransport, websocket]: [usize; 3], seconds: f64) {
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
    let webrtc = players - udp - webtransport - websocket;
    // WebRTC and WebTransport, whose costs the goal compares, join in halves, in the order
    // ABBA: a window's CPU per player grows with everyone already in (the load generator's
    // share of the two cores grows with them), and this order gives both kinds the same
    // average place. UDP comes first and WebSocket last.
    let groups = [
        (Kind::Udp, udp),
        (Kind::WebRtc, webrtc / 2),
        (Kind::WebTransport, webtransport / 2),
        (Kind::WebTransport, webtransport - webtransport / 2),
        (Kind::WebRtc, webrtc - webrtc / 2),
        (Kind::WebSocket, websocket),
    ];
    let counters = Arc::new(Counters::default());
    // The host idle in its room: the baseline its players add to.
    let mut last = window(&mut host, &counters, 0, seconds).await;
    let empty = (last.rss_kib, last.heap, last.cpu);
    let mut joins: Vec<f64> = Vec::new();
    // Per kind, summed over its groups, then divided by its players.
    let mut costs: Vec<Cost> = Vec::new();
    for (kind, count) in groups {
        if count == 0 {
            continue;
        }
        let mut kind_joins = Vec::new();
        for _ in 0..count {
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::spawn(player(url.clone(), kind, counters.clone(), tx));
            let took = tokio::time::timeout(Duration::from_secs(30), rx)
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "player {} ({}) not linked within 30 s",
                        joins.len() + 1,
                        kind.name()
                    )
                })
                .expect("the player's task");
            let ms = took.as_secs_f64() * 1e3;
            joins.push(ms);
            kind_joins.push(ms);
            if joins.len().is_multiple_of(32) {
                eprintln!(
                    "  {} players in; the last ({}) joined in {ms:.0} ms",
                    joins.len(),
                    kind.name()
                );
            }
        }
        let now = window(&mut host, &counters, joins.len(), seconds).await;
        eprintln!(
            "  {count} {} players in: host CPU {:.3} of a core, RSS {} KiB",
            kind.name(),
            now.cpu,
            now.rss_kib
        );
        let i = match costs.iter().position(|c| c.kind == kind) {
            Some(i) => i,
            None => {
                costs.push(Cost {
                    kind,
                    players: 0,
                    cpu: 0.0,
                    rss_kib: 0.0,
                    heap_kib: 0.0,
                    joins: Vec::new(),
                    lost: 0,
                    sent: 0,
                });
                costs.len() - 1
            }
        };
        let c = &mut costs[i];
        c.players += count;
        c.cpu += now.cpu - last.cpu;
        c.rss_kib += now.rss_kib as f64 - last.rss_kib as f64;
        c.heap_kib += (now.heap - last.heap) as f64 / 1024.0;
        c.joins.extend(kind_joins);
        c.lost += now.lost;
        c.sent += now.sent;
        last = now;
    }
    for c in &mut costs {
        let n = c.players as f64;
        c.cpu /= n;
        c.rss_kib /= n;
        c.heap_kib /= n;
        c.joins.sort_by(f64::total_cmp);
    }
    let full = last;
    let cost = |kind: Kind| costs.iter().find(|c| c.kind == kind);
    let per = |kind: Kind, f: fn(&Cost) -> f64| cost(kind).map_or(f64::NAN, f);
    let last_join = *joins.last().unwrap_or(&f64::NAN);
    let mut all = joins.clone();
    all.sort_by(f64::total_cmp);
    let held = full.players;
    let window = full.seconds;
    let per_player_pps_out = full.sent as f64 / window / players as f64;
    let per_player_pps_in = full.received as f64 / window / players as f64;
    println!(
        "host room: {held} players held ({udp} UDP, {webrtc} WebRTC, {webtransport} WebTransport, {websocket} WebSocket) by one host process, {window:.1} s windows"
    );
    println!(
        "  host CPU: {:.3} of one core with all ({:.3} empty); threads {}; sockets {}",
        full.cpu,
        empty.2,
        host.threads(),
        host.sockets()
    );
    println!(
        "  host RSS: {} KiB empty, {} KiB with all; live heap {:.0} KiB empty",
        empty.0,
        full.rss_kib,
        empty.1 as f64 / 1024.0
    );
    for c in &costs {
        println!(
            "  per {} player ({}): CPU {:.5} of a core ({:.1} per 1000 players), RSS {:.1} KiB, live heap {:.1} KiB; join p50 {:.0} ms p99 {:.0} ms; the windows after them lost {} of {} packets",
            c.kind.name(),
            c.players,
            c.cpu,
            c.cpu * 1000.0,
            c.rss_kib,
            c.heap_kib,
            percentile(&c.joins, 0.5),
            percentile(&c.joins, 0.99),
            c.lost,
            c.sent
        );
    }
    let (cpu_rtc, cpu_wt, cpu_ws) = (
        per(Kind::WebRtc, |c| c.cpu),
        per(Kind::WebTransport, |c| c.cpu),
        per(Kind::WebSocket, |c| c.cpu),
    );
    if webrtc > 0 && webtransport > 0 {
        println!(
            "  CPU per WebTransport player / per WebRTC (str0m) player: {:.2}",
            cpu_wt / cpu_rtc
        );
    }
    if webrtc > 0 && websocket > 0 {
        println!(
            "  CPU per WebSocket player / per WebRTC (str0m) player: {:.2}",
            cpu_ws / cpu_rtc
        );
    }
    println!(
        "  packets per player per second at the host: {per_player_pps_out:.1} out, {per_player_pps_in:.1} in; inputs taken {}, states delivered to players {}",
        full.inputs, full.states
    );
    println!(
        "  join (Room::join -> link to the host connected), ms: all p50 {:.0} p99 {:.0}; the {}th (last) {last_join:.0}",
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        players
    );
    let lost = full.lost;
    println!(
        "  packets lost on the host's links in the last window: {lost} of {} sent",
        full.sent
    );
    let (udp_kib, webrtc_kib, wt_kib, ws_kib) = (
        per(Kind::Udp, |c| c.rss_kib),
        per(Kind::WebRtc, |c| c.rss_kib),
        per(Kind::WebTransport, |c| c.rss_kib),
        per(Kind::WebSocket, |c| c.rss_kib),
    );
    let goal = |ok: bool| if ok { "met" } else { "MISSED" };
    println!("goals (issues #37, #46):");
    println!(
        "  host CPU <= 1 core: {} ({:.2})",
        goal(full.cpu <= 1.0),
        full.cpu
    );
    if webrtc > 0 {
        println!(
            "  RSS <= 256 KiB per WebRTC player: {} ({webrtc_kib:.1})",
            goal(webrtc_kib <= 256.0)
        );
    }
    if udp > 0 {
        println!(
            "  RSS <= 16 KiB per UDP player: {} ({udp_kib:.1})",
            goal(udp_kib <= 16.0)
        );
    }
    if webrtc > 0 && webtransport > 0 {
        println!(
            "  CPU per WebTransport player <= per WebRTC player: {} ({cpu_wt:.5} vs {cpu_rtc:.5})",
            goal(cpu_wt <= cpu_rtc)
        );
    }
    println!(
        "  the {players}th join <= 500 ms: {} ({last_join:.0} ms)",
        goal(last_join <= 500.0)
    );
    println!("  no packet loss on loopback: {} ({lost})", goal(lost == 0));
    let kinds: serde_json::Map<String, serde_json::Value> = costs
        .iter()
        .map(|c| {
            (
                c.kind.name().to_lowercase(),
                json!({"players": c.players, "cpu_cores_per_player": c.cpu, "rss_kib": c.rss_kib,
                    "heap_kib": c.heap_kib, "join_p50_ms": percentile(&c.joins, 0.5),
                    "join_p99_ms": percentile(&c.joins, 0.99), "lost": c.lost, "sent": c.sent}),
            )
        })
        .collect();
    println!(
        "{}",
        json!({
            "bench": "host", "players": players, "udp": udp, "webrtc": webrtc,
            "webtransport": webtransport, "websocket": websocket, "held": held,
            "cpu_cores": full.cpu, "cpu_cores_empty": empty.2, "rss_empty_kib": empty.0,
            "rss_per_udp_kib": udp_kib, "rss_per_webrtc_kib": webrtc_kib,
            "rss_per_webtransport_kib": wt_kib, "rss_per_websocket_kib": ws_kib,
            "heap_per_udp_kib": per(Kind::Udp, |c| c.heap_kib),
            "heap_per_webrtc_kib": per(Kind::WebRtc, |c| c.heap_kib),
            "heap_per_webtransport_kib": per(Kind::WebTransport, |c| c.heap_kib),
            "heap_per_websocket_kib": per(Kind::WebSocket, |c| c.heap_kib),
            "cpu_per_webtransport_over_webrtc": cpu_wt / cpu_rtc,
            "cpu_per_websocket_over_webrtc": cpu_ws / cpu_rtc,
            "kinds": kinds, "threads": host.threads(), "sockets": host.sockets(),
            "join_p50_ms": percentile(&all, 0.5), "join_p99_ms": percentile(&all, 0.99),
            "join_last_ms": last_join, "lost": lost, "sent": full.sent, "received": full.received,
            "pps_out_per_player": per_player_pps_out, "pps_in_per_player": per_player_pps_in,
        })
    );
    drop(host);
}
