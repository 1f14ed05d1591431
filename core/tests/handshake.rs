//! The cookie handshake, keep-alive, timeouts and disconnect.

mod pair;

use std::time::Duration;

use ackwire_core::control::{ControlPacket, Cookie};
use ackwire_core::emulator::EmulatorConfig;
use ackwire_core::{
    Accept, Acceptor, Connection, ConnectionConfig, ConnectionError, ConnectionEvent,
    ConnectionState, DisconnectReason, HandshakeError,
};
use pair::{CLIENT_ADDR, ConnPair, SECRET};

const MS: Duration = Duration::from_millis(1);
const T0: Duration = Duration::from_secs(100);

fn emit(packet: ControlPacket) -> Vec<u8> {
    let mut buf = vec![0u8; packet.encoded_len()];
    packet.emit(&mut buf).unwrap();
    buf
}

/// A fresh acceptor and the cookie it hands `CLIENT_ADDR` at `T0`.
fn challenged() -> (Acceptor, Cookie) {
    let mut acceptor = Acceptor::new(ConnectionConfig::default(), SECRET).unwrap();
    let request = emit(ControlPacket::ConnectRequest {
        protocol_id: ConnectionConfig::default().protocol_id,
    });
    let mut reply = [0u8; 64];
    let Ok(Accept::Reply { len }) = acceptor.receive(T0, CLIENT_ADDR, &request, &mut reply) else {
        panic!("no challenge");
    };
    assert_eq!(
        len,
        request.len(),
        "the challenge is no bigger than the request"
    );
    let Ok(ControlPacket::Challenge { cookie }) = ControlPacket::parse(&reply[..len]) else {
        panic!("not a challenge");
    };
    (acceptor, cookie)
}

fn respond(
    acceptor: &mut Acceptor,
    now: Duration,
    from: &[u8],
    cookie: Cookie,
) -> Result<Accept, HandshakeError> {
    let response = emit(ControlPacket::ConnectResponse {
        protocol_id: ConnectionConfig::default().protocol_id,
        cookie,
    });
    acceptor.receive(now, from, &response, &mut [0u8; 64])
}

#[test]
fn connector_and_acceptor_connect_and_share_a_connection_id() {
    let mut pair = ConnPair::new(ConnectionConfig::default(), EmulatorConfig::default(), 1);
    pair.connect();
    let id = pair.client.connection_id().unwrap();
    assert_eq!(pair.server().connection_id(), Some(id));
    assert_eq!(pair.client.state(), ConnectionState::Connected);
    assert_eq!(
        pair.client.stats().connection_state,
        Some(ConnectionState::Connected)
    );
    assert!(pair.handshake_errors.is_empty());
    assert_eq!(pair.acceptor.used_cookies(), 1);
}

#[test]
fn connecting_succeeds_over_a_link_losing_half_the_packets() {
    let link = EmulatorConfig::default()
        .with_latency(50 * MS)
        .with_loss_percent(50.0);
    for seed in 0..20 {
        let mut pair = ConnPair::new(ConnectionConfig::default(), link.clone(), seed);
        pair.connect();
        pair.client.send(1, b"hello").unwrap();
        pair.run_for(Duration::from_secs(3));
        assert_eq!(pair.server_side.messages(1).collect::<Vec<_>>(), [b"hello"]);
    }
}

#[test]
fn a_wrong_protocol_id_is_refused_in_request_and_response() {
    let mut acceptor = Acceptor::new(ConnectionConfig::default(), SECRET).unwrap();
    let theirs = 0x1234;
    let request = emit(ControlPacket::ConnectRequest {
        protocol_id: theirs,
    });
    let mut reply = [0u8; 64];
    let err = acceptor
        .receive(T0, CLIENT_ADDR, &request, &mut reply)
        .unwrap_err();
    assert_eq!(
        err,
        HandshakeError::WrongProtocolId {
            expected: ConnectionConfig::default().protocol_id,
            got: theirs
        }
    );
    assert_eq!(reply, [0u8; 64], "nothing sent back");
    let (mut acceptor, cookie) = challenged();
    let response = emit(ControlPacket::ConnectResponse {
        protocol_id: theirs,
        cookie,
    });
    assert!(matches!(
        acceptor.receive(T0, CLIENT_ADDR, &response, &mut reply),
        Err(HandshakeError::WrongProtocolId { .. })
    ));
    assert_eq!(acceptor.used_cookies(), 0);
}

