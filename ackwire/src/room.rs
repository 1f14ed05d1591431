//! The [`Room`]: the same calls on every target, each one a step of the room member run by
//! this target's driver.

use ackwire_room::member::{
    Broadcast, ClockReading, Event, LinkInfo, PeerId, SendCapacity, SendError, ServerId,
    SignallingState,
};
use ackwire_signalling::RoomUrl;

#[cfg(target_arch = "wasm32")]
use crate::browser as driver;
use crate::config::RoomConfig;
use crate::error::JoinError;
#[cfg(not(target_arch = "wasm32"))]
use crate::native as driver;

/// A room as one player sees it: join it, send to peers, and hear what happens.
///
/// It runs by itself once joined (a task on the caller's tokio runtime, or a thread of its
/// own without one; the browser's event loop on wasm32): links are set up, kept, measured
/// and recovered whether or not the game calls in. Events wait until taken with
/// [`poll_event`](Self::poll_event) or [`next_event`](Self::next_event). Dropping the room
/// leaves it abruptly; [`close`](Self::close) says goodbye.
#[derive(Debug)]
pub struct Room {
    driver: driver::Driver,
}

impl Room {
    /// Joins the room at `url`: a room page's URL (`https://host/room/NAME`, what players
    /// share), or a server's with [`RoomConfig::room`]. Returns at once; [`Event::Joined`]
    /// says when the room took us in, [`Event::Refused`] why not.
    pub fn join(url: &str, config: RoomConfig) -> Result<Room, JoinError> {
        let url = RoomUrl::parse(url, config.room.as_deref())?;
        Ok(Room {
            driver: driver::Driver::start(url, config)?,
        })
    }

    /// Sends `bytes` to `peer` on `channel`, as the channel promises: once on an unreliable
    /// one, over a connected link; exactly once (in order, if ordered) on a reliable one,
    /// across lost links too (sent while the link is down, it is kept for the next
    /// connection), or handed back as [`Event::Undelivered`] if the peer leaves for good.
    pub fn send(&self, peer: PeerId, channel: u8, bytes: &[u8]) -> Result<(), SendError> {
        self.driver.with_member(|m, _| m.send(peer, channel, bytes))
    }

    /// Sends `bytes` on an unreliable `channel` in place of what it holds for `peer` and has
    /// not sent yet: call it every frame with the newest state; each packet carries the
    /// newest, never a backlog.
    pub fn send_latest(&self, peer: PeerId, channel: u8, bytes: &[u8]) -> Result<(), SendError> {
        self.driver
            .with_member(|m, _| m.send_latest(peer, channel, bytes))
    }

    /// [`send`](Self::send) to every peer: on a reliable channel every peer in the room (kept
    /// for those whose link is down), on an unreliable one every connected peer. Each peer's
    /// outcome is its own ([`Broadcast`]): one peer's full queue refuses it for that peer
    /// alone. `Err` when it went to nobody (a bad channel or size, a closed room).
    pub fn broadcast(&self, channel: u8, bytes: &[u8]) -> Result<Broadcast, SendError> {
        self.driver.with_member(|m, _| m.broadcast(channel, bytes))
    }

    /// [`send_latest`](Self::send_latest) to every connected peer.
    pub fn broadcast_latest(&self, channel: u8, bytes: &[u8]) -> Result<Broadcast, SendError> {
        self.driver
            .with_member(|m, _| m.broadcast_latest(channel, bytes))
    }

