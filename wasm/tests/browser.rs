//! The protocol core compiled to wasm32, exercised inside the browser. Runs in headless
//! Chromium through `wasm-bindgen-test-runner` (see `cargo xtask test`).
#![cfg(target_arch = "wasm32")]

use std::time::Duration;

use ackwire_core::wire::{AckDelay, AckField, PacketHeader};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn core_sequence_math_wraps_inside_the_browser() {
    assert_eq!(ackwire_core::sequence::distance(65535, 0), 1);
    assert_eq!(ackwire_core::sequence::distance(0, 32768), -32768);
    assert_eq!(ackwire_wasm::core_version(), env!("CARGO_PKG_VERSION"));
}

/// The second worked example of docs/wire.md, encoded and decoded by the core in the browser.
#[wasm_bindgen_test]
fn header_codec_in_the_browser_matches_the_wire_spec_example() {
    let header = PacketHeader {
        sequence: 4660,
        ack: AckField::Low(0x30),
        ack_bits: 0xFFFF_7FFB,
        ack_delay: AckDelay::from_duration(Duration::from_millis(1)),
    };
    let mut buf = [0u8; PacketHeader::MAX_LEN];
    let len = header.encode(&mut buf).expect("encodes");
    assert_eq!(&buf[..len], [0x93, 0x12, 0x34, 0x30, 0x02, 0xFB, 0x7F]);
    let (decoded, read) = PacketHeader::decode(&buf[..len]).expect("decodes");
    assert_eq!((decoded, read), (header, 7));
    assert!(PacketHeader::decode(&[0x93, 0x12]).is_err(), "truncated");
}
