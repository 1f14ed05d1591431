//! Host rooms over real WebSockets: one host, clients that see it alone, the refusals that
//! keep the star a star, the host's leave, loss and return, and the same across two
//! instances sharing rooms through a real `redis-server`.

use std::{net::SocketAddr, time::Duration};

use crate::common::redis::{Redis, healthz_says, instance};
use crate::common::{Client, Server, ids, peer_id, upgrade};
use serde_json::{Value, json};

/// A browser's `join` frame for `room` as `role` (`peer` leaves the field out, as clients do).
fn join_as(room: &str, role: &str) -> Value {
    let mut join = json!({"type": "join", "version": 1, "room": room, "kind": "browser"});
    if role != "peer" {
        join["role"] = json!(role);
    }
    join
}

/// A browser that joined `room` on `addr` as `role` with a `join` frame, and its welcome.
async fn joined(addr: SocketAddr, room: &str, role: &str) -> (Client, Value) {
    let mut c = Client::connect(addr).await;
    let welcome = c.join_with(join_as(room, role)).await;
    (c, welcome)
}

/// A browser that joined `room` on `addr` as `role` in the `/ws` URL (its first frame is the
/// welcome), and its welcome.
async fn joined_by_url(addr: SocketAddr, room: &str, role: &str) -> (Client, Value) {
    let path = format!("/ws?version=1&room={room}&kind=browser&role={role}");
    let mut c = upgrade(addr, &path, &[]).await.unwrap();
    let welcome = c.recv().await;
    assert_eq!(welcome["type"], "welcome", "{path} answered with {welcome}");
    (c, welcome)
}

/// A join of `room` on `addr` as `role` (by frame or, `by_url`, in the URL), refused with
/// `code`: the error frame, whose message must say something. The socket stays open for
/// another join.
async fn refused(
    addr: SocketAddr,
    (room, role): (&str, &str),
    by_url: bool,
    code: &str,
) -> (Client, Value) {
    let mut c = if by_url {
        let path = format!("/ws?version=1&room={room}&kind=browser&role={role}");
        upgrade(addr, &path, &[]).await.unwrap()
    } else {
        let mut c = Client::connect(addr).await;
        c.send(join_as(room, role)).await;
        c
    };
    let error = c.recv().await;
    assert_eq!(error["code"], code, "{role} joining {room}: {error}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{error}"
    );
    (c, error)
}

/// `from` signals `to` (its peer `id`), and the next frame `to` reads is that signal: so
/// nothing else reached `to` before it.
async fn next_is_signal(from: &mut Client, from_id: u64, to: &mut Client, id: u64) {
    let data = json!({"probe": id});
    from.send(json!({"type": "signal", "to": id, "data": data}))
        .await;
    assert_eq!(
        to.recv().await,
        json!({"type": "signal", "from": from_id, "data": data}),
        "peer {id} heard something before the signal"
    );
}

/// A room dashboard's snapshot of `room`.
async fn snapshot(addr: SocketAddr, room: &str) -> Value {
    let mut dash = Client::connect(addr).await;
    dash.send(json!({"type": "subscribe", "room": room})).await;
    let subscribed = dash.recv_type("subscribed").await;
    subscribed["rooms"][0].clone()
}

/// The ids in a snapshot, with their roles (`peer` when absent).
fn roles(snapshot: &Value) -> Vec<(u64, String)> {
    snapshot["peers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let role = p["role"].as_str().unwrap_or("peer").to_owned();
            (p["id"].as_u64().unwrap(), role)
        })
        .collect()
}

/// The ids a welcome lists, in order.
fn sorted_ids(welcome: &Value) -> Vec<u64> {
    let mut listed = ids(welcome);
    listed.sort_unstable();
    listed
}

/// A host's `join` frame for room `arena` from program `instance`.
fn host_join(instance: &str) -> Value {
    let mut join = join_as("arena", "host");
    join["instance"] = json!(instance);
    join
}

/// The next frame each of `clients` reads says that `host` left room `arena` for `reason`.
async fn hear_host_left(clients: &mut [&mut Client], host: u64, reason: &str) {
    for c in clients {
        assert_eq!(
            c.recv().await,
            json!({"type": "peer_left", "room": "arena", "peer_id": host, "reason": reason})
        );
    }
}

/// The next frame each client (`(client, its id)`) reads says that `host` (id `idh`) joined,
/// and the one after is the host's signal.
async fn hear_host_back(host: &mut Client, idh: u64, clients: &mut [(&mut Client, u64)]) {
    for (c, id) in clients {
        assert_eq!(c.recv().await["peer"]["id"], idh);
        next_is_signal(host, idh, c, *id).await;
    }
}

