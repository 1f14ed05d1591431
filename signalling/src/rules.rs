//! The server's room rules, sans-IO: who may join a room, resume, replace, relay and leave,
//! and what everyone hears about it. A [`Room`] takes inputs (a join, a relay, a dropped
//! connection, another server's news) and returns what to do: frames to send and to whom,
//! connections to close, news for the other servers sharing the room ([`Effect`]). It holds
//! no socket, no task and no clock: the signal server (`ackwire-signal`, its `Hub` and Redis
//! broker) carries out the effects, and so does the room member's test world, so both speak
//! the same rules.
//!
//! Randomness and time stay with the carrier: a join brings its fresh id and token, a
//! dropped connection's grace is the carrier's timer, whose end it reports with
//! [`Room::expire`].
//!
//! ```
//! use ackwire_signalling::rules::{Effect, Join, Room};
//! use ackwire_signalling::{LeaveReason, PeerKind, ServerFrame};
//!
//! // Connections are whatever the carrier names them by: here, numbers.
//! let mut room: Room<u32> = Room::new("lobby", 8);
//! let a = room.join(Join::new(1, 10, "token-a", PeerKind::Browser)).unwrap();
//! assert!(a.peers.is_empty());
//! let b = room.join(Join::new(2, 11, "token-b", PeerKind::Browser)).unwrap();
//! assert_eq!(b.peers.len(), 1);
//! // A hears that B joined.
//! assert!(b.effects.iter().any(|e| matches!(
//!     e,
//!     Effect::Send { to, frame: ServerFrame::PeerJoined { .. } } if to == &[1]
//! )));
//! // B may signal A, on its own connection only.
//! assert!(room.relay(11, &2, 10).is_ok());
//! assert!(room.relay(11, &1, 10).is_err());
//! // B leaves: A hears it.
//! let effects = room.leave(11, &2, LeaveReason::Left);
//! assert!(effects.iter().any(|e| matches!(
//!     e,
//!     Effect::Send { to, frame: ServerFrame::PeerLeft { peer_id: 11, .. } } if to == &[1]
//! )));
//! ```

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::net::SocketAddr;

use crate::{
    AppInfo, ErrorCode, IceServer, LeaveReason, PeerId, PeerInfo, PeerKind, PublicKey, Resume,
    Role, RoomSnapshot, ServerFrame, Topology, VERSION, WebTransportInfo,
};

/// Peers that left a room lately, so a snapshot of another server read before their leave
/// cannot bring them back.
const GONE_KEPT: usize = 64;

/// A host room's cap unless the carrier sets another ([`Room::with_host_room_cap`]): a host
/// room is made for hundreds of clients, where a mesh stays at a few peers.
pub const DEFAULT_MAX_PEERS_PER_HOST_ROOM: usize = 256;

/// Why a rule refused. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// The room holds its maximum number of peers.
    #[error("room {0:?} is full")]
    RoomFull(String),
    /// The room plays another application than the join declares.
    #[error("{0}")]
    AppMismatch(Box<AppMismatch>),
    /// A resume named an unknown or expired peer, another server's, or a wrong token.
    #[error("cannot resume peer {0}: unknown, expired or wrong token")]
    ResumeRejected(PeerId),
    /// The connection does not speak for a peer of the room (never joined, or another
    /// connection took its peer over).
    #[error("join a room first")]
    NotJoined,
    /// The signal's target is not a connected peer of the sender's room.
    #[error("no connected peer {0} in your room")]
    UnknownPeer(PeerId),
    /// The join's role belongs in the other topology (a `peer` in a host room, a `host` or
    /// `client` in a mesh).
    #[error(
        "room {room:?} is a {topology} room; a {role} cannot join it (a mesh takes peers, a host room its host and clients)"
    )]
    TopologyMismatch {
        /// The room.
        room: String,
        /// Its topology.
        topology: Topology,
        /// The refused join's role.
        role: Role,
    },
    /// A second host joined a host room whose host is connected, or whose dropped host's
    /// seat is kept for that host's identity (its join ticket's) until its grace ends.
    #[error("room {room:?} has a host (peer {host}); join it as a client")]
    HostTaken {
        /// The room.
        room: String,
        /// Its host.
        host: PeerId,
    },
    /// A signal between two clients of a host room.
    #[error("peer {0} is another client of this host room: clients link to the host alone")]
    ClientToClient(PeerId),
    /// An `update` from a peer that is not its host room's host: only a host publishes a
    /// service.
    #[error("peer {0} is not a host room's host: only the host publishes a webtransport service")]
    NotHost(PeerId),
}

impl RuleError {
    /// The `code` of the error frame that tells the client.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::RoomFull(_) => ErrorCode::RoomFull,
            Self::AppMismatch(_) => ErrorCode::AppMismatch,
            Self::ResumeRejected(_) => ErrorCode::ResumeRejected,
            Self::NotJoined => ErrorCode::NotJoined,
            Self::UnknownPeer(_) => ErrorCode::UnknownPeer,
            Self::TopologyMismatch { .. } => ErrorCode::TopologyMismatch,
            Self::HostTaken { .. } => ErrorCode::HostTaken,
            Self::ClientToClient(_) => ErrorCode::ClientToClient,
            // The join's own check of the same field.
            Self::NotHost(_) => ErrorCode::InvalidJoin,
        }
    }

    /// [`RuleError::AppMismatch`]: `room` plays `room_app`, the join declared `joining`.
    pub fn app_mismatch(
        room: impl Into<String>,
        room_app: Option<AppInfo>,
        joining: Option<AppInfo>,
    ) -> RuleError {
        RuleError::AppMismatch(Box::new(AppMismatch {
            room: room.into(),
            room_app,
            joining,
        }))
    }
}

/// Both sides of a join refused for its application (boxed in [`RuleError::AppMismatch`]:
/// the other errors stay small).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppMismatch {
    /// The room.
    pub room: String,
    /// What the room plays (set by its first member); `None`: its members declare none.
    pub room_app: Option<AppInfo>,
    /// What the refused join declared.
    pub joining: Option<AppInfo>,
}

impl std::fmt::Display for AppMismatch {
    /// `room "lobby" plays pong v2 (channels: ...); this program is pong v1 (channels: ...)`:
    /// both sides named, so a player sees it is the wrong room or an old build, and a
    /// developer sees which field differs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "room {:?} ", self.room)?;
        match &self.room_app {
            Some(app) => write!(f, "plays {app}")?,
            None => f.write_str("plays no declared application (its members declare none)")?,
        }
        match &self.joining {
            Some(app) => write!(f, "; this program is {app}")?,
            None => f.write_str("; this program declares no application")?,
        }
        f.write_str(": join another room, or run what it plays")
    }
}

/// Why a connection is closed by the rules: another one speaks for its peer now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Takeover {
    /// Its peer resumed on another connection (of this server or another).
    Resumed,
    /// The same program instance joined again under a new id.
    Replaced,
}

/// News for the other servers sharing the room (through a broker); a server alone ignores
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shared {
    /// A peer of this server is in the room (a join, or one put back after the others took
    /// this server for dead): store it and tell the room, which plays `app`.
    Joined {
        /// The peer.
        info: PeerInfo,
        /// Its resume token.
        token: String,
        /// The room's application.
        app: Option<AppInfo>,
        /// A fresh join, whose place a broker reserved: stored only while that place is
        /// there (another join replacing the peer meanwhile drops it). `false` for a peer put
        /// back, whose record is stored whatever Redis holds.
        reserved: bool,
    },
    /// A peer of this server resumed with a new token: store it.
    Token {
        /// The peer.
        info: PeerInfo,
        /// Its new resume token (the old one is dead).
        token: String,
    },
    /// A peer of this server changed what the room sees of it (a host's new WebTransport
    /// service, by an `update` or in its resume): store it and tell the room.
    Updated {
        /// The peer, as it is now.
        info: PeerInfo,
        /// Its resume token (a resume's new one).
        token: String,
    },
    /// A peer left, was evicted, or was replaced (then wherever it lived: its server closes
    /// it).
    Left {
        /// The peer.
        peer_id: PeerId,
        /// Why.
        reason: LeaveReason,
    },
}

