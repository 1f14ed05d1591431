//! Keys of encrypted native links: the listener's static key file (`listen --key FILE`), and
//! the fingerprint a connector pins (`connect --server-key FINGERPRINT`).
//!
//! A **fingerprint** is the X25519 public key itself, in standard base64 (44 characters, as
//! WireGuard writes its keys): short enough to paste, and the whole key, so pinning it needs no
//! lookup and no hash. The key file holds the private key in base64 on one line, readable by
//! its owner only.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use ackwire_core::StaticKey;
use ackwire_core::key_exchange::PUBLIC_KEY_LEN;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// A static public key as users see it: `--server-key`, the listener's log line, signalling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint(pub [u8; PUBLIC_KEY_LEN]);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&STANDARD.encode(self.0))
    }
}

/// Why a fingerprint or key file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// Not base64 of 32 bytes.
    #[error("a key must be 44 characters of base64 (32 bytes), as `listen` prints it: {0:?}")]
    BadFingerprint(String),
    /// The key file could not be read or created.
    #[error("key file {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The key file does not hold a base64 private key.
    #[error("key file {0} does not hold a key (one line of base64, 32 bytes)")]
    BadFile(PathBuf),
}

fn decode(text: &str) -> Option<[u8; 32]> {
    STANDARD.decode(text.trim()).ok()?.try_into().ok()
}

impl FromStr for Fingerprint {
    type Err = KeyError;

    fn from_str(text: &str) -> Result<Fingerprint, KeyError> {
        decode(text)
            .map(Fingerprint)
            .ok_or_else(|| KeyError::BadFingerprint(text.to_owned()))
    }
}

/// The fingerprint of `key`'s public half.
pub fn fingerprint(key: &StaticKey) -> Fingerprint {
    Fingerprint(key.public())
}

/// The key in `path`, or a new one written there (mode 0600) when the file does not exist;
/// `true` when it was created.
pub fn load_or_create(path: &Path) -> Result<(StaticKey, bool), KeyError> {
    let file_error = |source| KeyError::File {
        path: path.to_owned(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let private = decode(&text).ok_or_else(|| KeyError::BadFile(path.to_owned()))?;
            Ok((StaticKey::from_private(private), false))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = StaticKey::generate();
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(path).map_err(file_error)?;
            writeln!(file, "{}", STANDARD.encode(key.private())).map_err(file_error)?;
            Ok((key, true))
        }
        Err(e) => Err(file_error(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_prints_and_parses_back_and_anything_else_is_refused() {
        let key = StaticKey::generate();
        let text = fingerprint(&key).to_string();
        assert_eq!(text.len(), 44);
        assert_eq!(text.parse::<Fingerprint>().unwrap(), fingerprint(&key));
        for bad in ["", "abc", &text[..40], &format!("{text}AAAA")] {
            assert!(matches!(
                bad.parse::<Fingerprint>(),
                Err(KeyError::BadFingerprint(_))
            ));
        }
    }

    #[test]
    fn a_missing_key_file_is_created_private_and_read_back_as_the_same_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("listen.key");
        let (created, new) = load_or_create(&path).unwrap();
        assert!(new);
        let (loaded, new) = load_or_create(&path).unwrap();
        assert!(!new);
        assert_eq!(loaded.public(), created.public());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "not a key\n").unwrap();
        assert!(matches!(load_or_create(&path), Err(KeyError::BadFile(_))));
    }
}
