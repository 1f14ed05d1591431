//! A packet on a WebSocket goes out only while the socket is open and its queue is short.
//! Runs in headless Chromium through `wasm-bindgen-test-runner` (see `cargo xtask test`).

use js_sys::{Array, Function, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

use super::{MAX_BUFFERED, Socket};

wasm_bindgen_test_configure!(run_in_browser);

/// A socket whose `readyState` and `bufferedAmount` the test sets, recording what is sent.
fn socket() -> (Socket, JsValue) {
    let fake = Function::new_no_args(
        "return { readyState: 1, bufferedAmount: 0, sent: [], send(d) { this.sent.push(d.length); } };",
    )
    .call0(&JsValue::NULL)
    .unwrap();
    let socket = Socket {
        ws: fake.clone().unchecked_into(),
        _callbacks: [Box::new(()), Box::new(())],
    };
    (socket, fake)
}

fn set(fake: &JsValue, key: &str, value: u32) {
    Reflect::set(fake, &key.into(), &value.into()).unwrap();
}

#[wasm_bindgen_test]
fn a_packet_is_dropped_while_more_than_64_kib_wait_or_the_socket_is_not_open() {
    let (socket, fake) = socket();
    let sent = || Array::from(&Reflect::get(&fake, &"sent".into()).unwrap()).length();
    socket.send(&[1; 100]);
    assert_eq!(sent(), 1, "open, nothing queued");
    set(&fake, "bufferedAmount", MAX_BUFFERED);
    socket.send(&[2; 100]);
    assert_eq!(sent(), 2, "64 KiB queued: still sent");
    set(&fake, "bufferedAmount", MAX_BUFFERED + 1);
    socket.send(&[3; 100]);
    assert_eq!(sent(), 2, "over 64 KiB: dropped");
    set(&fake, "bufferedAmount", 0);
    for state in [0, 2, 3] {
        set(&fake, "readyState", state);
        socket.send(&[4; 100]);
    }
    assert_eq!(sent(), 2, "connecting, closing or closed: dropped");
}
