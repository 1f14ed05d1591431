//! Reliable delivery of messages over packets that may be lost: the sender's window of
//! messages awaiting an ack, and the receiver's window that drops duplicates, reorders and
//! reassembles fragments.
//!
//! Message ids are 16-bit and compared with RFC 1982 arithmetic. A sender never has more than
//! [`RELIABLE_WINDOW`] ids in flight past its oldest unacked id; every id below that id was
//! acked, so the receiver has taken it, and an honest sender's id is therefore always below
//! the receiver's next-awaited id plus the window. Anything further is refused as a protocol
//! error.
//!
//! Both windows are rings indexed by `id % len` and tagged with the id, sized by what they
//! hold rather than by the window: empty (no heap) until the first message, then
//! [`MIN_SLOTS`] slots, doubling whenever the ids held span more than the ring (up to the
//! whole window; every power of two up to 1024 divides 65536, so the ring stays aligned
//! across the wrap). A ring gives its storage back only when it holds nothing and the
//! connection's reliable traffic has been quiet for [`RELEASE_AFTER`] (see
//! `Connection::release_when_quiet`): never per packet, and never at a steady chat rate,
//! so a chatty connection allocates nothing per packet once its rings have grown.

use core::time::Duration;

use crate::frame::{FRAGMENT_SIZE, FrameError, FrameKind, RELIABLE_WINDOW};
use crate::sequence::distance;

const WINDOW: usize = RELIABLE_WINDOW as usize;

/// Slots a ring starts with on its first message: a chat message or two in flight (a send
/// slot is 48 bytes, a receive slot 40, so 8 of each are under 1 KiB together).
pub(crate) const MIN_SLOTS: usize = 8;

/// How long a connection's reliable traffic must have been quiet (nothing queued or in
/// flight, nothing arriving) before its empty rings and packet records are freed: twice the
/// ~1 s in which a packet is acked or declared lost, and longer than the gap between chat
/// messages at any rate worth keeping storage for (a message every 3rd packet at 5 packets/s
/// is one every 0.6 s), so a steady chat never frees and reallocates.
pub(crate) const RELEASE_AFTER: Duration = Duration::from_secs(2);

/// The slot of `id` in a ring of `len` slots (a power of two, not zero).
fn index(len: usize, id: u16) -> usize {
    usize::from(id) & (len - 1)
}

/// Ring length for `span` consecutive ids: a power of two, at least [`MIN_SLOTS`], at most
/// the window.
fn ring_len(span: usize) -> usize {
    span.max(MIN_SLOTS).next_power_of_two().min(WINDOW)
}

/// Moves every entry of `slots` into a new ring of `len` slots (ids held span at most `len`,
/// so no two entries meet in one slot).
fn resize<T>(slots: &mut Box<[Option<T>]>, len: usize, id: impl Fn(&T) -> u16) {
    let mut grown: Box<[Option<T>]> = (0..len).map(|_| None).collect();
    for entry in slots.iter_mut().filter_map(Option::take) {
        let at = index(len, id(&entry));
        debug_assert!(grown[at].is_none(), "two held ids in one slot");
        grown[at] = Some(entry);
    }
    *slots = grown;
}

/// A reliable message (or fragment) waiting for an ack.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) id: u16,
    pub(crate) bytes: Vec<u8>,
    /// `(index, last)` for a fragment.
    pub(crate) fragment: Option<(u8, u8)>,
    pub(crate) last_sent: Option<Duration>,
}

impl Pending {
    pub(crate) fn kind(&self) -> FrameKind {
        match self.fragment {
            None => FrameKind::Reliable { id: self.id },
            Some((index, last)) => FrameKind::Fragment {
                id: self.id,
                index,
                last,
            },
        }
    }
}

/// The sender's side: messages kept until a packet carrying them is acked.
#[derive(Debug)]
pub(crate) struct SendWindow {
    slots: Box<[Option<Pending>]>,
    /// Oldest id not yet acked (or `next` when none is in flight).
    oldest: u16,
    /// Id the next message gets.
    next: u16,
    /// At most `WINDOW` fragments' worth: 32 bits keep a channel within one cache line.
    bytes: u32,
}

impl SendWindow {
    pub(crate) fn new() -> SendWindow {
        SendWindow {
            // Allocated on the first message: most connections of a busy server never send a
            // reliable one on most channels (see the module docs).
            slots: Box::new([]),
            oldest: 0,
            next: 0,
            bytes: 0,
        }
    }

    /// Ids in flight (sent or queued, not acked), from the oldest unacked to the newest.
    pub(crate) fn in_flight(&self) -> usize {
        usize::from(self.next.wrapping_sub(self.oldest))
    }

