//! Each peer's link: one [`Attempt`] at a time (its transport, protocol and deadline inside
//! the state they belong to), renames across server restarts, loss, retry and goodbye.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use ackwire_core::DisconnectReason;
use serde::Serialize;

use super::roles;
use super::{
    EARLY_TTL, Event, Failure, GoneReason, IceState, LinkInfo, Member, Output, PeerId,
    ReceiveError, Route, ServerId, TransportId, TransportKind,
};
use crate::clock::{ClockMessage, PeerClock};
use crate::core_link::{CoreEvent, CoreLink, Handshake, RefusedDatagram, Role, SetupError};
use crate::delivery::Delivery;
use crate::keys::LinkKeys;
use crate::signalling::{self, PeerInfo, PeerKind, PublicKey, SignalData, WebTransportInfo};

/// A closed link keeps sending its disconnect packets at most this long.
const CLOSING_MAX: Duration = Duration::from_secs(1);

/// Where a link is in its life (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    /// The peer is in the room; nothing started yet.
    Wanted,
    /// Setting up the WebRTC session (offer, answer, ICE).
    Negotiating,
    /// The transport is open; the core's handshake runs.
    Open,
    /// Messages flow.
    Connected,
    /// It failed; see the reason.
    Lost,
    /// Waiting to try again.
    Retrying,
    /// The peer left.
    Gone,
}

/// What carries an attempt.
#[derive(Debug)]
pub(super) enum Transport {
    /// Raw UDP to the peer's address ([`Link::direct_udp`]).
    Udp,
    /// A WebRTC data channel.
    WebRtc(Rtc),
    /// A WebTransport session's datagrams or a WebSocket's messages (`webtransport.rs`).
    Session(Wt),
}

/// One session attempt between a client and its host, over WebTransport or a WebSocket: the
/// client dials, the host takes the session that shows the client's token.
#[derive(Debug)]
pub(super) struct Wt {
    pub(super) id: TransportId,
    /// A WebSocket (the last resort), not a WebTransport session.
    pub(super) websocket: bool,
    /// We are the host. On a session the host connects (the core's channel request, its
    /// first packets right behind it) and the client accepts: the host knows the session is
    /// up half a round trip before the client does, and its first state reaches a page that
    /// is still loading its wasm, queued in the session until the driver reads it.
    pub(super) hosting: bool,
}

/// One WebRTC peer connection attempt. Its state is the link's (it rides in the attempt);
/// `negotiation.rs` makes it and moves it through the offer, the answer and the candidates.
#[derive(Debug)]
pub(super) struct Rtc {
    pub(super) id: TransportId,
    /// We offer (and connect the core); the peer answers (and accepts).
    pub(super) offerer: bool,
    /// The offer of this attempt was made (ours) or applied (theirs).
    pub(super) offer_seen: bool,
    /// The remote description is set: candidates may be applied.
    pub(super) described: bool,
    /// Candidates that came before the remote description.
    pub(super) pending: Vec<SignalData>,
    pub(super) ice: Option<IceState>,
    /// The selected pair's path (`host`, `srflx`, `relay`).
    pub(super) path: Option<String>,
}

/// One attempt of a link, from start to loss.
#[derive(Debug)]
pub(super) enum Attempt {
    /// Nothing runs: the peer is not in the room (after a server restart), or a negotiation
    /// was cut short and waits for the peer to show up again.
    Idle,
    /// Waiting out the backoff (the passive side: ready for the peer's next try at `at`).
    Retrying { at: Duration },
    /// A WebRTC peer connection being negotiated; `deadline` once the attempt's clock runs
    /// (the answering side's starts with the offer).
    Negotiating {
        rtc: Rtc,
        deadline: Option<Duration>,
    },
    /// A WebTransport session being dialed (a client) or awaited (the host, which has the
    /// client's token).
    Dialing { wt: Wt, deadline: Duration },
    /// The transport is open and the core's handshake runs.
    Open {
        transport: Transport,
        core: CoreLink,
        deadline: Option<Duration>,
    },
    /// The core connection is up.
    Connected {
        transport: Transport,
        core: CoreLink,
    },
}

impl Attempt {
    fn state(&self) -> LinkState {
        match self {
            Attempt::Idle => LinkState::Wanted,
            Attempt::Retrying { .. } => LinkState::Retrying,
            Attempt::Negotiating { .. } | Attempt::Dialing { .. } => LinkState::Negotiating,
            Attempt::Open { .. } => LinkState::Open,
            Attempt::Connected { .. } => LinkState::Connected,
        }
    }

    pub(super) fn rtc(&self) -> Option<&Rtc> {
        match self {
            Attempt::Negotiating { rtc, .. }
            | Attempt::Open {
                transport: Transport::WebRtc(rtc),
                ..
            }
            | Attempt::Connected {
                transport: Transport::WebRtc(rtc),
                ..
            } => Some(rtc),
            _ => None,
        }
    }

    pub(super) fn rtc_mut(&mut self) -> Option<&mut Rtc> {
        match self {
            Attempt::Negotiating { rtc, .. }
            | Attempt::Open {
                transport: Transport::WebRtc(rtc),
                ..
            }
            | Attempt::Connected {
                transport: Transport::WebRtc(rtc),
                ..
            } => Some(rtc),
            _ => None,
        }
    }

