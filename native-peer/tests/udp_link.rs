//! Two real `ackwire-peer` processes over UDP on 127.0.0.1, judged by their JSON reports.
//!
//! Timing facts these bounds rest on (core defaults, `core/src/config.rs`): a connection
//! starts in bad mode at 10 packets/s and turns good (30/s) after 4 s of RTT <= 250 ms.
//! Every header carries its ack delay (how long the peer held the packet it acks), which the
//! RTT sample leaves out: the RTT is the path's round trip plus the drivers' scheduling noise
//! (reading a datagram a little after it arrived), whatever the two sides' send slots.

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
fn emulated_latency_is_what_both_sides_read_as_rtt() {
    for (latency, path) in [("10", 20.0), ("50", 100.0)] {
        let listener = listen(&[]);
        let reports = connect(
            listener.addr,
            &["--duration", "8", "--latency", latency, "--seed", "1"],
        )
        .finish();
        let listener_reports = listener.interrupt();
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
        // The path is twice the emulated one-way delay; what is added is scheduling noise:
        // 0.3-0.5 ms on an idle machine, up to ~6 ms with both cores busy elsewhere (the
        // emulated delay is a timer in the loaded process). Each side's wait for its next
        // send slot, up to 100 ms and ~50 ms on average at 10 packets/s, is not in it: the
        // 10 ms of slack for a loaded host still fails a figure that counted that wait.
        let bound = path..=path * 1.03 + 10.0;
        for (who, reports) in [("connector", &reports), ("listener", &listener_reports)] {
            // From 3 s, when the smoothed figure has long converged, while connected.
            let settled: Vec<_> = reports
                .iter()
                .filter(|r| r["summary"] == false && num(r, "connections") > 0.0)
                .filter(|r| num(r, "t_s") >= 3.0)
                .collect();
            assert!(settled.len() >= 3, "{who}: {reports:#?}");
            for report in settled {
                let rtt = num(report, "rtt_ms");
                assert!(
                    bound.contains(&rtt),
                    "{who} at {latency} ms: rtt {rtt} in {report}"
                );
            }
        }
        let summary = reports.last().unwrap();
        assert_eq!(num(summary, "packets_lost"), 0.0, "{summary}");
        assert!(num(summary, "packets_acked") >= num(summary, "packets_sent") - 10.0);
    }
}

#[test]
fn plain_loopback_reads_as_loopback_on_both_sides_despite_read_coalescing() {
    // The listener defers reads by up to ~2 ms to serve many datagrams per wake-up; a
    // datagram's hold is dated from its kernel receive stamp, so that wait is not path.
    let listener = listen(&[]);
    let reports = connect(listener.addr, &["--duration", "6"]).finish();
    let listener_reports = listener.interrupt();
    for (who, reports) in [("connector", &reports), ("listener", &listener_reports)] {
        let mut rtts: Vec<f64> = reports
            .iter()
            .filter(|r| r["summary"] == false && num(r, "connections") > 0.0)
            .filter(|r| num(r, "t_s") >= 2.0)
            .map(|r| num(r, "rtt_ms"))
            .collect();
        assert!(rtts.len() >= 3, "{who}: {reports:#?}");
        rtts.sort_by(f64::total_cmp);
        let median = rtts[rtts.len() / 2];
        // The fidelity goal, max(5 %, 1 ms), over a path of ~0.1 ms; a read's coalescing
        // wait counted as path reads 1.2-2.1 ms here.
        assert!(
            median > 0.0 && median <= 1.0,
            "{who}: median RTT {median} ms over loopback ({rtts:?})"
        );
    }
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
    let loss = num(summary, "loss_cumulative_pct");
    assert!((2.0..=9.0).contains(&loss), "loss {loss} in {summary}");
    let counted = 100.0 * num(summary, "packets_lost")
        / (num(summary, "packets_lost") + num(summary, "packets_acked"));
    assert!(
        (loss - counted).abs() < 1e-9,
        "cumulative loss is lost / resolved: {summary}"
    );
    assert_eq!(num(summary, "loss_window_packets"), 64.0);
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

/// Reads `peer`'s reports until one satisfies `pred`, for at most `within`.
fn wait_for(
    peer: &common::Peer,
    within: std::time::Duration,
    pred: impl Fn(&serde_json::Value) -> bool,
) -> Option<serde_json::Value> {
    let end = std::time::Instant::now() + within;
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
        match peer.next_report(left) {
            Some(report) if pred(&report) => return Some(report),
            Some(_) => {}
            None => return None,
        }
    }
    None
}

