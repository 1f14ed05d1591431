//! Message frames: what a data packet's payload is made of (byte-exact spec in
//! `docs/wire.md`, section "Message frames").
//!
//! A payload is zero or more frames back to back, each one message (or one fragment of a
//! large reliable message) on one channel:
//!
//! ```text
//! byte 0      tag      bits 7-6: kind (00 unreliable, 01 sequenced, 10 reliable, 11 fragment)
//!                      bits 5-0: channel index (0..=63)
//! 2 bytes     id       sequenced, reliable and fragment frames: 16-bit id, big-endian
//! 1 byte      index    fragment frames: this fragment's index in its message
//! 1 byte      last     fragment frames: the message's fragment count minus one
//! 1 or 2      length   < 128: one byte; else two bytes, 0x80 | (len >> 8), len & 0xFF
//! length      bytes    the message (or fragment) itself
//! ```
//!
//! [`FrameRepr`] is the plain struct; [`FrameRepr::parse`] reads one frame and says how many
//! bytes it took, [`FrameRepr::emit`] writes one. [`Frames`] walks a whole payload.

use thiserror::Error;

/// Most channels a connection can have: the tag byte has six bits for the index.
pub const MAX_CHANNELS: usize = 64;
/// Message ids a reliable channel may have in flight (sent, not yet acked), and so the span
/// of ids a receiver accepts ahead of the next one it is waiting for.
pub const RELIABLE_WINDOW: u16 = 1024;
/// Reliable messages longer than this are split into fragments of exactly this many bytes
/// (the last one shorter); each fragment takes one message id.
pub const FRAGMENT_SIZE: usize = 1024;
/// Most fragments one message can have (the wire's `last` field is one byte).
pub const MAX_FRAGMENTS: usize = 256;
/// Largest reliable message: 256 fragments of 1024 bytes = 256 KiB.
pub const MAX_MESSAGE_SIZE: usize = FRAGMENT_SIZE * MAX_FRAGMENTS;
/// Longest length the two-byte length form can carry.
const MAX_FRAME_PAYLOAD: usize = 0x7FFF;

const KIND_SHIFT: u8 = 6;
const CHANNEL_MASK: u8 = 0x3F;

/// What a frame carries, with the fields its kind needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// A message sent once, with no id.
    Unreliable,
    /// A message sent once; the receiver drops it unless `sequence` is newer than the newest
    /// it has delivered on the channel.
    Sequenced {
        /// Per-channel rolling sequence.
        sequence: u16,
    },
    /// A whole reliable message.
    Reliable {
        /// Per-channel rolling message id.
        id: u16,
    },
    /// One fragment of a reliable message longer than [`FRAGMENT_SIZE`]. Fragment `index` has
    /// id `first + index`, where `first` is the id of fragment 0.
    Fragment {
        /// This fragment's message id.
        id: u16,
        /// Position in the message, `0..count`.
        index: u8,
        /// Number of fragments minus one (so 1..=255: a one-fragment message is `Reliable`).
        last: u8,
    },
}

/// One decoded frame: the plain-struct form of the bytes (smoltcp's `Repr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameRepr<'a> {
    /// Channel index, `0..64`.
    pub channel: u8,
    /// Kind and id fields.
    pub kind: FrameKind,
    /// The message or fragment bytes, borrowed from the packet.
    pub payload: &'a [u8],
}

