//! The room member: one program's side of a room, sans-IO, generic over the application.
//!
//! A [`Member`] owns everything a room member decides: joining and re-joining through
//! signalling (with one [`Backoff`] policy), which peers to link with and over what (raw UDP
//! between two natives, a WebRTC data channel otherwise), who offers and who accepts, each
//! link's lifecycle and its recovery, identities across signal-server restarts, the two-way
//! link emulator, reliable messages that survive a lost link, and the stats reports for
//! dashboards. The application only declares what it plays ([`AppInfo`]: an id, a version and
//! its channel layout) and then sends and receives: [`send`](Member::send),
//! [`send_latest`](Member::send_latest), [`broadcast`](Member::broadcast),
//! [`broadcast_latest`](Member::broadcast_latest), and [`Event`]s.
//!
//! Like the core it does no I/O and reads no clock. The driver feeds it signalling frames,
//! transport events, datagrams and `now`; it drains [`Output`]s (open the signalling socket,
//! send a frame, run a transport [`Command`], transmit a datagram, tell the app an [`Event`])
//! and calls [`Member::handle_timeout`] at [`Member::poll_timeout`]. The browser driver and the
//! native one (both in the `ackwire` crate) are thin adapters around it.
//!
//! The public types live by what they hold, and are re-exported here: `config` (the
//! [`MemberConfig`]), `errors` (why a call was refused), `events` (the [`Output`]s and
//! [`Event`]s, and what they carry), `transport` (transport ids and routes, [`Command`]s and
//! [`TransportEvent`]s); the frames' types are `session`'s, [`LinkState`] is `links`' and the
//! reports are `reports`'. This file keeps the [`PeerId`] (every part speaks of peers by it),
//! the [`Member`] and its message API.
//!
//! The parts, by concern:
//! - `session`: the signalling socket, the join (in the URL or as a frame), the welcome,
//!   resumes and the server's refusals;
//! - `links`: each peer's link and the life of its attempts (below), renames across server
//!   restarts, loss and retry;
//! - `negotiation`: WebRTC offers, answers and candidates, and the transport's events;
//! - `roles`: who offers and connects, and whether two natives try raw UDP at all;
//! - `reports`: the stats reports for dashboards.
//!
//! ## A link's life
//!
//! ```text
//!  wanted ─▶ negotiating ─▶ open ─▶ connected
//!              │   ▲          │        │
//!              ▼   │          ▼        ▼
//!             lost ─▶ retrying ◀───── lost        (peer still in the room: try again)
//!              │
//!              ▼
//!             gone                               (peer left, or never came back)
//! ```
//! - **wanted**: the peer is in the room; nothing started yet.
//! - **negotiating**: a WebRTC peer connection is being set up (offer, answer, ICE).
//! - **open**: the data channel is open (or, between natives, the peer's UDP address is
//!   known) and the core's handshake runs.
//! - **connected**: the core connection is up; messages flow.
//! - **lost**: ICE failed, the data channel closed, the core timed out or the peer closed;
//!   the reason is kept and shown.
//! - **retrying**: waiting out the backoff before the next attempt (the passive side waits
//!   for the peer's next offer or connect request).
//! - **gone**: the peer left the room; the link is dropped after this report.
//!
//! Each attempt is one `Attempt` value (`links.rs`): its transport, its protocol and its
//! deadline live in the state they belong to, so no combination that cannot happen can be
//! represented.
//!
//! ## Across signal-server restarts
//! Server ids belong to one server session. Every member joins with a random `instance` id of
//! its own, and the server lists it with the peer. Links are keyed by the remote's instance
//! and a peer keeps its [`PeerId`] for the member's whole life: after a restart each member
//! joins afresh, and when a peer shows up again under a new server id with an instance we have
//! a link to, that link is kept and renamed, never duplicated. A link whose peer does not come
//! back within [`MemberConfig::orphan_grace`] is gone. The same holds when the server
//! replaces a peer's entry (`peer_left` with reason `replaced`: the program joined afresh
//! under a new id): its link waits to be renamed.
//!
//! ## Reliable means reliable while the peer is in the room
//! A message accepted on a reliable channel for a peer in the room reaches it exactly once (in
//! order on an ordered channel), whatever its link does: one sent while the link is down is
//! kept, and the next connection to the same peer instance carries what the peer had not
//! confirmed (`crate::delivery`). Only when the peer is gone for good (or the peer forgot this
//! member and kept nothing of it) are the messages it never confirmed handed back, each once,
//! as [`Event::Undelivered`]. A forgotten peer's receive state is kept
//! ([`FORGOTTEN_KEPT`] of them), so the same instance meeting us again gets nothing twice.

