//! The JSON messages spoken on `/ws`; `docs/signalling.md` is their reference.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{config::IceServer, error::SignalError};

/// The signalling protocol version a `join` must carry.
pub const PROTOCOL_VERSION: u32 = 1;

/// Server-assigned peer id, unique for the server's lifetime.
pub type PeerId = u64;

/// What kind of program a peer is; decides which transport the others open to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerKind {
    /// A browser tab: reachable through WebRTC only.
    Browser,
    /// `ackwire-peer`: WebRTC, and raw UDP at its `udp_addr` for other natives.
    Native,
}

/// Credentials from an earlier welcome, to take back a peer id after a dropped link.
#[derive(Debug, Clone, Deserialize)]
pub struct Resume {
    /// The peer id the welcome assigned.
    pub peer_id: PeerId,
    /// The secret token the welcome carried.
    pub token: String,
}

/// A message from a client.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    /// Enter a room (created on first join).
    Join {
        /// Must equal [`PROTOCOL_VERSION`].
        version: u32,
        /// Room name: 1–64 of `A-Z a-z 0-9 - _`.
        room: String,
        /// Browser or native.
        kind: PeerKind,
        /// Natives only: where other natives reach them over UDP.
        #[serde(default)]
        udp_addr: Option<SocketAddr>,
        /// Take back a peer id after a dropped link.
        #[serde(default)]
        resume: Option<Resume>,
    },
    /// Relay `data` (SDP, ICE candidate: opaque to the server) to a peer in the same room.
    Signal {
        /// Target peer id.
        to: PeerId,
        /// Optional; if present it must be the sender's own id.
        #[serde(default)]
        from: Option<PeerId>,
        /// Opaque payload.
        data: Value,
    },
    /// The sender's link statistics (the core's `Stats` per link), forwarded to dashboards.
    Stats {
        /// Optional; if present it must be the sender's own id.
        #[serde(default)]
        from: Option<PeerId>,
        /// Opaque: by convention `[{"peer": id, "stats": {..}}]`.
        links: Value,
    },
    /// Receive membership and stats events of one room, or of all rooms when `room` is absent.
    Subscribe {
        /// Room to watch; absent for all rooms.
        #[serde(default)]
        room: Option<String>,
    },
    /// Leave the room now (peers are told at once; no reconnect grace).
    Leave,
}

/// A peer as others see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInfo {
    /// Server-assigned id.
    pub id: PeerId,
    /// Browser or native.
    pub kind: PeerKind,
    /// The native's UDP address, if it gave one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub udp_addr: Option<SocketAddr>,
}

/// Why a peer left its room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaveReason {
    /// It sent `leave` or closed its WebSocket cleanly.
    Left,
    /// Its link dropped (error, ping timeout, slow reader) and it did not resume in time.
    Lost,
}

/// One room in a dashboard snapshot.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoomSnapshot {
    /// Room name.
    pub room: String,
    /// Its current peers.
    pub peers: Vec<PeerInfo>,
}

/// A message to a client.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage<'a> {
    /// Answer to a successful `join`.
    Welcome {
        /// Protocol version spoken.
        version: u32,
        /// Room joined.
        room: &'a str,
        /// Your id (kept on `resume`).
        peer_id: PeerId,
        /// Secret for `resume`; keep it private.
        token: &'a str,
        /// True when this join took back an earlier id.
        resumed: bool,
        /// The other peers in the room.
        peers: Vec<PeerInfo>,
        /// STUN/TURN servers for `RTCPeerConnection`.
        ice_servers: &'a [IceServer],
    },
    /// A peer entered the room.
    PeerJoined {
        /// Room.
        room: &'a str,
        /// Who.
        peer: &'a PeerInfo,
    },
    /// A peer left the room.
    PeerLeft {
        /// Room.
        room: &'a str,
        /// Who.
        peer_id: PeerId,
        /// Why.
        reason: LeaveReason,
    },
    /// A relayed signal.
    Signal {
        /// Sender, as the server knows it.
        from: PeerId,
        /// Payload, unchanged.
        data: &'a Value,
    },
    /// Answer to `subscribe`: the watched rooms as they are now.
    Subscribed {
        /// Rooms and their peers.
        rooms: Vec<RoomSnapshot>,
    },
    /// A peer's stats report, for dashboards.
    Stats {
        /// Room.
        room: &'a str,
        /// Reporter, as the server knows it.
        peer_id: PeerId,
        /// Payload, unchanged.
        links: &'a Value,
    },
    /// A request was refused.
    Error {
        /// Stable machine-readable code.
        code: &'static str,
        /// Human-readable detail.
        message: String,
    },
}

impl ServerMessage<'_> {
    /// The error frame for `err`.
    pub fn error(err: &SignalError) -> ServerMessage<'static> {
        ServerMessage::Error {
            code: err.code(),
            message: err.to_string(),
        }
    }

    /// Serialize once; the result is cheap to clone for fan-out.
    pub fn to_text(&self) -> axum::extract::ws::Utf8Bytes {
        // Serializing these types cannot fail: all map keys are strings.
        serde_json::to_string(self)
            .expect("server messages serialize")
            .into()
    }
}

/// Room names: 1–64 ASCII letters, digits, `-` or `_` (safe in URLs, logs and metrics).
pub fn validate_room_name(name: &str) -> Result<(), SignalError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(SignalError::InvalidRoomName(
            name.chars().take(80).collect(),
        ))
    }
}
