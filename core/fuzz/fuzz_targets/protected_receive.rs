//! A stream of arbitrary datagrams, and of real sealed packets with arbitrary bytes
//! rewritten, into a connected, protected connection: nothing panics; a datagram that is
//! refused changes nothing but the count of packets that failed to open; and no forgery is
//! ever taken in (every message delivered is one the peer sent, once).
#![no_main]

use std::time::Duration;

use ackwire_core::protection::PacketKeys;
use ackwire_core::{Accept, Acceptor, Connection, ConnectionConfig, ConnectionEvent};
use libfuzzer_sys::fuzz_target;

const ADDRESS: &[u8] = b"fuzz";
const TO_SERVER: ([u8; 32], [u8; 12]) = ([1; 32], [2; 12]);
const TO_CLIENT: ([u8; 32], [u8; 12]) = ([3; 32], [4; 12]);

/// A protected connector and the acceptor's connection after a lossless handshake.
fn connected() -> (Connection, Connection) {
    let config = ConnectionConfig::default();
    let mut acceptor = Acceptor::new(config.clone(), [3; 32]).unwrap();
    let mut client = Connection::connect(config, Duration::ZERO).unwrap();
    client
        .protect(PacketKeys::aes_256_gcm(TO_SERVER, TO_CLIENT))
        .unwrap();
    let (mut buf, mut reply) = ([0u8; 1200], [0u8; 64]);
    for _ in 0..2 {
        let len = client.poll_transmit(Duration::ZERO, &mut buf).unwrap().unwrap();
        match acceptor.receive(Duration::ZERO, ADDRESS, &buf[..len], &mut reply) {
            Ok(Accept::Reply { len }) => client.receive(Duration::ZERO, &reply[..len]).unwrap(),
            Ok(Accept::Connection(server)) => {
                let mut server = *server;
                server
                    .protect(PacketKeys::aes_256_gcm(TO_CLIENT, TO_SERVER))
                    .unwrap();
                let len = server.poll_transmit(Duration::ZERO, &mut buf).unwrap().unwrap();
                client.receive(Duration::ZERO, &buf[..len]).unwrap();
                return (client, server);
            }
            other => panic!("{other:?}"),
        }
    }
    unreachable!()
}

fuzz_target!(|data: &[u8]| {
    let (mut client, mut server) = connected();
    let mut buf = [0u8; 1200];
    let mut now = Duration::ZERO;
    let mut sent = 0u32;
    let mut delivered = Vec::new();
    // Each chunk: one byte of elapsed milliseconds, one of mode, two of length, then bytes.
    // Mode bit 0: the bytes are XORed into the client's next real packet instead of being
    // a datagram of their own (a rewrite of a sealed packet, header, payload or tag).
    let mut rest = data;
    while let [elapsed, mode, hi, lo, tail @ ..] = rest {
        now += Duration::from_millis(u64::from(*elapsed));
        let len = (usize::from(*hi) << 8 | usize::from(*lo)).min(tail.len());
        let (bytes, next) = tail.split_at(len);
        rest = next;
        if client.send(1, &sent.to_be_bytes()).is_ok() {
            sent += 1;
        }
        let Ok(Some(real)) = client.poll_transmit(now, &mut buf) else {
            continue;
        };
        let mut datagram = if mode & 1 == 1 {
            let mut rewritten = buf[..real].to_vec();
            for (b, x) in rewritten.iter_mut().zip(bytes) {
                *b ^= x;
            }
            rewritten
        } else {
            bytes.to_vec()
        };
        let forged = datagram != buf[..real];
        let before = (server.stats(), server.buffered(), server.state());
        match server.receive_in_place(now, &mut datagram) {
            Ok(()) => assert!(!forged || datagram.first().is_some_and(|b| b & 0x20 != 0)),
            Err(_) => {
                let mut after = server.stats();
                assert!(after.counters.packets_unauthenticated >= before.0.counters.packets_unauthenticated);
                after.counters.packets_unauthenticated = before.0.counters.packets_unauthenticated;
                assert_eq!((after, server.buffered(), server.state()), before);
            }
        }
        // The genuine packet too, when the fuzzer forged it (it may have been refused as a
        // duplicate of the rewrite only if that was no rewrite at all).
        if forged {
            let _ = server.receive_in_place(now, &mut buf[..real]);
        }
        while let Some(event) = server.poll_event() {
            if let ConnectionEvent::Message { bytes, .. } = event {
                delivered.push(u32::from_be_bytes(bytes.try_into().unwrap()));
            }
        }
        while let Ok(Some(len)) = server.poll_transmit(now, &mut buf) {
            let _ = client.receive_in_place(now, &mut buf[..len]);
        }
        while client.poll_event().is_some() {}
    }
    // Only messages the client sent, each once, in order.
    assert!(delivered.windows(2).all(|w| w[1] == w[0] + 1), "{delivered:?}");
    assert!(delivered.iter().all(|&m| m < sent));
});
