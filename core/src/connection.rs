//! A connection: the handshake state machine, channels of messages over the packet layer,
//! keep-alive, timeout and disconnect, behind one sans-IO API.
//!
//! A connector makes one with [`Connection::connect`]; an acceptor's
//! [`Acceptor::receive`](crate::Acceptor::receive) hands one out when a peer completes the
//! cookie handshake. After that both sides are the same type and are driven the same way:
//! [`receive`](Connection::receive) every datagram from the peer,
//! [`poll_transmit`](Connection::poll_transmit) until it returns `None`, drain
//! [`poll_event`](Connection::poll_event), and call back at
//! [`poll_timeout`](Connection::poll_timeout).
//!
//! Keep-alive: once connected the packet layer sends a packet at its paced rate (30 or 10
//! per second) whether or not there are messages, so an idle connection's packets are its
//! keep-alives (a 5-byte header with acks, no payload). A connection that takes in no data
//! packet for `idle_timeout` is closed with [`DisconnectReason::TimedOut`], sending no
//! disconnect (the peer is presumed gone).

use core::time::Duration;
use std::collections::VecDeque;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::channel::{Buffered, ChannelKind, Channels, SendError, max_unreliable};
use crate::config::{Config, ConfigError};
pub use crate::connection_state::ConnectionState;
use crate::control::{ControlError, ControlPacket, Cookie, is_control};
use crate::endpoint::{CONNECTION_TAG_LEN, Endpoint, Event, ReceiveError, Settings, TransmitError};
use crate::frame::{FrameError, MAX_CHANNELS};
use crate::key_exchange::{HANDSHAKE_MESSAGE_LEN, Initiator, KeyExchangeError, PUBLIC_KEY_LEN};
use crate::protection::{PacketKeys, ProtectError, TAG_LEN};
use crate::reliable::RELEASE_AFTER;
use crate::stats::Stats;
use crate::time::{NEVER, duration, nanos, set};
use crate::wire::{Packet, PacketHeader};

/// The default protocol id: "ackwire" in ASCII followed by the protocol revision, 1.
pub const DEFAULT_PROTOCOL_ID: u64 = u64::from_be_bytes(*b"ackwire\x01");

/// Everything a connection (and an acceptor) is configured with. `default()` gives the
/// documented defaults; both peers must use the same `protocol_id` and `channels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConnectionConfig {
    /// The packet layer: rates, congestion avoidance, loss timeout. Default
    /// [`Config::default`].
    pub packet: Config,
    /// Checked in the handshake; a peer with another id is refused. Default
    /// [`DEFAULT_PROTOCOL_ID`]. Pick your own per game and per incompatible release.
    pub protocol_id: u64,
    /// The channels, by index (at most 64). Default: channel 0 unreliable-sequenced (inputs,
    /// snapshots), channel 1 reliable-ordered (events, chat, state changes).
    pub channels: Vec<ChannelKind>,
    /// Largest datagram sent, headers included. Default 1200 bytes, the seeds' payload size
    /// that crosses the Internet without IP fragmentation.
    pub max_datagram_size: usize,
    /// Unreliable messages each channel queues before [`SendError::QueueFull`]. Default 256,
    /// at most [`MAX_UNRELIABLE_QUEUE_LEN`].
    pub unreliable_queue_len: usize,
    /// A reliable message is sent again when unacked for `max(this, 1.5 × RTT)`. Default
    /// 100 ms (three packets at 30 pps).
    pub min_resend_interval: Duration,
    /// Interval between repeated connect requests and responses. Default 250 ms.
    pub handshake_resend_interval: Duration,
    /// A connector gives up after this long without being accepted. Default 5 s.
    pub handshake_timeout: Duration,
    /// A connection that takes in no data packet for this long is closed (control packets do
    /// not count). Default 10 s (keep-alives arrive 10 to 30 times a second; NATs keep a
    /// mapping for at least ~15 s of silence).
    pub idle_timeout: Duration,
    /// An acceptor honours a cookie for this long after making it. Default 10 s.
    pub cookie_lifetime: Duration,
    /// Disconnect packets sent on close (they are not acked, so several are sent). Default 3.
    pub disconnect_copies: u8,
    /// Cookies an acceptor remembers as used (for `cookie_lifetime`) to refuse replays.
    /// Default 1024; when full of unexpired entries, new connections are refused with
    /// `Busy` until entries expire.
    pub replay_cache_len: usize,
}

setters!(ConnectionConfig {
    with_packet => packet: Config,
    with_protocol_id => protocol_id: u64,
    with_channels => channels: Vec<ChannelKind>,
    with_max_datagram_size => max_datagram_size: usize,
    with_unreliable_queue_len => unreliable_queue_len: usize,
    with_min_resend_interval => min_resend_interval: Duration,
    with_handshake_resend_interval => handshake_resend_interval: Duration,
    with_handshake_timeout => handshake_timeout: Duration,
    with_idle_timeout => idle_timeout: Duration,
    with_cookie_lifetime => cookie_lifetime: Duration,
    with_disconnect_copies => disconnect_copies: u8,
    with_replay_cache_len => replay_cache_len: usize,
});

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            packet: Config::default(),
            protocol_id: DEFAULT_PROTOCOL_ID,
            channels: vec![
                ChannelKind::UnreliableSequenced,
                ChannelKind::ReliableOrdered,
            ],
            max_datagram_size: 1200,
            unreliable_queue_len: 256,
            min_resend_interval: Duration::from_millis(100),
            handshake_resend_interval: Duration::from_millis(250),
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(10),
            cookie_lifetime: Duration::from_secs(10),
            disconnect_copies: 3,
            replay_cache_len: 1024,
        }
    }
}

/// Largest `unreliable_queue_len`: over 18 minutes of backlog at 30 packets/s, and a bound
/// that keeps a full queue of the largest datagrams within 32-bit offsets.
pub const MAX_UNRELIABLE_QUEUE_LEN: usize = 32768;

/// Smallest `max_datagram_size`: a full-length reliable fragment must fit one packet, with
/// the connection tag of a plain connection on raw UDP ([`CONNECTION_TAG_LEN`]).
pub const MIN_DATAGRAM_SIZE: usize =
    PacketHeader::MAX_LEN + 6 + crate::frame::FRAGMENT_SIZE + CONNECTION_TAG_LEN;

/// Smallest `max_datagram_size` of a protected (encrypted) connection: a full fragment and
/// the 16-byte tag ([`Connection::protect`], [`Connection::secure`]).
pub const MIN_PROTECTED_DATAGRAM_SIZE: usize = MIN_DATAGRAM_SIZE - CONNECTION_TAG_LEN + TAG_LEN;

