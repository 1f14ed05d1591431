//! The accepting side of the handshake: stateless challenge cookies (seed 003's scheme).
//!
//! 1. A connect request gets a challenge carrying a cookie: the acceptor's clock reading, an
//!    unpredictable nonce and a MAC over them, the protocol id and the requester's address,
//!    keyed with a secret only the acceptor knows. Nothing is stored, so a flood of requests
//!    (from spoofed addresses or not) costs CPU but no memory.
//! 2. The connector echoes the cookie in a connect response. The acceptor recomputes the MAC
//!    for the address the response came from (a cookie made for another address, or altered,
//!    fails), checks the cookie's age, and refuses a cookie already used. Only then does it
//!    create state: a [`Connection`] whose id is the cookie's nonce.
//!
//! On an authenticated channel (a WebRTC data channel: ICE checked the path, DTLS
//! authenticated the peer) there is no spoofed source to stop: a [`ChannelAcceptor`] takes
//! the one-round-trip channel handshake, answering a channel request with `accepted` at once,
//! and needs no secret, no cookie and no hash. An [`Acceptor`] (raw UDP) refuses it.
//!
//! Randomness comes from the driver: the 32-byte secret given to [`Acceptor::new`] (fresh
//! random bytes at each start, as the seed advises). Nonces are the HMAC of a counter under
//! that secret, unpredictable to anyone without it, so no randomness is needed per request.
//!
//! The address is whatever bytes identify the peer to the driver: a socket address for UDP
//! (e.g. its `to_string()` bytes), the remote's signalling peer id for a WebRTC data channel.

use core::time::Duration;
use std::collections::VecDeque;
use std::sync::Arc;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use thiserror::Error;

use crate::connection::{Connection, ConnectionConfig, ConnectionConfigError};
use crate::control::{self, ControlError, ControlPacket, Cookie, is_control};
use crate::key_exchange::{HANDSHAKE_MESSAGE_LEN, KeyExchangeError, Responder};
use crate::protection::{KeySource, PacketKeys, ProtectError};
use crate::wire::WIRE_VERSION;

type HmacSha256 = Hmac<Sha256>;

/// The secret for one of a program's acceptors: HMAC-SHA256 keyed with the program's
/// `secret`, over `attempt`. An acceptor's connection ids (its cookies' nonces, a channel
/// acceptor's first id) follow from its secret alone, so two acceptors of one secret hand out
/// the same ids; a program that makes an acceptor per connection attempt keys each with its
/// own `attempt`, or a late control packet of an old connection (a `disconnect`) is taken as
/// the new one's.
pub fn attempt_secret(secret: &[u8; 32], attempt: u64) -> [u8; 32] {
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(b"ackwire attempt");
    mac.update(&attempt.to_be_bytes());
    mac.finalize().into_bytes().into()
}

/// What an [`Acceptor`] made of a datagram.
#[derive(Debug)]
#[non_exhaustive]
pub enum Accept {
    /// Send `reply[..len]` back to the address the datagram came from (a challenge).
    Reply {
        /// Bytes written to the reply buffer.
        len: usize,
    },
    /// The handshake completed: route this address's datagrams to this connection from now
    /// on. Its first `poll_transmit` tells the connector it was accepted.
    Connection(Box<Connection>),
}