#[test]
fn another_wire_version_is_refused() {
    let mut acceptor = Acceptor::new(ConnectionConfig::default(), SECRET).unwrap();
    let mut request = emit(ControlPacket::ConnectRequest {
        protocol_id: ConnectionConfig::default().protocol_id,
    });
    request[0] = (request[0] & 0x3F) | 0x40;
    assert_eq!(
        acceptor
            .receive(T0, CLIENT_ADDR, &request, &mut [0u8; 64])
            .unwrap_err(),
        HandshakeError::UnsupportedVersion(1)
    );
}

#[test]
fn a_forged_or_altered_cookie_is_refused() {
    let (mut acceptor, cookie) = challenged();
    let mut flipped_mac = cookie;
    flipped_mac.mac[3] ^= 1;
    let mut later = cookie;
    later.timestamp_ms += 5000;
    let mut other_nonce = cookie;
    other_nonce.nonce[0] ^= 0x80;
    for forged in [flipped_mac, later, other_nonce] {
        assert_eq!(
            respond(&mut acceptor, T0, CLIENT_ADDR, forged).unwrap_err(),
            HandshakeError::ForgedCookie
        );
    }
    // A cookie from an acceptor with another secret (e.g. before a restart).
    let mut restarted = Acceptor::new(ConnectionConfig::default(), [7; 32]).unwrap();
    assert_eq!(
        respond(&mut restarted, T0, CLIENT_ADDR, cookie).unwrap_err(),
        HandshakeError::ForgedCookie
    );
    assert_eq!(acceptor.used_cookies(), 0);
    // The genuine cookie still works: refusals changed nothing.
    assert!(matches!(
        respond(&mut acceptor, T0, CLIENT_ADDR, cookie),
        Ok(Accept::Connection(_))
    ));
}

#[test]
fn a_cookie_presented_from_another_address_is_refused() {
    let (mut acceptor, cookie) = challenged();
    assert_eq!(
        respond(&mut acceptor, T0, b"10.0.0.3:5000", cookie).unwrap_err(),
        HandshakeError::ForgedCookie
    );
}

#[test]
fn an_expired_cookie_is_refused() {
    let (mut acceptor, cookie) = challenged();
    let lifetime = ConnectionConfig::default().cookie_lifetime;
    assert_eq!(
        respond(&mut acceptor, T0 + lifetime + MS, CLIENT_ADDR, cookie).unwrap_err(),
        HandshakeError::ExpiredCookie {
            age_ms: lifetime.as_millis() as u64 + 1
        }
    );
    assert!(matches!(
        respond(&mut acceptor, T0 + lifetime, CLIENT_ADDR, cookie),
        Ok(Accept::Connection(_))
    ));
}

#[test]
fn a_replayed_cookie_is_refused() {
    let (mut acceptor, cookie) = challenged();
    let Ok(Accept::Connection(connection)) = respond(&mut acceptor, T0, CLIENT_ADDR, cookie) else {
        panic!("first use accepted");
    };
    assert_eq!(
        connection.connection_id(),
        Some(u64::from_be_bytes(cookie.nonce))
    );
    assert_eq!(
        respond(&mut acceptor, T0 + 10 * MS, CLIENT_ADDR, cookie).unwrap_err(),
        HandshakeError::ReplayedCookie
    );
    assert_eq!(acceptor.used_cookies(), 1);
}

