//! A `Listener` serving N in-memory clients (no sockets) with the heap it holds measured by
//! the counting allocator: only what the listener's calls allocate and free is counted, so
//! the clients' own memory (in the same process) is left out. Shared by the
//! `connection_memory` test and the `connection_memory` bench.
//!
//! Every client sends a 32-byte state update on channel 0 (unreliable-sequenced) in every
//! packet and the listener echoes it, as `ackwire-peer listen` does; with chat on, every 3rd
//! packet of each client also carries a 32-byte message on channel 1 (reliable-ordered), which
//! the listener echoes on channel 1 too.
#![allow(dead_code, unreachable_pub)]

use std::alloc::System;
use std::time::Duration;

use ackwire_core::{
    Config, Connection, ConnectionConfig, ConnectionEvent, ConnectionState, Listener, Mode,
};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
pub static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// 30 packets/s, good mode's rate.
pub const INTERVAL: Duration = Duration::from_nanos(1_000_000_000 / 30);
/// Simulated time moves in steps of a millisecond, a driver's timer resolution.
pub const STEP: Duration = Duration::from_millis(1);
const STATE: [u8; 32] = [7; 32];
const CHAT: [u8; 32] = [3; 32];
/// Channel of the state updates (unreliable-sequenced in the default config).
pub const STATE_CHANNEL: u8 = 0;
/// Channel of the chat (reliable-ordered in the default config).
pub const CHAT_CHANNEL: u8 = 1;

/// What the listener's calls did to the heap.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    /// Bytes held now (allocated minus freed).
    pub net_bytes: i64,
    /// Allocations made (reallocations count as one).
    pub allocations: u64,
}

fn config(connections: usize) -> ConnectionConfig {
    ConnectionConfig::default()
        .with_packet(Config::default().with_initial_mode(Mode::Good))
        .with_replay_cache_len(connections.max(16))
}

pub fn address(index: usize) -> [u8; 6] {
    let [a, b, c, d] = u32::try_from(index).expect("index").to_be_bytes();
    [4, a, b, c, d, 1]
}

fn client_of(address: &[u8]) -> usize {
    u32::from_be_bytes([address[1], address[2], address[3], address[4]]) as usize
}

/// The listener, its clients, and the heap the listener holds.
pub struct Fleet {
    pub now: Duration,
    pub listener: Listener,
    pub clients: Vec<Connection>,
    pub tally: Tally,
    /// The clients send a state update in every packet (on by default).
    pub state: bool,
    /// The clients send a chat message in every 3rd packet.
    pub chat: bool,
    /// Chat messages the listener received, and the clients got back.
    pub chat_received: u64,
    pub chat_echoed_back: u64,
    /// Datagrams the listener took in.
    pub datagrams_in: u64,
    /// Per client: when to poll it next (`None` before its first turn), packets sent.
    next_at: Vec<Option<Duration>>,
    packets: Vec<u64>,
    up: Vec<(usize, Vec<u8>)>,
    up_len: usize,
    down: Vec<(usize, Vec<u8>)>,
    down_len: usize,
    buf: Vec<u8>,
    reply: [u8; 64],
}

impl Fleet {
    /// `connections` clients, connected and exchanging state updates for a second.
    pub fn new(connections: usize) -> Fleet {
        let region = Region::new(GLOBAL);
        let listener = Listener::new(config(connections), [9; 32]).expect("config");
        let change = region.change();
        let mut fleet = Fleet {
            now: Duration::ZERO,
            listener,
            clients: (0..connections)
                .map(|_| Connection::connect(config(connections), Duration::ZERO).expect("config"))
                .collect(),
            tally: Tally::default(),
            state: true,
            chat: false,
            chat_received: 0,
            chat_echoed_back: 0,
            datagrams_in: 0,
            next_at: vec![None; connections],
            packets: vec![0; connections],
            // Wide enough for every client's datagrams of an interval, made once.
            up: (0..connections * 2 + 64)
                .map(|_| (0, vec![0; 1200]))
                .collect(),
            up_len: 0,
            down: (0..connections * 2 + 64)
                .map(|_| (0, vec![0; 1200]))
                .collect(),
            down_len: 0,
            buf: vec![0; 1200],
            reply: [0; 64],
        };
        fleet.add(change);
        fleet.run_for(Duration::from_secs(1));
        let connected = fleet
            .clients
            .iter()
            .filter(|c| c.state() == ConnectionState::Connected)
            .count();
        assert_eq!(connected, connections, "every client connected");
        assert_eq!(fleet.listener.len(), connections);
        fleet
    }

