//! Channel handles typed by their kind: declare a game's channels once with [`channels!`](crate::channels!),
//! which makes a handle per channel and the [`App`](crate::App)'s layout from the same lines,
//! and send through [`Room::on`]. A call the kind does not allow is a compile error, not a
//! run-time one: `send_latest` exists only on unreliable channels' handles.
//!
//! ```
//! ackwire::channels! {
//!     /// The layout, for `App::new`.
//!     pub CHANNELS;
//!     /// Player → host: the newest input.
//!     pub INPUT: Sequenced,
//!     /// Host → players: what happened.
//!     pub EVENTS: ReliableOrdered,
//! }
//!
//! let app = ackwire::App::new("pong", 1, CHANNELS);
//! assert_eq!(app.channels, [INPUT.kind(), EVENTS.kind()]);
//! assert_eq!((INPUT.index(), EVENTS.index()), (0, 1));
//! ```
//!
//! With a room, `room.on(INPUT).send_latest(host, &bytes)` compiles and
//! `room.on(EVENTS).send_latest(host, &bytes)` does not; a message event's `channel` compares
//! with a handle (`if channel == EVENTS`). Raw `u8` channels stay for layouts made at run time.
//!
//! ```compile_fail
//! # fn refused(room: &ackwire::Room, host: ackwire::PeerId) {
//! ackwire::channels! { LAYOUT; INPUT: Sequenced, EVENTS: ReliableOrdered }
//! // `send_latest` on a reliable channel: no such method for its kind.
//! room.on(EVENTS).send_latest(host, b"1").unwrap();
//! # }
//! ```
//!
//! ```
//! # fn taken(room: &ackwire::Room, host: ackwire::PeerId) {
//! ackwire::channels! { LAYOUT; INPUT: Sequenced, EVENTS: ReliableOrdered }
//! room.on(INPUT).send_latest(host, b"1").unwrap();
//! room.on(EVENTS).send(host, b"goal").unwrap();
//! while let Some(event) = room.poll_event() {
//!     if let ackwire::Event::Message { channel, bytes, .. } = event
//!         && channel == EVENTS
//!     {
//!         println!("{bytes:?}");
//!     }
//! }
//! # }
//! ```

use std::fmt;
use std::marker::PhantomData;

use crate::ChannelKind;
#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
use crate::{Broadcast, PeerId, Room, SendCapacity, SendError};

mod sealed {
    pub trait Sealed {}
}

/// A channel kind as a type (one per [`ChannelKind`]).
pub trait Kind: sealed::Sealed {
    /// The kind this type stands for.
    const KIND: ChannelKind;
}

/// The kinds whose sends may replace what is not yet sent (`send_latest`): the unreliable
/// ones.
pub trait Latest: Kind {}

macro_rules! kinds {
    ($($(#[$doc:meta])* $name:ident => $kind:ident, latest: $latest:tt;)+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {}
        impl sealed::Sealed for $name {}
        impl Kind for $name {
            const KIND: ChannelKind = ChannelKind::$kind;
        }
        kinds!(@latest $latest $name);
    )+};
    (@latest true $name:ident) => { impl Latest for $name {} };
    (@latest false $name:ident) => {};
}

kinds! {
    /// [`ChannelKind::Unreliable`]: once, maybe, in any order.
    Unreliable => Unreliable, latest: true;
    /// [`ChannelKind::UnreliableSequenced`]: newest wins, stale ones dropped.
    Sequenced => UnreliableSequenced, latest: true;
    /// [`ChannelKind::ReliableOrdered`]: exactly once, in order.
    ReliableOrdered => ReliableOrdered, latest: false;
    /// [`ChannelKind::ReliableUnordered`]: exactly once, as it comes.
    ReliableUnordered => ReliableUnordered, latest: false;
}

/// A channel of kind `K` at an index of the application's layout. Made by [`channels!`](crate::channels!),
/// which keeps every handle's index and kind those of the layout it writes.
pub struct Channel<K> {
    index: u8,
    kind: PhantomData<fn() -> K>,
}

impl<K: Kind> Channel<K> {
    /// The handle of the channel at `index`. [`channels!`](crate::channels!) calls this; a handle made by hand
    /// must match the [`App`](crate::App)'s layout, or its sends are refused at run time
    /// (`UnknownChannel`, `Reliable`) as a raw index's would be.
    pub const fn at(index: u8) -> Channel<K> {
        Channel {
            index,
            kind: PhantomData,
        }
    }

    /// Its index in the layout (what events and raw calls name it by).
    pub const fn index(self) -> u8 {
        self.index
    }

    /// Its kind.
    pub const fn kind(self) -> ChannelKind {
        K::KIND
    }
}

impl<K> Clone for Channel<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Channel<K> {}

impl<K> PartialEq for Channel<K> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}

