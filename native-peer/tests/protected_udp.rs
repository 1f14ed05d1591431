//! Packet protection over real UDP on loopback (stage 1: fixed keys from the test): a
//! protected `listen` and `connect` pair talks through a relay that records every datagram,
//! the demo messages flow both ways, and no recorded datagram carries their plaintext (the
//! same run unprotected does, so the check can see it).

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use ackwire_core::{ConnectionConfig, KeySource, PacketKeys};
use ackwire_peer::connections::Connections;
use ackwire_peer::link::{self, Link};

const TO_LISTENER: ([u8; 32], [u8; 12]) = ([5; 32], [6; 12]);
const TO_CONNECTOR: ([u8; 32], [u8; 12]) = ([7; 32], [8; 12]);
/// The demo message's fixed label, in every message the connector sends and the echo.
const LABEL: &[u8] = b"ackwire demo state";

#[derive(Debug)]
struct Fixed;

impl KeySource for Fixed {
    fn keys(&mut self, _connection_id: u64, _address: &[u8]) -> PacketKeys {
        PacketKeys::aes_256_gcm(TO_CONNECTOR, TO_LISTENER)
    }
}

/// Runs a `listen` and a `connect` peer through a recording relay for `run`; returns the
/// connector's messages delivered, its packets that failed to open, and every datagram seen.
fn run(protected: bool, run: Duration) -> (u64, u64, Vec<Vec<u8>>) {
    let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut server_link = Link::new(link::bind(loopback).unwrap(), None).unwrap();
    let mut client_link = Link::new(link::bind(loopback).unwrap(), None).unwrap();
    let relay = UdpSocket::bind(loopback).unwrap();
    relay.set_nonblocking(true).unwrap();
    let server_addr = server_link.local_addr().unwrap();
    let client_addr = client_link.local_addr().unwrap();
    let start = Instant::now();
    let config = ConnectionConfig::default();
    let mut server = Connections::listen(config.clone(), [1; 32], 16).unwrap();
    let mut client =
        Connections::connect(config, Duration::ZERO, relay.local_addr().unwrap()).unwrap();
    if protected {
        server
            .protect(|| Box::new(Fixed), || unreachable!())
            .unwrap();
        client
            .protect(
                || unreachable!(),
                || PacketKeys::aes_256_gcm(TO_LISTENER, TO_CONNECTOR),
            )
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut buf = vec![0u8; link::RECV_BUF_LEN];
    let mut bufs = link::RecvBuffers::new();
    while start.elapsed() < run {
        let now = start.elapsed();
        server_link.read_ready(now, &mut bufs, |link, from, datagram| {
            server.on_datagram(now, from, datagram, link)
        });
        client_link.read_ready(now, &mut bufs, |link, from, datagram| {
            client.on_datagram(now, from, datagram, link)
        });
        server.poll(now, &mut server_link);
        client.poll(now, &mut client_link);
        server_link.flush();
        client_link.flush();
        // The relay: the connector's datagrams to the listener, the listener's back.
        while let Ok((len, from)) = relay.recv_from(&mut buf) {
            seen.push(buf[..len].to_vec());
            let to = if from == client_addr {
                server_addr
            } else {
                client_addr
            };
            relay.send_to(&buf[..len], to).unwrap();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let stats = &client.stats()[0];
    (
        stats.messages_delivered,
        stats.counters.packets_unauthenticated + server.counters().packets_unauthenticated,
        seen,
    )
}

fn carries_label(datagram: &[u8]) -> bool {
    datagram.windows(LABEL.len()).any(|w| w == LABEL)
}

#[test]
fn a_protected_link_carries_the_demo_both_ways_and_no_datagram_shows_its_plaintext() {
    let (delivered, unauthenticated, seen) = run(true, Duration::from_secs(2));
    assert!(delivered >= 10, "{delivered} echoes delivered");
    assert_eq!(unauthenticated, 0);
    assert!(seen.len() >= 40, "{} datagrams", seen.len());
    assert!(!seen.iter().any(|d| carries_label(d)));

    let (delivered, _, seen) = run(false, Duration::from_secs(1));
    assert!(delivered >= 5);
    assert!(
        seen.iter().any(|d| carries_label(d)),
        "the check sees plaintext"
    );
}
