//! Packet protection: per-packet AEAD over data packets, keyed by the connection's creator.
//!
//! A protected data packet is `header ‖ sealed payload ‖ tag`: the payload is encrypted in
//! place, the 16-byte tag authenticates the payload and the header bytes exactly as sent
//! (the associated data), and the nonce comes from the packet's 64-bit **packet number**,
//! which is not sent: the sender counts every packet it seals from 0, the 16-bit wire
//! sequence is its low bits, and the receiver rebuilds the rest from the largest packet
//! number it has opened ([`packet_number`], as QUIC does, RFC 9000 §A.3). So the only
//! per-packet cost on the wire is the tag.
//!
//! The core never sees a cipher: it calls a [`PacketKey`] per direction ([`PacketKeys`]),
//! in the driver's own buffer, with no allocation. With the `aead` feature the core ships
//! one, [`Aes256GcmKey`] (`ring`'s AES-256-GCM); without it (the wasm build, whose links
//! ride DTLS) no AEAD code is compiled in. Keys come from the key exchange in the handshake
//! ([`crate::key_exchange`]), or from the caller
//! ([`Connection::protect`](crate::Connection::protect),
//! [`Acceptor::with_keys`](crate::Acceptor::with_keys)). Byte-exact spec, limits and worked
//! examples: `docs/wire.md`, "Packet protection" and "Key exchange".

use core::fmt;

use thiserror::Error;

/// Bytes of the authentication tag after every protected payload: the whole per-packet
/// overhead of protection.
pub const TAG_LEN: usize = 16;

/// Largest packet number a sender may seal with (2^62 - 1, as in QUIC): well inside the
/// 64 bits of the nonce, and far enough from `u64::MAX` that reconstruction never
/// overflows. At 30 packets/s it is never reached; a key's own
/// [`confidentiality_limit`](PacketKey::confidentiality_limit) may come first.
pub const MAX_PACKET_NUMBER: u64 = (1 << 62) - 1;

/// Packet numbers per key phase of a key that updates ([`PacketKey::next`]): packet number
/// `n` is sealed under the key of phase `n / KEY_PHASE_PACKETS`, so both sides switch at the
/// same packet with nothing on the wire. Half AES-GCM's confidentiality limit (2^23), so a
/// key never comes near it.
pub const KEY_PHASE_PACKETS: u64 = 1 << 22;

/// The payload or its header did not authenticate under the key: forged, corrupted, or
/// sealed under another key or packet number. Nothing was decrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("packet failed authentication")]
pub struct OpenError;

/// One direction's packet key: an AEAD with a 16-byte tag, its key and IV, used for every
/// data packet in that direction. The core calls [`seal`](Self::seal) once per packet it
/// sends and [`open`](Self::open) once per data packet it receives, with the packet number
/// as the nonce's only varying input: an implementation builds the nonce from it (the
/// construction in `docs/wire.md`) and must never be handed the same number twice by a
/// sender, which the core guarantees.
pub trait PacketKey: Send + Sync + fmt::Debug {
    /// Encrypts `payload` in place and writes the tag authenticating `header` and the
    /// payload to `tag`.
    fn seal(
        &mut self,
        packet_number: u64,
        header: &[u8],
        payload: &mut [u8],
        tag: &mut [u8; TAG_LEN],
    );

    /// Checks `tag` against `header` and `payload` and decrypts `payload` in place. On error
    /// nothing may be taken from `payload` (the core drops the datagram): its bytes are
    /// unspecified, as fused decrypt-and-verify implementations leave them.
    fn open(
        &mut self,
        packet_number: u64,
        header: &[u8],
        payload: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), OpenError>;

    /// Packets this key may seal (its confidentiality limit; RFC 9001 §6.6). The sender
    /// stops before it (see [`KeyLimit`]).
    fn confidentiality_limit(&self) -> u64;

    /// Packets that may fail to open under this key before the connection must stop (its
    /// integrity limit; RFC 9001 §6.6).
    fn integrity_limit(&self) -> u64;

    /// The key of the next key phase (a key update), derived from this one's secret; `None`
    /// (the default) for a key that never updates, which then seals until its
    /// [`confidentiality_limit`](Self::confidentiality_limit) and stops. Both directions'
    /// keys of a connection update independently, each every
    /// [`key_phase_packets`](Self::key_phase_packets) packet numbers.
    fn next(&self) -> Option<Box<dyn PacketKey>> {
        None
    }

