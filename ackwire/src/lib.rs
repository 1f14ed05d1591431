//! # ackwire
//!
//! Real-time networking for games: players join a room from a URL and exchange messages on
//! the channels the game declares, peer to peer, over raw UDP between native programs and
//! WebRTC data channels with browsers, with the delivery each channel promises
//! (unreliable, newest-wins, reliable ordered or unordered), and each link's RTT, loss and
//! congestion mode measured as it runs. The same [`Room`] API on native targets (tokio) and
//! on `wasm32` in a browser (web-sys).
//!
//! Two players of one room, here two rooms in one program against a signal server on this
//! machine (`ackwire-signal`; this example starts one in the process):
//!
//! ```
//! use ackwire::{App, ChannelKind, Event, LinkState, Room, RoomConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! # let addr = listener.local_addr()?;
//! # let server = ackwire_signal::config::Config { bind: addr, ..Default::default() };
//! # tokio::spawn(ackwire_signal::serve(listener, server, std::future::pending()));
//! # let url = format!("http://{addr}/room/lobby");
//! // What the game plays: every member of a room must declare the same.
//! let app = App::new("pong", 1, [
//!     ChannelKind::UnreliableSequenced, // 0: inputs and state, newest wins
//!     ChannelKind::ReliableOrdered,     // 1: events, chat
//! ]);
//! let mut config = RoomConfig::new(app);
//! # config.native.bind = "127.0.0.1:0".parse()?;
//! // `url` is the room page's, e.g. https://play.example.org/room/lobby
//! let mut alice = Room::join(&url, config.clone())?;
//! let mut bob = Room::join(&url, config)?;
//! // Alice says hello on the reliable channel as soon as a link connects.
//! while let Some(event) = alice.next_event().await {
//!     if let Event::Link(link) = event
//!         && link.state == LinkState::Connected
//!     {
//!         alice.send(link.peer, 1, b"hello")?;
//!         break;
//!     }
//! }
//! // Bob hears it: exactly once, in order, whatever the network loses.
//! let (channel, bytes) = loop {
//!     if let Some(Event::Message { channel, bytes, .. }) = bob.next_event().await {
//!         break (channel, bytes);
//!     }
//! };
//! assert_eq!((channel, &bytes[..]), (1, &b"hello"[..]));
//! alice.close().await;
//! bob.close().await;
//! # Ok(())
//! # }
//! ```
//!
//! A game loop that cannot await calls [`Room::poll_event`] each frame instead; every call
//! returns at once. Sends are checked and queued at once too: a message the room cannot take
//! is refused with a [`SendError`] and nothing is sent.
//!
//! Under the API sits the room member (`ackwire-room`: links, roles, recovery, reliable
//! delivery across lost links) and the protocol core (`ackwire-core`); this crate adds the
//! drivers that give them sockets and a clock. `docs/api.md` is the guide.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// The README's Rust examples, compiled as doctests so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}

/// The guide's Rust examples (`docs/api.md`), compiled as doctests likewise.
#[cfg(doctest)]
#[doc = include_str!("../../docs/api.md")]
mod guide {}

/// Host rooms' Rust examples (`docs/host-rooms.md`), compiled as doctests likewise.
#[cfg(doctest)]
#[doc = include_str!("../../docs/host-rooms.md")]
mod host_rooms {}

#[cfg(target_arch = "wasm32")]
mod browser;
pub mod channel;
#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
mod config;
#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
mod error;
#[cfg(all(not(target_arch = "wasm32"), feature = "rooms"))]
mod native;
#[cfg(not(target_arch = "wasm32"))]
pub mod net;
#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
mod outputs;
#[cfg(all(feature = "ggrs", any(target_arch = "wasm32", feature = "rooms")))]
pub mod rollback;
#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
mod room;
#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
pub mod sync;

#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
pub use config::RoomConfig;
#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
pub use error::JoinError;
#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
pub use room::Room;

pub use ackwire_core::emulator::EmulatorConfig;
pub use ackwire_core::{ConnectionConfig, Mode, Stats};
pub use ackwire_room::emulation::Emulation;
pub use ackwire_room::member::{
    Broadcast, Budget, ClockReading, Event, Failure, GoneReason, IceState, LinkInfo, LinkState,
    MemberError, PeerId, SendCapacity, SendError, ServerId, SignallingState, TransportKind,
};
pub use ackwire_signalling::{
    AppInfo as App, BadRoomUrl, ChannelKind, ErrorCode, InvalidApp, PeerKind, Role, RoomUrl,
    Topology, ticket,
};

#[cfg(target_arch = "wasm32")]
pub use config::{BrowserOptions, EarlySocket};
#[cfg(all(not(target_arch = "wasm32"), feature = "rooms"))]
pub use config::{HostCertificate, NativeOptions};
