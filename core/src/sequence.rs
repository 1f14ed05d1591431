//! 16-bit sequence numbers compared with RFC 1982 serial-number arithmetic.
//!
//! Every comparison of a packet sequence or message id in the crate goes through here, so
//! wrap-around at 65535 → 0 is handled in exactly one place.

/// Signed distance from `a` to `b` (how far `b` is ahead of `a`), in `[-32768, 32767]`.
///
/// Two's-complement subtraction reinterpreted as `i16`, as in RFC 1982 for 16-bit serials.
#[inline]
pub fn distance(a: u16, b: u16) -> i16 {
    b.wrapping_sub(a) as i16
}

/// True when `a` is more recent than `b` (strictly ahead of it by less than half the space).
#[inline]
pub fn more_recent(a: u16, b: u16) -> bool {
    distance(b, a) > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked 16-bit table from io7m's "Reliable UDP Algorithms" (seed 001).
    #[test]
    fn distance_matches_the_rfc1982_table_from_the_survey() {
        let table: [(u32, u32, i16); 7] = [
            (0, 0, 0),
            (0, 1, 1),
            (0, 32767, 32767),
            (0, 32768, -32768),
            (32767, 32768, 1),
            (32768, 65535, 32767),
            (32768, 65536, -32768),
        ];
        for (a, b, expected) in table {
            assert_eq!(distance(a as u16, b as u16), expected, "distance({a}, {b})");
        }
    }

    proptest::proptest! {
        #[test]
        fn anything_less_than_half_the_space_ahead_is_more_recent(a: u16, k in 1u16..32768) {
            let b = a.wrapping_add(k);
            proptest::prop_assert_eq!(distance(a, b), k as i16);
            proptest::prop_assert_eq!(distance(b, a), -(k as i16));
            proptest::prop_assert!(more_recent(b, a));
            proptest::prop_assert!(!more_recent(a, b));
        }
    }

    #[test]
    fn zero_is_more_recent_than_65535_after_wrap_around() {
        assert!(more_recent(0, 65535));
        assert!(!more_recent(65535, 0));
        assert!(!more_recent(7, 7));
    }
}
