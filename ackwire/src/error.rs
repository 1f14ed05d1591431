//! Why a [`Room`](crate::Room) could not be joined: [`JoinError`], on both targets.

use ackwire_room::member::MemberError;
use ackwire_signalling::BadRoomUrl;

/// Why [`Room::join`](crate::Room::join) could not start. What the server refuses later (a room
/// playing another game, say) comes as [`Event::Refused`](crate::Event::Refused).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// The URL names no room.
    #[error(transparent)]
    Url(#[from] BadRoomUrl),
    /// The configuration is invalid (the app, names, sizes, emulation).
    #[error(transparent)]
    Config(#[from] MemberError),
    /// A socket could not be bound: the UDP socket, a host's WebTransport or ICE-lite
    /// socket (UDP), or its WebSocket listener (TCP).
    #[cfg(not(target_arch = "wasm32"))]
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// Bound to a wildcard address, and no route to the signalling server tells which
    /// address other natives can reach.
    #[cfg(not(target_arch = "wasm32"))]
    #[error(
        "bound to {bind}, a wildcard address, and the route to {server} gives no address to advertise ({source}): set NativeOptions::advertise"
    )]
    NothingToAdvertise {
        /// The bound address.
        bind: std::net::SocketAddr,
        /// The signalling server's `host:port`.
        server: String,
        /// Why the route could not be found.
        source: std::io::Error,
    },
    /// `tls_ca` cannot be used: unreadable, no certificate in it, or an `http://` room of a
    /// member that is not a host room's client (nothing else is checked with it).
    #[cfg(not(target_arch = "wasm32"))]
    #[error("TLS trust {path}: {reason}")]
    TlsCa {
        /// The file given.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file of the host's [`certificate`](crate::NativeOptions::certificate) cannot be used:
    /// unreadable, not PEM, no certificate or key in it, or a key that is not the
    /// certificate's.
    #[cfg(not(target_arch = "wasm32"))]
    #[error("host certificate {path}: {reason}")]
    Certificate {
        /// The file: the chain or the key.
        path: std::path::PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The [`name`](crate::HostCertificate::name) of the host's certificate is not a DNS
    /// name (nor an IP address), or not one of the certificate's.
    #[cfg(not(target_arch = "wasm32"))]
    #[error("host certificate name {name:?}: {reason}")]
    CertificateName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// [`NativeOptions::webtransport_rotation`](crate::NativeOptions::webtransport_rotation)
    /// is zero or longer than 12 days (a certificate must be replaced within its 14 days).
    #[cfg(not(target_arch = "wasm32"))]
    #[error(
        "NativeOptions::webtransport_rotation must be more than zero and at most 12 days, not {0:?}"
    )]
    WebTransportRotation(std::time::Duration),
    /// No async runtime could be started for the room's driver.
    #[cfg(not(target_arch = "wasm32"))]
    #[error("cannot start the room's runtime: {0}")]
    Runtime(std::io::Error),
    /// The browser lacks what a room needs (a window, crypto, WebRTC).
    #[cfg(target_arch = "wasm32")]
    #[error("browser: {0}")]
    Browser(String),
    /// The server refused the join for a reason no retry cures
    /// ([`Room::joined`](crate::Room::joined); the `fatal` [`Event::Refused`](crate::Event::Refused)).
    #[error("refused ({code}): {message}")]
    Refused {
        /// Its code (`docs/signalling.md`, "Errors").
        code: ackwire_signalling::ErrorCode,
        /// The server's words.
        message: String,
    },
    /// The room was left: before it joined, or since.
    #[error("the room was left")]
    Left,
}
