//! The signalling schema: every JSON frame spoken on the server's `/ws`, in both directions.
//! `docs/signalling.md` is its specification (fields, rules, errors and a worked exchange);
//! this module is its one implementation, used by the room members (browser and native) and
//! by the signal server (`ackwire-signal`) alike. The server checks more than the types
//! say (room names, sizes, rates, `udp_addr` only for natives, the version, `from`); those
//! rules live in the server.
//!
//! - A client sends [`ClientFrame`]s and reads [`ServerFrame`]s:
//!   `serde_json::from_str::<ServerFrame>(text)` gives an owned frame
//!   ([`ServerFrame<'static>`] is `DeserializeOwned`). A frame type this version does not
//!   know parses as [`ServerFrame::Other`], which a client ignores; a known type with a
//!   missing or ill-typed field is an error. Unknown fields are ignored everywhere.
//! - The server reads [`ClientFrame`]s and writes [`ServerFrame`]s built from borrowed data
//!   ([`Cow::Borrowed`]), so a fan-out frame is serialized once and a relayed SDP is never
//!   cloned.

use std::{borrow::Cow, net::SocketAddr};

use ackwire_core::ChannelKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The signalling protocol version: sent in every join, echoed in the welcome.
pub const VERSION: u32 = 1;

/// The one rule for every name in signalling (rooms, program instances, application ids):
/// 1–64 of `A-Z a-z 0-9 - _`, safe in URLs, logs and metrics.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The application a member plays, as it declares it in its join: an id, a version and its
/// channel layout. A room plays one application: the server refuses a join whose
/// declaration differs from the room's (`app_mismatch`), so members of different games, or of
/// incompatible releases of one game, never meet.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AppInfo {
    /// The application's id: 1–64 of `A-Z a-z 0-9 - _` ([`is_valid_name`]).
    pub id: String,
    /// Its protocol version: bump it with every release that cannot talk to the last.
    pub version: u32,
    /// Its channels, by index: 1 to [`AppInfo::MAX_CHANNELS`] kinds.
    pub channels: Vec<ChannelKind>,
}

/// Why an [`AppInfo`] is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidApp {
    /// The id breaks the name rule.
    #[error("application id \"{0}\": use 1-64 of A-Z a-z 0-9 - _")]
    Id(String),
    /// No channels, or more than [`AppInfo::MAX_CHANNELS`].
    #[error("{0} channels declared; 1 to {max} are allowed", max = AppInfo::MAX_CHANNELS)]
    ChannelCount(usize),
    /// An application in a URL without its `app_version`.
    #[error("an application needs its version (app_version)")]
    NoVersion,
    /// A channel list in a URL that is not comma-separated channel kinds.
    #[error(
        "channel \"{0}\" is not one of unreliable, unreliable-sequenced, reliable-ordered, reliable-unordered"
    )]
    ChannelKind(String),
}

impl AppInfo {
    /// Most channels an application declares: the core carries 64 per connection, and the
    /// room member keeps one for itself (`docs/wire.md`, "Room members").
    pub const MAX_CHANNELS: usize = 63;

    /// An application with this id, version and channel layout.
    pub fn new(id: impl Into<String>, version: u32, channels: impl Into<Vec<ChannelKind>>) -> Self {
        AppInfo {
            id: id.into(),
            version,
            channels: channels.into(),
        }
    }

    /// Checks the id and the channel count.
    pub fn validate(&self) -> Result<(), InvalidApp> {
        if !is_valid_name(&self.id) {
            return Err(InvalidApp::Id(self.id.chars().take(80).collect()));
        }
        if self.channels.is_empty() || self.channels.len() > Self::MAX_CHANNELS {
            return Err(InvalidApp::ChannelCount(self.channels.len()));
        }
        Ok(())
    }

    /// The channel list as a URL carries it: kinds by their wire names, comma-separated.
    pub fn channel_list(&self) -> String {
        self.channels
            .iter()
            .map(|&kind| channel_name(kind))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Reads [`channel_list`](Self::channel_list)'s form back.
    pub fn parse_channel_list(list: &str) -> Result<Vec<ChannelKind>, InvalidApp> {
        list.split(',')
            .map(|name| {
                serde_json::from_value(Value::String(name.to_owned()))
                    .map_err(|_| InvalidApp::ChannelKind(name.chars().take(40).collect()))
            })
            .collect()
    }
}

impl std::fmt::Display for AppInfo {
    /// `pong v2 (channels: unreliable-sequenced, reliable-ordered)`: how refusals name it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} v{} (channels: ", self.id, self.version)?;
        for (i, &kind) in self.channels.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{}", channel_name(kind))?;
        }
        f.write_str(")")
    }
}

