//! The `code` of an `error` frame.

use serde::{Deserialize, Serialize};

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
    /// A room name that breaks the name rule ([`is_valid_name`](crate::is_valid_name)).
    InvalidRoomName,
    /// An instance id that breaks the name rule.
    InvalidInstance,
    /// The room holds its maximum number of peers.
    RoomFull,
    /// The server holds its maximum number of rooms.
    TooManyRooms,
    /// An inconsistent join (a UDP address for a browser, say).
    InvalidJoin,
    /// A join whose application declaration is malformed ([`InvalidApp`](crate::InvalidApp)).
    InvalidApp,
    /// The room plays another application (id, version or channels) than the join declares.
    AppMismatch,
    /// A join whose role belongs in the other topology: a `peer` joining a host room, or a
    /// `host` or `client` joining a mesh.
    TopologyMismatch,
    /// A second `host` joining a host room whose host is connected.
    HostTaken,
    /// A signal between two clients of a host room: clients link to the host alone.
    ClientToClient,
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
    /// The server admits joins only with a ticket, and the join carried none.
    TicketMissing,
    /// The join's ticket has expired: get a fresh one from the game's backend.
    TicketExpired,
    /// The join's ticket is not one the server accepts: malformed, of an unknown format
    /// version, signed with another secret or altered, or for another application.
    TicketInvalid,
    /// The join's ticket is for another room.
    TicketWrongRoom,
    /// The join's ticket is for another role.
    TicketWrongRole,
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
            Self::TopologyMismatch => "topology_mismatch",
            Self::HostTaken => "host_taken",
            Self::ClientToClient => "client_to_client",
            Self::NotJoined => "not_joined",
            Self::AlreadyJoined => "already_joined",
            Self::UnknownPeer => "unknown_peer",
            Self::PeerIdMismatch => "peer_id_mismatch",
            Self::ResumeRejected => "resume_rejected",
            Self::RoomCreationLimited => "room_creation_limited",
            Self::PeerNotReading => "peer_not_reading",
            Self::AdminTokenRequired => "admin_token_required",
            Self::BrokerUnavailable => "broker_unavailable",
            Self::TicketMissing => "ticket_missing",
            Self::TicketExpired => "ticket_expired",
            Self::TicketInvalid => "ticket_invalid",
            Self::TicketWrongRoom => "ticket_wrong_room",
            Self::TicketWrongRole => "ticket_wrong_role",
            Self::Unknown => "unknown",
        }
    }

    /// Every code, for tests and documentation checks.
    pub const ALL: [ErrorCode; 29] = [
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
        Self::TopologyMismatch,
        Self::HostTaken,
        Self::ClientToClient,
        Self::NotJoined,
        Self::AlreadyJoined,
        Self::UnknownPeer,
        Self::PeerIdMismatch,
        Self::ResumeRejected,
        Self::RoomCreationLimited,
        Self::PeerNotReading,
        Self::AdminTokenRequired,
        Self::BrokerUnavailable,
        Self::TicketMissing,
        Self::TicketExpired,
        Self::TicketInvalid,
        Self::TicketWrongRoom,
        Self::TicketWrongRole,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServerFrame;

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
}
