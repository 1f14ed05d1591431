//! The frames: [`ClientFrame`] (client → server) and [`ServerFrame`] (server → client),
//! and what they carry.

use std::{borrow::Cow, net::SocketAddr};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AppInfo, ErrorCode, PublicKey, WebTransportInfo};

/// A peer's id in its room, assigned by the server. Ids are unique for one server's
/// lifetime; after a server restart they are handed out afresh (see [`PeerInfo::instance`]).
pub type PeerId = u64;

/// What kind of program a peer is; decides which transport the others open to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerKind {
    /// A browser tab: reachable through WebRTC only.
    Browser,
    /// `ackwire-peer`: WebRTC, and raw UDP at its `udp_addr` for other natives.
    Native,
}

impl PeerKind {
    /// The name on the wire: `browser` or `native`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Browser => "browser",
            Self::Native => "native",
        }
    }
}

/// How a room's members link, fixed by its first member's [`Role`]: a mesh (every member
/// links to every other; the default) or a host room (one host, every other member links to
/// it alone).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// Every member links to every other: right for a few players with no server of their
    /// own.
    #[default]
    Mesh,
    /// One authoritative host; every other member is its client and links to it alone.
    Host,
}

impl Topology {
    /// The name on the wire: `mesh` or `host`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mesh => "mesh",
            Self::Host => "host",
        }
    }

    /// Whether this is a mesh (then the field is left out of frames).
    pub fn is_mesh(&self) -> bool {
        *self == Self::Mesh
    }
}

/// What a member is in its room, declared in its join. A room's first member fixes the
/// room's [`Topology`] by it: a `peer` makes a mesh, a `host` or a `client` a host room; a
/// join of the other topology is refused with `topology_mismatch`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A member of a mesh room (the default).
    #[default]
    Peer,
    /// The one host of a host room: it sees every client and links to each.
    Host,
    /// A client of a host room: it sees the host alone and links to it alone.
    Client,
}

impl Role {
    /// The name on the wire: `peer`, `host` or `client`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Peer => "peer",
            Self::Host => "host",
            Self::Client => "client",
        }
    }

    /// The topology of the rooms this role belongs in.
    pub fn topology(self) -> Topology {
        match self {
            Self::Peer => Topology::Mesh,
            Self::Host | Self::Client => Topology::Host,
        }
    }

    /// Whether this is a mesh peer (then the field is left out of frames).
    pub fn is_peer(&self) -> bool {
        *self == Self::Peer
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Proof of identity for taking back a peer id after the signalling link dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resume {
    /// The id the welcome gave.
    pub peer_id: PeerId,
    /// The welcome's secret token.
    pub token: String,
}

/// A peer as the server describes it to the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInfo {
    /// Server-assigned id.
    pub id: PeerId,
    /// Browser or native.
    pub kind: PeerKind,
    /// Its role in its room: in a host room, the host or a client (absent in a mesh).
    #[serde(default, skip_serializing_if = "Role::is_peer")]
    pub role: Role,
    /// A native's UDP address, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_addr: Option<SocketAddr>,
    /// The program instance it joined with, if it gave one: stable across its reconnects
    /// and across a server restart, when ids are reassigned, so a member can recognise a
    /// peer it still has a live link with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// A native's public key (X25519, new at each start of the program): native↔native UDP
    /// links run the key exchange with it (Noise KK, `docs/wire.md`, "Key exchange"), as
    /// browsers check the DTLS fingerprint in an SDP. Absent for browsers, and for a native
    /// run without encryption (`--insecure`), which an encrypting native will not link with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_key: Option<PublicKey>,
    /// Where the server saw this peer connect from, as an opaque tag (a keyed hash of its
    /// public address, an IPv6 one by its /64): peers with the same tag sit behind the same
    /// public address, so one's private `udp_addr` may reach the other; across different tags
    /// a private `udp_addr` cannot be reached, and natives go through ICE at once. The address
    /// itself is never shown. Natives only; absent from older servers and from dashboards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// Who the game's backend says this member is: the identity of the join ticket it was
    /// admitted with ([`ticket::Claims::identity`](crate::ticket::Claims::identity)), on a
    /// server that requires tickets. One live member per identity in a room: a later join
    /// with the same one replaces it. Absent without tickets, and from dashboards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// A host room's host: where its clients reach it over WebTransport, and the
    /// certificates it presents there. Absent for everyone else, and from dashboards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webtransport: Option<WebTransportInfo>,
}

