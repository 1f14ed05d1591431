//! Keys of native↔native UDP links. Browser links ride DTLS; links between two natives are
//! raw UDP, so each native puts a public key in its join (`udp_key`) and links run the key
//! exchange with the peer's (Noise KK: each side proves it holds the key the other learned
//! from signalling). The cryptography comes from the native driver through [`UdpKeys`], so
//! the browser build of this crate carries none of it.

use std::fmt;

use ackwire_core::{Initiator, Responder};

use crate::signalling::PublicKey;

/// A native member's key pair for its UDP links: the native driver implements it (on the
/// core's Noise key exchange). A member without one (`--insecure`) runs raw UDP in plaintext
/// with natives that have none either, and reaches the others through WebRTC (DTLS).
pub trait UdpKeys: Send + Sync + fmt::Debug {
    /// Our public key, sent in every join.
    fn public_key(&self) -> PublicKey;
    /// The connecting side's key exchange with the peer whose key is `peer`.
    fn initiator(&self, peer: PublicKey) -> Box<dyn Initiator>;
    /// The accepting side's key exchange, accepting only the peer whose key is `peer`.
    fn responder(&self, peer: PublicKey) -> Box<dyn Responder>;
}

/// The key exchange one link runs, by role.
#[derive(Debug)]
pub(crate) enum LinkKeys {
    Connect(Box<dyn Initiator>),
    // Read by the cookie handshake's acceptor, which a browser's build has not (no raw UDP).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    Accept(Box<dyn Responder>),
}

/// [`UdpKeys`] on the core's Noise key exchange (KK): a key pair new at each start of the
/// program, as a browser's DTLS certificate is.
#[cfg(feature = "aead")]
#[derive(Debug)]
pub struct NoiseKeys(ackwire_core::StaticKey);

#[cfg(feature = "aead")]
impl NoiseKeys {
    /// A fresh key pair.
    pub fn generate() -> NoiseKeys {
        NoiseKeys(ackwire_core::StaticKey::generate())
    }
}

#[cfg(feature = "aead")]
impl UdpKeys for NoiseKeys {
    fn public_key(&self) -> PublicKey {
        PublicKey(self.0.public())
    }

    fn initiator(&self, peer: PublicKey) -> Box<dyn Initiator> {
        Box::new(ackwire_core::NoiseInitiator::kk(self.0.clone(), peer.0))
    }

    fn responder(&self, peer: PublicKey) -> Box<dyn Responder> {
        Box::new(ackwire_core::NoiseResponder::kk(self.0.clone(), peer.0))
    }
}
