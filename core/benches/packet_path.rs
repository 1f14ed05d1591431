//! Send + receive + ack per packet: ackwire-core against laminar 0.5 doing the same work in
//! the same run (two peers, each sending one 32-byte-payload packet per round and receiving
//! the other's, acks riding every packet, in memory with no sockets).
//!
//! Before criterion runs, the bench prints the figures the README quotes: the packets/s ratio
//! (interleaved rounds, median of several), allocations per packet in steady state (counting
//! allocator), and the steady-state header size.

use std::alloc::System;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::hint::black_box;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use ackwire_core::{Config, Endpoint, Mode};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use laminar::{ConnectionManager, DatagramSocket, Packet, SocketEvent, VirtualConnection};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const PAYLOAD: [u8; 32] = [7; 32];
/// Just over one 30 pps interval, so a packet is due on every round.
const STEP: Duration = Duration::from_millis(34);

struct AckwirePair {
    now: Duration,
    a: Endpoint,
    b: Endpoint,
    buf: [u8; 1200],
}

impl AckwirePair {
    fn new() -> Self {
        let config = Config {
            initial_mode: Mode::Good,
            ..Config::default()
        };
        AckwirePair {
            now: Duration::ZERO,
            a: Endpoint::new(config.clone(), Duration::ZERO).unwrap(),
            b: Endpoint::new(config, Duration::ZERO).unwrap(),
            buf: [0; 1200],
        }
    }

    fn send(from: &mut Endpoint, to: &mut Endpoint, now: Duration, buf: &mut [u8]) -> usize {
        let t = from
            .poll_transmit_with(now, buf, |_, space| {
                space[..PAYLOAD.len()].copy_from_slice(&PAYLOAD);
                PAYLOAD.len()
            })
            .unwrap()
            .expect("a packet is due every round");
        let received = to.receive(now, &buf[..t.len]).unwrap();
        black_box(received.payload);
        t.header_len
    }

    /// One round: a → b, b → a, both drain their events. Returns b's header length.
    fn round(&mut self) -> usize {
        self.now += STEP;
        Self::send(&mut self.a, &mut self.b, self.now, &mut self.buf);
        let header = Self::send(&mut self.b, &mut self.a, self.now, &mut self.buf);
        while let Some(event) = self.a.poll_event() {
            black_box(event);
        }
        while let Some(event) = self.b.poll_event() {
            black_box(event);
        }
        header
    }
}

type Inbox = Rc<RefCell<VecDeque<(usize, [u8; 256], SocketAddr)>>>;

/// An in-memory datagram socket that reuses its queue storage (no allocation per packet of
/// its own, so the count below is laminar's).
#[derive(Debug)]
struct MemorySocket {
    addr: SocketAddr,
    inbox: Inbox,
    peer_inbox: Inbox,
}

impl DatagramSocket for MemorySocket {
    fn send_packet(&mut self, _addr: &SocketAddr, payload: &[u8]) -> io::Result<usize> {
        let mut bytes = [0u8; 256];
        bytes[..payload.len()].copy_from_slice(payload);
        self.peer_inbox
            .borrow_mut()
            .push_back((payload.len(), bytes, self.addr));
        Ok(payload.len())
    }

    fn receive_packet<'a>(&mut self, buffer: &'a mut [u8]) -> io::Result<(&'a [u8], SocketAddr)> {
        match self.inbox.borrow_mut().pop_front() {
            Some((len, bytes, from)) => {
                buffer[..len].copy_from_slice(&bytes[..len]);
                Ok((&buffer[..len], from))
            }
            None => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.addr)
    }

    fn is_blocking_mode(&self) -> bool {
        false
    }
}

struct LaminarPair {
    start: Instant,
    now: Duration,
    a_addr: SocketAddr,
    b_addr: SocketAddr,
    a: ConnectionManager<MemorySocket, VirtualConnection>,
    b: ConnectionManager<MemorySocket, VirtualConnection>,
}