    /// Packet numbers per key phase of an updating key ([`KEY_PHASE_PACKETS`] by default;
    /// the same on both sides, as it decides which key a packet number is under). At most
    /// the confidentiality limit.
    fn key_phase_packets(&self) -> u64 {
        KEY_PHASE_PACKETS
    }
}

/// A connection's two keys: `local` seals what this side sends, `remote` opens what the
/// peer sends. The peer holds the same two with the roles swapped. Keys must be fresh for
/// each connection: both sides number packets from 0, so a key (with its IV) used by two
/// connections would seal two packets under one nonce.
#[derive(Debug)]
pub struct PacketKeys {
    /// Seals this side's packets.
    pub local: Box<dyn PacketKey>,
    /// Opens the peer's packets.
    pub remote: Box<dyn PacketKey>,
}

#[cfg(feature = "aead")]
impl PacketKeys {
    /// AES-256-GCM in both directions, from each direction's 32-byte key and 12-byte IV.
    pub fn aes_256_gcm(local: ([u8; 32], [u8; 12]), remote: ([u8; 32], [u8; 12])) -> Self {
        PacketKeys {
            local: Box::new(Aes256GcmKey::new(local.0, local.1)),
            remote: Box::new(Aes256GcmKey::new(remote.0, remote.1)),
        }
    }
}

/// Where an [`Acceptor`](crate::Acceptor) (or a [`Listener`](crate::Listener)) gets the keys
/// of each connection it accepts, once the handshake completes: `connection_id` is the new
/// connection's id (the cookie's nonce, which the connector learns from `accepted`) and
/// `address` the peer's. The keys must be fresh for every connection (see
/// [`PacketKeys`]). For keys the application has; the key exchange
/// ([`Acceptor::with_responder`](crate::Acceptor::with_responder)) derives them instead.
pub trait KeySource: Send + Sync + fmt::Debug {
    /// The keys of the connection just accepted.
    fn keys(&mut self, connection_id: u64, address: &[u8]) -> PacketKeys;
}

/// Why keys were refused by [`Endpoint::protect`](crate::Endpoint::protect) or
/// [`Connection::protect`](crate::Connection::protect). Nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ProtectError {
    /// Already protected: keys are set once per connection; they then update by themselves
    /// every key phase (`PacketKey::next`), never by being replaced.
    #[error("already protected")]
    AlreadyProtected,
    /// Data packets were sent or received, or messages queued, before: protection starts
    /// with the first data packet or not at all.
    #[error("traffic started before protection")]
    TrafficStarted,
    /// A channel handshake's connector ([`Connection::connect_on_channel`]) carries no key
    /// exchange: the channel it runs on (DTLS) encrypts.
    ///
    /// [`Connection::connect_on_channel`]: crate::Connection::connect_on_channel
    #[error("a channel handshake carries no key exchange: the channel encrypts")]
    ChannelHandshake,
    /// `max_datagram_size` cannot hold a full reliable fragment and the tag.
    #[error("max_datagram_size {0} cannot hold a full fragment and the {TAG_LEN}-byte tag")]
    DatagramSize(usize),
}

/// Which key limit stopped a connection ([`DisconnectReason::KeyExhausted`]).
///
/// [`DisconnectReason::KeyExhausted`]: crate::DisconnectReason::KeyExhausted
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum KeyLimit {
    /// The next packet number would pass the local key's confidentiality limit or
    /// [`MAX_PACKET_NUMBER`]: sealing it would risk the key, or reuse a nonce.
    #[error("the sending key has sealed as many packets as it may")]
    Confidentiality,
    /// As many packets failed to open as the remote key's integrity limit allows.
    #[error("as many packets failed authentication as the receiving key allows")]
    Integrity,
}

/// The 64-bit packet number of a packet whose wire sequence is `sequence`, given the
/// largest packet number opened so far (`None` before the first): of the numbers whose low
/// 16 bits are `sequence`, the one closest to `largest + 1` (0 before the first), ties to
/// the higher (RFC 9000 §A.3 with a 16-bit truncated number).
pub fn packet_number(largest: Option<u64>, sequence: u16) -> u64 {
    const WINDOW: u64 = 1 << 16;
    const HALF: u64 = WINDOW / 2;
    let expected = largest.map_or(0, |largest| largest + 1);
    let candidate = (expected & !(WINDOW - 1)) | u64::from(sequence);
    if candidate + HALF <= expected && candidate < (1 << 62) - WINDOW {
        candidate + WINDOW
    } else if candidate > expected + HALF && candidate >= WINDOW {
        candidate - WINDOW
    } else {
        candidate
    }
}

