//! Connection control packets: the handshake and the disconnect (byte-exact spec in
//! `docs/wire.md`, section "Control packets").
//!
//! A control packet is a whole datagram. Its first byte is `0xA0 | type`: the same 2-bit wire
//! version (10) as a data packet's prefix, with bit 5, which is clear in every data prefix,
//! set. So one byte tells a control packet from a data packet, and both check the version.
//!
//! ```text
//! 0xA0 connect request   protocol id (8, BE), 24 zero bytes           33 bytes
//! 0xA1 challenge         cookie (32)                                  33 bytes
//! 0xA2 connect response  protocol id (8, BE), cookie (32)             41 bytes
//! 0xA3 accepted          connection id (8, BE)                         9 bytes
//! 0xA4 disconnect        connection id (8, BE)                         9 bytes
//! 0xA5 secure request    protocol id (8, BE), 56 zero bytes           65 bytes
//! 0xA6 secure challenge  cookie (32), acceptor's static key (32)      65 bytes
//! 0xA7 secure response   protocol id (8, BE), cookie (32), message (48)  89 bytes
//! 0xA8 secure accepted   connection id (8, BE), answer (48)           57 bytes
//! 0xA9 channel request   protocol id (8, BE)                           9 bytes
//!
//! cookie = timestamp_ms (8, BE) | nonce (8) | mac (16)
//! ```
//!
//! A request is padded to the size of the challenge it asks for, so an acceptor never sends
//! more bytes than it received (no amplification from spoofed addresses). The secure
//! variants carry the key exchange ([`crate::key_exchange`]) of a protected connection.
//! The channel request is the one-round-trip handshake of a transport that already
//! authenticated the peer (a WebRTC data channel: ICE checked the path, DTLS the peer): it is
//! answered with `accepted` at once, and refused by an acceptor on raw UDP.

use thiserror::Error;

use crate::key_exchange::{HANDSHAKE_MESSAGE_LEN, PUBLIC_KEY_LEN};
use crate::wire::{CONTROL_BIT, VERSION_SHIFT, WIRE_VERSION};

/// First-byte bits shared by every control packet: the wire version plus bit 5.
const CONTROL_BASE: u8 = WIRE_VERSION << VERSION_SHIFT | CONTROL_BIT;
const TYPE_MASK: u8 = 0x1F;

const REQUEST: u8 = 0;
const CHALLENGE: u8 = 1;
const RESPONSE: u8 = 2;
const ACCEPTED: u8 = 3;
const DISCONNECT: u8 = 4;
const SECURE_REQUEST: u8 = 5;
const SECURE_CHALLENGE: u8 = 6;
const SECURE_RESPONSE: u8 = 7;
const SECURE_ACCEPTED: u8 = 8;
const CHANNEL_REQUEST: u8 = 9;

/// Zero padding after a request's protocol id (request length = challenge length).
const REQUEST_PADDING: usize = Cookie::LEN - 8;
/// The same for a secure request, whose challenge also carries the acceptor's static key.
const SECURE_REQUEST_PADDING: usize = Cookie::LEN + PUBLIC_KEY_LEN - 8;

/// A stateless challenge: the acceptor's clock reading, a nonce and a MAC over both plus the
/// protocol id and the peer's address, keyed with the acceptor's secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie {
    /// Acceptor time when the cookie was made, in milliseconds of its `now`.
    pub timestamp_ms: u64,
    /// Unpredictable bytes; they become the connection id when the cookie is accepted.
    pub nonce: [u8; 8],
    /// HMAC-SHA256 truncated to 128 bits.
    pub mac: [u8; 16],
}

impl Cookie {
    /// Encoded length.
    pub const LEN: usize = 32;

    fn read(bytes: &[u8]) -> Cookie {
        let mut nonce = [0u8; 8];
        nonce.copy_from_slice(&bytes[8..16]);
        let mut mac = [0u8; 16];
        mac.copy_from_slice(&bytes[16..32]);
        Cookie {
            timestamp_ms: u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes")),
            nonce,
            mac,
        }
    }

