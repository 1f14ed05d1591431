//! The channel handshake: one round trip on a transport that authenticated the peer (a WebRTC
//! data channel), and its refusal where the cookie is what stops spoofing (raw UDP).

mod pair;

use std::time::Duration;

use ackwire_core::control::ControlPacket;
use ackwire_core::emulator::EmulatorConfig;
use ackwire_core::{
    Accept, Acceptor, ChannelAcceptor, Connection, ConnectionConfig, ConnectionError,
    ConnectionEvent, ConnectionState, DisconnectReason, HandshakeError, ProtectError,
    attempt_secret,
};
use pair::{CLIENT_ADDR, ConnPair, SECRET};

const MS: Duration = Duration::from_millis(1);

fn emit(packet: ControlPacket) -> Vec<u8> {
    let mut buf = vec![0u8; packet.encoded_len()];
    packet.emit(&mut buf).unwrap();
    buf
}

fn channel_request() -> Vec<u8> {
    emit(ControlPacket::ChannelRequest {
        protocol_id: ConnectionConfig::default().protocol_id,
    })
}

/// When a side first reported `Connected`.
fn connected_at(side: &pair::Side) -> Duration {
    side.events
        .iter()
        .find(|(_, e)| matches!(e, ConnectionEvent::Connected { .. }))
        .map(|(at, _)| *at)
        .expect("connected")
}

#[test]
fn on_a_channel_the_first_message_arrives_with_the_request_and_is_acked_as_it_connects() {
    // 50 ms each way: the cookie handshake's accepted arrives after two round trips (200 ms),
    // and the message queued while connecting leaves with the connector's first data packet
    // after it. On a channel the connector's first data packet leaves with its request: the
    // acceptor takes the message as it accepts (50 ms), and its ack arrives with the accept
    // (100 ms), two round trips sooner.
    let link = EmulatorConfig::default().with_latency(50 * MS);
    let mut cookie = ConnPair::new(ConnectionConfig::default(), link.clone(), 1);
    let mut channel = ConnPair::on_channel(ConnectionConfig::default(), link, 1);
    for pair in [&mut cookie, &mut channel] {
        pair.client.send(1, b"first").unwrap();
        pair.connect();
        if pair.channel_acceptor.is_some() {
            // The accept and the ack of the early packet come together.
            assert_eq!(pair.now, 100 * MS);
            assert_eq!(
                pair.client.stats().counters.packets_acked,
                1,
                "the early packet, with the message, acked as the connector connects"
            );
        }
        pair.run_for(Duration::from_millis(300));
    }
    let first_message = |side: &pair::Side| {
        side.events
            .iter()
            .find(|(_, e)| matches!(e, ConnectionEvent::Message { .. }))
            .map(|(at, _)| *at)
    };
    assert_eq!(connected_at(&cookie.client_side), 200 * MS);
    assert_eq!(first_message(&cookie.server_side), Some(250 * MS));
    assert_eq!(connected_at(&channel.server_side), 50 * MS);
    assert_eq!(connected_at(&channel.client_side), 100 * MS);
    assert_eq!(first_message(&channel.server_side), Some(50 * MS));
    // Both ends agree on the id: the acceptor's seed (7) for its first connection.
    assert_eq!(channel.client.connection_id(), Some(7));
    assert_eq!(channel.server().connection_id(), Some(7));
    assert!(channel.handshake_errors.is_empty());
}

#[test]
fn a_channel_handshake_connects_over_a_link_losing_half_the_packets() {
    let link = EmulatorConfig::default()
        .with_latency(20 * MS)
        .with_loss_percent(50.0);
    for seed in 0..20 {
        let mut pair = ConnPair::on_channel(ConnectionConfig::default(), link.clone(), seed);
        pair.connect();
        pair.client.send(1, b"hello").unwrap();
        pair.run_for(Duration::from_secs(3));
        assert_eq!(pair.server_side.messages(1).collect::<Vec<_>>(), [b"hello"]);
        assert_eq!(
            pair.server().connection_id(),
            pair.client.connection_id(),
            "seed {seed}"
        );
    }
}

