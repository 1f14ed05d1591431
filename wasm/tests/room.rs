//! The room's JS bindings in the browser: a room joined through an early socket (whose
//! frames the driver replays to the member), every bad input refused with a typed error, and
//! the last events handed over on close. No signalling server: the early socket's recorded
//! welcome puts a peer in the room, and its connection (to a closed port) never opens. Runs in
//! headless Chromium through `wasm-bindgen-test-runner` (see `cargo xtask test`).
#![cfg(target_arch = "wasm32")]

use ackwire_wasm::WasmRoom;
use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;
use web_sys::WebSocket;

wasm_bindgen_test_configure!(run_in_browser);

/// Nothing listens here (the tests run in a namespace with only loopback).
const SERVER: &str = "http://127.0.0.1:9/room/typed";
/// The socket URL the member's fresh join opens for [`SERVER`], instance `btest0001`.
const JOIN_URL: &str = "ws://127.0.0.1:9/ws?version=1&room=typed&kind=browser&instance=btest0001&app=typed-test&app_version=3&channels=unreliable-sequenced%2Creliable-ordered";
/// What the server would have said first: we are 1, and browser 2 is in the room.
const WELCOME: &str = r#"{"type":"welcome","version":1,"room":"typed","peer_id":1,"token":"t","resumed":false,"peers":[{"id":2,"kind":"browser","instance":"bpeer0002"}],"ice_servers":[]}"#;
/// A client's welcome in a host room: it is 5, and sees the host (native 3) alone.
const CLIENT_WELCOME: &str = r#"{"type":"welcome","version":1,"room":"typed","peer_id":5,"token":"t","resumed":false,"peers":[{"id":3,"kind":"native","role":"host","instance":"nhost0003"}],"ice_servers":[]}"#;

fn set(object: &JsValue, key: &str, value: impl Into<JsValue>) {
    Reflect::set(object, &key.into(), &value.into()).unwrap();
}

fn get(object: &JsValue, key: &str) -> JsValue {
    Reflect::get(object, &key.into()).unwrap()
}

/// The page's holder of an early socket to `url` that opened and received `WELCOME`.
fn early_socket(url: &str) -> (JsValue, WebSocket) {
    early_socket_with(url, WELCOME)
}

/// The page's holder of an early socket to `url` that opened and received `welcome`.
fn early_socket_with(url: &str, welcome: &str) -> (JsValue, WebSocket) {
    let ws = WebSocket::new(url).unwrap();
    let holder: JsValue = Object::new().into();
    set(&holder, "ws", ws.clone());
    set(&holder, "instance", "btest0001");
    set(&holder, "opened", true);
    set(&holder, "messages", Array::of1(&welcome.into()));
    (holder, ws)
}

/// Every event `onEvent` got, and a promise of the first one of type `awaited`.
struct Events {
    all: Array,
    first: Promise,
    on_event: Function,
    _closure: Closure<dyn FnMut(JsValue)>,
}

impl Events {
    /// The first event of type `kind` so far.
    fn find(&self, kind: &str) -> JsValue {
        self.all
            .iter()
            .find(|e| get(e, "type").as_string().as_deref() == Some(kind))
            .unwrap_or_else(|| panic!("a {kind} event"))
    }
}

fn events(awaited: &'static str) -> Events {
    let all = Array::new();
    let mut resolve = None;
    let first = Promise::new(&mut |r, _| resolve = Some(r));
    let resolve = resolve.unwrap();
    let closure = Closure::<dyn FnMut(JsValue)>::new({
        let all = all.clone();
        move |event: JsValue| {
            all.push(&event);
            if get(&event, "type").as_string().as_deref() == Some(awaited) {
                let _ = resolve.call1(&JsValue::NULL, &event);
            }
        }
    });
    Events {
        all,
        first,
        on_event: closure.as_ref().unchecked_ref::<Function>().clone(),
        _closure: closure,
    }
}

