//! Reliable messages that outlive a link's connections: what a member sends reliably to a peer
//! is delivered to it exactly once (and in order on an ordered channel) even when the link
//! dies and a new core connection replaces it, or is handed back as undelivered exactly once.
//!
//! A core connection delivers reliable messages exactly once *within* itself; a link that is
//! lost (a pulled cable past the idle timeout, ICE failure, the peer starting over) starts a
//! new connection, and what the old one had not delivered would be gone. So the member keeps,
//! per peer and reliable channel:
//! - **sending**: a copy of every message it accepted until the peer is known to have it
//!   (`retained`), each numbered (`index`, a 32-bit counter per channel); a message sent while
//!   no connection is up is kept the same way. On every new connection the copies not yet
//!   confirmed go out again, in order, before anything new;
//! - **receiving**: the next index it expects (ordered) or which indices it has delivered
//!   (unordered, a 1024-wide window), so a copy it already delivered is dropped.
//!
//! Each reliable message travels as `varint(index) ‖ payload` (LEB128, 1–5 bytes). On each new
//! connection both sides first send, on the member's own control channel (the last one, after
//! the application's), a `hello`: the sender's *life* for this peer (random, new when it starts
//! counting afresh), the peer life whose messages it counts (its receive state), whether any
//! of its copies went out before (`fresh`), and per reliable channel the index it (re)starts
//! from. A receiver holds reliable messages of a new connection until it takes a hello: one of
//! the life it counts with (it keeps counting), or a fresh one (it starts over at the bases).
//! A hello that is neither is ignored: the sender, told by our own hello that we do not count
//! its life, hands back the copies that went out before (they may have reached a life of ours
//! that is gone) and sends a fresh hello under a new life. A sender whose copies went out before
//! sends nothing reliable on a new connection until the peer's hello says which case it is.
//!
//! A sender drops a copy only when the core says the peer's connection took the message and
//! every one before it (`Connection::reliable_ids`), and only after the `hello-ack` of that
//! connection: before it, the peer may still have been holding the message, to lose it if the
//! link died. Until that ack it queues at most [`HOLD_LIMIT`] bytes, which is what a receiver
//! holds at most: anything beyond is a broken peer, and the member fails the connection before
//! its core acknowledges the packet (`docs/wire.md`, "Room members", has the bytes and rules).

use std::collections::VecDeque;

use ackwire_core::sequence::distance;
use ackwire_core::{Connection, SendError};
use ackwire_signalling::ChannelKind;
use serde::Serialize;

/// Reliable messages a member keeps per peer and channel before it refuses more
/// ([`SendError::WindowFull`]): the core's window, so every copy fits a new connection.
pub(crate) const MAX_RETAINED: usize = ackwire_core::frame::RELIABLE_WINDOW as usize;

/// Longest index prefix (a 32-bit LEB128).
pub(crate) const MAX_PREFIX: usize = 5;

/// Bytes of reliable messages (index prefixes included) a sender queues on a connection before
/// its hello-ack, and so the most a receiver holds before the connection's hello: a wire
/// constant, both sides must agree. At least one largest message (256 KiB) fits.
pub const HOLD_LIMIT: usize = 1 << 20;

/// Bytes of copies (index prefixes included) kept per peer by default before a reliable send to
/// it is refused ([`SendError::WindowFull`]); the member's `peer_budget` changes it.
pub const DEFAULT_PEER_BUDGET: usize = 4 << 20;

/// Spare buffers kept for the next reliable messages (so a steady stream allocates nothing).
const MAX_SPARE: usize = 64;

const HELLO: u8 = 1;
const HELLO_ACK: u8 = 2;
/// `hello` flag: none of the sender's copies went out on an earlier connection.
const FRESH: u8 = 1;
/// `hello` flag: the sender may once have counted a life of the receiver's and forgotten it
/// without keeping the count (more forgotten peers than it keeps), so a `counting` that is
/// not the receiver's life does not prove its copies were never delivered.
const FORGETFUL: u8 = 2;
/// `hello`'s fixed part: type, id, life, counting, flags, n.
const HELLO_FIXED: usize = 1 + 8 + 8 + 8 + 1 + 1;

/// Why a reliable message from the peer was not delivered. Each one fails the link's
/// connection before its core acknowledges the packet, so an honest sender's copy comes again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeliveryError {
    /// It does not start with a valid (shortest-form) index.
    #[error("reliable message without a valid index")]
    NoIndex,
    /// An index no honest peer sends now (beyond what it may have in flight).
    #[error("reliable message {index} is beyond the window (expected {expected})")]
    BeyondWindow {
        /// Its index.
        index: u32,
        /// The next index expected.
        expected: u32,
    },
    /// The member's control channel carried something it cannot read.
    #[error("malformed control message")]
    Control,
    /// More reliable bytes arrived before the connection's hello than a sender may queue
    /// before its hello-ack ([`HOLD_LIMIT`]).
    #[error("more than {HOLD_LIMIT} bytes before the hello")]
    TooManyHeld,
    /// Our own control message (hello, hello-ack) could not be queued: without it the peer
    /// holds our messages, or keeps its copies, forever, so the link must start over.
    #[error("the control channel refused a message: {0}")]
    ControlRefused(SendError),
}

