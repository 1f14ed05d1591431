//! Simple binary congestion avoidance (seed 000): send at the good rate while conditions are
//! good, drop to the bad rate at once when they turn bad, and come back only after conditions
//! have stayed good for the recovery time `t`, which adapts to how flaky the link has been.
//!
//! Transitions are computed from exact times (the moment conditions turned good plus `t`, the
//! moment good mode began plus whole halving intervals), so the schedule does not depend on
//! how often the driver happens to call in.

use core::time::Duration;

use crate::config::Config;
pub use crate::mode::Mode;
use crate::time::{NEVER, duration, nanos, set};

/// The binary mode state machine: its mode state and the limits it runs under.
#[derive(Debug, Clone)]
pub struct BinaryCongestion {
    limits: Limits,
    state: ModeState,
}

/// The configured thresholds and recovery-time bounds in nanoseconds, computed once. An
/// endpoint reads them from its shared settings rather than keeping a copy per connection.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    min: u64,
    max: u64,
    quick_fallback_window: u64,
    halving_interval: u64,
    rtt_threshold: u64,
    /// Infinite when the loss trigger is off.
    loss_threshold_percent: f64,
}

impl Limits {
    pub(crate) fn new(config: &Config) -> Limits {
        Limits {
            min: nanos(config.min_recovery_time),
            max: nanos(config.max_recovery_time),
            quick_fallback_window: nanos(config.quick_fallback_window),
            halving_interval: nanos(config.halving_interval),
            rtt_threshold: nanos(config.rtt_threshold),
            loss_threshold_percent: config.loss_threshold_percent.unwrap_or(f64::INFINITY),
        }
    }

    /// True when these measurements count as bad conditions (see [`BinaryCongestion::is_bad`]).
    pub(crate) fn is_bad(&self, rtt: Option<u64>, loss_percent: f64) -> bool {
        rtt.is_some_and(|rtt| rtt > self.rtt_threshold)
            || loss_percent > self.loss_threshold_percent
    }
}

/// The per-link part of the state machine, times in nanoseconds (see `crate::time`).
#[derive(Debug, Clone)]
pub(crate) struct ModeState {
    mode: Mode,
    recovery_time: u64,
    /// In bad mode: since when conditions have been continuously good (`NEVER`: they are not).
    good_since: u64,
    /// In good mode: when good mode began.
    good_mode_since: u64,
    /// In good mode: when `t` was last halved (or good mode began).
    last_halving: u64,
}

impl ModeState {
    pub(crate) fn new(config: &Config, now: u64) -> ModeState {
        ModeState {
            mode: config.initial_mode,
            recovery_time: nanos(config.initial_recovery_time),
            good_since: NEVER,
            good_mode_since: now,
            last_halving: now,
        }
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    pub(crate) fn recovery_time(&self) -> Duration {
        duration(self.recovery_time)
    }

    /// Advances to `now` with the current conditions; returns the new mode if it changed.
    pub(crate) fn update(&mut self, limits: &Limits, now: u64, bad: bool) -> Option<Mode> {
        match self.mode {
            Mode::Good => {
                self.apply_halvings(limits, now);
                if bad {
                    if now.saturating_sub(self.good_mode_since) < limits.quick_fallback_window {
                        self.recovery_time = self.recovery_time.saturating_mul(2).min(limits.max);
                    }
                    self.mode = Mode::Bad;
                    self.good_since = NEVER;
                    return Some(Mode::Bad);
                }
                None
            }
            Mode::Bad => {
                if bad {
                    self.good_since = NEVER;
                    return None;
                }
                if self.good_since == NEVER {
                    self.good_since = now;
                }
                let at = self.good_since.saturating_add(self.recovery_time);
                if now >= at {
                    self.mode = Mode::Good;
                    self.good_mode_since = at;
                    self.last_halving = at;
                    self.apply_halvings(limits, now);
                    return Some(Mode::Good);
                }
                None
            }
        }
    }

    fn apply_halvings(&mut self, limits: &Limits, now: u64) {
        while now >= self.last_halving.saturating_add(limits.halving_interval) {
            self.last_halving += limits.halving_interval;
            self.recovery_time = (self.recovery_time / 2).max(limits.min);
        }
    }

    /// When the state next changes on its own, `NEVER` for never.
    pub(crate) fn next_deadline(&self, limits: &Limits) -> u64 {
        match self.mode {
            Mode::Good if self.recovery_time > limits.min => {
                self.last_halving.saturating_add(limits.halving_interval)
            }
            Mode::Good => NEVER,
            Mode::Bad if self.good_since == NEVER => NEVER,
            Mode::Bad => self.good_since.saturating_add(self.recovery_time),
        }
    }
}

impl BinaryCongestion {
    /// A controller in `config.initial_mode` at time `now`.
    pub fn new(config: &Config, now: Duration) -> Self {
        BinaryCongestion {
            limits: Limits::new(config),
            state: ModeState::new(config, nanos(now)),
        }
    }