mod config;
mod errors;
mod events;
mod links;
mod negotiation;
mod reports;
mod roles;
mod session;
mod transport;
mod webtransport;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use ackwire_core::ConnectionConfig;
use serde::Serialize;

#[cfg(doc)] // named in the docs alone
use crate::backoff::Backoff;
use crate::backoff::Random;
use crate::delivery::MAX_PREFIX;
use crate::signalling::{AppInfo, Role, SignalData};

pub use crate::clock::ClockReading;
pub use crate::delivery::Budget;
pub use config::MemberConfig;
pub use errors::{FrameError, MemberError, ReceiveError, SendError};
pub use events::SendCapacity;
pub use events::{Broadcast, Event, Failure, GoneReason, LinkInfo, Output, SignallingState};
pub use links::LinkState;
pub use reports::{EmulationReport, LinkReport, REPORT_LINKS_PER_FRAME};
pub use session::{MemberFrame, MemberServerFrame};
pub use transport::{
    Command, IceState, Route, TransportEvent, TransportId, TransportKind, WEBTRANSPORT_DATAGRAM,
};

use links::{Closing, Link};

/// A peer's id in the server's current session: changes when the server restarts. The
/// member's [`PeerId`] does not.
pub type ServerId = crate::signalling::PeerId;

/// A peer as this member knows it: one per remote program instance, the same for the
/// member's whole life whatever the signalling server does (restarts hand out new
/// [`ServerId`]s; the peer keeps its `PeerId`). Never reused by one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct PeerId(pub u32);

impl std::fmt::Display for PeerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Signals from an unknown sender and datagrams from an unknown address are kept this long
/// (a peer's first offer or connect request may overtake the news of its join).
const EARLY_TTL: Duration = Duration::from_secs(2);
const EARLY_MAX: usize = 64;
/// Datagram buffers kept for reuse (see [`Member::recycle`]).
const POOL_MAX: usize = 64;

/// The room member. See the module docs.
#[derive(Debug)]
pub struct Member {
    config: MemberConfig,
    /// The core configuration of every link ([`MemberConfig::link_config`]).
    link_config: ConnectionConfig,
    random: Random,
    out: VecDeque<Output>,
    /// A send moved a link's `poll_timeout` earlier ([`take_rearm`](Member::take_rearm)).
    rearm: bool,
    session: session::Session,
    next_peer: u32,
    next_transport: u64,
    links: Vec<Link>,
    closing: Vec<Closing>,
    early_signals: VecDeque<(Duration, ServerId, SignalData)>,
    early_datagrams: VecDeque<(Duration, SocketAddr, Vec<u8>)>,
    next_stats: Option<Duration>,
    /// The "pulled cable": every datagram in or out is dropped (fault injection).
    outage: bool,
    /// Datagram buffers the driver handed back.
    pool: Vec<Vec<u8>>,
    /// Core events of the link being polled, reused.
    scratch: Vec<crate::core_link::CoreEvent>,
    /// Accepting attempts made so far: each acceptor is keyed with its own secret, derived
    /// from the member's and this count, so no two of our connections share an id.
    acceptors: u64,
    /// Datagrams of the link being polled, reused.
    ready: Vec<Vec<u8>>,
    /// What we had received from peers we forgot, by instance, newest last: meeting one again
    /// resumes counting its messages, so none is delivered twice.
    forgotten: VecDeque<(String, crate::delivery::Receiving)>,
    /// A forgotten peer's count was dropped to keep [`FORGOTTEN_KEPT`].
    forgotten_dropped: bool,
    /// A client's host identity, pinned by the first host with one it met (unless its
    /// configuration names one).
    pinned_host: Option<String>,
    /// The host last refused for its identity (told the application once).
    refused_host: Option<ServerId>,
}