impl LaminarPair {
    fn new() -> Self {
        let a_addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let b_addr: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let a_inbox: Inbox = Rc::new(RefCell::new(VecDeque::with_capacity(64)));
        let b_inbox: Inbox = Rc::new(RefCell::new(VecDeque::with_capacity(64)));
        let socket = |addr, inbox: &Inbox, peer: &Inbox| MemorySocket {
            addr,
            inbox: inbox.clone(),
            peer_inbox: peer.clone(),
        };
        LaminarPair {
            start: Instant::now(),
            now: Duration::ZERO,
            a_addr,
            b_addr,
            a: ConnectionManager::new(
                socket(a_addr, &a_inbox, &b_inbox),
                laminar::Config::default(),
            ),
            b: ConnectionManager::new(
                socket(b_addr, &b_inbox, &a_inbox),
                laminar::Config::default(),
            ),
        }
    }

    /// One round: each side queues one acked (reliable) packet, both poll (receive the
    /// other's, send their own), and both drain their events. Returns packets delivered.
    fn round(&mut self) -> usize {
        self.now += STEP;
        let time = self.start + self.now;
        let send = |to, mgr: &ConnectionManager<_, _>| {
            mgr.event_sender()
                .send(Packet::reliable_unordered(to, PAYLOAD.to_vec()))
                .unwrap();
        };
        send(self.b_addr, &self.a);
        send(self.a_addr, &self.b);
        self.a.manual_poll(time);
        self.b.manual_poll(time);
        let mut delivered = 0;
        for mgr in [&self.a, &self.b] {
            while let Ok(event) = mgr.event_receiver().try_recv() {
                if let SocketEvent::Packet(packet) = &event {
                    black_box(packet.payload());
                    delivered += 1;
                }
                black_box(event);
            }
        }
        delivered
    }
}

/// Allocations per packet over `rounds` rounds after `warmup` rounds (2 packets per round).
fn allocations_per_packet(mut round: impl FnMut(), warmup: usize, rounds: usize) -> f64 {
    for _ in 0..warmup {
        round();
    }
    let region = Region::new(GLOBAL);
    for _ in 0..rounds {
        round();
    }
    region.change().allocations as f64 / (2 * rounds) as f64
}

fn packets_per_second(mut round: impl FnMut(), rounds: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..rounds {
        round();
    }
    (2 * rounds) as f64 / start.elapsed().as_secs_f64()
}

fn report() {
    let mut ackwire = AckwirePair::new();
    let mut laminar = LaminarPair::new();
    let ackwire_allocs = allocations_per_packet(
        || {
            ackwire.round();
        },
        10_000,
        100_000,
    );
    let laminar_allocs = allocations_per_packet(
        || {
            laminar.round();
        },
        10_000,
        100_000,
    );
    // The baseline must really be moving packets, or the ratio means nothing.
    let delivered: usize = (0..100).map(|_| laminar.round()).sum();
    assert!(
        delivered >= 198,
        "laminar delivered {delivered} of 200 packets"
    );
    let header = ackwire.round();

    // Interleave the two so drift in machine load hits both alike; take the median ratio.
    let mut ratios = Vec::new();
    let (mut ours, mut theirs) = (0.0, 0.0);
    for _ in 0..7 {
        ours = packets_per_second(
            || {
                ackwire.round();
            },
            50_000,
        );
        theirs = packets_per_second(
            || {
                laminar.round();
            },
            50_000,
        );
        ratios.push(ours / theirs);
    }
    ratios.sort_by(f64::total_cmp);
    println!("packet_path: send+receive+ack, 32-byte payload, same run");
    println!("  ackwire-core : {ours:>12.0} packets/s (last round)");
    println!("  laminar 0.5  : {theirs:>12.0} packets/s (last round)");
    println!(
        "  ratio        : {:.1}x (median of 7 interleaved rounds)",
        ratios[3]
    );
    println!(
        "  allocations/packet, steady state: ackwire {ackwire_allocs:.3}, laminar {laminar_allocs:.2}"
    );
    println!("  steady-state header: ackwire {header} bytes");
}

fn bench(c: &mut Criterion) {
    report();
    let mut group = c.benchmark_group("send_receive_ack");
    group.throughput(Throughput::Elements(2));
    let mut ackwire = AckwirePair::new();
    group.bench_function("ackwire", |b| b.iter(|| ackwire.round()));
    let mut laminar = LaminarPair::new();
    group.bench_function("laminar", |b| b.iter(|| laminar.round()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