#[test]
fn ctrl_c_on_a_connect_peer_closes_its_connection_on_the_listener_at_once() {
    use std::time::Duration;
    let listener = listen(&["--duration", "20"]);
    let client = connect(listener.addr, &[]);
    wait_for(&listener, Duration::from_secs(5), |r| {
        num(r, "connections") == 1.0
    })
    .expect("the listener accepts the connection");
    client.signal_interrupt();
    let reports = client.finish();
    assert_eq!(reports.last().unwrap()["summary"], true);
    // The disconnect arrives with the interrupt: the listener's next report (one second
    // later at most) has no connection, where a silent peer would linger 10 s (idle timeout).
    let report = wait_for(&listener, Duration::from_millis(2500), |r| {
        num(r, "connections") == 0.0
    });
    let report = report.expect("the connection closed within two reports");
    assert_eq!(report["dropped"]["late"], 2, "{report}");
}

#[test]
fn ctrl_c_on_the_listener_ends_its_connect_peer_cleanly() {
    use std::time::{Duration, Instant};
    let listener = listen(&[]);
    let client = connect(listener.addr, &[]);
    wait_for(&client, Duration::from_secs(5), |r| {
        num(r, "packets_acked") > 0.0
    })
    .expect("the client connects");
    let interrupted = Instant::now();
    listener.interrupt();
    // The client was told, so it ends by itself, successfully, with its summary.
    let reports = client.finish();
    assert!(
        interrupted.elapsed() < Duration::from_secs(3),
        "{reports:?}"
    );
    assert!(num(reports.last().unwrap(), "packets_acked") > 0.0);
}

#[test]
fn connecting_to_an_address_without_a_listener_fails_after_the_handshake_timeout() {
    use std::time::{Duration, Instant};
    // A socket that reads nothing: requests vanish as they would to a dead host.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let started = Instant::now();
    let (status, lines) = connect(silent.local_addr().unwrap(), &[]).exit();
    let took = started.elapsed();
    assert!(!status.success(), "an unanswered handshake is a failure");
    // The core's handshake timeout is 5 s.
    assert!(
        (Duration::from_millis(4500)..Duration::from_secs(9)).contains(&took),
        "{took:?}"
    );
    let summary: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(summary["summary"], true);
    assert_eq!(num(&summary, "connections"), 0.0);
}

/// Checks that every tick's `send_rate_hz` is the packets sent since the previous tick (the
/// start, for the first) over the time since then, and the summary's those of the whole run.
fn assert_send_rates_match_the_counters(who: &str, reports: &[serde_json::Value]) {
    let (summary, ticks) = reports.split_last().expect("a summary");
    let close = |rate: f64, expected: f64| (rate - expected).abs() <= 1e-9 * expected.max(1.0);
    let (mut then, mut sent_then) = (0.0, 0.0);
    for tick in ticks {
        let (now, sent) = (num(tick, "t_s"), num(tick, "packets_sent"));
        let expected = (sent - sent_then) / (now - then);
        let rate = num(tick, "send_rate_hz");
        assert!(
            close(rate, expected),
            "{who}: {rate} Hz where {} packets in {} s make {expected}: {tick}",
            sent - sent_then,
            now - then
        );
        (then, sent_then) = (now, sent);
    }
    let expected = num(summary, "packets_sent") / num(summary, "t_s");
    let rate = num(summary, "send_rate_hz");
    assert!(close(rate, expected), "{who}: {rate} Hz: {summary}");
}

#[test]
fn the_first_tick_reports_the_send_rate_of_its_first_second_like_every_later_tick() {
    use std::time::Duration;
    let listener = listen(&[]);
    let client = connect(listener.addr, &["--duration", "4"]);
    // The listener's first tick comes one second after its start; the client connected within
    // milliseconds of it, so the listener has been answering it (10 packets/s in bad mode).
    let first = listener
        .next_report(Duration::from_secs(5))
        .expect("the listener's first tick");
    assert_eq!(first["summary"], false, "{first}");
    assert!(num(&first, "packets_sent") > 0.0, "{first}");
    assert!(num(&first, "send_rate_hz") > 0.0, "{first}");
    let client_reports = client.finish();
    let mut listener_reports = vec![first];
    listener_reports.extend(listener.interrupt());

    assert!(client_reports.len() >= 4, "{client_reports:#?}");
    let client_first = &client_reports[0];
    assert!(num(client_first, "packets_sent") > 0.0, "{client_first}");
    assert!(num(client_first, "send_rate_hz") > 0.0, "{client_first}");
    assert_send_rates_match_the_counters("client", &client_reports);
    assert_send_rates_match_the_counters("listener", &listener_reports);
}
