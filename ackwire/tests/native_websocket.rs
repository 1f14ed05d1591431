//! A native client that dials its host's WebSocket as a browser without WebRTC does
//! (`NativeOptions::dial_websocket`, for load generators and tests), on loopback through a
//! real signal server: both ends see the link over the WebSocket, reliable messages arrive
//! exactly once each way and unreliable ones arrive; when the host drops the connection the
//! client dials the WebSocket again, and no reliable message is lost or doubled across it.
#![cfg(all(feature = "rooms", not(target_arch = "wasm32")))]

mod common;

use std::time::Duration;

use common::dialing::{Got, RELIABLE, exchange_the_largest, host_and_client, until};
use common::{server, wait_for};

use ackwire::{Event, Failure, LinkInfo, LinkState, Role, Room, RoomConfig, TransportKind};

fn config(role: Role) -> RoomConfig {
    let mut config = common::dialing::config("ws-native-test", role);
    config.native.dial_websocket = role == Role::Client;
    config
}

/// Waits for the first link event `pick` takes, keeping the messages passed on the way.
async fn link_event<T>(
    room: &mut Room,
    got: &mut Got,
    what: &str,
    mut pick: impl FnMut(&LinkInfo) -> Option<T>,
) -> T {
    wait_for(room, what, |e| match e {
        Event::Message { channel, bytes, .. } => {
            got.push((channel, bytes));
            None
        }
        Event::Link(l) => pick(&l),
        _ => None,
    })
    .await
}

/// Waits for a link of `room`'s to connect again, keeping the messages passed on the way.
async fn linked_again(room: &mut Room, got: &mut Got) -> LinkInfo {
    link_event(room, got, "a connected link", |l| {
        (l.state == LinkState::Connected).then(|| l.clone())
    })
    .await
}

/// The reliable messages in `got`, in the order they arrived.
fn reliable(got: &[(u8, Vec<u8>)]) -> Vec<Vec<u8>> {
    got.iter()
        .filter(|(c, _)| *c == RELIABLE)
        .map(|(_, b)| b.clone())
        .collect()
}

/// `prefix0` .. `prefix{n-1}`.
fn numbered(prefix: &str, range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range.map(|i| format!("{prefix}{i}").into_bytes()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_client_that_dials_the_websocket_links_to_its_host_over_it() {
    let server = server().await;
    let url = format!("http://{}/room/ws-native", server.addr);
    let (mut host, mut client, to_host, to_client) = host_and_client(
        &url,
        config(Role::Host),
        config(Role::Client),
        TransportKind::WebSocket,
    )
    .await;
    // The largest unreliable message fits one WebSocket message, both ways.
    exchange_the_largest(&mut host, &mut client, &to_host, &to_client).await;

    client.close().await;
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_the_host_drops_is_dialed_again_and_no_reliable_message_is_lost_or_doubled() {
    let server = server().await;
    let url = format!("http://{}/room/ws-native-again", server.addr);
    // The host gives up on a silent link after a second, long before the client's 10 s: the
    // host is the one that drops the connection.
    let mut host_config = config(Role::Host);
    host_config.connection.idle_timeout = Duration::from_secs(1);
    let (mut host, mut client, to_host, to_client) = host_and_client(
        &url,
        host_config,
        config(Role::Client),
        TransportKind::WebSocket,
    )
    .await;
    let (mut at_host, mut at_client) = (Vec::new(), Vec::new());

    // Before: both ways, confirmed.
    let up = numbered("up", 0..30);
    let down = numbered("down", 0..30);
    for i in 0..10 {
        client.send(to_host.peer, RELIABLE, &up[i]).unwrap();
        host.send(to_client.peer, RELIABLE, &down[i]).unwrap();
    }
    until(&mut host, &mut at_host, &up[9]).await;
    until(&mut client, &mut at_client, &down[9]).await;

    // The host's network goes: what both send now is kept for the next connection.
    host.set_outage(true);
    for i in 10..20 {
        client.send(to_host.peer, RELIABLE, &up[i]).unwrap();
        host.send(to_client.peer, RELIABLE, &down[i]).unwrap();
    }
    // The host drops the silent link's connection; the client hears it closed (or the
    // host's goodbye on it), not its own timeout.
    let why = link_event(&mut client, &mut at_client, "the link lost", |l| {
        (l.state == LinkState::Lost).then(|| l.reason.clone())
    })
    .await;
    assert!(
        matches!(why, Some(Failure::ChannelClosed | Failure::PeerClosed)),
        "{why:?}"
    );
    let host_why = link_event(&mut host, &mut at_host, "the host's link lost", |l| {
        (l.state == LinkState::Lost).then(|| l.reason.clone())
    })
    .await;
    assert!(
        matches!(host_why, Some(Failure::IdleTimeout(_))),
        "{host_why:?}"
    );
    host.set_outage(false);

    // The client dials the WebSocket again, and the link comes back on it.
    let again = linked_again(&mut client, &mut at_client).await;
    assert_eq!(again.transport, TransportKind::WebSocket, "{again:?}");
    assert_eq!(again.peer, to_host.peer);
    let again = linked_again(&mut host, &mut at_host).await;
    assert_eq!(again.transport, TransportKind::WebSocket, "{again:?}");
    assert_eq!(again.peer, to_client.peer);

    // After: every reliable message of the three phases arrived once, in order.
    for i in 20..30 {
        client.send(to_host.peer, RELIABLE, &up[i]).unwrap();
        host.send(to_client.peer, RELIABLE, &down[i]).unwrap();
    }
    until(&mut host, &mut at_host, &up[29]).await;
    until(&mut client, &mut at_client, &down[29]).await;
    assert_eq!(reliable(&at_host), up);
    assert_eq!(reliable(&at_client), down);

    client.close().await;
    host.close().await;
}
