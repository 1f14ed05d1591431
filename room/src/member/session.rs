//! The signalling session: the socket (opened when the member asks, retried with backoff),
//! the join (in the socket's URL when fresh, a frame when resuming), the welcome, the
//! server's refusals, and the frames links relay through it; and the frames themselves as a
//! member types them ([`MemberFrame`], [`MemberServerFrame`]).

use std::borrow::Cow;
use std::time::Duration;

use super::{Event, FrameError, GoneReason, LinkReport, Member, Output, ServerId, SignallingState};
use crate::signalling::{
    ClientFrame, ErrorCode, IceServer, LeaveReason, PeerInfo, PublicKey, Resume, Role, ServerFrame,
    SignalData, UnreadableFrame, UrlJoin, VERSION, WebTransportInfo, parse_server_frame,
};

/// What a member sends on the signalling socket: a [`ClientFrame`] whose relayed payloads
/// are typed. It serializes to the JSON the server expects.
pub type MemberFrame = ClientFrame<SignalData, Vec<LinkReport>>;

/// A frame from the server as a member reads it: relayed signals as [`SignalData`]. The
/// dashboards' frames (`subscribed`, `stats`), which a member never asks for, are refused
/// before they become one ([`FrameError::NotForMembers`]).
pub type MemberServerFrame<'a> = ServerFrame<'a, SignalData>;

/// The member's signalling state.
#[derive(Debug)]
pub(super) struct Session {
    state: SignallingState,
    socket_open: bool,
    /// The open (or opening) socket's URL carried the join.
    joined_in_url: bool,
    attempts: u32,
    reconnect_at: Option<Duration>,
    me: Option<ServerId>,
    token: Option<String>,
    ice_servers: Vec<IceServer>,
    /// Our network tag from the welcome (see [`PeerInfo::network`]).
    network: Option<String>,
    /// We left the room, or the server refused us for good: no more sockets.
    left: bool,
    /// Server frames refused (see [`Member::unreadable_frames`]).
    unreadable_frames: u64,
    /// The refusal that stopped the member (a join no retry cures), if one did.
    refusal: Option<(ErrorCode, String)>,
    /// A host's new WebTransport service waits for the room to hear it (an `update` sent at
    /// the next welcome: a resume taken over by another server keeps the service it had).
    update_pending: bool,
}

impl Session {
    pub(super) fn new(now: Duration) -> Session {
        Session {
            state: SignallingState::Connecting,
            socket_open: false,
            joined_in_url: false,
            attempts: 0,
            reconnect_at: Some(now),
            me: None,
            token: None,
            ice_servers: Vec::new(),
            network: None,
            left: false,
            unreadable_frames: 0,
            refusal: None,
            update_pending: false,
        }
    }

    pub(super) fn me(&self) -> Option<ServerId> {
        self.me
    }

    pub(super) fn network(&self) -> Option<&str> {
        self.network.as_deref()
    }

    pub(super) fn ice_servers(&self) -> &[IceServer] {
        &self.ice_servers
    }

    pub(super) fn left(&self) -> bool {
        self.left
    }

    pub(super) fn timeout(&self) -> Option<Duration> {
        self.reconnect_at
    }

    /// What a join takes back: our id and its token, once welcomed.
    fn resume(&self) -> Option<Resume> {
        match (self.me, &self.token) {
            (Some(peer_id), Some(token)) => Some(Resume {
                peer_id,
                token: token.clone(),
            }),
            _ => None,
        }
    }
}

/// Refusals no retry can cure: the member stops and says why.
fn refused_for_good(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::AppMismatch
            | ErrorCode::TopologyMismatch
            | ErrorCode::HostTaken
            | ErrorCode::InvalidApp
            | ErrorCode::InvalidRoomName
            | ErrorCode::InvalidInstance
            | ErrorCode::InvalidJoin
            | ErrorCode::UnsupportedVersion
            // The same ticket cannot pass later: the program needs a new one (a new join).
            | ErrorCode::TicketMissing
            | ErrorCode::TicketExpired
            | ErrorCode::TicketInvalid
            | ErrorCode::TicketWrongRoom
            | ErrorCode::TicketWrongRole
    )
}

