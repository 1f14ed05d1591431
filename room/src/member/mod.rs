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

mod links;
mod negotiation;
mod reports;
mod roles;
mod session;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ackwire_core::{ConnectionConfig, ConnectionConfigError, Stats};
use serde::Serialize;
use serde::ser::SerializeStruct;

use crate::backoff::{Backoff, Random};
use crate::core_link::RefusedDatagram;
use crate::delivery::{DeliveryError, MAX_PREFIX};
use crate::emulation::Emulation;
use crate::keys::UdpKeys;
use crate::signalling::{
    AppInfo, ChannelKind, ClientFrame, ErrorCode, IceServer, InvalidApp, PeerKind, Role,
    ServerFrame, ServerFrameType, SignalData, UrlJoin,
};

pub use links::LinkState;
pub use reports::{EmulationReport, LinkReport, REPORT_LINKS_PER_FRAME};

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

/// How a member behaves; every field has a documented default except who and where it is.
#[derive(Debug, Clone)]
pub struct MemberConfig {
    /// Room name.
    pub room: String,
    /// The application this member plays: its id, version and channel layout. Every member
    /// of a room plays the same one (the server refuses others).
    pub app: AppInfo,
    /// Browser or native.
    pub kind: PeerKind,
    /// Natives: where other natives reach our UDP socket. `None` for browsers.
    pub udp_addr: Option<SocketAddr>,
    /// What this member is in its room: a mesh [`Role::Peer`] (the default: it links to
    /// every other member), or in a host room the [`Role::Host`] (it links to every client)
    /// or a [`Role::Client`] (it links to the host alone). The room's first member fixes
    /// the room's topology; a member of the other topology is refused.
    pub role: Role,
    /// This program instance: random, 1–64 of `A-Z a-z 0-9 - _` (see the module docs).
    pub instance: String,
    /// 32 random bytes keying the cookies of the links we accept.
    pub secret: [u8; 32],
    /// Random seed for backoff jitter and the links' delivery lives.
    pub seed: u64,
    /// Link emulation for every link, both directions (`None`: real links).
    pub emulation: Option<Emulation>,
    /// The core connection of every link: rates, timeouts, datagram size. Its `channels` and
    /// `protocol_id` are the member's: the application's channels plus the member's own, and
    /// an id derived from the application, so members of different applications never
    /// complete a handshake. Default: `ConnectionConfig::default()`.
    pub connection: ConnectionConfig,
    /// Retries of the signalling socket and of failed links. Default: 250 ms doubling to 2 s.
    pub backoff: Backoff,
    /// A link attempt that is not connected after this long is lost. Default: 20 s (longer
    /// than a browser's own ICE timeout, so ICE usually says why first).
    pub attempt_timeout: Duration,
    /// A direct UDP attempt between natives that is not connected after this long gives way
    /// to WebRTC (see `roles`). Default: 2 s (a handshake takes one round trip; its packets
    /// are resent every 250 ms).
    pub direct_timeout: Duration,
    /// A link whose peer is not in the room (after a server restart) is dropped after this
    /// long. Default: 20 s (the server's reconnect grace plus a reconnect or two).
    pub orphan_grace: Duration,
    /// Stats reports (for dashboards, and [`Event::Stats`]) come this often. Default: 1 s.
    pub stats_period: Duration,
    /// Bytes of reliable messages kept per peer until it confirms them (each message plus
    /// its index): beyond it a reliable send to that peer is refused with
    /// [`SendError::Full`] (one message always fits when none is kept). Default: 4 MiB.
    pub peer_budget: usize,
    /// Natives: the key pair that encrypts links to other natives (its public half goes in
    /// the join as `udp_key`). `None` (the default, and browsers'): plaintext UDP links,
    /// which encrypting natives refuse.
    pub udp_keys: Option<Arc<dyn UdpKeys>>,
}

