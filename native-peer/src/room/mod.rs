//! `ackwire-peer join URL`: a native player in a room.
//!
//! The peer joins through the signalling server's `/ws` as kind `native` with its UDP
//! address, links to every browser in the room over a WebRTC data channel (the `webrtc`
//! crate) and to every other native over raw UDP, plays the demo (its dot circles the
//! field) and reports each link's stats once a second, exactly like a browser.
//!
//! Every decision about the room — links, roles, retries, identities across server restarts,
//! stats reports — is the room member's (`ackwire_room::member`, shared with the browser
//! driver). This module only moves bytes and events:
//! - [`signalling`]: one WebSocket connection at a time, opened when the member asks.
//! - [`webrtc`]: one RTCPeerConnection + data channel per WebRTC link attempt.
//! - [`driver`]: the loop: the member, the UDP socket, sessions, sockets, timers, console.
//!
//! Chat: the native greets each peer once when their link connects
//! (`hello from native peer N`) and answers every chat line from a browser peer with
//! `echo: <text>` on the reliable channel, so a player sees a reliable message arrive once.

pub mod driver;
pub mod signalling;
pub mod webrtc;

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

use clap::Args;

use crate::cli::{ArgError, CommonArgs};

/// `join` flags.
#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The room page's URL, e.g. http://127.0.0.1:8080/room/lobby.
    pub url: String,
    /// Local UDP address for links to other native peers. Default: every interface, a port
    /// chosen by the OS; `--bind 127.0.0.1:0` keeps the peer on this machine.
    #[arg(long, default_value = "0.0.0.0:0")]
    pub bind: SocketAddr,
    /// UDP address other natives send to (behind a NAT with a forwarded port: the public
    /// address). Default: the bound address, or with a wildcard `--bind` the address of the
    /// interface this machine reaches the signalling server through, with the bound port.
    #[arg(long, value_name = "IP:PORT")]
    pub advertise: Option<SocketAddr>,
    /// Local address WebRTC gathers ICE candidates on (port 0: any; a wildcard IP: every
    /// interface but loopback). Default: --bind's IP.
    #[arg(long, value_name = "IP:PORT")]
    pub ice_bind: Option<SocketAddr>,
    /// Public IP to put in WebRTC host candidates instead of the local one (1:1 NAT).
    #[arg(long, value_name = "IP")]
    pub public_ip: Option<IpAddr>,
    /// PEM certificates an https:// server's certificate must chain to, instead of the public
    /// roots: a private CA, or the server's own self-signed certificate.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// Pull the cable this many seconds after start: every datagram of every link is dropped
    /// (signalling stays up) for `--outage-for` seconds, so links are lost and recover, as in
    /// the page's "pull the cable" switch.
    #[arg(long, value_name = "SECS", requires = "outage_for")]
    pub outage_at: Option<f64>,
    /// How long the outage of `--outage-at` lasts.
    #[arg(long, value_name = "SECS", requires = "outage_at")]
    pub outage_for: Option<f64>,
    /// Reporting and emulation flags (emulation applies to each link, both directions).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Why `join` could not start or went on no longer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RoomError {
    /// The URL is not `http(s)://HOST[:PORT]/room/NAME`.
    #[error("room URL {url:?}: {reason}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A flag value is invalid.
    #[error(transparent)]
    Arg(#[from] ArgError),
    /// `--tls-ca` cannot be used: unreadable, no certificate in it, or an http:// room.
    #[error("--tls-ca {path}: {reason}")]
    TlsCa {
        /// The file given.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The UDP socket could not be bound.
    #[error("cannot bind UDP {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// Bound to a wildcard address, and no route to the signalling server tells which
    /// address other natives can reach.
    #[error(
        "--bind {bind} is a wildcard address and the route to {server} gives no address to advertise ({source}): give --advertise IP:PORT"
    )]
    NothingToAdvertise {
        /// The bound address.
        bind: SocketAddr,
        /// The signalling server's `host:port`.
        server: String,
        /// Why the route could not be found.
        source: std::io::Error,
    },
    /// The room member could not be set up (invalid emulation settings).
    #[error(transparent)]
    Member(#[from] ackwire_room::member::MemberError),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

/// Where the room is: the WebSocket URL and the room name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomUrl {
    /// `ws://HOST:PORT/ws` (`wss://` behind TLS).
    pub ws_url: String,
    /// The room name.
    pub room: String,
}