    /// The attempt's WebTransport session, from dialing to loss.
    pub(super) fn wt(&self) -> Option<&Wt> {
        match self {
            Attempt::Dialing { wt, .. }
            | Attempt::Open {
                transport: Transport::Session(wt),
                ..
            }
            | Attempt::Connected {
                transport: Transport::Session(wt),
                ..
            } => Some(wt),
            _ => None,
        }
    }

    /// The attempt's transport (a peer connection or a session), whatever its state.
    pub(super) fn transport_id(&self) -> Option<TransportId> {
        self.rtc().map(|r| r.id).or_else(|| self.wt().map(|w| w.id))
    }

    fn core(&self) -> Option<&CoreLink> {
        match self {
            Attempt::Open { core, .. } | Attempt::Connected { core, .. } => Some(core),
            _ => None,
        }
    }

    fn core_mut(&mut self) -> Option<&mut CoreLink> {
        match self {
            Attempt::Open { core, .. } | Attempt::Connected { core, .. } => Some(core),
            _ => None,
        }
    }

    fn deadline(&self) -> Option<Duration> {
        match self {
            Attempt::Negotiating { deadline, .. } | Attempt::Open { deadline, .. } => *deadline,
            Attempt::Retrying { at } | Attempt::Dialing { deadline: at, .. } => Some(*at),
            _ => None,
        }
    }
}

/// The link to one peer (one remote program instance).
#[derive(Debug)]
pub(super) struct Link {
    pub(super) id: PeerId,
    pub(super) instance: String,
    pub(super) server_id: Option<ServerId>,
    pub(super) kind: PeerKind,
    /// A mesh peer, or the host or a client of a host room.
    pub(super) role: signalling::Role,
    /// The peer's UDP address, between two natives.
    pub(super) udp: Option<SocketAddr>,
    /// Between natives: the link runs over WebRTC (ICE, TURN) instead of raw UDP to `udp`
    /// (see `roles`).
    pub(super) via_ice: bool,
    /// The peer's key for an encrypted UDP link, from signalling.
    pub(super) udp_key: Option<PublicKey>,
    /// The peer's network tag, from signalling.
    pub(super) network: Option<String>,
    /// Who the game's backend says the peer is (its join ticket's identity), from signalling.
    pub(super) identity: Option<String>,
    /// A host's WebTransport service, from signalling.
    pub(super) webtransport: Option<WebTransportInfo>,
    /// A WebTransport attempt to this host failed before its session was ready: the link
    /// goes over WebRTC from now on.
    pub(super) via_webrtc: bool,
    /// A WebRTC attempt to this host failed before its data channel opened (or we have no
    /// WebRTC): the link goes over the host's WebSocket from now on.
    pub(super) via_websocket: bool,
    /// What carried the link's last attempt: what a lost or retrying link says it was on.
    pub(super) last_kind: Option<TransportKind>,
    pub(super) attempt: Attempt,
    pub(super) reason: Option<Failure>,
    pub(super) attempts: u32,
    pub(super) started: Duration,
    /// How long the current attempt took to connect, once it did.
    pub(super) took: Option<Duration>,
    pub(super) first_ack: Option<Duration>,
    pub(super) orphaned_at: Option<Duration>,
    pub(super) refused: u64,
    pub(super) delivery: Delivery,
    /// The peer's clock, from the pings of every connection the link had (one program
    /// instance, one clock).
    pub(super) clock: PeerClock,
    /// The application was told the link is connected ([`Event::Connected`]), and not since
    /// that it no longer is.
    pub(super) told_connected: bool,
}

impl Link {
    /// The peer's UDP address while the link runs over raw UDP: not through ICE, and not
    /// while a WebTransport session carries it (a native client that dials its host's
    /// service: after the session, the next attempt is raw UDP again).
    pub(super) fn direct_udp(&self) -> Option<SocketAddr> {
        self.udp
            .filter(|_| !self.via_ice && self.attempt.wt().is_none())
    }

    fn transport_kind(&self) -> TransportKind {
        match (&self.attempt, self.last_kind) {
            (Attempt::Idle | Attempt::Retrying { .. }, Some(kind)) => kind,
            _ => self.live_kind(),
        }
    }

    /// What carries the current attempt (or, between attempts, the ordinary path).
    fn live_kind(&self) -> TransportKind {
        if self.direct_udp().is_some() {
            TransportKind::Udp
        } else if let Some(wt) = self.attempt.wt() {
            if wt.websocket {
                TransportKind::WebSocket
            } else {
                TransportKind::WebTransport
            }
        } else {
            TransportKind::WebRtc
        }
    }

    /// Where its datagrams come from: the peer's UDP address (whatever the attempt, so a
    /// datagram between attempts is counted, not queued as a stranger's), or the current
    /// peer connection.
    pub(super) fn route(&self) -> Option<Route> {
        match (self.direct_udp(), self.attempt.rtc(), self.attempt.wt()) {
            (Some(addr), _, _) => Some(Route::Udp(addr)),
            (None, Some(rtc), _) => Some(Route::WebRtc(rtc.id)),
            (None, None, Some(wt)) if wt.websocket => Some(Route::WebSocket(wt.id)),
            (None, None, Some(wt)) => Some(Route::WebTransport(wt.id)),
            (None, None, None) => None,
        }
    }

    /// The connected core connection, if the link has one.
    pub(super) fn connection(&self) -> Option<&ackwire_core::Connection> {
        match &self.attempt {
            Attempt::Connected { core, .. } => core
                .connection()
                .filter(|c| c.state() == ackwire_core::ConnectionState::Connected),
            _ => None,
        }
    }

