//! A room plays one application: the join's `app` (id, version, channel layout), with real
//! WebSocket clients on 127.0.0.1.

use crate::common::{Client, Server, peer_id, upgrade};
use serde_json::{Value, json};

/// pong at `version`, with two channels.
fn pong(version: u32) -> Value {
    json!({"id": "pong", "version": version,
        "channels": ["unreliable-sequenced", "reliable-ordered"]})
}

/// How refusals name [`pong`]`(2)`.
const PONG_V2: &str = "pong v2 (channels: unreliable-sequenced, reliable-ordered)";

/// A fresh browser join of `room` declaring `app` (none for `Value::Null`).
fn join_frame(room: &str, app: &Value) -> Value {
    let mut join = json!({"type": "join", "version": 1, "room": room, "kind": "browser"});
    if !app.is_null() {
        join["app"] = app.clone();
    }
    join
}

/// A client that joined `room` declaring `app`, with its welcome.
async fn member(server: &Server, room: &str, app: &Value) -> (Client, Value) {
    let mut c = server.client().await;
    let welcome = c.join_with(join_frame(room, app)).await;
    (c, welcome)
}

/// Sends `join` on a fresh client: it must be refused with `app_mismatch`. The client (still
/// open) and the message.
async fn refused(server: &Server, join: Value) -> (Client, String) {
    let mut c = server.client().await;
    c.send(join.clone()).await;
    let error = c.recv().await;
    assert_eq!(error["type"], "error", "{join} answered with {error}");
    assert_eq!(error["code"], "app_mismatch", "{error}");
    (c, error["message"].as_str().unwrap().to_owned())
}

/// The room still holds `inside` alone, who heard of no refused join: the next frame it gets
/// is the `peer_joined` of a newcomer playing `app` (a refused join announced would have come
/// first), and the newcomer's welcome lists `inside` alone.
async fn room_unchanged(server: &Server, room: &str, app: &Value, inside: (&mut Client, u64)) {
    let (a, ida) = inside;
    let (_c, wc) = member(server, room, app).await;
    assert_eq!(wc["peers"].as_array().unwrap().len(), 1, "{wc}");
    assert_eq!(wc["peers"][0]["id"], ida);
    let heard = a.recv().await;
    assert_eq!(heard["type"], "peer_joined", "{heard}");
    assert_eq!(heard["peer"]["id"], peer_id(&wc));
}

#[tokio::test]
async fn a_join_of_another_application_is_refused_naming_both_and_the_room_is_unchanged() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = member(&server, "lobby", &pong(2)).await;
    let chess = json!({"id": "chess", "version": 2,
        "channels": ["unreliable-sequenced", "reliable-ordered"]});
    let (mut b, message) = refused(&server, join_frame("lobby", &chess)).await;
    assert_eq!(
        message,
        format!(
            "room \"lobby\" plays {PONG_V2}; this program is chess v2 (channels: \
             unreliable-sequenced, reliable-ordered): join another room, or run what it plays"
        )
    );
    assert_eq!(
        server
            .metric("ackwire_signal_errors_total{code=\"app_mismatch\"}")
            .await,
        1.0
    );
    room_unchanged(&server, "lobby", &pong(2), (&mut a, peer_id(&wa))).await;
    assert_eq!(server.metric("ackwire_signal_peers").await, 2.0);
    // The refused connection is in no room: it may join one that plays its application.
    let wb = b.join_with(join_frame("chess-club", &chess)).await;
    assert_eq!(wb["peers"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn a_join_of_another_version_of_the_rooms_application_is_refused() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = member(&server, "lobby", &pong(2)).await;
    let (_b, message) = refused(&server, join_frame("lobby", &pong(1))).await;
    assert!(message.contains(&format!("plays {PONG_V2}")), "{message}");
    assert!(message.contains("this program is pong v1 ("), "{message}");
    room_unchanged(&server, "lobby", &pong(2), (&mut a, peer_id(&wa))).await;
    server.stop().await;
}

#[tokio::test]
async fn a_join_with_another_channel_layout_of_the_same_version_is_refused() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = member(&server, "lobby", &pong(2)).await;
    for channels in [
        json!(["reliable-ordered", "unreliable-sequenced"]),
        json!(["unreliable-sequenced"]),
        json!(["unreliable-sequenced", "reliable-ordered", "unreliable"]),
    ] {
        let other = json!({"id": "pong", "version": 2, "channels": channels});
        let (_b, message) = refused(&server, join_frame("lobby", &other)).await;
        assert!(message.contains(&format!("plays {PONG_V2}")), "{message}");
    }
    room_unchanged(&server, "lobby", &pong(2), (&mut a, peer_id(&wa))).await;
    server.stop().await;
}