/// Writes `value` as LEB128 into `out`.
fn put_varint(out: &mut Vec<u8>, mut value: u32) {
    loop {
        let byte = (value & 0x7F) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Reads a shortest-form LEB128 u32 from the start of `bytes`: the value and its length. An
/// overlong form (a last byte of `00` after the first, as in `80 00`) is refused, so every
/// index has exactly one encoding.
fn get_varint(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value = 0u32;
    for (i, &byte) in bytes.iter().enumerate().take(MAX_PREFIX) {
        let bits = u32::from(byte & 0x7F);
        if i == 4 && bits > 0x0F {
            return None;
        }
        value |= bits << (7 * i);
        if byte & 0x80 == 0 {
            if i > 0 && byte == 0 {
                return None;
            }
            return Some((value, i + 1));
        }
    }
    None
}

/// One message kept until the peer is known to have it.
#[derive(Debug)]
struct Retained {
    index: u32,
    /// `varint(index) ‖ payload`, as it goes to the core.
    framed: Vec<u8>,
    /// The ids the current connection gave it (`[first, end)`), once queued there.
    ids: Option<(u16, u16)>,
    /// Queued on some connection: the peer may have it (or had, in a life it forgot).
    exposed: bool,
}

#[derive(Debug, Default)]
struct SendLane {
    next: u32,
    retained: VecDeque<Retained>,
    /// How many copies at the front are queued on the current connection (they always form
    /// a prefix: copies go out in order).
    queued: usize,
}

/// What a member knows of the messages it received from one life of a peer.
#[derive(Debug, Clone)]
struct ReceiveLane {
    expected: u32,
    /// Unordered channels: bit `i % 1024` set when index `i` in `[expected, expected + 1024)`
    /// was delivered. Allocated on the first message that arrives early.
    seen: Option<Box<[u64; MAX_RETAINED / 64]>>,
}

impl ReceiveLane {
    fn bit(index: u32) -> (usize, u64) {
        let at = index as usize % MAX_RETAINED;
        (at / 64, 1 << (at % 64))
    }

    fn is_seen(&self, index: u32) -> bool {
        let (word, mask) = Self::bit(index);
        self.seen.as_ref().is_some_and(|s| s[word] & mask != 0)
    }

    /// Whether `index` is new (taking it in if so); an error, and no change, when no honest
    /// peer sends it now.
    fn admit(&mut self, index: u32, ordered: bool) -> Result<bool, DeliveryError> {
        self.check(index, ordered)?;
        let ahead = distance_u32(self.expected, index);
        if ahead < 0 {
            return Ok(false);
        }
        if ordered {
            self.expected = self.expected.wrapping_add(1);
            return Ok(true);
        }
        if self.is_seen(index) {
            return Ok(false);
        }
        let seen = self
            .seen
            .get_or_insert_with(|| Box::new([0; MAX_RETAINED / 64]));
        let (word, mask) = Self::bit(index);
        seen[word] |= mask;
        while self.is_seen(self.expected) {
            let (word, mask) = Self::bit(self.expected);
            if let Some(seen) = &mut self.seen {
                seen[word] &= !mask;
            }
            self.expected = self.expected.wrapping_add(1);
        }
        Ok(true)
    }

    /// Whether an honest peer may send `index` now.
    fn check(&self, index: u32, ordered: bool) -> Result<(), DeliveryError> {
        let ahead = distance_u32(self.expected, index);
        // Copies come again in order from an index the peer had not confirmed, so on an
        // ordered channel the next new one is always the one expected; on an unordered one a
        // sender has at most the window's worth outstanding.
        let limit = if ordered { 1 } else { MAX_RETAINED as i64 };
        if ahead >= limit {
            return Err(DeliveryError::BeyondWindow {
                index,
                expected: self.expected,
            });
        }
        Ok(())
    }

    fn restart_at(&mut self, base: u32) {
        self.expected = base;
        self.seen = None;
    }
}

/// Serial distance between two 32-bit indices (RFC 1982, as the core's 16-bit ones).
fn distance_u32(from: u32, to: u32) -> i64 {
    i64::from(to.wrapping_sub(from) as i32)
}

#[derive(Debug)]
struct Lane {
    channel: u8,
    ordered: bool,
    send: SendLane,
    receive: ReceiveLane,
}

/// What a member keeps of a peer it forgot, so that meeting the same program instance again
/// never delivers one of its messages twice ([`Delivery::receiving`]).
#[derive(Debug, Clone)]
pub(crate) struct Receiving {
    peer_life: u64,
    lanes: Vec<(u8, ReceiveLane)>,
}

// Defined with the budgets of reliable messages it names, and re-exported as
// `ackwire_room::member::Budget`, so that delivery need not reach up into the member.
/// Which budget refused a send ([`SendError::Full`](crate::member::SendError::Full)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Budget {
    /// The reliable messages kept for the peer on the channel, counted: at most 1,024 (the
    /// core's window, so every copy fits a new connection).
    Messages,
    /// The bytes of reliable messages kept for the peer, all channels
    /// ([`MemberConfig::peer_budget`](crate::member::MemberConfig::peer_budget)).
    Bytes,
    /// An unreliable channel's queue in the link (messages queued faster than packets leave);
    /// counted in messages.
    Queue,
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Budget::Messages => "the reliable messages kept",
            Budget::Bytes => "the bytes of reliable messages kept",
            Budget::Queue => "the unreliable queue",
        })
    }
}

/// A budget refused a reliable send: which, and how full it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Full {
    pub(crate) budget: Budget,
    pub(crate) used: usize,
    pub(crate) limit: usize,
}

/// What arrived on a reliable or control channel, for the member.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Arrived {
    /// Deliver these bytes to the application (the index prefix is gone).
    Deliver(Vec<u8>),
    /// Nothing to deliver (a copy already delivered, a held message, a control message).
    Nothing,
}

/// Which receiver our copies that went out on earlier connections may have reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exposure {
    /// None went out (or every one that did is confirmed).
    None,
    /// Only the peer's delivery with this id.
    To(u64),
    /// One whose id we never learned, or several.
    Unknown,
}

/// One peer's reliable delivery, across its link's connections.
#[derive(Debug)]
pub(crate) struct Delivery {
    /// This delivery's id, for the peer: random, the same for its whole life, so the peer can
    /// tell us from a delivery that replaced us when we forgot it.
    id: u64,
    /// Our life for this peer: what the peer counts our messages under; new each time we
    /// start counting afresh.
    life: u64,
    /// Where the copies that went out on earlier connections may be.
    exposure: Exposure,
    /// Copies went out on the current connection.
    sent_here: bool,
    /// The peer delivery's id, from its hello on the current connection.
    peer_here: Option<u64>,
    /// The application channels' count: the control channel's index.
    control: u8,
    /// The reliable channels, with their index.
    lanes: Vec<Lane>,
    /// The life of the peer's we count with (`None` before the first hello we took).
    peer_life: Option<u64>,
    /// The current connection's hello from the peer was taken in.
    hello_in: bool,
    /// The peer took in our hello of the current connection.
    hello_acked: bool,
    /// Copies went out on an earlier connection: send nothing reliable on this one until the
    /// peer's hello says whether it still counts our life.
    gated: bool,
    /// Reliable bytes queued on the current connection before its hello-ack.
    before_ack: usize,
    /// Reliable messages of the current connection that came before its hello, and their
    /// bytes.
    held: Vec<(u8, Vec<u8>)>,
    held_bytes: usize,
    /// Bytes of every copy kept, and the most allowed.
    kept: usize,
    budget: usize,
    /// This delivery may have forgotten a count it had of the peer (see [`FORGETFUL`]).
    forgetful: bool,
    /// Copies given up on (the peer forgot the life they went to), for the application.
    handed_back: Vec<(u8, Vec<u8>)>,
    spare: Vec<Vec<u8>>,
}

