//! Ack bookkeeping: the bitfield only ever acknowledges what arrived, each ack is reported once,
//! and malformed or impossible input is refused without changing anything.

use std::collections::HashSet;
use std::time::Duration;

use ackwire_core::wire::{AckDelay, AckField, HeaderError, PacketHeader};
use ackwire_core::{Config, Endpoint, Event, Mode, ReceiveError, TransmitError};
use proptest::prelude::*;

const MS: Duration = Duration::from_millis(1);

fn good() -> Config {
    Config::default().with_initial_mode(Mode::Good)
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
    assert_eq!(
        (header.ack, header.ack_bits),
        (AckField::Full(0), 1),
        "a's first ack goes in full: b holds no ack to resolve a low byte against"
    );
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
        a.receive(MS, &[0x90, 0x00]),
        Err(ReceiveError::Header(HeaderError::Truncated {
            needed: 5,
            available: 2
        }))
    );
    // Acks sequence 5 although a has only sent 0.
    let mut forged = [0u8; 16];
    let len = PacketHeader {
        sequence: 0,
        ack: AckField::Full(5),
        ack_bits: 1,
        ack_delay: AckDelay(0),
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
        let len = PacketHeader::first(sequence).encode(&mut buf).unwrap();
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
            if who != 1
                && let Some(t) = a.poll_transmit(now, &mut buf).unwrap()
                    && a_to_b_arrives {
                        let packet = b.receive(now, &buf[..t.len]).unwrap();
                        b_received.insert(packet.sequence);
                    }
            if who != 0
                && let Some(t) = b.poll_transmit(now, &mut buf).unwrap()
                    && b_to_a_arrives {
                        a.receive(now, &buf[..t.len]).unwrap();
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
    // 1000 pps with no replies: once `sent_buffer_len` packets are in flight, each new one
    // pushes the oldest out, reported lost long before the 1 s loss timeout. The 256-slot
    // ring starts small and grows to hold them all first.
    for (sent_buffer_len, sent) in [(32u16, 40u16), (256, 300)] {
        let config = good()
            .with_good_rate_pps(1000.0)
            .with_sent_buffer_len(sent_buffer_len);
        let mut a = Endpoint::new(config, Duration::ZERO).unwrap();
        let mut buf = [0u8; 64];
        for i in 0..u32::from(sent) {
            a.poll_transmit(i * MS, &mut buf).unwrap().unwrap();
        }
        let lost: Vec<Event> = std::iter::from_fn(|| a.poll_event()).collect();
        assert_eq!(
            lost,
            (0..sent - sent_buffer_len)
                .map(|sequence| Event::Lost { sequence })
                .collect::<Vec<_>>()
        );
    }
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
        let config = good()
            .with_good_rate_pps(1000.0)
            // Silence turns the mode bad; the pace stays brisk anyway.
            .with_bad_rate_pps(500.0)
            .with_sent_buffer_len(sent_buffer_len);
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
                if let Some(t) = b.poll_transmit(now, &mut buf).unwrap()
                    && !roll(loss)
                {
                    a.receive(now, &buf[..t.len]).unwrap();
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

/// A data packet from the peer with the given header fields and an empty payload.
fn packet(sequence: u16, ack: AckField, ack_bits: u32, ack_delay: u8) -> Vec<u8> {
    let mut buf = [0u8; PacketHeader::MAX_LEN];
    let len = PacketHeader {
        sequence,
        ack,
        ack_bits,
        ack_delay: AckDelay(ack_delay),
    }
    .encode(&mut buf)
    .unwrap();
    buf[..len].to_vec()
}

/// An endpoint that has sent `count` packets, one per millisecond from 0.
fn sent(count: u16) -> Endpoint {
    let config = good().with_good_rate_pps(1000.0);
    let mut a = Endpoint::new(config, Duration::ZERO).unwrap();
    for i in 0..count {
        send(&mut a, u32::from(i) * MS);
    }
    a
}

#[test]
fn a_low_byte_ack_before_any_full_one_is_refused_and_changes_nothing() {
    let mut a = sent(3);
    let before = a.stats();
    assert_eq!(
        a.receive(5 * MS, &packet(0, AckField::Low(1), 1, 0)),
        Err(ReceiveError::UnresolvableAck)
    );
    assert_eq!(a.stats(), before);
    // In full, the same ack is taken; then a low byte resolves against it.
    a.receive(5 * MS, &packet(0, AckField::Full(1), 1, 0))
        .unwrap();
    a.receive(6 * MS, &packet(1, AckField::Low(2), 0b11, 0))
        .unwrap();
    let acked: Vec<u16> = std::iter::from_fn(|| a.poll_event())
        .filter_map(|e| match e {
            Event::Acked { sequence, .. } => Some(sequence),
            _ => None,
        })
        .collect();
    assert_eq!(acked, [1, 2]);
}

#[test]
fn a_reordered_packet_keeps_its_payload_but_not_its_low_byte_ack() {
    let mut a = sent(4);
    a.receive(5 * MS, &packet(0, AckField::Full(0), 1, 0))
        .unwrap();
    a.receive(5 * MS, &packet(2, AckField::Low(1), 0b11, 0))
        .unwrap();
    while a.poll_event().is_some() {}
    // Packet 1 arrives late: its low byte could stand for an ack from before 1 (newer packets
    // repeat what it acknowledges), so it is accepted for its payload and its acks ignored.
    let late = packet(1, AckField::Low(3), 0b1111, 0);
    let received = a.receive(6 * MS, &late).unwrap();
    assert_eq!(received.sequence, 1);
    assert_eq!(
        a.poll_event(),
        None,
        "no ack taken from a reordered low byte"
    );
    assert_eq!(a.stats().counters.packets_acked, 2);
    // A full ack in a reordered packet is unambiguous and taken.
    let mut b = sent(4);
    b.receive(5 * MS, &packet(0, AckField::Full(0), 1, 0))
        .unwrap();
    b.receive(5 * MS, &packet(2, AckField::Low(1), 0b11, 0))
        .unwrap();
    b.receive(6 * MS, &packet(1, AckField::Full(3), 0b1111, 0))
        .unwrap();
    assert_eq!(b.stats().counters.packets_acked, 4);
}

#[test]
fn the_rtt_sample_is_the_round_trip_less_the_peers_hold() {
    // Packet 0 left at 0 and its ack arrives at 30 ms, held 20 ms by the peer: 10 ms of path.
    let mut a = sent(1);
    a.receive(30 * MS, &packet(0, AckField::Full(0), 1, 40))
        .unwrap();
    assert_eq!(a.rtt(), Some(10 * MS));
    assert_eq!(
        a.poll_event(),
        Some(Event::Acked {
            sequence: 0,
            rtt: 30 * MS
        }),
        "the event reports the raw time, hold included"
    );
}

#[test]
fn a_peer_claiming_a_hold_longer_than_the_round_trip_cannot_make_rtt_negative() {
    let mut a = sent(1);
    // 127 ms of claimed hold on a 30 ms round trip.
    a.receive(30 * MS, &packet(0, AckField::Full(0), 1, 254))
        .unwrap();
    assert_eq!(a.rtt(), Some(Duration::ZERO));
}

#[test]
fn a_saturated_ack_delay_gives_no_rtt_sample() {
    let mut a = sent(1);
    a.receive(300 * MS, &packet(0, AckField::Full(0), 1, 255))
        .unwrap();
    assert_eq!(a.rtt(), None, "held 127.25 ms or more: the hold is unknown");
    assert_eq!(a.stats().counters.packets_acked, 1, "the ack itself counts");
}

#[test]
fn only_the_packet_the_ack_names_gives_an_rtt_sample() {
    // Packets 0..3 left at 0, 1, 2, 3 ms; one header at 50 ms acks all four, held 10 ms: only
    // packet 3's sample (50 - 3 - 10 = 37 ms) is known; the others were held longer.
    let mut a = sent(4);
    a.receive(50 * MS, &packet(0, AckField::Full(3), 0b1111, 20))
        .unwrap();
    assert_eq!(a.rtt(), Some(37 * MS));
    assert_eq!(a.stats().counters.packets_acked, 4);
}

#[test]
fn each_side_sends_its_ack_as_a_low_byte_once_the_peer_holds_an_ack_of_it() {
    // b sends three times as often as a, so the two sequence counters drift apart; the ack's
    // low byte depends only on acks moving, and both directions settle at 5 bytes.
    let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
    let mut b = Endpoint::new(
        good().with_good_rate_pps(90.0).with_bad_rate_pps(90.0),
        Duration::ZERO,
    )
    .unwrap();
    let mut buf = [0u8; 64];
    let mut lens = (Vec::new(), Vec::new());
    for ms in 0..20_000u32 {
        let now = ms * MS;
        if let Some(t) = a.poll_transmit(now, &mut buf).unwrap() {
            lens.0.push(t.header_len);
            b.receive(now, &buf[..t.len]).unwrap();
        }
        if let Some(t) = b.poll_transmit(now, &mut buf).unwrap() {
            lens.1.push(t.header_len);
            a.receive(now, &buf[..t.len]).unwrap();
        }
    }
    assert!(b.next_sequence().wrapping_sub(a.next_sequence()) > 1000);
    // Once 32 of the peer's packets have arrived (the bitfield filling), every header is 5
    // bytes: a's after its first 32 packets, b's after three times as many of its own.
    assert!(
        lens.0[32..].iter().all(|&len| len == 5),
        "{:?}",
        &lens.0[..40]
    );
    assert!(
        lens.1[32 * 3..].iter().all(|&len| len == 5),
        "{:?}",
        &lens.1[..100]
    );
}

#[test]
fn a_packet_handed_over_after_the_clock_moved_on_is_held_from_its_arrival() {
    // b's clock has reached 20 ms (it sent at 20) when the driver hands over a's packet,
    // which the kernel stamped at 12 ms: a read deferred to coalesce wake-ups.
    let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
    let mut b = Endpoint::new(good(), Duration::ZERO).unwrap();
    let first = send(&mut a, Duration::ZERO);
    send(&mut b, 20 * MS);
    b.receive(12 * MS, &first).unwrap();
    let reply = send(&mut b, 40 * MS);
    let (header, _) = PacketHeader::decode(&reply).unwrap();
    // Held from 12 ms to 40 ms, not from the clock's 20 ms.
    assert_eq!(header.ack_delay, AckDelay::from_nanos(28_000_000));
    // And a's RTT sample is the path's: 12 ms out, 2 ms back, the 28 ms hold left out.
    a.receive(42 * MS, &reply).unwrap();
    assert_eq!(a.stats().rtt_ms, 14.0);
}

#[test]
fn an_ack_handed_over_late_measures_the_round_trip_to_its_arrival() {
    let mut a = Endpoint::new(good(), Duration::ZERO).unwrap();
    let mut b = Endpoint::new(good(), Duration::ZERO).unwrap();
    let first = send(&mut a, Duration::ZERO);
    b.receive(5 * MS, &first).unwrap();
    let reply = send(&mut b, 5 * MS);
    // a sent again at 34 ms before its driver handed over the reply that arrived at 10 ms.
    send(&mut a, 34 * MS);
    a.receive(10 * MS, &reply).unwrap();
    assert_eq!(a.stats().rtt_ms, 10.0);
}
