//! Several instances sharing rooms through a real `redis-server` (`--redis`), with real
//! WebSocket clients on 127.0.0.1. Each test starts its own Redis on a free port, with no
//! persistence, and stops it.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use crate::common::redis::{Redis, healthz_says, instance};
use crate::common::{Client, Event, Process, Server, ids, peer_id};
use serde_json::{Value, json};
use tokio::process::Child;

/// An `ackwire-signal` process (so it can be killed with SIGKILL), sharing rooms through
/// `redis`.
async fn process(redis: &Redis, args: &[&str]) -> (Child, SocketAddr) {
    let url = redis.url();
    let args: Vec<&str> = ["--redis", url.as_str()]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    let Process { child, addr, .. } = Process::start(&args).await;
    healthz_says(addr, 200).await;
    (child, addr)
}

async fn join(addr: SocketAddr, room: &str) -> (Client, Value) {
    let mut c = Client::connect(addr).await;
    let welcome = c.join(room).await;
    (c, welcome)
}

#[tokio::test]
async fn peers_of_one_room_on_two_instances_see_each_other_and_relay_both_ways() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    let (mut a, wa) = join(one.addr, "lobby").await;
    let (mut b, wb) = join(two.addr, "lobby").await;
    let (ida, idb) = (peer_id(&wa), peer_id(&wb));
    assert_ne!(ida, idb);
    assert_eq!(ids(&wb), [ida], "the welcome on two lists the peer on one");
    let joined = a.recv().await;
    assert_eq!(
        joined,
        json!({"type": "peer_joined", "room": "lobby", "peer": {"id": idb, "kind": "browser"}})
    );

    // Each instance counts its own sockets, and reads the shared totals from Redis.
    for server in [&one, &two] {
        assert_eq!(server.metric("ackwire_signal_connections").await, 1.0);
        assert_eq!(server.metric("ackwire_signal_shared_peers").await, 2.0);
        assert_eq!(server.metric("ackwire_signal_shared_rooms").await, 1.0);
        assert_eq!(server.metric("ackwire_signal_broker_up").await, 1.0);
    }

    let offer = json!({"sdp": {"type": "offer", "sdp": "v=0..."}});
    b.send(json!({"type": "signal", "to": ida, "data": offer}))
        .await;
    assert_eq!(
        a.recv().await,
        json!({"type": "signal", "from": idb, "data": offer})
    );
    let answer = json!({"sdp": {"type": "answer", "sdp": "v=0..."}});
    a.send(json!({"type": "signal", "to": idb, "data": answer}))
        .await;
    assert_eq!(
        b.recv().await,
        json!({"type": "signal", "from": ida, "data": answer})
    );

    // A room of the same instances that neither is in: nothing of it reaches them.
    let (_c, wc) = join(two.addr, "elsewhere").await;
    assert_eq!(ids(&wc), Vec::<u64>::new());
    let (mut d, wd) = join(one.addr, "elsewhere").await;
    assert_eq!(ids(&wd), [peer_id(&wc)]);
    d.send(json!({"type": "signal", "to": ida, "data": offer}))
        .await;
    assert_eq!(d.error_code().await, "unknown_peer");
    a.assert_quiet(Duration::from_millis(300)).await;
    b.assert_quiet(Duration::from_millis(300)).await;

    // Leaving on one is heard on two.
    assert!(a.close().await);
    let left = b.recv().await;
    assert_eq!(left["type"], "peer_left");
    assert_eq!(left["peer_id"], ida);
    assert_eq!(left["reason"], "left");
}

#[tokio::test]
async fn ids_stay_unique_under_concurrent_joins_on_three_instances() {
    let redis = Redis::start().await;
    let mut addrs = Vec::new();
    let mut servers = Vec::new();
    for _ in 0..3 {
        let s = instance(&redis, |_| {}).await;
        addrs.push(s.addr);
        servers.push(s);
    }
    let joins = (0..30).map(|n| {
        let addr = addrs[n % 3];
        let room = format!("r{}", n % 2);
        tokio::spawn(async move { join(addr, &room).await })
    });
    let mut seen = std::collections::HashSet::new();
    let mut clients = Vec::new();
    for j in joins {
        let (c, welcome) = j.await.unwrap();
        assert!(seen.insert(peer_id(&welcome)), "id given twice: {welcome}");
        clients.push(c);
    }
    assert_eq!(seen.len(), 30);
}

