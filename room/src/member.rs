//! The room member: one player's (or native peer's) side of a room, sans-IO.
//!
//! A [`Member`] owns everything a room member decides: joining and re-joining through
//! signalling (with one [`Backoff`] policy), which peers to link with and over what (raw UDP
//! between two natives, a WebRTC data channel otherwise), who offers and who accepts, each
//! link's lifecycle and its recovery, identities across signal-server restarts, the two-way
//! link emulator, the demo (newest position, chat) and the stats reports for dashboards.
//!
//! Like the core it does no I/O and reads no clock. The driver feeds it signalling frames,
//! transport events, datagrams and `now`; it drains [`Output`]s (open the signalling socket,
//! send a frame, run a transport [`Command`], transmit a datagram, tell the app an [`Event`])
//! and calls [`Member::handle_timeout`] at [`Member::poll_timeout`]. The browser driver
//! (`ackwire-wasm`) and the native one (`ackwire-peer join`) are thin adapters around it.
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
//! - **connected**: the core connection is up; positions and chat flow.
//! - **lost**: ICE failed, the data channel closed, the core timed out or the peer closed;
//!   the reason is kept and shown.
//! - **retrying**: waiting out the backoff before the next attempt (the passive side waits
//!   for the peer's next offer or connect request).
//! - **gone**: the peer left the room; the link is dropped after this report.
//!
//! ## Who does what
//! One side of each pair offers the WebRTC session (and every renegotiation) and runs the
//! core's connector; the other answers and accepts. Both derive the same roles from the ids
//! and kinds they share, so there is no glare (`we_offer`):
//! - **two browsers**: the lower id, the player already in the room. It offers as soon as
//!   the server announces the newcomer, so the offer waits at the newcomer's page while that
//!   page still loads its driver, and the newcomer only answers.
//! - **a native and a browser**: the browser, whoever came first. The native answers within
//!   a few ms and the browser's ICE agent controls; the other way round the native's agent
//!   (the `webrtc` crate's) would control, nominate only at its next check run, and hold the
//!   browser's DTLS until then (a browser's median join measured 196 ms that way, 114–145 ms
//!   this way; `cargo xtask bench joins`).
//! - **two natives**: nothing to negotiate; the higher id connects over UDP and the lower
//!   accepts (`demo::we_accept`). When no direct path works, the higher id falls back to ICE
//!   and offers.
//!
//! ## Across signal-server restarts
//! Peer ids belong to one server session. Every member joins with a random `instance` id of
//! its own, and the server lists it with the peer. Links are keyed by the remote's instance:
//! after a restart each member joins afresh, and when a peer shows up again under a new id
//! with an instance we have a link to, that link is kept and renamed, never duplicated. A
//! link whose peer does not come back within [`MemberConfig::orphan_grace`] is gone. The
//! same holds when the server replaces a peer's entry (`peer_left` with reason `replaced`: the
//! program joined afresh under a new id): its link waits to be renamed.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use ackwire_core::{ConnectionConfig, ConnectionConfigError, DisconnectReason, Stats};
use serde::Serialize;
use serde::ser::SerializeStruct;

use crate::backoff::{Backoff, Random};
use crate::core_link::{ChatError, CoreEvent, CoreLink, RefusedDatagram};
use crate::demo::{MAX_CHAT_BYTES, cookie_address, we_accept};
use crate::emulation::Emulation;
use crate::keys::{LinkKeys, UdpKeys};
use crate::signalling::{
    ClientFrame, ErrorCode, IceServer, LeaveReason, PeerId, PeerInfo, PeerKind, PublicKey, Resume,
    SdpKind, ServerFrame, SignalData, UrlJoin, VERSION,
};

/// How a member behaves; every field has a documented default except who and where it is.
#[derive(Debug, Clone)]
pub struct MemberConfig {
    /// Room name.
    pub room: String,
    /// Browser or native.
    pub kind: PeerKind,
    /// Natives: where other natives reach our UDP socket. `None` for browsers.
    pub udp_addr: Option<SocketAddr>,
    /// This program instance: random, 1–64 of `A-Z a-z 0-9 - _` (see the module docs).
    pub instance: String,
    /// 32 random bytes keying the cookies of the links we accept.
    pub secret: [u8; 32],
    /// Random seed for backoff jitter.
    pub seed: u64,
    /// Link emulation for every link, both directions (`None`: real links).
    pub emulation: Option<Emulation>,
    /// The core connection of every link. Default: `ConnectionConfig::default()` (the demo's
    /// channels: 0 unreliable-sequenced positions, 1 reliable-ordered chat).
    pub connection: ConnectionConfig,
    /// Retries of the signalling socket and of failed links. Default: 250 ms doubling to 2 s.
    pub backoff: Backoff,
    /// A link attempt that is not connected after this long is lost. Default: 20 s (longer
    /// than a browser's own ICE timeout, so ICE usually says why first).
    pub attempt_timeout: Duration,
    /// A direct UDP attempt between natives that is not connected after this long gives way
    /// to WebRTC (see the module docs). Default: 2 s (a handshake takes one round trip; its
    /// packets are resent every 250 ms).
    pub direct_timeout: Duration,
    /// A link whose peer is not in the room (after a server restart) is dropped after this
    /// long. Default: 20 s (the server's reconnect grace plus a reconnect or two).
    pub orphan_grace: Duration,
    /// Stats reports for dashboards go out this often. Default: 1 s.
    pub stats_period: Duration,
    /// Natives: the key pair that encrypts links to other natives (its public half goes in
    /// the join as `udp_key`). `None` (the default, and browsers'): plaintext UDP links,
    /// which encrypting natives refuse.
    pub udp_keys: Option<Arc<dyn UdpKeys>>,
}

impl MemberConfig {
    /// A configuration with the documented defaults.
    pub fn new(room: impl Into<String>, kind: PeerKind, instance: impl Into<String>) -> Self {
        MemberConfig {
            room: room.into(),
            kind,
            udp_addr: None,
            instance: instance.into(),
            secret: [0; 32],
            seed: 0,
            emulation: None,
            connection: ConnectionConfig::default(),
            backoff: Backoff::default(),
            attempt_timeout: Duration::from_secs(20),
            direct_timeout: Duration::from_secs(2),
            orphan_grace: Duration::from_secs(20),
            stats_period: Duration::from_secs(1),
            udp_keys: None,
        }
    }
}