/// What the carrier of the rules does. `C` names a connection, as the carrier likes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Effect<C> {
    /// Send `frame` to each of `to`: the room's attached peers on this server (serialize it
    /// once).
    Send {
        /// The connections.
        to: Vec<C>,
        /// The frame.
        frame: ServerFrame<'static>,
    },
    /// Send `frame` to the room's dashboards: the same news, without any peer's address.
    Watchers(ServerFrame<'static>),
    /// Close `conn`: another connection speaks for its peer now, and the room must hear
    /// nothing more from it.
    Close {
        /// The connection.
        conn: C,
        /// Why.
        cause: Takeover,
    },
    /// Tell the other servers sharing the room.
    Shared(Shared),
}

/// A join as the rules take it: the carrier has validated the frame's fields (names, app,
/// kinds) and brings the fresh id and token.
#[derive(Debug, Clone)]
pub struct Join<C> {
    /// The joining connection.
    pub conn: C,
    /// The id a new peer gets (unused by a resume): the carrier's counter, or a broker's
    /// reservation.
    pub id: PeerId,
    /// A fresh secret resume token (a resume gets it too: every welcome rotates the token).
    pub token: String,
    /// Browser or native.
    pub kind: PeerKind,
    /// A mesh peer, or a host room's host or client: the room's first member fixes the
    /// room's topology by it (a resume keeps the role it had).
    pub role: Role,
    /// A native's UDP address.
    pub udp_addr: Option<SocketAddr>,
    /// A native's public key (only with `udp_addr`).
    pub udp_key: Option<PublicKey>,
    /// The program instance: a new peer with it replaces the room's old one.
    pub instance: Option<String>,
    /// A host's WebTransport service ([`PeerInfo::webtransport`]).
    pub webtransport: Option<WebTransportInfo>,
    /// Who the game's backend says it is (its join ticket's identity): a new peer with it
    /// replaces the room's old one, as the same instance does.
    pub identity: Option<String>,
    /// The application it plays: the first member fixes the room's, and a fresh join must
    /// declare the same (a resume is not checked).
    pub app: Option<AppInfo>,
    /// Earlier credentials, to take back an id (the instance is then ignored).
    pub resume: Option<Resume>,
    /// The tag of the address it connects from ([`PeerInfo::network`]); kept for natives
    /// (those with a `udp_addr`) only.
    pub network: Option<String>,
    /// The room's size and application were checked across servers already (a broker's
    /// reservation, which also fixed the room's application).
    pub reserved: bool,
    /// The peer the reservation found holding the join's identity across servers, which the
    /// join replaces even when this server has not heard of it yet.
    pub replaces: Option<PeerId>,
}

impl<C> Join<C> {
    /// A fresh join of a peer of `kind` on `conn`, new id `id`, token `token`; the other
    /// fields empty.
    pub fn new(conn: C, id: PeerId, token: impl Into<String>, kind: PeerKind) -> Join<C> {
        Join {
            conn,
            id,
            token: token.into(),
            kind,
            role: Role::Peer,
            udp_addr: None,
            udp_key: None,
            instance: None,
            webtransport: None,
            identity: None,
            app: None,
            resume: None,
            network: None,
            reserved: false,
            replaces: None,
        }
    }
}

/// A join the rules accepted: what its welcome says, and what the carrier does.
#[derive(Debug, Clone)]
pub struct Joined<C> {
    /// The peer's id.
    pub peer_id: PeerId,
    /// Its new resume token.
    pub token: String,
    /// True when an earlier id was taken back.
    pub resumed: bool,
    /// The other peers.
    pub peers: Vec<PeerInfo>,
    /// Its network tag, for its welcome (natives only).
    pub network: Option<String>,
    /// Frames to the others, connections to close, news to share.
    pub effects: Vec<Effect<C>>,
}

impl<C> Joined<C> {
    /// The welcome frame for the joiner in `room`, with its ICE servers.
    pub fn welcome<'a>(
        &'a self,
        room: &'a str,
        ice_servers: Cow<'a, [IceServer]>,
    ) -> ServerFrame<'a> {
        ServerFrame::Welcome {
            version: VERSION,
            room: Cow::Borrowed(room),
            peer_id: self.peer_id,
            token: Cow::Borrowed(&self.token),
            resumed: self.resumed,
            peers: self.peers.clone(),
            ice_servers,
            network: self.network.as_deref().map(Cow::Borrowed),
        }
    }
}

