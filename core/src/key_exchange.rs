//! The key exchange that keys [packet protection](crate::protection): two handshake
//! messages carried inside the connect handshake, after the stateless cookie.
//!
//! ```text
//! connector                                   acceptor
//!   secure request   (protocol id)         ->
//!                                          <-   secure challenge (cookie, acceptor's static key)
//!   secure response  (protocol id, cookie,
//!                     first message)       ->   cookie checked, then the message: state
//!                                          <-   secure accepted  (connection id, answer)
//!   both sides hold the packet keys; every data packet is sealed
//! ```
//!
//! The acceptor does no key-exchange work and stores nothing until a response carries a
//! cookie it made for that address, so an unauthenticated sender still costs it no state and
//! gets back no more bytes than it sent. The core never sees the cryptography: it calls an
//! [`Initiator`] on the connector and a [`Responder`] on the acceptor, and both hand back
//! [`PacketKeys`]. With the `aead` feature the core ships one of each on the Noise framework
//! ([`NoiseInitiator`], [`NoiseResponder`]); the wasm build, whose links ride DTLS, carries
//! none of it. Byte-exact messages, the key schedule and worked examples: `docs/wire.md`,
//! "Key exchange".

use core::fmt;

use thiserror::Error;

use crate::protection::PacketKeys;

/// Bytes of a static public key (X25519) in a secure challenge.
pub const PUBLIC_KEY_LEN: usize = 32;

/// Bytes of each key-exchange message: an ephemeral public key (32) and the tag of an empty,
/// encrypted payload (16).
pub const HANDSHAKE_MESSAGE_LEN: usize = 48;

/// Why a key exchange failed. The connection is not created (acceptor) or not keyed
/// (connector).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum KeyExchangeError {
    /// A handshake message did not authenticate: made for another static key (the acceptor
    /// is not who the connector expects, or the connector is not the peer the acceptor
    /// expects), altered on the way, or forged.
    #[error("handshake message failed authentication")]
    Unauthenticated,
    /// The acceptor's static key is not the one pinned: another server, or a man in the middle.
    #[error("the acceptor's static key is not the pinned one")]
    UnexpectedStaticKey,
    /// The other side's ephemeral key is invalid (a low-order point: no shared secret).
    #[error("invalid ephemeral key")]
    InvalidKey,
}

/// The connector's half of a key exchange: one per connection attempt.
pub trait Initiator: Send + Sync + fmt::Debug {
    /// Checks the acceptor's static key `acceptor` (from its challenge) and writes the first
    /// handshake message, bound to `prologue` (the handshake so far; see `docs/wire.md`).
    /// Called once; the connector resends the same message until answered.
    fn start(
        &mut self,
        acceptor: &[u8; PUBLIC_KEY_LEN],
        prologue: &[u8],
        message: &mut [u8; HANDSHAKE_MESSAGE_LEN],
    ) -> Result<(), KeyExchangeError>;

    /// Reads the acceptor's answer and derives the connection's packet keys (`local` seals
    /// what the connector sends). On error the exchange is spent.
    fn finish(
        &mut self,
        answer: &[u8; HANDSHAKE_MESSAGE_LEN],
    ) -> Result<PacketKeys, KeyExchangeError>;
}

/// The acceptor's half of a key exchange: one per acceptor, used for every connection.
pub trait Responder: Send + Sync + fmt::Debug {
    /// The acceptor's static public key, sent in every secure challenge.
    fn static_key(&self) -> [u8; PUBLIC_KEY_LEN];

    /// Reads a connector's first message (bound to `prologue`), writes the answer to
    /// `answer` and derives the connection's packet keys (`local` seals what the acceptor
    /// sends). On error nothing is kept.
    fn respond(
        &mut self,
        prologue: &[u8],
        message: &[u8; HANDSHAKE_MESSAGE_LEN],
        answer: &mut [u8; HANDSHAKE_MESSAGE_LEN],
    ) -> Result<PacketKeys, KeyExchangeError>;
}

impl<T: Initiator + ?Sized> Initiator for Box<T> {
    fn start(
        &mut self,
        acceptor: &[u8; PUBLIC_KEY_LEN],
        prologue: &[u8],
        message: &mut [u8; HANDSHAKE_MESSAGE_LEN],
    ) -> Result<(), KeyExchangeError> {
        (**self).start(acceptor, prologue, message)
    }

    fn finish(
        &mut self,
        answer: &[u8; HANDSHAKE_MESSAGE_LEN],
    ) -> Result<PacketKeys, KeyExchangeError> {
        (**self).finish(answer)
    }
}

impl<T: Responder + ?Sized> Responder for Box<T> {
    fn static_key(&self) -> [u8; PUBLIC_KEY_LEN] {
        (**self).static_key()
    }

    fn respond(
        &mut self,
        prologue: &[u8],
        message: &[u8; HANDSHAKE_MESSAGE_LEN],
        answer: &mut [u8; HANDSHAKE_MESSAGE_LEN],
    ) -> Result<PacketKeys, KeyExchangeError> {
        (**self).respond(prologue, message, answer)
    }
}

#[cfg(feature = "aead")]
mod noise;
#[cfg(feature = "aead")]
pub use noise::{NoiseInitiator, NoiseResponder, StaticKey};
