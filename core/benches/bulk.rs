//! A 4 MiB reliable transfer, ackwire's core against renet in the same run, with a game's
//! 40-byte state sent every 1/60 s beside it: bytes/s of the transfer, and the state's
//! latency during it against the half second before.
//!
//! - **loopback**: real UDP sockets on 127.0.0.1, one thread per side, each driven as its
//!   users drive it: ackwire's connection wakes when `poll_timeout` says, renet's at its
//!   game loop's 60 Hz tick (`update`, then `get_packets_to_send`; its default config, 60,000
//!   bytes a tick), both reading every datagram as it arrives;
//! - **emulated**: both through the core's link emulator in virtual time, 25 ms each way
//!   (50 ms RTT), at 1 % and 5 % loss: the protocol's figures, not the machine's.
//!
//! Both run without encryption (renet without netcode, ackwire's plain connection).
//! `cargo bench -p ackwire-core --bench bulk`.

use std::net::{SocketAddr, UdpSocket};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ackwire_core::emulator::{EmulatorConfig, LinkEmulator};
use ackwire_core::{Accept, Acceptor, ChannelKind, Connection, ConnectionConfig, ConnectionEvent};
use renet::{DefaultChannel, RenetClient, RenetServer};

const TOTAL: usize = 4 * 1024 * 1024;
const CHUNK: usize = 256 * 1024;
const CHUNKS: usize = TOTAL / CHUNK;
const TICK: Duration = Duration::from_micros(16_667);
/// Game traffic before the transfer: RTT samples, the link's good mode (after its 4 s of
/// recovery), and the baseline latency.
const WARM: Duration = Duration::from_secs(5);
const RENET_CLIENT: u64 = 7;

/// One side of one stack: what the measurement loop needs of it.
trait Side: Send {
    /// Queues a chunk of the transfer; false when the stack has no room yet.
    fn send_chunk(&mut self, bytes: &[u8]) -> bool;
    /// Sends a game state (unreliable).
    fn send_state(&mut self, bytes: &[u8]);
    fn receive(&mut self, now: Duration, datagram: &[u8]);
    /// Datagrams due at `now`.
    fn transmit(&mut self, now: Duration, out: &mut Vec<Vec<u8>>);
    /// When to call `transmit` next.
    fn wake_at(&self, now: Duration) -> Duration;
    /// Messages delivered since the last call: `(is_chunk, bytes)`.
    fn delivered(&mut self, out: &mut Vec<(bool, Vec<u8>)>);
    /// What the stack says of the link, for the report.
    fn summary(&self) -> String {
        String::new()
    }
}

const GAME: u8 = 0;
const BULK: u8 = 1;

fn ackwire_config() -> ConnectionConfig {
    ConnectionConfig::default()
        .with_channels(vec![ChannelKind::Unreliable, ChannelKind::ReliableOrdered])
}

/// ackwire's connection; the acceptor side holds the acceptor until the handshake is done.
struct Ackwire {
    connection: Option<Connection>,
    acceptor: Option<Acceptor>,
    replies: Vec<Vec<u8>>,
    /// Datagrams the connection refused.
    refused: u64,
}

impl Ackwire {
    fn connector() -> Ackwire {
        Ackwire {
            connection: Some(Connection::connect(ackwire_config(), Duration::ZERO).unwrap()),
            acceptor: None,
            replies: Vec::new(),
            refused: 0,
        }
    }

    fn acceptor() -> Ackwire {
        Ackwire {
            connection: None,
            acceptor: Some(Acceptor::new(ackwire_config(), [9; 32]).unwrap()),
            replies: Vec::new(),
            refused: 0,
        }
    }
}

impl Side for Ackwire {
    fn send_chunk(&mut self, bytes: &[u8]) -> bool {
        self.connection
            .as_mut()
            .is_some_and(|c| c.send(BULK, bytes).is_ok())
    }

    fn send_state(&mut self, bytes: &[u8]) {
        if let Some(c) = &mut self.connection {
            c.send(GAME, bytes).expect("the state queue has room");
        }
    }

    fn receive(&mut self, now: Duration, datagram: &[u8]) {
        if let Some(c) = &mut self.connection {
            // A refused datagram changes nothing (a late handshake copy): counted by the
            // connection's stats, which the report prints.
            if c.receive(now, datagram).is_err() {
                self.refused += 1;
            }
        } else if let Some(acceptor) = &mut self.acceptor {
            let mut reply = [0u8; 1500];
            match acceptor.receive(now, b"peer", datagram, &mut reply) {
                Ok(Accept::Reply { len }) => self.replies.push(reply[..len].to_vec()),
                Ok(Accept::Connection(c)) => self.connection = Some(*c),
                _ => {}
            }
        }
    }