#[tokio::test]
async fn a_room_is_full_for_every_instance_at_once() {
    let redis = Redis::start().await;
    let one = instance(&redis, |c| c.max_peers_per_room = 2).await;
    let two = instance(&redis, |c| c.max_peers_per_room = 2).await;
    let (_a, _) = join(one.addr, "small").await;
    let (_b, _) = join(two.addr, "small").await;
    for addr in [one.addr, two.addr] {
        let mut c = Client::connect(addr).await;
        c.send(json!({"type": "join", "version": 1, "room": "small", "kind": "browser"}))
            .await;
        assert_eq!(c.error_code().await, "room_full");
    }
}

#[tokio::test]
async fn a_dashboard_on_one_instance_sees_the_peers_and_stats_of_another() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    let (mut a, wa) = join(two.addr, "watched").await;
    let mut dash = Client::connect(one.addr).await;
    dash.send(json!({"type": "subscribe", "room": "watched"}))
        .await;
    let subscribed = dash.recv_type("subscribed").await;
    assert_eq!(subscribed["rooms"][0]["peers"][0]["id"], peer_id(&wa));
    let links = json!([{"peer": 99, "stats": {"rtt_ms": 12.5}}]);
    a.send(json!({"type": "stats", "links": links})).await;
    let stats = dash.recv_type("stats").await;
    assert_eq!(stats["peer_id"], peer_id(&wa));
    assert_eq!(stats["links"], links);
    let (_b, wb) = join(two.addr, "watched").await;
    let joined = dash.recv_type("peer_joined").await;
    assert_eq!(joined["peer"]["id"], peer_id(&wb));
}

#[tokio::test]
async fn a_killed_instances_peer_resumes_on_another_with_its_id_and_nobody_sees_it_leave() {
    let redis = Redis::start().await;
    let grace = ["--reconnect-grace-ms", "2000"];
    let (mut doomed, doomed_addr) = process(&redis, &grace).await;
    let (_survivor, addr) = process(&redis, &grace).await;
    let (mut a, wa) = join(addr, "failover").await;
    let (_b, wb) = join(doomed_addr, "failover").await;
    let (_c, wc) = join(doomed_addr, "failover").await;
    let (ida, idb, idc) = (peer_id(&wa), peer_id(&wb), peer_id(&wc));
    assert_eq!(a.recv_type("peer_joined").await["peer"]["id"], idb);
    assert_eq!(a.recv_type("peer_joined").await["peer"]["id"], idc);

    doomed.start_kill().unwrap();
    doomed.wait().await.unwrap();
    // b reconnects to the survivor with its token; c never comes back.
    let reconnect = Instant::now();
    let mut b = Client::connect(addr).await;
    let resumed = b
        .join_with(
            json!({"type": "join", "version": 1, "room": "failover", "kind": "browser",
            "resume": {"peer_id": idb, "token": wb["token"]}}),
        )
        .await;
    let took = reconnect.elapsed();
    println!("failover resume: welcome {took:?} after the reconnect");
    assert!(took < Duration::from_secs(2), "resume took {took:?}");
    assert_eq!(resumed["resumed"], true);
    assert_eq!(peer_id(&resumed), idb);
    assert_eq!(ids(&resumed), [ida, idc]);

    // The survivor finds the instance dead (≤ 3 s), waits out c's grace (2 s), then c is lost;
    // b, resumed in time, never left.
    let left = match a.next_event(Duration::from_secs(10)).await {
        Event::Json(v) => v,
        other => panic!("expected c's peer_left, got {other:?}"),
    };
    assert_eq!(left["type"], "peer_left");
    assert_eq!(left["peer_id"], idc);
    assert_eq!(left["reason"], "lost");
    a.assert_quiet(Duration::from_millis(500)).await;

    // Signals flow between a and the resumed b.
    b.send(json!({"type": "signal", "to": ida, "data": {"candidate": "x"}}))
        .await;
    assert_eq!(a.recv().await["from"], idb);
}

