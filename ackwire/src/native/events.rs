//! The events on their way from the room's task to the game, bounded in bytes
//! ([`NativeOptions::event_budget`](crate::NativeOptions::event_budget)).
//!
//! A reliable message the member hands over is already taken (its packet is acknowledged at
//! the next transmit), so it is always queued; when the queue is full the task stops reading
//! its sockets (`is_full`), nothing more is acknowledged, and reliable senders are held back
//! by their own budgets. An unreliable message that finds the queue full makes room by
//! dropping the oldest unreliable messages waiting (the newest state is worth more than the
//! oldest), or is dropped itself when none wait; each drop is counted.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use ackwire_room::member::{Event, PeerId};
use tokio::sync::Notify;

/// The game's queue of events.
#[derive(Debug)]
pub(super) struct EventQueue {
    state: Mutex<Queued>,
    /// Wakes a game waiting in `next`.
    ready: Notify,
    /// Wakes everyone waiting for the room to change (`Room::joined`): each event queued,
    /// and the end.
    changed: Notify,
    /// Bytes of messages queued at most.
    limit: usize,
    /// Per application channel: reliable.
    reliable: Vec<bool>,
}

/// The bit of `channel` in [`Queued::separated`] (channels are below 64).
fn channel_bit(channel: u8) -> u64 {
    1u64.checked_shl(u32::from(channel)).unwrap_or(0)
}

/// Whether `event` is a message on a channel the game drains with `receive`.
fn is_separated(event: &Event, separated: u64) -> bool {
    matches!(event, Event::Message { channel, .. } if separated & channel_bit(*channel) != 0)
}

#[derive(Debug, Default)]
struct Queued {
    events: VecDeque<Event>,
    /// Channels the game has drained with `receive`: their messages no longer come out of
    /// `try_pop` and `next`.
    separated: u64,
    bytes: usize,
    dropped: u64,
    closed: bool,
}

/// The bytes an event counts for: a message's payload.
fn size(event: &Event) -> usize {
    match event {
        Event::Message { bytes, .. } | Event::Undelivered { bytes, .. } => bytes.len(),
        _ => 0,
    }
}

