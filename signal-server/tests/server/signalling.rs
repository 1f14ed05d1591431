//! Rooms, relay, leave, reconnect and dashboards, with real WebSocket clients on 127.0.0.1.

use std::time::Duration;

use crate::common::{Server, peer_id};
use ackwire_signalling::IceServer;
use serde_json::json;

#[tokio::test]
async fn two_peers_see_each_other_and_relay_offer_answer_and_candidates() {
    let server = Server::start(|c| {
        c.ice_servers.0 = vec![IceServer {
            urls: vec!["stun:127.0.0.1:3478".into()],
            username: String::new(),
            credential: String::new(),
        }];
    })
    .await;
    let (mut a, wa) = server.peer("lobby").await;
    assert_eq!(wa["peers"], json!([]));
    assert_eq!(wa["version"], 1);
    assert_eq!(
        wa["ice_servers"],
        json!([{"urls": ["stun:127.0.0.1:3478"]}])
    );
    assert_eq!(wa["token"].as_str().unwrap().len(), 32);

    let (mut b, wb) = server.peer("lobby").await;
    let (ida, idb) = (peer_id(&wa), peer_id(&wb));
    assert_ne!(ida, idb);
    assert_eq!(wb["peers"], json!([{"id": ida, "kind": "browser"}]));
    let joined = a.recv().await;
    assert_eq!(
        joined,
        json!({"type": "peer_joined", "room": "lobby", "peer": {"id": idb, "kind": "browser"}})
    );

    let offer = json!({"sdp": {"type": "offer", "sdp": "v=0..."}});
    a.send(json!({"type": "signal", "to": idb, "data": offer}))
        .await;
    assert_eq!(
        b.recv().await,
        json!({"type": "signal", "from": ida, "data": offer})
    );

    let answer = json!({"sdp": {"type": "answer", "sdp": "v=0..."}});
    b.send(json!({"type": "signal", "to": ida, "from": idb, "data": answer}))
        .await;
    assert_eq!(
        a.recv().await,
        json!({"type": "signal", "from": idb, "data": answer})
    );

    for n in 0..3 {
        let cand =
            json!({"candidate": format!("candidate:{n} 1 udp 1 127.0.0.1 {} typ host", 5000 + n)});
        a.send(json!({"type": "signal", "to": idb, "data": cand}))
            .await;
        assert_eq!(b.recv().await["data"], cand);
    }
    assert_eq!(
        server.metric("ackwire_signal_signals_relayed_total").await,
        5.0
    );
    assert_eq!(server.metric("ackwire_signal_peers").await, 2.0);
    assert_eq!(server.metric("ackwire_signal_rooms").await, 1.0);
    server.stop().await;
}

#[tokio::test]
async fn native_peer_shares_its_udp_address_with_the_room() {
    let server = Server::start(|_| {}).await;
    let (mut a, _) = server.peer("mixed").await;
    let mut n = server.client().await;
    n.send(json!({"type": "join", "version": 1, "room": "mixed", "kind": "native", "udp_addr": "127.0.0.1:40000"}))
        .await;
    let wn = n.recv().await;
    assert_eq!(wn["type"], "welcome");
    let joined = a.recv().await;
    assert_eq!(joined["peer"]["kind"], "native");
    assert_eq!(joined["peer"]["udp_addr"], "127.0.0.1:40000");
    server.stop().await;
}

#[tokio::test]
async fn signal_to_a_peer_in_another_room_is_refused_and_not_delivered() {
    let server = Server::start(|_| {}).await;
    let (mut a, _) = server.peer("red").await;
    let (mut b, wb) = server.peer("blue").await;
    a.send(json!({"type": "signal", "to": peer_id(&wb), "data": "hi"}))
        .await;
    assert_eq!(a.error_code().await, "unknown_peer");
    b.assert_quiet(Duration::from_millis(200)).await;
    server.stop().await;
}

#[tokio::test]
async fn closing_the_socket_tells_the_room_at_once() {
    let server = Server::start(|c| c.reconnect_grace = Duration::from_secs(60)).await;
    let (mut a, _) = server.peer("lobby").await;
    let (b, wb) = server.peer("lobby").await;
    a.recv_type("peer_joined").await;
    assert!(
        b.close().await,
        "server did not complete the closing handshake"
    );
    let left = a.recv().await;
    assert_eq!(
        left,
        json!({"type": "peer_left", "room": "lobby", "peer_id": peer_id(&wb), "reason": "left"})
    );
    server.stop().await;
}

