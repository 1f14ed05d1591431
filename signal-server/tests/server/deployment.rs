//! What an operator relies on when the server faces the internet: per-address caps, the
//! Origin check, the admin token, no addresses on dashboards, rotating resume tokens, frames
//! that are not held back, closes that end in a close frame, and a slow reader that costs its
//! senders nothing. Real server, real WebSocket clients, all on 127.0.0.1.

use crate::common;
use std::{net::SocketAddr, time::Duration};

use crate::common::{Client, Server, WAIT, peer_id, upgrade};
use ackwire_signalling::{PeerKind, UrlJoin};
use serde_json::json;
use tokio::time::Instant;

#[tokio::test]
async fn the_33rd_connection_from_one_address_is_refused_with_429_while_32_work() {
    let server = Server::start(|_| {}).await;
    let mut held = Vec::new();
    for _ in 0..32 {
        held.push(
            upgrade(server.addr, "/ws", &[])
                .await
                .expect("within the cap"),
        );
    }
    assert_eq!(upgrade(server.addr, "/ws", &[]).await.err(), Some(429));
    assert_eq!(
        server
            .metric("ackwire_signal_upgrades_refused_total{reason=\"per_ip_limit\"}")
            .await,
        1.0
    );
    // The ones inside the cap are served.
    let welcome = held[31].join("lobby").await;
    assert_eq!(welcome["type"], "welcome");
    // A closed connection frees its place.
    assert!(held.pop().unwrap().close().await);
    let mut again = loop {
        // The server notices the close a moment after the client does.
        if let Ok(c) = upgrade(server.addr, "/ws", &[]).await {
            break c;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(again.join("lobby").await["type"], "welcome");
    server.stop().await;
}

#[tokio::test]
async fn pages_of_other_origins_are_refused_with_403_and_listed_or_absent_origins_allowed() {
    let server = Server::start(|c| c.allowed_origins = vec!["https://game.example".into()]).await;
    let own = format!("http://{}", server.addr);
    for (origin, allowed) in [
        (None, true),
        (Some(own.as_str()), true),
        (Some("https://game.example"), true),
        (Some("https://evil.example"), false),
        (Some("http://localhost:1"), false),
    ] {
        let headers: Vec<(&str, &str)> = origin.map(|o| ("origin", o)).into_iter().collect();
        let result = upgrade(server.addr, "/ws", &headers).await;
        match (allowed, result) {
            (true, Ok(mut c)) => assert_eq!(c.join("lobby").await["type"], "welcome"),
            (false, Err(status)) => assert_eq!(status, 403, "{origin:?}"),
            (allowed, result) => panic!("{origin:?}: allowed {allowed}, got {:?}", result.err()),
        }
    }
    assert_eq!(
        server
            .metric("ackwire_signal_upgrades_refused_total{reason=\"origin\"}")
            .await,
        2.0
    );
    server.stop().await;
}

#[tokio::test]
async fn one_address_creates_rooms_at_its_budget_and_joins_existing_rooms_freely() {
    let server = Server::start(|c| c.rooms_per_ip_per_min = 3).await;
    let mut clients = Vec::new();
    for i in 0..3 {
        let (c, _) = server.peer(&format!("room-{i}")).await;
        clients.push(c);
    }
    let mut extra = server.client().await;
    extra
        .send(json!({"type": "join", "version": 1, "room": "room-3", "kind": "browser"}))
        .await;
    assert_eq!(extra.error_code().await, "room_creation_limited");
    // Nothing changed: the room does not exist, and the refused client can still join one
    // that does.
    assert_eq!(server.metric("ackwire_signal_rooms").await, 3.0);
    assert_eq!(extra.join("room-0").await["type"], "welcome");
    assert_eq!(
        server
            .metric("ackwire_signal_errors_total{code=\"room_creation_limited\"}")
            .await,
        1.0
    );
    server.stop().await;
}

/// Serve `config` on a loopback listener while the app believes it listens on `claimed`.
async fn start_as_if_bound_to(
    claimed: SocketAddr,
    config: ackwire_signal::Config,
) -> (SocketAddr, tokio::sync::watch::Sender<bool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let app = ackwire_signal::app(config, claimed, stopped).unwrap();
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await });
    (addr, stop)
}

