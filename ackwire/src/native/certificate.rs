//! A host's own certificate ([`NativeOptions::certificate`](crate::NativeOptions::certificate)):
//! one browsers trust, which its WebTransport ([`webtransport`](super::webtransport)) and its
//! WebSocket ([`websocket`](super::websocket), then `wss://`) present instead of a
//! self-signed one.
//!
//! Both services' TLS configurations ask one [`HostTls`] for the certificate at every
//! handshake (rustls's [`ResolvesServerCert`]), so a renewal ([`HostTls::renew`], every
//! `webtransport_rotation` on the room task's clock) reaches both at once, with no endpoint to
//! reload: handshakes from then on get the new certificate, open connections keep theirs.

use std::path::Path;
use std::sync::{Arc, RwLock};

use rustls::client::verify_server_name;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::{ClientHello, ParsedCertificate, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::webtransport::url_host;
use crate::config::HostCertificate;
use crate::error::JoinError;

/// The PEM certificates (`BEGIN CERTIFICATE` blocks) in `path`, in order; `Err` says what is
/// wrong with the file (a host's chain, a client's `tls_ca`).
pub(crate) fn pem_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(pem_error)?;
    if certs.is_empty() {
        return Err("no certificate found (expected PEM \"BEGIN CERTIFICATE\" blocks)".into());
    }
    Ok(certs)
}

/// What a PEM file's error means to whoever gave the file.
fn pem_error(e: pem::Error) -> String {
    match e {
        pem::Error::Io(e) => format!("cannot read: {e}"),
        other => format!("not valid PEM: {other}"),
    }
}

/// The rustls provider of every TLS configuration here: ring, the one the rest of the tree
/// (wtransport, webrtc, the signalling connector) uses.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A host's certificate, as its files held it when last read; clones share it.
#[derive(Debug, Clone)]
pub(crate) struct HostTls {
    files: HostCertificate,
    current: Arc<Current>,
}