/// Why a member could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemberError {
    /// The connection configuration is invalid.
    #[error("connection config: {0}")]
    Config(#[from] ConnectionConfigError),
    /// The emulation settings are invalid.
    #[error("link emulation: {0}")]
    Emulation(#[from] ackwire_core::emulator::EmulatorError),
    /// The instance id is not 1–64 of `A-Z a-z 0-9 - _`.
    #[error("instance id {0:?}: 1-64 characters of A-Z a-z 0-9 - _")]
    Instance(String),
}

/// What a member sends on the signalling socket: a [`ClientFrame`] whose relayed payloads
/// are typed. It serializes to the JSON the server expects.
pub type MemberFrame = ClientFrame<SignalData, Vec<LinkReport>>;

/// A frame from the server as a member reads it: relayed signals as [`SignalData`]. Dashboard
/// stats, which a member never subscribes to, are [`ServerFrame::Other`].
pub type MemberServerFrame<'a> = ServerFrame<'a, SignalData>;

/// Why a signalling frame was refused. Nothing changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// Not a frame of the signalling protocol.
    #[error("unreadable server frame: {0}")]
    Malformed(serde_json::Error),
    /// A relayed signal that is neither a description nor a candidate.
    #[error("signal from peer {from} is not an SDP or ICE candidate: {error}")]
    BadSignal {
        /// Sender.
        from: PeerId,
        /// What is wrong.
        error: serde_json::Error,
    },
}

/// Why a datagram was refused. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiveError {
    /// No link uses this transport (an old peer connection, or one never opened).
    #[error("no link on this transport")]
    UnknownTransport,
    /// No native of the room has this UDP address (kept briefly: it may be a newcomer whose
    /// join we have not heard of yet).
    #[error("no native of the room at {0}")]
    UnknownAddress(SocketAddr),
    /// The link's protocol refused it.
    #[error(transparent)]
    Refused(#[from] RefusedDatagram),
}

/// A link, as the member names it: stable for the link's life, whatever ids the server
/// hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct LinkId(pub u32);

/// One WebRTC peer connection attempt. A link gets a new one for every renegotiation, so
/// events of an old, closing peer connection can never touch the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct TransportId(pub u64);

/// Where a datagram travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// The data channel of this peer connection.
    WebRtc(TransportId),
    /// The member's UDP socket, to or from this address.
    Udp(SocketAddr),
}

/// What carries a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// Raw UDP between two natives.
    Udp,
    /// A WebRTC data channel (unordered, 0 retransmits).
    #[serde(rename = "webrtc")]
    WebRtc,
}

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
    /// Positions and chat flow.
    Connected,
    /// It failed; see the reason.
    Lost,
    /// Waiting to try again.
    Retrying,
    /// The peer left.
    Gone,
}

/// Why a link was lost, in words a player understands ([`Display`](std::fmt::Display)) and a
/// stable code ([`Failure::code`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// ICE found no candidate pair that works.
    IceFailed,
    /// Not connected within the attempt timeout.
    Timeout(Duration),
    /// The data channel closed.
    ChannelClosed,
    /// The WebRTC stack reported an error.
    Transport(String),
    /// Nothing arrived for the core's idle timeout.
    IdleTimeout(Duration),
    /// The peer closed its side.
    PeerClosed,
    /// The peer never completed the core handshake.
    HandshakeTimeout,
    /// The peer started the link over (a new offer while ours was up).
    Restarted,
    /// The other native answered a raw UDP link without encryption where this one requires
    /// it (its join announced a key it does not use): no link in plaintext.
    Unencrypted,
    /// The other native's key exchange did not prove the key signalling gave for it.
    KeyRefused,
    /// A direct UDP attempt between natives got no answer within `direct_timeout`: the next
    /// attempt goes through WebRTC (ICE, with STUN and TURN).
    NoDirectPath,
}

impl Failure {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Failure::IceFailed => "ice_failed",
            Failure::Timeout(_) => "timeout",
            Failure::ChannelClosed => "channel_closed",
            Failure::Transport(_) => "transport",
            Failure::IdleTimeout(_) => "idle_timeout",
            Failure::PeerClosed => "peer_closed",
            Failure::HandshakeTimeout => "handshake_timeout",
            Failure::Restarted => "restarted",
            Failure::Unencrypted => "unencrypted",
            Failure::KeyRefused => "key_refused",
            Failure::NoDirectPath => "no_direct_path",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::IceFailed => f.write_str(
                "no network path to this player: ICE failed; this network needs a TURN server (see README)",
            ),
            Failure::Timeout(after) => write!(
                f,
                "could not connect within {} s; this network may need a TURN server (see README)",
                after.as_secs()
            ),
            Failure::ChannelClosed => f.write_str("the data channel closed"),
            Failure::Transport(reason) => write!(f, "WebRTC error: {reason}"),
            Failure::IdleTimeout(after) => {
                write!(f, "nothing heard from this player for {} s", after.as_secs())
            }
            Failure::PeerClosed => f.write_str("the other player closed the link"),
            Failure::HandshakeTimeout => f.write_str("the other player never answered"),
            Failure::Restarted => f.write_str("the other player started the link over"),
            Failure::Unencrypted => f.write_str(
                "the other player's program answered without encryption; this one requires it",
            ),
            Failure::KeyRefused => f.write_str(
                "the other player's key did not match the one the server gave (a man in the middle?)",
            ),
            Failure::NoDirectPath => f.write_str(
                "no direct UDP path to this player (NATs or a firewall); trying WebRTC (ICE) instead",
            ),
        }
    }
}

impl Serialize for Failure {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut failure = s.serialize_struct("Failure", 2)?;
        failure.serialize_field("code", self.code())?;
        failure.serialize_field("message", &self.to_string())?;
        failure.end()
    }
}

/// The signalling socket's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SignallingState {
    /// Opening the socket.
    Connecting,
    /// Socket open, join sent.
    Joining,
    /// In the room.
    Joined,
    /// The socket dropped; the next attempt is scheduled.
    Reconnecting,
    /// Left the room.
    Closed,
}

/// An ICE connection state, as both WebRTC stacks name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IceState {
    /// Gathering or not started.
    New,
    /// Checking candidate pairs.
    Checking,
    /// A pair works.
    Connected,
    /// Checks are done.
    Completed,
    /// Connectivity was lost; it may come back.
    Disconnected,
    /// No pair works.
    Failed,
    /// Closed.
    Closed,
}

/// What the driver runs on a transport.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Create a peer connection with the one pre-negotiated data channel (label `ackwire`,
    /// id 0, unordered, 0 retransmits). With `offer`, create the offer and set it locally;
    /// its SDP and candidates come back as [`TransportEvent::LocalSignal`].
    OpenPeerConnection {
        /// The new transport.
        transport: TransportId,
        /// Whether we offer.
        offer: bool,
        /// STUN/TURN servers from the welcome.
        ice_servers: Vec<IceServer>,
    },
    /// Apply the remote's description (answering an offer) or candidate. Report
    /// [`TransportEvent::RemoteDescriptionSet`] once a description is set; candidates are
    /// only given after that.
    ApplyRemoteSignal {
        /// Which transport.
        transport: TransportId,
        /// The signal.
        data: SignalData,
    },
    /// Close the peer connection; nothing more will be asked of it.
    ClosePeerConnection {
        /// Which transport.
        transport: TransportId,
    },
}

/// What a transport reports.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportEvent {
    /// Our description or a trickled candidate, to relay to the peer.
    LocalSignal(SignalData),
    /// The remote description is set (candidates may be added now).
    RemoteDescriptionSet,
    /// The data channel opened.
    ChannelOpen,
    /// The data channel closed.
    ChannelClosed,
    /// The ICE connection state changed.
    Ice(IceState),
    /// The selected candidate pair's local candidate type (`host`, `srflx`, `prflx`, `relay`).
    CandidateType(String),
    /// The WebRTC stack failed (a description refused, the connection failed).
    Failed(String),
}