#[tokio::test]
async fn watching_every_room_needs_the_admin_token_in_the_frame_or_the_upgrade() {
    let server = Server::start(|c| c.admin_token = Some("s3cret-admin".into())).await;
    let (_a, _) = server.peer("one").await;
    let mut stranger = server.client().await;
    stranger.send(json!({"type": "subscribe"})).await;
    assert_eq!(stranger.error_code().await, "admin_token_required");
    stranger
        .send(json!({"type": "subscribe", "token": "guess"}))
        .await;
    assert_eq!(stranger.error_code().await, "admin_token_required");
    // A room's own dashboard needs no token.
    stranger
        .send(json!({"type": "subscribe", "room": "one"}))
        .await;
    assert_eq!(stranger.recv().await["type"], "subscribed");

    let mut admin = server.client().await;
    admin
        .send(json!({"type": "subscribe", "token": "s3cret-admin"}))
        .await;
    assert_eq!(admin.recv().await["rooms"][0]["room"], "one");
    let mut bearer = upgrade(
        server.addr,
        "/ws",
        &[("authorization", "Bearer s3cret-admin")],
    )
    .await
    .unwrap();
    bearer.send(json!({"type": "subscribe"})).await;
    assert_eq!(bearer.recv().await["rooms"][0]["room"], "one");
    server.stop().await;
}

#[tokio::test]
async fn without_an_admin_token_every_room_is_watchable_only_on_a_loopback_bind() {
    let config = || ackwire_signal::Config::default();
    let (public, _stop_public) =
        start_as_if_bound_to("192.0.2.10:8080".parse().unwrap(), config()).await;
    let mut c = Client::connect(public).await;
    c.send(json!({"type": "subscribe"})).await;
    assert_eq!(c.error_code().await, "admin_token_required");
    c.send(json!({"type": "subscribe", "room": "lobby"})).await;
    assert_eq!(c.recv().await["type"], "subscribed");

    let (local, _stop_local) =
        start_as_if_bound_to("127.0.0.1:8080".parse().unwrap(), config()).await;
    let mut c = Client::connect(local).await;
    c.send(json!({"type": "subscribe"})).await;
    assert_eq!(c.recv().await["type"], "subscribed");
}

#[tokio::test]
async fn dashboards_never_receive_a_natives_udp_address() {
    let server = Server::start(|_| {}).await;
    let native_join = json!({"type": "join", "version": 1, "room": "lobby", "kind": "native",
        "udp_addr": "127.0.0.1:40000"});
    let mut first = server.client().await;
    first.join_with(native_join.clone()).await;
    let mut dash = server.client().await;
    dash.send(json!({"type": "subscribe", "room": "lobby"}))
        .await;
    let mut all = server.client().await;
    all.send(json!({"type": "subscribe"})).await;
    let mut seen = vec![dash.recv().await, all.recv().await];
    // A member sees the address; dashboards see the peer without it.
    let mut second = server.client().await;
    let welcome = second
        .join_with(
            json!({"type": "join", "version": 1, "room": "lobby", "kind": "native",
            "udp_addr": "127.0.0.1:40001"}),
        )
        .await;
    assert_eq!(welcome["peers"][0]["udp_addr"], "127.0.0.1:40000");
    assert_eq!(
        first.recv_type("peer_joined").await["peer"]["udp_addr"],
        "127.0.0.1:40001"
    );
    seen.push(dash.recv().await);
    seen.push(all.recv().await);
    for frame in &seen {
        assert!(!frame.to_string().contains("udp_addr"), "{frame}");
        assert!(!frame.to_string().contains("4000"), "{frame}");
    }
    assert_eq!(seen[2]["type"], "peer_joined");
    server.stop().await;
}

#[tokio::test]
async fn peers_are_tagged_by_the_address_they_connect_from_and_dashboards_see_no_tag() {
    let server = Server::start(|_| {}).await;
    let native = |port: u16| {
        json!({"type": "join", "version": 1, "room": "lobby", "kind": "native",
            "udp_addr": format!("192.168.1.2:{port}")})
    };
    let mut dash = server.client().await;
    dash.send(json!({"type": "subscribe", "room": "lobby"}))
        .await;
    dash.recv().await;
    let mut a = server.client().await;
    let wa = a.join_with(native(1)).await;
    let mut b = server.client().await;
    let wb = b.join_with(native(2)).await;
    // Another address of this machine: another client address to the server.
    let mut c = Client::connect_from(server.addr, "127.0.0.2".parse().unwrap()).await;
    let wc = c.join_with(native(3)).await;
    let tag = |v: &serde_json::Value| v.as_str().expect("a network tag").to_owned();
    // Same address, same tag; another address, another tag; the address itself is not shown.
    assert_eq!(tag(&wa["network"]), tag(&wb["network"]));
    assert_ne!(tag(&wa["network"]), tag(&wc["network"]));
    assert_eq!(tag(&wb["peers"][0]["network"]), tag(&wa["network"]));
    assert_eq!(tag(&wc["peers"][1]["network"]), tag(&wb["network"]));
    let joined = a.recv_type("peer_joined").await;
    assert_eq!(tag(&joined["peer"]["network"]), tag(&wb["network"]));
    let joined = a.recv_type("peer_joined").await;
    assert_eq!(tag(&joined["peer"]["network"]), tag(&wc["network"]));
    for welcome in [&wa, &wb, &wc] {
        assert!(!welcome.to_string().contains("127.0.0"), "{welcome}");
    }
    for _ in 0..3 {
        let frame = dash.recv().await;
        assert!(!frame.to_string().contains("network"), "{frame}");
    }
    server.stop().await;
}

