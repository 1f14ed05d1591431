//! What one echoed packet costs a `Listener` as its connection count grows: the server half of
//! `ackwire-peer listen` without sockets, so the figure is the protocol's own cost, free of the
//! kernel's and of the machine's noise.
//!
//! N connected clients (core `Connection`s in good mode, each keeping one 32-byte message
//! queued, as `ackwire-peer connect` does) are spread evenly over one 30 pps send interval.
//! Simulated time moves in 1 ms batches: the clients' datagrams of a batch are made, then the
//! listener takes them in as the native driver does (`receive`, echo every message from
//! `poll_event`, `poll_transmit` until `None`), then the listener runs its due timers at the
//! batch's end. Only the listener's part is timed; one element is one client datagram, so
//! the figure is nanoseconds per echoed packet (datagram in, reply out).
//!
//! With every connection's state in cache (64 connections) this is the protocol's instruction
//! cost; at 2,000 and 10,000 connections the state no longer fits in the core's own cache and
//! the difference is what memory costs. The UDP benchmark (`cargo bench -p ackwire-peer
//! --bench udp`) puts both beside the kernel's cost of the datagrams themselves.
//!
//! Run: `cargo bench -p ackwire-core --bench listener_scale`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ackwire_core::{
    Config, Connection, ConnectionConfig, ConnectionEvent, ConnectionState, Listener, Mode,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const INTERVAL: Duration = Duration::from_nanos(1_000_000_000 / 30);
const BATCH: Duration = Duration::from_millis(1);
const MESSAGE: [u8; 32] = [7; 32];

/// Good mode from the start, as the UDP benchmark's flows are; the replay cache holds every
/// client's cookie, so all of them connect in the first interval.
fn config(connections: usize) -> ConnectionConfig {
    ConnectionConfig::default()
        .with_packet(Config::default().with_initial_mode(Mode::Good))
        .with_replay_cache_len(connections)
}

/// The 7-byte key the native driver gives an IPv4 peer (family, address, port); the port
/// carries the client's index here.
fn address(index: usize) -> [u8; 7] {
    let port = u16::try_from(index + 1024).expect("at most 64,511 clients");
    let [hi, lo] = port.to_be_bytes();
    [4, 127, 0, 0, 1, hi, lo]
}

fn client_of(address: &[u8]) -> usize {
    usize::from(u16::from_be_bytes([address[5], address[6]])) - 1024
}

/// Datagrams in flight one way: `(peer index, offset, len)` into one flat buffer.
#[derive(Default)]
struct Wire {
    bytes: Vec<u8>,
    datagrams: Vec<(usize, usize, usize)>,
}

impl Wire {
    fn push(&mut self, peer: usize, datagram: &[u8]) {
        self.datagrams
            .push((peer, self.bytes.len(), datagram.len()));
        self.bytes.extend_from_slice(datagram);
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.datagrams.clear();
    }
}

struct Fleet {
    now: Duration,
    listener: Listener,
    clients: Vec<Connection>,
    up: Wire,
    down: Wire,
    buf: Vec<u8>,
    reply: [u8; 64],
    echoed: u64,
}

impl Fleet {
    fn new(connections: usize) -> Fleet {
        let mut fleet = Fleet {
            now: Duration::ZERO,
            listener: Listener::new(config(connections), [9; 32]).expect("config"),
            clients: (0..connections)
                .map(|_| Connection::connect(config(connections), Duration::ZERO).expect("config"))
                .collect(),
            up: Wire::default(),
            down: Wire::default(),
            buf: vec![0; 1200],
            reply: [0; 64],
            echoed: 0,
        };
        // Handshakes, then a second of traffic so every ring and queue has its steady size.
        for _ in 0..60 {
            fleet.interval();
        }
        let connected = fleet
            .clients
            .iter()
            .filter(|c| c.state() == ConnectionState::Connected)
            .count();
        assert_eq!(connected, connections, "every client connected");
        assert_eq!(fleet.listener.len(), connections);
        fleet
    }

