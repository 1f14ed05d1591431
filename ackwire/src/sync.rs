//! A game's time on the room's clock ([`Room::clock`](crate::Room::clock)): fixed-step ticks
//! every member counts alike, the tick an input should be stamped with to reach the host in
//! time, and a buffer that interpolates the host's tick-stamped states at a delay that adapts
//! to the path's jitter and loss. Plain values and arithmetic: no sockets, no clock of its own
//! (the times come in), the same on every target. docs/api.md, "Ticks and snapshots".
//!
//! ```
//! use std::time::Duration;
//! use ackwire::sync::{FixedStep, Snapshots, Ticks};
//!
//! // The host simulates 20 ticks a second on its own clock (the room's clock, on the host).
//! let ticks = Ticks::new(Duration::from_millis(50)).unwrap();
//! let mut step = FixedStep::new(ticks);
//! let due: Vec<u64> = step.due(Duration::from_millis(120)).collect();
//! assert_eq!(due, [2], "the tick the clock is in, the first time");
//! assert_eq!(step.next_due(), Some(Duration::from_millis(150)), "when to wake for tick 3");
//! let due: Vec<u64> = step.due(Duration::from_millis(260)).collect();
//! assert_eq!(due, [3, 4, 5], "every tick since, once");
//!
//! // A client keeps the states the host stamped, and draws the one at its render time.
//! let mut states = Snapshots::new(ticks);
//! states.push(2, Duration::from_millis(160), 0.0_f32); // tick 2 ends at 150 ms
//! states.push(3, Duration::from_millis(210), 10.0_f32);
//! let drawn = states.sample(Duration::from_millis(200));
//! assert!(drawn.is_some_and(|x| (0.0..=10.0).contains(&x)));
//! ```

use std::collections::VecDeque;
use std::ops::Range;
use std::time::Duration;

use crate::ClockReading;
use ackwire_core::Stats;

/// Fixed-length ticks counted from a clock's zero: tick `n` runs from `n × period` to
/// `(n + 1) × period`. On the room's clock every member counts the same ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticks {
    period: Duration,
}

impl Ticks {
    /// Ticks of `period`; `None` for a zero period, or one over an hour.
    pub fn new(period: Duration) -> Option<Ticks> {
        (!period.is_zero() && period <= Duration::from_secs(3600)).then_some(Ticks { period })
    }

    /// How long a tick lasts.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The tick `time` falls in.
    pub fn at(&self, time: Duration) -> u64 {
        (time.as_nanos() / self.period.as_nanos()) as u64
    }

    /// When tick `tick` begins.
    pub fn start(&self, tick: u64) -> Duration {
        let nanos = u128::from(tick) * self.period.as_nanos();
        Duration::new(
            (nanos / 1_000_000_000) as u64,
            (nanos % 1_000_000_000) as u32,
        )
    }
}

/// A fixed-step loop on a clock: each call to [`due`](Self::due) gives the ticks to simulate
/// now, each once, in order, however irregularly the game's frames come.
#[derive(Debug, Clone)]
pub struct FixedStep {
    ticks: Ticks,
    /// The next tick to simulate, once the first call has placed the loop on the clock.
    next: Option<u64>,
    max_catch_up: u64,
    skipped: u64,
}

impl FixedStep {
    /// A loop of `ticks`, catching up at most 8 ticks in one call (a stalled frame does not
    /// make the next one simulate seconds of ticks: the rest are skipped, and counted).
    pub fn new(ticks: Ticks) -> FixedStep {
        FixedStep {
            ticks,
            next: None,
            max_catch_up: 8,
            skipped: 0,
        }
    }

    /// The same with at most `ticks` caught up in one call (at least 1).
    pub fn with_max_catch_up(mut self, ticks: u64) -> FixedStep {
        self.max_catch_up = ticks.max(1);
        self
    }

    /// The ticks to simulate at clock time `time`: from the one after the last simulated to
    /// the one `time` falls in. The first call gives the current tick alone; a clock that
    /// went back (a client's estimate of the host's corrected itself) gives none until it
    /// passes the last simulated tick again.
    pub fn due(&mut self, time: Duration) -> Range<u64> {
        let now = self.ticks.at(time);
        let next = *self.next.get_or_insert(now);
        if now < next {
            return next..next;
        }
        let mut from = next;
        if now - from >= self.max_catch_up {
            let first = now + 1 - self.max_catch_up;
            self.skipped += first - from;
            from = first;
        }
        self.next = Some(now + 1);
        from..now + 1
    }

