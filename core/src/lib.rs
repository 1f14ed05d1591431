//! # ackwire-core
//!
//! The ackwire protocol as a sans-IO state machine: no sockets, no clock, no threads.
//! Time comes in as an argument, bytes come in through one `receive` and leave through one
//! `poll_transmit`, so the same code runs natively and in the browser (wasm32).
#![forbid(unsafe_code)]

/// Sequence numbers: RFC 1982 comparison and signed distance, used for every comparison.
pub mod sequence;
/// The packet header on the wire: [`wire::PacketHeader`] and its compact codec (`docs/wire.md`).
pub mod wire;

/// The crate version, shown by drivers (the browser page prints it to prove the core runs there).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
