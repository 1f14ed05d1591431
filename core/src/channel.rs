//! Channels: the four delivery kinds, the per-channel send queues and receive state, and the
//! packer that fills each outgoing packet with message frames.
//!
//! Packing order, per packet: reliable messages that are due (never sent, or unacked for
//! longer than the resend interval), oldest first, channels taken in turn so none starves the
//! others; then unreliable messages in the space left. A message rides again only in a new
//! packet, never as a resend of an old one, and only once per resend interval, so a lost
//! packet's messages come back spread over the paced packet stream instead of in a burst.

use core::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::frame::{
    FrameError, FrameKind, FrameRepr, Frames, MAX_MESSAGE_SIZE, frame_len, overhead,
};
use crate::reliable::{ReceiveWindow, SendWindow, fragments_needed};
use crate::sequence::more_recent;

/// How a channel delivers its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ChannelKind {
    /// Sent once; may be lost, duplicated by nobody (the packet layer drops duplicates), and
    /// arrive in any order.
    Unreliable,
    /// Sent once; a message older than the newest one delivered is dropped, so the receiver
    /// never goes backwards (snapshots, inputs: newest wins).
    UnreliableSequenced,
    /// Delivered exactly once, in the order sent (events, chat, state changes).
    ReliableOrdered,
    /// Delivered exactly once, as soon as it arrives.
    ReliableUnordered,
}

impl ChannelKind {
    /// True for the two reliable kinds.
    pub fn is_reliable(self) -> bool {
        matches!(
            self,
            ChannelKind::ReliableOrdered | ChannelKind::ReliableUnordered
        )
    }

    fn accepts(self, kind: &FrameKind) -> bool {
        match kind {
            FrameKind::Unreliable => self == ChannelKind::Unreliable,
            FrameKind::Sequenced { .. } => self == ChannelKind::UnreliableSequenced,
            FrameKind::Reliable { .. } | FrameKind::Fragment { .. } => self.is_reliable(),
        }
    }
}

/// Why [`send`](crate::Connection::send) or [`send_latest`](crate::Connection::send_latest)
/// refused a message. Nothing was queued, and nothing queued before was touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SendError {
    /// No channel with this index is configured.
    #[error("no channel {0}")]
    UnknownChannel(u8),
    /// The message is longer than the channel allows (one packet for unreliable kinds,
    /// [`MAX_MESSAGE_SIZE`] for reliable ones).
    #[error("message of {len} bytes exceeds the {max}-byte maximum of channel {channel}")]
    TooLarge {
        /// The channel.
        channel: u8,
        /// The message length.
        len: usize,
        /// The channel's maximum.
        max: usize,
    },
    /// A reliable channel's send window has too few free message ids; retry after acks
    /// arrive (backpressure: the peer or the link is slower than the sender).
    #[error("send window of channel {channel} is full: {needed} ids needed, {free} free")]
    WindowFull {
        /// The channel.
        channel: u8,
        /// Ids the message needs (one per fragment).
        needed: usize,
        /// Ids free.
        free: usize,
    },
    /// An unreliable channel's queue is full (messages are queued faster than packets leave).
    #[error("send queue of channel {channel} is full")]
    QueueFull {
        /// The channel.
        channel: u8,
    },
    /// The connection is closed or closing.
    #[error("connection is closed")]
    Closed,
    /// [`send_latest`](crate::Connection::send_latest) on a reliable channel: a reliable
    /// message is delivered whatever comes after it, so it is never replaced (use `send`).
    #[error("channel {channel} is reliable: only unreliable messages can be replaced")]
    Reliable {
        /// The channel.
        channel: u8,
    },
}

/// Message counters, part of [`Stats`](crate::Stats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MessageCounters {
    pub(crate) sent: u64,
    pub(crate) resent: u64,
    pub(crate) delivered: u64,
    pub(crate) dropped_stale: u64,
}

