//! Two endpoints through the seeded emulator in virtual time: RTT, loss, acks, mode.

mod common;

use std::time::Duration;

use ackwire_core::emulator::EmulatorConfig;
use ackwire_core::{Config, Event, Mode};
use common::Pair;

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

fn delayed(latency: Duration) -> EmulatorConfig {
    EmulatorConfig::default().with_latency(latency)
}

#[test]
fn measured_rtt_tracks_injected_delay() {
    // The peer's wait before acking rides in the header and is taken out: the smoothed RTT is
    // the two one-way delays (tests/fidelity.rs checks the same with drivers' timing).
    for one_way in [10 * MS, 50 * MS, 100 * MS] {
        let mut pair = Pair::symmetric(Config::default(), delayed(one_way), 1);
        pair.run_until(20 * S);
        let stats = pair.a.stats();
        assert_eq!(stats.mode, Mode::Good);
        let truth = (2 * one_way).as_secs_f64() * 1000.0;
        assert!(
            (stats.rtt_ms - truth).abs() <= (truth * 0.05).max(1.0),
            "one-way {one_way:?}: rtt {} for a {truth} ms path",
            stats.rtt_ms
        );
    }
}

#[test]
fn measured_loss_tracks_injected_loss() {
    for loss in [5.0, 20.0] {
        let link = EmulatorConfig::default()
            .with_latency(20 * MS)
            .with_loss_percent(loss);
        let mut pair = Pair::symmetric(Config::default(), link, 42);
        pair.run_until(120 * S);
        let stats = pair.a.stats();
        let resolved = (stats.counters.packets_acked + stats.counters.packets_lost) as f64;
        let measured = stats.counters.packets_lost as f64 * 100.0 / resolved;
        // ~3000 packets: one binomial standard deviation is under 0.8 points at 20%.
        assert!(
            (measured - loss).abs() < 2.5,
            "injected {loss}%, measured {measured}%"
        );
        // The windowed figure (last 64 packets) is noisier but in the same neighbourhood.
        assert!((stats.loss_percent - loss).abs() < 15.0, "{stats:?}");
    }
}

#[test]
fn every_acked_packet_was_really_received_by_the_peer() {
    let link = EmulatorConfig::default()
        .with_latency(30 * MS)
        .with_jitter(20 * MS)
        .with_loss_percent(10.0)
        .with_duplicate_percent(5.0)
        .with_reorder_percent(5.0)
        .with_reorder_delay(60 * MS);
    let mut pair = Pair::symmetric(Config::default(), link, 9);
    pair.run_until(60 * S);
    let acked: Vec<u16> = pair.a_log.acked().collect();
    assert!(acked.len() > 1000);
    for sequence in &acked {
        assert!(
            pair.b_log.received.contains(sequence),
            "acked {sequence} never arrived"
        );
    }
    // ...and exactly once.
    let unique: std::collections::HashSet<_> = acked.iter().collect();
    assert_eq!(unique.len(), acked.len());
}

#[test]
fn no_packet_is_both_acked_and_lost() {
    let link = EmulatorConfig::default()
        .with_latency(40 * MS)
        .with_jitter(40 * MS)
        .with_loss_percent(15.0);
    let mut pair = Pair::symmetric(Config::default(), link, 3);
    pair.run_until(30 * S);
    let acked: std::collections::HashSet<u16> = pair.a_log.acked().collect();
    assert!(pair.a_log.lost().all(|s| !acked.contains(&s)));
    let resolved = acked.len() + pair.a_log.lost().count();
    // Only the last second's packets may still be pending.
    assert!(pair.a_log.sent.len() - resolved <= 31);
}

#[test]
fn an_ack_survives_losing_every_packet_for_under_a_second() {
    let mut pair = Pair::symmetric(Config::default(), delayed(10 * MS), 5);
    pair.run_until(10 * S);
    assert_eq!(pair.a.mode(), Mode::Good);
    let lost_before = pair.a.stats().counters.packets_lost;
    // The return path goes dark for 900 ms: none of b's acks reach a.
    pair.b_to_a
        .set_config(
            EmulatorConfig::default()
                .with_latency(10 * MS)
                .with_loss_percent(100.0),
        )
        .unwrap();
    pair.run_for(900 * MS);
    pair.b_to_a.set_config(delayed(10 * MS)).unwrap();
    pair.run_for(2 * S);
    assert_eq!(
        pair.a.stats().counters.packets_lost,
        lost_before,
        "every packet sent during the blackout was acked by the redundant bitfield"
    );
}

#[test]
fn a_blackout_longer_than_the_loss_timeout_declares_packets_lost() {
    let mut pair = Pair::symmetric(Config::default(), delayed(10 * MS), 5);
    pair.run_until(10 * S);
    pair.b_to_a
        .set_config(EmulatorConfig::default().with_loss_percent(100.0))
        .unwrap();
    pair.run_for(3 * S);
    assert!(pair.a.stats().counters.packets_lost > 30);
}