#[tokio::test]
async fn leave_message_tells_the_room_and_allows_joining_again() {
    let server = Server::start(|_| {}).await;
    let (mut a, _) = server.peer("lobby").await;
    let (mut b, wb) = server.peer("lobby").await;
    a.recv_type("peer_joined").await;
    b.send(json!({"type": "leave"})).await;
    let left = a.recv().await;
    assert_eq!(left["peer_id"], peer_id(&wb));
    assert_eq!(left["reason"], "left");
    let again = b.join("other").await;
    assert_ne!(peer_id(&again), peer_id(&wb));
    server.stop().await;
}

#[tokio::test]
async fn last_peer_leaving_removes_the_room() {
    let server = Server::start(|_| {}).await;
    let (a, _) = server.peer("lonely").await;
    assert_eq!(server.metric("ackwire_signal_rooms").await, 1.0);
    a.close().await;
    server.metric_falls_to("ackwire_signal_rooms", 0.0).await;
    assert_eq!(server.metric("ackwire_signal_peers").await, 0.0);
    server.stop().await;
}

#[tokio::test]
async fn dropped_link_tells_the_room_after_the_grace_period() {
    let server = Server::start(|c| c.reconnect_grace = Duration::from_millis(300)).await;
    let (mut a, _) = server.peer("lobby").await;
    let (b, wb) = server.peer("lobby").await;
    a.recv_type("peer_joined").await;
    drop(b); // TCP closed without a close frame: a blip, not a goodbye
    a.assert_quiet(Duration::from_millis(150)).await;
    let left = a.recv().await;
    assert_eq!(left["peer_id"], peer_id(&wb));
    assert_eq!(left["reason"], "lost");
    server.stop().await;
}

#[tokio::test]
async fn reconnect_within_grace_keeps_the_peer_id_and_the_room_hears_nothing() {
    let server = Server::start(|c| c.reconnect_grace = Duration::from_secs(2)).await;
    let (mut a, wa) = server.peer("lobby").await;
    let (b, wb) = server.peer("lobby").await;
    a.recv_type("peer_joined").await;
    drop(b);
    // Resume once the server has seen the connection go (a resume, not a replacement).
    server
        .metric_falls_to("ackwire_signal_connections", 1.0)
        .await;

    let mut b2 = server.client().await;
    b2.send(
        json!({"type": "join", "version": 1, "room": "lobby", "kind": "browser",
        "resume": {"peer_id": peer_id(&wb), "token": wb["token"]}}),
    )
    .await;
    let w2 = b2.recv().await;
    assert_eq!(w2["type"], "welcome");
    assert_eq!(w2["peer_id"], wb["peer_id"]);
    assert_eq!(w2["resumed"], true);
    assert_eq!(
        w2["peers"],
        json!([{"id": peer_id(&wa), "kind": "browser"}])
    );

    // Signals reach the resumed connection, and the grace timer does not evict it.
    a.send(json!({"type": "signal", "to": peer_id(&wb), "data": 1}))
        .await;
    assert_eq!(b2.recv().await["data"], 1);
    a.assert_quiet(Duration::from_millis(2300)).await;
    assert_eq!(server.metric("ackwire_signal_resumes_total").await, 1.0);
    server.stop().await;
}

#[tokio::test]
async fn resume_with_a_wrong_token_is_refused_and_the_peer_keeps_its_id() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = server.peer("lobby").await;
    let mut thief = server.client().await;
    thief
        .send(
            json!({"type": "join", "version": 1, "room": "lobby", "kind": "browser",
            "resume": {"peer_id": peer_id(&wa), "token": "00000000000000000000000000000000"}}),
        )
        .await;
    assert_eq!(thief.error_code().await, "resume_rejected");
    // The victim is still reachable on its own connection.
    let (mut b, wb) = server.peer("lobby").await;
    b.send(json!({"type": "signal", "to": peer_id(&wa), "data": "still here"}))
        .await;
    assert_eq!(a.recv_type("signal").await["from"], peer_id(&wb));
    server.stop().await;
}

#[tokio::test]
async fn resume_while_the_old_link_is_still_open_replaces_it() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = server.peer("lobby").await;
    let (mut old, wb) = server.peer("lobby").await;
    a.recv_type("peer_joined").await;
    let mut new = server.client().await;
    new.send(
        json!({"type": "join", "version": 1, "room": "lobby", "kind": "browser",
        "resume": {"peer_id": peer_id(&wb), "token": wb["token"]}}),
    )
    .await;
    assert_eq!(new.recv().await["resumed"], true);
    let frame = old.closed().await.expect("close frame");
    assert_eq!(frame.reason.as_str(), "replaced_by_resume");
    a.send(json!({"type": "signal", "to": peer_id(&wb), "data": "x"}))
        .await;
    assert_eq!(new.recv().await["from"], peer_id(&wa));
    a.assert_quiet(Duration::from_millis(200)).await;
    server.stop().await;
}