impl PeerInfo {
    /// A peer of `kind` with id `id` and nothing else said (no address, key, instance or
    /// tag).
    pub fn new(id: PeerId, kind: PeerKind) -> PeerInfo {
        PeerInfo {
            id,
            kind,
            role: Role::Peer,
            udp_addr: None,
            instance: None,
            udp_key: None,
            network: None,
            identity: None,
            webtransport: None,
        }
    }

    /// The peer as dashboards see it: a native's UDP address and key, where anyone connects
    /// from, and who the game's backend says it is, are for its room's members alone.
    pub fn watched(&self) -> PeerInfo {
        PeerInfo {
            udp_addr: None,
            udp_key: None,
            network: None,
            identity: None,
            webtransport: None,
            ..self.clone()
        }
    }
}

/// An ICE server from the welcome, in the browser's `RTCIceServer` shape (so a browser can
/// hand it to `RTCPeerConnection` as it is).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct IceServer {
    /// STUN/TURN URLs (a single string is accepted too, as browsers do).
    #[serde(deserialize_with = "one_or_many")]
    pub urls: Vec<String>,
    /// TURN user name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// TURN credential.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub credential: String,
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Urls {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Urls::deserialize(d)? {
        Urls::One(url) => vec![url],
        Urls::Many(urls) => urls,
    })
}

/// Why a peer left its room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaveReason {
    /// It sent `leave` or closed its WebSocket cleanly.
    Left,
    /// Its link dropped (error, ping timeout, slow reader) and it did not resume in time.
    Lost,
    /// The same program instance joined the room again (without `resume`) under a new id,
    /// announced next in a `peer_joined` with the same [`PeerInfo::instance`].
    Replaced,
}

/// One room in a dashboard snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomSnapshot {
    /// Room name.
    pub room: String,
    /// The application the room plays, if its members declared one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<AppInfo>,
    /// How its members link (absent for a mesh).
    #[serde(default, skip_serializing_if = "Topology::is_mesh")]
    pub topology: Topology,
    /// Its current peers (those inside their reconnect grace included).
    pub peers: Vec<PeerInfo>,
}

/// Client → server frames.
///
/// The payloads the server relays unread are type parameters: [`Value`] where they are
/// opaque (the server, and any client that only reads JSON), typed where a room member
/// builds them (`ackwire_room::member::MemberFrame`). Both serialize to the same JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame<S = Value, L = Value> {
    /// Enter a room (created on first join), or take back an earlier id with `resume`.
    Join {
        /// Always [`VERSION`](crate::VERSION).
        version: u32,
        /// Room name: 1–64 of `A-Z a-z 0-9 - _`.
        room: String,
        /// Browser or native.
        kind: PeerKind,
        /// Natives only: where other natives reach their UDP socket.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        udp_addr: Option<SocketAddr>,
        /// A random id of this program instance (one page load, one process), 1–64 of
        /// `A-Z a-z 0-9 - _`, the same on every join it makes. A join without `resume`
        /// replaces the room's peer with the same instance.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
        /// Natives only: the public key the other natives key their encrypted UDP links
        /// with (see [`PeerInfo::udp_key`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        udp_key: Option<PublicKey>,
        /// The application this member plays. The room's first member sets it; a join that
        /// declares another (or none, in a room with one) is refused with `app_mismatch`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        app: Option<AppInfo>,
        /// What it is in the room: a mesh `peer` (the default, left out), or in a host room
        /// the `host` or a `client`. The room's first member fixes the room's topology by
        /// it; a join of the other topology is refused with `topology_mismatch`, a second
        /// host with `host_taken`.
        #[serde(default, skip_serializing_if = "Role::is_peer")]
        role: Role,
        /// The join ticket the game's backend minted for this join ([`ticket`](crate::ticket)),
        /// which a server configured with a ticket secret requires of every fresh join. A
        /// resume needs none: its token proves the join it takes back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ticket: Option<String>,
        /// A host room's host only: where its clients reach it over WebTransport
        /// ([`PeerInfo::webtransport`]). Boxed: most joins have none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        webtransport: Option<Box<WebTransportInfo>>,
        /// Take back a peer id after a dropped link.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume: Option<Resume>,
    },
    /// Relay `data` (opaque to the server: a [`SignalData`](crate::SignalData) by convention) to a peer of the
    /// same room.
    Signal {
        /// Recipient.
        to: PeerId,
        /// Optional; if present it must be the sender's own id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<PeerId>,
        /// Opaque payload.
        data: S,
    },
    /// The sender's link statistics, forwarded to dashboards.
    Stats {
        /// Optional; if present it must be the sender's own id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<PeerId>,
        /// Opaque: by convention `[{"peer": id, "stats": {..}}]`, one entry per link.
        links: L,
    },
    /// Receive membership and stats events of one room, or of every room when `room` is
    /// absent.
    Subscribe {
        /// Room to watch; absent for all rooms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        room: Option<String>,
        /// The server's admin token, needed to watch every room (unless the upgrade carried
        /// it as `Authorization: Bearer`, or the server listens on loopback without one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
    },
    /// A joined host room's host replaces the WebTransport service its join published
    /// (`webtransport`, checked as the join's; absent: it serves none any more), as it rotates
    /// its certificate. Its clients hear it in a `peer_updated`; anyone else's update is
    /// refused (`invalid_join`) and changes nothing.
    Update {
        /// The service from now on ([`PeerInfo::webtransport`]). Boxed as the join's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        webtransport: Option<Box<WebTransportInfo>>,
    },
    /// Leave the room now (the room is told at once; the id cannot be resumed).
    Leave,
}