/// How much a connection holds in its message buffers, to check they stay bounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buffered {
    /// Reliable message ids in flight, summed over channels (each channel at most
    /// [`RELIABLE_WINDOW`](crate::frame::RELIABLE_WINDOW)).
    pub reliable_in_flight: usize,
    /// Bytes of reliable messages awaiting an ack.
    pub reliable_send_bytes: usize,
    /// Unreliable messages queued, not yet sent.
    pub unreliable_queued: usize,
    /// Reliable ids held by receivers (waiting for an earlier id or a missing fragment).
    pub receive_held: usize,
    /// Bytes held by receivers.
    pub receive_bytes: usize,
}

/// An unreliable channel's queued messages, back to back in one buffer as
/// `length (2 bytes) | frame`, each frame already in its wire encoding (`FrameRepr::emit`,
/// sequence assigned): queueing a message copies it once, packing it into a packet is one
/// more copy, and nothing is allocated once the buffer has grown to the channel's usual
/// backlog.
#[derive(Debug, Default)]
struct MessageQueue {
    buf: Vec<u8>,
    /// Where the oldest queued frame's length starts. 32 bits suffice: a queue holds at most
    /// `MAX_UNRELIABLE_QUEUE_LEN` datagram-sized frames (see `ConnectionConfig::validate`).
    start: u32,
    count: u32,
}

/// Bytes of a queued frame's length.
const QUEUED_HEADER: usize = 2;

impl MessageQueue {
    fn len(&self) -> usize {
        self.count as usize
    }

    /// Queues `frame` encoded; it must encode to at most `u16::MAX` bytes (unreliable
    /// messages fit one datagram).
    fn push(&mut self, frame: &FrameRepr<'_>) {
        let len = frame.encoded_len();
        let at = self.buf.len();
        let header = u16::try_from(len).expect("an unreliable message fits a datagram");
        self.buf.resize(at + QUEUED_HEADER + len, 0);
        self.buf[at..at + QUEUED_HEADER].copy_from_slice(&header.to_be_bytes());
        frame
            .emit(&mut self.buf[at + QUEUED_HEADER..])
            .expect("sized by encoded_len");
        self.count += 1;
    }

    /// Drops every queued frame, keeping the buffer's capacity.
    fn clear(&mut self) {
        self.buf.clear();
        self.start = 0;
        self.count = 0;
    }

    /// The oldest queued frame, encoded.
    #[inline]
    fn front(&self) -> Option<&[u8]> {
        if self.count == 0 {
            return None;
        }
        let at = self.start as usize;
        let len = usize::from(u16::from_be_bytes([self.buf[at], self.buf[at + 1]]));
        let body = at + QUEUED_HEADER;
        Some(&self.buf[body..body + len])
    }

    /// Drops the front frame, `len` bytes long (as [`front`](Self::front) gave it).
    fn pop_front(&mut self, len: usize) {
        if self.count == 0 {
            return;
        }
        self.start += (QUEUED_HEADER + len) as u32;
        self.count -= 1;
        if self.count == 0 {
            // Back to the start of the buffer, which stays in cache.
            self.buf.clear();
            self.start = 0;
        } else if self.start >= 4096 && self.start as usize * 2 >= self.buf.len() {
            // A queue that never empties: drop the sent half now and then (amortised O(1)).
            self.buf.drain(..self.start as usize);
            self.start = 0;
        }
    }
}

#[derive(Debug)]
enum SendSide {
    Queue {
        queue: MessageQueue,
        next_sequence: u16,
    },
    Reliable(SendWindow),
}

#[derive(Debug)]
enum ReceiveSide {
    Unreliable,
    Sequenced { newest: Option<u16> },
    Reliable(ReceiveWindow),
}

/// One channel's state in 64 bytes (its kind is told by the two sides), so a message in
/// and its echo out touch at most two cache lines. Not `align(64)`: the allocator's aligned
/// path measured slower per message than the line it saves (`listener_scale`).
#[derive(Debug)]
struct Channel {
    send: SendSide,
    receive: ReceiveSide,
}

