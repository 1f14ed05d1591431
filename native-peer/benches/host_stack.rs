//! What one WebRTC connection costs a host, on the `webrtc` crate against str0m, in one run.
//!
//! Run: `cargo bench -p ackwire-peer --bench host_stack` (`-- --connections 64,256
//! --seconds 10`, the defaults). As root: the bench moves itself into a network namespace of
//! its own where only `lo` is up, so every candidate and every datagram is 127.0.0.1.
//!
//! Three processes, all this binary (the role comes from `HOST_STACK_ROLE`):
//! - the **host** under test, one per stack:
//!   - `webrtc`: the `webrtc` crate 0.21 set up as `ackwire/src/native/webrtc.rs` sets up a
//!     browser link (its settings, a pre-negotiated channel id 0, unordered, 0 retransmits),
//!     one peer connection per client on the default multi-threaded tokio runtime;
//!   - `str0m`: one `Rtc` per client, ICE-lite, all of them on ONE UDP socket (made as
//!     `ackwire`'s UDP listener makes its own, 4 MiB buffers) and one thread, incoming
//!     datagrams demultiplexed by source address (`Rtc::accepts` for a new one);
//! - the **load generator**, the same for both hosts: str0m clients (full ICE agents, as
//!   browsers are), each on a UDP socket of its own, on one thread;
//! - this **orchestrator**, which relays the offers, answers and candidates between the two
//!   (stdin/stdout lines) and measures the host from `/proc`.
//!
//! Each client offers one data channel and, once it is open, sends 30 messages/s of 100
//! bytes; the host sends every open channel 30 messages/s (one tick for all, as a game
//! server's simulation tick). Clients join with at most [`IN_FLIGHT`] handshakes at a time
//! (each waits for a channel to open before the next starts) while the earlier ones stream.
//! When all N are open, a window of `--seconds` is measured: the host's CPU (utime + stime),
//! then its RSS, threads and sockets, and the messages of the window both ways (each carries
//! the window's number, so sent and received are counted for the same messages). The host
//! grows from 0 to each N in turn; RSS per connection is (RSS at N − RSS at 0) / N. Each
//! host builds (and drops) one connection before it reports ready, so one-time
//! initialisation (the crypto library, the first certificate) is in its baseline. The
//! allocator is mimalloc, as in the `ackwire-peer` binary a host runs. Docs:
//! `docs/host-stack.md`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Bytes per message, each way.
const MESSAGE: usize = 100;
/// Messages per second per client, each way.
const RATE: u32 = 30;
/// The interval between two messages of one sender.
const TICK: Duration = Duration::from_nanos(1_000_000_000 / RATE as u64);
/// Handshakes the load generator runs at once.
const IN_FLIGHT: usize = 8;
/// Window numbers a message can carry (two per N: the window and what follows it).
const PHASES: usize = 16;
/// How long a report waits for the last messages of a window still in flight.
const STRAGGLERS: Duration = Duration::from_secs(2);
/// How long all N may take to open before the bench gives up.
const CONNECT_DEADLINE: Duration = Duration::from_secs(120);
/// The scale goal of the host (issue 37): RSS per WebRTC player, and a core at 256 players.
const GOAL_RSS_KIB: f64 = 256.0;
const GOAL_PLAYERS: usize = 256;
/// The data channel, as the browser and `ackwire`'s native driver open it.
const LABEL: &str = "ackwire";

const ROLE: &str = "HOST_STACK_ROLE";

/// The allocator of the `ackwire-peer` binary, which a host would run (RSS depends on it).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("host-webrtc") => webrtc_host::run(),
        Ok("host-str0m") => str0m_host::run(),
        Ok("loadgen") => loadgen::run(),
        Ok(other) => panic!("unknown {ROLE} {other}"),
        Err(_) => orchestrate(),
    }
}

// ---------------------------------------------------------------------------------------
// Counting messages by window, in every process that sends or receives them.

/// Messages sent and received, by the window number they carry.
struct Counters {
    phase: AtomicU8,
    sent: [AtomicU64; PHASES],
    received: [AtomicU64; PHASES],
    /// `caught_up[p]`: peers from which a message of window `p` or later has arrived.
    caught_up: [AtomicU64; PHASES],
    /// Woken when `caught_up` grows.
    progress: tokio::sync::Notify,
}

impl Counters {
    fn new() -> Arc<Counters> {
        Arc::new(Counters {
            phase: AtomicU8::new(0),
            sent: std::array::from_fn(|_| AtomicU64::new(0)),
            received: std::array::from_fn(|_| AtomicU64::new(0)),
            caught_up: std::array::from_fn(|_| AtomicU64::new(0)),
            progress: tokio::sync::Notify::new(),
        })
    }

    /// The next message to send, stamped with the current window.
    fn message(&self) -> (u8, [u8; MESSAGE]) {
        let phase = self.phase.load(Ordering::Relaxed);
        let mut message = [0x5A; MESSAGE];
        message[0] = phase;
        (phase, message)
    }

    fn sent(&self, phase: u8) {
        self.sent[usize::from(phase)].fetch_add(1, Ordering::Relaxed);
    }

    /// A message from a peer whose latest window so far is `seen`.
    fn received(&self, message: &[u8], seen: &mut u8) {
        let Some(&phase) = message.first().filter(|p| usize::from(**p) < PHASES) else {
            return;
        };
        self.received[usize::from(phase)].fetch_add(1, Ordering::Relaxed);
        if phase > *seen {
            for p in *seen + 1..=phase {
                self.caught_up[usize::from(p)].fetch_add(1, Ordering::Relaxed);
            }
            *seen = phase;
            self.progress.notify_one();
        }
    }

