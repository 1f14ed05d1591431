//! Runs in headless Chromium through `wasm-bindgen-test-runner` (see `cargo xtask test`).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn core_sequence_math_wraps_inside_the_browser() {
    assert_eq!(ackwire_wasm::sequence_distance(65535, 0), 1);
    assert_eq!(ackwire_wasm::core_version(), env!("CARGO_PKG_VERSION"));
}
