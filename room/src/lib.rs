//! # ackwire-room
//!
//! The room member, once for both drivers: the browser's (`ackwire-wasm`) and the native
//! peer's (`ackwire-peer join`). Like the core it is sans-IO: signalling frames, transport
//! events, datagrams and `now` go in; frames, transport commands, datagrams, app events and
//! the next timeout come out. The drivers only move bytes and events.
//!
//! - [`member`]: the [`Member`](member::Member): links, their lifecycle and recovery, roles,
//!   identities across server restarts, stats reports.
//! - [`signalling`]: the `/ws` JSON frames in both directions (`docs/signalling.md`): the one
//!   schema, shared with the signal server (`ackwire-signal`).
//! - [`demo`]: which core channel carries what in the demo, the position encoding, and the
//!   rule that decides which of two peers accepts the core connection.
//! - [`emulation`]: the core's link emulator around one link, both directions.
//! - [`backoff`]: the one retry policy (signalling and links).
//! - [`keys`]: how native↔native UDP links are keyed (the driver's [`keys::UdpKeys`]).
#![forbid(unsafe_code)]

pub mod backoff;
mod core_link;
pub mod demo;
pub mod emulation;
pub mod keys;
pub mod member;
pub mod signalling;

pub use core_link::{ChatError, RefusedDatagram};
