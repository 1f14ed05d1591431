//! Signalling frames through the browser's own JSON, so the bundle compiles no JSON parser,
//! printer or float formatting of its own.
//!
//! - In: the socket's text goes through `JSON.parse`, then [`server_frame`] reads the frame
//!   types a room member acts on into the member's [`MemberServerFrame`], by the rules of
//!   `ackwire_signalling` (which the server and the native peer parse with serde): a
//!   missing `Option` field or a `null` one is `None`; a missing required field, or one of
//!   another type, refuses the frame; unknown fields are ignored. The match is over
//!   [`ServerFrameType`] without a wildcard, so every type of the schema has an answer: a
//!   dashboard's frame (`subscribed`, `stats`) is [`FrameError::NotForMembers`], a later
//!   server's type [`FrameError::UnknownType`]; the driver counts both in the member
//!   (`Member::note_unreadable_frame`) and logs them. The browser test suite checks it
//!   against serde on every frame type (`frames/tests.rs`).
//! - Out: [`to_js`] turns the member's serde types (frames, events, link snapshots) into plain
//!   JS objects with `serde-wasm-bindgen`; frames then go through `JSON.stringify`.
//!
//! JSON numbers are doubles in JavaScript: an id must be a whole number up to 2^53 − 1 (the
//! server hands out small ones).

use std::borrow::Cow;

use ackwire_room::member::MemberServerFrame;
use ackwire_signalling::{
    CertHash, ErrorCode, IceServer, LeaveReason, PeerId, PeerInfo, PeerKind, Role, Sdp, SdpKind,
    ServerFrame, ServerFrameType, SignalData, WebTransportInfo,
};
use js_sys::{Array, Reflect};
use serde::Serialize;
use wasm_bindgen::JsValue;

/// Why a server frame was refused. The member saw nothing of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum FrameError {
    /// The text is not JSON.
    #[error("unreadable server frame: not JSON")]
    NotJson,
    /// Not an object with a string `type`.
    #[error("unreadable server frame: not an object with a string `type`")]
    NoType,
    /// A frame type this version does not know (a later server's). Without its name: an
    /// error that owns nothing needs no drop code on every path of the decoder (the driver
    /// logs the frame itself).
    #[error("a server frame of a type this version does not know")]
    UnknownType,
    /// A frame for dashboards (`subscribed`, `stats`), which a member never subscribes to.
    #[error("a `{0}` frame is for dashboards, not room members")]
    NotForMembers(ServerFrameType),
    /// A field the frame type requires is missing, or a field has another type.
    #[error("unreadable `{frame}` frame: `{field}` must be {expected}")]
    Field {
        /// The frame type (or nested object) being read.
        frame: &'static str,
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A relayed signal that is neither a description nor a candidate.
    #[error("signal from peer {from} is not an SDP or ICE candidate")]
    BadSignal {
        /// Sender.
        from: PeerId,
    },
}

/// Reads one text frame of the signalling socket.
pub(crate) fn server_frame(text: &str) -> Result<MemberServerFrame<'static>, FrameError> {
    let value = js_sys::JSON::parse(text).map_err(|_| FrameError::NotJson)?;
    if !value.is_object() || Array::is_array(&value) {
        return Err(FrameError::NoType);
    }
    let name = get(&value, "type").as_string().ok_or(FrameError::NoType)?;
    let kind = ServerFrameType::from_name(&name).ok_or(FrameError::UnknownType)?;
    let frame = |frame| Fields {
        value: &value,
        frame,
    };
    Ok(match kind {
        ServerFrameType::Welcome => {
            let f = frame("welcome");
            ServerFrame::Welcome {
                version: f.u32("version")?,
                room: f.string("room")?.into(),
                peer_id: f.id("peer_id")?,
                token: f.string("token")?.into(),
                resumed: f.bool("resumed")?,
                peers: f.list("peers", "an array of peers", peer_info)?,
                ice_servers: Cow::Owned(match f.present("ice_servers") {
                    Some(_) => f.list("ice_servers", "an array of ICE servers", ice_server)?,
                    None => Vec::new(),
                }),
                network: f.opt_string("network")?.map(Cow::Owned),
            }
        }
        ServerFrameType::PeerJoined => {
            let f = frame("peer_joined");
            ServerFrame::PeerJoined {
                room: f.string("room")?.into(),
                peer: peer_info(&f.object("peer", "a peer")?)?,
            }
        }
        ServerFrameType::PeerUpdated => {
            let f = frame("peer_updated");
            ServerFrame::PeerUpdated {
                room: f.string("room")?.into(),
                peer: peer_info(&f.object("peer", "a peer")?)?,
            }
        }
        ServerFrameType::PeerLeft => {
            let f = frame("peer_left");
            let reason = match f.string("reason")?.as_str() {
                "left" => LeaveReason::Left,
                "lost" => LeaveReason::Lost,
                "replaced" => LeaveReason::Replaced,
                _ => return Err(f.wrong("reason", "left, lost or replaced")),
            };
            ServerFrame::PeerLeft {
                room: f.string("room")?.into(),
                peer_id: f.id("peer_id")?,
                reason,
            }
        }
        ServerFrameType::Signal => {
            let f = frame("signal");
            let from = f.id("from")?;
            let data = f
                .present("data")
                .ok_or_else(|| f.wrong("data", "present"))?;
            ServerFrame::Signal {
                from,
                data: signal_data(&data).ok_or(FrameError::BadSignal { from })?,
            }
        }
        ServerFrameType::IceServers => {
            let f = frame("ice_servers");
            ServerFrame::IceServers {
                ice_servers: Cow::Owned(f.list(
                    "ice_servers",
                    "an array of ICE servers",
                    ice_server,
                )?),
            }
        }
        ServerFrameType::Error => {
            let f = frame("error");
            ServerFrame::Error {
                code: ErrorCode::from_name(&f.string("code")?),
                message: f.string("message")?,
            }
        }
        ServerFrameType::Subscribed | ServerFrameType::Stats => {
            return Err(FrameError::NotForMembers(kind));
        }
    })
}