/// Refusals of a join that may pass later (someone leaves, the server's broker comes
/// back): the member tries again on a fresh socket after the backoff, which may reach
/// another server behind the same address.
fn refused_for_now(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::BrokerUnavailable
            | ErrorCode::RoomFull
            | ErrorCode::TooManyRooms
            | ErrorCode::RoomCreationLimited
    )
}

impl Member {
    /// The refusal that stopped this member before it was ever in the room (the `fatal`
    /// [`Event::Refused`]): its code and words.
    pub fn refusal(&self) -> Option<(ErrorCode, &str)> {
        self.session
            .refusal
            .as_ref()
            .map(|(code, message)| (*code, message.as_str()))
    }

    /// Our id in the current server session, once welcomed.
    pub fn server_id(&self) -> Option<ServerId> {
        self.session.me
    }

    /// The signalling socket's state.
    pub fn signalling_state(&self) -> SignallingState {
        self.session.state
    }

    pub(super) fn session_timeout(&mut self, now: Duration) {
        if self.session.reconnect_at.is_none_or(|at| now < at) {
            return;
        }
        self.session.reconnect_at = None;
        self.set_signalling(SignallingState::Connecting, None);
        // A fresh join rides the URL; a resume carries a token, which stays out of URLs, and
        // a host's WebTransport service rides the join frame (one host per room: the round
        // trip it costs delays no player).
        let in_url = self.session.resume().is_none() && self.config.webtransport.is_none();
        let join = in_url.then(|| UrlJoin {
            udp_addr: self.config.udp_addr,
            instance: Some(self.config.instance.clone()),
            udp_key: self.udp_key(),
            ..UrlJoin::new(self.config.room.clone(), self.config.kind)
                .with_app(&self.config.app)
                .with_role(self.config.role)
                .with_ticket(self.config.ticket.clone())
        });
        self.session.joined_in_url = join.is_some();
        self.out.push_back(Output::OpenSignalling { join });
    }

    /// The signalling socket opened: the member joins (taking back its id if it has one),
    /// unless the socket's URL already carried the join.
    pub fn signalling_open(&mut self, now: Duration) {
        let _ = now;
        self.session.socket_open = true;
        self.set_signalling(SignallingState::Joining, None);
        if !self.session.joined_in_url {
            self.send_join();
        }
    }

    /// The server closed the signalling socket because a fresh join took this member's place
    /// ([`CLOSE_REPLACED`](crate::signalling::CLOSE_REPLACED)): another program of the same
    /// identity (its join ticket's) is the room's member now. Taking the place back would
    /// only have the two replace each other in turn, so the member stops, as after a refusal
    /// no retry can cure: signalling goes `Closed` with `detail`.
    pub fn signalling_replaced(&mut self, now: Duration, detail: &str) {
        let _ = now;
        self.session.socket_open = false;
        if self.session.left {
            return;
        }
        self.session.left = true;
        self.session.reconnect_at = None;
        self.set_signalling(
            SignallingState::Closed,
            Some(format!(
                "{detail}: another program joined the room in this member's place (the same identity); this one stopped"
            )),
        );
    }

    /// The signalling socket closed or could not open. Links keep flowing; the member asks
    /// for a new socket after the backoff.
    pub fn signalling_closed(&mut self, now: Duration, detail: &str) {
        self.session.socket_open = false;
        if self.session.left {
            return;
        }
        let delay = self
            .config
            .backoff
            .delay(self.session.attempts, self.random.next());
        self.session.attempts += 1;
        self.session.reconnect_at = Some(now + delay);
        self.set_signalling(
            SignallingState::Reconnecting,
            Some(format!(
                "{detail}; attempt {} in {} ms",
                self.session.attempts,
                delay.as_millis() as u64
            )),
        );
    }

    /// A text frame from the signalling server. A frame that is not JSON of the protocol, of a
    /// type this version does not know, or meant for dashboards is refused with a typed error,
    /// counted ([`unreadable_frames`](Self::unreadable_frames)), and changes nothing.
    pub fn handle_frame(&mut self, now: Duration, text: &str) -> Result<(), FrameError> {
        let frame = self
            .read_frame(text)
            .inspect_err(|_| self.note_unreadable_frame())?;
        self.handle_server_frame(now, frame);
        Ok(())
    }