/// The 12-byte AEAD nonce for `packet_number`: the IV XOR the packet number, big-endian and
/// left-padded with zeros to 12 bytes (as QUIC and TLS 1.3 build theirs). Public for
/// implementations of [`PacketKey`] and for the spec's worked examples.
pub fn nonce(iv: &[u8; 12], packet_number: u64) -> [u8; 12] {
    let mut nonce = *iv;
    for (n, p) in nonce[4..].iter_mut().zip(packet_number.to_be_bytes()) {
        *n ^= p;
    }
    nonce
}

/// AES-256-GCM (NIST SP 800-38D) from `ring` ([`ring::aead::AES_256_GCM`]), as a
/// [`PacketKey`]. ring picks AES-NI and carry-less multiplication (or its constant-time
/// portable code) at run time. Why this AEAD and this crate, measured against the others:
/// `docs/wire.md`, "Packet protection".
#[cfg(feature = "aead")]
pub struct Aes256GcmKey {
    key: ring::aead::LessSafeKey,
    iv: [u8; 12],
    /// The traffic secret the key and IV came from, when they did ([`from_secret`]): what
    /// the next phase's key is derived from. Fixed keys ([`new`]) never update.
    ///
    /// [`from_secret`]: Self::from_secret
    /// [`new`]: Self::new
    secret: Option<[u8; 32]>,
}

#[cfg(feature = "aead")]
impl Aes256GcmKey {
    /// RFC 9001 §6.6: 2^23 packets sealed under one AES-GCM key.
    pub const CONFIDENTIALITY_LIMIT: u64 = 1 << 23;
    /// RFC 9001 §6.6: 2^52 packets that fail to open.
    pub const INTEGRITY_LIMIT: u64 = 1 << 52;

    /// The key for one direction: a 32-byte key and a 12-byte IV.
    pub fn new(key: [u8; 32], iv: [u8; 12]) -> Self {
        let key = ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &key)
            .expect("a 32-byte key is an AES-256 key");
        Aes256GcmKey {
            key: ring::aead::LessSafeKey::new(key),
            iv,
            secret: None,
        }
    }

    /// The key of a 32-byte traffic secret (a direction's share of the key exchange; see
    /// `docs/wire.md`, "Key exchange"): key = HKDF-Expand(secret, "ackwire packet key", 32),
    /// IV = HKDF-Expand(secret, "ackwire packet iv", 12), with HKDF-SHA256. It updates every
    /// [`KEY_PHASE_PACKETS`] packets: the next phase's secret is HKDF-Expand(secret,
    /// "ackwire key update", 32).
    pub fn from_secret(secret: [u8; 32]) -> Self {
        let hkdf = hkdf::Hkdf::<sha2::Sha256>::from_prk(&secret)
            .expect("32 bytes is a valid PRK for SHA-256");
        let mut key = [0u8; 32];
        let mut iv = [0u8; 12];
        hkdf.expand(b"ackwire packet key", &mut key)
            .expect("within HKDF's limit");
        hkdf.expand(b"ackwire packet iv", &mut iv)
            .expect("within HKDF's limit");
        Aes256GcmKey {
            secret: Some(secret),
            ..Aes256GcmKey::new(key, iv)
        }
    }

    fn nonce(&self, packet_number: u64) -> ring::aead::Nonce {
        // Unique per key: the core never hands a sender the same packet number twice.
        ring::aead::Nonce::assume_unique_for_key(nonce(&self.iv, packet_number))
    }
}

#[cfg(feature = "aead")]
impl fmt::Debug for Aes256GcmKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key; the IV alone is no secret but is of no use in a log either.
        f.write_str("Aes256GcmKey { .. }")
    }
}

#[cfg(feature = "aead")]
impl PacketKey for Aes256GcmKey {
    fn seal(
        &mut self,
        packet_number: u64,
        header: &[u8],
        payload: &mut [u8],
        tag: &mut [u8; TAG_LEN],
    ) {
        let nonce = self.nonce(packet_number);
        let sealed = self
            .key
            .seal_in_place_separate_tag(nonce, ring::aead::Aad::from(header), payload)
            .expect("a datagram is far under AES-GCM's 64 GiB message limit");
        tag.copy_from_slice(sealed.as_ref());
    }

