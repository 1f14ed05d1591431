//! Join tickets: a game's backend vouches for one join with a secret it shares with the signal
//! server (`--ticket-secret-file`), and the server admits a join only with a ticket for it.
//!
//! A ticket names the room, the [`Role`], the member's identity (the backend's own name for
//! the player: a user id, say), the application id the join declares, and when it expires.
//! It is minted with [`mint`] (or by any backend that writes the same bytes:
//! `docs/deployment.md` does it with Node's `crypto`) and checked with [`verify`], which
//! needs the time from its caller: this crate has no clock.
//!
//! # The format, version 1
//!
//! A ticket is URL-safe text of at most [`MAX_TICKET_LEN`] characters:
//!
//! ```text
//! v1.<payload>.<tag>
//! ```
//!
//! `<payload>` is base64url without padding (RFC 4648 §5) of these bytes:
//!
//! | bytes | field |
//! |---|---|
//! | 1 | role: 0 `peer`, 1 `host`, 2 `client` |
//! | 8 | expiry: Unix time in seconds, big-endian; the ticket is expired from that second on |
//! | 1 + n | the room: its length n (1–64), then its name ([`is_valid_name`]) |
//! | 1 + n | the application: its length n (0–64), then its id; 0 for a join that declares none |
//! | 1 + n | the identity: its length n (1–64), then its bytes: printable ASCII, no space (`!` to `~`) |
//!
//! Nothing follows the identity. `<tag>` is base64url without padding of the 32 bytes of
//! HMAC-SHA256, keyed with the secret, of the ticket's text before the second dot
//! (`v1.<payload>`): the version is signed with the claims. A verifier checks the tag
//! (in constant time) before it reads a byte of the payload.
//!
//! ```
//! use ackwire_signalling::ticket::{self, Claims, TicketError};
//! use ackwire_signalling::Role;
//!
//! let secret = b"a secret of 32 bytes or more, shared with the server";
//! let claims = Claims::new("arena", Role::Client, "user-4417", Some("pong"), 1_900_000_000)?;
//! let ticket = ticket::mint(secret, &claims);
//! assert!(ticket.starts_with("v1."));
//! // The server, at the join: the room, role and application the join names, and the time.
//! let now = 1_899_999_000;
//! assert_eq!(ticket::verify(secret, &ticket, now, "arena", Role::Client, Some("pong")), Ok(claims));
//! assert_eq!(
//!     ticket::verify(secret, &ticket, now, "lobby", Role::Client, Some("pong")).unwrap_err().code(),
//!     ackwire_signalling::ErrorCode::TicketWrongRoom,
//! );
//! # Ok::<(), ticket::InvalidClaims>(())
//! ```

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::{ErrorCode, Role, is_valid_name};

/// The version prefix of the tickets this crate mints and reads.
pub const PREFIX: &str = "v1.";

/// The longest ticket text [`verify`] reads; a longer one is malformed before anything is
/// decoded. The longest valid version 1 ticket is 319 characters.
pub const MAX_TICKET_LEN: usize = 512;

/// The longest identity, room name and application id in a ticket.
pub const MAX_FIELD_LEN: usize = 64;

/// The identity rule in words, for refusals.
pub const IDENTITY_RULE: &str = "1-64 characters of printable ASCII without space (! to ~)";

/// Bytes of the tag (all of HMAC-SHA256).
const TAG_LEN: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// What a ticket says: the join it admits, and until when.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Claims {
    room: String,
    role: Role,
    identity: String,
    app: Option<String>,
    expires: u64,
}

/// Why [`Claims::new`] refused (a backend's mistake: nothing was minted).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidClaims {
    /// The room breaks the name rule ([`is_valid_name`]).
    #[error("room {0:?}: use {rule}", rule = crate::NAME_RULE)]
    Room(String),
    /// The application id breaks the name rule.
    #[error("application id {0:?}: use {rule}", rule = crate::NAME_RULE)]
    App(String),
    /// The identity breaks [`IDENTITY_RULE`].
    #[error("identity {0:?}: use {IDENTITY_RULE}")]
    Identity(String),
}

/// Whether `identity` is one a ticket can carry: [`IDENTITY_RULE`].
pub fn is_valid_identity(identity: &str) -> bool {
    (1..=MAX_FIELD_LEN).contains(&identity.len()) && identity.bytes().all(|b| b.is_ascii_graphic())
}

/// At most 80 characters of `text`, for a refusal's message.
fn shown(text: &str) -> String {
    text.chars().take(80).collect()
}

