//! What a link reports is what the path is, measured by endpoints driven the way real drivers
//! drive them (each wakes only on its own timer or on an arriving datagram, clocks at a random
//! phase, timers a little late): RTT, the congestion mode at the threshold, loss, and the
//! header's size in both directions.

mod driven;

use std::time::Duration;

use ackwire_core::emulator::EmulatorConfig;
use ackwire_core::{Config, Event, Mode};
use driven::{Driven, delayed};

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);
const SEEDS: std::ops::Range<u64> = 0..4;

/// A side that sends at `pps` whatever its mode, so a run measures at one rate.
fn at_rate(pps: f64) -> Config {
    Config::default()
        .with_good_rate_pps(pps)
        .with_bad_rate_pps(pps)
}

const RATES: [(f64, f64); 3] = [(30.0, 30.0), (10.0, 10.0), (30.0, 10.0)];

#[test]
fn smoothed_rtt_is_the_path_round_trip_at_every_delay_and_rate() {
    for one_way_ms in [1, 10, 50, 100, 150] {
        let one_way = one_way_ms * MS;
        let truth = 2.0 * one_way.as_secs_f64() * 1000.0;
        let tolerance = (truth * 0.05).max(1.0);
        for (a_pps, b_pps) in RATES {
            for seed in SEEDS {
                let mut run = Driven::new(
                    [at_rate(a_pps), at_rate(b_pps)],
                    [delayed(one_way), delayed(one_way)],
                    seed,
                );
                run.run_until(10 * S);
                run.sample_every(100 * MS);
                run.run_until(30 * S);
                for (who, side) in run.sides.iter().enumerate() {
                    for (at, stats) in &side.snapshots {
                        assert!(
                            (stats.rtt_ms - truth).abs() <= tolerance,
                            "one-way {one_way:?} at {a_pps}/{b_pps} pps, seed {seed}: side {who} \
                             read {:.2} ms at {at:?}, the path is {truth} ms",
                            stats.rtt_ms
                        );
                        // A fixed delay has no jitter: the ack delay takes the peer's wait out.
                        assert!(
                            stats.jitter_ms < 0.5,
                            "jitter {:.2} ms on a fixed-delay path ({one_way:?}, {a_pps}/{b_pps}, \
                             seed {seed}, side {who})",
                            stats.jitter_ms
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn steady_state_headers_are_five_bytes_in_both_directions_at_equal_and_unequal_rates() {
    for (a_pps, b_pps) in RATES {
        for seed in SEEDS {
            let mut run = Driven::new(
                [at_rate(a_pps), at_rate(b_pps)],
                [delayed(20 * MS), delayed(20 * MS)],
                seed,
            );
            run.run_until(60 * S);
            for (who, side) in run.sides.iter().enumerate() {
                // The first packets go before anything is received (9 bytes), then with a
                // full ack until the peer holds one of ours, and with bitfield bytes until 32
                // packets have arrived (6 or 7): 3.2 s at 10 pps.
                let lens: Vec<usize> = side.header_lens_since(4 * S).collect();
                assert!(lens.len() >= 9 * 56, "side {who} sent {}", lens.len());
                assert!(
                    lens.iter().all(|&len| len == 5),
                    "{a_pps}/{b_pps} pps, seed {seed}: side {who} sent headers of {:?} bytes",
                    lens.iter().collect::<std::collections::BTreeSet<_>>()
                );
            }
        }
    }
}

/// When `side` changed mode, on its own clock.
fn mode_changes(run: &Driven, side: usize) -> Vec<(Duration, Mode)> {
    run.sides[side]
        .events
        .iter()
        .filter_map(|(at, event)| match event {
            Event::ModeChanged { mode, .. } => Some((*at, *mode)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_mode_decision_is_exact_at_the_rtt_threshold() {
    let config = Config::default();
    for seed in 0..8 {
        // True RTT 230 ms, under the 250 ms threshold: conditions are good from the start,
        // so good mode comes exactly the initial recovery time (4 s) after the start, and
        // stays.
        let mut under = Driven::symmetric(config.clone(), delayed(115 * MS), seed);
        under.run_until(60 * S);
        for side in 0..2 {
            let due = under.sides[side].offset + config.initial_recovery_time;
            let changes = mode_changes(&under, side);
            // The driver hears of it when its timer fires, up to the timer slack late.
            assert!(
                matches!(changes[..], [(at, Mode::Good)] if at >= due && at <= due + under.timer_slack),
                "seed {seed}, side {side} at a true RTT of 230 ms: {changes:?}, due at {due:?}"
            );
        }
        // True RTT 260 ms: never good.
        let mut over = Driven::symmetric(config.clone(), delayed(130 * MS), seed);
        over.run_until(60 * S);
        for side in 0..2 {
            assert_eq!(
                mode_changes(&over, side),
                [],
                "seed {seed}, side {side} at a true RTT of 260 ms"
            );
            assert_eq!(over.sides[side].endpoint.mode(), Mode::Bad);
        }
    }
}

#[test]
fn cumulative_loss_is_the_injected_rate_over_2000_packets() {
    for (loss, seed) in [(2.0, 1), (10.0, 2), (10.0, 3), (25.0, 4)] {
        let link = EmulatorConfig::default()
            .with_latency(30 * MS)
            .with_loss_percent(loss);
        let mut run = Driven::symmetric(at_rate(30.0), link, seed);
        // 2,000 packets at 30 pps, plus the last ones' loss timeout.
        run.run_until(2000 * S / 30 + 2 * S);
        for side in 0..2 {
            let stats = run.sides[side].endpoint.stats();
            let resolved = stats.counters.packets_acked + stats.counters.packets_lost;
            assert!(resolved >= 2000, "side {side} resolved {resolved}");
            assert!(
                (stats.loss_cumulative_percent - loss).abs() <= 1.5,
                "side {side}: {:.2} % measured, {loss} % injected (seed {seed})",
                stats.loss_cumulative_percent
            );
            // And it is exactly what the link dropped, but for packets still in flight: no
            // ack was missed (32-packet redundancy), nothing counted twice.
            let dropped = run.links[side].stats().dropped;
            let in_flight = stats.counters.packets_sent - resolved;
            let lost = stats.counters.packets_lost;
            assert!(
                lost <= dropped && dropped - lost <= in_flight,
                "side {side}: {lost} declared lost, the link dropped {dropped}, {in_flight} in flight"
            );
            assert_eq!(stats.loss_window_packets, 64);
        }
    }
}