/// A channel kind's wire name (`unreliable-sequenced`, ...).
pub fn channel_name(kind: ChannelKind) -> &'static str {
    match kind {
        ChannelKind::Unreliable => "unreliable",
        ChannelKind::UnreliableSequenced => "unreliable-sequenced",
        ChannelKind::ReliableOrdered => "reliable-ordered",
        ChannelKind::ReliableUnordered => "reliable-unordered",
        // A kind a later core adds, before this list learns its name.
        _ => "unknown",
    }
}

/// A peer's id in its room, assigned by the server. Ids are unique for one server's
/// lifetime; after a server restart they are handed out afresh (see [`PeerInfo::instance`]).
pub type PeerId = u64;

/// An X25519 public key, written as standard base64 (44 characters, as WireGuard writes
/// keys): a native's key for its encrypted UDP links (`udp_key`), and a listener's
/// fingerprint. Anything else is refused when parsed.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; 32]);

/// Not 44 characters of base64 for 32 bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a key must be 44 characters of base64 (32 bytes): \"{0}\"")]
pub struct InvalidPublicKey(pub String);

/// Standard base64's alphabet. A key is always 32 bytes, so its text is always 43 digits and
/// one `=`: written here rather than with the `base64` crate, whose general engine weighs
/// 1.3 KB gzipped in the browser's bundle for these 44 characters.
const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = [b'='; 44];
        // Digit `i` is the 6 bits from bit `6i` on, read through the 16 bits from its byte.
        for (i, digit) in text[..43].iter_mut().enumerate() {
            let (at, shift) = (6 * i / 8, 10 - 6 * i % 8);
            let window = u16::from(self.0[at]) << 8 | u16::from(*self.0.get(at + 1).unwrap_or(&0));
            *digit = BASE64[usize::from(window >> shift & 0x3F)];
        }
        // Only alphabet characters and `=` were written.
        f.write_str(std::str::from_utf8(&text).map_err(|_| std::fmt::Error)?)
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

impl std::str::FromStr for PublicKey {
    type Err = InvalidPublicKey;

    /// Exactly the text [`Display`](std::fmt::Display) writes: 43 digits, `=`, and the
    /// unused low bits of the last digit zero (no two texts for one key).
    fn from_str(text: &str) -> Result<PublicKey, InvalidPublicKey> {
        let invalid = || InvalidPublicKey(text.chars().take(60).collect());
        let bytes = text.as_bytes();
        if bytes.len() != 44 || bytes[43] != b'=' {
            return Err(invalid());
        }
        let mut key = [0u8; 32];
        for (i, &c) in bytes[..43].iter().enumerate() {
            let value = BASE64.iter().position(|&d| d == c).ok_or_else(invalid)? as u16;
            let (at, shift) = (6 * i / 8, 10 - 6 * i % 8);
            let window = value << shift;
            key[at] |= (window >> 8) as u8;
            match key.get_mut(at + 1) {
                Some(next) => *next |= window as u8,
                // The last digit's low 2 bits lie beyond the key: they must be zero.
                None if window as u8 != 0 => return Err(invalid()),
                None => {}
            }
        }
        Ok(PublicKey(key))
    }
}

impl Serialize for PublicKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PublicKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PublicKey, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

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

/// Proof of identity for taking back a peer id after the signalling link dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resume {
    /// The id the welcome gave.
    pub peer_id: PeerId,
    /// The welcome's secret token.
    pub token: String,
}