    fn write(&self, buf: &mut [u8]) {
        buf[..8].copy_from_slice(&self.timestamp_ms.to_be_bytes());
        buf[8..16].copy_from_slice(&self.nonce);
        buf[16..32].copy_from_slice(&self.mac);
    }
}

/// The prologue both sides bind their key exchange to: a label, the protocol id and the
/// cookie, so a message cannot be moved to another handshake, acceptor or protocol. It is
/// made of the control packets' fields, so it lives with them; the key exchange only takes
/// its bytes.
pub(crate) fn prologue(protocol_id: u64, cookie: &Cookie) -> [u8; 48] {
    let mut out = [0u8; 48];
    out[..8].copy_from_slice(PROLOGUE_LABEL);
    out[8..16].copy_from_slice(&protocol_id.to_be_bytes());
    cookie.write(&mut out[16..]);
    out
}

/// First bytes of every prologue.
const PROLOGUE_LABEL: &[u8; 8] = b"ackwire2";

/// One control packet, as a plain struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ControlPacket {
    /// Connector → acceptor: "I speak `protocol_id`; challenge me."
    ConnectRequest {
        /// The connector's 64-bit protocol id.
        protocol_id: u64,
    },
    /// Acceptor → connector: a cookie to echo back.
    Challenge {
        /// The cookie.
        cookie: Cookie,
    },
    /// Connector → acceptor: the echoed cookie.
    ConnectResponse {
        /// The connector's 64-bit protocol id, again.
        protocol_id: u64,
        /// The cookie from the challenge.
        cookie: Cookie,
    },
    /// Acceptor → connector: the connection exists; data packets may flow.
    Accepted {
        /// The connection id (the cookie's nonce).
        connection_id: u64,
    },
    /// Either side: the connection is closed. Sent several times, as it is not acked.
    Disconnect {
        /// The connection being closed.
        connection_id: u64,
    },
    /// Connector → acceptor: as a connect request, for a protected connection.
    SecureRequest {
        /// The connector's 64-bit protocol id.
        protocol_id: u64,
    },
    /// Acceptor → connector: a cookie to echo, and the key the acceptor will prove it holds.
    SecureChallenge {
        /// The cookie.
        cookie: Cookie,
        /// The acceptor's static public key.
        static_key: [u8; PUBLIC_KEY_LEN],
    },
    /// Connector → acceptor: the echoed cookie and the key exchange's first message.
    SecureResponse {
        /// The connector's 64-bit protocol id, again.
        protocol_id: u64,
        /// The cookie from the challenge.
        cookie: Cookie,
        /// The first handshake message.
        message: [u8; HANDSHAKE_MESSAGE_LEN],
    },
    /// Acceptor → connector: the connection exists, and the key exchange's answer.
    SecureAccepted {
        /// The connection id (the cookie's nonce).
        connection_id: u64,
        /// The second handshake message.
        answer: [u8; HANDSHAKE_MESSAGE_LEN],
    },
    /// Connector → acceptor, on an authenticated channel only: "I speak `protocol_id`;
    /// accept me." Answered with [`Accepted`](Self::Accepted), no challenge.
    ChannelRequest {
        /// The connector's 64-bit protocol id.
        protocol_id: u64,
    },
}

/// Why a control packet could not be decoded or encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ControlError {
    /// The first byte is not a control packet of this wire version (0 for an empty
    /// datagram). Only a direct [`ControlPacket::parse`] returns this: connections and
    /// acceptors look at the first byte before parsing.
    #[error("not a control packet: first byte {0:#04x}")]
    NotControl(u8),
    /// A control packet type this version does not define.
    #[error("unknown control packet type {0}")]
    UnknownType(u8),
    /// The datagram's length is not the type's fixed length.
    #[error("control packet of type {kind} must be {expected} bytes, got {got}")]
    BadLength {
        /// Type code.
        kind: u8,
        /// Its fixed length.
        expected: usize,
        /// The datagram's length.
        got: usize,
    },
    /// A connect request's padding is not all zeros.
    #[error("connect request padding is not zero")]
    BadPadding,
    /// The output buffer is too small (emitting only; an acceptor's reply buffer under 33
    /// bytes).
    #[error("buffer too small for control packet: need {needed} bytes, have {available}")]
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
}