    /// When the next tick falls due on the clock: the time a loop sleeps until before it
    /// calls [`due`](Self::due) again. `None` before the first call placed it on the clock.
    pub fn next_due(&self) -> Option<Duration> {
        self.next.map(|tick| self.ticks.start(tick))
    }

    /// Ticks skipped so far because a call was more than the catch-up behind.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The ticks it counts.
    pub fn ticks(&self) -> Ticks {
        self.ticks
    }
}

/// The tick a client should stamp the input it sends now, so that it reaches the host before
/// the host simulates that tick: the host's clock now (`clock`, from [`Room::clock`](crate::Room::clock)),
/// plus the wait for the link's next packet (`next_packet_ms`: within a pacing interval, 33 ms
/// in good mode and 100 ms in bad), half the link's round trip, and a margin of twice its jitter and the clock's uncertainty,
/// rounded up to the next tick. `link` is the link's [`Stats`] as of now: it follows them as
/// they change. `None` while the clock is not synced.
pub fn input_tick(clock: &ClockReading, link: &Stats, ticks: Ticks) -> Option<u64> {
    if !clock.synced {
        return None;
    }
    let ms = |v: f64| Duration::from_secs_f64(v.max(0.0) / 1000.0);
    let ahead = ms(link.next_packet_ms + link.rtt_ms / 2.0 + 2.0 * link.jitter_ms);
    Some(ticks.at(clock.time + ahead + clock.uncertainty) + 1)
}

/// What [`Snapshots`] blends: the state between two states, `t` of the way (0 to 1) from
/// `self` to `to`.
pub trait Interpolate {
    /// The state `t` of the way from `self` to `to`.
    fn interpolate(&self, to: &Self, t: f32) -> Self;
}

impl Interpolate for f32 {
    fn interpolate(&self, to: &f32, t: f32) -> f32 {
        self + (to - self) * t
    }
}

impl<const N: usize> Interpolate for [f32; N] {
    fn interpolate(&self, to: &[f32; N], t: f32) -> [f32; N] {
        std::array::from_fn(|i| self[i].interpolate(&to[i], t))
    }
}

/// States kept: at 60 ticks a second, two seconds of them.
const KEPT: usize = 120;
/// Lateness samples the delay is sized from.
const LATENESS_WINDOW: usize = 64;

/// A client's buffer of the host's states, each stamped with the tick it shows, drawn at a
/// render time behind the host's clock: between the two states around it, so motion is
/// smooth whatever the arrivals' jitter, gaps and reordering.
///
/// The delay behind the host's clock is sized from how late states arrive: each arrival's
/// lateness (the host's clock at arrival, less the end of the tick it shows) is kept for the
/// last 64 states, and the delay is the 90th percentile of them plus one tick, so that the
/// state after the render time has usually arrived, even when the one before it was lost.
/// It moves towards that target by a tenth of the gap per state, so the render time never
/// jumps, and never runs backwards.
#[derive(Debug, Clone)]
pub struct Snapshots<T> {
    ticks: Ticks,
    /// By tick, oldest first.
    states: VecDeque<(u64, T)>,
    lateness: VecDeque<Duration>,
    delay: Duration,
    /// The last render time drawn at.
    drawn: Option<Duration>,
    held: u64,
    between: u64,
    drawn_count: u64,
}

impl<T: Interpolate + Clone> Snapshots<T> {
    /// A buffer for states stamped in `ticks`, starting at a delay of two ticks.
    pub fn new(ticks: Ticks) -> Snapshots<T> {
        Snapshots {
            ticks,
            states: VecDeque::new(),
            lateness: VecDeque::new(),
            delay: ticks.period() * 2,
            drawn: None,
            held: 0,
            between: 0,
            drawn_count: 0,
        }
    }