#[tokio::test]
async fn clients_see_the_host_alone_the_host_sees_every_client_and_dashboards_see_the_star() {
    let server = Server::start(|_| {}).await;
    let mut dash = server.client().await;
    dash.send(json!({"type": "subscribe", "room": "arena"}))
        .await;
    assert_eq!(dash.recv().await["rooms"], json!([]));

    // A client may come first: it makes the room a host room and waits, seeing nobody.
    let (mut early, we) = joined_by_url(server.addr, "arena", "client").await;
    assert_eq!(ids(&we), Vec::<u64>::new());
    let ide = peer_id(&we);
    assert_eq!(
        dash.recv().await,
        json!({"type": "peer_joined", "room": "arena",
            "peer": {"id": ide, "kind": "browser", "role": "client"}})
    );

    let (mut host, wh) = joined(server.addr, "arena", "host").await;
    let idh = peer_id(&wh);
    assert_eq!(
        wh["peers"],
        json!([{"id": ide, "kind": "browser", "role": "client"}])
    );
    let host_info = json!({"id": idh, "kind": "browser", "role": "host"});
    let host_joined = json!({"type": "peer_joined", "room": "arena", "peer": host_info});
    assert_eq!(
        early.recv().await,
        host_joined,
        "the waiting client hears of the host"
    );
    assert_eq!(dash.recv().await, host_joined);

    // Clients by URL and by frame, in turn: each sees the host alone; the host (and the
    // dashboard) hear of each; no other client does.
    let mut clients = vec![(early, ide)];
    for n in 0..4 {
        let (c, wc) = match n % 2 {
            0 => joined(server.addr, "arena", "client").await,
            _ => joined_by_url(server.addr, "arena", "client").await,
        };
        let id = peer_id(&wc);
        assert_eq!(wc["peers"], json!([host_info]), "client {id}'s welcome");
        let client_joined = json!({"type": "peer_joined", "room": "arena",
            "peer": {"id": id, "kind": "browser", "role": "client"}});
        assert_eq!(host.recv().await, client_joined);
        assert_eq!(dash.recv().await, client_joined);
        clients.push((c, id));
    }
    // The first thing every client reads now is the host's signal: not one peer_joined of
    // another client came before it.
    for (client, id) in &mut clients {
        next_is_signal(&mut host, idh, client, *id).await;
    }
    // Clients signal the host.
    for (client, id) in &mut clients {
        next_is_signal(client, *id, &mut host, idh).await;
    }

    // A dashboard that comes now sees the whole star, roles and topology.
    let seen = snapshot(server.addr, "arena").await;
    assert_eq!(seen["topology"], "host");
    let mut expected: Vec<(u64, String)> = clients
        .iter()
        .map(|(_, id)| (*id, "client".to_owned()))
        .chain([(idh, "host".to_owned())])
        .collect();
    expected.sort_unstable();
    assert_eq!(roles(&seen), expected);
    server.stop().await;
}

#[tokio::test]
async fn a_meshs_snapshot_and_peers_carry_no_role_or_topology() {
    let server = Server::start(|_| {}).await;
    let (_a, wa) = joined(server.addr, "lobby", "peer").await;
    let (_b, wb) = joined_by_url(server.addr, "lobby", "peer").await;
    assert_eq!(
        wb["peers"],
        json!([{"id": peer_id(&wa), "kind": "browser"}])
    );
    let seen = snapshot(server.addr, "lobby").await;
    assert_eq!(
        seen,
        json!({"room": "lobby", "peers": [
            {"id": peer_id(&wa), "kind": "browser"},
            {"id": peer_id(&wb), "kind": "browser"}]})
    );
    server.stop().await;
}