#[tokio::test]
async fn room_dashboard_receives_snapshot_membership_and_stats_of_its_room_only() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = server.peer("arena").await;
    let mut dash = server.client().await;
    dash.send(json!({"type": "subscribe", "room": "arena"}))
        .await;
    let snap = dash.recv().await;
    assert_eq!(
        snap,
        json!({"type": "subscribed", "rooms": [{"room": "arena", "peers": [{"id": peer_id(&wa), "kind": "browser"}]}]})
    );

    let (mut b, wb) = server.peer("arena").await;
    let (mut other, _) = server.peer("elsewhere").await;
    assert_eq!(dash.recv().await["peer"]["id"], peer_id(&wb));

    let links = json!([{"peer": peer_id(&wb), "stats": {"rtt_ms": 12.5, "loss_percent": 0.0, "mode": "good"}}]);
    other
        .send(json!({"type": "stats", "links": [{"peer": 1, "stats": {}}]}))
        .await;
    a.send(json!({"type": "stats", "links": links})).await;
    assert_eq!(
        dash.recv().await,
        json!({"type": "stats", "room": "arena", "peer_id": peer_id(&wa), "links": links})
    );

    b.send(json!({"type": "leave"})).await;
    let left = dash.recv().await;
    assert_eq!(
        (left["type"].as_str(), left["peer_id"].as_u64()),
        (Some("peer_left"), Some(peer_id(&wb)))
    );
    a.recv_type("peer_left").await;
    assert_eq!(
        server.metric("ackwire_signal_stats_reports_total").await,
        2.0
    );
    server.stop().await;
}

#[tokio::test]
async fn all_rooms_dashboard_sees_every_room() {
    let server = Server::start(|_| {}).await;
    let (_a, _) = server.peer("one").await;
    let mut dash = server.client().await;
    dash.send(json!({"type": "subscribe"})).await;
    let snap = dash.recv().await;
    assert_eq!(snap["rooms"][0]["room"], "one");
    let (mut b, wb) = server.peer("two").await;
    let joined = dash.recv().await;
    assert_eq!(
        (joined["room"].as_str(), joined["peer"]["id"].as_u64()),
        (Some("two"), Some(peer_id(&wb)))
    );
    b.send(json!({"type": "stats", "links": []})).await;
    assert_eq!(dash.recv().await["room"], "two");
    server.stop().await;
}

#[tokio::test]
async fn shutdown_closes_websockets_with_going_away() {
    let server = Server::start(|_| {}).await;
    let (mut a, _) = server.peer("lobby").await;
    let stopping = tokio::spawn(server.stop());
    let frame = a.closed().await.expect("close frame");
    assert_eq!(frame.reason.as_str(), "server_shutdown");
    stopping.await.unwrap();
}

#[tokio::test]
async fn the_instance_is_shown_in_welcome_peer_joined_and_dashboard_snapshots() {
    let server = Server::start(|_| {}).await;
    let mut a = server.client().await;
    let wa = a
        .join_with(json!({"type": "join", "version": 1, "room": "lobby", "kind": "browser", "instance": "tab-A1"}))
        .await;
    let ida = peer_id(&wa);
    let mut dash = server.client().await;
    dash.send(json!({"type": "subscribe", "room": "lobby"}))
        .await;
    assert_eq!(
        dash.recv().await["rooms"][0]["peers"],
        json!([{"id": ida, "kind": "browser", "instance": "tab-A1"}])
    );

    let mut n = server.client().await;
    let wn = n
        .join_with(
            json!({"type": "join", "version": 1, "room": "lobby", "kind": "native",
            "udp_addr": "127.0.0.1:40000", "instance": "proc_7"}),
        )
        .await;
    assert_eq!(
        wn["peers"],
        json!([{"id": ida, "kind": "browser", "instance": "tab-A1"}])
    );
    let joined = json!({"type": "peer_joined", "room": "lobby", "peer":
        {"id": peer_id(&wn), "kind": "native", "udp_addr": "127.0.0.1:40000", "instance": "proc_7",
         "network": wn["network"]}});
    assert_eq!(a.recv().await, joined);
    // Dashboards never see a native's address (nor its network tag); the room's members do.
    let mut watched = joined;
    watched["peer"].as_object_mut().unwrap().remove("udp_addr");
    watched["peer"].as_object_mut().unwrap().remove("network");
    assert_eq!(dash.recv().await, watched);
    server.stop().await;
}

