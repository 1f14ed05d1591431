//! The client side of the room's signalling frames: what a peer sends to `/ws` and what it
//! understands back (schema and a worked exchange: `docs/signalling.md`). The server has its
//! own, stricter types (`signal-server/src/protocol.rs`); the tests here hold both to the
//! document's examples.

use std::borrow::Cow;
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Signalling protocol version sent in every join.
pub const VERSION: u32 = 1;

/// Server-assigned peer id.
pub type PeerId = u64;

/// What kind of program a peer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerKind {
    /// A browser tab.
    Browser,
    /// `ackwire-peer`.
    Native,
}

impl PeerKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PeerKind::Browser => "browser",
            PeerKind::Native => "native",
        }
    }
}

/// Client → server frames.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame {
    /// Enter the room, or take back our id with `resume`.
    Join {
        /// Always [`VERSION`].
        version: u32,
        /// Room name.
        room: String,
        /// Browser or native.
        kind: PeerKind,
        /// Where other natives reach our UDP socket.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        udp_addr: Option<SocketAddr>,
        /// This program instance.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
        /// Our previous id and its token.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume: Option<Resume>,
    },
    /// Relay `data` (an SDP or an ICE candidate) to peer `to`.
    Signal {
        /// Recipient peer id.
        to: PeerId,
        /// Sender.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<PeerId>,
        /// Opaque payload: a [`SignalData`] as JSON.
        data: Value,
    },
    /// Our links' statistics, for dashboards.
    Stats {
        /// Sender.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<PeerId>,
        /// One entry per link.
        links: Value,
    },
    /// Leave.
    Leave,
}

/// Proof of identity for taking back a peer id after the signalling link dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resume {
    /// The id the welcome gave us.
    pub peer_id: PeerId,
    /// The welcome's secret token.
    pub token: String,
}

/// A peer as the server describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInfo {
    /// Server-assigned id.
    pub id: PeerId,
    /// Browser or native.
    pub kind: PeerKind,
    /// A native peer's UDP address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_addr: Option<SocketAddr>,
    /// The peer's program instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
}

/// Why a peer left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaveReason {
    /// Left.
    Left,
    /// Lost.
    Lost,
    /// Replaced.
    Replaced,
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

/// Server → client frames.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame<'a> {
    /// We are in the room.
    Welcome {
        /// Version.
        version: u32,
        /// Room.
        room: Cow<'a, str>,
        /// Our id.
        peer_id: PeerId,
        /// Secret for resuming this id.
        token: Cow<'a, str>,
        /// True when an earlier id was taken back: links carry on, nobody is new.
        resumed: bool,
        /// Everyone already in the room.
        peers: Vec<PeerInfo>,
        /// STUN/TURN servers for WebRTC.
        #[serde(default)]
        ice_servers: Vec<IceServer>,
    },
    /// Someone entered the room.
    PeerJoined {
        /// Room.
        room: Cow<'a, str>,
        /// Who.
        peer: PeerInfo,
    },
    /// Someone left.
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
        /// Sender's id, as the server knows it.
        from: PeerId,
        /// Opaque payload; see [`SignalData`].
        data: Value,
    },
    /// The server refused something we sent.
    Error {
        /// Machine-readable code (`docs/signalling.md`, "Errors").
        code: Cow<'a, str>,
        /// Human-readable reason.
        message: String,
    },
    /// Frames for dashboards and later additions.
    #[serde(other)]
    Other,
}

/// The relay payload between peers: a session description or one trickled ICE candidate,
/// in the browser's JSON shape.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum SignalData {
    /// `{"sdp": {"type": "offer"|"answer", "sdp": "v=0..."}}`
    Sdp {
        /// The description.
        sdp: Sdp,
    },
    /// `{"candidate": "candidate:...", "sdpMid": "0", "sdpMLineIndex": 0}`
    Candidate {
        /// The candidate attribute.
        candidate: String,
        /// Media section id.
        #[serde(rename = "sdpMid", default)]
        sdp_mid: Option<String>,
        /// Media section index.
        #[serde(rename = "sdpMLineIndex", default)]
        sdp_m_line_index: Option<u16>,
    },
}

/// A session description: `type` is `offer` or `answer`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Sdp {
    /// `offer` or `answer`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The SDP text.
    pub sdp: String,
}