#[test]
fn an_acceptor_on_raw_udp_refuses_a_channel_request_and_stores_nothing() {
    let mut acceptor = Acceptor::new(ConnectionConfig::default(), SECRET).unwrap();
    let mut reply = [0xEEu8; 64];
    assert_eq!(
        acceptor
            .receive(Duration::ZERO, CLIENT_ADDR, &channel_request(), &mut reply)
            .unwrap_err(),
        HandshakeError::ChannelRequest
    );
    assert_eq!(reply, [0xEE; 64], "nothing was sent back");
    assert_eq!(acceptor.used_cookies(), 0);
    // The cookie handshake still works on it.
    let request = emit(ControlPacket::ConnectRequest {
        protocol_id: ConnectionConfig::default().protocol_id,
    });
    assert!(matches!(
        acceptor.receive(Duration::ZERO, CLIENT_ADDR, &request, &mut reply),
        Ok(Accept::Reply { .. })
    ));
}

#[test]
fn a_channel_connector_and_a_udp_acceptor_never_connect_and_the_connector_says_so() {
    let mut pair = ConnPair::new(ConnectionConfig::default(), EmulatorConfig::default(), 3);
    pair.client =
        Connection::connect_on_channel(ConnectionConfig::default(), Duration::ZERO).unwrap();
    pair.run_for(Duration::from_secs(6));
    assert!(pair.server.is_none());
    assert!(!pair.handshake_errors.is_empty());
    // Its requests are refused as such, and the data packets it sends early between them
    // belong to no connection.
    assert!(pair.handshake_errors.iter().all(|e| matches!(
        e,
        HandshakeError::ChannelRequest | HandshakeError::UnknownConnection
    )));
    assert!(
        pair.handshake_errors
            .contains(&HandshakeError::ChannelRequest)
    );
    assert_eq!(pair.client.state(), ConnectionState::Closed);
    assert!(pair.client_side.events.iter().any(|(_, e)| matches!(
        e,
        ConnectionEvent::Disconnected {
            reason: DisconnectReason::HandshakeTimedOut
        }
    )));
}

#[test]
fn a_channel_acceptor_refuses_another_protocol_and_the_cookie_handshake() {
    let mut acceptor = ChannelAcceptor::new(ConnectionConfig::default(), 7).unwrap();
    let theirs = emit(ControlPacket::ChannelRequest {
        protocol_id: 0x1234,
    });
    assert!(matches!(
        acceptor.receive(Duration::ZERO, &theirs),
        Err(HandshakeError::WrongProtocolId { got: 0x1234, .. })
    ));
    let cookie = emit(ControlPacket::ConnectRequest {
        protocol_id: ConnectionConfig::default().protocol_id,
    });
    assert_eq!(
        acceptor.receive(Duration::ZERO, &cookie).unwrap_err(),
        HandshakeError::ChannelOnly
    );
    for (datagram, error) in [
        (vec![0x90, 0, 0, 0, 0], HandshakeError::UnknownConnection),
        (vec![0x50, 0, 0], HandshakeError::UnsupportedVersion(1)),
        (
            vec![0xA9, 0],
            HandshakeError::Control(ackwire_core::control::ControlError::BadLength {
                kind: 9,
                expected: 9,
                got: 2,
            }),
        ),
    ] {
        assert_eq!(
            acceptor.receive(Duration::ZERO, &datagram).unwrap_err(),
            error
        );
    }
    // None of that used up an id: the first connection still gets the seed.
    let connection = acceptor
        .receive(Duration::ZERO, &channel_request())
        .unwrap();
    assert_eq!(connection.connection_id(), Some(7));
    // And a cookie connector never connects to it.
    let mut pair = ConnPair::on_channel(ConnectionConfig::default(), EmulatorConfig::default(), 4);
    pair.client = Connection::connect(ConnectionConfig::default(), Duration::ZERO).unwrap();
    pair.run_for(Duration::from_secs(6));
    assert!(pair.server.is_none());
    assert!(
        pair.handshake_errors
            .iter()
            .all(|e| *e == HandshakeError::ChannelOnly)
    );
    assert_eq!(pair.client.state(), ConnectionState::Closed);
}

