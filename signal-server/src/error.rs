//! Every refusal the server can send, each with a stable code for the error frame and metrics.

use ackwire_signalling::rules::{AppMismatch, RuleError};
use ackwire_signalling::ticket::TicketError;
use ackwire_signalling::{AppInfo, ErrorCode, InvalidApp, NAME_RULE, PeerId, VERSION};

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
    #[error("invalid room name {0:?}: use {NAME_RULE}")]
    InvalidRoomName(String),
    /// The join's instance id is empty, too long or has characters outside `A-Z a-z 0-9 - _`.
    #[error("invalid instance {0:?}: use {NAME_RULE}")]
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
    /// The join's application declaration is malformed: an id that breaks the name rule, no
    /// channels or too many, or (in the URL) an unknown channel kind or `app` without
    /// `channels`.
    #[error("invalid application in the join: {0}")]
    InvalidApp(#[from] InvalidApp),
    /// The room plays another application than the join declares (another id, version or
    /// channel layout, or one declares an application and the other none): members that
    /// could not understand each other never meet.
    #[error("{0}")]
    AppMismatch(Box<AppMismatch>),
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
    /// Rooms are shared through Redis (`--redis`) and this server cannot reach it now, or its
    /// task that talks to Redis has stopped: joins, resumes, new room watches and signals to
    /// peers on other servers are refused until it can (peers already in rooms carry on).
    #[error("the server cannot reach its broker (Redis) now; try again shortly")]
    BrokerUnavailable,
    /// A room rule refused under a code of its own, with its own message (a host room's
    /// `topology_mismatch`, `host_taken`, `client_to_client`). Nothing changed.
    #[error("{0}")]
    Rule(RuleError),
    /// The server requires join tickets (`--ticket-secret-file`) and the join's is missing,
    /// expired, not one it accepts, or for another room or role (`ticket_missing`,
    /// `ticket_expired`, `ticket_invalid`, `ticket_wrong_room`, `ticket_wrong_role`). Checked
    /// before the join touches any room: nothing changed. The message never quotes the ticket.
    #[error("{0}")]
    Ticket(TicketError),
}

impl SignalError {
    /// The stable code in error frames; its name ([`ErrorCode::as_str`]) is the `code` label
    /// in `/metrics`.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Malformed(_) => ErrorCode::MalformedMessage,
            Self::MessageTooLarge { .. } => ErrorCode::MessageTooLarge,
            Self::RateLimited => ErrorCode::RateLimited,
            Self::UnsupportedVersion(_) => ErrorCode::UnsupportedVersion,
            Self::InvalidRoomName(_) => ErrorCode::InvalidRoomName,
            Self::InvalidInstance(_) => ErrorCode::InvalidInstance,
            Self::RoomFull(_) => ErrorCode::RoomFull,
            Self::TooManyRooms => ErrorCode::TooManyRooms,
            Self::InvalidJoin(_) => ErrorCode::InvalidJoin,
            Self::InvalidApp(_) => ErrorCode::InvalidApp,
            Self::AppMismatch(_) => ErrorCode::AppMismatch,
            Self::NotJoined => ErrorCode::NotJoined,
            Self::AlreadyJoined(_) => ErrorCode::AlreadyJoined,
            Self::UnknownPeer(_) => ErrorCode::UnknownPeer,
            Self::PeerIdMismatch { .. } => ErrorCode::PeerIdMismatch,
            Self::ResumeRejected(_) => ErrorCode::ResumeRejected,
            Self::RoomCreationLimited => ErrorCode::RoomCreationLimited,
            Self::PeerNotReading(_) => ErrorCode::PeerNotReading,
            Self::AdminTokenRequired => ErrorCode::AdminTokenRequired,
            Self::BrokerUnavailable => ErrorCode::BrokerUnavailable,
            Self::Rule(err) => err.code(),
            Self::Ticket(err) => err.code(),
        }
    }
}

impl SignalError {
    /// [`SignalError::AppMismatch`]: `room` plays `room_app`, the join declared `joining`.
    pub fn app_mismatch(
        room: impl Into<String>,
        room_app: Option<AppInfo>,
        joining: Option<AppInfo>,
    ) -> SignalError {
        RuleError::app_mismatch(room, room_app, joining).into()
    }
}

