//! The listener's connection deadlines: a hashed timing wheel.
//!
//! Every connection of a busy listener re-arms its timer once per packet (its next send
//! moves one interval later), so arming must be cheap: here it is a push onto the bucket of
//! the deadline's tick. A bucket is scanned once per lap of the wheel, when its tick has
//! passed; entries for a later lap stay in it. Cancelling is lazy: the listener tells live
//! entries from stale ones (see `Listener::armed`) when they surface.
//!
//! Deadlines are honoured to within one tick: an entry fires once the whole of its tick has
//! passed, so at most [`TICK_NANOS`] (about a millisecond, the resolution of the drivers'
//! own timers) after its deadline, never before it.

/// Width of a tick: 2^20 ns, about 1.05 ms.
pub(crate) const TICK_NANOS: u64 = 1 << 20;
/// Buckets in one lap: 1024 ticks, about 1.07 s. Later deadlines wait in their bucket for
/// their lap.
const SLOTS: usize = 1024;
const WORD: usize = 64;

/// `(deadline in ns, connection slot, generation)`.
pub(crate) type Entry = (u64, u32, u32);

#[derive(Debug)]
pub(crate) struct TimerWheel {
    buckets: Vec<Vec<Entry>>,
    /// One bit per bucket that holds entries, so finding the next deadline skips empty ones
    /// 64 at a time.
    occupied: [u64; SLOTS / WORD],
    /// The first tick not yet expired: every entry of an earlier tick has fired.
    next_tick: u64,
}

fn tick_of(nanos: u64) -> u64 {
    nanos / TICK_NANOS
}

impl TimerWheel {
    pub(crate) fn new() -> TimerWheel {
        TimerWheel {
            buckets: (0..SLOTS).map(|_| Vec::new()).collect(),
            occupied: [0; SLOTS / WORD],
            next_tick: 0,
        }
    }

    /// Adds an entry. A deadline in a tick already expired goes into the next one to expire.
    pub(crate) fn arm(&mut self, entry: Entry) {
        let tick = tick_of(entry.0).max(self.next_tick);
        let slot = (tick % SLOTS as u64) as usize;
        self.buckets[slot].push(entry);
        self.occupied[slot / WORD] |= 1 << (slot % WORD);
    }

    /// Hands every entry whose tick has wholly passed by `now_nanos` to `fire` (stale ones
    /// included: the caller tells them apart).
    pub(crate) fn expire(&mut self, now_nanos: u64, mut fire: impl FnMut(Entry)) {
        let now_tick = tick_of(now_nanos);
        if now_tick <= self.next_tick {
            return;
        }
        if now_tick - self.next_tick >= SLOTS as u64 {
            // A lap or more went by (an idle listener): every bucket is due once, for every
            // deadline before the current tick.
            let limit = now_tick * TICK_NANOS;
            for slot in 0..SLOTS {
                self.drain(slot, limit, &mut fire);
            }
        } else {
            for tick in self.next_tick..now_tick {
                let slot = (tick % SLOTS as u64) as usize;
                self.drain(slot, (tick + 1) * TICK_NANOS, &mut fire);
            }
        }
        self.next_tick = now_tick;
    }

    /// Fires the entries of bucket `slot` with deadlines before `limit`; keeps the rest.
    fn drain(&mut self, slot: usize, limit: u64, fire: &mut impl FnMut(Entry)) {
        if self.occupied[slot / WORD] & (1 << (slot % WORD)) == 0 {
            return;
        }
        let bucket = &mut self.buckets[slot];
        let mut k = 0;
        while k < bucket.len() {
            if bucket[k].0 < limit {
                fire(bucket.swap_remove(k));
            } else {
                k += 1;
            }
        }
        if bucket.is_empty() {
            self.occupied[slot / WORD] &= !(1 << (slot % WORD));
        }
    }