#[tokio::test]
async fn joins_of_the_other_topology_and_a_second_host_are_refused_and_change_nothing() {
    let server = Server::start(|_| {}).await;
    // A mesh refuses hosts and clients, by frame and in the URL.
    let (mut p, wp) = joined(server.addr, "mesh", "peer").await;
    for (role, by_url) in [("host", false), ("client", true)] {
        let (_, error) = refused(server.addr, ("mesh", role), by_url, "topology_mismatch").await;
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("mesh room") && message.contains(role),
            "{message}"
        );
    }
    // A host room refuses peers.
    let (mut host, wh) = joined(server.addr, "arena", "host").await;
    let (mut c1, w1) = joined(server.addr, "arena", "client").await;
    let (mut c2, w2) = joined(server.addr, "arena", "client").await;
    let (idh, id1, id2) = (peer_id(&wh), peer_id(&w1), peer_id(&w2));
    for id in [id1, id2] {
        assert_eq!(host.recv().await["peer"]["id"], id);
    }
    for by_url in [false, true] {
        let (_, error) = refused(server.addr, ("arena", "peer"), by_url, "topology_mismatch").await;
        assert!(
            error["message"].as_str().unwrap().contains("host room"),
            "{error}"
        );
    }
    // A second host, while the first is connected, by frame and in the URL.
    for by_url in [false, true] {
        let (_, error) = refused(server.addr, ("arena", "host"), by_url, "host_taken").await;
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains(&format!("peer {idh}")),
            "{error}"
        );
    }
    // The refused socket stays open: the would-be host joins as a client instead.
    let (mut second, _) = refused(server.addr, ("arena", "host"), false, "host_taken").await;
    let w3 = second.join_with(join_as("arena", "client")).await;
    assert_eq!(ids(&w3), [idh]);
    for code in ["topology_mismatch", "host_taken"] {
        let series = format!("ackwire_signal_errors_total{{code=\"{code}\"}}");
        assert!(server.metric(&series).await >= 2.0, "{series}");
    }

    // Nothing of the refusals reached anyone: the mesh peer's next frame is a new peer's
    // join; the host's is the client that got in; the clients' are the host's signals.
    let (_q, wq) = joined(server.addr, "mesh", "peer").await;
    assert_eq!(p.recv().await["peer"]["id"], peer_id(&wq));
    assert_eq!(ids(&wq), [peer_id(&wp)]);
    assert_eq!(host.recv().await["peer"]["id"], peer_id(&w3));
    next_is_signal(&mut host, idh, &mut c1, id1).await;
    next_is_signal(&mut host, idh, &mut c2, id2).await;
    let seen = snapshot(server.addr, "arena").await;
    assert_eq!(
        roles(&seen),
        [
            (idh, "host".to_owned()),
            (id1, "client".to_owned()),
            (id2, "client".to_owned()),
            (peer_id(&w3), "client".to_owned())
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn a_signal_between_two_clients_is_refused_and_never_delivered() {
    let server = Server::start(|_| {}).await;
    let (mut host, wh) = joined(server.addr, "arena", "host").await;
    let (mut c1, w1) = joined(server.addr, "arena", "client").await;
    let (mut c2, w2) = joined_by_url(server.addr, "arena", "client").await;
    let (idh, id1, id2) = (peer_id(&wh), peer_id(&w1), peer_id(&w2));
    c1.send(json!({"type": "signal", "to": id2, "data": {"sdp": "offer"}}))
        .await;
    let error = c1.recv().await;
    assert_eq!(error["code"], "client_to_client", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains(&format!("peer {id2}")),
        "{error}"
    );
    // The target heard nothing: its next frame is the host's signal. The sender still
    // reaches the host, and the host both clients.
    host.recv_type("peer_joined").await;
    host.recv_type("peer_joined").await;
    next_is_signal(&mut host, idh, &mut c2, id2).await;
    next_is_signal(&mut c1, id1, &mut host, idh).await;
    next_is_signal(&mut host, idh, &mut c1, id1).await;
    assert_eq!(
        server
            .metric("ackwire_signal_errors_total{code=\"client_to_client\"}")
            .await,
        1.0
    );
    server.stop().await;
}

#[tokio::test]
async fn a_host_room_caps_at_its_own_limit_and_a_mesh_at_the_mesh_limit() {
    assert_eq!(
        ackwire_signal::Config::default().max_peers_per_host_room,
        256
    );
    let server = Server::start(|c| {
        c.max_peers_per_room = 2;
        c.max_peers_per_host_room = 4;
    })
    .await;
    // A mesh: two, then full.
    let _mesh = [
        joined(server.addr, "mesh", "peer").await,
        joined(server.addr, "mesh", "peer").await,
    ];
    refused(server.addr, ("mesh", "peer"), false, "room_full").await;
    // A host room: past the mesh's cap up to its own, its host included.
    let (mut host, _) = joined(server.addr, "arena", "host").await;
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(joined_by_url(server.addr, "arena", "client").await);
        host.recv_type("peer_joined").await;
    }
    for by_url in [false, true] {
        refused(server.addr, ("arena", "client"), by_url, "room_full").await;
    }
    // A refusal for the room's shape comes before its size: a peer is told it is the wrong
    // topology, a second host that the seat is taken.
    refused(server.addr, ("arena", "peer"), false, "topology_mismatch").await;
    refused(server.addr, ("arena", "host"), false, "host_taken").await;
    // A client leaves: its place is free again.
    let (gone, _) = clients.pop().unwrap();
    assert!(gone.close().await);
    host.recv_type("peer_left").await;
    joined(server.addr, "arena", "client").await;
    server.stop().await;
}

#[tokio::test]
async fn clients_hear_the_host_leave_or_get_lost_and_come_back_without_rejoining() {
    let server = Server::start(|c| c.reconnect_grace = Duration::from_millis(300)).await;
    let (mut host, wh) = joined(server.addr, "arena", "host").await;
    let (mut c1, w1) = joined(server.addr, "arena", "client").await;
    let (mut c2, w2) = joined_by_url(server.addr, "arena", "client").await;
    let (idh, id1, id2) = (peer_id(&wh), peer_id(&w1), peer_id(&w2));
    host.recv_type("peer_joined").await;
    host.recv_type("peer_joined").await;

    // The host leaves: every client hears it, at once.
    host.send(json!({"type": "leave"})).await;
    hear_host_left(&mut [&mut c1, &mut c2], idh, "left").await;
    // A client that joins meanwhile sees nobody, and waits.
    let (mut c3, w3) = joined(server.addr, "arena", "client").await;
    let id3 = peer_id(&w3);
    assert_eq!(ids(&w3), Vec::<u64>::new());

    // The host comes back on the same socket (a new join): every client hears of it, none
    // joins again, and it sees them all.
    let back = host.join_with(join_as("arena", "host")).await;
    let idh2 = peer_id(&back);
    assert_ne!(idh2, idh);
    assert_eq!(sorted_ids(&back), [id1, id2, id3]);
    let returned = json!({"type": "peer_joined", "room": "arena",
        "peer": {"id": idh2, "kind": "browser", "role": "host"}});
    for (c, id) in [(&mut c1, id1), (&mut c2, id2), (&mut c3, id3)] {
        assert_eq!(c.recv().await, returned);
        next_is_signal(&mut host, idh2, c, id).await;
        next_is_signal(c, id, &mut host, idh2).await;
    }

    // The host's socket drops without a close: after the grace, the clients hear it lost.
    drop(host);
    hear_host_left(&mut [&mut c1, &mut c2, &mut c3], idh2, "lost").await;
    // And back again: heard by the clients that waited, which never rejoined.
    let (mut host, again) = joined_by_url(server.addr, "arena", "host").await;
    let idh3 = peer_id(&again);
    assert_eq!(sorted_ids(&again), [id1, id2, id3]);
    let mut clients = [(&mut c1, id1), (&mut c2, id2), (&mut c3, id3)];
    hear_host_back(&mut host, idh3, &mut clients).await;
    server.stop().await;
}

#[tokio::test]
async fn a_host_that_crashed_and_restarted_takes_its_seat_at_once() {
    // A grace far longer than the test: the seat is not waited for.
    let server = Server::start(|c| c.reconnect_grace = Duration::from_secs(60)).await;
    let mut crashed = server.client().await;
    let wh = crashed.join_with(host_join("host-run-1")).await;
    let idh = peer_id(&wh);
    let (mut c1, w1) = joined(server.addr, "arena", "client").await;
    let (mut c2, w2) = joined_by_url(server.addr, "arena", "client").await;
    let (id1, id2) = (peer_id(&w1), peer_id(&w2));
    let mut dash = server.client().await;
    dash.send(json!({"type": "subscribe", "room": "arena"}))
        .await;
    dash.recv_type("subscribed").await;

    // Crash: the socket is gone without a close (the server holds the host for its grace).
    drop(crashed);
    server
        .metric_falls_to("ackwire_signal_connections", 3.0)
        .await;
    // The restarted program (a new instance) takes the seat now.
    let mut restarted = server.client().await;
    let back = restarted.join_with(host_join("host-run-2")).await;
    let idh2 = peer_id(&back);
    assert_eq!(ids(&back), [id1, id2]);
    let lost = json!({"type": "peer_left", "room": "arena", "peer_id": idh, "reason": "lost"});
    let returned = json!({"type": "peer_joined", "room": "arena",
        "peer": {"id": idh2, "kind": "browser", "role": "host", "instance": "host-run-2"}});
    for (c, id) in [(&mut c1, id1), (&mut c2, id2)] {
        assert_eq!(c.recv().await, lost);
        assert_eq!(c.recv().await, returned);
        next_is_signal(&mut restarted, idh2, c, id).await;
    }
    assert_eq!(dash.recv().await, lost);
    assert_eq!(dash.recv().await, returned);
    // The old host's id is gone for good: its grace ending later changes nothing, and its
    // resume is refused.
    assert_eq!(
        roles(&snapshot(server.addr, "arena").await),
        [
            (id1, "client".to_owned()),
            (id2, "client".to_owned()),
            (idh2, "host".to_owned())
        ]
    );
    let mut ghost = server.client().await;
    ghost
        .send(
            json!({"type": "join", "version": 1, "room": "arena", "kind": "browser",
            "role": "host", "resume": {"peer_id": idh, "token": wh["token"]}}),
        )
        .await;
    assert_eq!(ghost.error_code().await, "resume_rejected");
    server.stop().await;
}

// ----- two instances sharing rooms through Redis -----

#[tokio::test]
async fn a_host_room_spans_two_instances_with_the_same_rules() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    let (mut host, wh) = joined(one.addr, "arena", "host").await;
    let idh = peer_id(&wh);
    let host_info = json!({"id": idh, "kind": "browser", "role": "host"});
    // Clients on two (one by URL, one by frame) and one on one.
    let (mut c1, w1) = joined_by_url(two.addr, "arena", "client").await;
    let (mut c2, w2) = joined(two.addr, "arena", "client").await;
    let (mut c3, w3) = joined(one.addr, "arena", "client").await;
    let (id1, id2, id3) = (peer_id(&w1), peer_id(&w2), peer_id(&w3));
    for (welcome, id) in [(&w1, id1), (&w2, id2), (&w3, id3)] {
        assert_eq!(
            welcome["peers"],
            json!([host_info]),
            "client {id}'s welcome"
        );
    }
    // The host hears of each, those on two through Redis (so maybe after the one on one).
    let mut heard = Vec::new();
    for _ in 0..3 {
        let frame = host.recv().await;
        assert_eq!(frame["type"], "peer_joined", "{frame}");
        heard.push(frame["peer"].clone());
    }
    heard.sort_by_key(|peer| peer["id"].as_u64());
    let clients: Vec<Value> = [id1, id2, id3]
        .map(|id| json!({"id": id, "kind": "browser", "role": "client"}))
        .into();
    assert_eq!(heard, clients);
    // No client heard another: each reads the host's signal (across instances) first.
    for (c, id) in [(&mut c1, id1), (&mut c2, id2), (&mut c3, id3)] {
        next_is_signal(&mut host, idh, c, id).await;
        next_is_signal(c, id, &mut host, idh).await;
    }

    // A second host is refused on either instance; so are peers; the room is unchanged.
    for addr in [two.addr, one.addr] {
        refused(addr, ("arena", "host"), false, "host_taken").await;
        refused(addr, ("arena", "peer"), true, "topology_mismatch").await;
    }
    // Client to client, across instances and on one, is refused; the target hears nothing.
    for (from, to) in [(&mut c3, id1), (&mut c1, id2)] {
        from.send(json!({"type": "signal", "to": to, "data": {"sdp": "offer"}}))
            .await;
        assert_eq!(from.error_code().await, "client_to_client");
    }
    for (c, id) in [(&mut c1, id1), (&mut c2, id2)] {
        next_is_signal(&mut host, idh, c, id).await;
    }

    // Dashboards on both instances, of the room and of every room, see the star.
    let mut expected = vec![
        (idh, "host".to_owned()),
        (id1, "client".to_owned()),
        (id2, "client".to_owned()),
        (id3, "client".to_owned()),
    ];
    expected.sort_unstable();
    for addr in [one.addr, two.addr] {
        let seen = snapshot(addr, "arena").await;
        assert_eq!(seen["topology"], "host", "{seen}");
        assert_eq!(roles(&seen), expected);
        let mut all = Client::connect(addr).await;
        all.send(json!({"type": "subscribe"})).await;
        let rooms = all.recv_type("subscribed").await["rooms"].clone();
        assert_eq!(rooms[0]["topology"], "host", "{rooms}");
        assert_eq!(roles(&rooms[0]), expected);
    }

    // The host leaves on one: the clients on two hear it; it comes back on two, heard by
    // the clients on both.
    assert!(host.close().await);
    hear_host_left(&mut [&mut c1, &mut c2, &mut c3], idh, "left").await;
    let (mut host, back) = joined(two.addr, "arena", "host").await;
    let idh2 = peer_id(&back);
    assert_eq!(sorted_ids(&back), [id1, id2, id3]);
    let mut clients = [(&mut c1, id1), (&mut c2, id2), (&mut c3, id3)];
    hear_host_back(&mut host, idh2, &mut clients).await;
}

