//! What Redis holds for the broker and what instances publish to each other: the keys, the
//! pub/sub channels, and the forms of their values and messages (docs/scale-out.md, "What
//! lives where").

use ackwire_signalling::{AppInfo, LeaveReason, PeerId, PeerInfo};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A peer as Redis keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// What the room sees.
    pub info: PeerInfo,
    /// Its resume token.
    pub token: String,
    /// The instance holding its socket.
    pub home: String,
}

/// What one instance tells the others of a room.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(super) enum RoomEvent {
    Joined {
        origin: String,
        peer: PeerInfo,
        home: String,
        /// The room's application once the peer was in: the instances serving the room
        /// keep their copy (for snapshots) up to date with it.
        #[serde(default)]
        app: Option<AppInfo>,
    },
    Left {
        origin: String,
        peer_id: PeerId,
        reason: LeaveReason,
    },
    /// The peer changed what the room sees of it (a host's new WebTransport service).
    Updated { origin: String, peer: PeerInfo },
    /// The peer resumed on `home`.
    Moved {
        origin: String,
        peer: PeerInfo,
        home: String,
    },
    Stats {
        origin: String,
        peer_id: PeerId,
        links: Value,
    },
}

/// A frame for one of the receiving instance's peers.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Delivery {
    pub(super) room: String,
    pub(super) to: PeerId,
    pub(super) text: String,
}

/// A room's peers (hash: peer id to its [`Record`] as JSON, or [`RESERVED`]).
pub(super) fn peers_key(room: &str) -> String {
    format!("ackwire:peers:{room}")
}

/// The application the room plays, as [`app_json`] writes it; set by the reservation of its
/// first member, gone with its last.
pub(super) fn app_key(room: &str) -> String {
    format!("ackwire:app:{room}")
}

/// How the room links (`mesh` or `host`,
/// [`Topology::as_str`](ackwire_signalling::Topology::as_str)); set by the reservation of its
/// first member, gone with its last.
pub(super) fn topology_key(room: &str) -> String {
    format!("ackwire:topology:{room}")
}

/// A host room's host seat: its host's peer id. Set by the reservation of a host's join,
/// gone with that host (or with the room's last peer).
pub(super) fn host_key(room: &str) -> String {
    format!("ackwire:host:{room}")
}

/// A room's members by identity (hash: a join ticket's identity to the peer id holding it), so
/// one identity has one member in the room across instances; kept by the reservations, gone
/// with the room's last peer.
pub(super) fn identities_key(room: &str) -> String {
    format!("ackwire:identities:{room}")
}

/// A room's application as Redis keeps it: canonical JSON (serde writes the fields in one
/// order), `null` for none, so the scripts compare two by their text.
pub(super) fn app_json(app: Option<&AppInfo>) -> String {
    serde_json::to_string(&app).unwrap_or_default()
}

/// Every room's channel, for all-rooms dashboards.
pub(super) const ROOM_PATTERN: &str = "ackwire:room:*";

/// A room's events ([`RoomEvent`]).
pub(super) fn room_channel(room: &str) -> String {
    format!("ackwire:room:{room}")
}

/// Frames for the peers `instance` holds ([`Delivery`]).
pub(super) fn instance_channel(instance: &str) -> String {
    format!("ackwire:to:{instance}")
}

/// Set while `instance` is alive.
pub(super) fn alive_key(instance: &str) -> String {
    format!("ackwire:alive:{instance}")
}

/// The rooms that exist (a set).
pub(super) const ROOMS_KEY: &str = "ackwire:rooms";
/// The key of network tags ([`PeerInfo::network`]), shared by all instances (hex).
pub(super) const NETWORK_KEY: &str = "ackwire:network_key";
/// The peer id counter, shared by all instances.
pub(super) const NEXT_PEER_KEY: &str = "ackwire:next_peer";
/// Random, set by the first instance to reach a Redis without state: a new value means Redis
/// lost everything since this instance last saw it.
pub(super) const EPOCH_KEY: &str = "ackwire:epoch";
/// The placeholder a reservation stores until its join completes.
pub(super) const RESERVED: &str = "reserved";

/// The network-tag key from its [`NETWORK_KEY`] text (64 hex digits).
pub(super) fn parse_key(hex: &str) -> Option<[u8; 32]> {
    let mut key = [0u8; 32];
    if hex.len() != 64 {
        return None;
    }
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

/// A room's application from its [`app_json`] text; `None` (logged) for text this version
/// cannot read.
pub(super) fn parse_app(room: &str, text: &str) -> Option<Option<AppInfo>> {
    serde_json::from_str(text)
        .inspect_err(|err| tracing::warn!(%room, %err, "unreadable application in Redis"))
        .ok()
}