impl Claims {
    /// The claims of a ticket admitting `identity` to `room` as `role`, declaring the
    /// application `app` (its id; `None` for a join that declares none), until `expires`
    /// (Unix seconds: from that second on it is expired).
    pub fn new(
        room: impl Into<String>,
        role: Role,
        identity: impl Into<String>,
        app: Option<&str>,
        expires: u64,
    ) -> Result<Claims, InvalidClaims> {
        let (room, identity) = (room.into(), identity.into());
        if !is_valid_name(&room) {
            return Err(InvalidClaims::Room(shown(&room)));
        }
        if let Some(app) = app.filter(|app| !is_valid_name(app)) {
            return Err(InvalidClaims::App(shown(app)));
        }
        if !is_valid_identity(&identity) {
            return Err(InvalidClaims::Identity(shown(&identity)));
        }
        Ok(Claims {
            room,
            role,
            identity,
            app: app.map(str::to_owned),
            expires,
        })
    }

    /// The room it admits to.
    pub fn room(&self) -> &str {
        &self.room
    }

    /// The role it admits as.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The member's identity, as the backend named it.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The application id the join must declare (`None`: none).
    pub fn app(&self) -> Option<&str> {
        self.app.as_deref()
    }

    /// Unix seconds from which it is expired.
    pub fn expires(&self) -> u64 {
        self.expires
    }

    /// The payload's bytes (see the module's table).
    fn to_bytes(&self) -> Vec<u8> {
        let app = self.app.as_deref().unwrap_or("");
        let mut bytes = Vec::with_capacity(12 + self.room.len() + app.len() + self.identity.len());
        bytes.push(role_byte(self.role));
        bytes.extend_from_slice(&self.expires.to_be_bytes());
        for field in [self.room.as_str(), app, self.identity.as_str()] {
            // Each is at most 64 bytes: the constructor checked.
            bytes.push(field.len() as u8);
            bytes.extend_from_slice(field.as_bytes());
        }
        bytes
    }

    /// Reads the payload's bytes back; `None` for anything [`Claims::to_bytes`] never writes.
    fn from_bytes(bytes: &[u8]) -> Option<Claims> {
        let (&role, rest) = bytes.split_first()?;
        let role = match role {
            0 => Role::Peer,
            1 => Role::Host,
            2 => Role::Client,
            _ => return None,
        };
        let (expires, mut rest) = rest.split_first_chunk::<8>()?;
        let mut field = || -> Option<&str> {
            let (&len, after) = rest.split_first()?;
            let (text, after) = after.split_at_checked(usize::from(len))?;
            rest = after;
            std::str::from_utf8(text).ok()
        };
        let (room, app, identity) = (field()?, field()?, field()?);
        if !rest.is_empty() {
            return None;
        }
        let app = (!app.is_empty()).then_some(app);
        Claims::new(room, role, identity, app, u64::from_be_bytes(*expires)).ok()
    }
}

/// An application id for a refusal: `application "pong"`, or `no application`.
fn app_name(app: &Option<String>) -> String {
    match app {
        Some(id) => format!("application {id:?}"),
        None => "no application".to_owned(),
    }
}

fn role_byte(role: Role) -> u8 {
    match role {
        Role::Peer => 0,
        Role::Host => 1,
        Role::Client => 2,
    }
}

/// Why [`verify`] refused a ticket. Each maps to the `code` of the server's error frame
/// ([`TicketError::code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TicketError {
    /// The join carries no ticket, and the server requires one (`ticket_missing`).
    #[error("this server admits a join only with a ticket from the game's backend")]
    Missing,
    /// Not a ticket's text: too long, not `v<N>.<payload>.<tag>`, bad base64url, or a
    /// payload that breaks the format (`ticket_invalid`).
    #[error("malformed ticket: {0}")]
    Malformed(&'static str),
    /// A ticket of a format version this server does not read (`ticket_invalid`).
    #[error("a ticket of a format version this server does not read (it reads v1)")]
    UnknownVersion,
    /// The tag is not the one the server's secret gives: minted with another secret, or
    /// altered (`ticket_invalid`).
    #[error("the ticket's tag does not match: minted with another secret, or altered")]
    BadTag,
    /// The ticket is for another application than the join declares (`ticket_invalid`).
    #[error("the ticket is for {}, the join declares {}", app_name(.ticket), app_name(.join))]
    WrongApp {
        /// The ticket's (`None`: none).
        ticket: Option<String>,
        /// The join's (`None`: none).
        join: Option<String>,
    },
    /// The ticket's time is up (`ticket_expired`).
    #[error("the ticket expired at {expires} (Unix seconds); get a fresh one")]
    Expired {
        /// When it expired, in Unix seconds.
        expires: u64,
    },
    /// The ticket is for another room (`ticket_wrong_room`).
    #[error("the ticket is for room {ticket:?}, not {join:?}")]
    WrongRoom {
        /// The ticket's.
        ticket: String,
        /// The join's.
        join: String,
    },
    /// The ticket is for another role (`ticket_wrong_role`).
    #[error("the ticket is for a {ticket}, the join is a {join}'s")]
    WrongRole {
        /// The ticket's.
        ticket: Role,
        /// The join's.
        join: Role,
    },
}