#[tokio::test]
async fn a_join_declaring_no_application_is_refused_in_a_room_that_plays_one() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = member(&server, "lobby", &pong(2)).await;
    let (_b, message) = refused(&server, join_frame("lobby", &Value::Null)).await;
    assert!(message.contains(&format!("plays {PONG_V2}")), "{message}");
    assert!(
        message.contains("this program declares no application"),
        "{message}"
    );
    room_unchanged(&server, "lobby", &pong(2), (&mut a, peer_id(&wa))).await;
    server.stop().await;
}

#[tokio::test]
async fn a_join_declaring_an_application_is_refused_in_a_room_whose_members_declare_none() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = member(&server, "lobby", &Value::Null).await;
    let (_b, message) = refused(&server, join_frame("lobby", &pong(2))).await;
    assert!(
        message.starts_with("room \"lobby\" plays no declared application"),
        "{message}"
    );
    assert!(message.contains(&format!("this program is {PONG_V2}")));
    room_unchanged(&server, "lobby", &Value::Null, (&mut a, peer_id(&wa))).await;
    server.stop().await;
}

#[tokio::test]
async fn a_join_declaring_the_rooms_application_is_accepted() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = member(&server, "lobby", &pong(2)).await;
    let (_b, wb) = member(&server, "lobby", &pong(2)).await;
    assert_eq!(
        wb["peers"],
        json!([{"id": peer_id(&wa), "kind": "browser"}])
    );
    assert_eq!(a.recv_type("peer_joined").await["peer"]["id"], peer_id(&wb));
    server.stop().await;
}

#[tokio::test]
async fn an_emptied_room_plays_whatever_its_next_first_member_brings() {
    let server = Server::start(|_| {}).await;
    let mut dash = server.client().await;
    dash.send(json!({"type": "subscribe", "room": "lobby"}))
        .await;
    dash.recv_type("subscribed").await;
    let (a, wa) = member(&server, "lobby", &pong(2)).await;
    assert_eq!(
        dash.recv_type("peer_joined").await["peer"]["id"],
        peer_id(&wa)
    );
    assert!(a.close().await);
    // The room is dropped with its last peer, in the step that tells its watchers.
    let left = dash.recv_type("peer_left").await;
    assert_eq!(left["peer_id"], peer_id(&wa));

    let chess = json!({"id": "chess", "version": 1, "channels": ["reliable-ordered"]});
    let (mut b, wb) = member(&server, "lobby", &chess).await;
    assert_eq!(wb["peers"], json!([]));
    let (_c, message) = refused(&server, join_frame("lobby", &pong(2))).await;
    assert!(
        message.contains("plays chess v1 (channels: reliable-ordered)"),
        "{message}"
    );
    room_unchanged(&server, "lobby", &chess, (&mut b, peer_id(&wb))).await;
    server.stop().await;
}

#[tokio::test]
async fn a_resume_keeps_its_place_whatever_application_it_declares() {
    let server = Server::start(|_| {}).await;
    let (mut a, wa) = member(&server, "lobby", &pong(2)).await;
    let (_old, wb) = member(&server, "lobby", &pong(2)).await;
    a.recv_type("peer_joined").await;
    // The peer is in the room already: its resume is not a new member to check.
    let mut resume = join_frame("lobby", &pong(1));
    resume["resume"] = json!({"peer_id": peer_id(&wb), "token": wb["token"]});
    let mut new = server.client().await;
    let welcome = new.join_with(resume).await;
    assert_eq!(welcome["resumed"], true);
    assert_eq!(peer_id(&welcome), peer_id(&wb));
    // The room still plays pong v2.
    let (_c, message) = refused(&server, join_frame("lobby", &pong(1))).await;
    assert!(message.contains(&format!("plays {PONG_V2}")), "{message}");
    a.send(json!({"type": "signal", "to": peer_id(&wb), "data": "x"}))
        .await;
    assert_eq!(new.recv().await["from"], peer_id(&wa));
    server.stop().await;
}

