//! The bulk window: how far a link may run ahead of its cadence while reliable frames wait.
//!
//! The binary modes (see [`crate::congestion`]) pace a link at a game's steady rate, one
//! packet per interval, 30 a second in good mode: about 35 KB/s of reliable data. A level or a
//! large initial state waits minutes at that rate. So while the packer leaves a due reliable
//! frame out for lack of room (a backlog) and the link is good (good mode, or an RTT measured
//! under the threshold and a peer that is not silent while the mode waits out its recovery),
//! the endpoint may send extra packets between the cadence's, under a congestion window
//! counted in packets:
//!
//! - it starts at [`INITIAL_WINDOW`] and grows by one per packet acked until the first
//!   congestion signal (slow start), then by one per window acked (congestion avoidance);
//! - a **congestion signal** is an RTT sample more than [`rtt_rise`] above the smallest seen
//!   (a queue building up on the path, which would delay the game's own packets), or more
//!   packets lost in one round trip than the path loses without the transfer (a packet counts
//!   as lost once [`REORDER`] newer ones were acked before it): [`LOSS_TOLERANCE`] of the
//!   window, plus what the link's own loss before the transfer (its last 64 resolved
//!   packets, at most [`MAX_BASELINE`]) would lose of it with two standard deviations to spare
//!   ([`loss_limit`]). Each multiplies the window by [`BACKOFF`], at most once per window of
//!   packets (a burst of losses is one signal). Random loss (Wi-Fi, a lossy last mile) is not
//!   congestion and cuts nothing: on a clean link a transfer tolerates BBR's 2 %, and on a
//!   link that already lost 5 % of the game's packets it tolerates those 5 % and what
//!   chance adds to them, not a queue's overflow above them;
//! - extra packets are spread over the round trip (the window over the smoothed RTT, with
//!   headroom), never sent as one burst;
//! - a packet counted as lost by a signal leaves the window at once: it is not waited for
//!   until the loss timeout declares it lost (its reliable frames are resent by their own
//!   timer, as always);
//! - after [`RESTART_AFTER`] without a backlog the next transfer starts afresh, as the path
//!   may have changed.
//!
//! The cadence packets go out as before and the packer puts queued unreliable frames first in
//! every packet ("Packing" in docs/wire.md): the game's own traffic keeps its place. While
//! conditions are bad there are no extra packets.

use crate::sequence::distance;
use crate::time::NEVER;

/// Packets the window starts with (as TCP's initial window, RFC 6928).
pub(crate) const INITIAL_WINDOW: f64 = 10.0;

/// The window never shrinks below this.
pub(crate) const MIN_WINDOW: f64 = 2.0;

/// What a congestion signal multiplies the window by (CUBIC's β, RFC 9438).
pub(crate) const BACKOFF: f64 = 0.7;

/// Losses in one round trip above this share of the window are a congestion signal (BBR's
/// 2 %): one loss cuts a window of 50 packets or fewer, three are needed at 100.
pub(crate) const LOSS_TOLERANCE: f64 = 0.02;

/// The link's loss before a transfer counts as random (not the transfer's doing) up to this
/// share: a quiet link losing more is broken, not noisy, and the transfer tolerates no more.
pub(crate) const MAX_BASELINE: f64 = 0.10;

/// Losses in one round trip of a `window` of packets past which they are congestion, when the
/// link lost `baseline` of its packets before the transfer: [`LOSS_TOLERANCE`] of the window,
/// plus the baseline's share of it and two standard deviations of that (a binomial's), so
/// that random loss alone crosses it in one or two round trips of a hundred (a binomial at
/// 5 % loss: 1.2 % of round trips at 10 packets, 0.4 % at 100).
pub(crate) fn loss_limit(window: f64, baseline: f64) -> f64 {
    let expected = baseline * window;
    LOSS_TOLERANCE * window + expected + 2.0 * (expected * (1.0 - baseline)).sqrt()
}

