//! The packet header on the wire: a plain [`PacketHeader`] struct plus its compact codec.
//!
//! Byte-exact layout (documented with a worked example in `docs/wire.md`, which a test holds
//! the code to):
//!
//! ```text
//! byte 0      prefix   bits 7-6: wire version (01)
//!                      bit  5  : reserved, must be 0
//!                      bit  4  : ack is sent as a 1-byte delta (sequence - ack, mod 2^16)
//!                      bits 3-0: bit k set = byte k of ack_bits is sent (absent bytes are 0xFF)
//! bytes 1-2   sequence, big-endian
//! 1 or 2      ack: the delta byte, or the full ack big-endian
//! 0 to 4      the ack_bits bytes that are not 0xFF, least significant byte first
//! ```
//!
//! In steady state (every one of the last 32 packets received, and the two sides sending at
//! similar rates so the ack trails the sequence by at most 255) a header is 4 bytes. The
//! encoding is canonical: every header has exactly one byte form, and the decoder rejects any
//! other, so `encode(decode(bytes)) == bytes` for every accepted input.
//!
//! The 64-bit protocol id is exchanged once, in the connection handshake; per packet only the
//! 2-bit wire version in the prefix is checked, which costs no extra byte. Datagram integrity
//! is left to the transport (UDP checksum, DTLS/SCTP on WebRTC).

use thiserror::Error;

/// The wire version carried in the top two bits of every prefix byte.
pub const WIRE_VERSION: u8 = 1;

const VERSION_SHIFT: u8 = 6;
const RESERVED_BIT: u8 = 1 << 5;
const ACK_DELTA_BIT: u8 = 1 << 4;
const ACK_BYTES_MASK: u8 = 0x0F;

/// One packet's header: who it is, and which of the peer's packets it acknowledges.
///
/// `ack` is the most recent sequence received from the peer; bit `n` of `ack_bits` set means
/// sequence `ack - n` was received (so bit 0 stands for `ack` itself, and a header with
/// `ack_bits == 0` acknowledges nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PacketHeader {
    /// Sequence number of this packet.
    pub sequence: u16,
    /// Most recent sequence number received from the peer.
    pub ack: u16,
    /// Received set relative to `ack`: bit `n` set = `ack - n` was received.
    pub ack_bits: u32,
}

/// Why a header could not be decoded or encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// The input ends before the header does.
    #[error("truncated header: need {needed} bytes, have {available}")]
    Truncated {
        /// Bytes the prefix says the header occupies.
        needed: usize,
        /// Bytes actually present.
        available: usize,
    },
    /// The prefix carries a wire version this build does not speak.
    #[error("unsupported wire version {0} (expected {WIRE_VERSION})")]
    UnsupportedVersion(u8),
    /// The reserved prefix bit is set.
    #[error("reserved bit set in header prefix {0:#04x}")]
    ReservedBitSet(u8),
    /// The bytes are a valid header in a longer form than the canonical one.
    #[error("non-canonical header encoding")]
    NonCanonical,
    /// The output buffer cannot hold the encoded header.
    #[error("buffer too small for header: need {needed} bytes, have {available}")]
    BufferTooSmall {
        /// Bytes the header needs.
        needed: usize,
        /// Bytes the buffer has.
        available: usize,
    },
}

impl PacketHeader {
    /// The longest encoding: prefix, sequence, full ack and all four ack bytes.
    pub const MAX_LEN: usize = 9;
    /// The shortest encoding: prefix, sequence, ack delta, no ack bytes.
    pub const MIN_LEN: usize = 4;

    fn ack_delta(&self) -> Option<u8> {
        u8::try_from(self.sequence.wrapping_sub(self.ack)).ok()
    }

    fn prefix(&self) -> u8 {
        let mut prefix = WIRE_VERSION << VERSION_SHIFT;
        if self.ack_delta().is_some() {
            prefix |= ACK_DELTA_BIT;
        }
        for (k, byte) in self.ack_bits.to_le_bytes().into_iter().enumerate() {
            if byte != 0xFF {
                prefix |= 1 << k;
            }
        }
        prefix
    }

    /// Bytes [`encode`](Self::encode) writes for this header (4 to 9).
    pub fn encoded_len(&self) -> usize {
        len_for_prefix(self.prefix())
    }