/// A join carried in the `/ws` URL's query (`?version=1&room=lobby&kind=browser`), so the
/// server's first frame is the welcome and joining costs no extra round trip. It stands for
/// the `join` frame with the same fields; a resume is always a frame, since a token does not
/// belong in a URL (proxies log them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlJoin {
    /// Must be [`VERSION`].
    pub version: u32,
    /// Room to enter (created on first join).
    pub room: String,
    /// Browser or native.
    pub kind: PeerKind,
    /// A native's UDP address for the other natives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_addr: Option<SocketAddr>,
    /// This program instance's id (see [`PeerInfo::instance`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// A native's public key for encrypted UDP links (see [`PeerInfo::udp_key`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_key: Option<PublicKey>,
    /// The application's id ([`AppInfo::id`]); with `app_version` and `channels`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// The application's version ([`AppInfo::version`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<u32>,
    /// The application's channels, comma-separated ([`AppInfo::channel_list`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<String>,
}

impl UrlJoin {
    /// The join of a fresh member: everything but the application, which
    /// [`with_app`](Self::with_app) adds.
    pub fn new(room: impl Into<String>, kind: PeerKind) -> UrlJoin {
        UrlJoin {
            version: VERSION,
            room: room.into(),
            kind,
            udp_addr: None,
            instance: None,
            udp_key: None,
            app: None,
            app_version: None,
            channels: None,
        }
    }

    /// The same join, declaring `app`.
    pub fn with_app(self, app: &AppInfo) -> UrlJoin {
        UrlJoin {
            app: Some(app.id.clone()),
            app_version: Some(app.version),
            channels: Some(app.channel_list()),
            ..self
        }
    }

    /// The application it declares: none when `app` is absent; refused when `app` comes
    /// without `app_version` or `channels`, or they are malformed.
    pub fn app_info(&self) -> Result<Option<AppInfo>, InvalidApp> {
        let Some(id) = &self.app else {
            return Ok(None);
        };
        let channels = match &self.channels {
            Some(list) => AppInfo::parse_channel_list(list)?,
            None => return Err(InvalidApp::ChannelCount(0)),
        };
        let version = self.app_version.ok_or(InvalidApp::NoVersion)?;
        let app = AppInfo::new(id.clone(), version, channels);
        app.validate()?;
        Ok(Some(app))
    }

    /// The query string, without the `?`: every value percent-encoded where it is not an
    /// unreserved URL character (an IPv6 `udp_addr`'s brackets and colons, say).
    pub fn query(&self) -> String {
        let mut pairs = vec![
            ("version", self.version.to_string()),
            ("room", self.room.clone()),
            ("kind", self.kind.as_str().to_owned()),
        ];
        if let Some(addr) = self.udp_addr {
            pairs.push(("udp_addr", addr.to_string()));
        }
        if let Some(instance) = &self.instance {
            pairs.push(("instance", instance.clone()));
        }
        if let Some(key) = self.udp_key {
            pairs.push(("udp_key", key.to_string()));
        }
        if let Some(app) = &self.app {
            pairs.push(("app", app.clone()));
        }
        if let Some(version) = self.app_version {
            pairs.push(("app_version", version.to_string()));
        }
        if let Some(channels) = &self.channels {
            pairs.push(("channels", channels.clone()));
        }
        let encode = |value: &str| {
            value
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                        char::from(b).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect::<String>()
        };
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// The `join` frame this stands for; refused when its application fields are not one
    /// application ([`app_info`](Self::app_info)).
    pub fn into_frame(self) -> Result<ClientFrame, InvalidApp> {
        let app = self.app_info()?;
        Ok(ClientFrame::Join {
            version: self.version,
            room: self.room,
            kind: self.kind,
            udp_addr: self.udp_addr,
            instance: self.instance,
            udp_key: self.udp_key,
            app,
            resume: None,
        })
    }
}

/// Where a room is: the signalling server's WebSocket URL and the room's name, from the URL
/// players share (`http(s)://HOST[:PORT]/room/NAME`) or from a server's URL and a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomUrl {
    /// `ws://HOST[:PORT]/ws` (`wss://` behind TLS).
    pub ws_url: String,
    /// The room name.
    pub room: String,
}

