//! Times inside the core: whole nanoseconds on the driver's clock, as `u64`.
//!
//! The public API takes and returns [`Duration`]s; state stores `u64`s. A server keeps one
//! connection per peer and touches its state on every packet: an 8-byte time instead of a
//! 16-byte `Duration` (24 with `Option`) keeps that state in fewer cache lines, and adding or
//! comparing two `u64`s needs no carry between seconds and nanoseconds.

use core::time::Duration;

/// "Never", for a time that is not set (no deadline, nothing sent yet).
pub(crate) const NEVER: u64 = u64::MAX;

/// `at` in nanoseconds, saturating one short of [`NEVER`] (584 years out).
pub(crate) fn nanos(at: Duration) -> u64 {
    at.as_secs()
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(u64::from(at.subsec_nanos())))
        .map_or(NEVER - 1, |ns| ns.min(NEVER - 1))
}

/// Nanoseconds back to a [`Duration`].
pub(crate) fn duration(ns: u64) -> Duration {
    Duration::from_nanos(ns)
}

/// `ns` unless it is [`NEVER`].
pub(crate) fn set(ns: u64) -> Option<u64> {
    (ns != NEVER).then_some(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip_and_huge_ones_stay_short_of_never() {
        let at = Duration::new(12, 345_678_901);
        assert_eq!(duration(nanos(at)), at);
        assert_eq!(nanos(Duration::MAX), NEVER - 1);
        assert_eq!(set(nanos(Duration::MAX)), Some(NEVER - 1));
        assert_eq!(set(NEVER), None);
    }
}