#[tokio::test]
async fn without_redis_joins_are_refused_and_healthz_says_so_until_it_is_back() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    let (mut a, wa) = join(one.addr, "outage").await;
    let (mut b, wb) = join(two.addr, "outage").await;
    a.recv_type("peer_joined").await;

    let port = redis.kill().await;
    healthz_says(one.addr, 503).await;
    assert_eq!(one.metric("ackwire_signal_broker_up").await, 0.0);
    let mut refused = Client::connect(one.addr).await;
    refused
        .send(json!({"type": "join", "version": 1, "room": "outage", "kind": "browser"}))
        .await;
    assert_eq!(refused.error_code().await, "broker_unavailable");
    // A signal to a peer on the other instance cannot go now: the sender is told.
    a.send(json!({"type": "signal", "to": peer_id(&wb), "data": {"candidate": "x"}}))
        .await;
    assert_eq!(a.error_code().await, "broker_unavailable");

    // Redis comes back empty: the instances put their peers back and joins work again.
    let _redis = Redis::start_on(port).await;
    healthz_says(one.addr, 200).await;
    healthz_says(two.addr, 200).await;
    let (_c, wc) = join(one.addr, "outage").await;
    let mut listed = ids(&wc);
    listed.sort_unstable();
    assert_eq!(listed, [peer_id(&wa), peer_id(&wb)]);
    assert!(peer_id(&wc) > peer_id(&wb), "ids are not handed out again");
    // The outage was news of nothing to a and b: the next they hear is c.
    for peer in [&mut a, &mut b] {
        let heard = peer.recv().await;
        assert_eq!(heard["type"], "peer_joined", "{heard}");
        assert_eq!(heard["peer"]["id"], peer_id(&wc));
    }
    // Signals cross instances again.
    a.send(json!({"type": "signal", "to": peer_id(&wb), "data": {"candidate": "y"}}))
        .await;
    assert_eq!(b.recv_type("signal").await["from"], peer_id(&wa));
}

#[tokio::test]
async fn the_all_rooms_dashboard_of_one_instance_sees_the_rooms_of_every_instance() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    // A room only `two` serves, with a native whose address dashboards must not see.
    let mut native = Client::connect(two.addr).await;
    let wn = native
        .join_with(
            json!({"type": "join", "version": 1, "room": "far", "kind": "native",
            "udp_addr": "192.0.2.7:40000"}),
        )
        .await;
    let mut dash = Client::connect(one.addr).await;
    dash.send(json!({"type": "subscribe"})).await;
    let subscribed = dash.recv_type("subscribed").await;
    assert_eq!(
        subscribed["rooms"],
        json!([{"room": "far", "peers": [{"id": peer_id(&wn), "kind": "native"}]}])
    );
    // What happens in it from now on, once.
    let (mut b, wb) = join(two.addr, "far").await;
    let joined = dash.recv().await;
    assert_eq!(joined["type"], "peer_joined", "{joined}");
    assert_eq!(
        joined["peer"],
        json!({"id": peer_id(&wb), "kind": "browser"})
    );
    let links = json!([{"peer": peer_id(&wn), "stats": {"rtt_ms": 3.5}}]);
    b.send(json!({"type": "stats", "links": links})).await;
    let stats = dash.recv().await;
    assert_eq!(stats["type"], "stats", "{stats}");
    assert_eq!(stats["links"], links);
    assert!(b.close().await);
    let left = dash.recv().await;
    assert_eq!(left["type"], "peer_left", "{left}");
    assert_eq!(left["peer_id"], peer_id(&wb));
    // A room `one` serves itself reaches the dashboard once, not once per subscription, and
    // so does its end.
    let (c, wc) = join(one.addr, "near").await;
    let joined = dash.recv().await;
    assert_eq!(joined["peer"]["id"], peer_id(&wc));
    assert!(c.close().await);
    let left = dash.recv().await;
    assert_eq!(
        (&left["type"], &left["peer_id"]),
        (&json!("peer_left"), &json!(peer_id(&wc)))
    );
    dash.assert_quiet(Duration::from_millis(300)).await;
}

