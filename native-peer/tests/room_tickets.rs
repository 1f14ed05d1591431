//! `ackwire-peer join --ticket` on a real signalling server that requires join tickets: a
//! native with a ticket for its room is welcomed; one without, or with another room's, is
//! refused for good and exits 1.

mod room_support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ackwire::Role;
use ackwire::ticket::{self, Claims};
use room_support::{Peer, Server, blocking};

const LONG: Duration = Duration::from_secs(15);
const SECRET: &str = "a test secret of 32 bytes or more, shared with the backend";

/// What the game's backend hands out: the demo's application, an hour's validity.
fn ticket(room: &str, identity: &str) -> String {
    let expires = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let app = Some(ackwire_peer::room::demo::APP_ID);
    let claims = Claims::new(room, Role::Peer, identity, app, expires).unwrap();
    ticket::mint(SECRET.as_bytes(), &claims)
}

/// A signal server requiring tickets, its secret in the file `name` of the tests' scratch
/// directory.
async fn ticketed_server(name: &str) -> Server {
    let secret = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&secret, SECRET).unwrap();
    let config = ackwire_signal::config::Config {
        ticket_secret_file: Some(secret),
        ..ackwire_signal::config::Config::default()
    };
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