    pub(super) fn is_connected(&self) -> bool {
        matches!(&self.attempt, Attempt::Connected { core, .. } if core.is_connected())
    }

    /// Whether an unreliable message goes out on this link now: it is connected, or it is
    /// opening on a channel where this side connects, whose first packets leave before the
    /// peer accepts (a host's first state on a WebTransport session, a browser's first
    /// inputs on its data channel); a packet the peer is not ready for is lost, as any
    /// unreliable one may be.
    pub(super) fn takes_unreliable(&self) -> bool {
        match &self.attempt {
            Attempt::Connected { core, .. } => core.is_connected(),
            Attempt::Open { core, .. } => core.sends_early(),
            _ => false,
        }
    }

    /// Sends a message (its channel and size checked by the member): a reliable one is kept
    /// whatever the link's state, and queued on the connected core as far as it allows; an
    /// unreliable one is queued on the connected core (whose queues take `queue_len`
    /// messages) or refused.
    pub(super) fn send(
        &mut self,
        channel: u8,
        bytes: &[u8],
        latest: bool,
        queue_len: usize,
    ) -> Result<(), super::SendError> {
        let id = self.id;
        let (connection, early) = match &mut self.attempt {
            Attempt::Connected { core, .. } => (core.connected_mut(), None),
            Attempt::Open { core, .. } => (None, core.sending_mut()),
            _ => (None, None),
        };
        let result = if !latest && self.delivery.is_reliable(channel) {
            // A reliable copy also rides an early connection (the peer has not accepted it
            // yet: the copy is resent until it acks).
            let connection = connection.or(early);
            return self
                .delivery
                .send(connection, channel, bytes)
                .map_err(|full| super::SendError::Full {
                    peer: id,
                    channel,
                    budget: full.budget,
                    used: full.used,
                    limit: full.limit,
                });
        } else {
            let connection = connection
                .or(early)
                .ok_or(super::SendError::NotConnected(id))?;
            if latest {
                connection.send_latest(channel, bytes)
            } else {
                connection.send(channel, bytes)
            }
        };
        result.map_err(|e| self.send_error(channel, e, queue_len))
    }

    /// Whether a message just queued moved the core's `poll_timeout` earlier (its packet may
    /// leave before the interval's end): the driver should look at the member's again.
    pub(super) fn take_rearm(&mut self) -> bool {
        match &mut self.attempt {
            Attempt::Connected { core, .. } | Attempt::Open { core, .. } => core
                .sending_mut()
                .is_some_and(ackwire_core::Connection::take_rearm),
            _ => false,
        }
    }

    fn send_error(
        &self,
        channel: u8,
        error: ackwire_core::SendError,
        queue_len: usize,
    ) -> super::SendError {
        use ackwire_core::SendError as Core;
        match error {
            Core::UnknownChannel(c) => super::SendError::UnknownChannel(c),
            Core::TooLarge { len, max, .. } => super::SendError::TooLarge { channel, len, max },
            Core::Reliable { .. } => super::SendError::Reliable { channel },
            Core::Closed => super::SendError::NotConnected(self.id),
            _ => super::SendError::Full {
                peer: self.id,
                channel,
                budget: super::Budget::Queue,
                used: queue_len,
                limit: queue_len,
            },
        }
    }

    /// When something of this link is due.
    pub(super) fn timeouts(
        &self,
        grace: Duration,
        idle_timeout: Duration,
    ) -> [Option<Duration>; 4] {
        [
            self.attempt.deadline(),
            self.orphaned_at.map(|at| at + grace),
            self.attempt.core().and_then(CoreLink::poll_timeout),
            self.hello_ack_deadline(idle_timeout),
        ]
    }

    /// A connected peer that never answers our hello pins what we queued before its ack: the
    /// connection fails at this deadline (twice the idle timeout after connecting, so a peer
    /// that went silent fails on the idle timeout first, with that reason), and the next one
    /// carries the copies.
    fn hello_ack_deadline(&self, idle_timeout: Duration) -> Option<Duration> {
        match (&self.attempt, self.took) {
            (Attempt::Connected { .. }, Some(took)) if !self.delivery.hello_acked() => {
                Some(self.started + took + 2 * idle_timeout)
            }
            _ => None,
        }
    }

    /// The core's stats at `now`, once the protocol runs.
    pub(super) fn core_stats(&self, now: Duration) -> Option<ackwire_core::Stats> {
        self.attempt.core().and_then(|core| core.stats(now))
    }

    pub(super) fn info(&self, now: Duration) -> LinkInfo {
        let rtc = self.attempt.rtc();
        let state = match (&self.attempt, &self.reason) {
            // A cut-short attempt that failed shows as lost until it starts again.
            (Attempt::Idle, Some(_)) => LinkState::Lost,
            (attempt, _) => attempt.state(),
        };
        LinkInfo {
            peer: self.id,
            server_id: self.server_id,
            kind: self.kind,
            transport: self.transport_kind(),
            state,
            reason: self.reason.clone(),
            ice: rtc.and_then(|r| r.ice),
            candidate: rtc.and_then(|r| r.path.clone()),
            attempt_ms: match state {
                LinkState::Connected => self.took.unwrap_or_default(),
                LinkState::Lost | LinkState::Retrying => Duration::ZERO,
                _ => now.saturating_sub(self.started),
            },
            attempts: self.attempts,
            first_ack_at: self.first_ack,
            refused: self.refused,
            unconfirmed: self.delivery.retained(),
            stats: self.core_stats(now),
        }
    }
}

