//! Pong on ackwire, the example game: `protocol` (the messages, shared), the authoritative
//! host (`src/host.rs`, the `pong-host` binary, native) and the same game client as
//! `web/pong.js` in Rust (`client`, on `wasm32`: `web/rust.html` runs it). See README.md.

pub mod protocol;

#[cfg(target_arch = "wasm32")]
mod client;

#[cfg(target_arch = "wasm32")]
pub use client::start;