#[test]
fn a_peer_gone_silent_drops_the_link_to_bad_mode_within_a_loss_timeout() {
    // RTT samples stop with the acks, so RTT alone would keep a dead link in good mode at
    // 30 pps; silence (losses and no ack for a whole loss timeout) must count as bad.
    let mut pair = Pair::symmetric(Config::default(), delayed(10 * MS), 6);
    pair.run_until(10 * S);
    assert_eq!(pair.a.mode(), Mode::Good);
    pair.b_to_a
        .set_config(EmulatorConfig::default().with_loss_percent(100.0))
        .unwrap();
    let silence_began = pair.now;
    pair.run_for(3 * S);
    assert_eq!(pair.a.mode(), Mode::Bad);
    let went_bad = pair
        .a_log
        .events
        .iter()
        .filter(|(at, _)| *at >= silence_began)
        .find_map(|(at, e)| {
            matches!(
                e,
                Event::ModeChanged {
                    mode: Mode::Bad,
                    ..
                }
            )
            .then_some(*at)
        })
        .expect("a dropped to bad mode");
    // The last ack arrived just before the silence; the first loss is declared one loss
    // timeout (1 s) after the first unacked packet was sent.
    let after = went_bad - silence_began;
    assert!(
        after <= S + 100 * MS,
        "bad mode {after:?} after the peer went silent"
    );
    // And it stays there while the peer stays silent, however long (recovery needs acks).
    pair.run_for(30 * S);
    assert_eq!(pair.a.mode(), Mode::Bad);
}

#[test]
fn sending_into_the_void_never_reaches_good_mode() {
    let mut pair = Pair::new(
        Config::default(),
        EmulatorConfig::default().with_loss_percent(100.0),
        EmulatorConfig::default(),
        8,
    );
    pair.run_until(30 * S);
    assert_eq!(pair.a.mode(), Mode::Bad);
    assert_eq!(pair.a.stats().send_rate_pps, 10.0);
}

#[test]
fn asymmetric_and_clumped_rates_keep_every_received_packet_acked() {
    // a sends at 30 pps; b is held at 10 pps. Datagrams to b arrive in clumps (up to 150 ms
    // of jitter). Every packet b receives must still be acked to a: 32 bits cover ~1 s at 30.
    let fast = Config::default().with_initial_mode(Mode::Good);
    let slow = Config::default().with_good_rate_pps(10.0);
    let mut pair = Pair::new(
        fast.clone(),
        EmulatorConfig::default()
            .with_latency(80 * MS)
            .with_jitter(75 * MS),
        delayed(5 * MS),
        21,
    );
    pair.b = ackwire_core::Endpoint::new(slow, Duration::ZERO).unwrap();
    pair.run_until(30 * S);
    let acked: std::collections::HashSet<u16> = pair.a_log.acked().collect();
    assert_eq!(pair.a.stats().counters.packets_lost, 0);
    // Everything b received more than a second before the end has been acked.
    let settled = pair.b_log.received.len() - 40;
    assert!(
        acked.len() >= settled,
        "{} of {}",
        acked.len(),
        pair.b_log.received.len()
    );
    assert!(
        pair.b_log
            .received
            .iter()
            .all(|s| acked.contains(s) || *s as usize > settled)
    );
}

#[test]
fn sequences_and_acks_keep_working_across_the_wrap_from_65535_to_0() {
    let config = Config::default().with_initial_mode(Mode::Good);
    let mut pair = Pair::symmetric(config, delayed(5 * MS), 1);
    // 30 pps for 40 minutes: 72,000 packets each way, past one full lap of sequences.
    pair.run_until(2400 * S);
    let stats = pair.a.stats();
    assert!(stats.counters.packets_sent > 70_000);
    assert_eq!(stats.counters.packets_lost, 0);
    assert!(stats.counters.packets_acked >= stats.counters.packets_sent - 2);
    assert_eq!(stats.last_header_len, 5);
}

#[test]
fn rising_rtt_drops_to_bad_mode_and_recovery_follows_t() {
    let mut pair = Pair::symmetric(Config::default(), delayed(20 * MS), 2);
    pair.run_until(20 * S);
    assert_eq!(pair.a.mode(), Mode::Good);
    // Congest: 200 ms each way, RTT well over the 250 ms threshold.
    pair.a_to_b.set_config(delayed(200 * MS)).unwrap();
    pair.b_to_a.set_config(delayed(200 * MS)).unwrap();
    pair.run_for(5 * S);
    assert_eq!(pair.a.mode(), Mode::Bad);
    assert_eq!(pair.a.stats().send_rate_pps, 10.0);
    pair.a_to_b.set_config(delayed(20 * MS)).unwrap();
    pair.b_to_a.set_config(delayed(20 * MS)).unwrap();
    pair.run_for(30 * S);
    assert_eq!(pair.a.mode(), Mode::Good);
    // The return to good came exactly t after conditions (smoothed RTT) turned good.
    let changes: Vec<_> = pair
        .a_log
        .events
        .iter()
        .filter_map(|(at, e)| match e {
            Event::ModeChanged { mode, .. } => Some((*at, *mode)),
            _ => None,
        })
        .collect();
    assert_eq!(
        changes.iter().map(|(_, m)| *m).collect::<Vec<_>>(),
        [Mode::Good, Mode::Bad, Mode::Good]
    );
    assert_eq!(
        changes[0].0,
        4 * S,
        "initial t of 4 s with good conditions from the start"
    );
}