    fn read_frame(&self, text: &str) -> Result<MemberServerFrame<'static>, FrameError> {
        let frame = parse_server_frame(text).map_err(|e| match e {
            UnreadableFrame::UnknownType(name) => FrameError::UnknownType(name),
            UnreadableFrame::Malformed(error) => FrameError::Malformed(error),
            // A later schema's reason: still a frame this member cannot read.
            other => FrameError::UnknownType(other.to_string()),
        })?;
        let kind = frame.frame_type();
        if !kind.for_members() {
            return Err(FrameError::NotForMembers(kind));
        }
        let from = match &frame {
            ServerFrame::Signal { from, .. } => *from,
            _ => 0,
        };
        frame
            .try_map(|data| serde_json::from_value(data.into_owned()))
            .map_err(|error| FrameError::BadSignal { from, error })
    }

    /// Counts a frame a driver decoding frames itself (the browser's) could not read, with
    /// the member's own refusals.
    pub fn note_unreadable_frame(&mut self) {
        self.session.unreadable_frames += 1;
    }

    /// Frames from the server refused so far: unreadable, of an unknown type, or not for
    /// members. Each was also refused with a typed error its driver logs.
    pub fn unreadable_frames(&self) -> u64 {
        self.session.unreadable_frames
    }

    /// A signalling frame a driver decoded itself (the browser's through its own
    /// `JSON.parse`). The dashboards' frames are counted and changes nothing: the decoders
    /// refuse them before.
    pub fn handle_server_frame(&mut self, now: Duration, frame: MemberServerFrame<'_>) {
        match frame {
            ServerFrame::Welcome {
                peer_id,
                token,
                resumed,
                peers,
                ice_servers,
                network,
                ..
            } => {
                self.session.network = network.map(Cow::into_owned);
                self.on_welcome(
                    now,
                    peer_id,
                    token.into_owned(),
                    resumed,
                    peers,
                    ice_servers.into_owned(),
                );
            }
            // Used by every peer connection opened from now on (a new link, or one opened
            // again after it was lost); open ones keep the servers they started with.
            ServerFrame::IceServers { ice_servers } => {
                self.session.ice_servers = ice_servers.into_owned();
            }
            ServerFrame::PeerJoined { peer, .. } => self.peer_present(now, &peer),
            ServerFrame::PeerUpdated { peer, .. } => self.peer_updated(now, &peer),
            ServerFrame::PeerLeft {
                peer_id, reason, ..
            } => {
                if let Some(i) = self.links.iter().position(|l| l.server_id == Some(peer_id)) {
                    match reason {
                        // The same program joined again under a new id (its `peer_joined` is
                        // next): keep the link, to be renamed, like after a server restart.
                        LeaveReason::Replaced => self.orphan(now, i),
                        LeaveReason::Left => self.remove_link(now, i, GoneReason::Left),
                        _ => self.remove_link(now, i, GoneReason::Lost),
                    }
                }
            }
            ServerFrame::Signal { from, data } => self.on_signal(now, from, data),
            ServerFrame::Error { code, message } => self.on_refusal(now, code, &message),
            ServerFrame::Subscribed { .. } | ServerFrame::Stats { .. } => {
                self.note_unreadable_frame();
                return;
            }
        }
        self.drive(now);
    }

    fn on_refusal(&mut self, now: Duration, code: ErrorCode, message: &str) {
        let joined = self.session.state == SignallingState::Joined;
        self.event(Event::Refused {
            code,
            message: message.to_owned(),
            fatal: !joined && refused_for_good(code),
        });
        if code == ErrorCode::ResumeRejected {
            // The server forgot us (restart, or grace expired): join afresh.
            self.session.token = None;
            self.send_join();
        } else if !joined && refused_for_good(code) {
            self.session.refusal = Some((code, message.to_owned()));
            self.session.left = true;
            self.session.reconnect_at = None;
            self.session.socket_open = false;
            self.out.push_back(Output::CloseSignalling);
            self.set_signalling(SignallingState::Closed, Some(message.to_owned()));
        } else if !joined && refused_for_now(code) {
            self.out.push_back(Output::CloseSignalling);
            self.signalling_closed(now, &format!("join refused: {message}"));
        }
    }

    fn send_join(&mut self) {
        let resume = self.session.resume();
        self.out.push_back(Output::Frame(ClientFrame::Join {
            version: VERSION,
            room: self.config.room.clone(),
            kind: self.config.kind,
            udp_addr: self.config.udp_addr,
            instance: Some(self.config.instance.clone()),
            udp_key: self.udp_key(),
            app: Some(self.config.app.clone()),
            role: self.config.role,
            // A resume's token proves the join it takes back: the ticket goes with fresh joins.
            ticket: self.config.ticket.clone().filter(|_| resume.is_none()),
            webtransport: self.config.webtransport.clone().map(Box::new),
            resume,
        }));
    }

    /// A host room's host publishes a new WebTransport service (its endpoint's next
    /// certificate, say): the room hears it now when we are in it (an `update`, which its
    /// clients hear as `peer_updated` and dial with from then on; sessions already open stay
    /// as they are), else with the next join or resume. Anyone but a host changes nothing.
    pub fn update_webtransport(&mut self, now: Duration, service: WebTransportInfo) {
        let _ = now;
        if self.config.role != Role::Host || self.config.webtransport.as_ref() == Some(&service) {
            return;
        }
        self.config.webtransport = Some(service);
        self.session.update_pending = true;
        self.send_update();
    }

    /// The `update` of our service, if the room can hear it now (else at the next welcome).
    fn send_update(&mut self) {
        if self.session.socket_open && self.session.state == SignallingState::Joined {
            self.session.update_pending = false;
            let webtransport = self.config.webtransport.clone().map(Box::new);
            self.out
                .push_back(Output::Frame(ClientFrame::Update { webtransport }));
        }
    }

    /// Our public key for the join: natives with a UDP address and keys.
    fn udp_key(&self) -> Option<PublicKey> {
        self.config
            .udp_keys
            .as_ref()
            .filter(|_| self.config.udp_addr.is_some())
            .map(|keys| keys.public_key())
    }

    pub(super) fn send_frame(&mut self, frame: MemberFrame) {
        // While the socket is down frames are dropped, not queued: stats are stale a second
        // later, and a negotiation that lost a signal times out and starts over.
        if self.session.socket_open && self.session.state == SignallingState::Joined {
            self.out.push_back(Output::Frame(frame));
        }
    }

    fn on_welcome(
        &mut self,
        now: Duration,
        peer_id: ServerId,
        token: String,
        resumed: bool,
        peers: Vec<PeerInfo>,
        ice_servers: Vec<IceServer>,
    ) {
        if !resumed && self.session.me.is_some() {
            // A new server session: the old ids mean nothing now (the server may hand them to
            // others). Links keep flowing; each is renamed when its peer shows up again.
            // Half-done negotiations cannot finish without signalling: start them over.
            for i in 0..self.links.len() {
                self.orphan(now, i);
                if matches!(
                    self.links[i].attempt,
                    super::links::Attempt::Negotiating { .. }
                ) {
                    self.close_transport(now, i);
                }
            }
        }
        self.session.me = Some(peer_id);
        self.session.token = Some(token);
        self.session.ice_servers = ice_servers;
        self.session.attempts = 0;
        self.set_signalling(SignallingState::Joined, None);
        if self.session.update_pending {
            // The join carried it, unless a resume went to a server that kept the old one:
            // the same again is no news to the room.
            self.send_update();
        }
        self.event(Event::Joined {
            server_id: peer_id,
            resumed,
        });
        self.next_stats
            .get_or_insert(now + self.config.stats_period);
        if resumed {
            // Whoever left while we were away is gone.
            while let Some(i) = self.links.iter().position(|l| {
                l.server_id
                    .is_some_and(|id| !peers.iter().any(|p| p.id == id))
            }) {
                self.remove_link(now, i, GoneReason::Left);
            }
        }
        for peer in &peers {
            self.peer_present(now, peer);
        }
    }

    /// Leaving: the server hears `leave`, and no socket is opened again.
    pub(super) fn leave_session(&mut self) {
        self.send_frame(ClientFrame::Leave);
        self.session.left = true;
        self.session.reconnect_at = None;
        self.set_signalling(SignallingState::Closed, None);
    }

    fn set_signalling(&mut self, state: SignallingState, detail: Option<String>) {
        self.session.state = state;
        self.event(Event::Signalling { state, detail });
    }
}
