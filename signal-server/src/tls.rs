//! HTTPS and WSS straight from the server (`--tls-cert`, `--tls-key`): rustls with the ring
//! provider, the one the rest of the tree already uses.
//!
//! Each TLS handshake runs on a task of its own, bounded by [`HANDSHAKE_TIMEOUT`], so a client
//! that stalls in its handshake holds up nobody else's; [`TlsListener`] hands the finished
//! connections to `axum::serve`, which then treats them as it treats plain TCP ones (graceful
//! shutdown, upgrades, `ConnectInfo`).
//!
//! The certificate and key are re-read on [`Certificates::reload`] (the binary calls it on
//! SIGHUP): a renewed certificate takes effect without a restart, for each handshake from
//! then on; connections already open keep theirs.

use std::{
    io,
    net::SocketAddr,
    path::{Path, PathBuf},
    pin::Pin,
    sync::{Arc, RwLock},
    task::{Context, Poll},
    time::Duration,
};

use axum::serve::Listener;
use rustls::{
    ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
};
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf},
    net::TcpStream,
    sync::mpsc,
};
use tokio_rustls::{TlsAcceptor, server::TlsStream};

use crate::{Config, metrics::Metrics};

/// Longest a client may take to complete its TLS handshake before it is disconnected.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Finished handshakes waiting for `axum::serve` to take them.
const ACCEPTED_QUEUE: usize = 64;

/// Longest a dropped connection's `close_notify` may take to go out (see [`TlsConnection`]).
const CLOSE_NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);

/// The server's certificate and key, from `--tls-cert` and `--tls-key`; each handshake takes
/// the configuration current when it starts.
#[derive(Debug)]
pub struct Certificates {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Loaded>,
}

/// What the files held when last read.
#[derive(Debug)]
struct Loaded {
    config: Arc<ServerConfig>,
    /// The server certificate's `notAfter`, in seconds since the Unix epoch.
    not_after: i64,
}

/// How close to its expiry a certificate is warned about, at load and at each reload.
pub const EXPIRY_WARNING: Duration = Duration::from_secs(14 * 24 * 3600);

impl Certificates {
    /// Reads `config`'s certificate and key, or `None` when neither is set. Every error names
    /// the file (and its flag) and what was wrong with it.
    pub fn load(config: &Config) -> io::Result<Option<Arc<Certificates>>> {
        match (&config.tls_cert, &config.tls_key) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => {
                let loaded = read(cert, key)?;
                log_expiry(cert, loaded.not_after);
                Ok(Some(Arc::new(Certificates {
                    current: RwLock::new(loaded),
                    cert: cert.clone(),
                    key: key.clone(),
                })))
            }
            (Some(_), None) => Err(invalid(
                "--tls-cert needs --tls-key (its private key)".into(),
            )),
            (None, Some(_)) => Err(invalid(
                "--tls-key needs --tls-cert (its certificate)".into(),
            )),
        }
    }

    /// Reads the two files again. On success, handshakes from now on present the new
    /// certificate; on error (the same checks as at startup) the current one stays.
    pub fn reload(&self) -> io::Result<()> {
        let fresh = read(&self.cert, &self.key)?;
        log_expiry(&self.cert, fresh.not_after);
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        Ok(())
    }

    /// The `notAfter` of the certificate presented now, in seconds since the Unix epoch.
    pub fn not_after(&self) -> i64 {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .not_after
    }

    fn acceptor(&self) -> TlsAcceptor {
        let current = self.current.read().unwrap_or_else(|e| e.into_inner());
        TlsAcceptor::from(Arc::clone(&current.config))
    }
}

/// Says until when the certificate is valid; warns when that is less than
/// [`EXPIRY_WARNING`] away, or past (clients refuse an expired certificate).
fn log_expiry(cert: &Path, not_after: i64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let left = not_after.saturating_sub(now);
    let until = x509_parser::time::ASN1Time::from_timestamp(not_after)
        .map_or_else(|_| not_after.to_string(), |t| t.to_string());
    let cert = cert.display();
    let warning = i64::try_from(EXPIRY_WARNING.as_secs()).unwrap_or(i64::MAX);
    if left <= 0 {
        tracing::warn!(%cert, valid_until = %until, "TLS certificate expired: clients refuse it; renew it and send SIGHUP");
    } else if left < warning {
        tracing::warn!(%cert, valid_until = %until, days_left = left / 86_400, "TLS certificate expires soon: renew it and send SIGHUP");
    } else {
        tracing::info!(%cert, valid_until = %until, "TLS certificate");
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

fn file_error(flag: &str, path: &Path, what: impl std::fmt::Display) -> io::Error {
    invalid(format!("{flag} {}: {what}", path.display()))
}

fn pem_error(flag: &str, path: &Path, err: rustls::pki_types::pem::Error) -> io::Error {
    use rustls::pki_types::pem::Error;
    match err {
        Error::Io(err) => file_error(flag, path, format!("cannot read: {err}")),
        other => file_error(flag, path, format!("not valid PEM: {other}")),
    }
}

fn read(cert_path: &PathBuf, key_path: &PathBuf) -> io::Result<Loaded> {
    let certs = CertificateDer::pem_file_iter(cert_path)
        .map_err(|e| pem_error("--tls-cert", cert_path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error("--tls-cert", cert_path, e))?;
    if certs.is_empty() {
        return Err(file_error(
            "--tls-cert",
            cert_path,
            "no certificate found (expected PEM \"BEGIN CERTIFICATE\" blocks, the server's first)",
        ));
    }
    let not_after = x509_parser::parse_x509_certificate(&certs[0])
        .map_err(|e| {
            file_error(
                "--tls-cert",
                cert_path,
                format!("not an X.509 certificate: {e}"),
            )
        })?
        .1
        .validity()
        .not_after
        .timestamp();
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => file_error(
            "--tls-key",
            key_path,
            "no private key found (expected a PEM \"BEGIN PRIVATE KEY\", \"BEGIN RSA PRIVATE KEY\" or \"BEGIN EC PRIVATE KEY\" block)",
        ),
        other => pem_error("--tls-key", key_path, other),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(format!("TLS setup: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            file_error(
                "--tls-key",
                key_path,
                format!(
                    "cannot be used with the certificate in {}: {e}",
                    cert_path.display()
                ),
            )
        })?;
    // HTTP/1.1 only: the server speaks no HTTP/2, and WebSockets upgrade over HTTP/1.1.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Loaded {
        config: Arc::new(config),
        not_after,
    })
}