/// A channel acceptor, the connection it made for a channel request at 0, and its id.
fn accepted_channel() -> (ChannelAcceptor, Box<Connection>, u64) {
    let mut acceptor = ChannelAcceptor::new(ConnectionConfig::default(), 7).unwrap();
    let server = acceptor
        .receive(Duration::ZERO, &channel_request())
        .unwrap();
    let id = server.connection_id().unwrap();
    (acceptor, server, id)
}

#[test]
fn a_repeated_channel_request_gets_accepted_again_with_the_same_id() {
    let (mut acceptor, mut server, id) = accepted_channel();
    let mut buf = [0u8; 1500];
    let accepted = |buf: &[u8]| ControlPacket::parse(buf).unwrap();
    let len = server
        .poll_transmit(Duration::ZERO, &mut buf)
        .unwrap()
        .unwrap();
    assert_eq!(
        accepted(&buf[..len]),
        ControlPacket::Accepted { connection_id: id }
    );
    server.receive(10 * MS, &channel_request()).unwrap();
    let len = server.poll_transmit(10 * MS, &mut buf).unwrap().unwrap();
    assert_eq!(
        accepted(&buf[..len]),
        ControlPacket::Accepted { connection_id: id }
    );
    // A request naming another protocol changes nothing.
    let theirs = emit(ControlPacket::ChannelRequest {
        protocol_id: 0x1234,
    });
    assert!(matches!(
        server.receive(20 * MS, &theirs),
        Err(ConnectionError::Unexpected { .. })
    ));
    // Each request that reaches the acceptor stands for a new channel: a new id.
    let other = acceptor.receive(30 * MS, &channel_request()).unwrap();
    assert_eq!(other.connection_id(), Some(id + 1));
}

#[test]
fn a_connection_made_by_the_cookie_handshake_refuses_a_channel_request_and_answers_nothing() {
    // On raw UDP the cookie is what stops spoofing: a channel request naming a cookie
    // connection's address gets no `accepted`, from the acceptor or from the connection.
    let mut pair = ConnPair::new(ConnectionConfig::default(), EmulatorConfig::default(), 4);
    pair.connect();
    pair.run_for(Duration::from_secs(1));
    let now = Duration::from_secs(1);
    let server = pair.server();
    assert_eq!(server.state(), ConnectionState::Connected);
    let mut buf = [0u8; 1500];
    while server.poll_transmit(now, &mut buf).unwrap().is_some() {}
    assert_eq!(
        server.receive(now, &channel_request()),
        Err(ConnectionError::Unexpected {
            packet: "channel request",
            state: ConnectionState::Connected
        })
    );
    for at in [now, now + 100 * MS] {
        while let Some(len) = server.poll_transmit(at, &mut buf).unwrap() {
            assert!(
                !ackwire_core::control::is_control(&buf[..len]),
                "no control packet answers it: {:02x?}",
                &buf[..len.min(9)]
            );
        }
    }
}

#[test]
fn a_channel_connector_refuses_a_challenge_and_carries_no_key_exchange() {
    let mut client =
        Connection::connect_on_channel(ConnectionConfig::default(), Duration::ZERO).unwrap();
    let challenge = emit(ControlPacket::Challenge {
        cookie: ackwire_core::control::Cookie {
            timestamp_ms: 0,
            nonce: [1; 8],
            mac: [2; 16],
        },
    });
    assert!(matches!(
        client.receive(Duration::ZERO, &challenge),
        Err(ConnectionError::Unexpected { .. })
    ));
    assert_eq!(client.state(), ConnectionState::Connecting);
    let mut buf = [0u8; 64];
    let len = client
        .poll_transmit(Duration::ZERO, &mut buf)
        .unwrap()
        .unwrap();
    assert_eq!(
        buf[..len],
        channel_request()[..],
        "still asking on the channel"
    );
    // What `secure` would take; it is refused before the initiator is looked at.
    #[derive(Debug)]
    struct Never;
    impl ackwire_core::key_exchange::Initiator for Never {
        fn start(
            &mut self,
            _: &[u8; 32],
            _: &[u8],
            _: &mut [u8; 48],
        ) -> Result<(), ackwire_core::key_exchange::KeyExchangeError> {
            unreachable!()
        }
        fn finish(
            &mut self,
            _: &[u8; 48],
        ) -> Result<ackwire_core::PacketKeys, ackwire_core::key_exchange::KeyExchangeError>
        {
            unreachable!()
        }
    }
    assert_eq!(client.secure(Never), Err(ProtectError::ChannelHandshake));
}

