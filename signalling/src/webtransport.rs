//! Where a host serves WebTransport (`webtransport` in its join and its [`PeerInfo`]), the
//! certificates a browser accepts from it without a certificate authority, and the WebSocket
//! its clients fall back to when neither WebTransport nor WebRTC reaches it.
//!
//! [`PeerInfo`]: crate::PeerInfo

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// At most this many certificate hashes: the current certificate and the next, with room
/// for a rotation under way.
pub const MAX_CERT_HASHES: usize = 4;

/// The longest URL a host may publish.
pub const MAX_URL_LEN: usize = 256;

/// A host room's host serving WebTransport: its clients that have WebTransport dial `url`
/// (the session's path carries their link's token, `?token=…`) and accept the server's
/// certificate when its SHA-256 is one of `cert_hashes` (the browser's
/// `serverCertificateHashes`). With no hashes the certificate must chain to a root the
/// browser trusts (a host with a real certificate).
///
/// `websocket` is the same host's last resort: a client that reaches it neither over
/// WebTransport nor over WebRTC (a browser without either, a network that blocks UDP) dials
/// it with its token (`?token=…`) and carries the core's packets one per binary message, in
/// order on one TCP stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebTransportInfo {
    /// `https://host:port/path`, with no query or fragment.
    pub url: String,
    /// The certificates the host may present: the current one and the next.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cert_hashes: Vec<CertHash>,
    /// `ws://host:port/path` or `wss://…` (a host with a certificate browsers trust; a page
    /// served over https may open only `wss://`), with no query or fragment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<String>,
}

/// What is wrong with a [`WebTransportInfo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidWebTransport {
    /// The URL is not `https://`, is longer than [`MAX_URL_LEN`], or has a query, a fragment,
    /// a space or a control character in it.
    #[error(
        "webtransport.url must be an https:// URL of at most 256 characters, with no query or fragment"
    )]
    Url,
    /// More than [`MAX_CERT_HASHES`] hashes.
    #[error("webtransport.cert_hashes holds at most 4 hashes")]
    TooManyHashes,
    /// The WebSocket URL is not `ws://` or `wss://`, is longer than [`MAX_URL_LEN`], or has a
    /// query, a fragment, a space or a control character in it.
    #[error(
        "webtransport.websocket must be a ws:// or wss:// URL of at most 256 characters, with no query or fragment"
    )]
    WebSocketUrl,
}

impl WebTransportInfo {
    /// Checks the URL's shape and the number of hashes (each hash was checked as it was
    /// read).
    pub fn validate(&self) -> Result<(), InvalidWebTransport> {
        if !plain_url(&self.url, &["https://"]) {
            return Err(InvalidWebTransport::Url);
        }
        if self.cert_hashes.len() > MAX_CERT_HASHES {
            return Err(InvalidWebTransport::TooManyHashes);
        }
        if let Some(url) = &self.websocket
            && !plain_url(url, &["ws://", "wss://"])
        {
            return Err(InvalidWebTransport::WebSocketUrl);
        }
        Ok(())
    }

    /// The URL a client dials for the link with token `token`.
    pub fn session_url(&self, token: &str) -> String {
        format!("{}?token={token}", self.url)
    }

    /// The WebSocket URL a client dials for the link with token `token`, if the host serves
    /// one.
    pub fn websocket_url(&self, token: &str) -> Option<String> {
        let url = self.websocket.as_ref()?;
        Some(format!("{url}?token={token}"))
    }
}

/// Whether `url` is one of `schemes`, with an authority, at most [`MAX_URL_LEN`] long, and
/// no query, fragment, space or control character (the client appends the token's query).
fn plain_url(url: &str, schemes: &[&str]) -> bool {
    let Some(rest) = schemes.iter().find_map(|s| url.strip_prefix(s)) else {
        return false;
    };
    url.len() <= MAX_URL_LEN
        && !rest.is_empty()
        && !rest.starts_with('/')
        && !url
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || c == '?' || c == '#')
}

/// The token in a session's path (`…?token=…`), if it has one of the right shape: what a host
/// matches the session to its client's link by.
pub fn session_token(path: &str) -> Option<&str> {
    let (_, query) = path.split_once('?')?;
    let token = query.strip_prefix("token=")?;
    is_token(token).then_some(token)
}

/// Whether `token` is a link token: 32 lowercase hex digits (128 random bits).
pub fn is_token(token: &str) -> bool {
    token.len() == 32
        && token
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The SHA-256 of a certificate's DER, written as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CertHash(pub [u8; 32]);

/// Not 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a certificate hash must be 64 hex digits (SHA-256): \"{0}\"")]
pub struct InvalidCertHash(pub String);

impl std::fmt::Display for CertHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl std::fmt::Debug for CertHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CertHash({self})")
    }
}

