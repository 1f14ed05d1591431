//! Arbitrary datagrams from several addresses into a listener serving one live connection,
//! plain or encrypted (the key exchange in the handshake; the input's first bit picks):
//! nothing panics, a refused datagram changes neither the table nor the live connection, and
//! the table never holds more than the peers that completed a handshake.
#![no_main]

use std::time::Duration;

use ackwire_core::{
    Connection, ConnectionConfig, Listener, MAX_ADDRESS_LEN, NoiseInitiator, NoiseResponder,
    StaticKey,
};
use libfuzzer_sys::fuzz_target;

const PEER: &[u8] = b"peer";

/// Hands `client`'s due datagrams to the listener and the listener's back, at `now`.
fn exchange(listener: &mut Listener, client: &mut Connection, now: Duration) {
    let (mut buf, mut reply) = ([0u8; 1200], [0u8; 128]);
    while let Ok(Some(len)) = client.poll_transmit(now, &mut buf) {
        if let Ok(Some(reply_len)) = listener.receive(now, PEER, &buf[..len], &mut reply) {
            let _ = client.receive(now, &reply[..reply_len]);
        }
    }
    while let Ok(Some((to, len))) = listener.poll_transmit(now, &mut buf) {
        if to == PEER {
            let _ = client.receive(now, &buf[..len]);
        }
    }
    while listener.poll_event().is_some() {}
    while client.poll_event().is_some() {}
}

/// The table size and the live connection's state, but for the count of packets that failed
/// to open: the one change a refused protected datagram makes (`docs/wire.md`).
fn snapshot(
    listener: &Listener,
) -> (usize, Option<(ackwire_core::Stats, ackwire_core::Buffered, ackwire_core::ConnectionState)>) {
    let live = listener.connection(PEER).map(|c| {
        let mut stats = c.stats();
        stats.counters.packets_unauthenticated = 0;
        (stats, c.buffered(), c.state())
    });
    (listener.len(), live)
}

fuzz_target!(|data: &[u8]| {
    let config = ConnectionConfig::default();
    let mut listener = Listener::new(config.clone(), [9; 32]).unwrap().with_max_connections(4);
    let mut client = Connection::connect(config, Duration::ZERO).unwrap();
    let secure = data.first().is_some_and(|b| b & 1 == 1);
    if secure {
        let key = StaticKey::from_private([3; 32]);
        client.secure(NoiseInitiator::nk(Some(key.public()))).unwrap();
        listener = listener.with_responder(NoiseResponder::nk(key)).unwrap();
    }
    let mut now = Duration::ZERO;
    for _ in 0..3 {
        exchange(&mut listener, &mut client, now);
        now += Duration::from_millis(5);
    }
    assert!(listener.connection(PEER).is_some(), "handshake completes");
    client.send(1, b"state").unwrap();
    // Each chunk: an address selector, one byte of elapsed milliseconds, two of length, then
    // the datagram. The live peer's own traffic is interleaved.
    let long = [b'x'; MAX_ADDRESS_LEN + 1];
    let mut rest = data;
    while let [selector, elapsed, hi, lo, tail @ ..] = rest {
        now += Duration::from_millis(u64::from(*elapsed));
        let len = (usize::from(*hi) << 8 | usize::from(*lo)).min(tail.len());
        let (datagram, next) = tail.split_at(len);
        let from: &[u8] = match selector % 4 {
            0 => PEER,
            1 => b"stranger",
            2 => &long,
            _ => std::slice::from_ref(selector),
        };
        exchange(&mut listener, &mut client, now);
        let before = snapshot(&listener);
        let mut datagram = datagram.to_vec();
        if listener.receive_in_place(now, from, &mut datagram, &mut [0u8; 128]).is_err() {
            let after = snapshot(&listener);
            assert_eq!(after, before, "a refused datagram changed something");
        }
        // Only a completed handshake creates state, and the table is bounded.
        assert!(listener.len() <= 4);
        let _ = listener.poll_timeout();
        rest = next;
    }
});