    /// One send interval: every client sends once. Returns the time the listener spent.
    fn interval(&mut self) -> Duration {
        let n = self.clients.len();
        let end = self.now + INTERVAL;
        let mut spent = Duration::ZERO;
        let mut next = 0;
        while self.now < end {
            let batch_end = (self.now + BATCH).min(end);
            // Clients whose turn falls in this batch: client i sends at i/n of the interval.
            let offset = |i: usize| INTERVAL * i as u32 / n as u32;
            let start = end - INTERVAL;
            let mut last = next;
            while last < n && start + offset(last) < batch_end {
                last += 1;
            }
            for i in 0..n {
                let now = if (next..last).contains(&i) {
                    start + offset(i)
                } else {
                    continue;
                };
                let client = &mut self.clients[i];
                if client.state() == ConnectionState::Connected
                    && client.buffered().unreliable_queued == 0
                {
                    client.send(0, &MESSAGE).expect("queue has room");
                }
                while let Some(len) = client.poll_transmit(now, &mut self.buf).expect("buffer") {
                    self.up.push(i, &self.buf[..len]);
                }
                while client.poll_event().is_some() {}
            }
            let at = |i: usize| start + offset(i);
            let timer = Instant::now();
            self.serve(&at, batch_end);
            spent += timer.elapsed();
            for &(i, offset, len) in &self.down.datagrams {
                // Late copies of a handshake step are refused; that is the protocol's business.
                let _ = self.clients[i].receive(batch_end, &self.down.bytes[offset..offset + len]);
            }
            self.down.clear();
            next = last;
            self.now = batch_end;
        }
        spent
    }

    /// The listener's part of one batch, as `ackwire-peer listen` runs it. Never inlined, so
    /// a profiler can tell it from the clients' part.
    #[inline(never)]
    fn serve(&mut self, at: &dyn Fn(usize) -> Duration, batch_end: Duration) {
        for k in 0..self.up.datagrams.len() {
            let (i, offset, len) = self.up.datagrams[k];
            let now = at(i);
            let datagram = &self.up.bytes[offset..offset + len];
            match self
                .listener
                .receive(now, &address(i), datagram, &mut self.reply)
            {
                Ok(Some(len)) => self.down.push(i, &self.reply[..len]),
                Ok(None) => self.poll(now),
                Err(e) => panic!("a client's datagram refused: {e}"),
            }
        }
        self.up.clear();
        self.poll(batch_end);
    }

    fn poll(&mut self, now: Duration) {
        self.echo();
        while let Some((to, len)) = self
            .listener
            .poll_transmit(now, &mut self.buf)
            .expect("buffer")
        {
            self.down.push(client_of(to), &self.buf[..len]);
        }
        self.echo();
    }

    fn echo(&mut self) {
        while let Some(polled) = self.listener.poll_event() {
            if let ConnectionEvent::Message { channel, bytes } = polled.event {
                polled
                    .connection
                    .send(channel, &bytes)
                    .expect("echo queued");
                self.echoed += 1;
            }
        }
    }
}

/// `LISTENER_SCALE_PROFILE=CONNECTIONS,INTERVALS`: no criterion, just the fleet's setup and
/// that many intervals, for a profiler (run it with 0 intervals too, and subtract, to leave
/// the handshakes and warm-up out).
fn profile(spec: &str) {
    let (connections, intervals) = spec
        .split_once(',')
        .and_then(|(c, i)| Some((c.parse().ok()?, i.parse().ok()?)))
        .expect("LISTENER_SCALE_PROFILE=CONNECTIONS,INTERVALS");
    let mut fleet = Fleet::new(connections);
    let before = fleet.echoed;
    let spent: Duration = (0..intervals).map(|_| fleet.interval()).sum();
    println!(
        "{connections} connections, {intervals} intervals: {} messages echoed, {:.0} ns each",
        fleet.echoed - before,
        spent.as_nanos() as f64 / (fleet.echoed - before).max(1) as f64
    );
}

fn bench(c: &mut Criterion) {
    if let Ok(spec) = std::env::var("LISTENER_SCALE_PROFILE") {
        return profile(&spec);
    }
    let mut group = c.benchmark_group("listener_echo");
    group.sample_size(20);
    for connections in [64, 2_000, 10_000] {
        let mut fleet = Fleet::new(connections);
        group.throughput(Throughput::Elements(connections as u64));
        group.bench_function(format!("{connections}_connections"), |b| {
            b.iter_custom(|intervals| (0..intervals).map(|_| fleet.interval()).sum())
        });
        // The echo really ran: about one message per client per interval came back.
        let echoed = black_box(fleet.echoed);
        assert!(echoed > 0, "no message was echoed");
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
