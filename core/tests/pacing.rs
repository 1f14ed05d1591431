//! Pacing with prompt acks: one packet per send interval, leaving as soon as a packet from the
//! peer has arrived in the interval (so its ack goes back at once), or at the interval's end.

use std::time::Duration;

use ackwire_core::{Config, Endpoint, Mode};

const MS: Duration = Duration::from_millis(1);

fn config(prompt_ack: bool) -> Config {
    Config::default()
        .with_initial_mode(Mode::Good)
        .with_prompt_ack(prompt_ack)
}

/// Sends from `endpoint` at `now` if it has a packet due; returns the bytes.
fn poll(endpoint: &mut Endpoint, now: Duration) -> Option<Vec<u8>> {
    let mut buf = [0u8; 64];
    let t = endpoint.poll_transmit(now, &mut buf).unwrap()?;
    Some(buf[..t.len].to_vec())
}

/// Two endpoints that both sent their first packet at 0 (their next interval ends at
/// 33.3 ms), and A's first packet, not yet delivered to B.
fn started_pair(prompt_ack: bool) -> (Endpoint, Endpoint, Vec<u8>) {
    let mut a = Endpoint::new(config(prompt_ack), Duration::ZERO).unwrap();
    let mut b = Endpoint::new(config(prompt_ack), Duration::ZERO).unwrap();
    let first = poll(&mut a, Duration::ZERO).unwrap();
    poll(&mut b, Duration::ZERO).unwrap();
    (a, b, first)
}

#[test]
fn a_packet_arriving_mid_interval_is_answered_at_once() {
    let (mut a, mut b, first) = started_pair(true);
    assert!(poll(&mut b, 10 * MS).is_none(), "nothing to ack yet: wait");
    b.receive(10 * MS, &first).unwrap();
    let answer = poll(&mut b, 10 * MS).expect("the ack leaves with the arrival");
    assert!(poll(&mut b, 11 * MS).is_none(), "one packet per interval");
    a.receive(10 * MS, &answer).unwrap();
    // A's RTT sample is the path's round trip (0 here plus 10 ms of waiting to send first),
    // not the up to 33 ms B would have held the ack for.
    assert_eq!(a.rtt(), Some(10 * MS));
}

#[test]
fn prompt_acks_keep_the_rate_at_one_packet_per_interval() {
    // The peer sends twice as often as we may: each of its packets asks for a prompt ack,
    // but we still send only 30 per second.
    let mut a = Endpoint::new(config(true), Duration::ZERO).unwrap();
    let mut peer = Endpoint::new(
        config(false)
            .with_good_rate_pps(60.0)
            .with_bad_rate_pps(60.0),
        Duration::ZERO,
    )
    .unwrap();
    let mut sent = 0;
    let mut now = Duration::ZERO;
    while now < Duration::from_secs(10) {
        if let Some(bytes) = poll(&mut peer, now) {
            a.receive(now, &bytes).unwrap();
        }
        if let Some(bytes) = poll(&mut a, now) {
            sent += 1;
            peer.receive(now, &bytes).unwrap();
        }
        now += MS;
    }
    assert!((299..=301).contains(&sent), "{sent} packets in 10 s");
}

#[test]
fn without_prompt_acks_the_packet_waits_for_the_end_of_its_interval() {
    let (_a, mut b, first) = started_pair(false);
    b.receive(10 * MS, &first).unwrap();
    assert!(poll(&mut b, 10 * MS).is_none());
    assert!(poll(&mut b, 33 * MS).is_none());
    assert!(poll(&mut b, 34 * MS).is_some(), "due at 33.3 ms");
}

#[test]
fn a_payload_writer_claiming_more_than_its_space_is_refused_and_nothing_is_sent() {
    use ackwire_core::TransmitError;

    let mut endpoint = Endpoint::new(config(true), Duration::ZERO).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(
        endpoint.poll_transmit_with(Duration::ZERO, &mut buf, |_, space| space.len() + 1),
        Err(TransmitError::PayloadOverflow {
            written: 56,
            available: 55
        })
    );
    assert_eq!(endpoint.stats().counters.packets_sent, 0);
    let t = endpoint.poll_transmit(Duration::ZERO, &mut buf).unwrap();
    assert_eq!(t.map(|t| t.sequence), Some(0), "the packet is still due");
}
