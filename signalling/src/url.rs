//! Where a room is and how a join rides the socket's URL: [`RoomUrl`] and [`UrlJoin`].

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::{AppInfo, ClientFrame, InvalidApp, PeerKind, PublicKey, Role, VERSION, is_valid_name};

/// A join carried in the `/ws` URL's query (`?version=1&room=lobby&kind=browser`), so the
/// server's first frame is the welcome and joining costs no extra round trip. It stands for
/// the `join` frame with the same fields; a resume is always a frame, since a token does not
/// belong in a URL (proxies log them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlJoin {
    /// Must be [`VERSION`](crate::VERSION).
    pub version: u32,
    /// Room to enter (created on first join).
    pub room: String,
    /// Browser or native.
    pub kind: PeerKind,
    /// A native's UDP address for the other natives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_addr: Option<SocketAddr>,
    /// This program instance's id (see [`PeerInfo::instance`](crate::PeerInfo::instance)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// A native's public key for encrypted UDP links (see [`PeerInfo::udp_key`](crate::PeerInfo::udp_key)).
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
    /// Its role in the room ([`Role`]): absent for a mesh `peer`.
    #[serde(default, skip_serializing_if = "Role::is_peer")]
    pub role: Role,
    /// The join ticket from the game's backend ([`ticket`](crate::ticket)), for a server that
    /// requires one. Short-lived and bound to this room, role and application, so it may
    /// ride the URL where a resume token may not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket: Option<String>,
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
            role: Role::Peer,
            ticket: None,
        }
    }

    /// The same join, as `role`.
    pub fn with_role(self, role: Role) -> UrlJoin {
        UrlJoin { role, ..self }
    }

    /// The same join, carrying `ticket` (none: `None`).
    pub fn with_ticket(self, ticket: Option<String>) -> UrlJoin {
        UrlJoin { ticket, ..self }
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
        if !self.role.is_peer() {
            pairs.push(("role", self.role.as_str().to_owned()));
        }
        if let Some(ticket) = &self.ticket {
            pairs.push(("ticket", ticket.clone()));
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
            role: self.role,
            ticket: self.ticket,
            // A host's WebTransport URL and hashes ride its join frame, not the URL.
            webtransport: None,
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
    ///
    /// ```
    /// use ackwire_signalling::{PeerKind, RoomUrl, UrlJoin};
    ///
    /// let url = RoomUrl::parse("https://play.example.com/room/lobby", None).unwrap();
    /// assert_eq!(url.ws_url, "wss://play.example.com/ws");
    /// assert_eq!(url.room, "lobby");
    /// assert_eq!(url.server(), "play.example.com:443");
    /// // A fresh join rides the socket's URL: the server's first frame is the welcome.
    /// let join = UrlJoin::new("lobby", PeerKind::Browser);
    /// assert!(url.socket_url(Some(&join)).starts_with("wss://play.example.com/ws?"));
    /// assert!(RoomUrl::parse("http://127.0.0.1:8080/room/no%20spaces", None).is_err());
    /// ```
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
            return Err(bad(
                "the room name breaks the name rule (1-64 of A-Z a-z 0-9 - _)",
            ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChannelKind;

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
    fn a_url_join_carries_its_ticket_last_and_into_its_frame() {
        let ticket = "v1.AQAAAABxGK-AAAVhcmVuYQRwb25nCXVzZXItNDQxNw.tag-_0";
        let join = UrlJoin::new("arena", PeerKind::Browser)
            .with_role(Role::Client)
            .with_ticket(Some(ticket.into()));
        // Its characters are all unreserved: it rides the URL as it is.
        assert_eq!(
            join.query(),
            format!("version=1&room=arena&kind=browser&role=client&ticket={ticket}")
        );
        let ClientFrame::Join {
            ticket: carried, ..
        } = join.into_frame().unwrap()
        else {
            panic!("not a join");
        };
        assert_eq!(carried.as_deref(), Some(ticket));
        assert_eq!(UrlJoin::new("arena", PeerKind::Browser).ticket, None);
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
}