impl Delivery {
    /// Delivery for the application's `channels`; `id` is random (and the first life); at
    /// most `budget` bytes of copies are kept.
    pub(crate) fn new(id: u64, channels: &[ChannelKind], budget: usize) -> Delivery {
        let lanes = channels
            .iter()
            .enumerate()
            .filter(|(_, kind)| kind.is_reliable())
            .map(|(channel, &kind)| Lane {
                channel: channel as u8,
                ordered: kind == ChannelKind::ReliableOrdered,
                send: SendLane::default(),
                receive: ReceiveLane {
                    expected: 0,
                    seen: None,
                },
            })
            .collect();
        Delivery {
            id,
            life: nonzero(id),
            exposure: Exposure::None,
            sent_here: false,
            peer_here: None,
            control: channels.len() as u8,
            lanes,
            peer_life: None,
            hello_in: false,
            hello_acked: false,
            gated: false,
            before_ack: 0,
            held: Vec::new(),
            held_bytes: 0,
            kept: 0,
            budget,
            forgetful: false,
            handed_back: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// What we know of the peer's messages, to keep when we forget it.
    pub(crate) fn receiving(&self) -> Option<Receiving> {
        Some(Receiving {
            peer_life: self.peer_life?,
            lanes: self
                .lanes
                .iter()
                .map(|l| (l.channel, l.receive.clone()))
                .collect(),
        })
    }

    /// Marks a delivery made for a peer the member may once have counted and forgotten without
    /// keeping the count ([`FORGETFUL`]).
    pub(crate) fn set_forgetful(&mut self) {
        self.forgetful = true;
    }

    /// Picks up counting where a forgotten link to the same program instance left off.
    pub(crate) fn resume_receiving(&mut self, receiving: Receiving) {
        for lane in &mut self.lanes {
            if let Some((_, receive)) = receiving.lanes.iter().find(|(c, _)| *c == lane.channel) {
                lane.receive = receive.clone();
            }
        }
        self.peer_life = Some(receiving.peer_life);
    }

    /// The member's own channel: the one after the application's.
    pub(crate) fn control_channel(&self) -> u8 {
        self.control
    }

    fn lane(&mut self, channel: u8) -> Option<&mut Lane> {
        self.lanes.iter_mut().find(|l| l.channel == channel)
    }

    /// Whether `channel` is one of the application's reliable channels.
    pub(crate) fn is_reliable(&self, channel: u8) -> bool {
        self.lanes.iter().any(|l| l.channel == channel)
    }

    /// Whether a reliable message of `len` bytes on `channel` (one of ours) can be kept now:
    /// the channel's copies stay within the core's window, and the peer's bytes within the
    /// budget (one message always fits when nothing is kept).
    pub(crate) fn check(&self, channel: u8, len: usize) -> Result<(), Full> {
        let kept = self
            .lanes
            .iter()
            .find(|l| l.channel == channel)
            .map_or(0, |l| l.send.retained.len());
        if kept >= MAX_RETAINED {
            return Err(Full {
                budget: Budget::Messages,
                used: kept,
                limit: MAX_RETAINED,
            });
        }
        if self.kept > 0 && self.kept + len + MAX_PREFIX > self.budget {
            return Err(Full {
                budget: Budget::Bytes,
                used: self.kept,
                limit: self.budget,
            });
        }
        Ok(())
    }

    /// What [`check`](Self::check) lets through now on reliable `channel` (one of ours):
    /// `(messages, bytes)`, the bytes counting each message's index prefix.
    pub(crate) fn room_left(&self, channel: u8) -> (usize, usize) {
        let kept = self
            .lanes
            .iter()
            .find(|l| l.channel == channel)
            .map_or(0, |l| l.send.retained.len());
        let bytes = if self.kept == 0 {
            // One message always fits when none is kept, however small the budget.
            self.budget.max(ackwire_core::frame::MAX_MESSAGE_SIZE)
        } else {
            self.budget.saturating_sub(self.kept)
        };
        (MAX_RETAINED.saturating_sub(kept), bytes)
    }

    /// Keeps `payload` for reliable `channel` (checked with [`check`](Self::check)) and, on a
    /// connection, queues what may go out now.
    pub(crate) fn send(
        &mut self,
        core: Option<&mut Connection>,
        channel: u8,
        payload: &[u8],
    ) -> Result<(), Full> {
        self.check(channel, payload.len())?;
        let Some(lane) = self.lanes.iter_mut().find(|l| l.channel == channel) else {
            return Ok(());
        };
        let mut framed = self.spare.pop().unwrap_or_default();
        framed.clear();
        put_varint(&mut framed, lane.send.next);
        framed.extend_from_slice(payload);
        self.kept += framed.len();
        lane.send.retained.push_back(Retained {
            index: lane.send.next,
            framed,
            ids: None,
            exposed: false,
        });
        lane.send.next = lane.send.next.wrapping_add(1);
        if let Some(core) = core {
            self.flush(core);
        }
        Ok(())
    }

    /// A new connection is up: say hello, then send every copy the peer has not confirmed,
    /// in order (or wait for the peer's hello first when copies went out before). On error
    /// the connection cannot carry reliable messages: drop it.
    pub(crate) fn connected(&mut self, core: &mut Connection) -> Result<(), DeliveryError> {
        self.hello_in = false;
        self.hello_acked = false;
        self.before_ack = 0;
        self.held.clear();
        self.held_bytes = 0;
        for lane in &mut self.lanes {
            lane.send.queued = 0;
            for retained in &mut lane.send.retained {
                retained.ids = None;
            }
        }
        if self.sent_here {
            self.exposure = match (self.exposure, self.peer_here) {
                (Exposure::None, Some(peer)) => Exposure::To(peer),
                (Exposure::To(seen), Some(peer)) if seen == peer => Exposure::To(seen),
                _ => Exposure::Unknown,
            };
        }
        (self.sent_here, self.peer_here) = (false, None);
        if self.is_fresh() {
            self.exposure = Exposure::None;
        }
        self.gated = !self.is_fresh();
        self.say_hello(core)
    }

    /// Whether no copy we keep ever went out.
    fn is_fresh(&self) -> bool {
        self.lanes
            .iter()
            .all(|l| l.send.retained.front().is_none_or(|r| !r.exposed))
    }

    fn say_hello(&mut self, core: &mut Connection) -> Result<(), DeliveryError> {
        let hello = self.hello();
        // It rides the link's next packet rather than pulling one early (`send_deferred`):
        // the interval's packet is better left to ack the peer's first packets at once, which
        // is when the link counts as up.
        core.send_deferred(self.control, &hello)
            .map_err(DeliveryError::ControlRefused)?;
        self.flush(core);
        Ok(())
    }

    /// This connection's hello: our life, the peer's life we count, whether none of our
    /// copies went out before, and where each reliable channel (re)starts: the oldest copy the
    /// peer has not confirmed, or the next new message.
    fn hello(&self) -> Vec<u8> {
        let mut hello = Vec::with_capacity(HELLO_FIXED + 5 * self.lanes.len());
        hello.push(HELLO);
        hello.extend_from_slice(&self.id.to_le_bytes());
        hello.extend_from_slice(&self.life.to_le_bytes());
        hello.extend_from_slice(&self.peer_life.unwrap_or(0).to_le_bytes());
        let fresh = if self.is_fresh() { FRESH } else { 0 };
        let forgetful = if self.forgetful { FORGETFUL } else { 0 };
        hello.push(fresh | forgetful);
        hello.push(self.lanes.len() as u8);
        for lane in &self.lanes {
            let base = lane
                .send
                .retained
                .front()
                .map_or(lane.send.next, |r| r.index);
            hello.push(lane.channel);
            hello.extend_from_slice(&base.to_le_bytes());
        }
        hello
    }

    /// Queues copies that did not go out on this connection yet, in order, as far as the
    /// window (and, before the hello-ack, [`HOLD_LIMIT`]) allows; drops the copies the peer
    /// confirmed.
    pub(crate) fn flush(&mut self, core: &mut Connection) {
        let Self {
            lanes,
            gated,
            hello_acked,
            before_ack,
            kept,
            spare,
            sent_here,
            ..
        } = self;
        if *gated {
            return;
        }
        for lane in lanes {
            for retained in lane.send.retained.range_mut(lane.send.queued..) {
                let len = retained.framed.len();
                if !*hello_acked && *before_ack > 0 && *before_ack + len > HOLD_LIMIT {
                    break;
                }
                let Some((_, first)) = core.reliable_ids(lane.channel) else {
                    break;
                };
                if core.send(lane.channel, &retained.framed).is_err() {
                    break;
                }
                let end = core
                    .reliable_ids(lane.channel)
                    .map_or(first, |(_, next)| next);
                retained.ids = Some((first, end));
                retained.exposed = true;
                *sent_here = true;
                lane.send.queued += 1;
                if !*hello_acked {
                    *before_ack += len;
                }
            }
            if !*hello_acked {
                continue;
            }
            let Some((oldest, _)) = core.reliable_ids(lane.channel) else {
                continue;
            };
            while let Some(front) = lane.send.retained.front() {
                match front.ids {
                    Some((_, end)) if distance(end, oldest) >= 0 => {
                        if let Some(done) = lane.send.retained.pop_front() {
                            lane.send.queued -= 1;
                            *kept -= done.framed.len();
                            if spare.len() < MAX_SPARE {
                                spare.push(done.framed);
                            }
                        }
                    }
                    _ => break,
                }
            }
        }
    }

    /// A message arrived on a reliable `channel` or the control channel of the current
    /// connection. On error nothing was delivered and nothing changed: the caller fails the
    /// connection before its core acknowledges the packet.
    pub(crate) fn arrived(
        &mut self,
        core: &mut Connection,
        channel: u8,
        bytes: Vec<u8>,
        new_life: u64,
        deliver: &mut dyn FnMut(u8, Vec<u8>),
    ) -> Result<(), DeliveryError> {
        if channel == self.control {
            return self.control(core, &bytes, new_life, deliver);
        }
        if !self.hello_in {
            get_varint(&bytes).ok_or(DeliveryError::NoIndex)?;
            if self.held_bytes + bytes.len() > HOLD_LIMIT {
                return Err(DeliveryError::TooManyHeld);
            }
            self.held_bytes += bytes.len();
            self.held.push((channel, bytes));
            return Ok(());
        }
        match self.accept(channel, bytes)? {
            Arrived::Deliver(bytes) => deliver(channel, bytes),
            Arrived::Nothing => {}
        }
        Ok(())
    }

    /// Strips the index and drops a copy already delivered.
    fn accept(&mut self, channel: u8, mut bytes: Vec<u8>) -> Result<Arrived, DeliveryError> {
        let (index, len) = get_varint(&bytes).ok_or(DeliveryError::NoIndex)?;
        let Some(lane) = self.lane(channel) else {
            return Ok(Arrived::Deliver(bytes));
        };
        if !lane.receive.admit(index, lane.ordered)? {
            return Ok(Arrived::Nothing);
        }
        bytes.drain(..len);
        Ok(Arrived::Deliver(bytes))
    }

    fn control(
        &mut self,
        core: &mut Connection,
        bytes: &[u8],
        new_life: u64,
        deliver: &mut dyn FnMut(u8, Vec<u8>),
    ) -> Result<(), DeliveryError> {
        match bytes.first() {
            Some(&HELLO) => {
                let hello = Hello::parse(bytes, &self.lanes).ok_or(DeliveryError::Control)?;
                self.take_hello(core, &hello, deliver)?;
                self.answer_hello(core, &hello, new_life)
            }
            Some(&HELLO_ACK) => {
                let life = bytes
                    .get(1..)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_le_bytes)
                    .ok_or(DeliveryError::Control)?;
                if life == self.life && !self.hello_acked {
                    self.hello_acked = true;
                    self.flush(core);
                }
                Ok(())
            }
            // A later member's control message: ignored.
            Some(_) => Ok(()),
            None => Err(DeliveryError::Control),
        }
    }

    /// The receiving half of a hello: count on, start over, or wait for a fresh one.
    fn take_hello(
        &mut self,
        core: &mut Connection,
        hello: &Hello,
        deliver: &mut dyn FnMut(u8, Vec<u8>),
    ) -> Result<(), DeliveryError> {
        if self.hello_in {
            return Ok(());
        }
        let restart = self.peer_life != Some(hello.life);
        if restart && !hello.fresh {
            // Its copies went out before, maybe to a life of ours that is gone: it hands them
            // back and says a fresh hello once ours tells it we do not count its life.
            return Ok(());
        }
        // Every held message must be one an honest sender sends: otherwise nothing changes
        // and the connection fails, before anything is acknowledged.
        let mut receive: Vec<ReceiveLane> = self.lanes.iter().map(|l| l.receive.clone()).collect();
        if restart {
            for (lane, receive) in self.lanes.iter().zip(&mut receive) {
                receive.restart_at(hello.base(lane.channel).unwrap_or(0));
            }
        }
        let mut check = receive.clone();
        for (channel, bytes) in &self.held {
            let (index, _) = get_varint(bytes).ok_or(DeliveryError::NoIndex)?;
            if let Some(at) = self.lanes.iter().position(|l| l.channel == *channel) {
                check[at].admit(index, self.lanes[at].ordered)?;
            }
        }
        let mut ack = [0u8; 9];
        ack[0] = HELLO_ACK;
        ack[1..].copy_from_slice(&hello.life.to_le_bytes());
        core.send_deferred(self.control, &ack)
            .map_err(DeliveryError::ControlRefused)?;
        for (lane, receive) in self.lanes.iter_mut().zip(receive) {
            lane.receive = receive;
        }
        self.peer_life = Some(hello.life);
        self.hello_in = true;
        self.held_bytes = 0;
        for (channel, bytes) in std::mem::take(&mut self.held) {
            if let Ok(Arrived::Deliver(bytes)) = self.accept(channel, bytes) {
                deliver(channel, bytes);
            }
        }
        Ok(())
    }

    /// The sending half: while gated, the peer's hello says whether it still counts our life
    /// (resume) or not (hand back what went out before, start a fresh life, say hello again).
    fn answer_hello(
        &mut self,
        core: &mut Connection,
        hello: &Hello,
        new_life: u64,
    ) -> Result<(), DeliveryError> {
        self.peer_here = Some(hello.id);
        if !self.gated {
            return Ok(());
        }
        self.gated = false;
        if hello.counting == self.life {
            self.flush(core);
            return Ok(());
        }
        // It does not count our life, so no delivery of that peer ever took our hello of this
        // life (one it forgot would have left it its count), unless it says it may have
        // forgotten one without keeping the count: then only the very delivery our copies
        // went to is known to have had none of them.
        let hand_back = hello.forgetful && self.exposure != Exposure::To(hello.id);
        for lane in &mut self.lanes {
            if !hand_back {
                // No receiver delivered any of them: they go again, renumbered.
                for retained in &mut lane.send.retained {
                    retained.exposed = false;
                }
                continue;
            }
            while lane.send.retained.front().is_some_and(|r| r.exposed) {
                let Some(mut retained) = lane.send.retained.pop_front() else {
                    break;
                };
                self.kept -= retained.framed.len();
                let len = get_varint(&retained.framed).map_or(0, |(_, len)| len);
                retained.framed.drain(..len);
                self.handed_back.push((lane.channel, retained.framed));
            }
        }
        self.life = nonzero(new_life);
        self.exposure = Exposure::None;
        self.hello_acked = false;
        self.say_hello(core)
    }

    /// Copies given up on since the last call, in the order sent (per channel).
    pub(crate) fn take_handed_back(&mut self) -> Vec<(u8, Vec<u8>)> {
        std::mem::take(&mut self.handed_back)
    }

    /// Whether the peer took in our hello of the current connection.
    pub(crate) fn hello_acked(&self) -> bool {
        self.hello_acked
    }

    /// The peer is gone for good: every copy it never confirmed, as `(channel, payload)`.
    pub(crate) fn unconfirmed(&mut self) -> Vec<(u8, Vec<u8>)> {
        let mut out = std::mem::take(&mut self.handed_back);
        for lane in &mut self.lanes {
            lane.send.queued = 0;
            for mut retained in lane.send.retained.drain(..) {
                let len = get_varint(&retained.framed).map_or(0, |(_, len)| len);
                retained.framed.drain(..len);
                out.push((lane.channel, retained.framed));
            }
        }
        self.kept = 0;
        out
    }

    /// Copies kept for the peer, all channels.
    pub(crate) fn retained(&self) -> usize {
        self.lanes.iter().map(|l| l.send.retained.len()).sum()
    }

    /// Bytes of the copies kept for the peer.
    pub(crate) fn kept_bytes(&self) -> usize {
        self.kept
    }
}

/// Lives are never 0: a hello's `counting` of 0 means "none".
fn nonzero(life: u64) -> u64 {
    life.max(1)
}

/// A parsed `hello`: `1 ‖ id (u64 LE) ‖ life (u64 LE) ‖ counting (u64 LE) ‖ flags (u8:
/// [`FRESH`], [`FORGETFUL`], no other bit) ‖ n (u8) ‖ n × (channel (u8) ‖ base (u32 LE))`,
/// whose channels are exactly the receiver's reliable ones, in order.
#[derive(Debug)]
struct Hello {
    id: u64,
    life: u64,
    counting: u64,
    fresh: bool,
    forgetful: bool,
    bases: Vec<(u8, u32)>,
}

impl Hello {
    fn parse(bytes: &[u8], lanes: &[Lane]) -> Option<Hello> {
        let word = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
        let (id, life, counting) = (word(1)?, word(9)?, word(17)?);
        let flags = *bytes.get(25)?;
        if flags & !(FRESH | FORGETFUL) != 0 {
            return None;
        }
        let (fresh, forgetful) = (flags & FRESH != 0, flags & FORGETFUL != 0);
        let count = usize::from(*bytes.get(26)?);
        let entries = bytes.get(HELLO_FIXED..)?;
        if life == 0 || count != lanes.len() || entries.len() != count * 5 {
            return None;
        }
        let bases: Vec<(u8, u32)> = entries
            .chunks_exact(5)
            .map(|entry| {
                let base = u32::from_le_bytes([entry[1], entry[2], entry[3], entry[4]]);
                (entry[0], base)
            })
            .collect();
        if bases.iter().zip(lanes).any(|((c, _), l)| *c != l.channel) {
            return None;
        }
        Some(Hello {
            id,
            life,
            counting,
            fresh,
            forgetful,
            bases,
        })
    }