/// Parses a room page URL (`http(s)://HOST[:PORT]/room/NAME`, optionally with a trailing
/// `/dashboard`, query or fragment) into the WebSocket URL (`ws://`, or `wss://` for https)
/// and the room name.
pub fn parse_room_url(url: &str) -> Result<RoomUrl, RoomError> {
    let bad = |reason| RoomError::BadUrl {
        url: url.to_owned(),
        reason,
    };
    let (scheme, rest) = match url.split_once("://") {
        Some(("http" | "ws", rest)) => ("ws", rest),
        Some(("https" | "wss", rest)) => ("wss", rest),
        _ => return Err(bad("expected http(s)://HOST[:PORT]/room/NAME")),
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (host, path) = rest
        .split_once('/')
        .ok_or_else(|| bad("no /room/NAME path"))?;
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let room = path
        .strip_prefix("room/")
        .ok_or_else(|| bad("the path must be /room/NAME"))?
        .split('/')
        .next()
        .unwrap_or_default();
    let valid = (1..=64).contains(&room.len())
        && room
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !valid {
        return Err(bad("a room name is 1-64 characters of A-Z a-z 0-9 - _"));
    }
    Ok(RoomUrl {
        ws_url: format!("{scheme}://{host}/ws"),
        room: room.to_owned(),
    })
}

impl RoomUrl {
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
}

/// The address of the interface this machine reaches `server` (`host:port`) through, in the
/// family of `bind`: a UDP socket connected there picks the route, and nothing is sent.
pub fn route_to(server: &str, bind: SocketAddr) -> std::io::Result<IpAddr> {
    use std::net::ToSocketAddrs;
    let target = server
        .to_socket_addrs()?
        .find(|a| a.is_ipv4() == bind.is_ipv4())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no address of --bind's family",
            )
        })?;
    let probe = std::net::UdpSocket::bind(SocketAddr::new(bind.ip(), 0))?;
    probe.connect(target)?;
    Ok(probe.local_addr()?.ip())
}

/// Runs `join` until Ctrl-C, SIGTERM or `--duration`; the exit code says how it ended.
pub fn main(args: &JoinArgs) -> ExitCode {
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RoomError::Runtime)
        .and_then(|runtime| {
            runtime.block_on(async {
                let stop = async {
                    crate::peer::stop_signal().await;
                    tracing::info!("interrupted, leaving the room");
                };
                driver::run(args, stop).await
            })
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            match e {
                RoomError::BadUrl { .. }
                | RoomError::Arg(_)
                | RoomError::TlsCa { .. }
                | RoomError::NothingToAdvertise { .. } => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_page_urls_give_the_websocket_and_the_room() {
        let parsed = parse_room_url("http://127.0.0.1:8080/room/lobby").unwrap();
        assert_eq!(parsed.ws_url, "ws://127.0.0.1:8080/ws");
        assert_eq!(parsed.room, "lobby");
        let dashboard = parse_room_url("http://example.org/room/a-b_1/dashboard?x=1").unwrap();
        assert_eq!(dashboard.ws_url, "ws://example.org/ws");
        assert_eq!(dashboard.room, "a-b_1");
        let tls = parse_room_url("https://play.example.org/room/lobby").unwrap();
        assert_eq!(tls.ws_url, "wss://play.example.org/ws");
    }

    #[test]
    fn the_server_address_has_the_urls_port_or_the_schemes() {
        let server = |url: &str| parse_room_url(url).unwrap().server();
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
    fn a_wildcard_bind_advertises_the_interface_the_server_is_reached_through() {
        // The signalling server on loopback: loopback is the way there (nothing is sent).
        let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let ip = route_to("127.0.0.1:8080", any).unwrap();
        assert_eq!(ip, IpAddr::from([127, 0, 0, 1]));
        // No address of the bound family: a clear error, not a wrong address.
        let v6_only = route_to("[::1]:8080", any).unwrap_err();
        assert_eq!(v6_only.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn urls_without_a_valid_room_are_refused_with_the_reason() {
        for url in [
            "127.0.0.1:8080/room/lobby",
            "http://127.0.0.1:8080/",
            "http://127.0.0.1:8080/dashboard",
            "http://127.0.0.1:8080/room/",
            "http://127.0.0.1:8080/room/bad%20name",
            "ftp://example.org/room/lobby",
            "http:///room/lobby",
        ] {
            assert!(
                matches!(parse_room_url(url), Err(RoomError::BadUrl { .. })),
                "{url}"
            );
        }
    }
}
