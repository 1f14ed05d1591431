//! Round-trip time: an exponentially smoothed average of per-packet samples, plus a smoothed
//! deviation (jitter). O(1) per sample, no history (unlike `reliable`'s 512-entry rescans).

use core::time::Duration;

use crate::time::{NEVER, duration, set};

/// Smoothed RTT and jitter, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RttEstimator {
    smoothing: f64,
    rtt: f64,
    jitter: f64,
    /// `rtt` in whole nanoseconds (`NEVER` before the first sample), converted once per
    /// sample rather than at every read.
    rtt_ns: u64,
}

impl RttEstimator {
    /// An estimator moving `smoothing` (0.1 = 10%) of the way toward each new sample.
    pub(crate) fn new(smoothing: f64) -> Self {
        RttEstimator {
            smoothing,
            rtt: 0.0,
            jitter: 0.0,
            rtt_ns: NEVER,
        }
    }

    /// Adds one sample. The first sample is taken as is (no bias toward zero).
    #[cfg(test)]
    pub(crate) fn on_sample(&mut self, sample: Duration) {
        self.on_sample_nanos(crate::time::nanos(sample));
    }

    pub(crate) fn on_sample_nanos(&mut self, sample_ns: u64) {
        let sample = sample_ns as f64 * 1e-9;
        if self.rtt_ns == NEVER {
            self.rtt = sample;
        } else {
            let rtt = self.rtt;
            self.jitter += ((sample - rtt).abs() - self.jitter) * self.smoothing;
            self.rtt = rtt + (sample - rtt) * self.smoothing;
        }
        // Saturates short of `NEVER`, like every other time.
        self.rtt_ns = ((self.rtt * 1e9) as u64).min(NEVER - 1);
    }

    /// The smoothed RTT, or `None` before the first sample.
    pub(crate) fn rtt(&self) -> Option<Duration> {
        self.rtt_nanos().map(duration)
    }

    /// Smoothed RTT in nanoseconds, once there is a sample.
    pub(crate) fn rtt_nanos(&self) -> Option<u64> {
        set(self.rtt_ns)
    }

    /// Smoothed absolute deviation of samples from the average.
    pub(crate) fn jitter(&self) -> Duration {
        Duration::from_secs_f64(self.jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn average_moves_ten_percent_toward_each_sample() {
        let mut rtt = RttEstimator::new(0.1);
        rtt.on_sample(Duration::from_millis(100));
        assert_eq!(rtt.rtt(), Some(Duration::from_millis(100)));
        rtt.on_sample(Duration::from_millis(200));
        let ms = rtt.rtt().unwrap().as_secs_f64() * 1000.0;
        assert!((ms - 110.0).abs() < 1e-6, "{ms}");
        let jitter = rtt.jitter().as_secs_f64() * 1000.0;
        assert!((jitter - 10.0).abs() < 1e-6, "{jitter}");
    }

    #[test]
    fn no_rtt_is_reported_before_a_sample() {
        assert_eq!(RttEstimator::new(0.1).rtt(), None);
    }
}