/// Where a relayed signal goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a, C> {
    /// To this connection of this server.
    Local(&'a C),
    /// To the server named here, which holds the target's connection.
    Remote(&'a str),
}

#[derive(Debug, Clone)]
struct Slot<C> {
    info: PeerInfo,
    /// Empty for another server's peer (that server and the broker keep it).
    token: String,
    /// `None` while the peer's connection is down (it may resume) and for another server's.
    conn: Option<C>,
    /// Bumped on every detach, so a stale grace cannot evict a resumed peer.
    generation: u64,
    /// The server holding the peer's connection, for another server's peer.
    home: Option<String>,
    /// Another server's peer whose server died: it waits out the grace for a resume.
    orphaned: bool,
}

/// One room: its peers (this server's, and with a broker the ones other servers hold), its
/// application, its topology, and the rules. `C` names a connection (the carrier's handle,
/// compared to tell whether a connection still speaks for its peer).
///
/// In a host room ([`Topology::Host`]) a client hears of the host alone and the host of
/// every client: a client's join or leave is one frame, to the host, however many clients
/// the room holds.
#[derive(Debug, Clone)]
pub struct Room<C> {
    name: String,
    max_peers: usize,
    max_host_peers: usize,
    peers: BTreeMap<PeerId, Slot<C>>,
    gone: VecDeque<PeerId>,
    /// Peers replaced lately (by their instance or identity joining again): another server's
    /// news of one, read before the replacement, cannot bring it back.
    replaced: VecDeque<PeerId>,
    app: Option<AppInfo>,
    topology: Topology,
    /// A host room's host, while it has one.
    host: Option<PeerId>,
}

/// A comparison that takes as long wherever the strings differ, so tokens cannot be guessed
/// byte by byte.
pub fn tokens_match(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl<C: Clone + PartialEq> Room<C> {
    /// An empty room of at most `max_peers` peers as a mesh, and
    /// [`DEFAULT_MAX_PEERS_PER_HOST_ROOM`] as a host room.
    pub fn new(name: impl Into<String>, max_peers: usize) -> Room<C> {
        Room {
            name: name.into(),
            max_peers,
            max_host_peers: DEFAULT_MAX_PEERS_PER_HOST_ROOM,
            peers: BTreeMap::new(),
            gone: VecDeque::new(),
            replaced: VecDeque::new(),
            app: None,
            topology: Topology::Mesh,
            host: None,
        }
    }

    /// The same room, holding at most `max` peers (its host included) when it is a host
    /// room.
    pub fn with_host_room_cap(self, max: usize) -> Room<C> {
        Room {
            max_host_peers: max,
            ..self
        }
    }

    /// How its members link (its first member's role fixed it).
    pub fn topology(&self) -> Topology {
        self.topology
    }

    /// A host room's host, while it has one.
    pub fn host(&self) -> Option<PeerId> {
        self.host
    }

    /// The room's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its peers, inside their grace and other servers' included.
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// Whether no peer is in it.
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// The application it plays (its first member's).
    pub fn app(&self) -> Option<&AppInfo> {
        self.app.as_ref()
    }

    /// Whether a peer of this server is in it.
    pub fn has_local(&self) -> bool {
        self.peers.values().any(|p| p.home.is_none())
    }

    /// Whether `conn` speaks for `peer_id`: it does until another connection takes the peer
    /// over (a resume) or replaces it (the same instance joining).
    pub fn speaks_for(&self, peer_id: PeerId, conn: &C) -> bool {
        self.peers
            .get(&peer_id)
            .and_then(|s| s.conn.as_ref())
            .is_some_and(|c| c == conn)
    }

    /// The connection `peer_id` is attached on here, if any.
    pub fn conn_of(&self, peer_id: PeerId) -> Option<&C> {
        self.peers.get(&peer_id).and_then(|s| s.conn.as_ref())
    }

    /// The peer that joined with `instance`: a new join of it replaces that one.
    pub fn instance_peer(&self, instance: Option<&str>) -> Option<PeerId> {
        let instance = instance?;
        self.peers
            .values()
            .find(|p| p.info.instance.as_deref() == Some(instance))
            .map(|p| p.info.id)
    }

    /// The peer that joined with `identity` (its ticket's): a new join of it replaces that one.
    pub fn identity_peer(&self, identity: Option<&str>) -> Option<PeerId> {
        let identity = identity?;
        self.peers
            .values()
            .find(|p| p.info.identity.as_deref() == Some(identity))
            .map(|p| p.info.id)
    }

    /// The peers a fresh join of program `instance` with `identity` replaces: the one of its
    /// instance and the one of its identity (one and the same, usually), in id order.
    fn replaced_by(&self, instance: Option<&str>, identity: Option<&str>) -> Vec<PeerId> {
        let mut ids: Vec<PeerId> = self
            .instance_peer(instance)
            .into_iter()
            .chain(self.identity_peer(identity))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Whether this server holds `peer_id` (its connection is, or was until it dropped, here).
    pub fn holds_local(&self, peer_id: PeerId) -> bool {
        self.peers.get(&peer_id).is_some_and(|s| s.home.is_none())
    }

    /// The room as a dashboard sees it: no peer's address.
    pub fn snapshot(&self) -> RoomSnapshot {
        RoomSnapshot {
            room: self.name.clone(),
            app: self.app.clone(),
            topology: self.topology,
            peers: self.peers.values().map(|p| p.info.watched()).collect(),
        }
    }

    /// This server's own peers and their tokens (what a broker stores).
    pub fn local_peers(&self) -> impl Iterator<Item = (&PeerInfo, &str)> {
        self.peers
            .values()
            .filter(|p| p.home.is_none())
            .map(|p| (&p.info, p.token.as_str()))
    }

    /// The servers this room's mirrored peers live on (orphans aside).
    pub fn remote_homes(&self) -> impl Iterator<Item = &str> {
        self.peers
            .values()
            .filter(|p| !p.orphaned)
            .filter_map(|p| p.home.as_deref())
    }

    /// The attached connections, but `except`'s.
    fn conns(&self, except: Option<PeerId>) -> Vec<C> {
        self.peers
            .iter()
            .filter(|(id, _)| Some(**id) != except)
            .filter_map(|(_, s)| s.conn.clone())
            .collect()
    }

    fn room(&self) -> Cow<'static, str> {
        Cow::Owned(self.name.clone())
    }

    /// The connections that hear of `about`'s join or leave: everyone else's in a mesh; in a
    /// host room the host's alone for a client, every client's for the host.
    fn audience(&self, about: &PeerInfo) -> Vec<C> {
        if self.topology == Topology::Host && about.role != Role::Host {
            return self
                .host
                .and_then(|host| self.peers.get(&host))
                .and_then(|s| s.conn.clone())
                .into_iter()
                .collect();
        }
        self.conns(Some(about.id))
    }

    /// Whether `viewer` sees `peer` in its peer list (and may signal it): everyone sees
    /// everyone in a mesh; in a host room, the host and a client see each other.
    fn sees(&self, viewer: Role, peer: Role) -> bool {
        self.topology == Topology::Mesh || viewer == Role::Host || peer == Role::Host
    }

    /// Puts a peer into the room; the first one fixes the room's topology.
    fn insert_slot(&mut self, slot: Slot<C>) {
        if self.peers.is_empty() {
            self.topology = slot.info.role.topology();
        }
        if slot.info.role == Role::Host {
            self.host = Some(slot.info.id);
        }
        self.gone.retain(|id| *id != slot.info.id);
        self.peers.insert(slot.info.id, slot);
    }

    /// `peer_joined` to those who see it (and, without addresses, to the watchers).
    fn announce_joined(&self, info: &PeerInfo, effects: &mut Vec<Effect<C>>) {
        effects.push(Effect::Send {
            to: self.audience(info),
            frame: ServerFrame::PeerJoined {
                room: self.room(),
                peer: info.clone(),
            },
        });
        effects.push(Effect::Watchers(ServerFrame::PeerJoined {
            room: self.room(),
            peer: info.watched(),
        }));
    }

    /// `peer_updated` to those who see it: not to the watchers, who see nothing it can change
    /// (its WebTransport service).
    fn announce_updated(&self, info: &PeerInfo, effects: &mut Vec<Effect<C>>) {
        effects.push(Effect::Send {
            to: self.audience(info),
            frame: ServerFrame::PeerUpdated {
                room: self.room(),
                peer: info.clone(),
            },
        });
    }

    /// `peer_left` to those who saw it and to the watchers (no address in it: one frame for
    /// both).
    fn announce_left(&self, left: &PeerInfo, reason: LeaveReason, effects: &mut Vec<Effect<C>>) {
        let frame = ServerFrame::PeerLeft {
            room: self.room(),
            peer_id: left.id,
            reason,
        };
        effects.push(Effect::Send {
            to: self.audience(left),
            frame: frame.clone(),
        });
        effects.push(Effect::Watchers(frame));
    }

    /// Remembers that `peer_id` was replaced (see [`Room::replaced`]).
    fn note_replaced(&mut self, peer_id: PeerId) {
        if self.replaced.len() == GONE_KEPT {
            self.replaced.pop_front();
        }
        self.replaced.push_back(peer_id);
    }

    fn forget_peer(&mut self, peer_id: PeerId) -> Option<Slot<C>> {
        let slot = self.peers.remove(&peer_id)?;
        if self.host == Some(peer_id) {
            self.host = None;
        }
        if self.gone.len() == GONE_KEPT {
            self.gone.pop_front();
        }
        self.gone.push_back(peer_id);
        Some(slot)
    }

    fn welcome_of(&self, peer_id: PeerId, resumed: bool, effects: Vec<Effect<C>>) -> Joined<C> {
        let slot = &self.peers[&peer_id];
        // A client's welcome names the host alone: one lookup, not a walk of the room.
        let peers = if self.topology == Topology::Host && slot.info.role != Role::Host {
            self.host
                .and_then(|host| self.peers.get(&host))
                .map(|host| host.info.clone())
                .into_iter()
                .collect()
        } else {
            self.peers
                .values()
                .filter(|p| p.info.id != peer_id)
                .map(|p| p.info.clone())
                .collect()
        };
        Joined {
            peer_id,
            token: slot.token.clone(),
            resumed,
            peers,
            network: slot.info.network.clone(),
            effects,
        }
    }

    // ----- a connection's frames -----

    /// A join: a resume (with `join.resume`) takes back its peer, closing the connection
    /// that held it and rotating the token; a fresh join enters the room as a new peer,
    /// replacing the peer of its program instance and the peer of its identity. Refused when the room is full, plays
    /// another application, or the resume's token is wrong.
    pub fn join(&mut self, join: Join<C>) -> Result<Joined<C>, RuleError> {
        match join.resume.clone() {
            Some(resume) => self.resume(join, &resume),
            None => self.enter(join),
        }
    }

    fn resume(&mut self, join: Join<C>, resume: &Resume) -> Result<Joined<C>, RuleError> {
        let slot = self
            .peers
            .get_mut(&resume.peer_id)
            .filter(|s| s.home.is_none() && tokens_match(&s.token, &resume.token))
            .ok_or(RuleError::ResumeRejected(resume.peer_id))?;
        let mut effects = Vec::new();
        if let Some(old) = slot.conn.replace(join.conn) {
            effects.push(Effect::Close {
                conn: old,
                cause: Takeover::Resumed,
            });
        }
        if join.udp_addr.is_some() {
            slot.info.udp_addr = join.udp_addr;
            slot.info.udp_key = join.udp_key;
        }
        // A host that rotated its certificate while away brings its new service: its clients
        // hear it as from an `update`.
        let updated = join.webtransport.is_some()
            && slot.info.role == Role::Host
            && slot.info.webtransport != join.webtransport;
        if updated {
            slot.info.webtransport = join.webtransport;
        }
        // It may come back from elsewhere (another network); newcomers see where.
        slot.info.network = slot.info.udp_addr.and(join.network);
        // Every welcome carries a new token and the one just used is dead: a token that
        // leaked is worth at most one takeover, which its owner notices at once.
        slot.token = join.token;
        let (info, token) = (slot.info.clone(), slot.token.clone());
        if updated {
            effects.push(Effect::Shared(Shared::Updated { info, token }));
            let info = &self.peers[&resume.peer_id].info;
            self.announce_updated(info, &mut effects);
        } else {
            effects.push(Effect::Shared(Shared::Token { info, token }));
        }
        Ok(self.welcome_of(resume.peer_id, true, effects))
    }

    fn enter(&mut self, join: Join<C>) -> Result<Joined<C>, RuleError> {
        // Who holds the identity is the reservation's word when there is one: it ordered the
        // joins of every server, and this server may not have heard of that peer yet (nor, of
        // two joins here, in the reservations' order).
        let identity = join.identity.as_deref().filter(|_| !join.reserved);
        let mut replaced = self.replaced_by(join.instance.as_deref(), identity);
        let mut elsewhere = None;
        if let Some(id) = join.replaces.filter(|id| !replaced.contains(id)) {
            match self.peers.contains_key(&id) {
                true => replaced.push(id),
                false => elsewhere = Some(id),
            }
        }
        // The first member fixes the room's application (the peers it replaces do not
        // count); a reservation checked it across servers, and fixed it there.
        let others = self.peers.len() - replaced.len();
        let fixes_app = join.reserved || others == 0;
        if !fixes_app && self.app != join.app {
            return Err(RuleError::app_mismatch(
                &self.name,
                self.app.clone(),
                join.app,
            ));
        }
        let topology = join.role.topology();
        let vacated = self.seat(join.role, &replaced)?;
        let cap = match topology {
            Topology::Mesh => self.max_peers,
            Topology::Host => self.max_host_peers,
        };
        if !join.reserved && others - usize::from(vacated.is_some()) >= cap {
            return Err(RuleError::RoomFull(self.name.clone()));
        }
        // Nothing below can fail.
        if fixes_app {
            self.app = join.app;
        }
        if others == 0 {
            self.topology = topology;
        }
        let mut effects = Vec::new();
        if let Some(old_host) = vacated {
            effects.extend(self.evict(old_host, LeaveReason::Lost));
        }
        let mut replaced_info = Vec::new();
        for old_id in replaced {
            self.note_replaced(old_id);
            let Some(old) = self.forget_peer(old_id) else {
                continue;
            };
            replaced_info.push(old.info);
            if let Some(conn) = old.conn {
                effects.push(Effect::Close {
                    conn,
                    cause: Takeover::Replaced,
                });
            }
            // Its server closes it, wherever it is.
            effects.push(Effect::Shared(Shared::Left {
                peer_id: old_id,
                reason: LeaveReason::Replaced,
            }));
        }
        if let Some(old_id) = elsewhere {
            // Nobody here heard of it: only its own server, told through the broker.
            self.note_replaced(old_id);
            effects.push(Effect::Shared(Shared::Left {
                peer_id: old_id,
                reason: LeaveReason::Replaced,
            }));
        }
        let info = PeerInfo {
            id: join.id,
            kind: join.kind,
            role: join.role,
            udp_addr: join.udp_addr,
            instance: join.instance,
            udp_key: join.udp_key,
            // Natives only: they alone choose a path by it.
            network: join.udp_addr.and(join.network),
            identity: join.identity,
            webtransport: join.webtransport.filter(|_| join.role == Role::Host),
        };
        effects.push(Effect::Shared(Shared::Joined {
            info: info.clone(),
            token: join.token.clone(),
            app: self.app.clone(),
            reserved: join.reserved,
        }));
        for old in &replaced_info {
            self.announce_left(old, LeaveReason::Replaced, &mut effects);
        }
        let peer_id = info.id;
        self.insert_slot(Slot {
            info: info.clone(),
            token: join.token,
            conn: Some(join.conn),
            generation: 0,
            home: None,
            orphaned: false,
        });
        self.announce_joined(&info, &mut effects);
        Ok(self.welcome_of(peer_id, false, effects))
    }

    /// Whether a fresh join as `role` fits the room's topology and its host's seat, the peers
    /// it replaces (`replaced`: its program's, its identity's) aside: the dropped host whose
    /// seat it takes, if any.
    fn seat(&self, role: Role, replaced: &[PeerId]) -> Result<Option<PeerId>, RuleError> {
        let others = self.peers.len() - replaced.len();
        if others > 0 && role.topology() != self.topology {
            return Err(RuleError::TopologyMismatch {
                room: self.name.clone(),
                topology: self.topology,
                role,
            });
        }
        // A host whose connection is down (inside its grace, or on a dead server) gives its
        // seat to a new host, so a host that crashed and restarted need not wait the grace
        // out; a connected one keeps it. A host the game's backend named (its ticket's
        // identity) gives it to that identity alone, which `replaced` already holds: a
        // stranger's host ticket waiting for a blip takes no seat.
        let seat = self
            .host
            .filter(|host| role == Role::Host && !replaced.contains(host));
        match seat.and_then(|host| self.peers.get(&host)) {
            Some(old)
                if old.conn.is_some()
                    || (old.home.is_some() && !old.orphaned)
                    || old.info.identity.is_some() =>
            {
                Err(RuleError::HostTaken {
                    room: self.name.clone(),
                    host: old.info.id,
                })
            }
            Some(old) => Ok(Some(old.info.id)),
            None => Ok(None),
        }
    }

    /// For a carrier that counts a room's places elsewhere before the join (a broker's
    /// reservation): whether a fresh join as `role` from program `instance` with `identity`
    /// fits the room's topology and its host's seat (refused as [`Room::join`] would refuse
    /// it, with `topology_mismatch` or `host_taken`), and the peers whose places it would
    /// take: its program's old peer, its identity's, a dropped host's seat.
    pub fn places_taken(
        &self,
        role: Role,
        instance: Option<&str>,
        identity: Option<&str>,
    ) -> Result<Vec<PeerId>, RuleError> {
        let replaced = self.replaced_by(instance, identity);
        let vacated = self.seat(role, &replaced)?;
        Ok(replaced.into_iter().chain(vacated).collect())
    }

    /// Where a signal from `from` on `conn` to `to` goes: to an attached peer of this room
    /// (not the sender), here or on another server.
    pub fn relay(&self, from: PeerId, conn: &C, to: PeerId) -> Result<Route<'_, C>, RuleError> {
        if !self.speaks_for(from, conn) {
            return Err(RuleError::NotJoined);
        }
        let slot = self
            .peers
            .get(&to)
            .filter(|_| to != from)
            .ok_or(RuleError::UnknownPeer(to))?;
        let sender = self.peers[&from].info.role;
        if !self.sees(sender, slot.info.role) {
            return Err(RuleError::ClientToClient(to));
        }
        match (&slot.home, &slot.conn) {
            (Some(home), _) => Ok(Route::Remote(home)),
            (None, Some(conn)) => Ok(Route::Local(conn)),
            (None, None) => Err(RuleError::UnknownPeer(to)),
        }
    }

    /// A stats report from `from` on `conn`: accepted while `conn` speaks for it.
    pub fn report(&self, from: PeerId, conn: &C) -> Result<(), RuleError> {
        if self.speaks_for(from, conn) {
            Ok(())
        } else {
            Err(RuleError::NotJoined)
        }
    }

    /// An `update` from `peer_id` on `conn`: a host room's host replaces its WebTransport
    /// service (`None`: it serves none any more; the carrier checked the service's shape), and
    /// whoever heard of its join hears `peer_updated` (its clients; nobody when it is the
    /// same). Refused unless `conn` speaks for a host ([`RuleError::NotHost`]): nothing
    /// changes.
    pub fn update(
        &mut self,
        peer_id: PeerId,
        conn: &C,
        webtransport: Option<WebTransportInfo>,
    ) -> Result<Vec<Effect<C>>, RuleError> {
        if !self.speaks_for(peer_id, conn) {
            return Err(RuleError::NotJoined);
        }
        let slot = self.peers.get_mut(&peer_id).ok_or(RuleError::NotJoined)?;
        if slot.info.role != Role::Host {
            return Err(RuleError::NotHost(peer_id));
        }
        let mut effects = Vec::new();
        if slot.info.webtransport == webtransport {
            return Ok(effects);
        }
        slot.info.webtransport = webtransport;
        effects.push(Effect::Shared(Shared::Updated {
            info: slot.info.clone(),
            token: slot.token.clone(),
        }));
        let info = &self.peers[&peer_id].info;
        self.announce_updated(info, &mut effects);
        Ok(effects)
    }

    /// `peer_id` on `conn` leaves now (a `leave`, a clean close): the room hears it. Nothing
    /// when another connection took the peer over or replaced it meanwhile.
    pub fn leave(&mut self, peer_id: PeerId, conn: &C, reason: LeaveReason) -> Vec<Effect<C>> {
        if self.speaks_for(peer_id, conn) {
            self.evict(peer_id, reason)
        } else {
            Vec::new()
        }
    }

    /// `peer_id`'s connection `conn` dropped: the peer stays for the carrier's grace, in
    /// which it may resume. The generation to give [`Room::expire`] when the grace ends;
    /// `None` when `conn` no longer spoke for it.
    pub fn detach(&mut self, peer_id: PeerId, conn: &C) -> Option<u64> {
        let slot = self.peers.get_mut(&peer_id)?;
        if slot.conn.as_ref() != Some(conn) {
            return None;
        }
        slot.conn = None;
        slot.generation += 1;
        Some(slot.generation)
    }

    /// The grace of the detach that returned `generation` is over: the peer is evicted
    /// (`lost`) unless it resumed (or dropped again) meanwhile.
    pub fn expire(&mut self, peer_id: PeerId, generation: u64) -> Vec<Effect<C>> {
        let expired = self
            .peers
            .get(&peer_id)
            .is_some_and(|s| s.home.is_none() && s.conn.is_none() && s.generation == generation);
        if expired {
            self.evict(peer_id, LeaveReason::Lost)
        } else {
            Vec::new()
        }
    }

    /// Removes `peer_id` and tells the room (and, for this server's peer, the others).
    pub fn evict(&mut self, peer_id: PeerId, reason: LeaveReason) -> Vec<Effect<C>> {
        let mut effects = Vec::new();
        let Some(slot) = self.forget_peer(peer_id) else {
            return effects;
        };
        if slot.home.is_none() {
            effects.push(Effect::Shared(Shared::Left { peer_id, reason }));
        }
        self.announce_left(&slot.info, reason, &mut effects);
        effects
    }

    // ----- other servers' news (with a broker) -----

    /// The peers other servers hold, as the broker lists them (`(info, home)`), when this
    /// server starts serving the room (`prune: false`) or after the broker was out of reach
    /// (`prune: true`: mirrored peers it no longer lists are gone). `app`: the room's
    /// application as the broker holds it, if it holds one. New peers are announced.
    pub fn sync(
        &mut self,
        me: &str,
        listed: Vec<(PeerInfo, String)>,
        app: Option<Option<AppInfo>>,
        prune: bool,
    ) -> Vec<Effect<C>> {
        if let Some(app) = app {
            self.app = app;
        }
        let ids: HashSet<PeerId> = listed.iter().map(|(info, _)| info.id).collect();
        let mut joined = Vec::new();
        for (info, home) in listed {
            if home == me || self.gone.contains(&info.id) || self.replaced.contains(&info.id) {
                continue;
            }
            match self.peers.get_mut(&info.id) {
                Some(slot) if slot.home.is_some() => {
                    slot.home = Some(home);
                    slot.info = info;
                }
                Some(_) => {}
                None => {
                    joined.push(info.clone());
                    self.insert_slot(remote(info, home));
                }
            }
        }
        let left: Vec<PeerId> = self
            .peers
            .values()
            .filter(|p| prune && p.home.is_some() && !ids.contains(&p.info.id))
            .map(|p| p.info.id)
            .collect();
        let left: Vec<PeerInfo> = left
            .into_iter()
            .filter_map(|id| self.forget_peer(id))
            .map(|slot| slot.info)
            .collect();
        let mut effects = Vec::new();
        for info in &joined {
            self.announce_joined(info, &mut effects);
        }
        for info in &left {
            self.announce_left(info, LeaveReason::Lost, &mut effects);
        }
        effects
    }

    /// Another server's peer joined; `app` is the room's application as that server saw it
    /// once the broker accepted the join (the room may have changed hands since this server
    /// last looked).
    pub fn remote_joined(
        &mut self,
        info: PeerInfo,
        home: String,
        app: Option<AppInfo>,
    ) -> Vec<Effect<C>> {
        self.app = app;
        if self.replaced.contains(&info.id) {
            return Vec::new();
        }
        match self.peers.get_mut(&info.id) {
            Some(slot) => {
                if slot.home.is_some() {
                    slot.home = Some(home);
                    slot.info = info;
                }
                Vec::new()
            }
            None => self.add_remote(info, home),
        }
    }

    fn add_remote(&mut self, info: PeerInfo, home: String) -> Vec<Effect<C>> {
        self.insert_slot(remote(info.clone(), home));
        let mut effects = Vec::new();
        self.announce_joined(&info, &mut effects);
        effects
    }

    /// A peer left on another server (or was evicted there, or replaced by a new join of its
    /// program). When it is this server's own and was not replaced, the others took this
    /// server for dead: it is put back ([`Shared::Joined`]).
    pub fn remote_left(&mut self, peer_id: PeerId, reason: LeaveReason) -> Vec<Effect<C>> {
        let mut effects = Vec::new();
        if reason == LeaveReason::Replaced {
            self.note_replaced(peer_id);
        }
        let Some(slot) = self.peers.get(&peer_id) else {
            return effects;
        };
        if slot.home.is_none() {
            if reason != LeaveReason::Replaced {
                return vec![Effect::Shared(Shared::Joined {
                    info: slot.info.clone(),
                    token: slot.token.clone(),
                    app: self.app.clone(),
                    reserved: false,
                })];
            }
            if let Some(conn) = &slot.conn {
                effects.push(Effect::Close {
                    conn: conn.clone(),
                    cause: Takeover::Replaced,
                });
            }
        }
        if let Some(slot) = self.forget_peer(peer_id) {
            self.announce_left(&slot.info, reason, &mut effects);
        }
        effects
    }

    /// Another server's peer changed what the room sees of it ([`Shared::Updated`] there):
    /// the mirror takes `info`, and those who see it here hear `peer_updated`. Nothing for a
    /// peer this server holds or does not know.
    pub fn remote_updated(&mut self, info: PeerInfo) -> Vec<Effect<C>> {
        let mut effects = Vec::new();
        let Some(slot) = self.peers.get_mut(&info.id) else {
            return effects;
        };
        if slot.home.is_none() || slot.info == info {
            return effects;
        }
        slot.info = info.clone();
        self.announce_updated(&info, &mut effects);
        effects
    }

    /// A peer resumed on the server `home`: if it was this server's, its old connection is
    /// closed here.
    pub fn remote_moved(&mut self, info: PeerInfo, home: String) -> Vec<Effect<C>> {
        let Some(slot) = self.peers.get_mut(&info.id) else {
            return self.add_remote(info, home);
        };
        let mut effects = Vec::new();
        if let Some(conn) = slot.conn.take() {
            effects.push(Effect::Close {
                conn,
                cause: Takeover::Resumed,
            });
        }
        slot.home = Some(home);
        slot.info = info;
        slot.token.clear();
        slot.orphaned = false;
        slot.generation += 1;
        effects
    }

    /// A peer taken over from another server (its resume, checked by the broker) lives here
    /// now, on `conn`, with `token`: the room sees no leave and no join.
    pub fn adopt(
        &mut self,
        mut info: PeerInfo,
        token: String,
        conn: C,
        network: Option<String>,
    ) -> Joined<C> {
        info.network = info.udp_addr.and(network);
        let peer_id = info.id;
        self.insert_slot(Slot {
            info,
            token,
            conn: Some(conn),
            generation: 0,
            home: None,
            orphaned: false,
        });
        self.welcome_of(peer_id, true, Vec::new())
    }

    /// These servers died: their peers here wait out the grace for a resume elsewhere. The
    /// peers newly orphaned, with their server; the carrier evicts each after the grace
    /// unless it resumed.
    pub fn orphan(&mut self, dead: &HashSet<String>) -> Vec<(PeerId, String)> {
        let mut orphans = Vec::new();
        for slot in self.peers.values_mut() {
            if let Some(home) = slot.home.as_ref().filter(|h| dead.contains(*h))
                && !slot.orphaned
            {
                slot.orphaned = true;
                orphans.push((slot.info.id, home.clone()));
            }
        }
        orphans
    }
}

fn remote<C>(info: PeerInfo, home: String) -> Slot<C> {
    Slot {
        info,
        token: String::new(),
        conn: None,
        generation: 0,
        home: Some(home),
        orphaned: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChannelKind;

    type R = Room<u32>;

    fn browser(conn: u32, id: PeerId) -> Join<u32> {
        Join::new(conn, id, format!("t{id}"), PeerKind::Browser)
    }

    /// The frames `effects` send to `conn`.
    fn sent_to(effects: &[Effect<u32>], conn: u32) -> Vec<ServerFrame<'static>> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Send { to, frame } if to.contains(&conn) => Some(frame.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_join_to_a_full_room_is_refused_with_room_full_and_changes_nothing() {
        let mut room = R::new("r", 2);
        room.join(browser(1, 1)).unwrap();
        room.join(browser(2, 2)).unwrap();
        let err = room.join(browser(3, 3)).unwrap_err();
        assert_eq!(err, RuleError::RoomFull("r".into()));
        assert_eq!(err.code(), ErrorCode::RoomFull);
        assert_eq!(room.len(), 2);
        // A place taken across servers (a reservation) was counted there.
        let reserved = Join {
            reserved: true,
            ..browser(3, 3)
        };
        assert!(room.join(reserved).is_ok());
    }

    #[test]
    fn a_resume_rotates_the_token_closes_the_old_connection_and_the_old_token_is_refused() {
        let mut room = R::new("r", 8);
        let a = room.join(browser(1, 1)).unwrap();
        let b = room.join(browser(2, 2)).unwrap();
        let resume = |token: &str| Join {
            resume: Some(Resume {
                peer_id: b.peer_id,
                token: token.into(),
            }),
            ..Join::new(3, 0, "fresh", PeerKind::Browser)
        };
        let back = room.join(resume(&b.token)).unwrap();
        assert!(back.resumed);
        assert_eq!(back.peer_id, b.peer_id);
        assert_eq!(back.token, "fresh");
        assert_eq!(back.peers.len(), 1);
        assert!(back.effects.contains(&Effect::Close {
            conn: 2,
            cause: Takeover::Resumed
        }));
        // Nobody hears a thing: links carry on.
        assert!(sent_to(&back.effects, 1).is_empty());
        // The token just used is dead.
        let again = Join {
            conn: 4,
            ..resume(&b.token)
        };
        assert_eq!(
            room.join(again).unwrap_err(),
            RuleError::ResumeRejected(b.peer_id)
        );
        // The old connection no longer speaks for its peer; the new one does.
        assert_eq!(
            room.relay(b.peer_id, &2, a.peer_id),
            Err(RuleError::NotJoined)
        );
        assert!(room.leave(b.peer_id, &2, LeaveReason::Left).is_empty());
        assert_eq!(room.relay(b.peer_id, &3, a.peer_id), Ok(Route::Local(&1)));
    }

    #[test]
    fn a_fresh_join_of_the_same_instance_replaces_the_old_session() {
        let mut room = R::new("r", 2);
        room.join(browser(1, 1)).unwrap();
        let same = |conn, id| Join {
            instance: Some("prog".into()),
            ..browser(conn, id)
        };
        room.join(same(2, 2)).unwrap();
        // Its place is the old one's: the full room takes it.
        let new = room.join(same(3, 3)).unwrap();
        assert!(!new.resumed);
        assert_replaced(&new.effects, 2, 2);
        let kinds: Vec<_> = sent_to(&new.effects, 1)
            .iter()
            .map(ServerFrame::frame_type)
            .collect();
        assert_eq!(kinds.len(), 2);
        assert!(matches!(
            &sent_to(&new.effects, 1)[0],
            ServerFrame::PeerLeft {
                peer_id: 2,
                reason: LeaveReason::Replaced,
                ..
            }
        ));
        assert_eq!(room.relay(2, &2, 1), Err(RuleError::NotJoined));
        assert_eq!(room.len(), 2);
    }

    /// `effects` close connection `conn` and tell the room that `peer_id` left, replaced.
    fn assert_replaced(effects: &[Effect<u32>], conn: u32, peer_id: PeerId) {
        assert!(effects.contains(&Effect::Close {
            conn,
            cause: Takeover::Replaced
        }));
        assert!(effects.contains(&Effect::Shared(Shared::Left {
            peer_id,
            reason: LeaveReason::Replaced
        })));
    }

    #[test]
    fn a_fresh_join_of_the_same_identity_replaces_the_older_member_whatever_its_instance() {
        let mut room = R::new("r", 2);
        room.join(browser(1, 1)).unwrap();
        let user = |conn, id, instance: &str| Join {
            instance: Some(instance.into()),
            identity: Some("user-7".into()),
            ..browser(conn, id)
        };
        room.join(user(2, 2, "tab-a")).unwrap();
        assert_eq!(room.identity_peer(Some("user-7")), Some(2));
        assert_eq!(
            room.places_taken(Role::Peer, Some("tab-b"), Some("user-7")),
            Ok(vec![2])
        );
        // Another program (a second tab) of the same player: its place is the old one's.
        let new = room.join(user(3, 3, "tab-b")).unwrap();
        assert_replaced(&new.effects, 2, 2);
        assert!(matches!(
            &sent_to(&new.effects, 1)[..],
            [
                ServerFrame::PeerLeft {
                    peer_id: 2,
                    reason: LeaveReason::Replaced,
                    ..
                },
                ServerFrame::PeerJoined { .. }
            ]
        ));
        assert_eq!(room.len(), 2);
        assert_eq!(room.identity_peer(Some("user-7")), Some(3));
        // Its identity is in what members see, not in what dashboards see.
        assert_eq!(new.peers[0].identity, None);
        let joined = sent_to(&new.effects, 1)
            .into_iter()
            .find_map(|f| match f {
                ServerFrame::PeerJoined { peer, .. } => Some(peer),
                _ => None,
            })
            .unwrap();
        assert_eq!(joined.identity.as_deref(), Some("user-7"));
        assert!(room.snapshot().peers.iter().all(|p| p.identity.is_none()));
        // Another identity replaces nobody, and the room is full.
        let other = Join {
            identity: Some("user-8".into()),
            ..browser(4, 4)
        };
        assert_eq!(
            room.join(other).unwrap_err(),
            RuleError::RoomFull("r".into())
        );
    }

    #[test]
    fn a_join_replaces_the_identity_the_reservation_found_on_another_server() {
        let mut room = R::new("r", 8);
        room.join(browser(1, 1)).unwrap();
        // The reservation says peer 9, which this server has not heard of, held the identity.
        let join = Join {
            identity: Some("user-7".into()),
            reserved: true,
            replaces: Some(9),
            ..browser(2, 2)
        };
        let new = room.join(join).unwrap();
        assert!(new.effects.contains(&Effect::Shared(Shared::Left {
            peer_id: 9,
            reason: LeaveReason::Replaced
        })));
        // Nobody here heard of it, so nobody hears it leave.
        assert!(
            sent_to(&new.effects, 1)
                .iter()
                .all(|f| !matches!(f, ServerFrame::PeerLeft { .. }))
        );
        // Its server's news of it, sent before it learned, does not bring it back.
        let late = PeerInfo {
            identity: Some("user-7".into()),
            ..PeerInfo::new(9, PeerKind::Browser)
        };
        assert!(
            room.remote_joined(late.clone(), "other".into(), None)
                .is_empty()
        );
        assert!(
            room.sync("me", vec![(late, "other".into())], None, false)
                .is_empty()
        );
        assert_eq!(room.len(), 2);
    }

    #[test]
    fn a_relay_to_an_unknown_or_detached_peer_or_to_oneself_is_unknown_peer() {
        let mut room = R::new("r", 8);
        room.join(browser(1, 1)).unwrap();
        room.join(browser(2, 2)).unwrap();
        let err = room.relay(1, &1, 9).unwrap_err();
        assert_eq!(err, RuleError::UnknownPeer(9));
        assert_eq!(err.code(), ErrorCode::UnknownPeer);
        assert_eq!(room.relay(1, &1, 1), Err(RuleError::UnknownPeer(1)));
        room.detach(2, &2).unwrap();
        assert_eq!(room.relay(1, &1, 2), Err(RuleError::UnknownPeer(2)));
        // A connection that never joined speaks for nobody.
        assert_eq!(room.relay(1, &7, 2), Err(RuleError::NotJoined));
    }

    #[test]
    fn a_leave_fans_out_peer_left_to_the_room_and_its_watchers() {
        let mut room = R::new("r", 8);
        room.join(browser(1, 1)).unwrap();
        room.join(browser(2, 2)).unwrap();
        room.join(browser(3, 3)).unwrap();
        let effects = room.leave(2, &2, LeaveReason::Left);
        for conn in [1, 3] {
            assert!(matches!(
                &sent_to(&effects, conn)[..],
                [ServerFrame::PeerLeft {
                    peer_id: 2,
                    reason: LeaveReason::Left,
                    ..
                }]
            ));
        }
        assert!(sent_to(&effects, 2).is_empty());
        assert!(
            effects
                .iter()
                .any(|e| matches!(e, Effect::Watchers(ServerFrame::PeerLeft { .. })))
        );
        assert_eq!(room.len(), 2);
    }

    #[test]
    fn a_join_declaring_another_application_is_refused_unless_the_room_emptied() {
        let pong = AppInfo::new("pong", 1, [ChannelKind::ReliableOrdered]);
        let chess = AppInfo::new("chess", 1, [ChannelKind::ReliableOrdered]);
        let playing = |conn, id, app: &AppInfo| Join {
            app: Some(app.clone()),
            ..browser(conn, id)
        };
        let mut room = R::new("r", 8);
        room.join(playing(1, 1, &pong)).unwrap();
        let err = room.join(playing(2, 2, &chess)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::AppMismatch);
        assert_eq!(
            err,
            RuleError::app_mismatch("r", Some(pong.clone()), Some(chess.clone()))
        );
        assert!(
            room.join(browser(2, 2)).is_err(),
            "none declared is another"
        );
        room.leave(1, &1, LeaveReason::Left);
        room.join(playing(3, 3, &chess)).unwrap();
        assert_eq!(room.app(), Some(&chess));
    }

    #[test]
    fn a_dropped_connection_is_evicted_after_its_grace_unless_it_resumed() {
        let mut room = R::new("r", 8);
        room.join(browser(1, 1)).unwrap();
        let b = room.join(browser(2, 2)).unwrap();
        let first = room.detach(2, &2).unwrap();
        assert_eq!(room.detach(2, &2), None, "once");
        let resume = Join {
            resume: Some(Resume {
                peer_id: 2,
                token: b.token,
            }),
            ..Join::new(3, 0, "t2b", PeerKind::Browser)
        };
        room.join(resume).unwrap();
        assert!(room.expire(2, first).is_empty(), "resumed within its grace");
        let second = room.detach(2, &3).unwrap();
        let effects = room.expire(2, second);
        assert!(matches!(
            &sent_to(&effects, 1)[..],
            [ServerFrame::PeerLeft {
                reason: LeaveReason::Lost,
                ..
            }]
        ));
        assert!(room.is_empty() || room.len() == 1);
        assert!(!room.holds_local(2));
    }

    #[test]
    fn network_tags_are_for_natives_only() {
        let mut room = R::new("r", 8);
        let tagged = |join: Join<u32>| Join {
            network: Some("tag".into()),
            ..join
        };
        let b = room.join(tagged(browser(1, 1))).unwrap();
        assert_eq!(b.network, None);
        let native = Join {
            udp_addr: Some("127.0.0.1:9".parse().unwrap()),
            ..Join::new(2, 2, "t", PeerKind::Native)
        };
        let n = room.join(tagged(native)).unwrap();
        assert_eq!(n.network.as_deref(), Some("tag"));
        // Dashboards see neither the address nor the tag.
        let snapshot = room.snapshot();
        assert!(
            snapshot
                .peers
                .iter()
                .all(|p| p.udp_addr.is_none() && p.network.is_none())
        );
    }

    #[test]
    fn other_servers_peers_are_mirrored_relayed_to_by_their_home_and_put_back_when_ours() {
        let mut room = R::new("r", 8);
        let mine = room.join(browser(1, 1)).unwrap();
        let info = |id| PeerInfo::new(id, PeerKind::Browser);
        let effects = room.remote_joined(info(5), "other".into(), None);
        assert_eq!(sent_to(&effects, 1).len(), 1, "peer_joined");
        assert_eq!(room.relay(1, &1, 5), Ok(Route::Remote("other")));
        // A resume of a peer another server holds is that server's to check.
        let resume = Join {
            resume: Some(Resume {
                peer_id: 5,
                token: String::new(),
            }),
            ..browser(2, 0)
        };
        assert_eq!(room.join(resume).unwrap_err(), RuleError::ResumeRejected(5));
        // Ours, told gone by another server that took us for dead: put back.
        let back = room.remote_left(mine.peer_id, LeaveReason::Lost);
        assert!(matches!(&back[..], [Effect::Shared(Shared::Joined { .. })]));
        assert!(room.holds_local(mine.peer_id));
        // Its server died: orphaned once, then evicted by the carrier.
        let dead = HashSet::from(["other".to_owned()]);
        assert_eq!(room.orphan(&dead), vec![(5, "other".to_owned())]);
        assert!(room.orphan(&dead).is_empty());
        assert_eq!(room.remote_homes().count(), 0);
        let left = room.remote_left(5, LeaveReason::Lost);
        assert_eq!(sent_to(&left, 1).len(), 1, "peer_left");
        // Its record, read late, does not bring it back.
        let listed = vec![(info(5), "other".to_owned())];
        assert!(room.sync("me", listed, None, false).is_empty());
        assert!(!room.holds_local(5) && room.len() == 1);
    }

    fn service(n: u8) -> WebTransportInfo {
        WebTransportInfo {
            url: "https://192.0.2.1:4433/ackwire".into(),
            cert_hashes: vec![crate::CertHash([n; 32])],
            websocket: None,
        }
    }

    fn watched(effects: &[Effect<u32>]) -> usize {
        effects
            .iter()
            .filter(|e| matches!(e, Effect::Watchers(_)))
            .count()
    }

    #[test]
    fn a_hosts_update_reaches_its_clients_and_the_other_servers_but_not_the_watchers() {
        let mut room: R = Room::new("r", 8);
        let host = Join {
            role: Role::Host,
            webtransport: Some(service(1)),
            ..browser(1, 1)
        };
        room.join(host).unwrap();
        let client = |conn, id| Join {
            role: Role::Client,
            ..browser(conn, id)
        };
        room.join(client(2, 2)).unwrap();
        room.join(client(3, 3)).unwrap();

        let effects = room.update(1, &1, Some(service(2))).unwrap();
        for conn in [2, 3] {
            match &sent_to(&effects, conn)[..] {
                [ServerFrame::PeerUpdated { peer, .. }] => {
                    assert_eq!(peer.id, 1);
                    assert_eq!(peer.role, Role::Host);
                    assert_eq!(peer.webtransport, Some(service(2)));
                }
                other => panic!("client {conn} got {other:?}"),
            }
        }
        assert!(sent_to(&effects, 1).is_empty(), "not the host itself");
        assert_eq!(watched(&effects), 0, "dashboards see no service");
        assert!(effects.iter().any(|e| matches!(
            e,
            Effect::Shared(Shared::Updated { info, token }) if info.webtransport == Some(service(2)) && token == "t1"
        )));
        // A newcomer's welcome lists the host with its new service.
        let late = room.join(client(4, 4)).unwrap();
        assert_eq!(late.peers[0].webtransport, Some(service(2)));
        // The same service again is no news.
        assert!(room.update(1, &1, Some(service(2))).unwrap().is_empty());
        // Withdrawn: the clients hear the host has none.
        let effects = room.update(1, &1, None).unwrap();
        assert!(matches!(
            &sent_to(&effects, 2)[..],
            [ServerFrame::PeerUpdated { peer, .. }] if peer.webtransport.is_none()
        ));
    }

    #[test]
    fn an_update_from_a_client_or_a_stale_connection_is_refused_and_changes_nothing() {
        let mut room: R = Room::new("r", 8);
        let host = Join {
            role: Role::Host,
            webtransport: Some(service(1)),
            ..browser(1, 1)
        };
        room.join(host).unwrap();
        let client = Join {
            role: Role::Client,
            ..browser(2, 2)
        };
        room.join(client).unwrap();
        let refused = room.update(2, &2, Some(service(9))).unwrap_err();
        assert_eq!(refused, RuleError::NotHost(2));
        assert_eq!(refused.code(), ErrorCode::InvalidJoin);
        // Another connection does not speak for the host.
        assert_eq!(
            room.update(1, &2, Some(service(9))).unwrap_err(),
            RuleError::NotJoined
        );
        let mut mesh: R = Room::new("m", 8);
        mesh.join(browser(5, 5)).unwrap();
        assert_eq!(mesh.update(5, &5, None).unwrap_err(), RuleError::NotHost(5));
        let welcome = room
            .join(Join {
                role: Role::Client,
                ..browser(3, 3)
            })
            .unwrap();
        assert_eq!(welcome.peers[0].webtransport, Some(service(1)));
    }

    #[test]
    fn a_host_that_resumes_with_a_new_service_is_announced_and_another_servers_update_mirrored() {
        let mut room: R = Room::new("r", 8);
        let host = Join {
            role: Role::Host,
            webtransport: Some(service(1)),
            ..browser(1, 1)
        };
        let joined = room.join(host).unwrap();
        room.join(Join {
            role: Role::Client,
            ..browser(2, 2)
        })
        .unwrap();
        room.detach(1, &1).unwrap();
        let resume = |webtransport| Join {
            role: Role::Host,
            webtransport,
            resume: Some(Resume {
                peer_id: 1,
                token: joined.token.clone(),
            }),
            ..browser(3, 0)
        };
        let back = room.join(resume(Some(service(2)))).unwrap();
        assert!(matches!(
            &sent_to(&back.effects, 2)[..],
            [ServerFrame::PeerUpdated { peer, .. }] if peer.webtransport == Some(service(2))
        ));
        assert!(
            back.effects
                .iter()
                .any(|e| matches!(e, Effect::Shared(Shared::Updated { .. })))
        );
        // The same service: a resume as ever.
        room.detach(1, &3).unwrap();
        let again = Join {
            resume: Some(Resume {
                peer_id: 1,
                token: back.token.clone(),
            }),
            ..resume(Some(service(2)))
        };
        let again = room.join(again).unwrap();
        assert!(sent_to(&again.effects, 2).is_empty());
        assert!(
            again
                .effects
                .iter()
                .any(|e| matches!(e, Effect::Shared(Shared::Token { .. })))
        );

        // A host on another server: its update is mirrored, and our client hears it.
        let mut room: R = Room::new("r2", 8);
        room.join(Join {
            role: Role::Client,
            ..browser(2, 2)
        })
        .unwrap();
        let remote_host = PeerInfo {
            role: Role::Host,
            webtransport: Some(service(1)),
            ..PeerInfo::new(7, PeerKind::Native)
        };
        room.remote_joined(remote_host.clone(), "other".into(), None);
        let moved = PeerInfo {
            webtransport: Some(service(3)),
            ..remote_host.clone()
        };
        let effects = room.remote_updated(moved.clone());
        assert!(matches!(
            &sent_to(&effects, 2)[..],
            [ServerFrame::PeerUpdated { peer, .. }] if *peer == moved
        ));
        assert_eq!(watched(&effects), 0);
        assert!(room.remote_updated(moved).is_empty(), "no news twice");
        // Not for a peer it does not know, nor for its own.
        assert!(
            room.remote_updated(PeerInfo::new(9, PeerKind::Native))
                .is_empty()
        );
        assert!(
            room.remote_updated(PeerInfo::new(2, PeerKind::Browser))
                .is_empty()
        );
    }

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(tokens_match("abc", "abc"));
        assert!(!tokens_match("abc", "abd"));
        assert!(!tokens_match("abc", "ab"));
    }
}