    /// Whether all `peers` have sent something after window `phase`.
    fn window_over(&self, phase: u8, peers: usize) -> bool {
        self.caught_up[usize::from(phase) + 1].load(Ordering::Relaxed) >= peers as u64
    }

    /// `report P SENT RECEIVED`: window `phase`'s messages.
    fn report(&self, phase: u8) -> String {
        let p = usize::from(phase);
        format!(
            "report {phase} {} {}",
            self.sent[p].load(Ordering::Relaxed),
            self.received[p].load(Ordering::Relaxed)
        )
    }

    /// A control line every process understands: `phase P` (stamp P from now on).
    fn set_phase(&self, line: &str) -> Option<String> {
        let phase: u8 = line.strip_prefix("phase ")?.parse().ok()?;
        assert!(
            usize::from(phase) + 1 < PHASES,
            "window {phase} out of range"
        );
        self.phase.store(phase, Ordering::Relaxed);
        Some(format!("phase {phase}"))
    }
}

/// Waits (async) until every one of `peers` has moved past window `phase`, or
/// [`STRAGGLERS`] has passed (a peer whose last messages were lost).
async fn window_over(counters: &Counters, phase: u8, peers: impl Fn() -> usize) {
    let deadline = tokio::time::Instant::now() + STRAGGLERS;
    while !counters.window_over(phase, peers()) {
        if tokio::time::timeout_at(deadline, counters.progress.notified())
            .await
            .is_err()
        {
            return;
        }
    }
}

/// `KIND ID JSON`: a signalling line (SDP or a candidate as a JSON string).
fn signal_line(kind: &str, id: usize, text: &str) -> String {
    format!("{kind} {id} {}", serde_json::Value::String(text.to_owned()))
}

/// The parts of a signalling line.
fn parse_signal(line: &str) -> Option<(&str, usize, String)> {
    let mut parts = line.splitn(3, ' ');
    let kind = parts.next()?;
    let id = parts.next()?.parse().ok()?;
    let text = serde_json::from_str(parts.next()?).ok()?;
    Some((kind, id, text))
}

/// One line to stdout, whole (the orchestrator reads lines).
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The orchestrator's lines, for an async role (read on a thread of their own).
fn stdin_lines() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Runs an async role, and exits when it returns without waiting for the runtime's tasks and
/// blocking threads (the stdin reader) to wind down.
fn run_async(runtime: &mut tokio::runtime::Builder, role: impl Future<Output = ()>) -> ! {
    raise_fd_limit();
    runtime
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(role);
    std::process::exit(0)
}

fn raise_fd_limit() {
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).expect("getrlimit");
    rlimit::setrlimit(rlimit::Resource::NOFILE, hard.min(65_536), hard).expect("setrlimit");
}

// ---------------------------------------------------------------------------------------
// The host on the `webrtc` crate.

mod webrtc_host {
    use super::*;

    use bytes::BytesMut;
    use rtc::ice::mdns::MulticastDnsMode;
    use rtc::peer_connection::transport::RTCDtlsRole;
    use webrtc::data_channel::{DataChannel, DataChannelEvent, RTCDataChannelInit};
    use webrtc::peer_connection::{
        PeerConnection, PeerConnectionBuilder, PeerConnectionEventHandler, RTCConfigurationBuilder,
        RTCPeerConnectionIceEvent, RTCSessionDescription, SettingEngineBuilder,
    };

    type Channels = Arc<Mutex<Vec<Arc<dyn DataChannel>>>>;

    pub(super) fn run() {
        // The runtime a host built on the `webrtc` crate runs: tokio's default, a worker per core.
        run_async(&mut tokio::runtime::Builder::new_multi_thread(), serve());
    }

    async fn serve() {
        let counters = Counters::new();
        let channels: Channels = Arc::default();
        tokio::spawn(tick(counters.clone(), channels.clone()));
        let mut lines = stdin_lines();
        // As the str0m host does: one-time initialisation before the baseline.
        let warm = peer_connection(usize::MAX)
            .await
            .expect("a peer connection");
        warm.close().await.expect("closed");
        drop(warm);
        say("ready");
        while let Some(line) = lines.recv().await {
            if let Some(ack) = counters.set_phase(&line) {
                say(&ack);
            } else if let Some(phase) = line.strip_prefix("report ") {
                let phase: u8 = phase.parse().expect("window");
                window_over(&counters, phase, || channels.lock().unwrap().len()).await;
                let tasks = tokio::runtime::Handle::current()
                    .metrics()
                    .num_alive_tasks();
                say(&format!("{} {tasks}", counters.report(phase)));
            } else if let Some(("offer", id, sdp)) = parse_signal(&line) {
                let (counters, channels) = (counters.clone(), channels.clone());
                tokio::spawn(async move {
                    if let Err(e) = connection(id, sdp, counters, channels).await {
                        say(&format!("failed {id} {e}"));
                    }
                });
            } else if line == "quit" {
                break;
            }
        }
    }