    /// `(oldest id not acked, id the next message gets)`: every id before the first was acked.
    pub(crate) fn ids(&self) -> (u16, u16) {
        (self.oldest, self.next)
    }

    /// Ids that can still be taken.
    pub(crate) fn free(&self) -> usize {
        WINDOW - self.in_flight()
    }

    /// Message bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes as usize
    }

    /// Queues `message`, split into fragments if longer than [`FRAGMENT_SIZE`]. The caller
    /// has checked the size and that [`fragments_needed`] ids are free.
    pub(crate) fn push(&mut self, message: &[u8]) {
        let count = fragments_needed(message.len());
        debug_assert!(count <= self.free());
        let span = self.in_flight() + count;
        if span > self.slots.len() {
            resize(&mut self.slots, ring_len(span), |pending| pending.id);
        }
        if count == 1 {
            self.push_one(message.to_vec(), None);
            return;
        }
        let last = (count - 1) as u8;
        for (index, chunk) in message.chunks(FRAGMENT_SIZE).enumerate() {
            self.push_one(chunk.to_vec(), Some((index as u8, last)));
        }
    }

    fn push_one(&mut self, bytes: Vec<u8>, fragment: Option<(u8, u8)>) {
        let id = self.next;
        self.bytes += bytes.len() as u32;
        let at = index(self.slots.len(), id);
        self.slots[at] = Some(Pending {
            id,
            bytes,
            fragment,
            last_sent: None,
        });
        self.next = id.wrapping_add(1);
    }

    /// The peer has this id: forget it. Returns false when it was already forgotten.
    pub(crate) fn ack(&mut self, id: u16) -> bool {
        let len = self.slots.len();
        if len == 0 {
            return false;
        }
        let at = index(len, id);
        match &self.slots[at] {
            Some(pending) if pending.id == id => {
                self.bytes -= pending.bytes.len() as u32;
                self.slots[at] = None;
            }
            _ => return false,
        }
        while self.oldest != self.next && self.slots[index(len, self.oldest)].is_none() {
            self.oldest = self.oldest.wrapping_add(1);
        }
        true
    }

    /// Slots allocated (0 until the first message, and again once released).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Frees the ring if nothing is in flight. Returns true when it holds no storage.
    pub(crate) fn release_if_empty(&mut self) -> bool {
        if self.in_flight() == 0 {
            self.slots = Box::new([]);
        }
        self.slots.is_empty()
    }

    /// Messages in flight, oldest first (mutable, so the packer can stamp `last_sent`).
    pub(crate) fn pending_mut(&mut self) -> impl Iterator<Item = &mut Pending> {
        let (oldest, count) = (self.oldest, self.in_flight());
        let start = match self.slots.len() {
            0 => 0,
            len => index(len, oldest),
        };
        let (tail, head) = self.slots.split_at_mut(start);
        head.iter_mut()
            .chain(tail.iter_mut())
            .take(count)
            .filter_map(Option::as_mut)
    }
}

/// Ids a message of `len` bytes takes.
pub(crate) fn fragments_needed(len: usize) -> usize {
    len.div_ceil(FRAGMENT_SIZE).max(1)
}

#[derive(Debug)]
enum Held {
    Whole(Vec<u8>),
    Fragment {
        index: u8,
        last: u8,
        bytes: Vec<u8>,
    },
    /// Delivered out of order (unordered channels); kept so a resend is known as a duplicate.
    Delivered,
}

/// The receiver's side: duplicate filter, reorder buffer and fragment reassembly.
#[derive(Debug)]
pub(crate) struct ReceiveWindow {
    slots: Box<[Option<(u16, Held)>]>,
    /// Lowest id not yet delivered.
    next: u16,
    ordered: bool,
    /// At most `WINDOW` fragments' worth (see `SendWindow::bytes`).
    bytes: u32,
}

impl ReceiveWindow {
    /// True for an ordered channel's window.
    pub(crate) fn is_ordered(&self) -> bool {
        self.ordered
    }

    pub(crate) fn new(ordered: bool) -> ReceiveWindow {
        ReceiveWindow {
            // Allocated on the first reliable frame (see the module docs).
            slots: Box::new([]),
            next: 0,
            ordered,
            bytes: 0,
        }
    }

