//! The demo every room plays, on the core's default [`ConnectionConfig`] channels: each
//! player's dot position on the unreliable-sequenced channel (newest wins) and chat on the
//! reliable-ordered one (exactly once, in order).
//!
//! [`ConnectionConfig`]: ackwire_core::ConnectionConfig

/// Channel of the demo position in the default `ConnectionConfig` (unreliable-sequenced).
pub const POSITION_CHANNEL: u8 = 0;
/// Channel of chat messages in the default `ConnectionConfig` (reliable-ordered).
pub const CHAT_CHANNEL: u8 = 1;
/// Chat messages are short text, not files.
pub const MAX_CHAT_BYTES: usize = 1000;
/// A position on the wire: x then y, `f32` little-endian, each in [0, 1].
pub const POSITION_LEN: usize = 8;

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

/// Whether we accept the core connection with `remote` (we run the `Acceptor`/`Listener`)
/// rather than connect to it. No server sits between two peers, so both sides must agree
/// without a round trip: the lower signalling id accepts.
pub fn we_accept(me: u64, remote: u64) -> bool {
    me < remote
}

/// The address bytes the acceptor's cookie binds a remote peer to: its signalling id as
/// decimal text, on a UDP socket exactly as on a data channel, so both transports share
/// one code path.
pub fn cookie_address(peer: u64) -> Vec<u8> {
    peer.to_string().into_bytes()
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
    fn exactly_one_side_of_a_pair_accepts() {
        assert!(we_accept(1, 2));
        assert!(!we_accept(2, 1));
        assert_eq!(cookie_address(42), b"42");
    }
}