#[tokio::test]
async fn a_join_in_the_url_declares_its_application() {
    let server = Server::start(|_| {}).await;
    let url = |version: u32| {
        format!(
            "/ws?version=1&room=lobby&kind=browser&app=pong&app_version={version}\
             &channels=unreliable-sequenced%2Creliable-ordered"
        )
    };
    let mut a = upgrade(server.addr, &url(2), &[]).await.unwrap();
    let wa = a.recv().await;
    assert_eq!(wa["type"], "welcome", "{wa}");

    let mut b = upgrade(server.addr, &url(1), &[]).await.unwrap();
    let error = b.recv().await;
    assert_eq!(error["code"], "app_mismatch", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(&format!("plays {PONG_V2}")), "{message}");
    assert!(message.contains("this program is pong v1 ("), "{message}");
    // As with any refused join in the URL, the socket stays open for a join frame.
    let wb = b.join_with(join_frame("lobby", &pong(2))).await;
    assert_eq!(wb["peers"][0]["id"], peer_id(&wa));
    assert_eq!(a.recv_type("peer_joined").await["peer"]["id"], peer_id(&wb));
    server.stop().await;
}

#[tokio::test]
async fn a_malformed_application_is_refused_as_invalid_app_in_a_frame_and_in_the_url() {
    let server = Server::start(|_| {}).await;
    let mut c = server.client().await;
    let too_many = vec!["unreliable"; 64];
    for app in [
        json!({"id": "pong game", "version": 1, "channels": ["reliable-ordered"]}),
        json!({"id": "", "version": 1, "channels": ["reliable-ordered"]}),
        json!({"id": "pong", "version": 1, "channels": []}),
        json!({"id": "pong", "version": 1, "channels": too_many}),
    ] {
        c.send(join_frame("lobby", &app)).await;
        let error = c.recv().await;
        assert_eq!(error["code"], "invalid_app", "{app}: {error}");
    }
    for query in [
        "app=pong&app_version=1&channels=reliable-ordered%2Cteleport",
        "app=pong&app_version=1",
        "app=pong%20game&app_version=1&channels=reliable-ordered",
    ] {
        let path = format!("/ws?version=1&room=lobby&kind=browser&{query}");
        let mut c = upgrade(server.addr, &path, &[]).await.unwrap();
        let error = c.recv().await;
        assert_eq!(error["code"], "invalid_app", "{query}: {error}");
    }
    // Nothing was created: the room's first member is still to come, with any application.
    assert_eq!(server.metric("ackwire_signal_rooms").await, 0.0);
    let chess = json!({"id": "chess", "version": 1, "channels": ["reliable-ordered"]});
    c.join_with(join_frame("lobby", &chess)).await;
    server.stop().await;
}

#[tokio::test]
async fn dashboards_see_the_application_each_room_plays() {
    let server = Server::start(|_| {}).await;
    let (_a, wa) = member(&server, "arena", &pong(2)).await;
    let (_b, wb) = member(&server, "plain", &Value::Null).await;
    let mut room_dash = server.client().await;
    room_dash
        .send(json!({"type": "subscribe", "room": "arena"}))
        .await;
    assert_eq!(
        room_dash.recv().await,
        json!({"type": "subscribed", "rooms": [{"room": "arena", "app": pong(2),
            "peers": [{"id": peer_id(&wa), "kind": "browser"}]}]})
    );
    let mut all = server.client().await;
    all.send(json!({"type": "subscribe"})).await;
    let mut rooms = all.recv_type("subscribed").await["rooms"].clone();
    rooms
        .as_array_mut()
        .unwrap()
        .sort_by_key(|r| r["room"].as_str().unwrap().to_owned());
    assert_eq!(
        rooms,
        json!([
            {"room": "arena", "app": pong(2), "peers": [{"id": peer_id(&wa), "kind": "browser"}]},
            {"room": "plain", "peers": [{"id": peer_id(&wb), "kind": "browser"}]},
        ])
    );
    server.stop().await;
}

#[tokio::test]
async fn a_program_replacing_its_own_lone_entry_may_bring_another_version() {
    let server = Server::start(|_| {}).await;
    let mut first = join_frame("lobby", &pong(1));
    first["instance"] = json!("p-1");
    let mut old = server.client().await;
    let wold = old.join_with(first).await;
    // The same program, updated, joins again without its token: nobody else is in the room.
    let mut updated = join_frame("lobby", &pong(2));
    updated["instance"] = json!("p-1");
    let mut new = server.client().await;
    let welcome = new.join_with(updated).await;
    assert_eq!(welcome["peers"], json!([]));
    assert_ne!(peer_id(&welcome), peer_id(&wold));
    let (_c, message) = refused(&server, join_frame("lobby", &pong(1))).await;
    assert!(message.contains(&format!("plays {PONG_V2}")), "{message}");
    server.stop().await;
}