    /// A state for tick `tick` arrived when the host's clock read `arrived` (the room's
    /// clock at arrival). A state older than every one kept, or a tick already kept, is
    /// dropped (`false`).
    pub fn push(&mut self, tick: u64, arrived: Duration, state: T) -> bool {
        let at = self.states.partition_point(|(t, _)| *t < tick);
        if self.states.get(at).is_some_and(|(t, _)| *t == tick)
            || (at == 0 && self.states.len() == KEPT)
        {
            return false;
        }
        self.states.insert(at, (tick, state));
        if self.states.len() > KEPT {
            self.states.pop_front();
        }
        let late = arrived.saturating_sub(self.ticks.start(tick + 1));
        if self.lateness.len() == LATENESS_WINDOW {
            self.lateness.pop_front();
        }
        self.lateness.push_back(late);
        let mut sorted: Vec<Duration> = self.lateness.iter().copied().collect();
        sorted.sort_unstable();
        let p90 = sorted[(sorted.len() * 9 / 10).min(sorted.len() - 1)];
        let target = p90 + self.ticks.period();
        // A tenth of the way per state: ~1 s to settle at 30 states a second.
        self.delay = if target > self.delay {
            self.delay + (target - self.delay) / 10
        } else {
            self.delay - (self.delay - target) / 10
        };
        true
    }

    /// How far behind the host's clock states are drawn now.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The state to draw when the host's clock reads `now`: at `now - delay` (never before
    /// the last render time), between the two states around it; the nearest one when the
    /// render time is before the first or after the last kept (no extrapolation). `None`
    /// before any state.
    pub fn sample(&mut self, now: Duration) -> Option<T> {
        let mut at = now.saturating_sub(self.delay);
        if let Some(drawn) = self.drawn {
            at = at.max(drawn);
        }
        self.drawn = Some(at);
        self.drawn_count += 1;
        // States show the field at the end of their tick.
        let end = |tick: u64| self.ticks.start(tick + 1);
        let after = self.states.partition_point(|(t, _)| end(*t) <= at);
        let state = match (
            after.checked_sub(1).map(|i| &self.states[i]),
            self.states.get(after),
        ) {
            (Some((t0, s0)), Some((t1, s1))) => {
                let (from, to) = (end(*t0), end(*t1));
                let t = (at - from).as_secs_f32() / (to - from).as_secs_f32();
                self.between += 1;
                s0.interpolate(s1, t)
            }
            (Some((_, last)), None) => {
                self.held += 1;
                last.clone()
            }
            (None, Some((_, first))) => first.clone(),
            (None, None) => return None,
        };
        Some(state)
    }

    /// Draws that found no state after the render time (the newest was held): a share that
    /// stays high means the delay is short for this path.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Draws between two states (interpolated): most of them, on a path the delay suits.
    pub fn between(&self) -> u64 {
        self.between
    }