/// A link being closed: its core still sends the disconnect, then its transport closes.
#[derive(Debug)]
pub(super) struct Closing {
    pub(super) route: Route,
    core: Option<CoreLink>,
    until: Duration,
}

impl Closing {
    pub(super) fn timeouts(&self) -> [Option<Duration>; 2] {
        [
            Some(self.until),
            self.core.as_ref().and_then(CoreLink::poll_timeout),
        ]
    }

    /// Sends what the closing core still has to say (outages do not stop a goodbye).
    pub(super) fn poll(
        &mut self,
        now: Duration,
        pool: &mut Vec<Vec<u8>>,
        out: &mut VecDeque<Output>,
    ) {
        let Some(core) = self.core.as_mut() else {
            return;
        };
        let mut ready = Vec::new();
        core.poll(now, pool, &mut ready, &mut Vec::new());
        let route = self.route;
        out.extend(
            ready
                .into_iter()
                .map(|datagram| Output::Transmit { route, datagram }),
        );
        if core.is_done() {
            self.core = None;
        }
    }

    pub(super) fn is_done(&self, now: Duration) -> bool {
        self.core.is_none() || now >= self.until
    }
}

/// Takes what `from` sent early (and is still fresh) out of `queue`, dropping what is stale.
fn take_early<K: PartialEq, T>(
    queue: &mut VecDeque<(Duration, K, T)>,
    from: &K,
    cutoff: Duration,
) -> Vec<T> {
    let mut kept = VecDeque::with_capacity(queue.len());
    let mut taken = Vec::new();
    for (at, key, item) in queue.drain(..) {
        if at < cutoff {
            continue;
        }
        if key == *from {
            taken.push(item);
        } else {
            kept.push_back((at, key, item));
        }
    }
    *queue = kept;
    taken
}

impl Member {
    /// Link `i` changed: its [`Event::Link`], and [`Event::Connected`] or
    /// [`Event::Disconnected`] when it went into or out of `connected`.
    pub(super) fn link_event(&mut self, now: Duration, i: usize) {
        let link = &mut self.links[i];
        if !matches!(link.attempt, Attempt::Idle | Attempt::Retrying { .. }) {
            link.last_kind = Some(link.live_kind());
        }
        let info = self.links[i].info(now);
        let connected = info.state == LinkState::Connected;
        let link = &mut self.links[i];
        let changed = std::mem::replace(&mut link.told_connected, connected) != connected;
        let (peer, reason) = (link.id, info.reason.clone());
        self.event(Event::Link(info));
        if changed {
            self.event(if connected {
                Event::Connected { peer }
            } else {
                Event::Disconnected { peer, reason }
            });
        }
    }

    /// `info` is in the room: link with it, or rename the link we already have.
    pub(super) fn peer_present(&mut self, now: Duration, info: &PeerInfo) {
        let me = self.session.me();
        if Some(info.id) == me || info.instance.as_deref() == Some(&self.config.instance) {
            return;
        }
        // Before anything else of it counts, its instance included: a stranger claiming the
        // old host's instance would otherwise inherit its link.
        if !self.host_trusted(info) {
            return;
        }
        let udp = match roles::udp_between(self.config.kind, self.config.udp_addr, info) {
            roles::Udp::Ourselves => return,
            roles::Udp::To(addr) => Some(addr),
            roles::Udp::No => None,
        };
        // A peer without an instance is known by its id in this session only.
        let instance = info
            .instance
            .clone()
            .unwrap_or_else(|| format!("#{}", info.id));
        // One UDP socket per native program: the same address is the same peer, whatever its
        // server said (a server that does not relay instances).
        let known = self
            .links
            .iter()
            .position(|l| l.instance == instance || (udp.is_some() && l.udp == udp));
        if let Some(i) = known {
            let link = &mut self.links[i];
            if link.server_id == Some(info.id) {
                // A resume's welcome: a host's service may have changed while we were away.
                link.webtransport = info.webtransport.clone();
                return;
            }
            link.server_id = Some(info.id);
            link.kind = info.kind;
            link.role = info.role;
            link.udp_key = info.udp_key;
            link.network = info.network.clone();
            link.identity = info.identity.clone();
            link.webtransport = info.webtransport.clone();
            link.orphaned_at = None;
            // A negotiation begun under the old id cannot finish: its signals went to an id
            // the server no longer knows, and who offers may have changed with the ids.
            if matches!(
                link.attempt,
                Attempt::Negotiating { .. } | Attempt::Dialing { .. }
            ) {
                self.close_transport(now, i);
            }
            let link = &mut self.links[i];
            // A healthy link carries on under the new id; a broken one starts over now.
            if matches!(link.attempt, Attempt::Idle | Attempt::Retrying { .. }) {
                link.attempts = 0;
                self.start_attempt(now, i);
            } else {
                self.link_event(now, i);
            }
            self.replay_early(now, i);
            return;
        }
        // Another program of an orphaned link's identity replaced it (its program restarted,
        // or the player moved to another device): that link can never carry on, so it goes
        // now, its unconfirmed messages handed back, rather than at the end of its grace.
        if info.identity.is_some()
            && let Some(i) = self
                .links
                .iter()
                .position(|l| l.orphaned_at.is_some() && l.identity == info.identity)
        {
            self.remove_link(now, i, GoneReason::Lost);
        }
        let id = PeerId(self.next_peer);
        self.next_peer += 1;
        let life = self.random.next();
        let delivery = self.delivery_for(life, &instance);
        self.links.push(Link {
            id,
            instance,
            server_id: Some(info.id),
            kind: info.kind,
            role: info.role,
            udp,
            via_ice: false,
            udp_key: info.udp_key,
            network: info.network.clone(),
            identity: info.identity.clone(),
            webtransport: info.webtransport.clone(),
            via_webrtc: false,
            via_websocket: false,
            last_kind: None,
            attempt: Attempt::Idle,
            reason: None,
            attempts: 0,
            started: now,
            took: None,
            first_ack: None,
            orphaned_at: None,
            refused: 0,
            clock: PeerClock::default(),
            told_connected: false,
            delivery,
        });
        self.event(Event::PeerJoined {
            peer: id,
            server_id: info.id,
            kind: info.kind,
            role: info.role,
            identity: info.identity.clone(),
        });
        let i = self.links.len() - 1;
        self.start_attempt(now, i);
        self.replay_early(now, i);
    }

