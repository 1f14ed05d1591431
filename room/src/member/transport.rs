//! The transports under the links, as the driver sees them: their ids and routes, what the
//! member asks it to run on one ([`Command`]) and what one reports back ([`TransportEvent`]).

use std::net::SocketAddr;

use serde::Serialize;

use super::ServerId;
use crate::signalling::{IceServer, SignalData};

/// A WebRTC peer connection attempt. A link gets a new one for every renegotiation, so
/// events of an old, closing peer connection can never touch the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct TransportId(pub u64);

/// Where a datagram travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// The data channel of this peer connection.
    WebRtc(TransportId),
    /// The member's UDP socket, to or from this address.
    Udp(SocketAddr),
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
    /// Close the peer connection; nothing more will be asked of it.
    ClosePeerConnection {
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
    /// The data channel opened.
    ChannelOpen,
    /// The data channel closed.
    ChannelClosed,
    /// The ICE connection state changed.
    Ice(IceState),
    /// The selected candidate pair's path ([`crate::webrtc::path_type`]).
    CandidateType(String),
    /// The WebRTC stack failed (a description refused, the connection failed).
    Failed(String),
}
