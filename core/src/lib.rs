//! # ackwire-core
//!
//! The ackwire protocol as a sans-IO state machine: no sockets, no clock, no threads. The
//! driver owns the clock and the link; the core owns all protocol state.
//! Applications use a [`Connection`]: [`send`](Connection::send) messages on channels, feed
//! every datagram to [`receive`](Connection::receive), send what
//! [`poll_transmit`](Connection::poll_transmit) writes, drain
//! [`poll_event`](Connection::poll_event), and call back at
//! [`poll_timeout`](Connection::poll_timeout). Underneath, an [`Endpoint`] is the packet layer
//! (sequence numbers, acks, RTT, congestion avoidance), usable on its own. The same code runs
//! natively and in the browser (wasm32-unknown-unknown).
//!
//! ## Time
//!
//! Time is a [`Duration`](core::time::Duration) since an epoch the driver picks (it must not
//! go backwards; an earlier value is treated as the latest seen). A browser driver passes
//! `Duration::from_secs_f64(performance.now() / 1000.0)`; a native one passes
//! `start.elapsed()` for an `Instant` taken at startup; tests pass virtual time. One
//! exception: `receive` may be given a datagram's arrival time even when it is earlier than
//! the latest time seen (a driver that reads late but knows when a datagram arrived, from a
//! kernel receive timestamp): the ack delay and the RTT sample start there, so the wait
//! before the read counts as this side's hold, not as the path's.
//!
//! ## What a driver does
//!
//! A driver (native UDP, browser data channel, or a test) is a loop around [`Connection`]s:
//! hand every incoming datagram to [`receive`](Connection::receive); call
//! [`poll_transmit`](Connection::poll_transmit) until it returns `None` and send what it
//! writes; drain [`poll_event`](Connection::poll_event); then sleep until
//! [`poll_timeout`](Connection::poll_timeout) or the next datagram, whichever comes first.
//! The packet layer paces itself (30 or 10 packets/s), so a driver never hard-codes a rate.
//! [`stats`](Connection::stats) can be read at any time. To emulate a bad network, put an
//! [`emulator::LinkEmulator`] between `poll_transmit` and the real send.
//!
//! **Roles.** One side connects ([`Connection::connect`]); the other accepts. A server with
//! many peers on one socket uses a [`Listener`]: `receive(now, from, datagram, reply)` (send
//! any challenge it writes straight back), `poll_transmit` until `None` (it names the peer),
//! `poll_event` (each event comes with its connection, to answer at once), `poll_timeout`; it
//! routes by address (a hash table), drops closed connections, and no call scans the
//! connections: a timing wheel holds each one's deadline and only those that are due are
//! visited.
//! A side with one peer on a WebRTC data channel, which ICE and DTLS already authenticated,
//! uses a [`ChannelAcceptor`] and the other side [`Connection::connect_on_channel`]: the
//! channel handshake, one round trip and no cookie. Datagrams go to
//! [`ChannelAcceptor::receive`] until it hands out the `Connection`, then to that connection.
//! Between two browsers (no server in the path) the roles must be decided deterministically,
//! e.g. the peer with the lower signalling id accepts; both roles can live in one process.
//!
//! **Addresses** are opaque bytes the driver chooses: a UDP socket address's text or
//! bytes, or the remote's signalling peer id on a WebRTC data channel. The cookie is bound
//! to them, so use the same bytes for the request and the response of one peer.
//!
//! **Randomness** comes from the driver: [`Acceptor::new`] takes 32 secret random bytes
//! (fresh at each start); connection ids are derived from it. Connectors need none. The one
//! exception is the optional `aead` feature's Noise key exchange (native drivers only): its
//! ephemeral keys come from the operating system's generator, through snow.
//!
//! ## The protocol, top to bottom
//!
//! 1. [`sequence`]: 16-bit sequence numbers compared with RFC 1982 serial arithmetic; every
//!    comparison in the crate goes through [`sequence::distance`].
//! 2. [`wire`]: the packet header (`sequence`, `ack`, the `ack delay`, 32-bit `ack_bits`
//!    where bit `n` means `ack - n` was received) in a compact form: a prefix byte elides
//!    all-ones bitfield bytes, and the ack travels as its low byte whenever the peer can
//!    rebuild the rest ([`wire::AckField`]), so a steady-state header is 5 bytes in both
//!    directions whatever the two rates. [`wire::Packet`] is the checked zero-copy view of a
//!    datagram, [`wire::PacketHeader`] the plain struct. Byte-exact spec: `docs/wire.md`.
//! 3. `sequence_buffer`: fixed rings indexed by `sequence % N`, tagged with the sequence; the
//!    sent-packet record lives in one, so nothing is allocated per packet.
//! 4. [`endpoint`]: one side of a link. Sending assigns the next sequence and acks the received
//!    set; receiving processes each ack bit exactly once ([`Event::Acked`]); a packet unacked
//!    after the loss timeout (1 s) is [`Event::Lost`]. The pace is one packet per send
//!    interval; with [`Config::prompt_ack`] and [`Config::prompt_send`] (the defaults) the
//!    interval's packet leaves as soon as a packet from the peer has arrived in it or a
//!    message was queued in it, so acks go back at once and a message waits at most one
//!    interval.
//! 5. `rtt` and `loss`: one RTT sample per header that newly acks the packet it names,
//!    less the ack delay the peer reports (how long it held that packet), so RTT is the
//!    path's round trip whatever the two sides' send slots; a 10% moving average with jitter.
//!    Loss % over a 64-packet window (for the mode) and since the start (for people).
//! 6. [`congestion`]: simple binary congestion avoidance: 30 pps in good mode, 10 pps in bad;
//!    bad at once when RTT > 250 ms (or when the peer falls silent: packets lost and no ack
//!    for a whole loss timeout), good again after `t` of good conditions, `t` doubled on a
//!    quick fallback and halved every 10 s of good (clamped to 1..=60 s).
//! 7. [`config`]: every number above in one [`Config`] with documented defaults. The config
//!    and stats structs are `#[non_exhaustive]`, so a release can add a field without
//!    breaking anyone: start from `default()` and chain the `with_*` setters
//!    (`ConnectionConfig::default().with_idle_timeout(Duration::from_secs(20))`); stats are
//!    read, never built.
//! 8. [`stats`]: one serde-serializable [`Stats`] snapshot for dashboards.
//! 9. [`frame`]: message frames inside a packet's payload (unreliable, sequenced, reliable,
//!    fragment), each tagged with its channel; [`channel`]: the four [`ChannelKind`]s and the
//!    packer that fills each packet (reliable data first, up to 1200 bytes per datagram);
//!    `reliable`: 16-bit message ids kept until a packet carrying them is acked (never by
//!    resending a packet), duplicate filtering, reordering and reassembly of messages up to
//!    [`frame::MAX_MESSAGE_SIZE`] (256 KiB), with a 1024-id window per channel
//!    ([`SendError::WindowFull`] is the backpressure signal). For state where only the
//!    newest value matters (positions, inputs), [`Connection::send_latest`] replaces the
//!    message an unreliable channel has not sent yet instead of queueing behind it: a driver
//!    calls it every frame or tick and each packet carries the newest value, never a backlog
//!    (reliable channels refuse it with [`SendError::Reliable`]).
//! 10. [`control`] and [`handshake`]: connect request → stateless HMAC cookie challenge →
//!     response → accepted; the [`Acceptor`] keeps nothing until a valid response, checks the
//!     64-bit protocol id, and refuses forged, expired and replayed cookies. On an
//!     authenticated channel: channel request → accepted ([`ChannelAcceptor`]).
//!     [`connection`]: the state machine around it all (keep-alive, idle timeout, redundant
//!     disconnect), with [`ConnectionEvent`]s for the application.
//! 11. [`protection`]: optional per-packet AEAD for links with no encryption of their own
//!     (native UDP): the payload sealed in place, the header authenticated with it, the
//!     nonce from a 64-bit packet number rebuilt from the 16-bit sequence, 16 bytes of tag
//!     per packet; a packet that fails to open changes nothing but a counter. Keys come from
//!     [`key_exchange`]: a Noise handshake (NK to a listener's static key, KK between room
//!     peers) inside the secure variants of the connect handshake, after the cookie
//!     ([`Connection::secure`], [`Acceptor::with_responder`]); or straight from the
//!     connection's creator ([`Connection::protect`], [`Acceptor::with_keys`]). The
//!     cryptography ([`protection::PacketKey`], [`Initiator`], [`Responder`]) sits behind
//!     traits; ring's AES-256-GCM and snow's Noise are behind the `aead` feature (off for
//!     the wasm build).
//! 12. [`emulator`]: a seeded link emulator (latency, jitter, uniform and Gilbert–Elliott
//!     loss, duplication, reordering, rate limit) to put around any link, deterministic per seed.
//!
//! ## Example: a connection in virtual time
//!
//! A connector and an acceptor, the datagrams handed straight across. A real driver does the
//! same with a socket or a data channel, routing datagrams from an address that has a
//! connection to it, and the rest to the acceptor.
//!
//! ```
//! use ackwire_core::{Accept, Acceptor, Connection, ConnectionConfig, ConnectionEvent};
//! use std::time::Duration;
//!
//! let config = ConnectionConfig::default(); // channel 0 unreliable-sequenced, 1 reliable-ordered
//! // The secret and the peer's address bytes come from the driver.
//! let mut acceptor = Acceptor::new(config.clone(), [7u8; 32]).unwrap();
//! let client_address = b"192.0.2.1:4000";
//! let mut client = Connection::connect(config, Duration::ZERO).unwrap();
//! let mut server: Option<Connection> = None;
//! client.send(1, b"hello").unwrap(); // queued until connected
//!
//! let (mut buf, mut reply) = ([0u8; 1200], [0u8; 64]);
//! let mut now = Duration::ZERO;
//! let mut received = Vec::new();
//! while now < Duration::from_secs(1) {
//!     while let Some(len) = client.poll_transmit(now, &mut buf).unwrap() {
//!         match &mut server {
//!             Some(server) => server.receive(now, &buf[..len]).unwrap(),
//!             None => match acceptor.receive(now, client_address, &buf[..len], &mut reply) {
//!                 Ok(Accept::Reply { len }) => client.receive(now, &reply[..len]).unwrap(),
//!                 Ok(Accept::Connection(connection)) => server = Some(*connection),
//!                 other => panic!("{other:?}"),
//!             },
//!         }
//!     }
//!     if let Some(server) = &mut server {
//!         while let Some(len) = server.poll_transmit(now, &mut buf).unwrap() {
//!             client.receive(now, &buf[..len]).unwrap();
//!         }
//!         while let Some(event) = server.poll_event() {
//!             if let ConnectionEvent::Message { channel, bytes } = event {
//!                 received.push((channel, bytes));
//!             }
//!         }
//!     }
//!     now = [client.poll_timeout(), server.as_ref().and_then(Connection::poll_timeout)]
//!         .into_iter()
//!         .flatten()
//!         .min()
//!         .unwrap()
//!         .max(now + Duration::from_millis(1));
//! }
//! assert_eq!(received, [(1, b"hello".to_vec())]);
//! assert!(matches!(client.poll_event(), Some(ConnectionEvent::Connected { .. })));
//! assert_eq!(client.stats().messages_sent, 1);
//! ```
//!
//! ## Example: two endpoints in virtual time
//!
//! ```
//! use ackwire_core::{Config, Endpoint, Event};
//! use std::time::Duration;
//!
//! let start = Duration::ZERO;
//! let mut a = Endpoint::new(Config::default(), start).unwrap();
//! let mut b = Endpoint::new(Config::default(), start).unwrap();
//! let mut buf = [0u8; 1200];
//! let mut acked = 0;
//! let mut now = start;
//! while now < Duration::from_secs(5) {
//!     // Each driver sends when its endpoint says a packet is due; here the link is perfect
//!     // and instant, so every datagram is handed straight to the other side.
//!     if let Some(t) = a.poll_transmit(now, &mut buf).unwrap() {
//!         b.receive(now, &buf[..t.len]).unwrap();
//!     }
//!     if let Some(t) = b.poll_transmit(now, &mut buf).unwrap() {
//!         a.receive(now, &buf[..t.len]).unwrap();
//!     }
//!     while let Some(event) = a.poll_event() {
//!         if let Event::Acked { .. } = event {
//!             acked += 1;
//!         }
//!     }
//!     now = a.poll_timeout().min(b.poll_timeout());
//! }
//! // 4 s in bad mode at 10 pps, then good mode at 30 pps: every packet but the last acked.
//! assert!(acked >= 65, "{acked}");
//! assert_eq!(a.mode(), ackwire_core::Mode::Good);
//! assert_eq!(a.stats().counters.packets_lost, 0);
//! assert_eq!(a.stats().last_header_len, 5);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// `with_<field>(value)` for each named field of a config struct: the struct is
/// `#[non_exhaustive]` (a new field is not a breaking change), so users start from
/// `default()` and chain these, or assign the public fields of a `mut` binding.
macro_rules! setters {
    ($ty:ident { $($setter:ident => $field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("Returns `self` with [`", stringify!($field), "`](Self::",
                    stringify!($field), ") set to `value`.")]
                #[must_use]
                pub fn $setter(mut self, value: $t) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

mod bulk;
pub mod channel;
pub mod config;
pub mod congestion;
pub mod connection;
mod connection_state;
pub mod control;
pub mod emulator;
pub mod endpoint;
pub mod frame;
pub mod handshake;
pub mod key_exchange;
pub mod listener;
mod loss;
mod mode;
pub mod protection;
mod reliable;
mod rtt;
pub mod sequence;
mod sequence_buffer;
pub mod stats;
mod time;
mod timers;
pub mod wire;

pub use channel::{Buffered, ChannelKind, SendError};
pub use config::{Config, ConfigError};
pub use congestion::Mode;
pub use connection::{
    Connection, ConnectionConfig, ConnectionConfigError, ConnectionError, ConnectionEvent,
    ConnectionState, DisconnectReason, MIN_DATAGRAM_SIZE, MIN_PROTECTED_DATAGRAM_SIZE,
};
pub use endpoint::{
    CONNECTION_TAG_LEN, Endpoint, Event, ReceiveError, Received, Transmit, TransmitError,
};
pub use handshake::{Accept, Acceptor, ChannelAcceptor, HandshakeError, attempt_secret};
pub use key_exchange::{Initiator, KeyExchangeError, Responder};
#[cfg(feature = "aead")]
pub use key_exchange::{NoiseInitiator, NoiseResponder, StaticKey};
pub use listener::{Listener, ListenerError, ListenerEvent, ListenerSendError, MAX_ADDRESS_LEN};
pub use protection::{KeyLimit, KeySource, OpenError, PacketKey, PacketKeys, ProtectError};
pub use stats::{Counters, Stats};

/// The crate version, shown by drivers (the browser page prints it to prove the core runs there).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