/// Why a payload's frames were refused. The whole packet is refused and changes no state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The payload ends inside a frame.
    #[error("truncated frame: need {needed} bytes, have {available}")]
    Truncated {
        /// Bytes the frame needs from its start.
        needed: usize,
        /// Bytes left in the payload.
        available: usize,
    },
    /// A length has the two-byte form although it is under 128.
    #[error("non-canonical frame length")]
    NonCanonicalLength,
    /// A fragment's index is past its message's last fragment, or a non-final fragment is not
    /// exactly [`FRAGMENT_SIZE`] bytes, or the final one is empty or longer.
    #[error("malformed fragment {index} of {count}, {len} bytes")]
    BadFragment {
        /// Index field.
        index: u8,
        /// Fragment count (`last + 1`).
        count: u16,
        /// Fragment length.
        len: usize,
    },
    /// A whole reliable message longer than [`FRAGMENT_SIZE`] (it should have been fragmented).
    #[error("reliable message of {0} bytes should have been fragmented")]
    Unfragmented(usize),
    /// The channel index is not configured on this connection.
    #[error("no channel {0}")]
    UnknownChannel(u8),
    /// The frame kind does not match the channel's configured kind.
    #[error("a {kind} frame on channel {channel}, which is not of that kind")]
    WrongKind {
        /// The channel.
        channel: u8,
        /// What arrived.
        kind: &'static str,
    },
    /// A reliable id beyond the receive window (an honest sender never gets that far ahead).
    #[error("message id {id} on channel {channel} is beyond the receive window")]
    BeyondWindow {
        /// The channel.
        channel: u8,
        /// The id.
        id: u16,
    },
    /// A fragment disagrees with fragments already held for the same message.
    #[error("fragment {id} on channel {channel} contradicts the fragments held")]
    InconsistentFragment {
        /// The channel.
        channel: u8,
        /// The fragment's id.
        id: u16,
    },
    /// The output buffer cannot hold the frame.
    #[error("buffer too small for frame: need {needed} bytes, have {available}")]
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
}

impl FrameKind {
    fn code(&self) -> u8 {
        match self {
            FrameKind::Unreliable => 0,
            FrameKind::Sequenced { .. } => 1,
            FrameKind::Reliable { .. } => 2,
            FrameKind::Fragment { .. } => 3,
        }
    }

    /// A short name for errors and logs.
    pub fn name(&self) -> &'static str {
        match self {
            FrameKind::Unreliable => "unreliable",
            FrameKind::Sequenced { .. } => "sequenced",
            FrameKind::Reliable { .. } => "reliable",
            FrameKind::Fragment { .. } => "fragment",
        }
    }

    fn fields_len(&self) -> usize {
        match self {
            FrameKind::Unreliable => 0,
            FrameKind::Sequenced { .. } | FrameKind::Reliable { .. } => 2,
            FrameKind::Fragment { .. } => 4,
        }
    }
}

fn length_len(len: usize) -> usize {
    if len < 0x80 { 1 } else { 2 }
}

/// Bytes a frame of `kind` carrying `payload_len` bytes takes on the wire.
pub fn frame_len(kind: &FrameKind, payload_len: usize) -> usize {
    1 + kind.fields_len() + length_len(payload_len) + payload_len
}

/// Bytes of framing around a `payload_len`-byte message of `kind` (tag, id fields, length).
pub fn overhead(kind: &FrameKind, payload_len: usize) -> usize {
    frame_len(kind, payload_len) - payload_len
}

impl<'a> FrameRepr<'a> {
    /// Bytes [`emit`](Self::emit) writes.
    pub fn encoded_len(&self) -> usize {
        frame_len(&self.kind, self.payload.len())
    }