/// True when `datagram` claims to be a control packet (the first byte has the control bits).
/// Anything else is for the packet layer.
pub fn is_control(datagram: &[u8]) -> bool {
    datagram
        .first()
        .is_some_and(|b| b & !TYPE_MASK == CONTROL_BASE)
}

/// True when `datagram`'s first byte is a channel request's (`A9`), whatever follows.
pub(crate) fn is_channel_request(datagram: &[u8]) -> bool {
    datagram.first() == Some(&(CONTROL_BASE | CHANNEL_REQUEST))
}

impl ControlPacket {
    fn code(&self) -> u8 {
        match self {
            ControlPacket::ConnectRequest { .. } => REQUEST,
            ControlPacket::Challenge { .. } => CHALLENGE,
            ControlPacket::ConnectResponse { .. } => RESPONSE,
            ControlPacket::Accepted { .. } => ACCEPTED,
            ControlPacket::Disconnect { .. } => DISCONNECT,
            ControlPacket::SecureRequest { .. } => SECURE_REQUEST,
            ControlPacket::SecureChallenge { .. } => SECURE_CHALLENGE,
            ControlPacket::SecureResponse { .. } => SECURE_RESPONSE,
            ControlPacket::SecureAccepted { .. } => SECURE_ACCEPTED,
            ControlPacket::ChannelRequest { .. } => CHANNEL_REQUEST,
        }
    }