    /// Unreliable messages this room dropped because the game was not taking its events and
    /// [`NativeOptions::event_budget`](crate::NativeOptions::event_budget) was spent (reliable
    /// ones are never dropped: the room stops reading instead).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn dropped_events(&self) -> u64 {
        self.driver.dropped_events()
    }

    /// Datagrams this room's sockets refused to send: a full send buffer, or an OS error such
    /// as an unreachable address. Each was dropped as the network could have dropped it (its
    /// link counts it lost, and congestion control slows down); a count that keeps growing
    /// means the machine cannot send what the game asks. The UDP socket's; as a host, those
    /// of its clients' WebRTC
    /// ([`NativeOptions::host_ice_lite`](crate::NativeOptions::host_ice_lite)), WebTransport
    /// sessions and WebSockets (a packet a connection's full queue cannot take); as a client
    /// that dials its host's WebTransport or WebSocket, those of its own.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn send_failures(&self) -> u64 {
        self.driver.send_failures()
    }

    /// Waits until this member is in the room (its server id), or the join is refused for a
    /// reason no retry cures ([`JoinError::Refused`]) or the room was left
    /// ([`JoinError::Left`], even if it had joined before [`leave`](Self::leave)): what the
    /// JS `join()` promise resolves or rejects with. Retryable refusals and lost sockets are
    /// retried meanwhile, as always. It takes no event: the `Joined` or `Refused` event stays
    /// for [`poll_event`](Self::poll_event). Once joined it returns at once (the current id)
    /// until the room is left.
    pub async fn joined(&self) -> Result<ServerId, JoinError> {
        loop {
            // Armed before the look, so an event queued in between still wakes it.
            let change = self.driver.change();
            let outcome = self.driver.with_member(|m, _| {
                // Left is checked first: a welcome that came between `join` and `leave` (a
                // loaded machine can take that long) must not make a left room look joined.
                if let Some((code, message)) = m.refusal() {
                    Some(Err(JoinError::Refused {
                        code,
                        message: message.to_owned(),
                    }))
                } else if m.signalling_state() == SignallingState::Closed {
                    Some(Err(JoinError::Left))
                } else {
                    m.server_id().map(Ok)
                }
            });
            if let Some(outcome) = outcome {
                return outcome;
            }
            change.await;
        }
    }

    /// The next event, if one waits; never blocks (for game loops).
    pub fn poll_event(&self) -> Option<Event> {
        self.driver.poll_event()
    }

    /// The oldest message that arrived on `channel`, from whom; never blocks. A frame loop
    /// drains the channels it reads each frame (`while let Some((peer, bytes)) =
    /// room.receive(0)`) and the other events with [`poll_event`](Self::poll_event): once a
    /// channel has been read here, its messages leave the event stream (`poll_event` and
    /// `next_event` pass them over and leave them here), so neither takes what the other
    /// should. Each channel's promise holds as in the stream (in order on an ordered channel);
    /// its messages count against the same budget, so a channel read here must be read.
    pub fn receive(&self, channel: u8) -> Option<(PeerId, Vec<u8>)> {
        self.driver.receive(channel)
    }

    /// The next event, waiting for it; `None` once the room is closed and every event was
    /// taken.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.driver.next_event().await
    }

    /// How much [`send`](Self::send) to `peer` on `channel` takes now before it says
    /// [`SendError::Full`]: on a reliable channel what the peer's copies may still hold (kept
    /// whatever the link's state), on an unreliable one the room in the link's queue. A loop
    /// that sends a large backlog a frame at a time sends what fits and the rest next frame.
    /// Errors as `send`'s (on an unreliable channel, a link not connected).
    pub fn send_capacity(&self, peer: PeerId, channel: u8) -> Result<SendCapacity, SendError> {
        self.driver
            .with_member(|m, _| m.send_capacity(peer, channel))
    }

    /// Every link (one per peer) with its state, path and the core's [`Stats`](crate::Stats).
    pub fn links(&self) -> Vec<LinkInfo> {
        self.driver.with_member(|m, now| m.links(now))
    }

    /// The room's clock now, read alike by every member: the host's in a host room, and in a
    /// mesh the clock of the member the server numbered first among this one and those it is
    /// linked with. Exact on that member; elsewhere an estimate with its bound
    /// ([`ClockReading::uncertainty`]), synced about half a second after the link connects.
    /// `None` before this member joined, or until the first exchange with that member came
    /// back. A member's clock is the time since its `Room::join`; docs/api.md, "Clocks".
    pub fn clock(&self) -> Option<ClockReading> {
        self.driver.with_member(|m, now| m.clock(now))
    }

    /// `peer`'s clock now, as this member estimates it (each link pings its peer's; docs/wire.md,
    /// "Room members"): `None` before the first exchange came back, or for a peer not ours.
    pub fn peer_clock(&self, peer: PeerId) -> Option<ClockReading> {
        self.driver.with_member(|m, now| m.peer_clock(now, peer))
    }

    /// The host of a host room while it is in the room: a client's one peer. `None` in a
    /// mesh, before the host joins, and after it left or was lost (the client waits for it;
    /// its link comes back when the host does).
    pub fn host(&self) -> Option<PeerId> {
        self.driver.with_member(|m, _| m.host())
    }

    /// The tick a client of a host room stamps the input it sends now, so that it reaches the
    /// host before the host simulates that tick ([`sync::input_tick`](crate::sync::input_tick)
    /// on the host's clock and the link's round trip and jitter, which it follows as they
    /// change). `None` in a mesh, on the host, while there is no host and until its clock is
    /// synced (about half a second after the link connects): a game then stamps the input
    /// for the host's current tick, or waits.
    pub fn input_tick(&self, ticks: crate::sync::Ticks) -> Option<u64> {
        self.driver.with_member(|m, now| {
            let host = m.host()?;
            let stats = m.link_stats(now, host)?;
            crate::sync::input_tick(&m.peer_clock(now, host)?, &stats, ticks)
        })
    }

    /// Our id in the signalling server's current session (for logs and dashboards), once
    /// joined.
    pub fn server_id(&self) -> Option<ServerId> {
        self.driver.with_member(|m, _| m.server_id())
    }

    /// The signalling connection's state.
    pub fn signalling_state(&self) -> SignallingState {
        self.driver.with_member(|m, _| m.signalling_state())
    }

    /// Frames from the signalling server this room could not read so far: not JSON of the
    /// protocol, of a type this version does not know (a later server's), or meant for
    /// dashboards. Each was refused with a typed error and logged (the console, in a
    /// browser), never dropped unseen; a count that grows means the server speaks a newer
    /// schema than this build.
    pub fn unreadable_frames(&self) -> u64 {
        self.driver.with_member(|m, _| m.unreadable_frames())
    }

    /// The largest message `channel` takes, to any peer (`None` for an undeclared channel).
    pub fn max_message_size(&self, channel: u8) -> Option<usize> {
        self.driver.with_member(|m, _| m.max_message_size(channel))
    }

    /// Pulls (`true`) or plugs back this player's network cable for its links (signalling
    /// stays up): every datagram is dropped, links are lost after the idle timeout and
    /// recover once plugged back. Fault injection, for tests and demos.
    pub fn set_outage(&self, on: bool) {
        self.driver.with_member(|m, _| m.set_outage(on));
    }

    /// Leaves the room: links say goodbye (for up to half a second), the server hears it,
    /// and reliable messages peers never confirmed come back as [`Event::Undelivered`]
    /// (take them with [`poll_event`](Self::poll_event) after).
    pub async fn close(&mut self) {
        self.driver.close().await;
    }

    /// [`close`](Self::close) for a loop that cannot await (a game engine's frame): starts
    /// leaving and returns at once. The room goes on by itself: links say goodbye, the
    /// server hears it, unconfirmed reliable messages come back as events;
    /// [`is_closed`](Self::is_closed) says when it is done. Dropping the room meanwhile lets
    /// it finish.
    pub fn leave(&mut self) {
        self.driver.leave();
    }

    /// Whether the room has left (after [`leave`](Self::leave) or [`close`](Self::close)):
    /// nothing more happens in it, and [`poll_event`](Self::poll_event) only hands over
    /// what came before.
    pub fn is_closed(&mut self) -> bool {
        self.driver.is_closed()
    }
}