impl MemberConfig {
    /// A configuration with the documented defaults.
    pub fn new(
        room: impl Into<String>,
        app: AppInfo,
        kind: PeerKind,
        instance: impl Into<String>,
    ) -> Self {
        MemberConfig {
            room: room.into(),
            app,
            kind,
            udp_addr: None,
            role: Role::Peer,
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
            peer_budget: crate::delivery::DEFAULT_PEER_BUDGET,
            udp_keys: None,
        }
    }

    /// The core configuration every link runs: the application's channels, then the
    /// member's control channel (reliable-ordered), and a protocol id of the application's.
    /// Refused when the application declares a channel kind the core does not run.
    pub fn link_config(&self) -> Result<ConnectionConfig, InvalidApp> {
        let mut channels = Vec::with_capacity(self.app.channels.len() + 1);
        for &kind in &self.app.channels {
            channels.push(core_kind(kind)?);
        }
        channels.push(ackwire_core::ChannelKind::ReliableOrdered);
        Ok(self
            .connection
            .clone()
            .with_channels(channels)
            .with_protocol_id(protocol_id(&self.app)))
    }
}

/// The core's channel kind for one a join declares: the same delivery, under the same name.
/// The schema names the kinds itself, so the signal server needs no core.
fn core_kind(kind: ChannelKind) -> Result<ackwire_core::ChannelKind, InvalidApp> {
    use ackwire_core::ChannelKind as Core;
    Ok(match kind {
        ChannelKind::Unreliable => Core::Unreliable,
        ChannelKind::UnreliableSequenced => Core::UnreliableSequenced,
        ChannelKind::ReliableOrdered => Core::ReliableOrdered,
        ChannelKind::ReliableUnordered => Core::ReliableUnordered,
        // A kind the schema learned before this member's core did.
        _ => return Err(InvalidApp::ChannelKind(kind.as_str().to_owned())),
    })
}

/// The core's protocol id for `app`: FNV-1a of its declaration, so a handshake between
/// members of different applications (or versions, or layouts) fails even without the server.
fn protocol_id(app: &AppInfo) -> u64 {
    let text = format!("ackwire-room/1 {app}");
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Why a member could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemberError {
    /// The connection configuration is invalid.
    #[error("connection config: {0}")]
    Config(#[from] ConnectionConfigError),
    /// The application's declaration is invalid.
    #[error(transparent)]
    App(#[from] InvalidApp),
    /// The emulation settings are invalid.
    #[error("link emulation: {0}")]
    Emulation(#[from] ackwire_core::emulator::EmulatorError),
    /// The room name or the instance id breaks the name rule
    /// ([`is_valid_name`](crate::signalling::is_valid_name)).
    #[error("{what} \"{value}\": use {rule}", rule = crate::signalling::NAME_RULE)]
    Name {
        /// `room` or `instance`.
        what: &'static str,
        /// The value given.
        value: String,
    },
    /// Encrypted UDP links (`udp_keys`) need room for the 16-byte tag in every datagram.
    #[error(
        "max_datagram_size {size} leaves no room for the encryption tag: encrypted links need at least {min} bytes"
    )]
    DatagramTooSmall {
        /// The configured size.
        size: usize,
        /// The smallest size that works.
        min: usize,
    },
}

/// What a member sends on the signalling socket: a [`ClientFrame`] whose relayed payloads
/// are typed. It serializes to the JSON the server expects.
pub type MemberFrame = ClientFrame<SignalData, Vec<LinkReport>>;

/// A frame from the server as a member reads it: relayed signals as [`SignalData`]. The
/// dashboards' frames (`subscribed`, `stats`), which a member never asks for, are refused
/// before they become one ([`FrameError::NotForMembers`]).
pub type MemberServerFrame<'a> = ServerFrame<'a, SignalData>;

/// Why a signalling frame was refused. Nothing changed; the member counts it
/// ([`Member::unreadable_frames`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// Not a frame of the signalling protocol.
    #[error("unreadable server frame: {0}")]
    Malformed(serde_json::Error),
    /// A frame type this version does not know (a later server's), by its name.
    #[error("unknown server frame type \"{0}\"")]
    UnknownType(String),
    /// A frame for dashboards, which a member never subscribes to.
    #[error("a `{0}` frame is for dashboards, not room members")]
    NotForMembers(ServerFrameType),
    /// A relayed signal that is neither a description nor a candidate.
    #[error("signal from peer {from} is not an SDP or ICE candidate: {error}")]
    BadSignal {
        /// Sender.
        from: ServerId,
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
    /// A reliable message in it broke the member's framing (`docs/wire.md`, "Room members").
    #[error(transparent)]
    Delivery(#[from] DeliveryError),
}

/// Why a message was not sent. Nothing was queued anywhere, and nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// No peer with this id: never one of this member's, or gone.
    #[error("no peer {0}")]
    UnknownPeer(PeerId),
    /// An unreliable message to a peer whose link is not connected now (negotiating, lost,
    /// retrying): it would be stale by the time the link is back. (A reliable message is kept
    /// and carried to the next connection instead.)
    #[error("the link to peer {0} is not connected")]
    NotConnected(PeerId),
    /// The application declared no such channel.
    #[error("no channel {0} in the application's layout")]
    UnknownChannel(u8),
    /// Longer than the channel takes ([`Member::max_message_size`]).
    #[error("message of {len} bytes exceeds the {max}-byte maximum of channel {channel}")]
    TooLarge {
        /// The channel.
        channel: u8,
        /// The message length.
        len: usize,
        /// The channel's maximum.
        max: usize,
    },
    /// `send_latest` on a reliable channel: a reliable message is never replaced.
    #[error("channel {channel} is reliable: use send, not send_latest")]
    Reliable {
        /// The channel.
        channel: u8,
    },
    /// Backpressure: a budget for this peer is spent (its link is slower than the sender, or
    /// down, or the peer stopped reading) until it confirms what it has. Try again later;
    /// other peers are not affected.
    #[error(
        "{budget} to peer {peer} on channel {channel} is full ({used} of {limit}); try again later"
    )]
    Full {
        /// The peer.
        peer: PeerId,
        /// The channel.
        channel: u8,
        /// Which budget.
        budget: Budget,
        /// What it holds now (messages or bytes, as the budget counts).
        used: usize,
        /// What it holds at most.
        limit: usize,
    },
    /// The member left the room.
    #[error("the member left the room")]
    Closed,
}

