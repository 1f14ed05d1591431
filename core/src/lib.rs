//! # ackwire-core
//!
//! The ackwire protocol as a sans-IO state machine: no sockets, no clock, no threads, no OS
//! randomness. The driver owns the clock and the link; the core owns all protocol state. Bytes
//! come in through one [`receive`](Endpoint::receive) and leave through one
//! [`poll_transmit`](Endpoint::poll_transmit); what happened to sent packets comes out of
//! [`poll_event`](Endpoint::poll_event); [`poll_timeout`](Endpoint::poll_timeout) says when to
//! call back. The same code runs natively and in the browser (wasm32-unknown-unknown).
//!
//! ## Time
//!
//! Time is a [`Duration`](core::time::Duration) since an epoch the driver picks (it must not
//! go backwards; an earlier value is treated as the latest seen). A browser driver passes
//! `Duration::from_secs_f64(performance.now() / 1000.0)`; a native one passes
//! `start.elapsed()` for an `Instant` taken at startup; tests pass virtual time.
//!
//! ## What a driver does
//!
//! A driver (native UDP, browser data channel, or a test) is a loop around one [`Endpoint`]:
//! hand every incoming datagram to [`receive`](Endpoint::receive); call
//! [`poll_transmit`](Endpoint::poll_transmit) (or `poll_transmit_with` to add a payload) and
//! send what it writes; drain [`poll_event`](Endpoint::poll_event); then sleep until
//! [`poll_timeout`](Endpoint::poll_timeout) or the next datagram, whichever comes first.
//! The endpoint paces itself (30 or 10 packets/s), so a driver never hard-codes a rate.
//! [`stats`](Endpoint::stats) can be read at any time. To emulate a bad network, put an
//! [`emulator::LinkEmulator`] between `poll_transmit` and the real send.
//!
//! ## The protocol, top to bottom
//!
//! 1. [`sequence`]: 16-bit sequence numbers compared with RFC 1982 serial arithmetic; every
//!    comparison in the crate goes through [`sequence::distance`].
//! 2. [`wire`]: the packet header (`sequence`, `ack`, 32-bit `ack_bits` where bit `n` means
//!    `ack - n` was received) in a compact form: a prefix byte elides all-ones bitfield bytes
//!    and carries the ack as a 1-byte delta when it can, so a steady-state header is 4 bytes.
//!    [`wire::Packet`] is the checked zero-copy view of a datagram, [`wire::PacketHeader`] the
//!    plain struct. Byte-exact spec: `docs/wire.md`.
//! 3. [`sequence_buffer`]: fixed rings indexed by `sequence % N`, tagged with the sequence; the
//!    sent-packet record lives in one, so nothing is allocated per packet.
//! 4. [`endpoint`]: one side of a link. Sending assigns the next sequence and acks the received
//!    set; receiving processes each ack bit exactly once ([`Event::Acked`]); a packet unacked
//!    after the loss timeout (1 s) is [`Event::Lost`].
//! 5. [`rtt`] and [`loss`]: smoothed RTT (10% EWMA) with jitter, and loss % over a window.
//! 6. [`congestion`]: simple binary congestion avoidance: 30 pps in good mode, 10 pps in bad;
//!    bad at once when RTT > 250 ms, good again after `t` of good conditions, `t` doubled on a
//!    quick fallback and halved every 10 s of good (clamped to 1..=60 s).
//! 7. [`config`]: every number above in one [`Config`] with documented defaults.
//! 8. [`stats`]: one serde-serializable [`Stats`] snapshot for dashboards.
//! 9. [`emulator`]: a seeded link emulator (latency, jitter, uniform and Gilbert–Elliott
//!    loss, duplication, reordering, rate limit) to put around any link, deterministic per seed.
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
//! assert_eq!(a.stats().packets_lost, 0);
//! assert_eq!(a.stats().last_header_len, 4);
//! ```
#![forbid(unsafe_code)]

pub mod channel;
pub mod config;
pub mod congestion;
pub mod connection;
pub mod control;
pub mod emulator;
pub mod endpoint;
pub mod frame;
pub mod handshake;
pub mod loss;
mod reliable;
pub mod rtt;
pub mod sequence;
pub mod sequence_buffer;
pub mod stats;
pub mod wire;

pub use channel::{Buffered, ChannelKind, SendError};
pub use config::{Config, ConfigError};
pub use congestion::Mode;
pub use connection::{
    Connection, ConnectionConfig, ConnectionConfigError, ConnectionError, ConnectionEvent,
    ConnectionState, DisconnectReason,
};
pub use endpoint::{Endpoint, Event, ReceiveError, Received, Transmit, TransmitError};
pub use handshake::{Accept, Acceptor, HandshakeError};
pub use stats::Stats;

/// The crate version, shown by drivers (the browser page prints it to prove the core runs there).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