impl From<RuleError> for SignalError {
    /// A room rule's refusal, under the same code.
    fn from(err: RuleError) -> SignalError {
        match err {
            RuleError::RoomFull(room) => SignalError::RoomFull(room),
            RuleError::AppMismatch(mismatch) => SignalError::AppMismatch(mismatch),
            RuleError::ResumeRejected(peer) => SignalError::ResumeRejected(peer),
            RuleError::NotJoined => SignalError::NotJoined,
            RuleError::UnknownPeer(peer) => SignalError::UnknownPeer(peer),
            // Its code says it all (a host room's refusals, and any later rule's).
            other => SignalError::Rule(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An app with these channels (`reliable-ordered,unreliable`, as a URL lists them).
    fn app(id: &str, version: u32, channels: &str) -> AppInfo {
        AppInfo::new(id, version, AppInfo::parse_channel_list(channels).unwrap())
    }

    /// One of each variant. `slot` matches without a wildcard, so a new variant does not
    /// compile until it has a slot, and the test fails until it is listed here.
    fn one_of_each() -> Vec<SignalError> {
        let pong = app("pong", 2, "reliable-ordered");
        vec![
            SignalError::Malformed("x".into()),
            SignalError::MessageTooLarge { max: 1 },
            SignalError::RateLimited,
            SignalError::UnsupportedVersion(9),
            SignalError::InvalidRoomName("a b".into()),
            SignalError::InvalidInstance("a b".into()),
            SignalError::RoomFull("r".into()),
            SignalError::TooManyRooms,
            SignalError::InvalidJoin("x"),
            SignalError::InvalidApp(InvalidApp::ChannelCount(0)),
            SignalError::app_mismatch("r", Some(pong), None),
            SignalError::NotJoined,
            SignalError::AlreadyJoined("r".into()),
            SignalError::UnknownPeer(1),
            SignalError::PeerIdMismatch { claimed: 1 },
            SignalError::ResumeRejected(1),
            SignalError::RoomCreationLimited,
            SignalError::PeerNotReading(1),
            SignalError::AdminTokenRequired,
            SignalError::BrokerUnavailable,
            SignalError::Rule(RuleError::ClientToClient(1)),
            SignalError::Ticket(TicketError::Missing),
        ]
    }

    fn slot(err: &SignalError) -> usize {
        match err {
            SignalError::Malformed(_) => 0,
            SignalError::MessageTooLarge { .. } => 1,
            SignalError::RateLimited => 2,
            SignalError::UnsupportedVersion(_) => 3,
            SignalError::InvalidRoomName(_) => 4,
            SignalError::InvalidInstance(_) => 5,
            SignalError::RoomFull(_) => 6,
            SignalError::TooManyRooms => 7,
            SignalError::InvalidJoin(_) => 8,
            SignalError::InvalidApp(_) => 9,
            SignalError::AppMismatch(_) => 10,
            SignalError::NotJoined => 11,
            SignalError::AlreadyJoined(_) => 12,
            SignalError::UnknownPeer(_) => 13,
            SignalError::PeerIdMismatch { .. } => 14,
            SignalError::ResumeRejected(_) => 15,
            SignalError::RoomCreationLimited => 16,
            SignalError::PeerNotReading(_) => 17,
            SignalError::AdminTokenRequired => 18,
            SignalError::BrokerUnavailable => 19,
            SignalError::Rule(_) => 20,
            SignalError::Ticket(_) => 21,
        }
    }

    #[test]
    fn every_error_has_a_code_a_client_of_this_version_reads_back() {
        let all = one_of_each();
        let slots: std::collections::BTreeSet<usize> = all.iter().map(slot).collect();
        assert_eq!(
            slots,
            (0..22).collect(),
            "one_of_each lists every variant once"
        );
        for err in &all {
            let code = err.code();
            assert_ne!(code, ErrorCode::Unknown, "{err:?}");
            assert_eq!(ErrorCode::from_name(code.as_str()), code, "{err:?}");
        }
    }

    #[test]
    fn an_app_mismatch_names_the_rooms_app_and_the_programs() {
        let room_app = app("pong", 2, "unreliable-sequenced,reliable-ordered");
        let old = app("pong", 1, "unreliable-sequenced");
        let err = SignalError::app_mismatch("lobby", Some(room_app.clone()), Some(old));
        assert_eq!(
            err.to_string(),
            "room \"lobby\" plays pong v2 (channels: unreliable-sequenced, reliable-ordered); \
             this program is pong v1 (channels: unreliable-sequenced): join another room, or \
             run what it plays"
        );
        let none = SignalError::app_mismatch("lobby", Some(room_app), None);
        assert!(none.to_string().ends_with(
            "this program declares no application: join another room, or run what it plays"
        ));
        let bare_room =
            SignalError::app_mismatch("lobby", None, Some(app("chess", 1, "reliable-ordered")));
        assert!(
            bare_room
                .to_string()
                .starts_with("room \"lobby\" plays no declared application"),
            "{bare_room}"
        );
    }
}
