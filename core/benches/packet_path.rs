//! Send + receive + ack per packet: ackwire-core against laminar 0.5 doing the same work in
//! the same run (two peers, each sending one 32-byte-payload packet per round and receiving
//! the other's, acks riding every packet, in memory with no sockets).
//!
//! Before criterion runs, the bench prints the figures the README quotes: the packets/s ratio
//! (interleaved rounds, median of several), allocations per packet in steady state (counting
//! allocator), header bytes per packet in both directions at equal and unequal rates, and the
//! cost of packet protection: the same loop with both endpoints protected (AES-256-GCM,
//! sealed and opened in place), as a ratio to the unprotected loop in the same run, and the
//! AEADs it was chosen among (RustCrypto's ChaCha20-Poly1305 and AES-256-GCM, ring's
//! ChaCha20-Poly1305 and AES-256-GCM): nanoseconds per seal + open of a 32-byte and a
//! 1,200-byte payload, interleaved, also as criterion's `aead_seal_open` group. Then the
//! message layer: reliable messages/s through a connected pair of `Connection`s (lossless and with 10% loss, 30 messages of 32
//! bytes per round packed into one packet), against laminar delivering the same reliable
//! messages over its own lossless in-memory pair.

use std::alloc::System;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::hint::black_box;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use ackwire_core::emulator::{EmulatorConfig, LinkEmulator};
use ackwire_core::protection::{PacketKeys, nonce};
use ackwire_core::{
    Accept, Acceptor, Config, Connection, ConnectionConfig, ConnectionEvent, Endpoint, Mode,
};
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

const A_TO_B: ([u8; 32], [u8; 12]) = ([1; 32], [2; 12]);
const B_TO_A: ([u8; 32], [u8; 12]) = ([3; 32], [4; 12]);

impl AckwirePair {
    fn new() -> Self {
        let config = Config::default().with_initial_mode(Mode::Good);
        AckwirePair {
            now: Duration::ZERO,
            a: Endpoint::new(config.clone(), Duration::ZERO).unwrap(),
            b: Endpoint::new(config, Duration::ZERO).unwrap(),
            buf: [0; 1200],
        }
    }

    /// The same pair with packet protection (AES-256-GCM, ring) in both directions.
    fn protected() -> Self {
        let mut pair = AckwirePair::new();
        pair.a
            .protect(PacketKeys::aes_256_gcm(A_TO_B, B_TO_A))
            .unwrap();
        pair.b
            .protect(PacketKeys::aes_256_gcm(B_TO_A, A_TO_B))
            .unwrap();
        pair
    }

