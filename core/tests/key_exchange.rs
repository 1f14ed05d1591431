//! The key exchange in the handshake: NK to a listener's static key (pinned or taken on first
//! use), KK between peers that know each other's keys; wrong keys, plaintext on either side,
//! and a man in the middle all end in a typed refusal, never in a link keyed by someone else.

use std::time::Duration;

use ackwire_core::control::ControlPacket;
use ackwire_core::{
    Accept, Acceptor, Connection, ConnectionConfig, ConnectionError, ConnectionEvent,
    ConnectionState, DisconnectReason, HandshakeError, KeyExchangeError, NoiseInitiator,
    NoiseResponder, StaticKey,
};

const MS: Duration = Duration::from_millis(1);
const T0: Duration = Duration::from_secs(100);
const CLIENT: &[u8] = b"198.51.100.7:4000";
const SECRET: [u8; 32] = [9; 32];

/// Where the datagrams of a handshake go, and what a man in the middle does to them.
struct Pair {
    connector: Connection,
    acceptor: Acceptor,
    accepted: Option<Box<Connection>>,
    now: Duration,
    /// Every datagram sent either way, in order (`true` from the connector).
    wire: Vec<(bool, Vec<u8>)>,
    /// The acceptor's refusals.
    refused: Vec<HandshakeError>,
    /// The connector's refusals.
    connector_refused: Vec<ConnectionError>,
}

impl Pair {
    fn new(connector: Connection, acceptor: Acceptor) -> Pair {
        Pair {
            connector,
            acceptor,
            accepted: None,
            now: T0,
            wire: Vec::new(),
            refused: Vec::new(),
            connector_refused: Vec::new(),
        }
    }

    /// Runs `ms` milliseconds; `tamper` sees (and may change or drop) every datagram.
    fn run(&mut self, ms: u64, tamper: &mut dyn FnMut(bool, &mut Vec<u8>) -> bool) {
        for _ in 0..ms {
            self.now += MS;
            let mut buf = [0u8; 1500];
            while let Some(len) = self.connector.poll_transmit(self.now, &mut buf).unwrap() {
                let mut datagram = buf[..len].to_vec();
                self.wire.push((true, datagram.clone()));
                if !tamper(true, &mut datagram) {
                    continue;
                }
                if let Some(accepted) = &mut self.accepted {
                    let _ = accepted.receive_in_place(self.now, &mut datagram);
                    continue;
                }
                let mut reply = [0u8; 128];
                match self
                    .acceptor
                    .receive(self.now, CLIENT, &datagram, &mut reply)
                {
                    Ok(Accept::Reply { len }) => {
                        let mut reply = reply[..len].to_vec();
                        self.wire.push((false, reply.clone()));
                        if tamper(false, &mut reply) {
                            self.deliver_to_connector(&mut reply);
                        }
                    }
                    Ok(Accept::Connection(connection)) => self.accepted = Some(connection),
                    Ok(_) => unreachable!(),
                    Err(e) => self.refused.push(e),
                }
            }
            if let Some(accepted) = &mut self.accepted {
                let mut out = Vec::new();
                while let Some(len) = accepted.poll_transmit(self.now, &mut buf).unwrap() {
                    out.push(buf[..len].to_vec());
                }
                for mut datagram in out {
                    self.wire.push((false, datagram.clone()));
                    if tamper(false, &mut datagram) {
                        self.deliver_to_connector(&mut datagram);
                    }
                }
            }
        }
    }

    fn deliver_to_connector(&mut self, datagram: &mut [u8]) {
        if let Err(e) = self.connector.receive_in_place(self.now, datagram) {
            self.connector_refused.push(e);
        }
    }

    fn clean(&mut self, ms: u64) {
        self.run(ms, &mut |_, _| true);
    }
}

fn events(connection: &mut Connection) -> Vec<ConnectionEvent> {
    std::iter::from_fn(|| connection.poll_event()).collect()
}

fn connector(initiator: Option<NoiseInitiator>) -> Connection {
    let mut connection = Connection::connect(ConnectionConfig::default(), T0).unwrap();
    if let Some(initiator) = initiator {
        connection.secure(initiator).unwrap();
    }
    connection
}

fn acceptor(responder: Option<NoiseResponder>) -> Acceptor {
    let acceptor = Acceptor::new(ConnectionConfig::default(), SECRET).unwrap();
    match responder {
        Some(responder) => acceptor.with_responder(responder).unwrap(),
        None => acceptor,
    }
}