    /// The host's tick: a message to every open channel.
    async fn tick(counters: Arc<Counters>, channels: Channels) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            let open = channels.lock().unwrap().clone();
            for channel in open {
                let (phase, message) = counters.message();
                if channel.try_send(BytesMut::from(&message[..])).await.is_ok() {
                    counters.sent(phase);
                }
            }
        }
    }

    /// Trickles the host's candidates to the client.
    struct Candidates {
        id: usize,
    }

    #[async_trait::async_trait]
    impl PeerConnectionEventHandler for Candidates {
        async fn on_ice_candidate(&self, event: RTCPeerConnectionIceEvent) {
            if let Ok(init) = event.candidate.to_json()
                && !init.candidate.is_empty()
            {
                say(&signal_line("candidate", self.id, &init.candidate));
            }
        }
    }

    /// The settings of `ackwire/src/native/webrtc.rs` for an answering link on loopback.
    fn settings() -> webrtc::peer_connection::SettingEngine {
        SettingEngineBuilder::new()
            .with_multicast_dns_mode(MulticastDnsMode::Disabled)
            .with_answering_dtls_role(RTCDtlsRole::Server)
            .with_prflx_acceptance_min_wait(Some(Duration::ZERO))
            .with_include_loopback_candidate(true)
            .build()
    }

    /// A peer connection for client `id`, gathering on 127.0.0.1 only.
    async fn peer_connection(id: usize) -> Result<impl PeerConnection, webrtc::error::Error> {
        PeerConnectionBuilder::new()
            .with_configuration(RTCConfigurationBuilder::new().build())
            .with_setting_engine(settings())
            .with_handler(Arc::new(Candidates { id }))
            .with_udp_addrs(vec![SocketAddr::from(([127, 0, 0, 1], 0))])
            .build()
            .await
    }

    /// One client's peer connection, from its offer until the channel closes.
    async fn connection(
        id: usize,
        offer: String,
        counters: Arc<Counters>,
        channels: Channels,
    ) -> Result<(), webrtc::error::Error> {
        let pc = peer_connection(id).await?;
        let channel = pc
            .create_data_channel(
                LABEL,
                Some(RTCDataChannelInit {
                    ordered: false,
                    max_retransmits: Some(0),
                    negotiated: Some(0),
                    ..RTCDataChannelInit::default()
                }),
            )
            .await?;
        pc.set_remote_description(RTCSessionDescription::offer(offer)?)
            .await?;
        let answer = pc.create_answer(None).await?;
        pc.set_local_description(answer.clone()).await?;
        say(&signal_line("answer", id, &answer.sdp));
        let mut seen = 0;
        while let Some(event) = channel.poll().await {
            match event {
                DataChannelEvent::OnOpen => channels.lock().unwrap().push(channel.clone()),
                DataChannelEvent::OnMessage(message) => counters.received(&message.data, &mut seen),
                DataChannelEvent::OnClose => break,
                _ => {}
            }
        }
        pc.close().await
    }
}

// ---------------------------------------------------------------------------------------
// The host on str0m: every client on one socket, one thread.

mod str0m_host {
    use super::*;

    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use str0m::change::SdpOffer;
    use str0m::channel::{ChannelConfig, ChannelId, Reliability};
    use str0m::net::{Protocol, Receive};
    use str0m::{Candidate, Event, Input, Output, Rtc};

    struct Peer {
        rtc: Rtc,
        channel: Option<ChannelId>,
        /// When `rtc` wants `Input::Timeout` next.
        deadline: Instant,
        seen: u8,
    }

