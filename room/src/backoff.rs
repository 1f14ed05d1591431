//! One retry policy for everything a room member tries again: the signalling socket and
//! every link. Delays double from `first` up to `max`, each spread by ±`jitter_percent` so a
//! room whose server restarts does not come back in one burst.

use std::time::Duration;

/// Exponential backoff with jitter. Deterministic for a seed (randomness comes from the
/// driver, like time).
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    /// Delay before the first retry.
    pub first: Duration,
    /// Longest delay.
    pub max: Duration,
    /// Each delay is spread uniformly by up to this share of itself, either way.
    pub jitter_percent: u8,
}

impl Default for Backoff {
    /// 250 ms, doubling up to 2 s, ±20 %: a player whose server restarted is back within
    /// ~2.5 s of it, and 20 % of spread keeps a room from reconnecting in one burst.
    fn default() -> Backoff {
        Backoff {
            first: Duration::from_millis(250),
            max: Duration::from_secs(2),
            jitter_percent: 20,
        }
    }
}

impl Backoff {
    /// The delay before retry number `attempt` (0 for the first retry), jittered by `random`
    /// (any 64 random bits).
    pub fn delay(&self, attempt: u32, random: u64) -> Duration {
        let base = self
            .first
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max);
        let spread = base.as_nanos() as u64 / 100 * u64::from(self.jitter_percent.min(100));
        if spread == 0 {
            return base;
        }
        let offset = random % (2 * spread + 1);
        Duration::from_nanos((base.as_nanos() as u64 + offset).saturating_sub(spread))
    }
}

/// A small deterministic random source (splitmix64) seeded by the driver.
#[derive(Debug, Clone)]
pub(crate) struct Random(u64);

impl Random {
    pub(crate) fn new(seed: u64) -> Random {
        Random(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_maximum_within_the_jitter() {
        let backoff = Backoff::default();
        let mut random = Random::new(7);
        for attempt in 0..12 {
            let base = (Duration::from_millis(250) * (1 << attempt)).min(Duration::from_secs(2));
            for _ in 0..50 {
                let d = backoff.delay(attempt, random.next());
                assert!(
                    d >= base * 8 / 10 && d <= base * 12 / 10,
                    "{attempt}: {d:?}"
                );
            }
        }
    }

    #[test]
    fn without_jitter_the_delay_is_exact() {
        let backoff = Backoff {
            jitter_percent: 0,
            ..Backoff::default()
        };
        assert_eq!(backoff.delay(0, 123), Duration::from_millis(250));
        assert_eq!(backoff.delay(2, 123), Duration::from_secs(1));
        assert_eq!(backoff.delay(40, 123), Duration::from_secs(2));
    }
}