/// Forgotten peers whose receive state a member keeps (a few hundred bytes each at most).
pub const FORGOTTEN_KEPT: usize = 256;

impl Member {
    /// A member of `config.room`, started at `now`. Its first output opens the signalling
    /// socket.
    pub fn new(config: MemberConfig, now: Duration) -> Result<Member, MemberError> {
        config.app.validate()?;
        let link_config = config.link_config()?;
        link_config.validate()?;
        if let Some(e) = &config.emulation {
            e.config.validate()?;
        }
        for (what, value) in [("room", &config.room), ("instance", &config.instance)] {
            if !crate::signalling::is_valid_name(value) {
                return Err(MemberError::Name {
                    what,
                    value: value.clone(),
                });
            }
        }
        let min = ackwire_core::MIN_PROTECTED_DATAGRAM_SIZE;
        if config.udp_keys.is_some() && link_config.max_datagram_size < min {
            return Err(MemberError::DatagramTooSmall {
                size: link_config.max_datagram_size,
                min,
            });
        }
        Ok(Member {
            random: Random::new(config.seed),
            link_config,
            config,
            out: VecDeque::new(),
            rearm: false,
            session: session::Session::new(now),
            next_peer: 1,
            next_transport: 1,
            links: Vec::new(),
            closing: Vec::new(),
            early_signals: VecDeque::new(),
            early_datagrams: VecDeque::new(),
            next_stats: None,
            outage: false,
            pool: Vec::new(),
            scratch: Vec::new(),
            acceptors: 0,
            ready: Vec::new(),
            forgotten: VecDeque::new(),
            forgotten_dropped: false,
            pinned_host: None,
            refused_host: None,
        })
    }

    /// The application this member plays.
    pub fn app(&self) -> &AppInfo {
        &self.config.app
    }

    /// What this member is in its room.
    pub fn role(&self) -> Role {
        self.config.role
    }

    /// The host of a host room, while it is in the room (a client's one peer).
    pub fn host(&self) -> Option<PeerId> {
        self.links
            .iter()
            .find(|l| l.role == Role::Host && l.server_id.is_some())
            .map(|l| l.id)
    }

    /// Every link, as the application and the JSON output show them.
    pub fn links(&self, now: Duration) -> Vec<LinkInfo> {
        self.links.iter().map(|l| l.info(now)).collect()
    }

    /// The link to `peer`, if it is one of ours.
    pub fn link(&self, now: Duration, peer: PeerId) -> Option<LinkInfo> {
        self.links
            .iter()
            .find(|l| l.id == peer)
            .map(|l| l.info(now))
    }

    /// The core's stats of the link to `peer` at `now` ([`link`](Self::link)'s `stats`,
    /// without building the rest: a game loop may ask every frame), once the protocol runs.
    pub fn link_stats(&self, now: Duration, peer: PeerId) -> Option<ackwire_core::Stats> {
        self.links.iter().find(|l| l.id == peer)?.core_stats(now)
    }

    /// `peer`'s clock at `now` (ours), as this member estimates it from pings on the link's
    /// control channel ([`crate::clock`]); `None` before the first exchange came back, or for
    /// a peer that is not ours.
    pub fn peer_clock(&self, now: Duration, peer: PeerId) -> Option<ClockReading> {
        self.links
            .iter()
            .find(|l| l.id == peer)
            .and_then(|l| l.clock.reading(now))
    }

    /// The room's clock at `now`, one every member of the room reads alike: in a host room
    /// the host's (exact on the host), in a mesh the clock of the member the server numbered
    /// first among those this one is linked with and itself (exact on that member). `None`
    /// before this member is joined, or while that member's clock has no exchange back yet.
    pub fn clock(&self, now: Duration) -> Option<ClockReading> {
        if self.config.role == Role::Host {
            return Some(ClockReading::own(now));
        }
        if self.config.role == Role::Client {
            let host = self.host()?;
            return self.peer_clock(now, host);
        }
        let me = self.server_id()?;
        let mut first: Option<(ServerId, &Link)> = None;
        for link in &self.links {
            if let Some(id) = link.server_id.filter(|&id| id < me && link.is_connected())
                && first.is_none_or(|(f, _)| id < f)
            {
                first = Some((id, link));
            }
        }
        match first {
            Some((_, link)) => link.clock.reading(now),
            None => Some(ClockReading::own(now)),
        }
    }