/// What the driver must do, or tell the application.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Open the signalling WebSocket, with `join`'s query on the URL when there is one
    /// (`ws://host/ws?version=1&room=..`: the server's first frame is then the welcome); then
    /// call [`Member::signalling_open`] or [`Member::signalling_closed`].
    OpenSignalling {
        /// The join the URL carries; `None` when the member resumes, which takes a frame.
        join: Option<UrlJoin>,
    },
    /// Send this frame on the signalling socket (drop it if the socket is not open).
    Frame(MemberFrame),
    /// Run this on a transport.
    Command(Command),
    /// Send this datagram.
    Transmit {
        /// Where.
        route: Route,
        /// The bytes.
        datagram: Vec<u8>,
    },
    /// Tell the application.
    Event(Event),
}

/// What the application hears.
// A link's snapshot is the big variant and the common one; events are few (a handful per
// second), so boxing it would buy nothing but an allocation each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Event {
    /// The signalling socket's state changed.
    Signalling {
        /// The new state.
        state: SignallingState,
        /// Why, when it dropped.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// We are in the room under this id.
    Welcome {
        /// Our id in this server session.
        peer_id: PeerId,
        /// Whether an earlier id was taken back.
        resumed: bool,
    },
    /// A peer entered the room.
    PeerJoined {
        /// Who.
        peer: PeerInfo,
    },
    /// A peer left the room.
    PeerLeft {
        /// Who.
        peer_id: PeerId,
        /// Why.
        reason: LeaveReason,
    },
    /// A link changed state.
    Link(LinkInfo),
    /// A peer's dot moved.
    Position {
        /// Which link.
        link: LinkId,
        /// The peer's current id, if it is in the room.
        peer: Option<PeerId>,
        /// In [0, 1].
        x: f32,
        /// In [0, 1].
        y: f32,
    },
    /// A chat message, delivered exactly once, in order.
    Chat {
        /// Which link.
        link: LinkId,
        /// The peer's current id, if it is in the room.
        peer: Option<PeerId>,
        /// The text (invalid UTF-8 replaced).
        text: String,
    },
    /// The peer acknowledged our first packet.
    FirstAck {
        /// Which link.
        link: LinkId,
        /// The peer's current id.
        peer: Option<PeerId>,
        /// When, on the driver's clock.
        #[serde(serialize_with = "millis")]
        at: Duration,
    },
    /// The server refused something we sent.
    ServerError {
        /// Its code (`docs/signalling.md`).
        code: String,
        /// Its words.
        message: String,
    },
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1e6).round() / 1e3)
}

/// A link as the page, the JSON output and the dashboards show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkInfo {
    /// The member's name for the link.
    pub link: LinkId,
    /// The peer's id in the current server session (`None` while it is not in the room).
    pub peer: Option<PeerId>,
    /// Browser or native.
    pub kind: PeerKind,
    /// UDP or WebRTC.
    pub transport: TransportKind,
    /// Where the link is in its life.
    pub state: LinkState,
    /// Why it was last lost (kept until it connects again).
    pub reason: Option<Failure>,
    /// WebRTC: the ICE connection state.
    pub ice: Option<IceState>,
    /// WebRTC: the local candidate type of the selected pair (`host`, `srflx`, `relay`).
    pub candidate: Option<String>,
    /// How long the current attempt took to connect (or has run so far), in ms.
    #[serde(serialize_with = "millis")]
    pub attempt_ms: Duration,
    /// Attempts since the link last connected.
    pub attempts: u32,
    /// The peer's dot.
    pub position: Option<(f32, f32)>,
    /// Datagrams refused on this link.
    pub refused: u64,
    /// The core's stats, once the protocol runs.
    pub stats: Option<Stats>,
}

/// One link in a member's stats report (`stats` frames, forwarded to dashboards; see
/// `docs/signalling.md`, "Stats").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkReport {
    /// The peer at the other end.
    pub peer: PeerId,
    /// UDP or WebRTC.
    pub transport: TransportKind,
    /// Where the link is in its life.
    pub state: LinkState,
    /// Why it was last lost.
    pub reason: Option<Failure>,
    /// WebRTC: the selected path's candidate type (`host`, `srflx`, `relay`).
    pub ice: Option<String>,
    /// The core's stats, once the protocol runs.
    pub stats: Option<Stats>,
    /// What this member emulates on all its links (each way); `None` for a real link.
    pub emulation: Option<EmulationReport>,
}

/// The link emulator's settings in a stats report, so a dashboard can say which player runs
/// `?loss=10`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EmulationReport {
    /// Added one-way delay.
    pub latency_ms: f64,
    /// Random extra delay, up to this.
    pub jitter_ms: f64,
    /// Datagrams dropped, in percent.
    pub loss_percent: f64,
}

/// Signals from an unknown sender and datagrams from an unknown address are kept this long
/// (a peer's first offer or connect request may overtake the news of its join).
const EARLY_TTL: Duration = Duration::from_secs(2);
const EARLY_MAX: usize = 64;
/// Candidates held for a peer connection whose remote description is not set yet.
const PENDING_CANDIDATES_MAX: usize = 64;
/// A closed link keeps sending its disconnect packets at most this long.
const CLOSING_MAX: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct Rtc {
    id: TransportId,
    offerer: bool,
    offer_seen: bool,
    described: bool,
    pending: Vec<SignalData>,
}

#[derive(Debug)]
struct Link {
    id: LinkId,
    instance: String,
    peer: Option<PeerId>,
    kind: PeerKind,
    udp: Option<SocketAddr>,
    /// A link between natives that runs over WebRTC (ICE, TURN) instead of raw UDP to the
    /// advertised address, after that failed (symmetric NATs, a firewall): see `fall_back`.
    via_ice: bool,
    /// The peer's key for an encrypted UDP link, from signalling.
    udp_key: Option<PublicKey>,
    /// The peer's network tag, from signalling.
    network: Option<String>,
    state: LinkState,
    reason: Option<Failure>,
    rtc: Option<Rtc>,
    ice: Option<IceState>,
    candidate: Option<String>,
    core: Option<CoreLink>,
    attempts: u32,
    attempt_start: Duration,
    /// `Some` while an attempt runs: lost if not connected by then.
    deadline: Option<Duration>,
    retry_at: Option<Duration>,
    orphaned_at: Option<Duration>,
    position: Option<(f32, f32)>,
    refused: u64,
}

impl Link {
    /// The peer's UDP address while the link runs over raw UDP.
    fn direct_udp(&self) -> Option<SocketAddr> {
        self.udp.filter(|_| !self.via_ice)
    }

    fn transport(&self) -> TransportKind {
        if self.direct_udp().is_some() {
            TransportKind::Udp
        } else {
            TransportKind::WebRtc
        }
    }

