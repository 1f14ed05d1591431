//! The JavaScript bindings of ackwire (the npm package's wasm part), through wasm-bindgen.
//!
//! - `WasmRoom` (`room.rs`, wasm32 only): `ackwire::Room` call for call (the browser driver lives in the
//!   `ackwire` crate), with typed JS errors; `web/ackwire.js` wraps it in the public `join()`
//!   and `Room` (an `EventTarget`).
//! - [`core_version`]: the protocol core's version compiled into the bundle.
//!
//! Nothing else: a game's bundle carries the room and its core, not the front page's
//! demonstrations.

// The room exists on wasm32 only: `ackwire`'s browser driver (natively, `cargo test
// --workspace` builds the version alone).
#[cfg(target_arch = "wasm32")]
mod room;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen::prelude::*;

#[cfg(target_arch = "wasm32")]
pub use room::WasmRoom;

/// The version of the protocol core compiled into this bundle.
#[cfg_attr(target_arch = "wasm32", wasm_bindgen(js_name = coreVersion))]
pub fn core_version() -> String {
    ackwire_core::VERSION.to_owned()
}