    /// The largest message `channel` takes, the same to every peer whatever carries its
    /// link (`None` for a channel the application did not declare): one packet's worth on an
    /// unreliable channel, of an encrypted link (the tightest), and 256 KiB less the member's
    /// index prefix on a reliable one.
    pub fn max_message_size(&self, channel: u8) -> Option<usize> {
        let kind = *self.config.app.channels.get(usize::from(channel))?;
        Some(if kind.is_reliable() {
            ackwire_core::frame::MAX_MESSAGE_SIZE - MAX_PREFIX
        } else {
            self.link_config.max_unreliable_message(true)
        })
    }

    /// Checks what does not depend on the peer: the channel, the size, `latest` on a
    /// reliable channel, a closed member.
    fn check_message(&self, channel: u8, len: usize, latest: bool) -> Result<bool, SendError> {
        if self.session.left() {
            return Err(SendError::Closed);
        }
        let kind = *self
            .config
            .app
            .channels
            .get(usize::from(channel))
            .ok_or(SendError::UnknownChannel(channel))?;
        if latest && kind.is_reliable() {
            return Err(SendError::Reliable { channel });
        }
        let max = self.max_message_size(channel).unwrap_or(0);
        if len > max {
            return Err(SendError::TooLarge { channel, len, max });
        }
        Ok(kind.is_reliable())
    }

    /// How much [`send`](Self::send) to `peer` on `channel` takes now before it says
    /// [`SendError::Full`]: on a reliable channel, what the peer's copies may still hold
    /// (kept whatever the link's state); on an unreliable one, the room left in the
    /// connected link's queue (`send_latest` always has room: it replaces). For a loop that
    /// sends a large backlog a frame at a time, or a game that sheds load before it is
    /// refused. Errors as `send`'s: a closed member, an unknown channel or peer, and on an
    /// unreliable channel a link that is not connected.
    pub fn send_capacity(&self, peer: PeerId, channel: u8) -> Result<SendCapacity, SendError> {
        let reliable = self.check_message(channel, 0, false)?;
        let link = self
            .links
            .iter()
            .find(|l| l.id == peer)
            .ok_or(SendError::UnknownPeer(peer))?;
        if reliable {
            let (messages, bytes) = link.delivery.room_left(channel);
            return Ok(SendCapacity { messages, bytes });
        }
        let max = self.max_message_size(channel).unwrap_or(0);
        let messages = link
            .connection()
            .and_then(|c| c.queue_room(channel))
            .ok_or(SendError::NotConnected(peer))?;
        Ok(SendCapacity {
            messages,
            bytes: messages.saturating_mul(max),
        })
    }

    /// Sends `bytes` to `peer` on `channel`, with the channel's promise: an unreliable one
    /// sends it once, on a connected link (or one opening where this side connects: its
    /// first packets leave before the peer accepts); a reliable one delivers it exactly once (in order
    /// if ordered), across lost links too (sent while the link is down, it is kept for the
    /// next connection), or reports it [`Event::Undelivered`] when the peer goes for good.
    pub fn send(&mut self, peer: PeerId, channel: u8, bytes: &[u8]) -> Result<(), SendError> {
        let reliable = self.check_message(channel, bytes.len(), false)?;
        let i = self
            .links
            .iter()
            .position(|l| l.id == peer)
            .ok_or(SendError::UnknownPeer(peer))?;
        if !reliable && !self.links[i].takes_unreliable() {
            return Err(SendError::NotConnected(peer));
        }
        // Queued only: the core paces its packets, and the next one leaves at its slot, so
        // nothing is driven here and a frame's messages share a packet. The slot may open
        // sooner than the driver's deadline: `take_rearm` says so.
        let sent = self.links[i].send(channel, bytes, false, self.link_config.unreliable_queue_len);
        self.rearm |= self.links[i].take_rearm();
        sent
    }