fn options(events: &Events, early: Option<&JsValue>) -> JsValue {
    let options: JsValue = Object::new().into();
    set(&options, "app", "typed-test");
    set(&options, "version", 3);
    let channels = Array::of2(&"unreliable-sequenced".into(), &"reliable-ordered".into());
    set(&options, "channels", channels);
    set(&options, "onEvent", events.on_event.clone());
    if let Some(early) = early {
        set(&options, "earlySocket", early.clone());
    }
    options
}

/// The `code` of the `Error` a call threw.
fn code<T: std::fmt::Debug>(result: Result<T, JsValue>) -> String {
    let error = result.expect_err("the call must throw");
    assert!(error.is_instance_of::<js_sys::Error>(), "{error:?}");
    get(&error, "code").as_string().expect("a code")
}

#[wasm_bindgen_test]
async fn bad_inputs_throw_typed_errors_and_close_hands_over_the_last_events() {
    let (holder, _ws) = early_socket(JOIN_URL);
    let events = events("peerjoin");
    let room = WasmRoom::new(SERVER, &options(&events, Some(&holder))).unwrap();
    // The recorded welcome reaches the member: we joined, and browser 2 is a peer.
    let joined = JsFuture::from(events.first.clone()).await.unwrap();
    let peer = get(&joined, "peer");
    assert_eq!(get(&joined, "serverId").as_f64(), Some(2.0));
    assert_eq!(room.server_id(), Some(1.0));
    // A mesh: the peer's role is `peer`, and the room has no host.
    assert_eq!(get(&joined, "role").as_string().unwrap(), "peer");
    assert_eq!(room.host(), None);
    let links = Array::from(&room.links());
    assert_eq!(links.length(), 1);
    assert_eq!(get(&links.get(0), "id"), peer);

    // Clocks: with no link up, this member (numbered 1) reads the room's clock as its own,
    // exactly; the peer's is unknown until pings came back on a link.
    let clock = room
        .clock(&JsValue::UNDEFINED)
        .unwrap()
        .expect("the room's clock");
    assert!(clock[0] > 0.0, "{clock:?}");
    assert_eq!(
        clock[1..],
        [0.0, 0.0, 1.0, 0.0, 0.0],
        "exact, no exchange, synced, no drift"
    );
    assert_eq!(room.clock(&peer), Ok(None));
    assert_eq!(code(room.clock(&"2".into())), "unknown_peer");

    let text: JsValue = "hi".into();
    let (unreliable, reliable): (JsValue, JsValue) = (0.into(), 1.into());
    // Capacity: a reliable channel keeps for a peer whose link is down; an unreliable one
    // has none until it connects.
    let capacity = room.send_capacity(&peer, &reliable).unwrap();
    assert_eq!(get(&capacity, "messages").as_f64(), Some(1024.0));
    assert!(
        get(&capacity, "bytes")
            .as_f64()
            .is_some_and(|b| b >= 262_144.0)
    );
    assert_eq!(
        code(room.send_capacity(&peer, &unreliable)),
        "not_connected"
    );
    assert_eq!(
        code(room.send_capacity(&peer, &7.into())),
        "unknown_channel"
    );
    // The peer's link is not up: an unreliable message is refused, a reliable one kept for
    // the next connection.
    assert_eq!(
        code(room.send(&peer, &unreliable, &text, false)),
        "not_connected"
    );
    assert_eq!(
        room.send(&peer, &reliable, &text, false),
        Ok(JsValue::UNDEFINED)
    );
    assert_eq!(
        code(room.send(&99.into(), &reliable, &text, false)),
        "unknown_peer"
    );
    assert_eq!(
        code(room.send(&1.5.into(), &reliable, &text, false)),
        "unknown_peer"
    );
    assert_eq!(
        code(room.send(&"2".into(), &reliable, &text, false)),
        "unknown_peer"
    );
    assert_eq!(
        code(room.send(&peer, &7.into(), &text, false)),
        "unknown_channel"
    );
    assert_eq!(
        code(room.send(&peer, &(-1).into(), &text, false)),
        "unknown_channel"
    );
    assert_eq!(code(room.send(&peer, &reliable, &text, true)), "reliable");
    let max = room.max_message_size(&unreliable).unwrap();
    let big = Uint8Array::new_with_length(max + 1);
    assert_eq!(
        code(room.send(&JsValue::UNDEFINED, &unreliable, &big, false)),
        "too_large"
    );
    assert_eq!(code(room.max_message_size(&9.into())), "unknown_channel");
    for bad in [
        Object::new().into(),
        Array::new().into(),
        JsValue::NULL,
        7.into(),
    ] {
        assert_eq!(
            code(room.send(&peer, &unreliable, &bad, false)),
            "bad_payload"
        );
    }
    // Well-formed, and the one peer's link not up: a reliable broadcast is kept for it, an
    // unreliable one goes to none; neither is refused.
    let sent_to = |report: Result<JsValue, JsValue>| {
        let report = report.expect("a broadcast report");
        let refused = Array::from(&get(&report, "refused"));
        (get(&report, "sent").as_f64(), refused.length())
    };
    assert_eq!(
        sent_to(room.send(&JsValue::UNDEFINED, &reliable, &text, false)),
        (Some(1.0), 0)
    );
    assert_eq!(
        sent_to(room.send(
            &JsValue::UNDEFINED,
            &unreliable,
            &Uint8Array::new_with_length(8).into(),
            true
        )),
        (Some(0.0), 0)
    );

    JsFuture::from(room.close()).await.unwrap();
    assert_eq!(code(room.send(&peer, &reliable, &text, false)), "closed");
    assert_eq!(code(room.set_outage(true)), "closed");
    assert_eq!(Array::from(&room.links()).length(), 0);
    assert_eq!(room.clock(&JsValue::UNDEFINED), Ok(None));
    assert_eq!(room.signalling().as_string().unwrap(), "closed");
    // Leaving ended the link: its last events came before close resolved.
    let left = events.find("peerleave");
    assert_eq!(get(&left, "reason").as_string().unwrap(), "we_left");
}