    pub(super) fn run() {
        raise_fd_limit();
        str0m::crypto::from_feature_flags().install_process_default();
        // The shared socket as `ackwire`'s UDP listener makes its own: 4 MiB buffers (every
        // client's burst lands in one queue), non-blocking.
        let socket = ackwire::net::udp::bind(([127, 0, 0, 1], 0).into()).expect("bind");
        let local = socket.local_addr().expect("address");
        let counters = Counters::new();
        let mut peers: Vec<Peer> = Vec::new();
        let mut by_source: HashMap<SocketAddr, usize> = HashMap::new();
        let mut input = Vec::new();
        let mut buf = vec![0u8; 2048];
        let mut next_tick = Instant::now() + TICK;
        // A report waits for the window's last messages: (window, give up at).
        let mut report: Option<(u8, Instant)> = None;
        let stdin = std::io::stdin();
        // One-time initialisation (the crypto library, the first certificate: ~75 ms) before
        // the baseline, so it counts in neither RSS per connection nor a connect time.
        drop(Rtc::builder().set_ice_lite(true).build(Instant::now()));
        say("ready");
        loop {
            let now = Instant::now();
            let wake = peers
                .iter()
                .map(|p| p.deadline)
                .chain([next_tick])
                .chain(report.map(|(_, at)| at))
                .min()
                .unwrap_or(next_tick);
            // Whole milliseconds, rounded up: never wake before a deadline.
            let millis = wake
                .saturating_duration_since(now)
                .as_micros()
                .div_ceil(1000);
            let (socket_ready, stdin_ready) = {
                let mut fds = [
                    PollFd::new(socket.as_fd(), PollFlags::POLLIN),
                    PollFd::new(stdin.as_fd(), PollFlags::POLLIN),
                ];
                let timeout = PollTimeout::try_from(millis).unwrap_or(PollTimeout::MAX);
                match poll(&mut fds, timeout) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => panic!("poll: {e}"),
                }
                let ready = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
                (ready(&fds[0]), ready(&fds[1]))
            };
            if stdin_ready {
                let mut chunk = [0u8; 65_536];
                let n = stdin.lock().read(&mut chunk).expect("stdin");
                if n == 0 {
                    return;
                }
                input.extend_from_slice(&chunk[..n]);
                while let Some(end) = input.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = input.drain(..=end).collect();
                    let line = String::from_utf8_lossy(&line[..end]).into_owned();
                    if let Some(ack) = counters.set_phase(&line) {
                        say(&ack);
                    } else if let Some(phase) = line.strip_prefix("report ") {
                        let phase = phase.parse().expect("window");
                        report = Some((phase, Instant::now() + STRAGGLERS));
                    } else if let Some(("offer", id, sdp)) = parse_signal(&line) {
                        let peer = accept(id, &sdp, local);
                        peers.push(peer);
                        let last = peers.len() - 1;
                        drain(&mut peers[last], &socket, &counters);
                    } else if line == "quit" {
                        return;
                    }
                }
            }
            if socket_ready {
                loop {
                    let (n, source) = match socket.recv_from(&mut buf) {
                        Ok(received) => received,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) => panic!("recv: {e}"),
                    };
                    let Ok(contents) = buf[..n].try_into() else {
                        continue;
                    };
                    let input = Input::Receive(
                        Instant::now(),
                        Receive {
                            proto: Protocol::Udp,
                            source,
                            destination: local,
                            contents,
                        },
                    );
                    // A known address, or the peer whose ICE credentials the STUN check carries.
                    let index = match by_source.get(&source) {
                        Some(&i) => Some(i),
                        None => peers.iter().position(|p| p.rtc.accepts(&input)),
                    };
                    let Some(i) = index else { continue };
                    by_source.insert(source, i);
                    let peer = &mut peers[i];
                    if peer.rtc.handle_input(input).is_ok() {
                        drain(peer, &socket, &counters);
                    }
                }
            }
            let now = Instant::now();
            if now >= next_tick {
                for peer in peers.iter_mut() {
                    let Some(id) = peer.channel else { continue };
                    let (phase, message) = counters.message();
                    let written = peer
                        .rtc
                        .channel(id)
                        .is_some_and(|mut c| c.write(true, &message).unwrap_or(false));
                    if written {
                        counters.sent(phase);
                    }
                    drain(peer, &socket, &counters);
                }
                next_tick += TICK;
                if next_tick < now {
                    next_tick = now + TICK;
                }
            }
            for peer in peers.iter_mut().filter(|p| p.deadline <= now) {
                if peer.rtc.handle_input(Input::Timeout(now)).is_ok() {
                    drain(peer, &socket, &counters);
                }
            }
            if let Some((phase, give_up)) = report {
                let open = peers.iter().filter(|p| p.channel.is_some()).count();
                if counters.window_over(phase, open) || Instant::now() >= give_up {
                    say(&counters.report(phase));
                    report = None;
                }
            }
        }
    }

    /// A client's offer: an ICE-lite `Rtc` whose one candidate is the shared socket, and the
    /// pre-negotiated channel. Prints the answer.
    fn accept(id: usize, sdp: &str, local: SocketAddr) -> Peer {
        let mut rtc = Rtc::builder().set_ice_lite(true).build(Instant::now());
        rtc.add_local_candidate(Candidate::host(local, "udp").expect("candidate"));
        let offer = SdpOffer::from_sdp_string(sdp).expect("offer");
        let answer = rtc.sdp_api().accept_offer(offer).expect("answer");
        rtc.direct_api().create_data_channel(channel_config());
        say(&signal_line("answer", id, &answer.to_sdp_string()));
        Peer {
            rtc,
            channel: None,
            deadline: Instant::now(),
            seen: 0,
        }
    }

    /// The channel of `ackwire`'s WebRTC links: id 0 negotiated by both sides, unordered,
    /// no retransmission.
    pub(super) fn channel_config() -> ChannelConfig {
        ChannelConfig {
            label: LABEL.into(),
            ordered: false,
            reliability: Reliability::MaxRetransmits { retransmits: 0 },
            negotiated: Some(0),
            protocol: String::new(),
        }
    }

    /// Polls `peer` until it only has a timeout left: sends what it transmits, counts what
    /// its channel delivers.
    fn drain(peer: &mut Peer, socket: &UdpSocket, counters: &Counters) {
        loop {
            match peer.rtc.poll_output() {
                Ok(Output::Timeout(at)) => {
                    peer.deadline = at;
                    return;
                }
                Ok(Output::Transmit(t)) => {
                    let _ = socket.send_to(&t.contents, t.destination);
                }
                Ok(Output::Event(Event::ChannelOpen(id, _))) => peer.channel = Some(id),
                Ok(Output::Event(Event::ChannelData(data))) => {
                    counters.received(&data.data, &mut peer.seen);
                }
                Ok(Output::Event(_)) => {}
                Err(e) => {
                    say(&format!("failed ? str0m host: {e}"));
                    peer.deadline = Instant::now() + Duration::from_secs(3600);
                    return;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The load generator: str0m clients, each on a socket of its own, on one thread.

mod loadgen {
    use super::*;

    use str0m::change::SdpAnswer;
    use str0m::net::{Protocol, Receive};
    use str0m::{Candidate, Event, IceConnectionState, Input, Output, Rtc};
    use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

    /// What the host said to one client.
    enum Signal {
        Answer(String),
        Candidate(String),
    }

    enum ClientEvent {
        Open(usize, Duration),
        Failed(usize, String),
    }

    type Routes = Arc<Mutex<HashMap<usize, UnboundedSender<Signal>>>>;

    pub(super) fn run() {
        str0m::crypto::from_feature_flags().install_process_default();
        run_async(
            &mut tokio::runtime::Builder::new_current_thread(),
            generate(),
        );
    }

    async fn generate() {
        let counters = Counters::new();
        let routes: Routes = Arc::default();
        let (events, mut event_rx) = unbounded_channel();
        let slots = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
        let mut lines = stdin_lines();
        let (mut clients, mut open, mut target) = (0usize, 0usize, 0usize);
        drop(Rtc::builder().build(Instant::now()));
        say("ready");
        loop {
            tokio::select! {
                line = lines.recv() => {
                    let Some(line) = line else { return };
                    if let Some(ack) = counters.set_phase(&line) {
                        say(&ack);
                    } else if let Some(phase) = line.strip_prefix("report ") {
                        let phase: u8 = phase.parse().expect("window");
                        window_over(&counters, phase, || open).await;
                        say(&counters.report(phase));
                    } else if let Some(more) = line.strip_prefix("connect ") {
                        let more: usize = more.parse().expect("count");
                        target += more;
                        let first = clients;
                        clients += more;
                        tokio::spawn(spawn_clients(
                            first..clients,
                            slots.clone(),
                            routes.clone(),
                            events.clone(),
                            counters.clone(),
                        ));
                    } else if let Some((kind, id, text)) = parse_signal(&line) {
                        let signal = match kind {
                            "answer" => Signal::Answer(text),
                            "candidate" => Signal::Candidate(text),
                            _ => continue,
                        };
                        if let Some(route) = routes.lock().unwrap().get(&id) {
                            let _ = route.send(signal);
                        }
                    } else if line == "quit" {
                        return;
                    }
                }
                Some(event) = event_rx.recv() => match event {
                    ClientEvent::Open(id, took) => {
                        open += 1;
                        say(&format!("open {id} {}", took.as_micros()));
                        if open == target {
                            say(&format!("connected {open}"));
                        }
                    }
                    ClientEvent::Failed(id, why) => say(&format!("failed {id} {why}")),
                },
            }
        }
    }

    /// Starts clients `ids`, each when a handshake slot is free.
    async fn spawn_clients(
        ids: std::ops::Range<usize>,
        slots: Arc<tokio::sync::Semaphore>,
        routes: Routes,
        events: UnboundedSender<ClientEvent>,
        counters: Arc<Counters>,
    ) {
        for id in ids {
            let slot = slots.clone().acquire_owned().await.expect("slots");
            let (to_client, signals) = unbounded_channel();
            routes.lock().unwrap().insert(id, to_client);
            let (events, counters) = (events.clone(), counters.clone());
            tokio::spawn(async move {
                if let Err(e) = client(id, signals, &events, counters, slot).await {
                    let _ = events.send(ClientEvent::Failed(id, e));
                }
            });
        }
    }

    /// One client: offers the channel, and once it is open sends 30 messages/s.
    async fn client(
        id: usize,
        mut signals: UnboundedReceiver<Signal>,
        events: &UnboundedSender<ClientEvent>,
        counters: Arc<Counters>,
        slot: tokio::sync::OwnedSemaphorePermit,
    ) -> Result<(), String> {
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0")
            .await
            .map_err(|e| e.to_string())?;
        let local = socket.local_addr().map_err(|e| e.to_string())?;
        let mut rtc = Rtc::builder().build(Instant::now());
        rtc.add_local_candidate(Candidate::host(local, "udp").map_err(|e| e.to_string())?);
        let mut changes = rtc.sdp_api();
        let channel = changes.add_channel_with_config(super::str0m_host::channel_config());
        let (offer, pending) = changes.apply().ok_or("no offer")?;
        let started = Instant::now();
        say(&signal_line("offer", id, &offer.to_sdp_string()));
        let mut pending = Some(pending);
        // Candidates that arrive before the answer wait for it.
        let mut early = Vec::new();
        let mut slot = Some(slot);
        let mut open = false;
        let mut seen = 0u8;
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut buf = vec![0u8; 2048];
        loop {
            let deadline = loop {
                match rtc.poll_output().map_err(|e| e.to_string())? {
                    Output::Timeout(at) => break at,
                    Output::Transmit(t) => {
                        let _ = socket.send_to(&t.contents, t.destination).await;
                    }
                    Output::Event(Event::ChannelOpen(..)) => {
                        open = true;
                        drop(slot.take());
                        let _ = events.send(ClientEvent::Open(id, started.elapsed()));
                    }
                    Output::Event(Event::ChannelData(data)) => {
                        counters.received(&data.data, &mut seen);
                    }
                    Output::Event(Event::IceConnectionStateChange(
                        IceConnectionState::Disconnected,
                    )) => return Err("ICE disconnected".into()),
                    Output::Event(_) => {}
                }
            };
            tokio::select! {
                received = socket.recv_from(&mut buf) => {
                    let (n, source) = received.map_err(|e| e.to_string())?;
                    let Ok(contents) = buf[..n].try_into() else { continue };
                    let input = Input::Receive(Instant::now(), Receive {
                        proto: Protocol::Udp,
                        source,
                        destination: local,
                        contents,
                    });
                    rtc.handle_input(input).map_err(|e| e.to_string())?;
                }
                () = tokio::time::sleep_until(deadline.into()) => {
                    rtc.handle_input(Input::Timeout(Instant::now())).map_err(|e| e.to_string())?;
                }
                _ = tick.tick(), if open => {
                    let (phase, message) = counters.message();
                    let written = rtc
                        .channel(channel)
                        .is_some_and(|mut c| c.write(true, &message).unwrap_or(false));
                    if written {
                        counters.sent(phase);
                    }
                }
                signal = signals.recv() => match signal {
                    None => return Ok(()),
                    Some(Signal::Answer(sdp)) => {
                        let answer = SdpAnswer::from_sdp_string(&sdp).map_err(|e| e.to_string())?;
                        let pending = pending.take().ok_or("a second answer")?;
                        rtc.sdp_api().accept_answer(pending, answer).map_err(|e| e.to_string())?;
                        for candidate in early.drain(..) {
                            rtc.add_remote_candidate(candidate);
                        }
                    }
                    Some(Signal::Candidate(line)) => {
                        let line = line.strip_prefix("a=").unwrap_or(&line);
                        let candidate = Candidate::from_sdp_string(line).map_err(|e| e.to_string())?;
                        if pending.is_some() {
                            early.push(candidate);
                        } else {
                            rtc.add_remote_candidate(candidate);
                        }
                    }
                },
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The orchestrator: namespaces, processes, relaying, measuring.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stack {
    Webrtc,
    Str0m,
}

impl Stack {
    fn name(self) -> &'static str {
        match self {
            Stack::Webrtc => "webrtc",
            Stack::Str0m => "str0m",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Host,
    Loadgen,
}

/// The two child processes and the lines they print.
struct Processes {
    host: Child,
    host_in: ChildStdin,
    loadgen: Child,
    loadgen_in: ChildStdin,
    lines: mpsc::Receiver<(Who, String)>,
}

fn spawn_role(role: &str, who: Who, lines: &mpsc::Sender<(Who, String)>) -> (Child, ChildStdin) {
    let mut child = Command::new(std::env::current_exe().expect("this bench"))
        .env(ROLE, role)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start a role");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let lines = lines.clone();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if lines.send((who, line)).is_err() {
                return;
            }
        }
        let _ = lines.send((who, "failed (the process exited)".into()));
    });
    (child, stdin)
}

impl Processes {
    /// The host, and once it is up (so its baseline is its own) the load generator.
    fn start(stack: Stack) -> Processes {
        let (tx, lines) = mpsc::channel();
        let (host, host_in) = spawn_role(&format!("host-{}", stack.name()), Who::Host, &tx);
        let first = lines
            .recv_timeout(CONNECT_DEADLINE)
            .expect("the host starts");
        assert_eq!(first, (Who::Host, "ready".into()), "the host starts");
        let (loadgen, loadgen_in) = spawn_role("loadgen", Who::Loadgen, &tx);
        let mut processes = Processes {
            host,
            host_in,
            loadgen,
            loadgen_in,
            lines,
        };
        processes.wait_for(Who::Loadgen, "ready", &mut Vec::new());
        processes
    }

    fn tell(&mut self, who: Who, line: &str) {
        let stdin = match who {
            Who::Host => &mut self.host_in,
            Who::Loadgen => &mut self.loadgen_in,
        };
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .expect("a role's stdin");
    }

    /// Relays signalling between the two until `who` prints a line starting with `prefix`;
    /// returns it. Connect times (`open ID MICROS`) on the way go into `opened`.
    fn wait_for(&mut self, who: Who, prefix: &str, opened: &mut Vec<Duration>) -> String {
        let deadline = Instant::now() + CONNECT_DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (from, line) = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no `{prefix}` from {who:?} in time"));
            assert!(!line.starts_with("failed "), "{from:?}: {line}");
            match (from, line.split(' ').next()) {
                (Who::Loadgen, Some("offer")) => self.tell(Who::Host, &line),
                (Who::Host, Some("answer" | "candidate")) => self.tell(Who::Loadgen, &line),
                (Who::Loadgen, Some("open")) => {
                    let micros: u64 = line
                        .rsplit(' ')
                        .next()
                        .and_then(|m| m.parse().ok())
                        .expect("micros");
                    opened.push(Duration::from_micros(micros));
                }
                _ => {}
            }
            if from == who && line.starts_with(prefix) {
                return line;
            }
        }
    }

    /// Sends `line` to both and waits for both to echo it.
    fn both(&mut self, line: &str) {
        for who in [Who::Host, Who::Loadgen] {
            self.tell(who, line);
            self.wait_for(who, line, &mut Vec::new());
        }
    }

    /// Window `phase`'s `(sent, received, tasks)` from `who`.
    fn report(&mut self, who: Who, phase: u8) -> (u64, u64, Option<u64>) {
        self.tell(who, &format!("report {phase}"));
        let line = self.wait_for(who, &format!("report {phase} "), &mut Vec::new());
        let numbers: Vec<u64> = line
            .split(' ')
            .skip(2)
            .map(|n| n.parse().expect("a count"))
            .collect();
        (numbers[0], numbers[1], numbers.get(2).copied())
    }

    fn stop(mut self) {
        for who in [Who::Loadgen, Who::Host] {
            self.tell(who, "quit");
        }
        drop(self.host_in);
        drop(self.loadgen_in);
        for child in [&mut self.loadgen, &mut self.host] {
            let _ = child.wait();
        }
    }
}

/// One stack at one N.
#[derive(Debug, Clone)]
struct Row {
    stack: Stack,
    n: usize,
    rss_kib_per_conn: f64,
    cpu_core: f64,
    loadgen_cpu_core: f64,
    threads: u64,
    tasks: Option<u64>,
    /// Sockets, and how many of them are UDP.
    sockets: (usize, usize),
    /// Datagrams dropped for full receive buffers: in the window, since the host started.
    drops: (u64, u64),
    up: (u64, u64),
    down: (u64, u64),
    connect_p50: Duration,
    connect_p99: Duration,
}

fn status_field(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} of {pid}"))
}

fn rss_kib(pid: u32) -> u64 {
    status_field(pid, "VmRSS:")
}

/// utime + stime of `pid`, from `/proc/PID/stat` (USER_HZ = 100).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<u64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // `rest` starts at field 3 (state): utime is field 14, stime field 15.
    Duration::from_millis((fields[11] + fields[12]) * 10)
}

/// `pid`'s open sockets: all of them, and how many are UDP.
fn sockets(pid: u32) -> (usize, usize) {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fds")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_owned(),
            )
        })
        .collect();
    // The inode is the 10th column of the namespace's UDP table.
    let udp: Vec<String> = ["udp", "udp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(format!("/proc/{pid}/net/{t}")).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter_map(|l| l.split_whitespace().nth(9).map(str::to_owned))
                .collect::<Vec<_>>()
        })
        .collect();
    let udp_count = inodes.iter().filter(|i| udp.contains(i)).count();
    (inodes.len(), udp_count)
}