/// How many newer packets must be acked before an unacked one counts as lost for the window
/// (QUIC's packet threshold, RFC 9002).
pub(crate) const REORDER: u16 = 3;

/// A backlog after this long without one starts a fresh window, in nanoseconds (1 s).
pub(crate) const RESTART_AFTER: u64 = 1_000_000_000;

/// The pace keeps up to this much credit, in nanoseconds (2 ms): a driver whose timer wakes it
/// a millisecond late (tokio's resolution) sends what fell due meanwhile, rather than one
/// packet per wake.
pub(crate) const PACING_SLACK: u64 = 2_000_000;

/// How far above the smallest RTT seen a sample may be before it counts as a queue building
/// up: a quarter of that RTT, and at least 5 ms (a tick of a 200 Hz loop), in nanoseconds.
pub(crate) fn rtt_rise(min_rtt: u64) -> u64 {
    (min_rtt / 4).max(5_000_000)
}

/// State of the window, made on a link's first backlog.
#[derive(Debug, Clone)]
pub(crate) struct BulkWindow {
    /// The window, in packets.
    window: f64,
    /// Slow start ends here (the window after the last signal).
    threshold: f64,
    /// Largest window allowed (`Config::bulk_window_packets`).
    max: f64,
    /// Packets sent and not yet acked, declared lost, or counted lost by a signal.
    pub(crate) in_flight: u32,
    /// Every sequence before this one was looked at for a signal: one still unacked then
    /// has left `in_flight` already.
    pub(crate) cursor: u16,
    /// A signal from a packet before this sequence belongs to the window already cut.
    recovery: u16,
    /// The current round trip ends when a packet from this sequence on is acked.
    round_start: u16,
    /// Packets lost in the current round trip.
    round_lost: u32,
    /// Smallest RTT sample since the window started, in nanoseconds (`NEVER` before one).
    min_rtt: u64,
    /// The share of packets the link lost before the transfer (random loss, see
    /// [`loss_limit`]).
    baseline: f64,
    /// The next extra packet may leave at this time (pacing).
    pub(crate) next_at: u64,
    /// When the connection last had a backlog.
    pub(crate) wanted_at: u64,
}

impl BulkWindow {
    /// A fresh window at `now`, with `in_flight` packets already out (none before `oldest`),
    /// and `next` the sequence the next packet gets: signals start with it. `baseline`: the
    /// share of packets the link lost before the transfer.
    pub(crate) fn new(
        max: u16,
        in_flight: u32,
        oldest: u16,
        next: u16,
        now: u64,
        baseline: f64,
    ) -> BulkWindow {
        let max = f64::from(max);
        BulkWindow {
            window: INITIAL_WINDOW.min(max).max(MIN_WINDOW.min(max)),
            threshold: max,
            max,
            in_flight,
            cursor: oldest,
            recovery: next,
            round_start: next,
            round_lost: 0,
            min_rtt: NEVER,
            baseline: baseline.clamp(0.0, MAX_BASELINE),
            next_at: now,
            wanted_at: now,
        }
    }

    /// Whether one more packet fits the window.
    pub(crate) fn is_open(&self) -> bool {
        f64::from(self.in_flight) < self.window
    }

    /// The window, in whole packets (for statistics).
    pub(crate) fn window(&self) -> u32 {
        self.window as u32
    }

    /// A packet was sent at `now`; an extra one (not the cadence's) also sets the pace.
    pub(crate) fn on_sent(&mut self, now: u64, extra: bool, srtt: Option<u64>) {
        self.in_flight += 1;
        if extra {
            // Slow start paces at twice the window's rate, avoidance at 1.25 times: the
            // window, not the pace, is what holds the rate back.
            let headroom = if self.window < self.threshold {
                2.0
            } else {
                1.25
            };
            let gap = srtt.map_or(0.0, |rtt| rtt as f64 / (self.window * headroom));
            let from = self.next_at.max(now.saturating_sub(PACING_SLACK));
            self.next_at = from.saturating_add(gap as u64);
        }
    }

