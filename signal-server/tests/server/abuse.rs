//! Every kind of bad input gets a typed error frame, is counted in `/metrics`, and leaves
//! other clients unaffected; connections close only when a limit says so.

use crate::common;
use std::time::Duration;

use crate::common::{Client, Server, peer_id};
use futures_util::SinkExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

/// A pair of peers in `room` that must keep relaying whatever the abuser does.
async fn bystanders(server: &Server, room: &str) -> (Client, Client, u64) {
    let (mut a, _) = server.peer(room).await;
    let (b, wb) = server.peer(room).await;
    a.recv_type("peer_joined").await;
    (a, b, peer_id(&wb))
}

async fn still_relaying(a: &mut Client, b: &mut Client, idb: u64) {
    a.send(json!({"type": "signal", "to": idb, "data": "ping"}))
        .await;
    assert_eq!(b.recv_type("signal").await["data"], "ping");
}

async fn assert_counted(server: &Server, code: &str, at_least: f64) {
    let n = server
        .metric(&format!("ackwire_signal_errors_total{{code=\"{code}\"}}"))
        .await;
    assert!(
        n >= at_least,
        "errors_total{{code={code}}} = {n}, expected >= {at_least}"
    );
}

#[tokio::test]
async fn malformed_frames_get_error_frames_and_the_connection_stays_usable() {
    let server = Server::start(|_| {}).await;
    let (mut a, mut b, idb) = bystanders(&server, "calm").await;
    let mut bad = server.client().await;
    for junk in [
        "{not json",
        "[]",
        r#"{"type":"teleport"}"#,
        r#"{"type":"join","room":"x"}"#,
        r#"{"type":"signal","to":"seven","data":1}"#,
        r#"{"type":"join","version":1,"room":"x","kind":"native","udp_addr":"not an address"}"#,
    ] {
        bad.send_raw(junk).await;
        assert_eq!(bad.error_code().await, "malformed_message", "for {junk}");
    }
    bad.ws.send(Message::binary(vec![1u8, 2, 3])).await.unwrap();
    assert_eq!(bad.error_code().await, "malformed_message");
    // Still usable afterwards.
    bad.join("calm").await;
    still_relaying(&mut a, &mut b, idb).await;
    assert_counted(&server, "malformed_message", 7.0).await;
    server.stop().await;
}

#[tokio::test]
async fn room_messages_before_join_are_refused() {
    let server = Server::start(|_| {}).await;
    let (mut a, mut b, idb) = bystanders(&server, "calm").await;
    let mut early = server.client().await;
    early
        .send(json!({"type": "signal", "to": idb, "data": "sneaky"}))
        .await;
    assert_eq!(early.error_code().await, "not_joined");
    early.send(json!({"type": "stats", "links": []})).await;
    assert_eq!(early.error_code().await, "not_joined");
    early.send(json!({"type": "leave"})).await;
    assert_eq!(early.error_code().await, "not_joined");
    b.assert_quiet(Duration::from_millis(100)).await;
    still_relaying(&mut a, &mut b, idb).await;
    assert_counted(&server, "not_joined", 3.0).await;
    server.stop().await;
}

#[tokio::test]
async fn invalid_room_names_are_refused_in_join_and_subscribe() {
    let server = Server::start(|_| {}).await;
    let mut c = server.client().await;
    let long = "x".repeat(65);
    for name in ["", "has space", "../etc", "émoji", long.as_str()] {
        c.send(json!({"type": "join", "version": 1, "room": name, "kind": "browser"}))
            .await;
        assert_eq!(c.error_code().await, "invalid_room_name", "for {name:?}");
    }
    c.send(json!({"type": "subscribe", "room": "no/slash"}))
        .await;
    assert_eq!(c.error_code().await, "invalid_room_name");
    assert_eq!(server.metric("ackwire_signal_rooms").await, 0.0);
    assert_counted(&server, "invalid_room_name", 6.0).await;
    server.stop().await;
}

#[tokio::test]
async fn wrong_protocol_version_and_inconsistent_joins_are_refused() {
    let server = Server::start(|_| {}).await;
    let mut c = server.client().await;
    c.send(json!({"type": "join", "version": 99, "room": "r", "kind": "browser"}))
        .await;
    assert_eq!(c.error_code().await, "unsupported_version");
    c.send(json!({"type": "join", "version": 1, "room": "r", "kind": "browser", "udp_addr": "127.0.0.1:9"}))
        .await;
    assert_eq!(c.error_code().await, "invalid_join");
    c.join("r").await;
    c.send(json!({"type": "join", "version": 1, "room": "r2", "kind": "browser"}))
        .await;
    assert_eq!(c.error_code().await, "already_joined");
    assert_eq!(server.metric("ackwire_signal_peers").await, 1.0);
    server.stop().await;
}

