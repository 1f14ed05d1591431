//! # ackwire-signalling
//!
//! The signalling schema: every JSON frame spoken on the signal server's `/ws`, in both
//! directions, and the vocabulary inside them. `docs/signalling.md` is its specification
//! (fields, rules, errors and worked exchanges); this crate is its one implementation, used
//! by the signal server (`ackwire-signal`), the room member (`ackwire-room`) and both of its
//! drivers (native, and the browser's, which reads frames through the browser's own JSON).
//! The server's room rules (who may join, resume, replace, relay and leave, and who hears
//! of it) are here too, sans-IO, in [`rules`]: the signal server carries them out, and so
//! does the room member's test world. Limits of a whole server (rates, sizes, rooms per
//! address) stay in `ackwire-signal`.
//!
//! - [`ClientFrame`]s go to the server, [`ServerFrame`]s come back; every type a server
//!   frame can have is a [`ServerFrameType`], and [`parse_server_frame`] reads one, telling a
//!   frame type this version does not know ([`UnreadableFrame::UnknownType`]) from a broken
//!   one. Unknown fields are ignored everywhere.
//! - The server reads [`ClientFrame`]s and writes [`ServerFrame`]s built from borrowed data
//!   ([`Cow::Borrowed`](std::borrow::Cow::Borrowed)), so a fan-out frame is serialized once
//!   and a relayed SDP is never cloned.
//! - [`ErrorCode`]: the `code` of every refusal. [`AppInfo`]: what an application declares
//!   (id, version, [`ChannelKind`]s). [`PublicKey`]: a native's key in its text form.
//!   [`SignalData`]: what peers relay to each other (SDP of an [`SdpKind`], ICE candidates).
//! - [`is_valid_name`]: the one rule for room names, instance ids and application ids.
//! - [`RoomUrl`]: a room page's URL read into the socket's URL and the room's name;
//!   [`UrlJoin`]: a join in that URL's query.
//! - [`ticket`]: join tickets, which a game's backend mints ([`ticket::mint`]) and a server
//!   configured with the same secret requires of every join ([`ticket::verify`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// `docs/deployment.md`'s Rust example (a backend minting join tickets), compiled as a
/// doctest so it cannot drift from [`ticket`].
#[cfg(doctest)]
#[doc = include_str!("../../docs/deployment.md")]
mod deployment {}

mod app;
mod code;
mod frames;
mod key;
pub mod rules;
mod signal;
pub mod ticket;
mod url;
pub mod webtransport;

pub use app::{AppInfo, ChannelKind, InvalidApp};
pub use code::ErrorCode;
pub use frames::{
    ClientFrame, IceServer, LeaveReason, PeerId, PeerInfo, PeerKind, Resume, Role, RoomSnapshot,
    ServerFrame, ServerFrameType, Topology, UnreadableFrame, parse_server_frame,
};
pub use key::{InvalidPublicKey, PublicKey};
pub use signal::{Sdp, SdpKind, SignalData};
pub use url::{BadRoomUrl, RoomUrl, UrlJoin};
pub use webtransport::{CertHash, WebTransportInfo};

/// The signalling protocol version: sent in every join, echoed in the welcome.
pub const VERSION: u32 = 1;

/// The WebSocket close code (reason `replaced_by_instance`) of a connection whose member a
/// fresh join took the place of: one of the same program instance, or, on a server that
/// requires join tickets, of the same identity. Another program holds the member's place now;
/// a member whose current socket closes so stops rather than take it back.
pub const CLOSE_REPLACED: u16 = 4001;

/// The name rule in words, for refusals.
pub const NAME_RULE: &str = "1-64 of A-Z a-z 0-9 - _";

/// The one rule for every name in signalling (rooms, program instances, application ids):
/// [`NAME_RULE`], safe in URLs, logs and metrics. Everything that checks a name calls this.
///
/// ```
/// use ackwire_signalling::is_valid_name;
///
/// assert!(is_valid_name("lobby-2_b"));
/// assert!(!is_valid_name("my room"));
/// assert!(!is_valid_name(""));
/// ```
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_1_to_64_url_safe_characters() {
        for good in ["a", "lobby", "A-b_9", &"x".repeat(64)] {
            assert!(is_valid_name(good), "{good}");
        }
        for bad in ["", &"x".repeat(65), "a b", "a/b", "ü", "a.b", "a%20"] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }
}
