//! Rollback netcode with [ggrs](https://docs.rs/ggrs) on a mesh room (feature `ggrs`): a
//! [`GgrsSocket`] carries ggrs's messages on one of the game's unreliable channels, addressed
//! by [`PeerId`] (the channel's messages leave the game's event stream: [`Room::receive`]),
//! and [`players`] gives every member the same player order. ggrs keeps its own
//! protocol over the socket (its inputs are resent until acknowledged), so the channel is an
//! unreliable one, as ggrs asks of a socket: `ChannelKind::Unreliable`.
//!
//! ```no_run
//! use std::rc::Rc;
//! use ackwire::rollback::{GgrsSocket, players};
//! # struct Config;
//! # impl ggrs::Config for Config { type Input = u8; type InputPredictor = ggrs::PredictRepeatLast; type State = u64; type Address = ackwire::PeerId; }
//! # fn start(room: ackwire::Room) -> Result<(), Box<dyn std::error::Error>> {
//! let room = Rc::new(room); // the game keeps reading its events through the same Rc
//! let (_me, order) = players(&room).expect("joined, with every peer connected");
//! let mut builder = ggrs::SessionBuilder::<Config>::new().with_num_players(order.len())?;
//! for (handle, player) in order.into_iter().enumerate() {
//!     builder = builder.add_player(player, handle)?;
//! }
//! let session = builder.start_p2p_session(GgrsSocket::new(room.clone(), 0)?)?;
//! # let _ = session; Ok(()) }
//! ```

use std::ops::Deref;

use ggrs::{Message, NonBlockingSocket, PlayerType};

use crate::{LinkState, PeerId, Room, SendError, ServerId};

/// A ggrs socket on a room's unreliable channel: what ggrs sends goes to the peer named by
/// its [`PeerId`], and what arrives on the channel is ggrs's to read, taken with
/// [`Room::receive`] so every other event stays for the game. `R` is how the game shares the
/// room with it (`Rc<Room>`, `Arc<Room>`, `&'static Room`).
#[derive(Debug)]
pub struct GgrsSocket<R> {
    room: R,
    channel: u8,
    /// The message the first read took, for ggrs's first read.
    early: Option<(PeerId, Vec<u8>)>,
    unsent: u64,
    unreadable: u64,
}

impl<R: Deref<Target = Room>> GgrsSocket<R> {
    /// A socket on `channel`, which must be one of the application's unreliable channels
    /// (`SendError::Reliable` for a reliable one, `UnknownChannel` for none).
    pub fn new(room: R, channel: u8) -> Result<GgrsSocket<R>, SendError> {
        room.max_message_size(channel)
            .ok_or(SendError::UnknownChannel(channel))?;
        // The room refuses a latest-wins send on a reliable channel: that tells the kind
        // without sending anything (the peer is checked after the channel).
        if let Err(SendError::Reliable { .. }) = room.send_latest(PeerId(u32::MAX), channel, &[]) {
            return Err(SendError::Reliable { channel });
        }
        // Reading the channel once takes its messages out of the game's event stream.
        let early = room.receive(channel);
        Ok(GgrsSocket {
            room,
            channel,
            early,
            unsent: 0,
            unreadable: 0,
        })
    }

    /// Messages the room did not take (a peer's link down, its queue full): ggrs resends
    /// what matters, as over any lossy socket.
    pub fn unsent(&self) -> u64 {
        self.unsent
    }

    /// Messages on the channel that were not ggrs's (refused as unreadable).
    pub fn unreadable(&self) -> u64 {
        self.unreadable
    }
}

impl<R: Deref<Target = Room>> NonBlockingSocket<PeerId> for GgrsSocket<R> {
    fn send_to(&mut self, msg: &Message, addr: &PeerId) {
        let sent = bincode::serialize(msg)
            .ok()
            .and_then(|bytes| self.room.send(*addr, self.channel, &bytes).ok());
        if sent.is_none() {
            self.unsent += 1;
        }
    }

    fn receive_all_messages(&mut self) -> Vec<(PeerId, Message)> {
        let mut out = Vec::new();
        let early = self.early.take();
        let room = &self.room;
        let channel = self.channel;
        for (peer, bytes) in early
            .into_iter()
            .chain(std::iter::from_fn(|| room.receive(channel)))
        {
            match bincode::deserialize(&bytes) {
                Ok(msg) => out.push((peer, msg)),
                Err(_) => self.unreadable += 1,
            }
        }
        out
    }
}

/// The room's players in the order every member computes alike, for ggrs's player handles:
/// this member and its connected peers, by server id. Returns this member's handle and the
/// players (`Local` for this member, `Remote(peer)` for the others); `None` before this
/// member joined or while a peer in the room is not connected (start the session once every
/// peer is: the order must include them all). Computed once, when the session starts: the
/// `PeerId`s it holds stay valid across server restarts.
pub fn players(room: &Room) -> Option<(usize, Vec<PlayerType<PeerId>>)> {
    let me = room.server_id()?;
    let links = room.links();
    if links.iter().any(|l| l.state != LinkState::Connected) {
        return None;
    }
    let mut order: Vec<(ServerId, Option<PeerId>)> = links
        .iter()
        .map(|l| Some((l.server_id?, Some(l.peer))))
        .collect::<Option<_>>()?;
    order.push((me, None));
    order.sort_unstable_by_key(|(id, _)| *id);
    let local = order.iter().position(|(_, p)| p.is_none())?;
    let players = order
        .into_iter()
        .map(|(_, peer)| peer.map_or(PlayerType::Local, PlayerType::Remote))
        .collect();
    Some((local, players))
}
