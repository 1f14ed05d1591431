//! The transports under the links, as the driver sees them: their ids and routes, what the
//! member asks it to run on one ([`Command`]) and what one reports back ([`TransportEvent`]).

use std::net::SocketAddr;

use serde::Serialize;

use super::ServerId;
use crate::signalling::{IceServer, SignalData, WebTransportInfo};

/// A transport attempt: a WebRTC peer connection, a WebTransport session or a WebSocket. A link gets a new
/// one for every attempt, so events of an old, closing one can never touch the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct TransportId(pub u64);

/// The largest core packet on a WebTransport link: what the tightest link carries (an
/// encrypted UDP link's 1,200 bytes less its 16-byte tag), so every unreliable message
/// [`Member::max_message_size`](super::Member::max_message_size) allows fits one datagram.
/// Firefox takes datagrams of at most 1,190 bytes from a host (it advertises a 1,200-byte
/// DATAGRAM frame), and a host's QUIC starts with 1,250-byte packets (Chromium's size).
pub const WEBTRANSPORT_DATAGRAM: usize = 1184;
const _: () = assert!(
    WEBTRANSPORT_DATAGRAM <= 1190,
    "Firefox takes no more from a host"
);

/// Where a datagram travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// The data channel of this peer connection.
    WebRtc(TransportId),
    /// The member's UDP socket, to or from this address.
    Udp(SocketAddr),
    /// The unreliable datagrams of this WebTransport session.
    WebTransport(TransportId),
    /// The binary messages of this WebSocket, one core packet each (in order, none lost: TCP
    /// carries them).
    WebSocket(TransportId),
}

/// What carries a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// Raw UDP between two natives.
    Udp,
    /// A WebRTC data channel (unordered, 0 retransmits).
    #[serde(rename = "webrtc")]
    WebRtc,
    /// WebTransport datagrams between a browser and a host room's host (HTTP/3 over QUIC,
    /// unreliable and unordered).
    #[serde(rename = "webtransport")]
    WebTransport,
    /// A WebSocket between a client and a host room's host, the last resort (no UDP or no
    /// WebRTC on the client's side): the core's packets ride one TCP stream, so a lost
    /// segment holds back the ones behind it.
    #[serde(rename = "websocket")]
    WebSocket,
}

/// An ICE connection state, as both WebRTC stacks name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IceState {
    /// Gathering or not started.
    New,
    /// Checking candidate pairs.
    Checking,
    /// A pair works.
    Connected,
    /// Checks are done.
    Completed,
    /// Connectivity was lost; it may come back.
    Disconnected,
    /// No pair works.
    Failed,
    /// Closed.
    Closed,
}

/// What the driver runs on a transport.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Create a peer connection with the one pre-negotiated data channel
    /// ([`crate::webrtc::DATA_CHANNEL`]). With `offer`, create the offer and set it locally;
    /// its SDP and candidates come back as [`TransportEvent::LocalSignal`]. A browser driver
    /// may instead adopt the offering connection its page opened to `peer` while the driver
    /// loaded (its offer already sent): it then reports what that connection reached.
    OpenPeerConnection {
        /// The new transport.
        transport: TransportId,
        /// The peer, by its id in the current server session.
        peer: ServerId,
        /// Whether we offer.
        offer: bool,
        /// STUN/TURN servers from the welcome.
        ice_servers: Vec<IceServer>,
    },
    /// Apply the remote's description (answering an offer) or candidate. Report
    /// [`TransportEvent::RemoteDescriptionSet`] once a description is set; candidates are
    /// only given after that.
    ApplyRemoteSignal {
        /// Which transport.
        transport: TransportId,
        /// The signal.
        data: SignalData,
    },
    /// A client of a host room dials the host's WebTransport `service` (browsers): the
    /// driver makes the link's token (or adopts the session its page opened to `peer` while
    /// the driver loaded, token and all) and reports it as a [`TransportEvent::LocalSignal`]
    /// ([`SignalData::WebTransport`]) unless its page sent it already; then
    /// [`TransportEvent::ChannelOpen`] once the session is ready, or
    /// [`TransportEvent::Failed`]. Datagrams go both ways on [`Route::WebTransport`].
    OpenWebTransport {
        /// The new transport.
        transport: TransportId,
        /// The host, by its id in the current server session.
        peer: ServerId,
        /// Its URL and certificate hashes, from its `peerjoin` or the welcome.
        service: WebTransportInfo,
    },
    /// The host takes the WebTransport session that shows `token` in its path as this
    /// transport (a session that came before the token is held until it comes):
    /// [`TransportEvent::ChannelOpen`] once the session is accepted.
    AcceptWebTransport {
        /// The new transport.
        transport: TransportId,
        /// The client's token ([`crate::signalling::webtransport::session_token`]).
        token: String,
    },
    /// A client of a host room dials the host's WebSocket (`service.websocket`): the driver
    /// makes the link's token, reports it as a [`TransportEvent::LocalSignal`]
    /// ([`SignalData::WebSocket`]), dials [`WebTransportInfo::websocket_url`] with it, and
    /// reports [`TransportEvent::ChannelOpen`] once it is open,
    /// [`TransportEvent::ChannelClosed`] once it closes, or [`TransportEvent::Failed`];
    /// packets go both ways on [`Route::WebSocket`], one per binary message.
    OpenWebSocket {
        /// The new transport.
        transport: TransportId,
        /// The host's service, with its WebSocket URL.
        service: WebTransportInfo,
    },
    /// The host takes the WebSocket that shows `token` in its path as this transport (one
    /// that came before the token is held until it comes): [`TransportEvent::ChannelOpen`]
    /// once it is taken.
    AcceptWebSocket {
        /// The new transport.
        transport: TransportId,
        /// The client's token.
        token: String,
    },
    /// Close the transport (a peer connection, a session or a WebSocket); nothing more will
    /// be asked of it.
    CloseTransport {
        /// Which transport.
        transport: TransportId,
    },
}

/// What a transport reports.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportEvent {
    /// Our description or a trickled candidate, to relay to the peer.
    LocalSignal(SignalData),
    /// The remote description is set (candidates may be added now).
    RemoteDescriptionSet,
    /// The data channel opened (a WebTransport session: it is ready).
    ChannelOpen,
    /// The data channel closed (a WebTransport session: it closed).
    ChannelClosed,
    /// The ICE connection state changed.
    Ice(IceState),
    /// The selected candidate pair's path ([`crate::webrtc::path_type`]).
    CandidateType(String),
    /// The transport failed (a description refused, the connection failed, a WebTransport
    /// session refused or unreachable).
    Failed(String),
}