/// pong at `version`, with two channels.
fn pong(version: u32) -> Value {
    json!({"id": "pong", "version": version,
        "channels": ["unreliable-sequenced", "reliable-ordered"]})
}

/// How refusals name [`pong`]`(2)`.
const PONG_V2: &str = "pong v2 (channels: unreliable-sequenced, reliable-ordered)";

/// A browser that joined `room` on `addr` declaring `app`, with its welcome.
async fn join_playing(addr: SocketAddr, room: &str, app: &Value) -> (Client, Value) {
    let mut c = Client::connect(addr).await;
    let welcome = c
        .join_with(
            json!({"type": "join", "version": 1, "room": room, "kind": "browser", "app": app}),
        )
        .await;
    (c, welcome)
}

/// A join of `room` on `addr` declaring `app`, refused with `app_mismatch`: its message.
async fn refused_playing(addr: SocketAddr, room: &str, app: &Value) -> String {
    let mut c = Client::connect(addr).await;
    c.send(json!({"type": "join", "version": 1, "room": room, "kind": "browser", "app": app}))
        .await;
    let error = c.recv().await;
    assert_eq!(error["code"], "app_mismatch", "{error}");
    error["message"].as_str().unwrap().to_owned()
}

/// Waits until `series` reads exactly `value` on `server` (the shared gauges are read from
/// Redis at each scrape).
async fn metric_settles(server: &Server, series: &str, value: f64) {
    server
        .metric_until(series, &format!("read {value}"), |v| v == value)
        .await
}

#[tokio::test]
async fn a_join_of_another_application_on_a_second_instance_is_refused_and_the_room_is_unchanged() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    let (mut a, wa) = join_playing(one.addr, "lobby", &pong(2)).await;
    let message = refused_playing(two.addr, "lobby", &pong(1)).await;
    assert!(message.contains(&format!("plays {PONG_V2}")), "{message}");
    assert!(message.contains("this program is pong v1 ("), "{message}");
    // Refused in the reservation: no place taken in Redis, no room kept on two.
    assert_eq!(two.metric("ackwire_signal_shared_peers").await, 1.0);
    assert_eq!(two.metric("ackwire_signal_rooms").await, 0.0);
    assert_eq!(
        two.metric("ackwire_signal_errors_total{code=\"app_mismatch\"}")
            .await,
        1.0
    );
    // The room heard nothing of it: the next a hears is a matching join on two.
    let (_c, wc) = join_playing(two.addr, "lobby", &pong(2)).await;
    assert_eq!(ids(&wc), [peer_id(&wa)]);
    let heard = a.recv().await;
    assert_eq!(heard["type"], "peer_joined", "{heard}");
    assert_eq!(heard["peer"]["id"], peer_id(&wc));
}

#[tokio::test]
async fn an_emptied_shared_room_drops_its_application_and_plays_the_next_first_members() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    let (a, _) = join_playing(one.addr, "lobby", &pong(2)).await;
    assert!(a.close().await);
    metric_settles(&two, "ackwire_signal_shared_rooms", 0.0).await;
    // Gone in the same step as the room.
    let mut conn = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let kept: bool = redis::AsyncCommands::exists(&mut conn, "ackwire:app:lobby")
        .await
        .unwrap();
    assert!(!kept, "the emptied room's application is still in Redis");

    let chess = json!({"id": "chess", "version": 1, "channels": ["reliable-ordered"]});
    let (mut b, _) = join_playing(two.addr, "lobby", &chess).await;
    let message = refused_playing(one.addr, "lobby", &pong(2)).await;
    assert!(
        message.contains("plays chess v1 (channels: reliable-ordered)"),
        "{message}"
    );
    let (_c, wc) = join_playing(one.addr, "lobby", &chess).await;
    assert_eq!(b.recv().await["peer"]["id"], peer_id(&wc));
}

