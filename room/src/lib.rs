//! # ackwire-room
//!
//! The conventions every member of a room shares, whatever its driver: the browser's
//! (`ackwire-wasm`) and the native peer's (`ackwire-peer`). Kept in one place so the two
//! drivers cannot drift apart; both stay thin loops around the core.
//!
//! - [`signalling`]: the `/ws` JSON frames in both directions (`docs/signalling.md`): the one
//!   schema, shared with the signal server (`ackwire-signal`).
//! - [`demo`]: which core channel carries what in the demo, the position encoding, and the
//!   rule that decides which of two peers accepts the core connection.
#![forbid(unsafe_code)]

pub mod demo;
pub mod signalling;