#[test]
fn the_replay_cache_is_bounded_and_refuses_when_full_of_live_cookies() {
    let config = ConnectionConfig::default().with_replay_cache_len(2);
    let mut acceptor = Acceptor::new(config.clone(), SECRET).unwrap();
    let request = emit(ControlPacket::ConnectRequest {
        protocol_id: config.protocol_id,
    });
    let connect = |acceptor: &mut Acceptor, now| {
        let mut reply = [0u8; 64];
        let Ok(Accept::Reply { len }) = acceptor.receive(now, CLIENT_ADDR, &request, &mut reply)
        else {
            panic!("no challenge")
        };
        let Ok(ControlPacket::Challenge { cookie }) = ControlPacket::parse(&reply[..len]) else {
            panic!()
        };
        respond(acceptor, now, CLIENT_ADDR, cookie).map(|_| ())
    };
    assert_eq!(connect(&mut acceptor, T0), Ok(()));
    assert_eq!(connect(&mut acceptor, T0), Ok(()));
    assert_eq!(connect(&mut acceptor, T0), Err(HandshakeError::Busy));
    assert_eq!(acceptor.used_cookies(), 2);
    // Once the remembered cookies have expired their slots are reused.
    assert_eq!(connect(&mut acceptor, T0 + Duration::from_secs(11)), Ok(()));
    assert_eq!(acceptor.used_cookies(), 1);
}

#[test]
fn packets_for_unknown_connections_are_refused() {
    let mut acceptor = Acceptor::new(ConnectionConfig::default(), SECRET).unwrap();
    let mut endpoint =
        ackwire_core::Endpoint::new(ackwire_core::Config::default(), Duration::ZERO).unwrap();
    let mut data = [0u8; 64];
    let t = endpoint.poll_transmit(T0, &mut data).unwrap().unwrap();
    for datagram in [
        data[..t.len].to_vec(),
        emit(ControlPacket::Accepted { connection_id: 1 }),
    ] {
        assert_eq!(
            acceptor
                .receive(T0, CLIENT_ADDR, &datagram, &mut [0u8; 64])
                .unwrap_err(),
            HandshakeError::UnknownConnection
        );
    }
    // A disconnect is told apart: its copies outlive the connection they close.
    assert_eq!(
        acceptor
            .receive(
                T0,
                CLIENT_ADDR,
                &emit(ControlPacket::Disconnect { connection_id: 1 }),
                &mut [0u8; 64]
            )
            .unwrap_err(),
        HandshakeError::LateDisconnect { connection_id: 1 }
    );
    assert!(matches!(
        acceptor.receive(T0, CLIENT_ADDR, &[0xA1, 1, 2], &mut [0u8; 64]),
        Err(HandshakeError::Control(_))
    ));
}

#[test]
fn a_connector_refuses_packets_that_do_not_fit_its_state() {
    let mut client = Connection::connect(ConnectionConfig::default(), T0).unwrap();
    let (_acceptor, cookie) = challenged();
    let mut endpoint =
        ackwire_core::Endpoint::new(ackwire_core::Config::default(), Duration::ZERO).unwrap();
    let mut data = [0u8; 64];
    let t = endpoint.poll_transmit(T0, &mut data).unwrap().unwrap();
    assert_eq!(
        client.receive(T0, &data[..t.len]),
        Err(ConnectionError::NotConnected(ConnectionState::Connecting))
    );
    assert!(matches!(
        client.receive(T0, &emit(ControlPacket::Accepted { connection_id: 9 })),
        Err(ConnectionError::Unexpected { .. })
    ));
    client
        .receive(T0, &emit(ControlPacket::Challenge { cookie }))
        .unwrap();
    // An accept for a connection id other than the cookie's nonce is not ours.
    assert!(matches!(
        client.receive(T0, &emit(ControlPacket::Accepted { connection_id: 9 })),
        Err(ConnectionError::WrongConnectionId { got: 9, .. })
    ));
    assert_eq!(client.state(), ConnectionState::Connecting);
    assert_eq!(client.receive(T0, &[]), Err(ConnectionError::Empty));
    let id = u64::from_be_bytes(cookie.nonce);
    client
        .receive(T0, &emit(ControlPacket::Accepted { connection_id: id }))
        .unwrap();
    assert_eq!(client.state(), ConnectionState::Connected);
    assert_eq!(
        client.poll_event(),
        Some(ConnectionEvent::Connected { connection_id: id })
    );
}

