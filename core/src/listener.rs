//! Many peers on one socket: an [`Acceptor`] plus the connections it made, keyed by the
//! peer's address bytes. A UDP server driver is then a loop of `receive` (sending back any
//! challenge at once), `poll_transmit` until `None`, `poll_event` until `None`, and a sleep
//! until `poll_timeout`, with no protocol logic of its own.
//!
//! Datagrams from an address with a connection go to that connection; anything else goes to
//! the acceptor, which answers connect requests without storing anything. Connections are
//! dropped once closed and their last event has been taken.
//!
//! The listener is built to serve thousands of connections from one thread: no call scans
//! the connections. Each connection has one entry in a timing wheel (`timers`) at its own
//! `poll_timeout` (arming is O(1); a deadline is honoured within a ~1 ms tick), and only
//! connections that are due (their timer expired, a datagram arrived, or the application
//! touched them) are visited by `poll_transmit` and `poll_event`.

use core::hash::BuildHasher;
use core::time::Duration;

use hashbrown::HashTable;

use thiserror::Error;

use crate::channel::SendError;
use crate::connection::{
    Connection, ConnectionConfig, ConnectionConfigError, ConnectionError, ConnectionEvent,
    ConnectionState,
};
use crate::control::{ControlPacket, is_channel_request};
use crate::endpoint::TransmitError;
use crate::handshake::{Accept, Acceptor, HandshakeError};
use crate::stats::Counters;
use crate::time::{NEVER, duration, nanos};
use crate::timers::TimerWheel;