/// Datagrams the kernel dropped for full receive buffers, in this network namespace (the
/// host's and the load generator's sockets alike), from `/proc/self/net/snmp`.
fn udp_drops() -> u64 {
    let snmp = std::fs::read_to_string("/proc/self/net/snmp").expect("snmp");
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (
        udp.next().expect("Udp header"),
        udp.next().expect("Udp values"),
    );
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(name, _)| *name == "RcvbufErrors")
        .and_then(|(_, value)| value.parse().ok())
        .expect("RcvbufErrors")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// One stack: a host grown from 0 to each of `ns` connections, a window measured at each.
fn measure(stack: Stack, ns: &[usize], window: Duration) -> Vec<Row> {
    let drops_before = udp_drops();
    let mut p = Processes::start(stack);
    let (host, loadgen) = (p.host.id(), p.loadgen.id());
    let baseline = rss_kib(host);
    let mut connect_times = Vec::new();
    let mut rows = Vec::new();
    for (k, &n) in ns.iter().enumerate() {
        let more = n - connect_times.len();
        p.tell(Who::Loadgen, &format!("connect {more}"));
        p.wait_for(Who::Loadgen, &format!("connected {n}"), &mut connect_times);
        let phase = u8::try_from(2 * k + 1).expect("few windows");
        p.both(&format!("phase {phase}"));
        let (began, host_cpu, loadgen_cpu) = (Instant::now(), cpu_time(host), cpu_time(loadgen));
        let window_drops = udp_drops();
        std::thread::sleep(window);
        p.both(&format!("phase {}", phase + 1));
        let seconds = began.elapsed().as_secs_f64();
        let drops = (udp_drops() - window_drops, udp_drops() - drops_before);
        let cpu_core = (cpu_time(host) - host_cpu).as_secs_f64() / seconds;
        let loadgen_cpu_core = (cpu_time(loadgen) - loadgen_cpu).as_secs_f64() / seconds;
        let rss = rss_kib(host);
        let (threads, sockets) = (status_field(host, "Threads:"), sockets(host));
        let (host_sent, host_received, tasks) = p.report(Who::Host, phase);
        let (client_sent, client_received, _) = p.report(Who::Loadgen, phase);
        let mut sorted = connect_times.clone();
        sorted.sort();
        rows.push(Row {
            stack,
            n,
            rss_kib_per_conn: rss.saturating_sub(baseline) as f64 / n as f64,
            cpu_core,
            loadgen_cpu_core,
            threads,
            tasks: tasks.filter(|_| stack == Stack::Webrtc),
            sockets,
            drops,
            up: (client_sent, host_received),
            down: (host_sent, client_received),
            connect_p50: percentile(&sorted, 0.5),
            connect_p99: percentile(&sorted, 0.99),
        });
        eprintln!(
            "   {} at {n}: host RSS {rss} KiB (baseline {baseline} KiB), {:.1}% of a core",
            stack.name(),
            cpu_core * 100.0
        );
    }
    p.stop();
    rows
}

