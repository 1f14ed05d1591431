//! A native's X25519 public key in its text form (`udp_key`).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// An X25519 public key, written as standard base64 (44 characters, as WireGuard writes
/// keys): a native's key for its encrypted UDP links (`udp_key`), and a listener's
/// fingerprint. Anything else is refused when parsed.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; 32]);

/// Not 44 characters of base64 for 32 bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a key must be 44 characters of base64 (32 bytes): \"{0}\"")]
pub struct InvalidPublicKey(pub String);

/// Standard base64's alphabet. A key is always 32 bytes, so its text is always 43 digits and
/// one `=`: written here rather than with the `base64` crate, whose general engine weighs
/// 1.3 KB gzipped in the browser's bundle for these 44 characters.
const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = [b'='; 44];
        // Digit `i` is the 6 bits from bit `6i` on, read through the 16 bits from its byte.
        for (i, digit) in text[..43].iter_mut().enumerate() {
            let (at, shift) = (6 * i / 8, 10 - 6 * i % 8);
            let window = u16::from(self.0[at]) << 8 | u16::from(*self.0.get(at + 1).unwrap_or(&0));
            *digit = BASE64[usize::from(window >> shift & 0x3F)];
        }
        // Only alphabet characters and `=` were written.
        f.write_str(std::str::from_utf8(&text).map_err(|_| std::fmt::Error)?)
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

impl std::str::FromStr for PublicKey {
    type Err = InvalidPublicKey;

    /// Exactly the text [`Display`](std::fmt::Display) writes: 43 digits, `=`, and the
    /// unused low bits of the last digit zero (no two texts for one key).
    fn from_str(text: &str) -> Result<PublicKey, InvalidPublicKey> {
        let invalid = || InvalidPublicKey(text.chars().take(60).collect());
        let bytes = text.as_bytes();
        if bytes.len() != 44 || bytes[43] != b'=' {
            return Err(invalid());
        }
        let mut key = [0u8; 32];
        for (i, &c) in bytes[..43].iter().enumerate() {
            let value = BASE64.iter().position(|&d| d == c).ok_or_else(invalid)? as u16;
            let (at, shift) = (6 * i / 8, 10 - 6 * i % 8);
            let window = value << shift;
            key[at] |= (window >> 8) as u8;
            match key.get_mut(at + 1) {
                Some(next) => *next |= window as u8,
                // The last digit's low 2 bits lie beyond the key: they must be zero.
                None if window as u8 != 0 => return Err(invalid()),
                None => {}
            }
        }
        Ok(PublicKey(key))
    }
}

impl Serialize for PublicKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PublicKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PublicKey, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_key_reads_and_writes_exactly_the_standard_base64_text() {
        // Every byte value in every position, against a well-kept base64 implementation.
        use base64::Engine;
        let standard = base64::engine::general_purpose::STANDARD;
        for seed in 0u8..=255 {
            let key = PublicKey(core::array::from_fn(|i| {
                seed.wrapping_mul(31)
                    .wrapping_add((i as u8).wrapping_mul(97))
            }));
            let text = key.to_string();
            assert_eq!(text, standard.encode(key.0));
            assert_eq!(text.parse::<PublicKey>(), Ok(key));
        }
        // A text whose last digit carries bits beyond the key is another key's: refused, as
        // the crate refuses it.
        let mut loose = PublicKey([0; 32]).to_string().into_bytes();
        loose[42] = b'B';
        let loose = String::from_utf8(loose).unwrap();
        assert!(standard.decode(&loose).is_err());
        assert!(loose.parse::<PublicKey>().is_err());
    }

    #[test]
    fn a_public_key_is_44_characters_of_base64_and_nothing_else_parses() {
        let key = PublicKey(core::array::from_fn(|i| i as u8));
        let text = key.to_string();
        assert_eq!(text, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
        assert_eq!(text.parse::<PublicKey>(), Ok(key));
        assert_eq!(serde_json::to_string(&key).unwrap(), format!("\"{text}\""));
        for bad in [
            "",
            "AAEC",
            &text[..43],
            &format!("{text}AAAA"),
            "not base64 at all!!",
        ] {
            assert!(bad.parse::<PublicKey>().is_err(), "{bad}");
            assert!(serde_json::from_str::<PublicKey>(&format!("\"{bad}\"")).is_err());
        }
    }
}
