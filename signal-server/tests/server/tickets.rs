//! Join tickets over real WebSockets (`--ticket-secret-file`): every refusal with its code
//! and nothing changed, a host ticket for a host's seat, one member per identity (on one
//! server and across two sharing a real `redis-server`), identities in peer descriptions
//! but not on dashboards, resumes without a ticket, the secret's checks at start, and a
//! ticket never in the log.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::OnceLock,
    time::{SystemTime, UNIX_EPOCH},
};

use crate::common::redis::{Redis, instance};
use crate::common::{Client, Process, Server, ids, peer_id, upgrade};
use ackwire_signalling::{
    Role,
    ticket::{self, Claims},
};
use serde_json::{Value, json};

const SECRET: &str = "a test secret of 32 bytes or more, shared with the backend";

/// The secret in a file, as an operator writes it (with a newline): written once, kept for
/// every server of these tests (a server reads it as it starts, on a task of its own).
fn secret_file() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tickets-test-secret");
        std::fs::write(&path, format!("{SECRET}\n")).unwrap();
        path
    })
}

/// A server that requires tickets, changed by `tweak`.
async fn ticketed(tweak: impl FnOnce(&mut ackwire_signal::Config)) -> Server {
    Server::start(|c| {
        c.ticket_secret_file = Some(secret_file().to_owned());
        tweak(c);
    })
    .await
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// What the game's backend hands out: a ticket for `identity` in `room` as `role`, declaring
/// no application, valid for an hour.
fn ticket(room: &str, role: Role, identity: &str) -> String {
    ticket_until(room, role, identity, now() + 3600)
}

fn ticket_until(room: &str, role: Role, identity: &str, expires: u64) -> String {
    let claims = Claims::new(room, role, identity, None, expires).unwrap();
    ticket::mint(SECRET.as_bytes(), &claims)
}

/// A browser's `join` frame for `room` as `role`, with `ticket` if given.
fn join(room: &str, role: Role, ticket: Option<&str>) -> Value {
    let mut join = json!({"type": "join", "version": 1, "room": room, "kind": "browser"});
    if role != Role::Peer {
        join["role"] = json!(role.as_str());
    }
    if let Some(ticket) = ticket {
        join["ticket"] = json!(ticket);
    }
    join
}

/// A browser in `room` as `role`, admitted with a ticket for `identity`, and its welcome.
async fn member(addr: SocketAddr, room: &str, role: Role, identity: &str) -> (Client, Value) {
    let mut c = Client::connect(addr).await;
    let welcome = c
        .join_with(join(room, role, Some(&ticket(room, role, identity))))
        .await;
    (c, welcome)
}

/// Sends `join` and expects it refused with `code` (its message saying something); returns
/// the error frame. The socket stays open.
async fn refused(c: &mut Client, join: Value, code: &str) -> Value {
    c.send(join.clone()).await;
    let error = c.recv().await;
    assert_eq!(error["type"], "error", "{join} answered with {error}");
    assert_eq!(error["code"], code, "{join} answered with {error}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{error}"
    );
    error
}

/// A join in the `/ws` URL with `query`, refused with `code`: the first frame is the error.
async fn refused_in_url(addr: SocketAddr, query: &str, code: &str) -> Client {
    let mut c = upgrade(addr, &format!("/ws?{query}"), &[]).await.unwrap();
    let error = c.recv().await;
    assert_eq!(error["code"], code, "{query} answered with {error}");
    c
}

#[tokio::test]
async fn a_join_without_a_ticket_is_refused_with_ticket_missing_in_a_frame_or_the_url() {
    let server = ticketed(|_| {}).await;
    let mut c = server.client().await;
    refused(&mut c, join("lobby", Role::Peer, None), "ticket_missing").await;
    refused_in_url(
        server.addr,
        "version=1&room=lobby&kind=browser",
        "ticket_missing",
    )
    .await;
    // The socket stays open: the same connection joins once it has one.
    let good = ticket("lobby", Role::Peer, "user-1");
    c.join_with(join("lobby", Role::Peer, Some(&good))).await;
    assert_eq!(
        server
            .metric("ackwire_signal_errors_total{code=\"ticket_missing\"}")
            .await,
        2.0
    );
    server.stop().await;
}

#[tokio::test]
async fn an_expired_ticket_is_refused_with_ticket_expired() {
    let server = ticketed(|_| {}).await;
    let mut c = server.client().await;
    let old = ticket_until("lobby", Role::Peer, "user-1", now() - 1);
    let error = refused(
        &mut c,
        join("lobby", Role::Peer, Some(&old)),
        "ticket_expired",
    )
    .await;
    assert!(
        error["message"].as_str().unwrap().contains("expired"),
        "{error}"
    );
    let query = format!("version=1&room=lobby&kind=browser&ticket={old}");
    refused_in_url(server.addr, &query, "ticket_expired").await;
    server.stop().await;
}

#[tokio::test]
async fn a_ticket_for_another_room_is_refused_with_ticket_wrong_room() {
    let server = ticketed(|_| {}).await;
    let mut c = server.client().await;
    let other = ticket("other", Role::Peer, "user-1");
    let error = refused(
        &mut c,
        join("lobby", Role::Peer, Some(&other)),
        "ticket_wrong_room",
    )
    .await;
    assert_eq!(
        error["message"],
        "the ticket is for room \"other\", not \"lobby\""
    );
    server.stop().await;
}

#[tokio::test]
async fn a_ticket_for_another_role_is_refused_with_ticket_wrong_role() {
    let server = ticketed(|_| {}).await;
    let mut c = server.client().await;
    let client = ticket("arena", Role::Client, "user-1");
    refused(
        &mut c,
        join("arena", Role::Peer, Some(&client)),
        "ticket_wrong_role",
    )
    .await;
    let query = format!("version=1&room=arena&kind=browser&role=host&ticket={client}");
    refused_in_url(server.addr, &query, "ticket_wrong_role").await;
    server.stop().await;
}

#[tokio::test]
async fn a_ticket_that_is_not_the_servers_is_refused_with_ticket_invalid() {
    let server = ticketed(|_| {}).await;
    let mut c = server.client().await;
    let good = ticket("lobby", Role::Peer, "user-1");
    let other_secret = ticket::mint(
        b"another backend's secret, 32 bytes or more",
        &Claims::new("lobby", Role::Peer, "user-1", None, now() + 60).unwrap(),
    );
    // One byte of the payload changed: the tag no longer matches.
    let mut altered = good.clone().into_bytes();
    altered[5] = if altered[5] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    let for_pong = ticket::mint(
        SECRET.as_bytes(),
        &Claims::new("lobby", Role::Peer, "user-1", Some("pong"), now() + 60).unwrap(),
    );
    for bad in [
        other_secret.as_str(),
        &altered,
        "v2.AAAA.BBBB",
        "not a ticket",
        &"v1.".repeat(400),
        // For an application the join does not declare.
        &for_pong,
    ] {
        refused(
            &mut c,
            join("lobby", Role::Peer, Some(bad)),
            "ticket_invalid",
        )
        .await;
    }
    c.join_with(join("lobby", Role::Peer, Some(&good))).await;
    server.stop().await;
}

#[tokio::test]
async fn a_ticket_names_the_application_the_join_declares() {
    let server = ticketed(|_| {}).await;
    let app = json!({"id": "pong", "version": 2, "channels": ["reliable-ordered"]});
    let for_pong = ticket::mint(
        SECRET.as_bytes(),
        &Claims::new("lobby", Role::Peer, "user-1", Some("pong"), now() + 60).unwrap(),
    );
    let mut c = server.client().await;
    // A ticket for no application does not admit a join that declares one.
    let bare = ticket("lobby", Role::Peer, "user-1");
    let mut with_app = join("lobby", Role::Peer, Some(&bare));
    with_app["app"] = app.clone();
    refused(&mut c, with_app.clone(), "ticket_invalid").await;
    with_app["ticket"] = json!(for_pong);
    c.join_with(with_app).await;
    // In the URL, the same.
    let query = format!(
        "version=1&room=lobby&kind=browser&app=pong&app_version=2&channels=reliable-ordered&ticket={for_pong}"
    );
    let mut b = upgrade(server.addr, &format!("/ws?{query}"), &[])
        .await
        .unwrap();
    assert_eq!(b.recv().await["type"], "welcome");
    server.stop().await;
}

#[tokio::test]
async fn a_host_ticket_takes_a_host_rooms_seat_and_a_client_or_peer_ticket_cannot() {
    let server = ticketed(|_| {}).await;
    let (mut client, _) = member(server.addr, "arena", Role::Client, "player-1").await;
    let mut c = server.client().await;
    for role in [Role::Client, Role::Peer] {
        let not_a_host = ticket("arena", role, "player-2");
        refused(
            &mut c,
            join("arena", Role::Host, Some(&not_a_host)),
            "ticket_wrong_role",
        )
        .await;
    }
    let (_host, welcome) = member(server.addr, "arena", Role::Host, "the-host").await;
    // The seat is its: the waiting client hears of it first, nothing of the refusals.
    let joined = client.recv().await;
    assert_eq!(joined["type"], "peer_joined", "{joined}");
    assert_eq!(joined["peer"]["id"], welcome["peer_id"]);
    assert_eq!(joined["peer"]["role"], "host");
    assert_eq!(joined["peer"]["identity"], "the-host");
    server.stop().await;
}

#[tokio::test]
async fn a_refused_join_changes_no_room_state() {
    // One room creation per minute: a refused join must not spend it either.
    let server = ticketed(|c| c.rooms_per_ip_per_min = 2).await;
    let (mut a, wa) = member(server.addr, "lobby", Role::Peer, "user-a").await;
    let mut dashboard = server.client().await;
    dashboard
        .send(json!({"type": "subscribe", "room": "lobby"}))
        .await;
    let before = dashboard.recv_type("subscribed").await;
    let gauges = async || {
        (
            server.metric("ackwire_signal_rooms").await,
            server.metric("ackwire_signal_peers").await,
            server.metric("ackwire_signal_joins_total").await,
        )
    };
    let counted = gauges().await;

    let mut c = server.client().await;
    let refusals = [
        (join("lobby", Role::Peer, None), "ticket_missing"),
        (
            join(
                "lobby",
                Role::Peer,
                Some(&ticket_until("lobby", Role::Peer, "user-b", now() - 10)),
            ),
            "ticket_expired",
        ),
        (
            join("lobby", Role::Peer, Some(&ticket("other", Role::Peer, "b"))),
            "ticket_wrong_room",
        ),
        (
            join("lobby", Role::Peer, Some(&ticket("lobby", Role::Host, "b"))),
            "ticket_wrong_role",
        ),
        (join("lobby", Role::Peer, Some("v1.x.y")), "ticket_invalid"),
        // The identity of a member already in the room, in a ticket for another room: it
        // replaces nobody.
        (
            join(
                "fresh",
                Role::Peer,
                Some(&ticket("lobby", Role::Peer, "user-a")),
            ),
            "ticket_wrong_room",
        ),
        // Rooms that do not exist yet are not made.
        (join("fresh", Role::Peer, None), "ticket_missing"),
        (
            join("fresh-2", Role::Peer, Some(&ticket("x", Role::Peer, "b"))),
            "ticket_wrong_room",
        ),
    ];
    for (frame, code) in refusals {
        refused(&mut c, frame, code).await;
    }
    assert_eq!(
        gauges().await,
        counted,
        "rooms, peers and joins are unchanged"
    );
    let mut again = server.client().await;
    again
        .send(json!({"type": "subscribe", "room": "lobby"}))
        .await;
    assert_eq!(again.recv_type("subscribed").await, before);
    // Nobody heard a thing: the next frame a member and the dashboard get is the next
    // admitted join's.
    let (_b, wb) = member(server.addr, "lobby", Role::Peer, "user-b").await;
    assert_eq!(ids(&wb), [peer_id(&wa)]);
    for heard in [a.recv().await, dashboard.recv().await] {
        assert_eq!(heard["type"], "peer_joined", "{heard}");
        assert_eq!(heard["peer"]["id"], wb["peer_id"]);
    }
    // The room creations refused joins did not spend: one more room may be made, then the
    // limit holds.
    member(server.addr, "made-1", Role::Peer, "user-c").await;
    let mut d = server.client().await;
    let late = ticket("made-2", Role::Peer, "user-d");
    refused(
        &mut d,
        join("made-2", Role::Peer, Some(&late)),
        "room_creation_limited",
    )
    .await;
    server.stop().await;
}

#[tokio::test]
async fn a_second_join_with_the_same_identity_replaces_the_older_member() {
    let server = ticketed(|_| {}).await;
    let (mut watcher, _) = member(server.addr, "lobby", Role::Peer, "watcher").await;
    let (mut old, wold) = member(server.addr, "lobby", Role::Peer, "user-7").await;
    let heard = watcher.recv_type("peer_joined").await;
    assert_eq!(heard["peer"]["identity"], "user-7");
    // Another program (a second tab, another device) with a ticket for the same player.
    let (_new, wnew) = member(server.addr, "lobby", Role::Peer, "user-7").await;
    assert_eq!(
        wnew["peers"],
        json!([{"id": wold["peers"][0]["id"], "kind": "browser", "identity": "watcher"}]),
        "the new member sees the room without its old self"
    );
    let closed = old.closed().await.expect("a close frame");
    assert_eq!(
        (u16::from(closed.code), closed.reason.as_str()),
        (4001, "replaced_by_instance")
    );
    let left = watcher.recv().await;
    assert_eq!(
        (
            left["type"].as_str(),
            left["peer_id"].as_u64(),
            left["reason"].as_str()
        ),
        (Some("peer_left"), Some(peer_id(&wold)), Some("replaced"))
    );
    let joined = watcher.recv().await;
    assert_eq!(joined["type"], "peer_joined");
    assert_eq!(joined["peer"]["id"], wnew["peer_id"]);
    assert_eq!(joined["peer"]["identity"], "user-7");
    assert_eq!(server.metric("ackwire_signal_peers").await, 2.0);
    server.stop().await;
}

#[tokio::test]
async fn identities_are_in_the_members_peer_descriptions_and_not_on_dashboards() {
    let server = ticketed(|_| {}).await;
    let (_a, _) = member(server.addr, "lobby", Role::Peer, "steam:7656119").await;
    let (_b, wb) = member(server.addr, "lobby", Role::Peer, "user@example.org").await;
    assert_eq!(wb["peers"][0]["identity"], "steam:7656119");
    let mut dashboard = server.client().await;
    dashboard
        .send(json!({"type": "subscribe", "room": "lobby"}))
        .await;
    let snapshot = dashboard.recv_type("subscribed").await;
    let peers = snapshot["rooms"][0]["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 2);
    assert!(
        peers.iter().all(|p| p.get("identity").is_none()),
        "{snapshot}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_resume_needs_no_ticket_and_keeps_its_identity() {
    let server = ticketed(|c| c.reconnect_grace = std::time::Duration::from_secs(30)).await;
    let (mut watcher, _) = member(server.addr, "lobby", Role::Peer, "watcher").await;
    let (a, wa) = member(server.addr, "lobby", Role::Peer, "user-1").await;
    watcher.recv_type("peer_joined").await;
    // The link drops without a close frame; the member comes back with its token alone.
    drop(a);
    server
        .metric_falls_to("ackwire_signal_connections", 1.0)
        .await;
    let mut back = server.client().await;
    let mut resume = join("lobby", Role::Peer, None);
    resume["resume"] = json!({"peer_id": wa["peer_id"], "token": wa["token"]});
    let welcome = back.join_with(resume).await;
    assert_eq!(welcome["resumed"], true);
    // Still user-1: a later join of user-1 replaces it.
    let (_again, _) = member(server.addr, "lobby", Role::Peer, "user-1").await;
    let closed = back.closed().await.expect("a close frame");
    assert_eq!(u16::from(closed.code), 4001);
    server.stop().await;
}

#[tokio::test]
async fn without_a_secret_rooms_stay_open_and_tickets_are_ignored() {
    let server = Server::start(|_| {}).await;
    let (_a, _) = server.peer("lobby").await;
    let mut b = server.client().await;
    let welcome = b
        .join_with(join("lobby", Role::Peer, Some("anything at all")))
        .await;
    assert!(welcome["peers"][0].get("identity").is_none(), "{welcome}");
    server.stop().await;
}

#[tokio::test]
async fn a_secret_that_cannot_be_used_stops_the_server_before_it_listens() {
    let short = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(short.path(), "too short\n").unwrap();
    for (path, says) in [
        (short.path().to_owned(), "at least 32"),
        ("/no/such/secret".into(), "/no/such/secret"),
    ] {
        let config = ackwire_signal::Config {
            ticket_secret_file: Some(path),
            ..ackwire_signal::Config::default()
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let err = ackwire_signal::serve(listener, config, std::future::pending())
            .await
            .unwrap_err();
        let err = err.to_string();
        assert!(err.starts_with("--ticket-secret-file "), "{err}");
        assert!(err.contains(says), "{err}");
    }
}

#[tokio::test]
async fn the_server_says_at_start_whether_joins_are_authenticated() {
    let mut open = Process::start::<&str>(&[]).await;
    open.logged("joins are not authenticated").await;
    let mut closed =
        Process::start(&["--ticket-secret-file".as_ref(), secret_file().as_os_str()]).await;
    closed.logged("joins need a ticket").await;
}

#[tokio::test]
async fn a_ticket_never_reaches_the_log() {
    let mut server = Process::start_with_env(
        &["--ticket-secret-file".as_ref(), secret_file().as_os_str()],
        &[("RUST_LOG", "debug")],
    )
    .await;
    let good = ticket("lobby", Role::Peer, "user-1");
    let wrong_room = ticket("other", Role::Peer, "user-2");
    let expired = ticket_until("lobby", Role::Peer, "user-3", now() - 1);
    let mut altered = good.clone();
    altered.replace_range(4..5, if &altered[4..5] == "A" { "B" } else { "A" });
    let tickets = [&good, &wrong_room, &expired, &altered];
    for t in tickets {
        let query = format!("version=1&room=lobby&kind=browser&ticket={t}");
        let mut c = upgrade(server.addr, &format!("/ws?{query}"), &[])
            .await
            .unwrap();
        c.recv().await;
        let mut f = Client::connect(server.addr).await;
        f.send(join("lobby", Role::Peer, Some(t))).await;
        f.recv().await;
    }
    // The last thing logged: a refusal that says so. Every line before it was read.
    let mut marker = Client::connect(server.addr).await;
    marker
        .send(json!({"type": "join", "version": 1, "room": "end-of-test!", "kind": "browser"}))
        .await;
    marker.recv().await;
    let mut lines = Vec::new();
    loop {
        let line = server.logged("").await;
        let done = line.contains("end-of-test!");
        lines.push(line);
        if done {
            break;
        }
    }
    assert!(
        lines.iter().any(|l| l.contains("ticket_wrong_room")),
        "refusals are logged at debug: {lines:#?}"
    );
    for t in tickets {
        let (payload, tag) = t[3..].split_once('.').unwrap();
        for line in &lines {
            assert!(
                !line.contains(payload) && !line.contains(tag),
                "a ticket in the log: {line}"
            );
        }
    }
}

#[tokio::test]
async fn the_same_identity_on_two_instances_replaces_the_older_member() {
    let redis = Redis::start().await;
    let with_tickets = |c: &mut ackwire_signal::Config| {
        c.ticket_secret_file = Some(secret_file().to_owned());
    };
    let one = instance(&redis, with_tickets).await;
    let two = instance(&redis, with_tickets).await;
    let (mut watcher, ww) = member(one.addr, "lobby", Role::Peer, "watcher").await;
    let (mut old, wold) = member(one.addr, "lobby", Role::Peer, "user-7").await;
    watcher.recv_type("peer_joined").await;
    let (_new, wnew) = member(two.addr, "lobby", Role::Peer, "user-7").await;
    assert_eq!(ids(&wnew), [peer_id(&ww)], "{wnew}");
    let closed = old.closed().await.expect("a close frame");
    assert_eq!(u16::from(closed.code), 4001);
    let left = watcher.recv().await;
    assert_eq!(
        (
            left["type"].as_str(),
            left["peer_id"].as_u64(),
            left["reason"].as_str()
        ),
        (Some("peer_left"), Some(peer_id(&wold)), Some("replaced"))
    );
    let joined = watcher.recv().await;
    assert_eq!(joined["peer"]["id"], wnew["peer_id"]);
    assert_eq!(joined["peer"]["identity"], "user-7");
    // Redis holds one member per identity, and knows whose it is.
    let mut conn = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let peers: Vec<u64> = redis::AsyncCommands::hkeys(&mut conn, "ackwire:peers:lobby")
        .await
        .unwrap();
    let mut peers = peers;
    peers.sort_unstable();
    assert_eq!(peers, [peer_id(&ww), peer_id(&wnew)]);
    let holder: Option<u64> =
        redis::AsyncCommands::hget(&mut conn, "ackwire:identities:lobby", "user-7")
            .await
            .unwrap();
    assert_eq!(holder, Some(peer_id(&wnew)));
}

#[tokio::test]
async fn joins_of_one_identity_at_once_on_two_instances_leave_one_member() {
    let redis = Redis::start().await;
    let with_tickets = |c: &mut ackwire_signal::Config| {
        c.ticket_secret_file = Some(secret_file().to_owned());
    };
    let one = instance(&redis, with_tickets).await;
    let two = instance(&redis, with_tickets).await;
    let (mut watcher, _) = member(one.addr, "lobby", Role::Peer, "watcher").await;
    for round in 0..5 {
        let identity = format!("user-{round}");
        let ((mut a, wa), (mut b, wb)) = tokio::join!(
            member(one.addr, "lobby", Role::Peer, &identity),
            member(two.addr, "lobby", Role::Peer, &identity),
        );
        // The later reservation (the higher id) replaced the earlier, wherever each ran.
        let (loser, winner) = match peer_id(&wa) < peer_id(&wb) {
            true => ((&mut a, &wa), &wb),
            false => ((&mut b, &wb), &wa),
        };
        let closed = loser.0.closed().await.expect("a close frame");
        assert_eq!(u16::from(closed.code), 4001, "round {round}");
        // The watcher ends up seeing the winner alone; the room holds the two of them.
        let mut seen = std::collections::BTreeSet::new();
        while !seen.contains(&peer_id(winner)) || seen.contains(&peer_id(loser.1)) {
            let frame = watcher.recv().await;
            match frame["type"].as_str() {
                Some("peer_joined") => {
                    seen.insert(frame["peer"]["id"].as_u64().unwrap());
                }
                Some("peer_left") => {
                    seen.remove(&frame["peer_id"].as_u64().unwrap());
                }
                _ => {}
            }
        }
        let mut conn = redis::Client::open(redis.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let holder: Option<u64> =
            redis::AsyncCommands::hget(&mut conn, "ackwire:identities:lobby", &identity)
                .await
                .unwrap();
        assert_eq!(holder, Some(peer_id(winner)), "round {round}");
        let exists: bool =
            redis::AsyncCommands::hexists(&mut conn, "ackwire:peers:lobby", peer_id(loser.1))
                .await
                .unwrap();
        assert!(
            !exists,
            "round {round}: the replaced member is still in Redis"
        );
        drop((a, b));
    }
}

/// A host's program dies (its socket drops without a close frame), a stranger holding a host
/// ticket of its own tries for the seat in the grace, and the host's restarted program takes it
/// back: on one server, and with the restarted host on another instance sharing Redis (the
/// stranger asks the server that saw the host drop, which alone knows the seat is vacant).
async fn a_dropped_hosts_seat_waits_for_its_identity(one: &Server, two: &Server) {
    let (mut client, _) = member(one.addr, "arena", Role::Client, "player-1").await;
    let (host, welcome) = member(one.addr, "arena", Role::Host, "the-host").await;
    let joined = client.recv_type("peer_joined").await;
    assert_eq!(joined["peer"]["identity"], "the-host");
    drop(host);
    // The server has seen the host's connection drop: its grace runs.
    one.metric_falls_to("ackwire_signal_connections", 1.0).await;
    let mut stranger = Client::connect(one.addr).await;
    let seat = ticket("arena", Role::Host, "stranger");
    let refusal = refused(
        &mut stranger,
        join("arena", Role::Host, Some(&seat)),
        "host_taken",
    )
    .await;
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains(&format!("peer {}", welcome["peer_id"])),
        "{refusal}"
    );
    let (_back, again) = member(two.addr, "arena", Role::Host, "the-host").await;
    // The client hears of the host it had, gone, and of the same identity, back; never of the
    // stranger.
    let left = client.recv_type("peer_left").await;
    assert_eq!(left["peer_id"], welcome["peer_id"], "{left}");
    let joined = client.recv_type("peer_joined").await;
    assert_eq!(joined["peer"]["id"], again["peer_id"], "{joined}");
    assert_eq!(joined["peer"]["identity"], "the-host");
    // The stranger, asking again now, meets a connected host.
    let mut stranger = Client::connect(two.addr).await;
    refused(
        &mut stranger,
        join("arena", Role::Host, Some(&seat)),
        "host_taken",
    )
    .await;
}

#[tokio::test]
async fn a_stranger_cannot_take_a_dropped_hosts_seat_and_the_restarted_host_takes_it_back() {
    let server = ticketed(|c| c.reconnect_grace = std::time::Duration::from_secs(30)).await;
    a_dropped_hosts_seat_waits_for_its_identity(&server, &server).await;
    server.stop().await;
}

#[tokio::test]
async fn a_stranger_on_another_instance_cannot_take_a_dropped_hosts_seat() {
    let redis = Redis::start().await;
    let with_tickets = |c: &mut ackwire_signal::Config| {
        c.ticket_secret_file = Some(secret_file().to_owned());
        c.reconnect_grace = std::time::Duration::from_secs(30);
    };
    let one = instance(&redis, with_tickets).await;
    let two = instance(&redis, with_tickets).await;
    a_dropped_hosts_seat_waits_for_its_identity(&one, &two).await;
}

#[tokio::test]
async fn with_tickets_for_hosts_anyone_plays_and_only_a_named_host_takes_the_seat() {
    let server = ticketed(|c| c.tickets_for = ackwire_signal::tickets::TicketScope::Hosts).await;
    let mut c = server.client().await;
    let welcome = c.join_with(join("arena", Role::Client, None)).await;
    assert!(welcome["peers"].as_array().unwrap().is_empty(), "{welcome}");
    let mut would_host = server.client().await;
    refused(
        &mut would_host,
        join("arena", Role::Host, None),
        "ticket_missing",
    )
    .await;
    // A ticket carried where none is needed is checked all the same.
    let mut forged = server.client().await;
    refused(
        &mut forged,
        join("lobby", Role::Peer, Some("v1.not-a-ticket")),
        "ticket_invalid",
    )
    .await;
    let (_host, hw) = member(server.addr, "arena", Role::Host, "the-host").await;
    let joined = c.recv_type("peer_joined").await;
    assert_eq!(joined["peer"]["id"], hw["peer_id"]);
    assert_eq!(joined["peer"]["identity"], "the-host");
    // An open mesh room beside it.
    let mut p = server.client().await;
    p.join_with(join("lobby", Role::Peer, None)).await;
    server.stop().await;
}

#[tokio::test]
async fn the_server_says_at_start_that_only_hosts_need_a_ticket() {
    let mut hosts = Process::start(&[
        "--ticket-secret-file".as_ref(),
        secret_file().as_os_str(),
        "--tickets-for".as_ref(),
        "hosts".as_ref(),
    ])
    .await;
    hosts.logged("only hosts need a ticket").await;
}
