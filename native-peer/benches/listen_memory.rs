//! Memory of a real `ackwire-peer listen` process: its resident set (VmRSS) while it holds N
//! connections (default 10,000), idle, with chat-rate reliable traffic, and after the chat
//! stops. Twice: as `listen` runs by default (every connection encrypted: a Noise key
//! exchange in the handshake, AES-256-GCM keys per connection), then `--insecure` with
//! plaintext clients beside it.
//!
//! Run: `cargo bench -p ackwire-peer --bench listen_memory` (`-- --connections N`,
//! `-- --only encrypted|plaintext`).
//!
//! The listener is the release binary, a process of its own, so its RSS holds only what a
//! deployed `listen` holds. The clients run in this process on one thread: lean loops around
//! a core `Connection` each on its own socket (the listener keys connections by address),
//! sending a 32-byte state update in every packet at 10 packets/s (the rate keeps 10,000
//! clients within one core; the listener's memory does not depend on it), and with chat on,
//! a 32-byte reliable-ordered message every 3rd packet, which the listener echoes reliably.
//! The phases are 3 s with state updates only, 5 s of chat, 3 s after the chat stopped (the
//! core frees reliable storage after 2 s of quiet), and 5 s of chat again. The allocator
//! (mimalloc) keeps the pages the freed storage lay in, interleaved with live connections'
//! blocks, so the RSS does not fall after the chat; the second chat shows that it is reused
//! rather than grown. Every connection must be connected, and the chat echoed, for the
//! figures to count.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use ackwire_core::{
    Config, Connection, ConnectionConfig, ConnectionEvent, ConnectionState, NoiseInitiator,
};
use tokio::net::UdpSocket;

const RATE_PPS: f64 = 10.0;
const STATE_CHANNEL: u8 = 0;
const CHAT_CHANNEL: u8 = 1;
/// The budget for 10,000 connections.
const GOAL_MB: f64 = 200.0;

/// What every flow has done, read by the main thread between phases.
#[derive(Debug, Default)]
struct Flows {
    connected: AtomicU64,
    chat_sent: AtomicU64,
    chat_echoed: AtomicU64,
    chat: AtomicBool,
    stop: AtomicBool,
    /// Handshakes started again after one gave up (a loaded host can keep a connector
    /// waiting past its 5 s handshake timeout; a real client tries again).
    retries: AtomicU64,
}

fn client_config() -> ConnectionConfig {
    ConnectionConfig::default().with_packet(
        Config::default()
            .with_good_rate_pps(RATE_PPS)
            .with_bad_rate_pps(RATE_PPS),
    )
}