    /// Whether `info` may be linked with: anyone but, for a client of a host room, a host of
    /// another identity than the pinned one (the configured one, or else the first host's,
    /// pinned here). A refused host is told once (a welcome lists it again after a reconnect).
    fn host_trusted(&mut self, info: &PeerInfo) -> bool {
        if self.config.role != crate::signalling::Role::Client
            || info.role != crate::signalling::Role::Host
        {
            return true;
        }
        let pinned = self
            .config
            .host_identity
            .as_ref()
            .or(self.pinned_host.as_ref());
        match (pinned, &info.identity) {
            (None, identity) => {
                self.pinned_host = identity.clone();
                true
            }
            (Some(pinned), Some(identity)) if pinned == identity => true,
            (Some(pinned), identity) => {
                if self.refused_host != Some(info.id) {
                    self.refused_host = Some(info.id);
                    let expected = pinned.clone();
                    self.event(Event::HostRefused {
                        server_id: info.id,
                        identity: identity.clone(),
                        expected,
                    });
                }
                false
            }
        }
    }

    /// A new link's delivery: counting on where a forgotten link to the same instance left
    /// off, so nothing it sent is delivered twice.
    fn delivery_for(&mut self, life: u64, instance: &str) -> Delivery {
        let mut delivery = Delivery::new(life, &self.config.app.channels, self.config.peer_budget);
        if let Some(at) = self.forgotten.iter().position(|(i, _)| i == instance)
            && let Some((_, receiving)) = self.forgotten.remove(at)
        {
            delivery.resume_receiving(receiving);
        } else if self.forgotten_dropped {
            // This instance's count may have been among those dropped.
            delivery.set_forgetful();
        }
        delivery
    }

    /// Whether we lead link `i` (see `roles`).
    fn we_lead(&self, me: ServerId, i: usize, peer: ServerId) -> bool {
        let ours = (self.config.kind, self.config.role);
        roles::we_lead(ours, me, (self.links[i].kind, self.links[i].role), peer)
    }

    /// Starts (or restarts) link `i` with its peer, as this pair's roles say.
    pub(super) fn start_attempt(&mut self, now: Duration, i: usize) {
        self.close_transport(now, i);
        let (Some(me), Some(peer)) = (self.session.me(), self.links[i].server_id) else {
            return;
        };
        let lead = self.we_lead(me, i, peer);
        let network = self.session.network().map(str::to_owned);
        let link = &mut self.links[i];
        link.started = now;
        link.took = None;
        link.first_ack = None;
        if let Some(theirs) = link.direct_udp()
            && roles::skip_direct(
                self.config.udp_addr,
                self.config.udp_keys.is_some(),
                theirs,
                link.udp_key.is_some(),
                network.as_deref(),
                link.network.as_deref(),
            )
        {
            link.via_ice = true;
        }
        // A client that dials WebTransport does so first, even where raw UDP would do (a
        // native that dials: load generators, tests); a failed session leaves the ordinary
        // path (`Link::via_webrtc`).
        if self.dials_webtransport(i) {
            self.dial_session(now, i, peer, false);
            return self.link_event(now, i);
        }
        // Its WebSocket, the last resort: WebRTC failed, or we have none.
        if self.dials_websocket(i) {
            self.dial_session(now, i, peer, true);
            return self.link_event(now, i);
        }
        if !self.config.webrtc && self.links[i].direct_udp().is_none() {
            return self.lose(now, i, Failure::NoTransport);
        }
        let link = &mut self.links[i];
        match link.direct_udp() {
            Some(_) => {
                let keys = match (&self.config.udp_keys, link.udp_key) {
                    (Some(ours), Some(theirs)) if lead => {
                        Some(LinkKeys::Connect(ours.initiator(theirs)))
                    }
                    (Some(ours), Some(theirs)) => Some(LinkKeys::Accept(ours.responder(theirs))),
                    _ => None,
                };
                let deadline = now + self.config.direct_timeout;
                match self.new_core(now, !lead, Handshake::Cookie, peer, i, keys) {
                    Ok(core) => {
                        self.links[i].attempt = Attempt::Open {
                            transport: Transport::Udp,
                            core,
                            deadline: Some(deadline),
                        };
                    }
                    Err(failure) => return self.lose(now, i, failure),
                }
            }
            None => self.open_rtc(now, i, peer, lead),
        }
        self.link_event(now, i);
    }

