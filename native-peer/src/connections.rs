//! The peer's connections: one core [`Endpoint`] per remote UDP address.
//!
//! Until the core's connection layer (handshake, connection ids, keep-alive, disconnect)
//! lands, this module stands in for it with the least that works: peers are told apart by
//! source address, a connection is created by the first datagram the core accepts, the table
//! is bounded, and a connection that has not been heard from for [`IDLE_TIMEOUT`] is dropped.
//! Swapping in the core's connection type means replacing [`Connection::endpoint`] and the
//! accept path in [`Connections::on_datagram`]; the driver loop does not change.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

use ackwire_core::{Config, Endpoint, Event, Mode, ReceiveError, Stats};
use serde::Serialize;

use crate::link::Link;

/// A connection silent this long is dropped. Five missed seconds is far beyond the core's 1 s
/// loss timeout, so only a peer that is gone (or a stray sender) hits it.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// The design's MTU budget: larger datagrams are refused before reaching the core.
pub const MAX_DATAGRAM: usize = 1200;

/// Bytes of demo traffic a connecting peer puts in each packet.
pub const DEMO_PAYLOAD_LEN: usize = 32;

/// What this side writes into its packets.
#[derive(Debug, Clone)]
pub enum Traffic {
    /// The connecting side's demo traffic: a running counter and a fixed label, standing in for
    /// a game's state update.
    Demo {
        /// Packets written so far.
        counter: u64,
    },
    /// The listening side plays back the latest payload received from its peer.
    Echo {
        /// The latest payload.
        last: Vec<u8>,
    },
}

impl Traffic {
    fn write(&mut self, space: &mut [u8]) -> usize {
        match self {
            Traffic::Demo { counter } => {
                const LABEL: &[u8; DEMO_PAYLOAD_LEN - 8] = b"ackwire demo state ....!";
                let len = DEMO_PAYLOAD_LEN.min(space.len());
                let mut payload = [0u8; DEMO_PAYLOAD_LEN];
                payload[..8].copy_from_slice(&counter.to_be_bytes());
                payload[8..].copy_from_slice(LABEL);
                space[..len].copy_from_slice(&payload[..len]);
                *counter += 1;
                len
            }
            Traffic::Echo { last } => {
                let len = last.len().min(space.len());
                space[..len].copy_from_slice(&last[..len]);
                len
            }
        }
    }

    fn on_payload(&mut self, payload: &[u8]) {
        if let Traffic::Echo { last } = self {
            last.clear();
            last.extend_from_slice(payload);
        }
    }
}

/// One remote peer.
#[derive(Debug)]
pub struct Connection {
    /// The remote address (the connection's identity until the core has connection ids).
    pub addr: SocketAddr,
    /// The protocol state.
    pub endpoint: Endpoint,
    traffic: Traffic,
    last_heard: Duration,
    /// Pinned connections (the one a `connect` peer opened) never idle out; they warn once
    /// per silence instead, so a wrong address or a dead listener shows in the log.
    pinned: bool,
    warned_silent: bool,
    /// Deadline of this connection's live timer entry.
    scheduled: Duration,
    generation: u64,
}

/// Datagrams that never reached a connection, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// Larger than [`MAX_DATAGRAM`].
    pub oversized: u64,
    /// Not an ackwire packet: empty, truncated, wrong version or garbled header.
    pub malformed: u64,
    /// A well-formed packet the connection's endpoint refused (duplicate, stale, or acking
    /// packets never sent: a stray or forged sender).
    pub rejected: u64,
    /// From an address this peer does not talk to (a `connect` peer talks to one address).
    pub foreign: u64,
    /// A new peer while the connection table was full.
    pub table_full: u64,
}

impl Dropped {
    /// All dropped datagrams.
    pub fn total(&self) -> u64 {
        self.oversized + self.malformed + self.rejected + self.foreign + self.table_full
    }
}

/// The core's counters summed over every connection this peer has had. (The core's `Stats`
/// mixes counters with gauges; a separate counters struct there would replace this one.)
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Totals {
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets accepted.
    pub packets_received: u64,
    /// Packets acked by peers.
    pub packets_acked: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Datagram bytes sent.
    pub bytes_sent: u64,
    /// Datagram bytes accepted.
    pub bytes_received: u64,
}

impl Totals {
    fn add(&mut self, stats: &Stats) {
        self.packets_sent += stats.packets_sent;
        self.packets_received += stats.packets_received;
        self.packets_acked += stats.packets_acked;
        self.packets_lost += stats.packets_lost;
        self.bytes_sent += stats.bytes_sent;
        self.bytes_received += stats.bytes_received;
    }
}