/// The certificate handshakes get now.
#[derive(Debug)]
struct Current(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Current {
    /// The same certificate whatever name the client asks for: the host has one.
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// Which of the host's services a TLS configuration is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Service {
    /// HTTP/3 over QUIC: TLS 1.3 alone (QUIC's), ALPN `h3`.
    WebTransport,
    /// A WebSocket: TLS 1.2 or 1.3, ALPN `http/1.1` (the upgrade is HTTP/1.1's).
    WebSocket,
}

impl HostTls {
    /// Reads `files`: the chain, the key, and whether the certificate holds the name.
    pub(crate) fn load(files: &HostCertificate) -> Result<HostTls, JoinError> {
        let key = read(files)?;
        Ok(HostTls {
            files: files.clone(),
            current: Arc::new(Current(RwLock::new(Arc::new(key)))),
        })
    }

    /// The name clients dial.
    pub(crate) fn name(&self) -> &str {
        &self.files.name
    }

    /// The name as a URL's host: an IPv6 address in brackets.
    pub(crate) fn url_host(&self) -> String {
        match self.files.name.parse() {
            Ok(ip) => url_host(ip),
            Err(_) => self.files.name.clone(),
        }
    }

    /// Reads the files again, by the checks of [`Self::load`]: `Ok(true)` if they hold
    /// another certificate now, which handshakes get from now on; on `Err` the current one
    /// stays.
    pub(crate) fn renew(&self) -> Result<bool, JoinError> {
        let fresh = read(&self.files)?;
        let mut current = self.current.0.write().unwrap_or_else(|e| e.into_inner());
        let changed = current.cert != fresh.cert;
        if changed {
            *current = Arc::new(fresh);
        }
        Ok(changed)
    }

    /// A TLS configuration for `service` that presents the certificate current at each
    /// handshake.
    pub(crate) fn server_config(
        &self,
        service: Service,
    ) -> Result<rustls::ServerConfig, rustls::Error> {
        let builder = rustls::ServerConfig::builder_with_provider(provider());
        let builder = match service {
            Service::WebTransport => builder.with_protocol_versions(&[&rustls::version::TLS13]),
            Service::WebSocket => builder.with_safe_default_protocol_versions(),
        }?;
        let mut config = builder
            .with_no_client_auth()
            .with_cert_resolver(self.current.clone());
        config.alpn_protocols = vec![match service {
            Service::WebTransport => wtransport::tls::WEBTRANSPORT_ALPN.to_vec(),
            Service::WebSocket => b"http/1.1".to_vec(),
        }];
        Ok(config)
    }
}

/// The certificate and key `files` name, checked: the key is the certificate's, and the
/// certificate holds the name.
fn read(files: &HostCertificate) -> Result<CertifiedKey, JoinError> {
    let bad = |path: &Path, reason: String| JoinError::Certificate {
        path: path.to_owned(),
        reason,
    };
    let chain = pem_certificates(&files.chain).map_err(|reason| bad(&files.chain, reason))?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| match e {
        pem::Error::NoItemsFound => bad(
            &files.key,
            "no private key found (expected a PEM \"BEGIN PRIVATE KEY\", \"BEGIN RSA PRIVATE KEY\" or \"BEGIN EC PRIVATE KEY\" block)".into(),
        ),
        other => bad(&files.key, pem_error(other)),
    })?;
    let key = CertifiedKey::from_der(chain, key, &provider()).map_err(|e| {
        let chain = files.chain.display();
        bad(
            &files.key,
            format!("cannot be used with the certificate in {chain}: {e}"),
        )
    })?;
    let bad_name = |reason: String| JoinError::CertificateName {
        name: files.name.clone(),
        reason,
    };
    let name = ServerName::try_from(files.name.as_str())
        .map_err(|e| bad_name(format!("not a DNS name or an IP address: {e}")))?;
    // The first certificate is there: `pem_certificates` found one.
    let leaf = ParsedCertificate::try_from(&key.cert[0])
        .map_err(|e| bad(&files.chain, format!("not a usable certificate: {e}")))?;
    verify_server_name(&leaf, &name).map_err(|e| {
        let chain = files.chain.display();
        bad_name(format!("not a name of the certificate in {chain}: {e}"))
    })?;
    Ok(key)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::PathBuf;

    use super::*;

    /// A self-signed certificate for `names` (as the host's WebTransport makes its own),
    /// written as PEM files to `dir` (`<stem>.pem`, `<stem>.key`), and its DER.
    pub(crate) fn write_self_signed(
        dir: &Path,
        stem: &str,
        names: &[&str],
    ) -> (PathBuf, PathBuf, CertificateDer<'static>) {
        let identity = wtransport::Identity::self_signed(names).expect("a certificate");
        let chain = dir.join(format!("{stem}.pem"));
        let key = dir.join(format!("{stem}.key"));
        let cert = &identity.certificate_chain().as_slice()[0];
        std::fs::write(&chain, cert.to_pem()).unwrap();
        std::fs::write(&key, identity.private_key().to_secret_pem()).unwrap();
        (chain, key, CertificateDer::from(cert.der().to_vec()))
    }

    fn reason(e: JoinError) -> (String, String) {
        match e {
            JoinError::Certificate { path, reason } => (path.display().to_string(), reason),
            JoinError::CertificateName { name, reason } => (name, reason),
            other => panic!("not a certificate error: {other}"),
        }
    }

    #[test]
    fn a_certificate_that_holds_its_name_loads_and_anything_else_names_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let (chain, key, _) = write_self_signed(dir.path(), "a", &["localhost", "127.0.0.1"]);
        let (_, other_key, _) = write_self_signed(dir.path(), "b", &["localhost"]);
        assert_eq!(
            HostTls::load(&HostCertificate::new(&chain, &key, "localhost"))
                .unwrap()
                .name(),
            "localhost"
        );
        let by_ip = HostTls::load(&HostCertificate::new(&chain, &key, "127.0.0.1")).unwrap();
        assert_eq!(by_ip.url_host(), "127.0.0.1");

        let missing = dir.path().join("missing.pem");
        let text = dir.path().join("text.pem");
        std::fs::write(&text, "not PEM at all\n").unwrap();
        let garbled = dir.path().join("garbled.pem");
        std::fs::write(
            &garbled,
            "-----BEGIN CERTIFICATE-----\nnot base64 !!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let d = |p: &Path| p.display().to_string();
        for (files, at, expected) in [
            (
                HostCertificate::new(&missing, &key, "localhost"),
                d(&missing),
                "cannot read",
            ),
            (
                HostCertificate::new(&garbled, &key, "localhost"),
                d(&garbled),
                "not valid PEM",
            ),
            // The key file as the chain: PEM, but no certificate.
            (
                HostCertificate::new(&key, &key, "localhost"),
                d(&key),
                "no certificate found",
            ),
            (
                HostCertificate::new(&chain, &missing, "localhost"),
                d(&missing),
                "cannot read",
            ),
            (
                HostCertificate::new(&chain, &text, "localhost"),
                d(&text),
                "no private key found",
            ),
            (
                HostCertificate::new(&chain, &other_key, "localhost"),
                d(&other_key),
                "cannot be used with the certificate",
            ),
            (
                HostCertificate::new(&chain, &key, "not a name"),
                "not a name".into(),
                "not a DNS name",
            ),
            (
                HostCertificate::new(&chain, &key, "game.example.com"),
                "game.example.com".into(),
                "not a name of the certificate",
            ),
        ] {
            let (said_at, reason) = reason(HostTls::load(&files).unwrap_err());
            assert_eq!(said_at, at, "{files:?}");
            assert!(reason.contains(expected), "{files:?}: {reason}");
        }
    }

    #[test]
    fn a_renewal_takes_a_new_certificate_and_keeps_the_current_one_when_the_files_are_bad() {
        let dir = tempfile::tempdir().unwrap();
        let (chain, key, first) = write_self_signed(dir.path(), "host", &["localhost"]);
        let tls = HostTls::load(&HostCertificate::new(&chain, &key, "localhost")).unwrap();
        let presented = |tls: &HostTls| tls.current.0.read().unwrap().cert[0].clone();
        assert_eq!(presented(&tls), first);
        // The same files: nothing changes.
        assert!(!tls.renew().unwrap());

        // A certificate for another name, then a half-written one: the current one stays.
        write_self_signed(dir.path(), "host", &["elsewhere.example.com"]);
        assert!(matches!(
            tls.renew(),
            Err(JoinError::CertificateName { .. })
        ));
        std::fs::write(&chain, "-----BEGIN CERTIFICATE-----\n").unwrap();
        assert!(matches!(tls.renew(), Err(JoinError::Certificate { .. })));
        assert_eq!(presented(&tls), first);

        let (_, _, second) = write_self_signed(dir.path(), "host", &["localhost"]);
        assert!(tls.renew().unwrap());
        assert_eq!(presented(&tls), second);
    }
}