impl EventQueue {
    pub(super) fn new(limit: usize, reliable: Vec<bool>) -> EventQueue {
        EventQueue {
            state: Mutex::new(Queued::default()),
            ready: Notify::new(),
            changed: Notify::new(),
            limit,
            reliable,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queued> {
        // Every operation leaves the queue consistent: a panic elsewhere changes nothing.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_unreliable_message(&self, event: &Event) -> bool {
        matches!(event, Event::Message { channel, .. }
            if !self.reliable.get(usize::from(*channel)).copied().unwrap_or(false))
    }

    /// Queues `event` for the game (see the module docs for a full queue).
    pub(super) fn push(&self, event: Event) {
        let len = size(&event);
        {
            let mut q = self.lock();
            if q.closed {
                return;
            }
            if self.is_unreliable_message(&event) && q.bytes + len > self.limit {
                while q.bytes + len > self.limit {
                    let Some(at) = q.events.iter().position(|e| self.is_unreliable_message(e))
                    else {
                        break;
                    };
                    if let Some(old) = q.events.remove(at) {
                        q.bytes -= size(&old);
                        q.dropped += 1;
                    }
                }
                if q.bytes + len > self.limit {
                    q.dropped += 1;
                    tracing::debug!(
                        dropped = q.dropped,
                        "event budget full: an unreliable message was dropped"
                    );
                    return;
                }
            }
            q.bytes += len;
            q.events.push_back(event);
        }
        self.ready.notify_one();
        self.changed.notify_waiters();
    }

    /// Whether the queue holds its budget's worth: the task reads nothing until the game
    /// takes some.
    pub(super) fn is_full(&self) -> bool {
        self.lock().bytes >= self.limit
    }

    /// The next event if one waits, and whether taking it made room in a full queue (the task
    /// reads again: wake it).
    pub(super) fn try_pop(&self) -> Option<(Event, bool)> {
        let mut q = self.lock();
        let separated = q.separated;
        let at = q.events.iter().position(|e| !is_separated(e, separated))?;
        let event = q.events.remove(at)?;
        let before = q.bytes;
        q.bytes -= size(&event);
        Some((event, before >= self.limit && q.bytes < self.limit))
    }

    /// The oldest message on `channel`, taken out of the queue with the events around it
    /// left in place, and whether taking it made room in a full queue.
    pub(super) fn take_message(&self, channel: u8) -> Option<((PeerId, Vec<u8>), bool)> {
        let mut q = self.lock();
        q.separated |= channel_bit(channel);
        let at = q
            .events
            .iter()
            .position(|e| matches!(e, Event::Message { channel: c, .. } if *c == channel))?;
        let Some(Event::Message { peer, bytes, .. }) = q.events.remove(at) else {
            return None;
        };
        let before = q.bytes;
        q.bytes -= bytes.len();
        Some(((peer, bytes), before >= self.limit && q.bytes < self.limit))
    }

    /// The next event, waiting for one; `None` once closed and empty. Cancel-safe: an event
    /// leaves the queue only in the call that returns it.
    pub(super) async fn next(&self) -> Option<(Event, bool)> {
        loop {
            if let Some(popped) = self.try_pop() {
                return Some(popped);
            }
            if self.lock().closed {
                return None;
            }
            // A push between the check and here left a permit: this returns at once.
            self.ready.notified().await;
        }
    }

    /// Resolves once an event is queued (or the queue closed) after this call: armed at once,
    /// so a caller may look at the member between the call and the wait.
    pub(super) fn changed(&self) -> std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>> {
        let mut notified = Box::pin(self.changed.notified());
        notified.as_mut().enable();
        notified
    }

    /// Unreliable messages dropped so far because the game was not taking its events.
    pub(super) fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// The room's task ended: no more events; a waiting game gets `None` once it took the rest.
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
        self.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(channel: u8, n: u8) -> Event {
        Event::Message {
            peer: PeerId(1),
            channel,
            bytes: vec![n; 10],
        }
    }

    fn numbers(queue: &EventQueue) -> Vec<(u8, u8)> {
        std::iter::from_fn(|| queue.try_pop())
            .map(|(e, _)| match e {
                Event::Message { channel, bytes, .. } => (channel, bytes[0]),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_full_queue_drops_its_oldest_unreliable_messages_first_and_never_a_reliable_one() {
        // Channel 0 unreliable, 1 reliable; room for 3 messages.
        let queue = EventQueue::new(30, vec![false, true]);
        queue.push(message(0, 1));
        queue.push(message(1, 2));
        queue.push(message(0, 3));
        assert!(queue.is_full());
        // A new unreliable one pushes out the oldest unreliable.
        queue.push(message(0, 4));
        // A reliable one is always queued, over the budget.
        queue.push(message(1, 5));
        assert_eq!(queue.dropped(), 1);
        assert_eq!(numbers(&queue), [(1, 2), (0, 3), (0, 4), (1, 5)]);
        // Nothing unreliable waits and a reliable one fills the queue: a new unreliable one
        // is dropped itself.
        let queue = EventQueue::new(10, vec![false, true]);
        queue.push(message(1, 1));
        queue.push(message(0, 2));
        assert_eq!(queue.dropped(), 1);
        assert_eq!(numbers(&queue), [(1, 1)]);
    }

    #[test]
    fn taking_from_a_full_queue_says_there_is_room_again_once() {
        let queue = EventQueue::new(20, vec![true]);
        queue.push(message(0, 1));
        queue.push(message(0, 2));
        queue.push(message(0, 3));
        let made_room: Vec<bool> = std::iter::from_fn(|| queue.try_pop())
            .map(|(_, room)| room)
            .collect();
        assert_eq!(made_room, [false, true, false]);
    }

    #[test]
    fn a_channel_drained_alone_takes_its_messages_in_order_and_leaves_every_other_event() {
        let queue = EventQueue::new(30, vec![false, true]);
        queue.push(message(0, 1));
        queue.push(Event::Connected { peer: PeerId(1) });
        queue.push(message(1, 2));
        queue.push(message(0, 3));
        assert!(queue.is_full());
        let ((peer, bytes), made_room) = queue.take_message(0).unwrap();
        assert_eq!((peer, bytes[0], made_room), (PeerId(1), 1, true));
        assert_eq!(queue.take_message(0).unwrap().0.1[0], 3);
        assert!(queue.take_message(0).is_none());
        // The rest, as it came.
        assert!(matches!(
            queue.try_pop(),
            Some((Event::Connected { .. }, _))
        ));
        assert_eq!(numbers(&queue), [(1, 2)]);
    }
}