/// Which budget refused a send ([`SendError::Full`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Budget {
    /// The reliable messages kept for the peer on the channel, counted: at most 1,024 (the
    /// core's window, so every copy fits a new connection).
    Messages,
    /// The bytes of reliable messages kept for the peer, all channels
    /// ([`MemberConfig::peer_budget`]).
    Bytes,
    /// An unreliable channel's queue in the link (messages queued faster than packets leave);
    /// counted in messages.
    Queue,
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Budget::Messages => "the reliable messages kept",
            Budget::Bytes => "the bytes of reliable messages kept",
            Budget::Queue => "the unreliable queue",
        })
    }
}

/// What a broadcast did, peer by peer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Broadcast {
    /// The peers it was queued for (on a reliable channel: kept for, whatever their link).
    pub sent: usize,
    /// The peers that refused it, each with why (a full queue: [`SendError::Full`]); every
    /// other peer got it. Empty (and not allocated) when everyone took it.
    pub refused: Vec<(PeerId, SendError)>,
}

/// A WebRTC peer connection attempt. A link gets a new one for every renegotiation, so
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
    /// This side could not put its keys on the link (its configuration cannot encrypt): no
    /// link in plaintext.
    Keying(String),
    /// The peer's messages broke the member's framing (a bug, or not an ackwire member).
    Protocol(String),
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
            Failure::Keying(_) => "keying",
            Failure::Protocol(_) => "protocol",
            Failure::NoDirectPath => "no_direct_path",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::IceFailed => f.write_str(
                "no network path to this player: ICE failed; this network needs a TURN server (see docs/deployment.md)",
            ),
            Failure::Timeout(after) => write!(
                f,
                "could not connect within {} s; this network may need a TURN server (see docs/deployment.md)",
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
            Failure::Keying(reason) => write!(f, "no link without encryption: {reason}"),
            Failure::Protocol(reason) => {
                write!(f, "the other player's program broke the protocol: {reason}")
            }
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
    /// Left the room, or the server refused it for good (see [`Event::Refused`]).
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
    /// Create a peer connection with the one pre-negotiated data channel
    /// ([`crate::webrtc::DATA_CHANNEL`]). With `offer`, create the offer and set it locally;
    /// its SDP and candidates come back as [`TransportEvent::LocalSignal`]. A browser driver
    /// may instead adopt the offering connection its page opened to `peer` while the driver
    /// loaded (its offer already sent): it then reports what that connection reached.
    OpenPeerConnection {
        /// The new transport.
        transport: TransportId,
        /// The peer, by its id in the current server session.
        peer: ServerId,
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
    /// The selected candidate pair's path ([`crate::webrtc::path_type`]).
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
    /// Close the signalling socket; ignore whatever it still reports. The member asks for a
    /// new one with [`OpenSignalling`](Self::OpenSignalling) when it wants one.
    CloseSignalling,
    /// Run this on a transport.
    Command(Command),
    /// Send this datagram; hand the buffer back with [`Member::recycle`] once sent, so the
    /// next one needs no allocation.
    Transmit {
        /// Where.
        route: Route,
        /// The bytes.
        datagram: Vec<u8>,
    },
    /// Tell the application.
    Event(Event),
}

/// Why a peer is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GoneReason {
    /// It left the room.
    Left,
    /// Its connection to the signalling server dropped and it did not come back in time.
    Lost,
    /// It did not come back after the signalling server restarted.
    NotBack,
    /// We left the room.
    WeLeft,
}