/// A join of `room` as a browser with `instance`, without resume.
fn join_instance(room: &str, instance: &str) -> serde_json::Value {
    json!({"type": "join", "version": 1, "room": room, "kind": "browser", "instance": instance})
}

#[tokio::test]
async fn rejoining_with_the_instance_of_a_held_peer_replaces_it_in_a_full_room() {
    let server = Server::start(|c| {
        c.reconnect_grace = Duration::from_millis(400);
        c.max_peers_per_room = 2;
    })
    .await;
    let (mut a, wa) = server.peer("lobby").await;
    let mut old = server.client().await;
    let wold = old.join_with(join_instance("lobby", "prog-1")).await;
    a.recv_type("peer_joined").await;
    let mut dash = server.client().await;
    dash.send(json!({"type": "subscribe", "room": "lobby"}))
        .await;
    dash.recv_type("subscribed").await;
    drop(old); // a blip: the old entry is held for the reconnect grace
    server
        .metric_falls_to("ackwire_signal_connections", 2.0)
        .await;

    // The same program joins afresh (no resume), in a room that is full with its old entry.
    let mut new = server.client().await;
    let wnew = new.join_with(join_instance("lobby", "prog-1")).await;
    let (idold, idnew) = (peer_id(&wold), peer_id(&wnew));
    assert_ne!(idnew, idold);
    assert_eq!(wnew["resumed"], false);
    assert_eq!(
        wnew["peers"],
        json!([{"id": peer_id(&wa), "kind": "browser"}])
    );
    for watcher in [&mut a, &mut dash] {
        assert_eq!(
            watcher.recv().await,
            json!({"type": "peer_left", "room": "lobby", "peer_id": idold, "reason": "replaced"})
        );
        assert_eq!(
            watcher.recv().await,
            json!({"type": "peer_joined", "room": "lobby",
                "peer": {"id": idnew, "kind": "browser", "instance": "prog-1"}})
        );
    }
    assert_eq!(server.metric("ackwire_signal_peers").await, 2.0);
    a.send(json!({"type": "signal", "to": idold, "data": 1}))
        .await;
    assert_eq!(a.error_code().await, "unknown_peer");
    a.send(json!({"type": "signal", "to": idnew, "data": 2}))
        .await;
    assert_eq!(new.recv().await["data"], 2);
    // The old entry's grace timer finds nothing left to evict.
    a.assert_quiet(Duration::from_millis(600)).await;
    assert_eq!(server.metric("ackwire_signal_peers").await, 2.0);
    server.stop().await;
}

#[tokio::test]
async fn rejoining_with_the_instance_of_a_connected_peer_closes_the_old_socket() {
    let server = Server::start(|_| {}).await;
    let (mut a, _) = server.peer("lobby").await;
    let mut old = server.client().await;
    let wold = old.join_with(join_instance("lobby", "prog-1")).await;
    a.recv_type("peer_joined").await;
    let mut new = server.client().await;
    let wnew = new.join_with(join_instance("lobby", "prog-1")).await;
    let frame = old.closed().await.expect("close frame");
    assert_eq!(
        (u16::from(frame.code), frame.reason.as_str()),
        (4001, "replaced_by_instance")
    );
    let left = a.recv().await;
    assert_eq!(
        (left["peer_id"].as_u64(), left["reason"].as_str()),
        (Some(peer_id(&wold)), Some("replaced"))
    );
    assert_eq!(a.recv().await["peer"]["id"], peer_id(&wnew));
    // The old connection's end tells the room nothing more.
    a.assert_quiet(Duration::from_millis(300)).await;
    assert_eq!(server.metric("ackwire_signal_peers").await, 2.0);
    server.stop().await;
}

#[tokio::test]
async fn the_same_instance_in_another_room_replaces_nothing() {
    let server = Server::start(|_| {}).await;
    let mut red = server.client().await;
    red.join_with(join_instance("red", "prog-1")).await;
    let mut blue = server.client().await;
    blue.join_with(join_instance("blue", "prog-1")).await;
    red.assert_quiet(Duration::from_millis(200)).await;
    assert_eq!(server.metric("ackwire_signal_peers").await, 2.0);
    server.stop().await;
}