    /// The protocol of link `i`'s new attempt, accepting or connecting; `Err` when its keys
    /// cannot be used (never plaintext instead).
    pub(super) fn new_core(
        &mut self,
        now: Duration,
        accept: bool,
        handshake: Handshake,
        peer: ServerId,
        i: usize,
        keys: Option<LinkKeys>,
    ) -> Result<CoreLink, Failure> {
        let emulation = self
            .config
            .emulation
            .as_ref()
            .map(|e| e.salted(u64::from(self.links[i].id.0)));
        // A WebTransport datagram holds less than a UDP one (`WEBTRANSPORT_DATAGRAM`).
        let narrow;
        let config = if self.links[i].attempt.wt().is_some() {
            let size = self.link_config.max_datagram_size;
            narrow = self
                .link_config
                .clone()
                .with_max_datagram_size(size.min(super::WEBTRANSPORT_DATAGRAM));
            &narrow
        } else {
            &self.link_config
        };
        CoreLink::new(
            now,
            config,
            if accept {
                self.acceptors += 1;
                Role::Accept {
                    secret: self.config.secret,
                    attempt: self.acceptors,
                }
            } else {
                Role::Connect
            },
            handshake,
            cookie_address(peer),
            emulation.as_ref(),
            keys,
        )
        .map_err(|e| {
            Failure::Keying(match e {
                SetupError::Keys(e) => e.to_string(),
                // Validated when the member was made; its numbers stay out of the browser's
                // bundle (their formatting would bring the float printer).
                SetupError::Config(_) => "the connection configuration is invalid".to_owned(),
                SetupError::Role => "keys of the other role".to_owned(),
                #[cfg(target_arch = "wasm32")]
                SetupError::NoUdp => "no raw UDP in a browser".to_owned(),
            })
        })
    }

    /// Closes link `i`'s transport and protocol (the core still says goodbye); the link is
    /// left idle.
    pub(super) fn close_transport(&mut self, now: Duration, i: usize) {
        let route = self.links[i].route();
        match std::mem::replace(&mut self.links[i].attempt, Attempt::Idle) {
            Attempt::Open { mut core, .. } | Attempt::Connected { mut core, .. } => {
                core.close();
                if let Some(route) = route {
                    self.closing.push(Closing {
                        route,
                        core: Some(core),
                        until: now + CLOSING_MAX,
                    });
                }
            }
            Attempt::Negotiating {
                rtc: Rtc { id, .. },
                ..
            }
            | Attempt::Dialing {
                wt: Wt { id, .. }, ..
            } => {
                self.command(super::Command::CloseTransport { transport: id });
            }
            Attempt::Idle | Attempt::Retrying { .. } => {}
        }
    }

    /// Link `i` failed: keep the reason, close what is left, and try again if the peer is
    /// still in the room.
    pub(super) fn lose(&mut self, now: Duration, i: usize, failure: Failure) {
        let lead = match (self.session.me(), self.links[i].server_id) {
            (Some(me), Some(peer)) => self.we_lead(me, i, peer),
            _ => false,
        };
        // No direct path between two natives (symmetric NATs, a firewall): the next attempt
        // goes through ICE, which can also use STUN and TURN. The leader decides; the other
        // side follows when the offer comes (`negotiation`).
        let fall_back = lead
            && self.links[i].direct_udp().is_some()
            && matches!(failure, Failure::HandshakeTimeout | Failure::NoDirectPath);
        // A client whose WebTransport session never became ready (the browser could not
        // reach the host's UDP port, or refused its certificate) links over WebRTC instead,
        // at once.
        let connected = matches!(self.links[i].attempt, Attempt::Connected { .. });
        let to_webrtc = !connected
            && (self.links[i].attempt.wt()).is_some_and(|wt| !wt.hosting && !wt.websocket);
        // And one whose WebRTC attempt never opened its data channel (UDP blocked both ways,
        // a relay that is down) links over the host's WebSocket, at once.
        let to_websocket =
            !connected && self.links[i].attempt.rtc().is_some() && self.has_websocket(i);
        self.close_transport(now, i);
        let link = &mut self.links[i];
        link.reason = Some(failure);
        // The path that failed is not the path of the next attempt.
        self.link_event(now, i);
        let link = &mut self.links[i];
        link.via_ice |= fall_back;
        link.via_webrtc |= to_webrtc;
        link.via_websocket |= to_websocket;
        if link.server_id.is_none() {
            // Not in the room (yet): it starts over when its peer shows up again.
            return;
        }
        let delay = if lead && !fall_back && !to_webrtc && !to_websocket {
            self.config.backoff.delay(link.attempts, self.random.next())
        } else {
            // The passive side gets ready for the next attempt at once; so does a fallback
            // to ICE, a path of its own that nothing has tried yet.
            Duration::ZERO
        };
        let link = &mut self.links[i];
        link.attempts += 1;
        if matches!(link.reason, Some(Failure::NoTransport)) {
            // Nothing to try again with until the host publishes another service
            // (`peer_updated`).
            return;
        }
        link.attempt = Attempt::Retrying { at: now + delay };
        self.link_event(now, i);
    }

