//! Every refusal the server can send, each with a stable code for the error frame and metrics.

use ackwire_room::signalling::{PeerId, VERSION};

/// A request the server refused; sent to the client as `{"type":"error","code":..,"message":..}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignalError {
    /// The frame was not a known JSON message (bad JSON, unknown type, missing field, binary).
    #[error("malformed message: {0}")]
    Malformed(String),
    /// The frame was larger than the configured message size cap.
    #[error("message exceeds the {max}-byte limit")]
    MessageTooLarge {
        /// The limit in bytes.
        max: usize,
    },
    /// The connection sent faster than its rate limit; the message was dropped.
    #[error("rate limit exceeded; message dropped")]
    RateLimited,
    /// The join carried a protocol version this server does not speak.
    #[error("unsupported protocol version {0}; this server speaks {expected}", expected = VERSION)]
    UnsupportedVersion(u32),
    /// The room name is empty, too long or has characters outside `A-Z a-z 0-9 - _`.
    #[error("invalid room name {0:?}: use 1-64 of A-Z a-z 0-9 - _")]
    InvalidRoomName(String),
    /// The join's instance id is empty, too long or has characters outside `A-Z a-z 0-9 - _`.
    #[error("invalid instance {0:?}: use 1-64 of A-Z a-z 0-9 - _")]
    InvalidInstance(String),
    /// The room already holds the maximum number of peers.
    #[error("room {0:?} is full")]
    RoomFull(String),
    /// The server already holds the maximum number of rooms.
    #[error("the server holds too many rooms; try again later")]
    TooManyRooms,
    /// The join was inconsistent (e.g. a UDP address for a browser peer).
    #[error("invalid join: {0}")]
    InvalidJoin(&'static str),
    /// A room message arrived before a successful join.
    #[error("join a room first")]
    NotJoined,
    /// A second join on a connection that is already in a room.
    #[error("already joined room {0:?}")]
    AlreadyJoined(String),
    /// The signal's target is not a connected peer of the sender's room.
    #[error("no connected peer {0} in your room")]
    UnknownPeer(PeerId),
    /// The message claimed a sender id that is not the connection's own.
    #[error("peer id {claimed} is not yours")]
    PeerIdMismatch {
        /// Id the client claimed.
        claimed: PeerId,
    },
    /// A resume named an unknown or expired peer, another room, or a wrong token.
    #[error("cannot resume peer {0}: unknown, expired or wrong token")]
    ResumeRejected(PeerId),
    /// The join would create a room, and the client's address created its share of rooms in
    /// the last minute.
    #[error(
        "too many rooms created from your address; join an existing room or try again in a minute"
    )]
    RoomCreationLimited,
    /// The signal's target stopped reading its socket: the signal was dropped and the target
    /// is being disconnected.
    #[error("peer {0} is not reading; the signal was dropped")]
    PeerNotReading(PeerId),
    /// Watching every room needs the server's admin token, or a server listening on loopback.
    #[error("watching every room needs the server's admin token; watch one room instead")]
    AdminTokenRequired,
    /// Rooms are shared through Redis (`--redis`) and this server cannot reach it now: joins,
    /// resumes and new room watches wait until it can (peers already in rooms carry on).
    #[error("the server cannot reach its broker (Redis) now; try again shortly")]
    BrokerUnavailable,
}

impl SignalError {
    /// The stable code in error frames and the `code` label in `/metrics`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Malformed(_) => "malformed_message",
            Self::MessageTooLarge { .. } => "message_too_large",
            Self::RateLimited => "rate_limited",
            Self::UnsupportedVersion(_) => "unsupported_version",
            Self::InvalidRoomName(_) => "invalid_room_name",
            Self::InvalidInstance(_) => "invalid_instance",
            Self::RoomFull(_) => "room_full",
            Self::TooManyRooms => "too_many_rooms",
            Self::InvalidJoin(_) => "invalid_join",
            Self::NotJoined => "not_joined",
            Self::AlreadyJoined(_) => "already_joined",
            Self::UnknownPeer(_) => "unknown_peer",
            Self::PeerIdMismatch { .. } => "peer_id_mismatch",
            Self::ResumeRejected(_) => "resume_rejected",
            Self::RoomCreationLimited => "room_creation_limited",
            Self::PeerNotReading(_) => "peer_not_reading",
            Self::AdminTokenRequired => "admin_token_required",
            Self::BrokerUnavailable => "broker_unavailable",
        }
    }
}