    fn open(
        &mut self,
        packet_number: u64,
        header: &[u8],
        payload: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), OpenError> {
        let nonce = self.nonce(packet_number);
        self.key
            .open_in_place_separate_tag(
                nonce,
                ring::aead::Aad::from(header),
                ring::aead::Tag::from(*tag),
                payload,
                0..,
            )
            .map(|_| ())
            .map_err(|_| OpenError)
    }

    fn confidentiality_limit(&self) -> u64 {
        Self::CONFIDENTIALITY_LIMIT
    }

    fn integrity_limit(&self) -> u64 {
        Self::INTEGRITY_LIMIT
    }

    fn next(&self) -> Option<Box<dyn PacketKey>> {
        let secret = self.secret?;
        let hkdf = hkdf::Hkdf::<sha2::Sha256>::from_prk(&secret)
            .expect("32 bytes is a valid PRK for SHA-256");
        let mut next = [0u8; 32];
        hkdf.expand(b"ackwire key update", &mut next)
            .expect("within HKDF's limit");
        Some(Box::new(Aes256GcmKey::from_secret(next)))
    }
}

/// A protected endpoint's keys and packet numbers (see `Endpoint::protection`).
#[derive(Debug)]
pub(crate) struct Protection {
    pub(crate) keys: PacketKeys,
    /// The number the next packet sealed gets: how many were sealed so far.
    pub(crate) next_packet_number: u64,
    /// Largest packet number opened and taken in; moves only when a packet is taken in.
    pub(crate) largest_received: Option<u64>,
    /// The smaller of the local key's confidentiality limit and `MAX_PACKET_NUMBER + 1`:
    /// packet numbers from here on are never sealed.
    pub(crate) seal_limit: u64,
    /// The remote key's integrity limit.
    pub(crate) open_failure_limit: u64,
    /// Datagrams that failed to open under the remote key.
    pub(crate) open_failures: u64,
    /// Packet numbers per phase of the local key, if it updates.
    local_phase_packets: Option<u64>,
    /// The local key's phase.
    local_phase: u64,
    /// Packet numbers per phase of the remote key, if it updates.
    remote_phase_packets: Option<u64>,
    /// The remote key's phase: the phase of the newest packet opened.
    remote_phase: u64,
    /// The next phase's remote key, derived when a packet of that phase first arrives.
    remote_next: Option<Box<dyn PacketKey>>,
    /// The previous phase's remote key, for packets reordered across the update.
    remote_previous: Option<Box<dyn PacketKey>>,
}

impl Protection {
    pub(crate) fn new(keys: PacketKeys) -> Protection {
        let phase_packets = |key: &dyn PacketKey| {
            key.next().map(|_| {
                key.key_phase_packets()
                    .clamp(1, key.confidentiality_limit().max(1))
            })
        };
        let local_phase_packets = phase_packets(&*keys.local);
        let remote_phase_packets = phase_packets(&*keys.remote);
        Protection {
            // A key that updates never reaches its own limit: only the packet number's does.
            seal_limit: match local_phase_packets {
                Some(_) => MAX_PACKET_NUMBER + 1,
                None => keys
                    .local
                    .confidentiality_limit()
                    .min(MAX_PACKET_NUMBER + 1),
            },
            open_failure_limit: keys.remote.integrity_limit(),
            keys,
            next_packet_number: 0,
            largest_received: None,
            open_failures: 0,
            local_phase_packets,
            local_phase: 0,
            remote_phase_packets,
            remote_phase: 0,
            remote_next: None,
            remote_previous: None,
        }
    }

    /// Seals the next packet (number `next_packet_number`) under the key of its phase.
    pub(crate) fn seal(&mut self, header: &[u8], payload: &mut [u8], tag: &mut [u8; TAG_LEN]) {
        let number = self.next_packet_number;
        if let Some(per_phase) = self.local_phase_packets {
            while number / per_phase > self.local_phase {
                if let Some(next) = self.keys.local.next() {
                    self.keys.local = next;
                }
                self.local_phase += 1;
            }
        }
        self.keys.local.seal(number, header, payload, tag);
        self.next_packet_number = number + 1;
    }