/// Moves this process into a network namespace of its own with only `lo` up; every
/// process it starts from here on lives there.
fn enter_loopback_namespace() {
    if let Err(e) = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET) {
        eprintln!("host_stack: cannot make a network namespace ({e}); run it as root");
        std::process::exit(1);
    }
    let up = Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .status()
        .expect("ip");
    assert!(up.success(), "ip link set lo up");
    // This process's own view (sysfs shows the namespace it was mounted in).
    let interfaces: Vec<String> = std::fs::read_to_string("/proc/self/net/dev")
        .expect("interfaces")
        .lines()
        .skip(2)
        .filter_map(|l| Some(l.split(':').next()?.trim().to_owned()))
        .collect();
    assert_eq!(interfaces, ["lo"], "only loopback in the bench's namespace");
}

fn loss(pair: (u64, u64)) -> f64 {
    100.0 * pair.0.saturating_sub(pair.1) as f64 / pair.0.max(1) as f64
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn print(rows: &[Row], window: Duration) {
    println!();
    println!(
        "host_stack: a host holding N WebRTC data channels (30 x 100-byte messages/s each way \
         per connection), {} s window, load generator in another process (str0m clients)",
        window.as_secs()
    );
    println!(
        "{:<7}| {:>4} | {:>12} | {:>17} | {:>7} | {:>11} | {:>13} | {:>15} | {:>17}",
        "stack",
        "N",
        "RSS/conn KiB",
        "CPU (% of a core)",
        "threads",
        "tokio tasks",
        "sockets (UDP)",
        "loss up / down",
        "connect p50 / p99"
    );
    for r in rows {
        println!(
            "{:<7}| {:>4} | {:>12.1} | {:>17.1} | {:>7} | {:>11} | {:>13} | {:>6.2}% / {:.2}% | {:>6.1} / {:>5.1} ms",
            r.stack.name(),
            r.n,
            r.rss_kib_per_conn,
            r.cpu_core * 100.0,
            r.threads,
            r.tasks.map_or("-".into(), |t| t.to_string()),
            format!("{} ({})", r.sockets.0, r.sockets.1),
            loss(r.up),
            loss(r.down),
            ms(r.connect_p50),
            ms(r.connect_p99),
        );
    }
    println!(
        "(loss up = client -> host, down = host -> client, over the window's messages; str0m \
         has no async runtime: one thread, no tasks; connect = offer made -> channel open at \
         the client, at most {IN_FLIGHT} handshakes at once)"
    );
    for r in rows {
        println!(
            "  {} at {}: messages up {} sent / {} received, down {} / {}; datagrams dropped for full \
             receive buffers {} in the window, {} since the host started; load generator {:.1}% of a core",
            r.stack.name(),
            r.n,
            r.up.0,
            r.up.1,
            r.down.0,
            r.down.1,
            r.drops.0,
            r.drops.1,
            r.loadgen_cpu_core * 100.0
        );
    }
    println!();
    let find = |stack, n| rows.iter().find(|r| r.stack == stack && r.n == n);
    for w in rows.iter().filter(|r| r.stack == Stack::Webrtc) {
        if let Some(s) = find(Stack::Str0m, w.n) {
            println!(
                "str0m / webrtc at N = {}: RSS per connection {:.2}x, CPU {:.2}x",
                w.n,
                s.rss_kib_per_conn / w.rss_kib_per_conn,
                s.cpu_core / w.cpu_core
            );
        }
    }
    println!();
    for r in rows {
        let at_goal = r.cpu_core * GOAL_PLAYERS as f64 / r.n as f64;
        let cpu = if r.n == GOAL_PLAYERS {
            format!("{:.1}% of a core at {GOAL_PLAYERS}", r.cpu_core * 100.0)
        } else {
            format!(
                "{:.1}% of a core projected linearly to {GOAL_PLAYERS}",
                at_goal * 100.0
            )
        };
        println!(
            "goal (<= {GOAL_RSS_KIB} KiB RSS per player, <= 1 core at {GOAL_PLAYERS} players x {RATE} pps) \
             {} at N = {}: RSS {:.1} KiB {}, CPU {cpu} {}",
            r.stack.name(),
            r.n,
            r.rss_kib_per_conn,
            if r.rss_kib_per_conn <= GOAL_RSS_KIB {
                "meets"
            } else {
                "MISSES"
            },
            if at_goal <= 1.0 { "meets" } else { "MISSES" },
        );
    }
}

fn json(rows: &[Row], window: Duration) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "stack": r.stack.name(),
                "connections": r.n,
                "rss_kib_per_connection": r.rss_kib_per_conn,
                "cpu_cores": r.cpu_core,
                "loadgen_cpu_cores": r.loadgen_cpu_core,
                "threads": r.threads,
                "tokio_tasks": r.tasks,
                "sockets": r.sockets.0,
                "udp_sockets": r.sockets.1,
                "up_sent": r.up.0,
                "up_received": r.up.1,
                "down_sent": r.down.0,
                "down_received": r.down.1,
                "udp_drops_window": r.drops.0,
                "udp_drops_total": r.drops.1,
                "connect_p50_ms": ms(r.connect_p50),
                "connect_p99_ms": ms(r.connect_p99),
            })
        })
        .collect();
    serde_json::json!({
        "bench": "native-peer/host_stack",
        "window_seconds": window.as_secs(),
        "rows": rows,
    })
}

fn orchestrate() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let ns: Vec<usize> = arg("--connections")
        .unwrap_or_else(|| "64,256".into())
        .split(',')
        .map(|n| n.parse().expect("--connections N,N,..."))
        .collect();
    assert!(
        ns.windows(2).all(|w| w[0] < w[1]) && ns.first().is_some_and(|n| *n > 0),
        "--connections grows"
    );
    let window =
        Duration::from_secs(arg("--seconds").map_or(10, |s| s.parse().expect("--seconds S")));
    enter_loopback_namespace();
    let mut rows = Vec::new();
    for stack in [Stack::Webrtc, Stack::Str0m] {
        eprintln!("   host on {} ...", stack.name());
        rows.extend(measure(stack, &ns, window));
    }
    print(&rows, window);
    println!("{}", json(&rows, window));
}