/// Why a URL names no room.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("room URL \"{url}\": {reason}")]
pub struct BadRoomUrl {
    /// The URL given.
    pub url: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl RoomUrl {
    /// Reads `url`: a room page (`http(s)://HOST[:PORT]/room/NAME`, optionally with a
    /// trailing `/dashboard`, a query or a fragment), or a server (`http(s)://` or `ws(s)://`
    /// `HOST[:PORT]`, any other path) with the room named by `room`. `https`/`wss` give
    /// `wss://`. A room in both places must be the same room.
    pub fn parse(url: &str, room: Option<&str>) -> Result<RoomUrl, BadRoomUrl> {
        let bad = |reason| BadRoomUrl {
            url: url.to_owned(),
            reason,
        };
        let (scheme, rest) = match url.split_once("://") {
            Some(("http" | "ws", rest)) => ("ws", rest),
            Some(("https" | "wss", rest)) => ("wss", rest),
            _ => return Err(bad("expected http(s)://HOST[:PORT]/room/NAME")),
        };
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let in_path = path
            .strip_prefix("room/")
            .map(|p| p.split('/').next().unwrap_or_default());
        let name = match (in_path, room) {
            (Some(a), Some(b)) if a != b => return Err(bad("names another room than the path")),
            (Some(name), _) | (None, Some(name)) => name,
            (None, None) => return Err(bad("the path must be /room/NAME, or the room named")),
        };
        if !is_valid_name(name) {
            return Err(bad("a room name is 1-64 characters of A-Z a-z 0-9 - _"));
        }
        Ok(RoomUrl {
            ws_url: format!("{scheme}://{host}/ws"),
            room: name.to_owned(),
        })
    }

    /// The signalling server's `host:port` (the scheme's port when the URL gives none).
    pub fn server(&self) -> String {
        let (scheme, rest) = self
            .ws_url
            .split_once("://")
            .unwrap_or(("ws", &self.ws_url));
        let host = rest.split('/').next().unwrap_or_default();
        let has_port = match host.rsplit_once(']') {
            Some((_, after)) => after.starts_with(':'),
            None => host.contains(':'),
        };
        if has_port {
            host.to_owned()
        } else {
            let port = if scheme == "wss" { 443 } else { 80 };
            format!("{host}:{port}")
        }
    }

    /// The URL a socket opens: with a fresh join in its query, the server's first frame is
    /// the welcome.
    pub fn socket_url(&self, join: Option<&UrlJoin>) -> String {
        match join {
            Some(join) => format!("{}?{}", self.ws_url, join.query()),
            None => self.ws_url.clone(),
        }
    }
}

/// A peer as the server describes it to the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInfo {
    /// Server-assigned id.
    pub id: PeerId,
    /// Browser or native.
    pub kind: PeerKind,
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
    /// Its current peers (those inside their reconnect grace included).
    pub peers: Vec<PeerInfo>,
}

/// Client → server frames.
///
/// The payloads the server relays unread are type parameters: [`Value`] where they are
/// opaque (the server, and any client that only reads JSON), typed where a room member
/// builds them ([`MemberFrame`](crate::member::MemberFrame)). Both serialize to the same
/// JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame<S = Value, L = Value> {
    /// Enter a room (created on first join), or take back an earlier id with `resume`.
    Join {
        /// Always [`VERSION`].
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
        /// Take back a peer id after a dropped link.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume: Option<Resume>,
    },
    /// Relay `data` (opaque to the server: a [`SignalData`] by convention) to a peer of the
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
    /// Leave the room now (the room is told at once; the id cannot be resumed).
    Leave,
}

/// Server → client frames.
///
/// The server builds them from borrowed data; a client gets owned ones
/// (`ServerFrame<'static>`), whatever the lifetime of the text it parsed. Unknown frame
/// types parse as [`ServerFrame::Other`]. `D` is the relayed payload (`data`, `links`):
/// opaque JSON by default; a room member reads signals as [`SignalData`]
/// ([`Member::handle_server_frame`](crate::member::Member::handle_server_frame)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame<'a, D = Cow<'a, Value>> {
    /// Answer to a successful `join`.
    Welcome {
        /// Protocol version spoken ([`VERSION`]).
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
        /// Payload, unchanged: a [`SignalData`] by convention.
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
    /// Any frame type this version does not know (a later server's addition): parsed so a
    /// client can ignore it. Never sent; serializing it is an error.
    #[serde(other, skip_serializing)]
    Other,
}

