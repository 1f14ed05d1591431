//! Packet loss over a sliding window of the most recently resolved packets, kept incrementally
//! (one ring of outcomes and a running count) so reading it is O(1).

/// Outcomes (acked or lost) of the last `len` resolved packets.
#[derive(Debug, Clone)]
pub(crate) struct LossWindow {
    /// One bit per outcome (set: lost), slot `next` being the oldest once full. The first 64
    /// bits live inline, so the default window (64 packets) needs no allocation of its own:
    /// one cache line fewer per ack for a server with thousands of connections.
    inline: u64,
    /// Bits 64 and up, for longer windows.
    spill: Box<[u64]>,
    /// 16 bits, like `Config::loss_window_packets`: the window then fills half a cache line.
    len: u16,
    next: u16,
    filled: u16,
    lost_count: u16,
}

impl LossWindow {
    /// A window over the last `len` (at least 1, at most 65535) outcomes. Allocates at most
    /// once, here.
    pub(crate) fn new(len: usize) -> Self {
        let len = len.clamp(1, usize::from(u16::MAX)) as u16;
        let words = (len as usize).div_ceil(64);
        LossWindow {
            inline: 0,
            spill: vec![0; words - 1].into_boxed_slice(),
            len,
            next: 0,
            filled: 0,
            lost_count: 0,
        }
    }

    fn word(&mut self, slot: u16) -> &mut u64 {
        match slot / 64 {
            0 => &mut self.inline,
            n => &mut self.spill[n as usize - 1],
        }
    }

    /// Records one packet's outcome, pushing out the oldest once the window is full.
    pub(crate) fn record(&mut self, lost: bool) {
        let (slot, full) = (self.next, self.filled == self.len);
        let bit = 1u64 << (slot % 64);
        let word = self.word(slot);
        let was_lost = *word & bit != 0;
        *word = if lost { *word | bit } else { *word & !bit };
        if full {
            self.lost_count -= u16::from(was_lost);
        } else {
            self.filled += 1;
        }
        self.lost_count += u16::from(lost);
        self.next = if slot + 1 == self.len { 0 } else { slot + 1 };
    }

    /// Lost share of the window in percent; 0 before any outcome.
    pub(crate) fn percent(&self) -> f64 {
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

    #[test]
    fn windows_longer_than_the_inline_bits_count_every_slot() {
        // 150 slots: the inline word and two spilled ones.
        let mut window = LossWindow::new(150);
        for k in 0..150 {
            window.record(k % 3 == 0);
        }
        assert_eq!(
            window.percent(),
            50.0 * 100.0 / 150.0,
            "every third of 150 lost"
        );
        // One more lap of all-acked outcomes pushes every loss out, slot by slot.
        for k in 0..150 {
            window.record(false);
            let lost_left = (k + 1..150).filter(|j| j % 3 == 0).count();
            assert_eq!(
                window.percent(),
                lost_left as f64 * 100.0 / 150.0,
                "after {k}"
            );
        }
    }
}