#[tokio::test]
async fn every_welcome_carries_a_new_token_and_a_used_one_is_dead() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = server.peer("lobby").await;
    let resume = |token: &serde_json::Value| {
        json!({"type": "join", "version": 1, "room": "lobby", "kind": "browser",
            "resume": {"peer_id": peer_id(&wa), "token": token}})
    };
    let mut second = server.client().await;
    let w2 = second.join_with(resume(&wa["token"])).await;
    assert_eq!(
        (w2["resumed"].as_bool(), peer_id(&w2)),
        (Some(true), peer_id(&wa))
    );
    assert_ne!(w2["token"], wa["token"]);
    assert_eq!(
        a.closed().await.unwrap().reason.as_str(),
        "replaced_by_resume"
    );

    // The first token was spent: a thief replaying it gets nothing.
    let mut thief = server.client().await;
    thief.send(resume(&wa["token"])).await;
    assert_eq!(thief.error_code().await, "resume_rejected");
    // The current one works, once.
    let mut third = server.client().await;
    let w3 = third.join_with(resume(&w2["token"])).await;
    assert_ne!(w3["token"], w2["token"]);
    server.stop().await;
}

#[tokio::test]
async fn a_join_in_the_url_is_answered_by_the_first_frame() {
    let server = Server::start(|_| {}).await;
    let (mut a, _) = server.peer("lobby").await;
    // The query the room members build: an IPv6 address's brackets and colons encoded.
    let join = UrlJoin {
        udp_addr: Some("[::1]:40000".parse().unwrap()),
        instance: Some("p-1".into()),
        // Base64's `+`, `/` and `=` are encoded too.
        udp_key: Some(
            "+/+/AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxw="
                .parse()
                .unwrap(),
        ),
        ..UrlJoin::new("lobby", PeerKind::Native)
    };
    let mut b = upgrade(server.addr, &format!("/ws?{}", join.query()), &[])
        .await
        .unwrap();
    let welcome = b.recv().await;
    assert_eq!(
        (welcome["type"].as_str(), welcome["room"].as_str()),
        (Some("welcome"), Some("lobby"))
    );
    let joined = a.recv_type("peer_joined").await;
    assert_eq!(joined["peer"]["udp_addr"], "[::1]:40000");
    assert_eq!(joined["peer"]["instance"], "p-1");
    assert_eq!(
        joined["peer"]["udp_key"],
        "+/+/AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxw="
    );
    // It is a join like any other: signals flow, and a second join is refused.
    a.send(json!({"type": "signal", "to": peer_id(&welcome), "data": "hi"}))
        .await;
    assert_eq!(b.recv().await["data"], "hi");
    b.send(json!({"type": "join", "version": 1, "room": "other", "kind": "browser"}))
        .await;
    assert_eq!(b.error_code().await, "already_joined");

    // A bad join in the URL is a typed error, and the socket stays open for a join frame.
    for (query, code) in [
        ("version=9&room=lobby&kind=browser", "unsupported_version"),
        (
            "version=1&room=no%20spaces&kind=browser",
            "invalid_room_name",
        ),
        ("version=1&room=lobby", "malformed_message"),
        ("version=x&room=lobby&kind=browser", "malformed_message"),
        (
            "version=1&room=lobby&kind=browser&udp_addr=127.0.0.1%3A1",
            "invalid_join",
        ),
        (
            "version=1&room=lobby&kind=native&udp_key=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8%3D",
            "invalid_join",
        ),
        (
            "version=1&room=lobby&kind=native&udp_addr=127.0.0.1%3A1&udp_key=short",
            "malformed_message",
        ),
    ] {
        let mut c = upgrade(server.addr, &format!("/ws?{query}"), &[])
            .await
            .unwrap();
        assert_eq!(c.error_code().await, code, "{query}");
        assert_eq!(c.join("lobby").await["type"], "welcome");
    }
    server.stop().await;
}