#[tokio::test]
async fn an_instance_watching_an_empty_room_learns_its_topology_from_another_instances_join() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    // `two` serves the room (a dashboard) before anyone is in it.
    let mut early = Client::connect(two.addr).await;
    early
        .send(json!({"type": "subscribe", "room": "later"}))
        .await;
    assert_eq!(
        early.recv_type("subscribed").await["rooms"],
        json!([{"room": "later", "peers": []}])
    );
    let (mut host, wh) = joined(one.addr, "later", "host").await;
    let joined_at_two = early.recv_type("peer_joined").await;
    assert_eq!(joined_at_two["peer"]["role"], "host");
    assert_eq!(snapshot(two.addr, "later").await["topology"], "host");
    // Its rules on `two` take the host from the mirror: peers and a second host are refused,
    // and a client sees the host.
    refused(two.addr, ("later", "peer"), false, "topology_mismatch").await;
    refused(two.addr, ("later", "host"), false, "host_taken").await;
    let (mut c, wc) = joined(two.addr, "later", "client").await;
    assert_eq!(ids(&wc), [peer_id(&wh)]);
    assert_eq!(host.recv().await["peer"]["id"], peer_id(&wc));
    next_is_signal(&mut host, peer_id(&wh), &mut c, peer_id(&wc)).await;
}