    /// A short name for errors and logs.
    pub fn name(&self) -> &'static str {
        match self {
            ControlPacket::ConnectRequest { .. } => "connect request",
            ControlPacket::Challenge { .. } => "challenge",
            ControlPacket::ConnectResponse { .. } => "connect response",
            ControlPacket::Accepted { .. } => "accepted",
            ControlPacket::Disconnect { .. } => "disconnect",
            ControlPacket::SecureRequest { .. } => "secure request",
            ControlPacket::SecureChallenge { .. } => "secure challenge",
            ControlPacket::SecureResponse { .. } => "secure response",
            ControlPacket::SecureAccepted { .. } => "secure accepted",
            ControlPacket::ChannelRequest { .. } => "channel request",
        }
    }

    fn len_for(code: u8) -> Option<usize> {
        match code {
            REQUEST => Some(1 + 8 + REQUEST_PADDING),
            CHALLENGE => Some(1 + Cookie::LEN),
            RESPONSE => Some(1 + 8 + Cookie::LEN),
            ACCEPTED | DISCONNECT | CHANNEL_REQUEST => Some(1 + 8),
            SECURE_REQUEST => Some(1 + 8 + SECURE_REQUEST_PADDING),
            SECURE_CHALLENGE => Some(1 + Cookie::LEN + PUBLIC_KEY_LEN),
            SECURE_RESPONSE => Some(1 + 8 + Cookie::LEN + HANDSHAKE_MESSAGE_LEN),
            SECURE_ACCEPTED => Some(1 + 8 + HANDSHAKE_MESSAGE_LEN),
            _ => None,
        }
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub fn encoded_len(&self) -> usize {
        Self::len_for(self.code()).expect("every variant has a length")
    }

    /// Decodes one whole datagram. Never panics; anything malformed is a typed error.
    pub fn parse(datagram: &[u8]) -> Result<ControlPacket, ControlError> {
        let &first = datagram.first().ok_or(ControlError::NotControl(0))?;
        if !is_control(datagram) {
            return Err(ControlError::NotControl(first));
        }
        let code = first & TYPE_MASK;
        let expected = Self::len_for(code).ok_or(ControlError::UnknownType(code))?;
        if datagram.len() != expected {
            return Err(ControlError::BadLength {
                kind: code,
                expected,
                got: datagram.len(),
            });
        }
        let u64_at = |at: usize| u64::from_be_bytes(datagram[at..at + 8].try_into().expect("8"));
        let array = |at: usize| -> [u8; HANDSHAKE_MESSAGE_LEN] {
            datagram[at..at + HANDSHAKE_MESSAGE_LEN]
                .try_into()
                .expect("length checked")
        };
        if matches!(code, REQUEST | SECURE_REQUEST) && datagram[9..].iter().any(|&b| b != 0) {
            return Err(ControlError::BadPadding);
        }
        Ok(match code {
            REQUEST => ControlPacket::ConnectRequest {
                protocol_id: u64_at(1),
            },
            SECURE_REQUEST => ControlPacket::SecureRequest {
                protocol_id: u64_at(1),
            },
            SECURE_CHALLENGE => ControlPacket::SecureChallenge {
                cookie: Cookie::read(&datagram[1..]),
                static_key: datagram[1 + Cookie::LEN..]
                    .try_into()
                    .expect("length checked"),
            },
            SECURE_RESPONSE => ControlPacket::SecureResponse {
                protocol_id: u64_at(1),
                cookie: Cookie::read(&datagram[9..]),
                message: array(9 + Cookie::LEN),
            },
            SECURE_ACCEPTED => ControlPacket::SecureAccepted {
                connection_id: u64_at(1),
                answer: array(9),
            },
            CHALLENGE => ControlPacket::Challenge {
                cookie: Cookie::read(&datagram[1..]),
            },
            RESPONSE => ControlPacket::ConnectResponse {
                protocol_id: u64_at(1),
                cookie: Cookie::read(&datagram[9..]),
            },
            ACCEPTED => ControlPacket::Accepted {
                connection_id: u64_at(1),
            },
            CHANNEL_REQUEST => ControlPacket::ChannelRequest {
                protocol_id: u64_at(1),
            },
            _ => ControlPacket::Disconnect {
                connection_id: u64_at(1),
            },
        })
    }

    /// Writes the packet at the start of `buf`; returns its length. Writes nothing if `buf`
    /// is too short.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, ControlError> {
        let len = self.encoded_len();
        if buf.len() < len {
            return Err(ControlError::BufferTooSmall {
                needed: len,
                available: buf.len(),
            });
        }
        buf[0] = CONTROL_BASE | self.code();
        match self {
            ControlPacket::ConnectRequest { protocol_id }
            | ControlPacket::SecureRequest { protocol_id } => {
                buf[1..9].copy_from_slice(&protocol_id.to_be_bytes());
                buf[9..len].fill(0);
            }
            ControlPacket::SecureChallenge { cookie, static_key } => {
                cookie.write(&mut buf[1..]);
                buf[1 + Cookie::LEN..len].copy_from_slice(static_key);
            }
            ControlPacket::SecureResponse {
                protocol_id,
                cookie,
                message,
            } => {
                buf[1..9].copy_from_slice(&protocol_id.to_be_bytes());
                cookie.write(&mut buf[9..]);
                buf[9 + Cookie::LEN..len].copy_from_slice(message);
            }
            ControlPacket::SecureAccepted {
                connection_id,
                answer,
            } => {
                buf[1..9].copy_from_slice(&connection_id.to_be_bytes());
                buf[9..len].copy_from_slice(answer);
            }
            ControlPacket::Challenge { cookie } => cookie.write(&mut buf[1..]),
            ControlPacket::ConnectResponse {
                protocol_id,
                cookie,
            } => {
                buf[1..9].copy_from_slice(&protocol_id.to_be_bytes());
                cookie.write(&mut buf[9..]);
            }
            ControlPacket::Accepted { connection_id }
            | ControlPacket::Disconnect { connection_id } => {
                buf[1..9].copy_from_slice(&connection_id.to_be_bytes());
            }
            ControlPacket::ChannelRequest { protocol_id } => {
                buf[1..9].copy_from_slice(&protocol_id.to_be_bytes());
            }
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const COOKIE: Cookie = Cookie {
        timestamp_ms: 0,
        nonce: [0; 8],
        mac: [0; 16],
    };

    #[test]
    fn a_request_is_as_long_as_the_challenge_it_asks_for() {
        let request = ControlPacket::ConnectRequest { protocol_id: 1 };
        let challenge = ControlPacket::Challenge { cookie: COOKIE };
        assert_eq!(request.encoded_len(), challenge.encoded_len());
        let request = ControlPacket::SecureRequest { protocol_id: 1 };
        let challenge = ControlPacket::SecureChallenge {
            cookie: COOKIE,
            static_key: [7; 32],
        };
        assert_eq!(request.encoded_len(), challenge.encoded_len());
    }

    #[test]
    fn secure_packets_round_trip_at_their_documented_lengths() {
        let packets = [
            (ControlPacket::SecureRequest { protocol_id: 9 }, 65),
            (
                ControlPacket::SecureChallenge {
                    cookie: COOKIE,
                    static_key: [7; 32],
                },
                65,
            ),
            (
                ControlPacket::SecureResponse {
                    protocol_id: 9,
                    cookie: COOKIE,
                    message: [5; 48],
                },
                89,
            ),
            (
                ControlPacket::SecureAccepted {
                    connection_id: 3,
                    answer: [6; 48],
                },
                57,
            ),
        ];
        for (packet, len) in packets {
            let mut buf = [0u8; 96];
            assert_eq!(packet.emit(&mut buf), Ok(len), "{}", packet.name());
            assert_eq!(ControlPacket::parse(&buf[..len]), Ok(packet));
        }
        let mut request = [0u8; 65];
        ControlPacket::SecureRequest { protocol_id: 5 }
            .emit(&mut request)
            .unwrap();
        request[64] = 1;
        assert_eq!(
            ControlPacket::parse(&request),
            Err(ControlError::BadPadding)
        );
    }

    #[test]
    fn a_channel_request_is_nine_bytes_no_longer_than_the_accepted_it_asks_for() {
        let request = ControlPacket::ChannelRequest {
            protocol_id: 0x0102_0304_0506_0708,
        };
        let mut buf = [0u8; 16];
        assert_eq!(request.emit(&mut buf), Ok(9));
        assert_eq!(buf[..9], [0xA9, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(ControlPacket::parse(&buf[..9]), Ok(request));
        assert_eq!(
            request.encoded_len(),
            ControlPacket::Accepted { connection_id: 1 }.encoded_len()
        );
    }

    #[test]
    fn data_headers_are_never_taken_for_control_packets() {
        // Every valid data prefix has bit 5 clear.
        assert!((0x80..0xA0).all(|b: u8| !is_control(&[b])));
        assert!(is_control(&[0xA3]));
        assert!(!is_control(&[0x63]), "another wire version");
    }

    #[test]
    fn wrong_lengths_and_padding_are_typed_errors() {
        assert_eq!(
            ControlPacket::parse(&[0xA3, 0, 0]),
            Err(ControlError::BadLength {
                kind: 3,
                expected: 9,
                got: 3
            })
        );
        assert_eq!(
            ControlPacket::parse(&[0xBF]),
            Err(ControlError::UnknownType(31))
        );
        assert_eq!(
            ControlPacket::parse(&[0xAA]),
            Err(ControlError::UnknownType(10))
        );
        let mut request = [0u8; 33];
        ControlPacket::ConnectRequest { protocol_id: 5 }
            .emit(&mut request)
            .unwrap();
        request[20] = 1;
        assert_eq!(
            ControlPacket::parse(&request),
            Err(ControlError::BadPadding)
        );
    }

    #[test]
    fn parsing_a_data_packet_or_nothing_as_a_control_packet_is_refused() {
        assert_eq!(
            ControlPacket::parse(&[0x90, 0, 1, 0, 0]),
            Err(ControlError::NotControl(0x90))
        );
        assert_eq!(ControlPacket::parse(&[]), Err(ControlError::NotControl(0)));
    }

    #[test]
    fn emitting_into_a_short_buffer_fails_and_writes_nothing() {
        let mut buf = [0xAAu8; 8];
        assert_eq!(
            ControlPacket::Disconnect { connection_id: 1 }.emit(&mut buf),
            Err(ControlError::BufferTooSmall {
                needed: 9,
                available: 8
            })
        );
        assert_eq!(buf, [0xAA; 8]);
    }

    proptest! {
        #[test]
        fn any_accepted_control_packet_re_emits_identically(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
            if let Ok(packet) = ControlPacket::parse(&bytes) {
                let mut buf = [0u8; 96];
                prop_assert_eq!(packet.emit(&mut buf), Ok(bytes.len()));
                prop_assert_eq!(&buf[..bytes.len()], &bytes[..]);
            }
        }
    }
}