    /// Current mode.
    pub fn mode(&self) -> Mode {
        self.state.mode()
    }

    /// Current recovery time `t`.
    pub fn recovery_time(&self) -> Duration {
        self.state.recovery_time()
    }

    /// True when these measurements count as bad conditions (RTT strictly above the threshold,
    /// or loss strictly above the loss threshold when that trigger is on). No RTT yet is good.
    pub fn is_bad(&self, rtt: Option<Duration>, loss_percent: f64) -> bool {
        self.limits.is_bad(rtt.map(nanos), loss_percent)
    }

    /// Advances to `now` with the current conditions; returns the new mode if it changed.
    pub fn update(&mut self, now: Duration, bad: bool) -> Option<Mode> {
        self.state.update(&self.limits, nanos(now), bad)
    }

    /// When the controller next changes on its own if conditions stay as they are (a return to
    /// good or a halving of `t`); the endpoint folds this into its `poll_timeout`.
    pub fn next_deadline(&self) -> Option<Duration> {
        set(self.state.next_deadline(&self.limits)).map(duration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn controller() -> BinaryCongestion {
        BinaryCongestion::new(&Config::default(), Duration::ZERO)
    }

    #[test]
    fn no_rtt_sample_counts_as_good_and_high_rtt_as_bad() {
        let c = controller();
        assert!(!c.is_bad(None, 0.0));
        assert!(!c.is_bad(Some(Duration::from_millis(250)), 0.0));
        assert!(c.is_bad(Some(Duration::from_millis(251)), 0.0));
    }

    #[test]
    fn loss_trigger_only_fires_when_configured() {
        let off = controller();
        assert!(!off.is_bad(None, 90.0));
        let on = BinaryCongestion::new(
            &Config {
                loss_threshold_percent: Some(10.0),
                ..Config::default()
            },
            Duration::ZERO,
        );
        assert!(on.is_bad(None, 10.5));
        assert!(!on.is_bad(None, 10.0));
    }

    #[test]
    fn bad_mode_returns_to_good_exactly_after_t_of_good_conditions() {
        let mut c = controller();
        assert_eq!(c.update(Duration::ZERO, false), None);
        assert_eq!(c.update(4 * S - Duration::from_millis(1), false), None);
        assert_eq!(c.next_deadline(), Some(4 * S));
        assert_eq!(c.update(4 * S, false), Some(Mode::Good));
    }

    #[test]
    fn a_bad_moment_restarts_the_recovery_clock() {
        let mut c = controller();
        c.update(Duration::ZERO, false);
        c.update(3 * S, true);
        assert_eq!(c.update(4 * S, false), None);
        assert_eq!(c.update(8 * S - Duration::from_millis(1), false), None);
        assert_eq!(c.update(8 * S, false), Some(Mode::Good));
    }
}