    /// Reads the frame at the start of `bytes`; returns it and the bytes it took. Checks the
    /// encoding and the fragment fields; channel and window checks need the connection.
    pub fn parse(bytes: &'a [u8]) -> Result<(FrameRepr<'a>, usize), FrameError> {
        let truncated = |needed: usize| FrameError::Truncated {
            needed,
            available: bytes.len(),
        };
        let &tag = bytes.first().ok_or(truncated(2))?;
        let channel = tag & CHANNEL_MASK;
        let u16_at = |at: usize| u16::from_be_bytes([bytes[at], bytes[at + 1]]);
        let (kind, at) = match tag >> KIND_SHIFT {
            0 => (FrameKind::Unreliable, 1),
            1 | 2 => {
                if bytes.len() < 4 {
                    return Err(truncated(4));
                }
                let id = u16_at(1);
                let kind = if tag >> KIND_SHIFT == 1 {
                    FrameKind::Sequenced { sequence: id }
                } else {
                    FrameKind::Reliable { id }
                };
                (kind, 3)
            }
            _ => {
                if bytes.len() < 6 {
                    return Err(truncated(6));
                }
                let kind = FrameKind::Fragment {
                    id: u16_at(1),
                    index: bytes[3],
                    last: bytes[4],
                };
                (kind, 5)
            }
        };
        let &first = bytes.get(at).ok_or(truncated(at + 1))?;
        let (len, at) = if first & 0x80 == 0 {
            (usize::from(first), at + 1)
        } else {
            let &second = bytes.get(at + 1).ok_or(truncated(at + 2))?;
            let len = usize::from(first & 0x7F) << 8 | usize::from(second);
            if len < 0x80 {
                return Err(FrameError::NonCanonicalLength);
            }
            (len, at + 2)
        };
        let end = at + len;
        if bytes.len() < end {
            return Err(truncated(end));
        }
        let payload = &bytes[at..end];
        match kind {
            FrameKind::Reliable { .. } if len > FRAGMENT_SIZE => {
                return Err(FrameError::Unfragmented(len));
            }
            FrameKind::Fragment { index, last, .. } => {
                let final_one = index == last;
                let fits = if final_one {
                    (1..=FRAGMENT_SIZE).contains(&len)
                } else {
                    len == FRAGMENT_SIZE
                };
                if index > last || last == 0 || !fits {
                    return Err(FrameError::BadFragment {
                        index,
                        count: u16::from(last) + 1,
                        len,
                    });
                }
            }
            _ => {}
        }
        Ok((
            FrameRepr {
                channel,
                kind,
                payload,
            },
            end,
        ))
    }

    /// Writes the frame at the start of `buf`; returns the bytes written. Writes nothing if
    /// `buf` is too short. The caller keeps `channel < 64` and the payload under 32 KiB.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, FrameError> {
        debug_assert!(usize::from(self.channel) < MAX_CHANNELS);
        debug_assert!(self.payload.len() <= MAX_FRAME_PAYLOAD);
        let needed = self.encoded_len();
        if buf.len() < needed {
            return Err(FrameError::BufferTooSmall {
                needed,
                available: buf.len(),
            });
        }
        buf[0] = self.kind.code() << KIND_SHIFT | (self.channel & CHANNEL_MASK);
        let mut at = 1;
        match self.kind {
            FrameKind::Unreliable => {}
            FrameKind::Sequenced { sequence: id } | FrameKind::Reliable { id } => {
                buf[1..3].copy_from_slice(&id.to_be_bytes());
                at = 3;
            }
            FrameKind::Fragment { id, index, last } => {
                buf[1..3].copy_from_slice(&id.to_be_bytes());
                buf[3] = index;
                buf[4] = last;
                at = 5;
            }
        }
        let len = self.payload.len();
        if len < 0x80 {
            buf[at] = len as u8;
            at += 1;
        } else {
            buf[at] = 0x80 | (len >> 8) as u8;
            buf[at + 1] = len as u8;
            at += 2;
        }
        buf[at..at + len].copy_from_slice(self.payload);
        Ok(at + len)
    }
}

/// Walks the frames of one payload; stops at the end or at the first error.
#[derive(Debug, Clone)]
pub struct Frames<'a> {
    rest: &'a [u8],
}