#[tokio::test]
async fn shared_host_rooms_count_against_the_host_room_cap_and_meshes_against_the_mesh_cap() {
    let redis = Redis::start().await;
    let caps = |c: &mut ackwire_signal::Config| {
        c.max_peers_per_room = 2;
        c.max_peers_per_host_room = 3;
    };
    let one = instance(&redis, caps).await;
    let two = instance(&redis, caps).await;
    let _mesh = [
        joined(one.addr, "mesh", "peer").await,
        joined(two.addr, "mesh", "peer").await,
    ];
    for addr in [one.addr, two.addr] {
        refused(addr, ("mesh", "peer"), false, "room_full").await;
        // A client is told the room's shape, not its size.
        refused(addr, ("mesh", "client"), false, "topology_mismatch").await;
    }
    let _star = [
        joined(one.addr, "arena", "host").await,
        joined(two.addr, "arena", "client").await,
        joined(one.addr, "arena", "client").await,
    ];
    for addr in [one.addr, two.addr] {
        refused(addr, ("arena", "client"), true, "room_full").await;
        // Told the room's shape, or its host, before its size.
        refused(addr, ("arena", "peer"), false, "topology_mismatch").await;
        refused(addr, ("arena", "host"), false, "host_taken").await;
    }
}

#[tokio::test]
async fn a_restarted_host_takes_its_dropped_seat_in_a_full_shared_room_at_once() {
    let redis = Redis::start().await;
    let config = |c: &mut ackwire_signal::Config| {
        c.max_peers_per_host_room = 3;
        c.reconnect_grace = Duration::from_secs(60);
    };
    let one = instance(&redis, config).await;
    let two = instance(&redis, config).await;
    let mut crashed = Client::connect(one.addr).await;
    let wh = crashed.join_with(host_join("host-run-1")).await;
    let (mut c1, w1) = joined(two.addr, "arena", "client").await;
    let (mut c2, w2) = joined(one.addr, "arena", "client").await;
    let (id1, id2) = (peer_id(&w1), peer_id(&w2));
    // Full: the host's place counts until it is given up.
    refused(two.addr, ("arena", "client"), false, "room_full").await;

    drop(crashed);
    one.metric_falls_to("ackwire_signal_connections", 1.0).await;
    // The restarted host, on the instance that saw its socket go, takes the seat (and its
    // place in the full room) now.
    let mut restarted = Client::connect(one.addr).await;
    let back = restarted.join_with(host_join("host-run-2")).await;
    assert_eq!(sorted_ids(&back), [id1, id2]);
    hear_host_left(&mut [&mut c1, &mut c2], peer_id(&wh), "lost").await;
    let mut clients = [(&mut c1, id1), (&mut c2, id2)];
    hear_host_back(&mut restarted, peer_id(&back), &mut clients).await;
    // The seat in Redis is the restarted host's (the dropped one's removal, which the
    // clients heard, left it so): a host on either instance is refused, naming it.
    let idh2 = peer_id(&back).to_string();
    assert_eq!(
        redis_get(&redis, "ackwire:host:arena").await,
        Some(idh2.clone())
    );
    for addr in [two.addr, one.addr] {
        let (_, error) = refused(addr, ("arena", "host"), false, "host_taken").await;
        assert!(
            error["message"].as_str().unwrap().contains(&idh2),
            "{error}"
        );
    }
}

/// What Redis holds under `key`.
async fn redis_get(redis: &Redis, key: &str) -> Option<String> {
    let mut conn = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    redis::AsyncCommands::get(&mut conn, key).await.unwrap()
}