#[tokio::test]
async fn dashboards_on_any_instance_see_the_application_a_shared_room_plays() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    // A room only `two` serves: `one` reads its application from Redis.
    let (_a, wa) = join_playing(two.addr, "far", &pong(2)).await;
    let far = json!({"room": "far", "app": pong(2),
        "peers": [{"id": peer_id(&wa), "kind": "browser"}]});
    let mut room_dash = Client::connect(one.addr).await;
    room_dash
        .send(json!({"type": "subscribe", "room": "far"}))
        .await;
    assert_eq!(
        room_dash.recv_type("subscribed").await["rooms"],
        json!([far])
    );
    let mut all = Client::connect(one.addr).await;
    all.send(json!({"type": "subscribe"})).await;
    assert_eq!(all.recv_type("subscribed").await["rooms"], json!([far]));

    // A room `one` watches while it is empty learns what its first member, on `two`, brings.
    let mut early = Client::connect(one.addr).await;
    early
        .send(json!({"type": "subscribe", "room": "later"}))
        .await;
    assert_eq!(
        early.recv_type("subscribed").await["rooms"],
        json!([{"room": "later", "peers": []}]),
        "no application before its first member"
    );
    let chess = json!({"id": "chess", "version": 1, "channels": ["reliable-ordered"]});
    let (_b, wb) = join_playing(two.addr, "later", &chess).await;
    assert_eq!(
        early.recv_type("peer_joined").await["peer"]["id"],
        peer_id(&wb)
    );
    let mut late = Client::connect(one.addr).await;
    late.send(json!({"type": "subscribe", "room": "later"}))
        .await;
    assert_eq!(
        late.recv_type("subscribed").await["rooms"],
        json!([{"room": "later", "app": chess,
            "peers": [{"id": peer_id(&wb), "kind": "browser"}]}])
    );
}

#[tokio::test]
async fn a_shared_room_keeps_its_application_when_redis_restarts_empty() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    let (_a, wa) = join_playing(one.addr, "lobby", &pong(2)).await;
    let port = redis.kill().await;
    healthz_says(one.addr, 503).await;
    let _redis = Redis::start_on(port).await;
    // Healthy again once `one` has put its peer, and the room's application, back.
    healthz_says(one.addr, 200).await;
    healthz_says(two.addr, 200).await;
    let message = refused_playing(two.addr, "lobby", &pong(1)).await;
    assert!(message.contains(&format!("plays {PONG_V2}")), "{message}");
    let (_c, wc) = join_playing(two.addr, "lobby", &pong(2)).await;
    assert_eq!(ids(&wc), [peer_id(&wa)]);
}

#[tokio::test]
async fn concurrent_first_joins_of_two_applications_on_two_instances_leave_one_application() {
    let redis = Redis::start().await;
    let one = instance(&redis, |_| {}).await;
    let two = instance(&redis, |_| {}).await;
    let joins = (0..12).map(|n| {
        let addr = [one.addr, two.addr][n % 2];
        let app = pong(1 + (n / 2 % 2) as u32);
        tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            c.send(json!({"type": "join", "version": 1, "room": "race", "kind": "browser", "app": app}))
                .await;
            let answer = c.recv().await;
            (app, answer, c)
        })
    });
    let mut winners = std::collections::HashSet::new();
    let mut clients = Vec::new();
    for join in joins {
        let (app, answer, c) = join.await.unwrap();
        match answer["type"].as_str() {
            Some("welcome") => {
                winners.insert(app["version"].as_u64().unwrap());
            }
            _ => assert_eq!(answer["code"], "app_mismatch", "{answer}"),
        }
        clients.push(c);
    }
    assert_eq!(winners.len(), 1, "both applications got in: {winners:?}");
}