#[test]
fn a_connector_that_hears_nothing_gives_up_after_the_handshake_timeout() {
    let mut client = Connection::connect(ConnectionConfig::default(), T0).unwrap();
    let mut buf = [0u8; 1200];
    let mut requests = 0;
    let mut now = T0;
    while let Some(at) = client.poll_timeout() {
        now = at;
        while client.poll_transmit(now, &mut buf).unwrap().is_some() {
            requests += 1;
        }
    }
    assert_eq!(now, T0 + Duration::from_secs(5));
    assert_eq!(requests, 20, "one request every 250 ms");
    assert_eq!(
        client.poll_event(),
        Some(ConnectionEvent::Disconnected {
            reason: DisconnectReason::HandshakeTimedOut
        })
    );
}

#[test]
fn an_idle_connection_stays_up_on_keep_alives_and_times_out_when_the_peer_vanishes() {
    let mut pair = ConnPair::new(ConnectionConfig::default(), EmulatorConfig::default(), 2);
    pair.connect();
    pair.run_for(Duration::from_secs(60));
    assert_eq!(pair.client.state(), ConnectionState::Connected);
    assert_eq!(pair.server().state(), ConnectionState::Connected);
    // Idle packets are keep-alives: a header and nothing else.
    let (_, last_len) = *pair.client_side.datagrams_sent.last().unwrap();
    assert!(last_len <= 9, "{last_len}");
    pair.set_link(EmulatorConfig::default().with_loss_percent(100.0));
    let vanished = pair.now;
    pair.run_for(Duration::from_secs(11));
    for side in [&pair.client_side, &pair.server_side] {
        let (at, event) = side.events.last().unwrap();
        assert_eq!(
            *event,
            ConnectionEvent::Disconnected {
                reason: DisconnectReason::TimedOut
            }
        );
        // Ten seconds after the last packet got through (at most one 33 ms interval before
        // the link died).
        let after = *at - vanished;
        assert!(after > Duration::from_millis(9_950) && after <= Duration::from_secs(10));
    }
}

#[test]
fn close_sends_redundant_disconnects_and_the_peer_learns_why() {
    let mut pair = ConnPair::new(ConnectionConfig::default(), EmulatorConfig::default(), 3);
    pair.connect();
    pair.run_for(Duration::from_secs(1));
    let before = pair.client_side.datagrams_sent.len();
    pair.client.close();
    assert_eq!(
        pair.client.send(1, b"late"),
        Err(ackwire_core::SendError::Closed)
    );
    pair.run_for(Duration::from_secs(1));
    let sent = &pair.client_side.datagrams_sent[before..];
    assert_eq!(
        sent.iter().map(|(_, len)| *len).collect::<Vec<_>>(),
        [9, 9, 9]
    );
    assert_eq!(pair.client.state(), ConnectionState::Closed);
    assert_eq!(pair.client.poll_timeout(), None);
    assert_eq!(
        pair.client_side.events.last().unwrap().1,
        ConnectionEvent::Disconnected {
            reason: DisconnectReason::Closed
        }
    );
    assert_eq!(
        pair.server_side.events.last().unwrap().1,
        ConnectionEvent::Disconnected {
            reason: DisconnectReason::ClosedByPeer
        }
    );
}