    fn route(&self) -> Option<Route> {
        match (self.direct_udp(), &self.rtc) {
            (Some(addr), _) => Some(Route::Udp(addr)),
            (None, Some(rtc)) => Some(Route::WebRtc(rtc.id)),
            (None, None) => None,
        }
    }

    fn info(&self, now: Duration) -> LinkInfo {
        LinkInfo {
            link: self.id,
            peer: self.peer,
            kind: self.kind,
            transport: self.transport(),
            state: self.state,
            reason: self.reason.clone(),
            ice: self.ice,
            candidate: self.candidate.clone(),
            attempt_ms: match self.state {
                LinkState::Connected | LinkState::Lost | LinkState::Retrying => Duration::ZERO,
                _ => now.saturating_sub(self.attempt_start),
            },
            attempts: self.attempts,
            position: self.position,
            refused: self.refused,
            stats: self.core.as_ref().and_then(CoreLink::stats),
        }
    }
}

/// A link being closed: its core still sends the disconnect, then its transport closes.
#[derive(Debug)]
struct Closing {
    route: Route,
    core: Option<CoreLink>,
    until: Duration,
}

/// The room member. See the module docs.
#[derive(Debug)]
pub struct Member {
    config: MemberConfig,
    random: Random,
    out: VecDeque<Output>,
    signalling: SignallingState,
    socket_open: bool,
    /// The open (or opening) socket's URL carried the join.
    joined_in_url: bool,
    signalling_attempts: u32,
    reconnect_at: Option<Duration>,
    me: Option<PeerId>,
    token: Option<String>,
    ice_servers: Vec<IceServer>,
    /// Our network tag from the welcome (see [`PeerInfo::network`]).
    network: Option<String>,
    next_link: u32,
    next_transport: u64,
    links: Vec<Link>,
    closing: Vec<Closing>,
    early_signals: VecDeque<(Duration, PeerId, SignalData)>,
    early_datagrams: VecDeque<(Duration, SocketAddr, Vec<u8>)>,
    position: (f32, f32),
    next_stats: Option<Duration>,
    left: bool,
    /// The demo's "pulled cable": every datagram in or out is dropped.
    outage: bool,
    /// Core events of the link being polled, reused.
    scratch: Vec<CoreEvent>,
}

/// Whether raw UDP between two natives' advertised addresses, `ours` and `theirs`, would
/// have to cross NATs: the server saw them connect from different public addresses (their
/// network tags differ) and one of the addresses is private (RFC 1918, shared CGNAT space,
/// loopback, link-local, IPv6 unique-local), so it cannot be reached from the other's
/// network. Both sides compute the same answer, so they agree on the transport. Unknown tags
/// (an older server) say nothing, and the direct attempt runs.
fn across_nats(
    ours: IpAddr,
    theirs: IpAddr,
    our_tag: Option<&str>,
    their_tag: Option<&str>,
) -> bool {
    let elsewhere = our_tag.zip(their_tag).is_some_and(|(a, b)| a != b);
    elsewhere && (is_private(ours) || is_private(theirs))
}

/// An address that is only reachable from its own network.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || (v4.octets()[0] == 100 && v4.octets()[1] & 0xC0 == 64)
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_private(IpAddr::V4(v4)),
            None => v6.is_loopback() || v6.is_unique_local() || v6.is_unicast_link_local(),
        },
    }
}