    fn add(&mut self, change: stats_alloc::Stats) {
        // stats_alloc counts a reallocation's new size as allocated and its old one as freed
        // (`bytes_reallocated` is the same change again, for information).
        self.tally.net_bytes += change.bytes_allocated as i64 - change.bytes_deallocated as i64;
        self.tally.allocations += (change.allocations + change.reallocations) as u64;
    }

    /// Heap the listener holds, per connection.
    pub fn bytes_per_connection(&self) -> f64 {
        self.tally.net_bytes as f64 / self.clients.len() as f64
    }

    /// Heap per connection in the budget's three phases: after 2 s of state updates, after
    /// 5 s of chat, and 3 s after the chat stopped (reliable storage is freed after 2 s of
    /// quiet).
    pub fn memory_phases(&mut self) -> [f64; 3] {
        self.run_for(Duration::from_secs(2));
        let idle = self.bytes_per_connection();
        self.chat = true;
        self.run_for(Duration::from_secs(5));
        let busy = self.bytes_per_connection();
        self.chat = false;
        self.run_for(Duration::from_secs(3));
        [idle, busy, self.bytes_per_connection()]
    }

    pub fn run_for(&mut self, span: Duration) {
        let end = self.now + span;
        while self.now < end {
            self.step();
        }
    }

    /// One millisecond: every client whose deadline has come sends what it may (a client
    /// queues its state update, and with chat on a chat message every 3rd packet, when it is
    /// due), then the listener serves it all. The clients start spread evenly over one
    /// interval, as independent players are.
    pub fn step(&mut self) {
        let now = self.now;
        for (i, client) in self.clients.iter_mut().enumerate() {
            let due = self.next_at[i].unwrap_or_else(|| {
                INTERVAL * u32::try_from(i).expect("index") / self.next_at.len() as u32
            });
            if due > now {
                self.next_at[i] = Some(due);
                continue;
            }
            let connected = client.state() == ConnectionState::Connected;
            if self.state && connected && client.buffered().unreliable_queued == 0 {
                client.send(STATE_CHANNEL, &STATE).expect("queue has room");
            }
            let mut sent = false;
            while let Some(len) = client.poll_transmit(now, &mut self.buf).expect("buffer") {
                let (to, datagram) = &mut self.up[self.up_len];
                *to = i;
                datagram.clear();
                datagram.extend_from_slice(&self.buf[..len]);
                self.up_len += 1;
                sent = true;
            }
            if sent && connected {
                // The chat message goes in the client's next packet.
                if self.chat && self.packets[i].is_multiple_of(3) {
                    client.send(CHAT_CHANNEL, &CHAT).expect("window has room");
                }
                self.packets[i] += 1;
            }
            while let Some(event) = client.poll_event() {
                if let ConnectionEvent::Message {
                    channel: CHAT_CHANNEL,
                    ..
                } = event
                {
                    self.chat_echoed_back += 1;
                }
            }
            self.next_at[i] = client.poll_timeout();
        }
        let region = Region::new(GLOBAL);
        self.serve(now);
        let change = region.change();
        self.add(change);
        for k in 0..self.down_len {
            let (i, datagram) = &self.down[k];
            let _ = self.clients[*i].receive(now, datagram);
            self.next_at[*i] = Some(now);
        }
        self.down_len = 0;
        self.now += STEP;
    }

    fn serve(&mut self, now: Duration) {
        for k in 0..self.up_len {
            let (i, datagram) = &self.up[k];
            self.datagrams_in += 1;
            match self
                .listener
                .receive(now, &address(*i), datagram, &mut self.reply)
            {
                Ok(Some(len)) => {
                    let (to, out) = &mut self.down[self.down_len];
                    *to = *i;
                    out.clear();
                    out.extend_from_slice(&self.reply[..len]);
                    self.down_len += 1;
                }
                Ok(None) => {}
                Err(e) => panic!("a client's datagram refused: {e}"),
            }
            self.echo();
        }
        self.up_len = 0;
        while let Some((to, len)) = self
            .listener
            .poll_transmit(now, &mut self.buf)
            .expect("buffer")
        {
            let (peer, out) = &mut self.down[self.down_len];
            *peer = client_of(to);
            out.clear();
            out.extend_from_slice(&self.buf[..len]);
            self.down_len += 1;
        }
        self.echo();
    }

    fn echo(&mut self) {
        while let Some(polled) = self.listener.poll_event() {
            if let ConnectionEvent::Message { channel, bytes } = polled.event {
                if channel == CHAT_CHANNEL {
                    self.chat_received += 1;
                }
                polled
                    .connection
                    .send(channel, &bytes)
                    .expect("echo queued");
            }
        }
    }
}