    fn transmit(&mut self, now: Duration, out: &mut Vec<Vec<u8>>) {
        out.append(&mut self.replies);
        if let Some(c) = &mut self.connection {
            let mut buf = [0u8; 1500];
            while let Ok(Some(len)) = c.poll_transmit(now, &mut buf) {
                out.push(buf[..len].to_vec());
            }
        }
    }

    fn wake_at(&self, now: Duration) -> Duration {
        self.connection
            .as_ref()
            .and_then(Connection::poll_timeout)
            .unwrap_or(now + Duration::from_millis(10))
    }

    fn summary(&self) -> String {
        self.connection.as_ref().map_or_else(String::new, |c| {
            let s = c.stats();
            format!(
                "rtt {:.2} ms, mode {:?}, bulk window {}, {} packets sent, {} lost, {} resent, {} datagrams refused",
                s.rtt_ms,
                s.mode,
                s.bulk_window_packets,
                s.counters.packets_sent,
                s.counters.packets_lost,
                s.messages_resent,
                self.refused
            )
        })
    }

    fn delivered(&mut self, out: &mut Vec<(bool, Vec<u8>)>) {
        if let Some(c) = &mut self.connection {
            while let Some(event) = c.poll_event() {
                if let ConnectionEvent::Message { channel, bytes } = event {
                    out.push((channel == BULK, bytes));
                }
            }
        }
    }
}

/// renet, driven at a 60 Hz game loop: the client sends, the server receives.
enum Renet {
    Client {
        client: Box<RenetClient>,
        next_tick: Duration,
    },
    Server {
        server: Box<RenetServer>,
        next_tick: Duration,
    },
}

impl Renet {
    fn client() -> Renet {
        let mut client = RenetClient::new(renet::ConnectionConfig::default());
        client.set_connected();
        Renet::Client {
            client: Box::new(client),
            next_tick: Duration::ZERO,
        }
    }

    fn server() -> Renet {
        let mut server = RenetServer::new(renet::ConnectionConfig::default());
        server.add_connection(RENET_CLIENT);
        Renet::Server {
            server: Box::new(server),
            next_tick: Duration::ZERO,
        }
    }
}

impl Side for Renet {
    fn send_chunk(&mut self, bytes: &[u8]) -> bool {
        let Renet::Client { client, .. } = self else {
            return false;
        };
        if !client.can_send_message(DefaultChannel::ReliableOrdered, bytes.len()) {
            return false;
        }
        client.send_message(DefaultChannel::ReliableOrdered, bytes.to_vec());
        true
    }

    fn send_state(&mut self, bytes: &[u8]) {
        if let Renet::Client { client, .. } = self {
            client.send_message(DefaultChannel::Unreliable, bytes.to_vec());
        }
    }

    fn receive(&mut self, _now: Duration, datagram: &[u8]) {
        match self {
            Renet::Client { client, .. } => client.process_packet(datagram),
            Renet::Server { server, .. } => {
                server
                    .process_packet_from(datagram, RENET_CLIENT)
                    .expect("the client is added");
            }
        }
    }

    fn transmit(&mut self, now: Duration, out: &mut Vec<Vec<u8>>) {
        let (next_tick, packets) = match self {
            Renet::Client { client, next_tick } if now >= *next_tick => {
                client.update(TICK);
                (next_tick, client.get_packets_to_send())
            }
            Renet::Server { server, next_tick } if now >= *next_tick => {
                server.update(TICK);
                (next_tick, server.get_packets_to_send(RENET_CLIENT).unwrap())
            }
            _ => return,
        };
        *next_tick = (*next_tick + TICK).max(now);
        out.extend(packets);
    }

    fn wake_at(&self, _now: Duration) -> Duration {
        match self {
            Renet::Client { next_tick, .. } | Renet::Server { next_tick, .. } => *next_tick,
        }
    }

    fn delivered(&mut self, out: &mut Vec<(bool, Vec<u8>)>) {
        if let Renet::Server { server, .. } = self {
            while let Some(bytes) = server.receive_message(RENET_CLIENT, DefaultChannel::Unreliable)
            {
                out.push((false, bytes.to_vec()));
            }
            while let Some(bytes) =
                server.receive_message(RENET_CLIENT, DefaultChannel::ReliableOrdered)
            {
                out.push((true, bytes.to_vec()));
            }
        }
    }
}