/// What the application hears.
// A link's snapshot is the big variant and a common one; events are few (a handful per
// second, plus messages), so boxing it would buy nothing but an allocation each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Event {
    /// The signalling socket's state changed.
    Signalling {
        /// The new state.
        state: SignallingState,
        /// Why, when it dropped.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// We are in the room, under this server id.
    Joined {
        /// Our id in this server session (for dashboards and logs).
        server_id: ServerId,
        /// Whether an earlier id was taken back.
        resumed: bool,
    },
    /// The server refused something we sent. With [`ErrorCode::AppMismatch`] (the room plays
    /// another application), [`ErrorCode::InvalidApp`] or a bad room name the member stops
    /// trying: signalling goes [`Closed`](SignallingState::Closed).
    Refused {
        /// Its code (`docs/signalling.md`, "Errors").
        code: ErrorCode,
        /// Its words.
        message: String,
    },
    /// A peer entered the room (a program instance this member had not met). A client of a
    /// host room hears of the host alone.
    PeerJoined {
        /// The member's id for it, for its whole life.
        peer: PeerId,
        /// Its id in the server's current session.
        server_id: ServerId,
        /// Browser or native.
        kind: PeerKind,
        /// A mesh peer, or the host or a client of a host room.
        role: Role,
    },
    /// A peer is gone for good; its link with it. For a client whose `role` here is
    /// [`Role::Host`], the host left (`Left`) or was lost (`Lost`): the client stays in the
    /// room, and links again when a host joins.
    PeerLeft {
        /// Who.
        peer: PeerId,
        /// Its last server id, if it had one.
        server_id: Option<ServerId>,
        /// Why.
        reason: GoneReason,
        /// What it was in the room.
        role: Role,
    },
    /// A link changed state (or learned its path or first ack).
    Link(LinkInfo),
    /// A message from a peer: exactly once and in order where its channel promises it.
    Message {
        /// From whom.
        peer: PeerId,
        /// On which of the application's channels.
        channel: u8,
        /// The bytes sent.
        bytes: Vec<u8>,
    },
    /// A reliable message handed back: its peer left for good (or forgot this member) before
    /// confirming it. It may or may not have arrived: a peer that left can no longer say.
    /// Every accepted reliable message is delivered or handed back, once, never both while
    /// the peer stays in the room; handed back ones come in the order sent.
    Undelivered {
        /// To whom.
        peer: PeerId,
        /// On which channel.
        channel: u8,
        /// The bytes sent.
        bytes: Vec<u8>,
    },
    /// Every link with its core stats, each [`MemberConfig::stats_period`].
    Stats {
        /// The links.
        links: Vec<LinkInfo>,
    },
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1e6).round() / 1e3)
}