#[tokio::test]
async fn a_full_room_refuses_the_next_peer_and_keeps_the_others() {
    let server = Server::start(|c| c.max_peers_per_room = 2).await;
    let (mut a, mut b, idb) = bystanders(&server, "small").await;
    let mut third = server.client().await;
    third
        .send(json!({"type": "join", "version": 1, "room": "small", "kind": "browser"}))
        .await;
    assert_eq!(third.error_code().await, "room_full");
    a.assert_quiet(Duration::from_millis(100)).await;
    still_relaying(&mut a, &mut b, idb).await;
    // Another room is still open to it.
    third.join("roomy").await;
    server.stop().await;
}

#[tokio::test]
async fn room_count_limit_refuses_new_rooms_but_not_existing_ones() {
    let server = Server::start(|c| c.max_rooms = 1).await;
    let (_a, _) = server.peer("only").await;
    let mut c = server.client().await;
    c.send(json!({"type": "join", "version": 1, "room": "second", "kind": "browser"}))
        .await;
    assert_eq!(c.error_code().await, "too_many_rooms");
    c.join("only").await;
    server.stop().await;
}

#[tokio::test]
async fn signal_to_unknown_peer_is_refused() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = server.peer("r").await;
    a.send(json!({"type": "signal", "to": 424242, "data": 1}))
        .await;
    assert_eq!(a.error_code().await, "unknown_peer");
    a.send(json!({"type": "signal", "to": peer_id(&wa), "data": 1}))
        .await;
    assert_eq!(a.error_code().await, "unknown_peer");
    assert_counted(&server, "unknown_peer", 2.0).await;
    server.stop().await;
}

#[tokio::test]
async fn claiming_another_peers_id_is_refused_and_nothing_is_relayed() {
    let server = Server::start(|_| {}).await;
    let (mut a, mut b, idb) = bystanders(&server, "r").await;
    let (mut c, _) = server.peer("r").await;
    let mut dash = server.client().await;
    dash.send(json!({"type": "subscribe", "room": "r"})).await;
    dash.recv_type("subscribed").await;

    c.send(json!({"type": "signal", "to": idb, "from": idb, "data": "forged"}))
        .await;
    assert_eq!(c.error_code().await, "peer_id_mismatch");
    c.send(json!({"type": "stats", "from": idb, "links": []}))
        .await;
    assert_eq!(c.error_code().await, "peer_id_mismatch");
    dash.assert_quiet(Duration::from_millis(100)).await;
    b.recv_type("peer_joined").await; // c's arrival
    b.assert_quiet(Duration::from_millis(100)).await;
    still_relaying(&mut a, &mut b, idb).await;
    assert_counted(&server, "peer_id_mismatch", 2.0).await;
    server.stop().await;
}

#[tokio::test]
async fn oversized_message_gets_an_error_and_the_connection_stays() {
    let server = Server::start(|c| c.max_message_bytes = 1024).await;
    let (mut a, mut b, idb) = bystanders(&server, "r").await;
    let big = "x".repeat(2000);
    a.send(json!({"type": "signal", "to": idb, "data": big}))
        .await;
    assert_eq!(a.error_code().await, "message_too_large");
    b.assert_quiet(Duration::from_millis(100)).await;
    still_relaying(&mut a, &mut b, idb).await;
    server.stop().await;
}

#[tokio::test]
async fn message_over_the_hard_cap_closes_only_that_connection() {
    let server = Server::start(|c| c.max_message_bytes = 1024).await;
    let (mut a, mut b, idb) = bystanders(&server, "r").await;
    let mut hog = server.client().await;
    hog.send_raw(&"y".repeat(8 * 1024)).await;
    assert_eq!(hog.error_code().await, "message_too_large");
    // The close frame comes first; the socket may then end in a reset, since the rest of the
    // oversized frame is never read (reading it would mean buffering what the cap refuses).
    let frame = hog.closed().await.expect("close frame");
    assert_eq!(
        (u16::from(frame.code), frame.reason.as_str()),
        (1009, "message_too_large")
    );
    still_relaying(&mut a, &mut b, idb).await;
    assert_eq!(
        server
            .metric("ackwire_signal_server_closes_total{reason=\"message_too_large\"}")
            .await,
        1.0
    );
    server.stop().await;
}

