//! A host room of natives on a real signalling server on 127.0.0.1: `ackwire-peer host` and
//! three `ackwire-peer join --role client`. Every client links to the host alone (raw UDP),
//! the host relays each client's dot and chat to the others with its origin, exactly once;
//! when the host leaves the clients hear it, wait, and link to the next host without joining
//! again.

mod room_support;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;

use room_support::{Peer, Server, blocking};

const LONG: Duration = Duration::from_secs(15);

/// The links in a stats line.
fn links(line: &Value) -> &[Value] {
    line["links"].as_array().map_or(&[], Vec::as_slice)
}

/// A stats line where this client's one link is connected, to `host`.
fn linked_to(line: &Value, host: u64) -> bool {
    line["type"] == "stats"
        && matches!(links(line), [l] if l["peer"] == host && l["state"] == "connected")
}

/// Relayed chat lines with `text` this peer printed so far.
fn relayed_chats(peer: &Peer, text: &str) -> Vec<u64> {
    peer.seen
        .iter()
        .filter(|l| l["type"] == "chat" && l["text"] == text)
        .filter_map(|l| l["origin"].as_u64())
        .collect()
}

/// Waits for a line matching `pred` unless one came already.
fn seen_or_wait(peer: &mut Peer, what: &str, pred: impl Fn(&Value) -> bool) {
    if !peer.seen.iter().any(&pred) {
        peer.wait_for(what, LONG, pred);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn natives_join_a_host_room_link_to_the_host_alone_and_it_relays_dots_and_chat_once() {
    let server = Server::start("127.0.0.1:0".parse().unwrap()).await;
    let url = server.room_url("arena");
    blocking(move || {
        let mut host = Peer::host(&url, &[]);
        let host_id = host.peer_id();
        // One client after the other, each linked before the next comes: the host relays a
        // greeting to the clients linked when it arrives.
        let mut clients: Vec<(Peer, u64)> = Vec::new();
        for _ in 0..3 {
            let mut c = Peer::join_with(&url, &["--role", "client"]);
            let id = c.peer_id();
            c.wait_for("one link, to the host", LONG, |l| linked_to(l, host_id));
            clients.push((c, id));
        }
        let ids: Vec<u64> = clients.iter().map(|(_, id)| *id).collect();
        host.wait_for("a link to every client", LONG, |l| {
            l["type"] == "stats"
                && links(l).len() == 3
                && links(l).iter().all(|l| {
                    l["state"] == "connected" && ids.contains(&l["peer"].as_u64().unwrap_or(0))
                })
        });
        for (i, (c, me)) in clients.iter_mut().enumerate() {
            // The host's own greeting, origin 0.
            let host_greeting = format!("hello from native host {host_id}");
            seen_or_wait(c, "the host's greeting", |l| {
                l["type"] == "chat" && l["text"] == host_greeting.as_str() && l["origin"] == 0
            });
            // Each later client's greeting, relayed with its origin.
            for later in &ids[i + 1..] {
                let text = format!("hello from native peer {later}");
                seen_or_wait(c, "a relayed greeting", |l| {
                    l["type"] == "chat" && l["text"] == text.as_str()
                });
            }
            // Two moving dots, relayed from the two other clients.
            let first = c.wait_for("two relayed dots", LONG, |l| {
                l["type"] == "stats" && l["relayed"].as_object().is_some_and(|r| r.len() == 2)
            });
            c.wait_for("the relayed dots moving", LONG, |l| {
                l["type"] == "stats"
                    && l["relayed"].as_object().is_some_and(|r| r.len() == 2)
                    && l["relayed"] != first["relayed"]
            });
            // Exactly once each, with distinct non-zero origins; nothing from earlier
            // clients (their greetings went out before this one was there).
            let origins: Vec<u64> = ids
                .iter()
                .filter(|id| *id != me)
                .flat_map(|id| relayed_chats(c, &format!("hello from native peer {id}")))
                .collect();
            assert_eq!(
                origins.len(),
                2 - i,
                "client {me}: each later greeting once"
            );
            assert_eq!(
                origins.iter().collect::<HashSet<_>>().len(),
                origins.len(),
                "{origins:?}"
            );
            assert!(origins.iter().all(|o| *o != 0));
            assert_eq!(relayed_chats(c, &host_greeting), [0]);
        }

        // The host leaves: every client hears it, keeps its signalling, and waits.
        host.terminate();
        for (c, _) in &mut clients {
            c.wait_for("the host left", LONG, |l| {
                l["type"] == "peer-left" && l["role"] == "host" && l["reason"] == "left"
            });
            c.wait_for("no link while no host", LONG, |l| {
                l["type"] == "stats" && links(l).is_empty() && l["signalling"] == "joined"
            });
        }
        // A host comes back: every client links to it within 5 s, without joining again.
        let mut back = Peer::host(&url, &[]);
        let back_id = back.peer_id();
        for (c, _) in &mut clients {
            c.wait_for("a link to the new host", Duration::from_secs(5), |l| {
                linked_to(l, back_id)
            });
            let welcomes = c.seen.iter().filter(|l| l["type"] == "welcome").count();
            assert_eq!(welcomes, 1, "a client joins once");
        }
        // A second host is refused for good, and the star stands.
        let mut second = Peer::host(&url, &[]);
        second.wait_for("host_taken", LONG, |l| {
            l["type"] == "refused" && l["code"] == "host_taken"
        });
        back.wait_for("still three clients", LONG, |l| {
            l["type"] == "stats" && links(l).len() == 3
        });
        drop((clients, back, second, host));
    })
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mesh_peer_cannot_join_a_host_room_nor_a_client_a_mesh() {
    let server = Server::start("127.0.0.1:0".parse().unwrap()).await;
    let hosted = server.room_url("hosted");
    let mesh = server.room_url("mesh");
    blocking(move || {
        let mut host = Peer::host(&hosted, &[]);
        host.peer_id();
        let mut peer = Peer::join(&hosted);
        peer.wait_for("topology_mismatch", LONG, |l| {
            l["type"] == "refused" && l["code"] == "topology_mismatch"
        });
        let mut first = Peer::join(&mesh);
        first.peer_id();
        let mut client = Peer::join_with(&mesh, &["--role", "client"]);
        client.wait_for("topology_mismatch", LONG, |l| {
            l["type"] == "refused" && l["code"] == "topology_mismatch"
        });
        // Refused for good: both stop by themselves.
        for p in [&mut peer, &mut client] {
            p.wait_for("left", LONG, |l| l["type"] == "left");
        }
    })
    .await;
    server.stop().await;
}