/// TLS connections, handshaken: a task accepts TCP connections from the inner listener and
/// starts each handshake on a task of its own; finished ones queue here for `accept`.
/// Dropping the listener (the server stopped accepting) stops that task, the inner listener
/// and the handshakes still running.
#[derive(Debug)]
pub struct TlsListener {
    accepted: mpsc::Receiver<(TlsConnection, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Starts accepting from `inner` (must be called within a tokio runtime).
    pub fn new<L>(
        inner: L,
        certificates: Arc<Certificates>,
        metrics: Arc<Metrics>,
    ) -> io::Result<TlsListener>
    where
        L: Listener<Io = TcpStream, Addr = SocketAddr>,
    {
        let local = inner.local_addr()?;
        let (tx, accepted) = mpsc::channel(ACCEPTED_QUEUE);
        tokio::spawn(accept_loop(inner, certificates, metrics, tx));
        Ok(TlsListener { accepted, local })
    }
}

async fn accept_loop<L>(
    mut inner: L,
    certificates: Arc<Certificates>,
    metrics: Arc<Metrics>,
    tx: mpsc::Sender<(TlsConnection, SocketAddr)>,
) where
    L: Listener<Io = TcpStream, Addr = SocketAddr>,
{
    loop {
        let (tcp, remote) = tokio::select! {
            conn = inner.accept() => conn,
            () = tx.closed() => return,
        };
        let acceptor = certificates.acceptor();
        let tx = tx.clone();
        let metrics = Arc::clone(&metrics);
        tokio::spawn(async move {
            let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp));
            let tls = tokio::select! {
                done = handshake => match done {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(err)) => {
                        metrics.tls_handshake("failed");
                        tracing::debug!(%remote, %err, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        metrics.tls_handshake("timed_out");
                        tracing::debug!(%remote, "TLS handshake timed out");
                        return;
                    }
                },
                () = tx.closed() => return,
            };
            metrics.tls_handshake("ok");
            let conn = TlsConnection {
                stream: Some(tls),
                shut_down: false,
            };
            let _ = tx.send((conn, remote)).await;
        });
    }
}

impl Listener for TlsListener {
    type Io = TlsConnection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.accepted.recv().await {
            Some(conn) => conn,
            // The accepting task ended, which it does only once this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// A server-side TLS connection that ends in order even when dropped without a shutdown:
/// a WebSocket session drops its socket after the closing handshake, which over plain TCP is
/// an orderly end (FIN), but over TLS would cut the stream without `close_notify` (clients
/// report a truncated connection). Dropped unshut, it sends `close_notify` and the FIN from a
/// task of its own, for at most `CLOSE_NOTIFY_TIMEOUT`.
#[derive(Debug)]
pub struct TlsConnection {
    /// Always `Some` until dropped.
    stream: Option<TlsStream<TcpStream>>,
    shut_down: bool,
}

impl TlsConnection {
    fn stream(&mut self) -> Pin<&mut TlsStream<TcpStream>> {
        Pin::new(self.stream.as_mut().expect("present until dropped"))
    }
}

impl AsyncRead for TlsConnection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.get_mut().stream().poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConnection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().stream().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().stream().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream
            .as_ref()
            .is_some_and(AsyncWrite::is_write_vectored)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().stream().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // Attempted once is enough: a failed shutdown is not retried at drop.
        this.shut_down = true;
        this.stream().poll_shutdown(cx)
    }
}

impl Drop for TlsConnection {
    fn drop(&mut self) {
        let Some(mut stream) = self.stream.take() else {
            return;
        };
        if self.shut_down {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = tokio::time::timeout(CLOSE_NOTIFY_TIMEOUT, stream.shutdown()).await;
            });
        }
    }
}