    fn send(from: &mut Endpoint, to: &mut Endpoint, now: Duration, buf: &mut [u8]) -> usize {
        let t = from
            .poll_transmit_with(now, buf, |_, space| {
                space[..PAYLOAD.len()].copy_from_slice(&PAYLOAD);
                PAYLOAD.len()
            })
            .unwrap()
            .expect("a packet is due every round");
        // A protected endpoint opens the payload in place, where it lies.
        let received = if to.is_protected() {
            to.receive_in_place(now, &mut buf[..t.len])
        } else {
            to.receive(now, &buf[..t.len])
        };
        black_box(received.unwrap().payload);
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
    println!("  steady-state header in this loop: ackwire {header} bytes");
    report_protection();
    report_aeads();
    for (a_pps, b_pps) in [(30.0, 30.0), (10.0, 10.0), (30.0, 10.0)] {
        let (a_to_b, b_to_a) = header_bytes_per_packet(a_pps, b_pps);
        println!(
            "  header bytes/packet, steady state, {a_pps}/{b_pps} pps: {a_to_b:.2} one way, {b_to_a:.2} the other"
        );
    }
}

/// Packets/s of the same send + receive + ack loop with and without packet protection,
/// interleaved in one run; the ratio is what protection costs the core per packet.
fn report_protection() {
    let mut plain = AckwirePair::new();
    let mut protected = AckwirePair::protected();
    let protected_allocs = allocations_per_packet(
        || {
            protected.round();
        },
        10_000,
        100_000,
    );
    let mut ratios = Vec::new();
    let (mut ours, mut sealed) = (0.0, 0.0);
    for _ in 0..7 {
        ours = packets_per_second(
            || {
                plain.round();
            },
            50_000,
        );
        sealed = packets_per_second(
            || {
                protected.round();
            },
            50_000,
        );
        ratios.push(sealed / ours);
    }
    ratios.sort_by(f64::total_cmp);
    println!("  protected (AES-256-GCM, 32-byte payload + 16-byte tag):");
    println!("    unprotected: {ours:>12.0} packets/s (last round)");
    println!("    protected  : {sealed:>12.0} packets/s (last round)");
    println!(
        "    protected / unprotected: {:.2} (median of 7 interleaved rounds); allocations/packet {protected_allocs:.3}",
        ratios[3]
    );
}

/// One AEAD candidate for packet protection, as the bench drives it: seal `payload` in place
/// under `packet_number` with `header` as associated data, then open it back.
trait SealOpen {
    fn seal_open(&mut self, packet_number: u64, header: &[u8], payload: &mut [u8]);
}

const BENCH_KEY: [u8; 32] = [0x42; 32];
const BENCH_IV: [u8; 12] = [0xA5; 12];

/// RustCrypto `chacha20poly1305`, whose backends (AVX2 here) are picked at run time. Under
/// `RUSTFLAGS='--cfg chacha20_backend="soft" --cfg poly1305_backend="soft"'` the same code
/// runs the portable backends.
struct RustCryptoChaCha(chacha20poly1305::ChaCha20Poly1305);

impl SealOpen for RustCryptoChaCha {
    fn seal_open(&mut self, packet_number: u64, header: &[u8], payload: &mut [u8]) {
        use chacha20poly1305::AeadInOut;
        let nonce = nonce(&BENCH_IV, packet_number).into();
        let tag = self
            .0
            .encrypt_inout_detached(&nonce, header, payload.into())
            .unwrap();
        self.0
            .decrypt_inout_detached(&nonce, header, payload.into(), &tag)
            .unwrap();
    }
}

/// RustCrypto `aes-gcm` (AES-NI and CLMUL, picked at run time).
struct RustCryptoAesGcm(aes_gcm::Aes256Gcm);

impl SealOpen for RustCryptoAesGcm {
    fn seal_open(&mut self, packet_number: u64, header: &[u8], payload: &mut [u8]) {
        use aes_gcm::AeadInOut;
        let nonce = nonce(&BENCH_IV, packet_number).into();
        let tag = self
            .0
            .encrypt_inout_detached(&nonce, header, payload.into())
            .unwrap();
        self.0
            .decrypt_inout_detached(&nonce, header, payload.into(), &tag)
            .unwrap();
    }
}

/// `ring`'s `LessSafeKey` (BoringSSL's assembly, picked at run time).
struct Ring(ring::aead::LessSafeKey);

impl SealOpen for Ring {
    fn seal_open(&mut self, packet_number: u64, header: &[u8], payload: &mut [u8]) {
        use ring::aead::{Aad, Nonce};
        let n = || Nonce::assume_unique_for_key(nonce(&BENCH_IV, packet_number));
        let tag = self
            .0
            .seal_in_place_separate_tag(n(), Aad::from(header), payload)
            .unwrap();
        self.0
            .open_in_place_separate_tag(n(), Aad::from(header), tag, payload, 0..)
            .unwrap();
    }
}

/// The AEADs packet protection was chosen among, by name.
fn aead_candidates() -> Vec<(&'static str, Box<dyn SealOpen>)> {
    use aes_gcm::KeyInit as _;
    let ring_key = |algorithm| {
        ring::aead::LessSafeKey::new(ring::aead::UnboundKey::new(algorithm, &BENCH_KEY).unwrap())
    };
    vec![
        (
            "rustcrypto_chacha20poly1305",
            Box::new(RustCryptoChaCha(chacha20poly1305::ChaCha20Poly1305::new(
                &BENCH_KEY.into(),
            ))),
        ),
        (
            "rustcrypto_aes256gcm",
            Box::new(RustCryptoAesGcm(aes_gcm::Aes256Gcm::new(&BENCH_KEY.into()))),
        ),
        (
            "ring_chacha20poly1305",
            Box::new(Ring(ring_key(&ring::aead::CHACHA20_POLY1305))),
        ),
        (
            "ring_aes256gcm",
            Box::new(Ring(ring_key(&ring::aead::AES_256_GCM))),
        ),
    ]
}

/// Nanoseconds per seal + open of each candidate AEAD, at 32 and 1,200 bytes of payload
/// with a 5-byte header, interleaved in one run (median of 7 rounds), each also as a ratio
/// to the first (RustCrypto's ChaCha20-Poly1305).
fn report_aeads() {
    let header = [0x90, 0x12, 0x34, 0x30, 0x04];
    let mut candidates = aead_candidates();
    println!("  seal + open per packet (5-byte header; median of 7 interleaved rounds):");
    for size in [32usize, 1200] {
        let mut payload = vec![7u8; size];
        let mut samples = vec![Vec::new(); candidates.len()];
        let rounds = if size > 100 { 20_000 } else { 100_000 };
        let mut packet_number = 0u64;
        for _ in 0..7 {
            for (i, (_, aead)) in candidates.iter_mut().enumerate() {
                let start = Instant::now();
                for _ in 0..rounds {
                    aead.seal_open(packet_number, &header, black_box(&mut payload));
                    packet_number += 1;
                }
                samples[i].push(start.elapsed().as_nanos() as f64 / rounds as f64);
            }
        }
        let medians: Vec<f64> = samples
            .iter_mut()
            .map(|s| {
                s.sort_by(f64::total_cmp);
                s[3]
            })
            .collect();
        for ((name, _), ns) in candidates.iter().zip(&medians) {
            println!(
                "    {size:>5} B  {name:<28} {ns:>8.0} ns  ({:.2}x the first)",
                ns / medians[0]
            );
        }
    }
}

/// Mean header bytes per packet in each direction between two endpoints pacing themselves at
/// `a_pps` and `b_pps` over a 20 ms one-way path, from 10 s to 60 s (virtual time, 0.1 ms
/// steps): the wire cost a deployment sees, at equal and unequal rates.
fn header_bytes_per_packet(a_pps: f64, b_pps: f64) -> (f64, f64) {
    let at = |pps: f64| {
        Config::default()
            .with_good_rate_pps(pps)
            .with_bad_rate_pps(pps)
    };
    let mut a = Endpoint::new(at(a_pps), Duration::ZERO).unwrap();
    let mut b = Endpoint::new(at(b_pps), Duration::ZERO).unwrap();
    let link = || {
        LinkEmulator::new(
            EmulatorConfig::default().with_latency(Duration::from_millis(20)),
            1,
        )
        .unwrap()
    };
    let (mut a_to_b, mut b_to_a) = (link(), link());
    let mut buf = [0u8; 1200];
    let mut totals = [(0usize, 0usize); 2];
    let settle = Duration::from_secs(10);
    let mut now = Duration::ZERO;
    while now < Duration::from_secs(60) {
        while let Some(datagram) = a_to_b.poll_receive(now) {
            b.receive(now, &datagram).unwrap();
        }
        while let Some(datagram) = b_to_a.poll_receive(now) {
            a.receive(now, &datagram).unwrap();
        }
        for (side, endpoint, link) in [(0, &mut a, &mut a_to_b), (1, &mut b, &mut b_to_a)] {
            while let Some(t) = endpoint.poll_transmit(now, &mut buf).unwrap() {
                link.send(now, &buf[..t.len]);
                if now >= settle {
                    totals[side].0 += t.header_len;
                    totals[side].1 += 1;
                }
            }
            while endpoint.poll_event().is_some() {}
        }
        now += Duration::from_micros(100);
    }
    let mean = |(bytes, packets): (usize, usize)| bytes as f64 / packets as f64;
    (mean(totals[0]), mean(totals[1]))
}

/// Reliable messages queued per round (one packet each way per round): 30 × (32 + 4 bytes of
/// framing) fill most of a 1200-byte datagram.
const MESSAGES_PER_ROUND: usize = 30;

struct ConnectionPair {
    now: Duration,
    client: Connection,
    server: Connection,
    to_server: LinkEmulator,
    to_client: LinkEmulator,
    buf: [u8; 1200],
    delivered: u64,
}

impl ConnectionPair {
    fn new(loss_percent: f64) -> Self {
        let config = ConnectionConfig::default()
            .with_packet(Config::default().with_initial_mode(Mode::Good));
        let mut acceptor = Acceptor::new(config.clone(), [1; 32]).unwrap();
        let mut client = Connection::connect(config, Duration::ZERO).unwrap();
        let (mut buf, mut reply) = ([0u8; 1200], [0u8; 64]);
        let server = loop {
            let len = client
                .poll_transmit(Duration::ZERO, &mut buf)
                .unwrap()
                .unwrap();
            match acceptor.receive(Duration::ZERO, b"peer", &buf[..len], &mut reply) {
                Ok(Accept::Reply { len }) => client.receive(Duration::ZERO, &reply[..len]).unwrap(),
                Ok(Accept::Connection(server)) => break *server,
                other => panic!("{other:?}"),
            }
        };
        let link = EmulatorConfig::default().with_loss_percent(loss_percent);
        ConnectionPair {
            now: Duration::ZERO,
            client,
            server,
            to_server: LinkEmulator::new(link.clone(), 1).unwrap(),
            to_client: LinkEmulator::new(link, 2).unwrap(),
            buf,
            delivered: 0,
        }
    }

