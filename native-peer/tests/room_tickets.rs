//! `ackwire-peer join --ticket` on a real signalling server that requires join tickets: a
//! native with a ticket for its room is welcomed; one without, or with another room's, is
//! refused for good and exits 1; a stranger can neither take a named host's seat across its
//! crash nor get a link from the clients that pinned that host.

mod room_support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ackwire::Role;
use ackwire::ticket::{self, Claims};
use room_support::{Peer, Server, blocking};

const LONG: Duration = Duration::from_secs(15);
const SECRET: &str = "a test secret of 32 bytes or more, shared with the backend";

/// What the game's backend hands out: the demo's application, an hour's validity.
fn ticket(room: &str, identity: &str) -> String {
    ticket_as(room, Role::Peer, identity)
}

/// The same for `role`.
fn ticket_as(room: &str, role: Role, identity: &str) -> String {
    let expires = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let app = Some(ackwire_peer::room::demo::APP_ID);
    let claims = Claims::new(room, role, identity, app, expires).unwrap();
    ticket::mint(SECRET.as_bytes(), &claims)
}

/// A signal server requiring tickets, its secret in the file `name` of the tests' scratch
/// directory.
async fn ticketed_server(name: &str) -> Server {
    ticketed_server_with(name, |_| {}).await
}

/// The same, changed by `tweak`.
async fn ticketed_server_with(
    name: &str,
    tweak: impl FnOnce(&mut ackwire_signal::config::Config),
) -> Server {
    let secret = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&secret, SECRET).unwrap();
    let mut config = ackwire_signal::config::Config {
        ticket_secret_file: Some(secret),
        ..ackwire_signal::config::Config::default()
    };
    tweak(&mut config);
    Server::start_with("127.0.0.1:0".parse().unwrap(), config).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_joins_with_its_ticket_and_one_without_is_refused_and_exits() {
    let server = ticketed_server("room-tickets-secret").await;
    let url = server.room_url("lobby");
    blocking(move || {
        let good = ticket("lobby", "player-1");
        let mut a = Peer::join_with(&url, &["--ticket", &good]);
        a.peer_id();
        let elsewhere = ticket("other", "player-2");
        for (extra, code) in [
            (&[][..], "ticket_missing"),
            (&["--ticket", elsewhere.as_str()][..], "ticket_wrong_room"),
        ] {
            let mut refused = Peer::join_with(&url, extra);
            refused.wait_for(code, LONG, |l| l["type"] == "refused" && l["code"] == code);
            assert_eq!(refused.exit_code(LONG), Some(1), "{code}");
        }
    })
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_whose_identity_joins_again_elsewhere_stops_and_exits() {
    let server = ticketed_server("room-tickets-secret-2").await;
    let url = server.room_url("lobby");
    blocking(move || {
        let same = ticket("lobby", "player-1");
        let mut first = Peer::join_with(&url, &["--ticket", &same]);
        first.peer_id();
        // The same player's program elsewhere: it takes the place, and the first one does not
        // take it back (they would replace each other in turn).
        let mut second = Peer::join_with(&url, &["--ticket", &same]);
        second.peer_id();
        first.wait_for("stopped", LONG, |l| {
            l["type"] == "signalling"
                && l["state"] == "closed"
                && l["detail"].as_str().is_some_and(|d| d.contains("4001"))
        });
        assert_eq!(first.exit_code(LONG), Some(1));
        // The second is the room's member still, after the first has gone.
        second.wait_for("still joined", LONG, |l| {
            l["type"] == "stats" && l["signalling"] == "joined"
        });
    })
    .await;
    server.stop().await;
}

/// A stats line where this client's one link is connected, to `host`.
fn linked_to(line: &serde_json::Value, host: u64) -> bool {
    line["type"] == "stats"
        && matches!(line["links"].as_array().map(Vec::as_slice), Some([l]) if l["peer"] == host && l["state"] == "connected")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_cannot_take_a_named_hosts_seat_nor_a_link_from_its_clients() {
    // Players join without an account; only the game's servers get (host) tickets.
    let server = ticketed_server_with("room-tickets-secret-3", |c| {
        c.tickets_for = ackwire_signal::tickets::TicketScope::Hosts;
        c.reconnect_grace = Duration::from_secs(60);
    })
    .await;
    let url = server.room_url("arena");
    let addr = server.addr;
    blocking(move || {
        let seat = ticket_as("arena", Role::Host, "host-a");
        let mut host = Peer::host(&url, &["--ticket", &seat]);
        let host_id = host.peer_id();
        let mut client = Peer::join_with(&url, &["--role", "client"]);
        client.peer_id();
        client.wait_for("a link to host-a", LONG, |l| linked_to(l, host_id));
        // A stranger with no ticket cannot host.
        let mut bare = Peer::host(&url, &[]);
        bare.wait_for("ticket_missing", LONG, |l| {
            l["type"] == "refused" && l["code"] == "ticket_missing"
        });
        assert_eq!(bare.exit_code(LONG), Some(1));
        // host-a's process dies. In its grace, a stranger holding a host ticket of its own
        // asks for the seat: it is host-a's.
        host.crash();
        Server::metric_becomes(addr, "ackwire_signal_connections", 1.0);
        let theirs = ticket_as("arena", Role::Host, "stranger");
        let mut stranger = Peer::host(&url, &["--ticket", &theirs]);
        stranger.wait_for("host_taken", LONG, |l| {
            l["type"] == "refused" && l["code"] == "host_taken"
        });
        assert_eq!(stranger.exit_code(LONG), Some(1));
        // host-a, restarted, takes it back at once, and the client links with it again.
        let mut back = Peer::host(&url, &["--ticket", &seat]);
        let back_id = back.peer_id();
        client.wait_for("a link to host-a again", LONG, |l| linked_to(l, back_id));
        // host-a leaves for good: the seat is free, and the stranger takes it; the client,
        // holding its host to host-a, makes no link with it.
        back.terminate();
        assert_eq!(back.exit_code(LONG), Some(0));
        let mut usurper = Peer::host(&url, &["--ticket", &theirs]);
        let usurper_id = usurper.peer_id();
        let refused = client.wait_for("host-refused", LONG, |l| l["type"] == "host-refused");
        assert_eq!(refused["peer_id"], usurper_id, "{refused}");
        assert_eq!(refused["identity"], "stranger");
        assert_eq!(refused["expected"], "host-a");
        client.wait_for("no link, still joined", LONG, |l| {
            l["type"] == "stats"
                && l["signalling"] == "joined"
                && l["links"].as_array().is_some_and(Vec::is_empty)
        });
        usurper.wait_for("no client linked with it", LONG, |l| {
            l["type"] == "stats"
                && l["links"]
                    .as_array()
                    .is_some_and(|links| links.iter().all(|k| k["state"] != "connected"))
        });
    })
    .await;
    server.stop().await;
}