/// Why the server refused a request: the `code` of an `error` frame (`docs/signalling.md`,
/// "Errors", says what each means and what a client does about it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// Not a frame of the protocol (bad JSON, unknown type, missing field, binary).
    MalformedMessage,
    /// Larger than the server's message cap.
    MessageTooLarge,
    /// Sent faster than the connection's rate limit; the frame was dropped.
    RateLimited,
    /// A join with a protocol version the server does not speak.
    UnsupportedVersion,
    /// A room name that breaks the name rule ([`is_valid_name`]).
    InvalidRoomName,
    /// An instance id that breaks the name rule.
    InvalidInstance,
    /// The room holds its maximum number of peers.
    RoomFull,
    /// The server holds its maximum number of rooms.
    TooManyRooms,
    /// An inconsistent join (a UDP address for a browser, say).
    InvalidJoin,
    /// A join whose application declaration is malformed ([`InvalidApp`]).
    InvalidApp,
    /// The room plays another application (id, version or channels) than the join declares.
    AppMismatch,
    /// A room frame before a successful join.
    NotJoined,
    /// A second join on a joined connection.
    AlreadyJoined,
    /// A signal for a peer that is not in the sender's room.
    UnknownPeer,
    /// A `from` that is not the sender's own id.
    PeerIdMismatch,
    /// A resume the server cannot honour (unknown or expired id, wrong token): join afresh.
    ResumeRejected,
    /// The client's address created its share of rooms this minute.
    RoomCreationLimited,
    /// The signal's target stopped reading; the signal was dropped.
    PeerNotReading,
    /// Watching every room needs the admin token.
    AdminTokenRequired,
    /// The server cannot reach its broker (Redis) now: try again shortly.
    BrokerUnavailable,
    /// A code this version does not know (a later server's): the message says what it is.
    #[serde(other)]
    Unknown,
}