/// Whether datagrams from unknown addresses may open connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Listen: any address may open a connection, up to this many at once.
    Open {
        /// Table bound.
        max_connections: usize,
    },
    /// Connect: only the connections opened with [`Connections::open`].
    Closed,
}

/// All connections of one peer, with their timers.
#[derive(Debug)]
pub struct Connections {
    config: Config,
    admission: Admission,
    slots: Vec<Option<Connection>>,
    free: Vec<usize>,
    by_addr: HashMap<SocketAddr, usize>,
    /// (deadline, slot, generation); entries whose generation or deadline no longer match the
    /// slot are stale and skipped, which is cheaper than removing them.
    timers: BinaryHeap<Reverse<(Duration, usize, u64)>>,
    next_generation: u64,
    dropped: Dropped,
    /// Stats of connections already closed.
    retired: Totals,
    buf: Vec<u8>,
}

impl Connections {
    /// An empty table whose endpoints use `config`.
    pub fn new(config: Config, admission: Admission) -> Connections {
        Connections {
            config,
            admission,
            slots: Vec::new(),
            free: Vec::new(),
            by_addr: HashMap::new(),
            timers: BinaryHeap::new(),
            next_generation: 0,
            dropped: Dropped::default(),
            retired: Totals::default(),
            buf: vec![0; MAX_DATAGRAM],
        }
    }

    /// Opens a pinned connection to `addr` that sends the demo traffic (the `connect` side).
    pub fn open(
        &mut self,
        now: Duration,
        addr: SocketAddr,
        link: &mut Link,
    ) -> Result<(), ackwire_core::ConfigError> {
        let endpoint = Endpoint::new(self.config.clone(), now)?;
        let slot = self.insert(addr, endpoint, Traffic::Demo { counter: 0 }, now, true);
        self.transmit(slot, now, link);
        Ok(())
    }

