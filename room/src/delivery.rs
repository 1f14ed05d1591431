//! Reliable messages that outlive a link's connections: what a member sends reliably to a peer
//! is delivered exactly once (and in order on an ordered channel) even when the link dies and
//! a new core connection replaces it, as long as the peer is the same program instance.
//!
//! A core connection delivers reliable messages exactly once *within* itself; a link that is
//! lost (a pulled cable past the idle timeout, ICE failure, the peer starting over) starts a
//! new connection, and what the old one had not delivered would be gone. So the member keeps,
//! per peer and reliable channel:
//! - **sending**: a copy of every message it queued until the peer is known to have it
//!   (`retained`), each numbered (`index`, a 32-bit counter per channel); on every new
//!   connection the copies not yet confirmed go out again, in order, before anything new;
//! - **receiving**: the next index it expects (ordered) or which indices it has delivered
//!   (unordered, a 1024-wide window), so a copy it already delivered is dropped.
//!
//! Each reliable message travels as `varint(index) ‖ payload` (LEB128, 1–5 bytes). On each new
//! connection both sides first send, on the member's own control channel (the last one, after
//! the application's), a `hello`: a random id of the sender's *life* for this peer (new when
//! it forgets the peer and meets it again) and, per reliable channel, the index it (re)starts
//! from. A receiver holds reliable messages of a new connection until that connection's hello
//! has come (it says whether to keep counting or start over), then answers `hello-ack`. A
//! sender drops a copy only when the core says the peer's connection took the message and
//! every one before it (`Connection::reliable_ids`), and only after the `hello-ack` of that
//! connection: before it, the peer may still have been holding the message, to lose it if the
//! link died. `docs/wire.md`, "Room members", has the bytes.

use std::collections::VecDeque;

use ackwire_core::sequence::distance;
use ackwire_core::{Connection, SendError};
use ackwire_signalling::ChannelKind;

/// Reliable messages a member keeps per peer and channel before it refuses more
/// ([`SendError::WindowFull`]): the core's window, so every copy fits a new connection.
pub(crate) const MAX_RETAINED: usize = ackwire_core::frame::RELIABLE_WINDOW as usize;

/// Longest index prefix (a 32-bit LEB128).
pub(crate) const MAX_PREFIX: usize = 5;

/// Reliable messages of a new connection held until its hello arrives, at most.
const MAX_HELD: usize = MAX_RETAINED;

/// Spare buffers kept for the next reliable messages (so a steady stream allocates nothing).
const MAX_SPARE: usize = 64;

const HELLO: u8 = 1;
const HELLO_ACK: u8 = 2;

/// Why a reliable message from the peer was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeliveryError {
    /// It does not start with a valid index.
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
    /// More reliable messages arrived before the connection's hello than any peer sends.
    #[error("too many messages before the hello")]
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