impl<'a> Frames<'a> {
    /// The frames of `payload`.
    pub fn new(payload: &'a [u8]) -> Frames<'a> {
        Frames { rest: payload }
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<FrameRepr<'a>, FrameError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match FrameRepr::parse(self.rest) {
            Ok((frame, used)) => {
                self.rest = &self.rest[used..];
                Some(Ok(frame))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(frame: FrameRepr<'_>) -> Vec<u8> {
        let mut buf = vec![0u8; frame.encoded_len()];
        assert_eq!(frame.emit(&mut buf), Ok(buf.len()));
        assert_eq!(FrameRepr::parse(&buf), Ok((frame, buf.len())));
        buf
    }

    #[test]
    fn a_small_unreliable_message_costs_two_bytes_of_framing() {
        let bytes = round_trip(FrameRepr {
            channel: 0,
            kind: FrameKind::Unreliable,
            payload: b"hi",
        });
        assert_eq!(bytes, [0x00, 2, b'h', b'i']);
    }

    #[test]
    fn lengths_of_128_and_more_take_two_bytes() {
        let payload = [7u8; 300];
        let bytes = round_trip(FrameRepr {
            channel: 1,
            kind: FrameKind::Reliable { id: 0x0102 },
            payload: &payload,
        });
        assert_eq!(&bytes[..5], &[0x81, 0x01, 0x02, 0x81, 0x2C]);
    }

    #[test]
    fn a_two_byte_length_under_128_is_refused() {
        assert_eq!(
            FrameRepr::parse(&[0x00, 0x80, 0x01, 0xAA]),
            Err(FrameError::NonCanonicalLength)
        );
    }

    #[test]
    fn fragments_must_be_full_sized_except_the_last() {
        let short = [0u8; 10];
        let mut buf = [0u8; 32];
        let frame = FrameRepr {
            channel: 2,
            kind: FrameKind::Fragment {
                id: 9,
                index: 0,
                last: 1,
            },
            payload: &short,
        };
        let len = frame.emit(&mut buf).unwrap();
        assert_eq!(
            FrameRepr::parse(&buf[..len]),
            Err(FrameError::BadFragment {
                index: 0,
                count: 2,
                len: 10
            })
        );
        buf[3] = 1; // now it is the last fragment, which may be short
        assert!(FrameRepr::parse(&buf[..len]).is_ok());
        buf[3] = 2; // index past the last
        assert!(matches!(
            FrameRepr::parse(&buf[..len]),
            Err(FrameError::BadFragment { index: 2, .. })
        ));
    }

    #[test]
    fn an_unfragmented_reliable_message_over_the_fragment_size_is_refused() {
        let payload = vec![0u8; FRAGMENT_SIZE + 1];
        let mut buf = vec![0u8; FRAGMENT_SIZE + 16];
        let len = FrameRepr {
            channel: 0,
            kind: FrameKind::Reliable { id: 1 },
            payload: &payload,
        }
        .emit(&mut buf)
        .unwrap();
        assert_eq!(
            FrameRepr::parse(&buf[..len]),
            Err(FrameError::Unfragmented(FRAGMENT_SIZE + 1))
        );
    }

    #[test]
    fn emitting_into_a_short_buffer_fails_and_writes_nothing() {
        let frame = FrameRepr {
            channel: 1,
            kind: FrameKind::Reliable { id: 7 },
            payload: b"hello",
        };
        let mut buf = [0xAAu8; 8];
        assert_eq!(
            frame.emit(&mut buf),
            Err(FrameError::BufferTooSmall {
                needed: 9,
                available: 8
            })
        );
        assert_eq!(buf, [0xAA; 8]);
    }

    #[test]
    fn a_payload_cut_inside_a_frame_is_truncated() {
        let mut frames = Frames::new(&[0x00, 1, 0xAA, 0x80, 0x00, 0x05, 3, 1]);
        assert!(frames.next().unwrap().is_ok());
        assert_eq!(
            frames.next(),
            Some(Err(FrameError::Truncated {
                needed: 7,
                available: 5
            }))
        );
        assert_eq!(frames.next(), None);
    }

    proptest! {
        #[test]
        fn any_accepted_frame_re_emits_identically(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok((frame, used)) = FrameRepr::parse(&bytes) {
                let mut buf = vec![0u8; used];
                prop_assert_eq!(frame.emit(&mut buf), Ok(used));
                prop_assert_eq!(&buf[..], &bytes[..used]);
            }
        }
    }
}
