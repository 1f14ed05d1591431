//! A fixed-size ring of per-sequence entries, indexed by `sequence % N` (`N` a power of two,
//! so that is a mask, not a division, on every packet) and tagged with the
//! sequence so a stale slot is never mistaken for a live one (the seed author's advice:
//! lists are the wrong structure here). Allocates at construction, and again only when asked
//! to [`grow`](SequenceBuffer::grow).

use crate::sequence::distance;

/// Ring of `N` slots holding a value per recent sequence number.
#[derive(Debug, Clone)]
pub(crate) struct SequenceBuffer<T> {
    slots: Box<[Option<(u16, T)>]>,
    newest: Option<u16>,
}

impl<T> SequenceBuffer<T> {
    /// A buffer remembering up to `len` consecutive sequences. `len` is rounded up to a power
    /// of two and clamped to `1..=32768` (beyond half the sequence space "older" and "newer"
    /// stop meaning anything).
    pub(crate) fn new(len: usize) -> Self {
        let len = len.clamp(1, 32768).next_power_of_two();
        let slots = (0..len).map(|_| None).collect();
        SequenceBuffer {
            slots,
            newest: None,
        }
    }

    /// Number of slots.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The most recent sequence ever inserted.
    #[cfg(test)]
    pub(crate) fn newest(&self) -> Option<u16> {
        self.newest
    }

    fn index(&self, sequence: u16) -> usize {
        // The length is a power of two, and sits beside the pointer: no field of its own.
        usize::from(sequence) & (self.slots.len() - 1)
    }

    /// Stores `value` for `sequence`, replacing whatever the slot held.
    ///
    /// Returns `None` (storing nothing) when `sequence` is too old for the ring, i.e. at least
    /// `len` behind the newest. Inserting a newer sequence clears the slots of the skipped
    /// sequences, so they read as absent rather than as entries from a previous lap.
    pub(crate) fn insert(&mut self, sequence: u16, value: T) -> Option<&mut T> {
        let len = self.slots.len();
        if let Some(newest) = self.newest {
            let ahead = i32::from(distance(newest, sequence));
            if ahead <= -(len as i32) {
                return None;
            }
            if ahead > 0 {
                let skipped = (ahead as usize - 1).min(len);
                for k in 1..=skipped {
                    let index = self.index(newest.wrapping_add(k as u16));
                    self.slots[index] = None;
                }
                self.newest = Some(sequence);
            }
        } else {
            self.newest = Some(sequence);
        }
        let index = self.index(sequence);
        let slot = &mut self.slots[index];
        *slot = Some((sequence, value));
        slot.as_mut().map(|(_, value)| value)
    }

    /// The entry for `sequence`, if it is still held.
    pub(crate) fn get(&self, sequence: u16) -> Option<&T> {
        match &self.slots[self.index(sequence)] {
            Some((tag, value)) if *tag == sequence => Some(value),
            _ => None,
        }
    }

    /// Takes the entry for `sequence` out, if it is still held.
    pub(crate) fn remove(&mut self, sequence: u16) -> Option<T> {
        let index = self.index(sequence);
        match &self.slots[index] {
            Some((tag, _)) if *tag == sequence => self.slots[index].take().map(|(_, v)| v),
            _ => None,
        }
    }

    /// True when an entry for `sequence` is held.
    #[cfg(test)]
    pub(crate) fn contains(&self, sequence: u16) -> bool {
        self.get(sequence).is_some()
    }

    /// Doubles the slots (up to 32768), keeping every entry. Every entry held is within
    /// `len` sequences of the newest (each lap writes or clears every slot), so no two meet
    /// in one slot of the larger ring.
    pub(crate) fn grow(&mut self) {
        let len = (self.slots.len() * 2).min(32768);
        let mut grown: Box<[Option<(u16, T)>]> = (0..len).map(|_| None).collect();
        for (tag, value) in self.slots.iter_mut().filter_map(Option::take) {
            let index = usize::from(tag) & (len - 1);
            debug_assert!(grown[index].is_none(), "two entries a ring apart");
            grown[index] = Some((tag, value));
        }
        self.slots = grown;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grown_ring_keeps_every_entry_and_holds_twice_the_span() {
        let mut buffer = SequenceBuffer::new(8);
        // Across the wrap of the sequence space.
        for sequence in 65_530u16..65_535 {
            buffer.insert(sequence, sequence);
        }
        buffer.insert(2, 2);
        buffer.grow();
        assert_eq!(buffer.len(), 16);
        for sequence in [65_531u16, 65_532, 65_533, 65_534, 2] {
            assert_eq!(buffer.get(sequence), Some(&sequence));
        }
        assert_eq!(buffer.get(65_535), None, "skipped, cleared");
        // The span it holds is the new length: 15 behind the newest still fits.
        buffer.insert(17, 17);
        assert_eq!(buffer.get(2), Some(&2));
        assert_eq!(buffer.insert(1, 1), None, "16 behind the newest is too old");
    }

    #[test]
    fn entries_are_found_by_their_own_sequence_only() {
        let mut buffer = SequenceBuffer::new(8);
        buffer.insert(3, "three");
        assert_eq!(buffer.get(3), Some(&"three"));
        assert_eq!(buffer.get(11), None, "11 shares the slot but not the tag");
    }

    #[test]
    fn sequences_a_full_lap_behind_the_newest_are_refused() {
        let mut buffer = SequenceBuffer::new(8);
        buffer.insert(100, 1);
        assert!(buffer.insert(92, 2).is_none());
        assert!(buffer.insert(93, 3).is_some());
        assert_eq!(buffer.get(100), Some(&1));
    }

    #[test]
    fn jumping_ahead_clears_the_skipped_slots() {
        let mut buffer = SequenceBuffer::new(8);
        for seq in 0..8 {
            buffer.insert(seq, seq);
        }
        buffer.insert(12, 12);
        // 8..=11 were skipped: their slots held 0..=3 and must read as absent now; 12 took
        // the slot of 4.
        assert!((0..=4).all(|seq| !buffer.contains(seq)));
        assert!((5..=7).chain([12]).all(|seq| buffer.contains(seq)));
    }

    #[test]
    fn lengths_round_up_to_a_power_of_two() {
        assert_eq!(SequenceBuffer::<()>::new(100).len(), 128);
        assert_eq!(SequenceBuffer::<()>::new(256).len(), 256);
        assert_eq!(SequenceBuffer::<()>::new(0).len(), 1);
        assert_eq!(SequenceBuffer::<()>::new(1 << 20).len(), 32768);
    }

    #[test]
    fn insertion_continues_across_the_wrap_from_65535_to_0() {
        let mut buffer = SequenceBuffer::new(16);
        for seq in 65530..=65535 {
            buffer.insert(seq, ());
        }
        for seq in 0..4 {
            buffer.insert(seq, ());
        }
        assert_eq!(buffer.newest(), Some(3));
        assert!(buffer.contains(65533) && buffer.contains(0));
        assert_eq!(buffer.remove(65533), Some(()));
        assert!(!buffer.contains(65533));
    }
}