impl<K> Eq for Channel<K> {}

impl<K: Kind> fmt::Debug for Channel<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Channel({}, {:?})", self.index, K::KIND)
    }
}

/// A message event's channel compares with a handle: `if channel == EVENTS`.
impl<K> PartialEq<Channel<K>> for u8 {
    fn eq(&self, other: &Channel<K>) -> bool {
        *self == other.index
    }
}

/// Declares a game's channels: a typed handle per line, numbered from 0 in order, and the
/// layout for [`App::new`](crate::App::new) under the name on the first line. A line's kind
/// is one of [`Unreliable`], [`Sequenced`], [`ReliableOrdered`], [`ReliableUnordered`] (the
/// names alone: nothing to import). See the [module](crate::channel) for an example.
#[macro_export]
macro_rules! channels {
    (
        $(#[$layout_doc:meta])* $layout_vis:vis $layout:ident;
        $($(#[$doc:meta])* $vis:vis $name:ident: $kind:ident),+ $(,)?
    ) => {
        $(#[$layout_doc])*
        $layout_vis const $layout: &[$crate::ChannelKind] =
            &[$(<$crate::channel::$kind as $crate::channel::Kind>::KIND),+];
        $crate::channels!(@at 0u8; $($(#[$doc])* $vis $name: $kind,)+);
    };
    (@at $index:expr; $(#[$doc:meta])* $vis:vis $name:ident: $kind:ident, $($rest:tt)*) => {
        $(#[$doc])*
        $vis const $name: $crate::channel::Channel<$crate::channel::$kind> =
            $crate::channel::Channel::at($index);
        $crate::channels!(@at $index + 1u8; $($rest)*);
    };
    (@at $index:expr;) => {};
}

/// One channel of a [`Room`], typed by its kind: what [`Room::on`] returns.
#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
pub struct On<'r, K> {
    room: &'r Room,
    channel: Channel<K>,
}

#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
impl<K: Kind> fmt::Debug for On<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("On")
            .field("channel", &self.channel)
            .finish()
    }
}

#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
impl Room {
    /// The room's `channel`, with the calls its kind allows.
    pub fn on<K: Kind>(&self, channel: Channel<K>) -> On<'_, K> {
        On {
            room: self,
            channel,
        }
    }
}

#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
impl<K: Kind> On<'_, K> {
    /// [`Room::send`] on this channel.
    pub fn send(&self, peer: PeerId, bytes: &[u8]) -> Result<(), SendError> {
        self.room.send(peer, self.channel.index, bytes)
    }

    /// [`Room::broadcast`] on this channel.
    pub fn broadcast(&self, bytes: &[u8]) -> Result<Broadcast, SendError> {
        self.room.broadcast(self.channel.index, bytes)
    }

    /// [`Room::receive`] on this channel.
    pub fn receive(&self) -> Option<(PeerId, Vec<u8>)> {
        self.room.receive(self.channel.index)
    }

    /// [`Room::send_capacity`] on this channel.
    pub fn send_capacity(&self, peer: PeerId) -> Result<SendCapacity, SendError> {
        self.room.send_capacity(peer, self.channel.index)
    }

    /// [`Room::max_message_size`] of this channel.
    pub fn max_message_size(&self) -> Option<usize> {
        self.room.max_message_size(self.channel.index)
    }
}

#[cfg(any(target_arch = "wasm32", feature = "rooms"))]
impl<K: Latest> On<'_, K> {
    /// [`Room::send_latest`] on this channel (an unreliable one).
    pub fn send_latest(&self, peer: PeerId, bytes: &[u8]) -> Result<(), SendError> {
        self.room.send_latest(peer, self.channel.index, bytes)
    }

    /// [`Room::broadcast_latest`] on this channel (an unreliable one).
    pub fn broadcast_latest(&self, bytes: &[u8]) -> Result<Broadcast, SendError> {
        self.room.broadcast_latest(self.channel.index, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::channels! {
        LAYOUT;
        A: Unreliable,
        B: Sequenced,
        C: ReliableOrdered,
        D: ReliableUnordered,
    }

    #[test]
    fn the_macro_numbers_handles_in_order_and_writes_the_same_layout() {
        assert_eq!(
            LAYOUT,
            [
                ChannelKind::Unreliable,
                ChannelKind::UnreliableSequenced,
                ChannelKind::ReliableOrdered,
                ChannelKind::ReliableUnordered
            ]
        );
        assert_eq!([A.index(), B.index(), C.index(), D.index()], [0, 1, 2, 3]);
        let kinds = [A.kind(), B.kind(), C.kind(), D.kind()];
        assert_eq!(kinds, LAYOUT);
        assert!(2u8 == C && 2u8 != D);
        assert_eq!(format!("{C:?}"), "Channel(2, ReliableOrdered)");
    }
}