#[tokio::test]
async fn a_shared_rooms_topology_outlives_a_redis_restart_and_goes_with_its_last_peer() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    let (host, wh) = joined(one.addr, "arena", "host").await;
    let key = "ackwire:topology:arena";
    let (seat, idh) = ("ackwire:host:arena", peer_id(&wh).to_string());
    assert_eq!(redis_get(&redis, key).await.as_deref(), Some("host"));
    assert_eq!(redis_get(&redis, seat).await, Some(idh.clone()));
    let port = redis.kill().await;
    healthz_says(one.addr, 503).await;
    let redis = Redis::start_on(port).await;
    // Healthy again once `one` has put its host, and the room's topology, back.
    healthz_says(one.addr, 200).await;
    healthz_says(two.addr, 200).await;
    assert_eq!(redis_get(&redis, key).await.as_deref(), Some("host"));
    // The host's seat is back too.
    assert_eq!(redis_get(&redis, seat).await, Some(idh));
    refused(two.addr, ("arena", "peer"), false, "topology_mismatch").await;
    refused(two.addr, ("arena", "host"), false, "host_taken").await;
    // Emptied, the room is gone with its topology: its next first member makes a mesh.
    assert!(host.close().await);
    // (Its last peer's removal drops the room and its topology in one step.)
    two.metric_falls_to("ackwire_signal_shared_rooms", 0.0)
        .await;
    assert_eq!(redis_get(&redis, key).await, None);
    assert_eq!(redis_get(&redis, seat).await, None);
    let (_p, wp) = joined(two.addr, "arena", "peer").await;
    assert_eq!(ids(&wp), Vec::<u64>::new());
    assert_eq!(redis_get(&redis, key).await.as_deref(), Some("mesh"));
}

#[tokio::test]
async fn concurrent_first_joins_of_both_topologies_on_two_instances_leave_one_topology() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    for round in 0..8 {
        let room = format!("race{round}");
        let joins = [("peer", one.addr), ("client", two.addr)].map(|(role, addr)| {
            let room = room.clone();
            tokio::spawn(async move {
                let mut c = Client::connect(addr).await;
                c.send(join_as(&room, role)).await;
                (role, c.recv().await, c)
            })
        });
        let mut winners = Vec::new();
        let mut clients = Vec::new();
        for join in joins {
            let (role, answer, c) = join.await.unwrap();
            match answer["type"].as_str() {
                Some("welcome") => winners.push(role),
                _ => assert_eq!(answer["code"], "topology_mismatch", "{answer}"),
            }
            clients.push(c);
        }
        assert_eq!(winners.len(), 1, "{room}: both topologies got in");
    }
}

/// Waits until `addr`'s copy of `room` lists peer `id` (an instance that serves the room
/// hears of another's peers through Redis, a moment later).
async fn until_listed(addr: SocketAddr, room: &str, id: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !roles(&snapshot(addr, room).await)
        .iter()
        .any(|(p, _)| *p == id)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{addr} never listed {id}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `c` joins `room` as a host: its welcome's peer id, or the error frame.
async fn host_answer(c: &mut Client, room: &str) -> Result<u64, Value> {
    c.send(join_as(room, "host")).await;
    let answer = c.recv().await;
    match answer["type"].as_str() {
        Some("welcome") => Ok(peer_id(&answer)),
        _ => Err(answer),
    }
}

#[tokio::test]
async fn concurrent_hosts_on_two_instances_leave_one_host_and_the_seat_passes_when_it_leaves() {
    let redis = Redis::start().await;
    // Each round creates a room, from one address.
    let one = instance(&redis, |c| c.rooms_per_ip_per_min = 100).await;
    let two = instance(&redis, |c| c.rooms_per_ip_per_min = 100).await;
    for round in 0..10 {
        let room = format!("seat{round}");
        let seat = format!("ackwire:host:{room}");
        // Two hosts, one on each instance, join at the same instant (the first on `one` in
        // even rounds, on `two` in odd ones).
        let (first, second) = match round % 2 {
            0 => (one.addr, two.addr),
            _ => (two.addr, one.addr),
        };
        let (mut a, mut b) = (Client::connect(first).await, Client::connect(second).await);
        let answers = tokio::join!(host_answer(&mut a, &room), host_answer(&mut b, &room));
        let (winner, idh, mut loser, error, loser_addr) = match answers {
            (Ok(id), Err(error)) => (a, id, b, error, second),
            (Err(error), Ok(id)) => (b, id, a, error, first),
            (Ok(x), Ok(y)) => panic!("{room}: both hosts got in ({x} and {y})"),
            (Err(x), Err(y)) => panic!("{room}: neither host got in ({x}, {y})"),
        };
        // The other is refused as the local rule refuses it, naming the seat's holder, which
        // Redis holds.
        assert_eq!(error["code"], "host_taken", "{room}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(&format!("peer {idh}")), "{room}: {error}");
        assert_eq!(redis_get(&redis, &seat).await, Some(idh.to_string()));

        // Clients on both instances see the one host.
        until_listed(loser_addr, &room, idh).await;
        let (mut c1, w1) = joined(one.addr, &room, "client").await;
        let (mut c2, w2) = joined(two.addr, &room, "client").await;
        assert_eq!(ids(&w1), [idh]);
        assert_eq!(ids(&w2), [idh]);
        // The host leaves: its seat goes with it (the room, its clients, stays a host room),
        // and the refused host, on the other instance, takes it.
        assert!(winner.close().await);
        for c in [&mut c1, &mut c2] {
            let left = json!({"type": "peer_left", "room": room, "peer_id": idh, "reason": "left"});
            assert_eq!(c.recv().await, left);
        }
        assert_eq!(redis_get(&redis, &seat).await, None);
        let topology = format!("ackwire:topology:{room}");
        assert_eq!(redis_get(&redis, &topology).await.as_deref(), Some("host"));
        let idh2 = host_answer(&mut loser, &room)
            .await
            .unwrap_or_else(|e| panic!("{room}: the seat did not pass: {e}"));
        assert_eq!(redis_get(&redis, &seat).await, Some(idh2.to_string()));
        for c in [&mut c1, &mut c2] {
            assert_eq!(c.recv().await["peer"]["id"], idh2);
        }
    }
}

#[tokio::test]
async fn a_host_replacing_its_programs_old_peer_keeps_the_shared_seat() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    let mut old = Client::connect(one.addr).await;
    let idh = peer_id(&old.join_with(host_join("host-run-1")).await);
    let (mut c, wc) = joined(two.addr, "arena", "client").await;
    assert_eq!(ids(&wc), [idh]);
    // The same program joins again (a new socket, same instance id): it replaces its old
    // peer and takes the seat that peer holds.
    let mut new = Client::connect(one.addr).await;
    let idh2 = peer_id(&new.join_with(host_join("host-run-1")).await);
    assert_eq!(
        c.recv().await,
        json!({"type": "peer_left", "room": "arena", "peer_id": idh, "reason": "replaced"})
    );
    assert_eq!(c.recv().await["peer"]["id"], idh2);
    // (The old peer's removal, which the client heard, left the new one's seat alone.)
    let seat = redis_get(&redis, "ackwire:host:arena").await;
    assert_eq!(seat, Some(idh2.to_string()));
    for addr in [two.addr, one.addr] {
        let (_, error) = refused(addr, ("arena", "host"), false, "host_taken").await;
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(&format!("peer {idh2}")), "{error}");
    }
    next_is_signal(&mut new, idh2, &mut c, peer_id(&wc)).await;
}