fn opt_millis<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => millis(d, s),
        None => s.serialize_none(),
    }
}

/// A link as the application, the dashboards and logs see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkInfo {
    /// The peer at the other end.
    pub peer: PeerId,
    /// The peer's id in the current server session (`None` while it is not in the room).
    pub server_id: Option<ServerId>,
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
    /// WebRTC: the selected path (`host`, `srflx`, `prflx`, `relay`).
    pub candidate: Option<String>,
    /// How long the current attempt took to connect (connected), or has run so far
    /// (wanted, negotiating, open), in ms; 0 while lost or retrying.
    #[serde(serialize_with = "millis")]
    pub attempt_ms: Duration,
    /// Attempts since the link last connected.
    pub attempts: u32,
    /// When the current connection's first packet was acknowledged, on the driver's clock.
    #[serde(serialize_with = "opt_millis")]
    pub first_ack_at: Option<Duration>,
    /// Datagrams refused on this link.
    pub refused: u64,
    /// Reliable messages sent and not yet confirmed by the peer.
    pub unconfirmed: usize,
    /// The core's stats, once the protocol runs.
    pub stats: Option<Stats>,
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
    /// Datagrams of the link being polled, reused.
    ready: Vec<Vec<u8>>,
    /// What we had received from peers we forgot, by instance, newest last: meeting one again
    /// resumes counting its messages, so none is delivered twice.
    forgotten: VecDeque<(String, crate::delivery::Receiving)>,
    /// A forgotten peer's count was dropped to keep [`FORGOTTEN_KEPT`].
    forgotten_dropped: bool,
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
            ready: Vec::new(),
            forgotten: VecDeque::new(),
            forgotten_dropped: false,
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

    /// Sends `bytes` to `peer` on `channel`, with the channel's promise: an unreliable one
    /// sends it once, on a connected link; a reliable one delivers it exactly once (in order
    /// if ordered), across lost links too (sent while the link is down, it is kept for the
    /// next connection), or reports it [`Event::Undelivered`] when the peer goes for good.
    pub fn send(&mut self, peer: PeerId, channel: u8, bytes: &[u8]) -> Result<(), SendError> {
        let reliable = self.check_message(channel, bytes.len(), false)?;
        let i = self
            .links
            .iter()
            .position(|l| l.id == peer)
            .ok_or(SendError::UnknownPeer(peer))?;
        if !reliable && !self.links[i].is_connected() {
            return Err(SendError::NotConnected(peer));
        }
        // Queued only: the core paces its packets, and the next one leaves at its slot
        // (`poll_timeout` is unchanged), so nothing is driven here.
        self.links[i].send(channel, bytes, false, self.link_config.unreliable_queue_len)
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
        self.links[i].send(channel, bytes, true, self.link_config.unreliable_queue_len)
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
            if !reliable && !link.is_connected() {
                continue;
            }
            match link.send(channel, bytes, latest, queue_len) {
                Ok(()) => report.sent += 1,
                Err(e) => report.refused.push((link.id, e)),
            }
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
        if !self.links[i].is_connected() {
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
        let Some(i) = self.links.iter().position(|l| l.route() == Some(route)) else {
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
        self.drive(now);
        result
    }

    /// Leaves the room: every link says goodbye (keep driving until
    /// [`is_closed`](Self::is_closed)), the server hears `leave`, and what peers never
    /// confirmed comes back as [`Event::Undelivered`].
    pub fn close(&mut self, now: Duration) {
        self.leave_session();
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
        let (out, pool) = (&mut self.out, &mut self.pool);
        for closing in &mut self.closing {
            closing.poll(now, pool, out);
        }
        self.closing.retain(|c| {
            let done = c.is_done(now);
            if done && let Route::WebRtc(transport) = c.route {
                out.push_back(Output::Command(Command::ClosePeerConnection { transport }));
            }
            !done
        });
    }
}