    fn insert(
        &mut self,
        addr: SocketAddr,
        endpoint: Endpoint,
        traffic: Traffic,
        now: Duration,
        pinned: bool,
    ) -> usize {
        self.next_generation += 1;
        let connection = Connection {
            addr,
            endpoint,
            traffic,
            last_heard: now,
            pinned,
            warned_silent: false,
            scheduled: Duration::MAX,
            generation: self.next_generation,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(connection);
                slot
            }
            None => {
                self.slots.push(Some(connection));
                self.slots.len() - 1
            }
        };
        self.by_addr.insert(addr, slot);
        slot
    }

    /// Live connections.
    pub fn len(&self) -> usize {
        self.by_addr.len()
    }

    /// True when there is no connection.
    pub fn is_empty(&self) -> bool {
        self.by_addr.is_empty()
    }

    /// The live connections.
    pub fn iter(&self) -> impl Iterator<Item = &Connection> {
        self.slots.iter().flatten()
    }

    /// Datagrams dropped so far.
    pub fn dropped(&self) -> Dropped {
        self.dropped
    }

    /// Counters summed over live and closed connections.
    pub fn totals(&self) -> Totals {
        let mut totals = self.retired;
        for connection in self.iter() {
            totals.add(&connection.endpoint.stats());
        }
        totals
    }

    /// Hands one incoming datagram to the connection it belongs to, creating one for a new
    /// address (when admission is open) if the core accepts the datagram. Anything refused is
    /// counted, logged at debug, and changes no connection.
    pub fn on_datagram(
        &mut self,
        now: Duration,
        from: SocketAddr,
        datagram: &[u8],
        link: &mut Link,
    ) {
        if datagram.len() > MAX_DATAGRAM {
            self.dropped.oversized += 1;
            tracing::debug!(%from, len = datagram.len(), "oversized datagram dropped");
            return;
        }
        if let Some(&slot) = self.by_addr.get(&from) {
            let connection = self.slots[slot].as_mut().expect("mapped slot is live");
            match connection.endpoint.receive(now, datagram) {
                Ok(received) => {
                    connection.traffic.on_payload(received.payload);
                    connection.last_heard = now;
                    if connection.warned_silent {
                        connection.warned_silent = false;
                        tracing::info!(addr = %from, "peer answering again");
                    }
                    drain_events(connection);
                    // Acks can move the loss deadline or the mode, and with it the next send.
                    self.reschedule(slot, now);
                }
                Err(e) => self.refused(from, e),
            }
            return;
        }
        let max_connections = match self.admission {
            Admission::Open { max_connections } => max_connections,
            Admission::Closed => {
                self.dropped.foreign += 1;
                tracing::debug!(%from, len = datagram.len(), "datagram from a foreign address dropped");
                return;
            }
        };
        if self.len() >= max_connections {
            self.dropped.table_full += 1;
            tracing::debug!(%from, "connection table full, datagram dropped");
            return;
        }
        let mut endpoint = match Endpoint::new(self.config.clone(), now) {
            Ok(endpoint) => endpoint,
            Err(e) => unreachable!("config validated at startup: {e}"),
        };
        let payload = match endpoint.receive(now, datagram) {
            Ok(received) => received.payload,
            Err(e) => return self.refused(from, e),
        };
        let traffic = Traffic::Echo {
            last: payload.to_vec(),
        };
        tracing::debug!(%from, "new connection");
        let slot = self.insert(from, endpoint, traffic, now, false);
        // The new endpoint's first packet is due now: answering at once starts the peer's RTT
        // measurements a send interval earlier.
        self.transmit(slot, now, link);
    }

    fn refused(&mut self, from: SocketAddr, error: ReceiveError) {
        match error {
            ReceiveError::Header(_) => self.dropped.malformed += 1,
            _ => self.dropped.rejected += 1,
        }
        tracing::debug!(%from, %error, "datagram refused");
    }

    /// Sends whatever the connection's endpoint has due, then re-arms its timer.
    fn transmit(&mut self, slot: usize, now: Duration, link: &mut Link) {
        let connection = self.slots[slot].as_mut().expect("transmit on a live slot");
        loop {
            let traffic = &mut connection.traffic;
            let sent = connection
                .endpoint
                .poll_transmit_with(now, &mut self.buf, |_, space| traffic.write(space));
            match sent {
                Ok(Some(transmit)) => link.send(now, connection.addr, &self.buf[..transmit.len]),
                Ok(None) => break,
                Err(e) => unreachable!("buffer holds MAX_DATAGRAM and writers stay in bounds: {e}"),
            }
        }
        drain_events(connection);
        self.reschedule(slot, now);
    }

    fn reschedule(&mut self, slot: usize, now: Duration) {
        let connection = self.slots[slot].as_mut().expect("reschedule a live slot");
        let mut deadline = connection.endpoint.poll_timeout();
        if !connection.warned_silent {
            deadline = deadline.min(connection.last_heard + IDLE_TIMEOUT);
        }
        // Never schedule in the past: the endpoint has just been serviced at `now`, so a past
        // deadline would only spin the loop.
        let deadline = deadline.max(now + Duration::from_micros(100));
        if deadline != connection.scheduled {
            connection.scheduled = deadline;
            self.timers
                .push(Reverse((deadline, slot, connection.generation)));
        }
    }

    /// When the earliest connection timer fires, if any.
    pub fn poll_timeout(&mut self) -> Option<Duration> {
        while let Some(Reverse((deadline, slot, generation))) = self.timers.peek().copied() {
            if self.is_live_timer(deadline, slot, generation) {
                return Some(deadline);
            }
            self.timers.pop();
        }
        None
    }

    fn is_live_timer(&self, deadline: Duration, slot: usize, generation: u64) -> bool {
        matches!(&self.slots[slot], Some(c) if c.generation == generation && c.scheduled == deadline)
    }

    /// Services every connection whose timer is due at `now`: sends due packets, processes
    /// loss and mode deadlines, and closes idle connections.
    pub fn handle_timeout(&mut self, now: Duration, link: &mut Link) {
        while let Some(Reverse((deadline, slot, generation))) = self.timers.peek().copied() {
            if deadline > now {
                break;
            }
            self.timers.pop();
            if !self.is_live_timer(deadline, slot, generation) {
                continue;
            }
            let connection = self.slots[slot].as_mut().expect("live timer slot");
            connection.scheduled = Duration::MAX;
            let silent = now >= connection.last_heard + IDLE_TIMEOUT;
            if silent && !connection.pinned {
                self.close(slot);
                continue;
            }
            if silent && !connection.warned_silent {
                connection.warned_silent = true;
                tracing::warn!(addr = %connection.addr, after = ?IDLE_TIMEOUT, "no answer from the peer");
            }
            self.transmit(slot, now, link);
        }
    }

    fn close(&mut self, slot: usize) {
        let connection = self.slots[slot].take().expect("close a live slot");
        tracing::debug!(addr = %connection.addr, "connection idle, closed");
        self.retired.add(&connection.endpoint.stats());
        self.by_addr.remove(&connection.addr);
        self.free.push(slot);
    }
}

fn drain_events(connection: &mut Connection) {
    while let Some(event) = connection.endpoint.poll_event() {
        if let Event::ModeChanged {
            mode,
            recovery_time,
        } = event
        {
            let level_info = connection.pinned;
            let mode = match mode {
                Mode::Good => "good",
                Mode::Bad => "bad",
            };
            if level_info {
                tracing::info!(addr = %connection.addr, mode, ?recovery_time, "mode changed");
            } else {
                tracing::debug!(addr = %connection.addr, mode, ?recovery_time, "mode changed");
            }
        }
    }
}