#[wasm_bindgen_test]
async fn an_early_socket_that_joined_otherwise_is_closed_not_adopted() {
    let client = format!("{JOIN_URL}&role=client");
    for (url, role) in [
        // Another instance in its URL: the member would not be the peer the server welcomed.
        (JOIN_URL.replace("btest0001", "bother0001"), "peer"),
        // A mesh peer's join, and the member joins as a client; and the other way round.
        (JOIN_URL.to_owned(), "client"),
        (client, "peer"),
    ] {
        let (holder, ws) = early_socket(&url);
        let events = events("joined");
        let options = options(&events, Some(&holder));
        set(&options, "role", role);
        let room = WasmRoom::new(SERVER, &options).unwrap();
        assert!(
            ws.ready_state() >= WebSocket::CLOSING,
            "the early socket is closed: {url} as {role}"
        );
        // The replay would have run in the first microtask after the join: nothing came of it.
        JsFuture::from(Promise::resolve(&JsValue::NULL))
            .await
            .unwrap();
        JsFuture::from(Promise::resolve(&JsValue::NULL))
            .await
            .unwrap();
        assert_eq!(room.server_id(), None);
        assert_eq!(room.host(), None);
        JsFuture::from(room.close()).await.unwrap();
    }
}

#[wasm_bindgen_test]
async fn a_client_adopts_a_socket_whose_url_joins_as_client_and_knows_its_host() {
    // The member's fresh join as a client: `role=client` last, as `UrlJoin::query` writes it.
    let (holder, ws) = early_socket_with(&format!("{JOIN_URL}&role=client"), CLIENT_WELCOME);
    let events = events("peerjoin");
    let options = options(&events, Some(&holder));
    set(&options, "role", "client");
    let room = WasmRoom::new(SERVER, &options).unwrap();
    assert!(
        ws.ready_state() < WebSocket::CLOSING,
        "the early socket is adopted"
    );
    let joined = JsFuture::from(events.first.clone()).await.unwrap();
    assert_eq!(get(&joined, "role").as_string().unwrap(), "host");
    assert_eq!(get(&joined, "kind").as_string().unwrap(), "native");
    assert_eq!(room.server_id(), Some(5.0));
    assert_eq!(room.host(), get(&joined, "peer").as_f64());
    JsFuture::from(room.close()).await.unwrap();
    let left = events.find("peerleave");
    assert_eq!(get(&left, "role").as_string().unwrap(), "host");
    assert_eq!(room.host(), None, "closed: no host");
}

