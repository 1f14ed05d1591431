//! Why a call was refused: making a member, reading a signalling frame or a datagram, and
//! sending a message (with the budget that pushed back).

use std::net::SocketAddr;

use ackwire_core::ConnectionConfigError;

#[cfg(doc)] // named in the docs alone
use super::Member;
use super::{PeerId, ServerId};
use crate::core_link::RefusedDatagram;
use crate::delivery::{Budget, DeliveryError};
use crate::signalling::{InvalidApp, ServerFrameType};

/// Why a member could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemberError {
    /// The connection configuration is invalid.
    #[error("connection config: {0}")]
    Config(#[from] ConnectionConfigError),
    /// The application's declaration is invalid.
    #[error(transparent)]
    App(#[from] InvalidApp),
    /// The emulation settings are invalid.
    #[error("link emulation: {0}")]
    Emulation(#[from] ackwire_core::emulator::EmulatorError),
    /// The room name or the instance id breaks the name rule
    /// ([`is_valid_name`](crate::signalling::is_valid_name)).
    #[error("{what} \"{value}\": use {rule}", rule = crate::signalling::NAME_RULE)]
    Name {
        /// `room` or `instance`.
        what: &'static str,
        /// The value given.
        value: String,
    },
    /// Encrypted UDP links (`udp_keys`) need room for the 16-byte tag in every datagram.
    #[error(
        "max_datagram_size {size} leaves no room for the encryption tag: encrypted links need at least {min} bytes"
    )]
    DatagramTooSmall {
        /// The configured size.
        size: usize,
        /// The smallest size that works.
        min: usize,
    },
}

/// Why a signalling frame was refused. Nothing changed; the member counts it
/// ([`Member::unreadable_frames`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// Not a frame of the signalling protocol.
    #[error("unreadable server frame: {0}")]
    Malformed(serde_json::Error),
    /// A frame type this version does not know (a later server's), by its name.
    #[error("unknown server frame type \"{0}\"")]
    UnknownType(String),
    /// A frame for dashboards, which a member never subscribes to.
    #[error("a `{0}` frame is for dashboards, not room members")]
    NotForMembers(ServerFrameType),
    /// A relayed signal that is neither a description nor a candidate.
    #[error("signal from peer {from} is not an SDP or ICE candidate: {error}")]
    BadSignal {
        /// Sender.
        from: ServerId,
        /// What is wrong.
        error: serde_json::Error,
    },
}

/// Why a datagram was refused. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiveError {
    /// No link uses this transport (an old peer connection, or one never opened).
    #[error("no link on this transport")]
    UnknownTransport,
    /// No native of the room has this UDP address (kept briefly: it may be a newcomer whose
    /// join we have not heard of yet).
    #[error("no native of the room at {0}")]
    UnknownAddress(SocketAddr),
    /// The link's protocol refused it.
    #[error(transparent)]
    Refused(#[from] RefusedDatagram),
    /// A reliable message in it broke the member's framing (`docs/wire.md`, "Room members").
    #[error(transparent)]
    Delivery(#[from] DeliveryError),
}

/// Why a message was not sent. Nothing was queued anywhere, and nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// No peer with this id: never one of this member's, or gone.
    #[error("no peer {0}")]
    UnknownPeer(PeerId),
    /// An unreliable message to a peer whose link is not connected now (negotiating, lost,
    /// retrying): it would be stale by the time the link is back. (A reliable message is kept
    /// and carried to the next connection instead.)
    #[error("the link to peer {0} is not connected")]
    NotConnected(PeerId),
    /// The application declared no such channel.
    #[error("no channel {0} in the application's layout")]
    UnknownChannel(u8),
    /// Longer than the channel takes ([`Member::max_message_size`]).
    #[error("message of {len} bytes exceeds the {max}-byte maximum of channel {channel}")]
    TooLarge {
        /// The channel.
        channel: u8,
        /// The message length.
        len: usize,
        /// The channel's maximum.
        max: usize,
    },
    /// `send_latest` on a reliable channel: a reliable message is never replaced.
    #[error("channel {channel} is reliable: use send, not send_latest")]
    Reliable {
        /// The channel.
        channel: u8,
    },
    /// Backpressure: a budget for this peer is spent (its link is slower than the sender, or
    /// down, or the peer stopped reading) until it confirms what it has. Try again later;
    /// other peers are not affected.
    #[error(
        "{budget} to peer {peer} on channel {channel} is full ({used} of {limit}); try again later"
    )]
    Full {
        /// The peer.
        peer: PeerId,
        /// The channel.
        channel: u8,
        /// Which budget.
        budget: Budget,
        /// What it holds now (messages or bytes, as the budget counts).
        used: usize,
        /// What it holds at most.
        limit: usize,
    },
    /// The member left the room.
    #[error("the member left the room")]
    Closed,
}