    /// The peer of link `i` is gone: say goodbye, hand back what it never confirmed, and
    /// forget the link.
    pub(super) fn remove_link(&mut self, now: Duration, i: usize, reason: GoneReason) {
        self.close_transport(now, i);
        let mut link = self.links.remove(i);
        let mut info = link.info(now);
        info.state = LinkState::Gone;
        self.event(Event::Link(info));
        let peer = link.id;
        if link.told_connected {
            self.event(Event::Disconnected { peer, reason: None });
        }
        if let Some(receiving) = link.delivery.receiving() {
            if self.forgotten.len() >= super::FORGOTTEN_KEPT {
                self.forgotten.pop_front();
                self.forgotten_dropped = true;
            }
            self.forgotten.push_back((link.instance.clone(), receiving));
        }
        for (channel, bytes) in link.delivery.unconfirmed() {
            self.event(Event::Undelivered {
                peer,
                channel,
                bytes,
            });
        }
        self.event(Event::PeerLeft {
            peer,
            server_id: link.server_id,
            reason,
            role: link.role,
        });
    }

    /// Retries, attempt deadlines and peers that never came back.
    pub(super) fn links_timeout(&mut self, now: Duration) {
        for i in 0..self.links.len() {
            match &self.links[i].attempt {
                Attempt::Retrying { at } if now >= *at => self.start_attempt(now, i),
                Attempt::Negotiating {
                    deadline: Some(at), ..
                }
                | Attempt::Open {
                    deadline: Some(at), ..
                }
                | Attempt::Dialing { deadline: at, .. }
                    if now >= *at =>
                {
                    let failure = if self.links[i].direct_udp().is_some() {
                        Failure::NoDirectPath
                    } else if let Attempt::Dialing {
                        wt:
                            Wt {
                                hosting: false,
                                websocket: false,
                                ..
                            },
                        ..
                    } = self.links[i].attempt
                    {
                        Failure::Timeout(self.config.webtransport_timeout)
                    } else if self.links[i].attempt.rtc().is_some() && self.has_websocket(i) {
                        Failure::Timeout(self.config.websocket_after)
                    } else {
                        // The attempt timeout it had, which is what the player can change
                        // (an answerer's deadline starts at the offer, after the attempt).
                        Failure::Timeout(self.config.attempt_timeout)
                    };
                    self.lose(now, i, failure);
                }
                Attempt::Connected { .. }
                    if self.links[i]
                        .hello_ack_deadline(self.link_config.idle_timeout)
                        .is_some_and(|at| now >= at) =>
                {
                    let failure = Failure::Protocol("the peer never answered our hello".into());
                    self.lose(now, i, failure);
                }
                _ => {}
            }
        }
        // Peers that never came back after a server restart.
        let grace = self.config.orphan_grace;
        while let Some(i) = self
            .links
            .iter()
            .position(|l| l.orphaned_at.is_some_and(|at| now >= at + grace))
        {
            self.remove_link(now, i, GoneReason::NotBack);
        }
    }

    /// The peer of link `i` is not in the room for now (a server restart, or its program
    /// joined afresh): keep the link for a rename, for `orphan_grace`.
    pub(super) fn orphan(&mut self, now: Duration, i: usize) {
        let link = &mut self.links[i];
        link.server_id = None;
        link.orphaned_at = Some(now);
    }

    pub(super) fn replay_early(&mut self, now: Duration, i: usize) {
        let cutoff = now.saturating_sub(EARLY_TTL);
        if let Some(peer) = self.links[i].server_id {
            for data in take_early(&mut self.early_signals, &peer, cutoff) {
                self.on_signal(now, peer, data);
            }
        }
        if let Some(addr) = self.links[i].direct_udp() {
            for datagram in take_early(&mut self.early_datagrams, &addr, cutoff) {
                // Refused ones are dropped, as they would have been on arrival.
                let _ = self.receive(now, Route::Udp(addr), &datagram);
            }
        }
    }

    /// A datagram for link `i`.
    pub(super) fn link_receive(
        &mut self,
        now: Duration,
        i: usize,
        datagram: &[u8],
    ) -> Result<(), ReceiveError> {
        let mut events = std::mem::take(&mut self.scratch);
        let result = match &mut self.links[i].attempt {
            Attempt::Open { core, .. } | Attempt::Connected { core, .. } => {
                core.receive(now, datagram, &mut events)
            }
            _ => Err(RefusedDatagram::NotOpen),
        };
        let mut result = result.map_err(ReceiveError::from);
        if result.is_err() {
            self.links[i].refused += 1;
        }
        if let Err(e) = self.on_core_events(now, i, &mut events) {
            result = Err(e);
        }
        self.scratch = events;
        result
    }

    /// Handles what link `i`'s core reported, in order, until one of them fails the
    /// connection (the rest belong to the dead connection: their packets are never acked).
    fn on_core_events(
        &mut self,
        now: Duration,
        i: usize,
        events: &mut Vec<CoreEvent>,
    ) -> Result<(), ReceiveError> {
        let mut result = Ok(());
        for event in events.drain(..) {
            if !matches!(
                self.links[i].attempt,
                Attempt::Open { .. } | Attempt::Connected { .. }
            ) {
                continue;
            }
            if let Err(e) = self.on_core_event(now, i, event) {
                result = Err(e);
            }
        }
        result
    }