#[wasm_bindgen_test]
fn a_join_that_cannot_start_throws_a_typed_error() {
    let events = events("joined");
    let join = |url: &str, options: &JsValue| WasmRoom::new(url, options).map(|_| ());
    assert_eq!(
        code(join(
            "ftp://127.0.0.1:9/room/typed",
            &options(&events, None)
        )),
        "bad_url"
    );
    assert_eq!(
        code(join("http://127.0.0.1:9/", &options(&events, None))),
        "bad_url"
    );
    let bad_channels = options(&events, None);
    set(&bad_channels, "channels", Array::of1(&"teleport".into()));
    assert_eq!(code(join(SERVER, &bad_channels)), "invalid_app");
    let no_channels = options(&events, None);
    set(&no_channels, "channels", Array::new());
    assert_eq!(code(join(SERVER, &no_channels)), "invalid_app");
    let bad_id = options(&events, None);
    set(&bad_id, "app", "not an id");
    assert_eq!(code(join(SERVER, &bad_id)), "invalid_app");
    let no_handler = options(&events, None);
    set(&no_handler, "onEvent", JsValue::NULL);
    assert_eq!(code(join(SERVER, &no_handler)), "bad_options");
    let bad_emulation = options(&events, None);
    let emulation: JsValue = Object::new().into();
    set(&emulation, "lossPct", -5);
    set(&bad_emulation, "emulation", emulation);
    assert_eq!(code(join(SERVER, &bad_emulation)), "invalid_config");
    for bad in [
        JsValue::from("server"),
        JsValue::from(1),
        JsValue::from("Host"),
    ] {
        let bad_role = options(&events, None);
        set(&bad_role, "role", bad);
        assert_eq!(code(join(SERVER, &bad_role)), "bad_options");
    }
    for bad in [
        JsValue::from(0),
        JsValue::from(-5000),
        JsValue::from(f64::NAN),
        JsValue::from(f64::INFINITY),
        JsValue::from("5000"),
        JsValue::NULL,
    ] {
        let bad_attempt = options(&events, None);
        set(&bad_attempt, "attemptTimeoutMs", bad);
        assert_eq!(code(join(SERVER, &bad_attempt)), "bad_options");
    }
}

/// A client's welcome in a host room whose host (native 3) serves WebTransport and a
/// WebSocket beside it.
const WEBSOCKET_HOST_WELCOME: &str = r#"{"type":"welcome","version":1,"room":"typed","peer_id":5,"token":"t","resumed":false,"peers":[{"id":3,"kind":"native","role":"host","instance":"nhost0003","webtransport":{"url":"https://127.0.0.1:9/ackwire","websocket":"ws://127.0.0.1:9/ackwire"}}],"ice_servers":[]}"#;

/// The options of a host room's client.
fn client_options(events: &Events, early: Option<&JsValue>) -> JsValue {
    let options = options(events, early);
    set(&options, "role", "client");
    options
}

/// The link to the room's one peer, as `links()` reads it now.
fn only_link(room: &WasmRoom) -> JsValue {
    let links = Array::from(&room.links());
    assert_eq!(links.length(), 1, "one link");
    links.get(0)
}