    /// Writes the header at the start of `buf` and returns how many bytes it took.
    ///
    /// Fails with [`HeaderError::BufferTooSmall`] (writing nothing) if `buf` is too short.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, HeaderError> {
        // Built on the stack, then copied in one go: every packet sent encodes a header. The
        // prefix (one definition, shared with `encoded_len`) says which fields follow.
        let prefix = self.prefix();
        let mut bytes = [0u8; Self::MAX_LEN];
        bytes[0] = prefix;
        bytes[1..3].copy_from_slice(&self.sequence.to_be_bytes());
        let mut at = if prefix & ACK_DELTA_BIT != 0 {
            bytes[3] = self.sequence.wrapping_sub(self.ack) as u8;
            4
        } else {
            bytes[3..5].copy_from_slice(&self.ack.to_be_bytes());
            5
        };
        for (k, byte) in self.ack_bits.to_le_bytes().into_iter().enumerate() {
            if prefix & (1 << k) != 0 {
                bytes[at] = byte;
                at += 1;
            }
        }
        debug_assert_eq!(at, len_for_prefix(prefix));
        let available = buf.len();
        let out = buf.get_mut(..at).ok_or(HeaderError::BufferTooSmall {
            needed: at,
            available,
        })?;
        out.copy_from_slice(&bytes[..at]);
        Ok(at)
    }

    /// Parses a header from the start of `bytes`; returns it and the bytes it occupied (the
    /// payload starts there). Never panics; any malformed input is a typed error.
    pub fn decode(bytes: &[u8]) -> Result<(PacketHeader, usize), HeaderError> {
        let packet = Packet::new_checked(bytes)?;
        Ok((packet.header(), packet.header_len()))
    }
}

/// A datagram known to start with a well-formed header (smoltcp-style checked view): after
/// [`Packet::new_checked`] every accessor is infallible and reads straight from the buffer,
/// and the payload is borrowed, not copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks that `buffer` starts with a valid, canonical header of this wire version.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, HeaderError> {
        check(buffer.as_ref())?;
        Ok(Packet { buffer })
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn prefix(&self) -> u8 {
        self.bytes()[0]
    }

    fn ack_delta_form(&self) -> bool {
        self.prefix() & ACK_DELTA_BIT != 0
    }

    /// Header length in bytes (4 to 9).
    pub fn header_len(&self) -> usize {
        len_for_prefix(self.prefix())
    }

    /// The packet's sequence number.
    pub fn sequence(&self) -> u16 {
        u16::from_be_bytes([self.bytes()[1], self.bytes()[2]])
    }

    /// The most recent sequence the sender had received.
    pub fn ack(&self) -> u16 {
        let bytes = self.bytes();
        if self.ack_delta_form() {
            self.sequence().wrapping_sub(u16::from(bytes[3]))
        } else {
            u16::from_be_bytes([bytes[3], bytes[4]])
        }
    }

    /// The received set relative to [`ack`](Self::ack) (bit `n` = `ack - n` received).
    pub fn ack_bits(&self) -> u32 {
        let bytes = self.bytes();
        let mut at = if self.ack_delta_form() { 4 } else { 5 };
        let mut ack_bytes = [0xFF_u8; 4];
        for (k, slot) in ack_bytes.iter_mut().enumerate() {
            if self.prefix() & (1 << k) != 0 {
                *slot = bytes[at];
                at += 1;
            }
        }
        u32::from_le_bytes(ack_bytes)
    }

    /// All header fields as a plain [`PacketHeader`].
    pub fn header(&self) -> PacketHeader {
        PacketHeader {
            sequence: self.sequence(),
            ack: self.ack(),
            ack_bits: self.ack_bits(),
        }
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.bytes()[self.header_len()..]
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }
}

/// Validates the header at the start of `bytes` and returns its length.
fn check(bytes: &[u8]) -> Result<usize, HeaderError> {
    let Some(&prefix) = bytes.first() else {
        return Err(HeaderError::Truncated {
            needed: PacketHeader::MIN_LEN,
            available: 0,
        });
    };
    let version = prefix >> VERSION_SHIFT;
    if version != WIRE_VERSION {
        return Err(HeaderError::UnsupportedVersion(version));
    }
    if prefix & RESERVED_BIT != 0 {
        return Err(HeaderError::ReservedBitSet(prefix));
    }
    let needed = len_for_prefix(prefix);
    if bytes.len() < needed {
        return Err(HeaderError::Truncated {
            needed,
            available: bytes.len(),
        });
    }
    let mut at = 4;
    if prefix & ACK_DELTA_BIT == 0 {
        let sequence = u16::from_be_bytes([bytes[1], bytes[2]]);
        let ack = u16::from_be_bytes([bytes[3], bytes[4]]);
        if sequence.wrapping_sub(ack) <= 0xFF {
            return Err(HeaderError::NonCanonical);
        }
        at = 5;
    }
    // A sent bitfield byte of 0xFF should have been elided.
    if bytes[at..needed].contains(&0xFF) {
        return Err(HeaderError::NonCanonical);
    }
    Ok(needed)
}

