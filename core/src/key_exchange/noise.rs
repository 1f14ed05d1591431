//! The key exchange on the Noise framework (`snow`): `Noise_NK_25519_ChaChaPoly_BLAKE2s` when
//! only the acceptor has a static key the connector knows (`listen` / `connect`), and
//! `Noise_KK_25519_ChaChaPoly_BLAKE2s` when both sides know each other's (room peers, whose
//! keys travel in signalling). The handshake's final chaining key is split into one key per
//! direction, that direction's traffic secret: its AES-256-GCM key and IV come from it through
//! HKDF-SHA256, and so does the next key phase's secret ([`Aes256GcmKey::from_secret`];
//! `docs/wire.md`, "Key exchange"). Noise's own transport messages carry an explicit
//! nonce and no associated data, where ackwire's packets rebuild the nonce from the sequence
//! and authenticate the header.

use core::fmt;

use snow::{Builder, HandshakeState};

use super::{HANDSHAKE_MESSAGE_LEN, Initiator, KeyExchangeError, PUBLIC_KEY_LEN, Responder};
use crate::protection::{Aes256GcmKey, PacketKeys};

const NK: &str = "Noise_NK_25519_ChaChaPoly_BLAKE2s";
const KK: &str = "Noise_KK_25519_ChaChaPoly_BLAKE2s";

/// An X25519 key pair: a listener's long-lived identity, or a room member's key for one
/// session. The private half never leaves this value (its `Debug` shows the public half only).
#[derive(Clone)]
pub struct StaticKey {
    private: [u8; 32],
    public: [u8; PUBLIC_KEY_LEN],
}

impl StaticKey {
    /// A fresh key pair from the operating system's random numbers.
    pub fn generate() -> StaticKey {
        let pair = Builder::new(NK.parse().expect("a valid pattern"))
            .generate_keypair()
            .expect("the OS has random numbers");
        let mut private = [0u8; 32];
        private.copy_from_slice(&pair.private);
        StaticKey::from_private(private)
    }

    /// The key pair of a stored private key (any 32 bytes: X25519 clamps them).
    pub fn from_private(private: [u8; 32]) -> StaticKey {
        let public = curve25519_dalek::MontgomeryPoint::mul_base_clamped(private).to_bytes();
        StaticKey { private, public }
    }

    /// The private half, to store (`--key FILE`).
    pub fn private(&self) -> &[u8; 32] {
        &self.private
    }

    /// The public half: what a connector pins, what signalling carries.
    pub fn public(&self) -> [u8; PUBLIC_KEY_LEN] {
        self.public
    }
}

impl fmt::Debug for StaticKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

/// Which pattern, with the keys it needs.
#[derive(Debug, Clone)]
enum Pattern {
    /// The connector knows the acceptor's key (pinned), or takes the one it is shown.
    Nk {
        pinned: Option<[u8; PUBLIC_KEY_LEN]>,
    },
    /// Both know each other's.
    Kk {
        local: StaticKey,
        remote: [u8; PUBLIC_KEY_LEN],
    },
}

/// The connector's side of a Noise handshake ([`Initiator`]).
pub struct NoiseInitiator {
    pattern: Pattern,
    ephemeral: Option<[u8; 32]>,
    state: Option<HandshakeState>,
    acceptor: Option<[u8; PUBLIC_KEY_LEN]>,
}

impl NoiseInitiator {
    /// NK to an acceptor whose static key is `pinned`, or, with `None`, to whichever key the
    /// acceptor shows (trust on first use: [`acceptor_key`](Self::acceptor_key) says which).
    pub fn nk(pinned: Option<[u8; PUBLIC_KEY_LEN]>) -> NoiseInitiator {
        NoiseInitiator::new(Pattern::Nk { pinned })
    }

    /// KK between `local` and the acceptor `remote`: each side proves its key to the other.
    pub fn kk(local: StaticKey, remote: [u8; PUBLIC_KEY_LEN]) -> NoiseInitiator {
        NoiseInitiator::new(Pattern::Kk { local, remote })
    }

    fn new(pattern: Pattern) -> NoiseInitiator {
        NoiseInitiator {
            pattern,
            ephemeral: None,
            state: None,
            acceptor: None,
        }
    }

    /// Uses `private` as the ephemeral key instead of a random one. For known-answer tests
    /// and the worked examples of `docs/wire.md` only: a fixed ephemeral key makes every
    /// handshake's keys the same.
    pub fn with_fixed_ephemeral_for_tests(mut self, private: [u8; 32]) -> NoiseInitiator {
        self.ephemeral = Some(private);
        self
    }

    /// The acceptor's static key, once its challenge was taken: the pinned one, or the one
    /// accepted on first use.
    pub fn acceptor_key(&self) -> Option<[u8; PUBLIC_KEY_LEN]> {
        self.acceptor
    }
}

impl fmt::Debug for NoiseInitiator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NoiseInitiator")
            .field("pattern", &self.pattern)
            .field("started", &self.state.is_some())
            .finish_non_exhaustive()
    }
}