impl Channel {
    fn kind(&self) -> ChannelKind {
        match &self.receive {
            ReceiveSide::Unreliable => ChannelKind::Unreliable,
            ReceiveSide::Sequenced { .. } => ChannelKind::UnreliableSequenced,
            ReceiveSide::Reliable(window) if window.is_ordered() => ChannelKind::ReliableOrdered,
            ReceiveSide::Reliable(_) => ChannelKind::ReliableUnordered,
        }
    }
}

/// A payload whose frames [`Channels::validate`] accepted, for [`Channels::apply`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Checked<'a> {
    /// The payload was this one frame.
    One(FrameRepr<'a>),
    /// Any other payload (none, or several frames), parsed again by `apply`.
    Many(&'a [u8]),
}

/// All channels of one connection.
#[derive(Debug)]
pub(crate) struct Channels {
    channels: Box<[Channel]>,
    /// Read on every message sent, like the fields below: kept narrow (bounded by
    /// `ConnectionConfig::validate`) so the struct shares the connection's hot cache lines.
    queue_len: u16,
    /// Largest unreliable message: one that fits an otherwise empty packet.
    max_unreliable: u16,
    /// Channel the packer starts with; turns each packet for fairness.
    turn: u8,
    /// No reliable message is queued or in flight on any channel: the packer skips the
    /// reliable windows without reading them (a cache miss each, with many connections).
    reliable_idle: bool,
    /// Bit `i` set: unreliable channel `i` has queued messages. The packer visits only
    /// those, without reading the other channels' state.
    queued: u64,
    /// A reliable window may hold storage: a reliable message was sent or received since
    /// [`release_reliable_storage`](Self::release_reliable_storage) last freed them all.
    reliable_storage: bool,
    /// A reliable frame arrived since [`take_reliable_arrived`](Self::take_reliable_arrived).
    reliable_arrived: bool,
    /// The last packet left a due reliable frame out for lack of room: more is waiting than
    /// the cadence carries (the endpoint's bulk window may send more, see `crate::bulk`).
    backlog: bool,
    /// Reliable bytes queued and never sent: more than a packet holds is a backlog before
    /// any packet has said so.
    unsent_reliable: usize,
    /// The last packet left a due reliable frame out and carried none: the next one puts its
    /// reliable frames before the queued unreliable ones, so neither kind starves the other.
    reliable_first: bool,
    pub(crate) counters: MessageCounters,
}

/// Smallest frame worth trying to fit (tag, id, length, one byte).
const MIN_FRAME: usize = 5;

impl Channels {
    /// Sets the largest unreliable message (a protected connection keeps room for the tag).
    pub(crate) fn set_max_unreliable(&mut self, max_unreliable: usize) {
        self.max_unreliable = max_unreliable as u16;
    }

    pub(crate) fn new(kinds: &[ChannelKind], queue_len: usize, max_unreliable: usize) -> Self {
        let channels = kinds
            .iter()
            .map(|&kind| Channel {
                send: match kind {
                    ChannelKind::Unreliable | ChannelKind::UnreliableSequenced => SendSide::Queue {
                        queue: MessageQueue::default(),
                        next_sequence: 0,
                    },
                    _ => SendSide::Reliable(SendWindow::new()),
                },
                receive: match kind {
                    ChannelKind::Unreliable => ReceiveSide::Unreliable,
                    ChannelKind::UnreliableSequenced => ReceiveSide::Sequenced { newest: None },
                    ChannelKind::ReliableOrdered => ReceiveSide::Reliable(ReceiveWindow::new(true)),
                    ChannelKind::ReliableUnordered => {
                        ReceiveSide::Reliable(ReceiveWindow::new(false))
                    }
                },
            })
            .collect();
        Channels {
            channels,
            // Both bounded by `ConnectionConfig::validate` (32768, 65507).
            queue_len: queue_len as u16,
            max_unreliable: max_unreliable as u16,
            turn: 0,
            reliable_idle: true,
            queued: 0,
            reliable_storage: false,
            reliable_arrived: false,
            backlog: false,
            unsent_reliable: 0,
            reliable_first: false,
            counters: MessageCounters::default(),
        }
    }

    /// Whether [`send`](Self::send) would take a message of `len` bytes on `channel` now.
    pub(crate) fn check_send(&self, channel: u8, len: usize) -> Result<(), SendError> {
        let ch = self
            .channels
            .get(usize::from(channel))
            .ok_or(SendError::UnknownChannel(channel))?;
        let max = match ch.send {
            SendSide::Queue { .. } => self.max_unreliable as usize,
            SendSide::Reliable(_) => MAX_MESSAGE_SIZE,
        };
        if len > max {
            return Err(SendError::TooLarge { channel, len, max });
        }
        match &ch.send {
            SendSide::Queue { queue, .. } if queue.len() >= self.queue_len as usize => {
                Err(SendError::QueueFull { channel })
            }
            SendSide::Reliable(window) if fragments_needed(len) > window.free() => {
                Err(SendError::WindowFull {
                    channel,
                    needed: fragments_needed(len),
                    free: window.free(),
                })
            }
            _ => Ok(()),
        }
    }

    /// `(oldest id not acked, id of the next message)` of a reliable channel.
    pub(crate) fn reliable_ids(&self, channel: u8) -> Option<(u16, u16)> {
        match &self.channels.get(usize::from(channel))?.send {
            SendSide::Reliable(window) => Some(window.ids()),
            SendSide::Queue { .. } => None,
        }
    }

    /// Queues `bytes` on `channel`, or says why not (changing nothing).
    pub(crate) fn send(&mut self, channel: u8, bytes: &[u8]) -> Result<(), SendError> {
        self.check_send(channel, bytes.len())?;
        let ch = &mut self.channels[usize::from(channel)];
        let sequenced = matches!(ch.receive, ReceiveSide::Sequenced { .. });
        match &mut ch.send {
            SendSide::Queue {
                queue,
                next_sequence,
            } => {
                let kind = if sequenced {
                    FrameKind::Sequenced {
                        sequence: *next_sequence,
                    }
                } else {
                    FrameKind::Unreliable
                };
                queue.push(&FrameRepr {
                    channel,
                    kind,
                    payload: bytes,
                });
                *next_sequence = next_sequence.wrapping_add(1);
                self.queued |= 1 << channel;
            }
            SendSide::Reliable(window) => {
                window.push(bytes);
                self.unsent_reliable += bytes.len();
                self.reliable_idle = false;
                self.reliable_storage = true;
            }
        }
        self.counters.sent += 1;
        Ok(())
    }

    /// Replaces whatever `channel` (an unreliable one) has queued and not yet sent with
    /// `bytes`, or says why not (changing nothing).
    pub(crate) fn send_latest(&mut self, channel: u8, bytes: &[u8]) -> Result<(), SendError> {
        let max = self.max_unreliable as usize;
        let ch = self
            .channels
            .get_mut(usize::from(channel))
            .ok_or(SendError::UnknownChannel(channel))?;
        let sequenced = matches!(ch.receive, ReceiveSide::Sequenced { .. });
        let SendSide::Queue {
            queue,
            next_sequence,
        } = &mut ch.send
        else {
            return Err(SendError::Reliable { channel });
        };
        if bytes.len() > max {
            return Err(SendError::TooLarge {
                channel,
                len: bytes.len(),
                max,
            });
        }
        // The queued frames hold the channel's newest sequences and never left, so the new
        // message takes the oldest of them: the sequence advances once per message that goes
        // out, however often this is called, and never by enough (half the 16-bit range) to
        // look older than the last one delivered.
        let replaced = queue.len();
        let sequence = next_sequence.wrapping_sub(replaced as u16);
        queue.clear();
        queue.push(&FrameRepr {
            channel,
            kind: if sequenced {
                FrameKind::Sequenced { sequence }
            } else {
                FrameKind::Unreliable
            },
            payload: bytes,
        });
        *next_sequence = sequence.wrapping_add(1);
        self.queued |= 1 << channel;
        // A replaced message never counts as sent.
        self.counters.sent = self.counters.sent + 1 - replaced as u64;
        Ok(())
    }

    /// Fills `buf` with frames; returns the bytes written. Every reliable frame written is
    /// listed in `record` as `(channel, id)`, so the packet's ack can release them; `record`
    /// is cleared first, and not touched at all while the channels are
    /// [`reliable_idle`](Self::reliable_idle) (it is then left as it was).
    /// `clock` gives the time and the resend interval; it is called only when a reliable
    /// message is queued or in flight (most packets carry unreliable messages only).
    ///
    /// Queued unreliable and sequenced frames go first, so a game's own traffic keeps its
    /// place in every packet whatever reliable backlog waits; reliable frames fill the rest,
    /// except in a packet after one that left a due reliable frame out and carried none,
    /// where they go first (docs/wire.md, "Packing").
    pub(crate) fn write(
        &mut self,
        clock: impl FnOnce() -> (Duration, Duration),
        buf: &mut [u8],
        record: &mut Vec<(u8, u16)>,
    ) -> usize {
        let count = self.channels.len();
        if count == 0 {
            return 0;
        }
        let turn = self.turn as usize;
        // Channel indexes wrap by subtraction: a division per channel per packet is not free.
        let wrap = |i: usize| if i >= count { i - count } else { i };
        self.turn = wrap(turn + 1) as u8;
        if self.reliable_idle {
            self.backlog = false;
            return self.write_queued(turn, buf, 0);
        }
        record.clear();
        let (now, resend_interval) = clock();
        let mut at = 0;
        if !self.reliable_first {
            at = self.write_queued(turn, buf, at);
        }
        let (end, left_out) = self.write_reliable(turn, now, resend_interval, buf, at, record);
        let wrote_reliable = end > at;
        at = end;
        if self.reliable_first {
            at = self.write_queued(turn, buf, at);
        }
        self.backlog = left_out;
        self.reliable_first = left_out && !wrote_reliable;
        at
    }

    /// Writes the due reliable frames that fit into `buf[at..]`, channel by channel from
    /// `turn`, oldest id first. Returns where they end, and whether a due frame was left out
    /// for lack of room.
    fn write_reliable(
        &mut self,
        turn: usize,
        now: Duration,
        resend_interval: Duration,
        buf: &mut [u8],
        mut at: usize,
        record: &mut Vec<(u8, u16)>,
    ) -> (usize, bool) {
        let count = self.channels.len();
        let wrap = |i: usize| if i >= count { i - count } else { i };
        let mut in_flight = 0;
        let mut left_out = false;
        for k in 0..count {
            let index = wrap(turn + k);
            if left_out {
                // The packet is full: the channels after it wait for the next one, unread (a
                // cache miss each, with many connections).
                break;
            }
            let SendSide::Reliable(window) = &mut self.channels[index].send else {
                continue;
            };
            in_flight += window.in_flight();
            for pending in window.pending_mut() {
                let due = pending
                    .last_sent
                    .is_none_or(|sent| now >= sent + resend_interval);
                if !due {
                    continue;
                }
                if buf.len() - at < MIN_FRAME {
                    left_out = true;
                    break;
                }
                let frame = FrameRepr {
                    channel: index as u8,
                    kind: pending.kind(),
                    payload: &pending.bytes,
                };
                // Too big for what is left: a smaller, later one may still fit.
                let Ok(used) = frame.emit(&mut buf[at..]) else {
                    left_out = true;
                    continue;
                };
                at += used;
                if pending.last_sent.is_some() {
                    self.counters.resent += 1;
                } else {
                    self.unsent_reliable -= pending.bytes.len();
                }
                pending.last_sent = Some(now);
                record.push((index as u8, pending.id));
            }
        }
        // A frame left out is a frame waiting: never idle then.
        if !left_out && in_flight == 0 && self.all_reliable_empty() {
            self.reliable_idle = true;
        }
        (at, left_out)
    }

    /// Writes the queued unreliable and sequenced frames that fit into `buf[at..]`, channel
    /// by channel from `turn` (wrapping), each channel's queue in order until its next frame
    /// does not fit. Returns where they end.
    fn write_queued(&mut self, turn: usize, buf: &mut [u8], mut at: usize) -> usize {
        // Channels with queued frames, from `turn` on, then wrapping to those before it.
        let from_turn = u64::MAX.checked_shl(turn as u32).unwrap_or(0);
        for mut bits in [self.queued & from_turn, self.queued & !from_turn] {
            while bits != 0 {
                let index = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let SendSide::Queue { queue, .. } = &mut self.channels[index].send else {
                    continue;
                };
                while let Some(frame) = queue.front() {
                    let len = frame.len();
                    let Some(space) = buf.get_mut(at..at + len) else {
                        break;
                    };
                    space.copy_from_slice(frame);
                    at += len;
                    queue.pop_front(len);
                }
                if queue.len() == 0 {
                    self.queued &= !(1 << index);
                }
            }
        }
        at
    }

    /// Whether more reliable frames wait than a packet holds: the last packet left a due
    /// one out for lack of room, or more bytes were queued since than one packet carries.
    pub(crate) fn backlog(&self) -> bool {
        self.backlog || self.unsent_reliable > usize::from(self.max_unreliable)
    }

    /// Checks every frame of `payload` against the channels, changing nothing. Returns the
    /// payload's frames for [`apply`](Self::apply): a single frame (the usual packet: one
    /// state update) already parsed, so it is not parsed twice.
    pub(crate) fn validate<'a>(&self, payload: &'a [u8]) -> Result<Checked<'a>, FrameError> {
        if payload.is_empty() {
            return Ok(Checked::Many(payload));
        }
        let (first, used) = FrameRepr::parse(payload)?;
        self.check(&first)?;
        if used == payload.len() {
            return Ok(Checked::One(first));
        }
        for frame in Frames::new(&payload[used..]) {
            self.check(&frame?)?;
        }
        Ok(Checked::Many(payload))
    }

    fn check(&self, frame: &FrameRepr<'_>) -> Result<(), FrameError> {
        let ch = self
            .channels
            .get(usize::from(frame.channel))
            .ok_or(FrameError::UnknownChannel(frame.channel))?;
        if !ch.kind().accepts(&frame.kind) {
            return Err(FrameError::WrongKind {
                channel: frame.channel,
                kind: frame.kind.name(),
            });
        }
        if let ReceiveSide::Reliable(window) = &ch.receive {
            window.check(frame.channel, &frame.kind)?;
        }
        Ok(())
    }

    /// Takes in the frames [`validate`](Self::validate) passed; every message now deliverable
    /// goes to `deliver` as `(channel, bytes)`.
    pub(crate) fn apply(&mut self, checked: Checked<'_>, deliver: &mut dyn FnMut(u8, Vec<u8>)) {
        match checked {
            Checked::One(frame) => self.apply_frame(frame, deliver),
            Checked::Many(payload) => {
                for frame in Frames::new(payload).flatten() {
                    self.apply_frame(frame, deliver);
                }
            }
        }
    }

    fn apply_frame(&mut self, frame: FrameRepr<'_>, deliver: &mut dyn FnMut(u8, Vec<u8>)) {
        let counters = &mut self.counters;
        let channel = frame.channel;
        let Some(ch) = self.channels.get_mut(usize::from(channel)) else {
            return;
        };
        match (&mut ch.receive, frame.kind) {
            (ReceiveSide::Unreliable, _) => {
                counters.delivered += 1;
                deliver(channel, frame.payload.to_vec());
            }
            (ReceiveSide::Sequenced { newest }, FrameKind::Sequenced { sequence }) => {
                if newest.is_none_or(|n| more_recent(sequence, n)) {
                    *newest = Some(sequence);
                    counters.delivered += 1;
                    deliver(channel, frame.payload.to_vec());
                } else {
                    counters.dropped_stale += 1;
                }
            }
            (ReceiveSide::Reliable(window), kind) => {
                self.reliable_storage = true;
                self.reliable_arrived = true;
                window.insert(&kind, frame.payload, &mut |bytes| {
                    counters.delivered += 1;
                    deliver(channel, bytes);
                });
            }
            _ => {}
        }
    }

    /// A packet carrying these reliable frames was acked.
    pub(crate) fn on_acked(&mut self, record: &[(u8, u16)]) {
        for &(channel, id) in record {
            if let Some(SendSide::Reliable(window)) = self
                .channels
                .get_mut(usize::from(channel))
                .map(|c| &mut c.send)
            {
                window.ack(id);
            }
        }
    }

    /// No reliable message is queued or in flight: `write` records no frames.
    pub(crate) fn reliable_idle(&self) -> bool {
        self.reliable_idle
    }

    /// A reliable window may hold storage (see [`release_reliable_storage`](Self::release_reliable_storage)).
    pub(crate) fn holds_reliable_storage(&self) -> bool {
        self.reliable_storage
    }

    /// True when a reliable frame arrived since the last call.
    pub(crate) fn take_reliable_arrived(&mut self) -> bool {
        core::mem::take(&mut self.reliable_arrived)
    }

    /// Frees the ring of every reliable window that holds nothing (the connection calls this
    /// once its reliable traffic has been quiet for a while, not per packet). Returns true
    /// when no window holds storage any more.
    pub(crate) fn release_reliable_storage(&mut self) -> bool {
        let mut released = true;
        for ch in self.channels.iter_mut() {
            if let SendSide::Reliable(window) = &mut ch.send {
                released &= window.release_if_empty();
            }
            if let ReceiveSide::Reliable(window) = &mut ch.receive {
                released &= window.release_if_empty();
            }
        }
        self.reliable_storage = !released;
        released
    }

    fn all_reliable_empty(&self) -> bool {
        self.channels.iter().all(|ch| match &ch.send {
            SendSide::Reliable(window) => window.in_flight() == 0,
            SendSide::Queue { .. } => true,
        })
    }

    /// What the buffers hold now.
    pub(crate) fn buffered(&self) -> Buffered {
        let mut b = Buffered::default();
        for ch in &self.channels {
            match &ch.send {
                SendSide::Queue { queue, .. } => b.unreliable_queued += queue.len(),
                SendSide::Reliable(window) => {
                    b.reliable_in_flight += window.in_flight();
                    b.reliable_send_bytes += window.bytes();
                }
            }
            if let ReceiveSide::Reliable(window) = &ch.receive {
                b.receive_held += window.held();
                b.receive_bytes += window.bytes();
            }
        }
        b
    }

    /// How many more messages an unreliable `channel`'s queue takes now (`None` for a
    /// reliable or unknown channel).
    pub(crate) fn queue_room(&self, channel: u8) -> Option<usize> {
        match &self.channels.get(usize::from(channel))?.send {
            SendSide::Queue { queue, .. } => {
                Some((self.queue_len as usize).saturating_sub(queue.len()))
            }
            SendSide::Reliable(_) => None,
        }
    }

    /// Largest message `channel` accepts, if it exists.
    pub(crate) fn max_message(&self, channel: u8) -> Option<usize> {
        self.channels
            .get(usize::from(channel))
            .map(|ch| match ch.send {
                SendSide::Queue { .. } => self.max_unreliable as usize,
                SendSide::Reliable(_) => MAX_MESSAGE_SIZE,
            })
    }
}