fn len_for_prefix(prefix: u8) -> usize {
    let ack_len = if prefix & ACK_DELTA_BIT != 0 { 1 } else { 2 };
    3 + ack_len + (prefix & ACK_BYTES_MASK).count_ones() as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn steady_state_header_is_four_bytes() {
        let header = PacketHeader {
            sequence: 1000,
            ack: 990,
            ack_bits: u32::MAX,
        };
        let mut buf = [0u8; PacketHeader::MAX_LEN];
        assert_eq!(header.encode(&mut buf), Ok(4));
        assert_eq!(&buf[..4], &[0x50, 0x03, 0xE8, 10]);
    }

    #[test]
    fn ack_far_behind_sequence_is_sent_in_full() {
        let header = PacketHeader {
            sequence: 5,
            ack: 65000,
            ack_bits: 0,
        };
        let mut buf = [0u8; PacketHeader::MAX_LEN];
        assert_eq!(header.encode(&mut buf), Ok(9));
        assert_eq!(PacketHeader::decode(&buf), Ok((header, 9)));
    }

    #[test]
    fn ack_delta_wraps_around_65535() {
        let header = PacketHeader {
            sequence: 2,
            ack: 65534,
            ack_bits: u32::MAX,
        };
        let mut buf = [0u8; PacketHeader::MAX_LEN];
        assert_eq!(header.encode(&mut buf), Ok(4));
        assert_eq!(buf[3], 4);
        assert_eq!(PacketHeader::decode(&buf[..4]), Ok((header, 4)));
    }

    #[test]
    fn encoding_into_a_short_buffer_fails_and_writes_nothing() {
        let header = PacketHeader::default();
        let mut buf = [0xAAu8; 5];
        assert_eq!(
            header.encode(&mut buf),
            Err(HeaderError::BufferTooSmall {
                needed: 8,
                available: 5
            })
        );
        assert_eq!(buf, [0xAA; 5]);
    }

    #[test]
    fn checked_view_reads_fields_and_borrows_the_payload() {
        let datagram = [0x53, 0x12, 0x34, 0x04, 0xFB, 0x7F, b'h', b'i'];
        let packet = Packet::new_checked(&datagram[..]).unwrap();
        assert_eq!(packet.header_len(), 6);
        assert_eq!(
            (packet.sequence(), packet.ack(), packet.ack_bits()),
            (4660, 4656, 0xFFFF_7FFB)
        );
        assert_eq!(packet.payload(), b"hi");
    }

    #[test]
    fn other_wire_versions_are_rejected() {
        assert_eq!(
            PacketHeader::decode(&[0x90, 0, 1, 1]),
            Err(HeaderError::UnsupportedVersion(2))
        );
        assert_eq!(
            PacketHeader::decode(&[0x10, 0, 1, 1]),
            Err(HeaderError::UnsupportedVersion(0))
        );
    }

    #[test]
    fn reserved_bit_is_rejected() {
        assert_eq!(
            PacketHeader::decode(&[0x70, 0, 1, 1]),
            Err(HeaderError::ReservedBitSet(0x70))
        );
    }

    #[test]
    fn truncated_input_reports_the_needed_length() {
        assert_eq!(
            PacketHeader::decode(&[]),
            Err(HeaderError::Truncated {
                needed: 4,
                available: 0
            })
        );
        assert_eq!(
            PacketHeader::decode(&[0x5F, 0, 1, 1, 0, 0]),
            Err(HeaderError::Truncated {
                needed: 8,
                available: 6
            })
        );
    }

    #[test]
    fn longer_forms_of_a_header_are_rejected() {
        // Full ack although the delta (1) fits in one byte.
        assert_eq!(
            PacketHeader::decode(&[0x40, 0, 2, 0, 1]),
            Err(HeaderError::NonCanonical)
        );
        // An ack byte of 0xFF sent although it would be elided.
        assert_eq!(
            PacketHeader::decode(&[0x51, 0, 2, 1, 0xFF]),
            Err(HeaderError::NonCanonical)
        );
    }

    proptest! {
        #[test]
        fn every_header_round_trips(sequence: u16, ack: u16, ack_bits: u32) {
            let header = PacketHeader { sequence, ack, ack_bits };
            let mut buf = [0u8; PacketHeader::MAX_LEN + 3];
            let len = header.encode(&mut buf).unwrap();
            prop_assert_eq!(len, header.encoded_len());
            prop_assert!((PacketHeader::MIN_LEN..=PacketHeader::MAX_LEN).contains(&len));
            prop_assert_eq!(PacketHeader::decode(&buf), Ok((header, len)));
        }

        #[test]
        fn any_accepted_bytes_re_encode_identically(bytes in proptest::collection::vec(any::<u8>(), 0..12)) {
            if let Ok((header, len)) = PacketHeader::decode(&bytes) {
                let mut buf = [0u8; PacketHeader::MAX_LEN];
                prop_assert_eq!(header.encode(&mut buf), Ok(len));
                prop_assert_eq!(&buf[..len], &bytes[..len]);
            }
        }
    }
}