    /// Sends `bytes` to `peer` on an unreliable `channel` in place of what that channel
    /// holds for the peer and has not sent yet: call it every frame or tick with the newest
    /// state, and each packet carries the newest, never a backlog.
    pub fn send_latest(
        &mut self,
        peer: PeerId,
        channel: u8,
        bytes: &[u8],
    ) -> Result<(), SendError> {
        self.check_message(channel, bytes.len(), true)?;
        let i = self.connected_link(peer)?;
        let sent = self.links[i].send(channel, bytes, true, self.link_config.unreliable_queue_len);
        self.rearm |= self.links[i].take_rearm();
        sent
    }

    /// [`send`](Self::send) to every peer: on a reliable channel to every peer in the room
    /// (kept for those whose link is down), on an unreliable one to every connected peer.
    /// Each peer's outcome is its own: one peer's full queue refuses it for that peer alone
    /// ([`Broadcast::refused`]). `Err` only when it goes to nobody (a bad channel or size, a
    /// closed member).
    pub fn broadcast(&mut self, channel: u8, bytes: &[u8]) -> Result<Broadcast, SendError> {
        self.broadcast_as(channel, bytes, false)
    }

    /// [`send_latest`](Self::send_latest) to every connected peer.
    pub fn broadcast_latest(&mut self, channel: u8, bytes: &[u8]) -> Result<Broadcast, SendError> {
        self.broadcast_as(channel, bytes, true)
    }

    fn broadcast_as(
        &mut self,
        channel: u8,
        bytes: &[u8],
        latest: bool,
    ) -> Result<Broadcast, SendError> {
        let reliable = self.check_message(channel, bytes.len(), latest)?;
        let mut report = Broadcast::default();
        let queue_len = self.link_config.unreliable_queue_len;
        for link in self.links.iter_mut() {
            if !reliable && !link.takes_unreliable() {
                continue;
            }
            match link.send(channel, bytes, latest, queue_len) {
                Ok(()) => report.sent += 1,
                Err(e) => report.refused.push((link.id, e)),
            }
            self.rearm |= link.take_rearm();
        }
        Ok(report)
    }

    /// Bytes of reliable messages kept for `peer` until it confirms them (what
    /// [`MemberConfig::peer_budget`] bounds); `None` for an unknown peer.
    pub fn kept_bytes(&self, peer: PeerId) -> Option<usize> {
        self.links
            .iter()
            .find(|l| l.id == peer)
            .map(|l| l.delivery.kept_bytes())
    }

    fn connected_link(&self, peer: PeerId) -> Result<usize, SendError> {
        let i = self
            .links
            .iter()
            .position(|l| l.id == peer)
            .ok_or(SendError::UnknownPeer(peer))?;
        if !self.links[i].takes_unreliable() {
            return Err(SendError::NotConnected(peer));
        }
        Ok(i)
    }

    /// Pulls (or plugs back) this member's network cable, as far as its links go: while on,
    /// every datagram in or out is dropped, so links go quiet, time out and recover when it
    /// ends, exactly as through a real outage. Signalling is not affected. Fault injection,
    /// for tests and demos.
    pub fn set_outage(&mut self, on: bool) {
        self.outage = on;
    }

    /// Hands back a buffer of an [`Output::Transmit`] once sent, for the next datagram.
    pub fn recycle(&mut self, datagram: Vec<u8>) {
        if self.pool.len() < POOL_MAX {
            self.pool.push(datagram);
        }
    }

    /// Whether [`poll_output`](Self::poll_output) has something.
    pub fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    /// Whether a send since the last call moved [`poll_timeout`](Self::poll_timeout) earlier
    /// (a link's next packet may leave as soon as its interval opens: `Config::prompt_send`):
    /// a driver sleeping until the deadline it read before looks again.
    pub fn take_rearm(&mut self) -> bool {
        std::mem::take(&mut self.rearm)
    }

