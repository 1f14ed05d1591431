//! Every number of the packet layer, with its default and where it comes from.

use core::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::mode::Mode;

/// Configuration of an [`Endpoint`](crate::endpoint::Endpoint). `Config::default()` is the
/// seed article's algorithm; each field's doc gives its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Config {
    /// Packets per second in good mode. Default 30 (seed 000).
    pub good_rate_pps: f64,
    /// Packets per second in bad mode. Default 10 (seed 000).
    pub bad_rate_pps: f64,
    /// Smoothed RTT above this makes conditions bad. Default 250 ms (seed 000).
    pub rtt_threshold: Duration,
    /// Loss above this percentage also makes conditions bad; `None` turns the trigger off.
    /// Default `None`, so the default schedule is exactly the seed's RTT-only one (the loss
    /// trigger is the seed comments' suggestion for links that drop instead of buffering).
    pub loss_threshold_percent: Option<f64>,
    /// Mode before any measurement. Default [`Mode::Bad`]: start conservatively and earn good
    /// mode after `initial_recovery_time` of good conditions, as the seed's sample code does.
    /// Starting in [`Mode::Good`] counts as having just returned to good (a fallback in the
    /// first `quick_fallback_window` doubles `t`).
    pub initial_mode: Mode,
    /// Starting value of the recovery time `t` (good conditions needed in bad mode before
    /// returning to good). Default 4 s, within `[min_recovery_time, max_recovery_time]`.
    pub initial_recovery_time: Duration,
    /// Lower clamp of `t`. Default 1 s (seed 000).
    pub min_recovery_time: Duration,
    /// Upper clamp of `t`. Default 60 s (seed 000).
    pub max_recovery_time: Duration,
    /// Falling back to bad within this long of returning to good doubles `t`. Default 10 s.
    pub quick_fallback_window: Duration,
    /// Every this long spent in good mode halves `t`. Default 10 s (seed 000).
    pub halving_interval: Duration,
    /// A sent packet not acked within this long is declared lost. Default 1 s (seed 000: the
    /// max expected RTT; at 30 pps an ack is repeated in ~30 packets before then).
    pub loss_timeout: Duration,
    /// Weight of each new RTT sample in the moving average. Default 0.1 (seed 000: 10%).
    pub rtt_smoothing: f64,
    /// Slots of the sent-packet ring. A packet still unacked when its slot is needed again is
    /// declared lost early, so this bounds the sent queue. Default 256 (> 1 s at 30 pps, and the
    /// ring size the seed's author recommends).
    pub sent_buffer_len: u16,
    /// The windowed loss percentage (`Stats::loss_percent`, which the loss trigger reads) is
    /// measured over the last this many resolved (acked or lost) packets. Default 64 (about
    /// 2 s at 30 pps). `Stats::loss_cumulative_percent` covers every packet.
    pub loss_window_packets: u16,
    /// Ack promptly: the pace allows one packet per send interval, and with this on the
    /// interval's packet leaves as soon as a packet from the peer has arrived in it (so its
    /// ack goes back at once) instead of at the interval's end. The rate is unchanged; the
    /// peer learns of its packets sooner (resends and loss news come earlier), and a server
    /// sends while the connection it just received on is still in cache. RTT is the path's
    /// either way: every header says how long its ack was held (the ack delay), and the
    /// sample leaves that out. Default `true`; `false` is the seed's strictly clocked
    /// schedule.
    #[serde(default = "yes")]
    pub prompt_ack: bool,
    /// With `prompt_send`, the interval's packet also leaves as soon as the application queues
    /// a message in it, instead of at the interval's end; once it has left, what is queued
    /// next goes as the following interval opens. The rate is unchanged, one packet per
    /// interval, and a message waits at most one interval, never more: a game's state or
    /// input leaves as it is made (on average half an interval sooner), and nothing waits
    /// two intervals behind a packet that went early for an ack. Default `true`; `false`
    /// holds messages to the interval's end.
    #[serde(default = "yes")]
    pub prompt_send: bool,
    /// Largest bulk window, in packets: while reliable frames wait for room and the link is
    /// in good mode, up to this many packets may be in flight, sent between the cadence's
    /// packets under a congestion window (docs/wire.md, "Bulk").
    /// Default 256 (the sent ring: about 5 MB/s at 50 ms RTT); no more than `sent_buffer_len`
    /// is used; 0 keeps the link to its cadence.
    #[serde(default = "bulk_window")]
    pub bulk_window_packets: u16,
}

setters!(Config {
    with_good_rate_pps => good_rate_pps: f64,
    with_bad_rate_pps => bad_rate_pps: f64,
    with_rtt_threshold => rtt_threshold: Duration,
    with_loss_threshold_percent => loss_threshold_percent: Option<f64>,
    with_initial_mode => initial_mode: Mode,
    with_initial_recovery_time => initial_recovery_time: Duration,
    with_min_recovery_time => min_recovery_time: Duration,
    with_max_recovery_time => max_recovery_time: Duration,
    with_quick_fallback_window => quick_fallback_window: Duration,
    with_halving_interval => halving_interval: Duration,
    with_loss_timeout => loss_timeout: Duration,
    with_rtt_smoothing => rtt_smoothing: f64,
    with_sent_buffer_len => sent_buffer_len: u16,
    with_loss_window_packets => loss_window_packets: u16,
    with_prompt_ack => prompt_ack: bool,
    with_prompt_send => prompt_send: bool,
    with_bulk_window_packets => bulk_window_packets: u16,
});