impl TicketError {
    /// The `code` of the error frame that tells the client.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Missing => ErrorCode::TicketMissing,
            Self::Malformed(_) | Self::UnknownVersion | Self::BadTag | Self::WrongApp { .. } => {
                ErrorCode::TicketInvalid
            }
            Self::Expired { .. } => ErrorCode::TicketExpired,
            Self::WrongRoom { .. } => ErrorCode::TicketWrongRoom,
            Self::WrongRole { .. } => ErrorCode::TicketWrongRole,
        }
    }
}

fn keyed(secret: &[u8]) -> HmacSha256 {
    // HMAC takes a key of any length (RFC 2104: a long one is hashed first).
    <HmacSha256 as KeyInit>::new_from_slice(secret).expect("HMAC takes a key of any length")
}

/// The ticket for `claims`, signed with `secret` (see the module's format).
pub fn mint(secret: &[u8], claims: &Claims) -> String {
    let mut ticket = String::from(PREFIX);
    URL_SAFE_NO_PAD.encode_string(claims.to_bytes(), &mut ticket);
    let mut mac = keyed(secret);
    mac.update(ticket.as_bytes());
    let tag = mac.finalize().into_bytes();
    ticket.push('.');
    URL_SAFE_NO_PAD.encode_string(tag, &mut ticket);
    ticket
}

/// The claims of `ticket` if `secret` signed it for a join of `room` as `role` declaring
/// `app` (its id, or `None`), and it has not expired at `now` (Unix seconds). An empty
/// `ticket` is [`TicketError::Missing`]. Checked in this order: the text's length and shape,
/// the version, the tag (in constant time, before the payload is read), the payload, then
/// the room, the role, the application and the expiry. Never panics.
pub fn verify(
    secret: &[u8],
    ticket: &str,
    now: u64,
    room: &str,
    role: Role,
    app: Option<&str>,
) -> Result<Claims, TicketError> {
    let claims = authentic(secret, ticket)?;
    if claims.room != room {
        return Err(TicketError::WrongRoom {
            ticket: claims.room,
            join: shown(room),
        });
    }
    if claims.role != role {
        return Err(TicketError::WrongRole {
            ticket: claims.role,
            join: role,
        });
    }
    if claims.app.as_deref() != app {
        return Err(TicketError::WrongApp {
            ticket: claims.app,
            join: app.map(shown),
        });
    }
    if now >= claims.expires {
        return Err(TicketError::Expired {
            expires: claims.expires,
        });
    }
    Ok(claims)
}