/// Server → client frames.
///
/// The server builds them from borrowed data; a client gets owned ones
/// (`ServerFrame<'static>`), whatever the lifetime of the text it parsed
/// ([`parse_server_frame`]). `D` is the relayed payload (`data`, `links`): opaque JSON by
/// default; a room member reads signals as [`SignalData`](crate::SignalData)
/// ([`try_map`](Self::try_map)).
///
/// Every variant has its [`ServerFrameType`]. There is no catch-all variant: a frame type this
/// version does not know is an error of its own ([`UnreadableFrame::UnknownType`]), which a
/// client counts and reports rather than dropping it unseen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame<'a, D = Cow<'a, Value>> {
    /// Answer to a successful `join`.
    Welcome {
        /// Protocol version spoken ([`VERSION`](crate::VERSION)).
        version: u32,
        /// Room joined.
        room: Cow<'a, str>,
        /// Your id (kept on `resume`).
        peer_id: PeerId,
        /// Secret for `resume`; keep it private.
        token: Cow<'a, str>,
        /// True when this join took back an earlier id: links carry on, nobody is new.
        resumed: bool,
        /// The other peers in the room.
        peers: Vec<PeerInfo>,
        /// STUN/TURN servers for `RTCPeerConnection`.
        #[serde(default)]
        ice_servers: Cow<'a, [IceServer]>,
        /// Your own network tag ([`PeerInfo::network`]), to compare with the peers' (natives
        /// only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        network: Option<Cow<'a, str>>,
    },
    /// A peer entered the room.
    PeerJoined {
        /// Room.
        room: Cow<'a, str>,
        /// Who.
        peer: PeerInfo,
    },
    /// A peer already announced changed what its members see of it (a host room's host
    /// published a new WebTransport service): `peer` is its whole [`PeerInfo`] as of now, for
    /// the next link to it. Sent to whoever heard its `peer_joined`; not to dashboards.
    PeerUpdated {
        /// Room.
        room: Cow<'a, str>,
        /// Who, as it is now.
        peer: PeerInfo,
    },
    /// A peer left the room.
    PeerLeft {
        /// Room.
        room: Cow<'a, str>,
        /// Who.
        peer_id: PeerId,
        /// Why.
        reason: LeaveReason,
    },
    /// A relayed signal.
    Signal {
        /// Sender, as the server knows it (never the client's claim).
        from: PeerId,
        /// Payload, unchanged: a [`SignalData`](crate::SignalData) by convention.
        data: D,
    },
    /// Answer to `subscribe`: the watched rooms as they are now.
    Subscribed {
        /// Rooms and their peers.
        rooms: Vec<RoomSnapshot>,
    },
    /// Fresh STUN/TURN servers for the peer connections opened from now on: sent to a joined
    /// peer before the short-lived TURN credentials of its welcome (or of the last such
    /// frame) expire (`docs/signalling.md`, "TURN credentials").
    IceServers {
        /// The same list as the welcome's, with new credentials.
        ice_servers: Cow<'a, [IceServer]>,
    },
    /// A peer's stats report, for dashboards.
    Stats {
        /// Room.
        room: Cow<'a, str>,
        /// Reporter, as the server knows it.
        peer_id: PeerId,
        /// Payload, unchanged.
        links: D,
    },
    /// A request was refused.
    Error {
        /// Stable machine-readable code (`docs/signalling.md`, "Errors").
        code: ErrorCode,
        /// Human-readable detail.
        message: String,
    },
}