fn chunk(n: usize) -> Vec<u8> {
    (0..CHUNK)
        .map(|i| {
            (i as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(n as u32) as u8
        })
        .collect()
}

fn state(sent_at: Duration) -> Vec<u8> {
    let mut bytes = vec![0u8; 40];
    bytes[..8].copy_from_slice(&(sent_at.as_nanos() as u64).to_be_bytes());
    bytes
}

/// What the sender does at `now`: the game's state on its ticks, and chunks once warm.
struct Sender {
    next_state: Duration,
    queued: usize,
}

impl Sender {
    fn step(&mut self, side: &mut dyn Side, now: Duration) {
        while now >= self.next_state {
            side.send_state(&state(now));
            self.next_state += TICK;
        }
        while now >= WARM && self.queued < CHUNKS && side.send_chunk(&chunk(self.queued)) {
            self.queued += 1;
        }
    }
}

/// What the receiver saw.
#[derive(Default)]
struct Receiver {
    chunks: usize,
    done_at: Option<Duration>,
    /// `(sent, latency)` of each game state.
    states: Vec<(Duration, Duration)>,
}

impl Receiver {
    fn take(&mut self, side: &mut dyn Side, now: Duration, scratch: &mut Vec<(bool, Vec<u8>)>) {
        side.delivered(scratch);
        for (is_chunk, bytes) in scratch.drain(..) {
            if is_chunk {
                assert!(
                    bytes == chunk(self.chunks),
                    "chunk {} intact, in order",
                    self.chunks
                );
                self.chunks += 1;
                if self.chunks == CHUNKS {
                    self.done_at = Some(now);
                }
            } else {
                let sent = Duration::from_nanos(u64::from_be_bytes(bytes[..8].try_into().unwrap()));
                self.states.push((sent, now.saturating_sub(sent)));
            }
        }
    }

    fn report(&self, stack: &str, condition: &str) -> f64 {
        let done = self.done_at.expect("the transfer finished");
        let rate = TOTAL as f64 / (done - WARM).as_secs_f64();
        let during = percentiles(&self.states, WARM, done);
        let before = percentiles(&self.states, WARM - Duration::from_millis(500), WARM);
        println!(
            "{stack:<8} {condition:<22} {:>8.2} MB/s   game state p50 {:>6.1} ms p99 {:>6.1} ms   (before: p50 {:>5.1} ms p99 {:>5.1} ms)",
            rate / 1e6,
            during.0,
            during.1,
            before.0,
            before.1
        );
        rate
    }
}

/// Median and 99th percentile, in ms, of the latencies of states sent in `[from, to)`.
fn percentiles(states: &[(Duration, Duration)], from: Duration, to: Duration) -> (f64, f64) {
    let mut all: Vec<f64> = states
        .iter()
        .filter(|(sent, _)| *sent >= from && *sent < to)
        .map(|(_, latency)| latency.as_secs_f64() * 1e3)
        .collect();
    if all.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    all.sort_by(f64::total_cmp);
    (
        all[all.len() / 2],
        all[(all.len() * 99 / 100).min(all.len() - 1)],
    )
}

/// Both sides through the emulator, in virtual time.
fn emulated(mut tx: Box<dyn Side>, mut rx: Box<dyn Side>, link: EmulatorConfig) -> Receiver {
    let mut to_rx = LinkEmulator::new(link.clone(), 1).unwrap();
    let mut to_tx = LinkEmulator::new(link, 2).unwrap();
    let mut sender = Sender {
        next_state: Duration::ZERO,
        queued: 0,
    };
    let mut receiver = Receiver::default();
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    let mut now = Duration::ZERO;
    while receiver.done_at.is_none() {
        if now >= Duration::from_secs(600) {
            panic!("the transfer stalled: {}", tx.summary());
        }
        sender.step(tx.as_mut(), now);
        while let Some(d) = to_tx.poll_receive(now) {
            tx.receive(now, &d);
        }
        while let Some(d) = to_rx.poll_receive(now) {
            rx.receive(now, &d);
        }
        tx.transmit(now, &mut out);
        for d in out.drain(..) {
            to_rx.send(now, &d);
        }
        rx.transmit(now, &mut out);
        for d in out.drain(..) {
            to_tx.send(now, &d);
        }
        let mut drained = Vec::new();
        tx.delivered(&mut drained);
        receiver.take(rx.as_mut(), now, &mut scratch);
        let next = [
            tx.wake_at(now),
            rx.wake_at(now),
            sender.next_state,
            to_rx.poll_timeout().unwrap_or(Duration::MAX),
            to_tx.poll_timeout().unwrap_or(Duration::MAX),
        ]
        .into_iter()
        .min()
        .unwrap();
        now = next.max(now + Duration::from_micros(1));
    }
    receiver
}

/// One side's loop on a real socket: reads until its next wake, then transmits.
fn drive(
    side: &mut dyn Side,
    socket: &UdpSocket,
    peer: SocketAddr,
    epoch: Instant,
    mut step: impl FnMut(&mut dyn Side, Duration) -> bool,
) {
    let mut buf = [0u8; 2048];
    let mut out = Vec::new();
    loop {
        let now = epoch.elapsed();
        if !step(side, now) {
            return;
        }
        side.transmit(now, &mut out);
        for d in out.drain(..) {
            socket.send_to(&d, peer).expect("a loopback send");
        }
        // A socket's read timeout runs in kernel ticks (4 ms here): waits under 2 ms poll
        // instead, as a game loop's busy frame would.
        let wait = side.wake_at(now).saturating_sub(epoch.elapsed());
        let got = if wait < Duration::from_millis(2) {
            socket.set_nonblocking(true).unwrap();
            let got = socket.recv_from(&mut buf);
            socket.set_nonblocking(false).unwrap();
            if got.is_err() {
                thread::yield_now();
            }
            got
        } else {
            socket.set_read_timeout(Some(wait.min(TICK))).unwrap();
            socket.recv_from(&mut buf)
        };
        if let Ok((len, _)) = got {
            side.receive(epoch.elapsed(), &buf[..len]);
            socket.set_nonblocking(true).unwrap();
            while let Ok((len, _)) = socket.recv_from(&mut buf) {
                side.receive(epoch.elapsed(), &buf[..len]);
            }
            socket.set_nonblocking(false).unwrap();
        }
    }
}

/// Both sides on real UDP sockets on loopback, a thread each.
fn loopback(mut tx: Box<dyn Side>, mut rx: Box<dyn Side>) -> Receiver {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    let epoch = Instant::now();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let receiver = thread::spawn(move || {
        let mut receiver = Receiver::default();
        let mut scratch = Vec::new();
        drive(rx.as_mut(), &b, a_addr, epoch, |side, now| {
            receiver.take(side, now, &mut scratch);
            // Keep acking until the sender has seen it all: a second past the end.
            receiver
                .done_at
                .is_none_or(|done| now < done + Duration::from_secs(1))
        });
        drop(done_tx);
        receiver
    });
    let mut sender = Sender {
        next_state: Duration::ZERO,
        queued: 0,
    };
    drive(tx.as_mut(), &a, b_addr, epoch, |side, now| {
        sender.step(side, now);
        let mut ignored = Vec::new();
        side.delivered(&mut ignored);
        assert!(now < Duration::from_secs(600), "the transfer stalled");
        !matches!(done_rx.try_recv(), Err(mpsc::TryRecvError::Disconnected))
    });
    let summary = tx.summary();
    if !summary.is_empty() {
        println!("         sender: {summary}");
    }
    receiver.join().unwrap()
}

fn main() {
    // `cargo test --benches` runs this with `--bench`-less args: do the work only when benched.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    println!("4 MiB reliable transfer (16 × 256 KiB) beside a 40 B game state every 1/60 s");
    let ours = loopback(
        Box::new(Ackwire::connector()),
        Box::new(Ackwire::acceptor()),
    )
    .report("ackwire", "loopback UDP");
    let theirs = loopback(Box::new(Renet::client()), Box::new(Renet::server()))
        .report("renet", "loopback UDP");
    for loss in [1.0, 5.0] {
        let link = EmulatorConfig::default()
            .with_latency(Duration::from_millis(25))
            .with_loss_percent(loss);
        let condition = format!("emulated 50 ms, {loss} %");
        emulated(
            Box::new(Ackwire::connector()),
            Box::new(Ackwire::acceptor()),
            link.clone(),
        )
        .report("ackwire", &condition);
        emulated(Box::new(Renet::client()), Box::new(Renet::server()), link)
            .report("renet", &condition);
    }
    println!(
        "loopback: ackwire {:.2}× renet's rate (goal ≥ 1 MB/s and ahead of renet)",
        ours / theirs
    );
    assert!(ours >= 1e6, "ackwire under 1 MB/s on loopback");
    assert!(ours > theirs, "ackwire behind renet on loopback");
}
