//! Packet loss over a sliding window of the most recently resolved packets, kept incrementally
//! (one ring of outcomes and a running count) so reading it is O(1).

/// Outcomes (acked or lost) of the last `len` resolved packets.
#[derive(Debug, Clone)]
pub struct LossWindow {
    lost: Box<[bool]>,
    next: usize,
    filled: usize,
    lost_count: usize,
}

impl LossWindow {
    /// A window over the last `len` (at least 1) outcomes. Allocates once.
    pub fn new(len: usize) -> Self {
        LossWindow {
            lost: vec![false; len.max(1)].into_boxed_slice(),
            next: 0,
            filled: 0,
            lost_count: 0,
        }
    }

    /// Records one packet's outcome, pushing out the oldest once the window is full.
    pub fn record(&mut self, lost: bool) {
        if self.filled == self.lost.len() {
            self.lost_count -= usize::from(self.lost[self.next]);
        } else {
            self.filled += 1;
        }
        self.lost[self.next] = lost;
        self.lost_count += usize::from(lost);
        self.next = (self.next + 1) % self.lost.len();
    }

    /// Lost share of the window in percent; 0 before any outcome.
    pub fn percent(&self) -> f64 {
        if self.filled == 0 {
            0.0
        } else {
            self.lost_count as f64 * 100.0 / self.filled as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_counts_only_the_most_recent_outcomes() {
        let mut window = LossWindow::new(4);
        assert_eq!(window.percent(), 0.0);
        window.record(true);
        window.record(false);
        assert_eq!(window.percent(), 50.0);
        for _ in 0..4 {
            window.record(false);
        }
        assert_eq!(window.percent(), 0.0, "the old loss slid out of the window");
    }
}