/// Why a [`ConnectionConfig`] was refused.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
#[non_exhaustive]
pub enum ConnectionConfigError {
    /// The packet layer's part is invalid.
    #[error(transparent)]
    Packet(#[from] ConfigError),
    /// There are no channels, or more than 64.
    #[error("{0} channels configured; 1 to 64 are allowed")]
    ChannelCount(usize),
    /// `max_datagram_size` cannot hold a full fragment, or exceeds 65507 (the UDP maximum).
    #[error("max_datagram_size {0} is outside {MIN_DATAGRAM_SIZE}..=65507")]
    DatagramSize(usize),
    /// A timeout, interval or queue length is zero.
    #[error("{0} must be non-zero")]
    Zero(&'static str),
    /// `unreliable_queue_len` exceeds [`MAX_UNRELIABLE_QUEUE_LEN`].
    #[error("unreliable_queue_len {0} exceeds {MAX_UNRELIABLE_QUEUE_LEN}")]
    QueueLen(usize),
}

impl ConnectionConfig {
    /// The largest unreliable message every connection of this configuration takes: one
    /// that fits an otherwise empty packet with its trailer, the 16-byte tag when the
    /// connection is protected (`protected`), else the 4-byte connection tag a plain
    /// connection on raw UDP ends each packet with (a connection on a data channel takes 4
    /// bytes more).
    pub fn max_unreliable_message(&self, protected: bool) -> usize {
        let tag = if protected {
            TAG_LEN
        } else {
            CONNECTION_TAG_LEN
        };
        max_unreliable(self.max_datagram_size, PacketHeader::MAX_LEN + tag)
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConnectionConfigError> {
        self.packet.validate()?;
        if self.channels.is_empty() || self.channels.len() > MAX_CHANNELS {
            return Err(ConnectionConfigError::ChannelCount(self.channels.len()));
        }
        if !(MIN_DATAGRAM_SIZE..=65507).contains(&self.max_datagram_size) {
            return Err(ConnectionConfigError::DatagramSize(self.max_datagram_size));
        }
        if self.unreliable_queue_len > MAX_UNRELIABLE_QUEUE_LEN {
            return Err(ConnectionConfigError::QueueLen(self.unreliable_queue_len));
        }
        let zero = [
            (self.unreliable_queue_len == 0, "unreliable_queue_len"),
            (
                self.handshake_resend_interval.is_zero(),
                "handshake_resend_interval",
            ),
            (self.handshake_timeout.is_zero(), "handshake_timeout"),
            (self.idle_timeout.is_zero(), "idle_timeout"),
            (self.cookie_lifetime.is_zero(), "cookie_lifetime"),
            (self.disconnect_copies == 0, "disconnect_copies"),
            (self.replay_cache_len == 0, "replay_cache_len"),
        ];
        match zero.into_iter().find(|(bad, _)| *bad) {
            Some((_, name)) => Err(ConnectionConfigError::Zero(name)),
            None => Ok(()),
        }
    }
}

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DisconnectReason {
    /// [`Connection::close`] was called here.
    Closed,
    /// The peer sent a disconnect.
    ClosedByPeer,
    /// No data packet was taken in for `idle_timeout`.
    TimedOut,
    /// The acceptor never completed the handshake within `handshake_timeout`.
    HandshakeTimedOut,
    /// A packet key reached its limit (see [`KeyLimit`](crate::KeyLimit)): this side stopped
    /// rather than seal another packet or open one more forgery. Disconnects are sent.
    KeyExhausted,
    /// The acceptor's static key is not the one this connector expects (pinned, or known
    /// from signalling): another server, or a man in the middle. Nothing was sent after.
    AcceptorKeyMismatch,
    /// The acceptor's answer to the key exchange did not authenticate: it does not hold the
    /// private half of the key it showed, or does not know ours.
    KeyExchangeFailed,
    /// This connector requires encryption and the acceptor answered without it (it runs
    /// with encryption off, `--insecure`).
    Unencrypted,
}

/// Something the application should know about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionEvent {
    /// The handshake completed; messages flow. Reported once.
    Connected {
        /// The connection's random 64-bit id (the same on both sides).
        connection_id: u64,
    },
    /// A message arrived (exactly once and in order where the channel promises it).
    Message {
        /// The channel it was sent on.
        channel: u8,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// The packet layer's congestion mode changed, and with it the send rate (30 or 10
    /// packets/s by default). Worth a log line or a HUD icon; nothing to do about it.
    ModeChanged {
        /// The new mode.
        mode: crate::congestion::Mode,
        /// How long good conditions must now last before the next switch back to good.
        recovery_time: Duration,
    },
    /// The connection ended; this is the last event.
    Disconnected {
        /// Why.
        reason: DisconnectReason,
    },
}

/// Why a datagram was refused by [`Connection::receive`]. A refused datagram changes no state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConnectionError {
    /// The datagram is empty.
    #[error("empty datagram")]
    Empty,
    /// A malformed control packet.
    #[error("malformed control packet: {0}")]
    Control(#[from] ControlError),
    /// The packet layer refused it: malformed header, duplicate, stale, or impossible ack.
    #[error("packet refused: {0}")]
    Packet(#[from] ReceiveError),
    /// The payload's message frames are malformed or impossible for these channels.
    #[error("message frames refused: {0}")]
    Frame(#[from] FrameError),
    /// A data packet before the handshake completed, or after the connection closed.
    #[error("data packet while {0:?}")]
    NotConnected(ConnectionState),
    /// A control packet this side does not expect now (e.g. a second challenge, or a
    /// connect request sent to an established connection); harmless repeats land here.
    #[error("unexpected {packet} while {state:?}")]
    Unexpected {
        /// The control packet's name.
        packet: &'static str,
        /// This connection's state.
        state: ConnectionState,
    },
    /// The acceptor's static key in its challenge is not a valid X25519 key.
    #[error("key exchange: {0}")]
    KeyExchange(#[from] KeyExchangeError),
    /// An accepted or disconnect packet for another connection id.
    #[error("packet for connection {got:#018x}, this is {expected:#018x}")]
    WrongConnectionId {
        /// This connection's id.
        expected: u64,
        /// The id in the packet.
        got: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Sending connect requests, waiting for a challenge.
    Requesting,
    /// Sending channel requests, waiting for `Accepted` (the channel handshake: see
    /// [`Connection::connect_on_channel`]).
    ChannelRequesting,
    /// Sending the echoed cookie (`Connection::cookie`), waiting for `Accepted`.
    Responding,
    Connected,
    Closing {
        copies_left: u8,
    },
    Closed,
}

/// Reliable frames `(channel, id)` that rode in the packet with this sequence.
type PacketRecord = (Option<u16>, Vec<(u8, u16)>);

/// Slots the records ring starts with (see `Connection::record_slot`): a packet with reliable
/// frames every few packets, resolved within a round trip, fits without growing.
const MIN_RECORDS: usize = 16;

/// The connection's pending events, first in first out. The usual case is one event at a
/// time (a packet's message, taken before the next packet arrives), which is kept inside the
/// connection: a server with thousands of connections would otherwise miss in cache on a
/// separately allocated queue on every message, once when queueing it and once when taking
/// it. Only a second event waiting behind it goes to the heap.
#[derive(Debug, Default)]
struct EventQueue {
    /// The oldest pending event; none only when the queue is empty.
    first: Option<ConnectionEvent>,
    /// The events behind `first`, allocated while there are any (a pointer, not a 32-byte
    /// `VecDeque`, in the connection's hot lines).
    #[allow(clippy::box_collection)]
    more: Option<Box<VecDeque<ConnectionEvent>>>,
}

impl EventQueue {
    fn push_back(&mut self, event: ConnectionEvent) {
        if self.first.is_none() {
            self.first = Some(event);
        } else {
            self.more.get_or_insert_default().push_back(event);
        }
    }

    fn pop_front(&mut self) -> Option<ConnectionEvent> {
        let event = self.first.take()?;
        if let Some(more) = &mut self.more {
            self.first = more.pop_front();
            if more.is_empty() {
                self.more = None;
            }
        }
        Some(event)
    }

    fn is_empty(&self) -> bool {
        self.first.is_none()
    }
}

/// One connection, either role, as a sans-IO state machine. See the [crate docs](crate).
///
/// Laid out in order (`repr(C)`): what every data packet touches first (with the packet
/// layer's hot fields right after), then the handshake's state and the reliable-frame
/// records, so a server with thousands of connections reads as few cache lines per packet
/// as it can.
#[derive(Debug)]
#[repr(C)]
pub struct Connection {
    /// Shared with the acceptor and its other connections (see `Endpoint::config`).
    config: Arc<ConnectionConfig>,
    /// When the last packet arrived. Times are nanoseconds (see `crate::time`); the latest
    /// time seen is the endpoint's clock, in every phase.
    last_received: u64,
    /// Records holding frames. While none does (unreliable traffic only) acks and losses
    /// skip the ring: with thousands of connections each ring lookup is a cache miss.
    records_live: u16,
    phase: Phase,
    /// Acceptor side: an `Accepted` packet goes out before the next data packet.
    accepted_due: bool,
    /// Made by an acceptor (answers repeated connect responses).
    is_acceptor: bool,
    /// A data packet from the peer was taken in. On a cookie acceptor's connection that proves
    /// the connector heard `accepted`, so a connect response arriving after it is no repeat
    /// of the one accepted: it is late, or it is a restarted connector's, which must not be
    /// accepted onto this connection's sequences (it would be acked and never delivered). It
    /// is refused, and nothing answers it. (A channel connector sends data before it hears
    /// `accepted`: on a channel a repeated request is answered whatever came.)
    heard_data: bool,
    /// Made by a [`ChannelAcceptor`](crate::ChannelAcceptor): the one kind of connection
    /// that answers a repeated channel request. One made by the cookie handshake refuses a
    /// channel request (`Unexpected`) and answers nothing, as its acceptor does.
    on_channel: bool,
    events: EventQueue,
    channels: Channels,
    endpoint: Endpoint,
    started: u64,
    next_handshake_at: u64,
    connection_id: Option<u64>,
    /// The challenge's cookie, echoed while `Responding` (zero before).
    cookie: Cookie,
    /// Where a packet's reliable frames are gathered before they go into the ring; empty
    /// between packets.
    record_scratch: Vec<(u8, u16)>,
    /// A message queued since [`take_rearm`](Self::take_rearm) moved `poll_timeout` earlier.
    rearm: bool,
    /// Reliable frames per sent packet, in a ring tagged by sequence (like the sent ring):
    /// empty until the first reliable frame is sent, then grown as needed
    /// ([`record_slot`](Self::record_slot)), and freed with the reliable windows' rings once
    /// reliable traffic is quiet ([`release_when_quiet`](Self::release_when_quiet)).
    records: Vec<PacketRecord>,
    /// A protected connection given a datagram by [`receive`](Connection::receive) opens
    /// it here (it decrypts in place); empty until then.
    scratch: Vec<u8>,
    /// When reliable traffic was last seen (a reliable message queued or in flight at a
    /// packet sent, or a reliable frame received): the storage it grew is freed
    /// [`RELEASE_AFTER`] after this (see [`release_when_quiet`](Self::release_when_quiet)).
    reliable_seen_at: u64,
    /// The key exchange of a secure handshake ([`secure`](Self::secure)); none for a plain one.
    secure: Option<Box<Secure>>,
}

/// A secure handshake's state ([`crate::key_exchange`]).
#[derive(Debug)]
struct Secure {
    /// Connector: the exchange, until the acceptor's answer is taken.
    initiator: Option<Box<dyn Initiator>>,
    /// Connector: the first message, resent until answered. Acceptor: the answer, resent
    /// if the connector repeats its response.
    message: [u8; HANDSHAKE_MESSAGE_LEN],
    /// Connector: the acceptor's static key, once its challenge was taken.
    acceptor_key: Option<[u8; PUBLIC_KEY_LEN]>,
}

impl Connection {
    /// A connector at time `now`: it starts sending connect requests at once.
    pub fn connect(
        config: ConnectionConfig,
        now: Duration,
    ) -> Result<Connection, ConnectionConfigError> {
        let packet = Arc::new(Settings::new(config.packet.clone())?);
        let mut connection = Connection::new(Arc::new(config), packet, now, Phase::Requesting)?;
        // Messages queued while connecting must fit the tagged packets they will ride.
        connection.channels.set_max_unreliable(max_unreliable(
            connection.config.max_datagram_size,
            PacketHeader::MAX_LEN + CONNECTION_TAG_LEN,
        ));
        Ok(connection)
    }

    /// A connector for an authenticated channel (a WebRTC data channel, whose ICE checks
    /// proved the path and whose DTLS handshake authenticated the peer), at time `now`: it
    /// sends channel requests, which a [`ChannelAcceptor`] answers with `accepted` at once. One
    /// round trip where [`connect`](Self::connect) takes two; the cookie round trip it skips
    /// stops spoofed sources, which such a channel cannot have. It sends early: its data
    /// packets (with the messages queued so far) leave between its requests, the first right
    /// behind the first request, so the acceptor takes them as it accepts and the connector
    /// hears them acked with `accepted`; it stays [`Connecting`](ConnectionState::Connecting)
    /// until then. An acceptor on raw UDP refuses it
    /// ([`HandshakeError::ChannelRequest`](crate::HandshakeError::ChannelRequest)). The
    /// connection is plaintext at this layer (DTLS encrypts the channel): [`secure`] refuses
    /// it.
    ///
    /// [`ChannelAcceptor`]: crate::ChannelAcceptor
    /// [`secure`]: Self::secure
    pub fn connect_on_channel(
        config: ConnectionConfig,
        now: Duration,
    ) -> Result<Connection, ConnectionConfigError> {
        let packet = Arc::new(Settings::new(config.packet.clone())?);
        Connection::new(Arc::new(config), packet, now, Phase::ChannelRequesting)
    }

    /// The acceptor side of a handshake just completed with cookie nonce `connection_id`.
    /// `answer` is the key exchange's answer of a secure handshake.
    pub(crate) fn accepted(
        config: Arc<ConnectionConfig>,
        packet: Arc<Settings>,
        now: Duration,
        connection_id: u64,
        answer: Option<[u8; HANDSHAKE_MESSAGE_LEN]>,
    ) -> Self {
        let mut connection = Connection::new(config, packet, now, Phase::Connected)
            .expect("acceptor validated config");
        connection.secure = answer.map(|message| {
            Box::new(Secure {
                initiator: None,
                message,
                acceptor_key: None,
            })
        });
        connection.connection_id = Some(connection_id);
        if connection.secure.is_none() {
            // A plain connection of the cookie handshake; one with keys (given right after
            // this, or the answer's) is bound by them instead.
            connection.bind_to_id();
        }
        connection.accepted_due = true;
        connection.is_acceptor = true;
        connection
            .events
            .push_back(ConnectionEvent::Connected { connection_id });
        connection
    }

    /// The acceptor side of a channel handshake ([`ChannelAcceptor`](crate::ChannelAcceptor)),
    /// just answered with `connection_id`: like [`accepted`](Self::accepted), and it answers a
    /// repeated channel request with `accepted` again.
    pub(crate) fn accepted_on_channel(
        config: Arc<ConnectionConfig>,
        packet: Arc<Settings>,
        now: Duration,
        connection_id: u64,
    ) -> Self {
        let mut connection = Connection::new(config, packet, now, Phase::Connected)
            .expect("acceptor validated config");
        connection.connection_id = Some(connection_id);
        connection.accepted_due = true;
        connection.is_acceptor = true;
        connection.on_channel = true;
        connection
            .events
            .push_back(ConnectionEvent::Connected { connection_id });
        connection
    }

    /// Binds every data packet to this connection with its connection tag (the low 32 bits
    /// of its id; `docs/wire.md`, "The connection tag"), unless keys already bind them.
    fn bind_to_id(&mut self) {
        if self.endpoint.is_protected() {
            return;
        }
        let id = self.connection_id.expect("bound once the id is known");
        self.endpoint.bind((id as u32).to_be_bytes());
        self.channels.set_max_unreliable(max_unreliable(
            self.config.max_datagram_size,
            PacketHeader::MAX_LEN + CONNECTION_TAG_LEN,
        ));
    }

    fn new(
        config: Arc<ConnectionConfig>,
        packet: Arc<Settings>,
        now: Duration,
        phase: Phase,
    ) -> Result<Connection, ConnectionConfigError> {
        config.validate()?;
        let now = nanos(now);
        let mut endpoint = Endpoint::with_settings(packet, now);
        // Until a packet carries reliable frames (see `records_live`).
        endpoint.set_packet_events(false);
        let channels = Channels::new(
            &config.channels,
            config.unreliable_queue_len,
            max_unreliable(config.max_datagram_size, PacketHeader::MAX_LEN),
        );
        Ok(Connection {
            config,
            phase,
            cookie: Cookie {
                timestamp_ms: 0,
                nonce: [0; 8],
                mac: [0; 16],
            },
            started: now,
            next_handshake_at: now,
            connection_id: None,
            is_acceptor: false,
            heard_data: false,
            on_channel: false,
            accepted_due: false,
            last_received: now,
            endpoint,
            channels,
            records: Vec::new(),
            records_live: 0,
            record_scratch: Vec::new(),
            rearm: false,
            scratch: Vec::new(),
            reliable_seen_at: now,
            events: EventQueue::default(),
            secure: None,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &ConnectionConfig {
        &self.config
    }

    /// Protects every data packet of this connection with `keys` (see
    /// [`crate::protection`]): payloads sealed under `keys.local`, the peer's opened under
    /// `keys.remote`, 16 bytes of tag per packet, so unreliable messages get 16 bytes less
    /// room. Call it right after [`connect`](Self::connect), or on the connection an
    /// acceptor hands out (or give the acceptor a [`KeySource`](crate::protection::KeySource)):
    /// it is refused once a message was queued or a data packet sent or received. The peer
    /// must protect its side with the same two keys, roles swapped. Control packets
    /// (handshake, disconnect) are not protected (see `docs/wire.md`).
    pub fn protect(&mut self, keys: PacketKeys) -> Result<(), ProtectError> {
        let datagram = self.config.max_datagram_size;
        if datagram < MIN_PROTECTED_DATAGRAM_SIZE {
            return Err(ProtectError::DatagramSize(datagram));
        }
        if self.channels.counters.sent > 0 {
            return Err(ProtectError::TrafficStarted);
        }
        self.endpoint.protect(keys)?;
        self.channels
            .set_max_unreliable(max_unreliable(datagram, PacketHeader::MAX_LEN + TAG_LEN));
        Ok(())
    }

    /// Runs the key exchange ([`crate::key_exchange`]) in the handshake, with `initiator`,
    /// and protects every data packet with the keys it derives: the connector's side of an
    /// [`Acceptor::with_responder`](crate::Acceptor::with_responder). Call it right after
    /// [`connect`](Self::connect); refused once the challenge was taken, when already
    /// protected or secure, or when `max_datagram_size` has no room for the tag. The
    /// connection ends with [`DisconnectReason::AcceptorKeyMismatch`],
    /// [`KeyExchangeFailed`](DisconnectReason::KeyExchangeFailed) or
    /// [`Unencrypted`](DisconnectReason::Unencrypted) rather than talk to an acceptor the
    /// exchange does not prove.
    pub fn secure(&mut self, initiator: impl Initiator + 'static) -> Result<(), ProtectError> {
        let datagram = self.config.max_datagram_size;
        if datagram < MIN_PROTECTED_DATAGRAM_SIZE {
            return Err(ProtectError::DatagramSize(datagram));
        }
        if self.secure.is_some() || self.endpoint.is_protected() {
            return Err(ProtectError::AlreadyProtected);
        }
        match self.phase {
            Phase::Requesting => {}
            Phase::ChannelRequesting => return Err(ProtectError::ChannelHandshake),
            _ => return Err(ProtectError::TrafficStarted),
        }
        self.secure = Some(Box::new(Secure {
            initiator: Some(Box::new(initiator)),
            message: [0; HANDSHAKE_MESSAGE_LEN],
            acceptor_key: None,
        }));
        // Messages queued while connecting must fit the protected packets they will ride.
        self.channels
            .set_max_unreliable(max_unreliable(datagram, PacketHeader::MAX_LEN + TAG_LEN));
        Ok(())
    }

    /// The acceptor's static public key from its secure challenge (connector side): the
    /// pinned one once connected, or the key accepted on first use; also set when the
    /// connection ended with [`DisconnectReason::AcceptorKeyMismatch`].
    pub fn acceptor_key(&self) -> Option<[u8; PUBLIC_KEY_LEN]> {
        self.secure.as_ref().and_then(|s| s.acceptor_key)
    }

    /// True when data packets are protected ([`protect`](Self::protect), or a completed
    /// secure handshake).
    pub fn is_protected(&self) -> bool {
        self.endpoint.is_protected()
    }

    /// Where the connection is in its life.
    pub fn state(&self) -> ConnectionState {
        match self.phase {
            Phase::Requesting | Phase::ChannelRequesting | Phase::Responding => {
                ConnectionState::Connecting
            }
            Phase::Connected => ConnectionState::Connected,
            Phase::Closing { .. } => ConnectionState::Closing,
            Phase::Closed => ConnectionState::Closed,
        }
    }

    /// The connection's id, once known (on the connector: once accepted).
    pub fn connection_id(&self) -> Option<u64> {
        self.connection_id
    }

    /// Largest message `channel` accepts (`None` for an unknown channel): 256 KiB on
    /// reliable channels, one packet's worth on unreliable ones.
    pub fn max_message_size(&self, channel: u8) -> Option<usize> {
        self.channels.max_message(channel)
    }

    /// How many more messages [`send`](Self::send) queues on unreliable `channel` now before
    /// [`SendError::QueueFull`] (`send_latest` always has room: it replaces). `None` for a
    /// reliable or unknown channel.
    pub fn queue_room(&self, channel: u8) -> Option<usize> {
        self.channels.queue_room(channel)
    }

    /// Whether [`send`](Self::send) would queue a message of `len` bytes on `channel` now,
    /// and if not, the error it would return: lets a caller sending one message to several
    /// connections check them all before it queues on any.
    pub fn check_send(&self, channel: u8, len: usize) -> Result<(), SendError> {
        if matches!(self.phase, Phase::Closing { .. } | Phase::Closed) {
            return Err(SendError::Closed);
        }
        self.channels.check_send(channel, len)
    }

    /// A reliable channel's message ids: `(oldest, next)`, where every id before `oldest`
    /// was acked by the peer (its connection took the frame in) and `next` is the id the next
    /// message [`send`](Self::send) queues gets. Ids count from 0 on each connection and
    /// channel, one per fragment, wrapping at 2^16 (compare them with
    /// [`sequence::distance`](crate::sequence::distance)), so a caller can tell when a
    /// message it sent was acked, and with every message before it: its ids were
    /// `next`-before-the-send up to `next`-after, and `oldest` has passed them. `None` for an
    /// unreliable or unknown channel.
    pub fn reliable_ids(&self, channel: u8) -> Option<(u16, u16)> {
        self.channels.reliable_ids(channel)
    }

    /// Queues a message on `channel`. Messages queued while connecting go out once
    /// connected. On error nothing was queued; on [`SendError::WindowFull`] retry later.
    pub fn send(&mut self, channel: u8, bytes: &[u8]) -> Result<(), SendError> {
        self.send_deferred(channel, bytes)?;
        self.rearm |= self.endpoint.on_queued();
        Ok(())
    }

    /// [`send`](Self::send), but the interval's packet is never pulled early for it
    /// ([`Config::prompt_send`]): it rides whichever packet the link sends next. For a
    /// periodic probe, such as a clock ping, whose interval's packet is better left to carry
    /// an answer that arrives later in it.
    pub fn send_deferred(&mut self, channel: u8, bytes: &[u8]) -> Result<(), SendError> {
        if matches!(self.phase, Phase::Closing { .. } | Phase::Closed) {
            return Err(SendError::Closed);
        }
        self.channels.send(channel, bytes)?;
        if !self.channels.reliable_idle() {
            self.endpoint.set_backlog(self.channels.backlog());
        }
        Ok(())
    }

    /// Queues `bytes` on an unreliable or unreliable-sequenced `channel` in place of the
    /// message (or messages) queued there and not yet sent, so the next packet carries this,
    /// the newest value, and never a backlog: call it on every frame or tick with the latest
    /// state (a position, an input) whatever the packet rate. A replaced message never
    /// leaves and is not counted in [`Stats::messages_sent`]. Refused with
    /// [`SendError::Reliable`] on a reliable channel; on error nothing changed.
    pub fn send_latest(&mut self, channel: u8, bytes: &[u8]) -> Result<(), SendError> {
        if matches!(self.phase, Phase::Closing { .. } | Phase::Closed) {
            return Err(SendError::Closed);
        }
        self.channels.send_latest(channel, bytes)?;
        self.rearm |= self.endpoint.on_queued();
        Ok(())
    }

    /// Whether a message queued since the last call moved [`poll_timeout`](Self::poll_timeout)
    /// earlier (with [`Config::prompt_send`], the interval's packet may now leave before the
    /// interval's end): a driver sleeping until the old deadline looks again. Queuing
    /// drives nothing by itself, so that a frame's messages share its packet.
    pub fn take_rearm(&mut self) -> bool {
        std::mem::take(&mut self.rearm)
    }

    /// Takes in one datagram from the peer. On error nothing changed (on a protected
    /// connection, but for the count of packets that failed to open; see
    /// [`receive_in_place`](Self::receive_in_place)).
    pub fn receive(&mut self, now: Duration, datagram: &[u8]) -> Result<(), ConnectionError> {
        if datagram.is_empty() {
            return Err(ConnectionError::Empty);
        }
        if is_control(datagram) {
            let packet = ControlPacket::parse(datagram)?;
            return self.on_control(now, packet);
        }
        if self.phase != Phase::Connected {
            return Err(ConnectionError::NotConnected(self.state()));
        }
        let packet = Packet::new_checked(datagram).map_err(ReceiveError::from)?;
        if self.endpoint.is_protected() {
            // Opened in a copy: the caller's bytes are not ours to decrypt in place.
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            scratch.extend_from_slice(datagram);
            let taken = self.receive_protected(now, packet.header_len(), &mut scratch);
            self.scratch = scratch;
            return taken;
        }
        let packet = self.endpoint.untag(packet)?;
        self.take_in(nanos(now), packet, None)
    }

    /// Like [`receive`](Self::receive), and a protected connection decrypts the datagram in
    /// `datagram` itself (no copy): the way drivers that own their receive buffer take
    /// datagrams in. Its bytes are unspecified afterwards. A data packet that fails to
    /// open ([`ReceiveError::Unauthenticated`]) changes nothing but
    /// [`Counters::packets_unauthenticated`](crate::Counters::packets_unauthenticated), unless
    /// that reaches the key's integrity limit, which closes the connection
    /// ([`DisconnectReason::KeyExhausted`]).
    pub fn receive_in_place(
        &mut self,
        now: Duration,
        datagram: &mut [u8],
    ) -> Result<(), ConnectionError> {
        let data = !datagram.is_empty() && !is_control(datagram);
        if data && self.phase == Phase::Connected && self.endpoint.is_protected() {
            let header_len = Packet::new_checked(&*datagram)
                .map_err(ReceiveError::from)?
                .header_len();
            return self.receive_protected(now, header_len, datagram);
        }
        self.receive(now, datagram)
    }

    fn receive_protected(
        &mut self,
        now: Duration,
        header_len: usize,
        datagram: &mut [u8],
    ) -> Result<(), ConnectionError> {
        match self.endpoint.open(header_len, datagram) {
            Ok((number, packet)) => self.take_in(nanos(now), packet, Some(number)),
            Err(e) => {
                if self.endpoint.key_exhausted().is_some() {
                    self.endpoint.clock(nanos(now));
                    self.close_because(DisconnectReason::KeyExhausted);
                }
                Err(e.into())
            }
        }
    }

    /// Takes in a data packet whose header is checked (and, protected, opened).
    fn take_in(
        &mut self,
        now: u64,
        packet: Packet<&[u8]>,
        packet_number: Option<u64>,
    ) -> Result<(), ConnectionError> {
        let frames = self.channels.validate(packet.payload())?;
        // The payload it hands back is the one `frames` was checked from.
        self.endpoint.receive_checked(now, packet, packet_number)?;
        self.last_received = self.endpoint.now_nanos();
        self.heard_data = true;
        let events = &mut self.events;
        self.channels.apply(frames, &mut |channel, bytes| {
            events.push_back(ConnectionEvent::Message { channel, bytes });
        });
        self.drain_endpoint();
        Ok(())
    }

    /// The connector's side of the accept: a fresh packet layer is in place (at `now`,
    /// nanoseconds); messages flow.
    fn connected_at(&mut self, now: u64, connection_id: u64) {
        // A fresh packet layer reports no packets until one carries reliable frames; a
        // channel connector's keeps reporting those its early packets carried.
        if self.records_live == 0 {
            self.endpoint.set_packet_events(false);
        }
        self.phase = Phase::Connected;
        self.connection_id = Some(connection_id);
        self.last_received = now;
        self.events
            .push_back(ConnectionEvent::Connected { connection_id });
    }

    fn on_control(&mut self, now: Duration, packet: ControlPacket) -> Result<(), ConnectionError> {
        let now = nanos(now);
        let unexpected = ConnectionError::Unexpected {
            packet: packet.name(),
            state: self.state(),
        };
        let check_id = |expected: Option<u64>, got: u64| match expected {
            Some(expected) if expected != got => {
                Err(ConnectionError::WrongConnectionId { expected, got })
            }
            _ => Ok(()),
        };
        let cookie_id = u64::from_be_bytes(self.cookie.nonce);
        let secure = self.secure.is_some();
        match (self.phase, packet) {
            (Phase::Requesting, ControlPacket::Challenge { cookie }) if !secure => {
                self.phase = Phase::Responding;
                self.cookie = cookie;
                self.next_handshake_at = self.endpoint.clock(now);
                Ok(())
            }
            (Phase::Requesting, ControlPacket::Challenge { .. }) => {
                // Never fall back to plaintext: a secure connector stops, and says why.
                self.endpoint.clock(now);
                self.finish(DisconnectReason::Unencrypted);
                Ok(())
            }
            (Phase::Requesting, ControlPacket::SecureChallenge { cookie, static_key })
                if secure =>
            {
                let state = self.secure.as_mut().expect("secure");
                let initiator = state.initiator.as_mut().expect("until the answer");
                let prologue = crate::control::prologue(self.config.protocol_id, &cookie);
                match initiator.start(&static_key, &prologue, &mut state.message) {
                    Ok(()) => {}
                    Err(KeyExchangeError::UnexpectedStaticKey) => {
                        state.acceptor_key = Some(static_key);
                        self.endpoint.clock(now);
                        self.finish(DisconnectReason::AcceptorKeyMismatch);
                        return Ok(());
                    }
                    Err(e) => return Err(e.into()),
                }
                state.acceptor_key = Some(static_key);
                self.phase = Phase::Responding;
                self.cookie = cookie;
                self.next_handshake_at = self.endpoint.clock(now);
                Ok(())
            }
            (
                Phase::Responding,
                ControlPacket::SecureAccepted {
                    connection_id,
                    answer,
                },
            ) if secure => {
                check_id(Some(cookie_id), connection_id)?;
                let state = self.secure.as_mut().expect("secure");
                let mut initiator = state.initiator.take().expect("until the answer");
                let keys = match initiator.finish(&answer) {
                    Ok(keys) => keys,
                    Err(_) => {
                        self.endpoint.clock(now);
                        self.finish(DisconnectReason::KeyExchangeFailed);
                        return Ok(());
                    }
                };
                let now = self.endpoint.clock(now);
                self.endpoint = Endpoint::with_settings(self.endpoint.settings().clone(), now);
                self.endpoint
                    .protect(keys)
                    .expect("a fresh endpoint, and the datagram size checked");
                self.connected_at(now, connection_id);
                Ok(())
            }
            (Phase::ChannelRequesting, ControlPacket::Accepted { connection_id }) => {
                // No cookie to check the id against: the channel vouches for its sender,
                // and the id only names the connection in disconnects from now on. The
                // packet layer stays: its early packets are this connection's first.
                let now = self.endpoint.clock(now);
                self.connected_at(now, connection_id);
                Ok(())
            }
            (Phase::Responding, ControlPacket::Accepted { connection_id }) if !secure => {
                check_id(Some(cookie_id), connection_id)?;
                let now = self.endpoint.clock(now);
                // A fresh packet layer: sequences, pacing and RTT start at the connection
                // (its keys, if any, move over: nothing was sealed with them yet).
                let protection = self.endpoint.take_protection();
                self.endpoint = Endpoint::with_settings(self.endpoint.settings().clone(), now);
                self.endpoint.restore_protection(protection);
                self.connected_at(now, connection_id);
                self.bind_to_id();
                Ok(())
            }
            (
                Phase::Connected,
                ControlPacket::Accepted { connection_id }
                | ControlPacket::SecureAccepted { connection_id, .. },
            ) => {
                // A repeat of the accept we already took.
                check_id(self.connection_id, connection_id)?;
                Err(unexpected)
            }
            (Phase::Connected, ControlPacket::SecureResponse { cookie, .. })
                if self.is_acceptor && secure && !self.heard_data =>
            {
                // The connector did not hear our answer: say it again (the same bytes).
                check_id(self.connection_id, u64::from_be_bytes(cookie.nonce))?;
                self.accepted_due = true;
                Ok(())
            }
            (Phase::Connected, ControlPacket::ChannelRequest { protocol_id })
                if self.on_channel =>
            {
                // The connector did not hear our `Accepted` (or its request was repeated
                // before it could): say it again. Its data proves nothing here (it sends
                // early, before it hears us), and a channel carries one connection: a late
                // copy gets a repeat the connector ignores.
                if protocol_id != self.config.protocol_id {
                    return Err(unexpected);
                }
                self.accepted_due = true;
                Ok(())
            }
            (Phase::Connected, ControlPacket::ConnectResponse { cookie, .. })
                if self.is_acceptor && !secure && !self.heard_data =>
            {
                // The connector did not hear our `Accepted`: say it again.
                check_id(self.connection_id, u64::from_be_bytes(cookie.nonce))?;
                self.accepted_due = true;
                Ok(())
            }
            (Phase::Connected, ControlPacket::Disconnect { connection_id }) => {
                check_id(self.connection_id, connection_id)?;
                self.endpoint.clock(now);
                self.finish(DisconnectReason::ClosedByPeer);
                Ok(())
            }
            (Phase::Closing { .. }, ControlPacket::Disconnect { connection_id }) => {
                // Both sides closed at once: the application already heard `Closed`, its
                // last event; the peer is gone, so the remaining copies are not sent.
                check_id(self.connection_id, connection_id)?;
                self.endpoint.clock(now);
                self.phase = Phase::Closed;
                Ok(())
            }
            (Phase::Responding, ControlPacket::Disconnect { connection_id }) => {
                check_id(Some(cookie_id), connection_id)?;
                self.finish(DisconnectReason::ClosedByPeer);
                Ok(())
            }
            _ => Err(unexpected),
        }
    }

    /// Writes the next datagram into `buf` (at most `max_datagram_size` of it is used) and
    /// returns its length, or `None` when nothing is due before [`poll_timeout`].
    ///
    /// [`poll_timeout`]: Self::poll_timeout
    pub fn poll_transmit(
        &mut self,
        now: Duration,
        buf: &mut [u8],
    ) -> Result<Option<usize>, TransmitError> {
        self.handle_timeout_nanos(nanos(now));
        let now = self.endpoint.now_nanos();
        let budget = buf.len().min(self.config.max_datagram_size);
        let buf = &mut buf[..budget];
        let control = match self.phase {
            // Between requests a channel connector sends its data early: the request and the
            // first data packet leave together, so the acceptor takes (and acks) the first
            // messages as it accepts. Until then they are not lost: its reliable frames are
            // resent as on any packet the peer never acked. (`docs/wire.md`, "The channel
            // handshake".)
            Phase::ChannelRequesting if now < self.next_handshake_at => {
                return self.transmit_data(now, buf);
            }
            Phase::Requesting | Phase::Responding if now < self.next_handshake_at => {
                return Ok(None);
            }
            Phase::ChannelRequesting => ControlPacket::ChannelRequest {
                protocol_id: self.config.protocol_id,
            },
            Phase::Requesting if self.secure.is_some() => ControlPacket::SecureRequest {
                protocol_id: self.config.protocol_id,
            },
            Phase::Requesting => ControlPacket::ConnectRequest {
                protocol_id: self.config.protocol_id,
            },
            Phase::Responding => match &self.secure {
                Some(secure) => ControlPacket::SecureResponse {
                    protocol_id: self.config.protocol_id,
                    cookie: self.cookie,
                    message: secure.message,
                },
                None => ControlPacket::ConnectResponse {
                    protocol_id: self.config.protocol_id,
                    cookie: self.cookie,
                },
            },
            Phase::Connected if self.accepted_due => match &self.secure {
                Some(secure) => ControlPacket::SecureAccepted {
                    connection_id: self.connection_id.unwrap_or_default(),
                    answer: secure.message,
                },
                None => ControlPacket::Accepted {
                    connection_id: self.connection_id.unwrap_or_default(),
                },
            },
            Phase::Connected => match self.transmit_data(now, buf) {
                Err(TransmitError::KeyExhausted(_)) => {
                    // Never seal past the key's limit: stop, and say so with disconnects.
                    self.close_because(DisconnectReason::KeyExhausted);
                    ControlPacket::Disconnect {
                        connection_id: self.connection_id.unwrap_or_default(),
                    }
                }
                sent => return sent,
            },
            Phase::Closing { .. } => ControlPacket::Disconnect {
                connection_id: self.connection_id.unwrap_or_default(),
            },
            Phase::Closed => return Ok(None),
        };
        let len = control
            .emit(buf)
            .map_err(|_| TransmitError::BufferTooSmall {
                needed: control.encoded_len(),
                available: budget,
            })?;
        match self.phase {
            Phase::Requesting | Phase::ChannelRequesting | Phase::Responding => {
                self.next_handshake_at =
                    now.saturating_add(nanos(self.config.handshake_resend_interval));
            }
            Phase::Closing { copies_left } if copies_left <= 1 => self.phase = Phase::Closed,
            Phase::Closing { copies_left } => {
                self.phase = Phase::Closing {
                    copies_left: copies_left - 1,
                };
            }
            _ => self.accepted_due = false,
        }
        Ok(Some(len))
    }

    fn transmit_data(&mut self, now: u64, buf: &mut [u8]) -> Result<Option<usize>, TransmitError> {
        let config = &self.config;
        let rtt = self.endpoint.rtt_nanos();
        let clock = || {
            let min_resend = nanos(config.min_resend_interval);
            let resend = rtt.map_or(min_resend, |rtt| {
                (rtt / 2).saturating_add(rtt).max(min_resend)
            });
            (duration(now), duration(resend))
        };
        let channels = &mut self.channels;
        let scratch = &mut self.record_scratch;
        let mut written_sequence = None;
        let transmit = self.endpoint.transmit_with(now, buf, |sequence, space| {
            written_sequence = Some(sequence);
            channels.write(clock, space, scratch)
        })?;
        if written_sequence.is_some() {
            self.endpoint.set_backlog(self.channels.backlog());
        }
        // A packet with reliable frames leaves the channels busy, and only then is the
        // scratch (in a cold line) worth reading.
        let recorded = !self.channels.reliable_idle() && !self.record_scratch.is_empty();
        if let Some(sequence) = written_sequence.filter(|_| recorded) {
            let slot = self.record_slot(sequence);
            let (tag, record) = &mut self.records[slot];
            // A record still here belongs to a packet a whole sent ring back, which the packet
            // layer has just resolved as lost (its ring slot is needed); it is replaced.
            if tag.is_none() {
                self.records_live += 1;
                if self.records_live == 1 {
                    self.endpoint.set_packet_events(true);
                }
            }
            *tag = Some(sequence);
            std::mem::swap(record, &mut self.record_scratch);
            self.record_scratch.clear();
        }
        self.drain_endpoint();
        if self.channels.holds_reliable_storage() {
            self.release_when_quiet(now);
        }
        Ok(transmit.map(|t| t.len))
    }

    /// The records ring's slot for a packet with reliable frames, `sequence`: the ring is
    /// made on the first such packet with [`MIN_RECORDS`] slots and doubles (up to the packet
    /// layer's sent ring, where a slot is only ever reused once the packet that held it is
    /// resolved) while the unresolved packets it holds would meet in a slot. At a chat rate
    /// those are the packets of the last round trip or so, a few dozen at most.
    fn record_slot(&mut self, sequence: u16) -> usize {
        let max = usize::from(self.endpoint.config().sent_buffer_len);
        if self.records.is_empty() {
            self.records = (0..MIN_RECORDS.min(max))
                .map(|_| (None, Vec::new()))
                .collect();
        }
        loop {
            let ring = self.records.len();
            let slot = usize::from(sequence) % ring;
            match self.records[slot].0 {
                Some(tag) if tag != sequence && ring < max => self.grow_records(max),
                _ => return slot,
            }
        }
    }

    /// Doubles the records ring (at most `max` slots; doubling again while two live records
    /// would meet in a slot), moving every live record to its slot in the new ring.
    #[cold]
    fn grow_records(&mut self, max: usize) {
        let live: Vec<u16> = self.records.iter().filter_map(|(tag, _)| *tag).collect();
        let mut ring = self.records.len();
        loop {
            ring = (ring * 2).min(max);
            let mut taken = vec![false; ring];
            let fits = live
                .iter()
                .all(|&tag| !std::mem::replace(&mut taken[usize::from(tag) % ring], true));
            if fits || ring == max {
                break;
            }
        }
        let mut grown: Vec<PacketRecord> = (0..ring).map(|_| (None, Vec::new())).collect();
        for (tag, record) in &mut self.records {
            if let Some(tag) = *tag {
                let slot = &mut grown[usize::from(tag) % ring];
                debug_assert!(slot.0.is_none(), "two unresolved packets a sent ring apart");
                *slot = (Some(tag), std::mem::take(record));
            }
        }
        self.records = grown;
    }

    /// Frees the reliable windows' rings and the packet records once reliable traffic has
    /// been quiet for [`RELEASE_AFTER`]: nothing queued or in flight at any packet sent and
    /// no reliable frame received in that time, and nothing held. Checked at packets sent
    /// while storage is held, so it costs a flag test per packet otherwise, and frees at most
    /// once per quiet period (what still holds something, e.g. a receive window with a
    /// message waiting for an earlier one, is tried again a period later). Only empty rings
    /// are freed: nothing a user sent reliably is dropped.
    #[inline(never)]
    fn release_when_quiet(&mut self, now: u64) {
        let arrived = self.channels.take_reliable_arrived();
        if !self.channels.reliable_idle() || arrived {
            self.reliable_seen_at = now;
            return;
        }
        if now < self.reliable_seen_at.saturating_add(nanos(RELEASE_AFTER)) {
            return;
        }
        self.reliable_seen_at = now;
        if self.records_live != 0 {
            // A packet with reliable frames not yet acked or lost (its records would be
            // lost with the ring): a period later.
            return;
        }
        self.records = Vec::new();
        self.record_scratch = Vec::new();
        // A window still holding something keeps the flag set: tried again a period later.
        self.channels.release_reliable_storage();
    }

    /// Advances time: handshake and idle timeouts, packet loss and congestion deadlines.
    /// `poll_transmit` calls this itself.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.handle_timeout_nanos(nanos(now));
    }

    fn handle_timeout_nanos(&mut self, now: u64) {
        let now = self.endpoint.clock(now);
        match self.phase {
            Phase::Requesting | Phase::ChannelRequesting | Phase::Responding
                if now
                    >= self
                        .started
                        .saturating_add(nanos(self.config.handshake_timeout)) =>
            {
                self.finish(DisconnectReason::HandshakeTimedOut);
            }
            Phase::Connected
                if now
                    >= self
                        .last_received
                        .saturating_add(nanos(self.config.idle_timeout)) =>
            {
                self.finish(DisconnectReason::TimedOut);
            }
            Phase::Connected | Phase::ChannelRequesting => {
                self.endpoint.handle_timeout_nanos(now);
                self.drain_endpoint();
            }
            _ => {}
        }
    }

    /// When to call back at the latest (`poll_transmit` or `handle_timeout`); `None` once
    /// closed.
    pub fn poll_timeout(&self) -> Option<Duration> {
        set(self.poll_timeout_nanos()).map(duration)
    }

    /// [`poll_timeout`](Self::poll_timeout) in nanoseconds, `NEVER` for none.
    pub(crate) fn poll_timeout_nanos(&self) -> u64 {
        match self.phase {
            Phase::Requesting | Phase::Responding => self.next_handshake_at.min(
                self.started
                    .saturating_add(nanos(self.config.handshake_timeout)),
            ),
            Phase::ChannelRequesting => self
                .next_handshake_at
                .min(
                    self.started
                        .saturating_add(nanos(self.config.handshake_timeout)),
                )
                .min(self.endpoint.poll_timeout_nanos()),
            Phase::Connected if self.accepted_due => self.endpoint.now_nanos(),
            Phase::Connected => self.endpoint.poll_timeout_nanos().min(
                self.last_received
                    .saturating_add(nanos(self.config.idle_timeout)),
            ),
            Phase::Closing { .. } => self.endpoint.now_nanos(),
            Phase::Closed => NEVER,
        }
    }

    /// The next event, oldest first. Drain after every `receive` and `poll_transmit`.
    pub fn poll_event(&mut self) -> Option<ConnectionEvent> {
        self.events.pop_front()
    }

    /// True when [`poll_event`](Self::poll_event) has something.
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Closes the connection: [`ConnectionEvent::Disconnected`] with
    /// [`DisconnectReason::Closed`] now, then `disconnect_copies` disconnect packets from
    /// `poll_transmit` if the peer was connected. Unsent and unacked messages are dropped.
    pub fn close(&mut self) {
        self.close_because(DisconnectReason::Closed);
    }

    fn close_because(&mut self, reason: DisconnectReason) {
        match self.phase {
            Phase::Connected => {
                self.events
                    .push_back(ConnectionEvent::Disconnected { reason });
                self.phase = Phase::Closing {
                    copies_left: self.config.disconnect_copies,
                };
            }
            Phase::Requesting | Phase::ChannelRequesting | Phase::Responding => self.finish(reason),
            Phase::Closing { .. } | Phase::Closed => {}
        }
    }

    fn finish(&mut self, reason: DisconnectReason) {
        self.phase = Phase::Closed;
        self.events
            .push_back(ConnectionEvent::Disconnected { reason });
    }

    /// What the message buffers hold now (all bounded: see [`Buffered`]).
    pub fn buffered(&self) -> Buffered {
        self.channels.buffered()
    }

    /// When a message queued now leaves at the latest ([`Endpoint::next_packet_at`]).
    pub fn next_packet_at(&self) -> Duration {
        self.endpoint.next_packet_at()
    }

    /// Everything measured so far: the packet layer's figures plus message counters and the
    /// connection state.
    pub fn stats(&self) -> Stats {
        let mut stats = self.endpoint.stats();
        let c = self.channels.counters;
        stats.messages_sent = c.sent;
        stats.messages_resent = c.resent;
        stats.messages_delivered = c.delivered;
        stats.messages_dropped_stale = c.dropped_stale;
        stats.reliable_in_flight = self.channels.buffered().reliable_in_flight as u64;
        stats.connection_state = Some(self.state());
        stats
    }

    /// Takes the packet layer's events (usually none: acks are not reported while no packet
    /// carries reliable frames, so the check is inlined and the work is not).
    #[inline]
    fn drain_endpoint(&mut self) {
        if self.endpoint.has_events() {
            self.drain_endpoint_events();
        }
    }

    #[inline(never)]
    fn drain_endpoint_events(&mut self) {
        while let Some(event) = self.endpoint.poll_event() {
            let sequence = match event {
                Event::Acked { sequence, .. } | Event::Lost { sequence } => sequence,
                Event::ModeChanged {
                    mode,
                    recovery_time,
                } => {
                    self.events.push_back(ConnectionEvent::ModeChanged {
                        mode,
                        recovery_time,
                    });
                    continue;
                }
            };
            if self.records_live == 0 {
                continue;
            }
            let ring = self.records.len();
            let (tag, record) = &mut self.records[usize::from(sequence) % ring];
            if *tag != Some(sequence) {
                continue;
            }
            self.records_live -= 1;
            if matches!(event, Event::Acked { .. }) {
                self.channels.on_acked(record);
            }
            *tag = None;
            record.clear();
            if self.records_live == 0 {
                // Nothing left to match acks against: spare the packet layer the events.
                self.endpoint.set_packet_events(false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        ConnectionConfig, ConnectionConfigError, ConnectionEvent, EventQueue,
        MAX_UNRELIABLE_QUEUE_LEN,
    };

    fn connected(id: u64) -> ConnectionEvent {
        ConnectionEvent::Connected { connection_id: id }
    }

    #[test]
    fn events_come_out_in_the_order_they_went_in_however_pushes_and_pops_interleave() {
        let mut queue = EventQueue::default();
        let mut expected = std::collections::VecDeque::new();
        // Pushes and pops in every mix of the inline slot and the overflow queue.
        for (step, pushes) in [1, 3, 0, 2, 1, 0, 4, 1].into_iter().enumerate() {
            for k in 0..pushes {
                let id = (step * 10 + k) as u64;
                queue.push_back(connected(id));
                expected.push_back(connected(id));
            }
            assert_eq!(queue.pop_front(), expected.pop_front(), "step {step}");
            assert_eq!(queue.is_empty(), expected.is_empty(), "step {step}");
        }
        while let Some(event) = expected.pop_front() {
            assert_eq!(queue.pop_front(), Some(event));
        }
        assert_eq!(queue.pop_front(), None);
        assert!(queue.is_empty());
    }

    #[test]
    fn configs_out_of_bounds_are_refused_with_the_field_at_fault() {
        assert_eq!(ConnectionConfig::default().validate(), Ok(()));
        let refused = |edit: fn(&mut ConnectionConfig)| {
            let mut config = ConnectionConfig::default();
            edit(&mut config);
            config.validate().unwrap_err()
        };
        assert_eq!(
            refused(|c| c.unreliable_queue_len = MAX_UNRELIABLE_QUEUE_LEN + 1),
            ConnectionConfigError::QueueLen(MAX_UNRELIABLE_QUEUE_LEN + 1)
        );
        assert_eq!(
            refused(|c| c.unreliable_queue_len = 0),
            ConnectionConfigError::Zero("unreliable_queue_len")
        );
        assert_eq!(
            refused(|c| c.max_datagram_size = 65508),
            ConnectionConfigError::DatagramSize(65508)
        );
        assert_eq!(
            refused(|c| c.channels.clear()),
            ConnectionConfigError::ChannelCount(0)
        );
        assert!(matches!(
            refused(|c| c.packet.good_rate_pps = 0.0),
            ConnectionConfigError::Packet(crate::ConfigError::InvalidRate { .. })
        ));
        let largest = ConnectionConfig {
            unreliable_queue_len: MAX_UNRELIABLE_QUEUE_LEN,
            max_datagram_size: 65507,
            ..ConnectionConfig::default()
        };
        assert_eq!(largest.validate(), Ok(()));
    }
}