/// Largest unreliable message that fits a datagram of `datagram` bytes with the largest
/// packet header and a sequenced frame's framing.
pub(crate) fn max_unreliable(datagram: usize, header: usize) -> usize {
    let space = datagram.saturating_sub(header);
    let framing = overhead(&FrameKind::Sequenced { sequence: 0 }, space);
    let max = space.saturating_sub(framing);
    debug_assert!(max == 0 || frame_len(&FrameKind::Sequenced { sequence: 0 }, max) <= space);
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_messages_come_out_in_order_with_their_sequences_and_bytes() {
        let frame = |sequence: u16, payload: &'static [u8]| FrameRepr {
            channel: 2,
            kind: FrameKind::Sequenced { sequence },
            payload,
        };
        let encoded = |f: FrameRepr<'_>| {
            let mut bytes = vec![0; f.encoded_len()];
            f.emit(&mut bytes).unwrap();
            bytes
        };
        let mut queue = MessageQueue::default();
        let frames = [frame(7, b"first"), frame(8, b""), frame(9, &[0xAB; 300])];
        for f in &frames {
            queue.push(f);
        }
        assert_eq!(queue.len(), 3);
        for f in frames {
            let front = queue.front().expect("queued").to_vec();
            assert_eq!(front, encoded(f));
            assert_eq!(FrameRepr::parse(&front), Ok((f, front.len())));
            queue.pop_front(front.len());
        }
        assert_eq!((queue.len(), queue.front()), (0, None));
        queue.pop_front(0);
        assert_eq!(queue.len(), 0, "popping an empty queue changes nothing");
    }

    #[test]
    fn send_latest_reuses_the_queue_buffer_once_it_has_grown() {
        let mut channels = Channels::new(&[ChannelKind::UnreliableSequenced], 256, 1100);
        let buffer = |channels: &Channels| match &channels.channels[0].send {
            SendSide::Queue { queue, .. } => (queue.buf.as_ptr(), queue.buf.capacity()),
            SendSide::Reliable(_) => unreachable!(),
        };
        let mut record = Vec::new();
        let mut packet = [0u8; 1200];
        channels.send_latest(0, &[0; 64]).unwrap();
        let grown = buffer(&channels);
        for i in 0..1000u16 {
            for _ in 0..3 {
                channels.send_latest(0, &[i as u8; 64]).unwrap();
            }
            let len = channels.write(|| unreachable!(), &mut packet, &mut record);
            assert_eq!(len, 4 + 64, "one frame a packet");
            assert_eq!(buffer(&channels), grown, "reallocated at packet {i}");
        }
    }

    #[test]
    fn a_queue_that_never_empties_stays_bounded() {
        let mut queue = MessageQueue::default();
        let mut next_out = 0u16;
        for sequence in 0..10_000u16 {
            let payload = sequence.to_be_bytes().repeat(20);
            queue.push(&FrameRepr {
                channel: 0,
                kind: FrameKind::Sequenced { sequence },
                payload: &payload,
            });
            if queue.len() > 3 {
                let front = queue.front().unwrap();
                let (frame, len) = FrameRepr::parse(front).unwrap();
                assert_eq!(frame.kind, FrameKind::Sequenced { sequence: next_out });
                assert_eq!(frame.payload, &next_out.to_be_bytes().repeat(20)[..]);
                queue.pop_front(len);
                next_out += 1;
            }
        }
        assert_eq!(queue.len(), 3);
        assert!(
            queue.buf.len() < 4096 * 2 + 200,
            "{} bytes held",
            queue.buf.len()
        );
    }
}
