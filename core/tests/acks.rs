//! Ack bookkeeping: the bitfield only ever acknowledges what arrived, each ack is reported once,
//! and malformed or impossible input is refused without changing anything.

use std::collections::HashSet;
use std::time::Duration;

use ackwire_core::wire::{HeaderError, PacketHeader};
use ackwire_core::{Config, Endpoint, Event, Mode, ReceiveError, TransmitError};
use proptest::prelude::*;

const MS: Duration = Duration::from_millis(1);

fn good() -> Config {
    Config {
        initial_mode: Mode::Good,
        ..Config::default()
    }
}

fn send(endpoint: &mut Endpoint, now: Duration) -> Vec<u8> {
    let mut buf = [0u8; 64];
    let t = endpoint
        .poll_transmit(now, &mut buf)
        .unwrap()
        .expect("a packet is due");
    buf[..t.len].to_vec()
}

#[test]
fn a_packet_sent_before_anything_arrived_acknowledges_nothing() {
    let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
    let bytes = send(&mut a, Duration::ZERO);
    let (header, _) = PacketHeader::decode(&bytes).unwrap();
    assert_eq!(
        header.ack_bits, 0,
        "bit 0 is `ack` itself, so nothing is claimed"
    );
}

#[test]
fn bit_zero_acknowledges_the_ack_sequence_itself() {
    let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
    let mut b = Endpoint::new(good(), Duration::ZERO).unwrap();
    let first = send(&mut a, Duration::ZERO);
    b.receive(MS, &first).unwrap();
    let reply = send(&mut b, MS);
    let (header, _) = PacketHeader::decode(&reply).unwrap();
    assert_eq!((header.ack, header.ack_bits), (0, 1));
    a.receive(2 * MS, &reply).unwrap();
    assert_eq!(
        a.poll_event(),
        Some(Event::Acked {
            sequence: 0,
            rtt: 2 * MS
        })
    );
    assert_eq!(a.poll_event(), None);
}

#[test]
fn a_duplicate_is_refused_and_acks_are_reported_once() {
    let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
    let mut b = Endpoint::new(good(), Duration::ZERO).unwrap();
    b.receive(MS, &send(&mut a, Duration::ZERO)).unwrap();
    let reply = send(&mut b, MS);
    a.receive(2 * MS, &reply).unwrap();
    let before = a.stats();
    assert_eq!(
        a.receive(3 * MS, &reply),
        Err(ReceiveError::Duplicate { sequence: 0 })
    );
    assert_eq!(a.stats(), before, "a refused datagram changes nothing");
    let acks = std::iter::from_fn(|| a.poll_event()).count();
    assert_eq!(acks, 1);
}

#[test]
fn malformed_and_impossible_datagrams_are_refused_without_changing_state() {
    let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
    send(&mut a, Duration::ZERO);
    let before = a.stats();
    assert_eq!(
        a.receive(MS, &[0x50, 0x00]),
        Err(ReceiveError::Header(HeaderError::Truncated {
            needed: 4,
            available: 2
        }))
    );
    // Acks sequence 5 although a has only sent 0.
    let mut forged = [0u8; 16];
    let len = PacketHeader {
        sequence: 0,
        ack: 5,
        ack_bits: 1,
    }
    .encode(&mut forged)
    .unwrap();
    assert_eq!(
        a.receive(MS, &forged[..len]),
        Err(ReceiveError::AckOfUnsent { ack: 5 })
    );
    assert_eq!(a.stats(), before);
    assert_eq!(a.poll_event(), None);
}

#[test]
fn packets_32_behind_the_newest_are_stale() {
    let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
    let packet = |sequence: u16| {
        let mut buf = [0u8; 16];
        let len = PacketHeader {
            sequence,
            ack: 0,
            ack_bits: 0,
        }
        .encode(&mut buf)
        .unwrap();
        buf[..len].to_vec()
    };
    a.receive(MS, &packet(100)).unwrap();
    assert!(
        a.receive(MS, &packet(69)).is_ok(),
        "31 behind is still ackable"
    );
    assert_eq!(
        a.receive(MS, &packet(68)),
        Err(ReceiveError::Stale {
            sequence: 68,
            newest: 100
        })
    );
}

#[test]
fn a_tiny_transmit_buffer_is_an_error_and_sends_nothing() {
    let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
    let mut buf = [0u8; 4];
    assert_eq!(
        a.poll_transmit(Duration::ZERO, &mut buf),
        Err(TransmitError::BufferTooSmall {
            needed: PacketHeader::MAX_LEN,
            available: 4
        })
    );
    assert_eq!(a.stats().counters.packets_sent, 0);
    assert_eq!(a.next_sequence(), 0);
}

