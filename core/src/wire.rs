//! The packet header on the wire: a plain [`PacketHeader`] struct plus its compact codec.
//!
//! Byte-exact layout (documented with worked examples in `docs/wire.md`, which a test holds
//! the code to):
//!
//! ```text
//! byte 0      prefix   bits 7-6: wire version (10 = 2)
//!                      bit  5  : 0 (1 marks a control packet, see `control`)
//!                      bit  4  : the ack is sent as its low byte (else in full, 2 bytes)
//!                      bits 3-0: bit k set = byte k of ack_bits is sent (absent bytes are 0xFF)
//! bytes 1-2   sequence, big-endian
//! 1 or 2      ack: its low byte, or all 16 bits big-endian
//! 1           ack delay: how long the sender held the packet `ack` names, in 0.5 ms units
//! 0 to 4      the ack_bits bytes that are not 0xFF, least significant byte first
//! ```
//!
//! In steady state (every one of the last 32 packets received) a header is 5 bytes in both
//! directions, whatever the two sides' rates: the ack travels as its low byte whenever the
//! receiver can rebuild the rest (see [`AckField`]). The encoding is canonical: every header
//! has exactly one byte form given the ack form, and the decoder rejects any other, so
//! `encode(decode(bytes)) == bytes` for every accepted input.
//!
//! The 64-bit protocol id is exchanged once, in the connection handshake; per packet only the
//! 2-bit wire version in the prefix is checked, which costs no extra byte. Datagram integrity
//! is left to the transport (UDP checksum, DTLS/SCTP on WebRTC).

use core::time::Duration;

use thiserror::Error;

use crate::sequence::distance;

/// The wire version carried in the top two bits of every datagram's first byte.
pub const WIRE_VERSION: u8 = 2;

pub(crate) const VERSION_SHIFT: u8 = 6;
/// Set in the first byte of a control packet, clear in a data packet's prefix.
pub(crate) const CONTROL_BIT: u8 = 1 << 5;
const SHORT_ACK_BIT: u8 = 1 << 4;
const ACK_BYTES_MASK: u8 = 0x0F;

/// How a header names the newest sequence its sender received from the peer.
///
/// The low byte is enough when the receiver can rebuild the other eight bits: it resolves
/// them against the newest ack it has taken in (see [`AckField::resolve`]), and a sender
/// uses it only while the ack is within 255 of an ack the peer is known to hold (one it
/// carried in a packet the peer has acknowledged). Otherwise the ack goes in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AckField {
    /// All 16 bits (2 bytes on the wire).
    Full(u16),
    /// The low 8 bits (1 byte on the wire).
    Low(u8),
}

impl Default for AckField {
    fn default() -> Self {
        AckField::Low(0)
    }
}

impl AckField {
    /// The field for `ack` when the peer is known to hold `floor` (an earlier ack, or `None`
    /// when it holds none yet): the low byte if `ack` is at most 255 after `floor`.
    pub fn for_ack(ack: u16, floor: Option<u16>) -> AckField {
        match floor {
            Some(floor) if (0..=255).contains(&distance(floor, ack)) => AckField::Low(ack as u8),
            _ => AckField::Full(ack),
        }
    }

    /// The sequence this field names, given `newest`, the newest ack taken in from the peer
    /// so far: a full ack as it is, a low byte as the first sequence at or after `newest`
    /// (RFC 1982) ending in that byte.
    pub fn resolve(self, newest: u16) -> u16 {
        match self {
            AckField::Full(ack) => ack,
            AckField::Low(low) => newest.wrapping_add(u16::from(low.wrapping_sub(newest as u8))),
        }
    }
}

/// How long a header's sender held the packet its `ack` names before sending the header, in
/// units of 0.5 ms: the receiver subtracts it from the round-trip sample, so RTT measures the
/// path and not the peer's wait for its next send. 255 means "127.25 ms or more": no sample
/// is taken from such a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct AckDelay(pub u8);

impl AckDelay {
    /// One unit of the field.
    pub const UNIT: Duration = Duration::from_micros(500);
    /// The code for a hold too long to measure (127.25 ms or more).
    pub const SATURATED: AckDelay = AckDelay(255);
    const UNIT_NANOS: u64 = 500_000;

    /// The code for a hold of `nanos` nanoseconds, rounded to the nearest unit.
    pub fn from_nanos(nanos: u64) -> AckDelay {
        let units = nanos.saturating_add(Self::UNIT_NANOS / 2) / Self::UNIT_NANOS;
        AckDelay(units.min(255) as u8)
    }

    /// The code for a hold of `held`.
    pub fn from_duration(held: Duration) -> AckDelay {
        Self::from_nanos(crate::time::nanos(held))
    }

