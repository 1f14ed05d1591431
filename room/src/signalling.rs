//! The client side of the room's signalling frames: what a peer sends to `/ws` and what it
//! understands back (schema and a worked exchange: `docs/signalling.md`). The server has its
//! own, stricter types (`signal-server/src/protocol.rs`); the tests here hold both to the
//! document's examples.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Signalling protocol version sent in every join.
pub const VERSION: u32 = 1;

/// Client → server frames.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Outgoing {
    /// Enter the room, or take back our id with `resume`.
    Join {
        /// Always [`VERSION`].
        version: u32,
        /// Room name.
        room: String,
        /// Always `native` here.
        kind: &'static str,
        /// Where other natives reach our UDP socket.
        #[serde(skip_serializing_if = "Option::is_none")]
        udp_addr: Option<String>,
        /// Our previous id and its token.
        #[serde(skip_serializing_if = "Option::is_none")]
        resume: Option<Resume>,
    },
    /// Relay `data` (an SDP or an ICE candidate) to peer `to`.
    Signal {
        /// Recipient peer id.
        to: u64,
        /// Opaque payload: a [`SignalData`] as JSON.
        data: Value,
    },
    /// Our links' statistics, for dashboards.
    Stats {
        /// One entry per link: `{peer, transport, stats}`.
        links: Vec<Value>,
    },
}

/// Proof of identity for taking back a peer id after the signalling link dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resume {
    /// The id the welcome gave us.
    pub peer_id: u64,
    /// The welcome's secret token.
    pub token: String,
}

/// A peer as the server describes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PeerInfo {
    /// Server-assigned id.
    pub id: u64,
    /// `browser` or `native`.
    pub kind: String,
    /// A native peer's UDP address.
    #[serde(default)]
    pub udp_addr: Option<String>,
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

/// Server → client frames the driver acts on; everything else is [`Incoming::Other`].
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Incoming {
    /// We are in the room.
    Welcome {
        /// Our id.
        peer_id: u64,
        /// Secret for resuming this id.
        token: String,
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
        /// Who.
        peer: PeerInfo,
    },
    /// Someone left (`reason`: `left` or `lost`).
    PeerLeft {
        /// Who.
        peer_id: u64,
        /// Why.
        reason: String,
    },
    /// A relayed signal.
    Signal {
        /// Sender's id, as the server knows it.
        from: u64,
        /// Opaque payload; see [`SignalData`].
        data: Value,
    },
    /// The server refused something we sent.
    Error {
        /// Machine-readable code (`docs/signalling.md`, "Errors").
        code: String,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welcome_from_the_signalling_doc_parses() {
        let text = r#"{"type":"welcome","version":1,"room":"lobby","peer_id":2,"token":"04a7","resumed":false,"peers":[{"id":1,"kind":"browser"},{"id":3,"kind":"native","udp_addr":"127.0.0.1:40000"}],"ice_servers":[{"urls":"stun:stun.example.org:3478"}]}"#;
        match serde_json::from_str::<Incoming>(text).unwrap() {
            Incoming::Welcome {
                peer_id,
                peers,
                ice_servers,
                ..
            } => {
                assert_eq!(peer_id, 2);
                assert_eq!(peers[0].id, 1);
                assert_eq!(peers[1].udp_addr.as_deref(), Some("127.0.0.1:40000"));
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
        let Incoming::Signal { from: 1, data } = serde_json::from_str::<Incoming>(text).unwrap()
        else {
            panic!("not a signal");
        };
        assert!(matches!(
            serde_json::from_value::<SignalData>(data).unwrap(),
            SignalData::Candidate { .. }
        ));
        let other = r#"{"type":"subscribed","rooms":[]}"#;
        assert!(matches!(
            serde_json::from_str::<Incoming>(other).unwrap(),
            Incoming::Other
        ));
    }

    #[test]
    fn joins_serialize_as_documented() {
        let join = Outgoing::Join {
            version: VERSION,
            room: "lobby".into(),
            kind: "browser",
            udp_addr: None,
            resume: None,
        };
        assert_eq!(
            serde_json::to_string(&join).unwrap(),
            r#"{"type":"join","version":1,"room":"lobby","kind":"browser"}"#
        );
        let native = Outgoing::Join {
            version: VERSION,
            room: "lobby".into(),
            kind: "native",
            udp_addr: Some("127.0.0.1:40000".into()),
            resume: Some(Resume {
                peer_id: 7,
                token: "t".into(),
            }),
        };
        assert_eq!(
            serde_json::to_string(&native).unwrap(),
            r#"{"type":"join","version":1,"room":"lobby","kind":"native","udp_addr":"127.0.0.1:40000","resume":{"peer_id":7,"token":"t"}}"#
        );
    }
}