    /// Message bytes held waiting for earlier ids or missing fragments.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes as usize
    }

    /// Ids held (waiting, or delivered early on an unordered channel).
    pub(crate) fn held(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// Slots allocated (0 until the first frame, and again once released).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Frees the ring if it holds nothing. Returns true when it holds no storage.
    pub(crate) fn release_if_empty(&mut self) -> bool {
        if self.held() == 0 {
            self.slots = Box::new([]);
        }
        self.slots.is_empty()
    }

    /// The slot of `id` (the ring is not empty).
    fn slot(&self, id: u16) -> usize {
        index(self.slots.len(), id)
    }

    fn get(&self, id: u16) -> Option<&Held> {
        if self.slots.is_empty() {
            return None;
        }
        match &self.slots[self.slot(id)] {
            Some((tag, held)) if *tag == id => Some(held),
            _ => None,
        }
    }

    /// Read-only check of an arriving frame: `Ok(true)` if it is new, `Ok(false)` if it is a
    /// duplicate to ignore, an error if no honest sender could have sent it.
    pub(crate) fn check(&self, channel: u8, kind: &FrameKind) -> Result<bool, FrameError> {
        let (id, fragment) = match *kind {
            FrameKind::Reliable { id } => (id, None),
            FrameKind::Fragment { id, index, last } => (id, Some((index, last))),
            _ => unreachable!("only reliable frames reach the receive window"),
        };
        let ahead = i32::from(distance(self.next, id));
        if ahead < 0 || self.get(id).is_some() {
            return Ok(false);
        }
        if ahead >= i32::from(RELIABLE_WINDOW) {
            return Err(FrameError::BeyondWindow { channel, id });
        }
        if let Some((index, last)) = fragment {
            let inconsistent = FrameError::InconsistentFragment { channel, id };
            let first = id.wrapping_sub(u16::from(index));
            let end = i32::from(distance(self.next, first)) + i32::from(last);
            if ahead < i32::from(index) || end >= i32::from(RELIABLE_WINDOW) {
                return Err(inconsistent);
            }
            // Every held id whose message overlaps this one's ids must be a fragment of the
            // very same message. A message spans at most 256 ids, so look that far around.
            let span = i32::from(last);
            for k in -255..=span + 255 {
                let other = first.wrapping_add(k as u16);
                let (other_first, other_last) = match self.get(other) {
                    None => continue,
                    Some(Held::Fragment {
                        index: i, last: l, ..
                    }) => (k - i32::from(*i), i32::from(*l)),
                    Some(_) => (k, 0),
                };
                let overlaps = other_first <= span && other_first + other_last >= 0;
                let same = other_first == 0 && other_last == span;
                if overlaps && !same {
                    return Err(inconsistent);
                }
            }
        }
        Ok(true)
    }

    /// Takes in a frame that passed [`check`](Self::check) and hands every message that is
    /// now deliverable to `deliver`, in order on an ordered channel.
    pub(crate) fn insert(
        &mut self,
        kind: &FrameKind,
        payload: &[u8],
        deliver: &mut dyn FnMut(Vec<u8>),
    ) {
        let (id, held) = match *kind {
            FrameKind::Reliable { id } => (id, Held::Whole(payload.to_vec())),
            FrameKind::Fragment { id, index, last } => (
                id,
                Held::Fragment {
                    index,
                    last,
                    bytes: payload.to_vec(),
                },
            ),
            _ => return,
        };
        // Two frames of one packet may contradict each other; the first one wins.
        if !matches!(self.check(0, kind), Ok(true)) {
            return;
        }
        self.bytes += payload.len() as u32;
        // `check` passed: `next <= id < next + WINDOW`, and every held id is in that range.
        let span = usize::from(id.wrapping_sub(self.next)) + 1;
        if span > self.slots.len() {
            resize(&mut self.slots, ring_len(span), |(tag, _)| *tag);
        }
        let at = self.slot(id);
        self.slots[at] = Some((id, held));
        if !self.ordered {
            self.deliver_early(id, deliver);
        }
        self.advance(deliver);
    }

    /// Unordered channels: deliver this id's message now if it is whole or completes a set.
    fn deliver_early(&mut self, id: u16, deliver: &mut dyn FnMut(Vec<u8>)) {
        let first = match self.get(id) {
            Some(Held::Whole(_)) => id,
            Some(Held::Fragment { index, .. }) => id.wrapping_sub(u16::from(*index)),
            _ => return,
        };
        if let Some(message) = self.take_message(first) {
            deliver(message);
        }
    }

    /// Delivers (ordered) or forgets (unordered, already delivered) from `next` onwards.
    fn advance(&mut self, deliver: &mut dyn FnMut(Vec<u8>)) {
        loop {
            match self.get(self.next) {
                Some(Held::Delivered) => {
                    let at = self.slot(self.next);
                    self.slots[at] = None;
                    self.next = self.next.wrapping_add(1);
                }
                Some(_) if self.ordered => match self.take_message(self.next) {
                    Some(message) => deliver(message),
                    None => return,
                },
                _ => return,
            }
        }
    }

    /// If the message starting at `first` is complete, removes it and returns its bytes. On
    /// an ordered channel `next` moves past it; on an unordered one its ids are marked
    /// delivered.
    fn take_message(&mut self, first: u16) -> Option<Vec<u8>> {
        let count = match self.get(first)? {
            Held::Whole(_) => 1,
            Held::Fragment { index: 0, last, .. } => usize::from(*last) + 1,
            _ => return None,
        };
        for k in 1..count {
            let id = first.wrapping_add(k as u16);
            match self.get(id) {
                Some(Held::Fragment { index, .. }) if usize::from(*index) == k => {}
                _ => return None,
            }
        }
        let mut message = Vec::new();
        for k in 0..count {
            let id = first.wrapping_add(k as u16);
            let replacement = if self.ordered {
                None
            } else {
                Some((id, Held::Delivered))
            };
            let at = self.slot(id);
            let taken = core::mem::replace(&mut self.slots[at], replacement);
            if let Some((_, Held::Whole(bytes) | Held::Fragment { bytes, .. })) = taken {
                self.bytes -= bytes.len() as u32;
                if count == 1 {
                    message = bytes;
                } else {
                    message.extend_from_slice(&bytes);
                }
            }
        }
        if self.ordered {
            self.next = first.wrapping_add(count as u16);
        }
        Some(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fragment(id: u16, index: u8, last: u8) -> FrameKind {
        FrameKind::Fragment { id, index, last }
    }

    fn collect(window: &mut ReceiveWindow, kind: FrameKind, payload: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        assert_eq!(window.check(0, &kind), Ok(true));
        window.insert(&kind, payload, &mut |m| out.push(m));
        out
    }

    #[test]
    fn a_fragment_contradicting_the_held_fragments_is_refused() {
        let mut window = ReceiveWindow::new(true);
        collect(&mut window, fragment(1, 1, 2), &[1; FRAGMENT_SIZE]);
        // Id 2 claims to be fragment 0 of another message, overlapping id 1's.
        assert_eq!(
            window.check(4, &fragment(2, 0, 1)),
            Err(FrameError::InconsistentFragment { channel: 4, id: 2 })
        );
        // Id 0 claims a different count for the same message.
        assert_eq!(
            window.check(4, &fragment(0, 0, 3)),
            Err(FrameError::InconsistentFragment { channel: 4, id: 0 })
        );
        // A fragment whose message would start before the next awaited id.
        let mut later = ReceiveWindow::new(true);
        collect(&mut later, FrameKind::Reliable { id: 0 }, b"a");
        assert_eq!(
            later.check(4, &fragment(1, 2, 3)),
            Err(FrameError::InconsistentFragment { channel: 4, id: 1 })
        );
    }

    #[test]
    fn ordered_delivery_waits_for_the_gap_then_releases_everything_after_it() {
        let mut window = ReceiveWindow::new(true);
        assert!(collect(&mut window, FrameKind::Reliable { id: 1 }, b"b").is_empty());
        assert!(collect(&mut window, fragment(3, 1, 1), b"d2").is_empty());
        assert!(collect(&mut window, fragment(2, 0, 1), &[b'd'; FRAGMENT_SIZE]).is_empty());
        assert_eq!(window.held(), 3);
        let out = collect(&mut window, FrameKind::Reliable { id: 0 }, b"a");
        let mut d = vec![b'd'; FRAGMENT_SIZE];
        d.extend_from_slice(b"d2");
        assert_eq!(out, [b"a".to_vec(), b"b".to_vec(), d]);
        assert_eq!((window.held(), window.bytes()), (0, 0));
        assert_eq!(window.check(0, &FrameKind::Reliable { id: 2 }), Ok(false));
    }

    #[test]
    fn unordered_delivery_is_immediate_and_resends_are_still_duplicates() {
        let mut window = ReceiveWindow::new(false);
        assert_eq!(
            collect(&mut window, FrameKind::Reliable { id: 5 }, b"f"),
            [b"f"]
        );
        assert_eq!(window.check(0, &FrameKind::Reliable { id: 5 }), Ok(false));
        assert_eq!(
            collect(&mut window, FrameKind::Reliable { id: 0 }, b"a"),
            [b"a"]
        );
        assert_eq!(window.held(), 1, "id 5 is remembered until 1..=4 arrive");
        for id in 1..=4 {
            collect(&mut window, FrameKind::Reliable { id }, b"x");
        }
        assert_eq!(window.held(), 0);
        assert_eq!(window.check(0, &FrameKind::Reliable { id: 5 }), Ok(false));
    }

    #[test]
    fn acks_in_any_order_free_the_send_window_from_the_oldest() {
        let mut window = SendWindow::new();
        for _ in 0..3 {
            window.push(b"m");
        }
        window.push(&[0; FRAGMENT_SIZE + 1]);
        assert_eq!(window.in_flight(), 5);
        assert!(window.ack(2));
        assert!(!window.ack(2), "an id is released once");
        assert_eq!(window.in_flight(), 5, "id 0 still holds the window");
        assert!(window.ack(0) && window.ack(1));
        assert_eq!(window.in_flight(), 2);
        assert_eq!(window.free(), WINDOW - 2);
        assert_eq!(window.bytes(), FRAGMENT_SIZE + 1);
    }

    #[test]
    fn the_send_ring_grows_by_powers_of_two_to_the_window_and_keeps_every_message() {
        let mut window = SendWindow::new();
        assert_eq!(window.capacity(), 0, "no storage before the first message");
        window.push(b"first");
        assert_eq!(window.capacity(), MIN_SLOTS);
        assert!(window.ack(0) && window.release_if_empty());
        // Ids 1..=1024: a full window, across the growth steps 8, 16, ..., 1024.
        let mut seen = vec![MIN_SLOTS];
        for id in 1..=WINDOW as u16 {
            window.push(&id.to_le_bytes());
            if seen.last() != Some(&window.capacity()) {
                seen.push(window.capacity());
            }
        }
        assert_eq!(seen, [8, 16, 32, 64, 128, 256, 512, 1024]);
        assert_eq!((window.in_flight(), window.free()), (WINDOW, 0));
        let ids: Vec<u16> = window.pending_mut().map(|p| p.id).collect();
        assert_eq!(ids, (1..=WINDOW as u16).collect::<Vec<_>>());
        assert!(window.pending_mut().all(|p| p.bytes == p.id.to_le_bytes()));
        assert!(
            !window.release_if_empty(),
            "nothing in flight is ever dropped"
        );
        for id in (1..=WINDOW as u16).rev() {
            assert!(window.ack(id));
        }
        assert_eq!(window.in_flight(), 0);
        assert!(window.release_if_empty());
        assert_eq!((window.capacity(), window.bytes()), (0, 0));
        // Ids carry on from where they were after the storage went.
        window.push(b"again");
        assert_eq!(window.pending_mut().next().map(|p| p.id), Some(1025));
    }

    #[test]
    fn the_receive_ring_grows_to_the_farthest_held_id_and_is_freed_only_when_empty() {
        let mut window = ReceiveWindow::new(true);
        assert_eq!(window.capacity(), 0);
        // The last id of the window arrives first: the ring grows at once to hold it.
        assert!(collect(&mut window, FrameKind::Reliable { id: 1023 }, b"z").is_empty());
        assert_eq!(window.capacity(), WINDOW);
        assert!(
            !window.release_if_empty(),
            "a held message keeps its storage"
        );
        let mut delivered = Vec::new();
        for id in 0..1023 {
            delivered.extend(collect(&mut window, FrameKind::Reliable { id }, b"a"));
        }
        assert_eq!(delivered.len(), 1024);
        assert_eq!(delivered.last().map(Vec::as_slice), Some(&b"z"[..]));
        assert!(window.release_if_empty());
        assert_eq!(window.capacity(), 0);
        // A resend of a delivered id is still a duplicate, and the next id is delivered.
        assert_eq!(
            window.check(0, &FrameKind::Reliable { id: 1000 }),
            Ok(false)
        );
        assert_eq!(
            collect(&mut window, FrameKind::Reliable { id: 1024 }, b"n"),
            [b"n"]
        );
        assert_eq!(window.capacity(), MIN_SLOTS);
    }

    #[test]
    fn an_unordered_ring_keeps_early_deliveries_across_growth() {
        let mut window = ReceiveWindow::new(false);
        assert_eq!(
            collect(&mut window, FrameKind::Reliable { id: 3 }, b"d"),
            [b"d"]
        );
        assert_eq!(window.capacity(), MIN_SLOTS);
        assert_eq!(
            collect(&mut window, FrameKind::Reliable { id: 40 }, b"e"),
            [b"e"]
        );
        assert_eq!(window.capacity(), 64);
        assert_eq!(window.check(0, &FrameKind::Reliable { id: 3 }), Ok(false));
        assert_eq!(window.check(0, &FrameKind::Reliable { id: 40 }), Ok(false));
        assert!(!window.release_if_empty());
    }
}
