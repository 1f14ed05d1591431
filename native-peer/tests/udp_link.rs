//! Two real `ackwire-peer` processes over UDP on 127.0.0.1, judged by their JSON reports.
//!
//! Timing facts these bounds rest on (core defaults, `core/src/config.rs`): a connection
//! starts in bad mode at 10 packets/s and turns good (30/s) after 4 s of RTT <= 250 ms.
//! An ack rides the peer's next scheduled packet, so an RTT sample is the path's round trip
//! plus a hold of up to the peer's send interval (100 ms in bad mode, 33 ms in good).

mod common;

use common::{connect, listen, num};

const KEYS: [&str; 12] = [
    "t_s",
    "rtt_ms",
    "jitter_ms",
    "loss_pct",
    "mode",
    "send_rate_hz",
    "packets_sent",
    "packets_received",
    "packets_acked",
    "packets_lost",
    "bytes_sent",
    "bytes_received",
];

#[test]
fn latency_100_ms_each_way_settles_rtt_between_200_and_300_ms_plus_slack() {
    let listener = listen(&["--duration", "12"]);
    let reports = connect(
        listener.addr,
        &["--duration", "8", "--latency", "100", "--seed", "1"],
    )
    .finish();
    for report in &reports {
        for key in KEYS {
            assert!(report.get(key).is_some(), "{key} missing in {report}");
        }
        assert!(matches!(report["mode"].as_str(), Some("good" | "bad")));
    }
    assert!(
        reports.len() >= 8,
        "one report per second: {}",
        reports.len()
    );
    // 200 ms of emulated path plus an ack hold of 0..100 ms (the listener stays at 10/s
    // because its own RTT hovers at the threshold); 20 ms of slack for a loaded machine.
    for report in &reports[reports.len() - 4..] {
        let rtt = num(report, "rtt_ms");
        assert!((199.0..=320.0).contains(&rtt), "rtt {rtt} in {report}");
    }
    let summary = reports.last().unwrap();
    assert_eq!(num(summary, "packets_lost"), 0.0, "{summary}");
    assert!(num(summary, "packets_acked") >= num(summary, "packets_sent") - 10.0);
}

#[test]
fn loss_5_percent_is_reported_between_2_and_9_percent() {
    let listener = listen(&["--duration", "14"]);
    let reports = connect(
        listener.addr,
        &["--duration", "10", "--loss", "5", "--seed", "7"],
    )
    .finish();
    let summary = reports.last().unwrap();
    // About 220 packets in 10 s; 5% of them is 11 ± 3.3. Inbound losses only cost acks, and
    // every packet is acked by ~10 of the listener's packets, so they add nothing.
    let loss = num(summary, "loss_pct");
    assert!((2.0..=9.0).contains(&loss), "loss {loss} in {summary}");
    let lost = num(summary, "packets_lost");
    let resolved = lost + num(summary, "packets_acked");
    assert!(resolved >= num(summary, "packets_sent") - 35.0, "{summary}");
}

#[test]
fn latency_150_ms_turns_mode_bad_and_rate_10_hz_within_a_second_of_rtt_crossing_250_ms() {
    let listener = listen(&["--duration", "14"]);
    // A perfect link until 5.5 s (good mode is earned at 4 s), then 150 ms each way.
    let reports = connect(
        listener.addr,
        &[
            "--duration",
            "10",
            "--latency",
            "150",
            "--impair-after",
            "5.5",
            "--seed",
            "2",
        ],
    )
    .finish();
    let ticks = &reports[..reports.len() - 1];
    let was_good = ticks
        .iter()
        .any(|r| r["mode"] == "good" && num(r, "send_rate_hz") >= 25.0);
    assert!(was_good, "reached good mode at 30/s first: {ticks:#?}");
    let crossed = ticks
        .iter()
        .position(|r| num(r, "rtt_ms") > 250.0)
        .unwrap_or_else(|| panic!("rtt never crossed 250 ms: {ticks:#?}"));
    assert!(
        num(&ticks[crossed], "t_s") > 5.5,
        "not before the impairment"
    );
    // The crossing happened within the second before tick `crossed`; the following tick
    // measures the whole next second, which must be at the bad rate.
    let after = ticks
        .get(crossed + 1)
        .unwrap_or_else(|| panic!("a tick after the crossing: {ticks:#?}"));
    assert_eq!(ticks[crossed]["mode"], "bad", "{:#?}", &ticks[crossed]);
    assert_eq!(after["mode"], "bad");
    let rate = num(after, "send_rate_hz");
    assert!((8.0..=12.0).contains(&rate), "rate {rate} in {after}");
    for r in &ticks[crossed..] {
        assert_eq!(r["mode"], "bad", "stays bad while the RTT is high: {r}");
    }
}
