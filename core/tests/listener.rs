//! One listener serving several connectors, the way a UDP server driver uses it.

use std::collections::HashMap;
use std::time::Duration;

use ackwire_core::{
    Connection, ConnectionConfig, ConnectionError, ConnectionEvent, ConnectionState,
    DisconnectReason, HandshakeError, Listener, ListenerError, ListenerSendError, ReceiveError,
};

const STEP: Duration = Duration::from_millis(5);

struct World {
    now: Duration,
    listener: Listener,
    clients: HashMap<Vec<u8>, Connection>,
    server_events: Vec<(Vec<u8>, ConnectionEvent)>,
    client_events: Vec<(Vec<u8>, ConnectionEvent)>,
}

impl World {
    fn new(addresses: &[&[u8]]) -> World {
        let config = ConnectionConfig::default();
        World {
            now: Duration::ZERO,
            listener: Listener::new(config.clone(), [5; 32]).unwrap(),
            clients: addresses
                .iter()
                .map(|a| {
                    (
                        a.to_vec(),
                        Connection::connect(config.clone(), Duration::ZERO).unwrap(),
                    )
                })
                .collect(),
            server_events: Vec::new(),
            client_events: Vec::new(),
        }
    }

    /// A perfect, instant network for `span`, stepped every 5 ms.
    fn run_for(&mut self, span: Duration) {
        let end = self.now + span;
        let (mut buf, mut reply) = ([0u8; 1200], [0u8; 64]);
        while self.now < end {
            let now = self.now;
            for (address, client) in &mut self.clients {
                while let Some(len) = client.poll_transmit(now, &mut buf).unwrap() {
                    match self.listener.receive(now, address, &buf[..len], &mut reply) {
                        Ok(Some(reply_len)) => client.receive(now, &reply[..reply_len]).unwrap(),
                        Ok(None) => {}
                        // The redundant copies of a disconnect reach a closed connection.
                        Err(ListenerError::Connection(ConnectionError::Unexpected {
                            packet: "disconnect",
                            state: ConnectionState::Closed,
                        })) => {}
                        // Data still in flight when the listener closed the connection.
                        Err(ListenerError::Connection(ConnectionError::NotConnected(
                            ConnectionState::Closing | ConnectionState::Closed,
                        ))) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                while let Some(event) = client.poll_event() {
                    self.client_events.push((address.clone(), event));
                }
            }
            while let Some((to, len)) = self.listener.poll_transmit(now, &mut buf).unwrap() {
                if let Some(client) = self.clients.get_mut(to) {
                    // A closed client refuses late packets; that is fine here.
                    let _ = client.receive(now, &buf[..len]);
                }
            }
            while let Some(polled) = self.listener.poll_event() {
                self.server_events
                    .push((polled.address.into(), polled.event));
            }
            self.now += STEP;
        }
    }
}

/// Message bytes among `events` that concern the peer at `address`.
fn messages_of(events: &[(Vec<u8>, ConnectionEvent)], address: &[u8]) -> Vec<Vec<u8>> {
    events
        .iter()
        .filter_map(|(peer, e)| match e {
            ConnectionEvent::Message { bytes, .. } if peer == address => Some(bytes.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn one_listener_serves_many_connectors_and_routes_by_address() {
    let addresses: [&[u8]; 3] = [b"10.0.0.1:1", b"10.0.0.2:1", b"10.0.0.2:2"];
    let mut world = World::new(&addresses);
    world.run_for(Duration::from_secs(1));
    assert_eq!(world.listener.connections().count(), 3);
    for address in addresses {
        let id = world.listener.connection(address).unwrap().connection_id();
        assert_eq!(world.clients[address].connection_id(), id);
        world
            .clients
            .get_mut(address)
            .unwrap()
            .send(1, address)
            .unwrap();
        world
            .listener
            .send(address, 1, &[b"to ", address].concat())
            .unwrap();
    }
    world.run_for(Duration::from_secs(1));
    for address in addresses {
        let got = messages_of(&world.server_events, address);
        assert_eq!(got, [address.to_vec()], "each message from its own sender");
        let replies = messages_of(&world.client_events, address);
        assert_eq!(replies, [[b"to ", address].concat()]);
    }
}

#[test]
fn a_closed_peer_is_dropped_after_its_last_event() {
    let addresses: [&[u8]; 2] = [b"a", b"b"];
    let mut world = World::new(&addresses);
    world.run_for(Duration::from_secs(1));
    world.clients.get_mut(&b"a"[..]).unwrap().close();
    world.run_for(Duration::from_secs(1));
    assert!(world.server_events.iter().any(|(from, e)| from == b"a"
        && *e
            == ConnectionEvent::Disconnected {
                reason: DisconnectReason::ClosedByPeer
            }));
    assert!(world.listener.connection(b"a").is_none());
    assert!(world.listener.connection(b"b").is_some());
    assert_eq!(
        world.listener.send(b"a", 1, b"gone"),
        Err(ListenerSendError::UnknownAddress)
    );
}

#[test]
fn a_data_packet_from_an_unknown_address_is_refused() {
    let mut world = World::new(&[b"a"]);
    world.run_for(Duration::from_secs(1));
    let mut endpoint =
        ackwire_core::Endpoint::new(ackwire_core::Config::default(), Duration::ZERO).unwrap();
    let mut data = [0u8; 64];
    let t = endpoint
        .poll_transmit(world.now, &mut data)
        .unwrap()
        .unwrap();
    assert_eq!(
        world
            .listener
            .receive(world.now, b"stranger", &data[..t.len], &mut [0u8; 64]),
        Err(ListenerError::Handshake(HandshakeError::UnknownConnection))
    );
    assert_eq!(world.listener.connections().count(), 1);
}

#[test]
fn a_full_listener_refuses_new_peers_without_answering_and_keeps_its_own() {
    let mut world = World::new(&[b"a"]);
    world.listener = Listener::new(ConnectionConfig::default(), [5; 32])
        .unwrap()
        .with_max_connections(1);
    world.run_for(Duration::from_secs(1));
    assert_eq!(world.listener.len(), 1);
    let request = first_connect_request(world.now);
    let mut reply = [0u8; 64];
    assert_eq!(
        world
            .listener
            .receive(world.now, b"b", &request, &mut reply),
        Err(ListenerError::Full(1)),
        "no challenge while full"
    );
    assert!(world.listener.connection(b"b").is_none());
    // The connection it has is undisturbed.
    world
        .clients
        .get_mut(&b"a"[..])
        .unwrap()
        .send(1, b"still here")
        .unwrap();
    world.run_for(Duration::from_secs(1));
    assert_eq!(
        messages_of(&world.server_events, b"a"),
        [b"still here".to_vec()]
    );
}

#[test]
fn close_all_tells_every_peer_and_empties_the_listener() {
    let addresses: [&[u8]; 3] = [b"a", b"b", b"c"];
    let mut world = World::new(&addresses);
    world.run_for(Duration::from_secs(1));
    let before = world.listener.counters();
    assert!(before.packets_sent > 0);
    world.listener.close_all();
    world.run_for(Duration::from_millis(50));
    assert!(world.listener.is_empty());
    for address in addresses {
        assert!(world.client_events.iter().any(|(peer, e)| peer == address
            && *e
                == ConnectionEvent::Disconnected {
                    reason: DisconnectReason::ClosedByPeer
                }));
        assert!(world.server_events.iter().any(|(peer, e)| peer == address
            && *e
                == ConnectionEvent::Disconnected {
                    reason: DisconnectReason::Closed
                }));
    }
    // The dropped connections' counters stay in the listener's totals.
    let after = world.listener.counters();
    assert!(
        after.packets_sent >= before.packets_sent,
        "{after:?} {before:?}"
    );
    assert_eq!(
        world.listener.poll_timeout(),
        None,
        "nothing left to wake up for"
    );
}

#[test]
fn thousands_of_idle_connections_each_send_at_their_own_pace() {
    let addresses: Vec<Vec<u8>> = (0..2000u32).map(|i| i.to_be_bytes().to_vec()).collect();
    let refs: Vec<&[u8]> = addresses.iter().map(Vec::as_slice).collect();
    let mut world = World::new(&refs);
    // All 2000 connect within one cookie lifetime: the replay cache must remember them all
    // (with the default 1024 the rest would be told `Busy` until cookies expire).
    let config = ConnectionConfig::default().with_replay_cache_len(2000);
    world.listener = Listener::new(config, [5; 32]).unwrap();
    world.run_for(Duration::from_secs(2));
    assert_eq!(world.listener.len(), 2000);
    let sent_before: Vec<u64> = refs
        .iter()
        .map(|a| {
            world
                .listener
                .connection(a)
                .unwrap()
                .stats()
                .counters
                .packets_sent
        })
        .collect();
    world.run_for(Duration::from_secs(1));
    // Bad mode paces at 10 packets/s: each connection sent its ~10, none was starved.
    for (address, before) in refs.iter().zip(sent_before) {
        let sent = world
            .listener
            .connection(address)
            .unwrap()
            .stats()
            .counters
            .packets_sent;
        assert!((9..=11).contains(&(sent - before)), "{sent} - {before}");
    }
}

#[test]
fn an_address_longer_than_the_table_holds_is_refused_with_its_length() {
    let mut world = World::new(&[]);
    let long = [b'x'; ackwire_core::MAX_ADDRESS_LEN + 1];
    let mut client = Connection::connect(ConnectionConfig::default(), world.now).unwrap();
    let mut buf = [0u8; 1200];
    let len = client.poll_transmit(world.now, &mut buf).unwrap().unwrap();
    assert_eq!(
        world
            .listener
            .receive(world.now, &long, &buf[..len], &mut [0u8; 64]),
        Err(ListenerError::AddressTooLong(
            ackwire_core::MAX_ADDRESS_LEN + 1
        ))
    );
    assert!(world.listener.is_empty());
}

/// A program that meets the listener again from the same address (it restarted, or forgot
/// the server and came back) gets a new connection, and packets of the old one may still be
/// on their way. Each plain packet ends with its connection's tag, so the new connection
/// refuses a late one instead of taking in its sequence number, acks and message.
#[test]
fn a_late_packet_of_an_earlier_connection_from_the_same_address_is_refused_and_changes_nothing() {
    let mut world = World::new(&[b"a"]);
    world.run_for(Duration::from_secs(1));
    let client = world.clients.get_mut(&b"a"[..]).unwrap();
    let old_id = client.connection_id().unwrap();
    client.send(1, b"from the old connection").unwrap();
    let mut buf = [0u8; 1200];
    let late = loop {
        world.now += STEP;
        if let Some(len) = client.poll_transmit(world.now, &mut buf).unwrap() {
            break buf[..len].to_vec();
        }
    };
    // The program restarts at the same address; the listener learns of it and starts over.
    assert!(world.listener.close(b"a"));
    world.run_for(Duration::from_secs(1));
    let config = ConnectionConfig::default();
    world.clients.insert(
        b"a".to_vec(),
        Connection::connect(config, world.now).unwrap(),
    );
    world.server_events.clear();
    world.run_for(Duration::from_secs(1));
    let new_id = world.listener.connection(b"a").unwrap().connection_id();
    assert!(new_id.is_some_and(|id| id != old_id), "a new connection");

    let now = world.now;
    let before = world.listener.connection(b"a").unwrap().stats();
    let mut reply = [0u8; 64];
    assert!(matches!(
        world.listener.receive(now, b"a", &late, &mut reply),
        Err(ListenerError::Connection(ConnectionError::Packet(
            ReceiveError::WrongConnection { .. }
        )))
    ));
    let mut after = world.listener.connection(b"a").unwrap().stats();
    assert_eq!(after.counters.packets_unauthenticated, 1, "counted");
    after.counters.packets_unauthenticated = 0;
    assert_eq!(after, before, "and nothing else changed");
    world.run_for(Duration::from_secs(1));
    assert_eq!(messages_of(&world.server_events, b"a"), [] as [Vec<u8>; 0]);

    // The new connection's own traffic flows.
    let client = world.clients.get_mut(&b"a"[..]).unwrap();
    client.send(1, b"from the new one").unwrap();
    world.run_for(Duration::from_secs(1));
    assert_eq!(
        messages_of(&world.server_events, b"a"),
        [b"from the new one".to_vec()]
    );
}

#[test]
fn a_disconnect_copy_after_its_connection_is_gone_is_refused_as_late_and_changes_nothing() {
    let mut world = World::new(&[b"a", b"b"]);
    world.run_for(Duration::from_secs(1));
    let client = world.clients.get_mut(&b"a"[..]).unwrap();
    let id = client.connection_id().unwrap();
    client.close();
    let mut buf = [0u8; 1200];
    let mut copies = Vec::new();
    while let Some(len) = client.poll_transmit(world.now, &mut buf).unwrap() {
        copies.push(buf[..len].to_vec());
    }
    assert_eq!(copies.len(), 3, "one disconnect and its redundant copies");
    // The first copy closes the connection; once its last event is taken (and the visit
    // that event queued is done) it is dropped.
    let (now, listener) = (world.now, &mut world.listener);
    let first = listener.receive(now, b"a", &copies[0], &mut [0u8; 64]);
    assert_eq!(first, Ok(None));
    for _ in 0..2 {
        while listener.poll_transmit(now, &mut buf).unwrap().is_some() {}
        while listener.poll_event().is_some() {}
    }
    assert!(listener.connection(b"a").is_none());

    let state = |listener: &mut Listener| {
        (
            listener.len(),
            listener.counters(),
            listener.poll_timeout(),
            listener.acceptor().used_cookies(),
            listener.connection(b"b").unwrap().stats(),
        )
    };
    let before = state(listener);
    for copy in &copies[1..] {
        let mut reply = [0u8; 64];
        assert_eq!(
            listener.receive(now, b"a", copy, &mut reply),
            Err(ListenerError::Handshake(HandshakeError::LateDisconnect {
                connection_id: id
            }))
        );
        assert_eq!(reply, [0u8; 64], "nothing to send back");
    }
    assert_eq!(state(listener), before);
    assert!(listener.poll_event().is_none());
}

#[test]
fn a_send_the_connection_refuses_comes_back_with_its_reason() {
    let mut world = World::new(&[b"a"]);
    world.run_for(Duration::from_secs(1));
    assert_eq!(
        world.listener.send(b"a", 9, b"no such channel"),
        Err(ListenerSendError::Send(
            ackwire_core::SendError::UnknownChannel(9)
        ))
    );
}

#[test]
fn a_connect_request_from_an_address_with_a_connection_is_refused_by_that_connection() {
    let mut world = World::new(&[b"a"]);
    world.run_for(Duration::from_secs(1));
    // The same peer restarted on the same address: its old connection answers, not the
    // acceptor, until that connection ends.
    let request = first_connect_request(world.now);
    let mut reply = [0u8; 64];
    assert_eq!(
        world
            .listener
            .receive(world.now, b"a", &request, &mut reply),
        Err(ListenerError::Connection(ConnectionError::Unexpected {
            packet: "connect request",
            state: ConnectionState::Connected
        }))
    );
    assert_eq!(reply, [0u8; 64], "no challenge");
}

/// The first datagram a fresh connector sends at `now`: its connect request.
fn first_connect_request(now: Duration) -> Vec<u8> {
    let mut connector = Connection::connect(ConnectionConfig::default(), now).unwrap();
    let mut buf = [0u8; 1200];
    let len = connector.poll_transmit(now, &mut buf).unwrap().unwrap();
    buf[..len].to_vec()
}

#[test]
fn a_channel_request_is_refused_from_every_address_answered_with_nothing_and_changes_nothing() {
    // A listener is on raw UDP: the cookie handshake is its one way in, whether the address
    // has a connection (plaintext or encrypted) or not.
    let mut world = World::new(&[b"a"]);
    world.run_for(Duration::from_secs(1));
    let (now, listener) = (world.now, &mut world.listener);
    let mut buf = [0u8; 1200];
    while listener.poll_transmit(now, &mut buf).unwrap().is_some() {}
    while listener.poll_event().is_some() {}
    let state = |listener: &mut Listener| {
        (
            listener.len(),
            listener.counters(),
            listener.poll_timeout(),
            listener.acceptor().used_cookies(),
            listener.connection(b"a").unwrap().stats(),
        )
    };
    let before = state(listener);
    let request = ackwire_core::control::ControlPacket::ChannelRequest {
        protocol_id: ConnectionConfig::default().protocol_id,
    };
    let mut bytes = vec![0u8; request.encoded_len()];
    request.emit(&mut bytes).unwrap();
    assert_eq!(bytes[0], 0xA9);
    for from in [&b"a"[..], b"new"] {
        let mut reply = [0u8; 64];
        assert_eq!(
            listener.receive(now, from, &bytes, &mut reply),
            Err(ListenerError::Handshake(HandshakeError::ChannelRequest)),
            "from {from:?}"
        );
        assert_eq!(reply, [0u8; 64], "nothing to send back");
        // Malformed, it says what is wrong with it.
        assert!(matches!(
            listener.receive(now, from, &bytes[..5], &mut reply),
            Err(ListenerError::Handshake(HandshakeError::Control(_)))
        ));
    }
    assert_eq!(state(listener), before);
    assert!(listener.poll_transmit(now, &mut buf).unwrap().is_none());
    assert!(listener.poll_event().is_none());
}
