//! Native networking pieces the driver runs on, public for programs that drive the core
//! themselves (`ackwire-peer listen` / `connect` do):
//! - [`udp`]: one UDP socket for many peers, read and written in batches, optionally behind
//!   the core's link emulator;
//! - [`timer`]: one wake-up timer per loop, optionally precise to a tenth of a millisecond.

pub mod timer;
pub mod udp;