    /// One round: the client queues messages (as many as its window takes), each side sends
    /// what is due, both drain their events. Returns messages delivered to the server.
    fn round(&mut self) -> usize {
        self.now += STEP;
        let now = self.now;
        for _ in 0..MESSAGES_PER_ROUND {
            if self.client.send(1, &PAYLOAD).is_err() {
                break; // window full: backpressure, try next round
            }
        }
        while let Some(len) = self.client.poll_transmit(now, &mut self.buf).unwrap() {
            self.to_server.send(now, &self.buf[..len]);
        }
        while let Some(datagram) = self.to_server.poll_receive(now) {
            let _ = self.server.receive(now, &datagram);
        }
        while let Some(len) = self.server.poll_transmit(now, &mut self.buf).unwrap() {
            self.to_client.send(now, &self.buf[..len]);
        }
        while let Some(datagram) = self.to_client.poll_receive(now) {
            let _ = self.client.receive(now, &datagram);
        }
        let mut delivered = 0;
        while let Some(event) = self.server.poll_event() {
            if let ConnectionEvent::Message { bytes, .. } = &event {
                black_box(bytes);
                delivered += 1;
            }
        }
        while let Some(event) = self.client.poll_event() {
            black_box(event);
        }
        self.delivered += delivered as u64;
        delivered
    }