    fn base(&self, channel: u8) -> Option<u32> {
        self.bases
            .iter()
            .find(|(c, _)| *c == channel)
            .map(|(_, b)| *b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ackwire_core::{Accept, Acceptor, ConnectionConfig, ConnectionEvent};
    use std::time::Duration;

    /// One app channel (reliable-ordered, 0) and the member's (1); a lost hello is resent
    /// only after the next packet, which then carries the app's messages alone.
    fn config() -> ConnectionConfig {
        ConnectionConfig::default()
            .with_channels(vec![
                ackwire_core::ChannelKind::ReliableOrdered,
                ackwire_core::ChannelKind::ReliableOrdered,
            ])
            .with_min_resend_interval(Duration::from_millis(300))
    }

    /// A connected pair (connector, acceptor), datagrams handed straight across.
    fn pair(now: Duration) -> (Connection, Connection) {
        pair_on(config(), now)
    }

    fn pair_on(config: ConnectionConfig, now: Duration) -> (Connection, Connection) {
        let mut acceptor = Acceptor::new(config.clone(), [3; 32]).unwrap();
        let mut client = Connection::connect(config, now).unwrap();
        let (mut buf, mut reply) = ([0u8; 1200], [0u8; 128]);
        loop {
            let len = client.poll_transmit(now, &mut buf).unwrap().unwrap();
            match acceptor
                .receive(now, b"peer", &buf[..len], &mut reply)
                .unwrap()
            {
                Accept::Reply { len } => client.receive(now, &reply[..len]).unwrap(),
                Accept::Connection(server) => {
                    let mut server = *server;
                    // The connector hears it is accepted from the acceptor's first packet.
                    while let Some(len) = server.poll_transmit(now, &mut buf).unwrap() {
                        client.receive(now, &buf[..len]).unwrap();
                    }
                    while client.poll_event().is_some() {}
                    while server.poll_event().is_some() {}
                    return (client, server);
                }
                _ => {}
            }
        }
    }

    /// Moves `from`'s due packets to `to` (those `keep` lets through), and hands what `to`'s
    /// core delivers to its delivery; the payloads delivered to the app are appended to `got`.
    fn carry(
        now: Duration,
        from: &mut Connection,
        to: &mut Connection,
        delivery: &mut Delivery,
        got: &mut Vec<Vec<u8>>,
        mut keep: impl FnMut(&[u8]) -> bool,
    ) {
        let mut buf = [0u8; 1200];
        while let Some(len) = from.poll_transmit(now, &mut buf).unwrap() {
            if keep(&buf[..len]) {
                to.receive(now, &buf[..len]).unwrap();
            }
        }
        while let Some(event) = to.poll_event() {
            if let ConnectionEvent::Message { channel, bytes } = event {
                delivery
                    .arrived(to, channel, bytes, 77, &mut |_, b| got.push(b))
                    .unwrap();
            }
        }
        delivery.flush(to);
    }

    /// A fresh hello of a peer whose id and life are 9, counting nothing, starting each of
    /// `channels` at index 0.
    fn fresh_hello(channels: &[u8]) -> Vec<u8> {
        let mut hello = vec![HELLO];
        hello.extend_from_slice(&9u64.to_le_bytes());
        hello.extend_from_slice(&9u64.to_le_bytes());
        hello.extend_from_slice(&0u64.to_le_bytes());
        hello.extend_from_slice(&[FRESH, channels.len() as u8]);
        for &channel in channels {
            hello.push(channel);
            hello.extend_from_slice(&0u32.to_le_bytes());
        }
        hello
    }

    const KINDS: [ChannelKind; 1] = [ChannelKind::ReliableOrdered];

    fn delivery(life: u64) -> Delivery {
        Delivery::new(life, &KINDS, DEFAULT_PEER_BUDGET)
    }

    /// Runs a connection between `a` and `b` for a second of 100 ms rounds, every packet
    /// arriving; what `b`'s app gets is appended to `got`.
    fn converse(now: &mut Duration, a: &mut Delivery, b: &mut Delivery, got: &mut Vec<Vec<u8>>) {
        let (mut s, mut r) = pair(*now);
        a.connected(&mut s).unwrap();
        b.connected(&mut r).unwrap();
        for _ in 0..10 {
            *now += Duration::from_millis(100);
            carry(*now, &mut s, &mut r, b, got, |_| true);
            carry(*now, &mut r, &mut s, a, &mut Vec::new(), |_| true);
        }
    }

    /// A connection on which `a` sends `messages` and `b` delivers them, but nothing from
    /// `b` ever reaches `a`: `a` keeps its copies, unconfirmed.
    fn delivered_but_unconfirmed(now: &mut Duration, a: &mut Delivery, b: &mut Delivery) {
        let (mut s, mut r) = pair(*now);
        a.connected(&mut s).unwrap();
        b.connected(&mut r).unwrap();
        let mut got = Vec::new();
        for m in [&b"one"[..], b"two"] {
            a.send(Some(&mut s), 0, m).unwrap();
        }
        for _ in 0..5 {
            *now += Duration::from_millis(100);
            carry(*now, &mut s, &mut r, b, &mut got, |_| true);
        }
        assert_eq!(got, [b"one".to_vec(), b"two".to_vec()]);
        assert_eq!(a.retained(), 2);
    }

    #[test]
    fn a_peer_that_forgot_us_gets_nothing_twice_and_what_it_may_have_had_comes_back() {
        let mut now = Duration::ZERO;
        let (mut a, mut b) = (delivery(1), delivery(2));
        delivered_but_unconfirmed(&mut now, &mut a, &mut b);
        // `b` forgets `a` and keeps nothing of it (a new life, no receive state: its member
        // dropped the count, and says so).
        let mut b = delivery(3);
        b.set_forgetful();
        let mut got = Vec::new();
        converse(&mut now, &mut a, &mut b, &mut got);
        assert!(got.is_empty(), "one and two were not delivered again");
        assert_eq!(
            a.take_handed_back(),
            [(0, b"one".to_vec()), (0, b"two".to_vec())],
            "handed back: they went to a life of b's that is gone"
        );
        // The link carries on under a new life of a's.
        let (mut s, mut r) = pair(now);
        a.connected(&mut s).unwrap();
        b.connected(&mut r).unwrap();
        a.send(Some(&mut s), 0, b"three").unwrap();
        for _ in 0..10 {
            now += Duration::from_millis(100);
            carry(now, &mut s, &mut r, &mut b, &mut got, |_| true);
            carry(now, &mut r, &mut s, &mut a, &mut Vec::new(), |_| true);
        }
        assert_eq!(got, [b"three".to_vec()]);
        assert_eq!(a.retained(), 0);
    }

    #[test]
    fn a_peer_that_forgot_us_but_kept_our_count_gets_each_message_once_and_none_comes_back() {
        let mut now = Duration::ZERO;
        let (mut a, mut b) = (delivery(1), delivery(2));
        delivered_but_unconfirmed(&mut now, &mut a, &mut b);
        let kept = b.receiving().unwrap();
        let mut b = delivery(3);
        b.resume_receiving(kept);
        let mut got = Vec::new();
        converse(&mut now, &mut a, &mut b, &mut got);
        assert!(got.is_empty(), "the copies were dropped as delivered");
        assert!(a.take_handed_back().is_empty());
        assert_eq!(a.retained(), 0, "confirmed on the new connection");
    }

    #[test]
    fn a_message_sent_while_no_connection_is_up_is_kept_and_delivered_on_the_next() {
        let mut now = Duration::ZERO;
        let (mut a, mut b) = (delivery(1), delivery(2));
        a.send(None, 0, b"while down").unwrap();
        assert_eq!(a.retained(), 1);
        let mut got = Vec::new();
        converse(&mut now, &mut a, &mut b, &mut got);
        assert_eq!(got, [b"while down".to_vec()]);
        assert_eq!(a.retained(), 0);
    }

    #[test]
    fn the_peer_budget_counts_bytes_and_one_message_always_fits() {
        let mut a = Delivery::new(1, &KINDS, 100);
        a.send(None, 0, &[7; 500]).unwrap();
        assert_eq!(
            a.send(None, 0, b"x"),
            Err(Full {
                budget: Budget::Bytes,
                used: 501,
                limit: 100
            })
        );
        assert_eq!(a.kept_bytes(), 501);
        assert_eq!(a.unconfirmed(), [(0, vec![7; 500])]);
        assert_eq!(a.kept_bytes(), 0);
        a.send(None, 0, b"x").unwrap();
    }

    #[test]
    fn a_sender_queues_at_most_the_hold_limit_before_its_hello_ack() {
        let now = Duration::ZERO;
        let mut a = delivery(1);
        let (mut s, _r) = pair(now);
        a.connected(&mut s).unwrap();
        let big = vec![1; 200 * 1024];
        for _ in 0..8 {
            a.send(Some(&mut s), 0, &big).unwrap();
        }
        let queued = a.lanes[0].send.queued;
        assert_eq!(queued, HOLD_LIMIT / (big.len() + 3), "5 of 8 fit 1 MiB");
        assert!(a.before_ack <= HOLD_LIMIT);
    }

    #[test]
    fn full_backlogs_on_two_channels_before_a_late_hello_are_all_held_and_delivered_once() {
        let kinds = [ChannelKind::ReliableOrdered, ChannelKind::ReliableUnordered];
        let mut b = Delivery::new(2, &kinds, DEFAULT_PEER_BUDGET);
        let three = config().with_channels(vec![
            ackwire_core::ChannelKind::ReliableOrdered,
            ackwire_core::ChannelKind::ReliableUnordered,
            ackwire_core::ChannelKind::ReliableOrdered,
        ]);
        let (_s, mut r) = pair_on(three, Duration::ZERO);
        b.connected(&mut r).unwrap();
        let mut got = Vec::new();
        // An honest sender's whole window on each channel (1,024 ids each) comes first; its
        // hello was lost and comes last.
        for channel in [0u8, 1] {
            for index in 0..MAX_RETAINED as u32 {
                let mut framed = Vec::new();
                put_varint(&mut framed, index);
                framed.push(channel);
                b.arrived(&mut r, channel, framed, 5, &mut |c, m| got.push((c, m)))
                    .unwrap();
            }
        }
        assert!(got.is_empty(), "held until the hello");
        let hello = fresh_hello(&[0, 1]);
        b.arrived(&mut r, 2, hello, 5, &mut |c, m| got.push((c, m)))
            .unwrap();
        assert_eq!(got.len(), 2 * MAX_RETAINED, "every one, once");
        assert!(got.iter().all(|(c, m)| m == &[*c]));
    }

    #[test]
    fn more_than_the_hold_limit_before_the_hello_fails_and_changes_nothing() {
        let now = Duration::ZERO;
        let mut b = delivery(2);
        let (_s, mut r) = pair(now);
        b.connected(&mut r).unwrap();
        let mut framed = vec![0];
        framed.extend_from_slice(&vec![1; HOLD_LIMIT - 1]);
        let mut never = |_: u8, _: Vec<u8>| panic!("nothing is delivered");
        b.arrived(&mut r, 0, framed, 5, &mut never).unwrap();
        assert_eq!(
            b.arrived(&mut r, 0, vec![1, 2], 5, &mut never),
            Err(DeliveryError::TooManyHeld)
        );
        assert_eq!((b.held.len(), b.held_bytes), (1, HOLD_LIMIT));
    }

    #[test]
    fn a_held_message_an_honest_sender_never_sends_fails_the_hello_and_changes_nothing() {
        let now = Duration::ZERO;
        let mut b = delivery(2);
        let (_s, mut r) = pair(now);
        b.connected(&mut r).unwrap();
        let mut never = |_: u8, _: Vec<u8>| panic!("nothing is delivered");
        // Index 5 on an ordered channel whose hello says it starts at 0.
        b.arrived(&mut r, 0, vec![5, b'x'], 5, &mut never).unwrap();
        let hello = fresh_hello(&[0]);
        assert_eq!(
            b.arrived(&mut r, 1, hello, 5, &mut never),
            Err(DeliveryError::BeyondWindow {
                index: 5,
                expected: 0
            })
        );
        assert!(!b.hello_in);
        assert_eq!(b.peer_life, None);
    }

    #[test]
    fn a_hello_whose_channels_differ_from_ours_or_with_bytes_past_its_end_is_refused() {
        let lanes = delivery(1).lanes;
        let hello = fresh_hello(&[0]);
        assert!(Hello::parse(&hello, &lanes).is_some());
        let mut longer = hello.clone();
        longer.push(0);
        assert!(
            Hello::parse(&longer, &lanes).is_none(),
            "a byte past its end"
        );
        let mut other = hello.clone();
        other[HELLO_FIXED] = 3;
        assert!(
            Hello::parse(&other, &lanes).is_none(),
            "channel 3 is not ours"
        );
        let mut flag = hello.clone();
        flag[25] = 2;
        assert!(Hello::parse(&flag, &lanes).is_some(), "forgetful");
        flag[25] = 4;
        assert!(Hello::parse(&flag, &lanes).is_none(), "no flag 4");
        let mut none = hello;
        none[9..17].fill(0);
        assert!(Hello::parse(&none, &lanes).is_none(), "no life is 0");
    }

    #[test]
    fn a_copy_is_kept_until_the_peer_took_our_hello_so_messages_it_held_are_not_lost() {
        let (mut sender, mut receiver) = (delivery(1), delivery(2));
        let mut got = Vec::new();
        let mut now = Duration::ZERO;
        // A connection whose first packet (the sender's hello) is lost.
        let (mut s, mut r) = pair(now);
        sender.connected(&mut s).unwrap();
        receiver.connected(&mut r).unwrap();
        carry(now, &mut s, &mut r, &mut receiver, &mut got, |_| false);
        sender.send(Some(&mut s), 0, b"one").unwrap();
        sender.send(Some(&mut s), 0, b"two").unwrap();
        // The next packet (a send interval later) carries them, and arrives.
        now += Duration::from_millis(100);
        carry(now, &mut s, &mut r, &mut receiver, &mut got, |_| true);
        assert!(got.is_empty(), "held until the hello comes");
        // The receiver's core acked them (its packet reaches the sender); the sender must
        // keep its copies: the receiver only holds them.
        carry(now, &mut r, &mut s, &mut sender, &mut Vec::new(), |_| true);
        assert_eq!(
            s.reliable_ids(0).map(|(oldest, _)| oldest),
            Some(2),
            "acked by the core"
        );
        assert_eq!(sender.retained(), 2, "kept: no hello-ack yet");
        // The link dies; the next connection brings them, once.
        now += Duration::from_secs(1);
        let (mut s, mut r) = pair(now);
        sender.connected(&mut s).unwrap();
        receiver.connected(&mut r).unwrap();
        for _ in 0..10 {
            now += Duration::from_millis(100);
            carry(now, &mut s, &mut r, &mut receiver, &mut got, |_| true);
            carry(now, &mut r, &mut s, &mut sender, &mut Vec::new(), |_| true);
        }
        assert_eq!(got, [b"one".to_vec(), b"two".to_vec()]);
        assert_eq!(sender.retained(), 0, "confirmed once the hello was taken");
    }

    const SPEC: &str = include_str!("../../docs/wire.md");

    /// The `bytes => fields` lines of the fenced block tagged `tag` in `docs/wire.md`.
    fn block(tag: &str) -> Vec<(Vec<u8>, Vec<&'static str>)> {
        SPEC.split(&format!("```{tag}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("docs/wire.md has a {tag} block"))
            .split("```")
            .next()
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let (hex, fields) = line.split_once("=>").unwrap();
                let hex = hex.replace(' ', "");
                let bytes = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect();
                (bytes, fields.split_whitespace().collect())
            })
            .collect()
    }

    fn field<'a>(fields: &[&'a str], name: &str) -> &'a str {
        fields
            .iter()
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("{name}"))
    }

    #[test]
    fn reliable_messages_are_framed_as_docs_wire_md_shows() {
        for (bytes, fields) in block("room-message") {
            let index: u32 = field(&fields, "index").parse().unwrap();
            let payload = field(&fields, "payload").as_bytes();
            let mut framed = Vec::new();
            put_varint(&mut framed, index);
            framed.extend_from_slice(payload);
            assert_eq!(framed, bytes);
            assert_eq!(
                get_varint(&bytes),
                Some((index, bytes.len() - payload.len()))
            );
        }
    }

    #[test]
    fn hello_and_hello_ack_are_the_bytes_docs_wire_md_shows() {
        let [(hello, fields)] = &block("room-hello")[..] else {
            panic!("one hello");
        };
        let hex = |name| u64::from_str_radix(field(fields, name).trim_start_matches("0x"), 16);
        let (id, life, counting) = (
            hex("id").unwrap(),
            hex("life").unwrap(),
            hex("counting").unwrap(),
        );
        // Channels 1 and 2 reliable; channel 2 resumes at index 300.
        let kinds = [
            ChannelKind::Unreliable,
            ChannelKind::ReliableOrdered,
            ChannelKind::ReliableUnordered,
        ];
        let mut delivery = Delivery::new(id, &kinds, DEFAULT_PEER_BUDGET);
        delivery.life = life;
        delivery.lanes[1].send.next = 300;
        delivery.peer_life = Some(counting);
        assert_eq!(field(fields, "flags"), "1");
        assert_eq!(&delivery.hello(), hello);
        let parsed = Hello::parse(hello, &delivery.lanes).unwrap();
        assert_eq!(
            (parsed.id, parsed.life, parsed.counting, parsed.fresh),
            (id, life, counting, true)
        );
        assert_eq!(parsed.bases, [(1, 0), (2, 300)]);
        let [(ack, fields)] = &block("room-hello-ack")[..] else {
            panic!("one hello-ack");
        };
        let mut expected = vec![HELLO_ACK];
        expected.extend_from_slice(&life.to_le_bytes());
        assert_eq!(ack, &expected);
        assert_eq!(field(fields, "life"), format!("0x{life:016x}"));
    }

    #[test]
    fn varints_round_trip_and_overlong_ones_are_refused() {
        for value in [0, 1, 127, 128, 16_383, 16_384, u32::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(get_varint(&out), Some((value, out.len())));
        }
        assert_eq!(get_varint(&[0x80]), None, "truncated");
        assert_eq!(get_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0x1F]), None, "33 bits");
        assert_eq!(get_varint(&[0x80; 6]), None);
        assert_eq!(
            get_varint(&[0x80, 0x00]),
            None,
            "overlong: 0 has one encoding"
        );
        assert_eq!(get_varint(&[0xFF, 0x00]), None, "overlong");
    }

    #[test]
    fn an_unordered_window_delivers_each_index_once_and_refuses_what_lies_beyond() {
        let mut lane = ReceiveLane {
            expected: u32::MAX - 1,
            seen: None,
        };
        assert_eq!(lane.admit(u32::MAX, false), Ok(true));
        assert_eq!(lane.admit(u32::MAX, false), Ok(false));
        assert_eq!(lane.admit(u32::MAX - 1, false), Ok(true));
        // Both in: the window moved past them, across the wrap.
        assert_eq!(lane.expected, 0);
        assert_eq!(lane.admit(u32::MAX, false), Ok(false));
        assert!(lane.admit(MAX_RETAINED as u32, false).is_err());
        assert_eq!(lane.admit(MAX_RETAINED as u32 - 1, false), Ok(true));
    }
}