    /// The hold in nanoseconds, or `None` when saturated.
    pub(crate) fn nanos(self) -> Option<u64> {
        (self != Self::SATURATED).then_some(u64::from(self.0) * Self::UNIT_NANOS)
    }

    /// The hold, or `None` when saturated.
    pub fn duration(self) -> Option<Duration> {
        self.nanos().map(Duration::from_nanos)
    }
}

/// One packet's header: who it is, which of the peer's packets it acknowledges, and how long
/// the newest of them waited here.
///
/// `ack` names the most recent sequence received from the peer; bit `n` of `ack_bits` set
/// means sequence `ack - n` was received (so bit 0 stands for `ack` itself, and a header with
/// `ack_bits == 0` acknowledges nothing: its `ack` and `ack_delay` are then sent as zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PacketHeader {
    /// Sequence number of this packet.
    pub sequence: u16,
    /// Most recent sequence number received from the peer, in full or as its low byte.
    pub ack: AckField,
    /// Received set relative to `ack`: bit `n` set = `ack - n` was received.
    pub ack_bits: u32,
    /// How long the packet `ack` names was held before this header was sent.
    pub ack_delay: AckDelay,
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
    /// The first byte carries a wire version this build does not speak.
    #[error("unsupported wire version {0} (expected {WIRE_VERSION})")]
    UnsupportedVersion(u8),
    /// The datagram is a control packet (first byte bit 5 set), not a data packet: a
    /// connection handles those before decoding a header, a bare endpoint refuses them.
    #[error("control packet {0:#04x} where a data packet was expected")]
    ControlPacket(u8),
    /// The bytes are a valid header in another form than the canonical one: a sent ack
    /// bitfield byte of `0xFF`, or a header that acknowledges nothing with a non-zero ack,
    /// ack delay or a full ack.
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
    /// The longest encoding: prefix, sequence, full ack, ack delay and all four ack bytes.
    pub const MAX_LEN: usize = 10;
    /// The shortest encoding: prefix, sequence, low ack byte, ack delay, no ack bytes.
    pub const MIN_LEN: usize = 5;

    /// The header of a packet sent before anything was received: it acknowledges nothing.
    pub fn first(sequence: u16) -> PacketHeader {
        PacketHeader {
            sequence,
            ..PacketHeader::default()
        }
    }

    /// The ack field and delay as they go on the wire: zero when nothing is acknowledged.
    fn wire_ack(&self) -> (AckField, AckDelay) {
        if self.ack_bits == 0 {
            (AckField::Low(0), AckDelay(0))
        } else {
            (self.ack, self.ack_delay)
        }
    }

    fn prefix(&self) -> u8 {
        let mut prefix = WIRE_VERSION << VERSION_SHIFT;
        if let AckField::Low(_) = self.wire_ack().0 {
            prefix |= SHORT_ACK_BIT;
        }
        for (k, byte) in self.ack_bits.to_le_bytes().into_iter().enumerate() {
            if byte != 0xFF {
                prefix |= 1 << k;
            }
        }
        prefix
    }

    /// Bytes [`encode`](Self::encode) writes for this header (5 to 10).
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
        let (ack, delay) = self.wire_ack();
        let mut bytes = [0u8; Self::MAX_LEN];
        bytes[0] = prefix;
        bytes[1..3].copy_from_slice(&self.sequence.to_be_bytes());
        let mut at = match ack {
            AckField::Low(low) => {
                bytes[3] = low;
                4
            }
            AckField::Full(full) => {
                bytes[3..5].copy_from_slice(&full.to_be_bytes());
                5
            }
        };
        bytes[at] = delay.0;
        at += 1;
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

    /// `buffer` whose header was already checked (a protected packet without its tag).
    pub(crate) fn from_checked(buffer: T) -> Packet<T> {
        debug_assert!(check(buffer.as_ref()).is_ok());
        Packet { buffer }
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn prefix(&self) -> u8 {
        self.bytes()[0]
    }

    /// Offset of the ack delay byte (the ack bitfield bytes follow it).
    fn delay_at(&self) -> usize {
        if self.prefix() & SHORT_ACK_BIT != 0 {
            4
        } else {
            5
        }
    }

    /// Header length in bytes (5 to 10).
    pub fn header_len(&self) -> usize {
        len_for_prefix(self.prefix())
    }

    /// The packet's sequence number.
    pub fn sequence(&self) -> u16 {
        u16::from_be_bytes([self.bytes()[1], self.bytes()[2]])
    }

    /// The most recent sequence the sender had received, as sent.
    pub fn ack(&self) -> AckField {
        let bytes = self.bytes();
        if self.prefix() & SHORT_ACK_BIT != 0 {
            AckField::Low(bytes[3])
        } else {
            AckField::Full(u16::from_be_bytes([bytes[3], bytes[4]]))
        }
    }

    /// How long the sender held the packet [`ack`](Self::ack) names.
    pub fn ack_delay(&self) -> AckDelay {
        AckDelay(self.bytes()[self.delay_at()])
    }

    /// The received set relative to [`ack`](Self::ack) (bit `n` = `ack - n` received).
    pub fn ack_bits(&self) -> u32 {
        let bytes = self.bytes();
        let mut at = self.delay_at() + 1;
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
            ack_delay: self.ack_delay(),
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
    if prefix & CONTROL_BIT != 0 {
        return Err(HeaderError::ControlPacket(prefix));
    }
    let needed = len_for_prefix(prefix);
    if bytes.len() < needed {
        return Err(HeaderError::Truncated {
            needed,
            available: bytes.len(),
        });
    }
    let delay_at = if prefix & SHORT_ACK_BIT != 0 { 4 } else { 5 };
    let bitfield = &bytes[delay_at + 1..needed];
    // A sent bitfield byte of 0xFF should have been elided.
    if bitfield.contains(&0xFF) {
        return Err(HeaderError::NonCanonical);
    }
    // Acknowledging nothing (all four bytes sent, all zero): ack and delay are zero, short.
    let nothing = bitfield.len() == 4 && bitfield.iter().all(|&b| b == 0);
    if nothing && (delay_at != 4 || bytes[3] != 0 || bytes[4] != 0) {
        return Err(HeaderError::NonCanonical);
    }
    Ok(needed)
}

fn len_for_prefix(prefix: u8) -> usize {
    let ack_len = if prefix & SHORT_ACK_BIT != 0 { 1 } else { 2 };
    3 + ack_len + 1 + (prefix & ACK_BYTES_MASK).count_ones() as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn steady(sequence: u16, ack: u16, ack_delay: u8) -> PacketHeader {
        PacketHeader {
            sequence,
            ack: AckField::Low(ack as u8),
            ack_bits: u32::MAX,
            ack_delay: AckDelay(ack_delay),
        }
    }

    #[test]
    fn steady_state_header_is_five_bytes() {
        let mut buf = [0u8; PacketHeader::MAX_LEN];
        assert_eq!(steady(1000, 2990, 6).encode(&mut buf), Ok(5));
        assert_eq!(&buf[..5], &[0x90, 0x03, 0xE8, 0xAE, 6]);
    }

    #[test]
    fn a_full_ack_costs_one_byte_more() {
        let header = PacketHeader {
            ack: AckField::Full(2990),
            ..steady(1000, 0, 6)
        };
        let mut buf = [0u8; PacketHeader::MAX_LEN];
        assert_eq!(header.encode(&mut buf), Ok(6));
        assert_eq!(&buf[..6], &[0x80, 0x03, 0xE8, 0x0B, 0xAE, 6]);
        assert_eq!(PacketHeader::decode(&buf[..6]), Ok((header, 6)));
    }

    #[test]
    fn a_low_ack_resolves_to_the_first_match_at_or_after_the_newest_ack() {
        assert_eq!(AckField::Low(0xAE).resolve(2950), 2990);
        assert_eq!(AckField::Low(0xAE).resolve(2990), 2990);
        assert_eq!(AckField::Low(0xAE).resolve(2991), 2990 + 256);
        // Across the wrap from 65535 to 0.
        assert_eq!(AckField::Low(2).resolve(65530), 2);
        assert_eq!(AckField::Full(7).resolve(65530), 7);
    }

    #[test]
    fn the_low_form_is_chosen_only_within_255_of_what_the_peer_holds() {
        assert_eq!(AckField::for_ack(300, None), AckField::Full(300));
        assert_eq!(AckField::for_ack(300, Some(45)), AckField::Low(44));
        assert_eq!(AckField::for_ack(300, Some(44)), AckField::Full(300));
        assert_eq!(AckField::for_ack(3, Some(65500)), AckField::Low(3));
    }

    #[test]
    fn ack_delays_round_to_half_milliseconds_and_saturate() {
        assert_eq!(AckDelay::from_nanos(0), AckDelay(0));
        assert_eq!(AckDelay::from_nanos(249_999), AckDelay(0));
        assert_eq!(AckDelay::from_nanos(250_000), AckDelay(1));
        assert_eq!(
            AckDelay::from_duration(Duration::from_millis(100)),
            AckDelay(200)
        );
        assert_eq!(AckDelay(254).duration(), Some(Duration::from_millis(127)));
        assert_eq!(AckDelay::from_nanos(127_250_000), AckDelay::SATURATED);
        assert_eq!(AckDelay::from_nanos(u64::MAX), AckDelay::SATURATED);
        assert_eq!(AckDelay::SATURATED.duration(), None);
    }

    #[test]
    fn a_header_that_acknowledges_nothing_sends_zero_ack_and_delay() {
        let header = PacketHeader {
            ack: AckField::Full(900),
            ack_delay: AckDelay(9),
            ..PacketHeader::first(5)
        };
        let mut buf = [0u8; PacketHeader::MAX_LEN];
        assert_eq!(header.encode(&mut buf), Ok(9));
        assert_eq!(&buf[..9], &[0x9F, 0, 5, 0, 0, 0, 0, 0, 0]);
        assert_eq!(PacketHeader::decode(&buf), Ok((PacketHeader::first(5), 9)));
    }

    #[test]
    fn encoding_into_a_short_buffer_fails_and_writes_nothing() {
        let mut buf = [0xAAu8; 5];
        assert_eq!(
            PacketHeader::first(0).encode(&mut buf),
            Err(HeaderError::BufferTooSmall {
                needed: 9,
                available: 5
            })
        );
        assert_eq!(buf, [0xAA; 5]);
    }

    #[test]
    fn checked_view_reads_fields_and_borrows_the_payload() {
        let datagram = [0x93, 0x12, 0x34, 0x30, 0x02, 0xFB, 0x7F, b'h', b'i'];
        let packet = Packet::new_checked(&datagram[..]).unwrap();
        assert_eq!(packet.header_len(), 7);
        assert_eq!(
            (packet.sequence(), packet.ack(), packet.ack_bits()),
            (4660, AckField::Low(0x30), 0xFFFF_7FFB)
        );
        assert_eq!(
            packet.ack_delay().duration(),
            Some(Duration::from_millis(1))
        );
        assert_eq!(packet.payload(), b"hi");
    }

    #[test]
    fn other_wire_versions_are_rejected() {
        for (byte, version) in [(0x50, 1), (0x10, 0), (0xD0, 3)] {
            assert_eq!(
                PacketHeader::decode(&[byte, 0, 1, 1, 0]),
                Err(HeaderError::UnsupportedVersion(version))
            );
        }
    }

    #[test]
    fn a_control_packet_is_not_taken_for_a_header() {
        assert_eq!(
            PacketHeader::decode(&[0xA4, 0, 1, 1, 0]),
            Err(HeaderError::ControlPacket(0xA4))
        );
    }

    #[test]
    fn truncated_input_reports_the_needed_length() {
        assert_eq!(
            PacketHeader::decode(&[]),
            Err(HeaderError::Truncated {
                needed: 5,
                available: 0
            })
        );
        assert_eq!(
            PacketHeader::decode(&[0x9F, 0, 1, 0, 0, 0]),
            Err(HeaderError::Truncated {
                needed: 9,
                available: 6
            })
        );
    }

    #[test]
    fn longer_forms_of_a_header_are_rejected() {
        // An ack byte of 0xFF sent although it would be elided.
        assert_eq!(
            PacketHeader::decode(&[0x91, 0, 2, 1, 0, 0xFF]),
            Err(HeaderError::NonCanonical)
        );
        // Nothing acknowledged, yet an ack, a delay or a full ack is sent.
        for bytes in [
            [0x9F, 0, 1, 7, 0, 0, 0, 0, 0, 0],
            [0x9F, 0, 1, 0, 3, 0, 0, 0, 0, 0],
            [0x8F, 0, 1, 0, 0, 0, 0, 0, 0, 0],
        ] {
            let len = len_for_prefix(bytes[0]);
            assert_eq!(
                PacketHeader::decode(&bytes[..len]),
                Err(HeaderError::NonCanonical),
                "{bytes:02X?}"
            );
        }
    }

    fn header() -> impl Strategy<Value = PacketHeader> {
        (
            any::<u16>(),
            prop_oneof![
                any::<u16>().prop_map(AckField::Full),
                any::<u8>().prop_map(AckField::Low)
            ],
            prop_oneof![Just(u32::MAX), Just(0), any::<u32>()],
            any::<u8>(),
        )
            .prop_map(|(sequence, ack, ack_bits, delay)| {
                let header = PacketHeader {
                    sequence,
                    ack,
                    ack_bits,
                    ack_delay: AckDelay(delay),
                };
                if ack_bits == 0 {
                    PacketHeader::first(sequence)
                } else {
                    header
                }
            })
    }

    proptest! {
        #[test]
        fn every_header_round_trips(header in header()) {
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

        #[test]
        fn a_low_ack_chosen_against_a_floor_resolves_from_any_newer_ack(
            floor: u16, ahead in 0u16..=255, newest_after_floor in 0u16..=255,
        ) {
            // The receiver's newest ack is at or after the floor the sender knew of, and at or
            // before the ack itself.
            let ack = floor.wrapping_add(ahead);
            let newest = floor.wrapping_add(newest_after_floor.min(ahead));
            prop_assert_eq!(AckField::for_ack(ack, Some(floor)).resolve(newest), ack);
        }
    }
}