    /// Messages delivered per second of virtual (link) time: what the paced protocol carries.
    fn goodput(&self) -> f64 {
        self.delivered as f64 / self.now.as_secs_f64()
    }
}

impl LaminarPair {
    /// One round of the message comparison: a sends `MESSAGES_PER_ROUND` reliable-ordered
    /// messages to b, both poll and drain. Returns messages delivered to b.
    fn message_round(&mut self) -> usize {
        self.now += STEP;
        let time = self.start + self.now;
        let sender = self.a.event_sender();
        for _ in 0..MESSAGES_PER_ROUND {
            sender
                .send(Packet::reliable_ordered(
                    self.b_addr,
                    PAYLOAD.to_vec(),
                    None,
                ))
                .unwrap();
        }
        // b answers with one packet per round, as the ackwire server does: laminar's acks
        // ride only on its reliable packets.
        self.b
            .event_sender()
            .send(Packet::reliable_unordered(self.a_addr, vec![0]))
            .unwrap();
        self.a.manual_poll(time);
        self.b.manual_poll(time);
        let mut delivered = 0;
        while let Ok(event) = self.b.event_receiver().try_recv() {
            if let SocketEvent::Packet(packet) = &event {
                black_box(packet.payload());
                delivered += 1;
            }
        }
        while let Ok(event) = self.a.event_receiver().try_recv() {
            black_box(event);
        }
        delivered
    }
}

/// Messages delivered per second of CPU over `rounds` rounds of `round`.
fn messages_per_second(mut round: impl FnMut() -> usize, rounds: usize) -> f64 {
    let start = Instant::now();
    let delivered: usize = (0..rounds).map(|_| round()).sum();
    delivered as f64 / start.elapsed().as_secs_f64()
}

fn report_messages() {
    let mut lossless = ConnectionPair::new(0.0);
    let mut lossy = ConnectionPair::new(10.0);
    let mut laminar = LaminarPair::new();
    // Warm up, and check every pair really delivers.
    let sent_rounds = 2_000;
    let got: usize = (0..sent_rounds).map(|_| lossless.round()).sum();
    assert!(
        got >= (sent_rounds - 10) * MESSAGES_PER_ROUND,
        "lossless delivered {got}"
    );
    let got: usize = (0..sent_rounds).map(|_| lossy.round()).sum();
    assert!(
        got >= sent_rounds * MESSAGES_PER_ROUND / 2,
        "lossy delivered {got}"
    );
    let got: usize = (0..sent_rounds).map(|_| laminar.message_round()).sum();
    assert!(
        got >= (sent_rounds - 10) * MESSAGES_PER_ROUND,
        "laminar delivered {got}"
    );

    let (mut ours, mut ours_lossy, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        ours.push(messages_per_second(|| lossless.round(), 5_000));
        ours_lossy.push(messages_per_second(|| lossy.round(), 5_000));
        theirs.push(messages_per_second(|| laminar.message_round(), 5_000));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (ours, ours_lossy, theirs) = (
        median(&mut ours),
        median(&mut ours_lossy),
        median(&mut theirs),
    );
    println!(
        "messages: reliable 32-byte messages delivered per CPU second, same run (median of 5)"
    );
    println!("  ackwire Connection, lossless : {ours:>12.0} messages/s");
    println!("  ackwire Connection, 10% loss : {ours_lossy:>12.0} messages/s");
    println!("  laminar 0.5, lossless        : {theirs:>12.0} messages/s");
    println!(
        "  ratio ackwire/laminar (lossless): {:.1}x; 10% loss costs ackwire {:.0}% of its lossless rate",
        ours / theirs,
        100.0 * (1.0 - ours_lossy / ours)
    );
    println!(
        "  per link second (paced, 30 packets/s of 1200 bytes): lossless {:.0}, 10% loss {:.0} messages/s",
        lossless.goodput(),
        lossy.goodput()
    );
    let stats = lossy.client.stats();
    println!(
        "  10% loss pair: {} messages sent, {} resent, {} packets lost",
        stats.messages_sent, stats.messages_resent, stats.counters.packets_lost
    );
}

fn bench(c: &mut Criterion) {
    report();
    report_messages();
    let mut group = c.benchmark_group("send_receive_ack");
    group.throughput(Throughput::Elements(2));
    let mut ackwire = AckwirePair::new();
    group.bench_function("ackwire", |b| b.iter(|| ackwire.round()));
    let mut laminar = LaminarPair::new();
    group.bench_function("laminar", |b| b.iter(|| laminar.round()));
    // A key seals at most 2^23 packets (RFC 9001 §6.6; the endpoint then refuses to send),
    // and a long criterion run does more rounds than that: a fresh pair every 2^22 rounds,
    // one allocation in millions of rounds.
    let mut protected = AckwirePair::protected();
    let mut rounds = 0u32;
    group.bench_function("ackwire_protected", |b| {
        b.iter(|| {
            rounds += 1;
            if rounds == 1 << 22 {
                rounds = 0;
                protected = AckwirePair::protected();
            }
            protected.round()
        })
    });
    group.finish();

    let mut group = c.benchmark_group("reliable_messages");
    group.throughput(Throughput::Elements(MESSAGES_PER_ROUND as u64));
    let mut lossless = ConnectionPair::new(0.0);
    group.bench_function("ackwire_lossless", |b| b.iter(|| lossless.round()));
    let mut lossy = ConnectionPair::new(10.0);
    group.bench_function("ackwire_10pct_loss", |b| b.iter(|| lossy.round()));
    let mut laminar = LaminarPair::new();
    group.bench_function("laminar_lossless", |b| b.iter(|| laminar.message_round()));
    group.finish();

    let mut group = c.benchmark_group("aead_seal_open");
    for size in [32usize, 1200] {
        group.throughput(Throughput::Elements(1));
        for (name, mut aead) in aead_candidates() {
            let mut payload = vec![7u8; size];
            let header = [0x90, 0x12, 0x34, 0x30, 0x04];
            let mut packet_number = 0u64;
            group.bench_function(format!("{name}/{size}"), |b| {
                b.iter(|| {
                    aead.seal_open(packet_number, &header, black_box(&mut payload));
                    packet_number += 1;
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
