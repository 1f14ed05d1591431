//! What peers relay to each other through the server: SDP and ICE candidates.

use serde::{Deserialize, Serialize};

/// The relay payload between peers: a session description or one trickled ICE candidate,
/// in the browser's JSON shape, or a client's WebTransport or WebSocket token.
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
    /// `{"webtransport": "<token>"}`: a client of a host room dials the host's WebTransport
    /// URL with this token ([`crate::webtransport::session_token`]); the host takes the session
    /// that shows it as this client's link. 32 lowercase hex digits.
    WebTransport {
        /// The link's token.
        webtransport: String,
    },
    /// `{"websocket": "<token>"}`: a client of a host room that reaches the host by neither
    /// WebTransport nor WebRTC dials the host's WebSocket URL
    /// ([`crate::WebTransportInfo::websocket`]) with this token; the host takes the
    /// connection that shows it. 32 lowercase hex digits.
    WebSocket {
        /// The link's token.
        websocket: String,
    },
}

/// What a session description is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SdpKind {
    /// The offerer's description.
    Offer,
    /// The answerer's.
    Answer,
}

impl SdpKind {
    /// `offer` or `answer`, as browsers name them.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Offer => "offer",
            Self::Answer => "answer",
        }
    }
}

/// A session description: `type` is `offer` or `answer`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Sdp {
    /// `offer` or `answer`.
    #[serde(rename = "type")]
    pub kind: SdpKind,
    /// The SDP text.
    pub sdp: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_of_another_kind_is_not_a_signal() {
        let text = r#"{"sdp":{"type":"pranswer","sdp":"v=0"}}"#;
        assert!(serde_json::from_str::<SignalData>(text).is_err());
        let offer = r#"{"sdp":{"type":"offer","sdp":"v=0"}}"#;
        assert!(matches!(
            serde_json::from_str::<SignalData>(offer).unwrap(),
            SignalData::Sdp {
                sdp: Sdp {
                    kind: SdpKind::Offer,
                    ..
                }
            }
        ));
    }
}