    /// Draws so far.
    pub fn drawn(&self) -> u64 {
        self.drawn_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn ticks(ms: u64) -> Ticks {
        Ticks::new(MS * ms as u32).unwrap()
    }

    #[test]
    fn ticks_count_from_the_clocks_zero_and_refuse_a_zero_period() {
        let t = ticks(50);
        assert_eq!((t.at(MS * 49), t.at(MS * 50), t.at(MS * 120)), (0, 1, 2));
        assert_eq!(t.start(3), MS * 150);
        assert!(Ticks::new(Duration::ZERO).is_none());
        assert!(Ticks::new(Duration::from_secs(3601)).is_none());
    }

    #[test]
    fn a_fixed_step_gives_each_tick_once_skips_a_long_stall_and_waits_out_a_clock_gone_back() {
        let mut step = FixedStep::new(ticks(10)).with_max_catch_up(4);
        assert_eq!(step.due(MS * 35), 3..4);
        assert_eq!(step.due(MS * 38), 4..4, "still in tick 3: nothing");
        assert_eq!(step.due(MS * 61), 4..7);
        // A stall of 100 ms: the last 4 ticks, and the 7 before them counted as skipped.
        assert_eq!(step.due(MS * 175), 14..18);
        assert_eq!(step.skipped(), 7);
        // The client's estimate of the host's clock moved back 30 ms: no tick again until
        // the clock is past tick 17.
        assert_eq!(step.due(MS * 150), 18..18);
        assert_eq!(step.due(MS * 185), 18..19);
    }

    fn stats(rtt_ms: f64, jitter_ms: f64, next_packet_ms: f64) -> Stats {
        let mut s = Stats::default();
        s.rtt_ms = rtt_ms;
        s.jitter_ms = jitter_ms;
        s.next_packet_ms = next_packet_ms;
        s
    }

    #[test]
    fn an_input_is_stamped_for_the_tick_it_can_reach_the_host_by() {
        let mut clock = ClockReading::own(MS * 1000);
        clock.uncertainty = MS * 2;
        // 1000 ms + 40 (half of 80) + 2 × 5 + 2 = 1052 ms: tick 21 of 50 ms; the next begins
        // after the input arrives.
        assert_eq!(
            input_tick(&clock, &stats(80.0, 5.0, 0.0), ticks(50)),
            Some(22)
        );
        // More jitter: a later tick.
        assert_eq!(
            input_tick(&clock, &stats(80.0, 30.0, 0.0), ticks(50)),
            Some(23)
        );
        // The link's next packet is 100 ms away (bad mode's pacing): the input waits for it.
        assert_eq!(
            input_tick(&clock, &stats(80.0, 5.0, 100.0), ticks(50)),
            Some(24)
        );
        clock.synced = false;
        assert_eq!(input_tick(&clock, &stats(80.0, 5.0, 0.0), ticks(50)), None);
    }

    /// A host ticking at 30 Hz sends its state at each tick's end; each arrives after
    /// `base` plus up to `spread` of jitter, `lost` in 100 never; a client draws at 60 Hz.
    /// Returns the buffer and the share of draws that found nothing after the render time.
    fn play(base_ms: u64, spread_ms: u64, lost: u64, seconds: u64) -> (Snapshots<f32>, f64) {
        let t = ticks(33);
        let mut buffer = Snapshots::new(t);
        let mut arrivals: Vec<(Duration, u64)> = Vec::new();
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut random = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let total = seconds * 30;
        for tick in 0..total {
            if random(100) < lost {
                continue;
            }
            let late = MS * (base_ms + random(spread_ms + 1)) as u32;
            arrivals.push((t.start(tick + 1) + late, tick));
        }
        arrivals.sort();
        let (mut next, mut now) = (0, Duration::ZERO);
        let mut previous = None;
        let (mut held_after_warmup, mut draws_after_warmup) = (0, 0);
        while now < t.start(total) {
            while next < arrivals.len() && arrivals[next].0 <= now {
                let (at, tick) = arrivals[next];
                buffer.push(tick, at, tick as f32);
                next += 1;
            }
            let held = buffer.held();
            let x = buffer.sample(now);
            if now > Duration::from_secs(2) {
                // The render time never runs backwards: neither does the drawn tick.
                let x = x.expect("states by now");
                assert!(previous.is_none_or(|p| x >= p), "{x} after {previous:?}");
                previous = Some(x);
                draws_after_warmup += 1;
                held_after_warmup += buffer.held() - held;
            }
            now += MS * 16;
        }
        (buffer, held_after_warmup as f64 / draws_after_warmup as f64)
    }

    #[test]
    fn the_delay_follows_the_paths_jitter_and_draws_rarely_run_out_of_states() {
        let (quiet, held_quiet) = play(20, 0, 0, 10);
        let (jittery, held_jittery) = play(20, 40, 10, 10);
        println!(
            "delay {:?} quiet, {:?} at 10 % loss and 20-60 ms; draws held: {held_quiet:.3}, {held_jittery:.3}",
            quiet.delay(),
            jittery.delay()
        );
        // A quiet path: one tick and the 20 ms, give or take the settling.
        assert!(quiet.delay() < MS * 60, "{:?}", quiet.delay());
        assert!(
            jittery.delay() > quiet.delay() + MS * 20,
            "{:?}",
            jittery.delay()
        );
        assert!(held_quiet < 0.01, "{held_quiet}");
        let between = |b: &Snapshots<f32>| b.between() as f64 / b.drawn() as f64;
        assert!(between(&quiet) > 0.95, "{}", between(&quiet));
        assert!(between(&jittery) > 0.8, "{}", between(&jittery));
        // 10 % lost and 40 ms of spread: still a state after the render time in 9 draws of 10.
        assert!(held_jittery < 0.10, "{held_jittery}");
    }

    #[test]
    fn duplicates_and_states_older_than_the_buffer_are_dropped_and_late_ones_slot_in() {
        let mut buffer = Snapshots::new(ticks(10));
        assert!(buffer.push(5, MS * 70, 5.0));
        assert!(buffer.push(7, MS * 90, 7.0));
        assert!(!buffer.push(7, MS * 95, 7.0), "a duplicate");
        assert!(buffer.push(6, MS * 96, 6.0), "late, between the two");
        // Drawn at the end of tick 6 (70 ms) less the delay: between 5 and 7 in order.
        let x = buffer.sample(MS * 70 + buffer.delay()).unwrap();
        assert!((x - 6.0).abs() < 0.01, "{x}");
    }
}
