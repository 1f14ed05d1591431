//! The signalling messages this driver sends and understands (schema: `docs/signalling.md`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Signalling protocol version sent in every join.
pub(crate) const VERSION: u32 = 1;

/// Client → server frames.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Outgoing<'a> {
    Join {
        version: u32,
        room: &'a str,
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        resume: Option<Resume<'a>>,
    },
    Signal {
        to: u64,
        data: Value,
    },
    Stats {
        links: Vec<Value>,
    },
}

/// Proof of identity for taking back a peer id after the signalling link dropped.
#[derive(Debug, Serialize)]
pub(crate) struct Resume<'a> {
    pub(crate) peer_id: u64,
    pub(crate) token: &'a str,
}

/// A peer as the server describes it.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct PeerInfo {
    pub(crate) id: u64,
    pub(crate) kind: String,
}

/// Server → client frames this driver acts on; everything else is ignored.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Incoming {
    Welcome {
        peer_id: u64,
        token: String,
        resumed: bool,
        peers: Vec<PeerInfo>,
        #[serde(default)]
        ice_servers: Value,
    },
    PeerJoined {
        peer: PeerInfo,
    },
    PeerLeft {
        peer_id: u64,
        reason: String,
    },
    Signal {
        from: u64,
        data: SignalData,
    },
    Error {
        code: String,
        message: String,
    },
    #[serde(other)]
    Other,
}

/// The opaque relay payload, as this driver fills it: an SDP or a trickled ICE candidate.
#[derive(Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub(crate) enum SignalData {
    Sdp {
        sdp: Sdp,
    },
    Candidate {
        candidate: String,
        #[serde(rename = "sdpMid", default)]
        sdp_mid: Option<String>,
        #[serde(rename = "sdpMLineIndex", default)]
        sdp_m_line_index: Option<u16>,
    },
}

/// A session description: `type` is `offer` or `answer`.
#[derive(Debug, Deserialize, Serialize)]
pub(crate) struct Sdp {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) sdp: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welcome_from_the_signalling_doc_parses() {
        let text = r#"{"type":"welcome","version":1,"room":"lobby","peer_id":2,"token":"04a7","resumed":false,"peers":[{"id":1,"kind":"browser"}],"ice_servers":[]}"#;
        match serde_json::from_str::<Incoming>(text).unwrap() {
            Incoming::Welcome { peer_id, peers, .. } => {
                assert_eq!(peer_id, 2);
                assert_eq!(peers[0].id, 1);
            }
            other => panic!("not a welcome: {other:?}"),
        }
    }

    #[test]
    fn relayed_candidate_and_unknown_frames_parse() {
        let text = r#"{"type":"signal","from":1,"data":{"candidate":"candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host","sdpMid":"0"}}"#;
        assert!(matches!(
            serde_json::from_str::<Incoming>(text).unwrap(),
            Incoming::Signal {
                from: 1,
                data: SignalData::Candidate { .. }
            }
        ));
        let other = r#"{"type":"subscribed","rooms":[]}"#;
        assert!(matches!(
            serde_json::from_str::<Incoming>(other).unwrap(),
            Incoming::Other
        ));
    }

    #[test]
    fn join_serializes_as_documented() {
        let join = Outgoing::Join {
            version: VERSION,
            room: "lobby",
            kind: "browser",
            resume: None,
        };
        assert_eq!(
            serde_json::to_string(&join).unwrap(),
            r#"{"type":"join","version":1,"room":"lobby","kind":"browser"}"#
        );
    }
}