#[test]
fn a_disconnect_naming_another_connection_changes_nothing() {
    let mut pair = ConnPair::new(ConnectionConfig::default(), EmulatorConfig::default(), 4);
    pair.connect();
    let id = pair.client.connection_id().unwrap();
    let forged = emit(ControlPacket::Disconnect {
        connection_id: id ^ 1,
    });
    assert_eq!(
        pair.client.receive(pair.now, &forged),
        Err(ConnectionError::WrongConnectionId {
            expected: id,
            got: id ^ 1
        })
    );
    assert_eq!(pair.client.state(), ConnectionState::Connected);
}

#[test]
fn a_malformed_control_packet_to_a_connection_is_refused_with_its_control_error() {
    use ackwire_core::control::ControlError;

    let mut pair = ConnPair::new(ConnectionConfig::default(), EmulatorConfig::default(), 5);
    pair.connect();
    let mut request = emit(ControlPacket::ConnectRequest {
        protocol_id: ConnectionConfig::default().protocol_id,
    });
    request[32] = 1;
    let id = pair.client.connection_id().unwrap();
    let mut long_disconnect = emit(ControlPacket::Disconnect { connection_id: id });
    long_disconnect.push(0);
    for (datagram, error) in [
        (request, ControlError::BadPadding),
        (vec![0xAA; 9], ControlError::UnknownType(10)),
        (
            long_disconnect,
            ControlError::BadLength {
                kind: 4,
                expected: 9,
                got: 10,
            },
        ),
    ] {
        assert_eq!(
            pair.client.receive(pair.now, &datagram),
            Err(ConnectionError::Control(error))
        );
    }
    assert_eq!(pair.client.state(), ConnectionState::Connected);
}

#[test]
fn a_timed_out_connection_closes_without_sending_disconnects() {
    let mut pair = ConnPair::new(ConnectionConfig::default(), EmulatorConfig::default(), 6);
    pair.connect();
    pair.run_for(Duration::from_secs(1));
    pair.set_link(EmulatorConfig::default().with_loss_percent(100.0));
    pair.run_for(Duration::from_secs(11));
    let (timed_out, event) = pair.client_side.events.last().unwrap().clone();
    assert_eq!(
        event,
        ConnectionEvent::Disconnected {
            reason: DisconnectReason::TimedOut
        }
    );
    // Closed at once: the peer is presumed gone, so nothing more is sent to it.
    let (last_sent, _) = *pair.client_side.datagrams_sent.last().unwrap();
    assert!(last_sent < timed_out);
    assert_eq!(pair.client.state(), ConnectionState::Closed);
    assert_eq!(pair.client.poll_timeout(), None);
    assert_eq!(
        pair.client.poll_transmit(pair.now, &mut [0u8; 1200]),
        Ok(None)
    );
}

#[test]
fn a_reply_buffer_too_small_for_the_challenge_is_refused_and_changes_nothing() {
    use ackwire_core::control::ControlError;

    let mut acceptor = Acceptor::new(ConnectionConfig::default(), SECRET).unwrap();
    let request = emit(ControlPacket::ConnectRequest {
        protocol_id: ConnectionConfig::default().protocol_id,
    });
    assert_eq!(
        acceptor
            .receive(T0, CLIENT_ADDR, &request, &mut [0u8; 32])
            .unwrap_err(),
        HandshakeError::Control(ControlError::BufferTooSmall {
            needed: 33,
            available: 32
        })
    );
    // The next challenge is the one a fresh acceptor would make: no nonce was used up.
    let (_, fresh) = challenged();
    let mut reply = [0u8; 33];
    let Ok(Accept::Reply { len }) = acceptor.receive(T0, CLIENT_ADDR, &request, &mut reply) else {
        panic!("no challenge");
    };
    assert_eq!(
        ControlPacket::parse(&reply[..len]),
        Ok(ControlPacket::Challenge { cookie: fresh })
    );
}