#[test]
fn payload_rides_after_the_header_and_comes_out_intact() {
    let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
    let mut b = Endpoint::new(good(), Duration::ZERO).unwrap();
    let mut buf = [0u8; 1200];
    let t = a
        .poll_transmit_with(Duration::ZERO, &mut buf, |sequence, space| {
            assert_eq!(sequence, 0);
            space[..5].copy_from_slice(b"hello");
            5
        })
        .unwrap()
        .unwrap();
    assert_eq!(t.len, t.header_len + 5);
    let received = b.receive(MS, &buf[..t.len]).unwrap();
    assert_eq!((received.sequence, received.payload), (0, &b"hello"[..]));
}

#[test]
fn pacing_follows_the_mode_rate() {
    let mut a = Endpoint::new(Config::default(), Duration::ZERO).unwrap();
    let mut buf = [0u8; 64];
    assert!(a.poll_transmit(Duration::ZERO, &mut buf).unwrap().is_some());
    assert_eq!(a.poll_timeout(), 100 * MS, "bad mode: 10 pps");
    assert!(a.poll_transmit(99 * MS, &mut buf).unwrap().is_none());
    assert!(a.poll_transmit(100 * MS, &mut buf).unwrap().is_some());
}

proptest! {
    /// Random loss in both directions and random interleaving: the acks `a` hears of are
    /// exactly packets `b` accepted, each at most once, and never one that was lost.
    #[test]
    fn acks_never_claim_an_unreceived_packet(
        steps in proptest::collection::vec((any::<bool>(), any::<bool>(), 0u8..4), 1..600)
    ) {
        let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
        let mut b = Endpoint::new(good(), Duration::ZERO).unwrap();
        let mut b_received = HashSet::new();
        let mut acked = HashSet::new();
        let mut lost = HashSet::new();
        let mut now = Duration::ZERO;
        let mut buf = [0u8; 64];
        for (a_to_b_arrives, b_to_a_arrives, who) in steps {
            now += 10 * MS;
            if who != 1 {
                if let Some(t) = a.poll_transmit(now, &mut buf).unwrap() {
                    if a_to_b_arrives {
                        let packet = b.receive(now, &buf[..t.len]).unwrap();
                        b_received.insert(packet.sequence);
                    }
                }
            }
            if who != 0 {
                if let Some(t) = b.poll_transmit(now, &mut buf).unwrap() {
                    if b_to_a_arrives {
                        a.receive(now, &buf[..t.len]).unwrap();
                    }
                }
            }
            while let Some(event) = a.poll_event() {
                match event {
                    Event::Acked { sequence, .. } => {
                        prop_assert!(b_received.contains(&sequence), "acked {} never arrived", sequence);
                        prop_assert!(acked.insert(sequence), "acked {} twice", sequence);
                        prop_assert!(!lost.contains(&sequence));
                    }
                    Event::Lost { sequence } => {
                        prop_assert!(!acked.contains(&sequence));
                        prop_assert!(lost.insert(sequence));
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn any_bytes_are_refused_or_accepted_without_panicking(
        bytes in proptest::collection::vec(any::<u8>(), 0..64)
    ) {
        let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
        let before = a.stats();
        if a.receive(MS, &bytes).is_err() {
            prop_assert_eq!(a.stats(), before);
        }
    }
}

#[test]
fn the_sent_queue_is_bounded_by_its_ring() {
    // 1000 pps into a 32-slot ring with no replies: after 40 packets the 8 oldest have been
    // pushed out and reported lost, long before the 1 s loss timeout.
    let config = Config {
        good_rate_pps: 1000.0,
        sent_buffer_len: 32,
        ..good()
    };
    let mut a = Endpoint::new(config, Duration::ZERO).unwrap();
    let mut buf = [0u8; 64];
    for i in 0..40 {
        a.poll_transmit(i * MS, &mut buf).unwrap().unwrap();
    }
    let lost: Vec<Event> = std::iter::from_fn(|| a.poll_event()).collect();
    assert_eq!(
        lost,
        (0..8)
            .map(|sequence| Event::Lost { sequence })
            .collect::<Vec<_>>()
    );
}

#[test]
fn unacked_packets_are_lost_exactly_at_the_loss_timeout_and_poll_timeout_says_when() {
    let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
    let mut buf = [0u8; 64];
    a.poll_transmit(Duration::ZERO, &mut buf).unwrap().unwrap();
    // Time passes in a driver that only wakes when asked.
    let mut now = Duration::ZERO;
    while now < 1000 * MS {
        now = a.poll_timeout();
        a.handle_timeout(now);
        if now < 1000 * MS {
            assert_eq!(
                a.stats().counters.packets_lost,
                0,
                "not lost before 1 s (at {now:?})"
            );
        }
        let _ = a.poll_transmit(now, &mut buf);
    }
    assert_eq!(now, 1000 * MS, "woken at the loss deadline of packet 0");
    assert_eq!(a.poll_event(), Some(Event::Lost { sequence: 0 }));
}

/// Over two wraps of the 16-bit sequence space, in stretches where every packet is acked
/// before the next one leaves (the newest packet's time is then never stored in the sent
/// ring, the first stretch longer than half the sequence space), stretches with loss and sparse replies (several in flight, acked out of the
/// ring), and stretches of silence (lost by timeout or pushed out of the ring): every
/// packet is resolved exactly once, acked only if it arrived, with the exact RTT.
#[test]
fn every_packet_is_acked_or_lost_exactly_once_across_sequence_wraps() {
    for sent_buffer_len in [32, 256] {
        let config = Config {
            good_rate_pps: 1000.0,
            // Silence turns the mode bad; the pace stays brisk anyway.
            bad_rate_pps: 500.0,
            sent_buffer_len,
            ..good()
        };
        let loss_timeout = config.loss_timeout;
        let mut a = Endpoint::new(config.clone(), Duration::ZERO).unwrap();
        let mut b = Endpoint::new(config, Duration::ZERO).unwrap();
        let mut in_flight = std::collections::HashMap::new();
        let mut arrived = HashSet::new();
        let (mut acked, mut lost, mut sent) = (0u64, 0u64, 0u64);
        let mut random = 0x2545_f491_4f6c_dd1d_u64;
        let mut roll = |percent: u64| {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            random % 100 < percent
        };
        let mut buf = [0u8; 64];
        let mut step = 0;
        while sent < 2 * 65536 + 5000 {
            step += 1;
            let now = Duration::from_millis(step);
            // By turns: 20 % loss with a reply every third step, prompt replies without
            // loss, silence, prompt again; the first prompt stretch is longer than half the
            // sequence space.
            let (loss, reply_every) = match (step.saturating_sub(40_000) / 3000) % 4 {
                _ if step < 3000 => (20, 3),
                _ if step < 40_000 => (0, 1),
                0 | 3 => (0, 1),
                1 => (20, 3),
                _ => (100, u64::MAX),
            };
            if let Some(t) = a.poll_transmit(now, &mut buf).unwrap() {
                sent += 1;
                assert!(
                    in_flight.insert(t.sequence, now).is_none(),
                    "sequence {} in flight twice",
                    t.sequence
                );
                if !roll(loss) {
                    b.receive(now, &buf[..t.len]).unwrap();
                    arrived.insert(t.sequence);
                }
            }
            if step % reply_every == 0 {
                b.handle_timeout(now);
                if let Some(t) = b.poll_transmit(now, &mut buf).unwrap() {
                    if !roll(loss) {
                        a.receive(now, &buf[..t.len]).unwrap();
                    }
                }
            }
            while let Some(event) = a.poll_event() {
                match event {
                    Event::Acked { sequence, rtt } => {
                        let sent_at = in_flight
                            .remove(&sequence)
                            .expect("acked once, when in flight");
                        assert!(arrived.remove(&sequence), "acked {sequence} never arrived");
                        assert_eq!(rtt, now - sent_at, "RTT of {sequence}");
                        acked += 1;
                    }
                    Event::Lost { sequence } => {
                        in_flight
                            .remove(&sequence)
                            .expect("lost once, when in flight");
                        arrived.remove(&sequence);
                        lost += 1;
                    }
                    _ => {}
                }
            }
            if step % 100 == 0 {
                let oldest = in_flight.values().min().copied().unwrap_or(now);
                assert!(
                    now - oldest <= loss_timeout + 2 * MS,
                    "a packet sent at {oldest:?} still in flight at {now:?}"
                );
            }
        }
        let counters = a.stats().counters;
        assert_eq!(
            (counters.packets_acked, counters.packets_lost),
            (acked, lost)
        );
        assert_eq!(acked + lost + in_flight.len() as u64, sent);
        assert!(
            acked > sent / 2 && lost > 1000,
            "acked {acked}, lost {lost} of {sent}"
        );
    }
}