/// Why [`Listener::receive`] refused a datagram. Nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ListenerError {
    /// From an address without a connection, and not a valid handshake step; or a channel
    /// request from any address (`HandshakeError::ChannelRequest`: a listener is on raw UDP).
    #[error("handshake: {0}")]
    Handshake(#[from] HandshakeError),
    /// Refused by the address's connection.
    #[error("connection: {0}")]
    Connection(#[from] ConnectionError),
    /// From a new address while `max_connections` connections are open.
    #[error("connection table full ({0} connections)")]
    Full(usize),
    /// The address is longer than [`MAX_ADDRESS_LEN`] bytes.
    #[error("address of {0} bytes; at most {MAX_ADDRESS_LEN} are supported")]
    AddressTooLong(usize),
}

/// Longest address a listener keys connections by: enough for a socket address in bytes or
/// as text (`[ffff:…:ffff]:65535` is 47 characters) or a signalling peer id.
pub const MAX_ADDRESS_LEN: usize = 47;

/// An address stored inline: the connection table then needs no second allocation per
/// peer, and a lookup no second cache miss.
#[derive(Debug, Clone, Copy)]
struct Address {
    len: u8,
    bytes: [u8; MAX_ADDRESS_LEN],
}

impl Address {
    fn new(address: &[u8]) -> Option<Address> {
        let mut bytes = [0u8; MAX_ADDRESS_LEN];
        bytes.get_mut(..address.len())?.copy_from_slice(address);
        Some(Address {
            len: address.len() as u8,
            bytes,
        })
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Why [`Listener::send`] refused a message. Nothing was queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ListenerSendError {
    /// No connection with this address.
    #[error("no connection with this address")]
    UnknownAddress,
    /// The connection refused it.
    #[error(transparent)]
    Send(#[from] SendError),
}

/// A connection with its peer's address. Cache-line aligned and laid out in order: a
/// lookup compares the address, then the packet goes on into the connection's hot fields
/// (see `Connection`), all in consecutive lines.
#[derive(Debug)]
#[repr(C, align(64))]
struct Slot {
    address: Address,
    /// In `due` (visit in `poll_transmit`), in `eventful` (visit in `poll_event`).
    in_due: bool,
    in_eventful: bool,
    connection: Connection,
}

/// An event from one of a [`Listener`]'s connections.
#[derive(Debug)]
pub struct ListenerEvent<'a> {
    /// The peer's address.
    pub address: &'a [u8],
    /// What happened.
    pub event: ConnectionEvent,
    /// The connection, to answer at once (e.g. `send` a reply) without a second lookup by
    /// address; the listener visits it in the next `poll_transmit`.
    pub connection: &'a mut Connection,
}

/// An acceptor and its connections, for a driver serving many peers on one socket.
#[derive(Debug)]
pub struct Listener {
    acceptor: Acceptor,
    max_connections: usize,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// Slot indexes by the hash of their address: 4 bytes an entry (the address itself is
    /// compared in the slot, which a lookup visits anyway), so the table of thousands of
    /// peers stays in cache.
    by_address: HashTable<u32>,
    /// foldhash, randomly seeded (per process and per table): SipHash cost more than the rest
    /// of a datagram's lookup. Only peers that completed the cookie handshake from an address
    /// get an entry, so collisions cannot be aimed at the table by spoofing.
    hasher: foldhash::fast::RandomState,
    /// `(deadline, slot, generation)` entries; an entry is live when the slot still holds
    /// that generation armed at that deadline. Stale entries are skipped when they surface,
    /// which is cheaper than removing them.
    timers: TimerWheel,
    /// Slots whose timers just fired (kept to reuse its buffer).
    fired: Vec<usize>,
    /// Per slot, the generation of its occupant (telling it from earlier ones, whose timer
    /// entries are then stale) and the deadline of its live timer entry (`NOT_ARMED` for
    /// none). Kept apart from the slots so that skipping a stale entry reads this compact
    /// array instead of the slot's cold connection state.
    armed: Vec<(u32, u64)>,
    next_generation: u32,
    /// Slots `poll_transmit` must visit, in the order they became due; a slot leaves once it
    /// has nothing more to send, so no connection starves the others.
    due: VisitQueue,
    /// Slots that may have events.
    eventful: VisitQueue,
    /// Counters of connections already dropped, so totals survive them.
    retired: Counters,
    /// Latest time seen, in nanoseconds.
    now: u64,
}

/// A FIFO of slot indexes to visit. Every packet pushes and pops its connection, and the
/// queues drain at every `poll_transmit`/`poll_event` round, so this is a vector read from
/// a moving head and rewound once empty: cheaper than a ring's wrap-around arithmetic.
#[derive(Debug, Default)]
struct VisitQueue {
    items: Vec<u32>,
    head: usize,
}

impl VisitQueue {
    fn push_back(&mut self, index: usize) {
        self.items.push(index as u32);
    }

    fn front(&self) -> Option<usize> {
        self.items.get(self.head).map(|&i| i as usize)
    }

    fn pop_front(&mut self) {
        self.head += 1;
        if self.head >= self.items.len() {
            self.items.clear();
            self.head = 0;
        } else if self.head >= 1024 && self.head * 2 >= self.items.len() {
            // Never drained (a driver that stops polling half way): drop the visited half.
            self.items.drain(..self.head);
            self.head = 0;
        }
    }

    fn is_empty(&self) -> bool {
        self.head >= self.items.len()
    }
}

/// A datagram for [`Listener::receive`] or [`Listener::receive_in_place`].
enum Datagram<'a> {
    Shared(&'a [u8]),
    Mut(&'a mut [u8]),
}

/// The address of the live slot `index` (every index in `by_address` is one).
fn slot_address(slots: &[Option<Slot>], index: usize) -> &[u8] {
    slots[index]
        .as_ref()
        .expect("indexed slot is live")
        .address
        .as_slice()
}

/// True when a timer entry is still its slot's live one: the same occupant (generation), armed
/// at that deadline. Anything else is stale: re-armed since, or its connection gone.
fn is_live(armed: &[(u32, u64)], &(deadline, index, generation): &crate::timers::Entry) -> bool {
    armed[index as usize] == (generation, deadline)
}

/// `Listener::armed` deadline of a slot with no live timer entry.
const NOT_ARMED: u64 = NEVER;

impl Listener {
    /// A listener whose connections use `config`, keyed with `secret` (32 random bytes from
    /// the driver, new at each start). It accepts any number of connections until
    /// [`with_max_connections`](Self::with_max_connections) bounds it.
    pub fn new(config: ConnectionConfig, secret: [u8; 32]) -> Result<Self, ConnectionConfigError> {
        Ok(Listener {
            acceptor: Acceptor::new(config, secret)?,
            max_connections: usize::MAX,
            slots: Vec::new(),
            free: Vec::new(),
            by_address: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
            timers: TimerWheel::new(),
            fired: Vec::new(),
            armed: Vec::new(),
            next_generation: 0,
            due: VisitQueue::default(),
            eventful: VisitQueue::default(),
            retired: Counters::default(),
            now: 0,
        })
    }

    /// Bounds the connection table: datagrams from new addresses are refused with
    /// [`ListenerError::Full`] (no challenge is sent) while `max` connections are open.
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// Protects every connection accepted from now on with the keys `source` gives for it
    /// (see [`Acceptor::with_keys`]). Feed datagrams through
    /// [`receive_in_place`](Self::receive_in_place) to open them without a copy.
    pub fn with_keys(
        mut self,
        source: impl crate::protection::KeySource + 'static,
    ) -> Result<Self, crate::protection::ProtectError> {
        self.set_keys(Box::new(source))?;
        Ok(self)
    }

    /// Like [`with_keys`](Self::with_keys), on a listener in place: connections accepted
    /// from now on are protected.
    pub fn set_keys(
        &mut self,
        source: Box<dyn crate::protection::KeySource>,
    ) -> Result<(), crate::protection::ProtectError> {
        self.acceptor.set_keys(source)
    }

    /// Requires the key exchange of every connector, run by `responder` (see
    /// [`Acceptor::with_responder`]): connections are protected with the keys it derives.
    /// Feed datagrams through [`receive_in_place`](Self::receive_in_place).
    pub fn with_responder(
        mut self,
        responder: impl crate::key_exchange::Responder + 'static,
    ) -> Result<Self, crate::protection::ProtectError> {
        self.acceptor.set_responder(Box::new(responder))?;
        Ok(self)
    }

    /// Like [`with_responder`](Self::with_responder), on a listener in place.
    pub fn set_responder(
        &mut self,
        responder: Box<dyn crate::key_exchange::Responder>,
    ) -> Result<(), crate::protection::ProtectError> {
        self.acceptor.set_responder(responder)
    }

    /// The acceptor (for its config and replay-cache size).
    pub fn acceptor(&self) -> &Acceptor {
        &self.acceptor
    }

    /// Open connections (closing ones included until their last event is taken).
    pub fn len(&self) -> usize {
        self.by_address.len()
    }

    /// True when there is no connection.
    pub fn is_empty(&self) -> bool {
        self.by_address.is_empty()
    }

    /// True when [`poll_event`](Self::poll_event) may have something: a connection is
    /// waiting to be visited for its events. A driver can skip the call when false.
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.eventful.is_empty()
    }

    /// Takes in one datagram from `from`. `Ok(Some(len))`: send `reply[..len]` back to `from`
    /// now (a challenge; 33 bytes of `reply` suffice). On error nothing changed.
    pub fn receive(
        &mut self,
        now: Duration,
        from: &[u8],
        datagram: &[u8],
        reply: &mut [u8],
    ) -> Result<Option<usize>, ListenerError> {
        self.receive_from(now, from, Datagram::Shared(datagram), reply)
    }

    /// Like [`receive`](Self::receive); a protected connection decrypts `datagram` in place
    /// ([`Connection::receive_in_place`]) rather than in a copy.
    pub fn receive_in_place(
        &mut self,
        now: Duration,
        from: &[u8],
        datagram: &mut [u8],
        reply: &mut [u8],
    ) -> Result<Option<usize>, ListenerError> {
        self.receive_from(now, from, Datagram::Mut(datagram), reply)
    }

    fn receive_from(
        &mut self,
        now: Duration,
        from: &[u8],
        datagram: Datagram<'_>,
        reply: &mut [u8],
    ) -> Result<Option<usize>, ListenerError> {
        self.now = self.now.max(nanos(now));
        let bytes: &[u8] = match &datagram {
            Datagram::Shared(datagram) => datagram,
            Datagram::Mut(datagram) => datagram,
        };
        if is_channel_request(bytes) {
            // A listener is on raw UDP, where the cookie is what stops spoofing: it refuses a
            // channel request from any address, with a connection or not, and answers nothing
            // (docs/wire.md, "The channel handshake"). A malformed one says what is wrong.
            ControlPacket::parse(bytes).map_err(HandshakeError::Control)?;
            return Err(HandshakeError::ChannelRequest.into());
        }
        if let Some(index) = self.find(from) {
            let slot = self.slots[index].as_mut().expect("mapped slot is live");
            let taken = match datagram {
                Datagram::Shared(datagram) => slot.connection.receive(now, datagram),
                Datagram::Mut(datagram) => slot.connection.receive_in_place(now, datagram),
            };
            if let Err(e) = taken {
                // A refused datagram changes nothing, unless it was the forgery that used
                // up the key's integrity limit: the connection then closes and must send.
                if slot.connection.state() != ConnectionState::Connected {
                    self.mark(index);
                }
                return Err(e.into());
            }
            // Acks can move the connection's next deadline (its mode, its loss timer) and a
            // control packet can make a reply due: visit it in the next `poll_transmit`.
            self.mark(index);
            return Ok(None);
        }
        let address = Address::new(from).ok_or(ListenerError::AddressTooLong(from.len()))?;
        if self.by_address.len() >= self.max_connections {
            return Err(ListenerError::Full(self.by_address.len()));
        }
        let datagram = match datagram {
            Datagram::Shared(datagram) => datagram,
            Datagram::Mut(datagram) => &*datagram,
        };
        match self.acceptor.receive(now, from, datagram, reply)? {
            Accept::Reply { len } => Ok(Some(len)),
            Accept::Connection(connection) => {
                self.insert(address, *connection);
                Ok(None)
            }
        }
    }

    /// The slot of the connection with `address`.
    fn find(&self, address: &[u8]) -> Option<usize> {
        let slots = &self.slots;
        self.by_address
            .find(self.hasher.hash_one(address), |&i| {
                slot_address(slots, i as usize) == address
            })
            .map(|&i| i as usize)
    }

    fn insert(&mut self, address: Address, connection: Connection) {
        // Wrapping is harmless: a stale entry would need the same slot and a generation
        // 2^32 connections old.
        self.next_generation = self.next_generation.wrapping_add(1);
        let slot = Slot {
            address,
            connection,
            in_due: false,
            in_eventful: false,
        };
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index] = Some(slot);
                index
            }
            None => {
                self.slots.push(Some(slot));
                self.armed.push((0, NOT_ARMED));
                self.slots.len() - 1
            }
        };
        self.armed[index] = (self.next_generation, NOT_ARMED);
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.by_address
            .insert_unique(hasher.hash_one(address.as_slice()), index as u32, |&i| {
                hasher.hash_one(slot_address(slots, i as usize))
            });
        self.mark(index);
    }

    /// Queues `index` for a visit by `poll_transmit` and `poll_event`.
    fn mark(&mut self, index: usize) {
        self.queue_due(index);
        let slot = self.slots[index].as_mut().expect("mark a live slot");
        if !slot.in_eventful {
            slot.in_eventful = true;
            self.eventful.push_back(index);
        }
    }

    /// Queues `index` for a visit by `poll_transmit` only.
    fn queue_due(&mut self, index: usize) {
        let slot = self.slots[index].as_mut().expect("queue a live slot");
        if !slot.in_due {
            slot.in_due = true;
            self.due.push_back(index);
        }
    }

    /// Moves every connection whose timer expired by `now` into the due queue.
    fn expire_timers(&mut self, now: u64) {
        let (armed, fired) = (&mut self.armed, &mut self.fired);
        self.timers.expire(now, |entry| {
            if is_live(armed, &entry) {
                let index = entry.1 as usize;
                armed[index].1 = NOT_ARMED;
                fired.push(index);
            }
        });
        // Due only: whatever events the timer's work raises, `settle` queues the connection
        // for `poll_event` after `poll_transmit` has run it.
        while let Some(index) = self.fired.pop() {
            self.queue_due(index);
        }
    }

    /// The next datagram due to any peer: its address and length in `buf`. Call until `None`.
    pub fn poll_transmit(
        &mut self,
        now: Duration,
        buf: &mut [u8],
    ) -> Result<Option<(&[u8], usize)>, TransmitError> {
        self.now = self.now.max(nanos(now));
        self.expire_timers(self.now);
        while let Some(index) = self.due.front() {
            let slot = self.slots[index].as_mut().expect("due slot is live");
            let sent = slot.connection.poll_transmit(now, buf)?;
            // Nothing more before its next deadline (the usual case once its one packet per
            // interval is out): leave the due queue now rather than in a second call that
            // would only find nothing to send.
            let deadline = slot.connection.poll_timeout_nanos();
            if sent.is_none() || deadline > self.now {
                self.settle(index, deadline);
            }
            if let Some(len) = sent {
                let slot = self.slots[index].as_ref().expect("due slot is live");
                return Ok(Some((slot.address.as_slice(), len)));
            }
        }
        Ok(None)
    }

    /// Takes the connection at the front of the due queue out of it: re-arms its timer at
    /// `deadline` (its `poll_timeout`) and queues it for `poll_event` if it has events (or is
    /// closed, so `poll_event` can drop it).
    fn settle(&mut self, index: usize, deadline: u64) {
        self.due.pop_front();
        let slot = self.slots[index].as_mut().expect("due slot is live");
        slot.in_due = false;
        if deadline != NEVER {
            let (generation, armed) = self.armed[index];
            if armed != deadline {
                self.armed[index].1 = deadline;
                self.timers.arm((deadline, index as u32, generation));
            }
        }
        let visit =
            slot.connection.has_events() || slot.connection.state() == ConnectionState::Closed;
        if visit && !slot.in_eventful {
            slot.in_eventful = true;
            self.eventful.push_back(index);
        }
    }

    /// The next event from any connection, with the peer's address and the connection
    /// itself. A connection whose [`ConnectionEvent::Disconnected`] has been taken, and that
    /// has nothing left to send, is dropped.
    pub fn poll_event(&mut self) -> Option<ListenerEvent<'_>> {
        while let Some(index) = self.eventful.front() {
            let slot = self.slots[index].as_mut().expect("eventful slot is live");
            if let Some(event) = slot.connection.poll_event() {
                // Whatever the application does with the connection (answer, close) is sent
                // by the next `poll_transmit`.
                if !slot.in_due {
                    slot.in_due = true;
                    self.due.push_back(index);
                }
                let Slot {
                    address,
                    connection,
                    ..
                } = self.slots[index].as_mut().expect("eventful slot is live");
                return Some(ListenerEvent {
                    address: address.as_slice(),
                    event,
                    connection,
                });
            }
            self.eventful.pop_front();
            slot.in_eventful = false;
            if slot.connection.state() == ConnectionState::Closed && !slot.in_due {
                self.remove(index);
            }
        }
        None
    }

    fn remove(&mut self, index: usize) {
        let slot = self.slots[index].take().expect("remove a live slot");
        self.armed[index].1 = NOT_ARMED;
        let hash = self.hasher.hash_one(slot.address.as_slice());
        self.by_address
            .find_entry(hash, |&i| i as usize == index)
            .expect("every live slot is in the address table")
            .remove();
        self.retired += slot.connection.stats().counters;
        self.free.push(index);
    }

    /// Queues a message for the peer at `to`.
    pub fn send(&mut self, to: &[u8], channel: u8, bytes: &[u8]) -> Result<(), ListenerSendError> {
        let index = self.find(to).ok_or(ListenerSendError::UnknownAddress)?;
        let slot = self.slots[index].as_mut().expect("mapped slot is live");
        Ok(slot.connection.send(channel, bytes)?)
    }

    /// Closes the connection with the peer at `address` (see [`Connection::close`]); its
    /// disconnect packets come out of `poll_transmit`. False if there is none.
    pub fn close(&mut self, address: &[u8]) -> bool {
        let Some(index) = self.find(address) else {
            return false;
        };
        self.slots[index]
            .as_mut()
            .expect("mapped slot is live")
            .connection
            .close();
        self.mark(index);
        true
    }

    /// Closes every connection, as a server does when it shuts down: keep driving
    /// `poll_transmit` until [`is_empty`](Self::is_empty) (after draining `poll_event`) so
    /// the disconnect packets go out.
    pub fn close_all(&mut self) {
        for index in 0..self.slots.len() {
            if let Some(slot) = &mut self.slots[index] {
                slot.connection.close();
                self.mark(index);
            }
        }
    }

    /// When to call back at the latest: now if a connection is waiting to be visited, else
    /// the earliest connection deadline, rounded up to the timer tick (about a millisecond:
    /// deadlines are honoured within one tick, never early).
    pub fn poll_timeout(&mut self) -> Option<Duration> {
        if !self.due.is_empty() || !self.eventful.is_empty() {
            return Some(duration(self.now));
        }
        let armed = &self.armed;
        self.timers
            .next_deadline(|entry| is_live(armed, entry))
            .map(duration)
    }

    /// The connection with the peer at `address`.
    pub fn connection(&self, address: &[u8]) -> Option<&Connection> {
        let index = self.find(address)?;
        self.slots[index].as_ref().map(|s| &s.connection)
    }

    /// The connection with the peer at `address`, mutably (to close it, for instance). It is
    /// visited by the next `poll_transmit` and `poll_event`, whatever was done to it.
    pub fn connection_mut(&mut self, address: &[u8]) -> Option<&mut Connection> {
        let index = self.find(address)?;
        self.mark(index);
        self.slots[index].as_mut().map(|s| &mut s.connection)
    }

    /// Every connection with its peer's address, in no particular order.
    pub fn connections(&self) -> impl Iterator<Item = (&[u8], &Connection)> {
        self.slots
            .iter()
            .flatten()
            .map(|s| (s.address.as_slice(), &s.connection))
    }

    /// Counters summed over every connection this listener has had, dropped ones included.
    pub fn counters(&self) -> Counters {
        let mut total = self.retired;
        for (_, connection) in self.connections() {
            total += connection.stats().counters;
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::VisitQueue;

    #[test]
    fn visit_queue_is_first_in_first_out_and_rewinds_when_drained() {
        let mut queue = VisitQueue::default();
        assert!(queue.is_empty());
        for index in [3, 1, 2] {
            queue.push_back(index);
        }
        let mut seen = Vec::new();
        while let Some(index) = queue.front() {
            seen.push(index);
            queue.pop_front();
        }
        assert_eq!(seen, [3, 1, 2]);
        assert!(queue.is_empty());
        assert_eq!((queue.items.len(), queue.head), (0, 0), "drained: rewound");
    }

    #[test]
    fn a_visit_queue_that_never_drains_stays_bounded() {
        let mut queue = VisitQueue::default();
        let mut next_out = 0;
        for index in 0..100_000 {
            queue.push_back(index);
            if index % 2 == 1 || index > 50_000 {
                assert_eq!(queue.front(), Some(next_out));
                queue.pop_front();
                next_out += 1;
            }
        }
        assert!(!queue.is_empty());
        assert!(queue.items.len() < 4 * 25_000, "{} held", queue.items.len());
        while let Some(index) = queue.front() {
            assert_eq!(index, next_out);
            queue.pop_front();
            next_out += 1;
        }
        assert_eq!(next_out, 100_000);
    }
}