/// Reads a LEB128 u32 from the start of `bytes`: the value and its length.
fn get_varint(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value = 0u32;
    for (i, &byte) in bytes.iter().enumerate().take(MAX_PREFIX) {
        let bits = u32::from(byte & 0x7F);
        if i == 4 && bits > 0x0F {
            return None;
        }
        value |= bits << (7 * i);
        if byte & 0x80 == 0 {
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
}

#[derive(Debug, Default)]
struct SendLane {
    next: u32,
    retained: VecDeque<Retained>,
}

#[derive(Debug)]
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

    /// Whether `index` is new; an error when no honest peer sends it now.
    fn admit(&mut self, index: u32, ordered: bool) -> Result<bool, DeliveryError> {
        let ahead = distance_u32(self.expected, index);
        if ahead < 0 {
            return Ok(false);
        }
        let beyond = DeliveryError::BeyondWindow {
            index,
            expected: self.expected,
        };
        if ordered {
            // Copies come again in order from an index the peer had not confirmed, so on an
            // ordered channel the next new one is always the one expected.
            return match ahead {
                0 => {
                    self.expected = self.expected.wrapping_add(1);
                    Ok(true)
                }
                _ => Err(beyond),
            };
        }
        if ahead >= MAX_RETAINED as i64 {
            return Err(beyond);
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

/// What arrived on a reliable or control channel, for the member.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Arrived {
    /// Deliver these bytes to the application (the index prefix is gone).
    Deliver(Vec<u8>),
    /// Nothing to deliver (a copy already delivered, a held message, a control message).
    Nothing,
}

/// One peer's reliable delivery, across its link's connections.
#[derive(Debug)]
pub(crate) struct Delivery {
    /// Our life for this peer: new each time the member meets the peer afresh.
    life: u64,
    /// The application channels' count: the control channel's index.
    control: u8,
    /// The reliable channels, with their index.
    lanes: Vec<Lane>,
    /// The life of the peer's we last counted with (`None` before the first hello).
    peer_life: Option<u64>,
    /// The current connection's hello from the peer was taken in.
    hello_in: bool,
    /// The peer took in our hello of the current connection.
    hello_acked: bool,
    /// Reliable messages of the current connection that came before its hello.
    held: Vec<(u8, Vec<u8>)>,
    spare: Vec<Vec<u8>>,
}

impl Delivery {
    /// Delivery for the application's `channels`; `life` is random.
    pub(crate) fn new(life: u64, channels: &[ChannelKind]) -> Delivery {
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
            life,
            control: channels.len() as u8,
            lanes,
            peer_life: None,
            hello_in: false,
            hello_acked: false,
            held: Vec::new(),
            spare: Vec::new(),
        }
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

    /// Whether a reliable message of `len` bytes can be queued on `channel` of `core` now.
    pub(crate) fn check(
        &self,
        core: &Connection,
        channel: u8,
        len: usize,
    ) -> Result<(), SendError> {
        let Some(lane) = self.lanes.iter().find(|l| l.channel == channel) else {
            return core.check_send(channel, len);
        };
        // Copies still waiting for room in the window go first; a new one waits with them.
        let backlog = lane.send.retained.back().is_some_and(|r| r.ids.is_none());
        if lane.send.retained.len() >= MAX_RETAINED || backlog {
            return Err(SendError::WindowFull {
                channel,
                needed: 1,
                free: 0,
            });
        }
        core.check_send(channel, len + MAX_PREFIX)
    }

    /// Queues `payload` on reliable `channel` of `core` (checked with [`check`](Self::check)),
    /// keeping a copy until the peer confirms it.
    pub(crate) fn send(
        &mut self,
        core: &mut Connection,
        channel: u8,
        payload: &[u8],
    ) -> Result<(), SendError> {
        self.check(core, channel, payload.len())?;
        let Some(lane) = self.lanes.iter_mut().find(|l| l.channel == channel) else {
            return core.send(channel, payload);
        };
        let mut framed = self.spare.pop().unwrap_or_default();
        framed.clear();
        put_varint(&mut framed, lane.send.next);
        framed.extend_from_slice(payload);
        let first = core.reliable_ids(channel).map(|(_, next)| next);
        core.send(channel, &framed)?;
        let end = core.reliable_ids(channel).map(|(_, next)| next);
        lane.send.retained.push_back(Retained {
            index: lane.send.next,
            framed,
            ids: first.zip(end),
        });
        lane.send.next = lane.send.next.wrapping_add(1);
        Ok(())
    }

    /// A new connection is up: say hello, then send every copy the peer has not confirmed,
    /// in order. On error the connection cannot carry reliable messages: drop it.
    pub(crate) fn connected(&mut self, core: &mut Connection) -> Result<(), DeliveryError> {
        self.hello_in = false;
        self.hello_acked = false;
        self.held.clear();
        let hello = self.hello();
        for lane in &mut self.lanes {
            for retained in &mut lane.send.retained {
                retained.ids = None;
            }
        }
        core.send(self.control, &hello)
            .map_err(DeliveryError::ControlRefused)?;
        self.flush(core);
        Ok(())
    }

    /// This connection's hello: our life, and where each reliable channel (re)starts: the
    /// oldest copy the peer has not confirmed, or the next new message.
    fn hello(&self) -> Vec<u8> {
        let mut hello = Vec::with_capacity(10 + 5 * self.lanes.len());
        hello.push(HELLO);
        hello.extend_from_slice(&self.life.to_le_bytes());
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

    /// Queues copies that did not fit the window yet, in order; drops the copies the peer
    /// confirmed.
    pub(crate) fn flush(&mut self, core: &mut Connection) {
        for lane in &mut self.lanes {
            for retained in lane.send.retained.iter_mut().filter(|r| r.ids.is_none()) {
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
            }
            if !self.hello_acked {
                continue;
            }
            let Some((oldest, _)) = core.reliable_ids(lane.channel) else {
                continue;
            };
            while let Some(front) = lane.send.retained.front() {
                match front.ids {
                    Some((_, end)) if distance(end, oldest) >= 0 => {
                        if let Some(done) = lane.send.retained.pop_front()
                            && self.spare.len() < MAX_SPARE
                        {
                            self.spare.push(done.framed);
                        }
                    }
                    _ => break,
                }
            }
        }
    }

    /// A message arrived on a reliable `channel` or the control channel of the current
    /// connection. On error nothing was delivered and nothing changed.
    pub(crate) fn arrived(
        &mut self,
        core: &mut Connection,
        channel: u8,
        bytes: Vec<u8>,
        deliver: &mut dyn FnMut(u8, Vec<u8>),
    ) -> Result<(), DeliveryError> {
        if channel == self.control {
            return self.control(core, &bytes, deliver);
        }
        if !self.hello_in {
            if self.held.len() >= MAX_HELD {
                return Err(DeliveryError::TooManyHeld);
            }
            get_varint(&bytes).ok_or(DeliveryError::NoIndex)?;
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
        deliver: &mut dyn FnMut(u8, Vec<u8>),
    ) -> Result<(), DeliveryError> {
        match bytes.first() {
            Some(&HELLO) => {
                let (life, bases) = parse_hello(bytes).ok_or(DeliveryError::Control)?;
                if self.hello_in {
                    return Ok(());
                }
                if self.peer_life != Some(life) {
                    // The peer counts from scratch (or we never met it): take its numbering.
                    for lane in &mut self.lanes {
                        let base = bases
                            .clone()
                            .find(|(channel, _)| *channel == lane.channel)
                            .map_or(0, |(_, base)| base);
                        lane.receive.restart_at(base);
                    }
                    self.peer_life = Some(life);
                }
                self.hello_in = true;
                let mut ack = [0u8; 9];
                ack[0] = HELLO_ACK;
                ack[1..].copy_from_slice(&life.to_le_bytes());
                core.send(self.control, &ack)
                    .map_err(DeliveryError::ControlRefused)?;
                for (channel, bytes) in std::mem::take(&mut self.held) {
                    // A held copy that fails now is dropped, as on arrival.
                    if let Ok(Arrived::Deliver(bytes)) = self.accept(channel, bytes) {
                        deliver(channel, bytes);
                    }
                }
                Ok(())
            }
            Some(&HELLO_ACK) => {
                let life = bytes
                    .get(1..9)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_le_bytes)
                    .ok_or(DeliveryError::Control)?;
                if life == self.life {
                    self.hello_acked = true;
                }
                Ok(())
            }
            // A later member's control message: ignored.
            Some(_) => Ok(()),
            None => Err(DeliveryError::Control),
        }
    }

    /// The peer is gone for good: every copy it never confirmed, as `(channel, payload)`.
    pub(crate) fn unconfirmed(&mut self) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        for lane in &mut self.lanes {
            for mut retained in lane.send.retained.drain(..) {
                let len = get_varint(&retained.framed).map_or(0, |(_, len)| len);
                retained.framed.drain(..len);
                out.push((lane.channel, retained.framed));
            }
        }
        out
    }

    /// Copies kept for the peer, all channels.
    pub(crate) fn retained(&self) -> usize {
        self.lanes.iter().map(|l| l.send.retained.len()).sum()
    }
}

/// `hello`: `1 ‖ life (u64 LE) ‖ n (u8) ‖ n × (channel (u8) ‖ base (u32 LE))`.
fn parse_hello(bytes: &[u8]) -> Option<(u64, impl Iterator<Item = (u8, u32)> + Clone + '_)> {
    let life = u64::from_le_bytes(bytes.get(1..9)?.try_into().ok()?);
    let count = usize::from(*bytes.get(9)?);
    let entries = bytes.get(10..)?;
    if entries.len() != count * 5 {
        return None;
    }
    let bases = entries.chunks_exact(5).map(|entry| {
        let base = u32::from_le_bytes([entry[1], entry[2], entry[3], entry[4]]);
        (entry[0], base)
    });
    Some((life, bases))
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
        let mut acceptor = Acceptor::new(config(), [3; 32]).unwrap();
        let mut client = Connection::connect(config(), now).unwrap();
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
                    .arrived(to, channel, bytes, &mut |_, b| got.push(b))
                    .unwrap();
            }
        }
        delivery.flush(to);
    }

    #[test]
    fn a_copy_is_kept_until_the_peer_took_our_hello_so_messages_it_held_are_not_lost() {
        let kinds = [ChannelKind::ReliableOrdered];
        let (mut sender, mut receiver) = (Delivery::new(1, &kinds), Delivery::new(2, &kinds));
        let mut got = Vec::new();
        let mut now = Duration::ZERO;
        // A connection whose first packet (the sender's hello) is lost.
        let (mut s, mut r) = pair(now);
        sender.connected(&mut s).unwrap();
        receiver.connected(&mut r).unwrap();
        carry(now, &mut s, &mut r, &mut receiver, &mut got, |_| false);
        sender.send(&mut s, 0, b"one").unwrap();
        sender.send(&mut s, 0, b"two").unwrap();
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
        let life = u64::from_str_radix(field(fields, "life").trim_start_matches("0x"), 16).unwrap();
        // Channels 1 and 2 reliable; channel 2 resumes at index 300.
        let kinds = [
            ChannelKind::Unreliable,
            ChannelKind::ReliableOrdered,
            ChannelKind::ReliableUnordered,
        ];
        let mut delivery = Delivery::new(life, &kinds);
        delivery.lanes[1].send.next = 300;
        assert_eq!(&delivery.hello(), hello);
        let (parsed, bases) = parse_hello(hello).unwrap();
        assert_eq!(parsed, life);
        assert_eq!(bases.collect::<Vec<_>>(), [(1, 0), (2, 300)]);
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