/// Whether we (`me`, of kind `ours`) offer the WebRTC session of a link with `peer` (of kind
/// `theirs`) and connect its core; the module's "Who does what" says why each pair's roles
/// are what they are. Between natives it is also who connects over UDP and falls back to ICE.
fn we_offer(ours: PeerKind, me: PeerId, theirs: PeerKind, peer: PeerId) -> bool {
    match (ours, theirs) {
        (PeerKind::Browser, PeerKind::Browser) => me < peer,
        (PeerKind::Native, PeerKind::Browser) => false,
        (PeerKind::Browser, PeerKind::Native) => true,
        (PeerKind::Native, PeerKind::Native) => me > peer,
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

fn valid_instance(instance: &str) -> bool {
    (1..=64).contains(&instance.len())
        && instance
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Member {
    /// A member of `config.room`, started at `now`. Its first output opens the signalling
    /// socket.
    pub fn new(config: MemberConfig, now: Duration) -> Result<Member, MemberError> {
        config.connection.validate()?;
        if let Some(e) = &config.emulation {
            e.config.validate()?;
        }
        if !valid_instance(&config.instance) {
            return Err(MemberError::Instance(config.instance.clone()));
        }
        Ok(Member {
            random: Random::new(config.seed),
            config,
            out: VecDeque::new(),
            signalling: SignallingState::Connecting,
            socket_open: false,
            joined_in_url: false,
            signalling_attempts: 0,
            reconnect_at: Some(now),
            me: None,
            token: None,
            ice_servers: Vec::new(),
            network: None,
            next_link: 1,
            next_transport: 1,
            links: Vec::new(),
            closing: Vec::new(),
            early_signals: VecDeque::new(),
            early_datagrams: VecDeque::new(),
            position: (0.5, 0.5),
            next_stats: None,
            left: false,
            outage: false,
            scratch: Vec::new(),
        })
    }

    /// Our id in the current server session, once welcomed.
    pub fn peer_id(&self) -> Option<PeerId> {
        self.me
    }

    /// The signalling socket's state.
    pub fn signalling_state(&self) -> SignallingState {
        self.signalling
    }

    /// Every link, as the page and the JSON output show them.
    pub fn links(&self, now: Duration) -> Vec<LinkInfo> {
        self.links.iter().map(|l| l.info(now)).collect()
    }

    /// Our dot; every packet carries the newest.
    pub fn set_position(&mut self, x: f32, y: f32) {
        self.position = (x, y);
    }

    /// Pulls (or plugs back) this member's network cable, as far as its links go: while on,
    /// every datagram in or out is dropped, so links go quiet, time out and recover when it
    /// ends, exactly as through a real outage. Signalling is not affected. For demos and tests.
    pub fn set_outage(&mut self, on: bool) {
        self.outage = on;
    }

    /// Queues a chat message to every connected peer (reliable-ordered: each receives it
    /// once, in order). Returns how many peers it was queued for.
    pub fn send_chat(&mut self, now: Duration, text: &str) -> Result<usize, ChatError> {
        if text.len() > MAX_CHAT_BYTES {
            return Err(ChatError::TooLong(text.len()));
        }
        let mut sent = 0;
        for link in &mut self.links {
            if let Some(core) = link.core.as_mut().filter(|c| c.is_connected()) {
                core.send_chat(text)?;
                sent += 1;
            }
        }
        if sent == 0 {
            return Err(ChatError::NoOneConnected);
        }
        self.drive(now);
        Ok(sent)
    }

    /// Queues a chat message to the peer on `link` alone.
    pub fn send_chat_to(
        &mut self,
        now: Duration,
        link: LinkId,
        text: &str,
    ) -> Result<(), ChatError> {
        if text.len() > MAX_CHAT_BYTES {
            return Err(ChatError::TooLong(text.len()));
        }
        let core = self
            .links
            .iter_mut()
            .find(|l| l.id == link)
            .and_then(|l| l.core.as_mut())
            .ok_or(ChatError::NoOneConnected)?;
        core.send_chat(text)?;
        self.drive(now);
        Ok(())
    }

    /// The next thing to do or tell.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must run next.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let links = self.links.iter().flat_map(|l| {
            [
                l.retry_at,
                l.deadline,
                l.orphaned_at.map(|at| at + self.config.orphan_grace),
                l.core.as_ref().and_then(CoreLink::poll_timeout),
            ]
        });
        let closing = self.closing.iter().flat_map(|c| {
            [
                Some(c.until),
                c.core.as_ref().and_then(CoreLink::poll_timeout),
            ]
        });
        links
            .chain(closing)
            .chain([self.reconnect_at, self.next_stats])
            .flatten()
            .min()
    }

    /// Time passed: retries, timeouts, the links' packets, stats reports.
    pub fn handle_timeout(&mut self, now: Duration) {
        if self.reconnect_at.is_some_and(|at| now >= at) {
            self.reconnect_at = None;
            self.set_signalling(SignallingState::Connecting, None);
            // A fresh join rides the URL; a resume carries a token, which stays out of URLs.
            let join = self.resume().is_none().then(|| UrlJoin {
                udp_addr: self.config.udp_addr,
                instance: Some(self.config.instance.clone()),
                udp_key: self.udp_key(),
                ..UrlJoin::new(self.config.room.clone(), self.config.kind)
            });
            self.joined_in_url = join.is_some();
            self.out.push_back(Output::OpenSignalling { join });
        }
        for i in 0..self.links.len() {
            let link = &self.links[i];
            if link.retry_at.is_some_and(|at| now >= at) {
                self.links[i].retry_at = None;
                self.start_attempt(now, i);
            } else if link.deadline.is_some_and(|at| now >= at) {
                let after = now.saturating_sub(link.attempt_start);
                let failure = if link.direct_udp().is_some() {
                    Failure::NoDirectPath
                } else {
                    Failure::Timeout(after)
                };
                self.lose(now, i, failure);
            }
        }
        // Peers that never came back after a server restart.
        let grace = self.config.orphan_grace;
        while let Some(i) = self
            .links
            .iter()
            .position(|l| l.orphaned_at.is_some_and(|at| now >= at + grace))
        {
            self.remove_link(now, i);
        }
        if self.next_stats.is_some_and(|at| now >= at) {
            self.next_stats = Some(now + self.config.stats_period);
            self.report_stats();
        }
        self.drive(now);
    }

    // ----- signalling -----

    /// The signalling socket opened: the member joins (taking back its id if it has one),
    /// unless the socket's URL already carried the join.
    pub fn signalling_open(&mut self, now: Duration) {
        let _ = now;
        self.socket_open = true;
        self.set_signalling(SignallingState::Joining, None);
        if !self.joined_in_url {
            self.send_join();
        }
    }

    /// The signalling socket closed or could not open. Links keep flowing; the member asks
    /// for a new socket after the backoff.
    pub fn signalling_closed(&mut self, now: Duration, detail: &str) {
        self.socket_open = false;
        if self.left {
            return;
        }
        let delay = self
            .config
            .backoff
            .delay(self.signalling_attempts, self.random.next());
        self.signalling_attempts += 1;
        self.reconnect_at = Some(now + delay);
        self.set_signalling(
            SignallingState::Reconnecting,
            Some(format!(
                "{detail}; attempt {} in {} ms",
                self.signalling_attempts,
                delay.as_millis()
            )),
        );
    }

    /// A text frame from the signalling server. Unknown frame types are ignored; frames that
    /// are not JSON of the protocol are refused with a typed error and change nothing.
    pub fn handle_frame(&mut self, now: Duration, text: &str) -> Result<(), FrameError> {
        let frame: ServerFrame = serde_json::from_str(text).map_err(FrameError::Malformed)?;
        let frame = match frame {
            ServerFrame::Signal { from, data } => ServerFrame::Signal {
                from,
                data: serde_json::from_value(data.into_owned())
                    .map_err(|error| FrameError::BadSignal { from, error })?,
            },
            ServerFrame::Welcome {
                version,
                room,
                peer_id,
                token,
                resumed,
                peers,
                ice_servers,
                network,
            } => ServerFrame::Welcome {
                version,
                room,
                peer_id,
                token,
                resumed,
                peers,
                ice_servers,
                network,
            },
            ServerFrame::PeerJoined { room, peer } => ServerFrame::PeerJoined { room, peer },
            ServerFrame::PeerLeft {
                room,
                peer_id,
                reason,
            } => ServerFrame::PeerLeft {
                room,
                peer_id,
                reason,
            },
            ServerFrame::IceServers { ice_servers } => ServerFrame::IceServers { ice_servers },
            ServerFrame::Error { code, message } => ServerFrame::Error { code, message },
            ServerFrame::Subscribed { .. } | ServerFrame::Stats { .. } | ServerFrame::Other => {
                ServerFrame::Other
            }
        };
        self.handle_server_frame(now, frame);
        Ok(())
    }

    /// A signalling frame a driver decoded itself (the browser's through its own
    /// `JSON.parse`). Unknown frame types ([`ServerFrame::Other`]) are ignored.
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
                self.network = network.map(Cow::into_owned);
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
            ServerFrame::IceServers { ice_servers } => self.ice_servers = ice_servers.into_owned(),
            ServerFrame::PeerJoined { peer, .. } => {
                self.event(Event::PeerJoined { peer: peer.clone() });
                self.peer_present(now, &peer);
            }
            ServerFrame::PeerLeft {
                peer_id, reason, ..
            } => {
                self.event(Event::PeerLeft { peer_id, reason });
                if let Some(i) = self.links.iter().position(|l| l.peer == Some(peer_id)) {
                    if reason == LeaveReason::Replaced {
                        // The same program joined again under a new id (its `peer_joined` is
                        // next): keep the link, to be renamed, like after a server restart.
                        let link = &mut self.links[i];
                        link.peer = None;
                        link.orphaned_at = Some(now);
                    } else {
                        self.remove_link(now, i);
                    }
                }
            }
            ServerFrame::Signal { from, data } => self.on_signal(now, from, data),
            ServerFrame::Error { code, message } => {
                if code == ErrorCode::ResumeRejected {
                    // The server forgot us (restart, or grace expired): join afresh.
                    self.token = None;
                    self.send_join();
                } else if code == ErrorCode::BrokerUnavailable
                    && self.signalling != SignallingState::Joined
                {
                    // The server cannot admit anyone now (its rooms live in a Redis it cannot
                    // reach): try again on a fresh socket after the backoff, which may reach
                    // another server behind the same address.
                    self.signalling_closed(now, &format!("join refused: {message}"));
                }
                self.event(Event::ServerError {
                    code: code.as_str().to_owned(),
                    message,
                });
            }
            _ => {}
        }
        self.drive(now);
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

    fn send_join(&mut self) {
        let resume = self.resume();
        self.out.push_back(Output::Frame(ClientFrame::Join {
            version: VERSION,
            room: self.config.room.clone(),
            kind: self.config.kind,
            udp_addr: self.config.udp_addr,
            instance: Some(self.config.instance.clone()),
            udp_key: self.udp_key(),
            app: None,
            resume,
        }));
    }

    /// Our public key for the join: natives with a UDP address and keys.
    fn udp_key(&self) -> Option<PublicKey> {
        self.config
            .udp_keys
            .as_ref()
            .filter(|_| self.config.udp_addr.is_some())
            .map(|keys| keys.public_key())
    }

    fn send_frame(&mut self, frame: MemberFrame) {
        // While the socket is down frames are dropped, not queued: stats are stale a second
        // later, and a negotiation that lost a signal times out and starts over.
        if self.socket_open && self.signalling == SignallingState::Joined {
            self.out.push_back(Output::Frame(frame));
        }
    }

    fn on_welcome(
        &mut self,
        now: Duration,
        peer_id: PeerId,
        token: String,
        resumed: bool,
        peers: Vec<PeerInfo>,
        ice_servers: Vec<IceServer>,
    ) {
        if !resumed && self.me.is_some() {
            // A new server session: the old ids mean nothing now (the server may hand them to
            // others). Links keep flowing; each is renamed when its peer shows up again.
            for link in &mut self.links {
                link.peer = None;
                link.orphaned_at = Some(now);
            }
            // Half-done negotiations cannot finish without signalling: start them over.
            for i in 0..self.links.len() {
                if matches!(
                    self.links[i].state,
                    LinkState::Negotiating | LinkState::Wanted
                ) {
                    self.links[i].deadline = None;
                    self.links[i].state = LinkState::Lost;
                    self.close_transport(now, i);
                }
            }
        }
        self.me = Some(peer_id);
        self.token = Some(token);
        self.ice_servers = ice_servers;
        self.signalling_attempts = 0;
        self.set_signalling(SignallingState::Joined, None);
        self.event(Event::Welcome { peer_id, resumed });
        self.next_stats
            .get_or_insert(now + self.config.stats_period);
        if resumed {
            // Whoever left while we were away is gone.
            let gone: Vec<usize> = (0..self.links.len())
                .filter(|&i| {
                    self.links[i]
                        .peer
                        .is_some_and(|id| !peers.iter().any(|p| p.id == id))
                })
                .collect();
            for i in gone.into_iter().rev() {
                self.remove_link(now, i);
            }
        }
        for peer in &peers {
            self.peer_present(now, peer);
        }
    }

    /// `info` is in the room: link with it, or rename the link we already have.
    fn peer_present(&mut self, now: Duration, info: &PeerInfo) {
        if Some(info.id) == self.me || info.instance.as_deref() == Some(&self.config.instance) {
            return;
        }
        let udp = match (
            self.config.kind,
            self.config.udp_addr,
            info.kind,
            info.udp_addr,
        ) {
            (PeerKind::Native, Some(ours), PeerKind::Native, Some(theirs)) if ours != theirs => {
                Some(theirs)
            }
            (PeerKind::Native, Some(ours), PeerKind::Native, Some(theirs)) if ours == theirs => {
                return;
            }
            _ => None,
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
            if link.peer == Some(info.id) {
                return;
            }
            link.peer = Some(info.id);
            link.kind = info.kind;
            link.udp_key = info.udp_key;
            link.network = info.network.clone();
            link.orphaned_at = None;
            // A healthy link carries on under the new id; a broken one starts over now.
            if matches!(
                link.state,
                LinkState::Lost | LinkState::Retrying | LinkState::Wanted
            ) {
                link.retry_at = None;
                link.attempts = 0;
                self.start_attempt(now, i);
            } else {
                let info = link.info(now);
                self.event(Event::Link(info));
            }
            self.replay_early(now, i);
            return;
        }
        let id = LinkId(self.next_link);
        self.next_link += 1;
        self.links.push(Link {
            id,
            instance,
            peer: Some(info.id),
            kind: info.kind,
            udp,
            via_ice: false,
            udp_key: info.udp_key,
            network: info.network.clone(),
            state: LinkState::Wanted,
            reason: None,
            rtc: None,
            ice: None,
            candidate: None,
            core: None,
            attempts: 0,
            attempt_start: now,
            deadline: None,
            retry_at: None,
            orphaned_at: None,
            position: None,
            refused: 0,
        });
        let i = self.links.len() - 1;
        self.start_attempt(now, i);
        self.replay_early(now, i);
    }

    /// Starts (or restarts) link `i` with its peer, as this pair's roles say.
    fn start_attempt(&mut self, now: Duration, i: usize) {
        let (Some(me), Some(peer)) = (self.me, self.links[i].peer) else {
            self.links[i].state = LinkState::Lost;
            return;
        };
        self.close_transport(now, i);
        let link = &mut self.links[i];
        link.attempt_start = now;
        link.ice = None;
        link.candidate = None;
        let we_offer = we_offer(self.config.kind, me, link.kind, peer);
        // Raw UDP between natives only when both encrypt it or neither does: with one that
        // runs `--insecure`, the link goes through WebRTC, whose DTLS encrypts it, rather
        // than in plaintext or not at all.
        if link.direct_udp().is_some() && self.config.udp_keys.is_some() != link.udp_key.is_some() {
            link.via_ice = true;
        }
        // Two natives on different networks, one behind a private address: no direct attempt
        // to wait out, ICE with the welcome's STUN and TURN servers at once.
        if let (Some(ours), Some(theirs)) = (self.config.udp_addr, link.direct_udp())
            && across_nats(
                ours.ip(),
                theirs.ip(),
                self.network.as_deref(),
                link.network.as_deref(),
            )
        {
            link.via_ice = true;
        }
        match link.direct_udp() {
            Some(_) => {
                let id = link.id;
                let accept = we_accept(me, peer);
                let keys = match (&self.config.udp_keys, link.udp_key) {
                    (Some(ours), Some(theirs)) if accept => {
                        Some(LinkKeys::Accept(ours.responder(theirs)))
                    }
                    (Some(ours), Some(theirs)) => Some(LinkKeys::Connect(ours.initiator(theirs))),
                    _ => None,
                };
                let core = self.new_core(now, accept, peer, id, keys);
                let link = &mut self.links[i];
                link.core = core;
                link.state = LinkState::Open;
                link.deadline = Some(now + self.config.direct_timeout);
            }
            None => self.open_rtc(now, i, we_offer),
        }
        let info = self.links[i].info(now);
        self.event(Event::Link(info));
    }

    fn new_core(
        &self,
        now: Duration,
        accept: bool,
        peer: PeerId,
        link: LinkId,
        keys: Option<LinkKeys>,
    ) -> Option<CoreLink> {
        let emulation = self
            .config
            .emulation
            .as_ref()
            .map(|e| e.salted(u64::from(link.0)));
        // The config and emulation were validated in `new`.
        CoreLink::new(
            now,
            &self.config.connection,
            accept,
            self.config.secret,
            cookie_address(peer),
            emulation.as_ref(),
            keys,
        )
        .ok()
    }

    /// Closes link `i`'s transport and protocol (the core still says goodbye).
    fn close_transport(&mut self, now: Duration, i: usize) {
        let link = &mut self.links[i];
        let route = link.route();
        let rtc = link.rtc.take();
        link.deadline = None;
        if let Some(mut core) = link.core.take() {
            core.close();
            if let Some(route) = route {
                self.closing.push(Closing {
                    route,
                    core: Some(core),
                    until: now + CLOSING_MAX,
                });
                return;
            }
        }
        if let Some(rtc) = rtc {
            self.out
                .push_back(Output::Command(Command::ClosePeerConnection {
                    transport: rtc.id,
                }));
        }
    }

    /// Link `i` failed: keep the reason, close what is left, and try again if the peer is
    /// still in the room.
    fn lose(&mut self, now: Duration, i: usize, failure: Failure) {
        self.close_transport(now, i);
        let link = &mut self.links[i];
        // No direct path between two natives (symmetric NATs, a firewall): the next attempt
        // goes through ICE, which can also use STUN and TURN. The offerer decides; the other
        // side follows when the offer comes (`on_signal`).
        let fall_back = link.direct_udp().is_some()
            && matches!(failure, Failure::HandshakeTimeout | Failure::NoDirectPath)
            && self.me.zip(link.peer).is_some_and(|(me, peer)| me > peer);
        link.state = LinkState::Lost;
        link.reason = Some(failure);
        // The path that failed is not the path of the next attempt.
        link.ice = None;
        link.candidate = None;
        let info = link.info(now);
        self.event(Event::Link(info));
        let link = &mut self.links[i];
        link.via_ice |= fall_back;
        let Some(peer) = link.peer else {
            // Not in the room (yet): it starts over when its peer shows up again.
            return;
        };
        let initiator = self
            .me
            .is_some_and(|me| we_offer(self.config.kind, me, link.kind, peer));
        let delay = if initiator && !fall_back {
            self.config.backoff.delay(link.attempts, self.random.next())
        } else {
            // The passive side gets ready for the next attempt at once; so does a fallback
            // to ICE, a path of its own that nothing has tried yet.
            Duration::ZERO
        };
        let link = &mut self.links[i];
        link.attempts += 1;
        link.state = LinkState::Retrying;
        link.retry_at = Some(now + delay);
        let info = link.info(now);
        self.event(Event::Link(info));
    }

    /// The peer of link `i` left: say goodbye and forget the link.
    fn remove_link(&mut self, now: Duration, i: usize) {
        self.close_transport(now, i);
        let mut link = self.links.remove(i);
        link.state = LinkState::Gone;
        let info = link.info(now);
        self.event(Event::Link(info));
    }

    fn on_signal(&mut self, now: Duration, from: PeerId, data: SignalData) {
        let Some(i) = self.links.iter().position(|l| l.peer == Some(from)) else {
            // Its join may still be on the way: keep it briefly.
            if self.early_signals.len() == EARLY_MAX {
                self.early_signals.pop_front();
            }
            self.early_signals.push_back((now, from, data));
            return;
        };
        if self.links[i].direct_udp().is_some() {
            let offer = matches!(&data, SignalData::Sdp { sdp } if sdp.kind == SdpKind::Offer);
            if !offer {
                return;
            }
            // The other native found no direct UDP path and fell back to WebRTC: follow.
            self.links[i].via_ice = true;
            self.start_answering(now, i);
        }
        match data {
            SignalData::Sdp { ref sdp } if sdp.kind == SdpKind::Offer => {
                let fresh = self.links[i]
                    .rtc
                    .as_ref()
                    .is_some_and(|r| !r.offerer && !r.offer_seen);
                if !fresh {
                    // A new offer for a link that had one: the peer started over.
                    let was_up = self.links[i].core.is_some();
                    self.start_answering(now, i);
                    if was_up {
                        self.links[i].reason = Some(Failure::Restarted);
                    }
                }
                let link = &mut self.links[i];
                link.deadline = Some(now + self.config.attempt_timeout);
                link.attempt_start = now;
                if let Some(rtc) = &mut link.rtc {
                    rtc.offer_seen = true;
                    let transport = rtc.id;
                    self.out
                        .push_back(Output::Command(Command::ApplyRemoteSignal {
                            transport,
                            data,
                        }));
                }
            }
            SignalData::Sdp { .. } => {
                if let Some(rtc) = self.links[i].rtc.as_ref().filter(|r| r.offerer) {
                    let transport = rtc.id;
                    self.out
                        .push_back(Output::Command(Command::ApplyRemoteSignal {
                            transport,
                            data,
                        }));
                }
            }
            SignalData::Candidate { .. } => {
                let Some(rtc) = self.links[i].rtc.as_mut() else {
                    return;
                };
                if rtc.described {
                    let transport = rtc.id;
                    self.out
                        .push_back(Output::Command(Command::ApplyRemoteSignal {
                            transport,
                            data,
                        }));
                } else if rtc.pending.len() < PENDING_CANDIDATES_MAX {
                    rtc.pending.push(data);
                }
            }
        }
    }

    /// A new WebRTC attempt on link `i`: a peer connection of its own, offering or answering.
    fn open_rtc(&mut self, now: Duration, i: usize, offerer: bool) {
        let transport = TransportId(self.next_transport);
        self.next_transport += 1;
        let link = &mut self.links[i];
        link.rtc = Some(Rtc {
            id: transport,
            offerer,
            offer_seen: offerer,
            described: false,
            pending: Vec::new(),
        });
        link.state = LinkState::Negotiating;
        // The answering side waits for an offer as long as it takes; its clock starts with
        // the offer.
        link.deadline = offerer.then_some(now + self.config.attempt_timeout);
        self.out
            .push_back(Output::Command(Command::OpenPeerConnection {
                transport,
                offer: offerer,
                ice_servers: self.ice_servers.clone(),
            }));
    }

    /// A fresh answering peer connection for link `i`, replacing whatever it had.
    fn start_answering(&mut self, now: Duration, i: usize) {
        self.close_transport(now, i);
        let link = &mut self.links[i];
        link.retry_at = None;
        link.attempt_start = now;
        link.ice = None;
        link.candidate = None;
        self.open_rtc(now, i, false);
        let info = self.links[i].info(now);
        self.event(Event::Link(info));
    }

    fn replay_early(&mut self, now: Duration, i: usize) {
        let cutoff = now.saturating_sub(EARLY_TTL);
        if let Some(peer) = self.links[i].peer {
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

    // ----- transports -----

    /// Something happened on a WebRTC transport. Events of transports the member closed are
    /// ignored.
    pub fn handle_transport(
        &mut self,
        now: Duration,
        transport: TransportId,
        event: TransportEvent,
    ) {
        let Some(i) = self
            .links
            .iter()
            .position(|l| l.rtc.as_ref().is_some_and(|r| r.id == transport))
        else {
            return;
        };
        match event {
            TransportEvent::LocalSignal(data) => {
                if let Some(to) = self.links[i].peer {
                    self.send_frame(ClientFrame::Signal {
                        to,
                        from: None,
                        data,
                    });
                }
            }
            TransportEvent::RemoteDescriptionSet => {
                if let Some(rtc) = self.links[i].rtc.as_mut() {
                    rtc.described = true;
                    for data in std::mem::take(&mut rtc.pending) {
                        self.out
                            .push_back(Output::Command(Command::ApplyRemoteSignal {
                                transport,
                                data,
                            }));
                    }
                }
            }
            TransportEvent::ChannelOpen => {
                let link = &self.links[i];
                let (Some(peer), Some(rtc)) = (link.peer, &link.rtc) else {
                    return;
                };
                // The offerer connects, the answerer accepts: the same pairing as the ids'.
                let accept = !rtc.offerer;
                let core = self.new_core(now, accept, peer, link.id, None);
                let link = &mut self.links[i];
                link.core = core;
                link.state = LinkState::Open;
                let info = link.info(now);
                self.event(Event::Link(info));
            }
            TransportEvent::ChannelClosed => self.lose(now, i, Failure::ChannelClosed),
            TransportEvent::Ice(state) => {
                self.links[i].ice = Some(state);
                if state == IceState::Failed {
                    self.lose(now, i, Failure::IceFailed);
                }
            }
            TransportEvent::CandidateType(kind) => self.links[i].candidate = Some(kind),
            TransportEvent::Failed(reason) => self.lose(now, i, Failure::Transport(reason)),
        }
        self.drive(now);
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
        let found = self.links.iter().position(|l| match route {
            Route::Udp(addr) => l.direct_udp() == Some(addr),
            Route::WebRtc(t) => {
                l.direct_udp().is_none() && l.rtc.as_ref().is_some_and(|r| r.id == t)
            }
        });
        let Some(i) = found else {
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
        let link = &mut self.links[i];
        let mut events = std::mem::take(&mut self.scratch);
        let result = match &mut link.core {
            Some(core) => core.receive(now, datagram, &mut events),
            None => Err(RefusedDatagram::NotOpen),
        };
        if result.is_err() {
            link.refused += 1;
        }
        for event in events.drain(..) {
            self.on_core_event(now, i, event);
        }
        self.scratch = events;
        self.drive(now);
        result.map_err(ReceiveError::from)
    }

    /// Leaves the room: every link says goodbye (keep driving until
    /// [`is_closed`](Self::is_closed)), and the server hears `leave`.
    pub fn close(&mut self, now: Duration) {
        self.send_frame(ClientFrame::Leave);
        self.left = true;
        self.reconnect_at = None;
        while !self.links.is_empty() {
            self.close_transport(now, 0);
            self.links.remove(0);
        }
        self.set_signalling(SignallingState::Closed, None);
        self.drive(now);
    }

    /// Whether a closed member has nothing left to send.
    pub fn is_closed(&self) -> bool {
        self.left && self.closing.is_empty()
    }

    // ----- internals -----

    fn event(&mut self, event: Event) {
        self.out.push_back(Output::Event(event));
    }

    fn set_signalling(&mut self, state: SignallingState, detail: Option<String>) {
        self.signalling = state;
        self.event(Event::Signalling { state, detail });
    }

    fn report_stats(&mut self) {
        // What this member emulates on all its links (each way), so a dashboard can say
        // which player runs `?loss=10`; `null` for real links.
        let emulation = self.config.emulation.as_ref().map(|e| EmulationReport {
            latency_ms: e.config.latency.as_secs_f64() * 1000.0,
            jitter_ms: e.config.jitter.as_secs_f64() * 1000.0,
            loss_percent: e.config.loss_percent,
        });
        let links: Vec<LinkReport> = self
            .links
            .iter()
            .filter_map(|l| {
                Some(LinkReport {
                    peer: l.peer?,
                    transport: l.transport(),
                    state: l.state,
                    reason: l.reason.clone(),
                    ice: l.candidate.clone(),
                    stats: l.core.as_ref().and_then(CoreLink::stats),
                    emulation,
                })
            })
            .collect();
        if !links.is_empty() {
            self.send_frame(ClientFrame::Stats { from: None, links });
        }
    }

    /// Runs every link's protocol: arrivals, what is due, events.
    fn drive(&mut self, now: Duration) {
        let position = self.position;
        for i in 0..self.links.len() {
            let link = &mut self.links[i];
            let Some(route) = link.route() else { continue };
            let Some(core) = link.core.as_mut() else {
                continue;
            };
            let (out, outage) = (&mut self.out, self.outage);
            core.poll(
                now,
                position,
                |datagram| {
                    if !outage {
                        out.push_back(Output::Transmit { route, datagram });
                    }
                },
                &mut self.scratch,
            );
            let events = std::mem::take(&mut self.scratch);
            for event in events {
                self.on_core_event(now, i, event);
            }
        }
        for closing in &mut self.closing {
            if let Some(core) = closing.core.as_mut() {
                let route = closing.route;
                let out = &mut self.out;
                core.poll(
                    now,
                    position,
                    |datagram| out.push_back(Output::Transmit { route, datagram }),
                    &mut Vec::new(),
                );
                if core.is_done() {
                    closing.core = None;
                }
            }
        }
        let out = &mut self.out;
        self.closing.retain(|c| {
            let done = c.core.is_none() || now >= c.until;
            if done {
                if let Route::WebRtc(transport) = c.route {
                    out.push_back(Output::Command(Command::ClosePeerConnection { transport }));
                }
            }
            !done
        });
    }

    fn on_core_event(&mut self, now: Duration, i: usize, event: CoreEvent) {
        let link = &mut self.links[i];
        let (id, peer) = (link.id, link.peer);
        match event {
            CoreEvent::Connected => {
                link.state = LinkState::Connected;
                link.deadline = None;
                link.attempts = 0;
                link.reason = None;
                let mut info = link.info(now);
                info.attempt_ms = now.saturating_sub(link.attempt_start);
                self.event(Event::Link(info));
            }
            CoreEvent::Position { x, y } => {
                link.position = Some((x, y));
                self.event(Event::Position {
                    link: id,
                    peer,
                    x,
                    y,
                });
            }
            CoreEvent::Chat { text } => self.event(Event::Chat {
                link: id,
                peer,
                text,
            }),
            CoreEvent::FirstAck { at } => self.event(Event::FirstAck { link: id, peer, at }),
            CoreEvent::Disconnected { reason } => {
                let failure = match reason {
                    DisconnectReason::ClosedByPeer => Failure::PeerClosed,
                    DisconnectReason::HandshakeTimedOut => Failure::HandshakeTimeout,
                    DisconnectReason::Unencrypted => Failure::Unencrypted,
                    DisconnectReason::AcceptorKeyMismatch | DisconnectReason::KeyExchangeFailed => {
                        Failure::KeyRefused
                    }
                    _ => Failure::IdleTimeout(self.config.connection.idle_timeout),
                };
                self.lose(now, i, failure);
            }
        }
    }
}
