//! The signalling WebSocket, one connection at a time. The room member decides when to open
//! one (and when to try again); this task only connects, forwards text frames both ways and
//! says when the socket opened or closed.

use std::path::Path;
use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::{Connector, tungstenite};
use tungstenite::Message;

use super::certificate::{pem_certificates, provider};
use crate::error::JoinError;

/// Frames the member may queue for the server before further ones are dropped (stats are
/// resent every second anyway; a lost signal shows up as a link attempt that times out and
/// starts over).
const OUTBOX: usize = 256;

/// What a socket tells the driver, tagged with the socket's number.
#[derive(Debug, Clone)]
pub(crate) enum SocketEvent {
    /// Connected: the member may join.
    Open,
    /// A text frame from the server.
    Frame(String),
    /// Closed or could not connect; no more events from this socket.
    Closed(String),
    /// Closed by the server because a fresh join took this member's place
    /// ([`CLOSE_REPLACED`](ackwire_signalling::CLOSE_REPLACED)); no more events.
    Replaced(String),
}

/// Whom a `wss://` server's certificate must chain to.
#[derive(Debug, Clone, Default)]
pub(crate) enum Trust {
    /// The public web PKI (the Mozilla roots of `webpki-roots`), as a browser would.
    #[default]
    PublicRoots,
    /// Only the certificates of `--tls-ca` (a private CA, or the server's own self-signed
    /// certificate); the public roots are not consulted.
    Only {
        /// The certificates, as roots.
        roots: Arc<rustls::RootCertStore>,
        /// A connector trusting them alone.
        config: Arc<rustls::ClientConfig>,
    },
}

impl Trust {
    /// Reads `--tls-ca`: PEM `BEGIN CERTIFICATE` blocks, each one a trust root.
    pub(crate) fn from_pem_file(path: &Path) -> Result<Trust, JoinError> {
        let bad = |reason: String| JoinError::TlsCa {
            path: path.to_owned(),
            reason,
        };
        let certs = pem_certificates(path).map_err(bad)?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| bad(format!("not a usable certificate: {e}")))?;
        }
        let roots = Arc::new(roots);
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(e.to_string()))?
            .with_root_certificates(roots.clone())
            .with_no_client_auth();
        Ok(Trust::Only {
            roots,
            config: Arc::new(config),
        })
    }

    /// Whom a host's own certificate must chain to, as its native client dials it as a
    /// browser does (a `wss://` WebSocket, a WebTransport service without hashes): the public
    /// roots, as the browser's, and `--tls-ca`'s certificates besides, so a client that
    /// trusts a private signalling server still reaches a host with a public certificate.
    pub(crate) fn host_roots(&self) -> Arc<rustls::RootCertStore> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Trust::Only { roots: ca, .. } = self {
            roots.roots.extend(ca.roots.iter().cloned());
        }
        Arc::new(roots)
    }

    fn connector(&self) -> Option<Connector> {
        match self {
            Trust::PublicRoots => None,
            Trust::Only { config, .. } => Some(Connector::Rustls(Arc::clone(config))),
        }
    }

    /// What to add to a TLS failure so the user knows the way out.
    fn hint(&self) -> &'static str {
        match self {
            Trust::PublicRoots => {
                "a server with a private CA or a self-signed certificate needs its CA trusted: NativeOptions::tls_ca, ackwire-peer --tls-ca FILE"
            }
            Trust::Only { .. } => {
                "checked against the certificates of tls_ca only (ackwire-peer --tls-ca)"
            }
        }
    }
}

/// One signalling connection. Dropping it closes the WebSocket cleanly (the room hears
/// `peer_left` at once).
#[derive(Debug)]
pub(crate) struct Socket {
    frames: mpsc::Sender<String>,
}

impl Socket {
    /// Connects to `ws_url` in a task, checking a `wss://` server against `trust`; events go
    /// to `events` tagged with `number`.
    pub(crate) fn open(
        ws_url: String,
        trust: Trust,
        number: u64,
        events: mpsc::UnboundedSender<(u64, SocketEvent)>,
    ) -> Socket {
        let (frames, outgoing) = mpsc::channel(OUTBOX);
        tokio::spawn(async move {
            if let Some(end) = run(&ws_url, &trust, outgoing, &events, number).await {
                let _ = events.send((number, end));
            }
        });
        Socket { frames }
    }

    /// Queues a frame; false if the queue is full (the frame is dropped).
    pub(crate) fn send(&self, text: String) -> bool {
        self.frames.try_send(text).is_ok()
    }
}

/// What TLS said, if a WebSocket's dial failed in its TLS handshake (the signalling server's,
/// a host's `wss://`).
pub(crate) fn tls_refusal(e: &tungstenite::Error) -> Option<String> {
    match e {
        // The handshake's refusal arrives as an I/O error wrapping rustls's.
        tungstenite::Error::Io(io) => io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .map(ToString::to_string),
        tungstenite::Error::Tls(tls) => Some(tls.to_string()),
        _ => None,
    }
}

/// Runs one connection; returns how it ended (its last event), or `None` if the driver let go
/// of it.
async fn run(
    ws_url: &str,
    trust: &Trust,
    mut outgoing: mpsc::Receiver<String>,
    events: &mpsc::UnboundedSender<(u64, SocketEvent)>,
    number: u64,
) -> Option<SocketEvent> {
    // Signalling frames are small and latency-bound: no Nagle delay on them, over TLS too.
    let disable_nagle = true;
    let connected = tokio_tungstenite::connect_async_tls_with_config(
        ws_url,
        None,
        disable_nagle,
        trust.connector(),
    )
    .await;
    let mut ws = match connected {
        Ok((ws, _)) => ws,
        Err(e) => {
            return Some(SocketEvent::Closed(match tls_refusal(&e) {
                Some(tls) => format!("connect {ws_url}: TLS: {tls} ({})", trust.hint()),
                None => format!("connect {ws_url}: {e}"),
            }));
        }
    };
    events.send((number, SocketEvent::Open)).ok()?;
    loop {
        tokio::select! {
            frame = outgoing.recv() => {
                let Some(text) = frame else {
                    let _ = ws.close(None).await;
                    return None;
                };
                if let Err(e) = ws.send(Message::text(text)).await {
                    return Some(SocketEvent::Closed(e.to_string()));
                }
            }
            message = ws.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    events.send((number, SocketEvent::Frame(text.to_string()))).ok()?;
                }
                Some(Ok(Message::Close(close))) => {
                    let reason = format!("closed by the server: {close:?}");
                    let replaced = close
                        .is_some_and(|c| u16::from(c.code) == ackwire_signalling::CLOSE_REPLACED);
                    return Some(match replaced {
                        true => SocketEvent::Replaced(reason),
                        false => SocketEvent::Closed(reason),
                    });
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Some(SocketEvent::Closed(e.to_string())),
                None => return Some(SocketEvent::Closed("stream ended".into())),
            },
        }
    }
}
