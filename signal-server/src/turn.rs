//! Short-lived TURN credentials: the "TURN REST API" scheme that coturn checks with
//! `use-auth-secret` (and other TURN servers understand): the user name is
//! `<unix expiry>:<peer id>`, the password `base64(HMAC-SHA1(secret, user name))`. The TURN
//! server recomputes the password from the secret it shares with this server and refuses
//! the user name once its expiry has passed, so the secret never leaves the servers and a
//! leaked credential is worth one peer's TTL.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ackwire_signalling::{IceServer, PeerId};
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;

/// What the server hands out for TURN: the URLs, the secret shared with the TURN server and
/// how long credentials last (`--turn-url`, `--turn-secret`, `--turn-ttl`).
#[derive(Clone)]
pub struct Turn {
    urls: Vec<String>,
    secret: String,
    ttl: Duration,
}

impl fmt::Debug for Turn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Turn")
            .field("urls", &self.urls)
            .field("secret", &"<hidden>")
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl Turn {
    /// TURN at `urls` with `secret`; `None` when there is no URL.
    pub fn new(urls: Vec<String>, secret: String, ttl: Duration) -> Option<Turn> {
        (!urls.is_empty()).then_some(Turn { urls, secret, ttl })
    }

    /// The TURN entry for `peer`, valid until `now` + the TTL.
    pub fn credentials(&self, peer: PeerId, now: SystemTime) -> IceServer {
        let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        let username = format!("{}:{peer}", (since_epoch + self.ttl).as_secs());
        IceServer {
            urls: self.urls.clone(),
            credential: credential(&self.secret, &username),
            username,
        }
    }

    /// When a joined peer gets fresh credentials: at three quarters of their lifetime, so a
    /// quarter (15 min at the default hour) is left for the frame to arrive before the old
    /// ones stop working.
    pub fn refresh_after(&self) -> Duration {
        self.ttl * 3 / 4
    }
}

/// `base64(HMAC-SHA1(secret, username))`.
pub fn credential(secret: &str, username: &str) -> String {
    let mut mac = Hmac::<Sha1>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(username.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credential_is_base64_of_hmac_sha1_of_the_user_name() {
        // Fixed vectors, computed independently (Python's hmac, hashlib.sha1, base64); the
        // second is the example of the TURN REST API draft's secret and user name.
        assert_eq!(
            credential("north", "1700003600:7"),
            "3SXD73xvzbKOJb8QpzBT3wJ3nzU="
        );
        assert_eq!(
            credential("logen", "1433895918506:my_user_name"),
            "k9XjeUBy+T8SytoYUTKRB5KlGuM="
        );
    }

    #[test]
    fn credentials_name_the_expiry_and_the_peer() {
        let turn = Turn::new(
            vec!["turn:203.0.113.1:3478?transport=udp".into()],
            "north".into(),
            Duration::from_secs(3600),
        )
        .unwrap();
        let issued = turn.credentials(7, UNIX_EPOCH + Duration::from_secs(1_700_000_000));
        assert_eq!(issued.urls, ["turn:203.0.113.1:3478?transport=udp"]);
        assert_eq!(issued.username, "1700003600:7");
        assert_eq!(issued.credential, "3SXD73xvzbKOJb8QpzBT3wJ3nzU=");
        assert_eq!(turn.refresh_after(), Duration::from_secs(2700));
        assert!(Turn::new(Vec::new(), "s".into(), Duration::from_secs(1)).is_none());
        assert!(
            !format!("{turn:?}").contains("north"),
            "the secret stays out of logs"
        );
    }
}