#[tokio::test]
async fn flooding_gets_rate_limit_errors_then_a_close_while_others_keep_working() {
    let server = Server::start(|c| {
        c.rate_per_sec = 5;
        c.rate_burst = 5;
        c.rate_strikes = 10;
    })
    .await;
    let (mut a, mut b, idb) = bystanders(&server, "r").await;
    let (mut flood, _) = server.peer("r").await;
    for _ in 0..30 {
        flood.send(json!({"type": "stats", "links": []})).await;
    }
    let mut limited = 0;
    let frame = loop {
        match flood.next_event(common::WAIT).await {
            common::Event::Json(v) if v["code"] == "rate_limited" => limited += 1,
            common::Event::Json(_) => {}
            common::Event::Closed(frame) => break frame,
            common::Event::Timeout => panic!("flooder was not closed"),
        }
    };
    assert!(limited >= 10, "only {limited} rate_limited frames");
    assert_eq!(frame.expect("close frame").reason.as_str(), "rate_limit");
    still_relaying(&mut a, &mut b, idb).await;
    assert_counted(&server, "rate_limited", 10.0).await;
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_stops_reading_is_disconnected_and_others_are_not_stalled() {
    let server = Server::start(|c| {
        c.outbound_queue = 4;
        c.write_timeout = Duration::from_millis(300);
        c.rate_per_sec = 100_000;
        c.rate_burst = 100_000;
        c.reconnect_grace = Duration::from_millis(100);
    })
    .await;
    let (mut a, mut b, idb) = bystanders(&server, "r").await;
    // The sleeper joins and then never reads again.
    let (_sleeper, ws) = server.peer("r").await;
    a.recv_type("peer_joined").await;
    b.recv_type("peer_joined").await;
    let payload = "z".repeat(15_000);
    let mut sent = 0;
    // Enough to fill both kernel socket buffers and the queue many times over.
    while sent < 2_000 {
        a.send(json!({"type": "signal", "to": peer_id(&ws), "data": payload}))
            .await;
        sent += 1;
        if server
            .metric("ackwire_signal_server_closes_total{reason=\"slow_reader\"}")
            .await
            >= 1.0
        {
            break;
        }
    }
    assert!(sent < 2_000, "slow reader was never disconnected");
    let left = a.recv_type("peer_left").await;
    assert_eq!(
        (left["peer_id"].as_u64(), left["reason"].as_str()),
        (Some(peer_id(&ws)), Some("lost"))
    );
    still_relaying(&mut a, &mut b, idb).await;
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_never_answers_pings_times_out_and_the_room_is_told() {
    let server = Server::start(|c| {
        c.ping_interval = Duration::from_millis(200);
        c.idle_timeout = Duration::from_millis(1000);
        c.reconnect_grace = Duration::from_millis(100);
    })
    .await;
    let (mut a, _) = server.peer("r").await;
    // A client that is never polled never answers pings.
    let (_mute, wm) = server.peer("r").await;
    a.recv_type("peer_joined").await;
    // `a` itself keeps answering pings because recv polls it.
    let left = a.recv_type("peer_left").await;
    assert_eq!(
        (left["peer_id"].as_u64(), left["reason"].as_str()),
        (Some(peer_id(&wm)), Some("lost"))
    );
    assert_eq!(
        server
            .metric("ackwire_signal_server_closes_total{reason=\"idle_timeout\"}")
            .await,
        1.0
    );
    server.stop().await;
}

#[tokio::test]
async fn invalid_instances_are_refused_and_change_nothing() {
    let server = Server::start(|_| {}).await;
    let (mut a, mut b, idb) = bystanders(&server, "calm").await;
    let mut c = server.client().await;
    let long = "i".repeat(65);
    for instance in ["", "has space", "a/b", "émoji", long.as_str()] {
        for room in ["calm", "fresh"] {
            c.send(json!({"type": "join", "version": 1, "room": room, "kind": "browser", "instance": instance}))
                .await;
            assert_eq!(c.error_code().await, "invalid_instance", "for {instance:?}");
        }
    }
    c.send(json!({"type": "join", "version": 1, "room": "calm", "kind": "browser", "instance": 7}))
        .await;
    assert_eq!(c.error_code().await, "malformed_message");
    a.assert_quiet(Duration::from_millis(100)).await;
    b.assert_quiet(Duration::from_millis(100)).await;
    assert_eq!(server.metric("ackwire_signal_peers").await, 2.0);
    assert_eq!(server.metric("ackwire_signal_rooms").await, 1.0);
    still_relaying(&mut a, &mut b, idb).await;
    assert_counted(&server, "invalid_instance", 10.0).await;
    // The same connection can still join.
    c.send(json!({"type": "join", "version": 1, "room": "calm", "kind": "browser", "instance": &long[..64]}))
        .await;
    assert_eq!(c.recv().await["type"], "welcome");
    server.stop().await;
}
