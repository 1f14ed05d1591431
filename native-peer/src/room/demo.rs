//! The demo every room page plays, as an application of the `ackwire` crate: each player's
//! dot on an unreliable-sequenced channel (newest wins) and chat on a reliable-ordered one
//! (exactly once, in order). The page (`web/room.js`) plays the same: same id, version,
//! channels and position bytes.
//!
//! In a host room a client links to the host alone, and the host (`ackwire-peer host`)
//! relays: what it sends a client is [`Relayed`], the original message behind a 4-byte
//! origin (the host's id for the client it came from, `u32` little-endian; 0 for the host's
//! own words), so a client tells every other player's dot and chat apart.

use ackwire::{App, ChannelKind};

/// The demo's application id.
pub const APP_ID: &str = "ackwire-demo";
/// Its version.
pub const APP_VERSION: u32 = 1;
/// Channel of positions (unreliable-sequenced, sent with `broadcast_latest`).
pub const POSITION: u8 = 0;
/// Channel of chat (reliable-ordered).
pub const CHAT: u8 = 1;
/// Chat lines are short text, not files: longer ones are cut.
pub const MAX_CHAT_BYTES: usize = 1000;
/// A position on the wire: x then y, `f32` little-endian, each in [0, 1].
pub const POSITION_LEN: usize = 8;

/// The demo's declaration.
pub fn app() -> App {
    App::new(
        APP_ID,
        APP_VERSION,
        [
            ChannelKind::UnreliableSequenced,
            ChannelKind::ReliableOrdered,
        ],
    )
}

/// The bytes of a position message.
pub fn encode_position(x: f32, y: f32) -> [u8; POSITION_LEN] {
    let mut bytes = [0u8; POSITION_LEN];
    bytes[..4].copy_from_slice(&x.to_le_bytes());
    bytes[4..].copy_from_slice(&y.to_le_bytes());
    bytes
}

/// A position message's coordinates; `None` for any other length or a non-finite value.
pub fn decode_position(payload: &[u8]) -> Option<(f32, f32)> {
    let bytes: &[u8; POSITION_LEN] = payload.try_into().ok()?;
    let x = f32::from_le_bytes(bytes[..4].try_into().ok()?);
    let y = f32::from_le_bytes(bytes[4..].try_into().ok()?);
    (x.is_finite() && y.is_finite()).then_some((x, y))
}

/// The origin of the host's own messages in a host room.
pub const FROM_HOST: u32 = 0;
/// The bytes before a relayed message.
pub const ORIGIN_LEN: usize = 4;

/// A message the host relays in a host room: who it came from, and what they sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Relayed<'a> {
    /// The host's id for the client it came from ([`FROM_HOST`]: the host's own).
    pub origin: u32,
    /// The message as its sender sent it.
    pub payload: &'a [u8],
}

impl<'a> Relayed<'a> {
    /// The bytes on the wire: the origin, then the payload.
    pub fn encode(origin: u32, payload: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(ORIGIN_LEN + payload.len());
        bytes.extend_from_slice(&origin.to_le_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    /// Reads a relayed message; `None` when shorter than its origin.
    pub fn decode(bytes: &'a [u8]) -> Option<Relayed<'a>> {
        let (origin, payload) = bytes.split_first_chunk::<ORIGIN_LEN>()?;
        Some(Relayed {
            origin: u32::from_le_bytes(*origin),
            payload,
        })
    }
}

/// A chat line's text (invalid UTF-8 replaced, cut at [`MAX_CHAT_BYTES`] on a character
/// boundary).
pub fn chat_text(bytes: &[u8]) -> String {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    if text.len() > MAX_CHAT_BYTES {
        let mut end = MAX_CHAT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_and_malformed_ones_are_refused() {
        assert_eq!(
            decode_position(&encode_position(0.25, 1.0)),
            Some((0.25, 1.0))
        );
        assert_eq!(decode_position(&[0, 0, 0]), None);
        assert_eq!(decode_position(&encode_position(f32::NAN, 0.5)), None);
        assert_eq!(decode_position(&encode_position(0.5, f32::INFINITY)), None);
    }

    #[test]
    fn relayed_messages_carry_their_origin_and_short_ones_are_refused() {
        let bytes = Relayed::encode(7, &encode_position(0.5, 0.25));
        let relayed = Relayed::decode(&bytes).unwrap();
        assert_eq!(relayed.origin, 7);
        assert_eq!(decode_position(relayed.payload), Some((0.5, 0.25)));
        assert_eq!(
            Relayed::encode(FROM_HOST, b"hi")[..],
            [0, 0, 0, 0, b'h', b'i']
        );
        assert_eq!(Relayed::decode(&[1, 2, 3]), None);
    }

    #[test]
    fn chat_lines_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_CHAT_BYTES);
        let text = chat_text(long.as_bytes());
        assert!(text.len() <= MAX_CHAT_BYTES && text.chars().all(|c| c == 'é'));
        assert_eq!(chat_text(b"hi \xFF"), "hi \u{FFFD}");
    }
}