/// Every type a [`ServerFrame`] can have, by its `type` name. Deliberately not
/// `non_exhaustive`: a decoder that matches on it without a wildcard (the browser's, the
/// room member's) stops compiling when a frame type is added, until it says what to do with
/// the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerFrameType {
    /// `welcome`
    Welcome,
    /// `peer_joined`
    PeerJoined,
    /// `peer_updated`
    PeerUpdated,
    /// `peer_left`
    PeerLeft,
    /// `signal`
    Signal,
    /// `subscribed` (dashboards)
    Subscribed,
    /// `ice_servers`
    IceServers,
    /// `stats` (dashboards)
    Stats,
    /// `error`
    Error,
}

impl ServerFrameType {
    /// Every server frame type.
    pub const ALL: [ServerFrameType; 9] = [
        Self::Welcome,
        Self::PeerJoined,
        Self::PeerUpdated,
        Self::PeerLeft,
        Self::Signal,
        Self::Subscribed,
        Self::IceServers,
        Self::Stats,
        Self::Error,
    ];

    /// The `type` on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Welcome => "welcome",
            Self::PeerJoined => "peer_joined",
            Self::PeerUpdated => "peer_updated",
            Self::PeerLeft => "peer_left",
            Self::Signal => "signal",
            Self::Subscribed => "subscribed",
            Self::IceServers => "ice_servers",
            Self::Stats => "stats",
            Self::Error => "error",
        }
    }

    /// Reads a `type` name; `None` for one this version does not know.
    pub fn from_name(name: &str) -> Option<ServerFrameType> {
        // A match rather than a search of ALL: it compiles to less in the browser's bundle.
        Some(match name {
            "welcome" => Self::Welcome,
            "peer_joined" => Self::PeerJoined,
            "peer_updated" => Self::PeerUpdated,
            "peer_left" => Self::PeerLeft,
            "signal" => Self::Signal,
            "subscribed" => Self::Subscribed,
            "ice_servers" => Self::IceServers,
            "stats" => Self::Stats,
            "error" => Self::Error,
            _ => return None,
        })
    }

    /// Whether a room member may get it: `subscribed` and `stats` go to dashboards only.
    pub fn for_members(self) -> bool {
        !matches!(self, Self::Subscribed | Self::Stats)
    }
}

impl std::fmt::Display for ServerFrameType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'a, D> ServerFrame<'a, D> {
    /// Its type.
    pub fn frame_type(&self) -> ServerFrameType {
        match self {
            Self::Welcome { .. } => ServerFrameType::Welcome,
            Self::PeerJoined { .. } => ServerFrameType::PeerJoined,
            Self::PeerUpdated { .. } => ServerFrameType::PeerUpdated,
            Self::PeerLeft { .. } => ServerFrameType::PeerLeft,
            Self::Signal { .. } => ServerFrameType::Signal,
            Self::Subscribed { .. } => ServerFrameType::Subscribed,
            Self::IceServers { .. } => ServerFrameType::IceServers,
            Self::Stats { .. } => ServerFrameType::Stats,
            Self::Error { .. } => ServerFrameType::Error,
        }
    }