async fn flow(server: SocketAddr, secure: bool, flows: Arc<Flows>) {
    let bind = || async {
        let socket = UdpSocket::bind("127.0.0.1:0").await.expect("bind");
        socket.writable().await.expect("writable");
        socket
    };
    let mut socket = bind().await;
    let start = tokio::time::Instant::now();
    let connect = |now: Duration| {
        let mut connection = Connection::connect(client_config(), now).expect("config");
        if secure {
            // As `ackwire-peer connect` without a pin: the listener's key is taken on first use.
            connection
                .secure(NoiseInitiator::nk(None))
                .expect("secure before any datagram");
        }
        connection
    };
    let mut connection = connect(Duration::ZERO);
    let mut connected = false;
    let (mut buf, mut out) = ([0u8; 2048], [0u8; 1200]);
    let mut packets = 0u64;
    while !flows.stop.load(Ordering::Relaxed) {
        let now = start.elapsed();
        if !connected && connection.state() == ConnectionState::Closed {
            // As a player's client restarting: a new socket, so the listener's half of the
            // attempt that gave up (still waiting out its own timeout) is not in the way.
            flows.retries.fetch_add(1, Ordering::Relaxed);
            socket = bind().await;
            connection = connect(now);
        }
        if connection.state() == ConnectionState::Connected
            && connection.buffered().unreliable_queued == 0
        {
            let _ = connection.send(STATE_CHANNEL, &[7u8; 32]);
        }
        while let Ok(Some(len)) = connection.poll_transmit(now, &mut out) {
            packets += 1;
            let _ = socket.try_send_to(&out[..len], server);
            if packets.is_multiple_of(3) && flows.chat.load(Ordering::Relaxed) {
                // Rides the next packet.
                if connection.send(CHAT_CHANNEL, &[3u8; 32]).is_ok() {
                    flows.chat_sent.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        while let Some(event) = connection.poll_event() {
            match event {
                ConnectionEvent::Connected { .. } => {
                    connected = true;
                    flows.connected.fetch_add(1, Ordering::Relaxed);
                }
                ConnectionEvent::Message {
                    channel: CHAT_CHANNEL,
                    ..
                } => {
                    flows.chat_echoed.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }
        }
        // At most 100 ms, so a stop is seen soon.
        let wake = connection
            .poll_timeout()
            .unwrap_or(now + Duration::from_millis(100))
            .min(now + Duration::from_millis(100));
        tokio::select! {
            ready = socket.readable() => {
                ready.expect("readable");
                while let Ok((len, _)) = socket.try_recv_from(&mut buf) {
                    let _ = connection.receive(start.elapsed(), &buf[..len]);
                }
            }
            () = tokio::time::sleep_until(start + wake) => {}
        }
    }
}

/// The listener's resident set, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb * 1024
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// What one run measured.
struct Run {
    baseline: u64,
    phases: [(&'static str, u64); 4],
    sent: u64,
    echoed: u64,
    retries: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let connections: usize = arg("--connections")
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let only = arg("--only");
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).expect("getrlimit");
    rlimit::setrlimit(
        rlimit::Resource::NOFILE,
        (connections as u64 + 256).min(hard),
        hard,
    )
    .expect("setrlimit");
    let mut runs = Vec::new();
    for (name, secure) in [("encrypted", true), ("plaintext", false)] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let run = run(connections, secure);
        let per =
            |rss: u64| (rss.saturating_sub(run.baseline)) as f64 / connections as f64 / 1024.0;
        println!(
            "ackwire-peer listen{}, {connections} {name} connections (release binary, its own \
             process): RSS {:.1} MB before any connection",
            if secure { "" } else { " --insecure" },
            mb(run.baseline)
        );
        for (phase, value) in run.phases {
            println!(
                "  {phase:<24} RSS {:>6.1} MB, {:>5.1} KiB per connection beyond the baseline",
                mb(value),
                per(value)
            );
        }
        println!(
            "  chat: {} reliable messages sent, {} echoed back ({:.1}%, counted before the last \
             ones came back); goal: <= {GOAL_MB} MB at 10,000 connections",
            run.sent,
            run.echoed,
            100.0 * run.echoed as f64 / run.sent.max(1) as f64
        );
        println!(
            "  handshakes started again after timing out on this loaded host: {}",
            run.retries
        );
        assert!(run.sent > 0 && run.echoed > 0, "the chat flowed");
        runs.push(serde_json::json!({
            "security": name,
            "rss_baseline_bytes": run.baseline,
            "rss_idle_bytes": run.phases[0].1,
            "rss_chat_bytes": run.phases[1].1,
            "rss_after_chat_bytes": run.phases[2].1,
            "rss_chat_again_bytes": run.phases[3].1,
            "chat_sent": run.sent,
            "chat_echoed": run.echoed,
            "handshake_retries": run.retries,
        }));
    }
    let json = serde_json::json!({
        "bench": "native-peer/listen_memory",
        "connections": connections,
        "runs": runs,
    });
    println!("{json}");
}

/// Starts a listener (encrypting unless `secure` is off, then `--insecure`), connects
/// `connections` clients of the same kind, and reads its RSS through the phases.
fn run(connections: usize, secure: bool) -> Run {
    // A free port for the listener (bound and released: nothing else binds on loopback here).
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("free port")
        .port();
    let server: SocketAddr = ([127, 0, 0, 1], port).into();
    let mut listener = Command::new(env!("CARGO_BIN_EXE_ackwire-peer"))
        .args(["listen", "--bind", &server.to_string()])
        .args(["--max-connections", &(connections + 16).to_string()])
        .args(if secure { &[][..] } else { &["--insecure"][..] })
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ackwire-peer listen");
    let pid = listener.id();
    // Running once it says so (its socket is bound by then).
    let mut log = BufReader::new(listener.stderr.take().expect("stderr"));
    let mut line = String::new();
    while !line.contains("peer running") {
        line.clear();
        assert!(
            log.read_line(&mut line).expect("listener log") > 0,
            "the listener exited"
        );
    }
    // Keep draining its log so it never blocks on a full pipe.
    thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
    let baseline = rss(pid);

    let flows = Arc::new(Flows::default());
    let clients = {
        let flows = flows.clone();
        thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let mut tasks = tokio::task::JoinSet::new();
                // Handshakes spread over 2 s, as players arrive.
                let spread = Duration::from_secs(2);
                let start = tokio::time::Instant::now();
                for i in 0..connections {
                    tokio::time::sleep_until(start + spread * i as u32 / connections as u32).await;
                    tasks.spawn(flow(server, secure, flows.clone()));
                }
                while tasks.join_next().await.is_some() {}
            })
        })
    };
    // Phases are timed from the moment every connection is up (polled: the flows count
    // their own Connected events).
    // Generous: a loaded host (builds beside the bench) slows the handshakes down, and a
    // timed-out one waits out its 5 s before it starts again.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while flows.connected.load(Ordering::Relaxed) < connections as u64 {
        assert!(
            std::time::Instant::now() < deadline,
            "only {} of {connections} connected",
            flows.connected.load(Ordering::Relaxed)
        );
        thread::sleep(Duration::from_millis(50));
    }
    thread::sleep(Duration::from_secs(3));
    let idle = rss(pid);
    flows.chat.store(true, Ordering::Relaxed);
    thread::sleep(Duration::from_secs(5));
    let chatting = rss(pid);
    flows.chat.store(false, Ordering::Relaxed);
    thread::sleep(Duration::from_secs(3));
    let after = rss(pid);
    // Chat again: the heap the first chat freed is reused, not grown again.
    flows.chat.store(true, Ordering::Relaxed);
    thread::sleep(Duration::from_secs(5));
    let again = rss(pid);
    flows.chat.store(false, Ordering::Relaxed);
    let (sent, echoed) = (
        flows.chat_sent.load(Ordering::Relaxed),
        flows.chat_echoed.load(Ordering::Relaxed),
    );
    flows.stop.store(true, Ordering::Relaxed);
    clients.join().expect("clients");
    let _ = listener.kill();
    let _ = listener.wait();

    Run {
        baseline,
        phases: [
            ("state updates only", idle),
            ("chat (reliable, echoed)", chatting),
            ("3 s after the chat", after),
            ("chat again", again),
        ],
        sent,
        echoed,
        retries: flows.retries.load(Ordering::Relaxed),
    }
}