#[test]
fn closing_while_the_peer_closes_too_reports_one_disconnect_and_stops_sending() {
    let mut pair = ConnPair::new(ConnectionConfig::default(), EmulatorConfig::default(), 7);
    pair.connect();
    pair.run_for(Duration::from_secs(1));
    let id = pair.client.connection_id().unwrap();
    pair.client.close();
    // The peer's own disconnect arrives while ours are still going out.
    pair.client
        .receive(
            pair.now,
            &emit(ControlPacket::Disconnect { connection_id: id }),
        )
        .unwrap();
    let mut events = Vec::new();
    while let Some(event) = pair.client.poll_event() {
        events.push(event);
    }
    assert_eq!(
        events,
        [ConnectionEvent::Disconnected {
            reason: DisconnectReason::Closed
        }],
        "Disconnected is the last event, reported once"
    );
    assert_eq!(pair.client.state(), ConnectionState::Closed);
    assert_eq!(
        pair.client.poll_transmit(pair.now, &mut [0u8; 1200]),
        Ok(None)
    );
}

#[test]
fn once_the_connectors_data_arrived_a_connect_response_is_refused_so_a_restarted_connector_never_joins_the_old_connection()
 {
    // A connector that restarted and took a stale copy of the old challenge sends the old
    // cookie again. Before any data the acceptor's connection takes that for a repeat and
    // accepts again (the connector may have missed `accepted`); once the connector's data
    // has arrived it cannot be one, and joining the old connection's packet sequences would
    // get messages acked that nobody delivers.
    let config = ConnectionConfig::default();
    let (mut acceptor, cookie) = challenged();
    let Ok(Accept::Connection(mut server)) = respond(&mut acceptor, T0, CLIENT_ADDR, cookie) else {
        panic!("not accepted");
    };
    let id = server.connection_id().unwrap();
    let mut buf = [0u8; 1500];
    let mut sent = |server: &mut Connection, now: Duration| {
        std::iter::from_fn(|| {
            let len = server.poll_transmit(now, &mut buf).unwrap()?;
            Some(buf[..len].to_vec())
        })
        .collect::<Vec<_>>()
    };
    let accepted = emit(ControlPacket::Accepted { connection_id: id });
    assert_eq!(sent(&mut server, T0)[0], accepted);
    let response = emit(ControlPacket::ConnectResponse {
        protocol_id: config.protocol_id,
        cookie,
    });
    server.receive(T0 + MS, &response).unwrap();
    assert_eq!(
        sent(&mut server, T0 + MS)[0],
        accepted,
        "a repeat is answered"
    );

    let mut client = Connection::connect(config.clone(), T0).unwrap();
    client
        .receive(T0, &emit(ControlPacket::Challenge { cookie }))
        .unwrap();
    client.receive(T0 + 2 * MS, &accepted).unwrap();
    client.send(1, b"first").unwrap();
    let mut data = [0u8; 1500];
    let len = client
        .poll_transmit(T0 + 2 * MS, &mut data)
        .unwrap()
        .unwrap();
    server.receive(T0 + 3 * MS, &data[..len]).unwrap();
    assert!(std::iter::from_fn(|| server.poll_event()).any(
        |e| matches!(e, ConnectionEvent::Message { ref bytes, .. } if bytes.as_slice() == b"first")
    ));

    let mut restarted = Connection::connect(config, T0 + 10 * MS).unwrap();
    restarted
        .receive(T0 + 10 * MS, &emit(ControlPacket::Challenge { cookie }))
        .unwrap();
    let len = restarted
        .poll_transmit(T0 + 10 * MS, &mut data)
        .unwrap()
        .unwrap();
    assert_eq!(data[..len], response[..], "the stale cookie comes back");
    assert!(matches!(
        server.receive(T0 + 11 * MS, &data[..len]),
        Err(ConnectionError::Unexpected { .. })
    ));
    assert!(
        sent(&mut server, T0 + 11 * MS)
            .iter()
            .all(|d| *d != accepted),
        "nothing accepts the restarted connector onto the old connection"
    );
    assert_eq!(server.state(), ConnectionState::Connected);
}