/// A Rust value as a plain JS object, as `JSON.parse` of its serde JSON would give.
pub(crate) fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .unwrap_or(JsValue::NULL)
}

/// A Rust value as the JSON text serde would write (the socket's frames).
pub(crate) fn to_json<T: Serialize + ?Sized>(value: &T) -> Option<String> {
    js_sys::JSON::stringify(&to_js(value))
        .ok()
        .and_then(|s| s.as_string())
}

fn get(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// The fields of one JSON object, named for errors.
struct Fields<'a> {
    value: &'a JsValue,
    frame: &'static str,
}

impl Fields<'_> {
    fn wrong(&self, field: &'static str, expected: &'static str) -> FrameError {
        FrameError::Field {
            frame: self.frame,
            field,
            expected,
        }
    }

    /// The field, unless it is missing or `null`.
    fn present(&self, field: &str) -> Option<JsValue> {
        Some(get(self.value, field)).filter(|v| !v.is_undefined() && !v.is_null())
    }

    fn string(&self, field: &'static str) -> Result<String, FrameError> {
        get(self.value, field)
            .as_string()
            .ok_or_else(|| self.wrong(field, "a string"))
    }

    fn opt_string(&self, field: &'static str) -> Result<Option<String>, FrameError> {
        self.present(field)
            .map(|v| v.as_string().ok_or_else(|| self.wrong(field, "a string")))
            .transpose()
    }

    fn bool(&self, field: &'static str) -> Result<bool, FrameError> {
        get(self.value, field)
            .as_bool()
            .ok_or_else(|| self.wrong(field, "true or false"))
    }

    fn whole(&self, field: &'static str, max: f64) -> Result<f64, FrameError> {
        get(self.value, field)
            .as_f64()
            .filter(|n| n.fract() == 0.0 && (0.0..=max).contains(n))
            .ok_or_else(|| self.wrong(field, "a whole number in range"))
    }

    fn id(&self, field: &'static str) -> Result<PeerId, FrameError> {
        // Above 2^53 − 1 a double no longer holds every whole number.
        self.whole(field, 9_007_199_254_740_991.0).map(|n| n as u64)
    }

    fn u32(&self, field: &'static str) -> Result<u32, FrameError> {
        self.whole(field, f64::from(u32::MAX)).map(|n| n as u32)
    }

    fn object(&self, field: &'static str, expected: &'static str) -> Result<JsValue, FrameError> {
        Some(get(self.value, field))
            .filter(|v| v.is_object() && !Array::is_array(v))
            .ok_or_else(|| self.wrong(field, expected))
    }

    fn list<T>(
        &self,
        field: &'static str,
        expected: &'static str,
        item: impl Fn(&JsValue) -> Result<T, FrameError>,
    ) -> Result<Vec<T>, FrameError> {
        let value = get(self.value, field);
        if !Array::is_array(&value) {
            return Err(self.wrong(field, expected));
        }
        Array::from(&value).iter().map(|v| item(&v)).collect()
    }
}

fn object<'a>(value: &'a JsValue, frame: &'static str) -> Result<Fields<'a>, FrameError> {
    if value.is_object() && !Array::is_array(value) {
        Ok(Fields { value, frame })
    } else {
        Err(FrameError::Field {
            frame,
            field: "(itself)",
            expected: "an object",
        })
    }
}