#[wasm_bindgen_test]
async fn without_webrtc_only_a_host_rooms_client_joins() {
    let global = js_sys::global();
    let rtc = get(&global, "RTCPeerConnection");
    // WebKitGTK's page: no `RTCPeerConnection`.
    Reflect::delete_property(&global, &"RTCPeerConnection".into()).unwrap();
    let events = events("joined");
    let join = |role: &str| {
        let options = options(&events, None);
        set(&options, "role", role);
        WasmRoom::new(SERVER, &options)
    };
    let (peer, host, client) = (
        join("peer").map(|_| ()),
        join("host").map(|_| ()),
        join("client"),
    );
    set(&global, "RTCPeerConnection", rtc);
    assert_eq!(code(peer), "unsupported_browser");
    assert_eq!(code(host), "unsupported_browser");
    JsFuture::from(client.expect("a client joins").close())
        .await
        .unwrap();
    // With WebRTC in the browser and `webRtc: false`: the same, told as a bad option.
    for role in ["peer", "host"] {
        let options = options(&events, None);
        set(&options, "role", role);
        set(&options, "webRtc", false);
        assert_eq!(
            code(WasmRoom::new(SERVER, &options).map(|_| ())),
            "bad_options"
        );
    }
}

#[wasm_bindgen_test]
async fn a_client_without_webrtc_whose_host_serves_no_websocket_loses_its_link_for_no_transport() {
    let (holder, _ws) = early_socket_with(&format!("{JOIN_URL}&role=client"), CLIENT_WELCOME);
    let events = events("peerjoin");
    let options = client_options(&events, Some(&holder));
    set(&options, "webRtc", false);
    let room = WasmRoom::new(SERVER, &options).unwrap();
    // The welcome that named the host started the link, and nothing could carry it.
    JsFuture::from(events.first.clone()).await.unwrap();
    let reason = get(&only_link(&room), "reason");
    assert_eq!(get(&reason, "code").as_string().unwrap(), "no_transport");
    JsFuture::from(room.close()).await.unwrap();
}