impl Initiator for NoiseInitiator {
    fn start(
        &mut self,
        acceptor: &[u8; PUBLIC_KEY_LEN],
        prologue: &[u8],
        message: &mut [u8; HANDSHAKE_MESSAGE_LEN],
    ) -> Result<(), KeyExchangeError> {
        let (params, local) = match &self.pattern {
            Pattern::Nk { pinned } => {
                if pinned.is_some_and(|pinned| pinned != *acceptor) {
                    return Err(KeyExchangeError::UnexpectedStaticKey);
                }
                (NK, None)
            }
            Pattern::Kk { local, remote } => {
                if remote != acceptor {
                    return Err(KeyExchangeError::UnexpectedStaticKey);
                }
                (KK, Some(local))
            }
        };
        let mut builder = Builder::new(params.parse().expect("a valid pattern"))
            .prologue(prologue)
            .expect("set once")
            .remote_public_key(acceptor)
            .expect("set once");
        if let Some(local) = local {
            builder = builder.local_private_key(&local.private).expect("set once");
        }
        if let Some(ephemeral) = &self.ephemeral {
            builder = builder.fixed_ephemeral_key_for_testing_only(ephemeral);
        }
        let mut state = builder.build_initiator().expect("every key given");
        let len = state
            .write_message(&[], message)
            .map_err(|_| KeyExchangeError::InvalidKey)?;
        debug_assert_eq!(len, HANDSHAKE_MESSAGE_LEN);
        self.state = Some(state);
        self.acceptor = Some(*acceptor);
        Ok(())
    }

    fn finish(
        &mut self,
        answer: &[u8; HANDSHAKE_MESSAGE_LEN],
    ) -> Result<PacketKeys, KeyExchangeError> {
        let mut state = self.state.take().ok_or(KeyExchangeError::Unauthenticated)?;
        read(&mut state, answer)?;
        let (to_acceptor, to_connector) = state.dangerously_get_raw_split();
        Ok(packet_keys(&to_acceptor, &to_connector))
    }
}

/// The acceptor's side of Noise handshakes ([`Responder`]).
pub struct NoiseResponder {
    local: StaticKey,
    /// KK: the only connector key accepted.
    remote: Option<[u8; PUBLIC_KEY_LEN]>,
    ephemeral: Option<[u8; 32]>,
}

impl NoiseResponder {
    /// NK: any connector, which learns `local`'s public key first (pinned, or from the
    /// challenge).
    pub fn nk(local: StaticKey) -> NoiseResponder {
        NoiseResponder {
            local,
            remote: None,
            ephemeral: None,
        }
    }

    /// KK: only the connector holding the private half of `remote`.
    pub fn kk(local: StaticKey, remote: [u8; PUBLIC_KEY_LEN]) -> NoiseResponder {
        NoiseResponder {
            local,
            remote: Some(remote),
            ephemeral: None,
        }
    }

    /// See [`NoiseInitiator::with_fixed_ephemeral_for_tests`].
    pub fn with_fixed_ephemeral_for_tests(mut self, private: [u8; 32]) -> NoiseResponder {
        self.ephemeral = Some(private);
        self
    }
}

impl fmt::Debug for NoiseResponder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NoiseResponder")
            .field("local", &self.local)
            .field("remote", &self.remote)
            .finish_non_exhaustive()
    }
}

impl Responder for NoiseResponder {
    fn static_key(&self) -> [u8; PUBLIC_KEY_LEN] {
        self.local.public
    }

    fn respond(
        &mut self,
        prologue: &[u8],
        message: &[u8; HANDSHAKE_MESSAGE_LEN],
        answer: &mut [u8; HANDSHAKE_MESSAGE_LEN],
    ) -> Result<PacketKeys, KeyExchangeError> {
        let params = if self.remote.is_some() { KK } else { NK };
        let mut builder = Builder::new(params.parse().expect("a valid pattern"))
            .prologue(prologue)
            .expect("set once")
            .local_private_key(&self.local.private)
            .expect("set once");
        if let Some(remote) = &self.remote {
            builder = builder.remote_public_key(remote).expect("set once");
        }
        if let Some(ephemeral) = &self.ephemeral {
            builder = builder.fixed_ephemeral_key_for_testing_only(ephemeral);
        }
        let mut state = builder.build_responder().expect("every key given");
        read(&mut state, message)?;
        let len = state
            .write_message(&[], answer)
            .map_err(|_| KeyExchangeError::InvalidKey)?;
        debug_assert_eq!(len, HANDSHAKE_MESSAGE_LEN);
        let (to_acceptor, to_connector) = state.dangerously_get_raw_split();
        Ok(packet_keys(&to_connector, &to_acceptor))
    }
}

/// Reads a handshake message with an empty payload.
fn read(
    state: &mut HandshakeState,
    message: &[u8; HANDSHAKE_MESSAGE_LEN],
) -> Result<(), KeyExchangeError> {
    let mut payload = [0u8; HANDSHAKE_MESSAGE_LEN];
    match state.read_message(message, &mut payload) {
        Ok(0) => Ok(()),
        Ok(_) => Err(KeyExchangeError::Unauthenticated),
        Err(snow::Error::Dh) => Err(KeyExchangeError::InvalidKey),
        Err(_) => Err(KeyExchangeError::Unauthenticated),
    }
}

/// The packet keys of one side: `local` seals, `remote` opens; each direction's Noise split
/// key is its traffic secret.
fn packet_keys(local: &[u8; 32], remote: &[u8; 32]) -> PacketKeys {
    PacketKeys {
        local: Box::new(Aes256GcmKey::from_secret(*local)),
        remote: Box::new(Aes256GcmKey::from_secret(*remote)),
    }
}