/// Why an [`Acceptor`] refused a datagram. Nothing was stored or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// A malformed control packet (or a `reply` buffer under 33 bytes, too small for the
    /// challenge).
    #[error("malformed control packet: {0}")]
    Control(#[from] ControlError),
    /// The datagram is of another wire version (the top two bits of its first byte).
    #[error("unsupported wire version {0}")]
    UnsupportedVersion(u8),
    /// A data packet, an accepted or challenge packet, or an empty datagram, from an address
    /// with no connection: a stray or foreign sender.
    #[error("packet for an unknown connection")]
    UnknownConnection,
    /// A disconnect from an address with no connection: usually one of the redundant copies
    /// of a disconnect arriving after the first one closed the connection (harmless).
    #[error("disconnect for connection {connection_id:#018x}, which is gone")]
    LateDisconnect {
        /// The connection id in the packet.
        connection_id: u64,
    },
    /// The peer speaks another protocol (or another incompatible release).
    #[error("protocol id {got:#018x}, expected {expected:#018x}")]
    WrongProtocolId {
        /// Ours.
        expected: u64,
        /// Theirs.
        got: u64,
    },
    /// The cookie's MAC does not verify: forged, altered, made by another acceptor (or
    /// before a restart), or made for another address.
    #[error("cookie does not verify")]
    ForgedCookie,
    /// The cookie is older than `cookie_lifetime` (or from the future).
    #[error("cookie is {age_ms} ms old")]
    ExpiredCookie {
        /// Age by the acceptor's clock (0 for a future timestamp).
        age_ms: u64,
    },
    /// The cookie was already used for a connection.
    #[error("cookie already used")]
    ReplayedCookie,
    /// The replay cache is full of unexpired cookies; retry after `cookie_lifetime`.
    #[error("too many recent connections")]
    Busy,
    /// A plain connect request or response to an acceptor that requires the key exchange
    /// ([`Acceptor::with_responder`]): the connector runs without encryption (`--insecure`).
    #[error("a plain handshake, and this acceptor requires encryption")]
    EncryptionRequired,
    /// A secure response to an acceptor with no key exchange (run `--insecure`); a secure
    /// request gets a plain challenge, which a secure connector refuses.
    #[error("a secure handshake, and this acceptor has no key exchange")]
    EncryptionUnavailable,
    /// A channel request ([`Connection::connect_on_channel`]) to an [`Acceptor`], which is not
    /// on an authenticated channel (raw UDP): without the cookie round trip anyone could
    /// connect from a spoofed address.
    #[error("a channel handshake, and this acceptor is not on an authenticated channel")]
    ChannelRequest,
    /// A cookie handshake (plain or secure) to a [`ChannelAcceptor`], which takes the channel
    /// handshake only.
    #[error("a cookie handshake, and this acceptor takes the channel handshake only")]
    ChannelOnly,
    /// The key exchange's first message was refused: see the error.
    #[error("key exchange: {0}")]
    KeyExchange(#[from] KeyExchangeError),
}

/// Answers connect requests statelessly and creates a [`Connection`] for each completed
/// handshake. One per listening socket (or one per WebRTC peer that should accept).
#[derive(Debug)]
pub struct Acceptor {
    /// Handed (shared, not copied) to every connection accepted.
    config: Arc<ConnectionConfig>,
    packet: Arc<crate::endpoint::Settings>,
    key: HmacSha256,
    counter: u64,
    /// `(timestamp_ms, nonce)` of used cookies, oldest first, for the replay check.
    used: VecDeque<(u64, [u8; 8])>,
    now: Duration,
    /// Protects each connection accepted, when set ([`with_keys`](Self::with_keys)).
    keys: Option<Box<dyn KeySource>>,
    /// Runs the key exchange of every secure handshake; plain ones are refused while set
    /// ([`with_responder`](Self::with_responder)).
    responder: Option<Box<dyn Responder>>,
}

impl Acceptor {
    /// An acceptor for connections configured by `config`, keyed with `secret` (32 random
    /// bytes from the driver, new at each start).
    pub fn new(
        config: ConnectionConfig,
        secret: [u8; 32],
    ) -> Result<Acceptor, ConnectionConfigError> {
        config.validate()?;
        let key = HmacSha256::new_from_slice(&secret).expect("HMAC takes any key length");
        Ok(Acceptor {
            used: VecDeque::with_capacity(config.replay_cache_len),
            packet: Arc::new(
                crate::endpoint::Settings::new(config.packet.clone())
                    .expect("validated with the connection config"),
            ),
            config: Arc::new(config),
            key,
            counter: 0,
            now: Duration::ZERO,
            keys: None,
            responder: None,
        })
    }

    /// Requires the key exchange ([`crate::key_exchange`]) of every connector, run by
    /// `responder`: each connection accepted is protected with the keys it derives, and plain
    /// handshakes are refused ([`HandshakeError::EncryptionRequired`]). Refused when
    /// `max_datagram_size` has no room for the tag.
    pub fn with_responder(
        mut self,
        responder: impl Responder + 'static,
    ) -> Result<Self, ProtectError> {
        self.set_responder(Box::new(responder))?;
        Ok(self)
    }

    /// Like [`with_responder`](Self::with_responder), on an acceptor in place.
    pub fn set_responder(&mut self, responder: Box<dyn Responder>) -> Result<(), ProtectError> {
        self.check_tag_room()?;
        self.responder = Some(responder);
        Ok(())
    }

    /// True when connectors must run the key exchange.
    pub fn is_secure(&self) -> bool {
        self.responder.is_some()
    }

    fn check_tag_room(&self) -> Result<(), ProtectError> {
        let datagram = self.config.max_datagram_size;
        if datagram < crate::connection::MIN_PROTECTED_DATAGRAM_SIZE {
            return Err(ProtectError::DatagramSize(datagram));
        }
        Ok(())
    }

    /// Protects every connection this acceptor hands out with the keys `source` gives
    /// for it (see [`Connection::protect`]). Refused when `max_datagram_size` has no room
    /// for the tag.
    pub fn with_keys(mut self, source: impl KeySource + 'static) -> Result<Self, ProtectError> {
        self.set_keys(Box::new(source))?;
        Ok(self)
    }

    /// Like [`with_keys`](Self::with_keys), on an acceptor in place: connections accepted
    /// from now on are protected.
    pub fn set_keys(&mut self, source: Box<dyn KeySource>) -> Result<(), ProtectError> {
        self.check_tag_room()?;
        self.keys = Some(source);
        Ok(())
    }

    /// The configuration new connections get.
    pub fn config(&self) -> &ConnectionConfig {
        &self.config
    }

    /// Cookies remembered as used (the only state that grows, and only on a completed
    /// handshake; bounded by `replay_cache_len`).
    pub fn used_cookies(&self) -> usize {
        self.used.len()
    }

    /// Handles one datagram from `from` (opaque address bytes), which has no connection yet.
    /// A challenge is written to `reply` (33 bytes are enough). On error nothing changed.
    pub fn receive(
        &mut self,
        now: Duration,
        from: &[u8],
        datagram: &[u8],
        reply: &mut [u8],
    ) -> Result<Accept, HandshakeError> {
        if !is_control(datagram) {
            return Err(match datagram.first() {
                Some(&b) if b >> 6 != WIRE_VERSION => HandshakeError::UnsupportedVersion(b >> 6),
                _ => HandshakeError::UnknownConnection,
            });
        }
        let now = now.max(self.now);
        let packet = ControlPacket::parse(datagram)?;
        // A secure request to a plain acceptor is answered with a plain challenge (smaller
        // than the request, so no amplification), which the connector refuses at once with
        // a reason (`DisconnectReason::Unencrypted`) rather than time out.
        let secure = matches!(packet, ControlPacket::SecureResponse { .. });
        let plain = matches!(
            packet,
            ControlPacket::ConnectRequest { .. } | ControlPacket::ConnectResponse { .. }
        );
        if matches!(packet, ControlPacket::ChannelRequest { .. }) {
            return Err(HandshakeError::ChannelRequest);
        }
        if secure && self.responder.is_none() {
            return Err(HandshakeError::EncryptionUnavailable);
        }
        if plain && self.responder.is_some() {
            return Err(HandshakeError::EncryptionRequired);
        }
        match packet {
            ControlPacket::ConnectRequest { protocol_id }
            | ControlPacket::SecureRequest { protocol_id } => {
                self.check_protocol(protocol_id)?;
                let timestamp_ms = now.as_millis() as u64;
                let nonce = self.nonce();
                let cookie = Cookie {
                    timestamp_ms,
                    nonce,
                    mac: self.mac(protocol_id, timestamp_ms, &nonce, from),
                };
                let challenge = match &self.responder {
                    Some(responder) => ControlPacket::SecureChallenge {
                        cookie,
                        static_key: responder.static_key(),
                    },
                    None => ControlPacket::Challenge { cookie },
                };
                let len = challenge.emit(reply)?;
                self.counter += 1;
                self.now = now;
                Ok(Accept::Reply { len })
            }
            ControlPacket::ConnectResponse {
                protocol_id,
                cookie,
            } => {
                self.admit(now, protocol_id, &cookie, from)?;
                let keys = self
                    .keys
                    .as_mut()
                    .map(|source| source.keys(u64::from_be_bytes(cookie.nonce), from));
                Ok(self.accept(now, &cookie, keys, None))
            }
            ControlPacket::SecureResponse {
                protocol_id,
                cookie,
                message,
            } => {
                self.admit(now, protocol_id, &cookie, from)?;
                let mut answer = [0u8; HANDSHAKE_MESSAGE_LEN];
                let prologue = control::prologue(protocol_id, &cookie);
                let keys = self.responder.as_mut().expect("checked above").respond(
                    &prologue,
                    &message,
                    &mut answer,
                )?;
                Ok(self.accept(now, &cookie, Some(keys), Some(answer)))
            }
            // Disconnects are sent several times and not acked, so copies outlive their
            // connection; told apart here so a driver need not parse the datagram again.
            ControlPacket::Disconnect { connection_id } => {
                Err(HandshakeError::LateDisconnect { connection_id })
            }
            _ => Err(HandshakeError::UnknownConnection),
        }
    }

    /// Checks a response's protocol id and cookie (its MAC for `from`, its age, that it is
    /// unused, and room to remember it). Changes nothing.
    fn admit(
        &self,
        now: Duration,
        protocol_id: u64,
        cookie: &Cookie,
        from: &[u8],
    ) -> Result<(), HandshakeError> {
        self.check_protocol(protocol_id)?;
        self.verify(protocol_id, cookie, from)?;
        let now_ms = now.as_millis() as u64;
        let lifetime_ms = self.config.cookie_lifetime.as_millis() as u64;
        let age_ms = now_ms.saturating_sub(cookie.timestamp_ms);
        if cookie.timestamp_ms > now_ms || age_ms > lifetime_ms {
            return Err(HandshakeError::ExpiredCookie { age_ms });
        }
        if self.used.iter().any(|&(_, nonce)| nonce == cookie.nonce) {
            return Err(HandshakeError::ReplayedCookie);
        }
        let live = self
            .used
            .iter()
            .filter(|&&(ts, _)| ts + lifetime_ms >= now_ms)
            .count();
        if live >= self.config.replay_cache_len {
            return Err(HandshakeError::Busy);
        }
        Ok(())
    }

    /// Remembers an admitted cookie as used and makes its connection.
    fn accept(
        &mut self,
        now: Duration,
        cookie: &Cookie,
        keys: Option<PacketKeys>,
        answer: Option<[u8; HANDSHAKE_MESSAGE_LEN]>,
    ) -> Accept {
        let now_ms = now.as_millis() as u64;
        let lifetime_ms = self.config.cookie_lifetime.as_millis() as u64;
        let expired = |&(ts, _): &(u64, [u8; 8])| ts + lifetime_ms < now_ms;
        let reclaimable = self.used.iter().take_while(|e| expired(e)).count();
        self.used.drain(..reclaimable);
        if self.used.len() == self.config.replay_cache_len {
            // Out-of-order timestamps can keep an expired entry behind a live one.
            self.used.retain(|e| !expired(e));
        }
        self.used.push_back((cookie.timestamp_ms, cookie.nonce));
        self.now = now;
        let id = u64::from_be_bytes(cookie.nonce);
        let mut connection =
            Connection::accepted(self.config.clone(), self.packet.clone(), now, id, answer);
        if let Some(keys) = keys {
            connection
                .protect(keys)
                .expect("a fresh connection, and the datagram size checked");
        }
        Accept::Connection(Box::new(connection))
    }

    fn check_protocol(&self, got: u64) -> Result<(), HandshakeError> {
        if got == self.config.protocol_id {
            Ok(())
        } else {
            Err(HandshakeError::WrongProtocolId {
                expected: self.config.protocol_id,
                got,
            })
        }
    }

    fn nonce(&self) -> [u8; 8] {
        let mut mac = self.key.clone();
        mac.update(b"ackwire nonce");
        mac.update(&self.counter.to_be_bytes());
        let mut nonce = [0u8; 8];
        nonce.copy_from_slice(&mac.finalize().into_bytes()[..8]);
        nonce
    }

    fn cookie_mac(
        &self,
        protocol_id: u64,
        timestamp_ms: u64,
        nonce: &[u8; 8],
        from: &[u8],
    ) -> HmacSha256 {
        let mut mac = self.key.clone();
        mac.update(b"ackwire cookie");
        mac.update(&protocol_id.to_be_bytes());
        mac.update(&timestamp_ms.to_be_bytes());
        mac.update(nonce);
        // Last, so its variable length cannot shift the fixed fields.
        mac.update(from);
        mac
    }

    fn mac(&self, protocol_id: u64, timestamp_ms: u64, nonce: &[u8; 8], from: &[u8]) -> [u8; 16] {
        let tag = self
            .cookie_mac(protocol_id, timestamp_ms, nonce, from)
            .finalize()
            .into_bytes();
        let mut out = [0u8; 16];
        out.copy_from_slice(&tag[..16]);
        out
    }

    fn verify(&self, protocol_id: u64, cookie: &Cookie, from: &[u8]) -> Result<(), HandshakeError> {
        // Constant-time comparison of the truncated tag.
        self.cookie_mac(protocol_id, cookie.timestamp_ms, &cookie.nonce, from)
            .verify_truncated_left(&cookie.mac)
            .map_err(|_| HandshakeError::ForgedCookie)
    }
}

/// Accepts the channel handshake on one authenticated channel (a WebRTC data channel: ICE
/// checked the path, DTLS authenticated the peer), where there is no spoofed source to stop:
/// a channel request ([`Connection::connect_on_channel`]) is answered by a connection at
/// once, whose first `poll_transmit` is the `accepted`. One round trip where the cookie
/// handshake takes two, and no secret, cookie or hash: the browser's bundle carries none.
/// Cookie handshakes are refused ([`HandshakeError::ChannelOnly`]); never use it on raw UDP,
/// where the cookie is what stops spoofing.
#[derive(Debug)]
pub struct ChannelAcceptor {
    config: Arc<ConnectionConfig>,
    packet: Arc<crate::endpoint::Settings>,
    /// The id of the next connection accepted.
    next_id: u64,
}

impl ChannelAcceptor {
    /// An acceptor for connections configured by `config`; `seed` is the id of its first
    /// connection, each later one the next number (an id only names its connection in
    /// disconnects: on an authenticated channel nobody else can send one).
    pub fn new(config: ConnectionConfig, seed: u64) -> Result<Self, ConnectionConfigError> {
        config.validate()?;
        Ok(ChannelAcceptor {
            packet: Arc::new(
                crate::endpoint::Settings::new(config.packet.clone())
                    .expect("validated with the connection config"),
            ),
            config: Arc::new(config),
            next_id: seed,
        })
    }

    /// The configuration new connections get.
    pub fn config(&self) -> &ConnectionConfig {
        &self.config
    }

    /// Handles one datagram from the channel while it has no connection: a valid channel
    /// request gives the connection. On error nothing changed.
    pub fn receive(
        &mut self,
        now: Duration,
        datagram: &[u8],
    ) -> Result<Box<Connection>, HandshakeError> {
        if !is_control(datagram) {
            return Err(match datagram.first() {
                Some(&b) if b >> 6 != WIRE_VERSION => HandshakeError::UnsupportedVersion(b >> 6),
                _ => HandshakeError::UnknownConnection,
            });
        }
        match ControlPacket::parse(datagram)? {
            ControlPacket::ChannelRequest { protocol_id } => {
                if protocol_id != self.config.protocol_id {
                    return Err(HandshakeError::WrongProtocolId {
                        expected: self.config.protocol_id,
                        got: protocol_id,
                    });
                }
                let id = self.next_id;
                self.next_id = id.wrapping_add(1);
                Ok(Box::new(Connection::accepted_on_channel(
                    self.config.clone(),
                    self.packet.clone(),
                    now,
                    id,
                )))
            }
            ControlPacket::ConnectRequest { .. }
            | ControlPacket::ConnectResponse { .. }
            | ControlPacket::SecureRequest { .. }
            | ControlPacket::SecureResponse { .. } => Err(HandshakeError::ChannelOnly),
            ControlPacket::Disconnect { connection_id } => {
                Err(HandshakeError::LateDisconnect { connection_id })
            }
            _ => Err(HandshakeError::UnknownConnection),
        }
    }
}
