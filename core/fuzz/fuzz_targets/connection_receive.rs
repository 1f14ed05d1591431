//! A stream of arbitrary datagrams into a connected connection (and into the acceptor that
//! made it, and a channel acceptor): nothing panics, and a refused datagram changes no state,
//! stats or buffers (but the count of packets with another connection's tag).
#![no_main]

use std::time::Duration;

use ackwire_core::{
    Accept, Acceptor, ChannelAcceptor, Connection, ConnectionConfig, ConnectionError, ReceiveError,
};
use libfuzzer_sys::fuzz_target;

const ADDRESS: &[u8] = b"fuzz";

/// A connector and the acceptor's connection after a lossless handshake.
fn connected() -> (Acceptor, Connection, Connection) {
    let config = ConnectionConfig::default();
    let mut acceptor = Acceptor::new(config.clone(), [3; 32]).unwrap();
    let mut client = Connection::connect(config, Duration::ZERO).unwrap();
    let (mut buf, mut reply) = ([0u8; 1200], [0u8; 64]);
    for _ in 0..2 {
        let len = client.poll_transmit(Duration::ZERO, &mut buf).unwrap().unwrap();
        match acceptor.receive(Duration::ZERO, ADDRESS, &buf[..len], &mut reply) {
            Ok(Accept::Reply { len }) => client.receive(Duration::ZERO, &reply[..len]).unwrap(),
            Ok(Accept::Connection(server)) => {
                let mut server = *server;
                let len = server.poll_transmit(Duration::ZERO, &mut buf).unwrap().unwrap();
                client.receive(Duration::ZERO, &buf[..len]).unwrap();
                return (acceptor, client, server);
            }
            other => panic!("{other:?}"),
        }
    }
    unreachable!()
}

fuzz_target!(|data: &[u8]| {
    let (mut acceptor, mut client, mut server) = connected();
    // Only a datagram it accepts moves a channel acceptor on: ids follow each other.
    let mut channel = ChannelAcceptor::new(ConnectionConfig::default(), 100).unwrap();
    let mut next_id = 100;
    client.send(1, b"state").unwrap();
    server.send(1, &[7u8; 3000]).unwrap();
    let mut buf = [0u8; 1200];
    let mut now = Duration::ZERO;
    // Each chunk: one byte of elapsed milliseconds, two of length, then the datagram. Real
    // packets from the peer are interleaved so the windows hold something.
    let mut rest = data;
    while let [elapsed, hi, lo, tail @ ..] = rest {
        now += Duration::from_millis(u64::from(*elapsed));
        let len = (usize::from(*hi) << 8 | usize::from(*lo)).min(tail.len());
        let (datagram, next) = tail.split_at(len);
        if let Ok(Some(len)) = client.poll_transmit(now, &mut buf) {
            let _ = server.receive(now, &buf[..len]);
        }
        let _ = server.poll_transmit(now, &mut [0u8; 1200]);
        let mut before = (server.stats(), server.buffered(), server.state());
        if let Err(e) = server.receive(now, datagram) {
            // A data packet without this connection's tag is counted, and changes nothing else.
            if let ConnectionError::Packet(ReceiveError::WrongConnection { .. }) = e {
                before.0.counters.packets_unauthenticated += 1;
            }
            assert_eq!((server.stats(), server.buffered(), server.state()), before);
        }
        while server.poll_event().is_some() {}
        let used = acceptor.used_cookies();
        if acceptor.receive(now, ADDRESS, datagram, &mut [0u8; 64]).is_err() {
            assert_eq!(acceptor.used_cookies(), used);
        }
        if let Ok(connection) = channel.receive(now, datagram) {
            assert_eq!(connection.connection_id(), Some(next_id));
            next_id += 1;
        }
        rest = next;
    }
});