fn yes() -> bool {
    true
}

fn bulk_window() -> u16 {
    256
}

impl Default for Config {
    fn default() -> Self {
        Config {
            good_rate_pps: 30.0,
            bad_rate_pps: 10.0,
            rtt_threshold: Duration::from_millis(250),
            loss_threshold_percent: None,
            initial_mode: Mode::Bad,
            initial_recovery_time: Duration::from_secs(4),
            min_recovery_time: Duration::from_secs(1),
            max_recovery_time: Duration::from_secs(60),
            quick_fallback_window: Duration::from_secs(10),
            halving_interval: Duration::from_secs(10),
            loss_timeout: Duration::from_secs(1),
            rtt_smoothing: 0.1,
            sent_buffer_len: 256,
            loss_window_packets: 64,
            prompt_ack: true,
            prompt_send: true,
            bulk_window_packets: bulk_window(),
        }
    }
}

/// Why a [`Config`] was refused.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A send rate is not a finite number of packets per second above zero, or bad > good.
    #[error("send rates must be finite, > 0, and bad <= good (good {good}, bad {bad})")]
    InvalidRate {
        /// The configured good-mode rate.
        good: f64,
        /// The configured bad-mode rate.
        bad: f64,
    },
    /// The recovery time bounds are not `0 < min <= initial <= max`.
    #[error("recovery times must satisfy 0 < min <= initial <= max")]
    InvalidRecoveryTime,
    /// The loss threshold is not a percentage in `[0, 100]`.
    #[error("loss threshold {0} is not a percentage in [0, 100]")]
    InvalidLossThreshold(f64),
    /// RTT smoothing is not in `(0, 1]`.
    #[error("rtt smoothing {0} is not in (0, 1]")]
    InvalidSmoothing(f64),
    /// A window or timeout is zero, or the sent ring is shorter than the 32-packet ack window.
    #[error("{0} must be non-zero (sent_buffer_len at least 32)")]
    ZeroWindow(&'static str),
}

impl Config {
    /// Checks every field; the endpoint refuses a config that fails.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let rate_ok = |r: f64| r.is_finite() && r > 0.0;
        if !rate_ok(self.good_rate_pps)
            || !rate_ok(self.bad_rate_pps)
            || self.bad_rate_pps > self.good_rate_pps
        {
            return Err(ConfigError::InvalidRate {
                good: self.good_rate_pps,
                bad: self.bad_rate_pps,
            });
        }
        if self.min_recovery_time.is_zero()
            || self.min_recovery_time > self.initial_recovery_time
            || self.initial_recovery_time > self.max_recovery_time
        {
            return Err(ConfigError::InvalidRecoveryTime);
        }
        if let Some(threshold) = self.loss_threshold_percent
            && !(0.0..=100.0).contains(&threshold)
        {
            return Err(ConfigError::InvalidLossThreshold(threshold));
        }
        if !(self.rtt_smoothing > 0.0 && self.rtt_smoothing <= 1.0) {
            return Err(ConfigError::InvalidSmoothing(self.rtt_smoothing));
        }
        let zero = [
            (self.loss_timeout.is_zero(), "loss_timeout"),
            (self.halving_interval.is_zero(), "halving_interval"),
            (self.sent_buffer_len < 32, "sent_buffer_len"),
            (self.loss_window_packets == 0, "loss_window_packets"),
        ];
        match zero.into_iter().find(|(bad, _)| *bad) {
            Some((_, name)) => Err(ConfigError::ZeroWindow(name)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_valid_and_matches_the_seed() {
        let config = Config::default();
        assert_eq!(config.validate(), Ok(()));
        assert_eq!((config.good_rate_pps, config.bad_rate_pps), (30.0, 10.0));
        assert_eq!(config.rtt_threshold, Duration::from_millis(250));
    }

    #[test]
    fn inconsistent_configs_are_refused_with_the_offending_field() {
        let bad_rate = Config {
            bad_rate_pps: 40.0,
            ..Config::default()
        };
        assert!(matches!(
            bad_rate.validate(),
            Err(ConfigError::InvalidRate { .. })
        ));
        let t_too_long = Config {
            initial_recovery_time: Duration::from_secs(61),
            ..Config::default()
        };
        assert_eq!(t_too_long.validate(), Err(ConfigError::InvalidRecoveryTime));
        let nan_smoothing = Config {
            rtt_smoothing: f64::NAN,
            ..Config::default()
        };
        assert!(matches!(
            nan_smoothing.validate(),
            Err(ConfigError::InvalidSmoothing(_))
        ));
        let tiny_ring = Config {
            sent_buffer_len: 8,
            ..Config::default()
        };
        assert_eq!(
            tiny_ring.validate(),
            Err(ConfigError::ZeroWindow("sent_buffer_len"))
        );
        let loss = Config {
            loss_threshold_percent: Some(120.0),
            ..Config::default()
        };
        assert_eq!(
            loss.validate(),
            Err(ConfigError::InvalidLossThreshold(120.0))
        );
    }
}
