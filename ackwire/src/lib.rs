//! # ackwire
//!
//! Real-time networking for games: players join a room from a URL and exchange messages on
//! the channels the game declares, peer to peer, over raw UDP between native programs and
//! WebRTC data channels with browsers, with the delivery each channel promises
//! (unreliable, newest-wins, reliable ordered or unordered), and each link's RTT, loss and
//! congestion mode measured as it runs. The same [`Room`] API on native targets (tokio) and
//! on `wasm32` in a browser (web-sys).
//!
//! ```no_run
//! use ackwire::{App, ChannelKind, Event, Room, RoomConfig};
//!
//! # async fn game() -> Result<(), Box<dyn std::error::Error>> {
//! // What the game plays: every member of a room must declare the same.
//! let app = App::new("pong", 1, [
//!     ChannelKind::UnreliableSequenced, // 0: inputs and state, newest wins
//!     ChannelKind::ReliableOrdered,     // 1: events, chat
//! ]);
//! let mut room = Room::join("http://127.0.0.1:8080/room/lobby", RoomConfig::new(app))?;
//! while let Some(event) = room.next_event().await {
//!     match event {
//!         Event::Link(link) if link.state == ackwire::LinkState::Connected => {
//!             room.send(link.peer, 1, b"hello")?;
//!         }
//!         Event::Message { peer, channel, bytes } => println!("{peer} on {channel}: {bytes:?}"),
//!         _ => {}
//!     }
//! }
//! # Ok(()) }
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

#[cfg(target_arch = "wasm32")]
mod browser;
#[cfg(all(not(target_arch = "wasm32"), feature = "rooms"))]
mod native;
#[cfg(not(target_arch = "wasm32"))]
pub mod net;
#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
mod room;

#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
pub use room::{JoinError, Room, RoomConfig};

pub use ackwire_core::emulator::EmulatorConfig;
pub use ackwire_core::{ChannelKind, ConnectionConfig, Mode, Stats};
pub use ackwire_room::emulation::Emulation;
pub use ackwire_room::member::{
    Event, Failure, GoneReason, IceState, LinkInfo, LinkState, MemberError, PeerId, SendError,
    ServerId, SignallingState, TransportKind,
};
pub use ackwire_room::signalling::{
    AppInfo as App, BadRoomUrl, ErrorCode, InvalidApp, PeerKind, RoomUrl,
};

#[cfg(target_arch = "wasm32")]
pub use browser::{BrowserOptions, EarlySocket};
#[cfg(all(not(target_arch = "wasm32"), feature = "rooms"))]
pub use native::NativeOptions;
