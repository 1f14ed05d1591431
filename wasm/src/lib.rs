//! The JavaScript bindings of ackwire (the npm package's wasm part), through wasm-bindgen.
//!
//! - [`WasmRoom`] (`room.rs`): `ackwire::Room` call for call (the browser driver lives in the
//!   `ackwire` crate), with typed JS errors; `web/ackwire.js` wraps it in the public `join()`
//!   and `Room` (an `EventTarget`).
//! - Free functions: the core's wire codec, for the front page.

// The room exists on wasm32 only: `ackwire`'s browser driver (natively, `cargo test
// --workspace` builds the codec functions alone).
#[cfg(target_arch = "wasm32")]
mod room;

use std::time::Duration;

use ackwire_core::wire::{AckDelay, AckField, PacketHeader};
use wasm_bindgen::prelude::*;

#[cfg(target_arch = "wasm32")]
pub use room::WasmRoom;

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

/// Encodes a packet header with the core's wire codec and returns its bytes. `full_ack`
/// sends the ack in full (2 bytes) rather than as its low byte; `ack_delay_ms` is how long the
/// packet `ack` names was held (rounded to 0.5 ms, 127.25 ms and more saturate).
#[wasm_bindgen(js_name = encodeHeader)]
pub fn encode_header(
    sequence: u16,
    ack: u16,
    full_ack: bool,
    ack_bits: u32,
    ack_delay_ms: f64,
) -> Result<Vec<u8>, JsError> {
    let header = PacketHeader {
        sequence,
        ack: if full_ack {
            AckField::Full(ack)
        } else {
            AckField::Low(ack as u8)
        },
        ack_bits,
        ack_delay: AckDelay::from_duration(Duration::from_secs_f64(ack_delay_ms.max(0.0) / 1e3)),
    };
    let mut buf = [0u8; PacketHeader::MAX_LEN];
    let len = header.encode(&mut buf)?;
    Ok(buf[..len].to_vec())
}

/// Decodes a packet header with the core's wire codec; a malformed header throws an `Error`
/// carrying the core's typed error message.
#[wasm_bindgen(js_name = decodeHeader)]
pub fn decode_header(bytes: &[u8]) -> Result<DecodedHeader, JsError> {
    let (header, len) = PacketHeader::decode(bytes)?;
    let (ack, ack_full) = match header.ack {
        AckField::Full(ack) => (ack, true),
        AckField::Low(low) => (u16::from(low), false),
    };
    Ok(DecodedHeader {
        sequence: header.sequence,
        ack,
        ack_full,
        ack_bits: header.ack_bits,
        ack_delay_ms: header.ack_delay.duration().map(|d| d.as_secs_f64() * 1e3),
        len: len as u32,
    })
}

/// A decoded packet header, as seen from JavaScript.
#[wasm_bindgen]
#[derive(Debug, Clone, Copy)]
pub struct DecodedHeader {
    /// Sequence number of the packet.
    pub sequence: u16,
    /// The ack as sent: all 16 bits when `ackFull`, else its low byte (the receiver resolves
    /// the rest against the newest ack it holds).
    pub ack: u16,
    /// The ack was sent in full.
    #[wasm_bindgen(js_name = ackFull)]
    pub ack_full: bool,
    /// Received set relative to `ack` (bit n = `ack - n`).
    #[wasm_bindgen(js_name = ackBits)]
    pub ack_bits: u32,
    /// How long the sender held the packet `ack` names, in ms (`undefined` when saturated).
    #[wasm_bindgen(js_name = ackDelayMs)]
    pub ack_delay_ms: Option<f64>,
    /// Bytes the header occupied.
    pub len: u32,
}
