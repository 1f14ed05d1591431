//! Runs in headless Chromium through `wasm-bindgen-test-runner` (see `cargo xtask test`).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn core_sequence_math_wraps_inside_the_browser() {
    assert_eq!(ackwire_wasm::sequence_distance(65535, 0), 1);
    assert_eq!(ackwire_wasm::sequence_distance(0, 32768), -32768);
    assert_eq!(ackwire_wasm::core_version(), env!("CARGO_PKG_VERSION"));
}

/// The second worked example of docs/wire.md, encoded and decoded by the core in the browser.
#[wasm_bindgen_test]
fn header_codec_in_the_browser_matches_the_wire_spec_example() {
    let bytes = ackwire_wasm::encode_header(4660, 4656, false, 0xFFFF_7FFB, 1.0).expect("encodes");
    assert_eq!(bytes, [0x93, 0x12, 0x34, 0x30, 0x02, 0xFB, 0x7F]);
    let decoded = ackwire_wasm::decode_header(&bytes).expect("decodes");
    assert_eq!(
        (
            decoded.sequence,
            decoded.ack,
            decoded.ack_full,
            decoded.ack_bits
        ),
        (4660, 0x30, false, 0xFFFF_7FFB)
    );
    assert_eq!((decoded.ack_delay_ms, decoded.len), (Some(1.0), 7));
}

#[wasm_bindgen_test]
fn truncated_header_is_rejected_in_the_browser() {
    assert!(ackwire_wasm::decode_header(&[0x93, 0x12]).is_err());
}