    /// The same frame with its relayed payload (`data`, `links`) read by `read`: how a client
    /// that parsed opaque JSON gets typed signals. The first refusal of `read` is returned.
    pub fn try_map<E, T>(
        self,
        read: impl FnOnce(D) -> Result<T, E>,
    ) -> Result<ServerFrame<'a, T>, E> {
        Ok(match self {
            Self::Welcome {
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
            Self::PeerJoined { room, peer } => ServerFrame::PeerJoined { room, peer },
            Self::PeerUpdated { room, peer } => ServerFrame::PeerUpdated { room, peer },
            Self::PeerLeft {
                room,
                peer_id,
                reason,
            } => ServerFrame::PeerLeft {
                room,
                peer_id,
                reason,
            },
            Self::Signal { from, data } => ServerFrame::Signal {
                from,
                data: read(data)?,
            },
            Self::Subscribed { rooms } => ServerFrame::Subscribed { rooms },
            Self::IceServers { ice_servers } => ServerFrame::IceServers { ice_servers },
            Self::Stats {
                room,
                peer_id,
                links,
            } => ServerFrame::Stats {
                room,
                peer_id,
                links: read(links)?,
            },
            Self::Error { code, message } => ServerFrame::Error { code, message },
        })
    }
}

/// Why a text is not a [`ServerFrame`] of this version.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UnreadableFrame {
    /// A frame type this version does not know (a later server's addition), by its name.
    #[error("unknown server frame type \"{0}\"")]
    UnknownType(String),
    /// Not a frame of the protocol: not JSON, no string `type`, or a known type with a
    /// missing or ill-typed field.
    #[error("unreadable server frame: {0}")]
    Malformed(serde_json::Error),
}

