//! A native client that dials its host's WebTransport as a browser does
//! (`NativeOptions::dial_webtransport`, for load generators and tests), on loopback through a
//! real signal server: both ends see the link over WebTransport, a reliable message each way
//! arrives exactly once, and the largest unreliable message the room allows crosses each way
//! in one datagram.
#![cfg(all(feature = "rooms", not(target_arch = "wasm32")))]

mod common;

use common::{server, wait_for};

use ackwire::{
    App, ChannelKind, Event, LinkInfo, LinkState, Role, Room, RoomConfig, TransportKind,
};

const RELIABLE: u8 = 0;
const UNRELIABLE: u8 = 1;

fn config(role: Role) -> RoomConfig {
    let app = App::new(
        "wt-native-test",
        1,
        [ChannelKind::ReliableOrdered, ChannelKind::Unreliable],
    );
    let mut config = RoomConfig::new(app).with_role(role);
    config.native.bind = "127.0.0.1:0".parse().unwrap();
    config.native.dial_webtransport = role == Role::Client;
    config
}

async fn linked(room: &mut Room) -> LinkInfo {
    wait_for(room, "a connected link", |e| match e {
        Event::Link(l) if l.state == LinkState::Connected => Some(l),
        _ => None,
    })
    .await
}

/// The messages `room` takes until `last` arrives on the reliable channel: (channel, bytes).
async fn until(room: &mut Room, last: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut got = Vec::new();
    loop {
        let (channel, bytes) = wait_for(room, "a message", |e| match e {
            Event::Message { channel, bytes, .. } => Some((channel, bytes)),
            _ => None,
        })
        .await;
        let done = channel == RELIABLE && bytes == last;
        got.push((channel, bytes));
        if done {
            return got;
        }
    }
}

fn count(got: &[(u8, Vec<u8>)], channel: u8, bytes: &[u8]) -> usize {
    got.iter()
        .filter(|(c, b)| *c == channel && b == bytes)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_client_that_dials_links_to_its_host_over_webtransport() {
    let server = server().await;
    let url = format!("http://{}/room/wt-native", server.addr);
    let mut host = Room::join(&url, config(Role::Host)).unwrap();
    wait_for(&mut host, "the host's welcome", |e| {
        matches!(e, Event::Joined { .. }).then_some(())
    })
    .await;
    let mut client = Room::join(&url, config(Role::Client)).unwrap();
    let to_host = linked(&mut client).await;
    assert_eq!(
        to_host.transport,
        TransportKind::WebTransport,
        "{to_host:?}"
    );
    assert_eq!(Some(to_host.peer), client.host());
    let to_client = linked(&mut host).await;
    assert_eq!(
        to_client.transport,
        TransportKind::WebTransport,
        "{to_client:?}"
    );

    // The largest unreliable message fits one WebTransport datagram, both ways.
    let max = client.max_message_size(UNRELIABLE).expect("a size");
    assert_eq!(host.max_message_size(UNRELIABLE), Some(max));
    let big_up = vec![0xA5u8; max];
    let big_down = vec![0x5Au8; max];

    client.send(to_host.peer, RELIABLE, b"input").unwrap();
    client.send(to_host.peer, UNRELIABLE, &big_up).unwrap();
    client.send(to_host.peer, RELIABLE, b"last input").unwrap();
    let at_host = until(&mut host, b"last input").await;
    assert_eq!(count(&at_host, RELIABLE, b"input"), 1, "exactly once");
    assert_eq!(
        count(&at_host, UNRELIABLE, &big_up),
        1,
        "the largest, whole"
    );

    host.send(to_client.peer, RELIABLE, b"state").unwrap();
    host.send(to_client.peer, UNRELIABLE, &big_down).unwrap();
    host.send(to_client.peer, RELIABLE, b"last state").unwrap();
    let at_client = until(&mut client, b"last state").await;
    assert_eq!(count(&at_client, RELIABLE, b"state"), 1, "exactly once");
    assert_eq!(
        count(&at_client, UNRELIABLE, &big_down),
        1,
        "the largest, whole"
    );
    assert_eq!(client.send_failures(), 0);
    assert_eq!(host.send_failures(), 0);

    client.close().await;
    host.close().await;
}