    /// The next thing to do or tell.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must run next.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let grace = self.config.orphan_grace;
        let links = self
            .links
            .iter()
            .flat_map(|l| l.timeouts(grace, self.link_config.idle_timeout));
        let closing = self.closing.iter().flat_map(Closing::timeouts);
        links
            .chain(closing)
            .chain([self.session.timeout(), self.next_stats])
            .flatten()
            .min()
    }

    /// Time passed: retries, timeouts, the links' packets, stats reports.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.session_timeout(now);
        self.links_timeout(now);
        if self.next_stats.is_some_and(|at| now >= at) {
            self.next_stats = Some(now + self.config.stats_period);
            self.report_stats(now);
        }
        // The links something is due on: a host's hundreds of links each wake it at their
        // own moments, and polling every one at each would cost links² a second.
        let (grace, idle) = (self.config.orphan_grace, self.link_config.idle_timeout);
        for i in 0..self.links.len() {
            let due = self.links[i]
                .timeouts(grace, idle)
                .into_iter()
                .flatten()
                .min();
            if due.is_some_and(|at| at <= now) {
                self.link_poll(now, i);
            }
        }
        self.poll_closing(now);
    }

    /// A datagram arrived on `route`.
    pub fn receive(
        &mut self,
        now: Duration,
        route: Route,
        datagram: &[u8],
    ) -> Result<(), ReceiveError> {
        if self.outage {
            return Ok(());
        }
        let Some(i) = self.links.iter().position(|l| l.route() == Some(route)) else {
            if let Route::Udp(addr) = route
                && self.udp_instead_of_session(now, addr)
            {
                return self.receive(now, route, datagram);
            }
            if let Route::Udp(addr) = route {
                if self.early_datagrams.len() == EARLY_MAX {
                    self.early_datagrams.pop_front();
                }
                self.early_datagrams
                    .push_back((now, addr, datagram.to_vec()));
                return Err(ReceiveError::UnknownAddress(addr));
            }
            return Err(ReceiveError::UnknownTransport);
        };
        let result = self.link_receive(now, i, datagram);
        // What it brought (acks, messages, a pong to send) concerns its own link alone; the
        // others are driven when their time comes. Found again: taking it in may have
        // removed a link.
        match self.links.iter().position(|l| l.route() == Some(route)) {
            Some(i) => self.link_poll(now, i),
            None => self.drive(now),
        }
        self.poll_closing(now);
        result
    }

    /// Leaves the room: every link says goodbye (keep driving until
    /// [`is_closed`](Self::is_closed)), the server hears `leave`, and what peers never
    /// confirmed comes back as [`Event::Undelivered`].
    pub fn close(&mut self, now: Duration) {
        // Once: a driver may close at once and again in its task.
        if !self.session.left() {
            self.leave_session();
        }
        while !self.links.is_empty() {
            self.remove_link(now, 0, GoneReason::WeLeft);
        }
        self.drive(now);
    }

    /// Whether a closed member has nothing left to send.
    pub fn is_closed(&self) -> bool {
        self.session.left() && self.closing.is_empty()
    }

    // ----- internals -----

    fn event(&mut self, event: Event) {
        self.out.push_back(Output::Event(event));
    }

    fn command(&mut self, command: Command) {
        self.out.push_back(Output::Command(command));
    }

    /// Runs every link's protocol: arrivals, what is due, events.
    fn drive(&mut self, now: Duration) {
        for i in 0..self.links.len() {
            self.link_poll(now, i);
        }
        self.poll_closing(now);
    }

    /// Sends what closing links still have to say, and lets go of those that are done.
    fn poll_closing(&mut self, now: Duration) {
        let (out, pool) = (&mut self.out, &mut self.pool);
        for closing in &mut self.closing {
            closing.poll(now, pool, out);
        }
        self.closing.retain(|c| {
            let done = c.is_done(now);
            if done
                && let Route::WebRtc(transport)
                | Route::WebTransport(transport)
                | Route::WebSocket(transport) = c.route
            {
                out.push_back(Output::Command(Command::CloseTransport { transport }));
            }
            !done
        });
    }
}