/// Reads one text frame from the server: an owned frame, whatever the lifetime of `text`.
/// A frame type this version does not know is [`UnreadableFrame::UnknownType`], told apart
/// from a broken frame so a client can count it and carry on.
///
/// ```
/// use ackwire_signalling::{LeaveReason, ServerFrame, UnreadableFrame, parse_server_frame};
///
/// let left = r#"{"type":"peer_left","room":"lobby","peer_id":3,"reason":"lost"}"#;
/// assert!(matches!(
///     parse_server_frame(left),
///     Ok(ServerFrame::PeerLeft { peer_id: 3, reason: LeaveReason::Lost, .. })
/// ));
/// let later = r#"{"type":"teleport","to":3}"#;
/// assert!(matches!(parse_server_frame(later), Err(UnreadableFrame::UnknownType(t)) if t == "teleport"));
/// let broken = r#"{"type":"peer_left","room":"lobby"}"#;
/// assert!(matches!(parse_server_frame(broken), Err(UnreadableFrame::Malformed(_))));
/// ```
pub fn parse_server_frame(text: &str) -> Result<ServerFrame<'static>, UnreadableFrame> {
    serde_json::from_str(text).map_err(|error| {
        /// Just the type of a frame serde would not read.
        #[derive(Deserialize)]
        struct Tagged<'a> {
            #[serde(rename = "type", borrow)]
            kind: Cow<'a, str>,
        }
        match serde_json::from_str::<Tagged<'_>>(text) {
            Ok(Tagged { kind }) if ServerFrameType::from_name(&kind).is_none() => {
                UnreadableFrame::UnknownType(kind.chars().take(40).collect())
            }
            _ => UnreadableFrame::Malformed(error),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChannelKind, Sdp, SdpKind, SignalData, VERSION};

    #[test]
    fn welcome_from_the_signalling_doc_parses() {
        let text = r#"{"type":"welcome","version":1,"room":"lobby","peer_id":2,"token":"04a7","resumed":false,"peers":[{"id":1,"kind":"browser"},{"id":3,"kind":"native","udp_addr":"127.0.0.1:40000"}],"ice_servers":[{"urls":"stun:stun.example.org:3478"}]}"#;
        match serde_json::from_str::<ServerFrame>(text).unwrap() {
            ServerFrame::Welcome {
                peer_id,
                peers,
                ice_servers,
                ..
            } => {
                assert_eq!(peer_id, 2);
                assert_eq!(peers[0].id, 1);
                assert_eq!(peers[0].kind, PeerKind::Browser);
                assert_eq!(peers[1].udp_addr, Some("127.0.0.1:40000".parse().unwrap()));
                assert_eq!(ice_servers[0].urls, ["stun:stun.example.org:3478"]);
                // Handed to a browser's RTCPeerConnection unchanged in meaning.
                assert_eq!(
                    serde_json::to_string(&ice_servers).unwrap(),
                    r#"[{"urls":["stun:stun.example.org:3478"]}]"#
                );
            }
            other => panic!("not a welcome: {other:?}"),
        }
    }

    #[test]
    fn relayed_candidates_and_unknown_frames_parse() {
        let text = r#"{"type":"signal","from":1,"data":{"candidate":"candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host","sdpMid":"0"}}"#;
        let ServerFrame::Signal { from: 1, data } =
            serde_json::from_str::<ServerFrame>(text).unwrap()
        else {
            panic!("not a signal");
        };
        assert!(matches!(
            serde_json::from_value::<SignalData>(data.into_owned()).unwrap(),
            SignalData::Candidate { .. }
        ));
        // A later server's frame type: an error of its own, naming the type, whatever its
        // fields.
        let other = r#"{"type":"teleport","to":{"x":1},"when":[1,2]}"#;
        assert!(matches!(
            parse_server_frame(other),
            Err(UnreadableFrame::UnknownType(kind)) if kind == "teleport"
        ));
        // A known type with a missing field is a broken frame, not an unknown one.
        for broken in [
            r#"{"type":"signal","data":1}"#,
            "[1]",
            "not json",
            r#"{"type":7}"#,
        ] {
            assert!(
                matches!(
                    parse_server_frame(broken),
                    Err(UnreadableFrame::Malformed(_))
                ),
                "{broken}"
            );
        }
    }

    /// One frame of each type, as the server writes them.
    fn one_of_each() -> Vec<ServerFrame<'static>> {
        let peer = PeerInfo {
            id: 3,
            kind: PeerKind::Browser,
            role: Role::Peer,
            udp_addr: None,
            instance: None,
            udp_key: None,
            network: None,
            identity: None,
            webtransport: None,
        };
        let payload = || Cow::Owned(serde_json::json!({"candidate": "c"}));
        vec![
            ServerFrame::Welcome {
                version: VERSION,
                room: "r".into(),
                peer_id: 1,
                token: "t".into(),
                resumed: false,
                peers: vec![peer.clone()],
                ice_servers: Cow::Owned(Vec::new()),
                network: None,
            },
            ServerFrame::PeerJoined {
                room: "r".into(),
                peer: peer.clone(),
            },
            ServerFrame::PeerUpdated {
                room: "r".into(),
                peer: PeerInfo {
                    role: Role::Host,
                    webtransport: Some(WebTransportInfo {
                        url: "https://192.0.2.1:4433/ackwire".into(),
                        cert_hashes: vec![crate::CertHash([1; 32]), crate::CertHash([2; 32])],
                        websocket: Some("ws://192.0.2.7:4433/ackwire".into()),
                    }),
                    ..peer
                },
            },
            ServerFrame::PeerLeft {
                room: "r".into(),
                peer_id: 3,
                reason: LeaveReason::Lost,
            },
            ServerFrame::Signal {
                from: 3,
                data: payload(),
            },
            ServerFrame::Subscribed { rooms: Vec::new() },
            ServerFrame::IceServers {
                ice_servers: Cow::Owned(Vec::new()),
            },
            ServerFrame::Stats {
                room: "r".into(),
                peer_id: 3,
                links: payload(),
            },
            ServerFrame::Error {
                code: ErrorCode::RoomFull,
                message: "full".into(),
            },
        ]
    }

    #[test]
    fn every_client_frame_round_trips_and_a_broken_one_is_refused() {
        let frames: Vec<ClientFrame> = vec![
            ClientFrame::Join {
                version: VERSION,
                room: "lobby".into(),
                kind: PeerKind::Native,
                udp_addr: Some("192.0.2.1:4000".parse().unwrap()),
                instance: Some("proc-1".into()),
                udp_key: Some(PublicKey([7; 32])),
                app: Some(AppInfo::new("pong", 1, [ChannelKind::ReliableOrdered])),
                role: Role::Peer,
                ticket: None,
                webtransport: None,
                resume: Some(Resume {
                    peer_id: 4,
                    token: "t".into(),
                }),
            },
            ClientFrame::Signal {
                to: 2,
                from: Some(1),
                data: serde_json::json!({"candidate": "c"}),
            },
            ClientFrame::Stats {
                from: None,
                links: serde_json::json!([{"peer": 2}]),
            },
            ClientFrame::Subscribe {
                room: Some("lobby".into()),
                token: None,
            },
            ClientFrame::Update {
                webtransport: Some(Box::new(WebTransportInfo {
                    url: "https://192.0.2.1:4433/ackwire".into(),
                    cert_hashes: vec![crate::CertHash([3; 32])],
                    websocket: None,
                })),
            },
            ClientFrame::Update { webtransport: None },
            ClientFrame::Leave,
        ];
        for frame in frames {
            let text = serde_json::to_string(&frame).unwrap();
            assert_eq!(serde_json::from_str::<ClientFrame>(&text).unwrap(), frame);
        }
        for bad in [
            r#"{"type":"join","version":1,"room":"lobby"}"#,
            r#"{"type":"signal","data":1}"#,
            r#"{"type":"teleport"}"#,
            r#"{"type":"join","version":1,"room":"lobby","kind":"robot"}"#,
            r#"[1,2]"#,
        ] {
            assert!(serde_json::from_str::<ClientFrame>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unreadable_server_frames_are_typed_errors_an_unknown_type_apart() {
        for broken in [
            "not json",
            r#"{"no":"type"}"#,
            r#"{"type":7}"#,
            r#"{"type":"welcome","room":"lobby"}"#,
            r#"{"type":"peer_left","room":"r","peer_id":1,"reason":"bored"}"#,
        ] {
            assert!(
                matches!(
                    parse_server_frame(broken),
                    Err(UnreadableFrame::Malformed(_))
                ),
                "{broken}"
            );
        }
        assert!(matches!(
            parse_server_frame(r#"{"type":"later","x":1}"#),
            Err(UnreadableFrame::UnknownType(name)) if name == "later"
        ));
    }

    #[test]
    fn every_server_frame_type_is_written_and_read_under_its_name() {
        let frames = one_of_each();
        let types: Vec<_> = frames.iter().map(ServerFrame::frame_type).collect();
        assert_eq!(
            types,
            ServerFrameType::ALL,
            "one_of_each has every type once"
        );
        for frame in frames {
            let text = serde_json::to_string(&frame).unwrap();
            let tag: Value = serde_json::from_str(&text).unwrap();
            let name = frame.frame_type().as_str();
            assert_eq!(tag["type"], name, "{text}");
            assert_eq!(ServerFrameType::from_name(name), Some(frame.frame_type()));
            assert_eq!(parse_server_frame(&text).unwrap(), frame);
        }
    }

    #[test]
    fn a_payload_is_read_once_typed_and_a_refusal_comes_back() {
        let text = r#"{"type":"signal","from":4,"data":{"sdp":{"type":"answer","sdp":"v=0"}}}"#;
        let typed = parse_server_frame(text)
            .unwrap()
            .try_map(|data| serde_json::from_value::<SignalData>(data.into_owned()))
            .unwrap();
        assert_eq!(
            typed,
            ServerFrame::Signal {
                from: 4,
                data: SignalData::Sdp {
                    sdp: Sdp {
                        kind: SdpKind::Answer,
                        sdp: "v=0".into()
                    }
                }
            }
        );
        let bad = r#"{"type":"signal","from":4,"data":{"x":1}}"#;
        let refused = parse_server_frame(bad)
            .unwrap()
            .try_map(|data| serde_json::from_value::<SignalData>(data.into_owned()));
        assert!(refused.is_err());
        // Frames without a payload pass unchanged.
        let left = one_of_each().swap_remove(3);
        assert_eq!(
            left.clone().try_map(|_| Err::<(), ()>(())),
            Ok(ServerFrame::PeerLeft {
                room: "r".into(),
                peer_id: 3,
                reason: LeaveReason::Lost,
            })
        );
        assert!(!ServerFrameType::Stats.for_members() && ServerFrameType::Signal.for_members());
    }

    #[test]
    fn joins_serialize_as_documented() {
        let join: ClientFrame = ClientFrame::Join {
            version: VERSION,
            room: "lobby".into(),
            kind: PeerKind::Browser,
            udp_addr: None,
            instance: None,
            udp_key: None,
            app: None,
            role: Role::Peer,
            ticket: None,
            webtransport: None,
            resume: None,
        };
        assert_eq!(
            serde_json::to_string(&join).unwrap(),
            r#"{"type":"join","version":1,"room":"lobby","kind":"browser"}"#
        );
        let native: ClientFrame = ClientFrame::Join {
            version: VERSION,
            room: "lobby".into(),
            kind: PeerKind::Native,
            udp_addr: Some("127.0.0.1:40000".parse().unwrap()),
            instance: None,
            udp_key: Some(PublicKey(core::array::from_fn(|i| i as u8))),
            app: None,
            role: Role::Peer,
            ticket: None,
            webtransport: None,
            resume: Some(Resume {
                peer_id: 7,
                token: "t".into(),
            }),
        };
        assert_eq!(
            serde_json::to_string(&native).unwrap(),
            r#"{"type":"join","version":1,"room":"lobby","kind":"native","udp_addr":"127.0.0.1:40000","udp_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=","resume":{"peer_id":7,"token":"t"}}"#
        );
        let with_instance = ClientFrame::Join {
            version: VERSION,
            room: "lobby".into(),
            kind: PeerKind::Browser,
            udp_addr: None,
            instance: Some("k3J9-x_2".into()),
            udp_key: None,
            app: Some(AppInfo::new("pong", 2, [ChannelKind::ReliableOrdered])),
            role: Role::Peer,
            ticket: None,
            webtransport: None,
            resume: None,
        };
        let text = serde_json::to_string(&with_instance).unwrap();
        assert_eq!(
            text,
            r#"{"type":"join","version":1,"room":"lobby","kind":"browser","instance":"k3J9-x_2","app":{"id":"pong","version":2,"channels":["reliable-ordered"]}}"#
        );
        assert_eq!(
            serde_json::from_str::<ClientFrame>(&text).unwrap(),
            with_instance
        );
    }

    #[test]
    fn peer_info_carries_the_instance_and_omits_it_when_absent() {
        let peer = PeerInfo {
            id: 4,
            kind: PeerKind::Browser,
            role: Role::Peer,
            udp_addr: None,
            instance: Some("tab-1".into()),
            udp_key: None,
            network: None,
            identity: None,
            webtransport: None,
        };
        let frame = ServerFrame::PeerJoined {
            room: "lobby".into(),
            peer: peer.clone(),
        };
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(
            text,
            r#"{"type":"peer_joined","room":"lobby","peer":{"id":4,"kind":"browser","instance":"tab-1"}}"#
        );
        assert_eq!(serde_json::from_str::<ServerFrame>(&text).unwrap(), frame);
        let bare = PeerInfo {
            instance: None,
            ..peer
        };
        assert_eq!(
            serde_json::to_string(&bare).unwrap(),
            r#"{"id":4,"kind":"browser"}"#
        );
    }

    #[test]
    fn server_frames_borrow_when_built_and_own_when_parsed() {
        fn owned<T: serde::de::DeserializeOwned>(text: &str) -> T {
            serde_json::from_str(text).unwrap()
        }
        let data = serde_json::json!({"sdp": {"type": "offer", "sdp": "v=0"}});
        let built = ServerFrame::Signal {
            from: 3,
            data: Cow::Borrowed(&data),
        };
        let text = serde_json::to_string(&built).unwrap();
        // Parsed from a short-lived String, kept as ServerFrame<'static>.
        let parsed: ServerFrame<'static> = owned(&text.clone());
        assert_eq!(parsed, built);
        let ServerFrame::Signal { data: parsed, .. } = parsed else {
            unreachable!()
        };
        assert!(matches!(parsed, Cow::Owned(_)));
        assert_eq!(
            serde_json::from_value::<SignalData>(parsed.into_owned()).unwrap(),
            SignalData::Sdp {
                sdp: Sdp {
                    kind: SdpKind::Offer,
                    sdp: "v=0".into()
                }
            }
        );
    }

    #[test]
    fn leave_reasons_and_kinds_use_their_wire_names() {
        for (reason, name) in [
            (LeaveReason::Left, "\"left\""),
            (LeaveReason::Lost, "\"lost\""),
            (LeaveReason::Replaced, "\"replaced\""),
        ] {
            assert_eq!(serde_json::to_string(&reason).unwrap(), name);
        }
        for kind in [PeerKind::Browser, PeerKind::Native] {
            assert_eq!(
                serde_json::to_string(&kind).unwrap(),
                format!("\"{}\"", kind.as_str())
            );
        }
    }
}