    /// The end of the earliest tick holding a live entry (`live` tells), after dropping the
    /// stale entries it meets; `None` when no live entry is left. A bucket holding only
    /// entries for later laps makes this early, never late: the caller then finds nothing
    /// due and asks again.
    pub(crate) fn next_deadline(&mut self, mut live: impl FnMut(&Entry) -> bool) -> Option<u64> {
        let start = (self.next_tick % SLOTS as u64) as usize;
        let mut offset = 0;
        while offset < SLOTS {
            let slot = (start + offset) % SLOTS;
            let word = self.occupied[slot / WORD] >> (slot % WORD);
            if word == 0 {
                // Skip the rest of this word (never past the lap's end).
                offset += WORD - slot % WORD;
                continue;
            }
            let skip = word.trailing_zeros() as usize;
            if skip > 0 {
                offset += skip;
                continue;
            }
            let bucket = &mut self.buckets[slot];
            bucket.retain(|entry| live(entry));
            if bucket.is_empty() {
                self.occupied[slot / WORD] &= !(1 << (slot % WORD));
                offset += 1;
                continue;
            }
            return Some((self.next_tick + offset as u64 + 1) * TICK_NANOS);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn fired(wheel: &mut TimerWheel, now: u64) -> Vec<u32> {
        let mut out = Vec::new();
        wheel.expire(now, |(_, index, _)| out.push(index));
        out.sort();
        out
    }

    #[test]
    fn entries_fire_within_a_tick_after_their_deadline_never_before() {
        let mut wheel = TimerWheel::new();
        wheel.arm((10 * MS, 1, 0));
        wheel.arm((33 * MS, 2, 0));
        assert_eq!(fired(&mut wheel, 10 * MS - 1), Vec::<u32>::new());
        assert_eq!(fired(&mut wheel, 10 * MS + TICK_NANOS), vec![1]);
        assert_eq!(fired(&mut wheel, 32 * MS), Vec::<u32>::new());
        assert_eq!(fired(&mut wheel, 33 * MS + TICK_NANOS), vec![2]);
        assert_eq!(wheel.next_deadline(|_| true), None);
    }

    #[test]
    fn deadlines_a_lap_or_more_away_wait_for_their_lap() {
        let mut wheel = TimerWheel::new();
        let far = 10_000 * MS;
        wheel.arm((far, 7, 0));
        wheel.arm((5 * MS, 8, 0));
        assert_eq!(
            fired(&mut wheel, 2_000 * MS),
            vec![8],
            "a whole lap passed at once"
        );
        // The far entry's bucket comes round several times before it is due.
        let mut now = 2_000 * MS;
        while now < far {
            assert_eq!(fired(&mut wheel, now), Vec::<u32>::new(), "at {now}");
            now += 3 * MS;
        }
        assert_eq!(fired(&mut wheel, far + 2 * TICK_NANOS), vec![7]);
    }

    #[test]
    fn next_deadline_is_the_end_of_the_earliest_live_tick() {
        let mut wheel = TimerWheel::new();
        assert_eq!(wheel.next_deadline(|_| true), None);
        wheel.arm((40 * MS, 1, 0));
        wheel.arm((900 * MS, 2, 0));
        let end_of_tick = |nanos: u64| (nanos / TICK_NANOS + 1) * TICK_NANOS;
        assert_eq!(wheel.next_deadline(|_| true), Some(end_of_tick(40 * MS)));
        // Entry 1 was cancelled: it is dropped and the next live one answers.
        assert_eq!(
            wheel.next_deadline(|&(_, index, _)| index != 1),
            Some(end_of_tick(900 * MS))
        );
        assert_eq!(wheel.next_deadline(|_| false), None);
        assert_eq!(
            fired(&mut wheel, 5_000 * MS),
            Vec::<u32>::new(),
            "dropped entries never fire"
        );
    }

    #[test]
    fn a_deadline_already_past_fires_with_the_next_tick() {
        let mut wheel = TimerWheel::new();
        wheel.expire(100 * MS, |_| {});
        wheel.arm((50 * MS, 3, 0));
        assert_eq!(fired(&mut wheel, 100 * MS + TICK_NANOS), vec![3]);
    }
}
