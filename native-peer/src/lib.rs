//! # ackwire-peer
//!
//! The native driver of the ackwire core over UDP: one UDP socket serves every
//! connection, and the loop around the core is short enough to read in one sitting.
//!
//! - [`peer`]: the loop: datagrams in, due packets out, sleep until the earliest timer;
//!   Ctrl-C, SIGTERM and `--duration` close every connection cleanly.
//! - [`connections`]: the core's `Listener` (`listen`) or one `Connection` (`connect`), the
//!   demo messages and their echo, refused datagrams counted by kind.
//! - [`link`]: the socket, batched reads, registration with the reactor only while waiting,
//!   and the optional link emulation around it.
//! - [`keys`]: the listener's key file and the fingerprints connectors pin.
//! - [`report`]: per-second stats as JSON, a plain line, or a live terminal line.
//! - [`cli`]: the `listen` / `connect` / `join` command line. The flags every command shares
//!   and the error of a refused flag value ([`cli::CommonArgs`], [`cli::ArgError`]) stand in
//!   `flags`, below both `cli` and `room`, so neither reaches into the other.
//! - `room` (feature `rooms`, on by default): `join`, the demo's native player: an
//!   application of the `ackwire` crate's `Room`, as a game would be. The only part that
//!   needs the room driver (and with it the `webrtc` crate).
//!
//! ## Socket I/O
//!
//! Game traffic is tens of small datagrams per second per connection, each to a different
//! peer, so segmentation offload (GSO/GRO, which batches datagrams to one destination) has
//! nothing to merge. What matters is not paying a wake-up per datagram and not touching a
//! connection's state twice: `listen` reads on readiness only when idle and otherwise on a
//! 1 ms timer ([`peer::READ_COALESCE`]), up to [`link::RECV_BATCH`] datagrams per read, and
//! answers each datagram at once, while its connection is in cache. One task and one socket
//! serve thousands of connections; `benches/udp.rs` measures the cost against a raw echo
//! doing the same I/O.
#![forbid(unsafe_code)]

pub mod cli;
pub mod connections;
mod flags;
pub mod keys;
pub mod peer;
pub mod report;
#[cfg(feature = "rooms")]
pub mod room;

/// The UDP socket layer and the precise timer, shared with the room driver (`ackwire::net`).
pub use ackwire::net::{timer, udp as link};