/// A peer. A browser links over WebRTC, WebTransport or a WebSocket only, so it does not read
/// a native's `udp_key`. A missing `role` is a mesh `peer`, as serde reads it.
fn peer_info(value: &JsValue) -> Result<PeerInfo, FrameError> {
    let f = object(value, "peer")?;
    let kind = match f.string("kind")?.as_str() {
        "browser" => PeerKind::Browser,
        "native" => PeerKind::Native,
        _ => return Err(f.wrong("kind", "browser or native")),
    };
    let role = match f.opt_string("role")?.as_deref() {
        None | Some("peer") => Role::Peer,
        Some("host") => Role::Host,
        Some("client") => Role::Client,
        Some(_) => return Err(f.wrong("role", "peer, host or client")),
    };
    let udp_addr = f
        .opt_string("udp_addr")?
        .map(|a| a.parse().map_err(|_| f.wrong("udp_addr", "an IP:port")))
        .transpose()?;
    let webtransport = f
        .present("webtransport")
        .map(|w| webtransport(&w))
        .transpose()?;
    Ok(PeerInfo {
        id: f.id("id")?,
        kind,
        role,
        udp_addr,
        instance: f.opt_string("instance")?,
        udp_key: None,
        network: f.opt_string("network")?,
        identity: f.opt_string("identity")?,
        webtransport,
    })
}

/// A host's WebTransport service: `url`, `cert_hashes` (missing: none) an array of 64 hex
/// digits each, and its WebSocket's URL if it has one. The server checked the URLs' shape;
/// they are not checked again here.
fn webtransport(value: &JsValue) -> Result<WebTransportInfo, FrameError> {
    let f = object(value, "webtransport")?;
    let url = f.string("url")?;
    let wrong = || f.wrong("cert_hashes", "an array of 64-hex-digit SHA-256 hashes");
    let hashes = get(value, "cert_hashes");
    let mut cert_hashes = Vec::new();
    if !hashes.is_undefined() {
        if !Array::is_array(&hashes) {
            return Err(wrong());
        }
        // A loop, not `Fields::list`: its collect costs the bundle 1 KB per item type.
        for hash in Array::from(&hashes).iter() {
            let hash = hash.as_string().and_then(|h| cert_hash(&h));
            cert_hashes.push(hash.ok_or_else(wrong)?);
        }
    }
    Ok(WebTransportInfo {
        url,
        cert_hashes,
        websocket: f.opt_string("websocket")?,
    })
}

/// 64 hex digits, either case, as `CertHash`'s `FromStr` reads them (the server writes them
/// lowercase), without its error text and its UTF-8 and radix parsing (less bundle).
fn cert_hash(text: &str) -> Option<CertHash> {
    let digits = text.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    let mut hash = [0u8; 32];
    for (byte, pair) in hash.iter_mut().zip(digits.chunks_exact(2)) {
        let nibble = |d: u8| char::from(d).to_digit(16);
        *byte = (nibble(pair[0])? << 4 | nibble(pair[1])?) as u8;
    }
    Some(CertHash(hash))
}

/// An ICE server: `urls` one string or an array of them.
fn ice_server(value: &JsValue) -> Result<IceServer, FrameError> {
    let f = object(value, "ice server")?;
    let urls = get(value, "urls");
    let urls = match urls.as_string() {
        Some(url) => vec![url],
        None if Array::is_array(&urls) => Array::from(&urls)
            .iter()
            .map(|u| u.as_string())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| f.wrong("urls", "a string or an array of strings"))?,
        None => return Err(f.wrong("urls", "a string or an array of strings")),
    };
    Ok(IceServer {
        urls,
        username: f.opt_string("username")?.unwrap_or_default(),
        credential: f.opt_string("credential")?.unwrap_or_default(),
    })
}

/// `{"sdp": {"type", "sdp"}}` or `{"candidate", "sdpMid"?, "sdpMLineIndex"?}`, tried in
/// that order (serde's `untagged`).
fn signal_data(value: &JsValue) -> Option<SignalData> {
    let f = object(value, "signal").ok()?;
    if let Ok(sdp) = f.object("sdp", "") {
        let d = Fields {
            value: &sdp,
            frame: "sdp",
        };
        let kind = match d.string("type").ok()?.as_str() {
            "offer" => SdpKind::Offer,
            "answer" => SdpKind::Answer,
            _ => return None,
        };
        if let Ok(sdp) = d.string("sdp") {
            return Some(SignalData::Sdp {
                sdp: Sdp { kind, sdp },
            });
        }
    }
    let index = f.present("sdpMLineIndex");
    let sdp_m_line_index = match index {
        None => None,
        Some(_) => Some(f.whole("sdpMLineIndex", f64::from(u16::MAX)).ok()? as u16),
    };
    Some(SignalData::Candidate {
        candidate: f.string("candidate").ok()?,
        sdp_mid: f.opt_string("sdpMid").ok()?,
        sdp_m_line_index,
    })
}

#[cfg(test)]
mod tests;