/// The claims `secret` signed in `ticket`, whatever join they are for.
fn authentic(secret: &[u8], ticket: &str) -> Result<Claims, TicketError> {
    if ticket.is_empty() {
        return Err(TicketError::Missing);
    }
    if ticket.len() > MAX_TICKET_LEN {
        return Err(TicketError::Malformed("longer than 512 characters"));
    }
    let Some(rest) = ticket.strip_prefix(PREFIX) else {
        // `v` and a number before the first dot: a version, just not ours.
        let version = ticket
            .split_once('.')
            .and_then(|(v, _)| v.strip_prefix('v'));
        return match version {
            Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                Err(TicketError::UnknownVersion)
            }
            _ => Err(TicketError::Malformed("it does not start with v1.")),
        };
    };
    let (payload, tag) = rest
        .split_once('.')
        .ok_or(TicketError::Malformed("no tag after the payload"))?;
    let mut tag_bytes = [0u8; TAG_LEN];
    // Exactly 32 bytes, canonically written (no stray low bits in the last character).
    match URL_SAFE_NO_PAD.decode_slice(tag, &mut tag_bytes) {
        Ok(TAG_LEN) if tag.len() == 43 => {}
        _ => {
            return Err(TicketError::Malformed(
                "the tag is not 32 bytes of base64url",
            ));
        }
    }
    let signed = &ticket[..PREFIX.len() + payload.len()];
    let mut mac = keyed(secret);
    mac.update(signed.as_bytes());
    mac.verify_slice(&tag_bytes)
        .map_err(|_| TicketError::BadTag)?;
    let bytes = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| TicketError::Malformed("the payload is not base64url"))?;
    Claims::from_bytes(&bytes).ok_or(TicketError::Malformed("the payload breaks the v1 format"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
    const EXPIRES: u64 = 1_900_000_000;

    fn claims() -> Claims {
        Claims::new("arena", Role::Host, "user-4417", Some("pong"), EXPIRES).unwrap()
    }

    fn check(ticket: &str, now: u64) -> Result<Claims, TicketError> {
        verify(SECRET, ticket, now, "arena", Role::Host, Some("pong"))
    }

    #[test]
    fn a_minted_ticket_verifies_and_gives_back_its_claims() {
        let ticket = mint(SECRET, &claims());
        assert!(ticket.starts_with("v1."), "{ticket}");
        assert!(
            ticket
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
            "URL-safe: {ticket}"
        );
        let back = check(&ticket, EXPIRES - 1).unwrap();
        assert_eq!(back, claims());
        assert_eq!(
            (back.room(), back.role(), back.identity(), back.app()),
            ("arena", Role::Host, "user-4417", Some("pong"))
        );
        // A join that declares no application, with a ticket that names none.
        let bare = Claims::new("arena", Role::Peer, "u", None, EXPIRES).unwrap();
        let ticket = mint(SECRET, &bare);
        assert_eq!(
            verify(SECRET, &ticket, 0, "arena", Role::Peer, None),
            Ok(bare)
        );
    }

    #[test]
    fn a_ticket_is_valid_until_the_second_before_its_expiry() {
        let ticket = mint(SECRET, &claims());
        assert!(check(&ticket, EXPIRES - 1).is_ok());
        for now in [EXPIRES, EXPIRES + 1, u64::MAX] {
            let err = check(&ticket, now).unwrap_err();
            assert_eq!(err, TicketError::Expired { expires: EXPIRES });
            assert_eq!(err.code(), ErrorCode::TicketExpired);
        }
        let never = Claims::new("arena", Role::Host, "u", Some("pong"), u64::MAX).unwrap();
        assert!(check(&mint(SECRET, &never), u64::MAX - 1).is_ok());
    }

    #[test]
    fn each_refusal_has_its_code() {
        let ticket = mint(SECRET, &claims());
        let now = EXPIRES - 60;
        let cases = [
            (
                verify(SECRET, "", now, "arena", Role::Host, Some("pong")),
                ErrorCode::TicketMissing,
            ),
            (
                verify(SECRET, &ticket, now, "lobby", Role::Host, Some("pong")),
                ErrorCode::TicketWrongRoom,
            ),
            (
                verify(SECRET, &ticket, now, "arena", Role::Client, Some("pong")),
                ErrorCode::TicketWrongRole,
            ),
            (
                verify(SECRET, &ticket, now, "arena", Role::Peer, Some("pong")),
                ErrorCode::TicketWrongRole,
            ),
            (
                verify(SECRET, &ticket, now, "arena", Role::Host, Some("chess")),
                ErrorCode::TicketInvalid,
            ),
            (
                verify(SECRET, &ticket, now, "arena", Role::Host, None),
                ErrorCode::TicketInvalid,
            ),
            (
                verify(
                    b"another secret",
                    &ticket,
                    now,
                    "arena",
                    Role::Host,
                    Some("pong"),
                ),
                ErrorCode::TicketInvalid,
            ),
            (
                check(&ticket.replacen("v1.", "v2.", 1), now),
                ErrorCode::TicketInvalid,
            ),
            (check("not a ticket", now), ErrorCode::TicketInvalid),
        ];
        for (result, code) in cases {
            let err = result.unwrap_err();
            assert_eq!(err.code(), code, "{err}");
            assert!(!err.to_string().is_empty());
        }
        assert_eq!(
            check(&ticket.replacen("v1.", "v2.", 1), now),
            Err(TicketError::UnknownVersion)
        );
        assert_eq!(
            verify(
                b"another secret",
                &ticket,
                now,
                "arena",
                Role::Host,
                Some("pong")
            ),
            Err(TicketError::BadTag)
        );
        assert_eq!(
            verify(SECRET, &ticket, now, "lobby", Role::Host, Some("pong")),
            Err(TicketError::WrongRoom {
                ticket: "arena".into(),
                join: "lobby".into()
            })
        );
    }

    #[test]
    fn a_refusal_never_carries_the_ticket() {
        let ticket = mint(SECRET, &claims());
        let (payload, tag) = ticket[3..].split_once('.').unwrap();
        for now in [0, EXPIRES] {
            for (room, role, app) in [
                ("lobby", Role::Host, Some("pong")),
                ("arena", Role::Peer, Some("pong")),
                ("arena", Role::Host, None),
            ] {
                let message = verify(SECRET, &ticket, now, room, role, app)
                    .map(|_| String::new())
                    .unwrap_or_else(|e| e.to_string());
                assert!(
                    !message.contains(payload) && !message.contains(tag),
                    "{message}"
                );
            }
        }
    }

    #[test]
    fn changing_any_byte_of_a_ticket_fails_it() {
        let ticket = mint(SECRET, &claims());
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
        for at in 0..ticket.len() {
            for &c in alphabet.iter().chain(b"=+/ %\0") {
                let mut changed = ticket.clone().into_bytes();
                if changed[at] == c {
                    continue;
                }
                changed[at] = c;
                let changed = String::from_utf8(changed).unwrap();
                assert!(check(&changed, 0).is_err(), "byte {at} as {:?}", c as char);
            }
        }
        // Cut short or added to, anywhere.
        for len in 0..ticket.len() {
            assert!(check(&ticket[..len], 0).is_err(), "cut to {len}");
        }
        assert!(check(&format!("{ticket}A"), 0).is_err());
        assert!(check(&format!("{ticket}."), 0).is_err());
        assert!(check(&format!(" {ticket}"), 0).is_err());
    }

    #[test]
    fn claims_and_tickets_are_bounded() {
        let long = "a".repeat(MAX_FIELD_LEN + 1);
        let most = "a".repeat(MAX_FIELD_LEN);
        assert!(matches!(
            Claims::new(&long, Role::Peer, "u", None, 0),
            Err(InvalidClaims::Room(_))
        ));
        assert!(matches!(
            Claims::new("r", Role::Peer, "u", Some(&long), 0),
            Err(InvalidClaims::App(_))
        ));
        for bad in [long.as_str(), "", "has space", "tab\t", "é", "nul\0"] {
            assert!(
                matches!(
                    Claims::new("r", Role::Peer, bad, None, 0),
                    Err(InvalidClaims::Identity(_))
                ),
                "{bad:?}"
            );
        }
        assert!(matches!(
            Claims::new("a b", Role::Peer, "u", None, 0),
            Err(InvalidClaims::Room(_))
        ));
        assert!(matches!(
            Claims::new("r", Role::Peer, "u", Some(""), 0),
            Err(InvalidClaims::App(_))
        ));
        // The largest ticket fits the bound.
        let largest = Claims::new(&most, Role::Client, "~".repeat(64), Some(&most), u64::MAX);
        let ticket = mint(SECRET, &largest.unwrap());
        assert_eq!(ticket.len(), 319);
        assert!(ticket.len() <= MAX_TICKET_LEN);
        // Overlong input is refused before any decoding, however valid its start.
        let overlong = format!("v1.{}", "A".repeat(MAX_TICKET_LEN));
        assert_eq!(
            check(&overlong, 0),
            Err(TicketError::Malformed("longer than 512 characters"))
        );
        assert_eq!(
            check(&"v".repeat(100_000), 0),
            Err(TicketError::Malformed("longer than 512 characters"))
        );
    }

    #[test]
    fn a_signed_payload_that_breaks_the_format_is_malformed() {
        // What a broken backend might sign: each is authentic, none is a ticket.
        let valid = claims().to_bytes();
        let mut broken: Vec<Vec<u8>> = vec![
            Vec::new(),
            vec![3], // no such role
            valid[..valid.len() - 1].to_vec(),
            [valid.as_slice(), &[0]].concat(), // a byte after the identity
        ];
        let mut bad_role = valid.clone();
        bad_role[0] = 9;
        broken.push(bad_role);
        let mut no_room = valid.clone();
        no_room[9] = 0;
        broken.push(no_room);
        let mut overlong = valid.clone();
        overlong[9] = 200;
        broken.push(overlong);
        for payload in broken {
            let mut text = String::from(PREFIX);
            URL_SAFE_NO_PAD.encode_string(&payload, &mut text);
            let mut mac = keyed(SECRET);
            mac.update(text.as_bytes());
            text.push('.');
            URL_SAFE_NO_PAD.encode_string(mac.finalize().into_bytes(), &mut text);
            assert!(
                matches!(check(&text, 0), Err(TicketError::Malformed(_))),
                "{payload:?}"
            );
        }
    }
}
