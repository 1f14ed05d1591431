//! Browser driver for ackwire: compiles the sans-IO core to WebAssembly and exposes it to
//! the page through wasm-bindgen.

use wasm_bindgen::prelude::*;

/// The version of the protocol core compiled into this bundle.
#[wasm_bindgen(js_name = coreVersion)]
pub fn core_version() -> String {
    ackwire_core::VERSION.to_owned()
}

/// RFC 1982 signed distance from `a` to `b`, computed by the core.
#[wasm_bindgen(js_name = sequenceDistance)]
pub fn sequence_distance(a: u16, b: u16) -> i16 {
    ackwire_core::sequence::distance(a, b)
}