    /// Opens packet `number` under the remote key of its phase: the current one, the next
    /// (which becomes current once a packet opens under it: the peer has updated), or the
    /// previous (a packet reordered across the update). Any other phase fails.
    pub(crate) fn open(
        &mut self,
        number: u64,
        header: &[u8],
        payload: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), OpenError> {
        let Some(per_phase) = self.remote_phase_packets else {
            return self.keys.remote.open(number, header, payload, tag);
        };
        let phase = number / per_phase;
        if phase == self.remote_phase {
            self.keys.remote.open(number, header, payload, tag)
        } else if phase + 1 == self.remote_phase {
            match &mut self.remote_previous {
                Some(previous) => previous.open(number, header, payload, tag),
                None => Err(OpenError),
            }
        } else if phase == self.remote_phase + 1 {
            if self.remote_next.is_none() {
                self.remote_next = self.keys.remote.next();
            }
            let next = self.remote_next.as_mut().ok_or(OpenError)?;
            next.open(number, header, payload, tag)?;
            let next = self.remote_next.take().expect("just used");
            self.remote_previous = Some(std::mem::replace(&mut self.keys.remote, next));
            self.remote_phase = phase;
            Ok(())
        } else {
            Err(OpenError)
        }
    }

    /// The limit reached, if any: nothing more may be sealed or opened.
    pub(crate) fn exhausted(&self) -> Option<KeyLimit> {
        if self.next_packet_number >= self.seal_limit {
            Some(KeyLimit::Confidentiality)
        } else if self.open_failures >= self.open_failure_limit {
            Some(KeyLimit::Integrity)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_numbers_are_rebuilt_as_rfc_9000_appendix_a3_shows() {
        // RFC 9000 §A.3's example with a 16-bit truncated number: largest 0xa82f30ea,
        // received 0x9b32 => 0xa82f9b32.
        assert_eq!(packet_number(Some(0xa82f_30ea), 0x9b32), 0xa82f_9b32);
        assert_eq!(packet_number(None, 0), 0);
        assert_eq!(packet_number(None, 40_000), 40_000);
        assert_eq!(packet_number(Some(65_535), 0), 65_536);
        assert_eq!(packet_number(Some(65_536), 65_535), 65_535);
    }

    /// A NIST CAVP AES-256-GCM vector (`gcmEncryptExtIV256.rsp`, 96-bit IV, 104-bit
    /// plaintext, 128-bit AAD), with its IV as the IV and packet number 0 (so the nonce is the
    /// IV) and its AAD in place of a header.
    #[cfg(feature = "aead")]
    #[test]
    fn aes_256_gcm_seals_a_nist_cavp_test_vector() {
        let unhex = |hex: &str| -> Vec<u8> {
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect()
        };
        let key: [u8; 32] =
            unhex("dad89d9be9bba138cdcf8752c45b579d7e27c3dbb40f53e771dd8cfd500aa2d5")
                .try_into()
                .unwrap();
        let iv: [u8; 12] = unhex("cfb2aec82cfa6c7d89ee72ff").try_into().unwrap();
        let aad = unhex("6e43784a91851a77667a02198e28dc32");
        let plaintext = unhex("b526ba1050177d05b0f72f8d67");
        let ciphertext = unhex("8b29e66e924ecae84f6d8f7d68");
        let tag: [u8; 16] = unhex("1e365805c8f28b2ed8a5cadfd9079158")
            .try_into()
            .unwrap();
        let mut key = Aes256GcmKey::new(key, iv);
        let mut buf = plaintext.clone();
        let mut sealed_tag = [0u8; TAG_LEN];
        key.seal(0, &aad, &mut buf, &mut sealed_tag);
        assert_eq!(buf, ciphertext);
        assert_eq!(sealed_tag, tag);
        key.open(0, &aad, &mut buf, &tag).unwrap();
        assert_eq!(buf, plaintext);
        // Under any other packet number the nonce differs, and nothing opens.
        let mut buf = ciphertext.clone();
        assert_eq!(key.open(1, &aad, &mut buf, &tag), Err(OpenError));
    }

    #[test]
    fn the_nonce_is_the_iv_xor_the_left_padded_packet_number() {
        let iv = [0xFF; 12];
        let nonce = nonce(&iv, 0x0102_0304_0506_0708);
        assert_eq!(
            nonce,
            [
                0xFF, 0xFF, 0xFF, 0xFF, 0xFE, 0xFD, 0xFC, 0xFB, 0xFA, 0xF9, 0xF8, 0xF7
            ]
        );
    }
}
