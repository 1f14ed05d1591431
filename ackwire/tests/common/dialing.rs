//! A native client that dials its host's WebTransport or WebSocket as a browser does
//! (`NativeOptions::dial_webtransport`, `dial_websocket`): a game of two channels, a host and
//! a client linked over the service, and what crosses the link.

use ackwire::{App, ChannelKind, Event, LinkInfo, PeerId, Role, Room, RoomConfig, TransportKind};

use super::{joined, linked, wait_for};

/// The game's channels.
pub(crate) const RELIABLE: u8 = 0;
pub(crate) const UNRELIABLE: u8 = 1;

/// A room of the game `app` on loopback, in `role` (which service a client dials is the
/// test's).
pub(crate) fn config(app: &str, role: Role) -> RoomConfig {
    let app = App::new(
        app,
        1,
        [ChannelKind::ReliableOrdered, ChannelKind::Unreliable],
    );
    let mut config = RoomConfig::new(app).with_role(role);
    config.native.bind = "127.0.0.1:0".parse().unwrap();
    config
}

/// Messages a room took, in order: (channel, bytes).
pub(crate) type Got = Vec<(u8, Vec<u8>)>;

/// Takes `room`'s messages into `got` until `last` arrives on the reliable channel.
pub(crate) async fn until(room: &mut Room, got: &mut Got, last: &[u8]) {
    loop {
        let (channel, bytes) = wait_for(room, "a message", |e| match e {
            Event::Message { channel, bytes, .. } => Some((channel, bytes)),
            _ => None,
        })
        .await;
        let done = channel == RELIABLE && bytes == last;
        got.push((channel, bytes));
        if done {
            return;
        }
    }
}

/// How many times `bytes` came on `channel`.
fn count(got: &[(u8, Vec<u8>)], channel: u8, bytes: &[u8]) -> usize {
    got.iter()
        .filter(|(c, b)| *c == channel && b == bytes)
        .count()
}

/// A host, and a client linked to it over `transport` (both ends say so): the host joins
/// with `host`, the client with `client`.
pub(crate) async fn host_and_client(
    url: &str,
    host: RoomConfig,
    client: RoomConfig,
    transport: TransportKind,
) -> (Room, Room, LinkInfo, LinkInfo) {
    let mut host = Room::join(url, host).unwrap();
    joined(&mut host).await;
    let mut client = Room::join(url, client).unwrap();
    let to_host = linked(&mut client).await;
    assert_eq!(to_host.transport, transport, "{to_host:?}");
    assert_eq!(Some(to_host.peer), client.host());
    let to_client = linked(&mut host).await;
    assert_eq!(to_client.transport, transport, "{to_client:?}");
    (host, client, to_host, to_client)
}

/// A reliable message each way arrives exactly once, and the largest unreliable message the
/// room allows arrives whole (one datagram, one WebSocket message), each way; nothing is
/// dropped on the way out.
pub(crate) async fn exchange_the_largest(
    host: &mut Room,
    client: &mut Room,
    to_host: &LinkInfo,
    to_client: &LinkInfo,
) {
    let max = client.max_message_size(UNRELIABLE).expect("a size");
    assert_eq!(host.max_message_size(UNRELIABLE), Some(max));
    let (big_up, big_down) = (vec![0xA5; max], vec![0x5A; max]);
    let up: [&[u8]; 3] = [b"input", &big_up, b"last input"];
    across(client, host, to_host.peer, up).await;
    let down: [&[u8]; 3] = [b"state", &big_down, b"last state"];
    across(host, client, to_client.peer, down).await;
    assert_eq!(client.send_failures(), 0);
    assert_eq!(host.send_failures(), 0);
}

/// `from` sends `to` (its `peer`) a reliable message, an unreliable one and a last reliable
/// one: the first arrives exactly once, the unreliable one whole.
async fn across(from: &mut Room, to: &mut Room, peer: PeerId, [first, big, last]: [&[u8]; 3]) {
    from.send(peer, RELIABLE, first).unwrap();
    from.send(peer, UNRELIABLE, big).unwrap();
    from.send(peer, RELIABLE, last).unwrap();
    let mut got = Vec::new();
    until(to, &mut got, last).await;
    assert_eq!(count(&got, RELIABLE, first), 1, "exactly once");
    assert_eq!(count(&got, UNRELIABLE, big), 1, "the largest, whole");
}