impl std::str::FromStr for CertHash {
    type Err = InvalidCertHash;

    /// 64 hex digits, either case.
    fn from_str(text: &str) -> Result<CertHash, InvalidCertHash> {
        let invalid = || InvalidCertHash(text.chars().take(80).collect());
        if text.len() != 64 || !text.is_ascii() {
            return Err(invalid());
        }
        let mut hash = [0u8; 32];
        for (byte, pair) in hash.iter_mut().zip(text.as_bytes().chunks(2)) {
            // ASCII, so any two bytes are a str.
            let pair = std::str::from_utf8(pair).map_err(|_| invalid())?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| invalid())?;
        }
        Ok(CertHash(hash))
    }
}

impl Serialize for CertHash {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CertHash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CertHash, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(url: &str) -> WebTransportInfo {
        WebTransportInfo {
            url: url.into(),
            cert_hashes: vec![CertHash([0xab; 32])],
            websocket: None,
        }
    }

    #[test]
    fn a_hosts_url_and_hashes_read_back_as_written() {
        let text = serde_json::to_string(&info("https://192.0.2.7:4433/ackwire")).unwrap();
        assert_eq!(
            text,
            format!(
                r#"{{"url":"https://192.0.2.7:4433/ackwire","cert_hashes":["{}"]}}"#,
                "ab".repeat(32)
            )
        );
        let back: WebTransportInfo = serde_json::from_str(&text).unwrap();
        assert_eq!(back, info("https://192.0.2.7:4433/ackwire"));
        assert_eq!(back.validate(), Ok(()));
    }

    #[test]
    fn a_hash_that_is_not_64_hex_digits_is_refused_when_read() {
        for bad in ["ab", &"g".repeat(64), &"a".repeat(65), &"é".repeat(32)] {
            assert!(bad.parse::<CertHash>().is_err(), "{bad}");
        }
        assert_eq!(
            "AB".repeat(32).parse::<CertHash>().unwrap(),
            CertHash([0xab; 32])
        );
    }

    #[test]
    fn urls_that_are_not_plain_https_are_refused() {
        for bad in [
            "http://192.0.2.7:4433/",
            "https://",
            "https:///path",
            "https://192.0.2.7/a?token=x",
            "https://192.0.2.7/a#f",
            "https://192.0.2.7/a b",
            &format!("https://{}", "a".repeat(300)),
        ] {
            assert_eq!(info(bad).validate(), Err(InvalidWebTransport::Url), "{bad}");
        }
        let mut many = info("https://192.0.2.7:4433/");
        many.cert_hashes = vec![CertHash([1; 32]); 5];
        assert_eq!(many.validate(), Err(InvalidWebTransport::TooManyHashes));
    }

    #[test]
    fn a_websocket_url_is_published_beside_the_service_in_its_own_shape() {
        let mut service = info("https://192.0.2.7:4433/ackwire");
        for good in ["ws://192.0.2.7:4433/ackwire", "wss://host.example/ackwire"] {
            service.websocket = Some(good.into());
            assert_eq!(service.validate(), Ok(()), "{good}");
            let text = serde_json::to_string(&service).unwrap();
            assert!(
                text.ends_with(&format!(r#","websocket":"{good}"}}"#)),
                "{text}"
            );
            assert_eq!(
                serde_json::from_str::<WebTransportInfo>(&text).unwrap(),
                service
            );
        }
        let token = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            service.websocket_url(token).unwrap(),
            format!("wss://host.example/ackwire?token={token}")
        );
        for bad in [
            "https://192.0.2.7/",
            "ws://",
            "ws:///a",
            "ws://192.0.2.7/a?token=x",
            "ws://192.0.2.7/a b",
            &format!("ws://{}", "a".repeat(300)),
        ] {
            service.websocket = Some(bad.into());
            assert_eq!(
                service.validate(),
                Err(InvalidWebTransport::WebSocketUrl),
                "{bad}"
            );
        }
        service.websocket = None;
        assert_eq!(service.websocket_url(token), None);
        assert!(
            !serde_json::to_string(&service)
                .unwrap()
                .contains("websocket")
        );
    }

    #[test]
    fn a_sessions_token_is_read_from_its_path_only_in_its_shape() {
        let token = "0123456789abcdef0123456789abcdef";
        let url = info("https://192.0.2.7:4433/ackwire").session_url(token);
        assert_eq!(url, format!("https://192.0.2.7:4433/ackwire?token={token}"));
        assert_eq!(
            session_token(&format!("/ackwire?token={token}")),
            Some(token)
        );
        for bad in [
            "/ackwire",
            "/ackwire?token=",
            "/ackwire?token=XYZ",
            "/a?t=0123",
        ] {
            assert_eq!(session_token(bad), None, "{bad}");
        }
    }
}