#[tokio::test]
async fn a_host_may_signal_for_all_its_clients_where_a_client_is_held_to_the_rate_limit() {
    let server = Server::start(|_| {}).await;
    let (mut host, welcome) = joined(server.addr, "busy", "host").await;
    let idh = peer_id(&welcome);
    let (mut client, welcome) = joined(server.addr, "busy", "client").await;
    let idc = peer_id(&welcome);
    assert_eq!(host.recv().await["type"], "peer_joined");
    // 300 frames at once (its stats reports here): what a host signalling for all its
    // clients after a restart sends. Far over a client's burst (40), inside the host's (40 +
    // 4 per place of the host-room cap): no refusal comes back, and it is still connected.
    for _ in 0..300 {
        host.send(json!({"type": "stats", "links": []})).await;
    }
    next_is_signal(&mut client, idc, &mut host, idh).await;
    next_is_signal(&mut host, idh, &mut client, idc).await;
    // A client sending as much is held to the limit: refused with rate_limited, and the host
    // hears at most the burst. Another client's signal after the refusal marks the end of
    // what the first one got through (the server relayed those before refusing).
    let (mut other, welcome) = joined(server.addr, "busy", "client").await;
    let ido = peer_id(&welcome);
    assert_eq!(host.recv().await["type"], "peer_joined");
    for n in 0..60 {
        client
            .send(json!({"type": "signal", "to": idh, "data": {"n": n}}))
            .await;
    }
    let refusal = client.recv().await;
    assert_eq!(refusal["code"], "rate_limited", "{refusal}");
    other
        .send(json!({"type": "signal", "to": idh, "data": "end"}))
        .await;
    let mut heard = 0;
    loop {
        let frame = host.recv().await;
        assert_eq!(frame["type"], "signal", "{frame}");
        if frame["from"] == ido {
            break;
        }
        heard += 1;
    }
    assert!(
        (1..60).contains(&heard),
        "the host heard {heard} of the client's 60"
    );
}

#[tokio::test]
async fn a_hosts_webtransport_service_reaches_its_clients_alone_and_others_may_not_publish_one() {
    let server = Server::start(|_| {}).await;
    let hash = "ab".repeat(32);
    let service = json!({"url": "https://192.0.2.7:4433/ackwire", "cert_hashes": [hash]});
    // Only a host publishes a service, and only a well-formed one; a refusal changes nothing
    // (the same socket joins afterwards).
    let mut host = server.client().await;
    let url = "https://192.0.2.7:4433/";
    for (role, bad, code) in [
        ("client", service.clone(), "invalid_join"),
        ("peer", service.clone(), "invalid_join"),
        (
            "host",
            json!({"url": "http://192.0.2.7:4433/ackwire"}),
            "invalid_join",
        ),
        (
            "host",
            json!({"url": "https://192.0.2.7:4433/a?token=1"}),
            "invalid_join",
        ),
        (
            "host",
            json!({"url": url, "cert_hashes": [hash, hash, hash, hash, hash]}),
            "invalid_join",
        ),
        (
            "host",
            json!({"url": url, "cert_hashes": ["xyz"]}),
            "malformed_message",
        ),
    ] {
        let mut join = join_as("wt", role);
        join["webtransport"] = bad.clone();
        host.send(join).await;
        let error = host.recv().await;
        assert_eq!(error["code"], code, "{role} with {bad}: {error}");
    }
    let mut join = join_as("wt", "host");
    join["webtransport"] = service.clone();
    let wh = host.join_with(join).await;
    let idh = peer_id(&wh);
    // A client's welcome carries it; the dashboard's snapshot does not.
    let (_client, wc) = joined(server.addr, "wt", "client").await;
    assert_eq!(
        wc["peers"],
        json!([{"id": idh, "kind": "browser", "role": "host", "webtransport": service}])
    );
    let seen = snapshot(server.addr, "wt").await;
    assert!(!seen.to_string().contains("webtransport"), "{seen}");
    server.stop().await;
}