    /// Packet `sequence`, counted in `in_flight`, was acked; `growing` while a backlog waits
    /// (a window that is not used is not grown); `next` is the sequence the next packet gets.
    pub(crate) fn on_acked(&mut self, sequence: u16, growing: bool, next: u16) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if distance(self.round_start, sequence) >= 0 {
            self.round_start = next;
            self.round_lost = 0;
        }
        if growing {
            self.window = if self.window < self.threshold {
                self.window + 1.0
            } else {
                self.window + 1.0 / self.window
            }
            .min(self.max);
        }
    }

    /// Packet `sequence`, counted in `in_flight`, is lost; `next` is the sequence the next
    /// packet gets. A signal once this round trip's losses pass [`loss_limit`].
    pub(crate) fn on_lost(&mut self, sequence: u16, next: u16) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if distance(self.recovery, sequence) < 0 {
            return;
        }
        self.round_lost += 1;
        if f64::from(self.round_lost) > loss_limit(self.window, self.baseline) {
            self.signal(sequence, next);
        }
    }

    /// An RTT sample (hold removed): the smallest is the path's; one well above it is a
    /// queue, and a signal. `next` is the sequence the next packet gets.
    pub(crate) fn on_rtt(&mut self, sample: u64, next: u16) {
        self.min_rtt = self.min_rtt.min(sample);
        if sample > self.min_rtt.saturating_add(rtt_rise(self.min_rtt)) {
            self.signal(next.wrapping_sub(1), next);
        }
    }

    /// Packet `sequence` is counted lost; `next` is the sequence the next packet gets. Cuts
    /// the window unless this packet was sent before the last cut.
    pub(crate) fn signal(&mut self, sequence: u16, next: u16) {
        if distance(self.recovery, sequence) < 0 {
            return;
        }
        self.window = (self.window * BACKOFF).max(MIN_WINDOW.min(self.max));
        self.threshold = self.window;
        self.recovery = next;
        self.round_start = next;
        self.round_lost = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn slow_start_doubles_the_window_each_round_trip_then_avoidance_adds_one() {
        let mut w = BulkWindow::new(256, 0, 0, 0, 0, 0.0);
        // One round trip: a window's packets out, each acked, each adding one.
        for _ in 0..10 {
            w.on_sent(0, true, Some(10 * MS));
        }
        for n in 0..10 {
            w.on_acked(n, true, 10);
        }
        assert_eq!(w.window(), 20);
        w.signal(5, 10);
        assert_eq!(w.window(), 14, "a signal cuts to 0.7 of the window");
        let before = w.window;
        for _ in 0..14 {
            w.on_sent(0, true, Some(10 * MS));
            w.on_acked(10, true, 11);
        }
        assert!(
            (w.window - before - 1.0).abs() < 0.1,
            "one packet per window acked"
        );
    }

    #[test]
    fn a_burst_of_losses_from_one_window_cuts_once() {
        let mut w = BulkWindow::new(256, 0, 100, 100, 0, 0.0);
        w.window = 40.0;
        w.signal(100, 140);
        w.signal(101, 140);
        w.signal(139, 140);
        assert_eq!(w.window(), 28);
        w.signal(140, 180);
        assert_eq!(w.window(), 19, "a loss from the next window cuts again");
    }

    #[test]
    fn losses_within_the_tolerance_cut_nothing_and_past_it_cut_once() {
        let mut w = BulkWindow::new(256, 0, 0, 0, 0, 0.0);
        w.window = 100.0;
        w.on_lost(3, 100);
        w.on_lost(40, 100);
        assert_eq!(
            w.window(),
            100,
            "2 of 100 packets in a round trip: random loss"
        );
        w.on_lost(41, 100);
        assert_eq!(w.window(), 70, "the third is congestion");
        w.on_lost(60, 100);
        w.on_lost(61, 100);
        assert_eq!(w.window(), 70, "the same window is cut once");
        // A new round trip starts counting afresh.
        w.on_acked(100, true, 170);
        w.on_lost(101, 170);
        assert_eq!(w.window(), 70);
        let mut small = BulkWindow::new(256, 0, 0, 0, 0, 0.0);
        small.on_lost(0, 10);
        assert_eq!(
            small.window(),
            7,
            "one loss in 10 packets is past the tolerance"
        );
    }

    #[test]
    fn on_a_link_that_lost_5_percent_before_the_transfer_that_loss_is_not_congestion() {
        // 100 packets a round trip on a link that lost 5 % of the game's packets: 5 expected,
        // and up to 11 (2 % + 5 % + two deviations of 2.2) tolerated; a queue's overflow on
        // top of them cuts.
        assert!((loss_limit(100.0, 0.05) - 11.36).abs() < 0.01);
        let mut w = BulkWindow::new(256, 0, 0, 0, 0, 0.05);
        w.window = 100.0;
        for n in 0..11 {
            w.on_lost(n * 9, 100);
        }
        assert_eq!(w.window(), 100, "11 of 100: the path's own loss");
        w.on_lost(99, 100);
        assert_eq!(w.window(), 70, "the 12th is congestion");
        // A small window is not cut by the one or two losses chance gives it.
        let mut small = BulkWindow::new(256, 0, 0, 0, 0, 0.05);
        small.on_lost(0, 10);
        small.on_lost(1, 10);
        assert_eq!(small.window(), 10);
        // A baseline past the cap counts as the cap: a broken link is not a noisy one.
        let broken = BulkWindow::new(256, 0, 0, 0, 0, 0.5);
        assert_eq!(broken.baseline, MAX_BASELINE);
        // On a clean link the limit is the 2 % it always was.
        assert_eq!(loss_limit(50.0, 0.0), 1.0);
    }

    #[test]
    fn an_unused_window_does_not_grow_and_none_passes_its_bounds() {
        let mut w = BulkWindow::new(12, 0, 0, 0, 0, 0.0);
        for _ in 0..100 {
            w.on_sent(0, true, None);
            w.on_acked(0, false, 1);
        }
        assert_eq!(w.window(), 10);
        for _ in 0..100 {
            w.on_acked(0, true, 1);
        }
        assert_eq!(w.window(), 12, "capped at the configured maximum");
        for n in 0..20u16 {
            w.signal(n * 100, n * 100 + 1);
        }
        assert_eq!(w.window(), 2, "never below the minimum");
    }

    #[test]
    fn an_rtt_well_above_the_smallest_is_a_signal_and_one_within_the_rise_is_not() {
        let mut w = BulkWindow::new(256, 0, 0, 0, 0, 0.0);
        w.window = 100.0;
        w.on_rtt(50 * MS, 10);
        w.on_rtt(60 * MS, 11);
        assert_eq!(w.window(), 100, "12.5 ms is within a quarter of 50 ms");
        w.on_rtt(63 * MS, 12);
        assert_eq!(w.window(), 70);
    }

    #[test]
    fn extra_packets_are_spread_over_the_round_trip() {
        let mut w = BulkWindow::new(256, 0, 0, 0, 0, 0.0);
        w.on_sent(0, true, Some(20 * MS));
        assert_eq!(w.next_at, MS, "20 ms over 10 packets at twice the rate");
        w.on_sent(5 * MS, false, Some(20 * MS));
        assert_eq!(w.next_at, MS, "a cadence packet leaves the pace alone");
        assert_eq!(w.in_flight, 2);
        // A driver waking 4 ms late may send what fell due in the last 2 ms at once.
        w.on_sent(5 * MS, true, Some(20 * MS));
        assert_eq!(w.next_at, 4 * MS);
        w.on_sent(5 * MS, true, Some(20 * MS));
        assert_eq!(w.next_at, 5 * MS);
    }
}
