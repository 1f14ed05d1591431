//! Soak: ten virtual minutes over a hostile link (bursty loss, jitter, duplication,
//! reordering, a rate limit), checking the bookkeeping invariants at the end.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use ackwire_core::Config;
use ackwire_core::emulator::{EmulatorConfig, GilbertElliott};
use common::Pair;

#[test]
fn ten_minutes_of_a_hostile_link_keep_the_books_exact() {
    let link = EmulatorConfig::default()
        .with_latency(Duration::from_millis(60))
        .with_jitter(Duration::from_millis(30))
        .with_loss_percent(2.0)
        .with_burst_loss(Some(GilbertElliott {
            good_to_bad: 0.02,
            bad_to_good: 0.3,
            loss_in_good: 0.0,
            loss_in_bad: 0.8,
        }))
        .with_duplicate_percent(2.0)
        .with_reorder_percent(3.0)
        .with_reorder_delay(Duration::from_millis(50))
        .with_rate_limit_bytes_per_sec(Some(20_000))
        .with_max_queue_delay(Duration::from_millis(200));
    let mut pair = Pair::symmetric(Config::default(), link, 77);
    pair.run_until(Duration::from_secs(600));

    for (sender, receiver, emulator) in [
        (&pair.a, &pair.b_log, &pair.a_to_b),
        (&pair.b, &pair.a_log, &pair.b_to_a),
    ] {
        let stats = sender.stats();
        let dropped = emulator.stats().dropped;
        assert!(dropped > 100, "the link really was hostile: {dropped}");
        // Every sent packet is acked, lost, or still inside the last loss timeout.
        let pending = stats.counters.packets_sent
            - stats.counters.packets_acked
            - stats.counters.packets_lost;
        assert!(pending <= 31, "{stats:?}");
        // A packet is declared lost only if it really did not arrive, give or take the rare
        // packet whose acks were all lost too.
        let not_arrived = stats.counters.packets_sent - receiver.received.len() as u64;
        assert!(stats.counters.packets_lost >= not_arrived.saturating_sub(pending));
        assert!(
            stats.counters.packets_lost <= not_arrived + 5,
            "{stats:?} vs {not_arrived}"
        );
        assert!(stats.counters.header_bytes_sent <= stats.counters.bytes_sent);
    }
    let acked: HashSet<u16> = pair.a_log.acked().collect();
    assert!(pair.a_log.lost().all(|s| !acked.contains(&s)));
}

#[test]
fn stats_serialize_with_the_field_names_dashboards_read() {
    let mut pair = Pair::symmetric(Config::default(), EmulatorConfig::default(), 1);
    pair.run_until(Duration::from_secs(6));
    let json = serde_json::to_value(pair.a.stats()).unwrap();
    for field in [
        "rtt_ms",
        "jitter_ms",
        "loss_percent",
        "mode",
        "recovery_time_ms",
        "send_rate_pps",
        "packets_sent",
        "packets_received",
        "packets_acked",
        "packets_lost",
        "bytes_sent",
        "bytes_received",
        "header_bytes_sent",
        "last_header_len",
    ] {
        assert!(json.get(field).is_some(), "missing {field} in {json}");
    }
    assert_eq!(json["mode"], "good");
    assert_eq!(json["send_rate_pps"], 30.0);
}