fn disconnected(connection: &mut Connection) -> Option<DisconnectReason> {
    events(connection).into_iter().find_map(|e| match e {
        ConnectionEvent::Disconnected { reason } => Some(reason),
        _ => None,
    })
}

/// Messages both ways over a connected pair; returns what each side received.
fn exchange(pair: &mut Pair) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    pair.connector.send(1, b"attack at dawn").unwrap();
    pair.accepted
        .as_mut()
        .expect("accepted")
        .send(1, b"hold the line")
        .unwrap();
    pair.clean(200);
    let messages = |events: Vec<ConnectionEvent>| {
        events
            .into_iter()
            .filter_map(|e| match e {
                ConnectionEvent::Message { bytes, .. } => Some(bytes),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let at_acceptor = messages(events(pair.accepted.as_mut().unwrap()));
    let at_connector = messages(events(&mut pair.connector));
    (at_connector, at_acceptor)
}

fn shows(wire: &[(bool, Vec<u8>)], text: &[u8]) -> bool {
    wire.iter()
        .any(|(_, d)| d.windows(text.len()).any(|w| w == text))
}

#[test]
fn a_connector_pinning_the_listeners_key_connects_protected_and_nothing_travels_in_clear() {
    let server = StaticKey::generate();
    let mut pair = Pair::new(
        connector(Some(NoiseInitiator::nk(Some(server.public())))),
        acceptor(Some(NoiseResponder::nk(server.clone()))),
    );
    pair.clean(20);
    assert_eq!(pair.connector.state(), ConnectionState::Connected);
    assert!(pair.connector.is_protected());
    assert!(pair.accepted.as_ref().unwrap().is_protected());
    assert_eq!(pair.connector.acceptor_key(), Some(server.public()));
    let (at_connector, at_acceptor) = exchange(&mut pair);
    assert_eq!(at_acceptor, vec![b"attack at dawn".to_vec()]);
    assert_eq!(at_connector, vec![b"hold the line".to_vec()]);
    assert!(!shows(&pair.wire, b"attack at dawn"));
    assert!(!shows(&pair.wire, b"hold the line"));
    // The handshake packets are the secure ones, at their documented sizes.
    let sizes: Vec<(bool, u8, usize)> = pair.wire[..4]
        .iter()
        .map(|(c, d)| (*c, d[0], d.len()))
        .collect();
    assert_eq!(
        sizes,
        vec![
            (true, 0xA5, 65),
            (false, 0xA6, 65),
            (true, 0xA7, 89),
            (false, 0xA8, 57)
        ]
    );
}

#[test]
fn without_a_pin_the_connector_takes_the_key_it_is_shown_and_says_which() {
    let server = StaticKey::generate();
    let mut pair = Pair::new(
        connector(Some(NoiseInitiator::nk(None))),
        acceptor(Some(NoiseResponder::nk(server.clone()))),
    );
    pair.clean(20);
    assert_eq!(pair.connector.state(), ConnectionState::Connected);
    assert_eq!(pair.connector.acceptor_key(), Some(server.public()));
    let (at_connector, at_acceptor) = exchange(&mut pair);
    assert_eq!((at_connector.len(), at_acceptor.len()), (1, 1));
}

#[test]
fn a_listener_with_another_key_is_refused_and_nothing_is_sent_after_its_challenge() {
    let server = StaticKey::generate();
    let pinned = StaticKey::generate().public();
    let mut pair = Pair::new(
        connector(Some(NoiseInitiator::nk(Some(pinned)))),
        acceptor(Some(NoiseResponder::nk(server.clone()))),
    );
    pair.clean(1000);
    assert_eq!(
        disconnected(&mut pair.connector),
        Some(DisconnectReason::AcceptorKeyMismatch)
    );
    assert_eq!(pair.connector.state(), ConnectionState::Closed);
    assert_eq!(pair.connector.acceptor_key(), Some(server.public()));
    assert!(pair.accepted.is_none());
    assert_eq!(pair.acceptor.used_cookies(), 0);
    let from_connector: Vec<u8> = pair.wire.iter().filter(|w| w.0).map(|w| w.1[0]).collect();
    assert_eq!(from_connector, vec![0xA5], "one request, then silence");
}

#[test]
fn room_peers_that_know_each_others_keys_connect_and_a_stranger_is_refused() {
    let (a, b) = (StaticKey::generate(), StaticKey::generate());
    let mut pair = Pair::new(
        connector(Some(NoiseInitiator::kk(a.clone(), b.public()))),
        acceptor(Some(NoiseResponder::kk(b.clone(), a.public()))),
    );
    pair.clean(20);
    assert_eq!(pair.connector.state(), ConnectionState::Connected);
    let (at_connector, at_acceptor) = exchange(&mut pair);
    assert_eq!((at_connector.len(), at_acceptor.len()), (1, 1));

    // A stranger who knows b's public key but is not a: b's acceptor refuses every response,
    // keeps no cookie, and the stranger never connects.
    let stranger = StaticKey::generate();
    let mut pair = Pair::new(
        connector(Some(NoiseInitiator::kk(stranger, b.public()))),
        acceptor(Some(NoiseResponder::kk(b.clone(), a.public()))),
    );
    pair.clean(6000);
    assert!(pair.accepted.is_none());
    assert_eq!(pair.acceptor.used_cookies(), 0);
    assert!(!pair.refused.is_empty());
    assert!(
        pair.refused
            .iter()
            .all(|e| *e == HandshakeError::KeyExchange(KeyExchangeError::Unauthenticated)),
        "{:?}",
        pair.refused
    );
    assert_eq!(
        disconnected(&mut pair.connector),
        Some(DisconnectReason::HandshakeTimedOut)
    );
}

#[test]
fn plaintext_on_either_side_is_refused_with_a_reason_never_downgraded() {
    // A secure connector, a plain acceptor: the acceptor answers with a plain challenge, and
    // the connector stops at once, saying why, having sent nothing plain.
    let mut pair = Pair::new(connector(Some(NoiseInitiator::nk(None))), acceptor(None));
    pair.clean(600);
    assert_eq!(
        disconnected(&mut pair.connector),
        Some(DisconnectReason::Unencrypted)
    );
    assert!(pair.accepted.is_none());
    let from_connector: Vec<u8> = pair.wire.iter().filter(|w| w.0).map(|w| w.1[0]).collect();
    assert_eq!(from_connector, vec![0xA5]);

    // A plain connector, a secure acceptor: refused, no challenge goes back.
    let mut pair = Pair::new(
        connector(None),
        acceptor(Some(NoiseResponder::nk(StaticKey::generate()))),
    );
    pair.clean(600);
    assert!(
        pair.refused
            .iter()
            .all(|e| *e == HandshakeError::EncryptionRequired)
    );
    assert!(pair.wire.iter().all(|(c, _)| *c), "nothing answered");

    // A secure response to a plain acceptor (a connector that skipped the challenge) is
    // refused with its own error.
    let mut plain = acceptor(None);
    let response = ControlPacket::SecureResponse {
        protocol_id: ConnectionConfig::default().protocol_id,
        cookie: ackwire_core::control::Cookie {
            timestamp_ms: 0,
            nonce: [0; 8],
            mac: [0; 16],
        },
        message: [0; 48],
    };
    let mut datagram = [0u8; 89];
    response.emit(&mut datagram).unwrap();
    assert_eq!(
        plain.receive(T0, CLIENT, &datagram, &mut [0u8; 128]).err(),
        Some(HandshakeError::EncryptionUnavailable)
    );
}

#[test]
fn a_man_in_the_middle_breaks_the_handshake_and_never_gets_a_keyed_link() {
    let server = StaticKey::generate();
    // He rewrites one byte of the first message: the acceptor refuses it and keeps nothing.
    let mut pair = Pair::new(
        connector(Some(NoiseInitiator::nk(Some(server.public())))),
        acceptor(Some(NoiseResponder::nk(server.clone()))),
    );
    pair.run(6000, &mut |from_connector, d| {
        if from_connector && d[0] == 0xA7 {
            d[60] ^= 1;
        }
        true
    });
    assert!(pair.accepted.is_none());
    assert_eq!(pair.acceptor.used_cookies(), 0);
    assert!(pair.refused.contains(&HandshakeError::KeyExchange(
        KeyExchangeError::Unauthenticated
    )));

    // He swaps the key in the challenge for his own and lets the rest through (a connector
    // without a pin takes that key): the first message is sealed to his key, which the real
    // acceptor cannot read, so no link forms. (Answering it himself is the man in the middle
    // that trust on first use cannot stop, and a pin does: the test above.)
    let mallory = StaticKey::generate().public();
    let mut pair = Pair::new(
        connector(Some(NoiseInitiator::nk(None))),
        acceptor(Some(NoiseResponder::nk(server.clone()))),
    );
    pair.run(6000, &mut |from_connector, d| {
        if !from_connector && d[0] == 0xA6 {
            d[33..65].copy_from_slice(&mallory);
        }
        true
    });
    assert!(pair.accepted.is_none());
    assert!(pair.refused.contains(&HandshakeError::KeyExchange(
        KeyExchangeError::Unauthenticated
    )));
    assert_eq!(
        disconnected(&mut pair.connector),
        Some(DisconnectReason::HandshakeTimedOut)
    );

    // He rewrites the answer: the connector refuses to be keyed by it.
    let mut pair = Pair::new(
        connector(Some(NoiseInitiator::nk(Some(server.public())))),
        acceptor(Some(NoiseResponder::nk(server.clone()))),
    );
    pair.run(1000, &mut |from_connector, d| {
        if !from_connector && d[0] == 0xA8 {
            d[20] ^= 0x80;
        }
        true
    });
    assert_eq!(
        disconnected(&mut pair.connector),
        Some(DisconnectReason::KeyExchangeFailed)
    );
}

#[test]
fn a_lost_answer_is_sent_again_byte_for_byte_and_the_link_still_keys() {
    let server = StaticKey::generate();
    let mut pair = Pair::new(
        connector(Some(NoiseInitiator::nk(Some(server.public())))),
        acceptor(Some(NoiseResponder::nk(server))),
    );
    let mut dropped = 0;
    pair.run(1000, &mut |from_connector, d| {
        if !from_connector && d[0] == 0xA8 && dropped < 2 {
            dropped += 1;
            return false;
        }
        true
    });
    assert_eq!(dropped, 2);
    assert_eq!(pair.connector.state(), ConnectionState::Connected);
    let answers: Vec<&Vec<u8>> = pair
        .wire
        .iter()
        .filter(|(c, d)| !c && d[0] == 0xA8)
        .map(|(_, d)| d)
        .collect();
    assert!(answers.len() >= 3);
    assert!(answers.iter().all(|a| *a == answers[0]));
    let (at_connector, at_acceptor) = exchange(&mut pair);
    assert_eq!((at_connector.len(), at_acceptor.len()), (1, 1));
}

/// A pair connected with NK, and the connector's secure response (`A7`).
fn connected_nk() -> (Pair, Vec<u8>) {
    let server = StaticKey::generate();
    let mut pair = Pair::new(
        connector(Some(NoiseInitiator::nk(Some(server.public())))),
        acceptor(Some(NoiseResponder::nk(server))),
    );
    pair.clean(20);
    let response = pair
        .wire
        .iter()
        .find(|(c, d)| *c && d[0] == 0xA7)
        .expect("a secure response")
        .1
        .clone();
    (pair, response)
}

#[test]
fn a_replayed_response_makes_no_second_connection() {
    let (mut pair, response) = connected_nk();
    // From another address (the MAC fails) and from the same one (the cookie is used).
    let mut reply = [0u8; 128];
    let now = pair.now + MS;
    assert_eq!(
        pair.acceptor
            .receive(now, b"203.0.113.9:1", &response, &mut reply)
            .err(),
        Some(HandshakeError::ForgedCookie)
    );
    assert_eq!(
        pair.acceptor
            .receive(now, CLIENT, &response, &mut reply)
            .err(),
        Some(HandshakeError::ReplayedCookie)
    );
}

#[test]
fn once_the_connectors_data_arrived_a_repeated_response_gets_no_answer() {
    // The answer goes out again only while the connector may have missed it: its data
    // proves it did not.
    let (mut pair, response) = connected_nk();
    let (_, at_acceptor) = exchange(&mut pair);
    assert_eq!(at_acceptor.len(), 1);
    let now = pair.now + MS;
    let accepted = pair.accepted.as_mut().expect("accepted");
    assert!(matches!(
        accepted.receive(now, &response),
        Err(ConnectionError::Unexpected { .. })
    ));
    let mut buf = [0u8; 1500];
    while accepted.poll_transmit(now, &mut buf).unwrap().is_some() {
        assert_ne!(buf[0], 0xA8, "no answer after the connector's data");
    }
    assert_eq!(accepted.state(), ConnectionState::Connected);
}