/// A program makes an acceptor per connection attempt (the room member does). Keyed with the
/// program's secret itself, every one would hand out the same ids, and a late `disconnect` of
/// an old connection would close the new one; keyed with its attempt secrets, none repeats
/// (shown with the ids a channel acceptor takes from its key's first 8 bytes).
#[test]
fn acceptors_keyed_with_a_programs_attempt_secrets_never_share_a_connection_id() {
    let secret = [9u8; 32];
    let first_id = |key: [u8; 32]| {
        let seed = u64::from_be_bytes(key[..8].try_into().unwrap());
        ChannelAcceptor::new(ConnectionConfig::default(), seed)
            .unwrap()
            .receive(Duration::ZERO, &channel_request())
            .unwrap()
            .connection_id()
            .unwrap()
    };
    assert_eq!(
        first_id(secret),
        first_id(secret),
        "one secret, the same ids"
    );
    let ids: std::collections::BTreeSet<u64> = (1..=1000)
        .map(|attempt| first_id(attempt_secret(&secret, attempt)))
        .collect();
    assert_eq!(ids.len(), 1000, "a thousand attempts, a thousand ids");
    assert_eq!(
        attempt_secret(&secret, 7),
        attempt_secret(&secret, 7),
        "derived, not random: a replay gives the same"
    );
}

#[test]
fn a_repeated_channel_request_is_accepted_again_even_after_the_connectors_data() {
    // The connector sends data early, before it hears `accepted`: its data proves nothing
    // about the accept, so a request after it (the accept was lost) is answered again. The
    // connector, connected, takes the repeat as harmless.
    let (_, mut server, id) = accepted_channel();
    let mut buf = [0u8; 1500];
    let accepted = emit(ControlPacket::Accepted { connection_id: id });
    let len = server
        .poll_transmit(Duration::ZERO, &mut buf)
        .unwrap()
        .unwrap();
    assert_eq!(buf[..len], accepted[..]);

    let mut client = Connection::connect_on_channel(ConnectionConfig::default(), MS).unwrap();
    client.send(1, b"first").unwrap();
    let len = client.poll_transmit(MS, &mut buf).unwrap().unwrap();
    assert_eq!(buf[..len], channel_request()[..]);
    let len = client.poll_transmit(MS, &mut buf).unwrap().unwrap();
    server.receive(2 * MS, &buf[..len]).unwrap();
    let delivered = std::iter::from_fn(|| server.poll_event())
        .filter(|e| matches!(e, ConnectionEvent::Message { .. }))
        .count();
    assert_eq!(delivered, 1, "the early packet's message");

    server.receive(3 * MS, &channel_request()).unwrap();
    let mut answers = Vec::new();
    while let Some(len) = server.poll_transmit(3 * MS, &mut buf).unwrap() {
        answers.push(buf[..len].to_vec());
    }
    assert_eq!(answers[0], accepted, "accepted again");
    for answer in &answers {
        let _ = client.receive(4 * MS, answer);
    }
    assert_eq!(client.state(), ConnectionState::Connected);
    assert!(matches!(
        client.receive(5 * MS, &accepted),
        Err(ConnectionError::Unexpected { .. })
    ));
    assert_eq!(client.state(), ConnectionState::Connected);
    assert_eq!(server.state(), ConnectionState::Connected);
}