    /// Runs link `i`'s protocol: emulated arrivals, what is due, its events.
    pub(super) fn link_poll(&mut self, now: Duration, i: usize) {
        let Some(route) = self.links[i].route() else {
            return;
        };
        let mut events = std::mem::take(&mut self.scratch);
        // Emulated arrivals first, and what they bring handled before anything is sent: a
        // message the member refuses fails the connection before its packet is acked.
        if let Some(core) = self.links[i].attempt.core_mut() {
            core.poll_arrivals(now, &mut events);
        }
        if !events.is_empty() {
            // Framing errors were counted, and failed the connection, where they came in.
            let _ = self.on_core_events(now, i, &mut events);
        }
        let mut ready = std::mem::take(&mut self.ready);
        let link = &mut self.links[i];
        // Pings only once the core connected (the member's hello went first).
        let linked = matches!(link.attempt, Attempt::Connected { .. });
        let clock_period = self.config.clock_period;
        if let Some(core) = link.attempt.core_mut() {
            // Before the accept, only a channel connector's (it sends early, its hello said).
            if let Some(connection) = core.sending_mut() {
                link.delivery.flush(connection);
                if let Some(ping) = linked.then(|| link.clock.ping_due(now)).flatten() {
                    let (bytes, len) = ping.encode();
                    // Refused (the control channel's window full): still due, tried again
                    // at the member's next step. It rides the link's next packet rather
                    // than pulling one early: the interval's packet is better left to carry
                    // the peer's pongs promptly (the clock's bounds are their round trips).
                    if connection
                        .send_deferred(link.delivery.control_channel(), &bytes[..len])
                        .is_ok()
                    {
                        link.clock.pinged(now, clock_period);
                    }
                }
            }
            core.poll_transmit(now, &mut self.pool, &mut ready, &mut events);
        }
        for datagram in ready.drain(..) {
            if self.outage {
                self.pool.push(datagram);
            } else {
                self.out.push_back(Output::Transmit { route, datagram });
            }
        }
        self.ready = ready;
        let _ = self.on_core_events(now, i, &mut events);
        self.scratch = events;
    }

    fn on_core_event(
        &mut self,
        now: Duration,
        i: usize,
        event: CoreEvent,
    ) -> Result<(), ReceiveError> {
        let link = &mut self.links[i];
        match event {
            CoreEvent::Connected => {
                let attempt = std::mem::replace(&mut link.attempt, Attempt::Idle);
                let mut refused = None;
                link.attempt = match attempt {
                    Attempt::Open {
                        transport,
                        mut core,
                        ..
                    } => {
                        // A channel connector's hello already left with its request.
                        let early = core.sends_early();
                        if let Some(connection) = core.connected_mut().filter(|_| !early) {
                            refused = link.delivery.connected(connection).err();
                        }
                        Attempt::Connected { transport, core }
                    }
                    other => other,
                };
                if let Some(e) = refused {
                    self.lose(now, i, Failure::Protocol(e.to_string()));
                    return Ok(());
                }
                let link = &mut self.links[i];
                link.attempts = 0;
                link.reason = None;
                link.took = Some(now.saturating_sub(link.started));
                self.link_event(now, i);
            }
            CoreEvent::Message { channel, bytes } => {
                let new_life = self.random.next();
                let link = &mut self.links[i];
                let peer = link.id;
                let Attempt::Connected { core, .. } = &mut link.attempt else {
                    return Ok(());
                };
                let Some(connection) = core.connected_mut() else {
                    return Ok(());
                };
                let out = &mut self.out;
                let mut deliver = |channel, bytes| {
                    out.push_back(Output::Event(Event::Message {
                        peer,
                        channel,
                        bytes,
                    }));
                };
                let control = link.delivery.control_channel();
                if link.delivery.is_reliable(channel) || channel == control {
                    let arrived = if channel == control && ClockMessage::is_clock(&bytes) {
                        link.clock.take(connection, control, now, &bytes)
                    } else {
                        link.delivery
                            .arrived(connection, channel, bytes, new_life, &mut deliver)
                    };
                    for (channel, bytes) in link.delivery.take_handed_back() {
                        self.out.push_back(Output::Event(Event::Undelivered {
                            peer,
                            channel,
                            bytes,
                        }));
                    }
                    if let Err(e) = arrived {
                        // Nothing of its packet is acked: the connection fails now, and an
                        // honest sender's copy comes again on the next one.
                        self.links[i].refused += 1;
                        self.lose(now, i, Failure::Protocol(e.to_string()));
                        return Err(e.into());
                    }
                } else {
                    deliver(channel, bytes);
                }
            }
            CoreEvent::FirstAck { at } => {
                link.first_ack = Some(at);
                self.link_event(now, i);
            }
            CoreEvent::Disconnected { reason } => {
                let failure = match reason {
                    DisconnectReason::ClosedByPeer => Failure::PeerClosed,
                    DisconnectReason::HandshakeTimedOut => Failure::HandshakeTimeout,
                    DisconnectReason::Unencrypted => Failure::Unencrypted,
                    DisconnectReason::AcceptorKeyMismatch | DisconnectReason::KeyExchangeFailed => {
                        Failure::KeyRefused
                    }
                    _ => Failure::IdleTimeout(self.link_config.idle_timeout),
                };
                self.lose(now, i, failure);
            }
        }
        Ok(())
    }
}

/// The address bytes the acceptor's cookie binds a remote peer to: its server id as decimal
/// text, on a UDP socket exactly as on a data channel, so both transports share one code
/// path.
fn cookie_address(peer: ServerId) -> Vec<u8> {
    peer.to_string().into_bytes()
}
