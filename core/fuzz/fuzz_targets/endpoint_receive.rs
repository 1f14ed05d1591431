//! A stream of arbitrary datagrams into one endpoint that keeps sending: nothing panics, and a
//! refused datagram leaves the stats untouched.
#![no_main]

use std::time::Duration;

use ackwire_core::{Config, Endpoint};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut endpoint = Endpoint::new(Config::default(), Duration::ZERO).unwrap();
    let mut buf = [0u8; 64];
    let mut now = Duration::ZERO;
    // Each chunk: one byte of elapsed milliseconds, one byte of length, then the datagram.
    let mut rest = data;
    while let [elapsed, len, tail @ ..] = rest {
        now += Duration::from_millis(u64::from(*elapsed));
        let len = usize::from(*len).min(tail.len());
        let (datagram, next) = tail.split_at(len);
        let _ = endpoint.poll_transmit(now, &mut buf);
        let before = endpoint.stats();
        if endpoint.receive(now, datagram).is_err() {
            assert_eq!(endpoint.stats(), before);
        }
        while endpoint.poll_event().is_some() {}
        rest = next;
    }
});