#[tokio::test]
async fn frames_sent_back_to_back_are_not_held_back() {
    let server = Server::start(|c| {
        c.rate_per_sec = 10_000;
        c.rate_burst = 10_000;
    })
    .await;
    let (mut a, wa) = server.peer("lobby").await;
    let (mut b, wb) = server.peer("lobby").await;
    a.recv_type("peer_joined").await;
    common::assert_signals_not_held_back(&mut a, &mut b, peer_id(&wa), peer_id(&wb)).await;
    server.stop().await;
}

#[tokio::test]
async fn flooders_are_closed_with_a_1008_frame_and_an_orderly_end_never_a_reset() {
    let server = Server::start(|c| {
        c.rate_per_sec = 5;
        c.rate_burst = 5;
        c.rate_strikes = 10;
    })
    .await;
    let mut floods = Vec::new();
    for i in 0..20 {
        let room = format!("r{i}");
        let (mut flood, _) = server.peer(&room).await;
        floods.push(tokio::spawn(async move {
            for _ in 0..500 {
                flood.send(json!({"type": "stats", "links": []})).await;
            }
            flood.closed_cleanly().await
        }));
    }
    for flood in floods {
        let frame = flood.await.unwrap();
        assert_eq!(
            (u16::from(frame.code), frame.reason.as_str()),
            (1008, "rate_limit")
        );
    }
    assert_eq!(
        server
            .metric("ackwire_signal_server_closes_total{reason=\"rate_limit\"}")
            .await,
        20.0
    );
    server.stop().await;
}

#[tokio::test]
async fn a_silent_client_is_closed_with_a_1001_idle_timeout_frame_and_an_orderly_end() {
    let server = Server::start(|c| {
        c.ping_interval = Duration::from_millis(50);
        c.idle_timeout = Duration::from_millis(300);
    })
    .await;
    let (mut silent, _) = server.peer("r").await;
    // It reads nothing, so it answers no ping, until the server has given up on it.
    server
        .metric_reaches(
            "ackwire_signal_server_closes_total{reason=\"idle_timeout\"}",
            1.0,
        )
        .await;
    let frame = silent.closed_cleanly().await;
    assert_eq!(
        (u16::from(frame.code), frame.reason.as_str()),
        (1001, "idle_timeout")
    );
    server.stop().await;
}

#[tokio::test]
async fn a_reader_that_stops_is_closed_when_its_queue_fills_and_senders_are_told() {
    let server = Server::start(|c| {
        c.outbound_queue = 4;
        // Far longer than the test: the close must come from the full queue.
        c.write_timeout = Duration::from_secs(60);
        c.rate_per_sec = 100_000;
        c.rate_burst = 100_000;
        c.reconnect_grace = Duration::from_millis(50);
    })
    .await;
    let (mut a, _) = server.peer("r").await;
    let (_sleeper, ws) = server.peer("r").await;
    a.recv_type("peer_joined").await;
    let payload = "z".repeat(15_000);
    let started = Instant::now();
    let mut relayed = 0u32;
    let code = loop {
        a.send(json!({"type": "signal", "to": peer_id(&ws), "data": payload}))
            .await;
        // Each signal is answered by nothing (delivered) or an error; probe with a cheap
        // frame so both are seen in order.
        a.send(json!({"type": "signal", "to": 999_999, "data": null}))
            .await;
        let code = a.error_code().await;
        if code != "unknown_peer" {
            break code;
        }
        relayed += 1;
        assert!(relayed < 2_000, "the sleeper's queue never filled");
    };
    assert_eq!(code, "peer_not_reading");
    let left = a.recv_type("peer_left").await;
    assert_eq!(
        (left["peer_id"].as_u64(), left["reason"].as_str()),
        (Some(peer_id(&ws)), Some("lost"))
    );
    assert!(
        started.elapsed() < WAIT,
        "closed after {:?}",
        started.elapsed()
    );
    let delivered = server.metric("ackwire_signal_signals_relayed_total").await;
    assert_eq!(
        delivered,
        f64::from(relayed),
        "drops are not counted as relayed"
    );
    assert_eq!(
        server
            .metric("ackwire_signal_signals_dropped_total{reason=\"queue_full\"}")
            .await,
        1.0
    );
    assert_eq!(
        server
            .metric("ackwire_signal_server_closes_total{reason=\"slow_reader\"}")
            .await,
        1.0
    );
    server.stop().await;
}
