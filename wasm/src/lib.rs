//! Browser driver for ackwire: compiles the sans-IO core to WebAssembly and exposes it to
//! the page through wasm-bindgen.
//!
//! - [`Client`] (`client.rs`): a thin adapter around the room member
//!   (`ackwire_room::member`, shared with the native peer): the signalling WebSocket, one
//!   RTCPeerConnection with one data channel (`ordered: false, maxRetransmits: 0`) per link
//!   attempt, one timer from `performance.now()` and the member's `poll_timeout`.
//! - Free functions: the core's wire codec, for the front page.

mod client;

use ackwire_core::wire::PacketHeader;
use wasm_bindgen::prelude::*;

pub use client::Client;

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

/// Encodes a packet header with the core's wire codec and returns its bytes.
#[wasm_bindgen(js_name = encodeHeader)]
pub fn encode_header(sequence: u16, ack: u16, ack_bits: u32) -> Result<Vec<u8>, JsError> {
    let header = PacketHeader {
        sequence,
        ack,
        ack_bits,
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
    Ok(DecodedHeader {
        sequence: header.sequence,
        ack: header.ack,
        ack_bits: header.ack_bits,
        len: len as u32,
    })
}

/// A decoded packet header, as seen from JavaScript.
#[wasm_bindgen]
#[derive(Debug, Clone, Copy)]
pub struct DecodedHeader {
    /// Sequence number of the packet.
    pub sequence: u16,
    /// Most recent sequence received from the peer.
    pub ack: u16,
    /// Received set relative to `ack` (bit n = `ack - n`).
    #[wasm_bindgen(js_name = ackBits)]
    pub ack_bits: u32,
    /// Bytes the header occupied.
    pub len: u32,
}