#[tokio::test]
async fn a_resume_carrying_its_instance_takes_back_the_id_and_replaces_nothing() {
    let server = Server::start(|c| c.reconnect_grace = Duration::from_secs(2)).await;
    let (mut a, _) = server.peer("lobby").await;
    let mut b = server.client().await;
    let wb = b.join_with(join_instance("lobby", "prog-1")).await;
    a.recv_type("peer_joined").await;
    drop(b);
    server
        .metric_falls_to("ackwire_signal_connections", 1.0)
        .await;
    let mut b2 = server.client().await;
    let w2 = b2
        .join_with(
            json!({"type": "join", "version": 1, "room": "lobby", "kind": "browser",
            "instance": "prog-1", "resume": {"peer_id": peer_id(&wb), "token": wb["token"]}}),
        )
        .await;
    assert_eq!(
        (w2["peer_id"].as_u64(), w2["resumed"].as_bool()),
        (Some(peer_id(&wb)), Some(true))
    );
    a.assert_quiet(Duration::from_millis(300)).await;
    server.stop().await;
}

/// The expiry (unix seconds) and peer id of a TURN user name `expiry:peer`.
fn turn_user(server: &serde_json::Value) -> (u64, u64) {
    let (expiry, peer) = server["username"]
        .as_str()
        .and_then(|u| u.split_once(':'))
        .expect("expiry:peer");
    (expiry.parse().unwrap(), peer.parse().unwrap())
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn turn_credentials_are_per_peer_short_lived_renewed_before_expiry_and_fresh_on_resume() {
    const SECRET: &str = "north-wind";
    let server = Server::start(|c| {
        c.ice_servers.0 = vec![IceServer {
            urls: vec!["stun:203.0.113.1:3478".into()],
            username: String::new(),
            credential: String::new(),
        }];
        c.turn_urls = vec!["turn:203.0.113.1:3478?transport=udp".into()];
        c.turn_secret = Some(SECRET.into());
        c.turn_ttl = Duration::from_secs(4);
        c.reconnect_grace = Duration::from_secs(10);
    })
    .await;
    let joined_at = unix_now();
    let (mut a, welcome) = server.peer("lobby").await;
    assert!(
        !welcome.to_string().contains(SECRET),
        "the secret stays on the server"
    );
    // The configured servers first, then TURN with this peer's own credentials.
    let servers = welcome["ice_servers"].as_array().unwrap();
    assert_eq!(servers[0]["urls"], json!(["stun:203.0.113.1:3478"]));
    let turn = &servers[1];
    assert_eq!(turn["urls"], json!(["turn:203.0.113.1:3478?transport=udp"]));
    let (expiry, peer) = turn_user(turn);
    assert_eq!(peer, peer_id(&welcome));
    assert!(
        (joined_at + 4..=unix_now() + 4).contains(&expiry),
        "{expiry}"
    );
    let username = turn["username"].as_str().unwrap();
    assert_eq!(
        turn["credential"],
        ackwire_signal::turn::credential(SECRET, username)
    );

    // Fresh credentials arrive before these expire (at 3/4 of the 4 s TTL).
    let fresh = a.recv_type("ice_servers").await;
    let renewed_at = unix_now();
    assert!(
        renewed_at < expiry,
        "renewed at {renewed_at}, expiry {expiry}"
    );
    let fresh_turn = &fresh["ice_servers"][1];
    let (fresh_expiry, fresh_peer) = turn_user(fresh_turn);
    assert_eq!(fresh_peer, peer);
    assert!(fresh_expiry > expiry);
    assert_eq!(
        fresh_turn["credential"],
        ackwire_signal::turn::credential(SECRET, fresh_turn["username"].as_str().unwrap())
    );
    assert_eq!(
        server.metric("ackwire_signal_turn_refreshes_total").await,
        1.0
    );

    // A resume gets fresh ones too.
    drop(a);
    let mut again = server.client().await;
    again
        .send(
            json!({"type": "join", "version": 1, "room": "lobby", "kind": "browser",
            "resume": {"peer_id": peer, "token": welcome["token"]}}),
        )
        .await;
    let resumed = again.recv_type("welcome").await;
    assert_eq!(resumed["resumed"], true);
    let (resumed_expiry, resumed_peer) = turn_user(&resumed["ice_servers"][1]);
    assert_eq!(resumed_peer, peer);
    assert!(resumed_expiry >= unix_now() + 3, "{resumed_expiry}");
    server.stop().await;
}

#[tokio::test]
async fn without_turn_the_welcome_has_only_the_configured_servers_and_nothing_is_renewed() {
    let server = Server::start(|c| c.turn_ttl = Duration::from_secs(1)).await;
    let (mut a, welcome) = server.peer("lobby").await;
    assert_eq!(welcome["ice_servers"], json!([]));
    a.assert_quiet(Duration::from_millis(1500)).await;
    server.stop().await;
}