/// A service at 192.0.2.7 whose certificates hash to `hashes` (each byte repeated).
fn wt_service(hashes: &[&str]) -> Value {
    let hashes: Vec<String> = hashes.iter().map(|h| h.repeat(32)).collect();
    json!({"url": "https://192.0.2.7:4433/ackwire", "cert_hashes": hashes})
}

#[tokio::test]
async fn a_hosts_update_reaches_its_clients_as_peer_updated_and_a_clients_is_refused() {
    let server = Server::start(|_| {}).await;
    let old = wt_service(&["aa"]);
    let new = wt_service(&["aa", "bb"]);
    let mut host = server.client().await;
    let mut join = join_as("rot", "host");
    join["webtransport"] = old.clone();
    let idh = peer_id(&host.join_with(join).await);
    let (mut c1, w1) = joined(server.addr, "rot", "client").await;
    let (mut c2, w2) = joined(server.addr, "rot", "client").await;
    let (id1, id2) = (peer_id(&w1), peer_id(&w2));
    for _ in 0..2 {
        assert_eq!(host.recv_type("peer_joined").await["type"], "peer_joined");
    }
    let mut dash = server.client().await;
    dash.send(json!({"type": "subscribe", "room": "rot"})).await;
    dash.recv_type("subscribed").await;

    // The host rotates: both clients hear its whole description with the new service.
    host.send(json!({"type": "update", "webtransport": new.clone()}))
        .await;
    let updated = json!({"type": "peer_updated", "room": "rot",
        "peer": {"id": idh, "kind": "browser", "role": "host", "webtransport": new}});
    assert_eq!(c1.recv().await, updated);
    assert_eq!(c2.recv().await, updated);
    // A newcomer's welcome lists it; the dashboard heard nothing of it.
    let (_c3, w3) = joined(server.addr, "rot", "client").await;
    assert_eq!(w3["peers"][0]["webtransport"], new);
    assert_eq!(host.recv().await["type"], "peer_joined");
    let joined3 = dash.recv().await;
    assert_eq!(
        joined3["type"], "peer_joined",
        "the dashboard's next frame: {joined3}"
    );
    assert!(!joined3.to_string().contains("webtransport"), "{joined3}");

    // A client's update, and a malformed one of the host's, are refused and change nothing.
    c1.send(json!({"type": "update", "webtransport": wt_service(&["cc"])}))
        .await;
    assert_eq!(c1.error_code().await, "invalid_join");
    host.send(json!({"type": "update", "webtransport": {"url": "http://192.0.2.7/"}}))
        .await;
    assert_eq!(host.error_code().await, "invalid_join");
    let mut loose = server.client().await;
    loose
        .send(json!({"type": "update", "webtransport": new.clone()}))
        .await;
    assert_eq!(loose.error_code().await, "not_joined");
    // Nothing reached anyone: each client's next frame is the host's signal.
    next_is_signal(&mut host, idh, &mut c2, id2).await;
    next_is_signal(&mut host, idh, &mut c1, id1).await;
    let (_c4, w4) = joined(server.addr, "rot", "client").await;
    assert_eq!(w4["peers"][0]["webtransport"], new);
    assert_eq!(host.recv().await["type"], "peer_joined");
    // The sockets that were refused are still open: the client signals the host.
    next_is_signal(&mut c1, id1, &mut host, idh).await;
    server.stop().await;
}

#[tokio::test]
async fn a_hosts_update_reaches_its_clients_on_another_instance() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    let old = wt_service(&["aa"]);
    let new = wt_service(&["aa", "bb"]);
    let mut host = Client::connect(one.addr).await;
    let mut join = join_as("rot", "host");
    join["webtransport"] = old.clone();
    let idh = peer_id(&host.join_with(join).await);
    let (mut far, wf) = joined(two.addr, "rot", "client").await;
    let (mut near, wn) = joined(one.addr, "rot", "client").await;
    assert_eq!(wf["peers"][0]["webtransport"], old);
    for _ in 0..2 {
        host.recv_type("peer_joined").await;
    }
    // Both instances' all-rooms dashboards hear nothing of it.
    let mut dashes = Vec::new();
    for addr in [one.addr, two.addr] {
        let mut all = Client::connect(addr).await;
        all.send(json!({"type": "subscribe"})).await;
        all.recv_type("subscribed").await;
        dashes.push(all);
    }

    host.send(json!({"type": "update", "webtransport": new.clone()}))
        .await;
    let updated = json!({"type": "peer_updated", "room": "rot",
        "peer": {"id": idh, "kind": "browser", "role": "host", "webtransport": new}});
    assert_eq!(near.recv().await, updated);
    assert_eq!(far.recv().await, updated);
    // Redis holds it: a newcomer on the other instance is welcomed with it.
    let (_late, wl) = joined(two.addr, "rot", "client").await;
    assert_eq!(wl["peers"][0]["webtransport"], new);
    for dash in &mut dashes {
        let next = dash.recv().await;
        assert_eq!(next["type"], "peer_joined", "{next}");
        assert!(!next.to_string().contains("webtransport"), "{next}");
    }
    let _ = (peer_id(&wn), peer_id(&wf));
}
