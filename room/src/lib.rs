//! # ackwire-room
//!
//! The room member, once for both drivers: the browser's and the native one (both in the
//! `ackwire` crate). Like the core it is sans-IO: signalling frames, transport events,
//! datagrams and `now` go in; frames, transport commands, datagrams, application events and
//! the next timeout come out. The drivers only move bytes and events. It is generic: an
//! application declares its id, version and channel layout, then sends bytes to peers and
//! hears [`member::Event`]s; nothing here knows what a game's messages mean.
//!
//! - [`member`]: the [`Member`](member::Member): links, their lifecycle and recovery, roles,
//!   identities across server restarts, the message API, stats reports.
//! - `delivery`: reliable messages that survive a lost link (exactly once, per peer).
//! - [`signalling`]: the `/ws` JSON frames in both directions (`docs/signalling.md`), the
//!   `ackwire-signalling` crate re-exported: the one schema, shared with the signal server.
//! - [`webrtc`]: the WebRTC policy both drivers follow (the data channel, ICE states, paths).
//! - [`emulation`]: the core's link emulator around one link, both directions.
//! - [`backoff`]: the one retry policy (signalling and links).
//! - [`clock`]: each peer's clock as the member estimates it (pings on the control channel).
//! - [`keys`]: how native↔native UDP links are keyed (the driver's [`keys::UdpKeys`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backoff;
pub mod clock;
mod core_link;
mod delivery;
pub mod emulation;
pub mod keys;
pub mod member;
pub mod webrtc;

/// The signalling schema (`ackwire-signalling`), which the member's API speaks.
pub use ackwire_signalling as signalling;

pub use core_link::RefusedDatagram;
pub use delivery::{DEFAULT_PEER_BUDGET, DeliveryError, HOLD_LIMIT};
