//! # ackwire-peer
//!
//! The native driver of the ackwire core over UDP: one tokio `UdpSocket` serves every
//! connection, and the loop around the core is short enough to read in one sitting.
//!
//! - [`peer`]: the loop: datagrams in, due packets out, sleep until the earliest timer.
//! - [`connections`]: one core `Endpoint` per remote address (a stand-in for the core's
//!   coming connection layer), bounded, with idle timeout and drop counters.
//! - [`link`]: the socket, batched reads, and the optional link emulation around it.
//! - [`report`]: per-second stats as JSON, a plain line, or a live terminal line.
//! - [`cli`]: the `listen` / `connect` command line.
//!
//! ## Why a plain tokio `UdpSocket`
//!
//! Game traffic is tens of small datagrams per second per connection, each to a different
//! peer, so segmentation offload (GSO/GRO, which batches datagrams to one destination) has
//! nothing to merge. What does matter is not paying a task wake-up per datagram: after one
//! readiness wake-up the loop reads up to [`link::RECV_BATCH`] datagrams with non-blocking
//! `try_recv_from`, and sends with non-blocking `try_send_to`, so one task and one socket
//! serve thousands of connections. `benches/udp.rs` measures the cost against a raw echo.
#![forbid(unsafe_code)]

pub mod cli;
pub mod connections;
pub mod link;
pub mod peer;
pub mod report;
pub mod room;