/// Stands in for the browser's `WebSocket` (installed as `globalThis.WebSocket`, so the
/// driver's `new WebSocket` and `instanceof WebSocket` meet it) until `restore()`: each socket
/// records what is sent on it, and the test opens, feeds and closes it (`open`, `receive`,
/// `drop`); `next()` resolves with the next one made. The early signalling socket is one too.
const FAKE_WEBSOCKET: &str = r#"
const Real = globalThis.WebSocket;
const made = [];
let waiting = [];
class FakeWebSocket {
  constructor(url) {
    this.url = String(url);
    this.readyState = 0;
    this.bufferedAmount = 0;
    this.binaryType = 'blob';
    this.sent = [];
    made.push(this);
    for (const resolve of waiting) resolve(this);
    waiting = [];
  }
  send(data) { this.sent.push(typeof data === 'string' ? data : new Uint8Array(data)); }
  close() { this.readyState = 3; }
  open() { this.readyState = 1; this.onopen?.(new Event('open')); }
  receive(data) { this.onmessage?.(new MessageEvent('message', { data })); }
  drop(code) { this.readyState = 3; this.onclose?.(new CloseEvent('close', { code })); }
}
Object.assign(FakeWebSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
globalThis.WebSocket = FakeWebSocket;
return {
  made,
  next: () => new Promise((resolve) => waiting.push(resolve)),
  restore: () => { globalThis.WebSocket = Real; },
};
"#;

/// Calls `object.name(args...)`.
fn call(object: &JsValue, name: &str, args: &[JsValue]) -> JsValue {
    let f: Function = get(object, name).dyn_into().unwrap();
    f.apply(object, &args.iter().collect()).unwrap()
}

#[wasm_bindgen_test]
async fn a_client_without_webrtc_dials_its_hosts_websocket_with_the_token_it_signals() {
    let fakes = Function::new_no_args(FAKE_WEBSOCKET)
        .call0(&JsValue::NULL)
        .unwrap();
    let signalling = WebSocket::new(&format!("{JOIN_URL}&role=client")).unwrap();
    set(&signalling, "readyState", 1);
    let holder: JsValue = Object::new().into();
    set(&holder, "ws", signalling.clone());
    set(&holder, "instance", "btest0001");
    set(&holder, "opened", true);
    set(
        &holder,
        "messages",
        Array::of1(&WEBSOCKET_HOST_WELCOME.into()),
    );
    let events = events("peerjoin");
    let options = client_options(&events, Some(&holder));
    // What `?transport=websocket` asks of the example game's page: the host's WebSocket alone.
    set(&options, "webRtc", false);
    set(&options, "webTransport", false);
    let room = WasmRoom::new(SERVER, &options).unwrap();
    JsFuture::from(events.first.clone()).await.unwrap();

    // The host's socket: its URL carries a fresh token, which went to the host through the
    // signalling server.
    let made = Array::from(&get(&fakes, "made"));
    assert_eq!(made.length(), 2, "the signalling socket, then the host's");
    let host = made.get(1);
    assert_eq!(get(&host, "binaryType").as_string().unwrap(), "arraybuffer");
    let url = get(&host, "url").as_string().unwrap();
    let token = url
        .strip_prefix("ws://127.0.0.1:9/ackwire?token=")
        .unwrap_or_else(|| panic!("{url}"));
    assert!(
        token.len() == 32
            && token
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
        "{token}"
    );
    let signals: Vec<JsValue> = Array::from(&get(&signalling, "sent"))
        .iter()
        .map(|text| js_sys::JSON::parse(&text.as_string().unwrap()).unwrap())
        .filter(|frame| get(frame, "type").as_string().as_deref() == Some("signal"))
        .collect();
    assert_eq!(signals.len(), 1, "the token alone");
    assert_eq!(get(&signals[0], "to").as_f64(), Some(3.0));
    let data = get(&signals[0], "data");
    assert_eq!(get(&data, "websocket").as_string().as_deref(), Some(token));
    let link = only_link(&room);
    assert_eq!(get(&link, "transport").as_string().unwrap(), "websocket");
    assert_eq!(get(&link, "state").as_string().unwrap(), "negotiating");

    // Open: the core's handshake runs over it. A binary message is a packet for the link
    // (this one is refused: no core packet), a text message none.
    call(&host, "open", &[]);
    assert_eq!(get(&only_link(&room), "state").as_string().unwrap(), "open");
    call(
        &host,
        "receive",
        &[Uint8Array::from(&[1u8, 2, 3][..]).buffer().into()],
    );
    call(&host, "receive", &["not a packet".into()]);
    assert_eq!(get(&only_link(&room), "refused").as_f64(), Some(1.0));

    // Closed once open: the link is lost, and tried again on a new socket with a new token.
    let next = get(&fakes, "next").dyn_into::<Function>().unwrap();
    let again = next
        .call0(&JsValue::NULL)
        .unwrap()
        .dyn_into::<Promise>()
        .unwrap();
    call(&host, "drop", &[1006.into()]);
    let reason = get(&only_link(&room), "reason");
    assert_eq!(get(&reason, "code").as_string().unwrap(), "channel_closed");
    let retry = JsFuture::from(again).await.unwrap();
    let url = get(&retry, "url").as_string().unwrap();
    assert!(url.starts_with("ws://127.0.0.1:9/ackwire?token=") && !url.ends_with(token));

    // Closed before it opened: that attempt failed, and says so.
    call(&retry, "drop", &[1006.into()]);
    let reason = get(&only_link(&room), "reason");
    assert_eq!(get(&reason, "code").as_string().unwrap(), "transport");
    let message = get(&reason, "message").as_string().unwrap();
    assert!(message.contains("closed before it opened"), "{message}");

    JsFuture::from(room.close()).await.unwrap();
    call(&fakes, "restore", &[]);
}
