//! The binary congestion avoidance schedule from seed 000, checked to the millisecond under a
//! scripted RTT profile.

use std::time::Duration;

use ackwire_core::Config;
use ackwire_core::congestion::{BinaryCongestion, Mode};

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

/// Feeds `rtt_at(t)` every 10 ms from 0 to `end` and records every mode change with `t`.
fn timeline(
    end: Duration,
    rtt_at: impl Fn(Duration) -> Duration,
) -> Vec<(Duration, Mode, Duration)> {
    let config = Config::default();
    let mut controller = BinaryCongestion::new(&config, Duration::ZERO);
    let mut changes = Vec::new();
    let mut now = Duration::ZERO;
    while now <= end {
        let bad = controller.is_bad(Some(rtt_at(now)), 0.0);
        if let Some(mode) = controller.update(now, bad) {
            changes.push((now, mode, controller.recovery_time()));
        }
        now += 10 * MS;
    }
    changes
}

const GOOD_RTT: Duration = Duration::from_millis(80);
const BAD_RTT: Duration = Duration::from_millis(400);

fn bad_during(spans: &[(Duration, Duration)]) -> impl Fn(Duration) -> Duration + '_ {
    move |t| {
        if spans.iter().any(|&(from, to)| t >= from && t < to) {
            BAD_RTT
        } else {
            GOOD_RTT
        }
    }
}

#[test]
fn mode_timeline_follows_the_seed_schedule_exactly() {
    let spans = [
        (9 * S, 9500 * MS), // 5 s after returning to good: quick fallback doubles t to 8 s
        (60 * S, 60100 * MS), // long after: t (halved 4 times, clamped at 1 s) stays 1 s
    ];
    let changes = timeline(64 * S, bad_during(&spans));
    assert_eq!(
        changes,
        vec![
            // Start in bad with t = 4 s; conditions good from 0, so good at 4 s.
            (4 * S, Mode::Good, 4 * S),
            // Bad at once, 5 s after going good (< 10 s): t doubles.
            (9 * S, Mode::Bad, 8 * S),
            // Good from 9.5 s, so back to good 8 s later.
            (17500 * MS, Mode::Good, 8 * S),
            // 17.5 + 10 s: t = 4; +20 s: 2; +30 s: 1; +40 s: clamped at 1 (no change shown).
            (60 * S, Mode::Bad, S),
            (61100 * MS, Mode::Good, S),
        ]
    );
}

#[test]
fn recovery_time_halves_every_ten_seconds_of_good_down_to_one_second() {
    let config = Config::default();
    let mut c = BinaryCongestion::new(&config, Duration::ZERO);
    c.update(Duration::ZERO, true);
    c.update(3 * S, false);
    assert_eq!(c.update(7 * S, false), Some(Mode::Good));
    let mut seen = Vec::new();
    let mut now = 7 * S;
    while now <= 60 * S {
        c.update(now, false);
        seen.push((now, c.recovery_time()));
        now += 100 * MS;
    }
    let t_at = |at: Duration| seen.iter().find(|(n, _)| *n == at).unwrap().1;
    assert_eq!(t_at(16900 * MS), 4 * S);
    assert_eq!(t_at(17 * S), 2 * S);
    assert_eq!(t_at(27 * S), S);
    assert_eq!(t_at(37 * S), S, "clamped at the 1 s minimum");
}

#[test]
fn repeated_quick_fallbacks_double_t_up_to_sixty_seconds() {
    let config = Config::default();
    let mut c = BinaryCongestion::new(&config, Duration::ZERO);
    let mut now = Duration::ZERO;
    let mut ts = Vec::new();
    for _ in 0..6 {
        // Wait out t in good conditions, then fall back 1 s after going good.
        c.update(now, false);
        let back_at = now + c.recovery_time();
        assert_eq!(c.update(back_at, false), Some(Mode::Good));
        now = back_at + S;
        assert_eq!(c.update(now, true), Some(Mode::Bad));
        ts.push(c.recovery_time().as_secs());
        now += MS;
    }
    assert_eq!(ts, [8, 16, 32, 60, 60, 60]);
}

#[test]
fn falling_back_after_ten_seconds_of_good_does_not_double_t() {
    let config = Config::default();
    let mut c = BinaryCongestion::new(&config, Duration::ZERO);
    c.update(Duration::ZERO, false);
    c.update(4 * S, false);
    assert_eq!(c.mode(), Mode::Good);
    // At 14 s t is halved to 2; falling back at 14.5 s (10.5 s after going good) keeps it.
    assert_eq!(c.update(14500 * MS, true), Some(Mode::Bad));
    assert_eq!(c.recovery_time(), 2 * S);
}

#[test]
fn loss_trigger_drops_to_bad_mode_with_low_rtt() {
    let config = Config::default()
        .with_loss_threshold_percent(Some(10.0))
        .with_initial_mode(Mode::Good);
    let mut c = BinaryCongestion::new(&config, Duration::ZERO);
    let bad = c.is_bad(Some(GOOD_RTT), 25.0);
    assert_eq!(c.update(S, bad), Some(Mode::Bad));
}