impl ErrorCode {
    /// The code on the wire (`room_full`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MalformedMessage => "malformed_message",
            Self::MessageTooLarge => "message_too_large",
            Self::RateLimited => "rate_limited",
            Self::UnsupportedVersion => "unsupported_version",
            Self::InvalidRoomName => "invalid_room_name",
            Self::InvalidInstance => "invalid_instance",
            Self::RoomFull => "room_full",
            Self::TooManyRooms => "too_many_rooms",
            Self::InvalidJoin => "invalid_join",
            Self::InvalidApp => "invalid_app",
            Self::AppMismatch => "app_mismatch",
            Self::NotJoined => "not_joined",
            Self::AlreadyJoined => "already_joined",
            Self::UnknownPeer => "unknown_peer",
            Self::PeerIdMismatch => "peer_id_mismatch",
            Self::ResumeRejected => "resume_rejected",
            Self::RoomCreationLimited => "room_creation_limited",
            Self::PeerNotReading => "peer_not_reading",
            Self::AdminTokenRequired => "admin_token_required",
            Self::BrokerUnavailable => "broker_unavailable",
            Self::Unknown => "unknown",
        }
    }

    /// Every code, for tests and documentation checks.
    pub const ALL: [ErrorCode; 21] = [
        Self::MalformedMessage,
        Self::MessageTooLarge,
        Self::RateLimited,
        Self::UnsupportedVersion,
        Self::InvalidRoomName,
        Self::InvalidInstance,
        Self::RoomFull,
        Self::TooManyRooms,
        Self::InvalidJoin,
        Self::InvalidApp,
        Self::AppMismatch,
        Self::NotJoined,
        Self::AlreadyJoined,
        Self::UnknownPeer,
        Self::PeerIdMismatch,
        Self::ResumeRejected,
        Self::RoomCreationLimited,
        Self::PeerNotReading,
        Self::AdminTokenRequired,
        Self::BrokerUnavailable,
        Self::Unknown,
    ];

    /// Reads a code from its wire name; a name this version does not know is
    /// [`Unknown`](Self::Unknown).
    pub fn from_name(name: &str) -> ErrorCode {
        Self::ALL
            .into_iter()
            .find(|code| code.as_str() == name)
            .unwrap_or(Self::Unknown)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    fn a_url_join_percent_encodes_what_is_not_unreserved() {
        let join = UrlJoin {
            udp_addr: Some("[2001:db8::1]:40000".parse().unwrap()),
            instance: Some("p-1".into()),
            udp_key: Some(PublicKey([0xFB; 32])),
            ..UrlJoin::new("lobby", PeerKind::Native)
        };
        assert_eq!(
            join.query(),
            "version=1&room=lobby&kind=native&udp_addr=%5B2001%3Adb8%3A%3A1%5D%3A40000&instance=p-1\
             &udp_key=%2B%2Fv7%2B%2Fv7%2B%2Fv7%2B%2Fv7%2B%2Fv7%2B%2Fv7%2B%2Fv7%2B%2Fv7%2B%2Fv7%2B%2Fv7%2B%2Fs%3D"
        );
        let browser = UrlJoin {
            kind: PeerKind::Browser,
            udp_addr: None,
            instance: None,
            udp_key: None,
            ..join
        };
        assert_eq!(browser.query(), "version=1&room=lobby&kind=browser");
        let app = AppInfo::new(
            "pong",
            3,
            [
                ChannelKind::UnreliableSequenced,
                ChannelKind::ReliableOrdered,
            ],
        );
        let with_app = browser.with_app(&app);
        assert_eq!(
            with_app.query(),
            "version=1&room=lobby&kind=browser&app=pong&app_version=3\
             &channels=unreliable-sequenced%2Creliable-ordered"
        );
        assert_eq!(with_app.app_info(), Ok(Some(app.clone())));
        let ClientFrame::Join { app: declared, .. } = with_app.into_frame().unwrap() else {
            panic!("not a join");
        };
        assert_eq!(declared, Some(app));
    }

    #[test]
    fn room_urls_give_the_websocket_and_the_room() {
        let parsed = RoomUrl::parse("http://127.0.0.1:8080/room/lobby", None).unwrap();
        assert_eq!(parsed.ws_url, "ws://127.0.0.1:8080/ws");
        assert_eq!(parsed.room, "lobby");
        let dashboard = RoomUrl::parse("http://example.org/room/a-b_1/dashboard?x=1", None);
        assert_eq!(dashboard.unwrap().room, "a-b_1");
        let tls = RoomUrl::parse("https://play.example.org/room/lobby", None).unwrap();
        assert_eq!(tls.ws_url, "wss://play.example.org/ws");
        // A server's URL and a name.
        let named = RoomUrl::parse("wss://play.example.org", Some("lobby")).unwrap();
        assert_eq!(
            (named.ws_url.as_str(), named.room.as_str()),
            ("wss://play.example.org/ws", "lobby")
        );
        assert_eq!(
            RoomUrl::parse("http://h/room/lobby", Some("lobby"))
                .unwrap()
                .room,
            "lobby"
        );
        for (url, room) in [
            ("127.0.0.1:8080/room/lobby", None),
            ("http://127.0.0.1:8080/", None),
            ("http://127.0.0.1:8080/dashboard", None),
            ("http://127.0.0.1:8080/room/", None),
            ("http://127.0.0.1:8080/room/bad%20name", None),
            ("ftp://example.org/room/lobby", None),
            ("http:///room/lobby", None),
            ("http://h/room/lobby", Some("other")),
            ("http://h", Some("bad name")),
        ] {
            assert!(RoomUrl::parse(url, room).is_err(), "{url} {room:?}");
        }
    }

    #[test]
    fn the_server_address_has_the_urls_port_or_the_schemes() {
        let server = |url: &str| RoomUrl::parse(url, None).unwrap().server();
        assert_eq!(server("http://127.0.0.1:8080/room/lobby"), "127.0.0.1:8080");
        assert_eq!(server("http://example.org/room/lobby"), "example.org:80");
        assert_eq!(server("https://example.org/room/lobby"), "example.org:443");
        assert_eq!(server("http://[::1]:9000/room/lobby"), "[::1]:9000");
        assert_eq!(
            server("https://[2001:db8::1]/room/lobby"),
            "[2001:db8::1]:443"
        );
    }

    #[test]
    fn an_app_is_a_valid_name_and_one_to_63_known_channels() {
        let ok = AppInfo::new("pong_2-x", 1, [ChannelKind::Unreliable]);
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(
            ok.to_string(),
            "pong_2-x v1 (channels: unreliable)",
            "refusals name an app this way"
        );
        let bad_id = AppInfo::new("pong game", 1, [ChannelKind::Unreliable]);
        assert!(matches!(bad_id.validate(), Err(InvalidApp::Id(_))));
        let none = AppInfo::new("pong", 1, []);
        assert_eq!(none.validate(), Err(InvalidApp::ChannelCount(0)));
        let many = AppInfo::new("pong", 1, vec![ChannelKind::Unreliable; 64]);
        assert_eq!(many.validate(), Err(InvalidApp::ChannelCount(64)));
        assert_eq!(
            AppInfo::parse_channel_list("reliable-unordered,unreliable"),
            Ok(vec![
                ChannelKind::ReliableUnordered,
                ChannelKind::Unreliable
            ])
        );
        assert!(matches!(
            AppInfo::parse_channel_list("reliable,teleport"),
            Err(InvalidApp::ChannelKind(_))
        ));
        // In a URL: an app without its channels is no app.
        let half = UrlJoin {
            app: Some("pong".into()),
            ..UrlJoin::new("lobby", PeerKind::Browser)
        };
        assert!(half.clone().into_frame().is_err());
        assert!(half.app_info().is_err());
        let unversioned = UrlJoin {
            app_version: None,
            ..UrlJoin::new("lobby", PeerKind::Browser).with_app(&ok)
        };
        assert_eq!(unversioned.app_info(), Err(InvalidApp::NoVersion));
    }

    #[test]
    fn error_codes_read_and_write_their_wire_names_and_unknown_ones_are_kept_apart() {
        for code in ErrorCode::ALL {
            let text = serde_json::to_string(&code).unwrap();
            assert_eq!(text, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&text).unwrap(), code);
            assert_eq!(ErrorCode::from_name(code.as_str()), code);
        }
        let later = r#"{"type":"error","code":"quantum_flux","message":"a later server's"}"#;
        assert_eq!(
            serde_json::from_str::<ServerFrame>(later).unwrap(),
            ServerFrame::Error {
                code: ErrorCode::Unknown,
                message: "a later server's".into()
            }
        );
    }

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

    #[test]
    fn a_public_key_reads_and_writes_exactly_the_standard_base64_text() {
        // Every byte value in every position, against a well-kept base64 implementation.
        use base64::Engine;
        let standard = base64::engine::general_purpose::STANDARD;
        for seed in 0u8..=255 {
            let key = PublicKey(core::array::from_fn(|i| {
                seed.wrapping_mul(31)
                    .wrapping_add((i as u8).wrapping_mul(97))
            }));
            let text = key.to_string();
            assert_eq!(text, standard.encode(key.0));
            assert_eq!(text.parse::<PublicKey>(), Ok(key));
        }
        // A text whose last digit carries bits beyond the key is another key's: refused, as
        // the crate refuses it.
        let mut loose = PublicKey([0; 32]).to_string().into_bytes();
        loose[42] = b'B';
        let loose = String::from_utf8(loose).unwrap();
        assert!(standard.decode(&loose).is_err());
        assert!(loose.parse::<PublicKey>().is_err());
    }

    #[test]
    fn a_public_key_is_44_characters_of_base64_and_nothing_else_parses() {
        let key = PublicKey(core::array::from_fn(|i| i as u8));
        let text = key.to_string();
        assert_eq!(text, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
        assert_eq!(text.parse::<PublicKey>(), Ok(key));
        assert_eq!(serde_json::to_string(&key).unwrap(), format!("\"{text}\""));
        for bad in [
            "",
            "AAEC",
            &text[..43],
            &format!("{text}AAAA"),
            "not base64 at all!!",
        ] {
            assert!(bad.parse::<PublicKey>().is_err(), "{bad}");
            assert!(serde_json::from_str::<PublicKey>(&format!("\"{bad}\"")).is_err());
        }
    }

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
        // A later server's frame type: ignorable, whatever its fields.
        let other = r#"{"type":"teleport","to":{"x":1},"when":[1,2]}"#;
        assert_eq!(
            serde_json::from_str::<ServerFrame>(other).unwrap(),
            ServerFrame::Other
        );
        // A known type with a missing field is still an error.
        assert!(serde_json::from_str::<ServerFrame>(r#"{"type":"signal","data":1}"#).is_err());
        assert!(serde_json::to_string(&ServerFrame::<Value>::Other).is_err());
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
            udp_addr: None,
            instance: Some("tab-1".into()),
            udp_key: None,
            network: None,
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
