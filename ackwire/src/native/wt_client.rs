//! A native client that dials its host's WebTransport as a browser does
//! ([`NativeOptions::dial_webtransport`](crate::NativeOptions::dial_webtransport)): load
//! generators and tests stand in for browsers with it, so what a WebTransport player costs a
//! host can be measured next to WebRTC and UDP players (`cargo xtask bench host`).
//!
//! The member's [`Command::OpenWebTransport`](ackwire_room::member::Command::OpenWebTransport)
//! is carried out as the browser driver does: a token of 16 random bytes (32 lowercase hex
//! digits) goes to the member first ([`TransportEvent::LocalSignal`], which it relays to the
//! host), then the session to `service.session_url(&token)` pinning the service's certificate
//! hashes; [`TransportEvent::ChannelOpen`] once it is ready, `Failed` if it never is,
//! `ChannelClosed` when it closes. Each session has a client endpoint (a UDP socket) of its
//! own, as the hashes it pins are its service's (a host's rotation changes them). A service
//! without hashes is a host with a certificate of its own
//! ([`NativeOptions::certificate`](crate::NativeOptions::certificate)), checked as a browser
//! checks it: it must chain to the public roots, or to `tls_ca`'s certificates
//! ([`Trust::host_roots`](super::signalling::Trust::host_roots)), and hold the URL's name.
//!
//! A task per session dials and reads its datagrams; it only reports, through one channel the
//! room's task reads ([`WtClient::next`], then [`WtClient::handle`]), so the member is only
//! ever touched from the room's task. Sending is a synchronous call on the session's
//! connection ([`WtClient::send`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use ackwire_room::member::{Route, TransportEvent, TransportId};
use ackwire_signalling::{SignalData, WebTransportInfo};
use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use wtransport::config::{DnsLookupFuture, DnsResolver};
use wtransport::error::ConnectingError;
use wtransport::tls::Sha256Digest;
use wtransport::tls::client::build_default_tls_config;
use wtransport::{ClientConfig, Connection, Endpoint, VarInt};

use super::sessions::{SessionEvent, Sessions, link_token};
use super::webtransport::transport_config;

/// Dials of one session before its failure is told: a connection the host closed as it
/// opened is dialed again.
const DIALS: u32 = 3;

/// What a session's task reports.
enum Dialed {
    /// For the member as it is (the token's signal).
    Tell(TransportEvent),
    /// The session is ready.
    Open(Connection),
    /// It never was.
    Failed(String),
    /// A datagram on it.
    Datagram(Bytes),
    /// It closed.
    Closed(String),
}

/// A report of a session's task (handed back to [`WtClient::handle`]).
pub(crate) struct ClientReport(TransportId, Dialed);

impl std::fmt::Debug for ClientReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ClientReport").field(&self.0).finish()
    }
}

/// One session, from its dial to its close.
struct Slot {
    /// Once ready.
    connection: Option<Connection>,
    task: JoinHandle<()>,
}

/// A client's WebTransport sessions to its host, by the member's transport.
pub(crate) struct WtClient {
    /// The IP the sessions' sockets bind (port 0).
    bind: IpAddr,
    /// How a host's own certificate is checked (a service without hashes): TLS 1.3, `h3`.
    tls: Arc<rustls::ClientConfig>,
    sessions: HashMap<TransportId, Slot>,
    reports: mpsc::UnboundedSender<ClientReport>,
    reports_rx: mpsc::UnboundedReceiver<ClientReport>,
    /// Datagrams a session would not send (too large, closed).
    send_failures: u64,
}

impl std::fmt::Debug for WtClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WtClient")
            .field("bind", &self.bind)
            .field("sessions", &self.sessions.len())
            .finish_non_exhaustive()
    }
}

impl WtClient {
    /// A client whose sessions' sockets bind `bind` (the room's own IP: a loopback room
    /// stays on loopback), and that checks a host's own certificate against `roots`.
    pub(crate) fn new(bind: IpAddr, roots: Arc<rustls::RootCertStore>) -> WtClient {
        let (reports, reports_rx) = mpsc::unbounded_channel();
        WtClient {
            bind,
            tls: Arc::new(build_default_tls_config(roots, None)),
            sessions: HashMap::new(),
            reports,
            reports_rx,
            send_failures: 0,
        }
    }

    /// The member's `OpenWebTransport`: the token to the member (before anything else of
    /// the session), then the dial (inside a tokio runtime: it spawns the session's task).
    pub(crate) fn open(&mut self, transport: TransportId, service: &WebTransportInfo) {
        let token = link_token();
        let url = service.session_url(&token);
        let check = match &service.cert_hashes[..] {
            [] => Check::Roots(Arc::clone(&self.tls)),
            hashes => Check::Hashes(hashes.iter().map(|h| Sha256Digest::new(h.0)).collect()),
        };
        let reports = self.reports.clone();
        let signal = SignalData::WebTransport {
            webtransport: token,
        };
        let _ = reports.send(ClientReport(
            transport,
            Dialed::Tell(TransportEvent::LocalSignal(signal)),
        ));
        let bind = SocketAddr::new(self.bind, 0);
        let task = tokio::spawn(dial(transport, bind, url, check, reports));
        if let Some(old) = self.sessions.insert(
            transport,
            Slot {
                connection: None,
                task,
            },
        ) {
            close(old);
        }
    }
}

impl Sessions for WtClient {
    type Report = ClientReport;

    fn route(transport: TransportId) -> Route {
        Route::WebTransport(transport)
    }

    /// Whether `transport` is one of this client's sessions.
    fn has(&self, transport: TransportId) -> bool {
        self.sessions.contains_key(&transport)
    }

    /// Datagrams the sessions would not send.
    fn send_failures(&self) -> u64 {
        self.send_failures
    }

    /// The member's `CloseTransport`: the session closes (or its dial stops), and nothing
    /// more of it is told.
    fn close(&mut self, transport: TransportId) {
        if let Some(slot) = self.sessions.remove(&transport) {
            close(slot);
        }
    }

    /// Sends `datagram` on `transport`'s session; one it would not send (too large for the
    /// path, the session gone) is dropped and counted, as one lost on the way would be.
    fn send(&mut self, transport: TransportId, datagram: &[u8]) {
        if let Some(connection) = self
            .sessions
            .get(&transport)
            .and_then(|s| s.connection.as_ref())
            && let Err(e) = connection.send_datagram(datagram)
        {
            self.send_failures += 1;
            tracing::debug!(?transport, len = datagram.len(), error = %e, "WebTransport datagram not sent");
        }
    }

    /// The next report of the sessions' tasks (cancel-safe).
    async fn next(&mut self) -> ClientReport {
        // The client holds a sender: the channel never closes while it lives.
        match self.reports_rx.recv().await {
            Some(report) => report,
            None => std::future::pending().await,
        }
    }

    /// A report already waiting, if any.
    fn try_next(&mut self) -> Option<ClientReport> {
        self.reports_rx.try_recv().ok()
    }

    /// Takes in a report: what it has for the member, if anything (nothing of a session the
    /// member closed).
    fn handle(&mut self, report: ClientReport) -> Option<(TransportId, SessionEvent)> {
        let ClientReport(transport, dialed) = report;
        let slot = self.sessions.get_mut(&transport)?;
        let event = match dialed {
            Dialed::Tell(event) => SessionEvent::Transport(event),
            Dialed::Open(connection) => {
                slot.connection = Some(connection);
                SessionEvent::Transport(TransportEvent::ChannelOpen)
            }
            Dialed::Failed(reason) => SessionEvent::Transport(TransportEvent::Failed(reason)),
            Dialed::Datagram(payload) => SessionEvent::Datagram(payload),
            Dialed::Closed(reason) => {
                tracing::debug!(?transport, %reason, "WebTransport session closed");
                slot.connection = None;
                SessionEvent::Transport(TransportEvent::ChannelClosed)
            }
        };
        Some((transport, event))
    }
}

impl Drop for WtClient {
    /// Every session closes now.
    fn drop(&mut self) {
        for (_, slot) in self.sessions.drain() {
            close(slot);
        }
    }
}

fn close(slot: Slot) {
    slot.task.abort();
    if let Some(connection) = slot.connection {
        connection.close(VarInt::from_u32(0), b"closed");
    }
}

/// How a session checks its host's certificate.
enum Check {
    /// Its SHA-256 is one of these: a self-signed certificate the host published.
    Hashes(Vec<Sha256Digest>),
    /// It chains to a root of this configuration's, and holds the URL's name: the host's
    /// own.
    Roots(Arc<rustls::ClientConfig>),
}

/// Resolves a host's name to an address of the family of the socket that dials it
/// (wtransport's own resolver takes the first address, which may be IPv6 for a socket bound
/// to an IPv4 address).
#[derive(Debug)]
pub(super) struct SameFamily {
    /// Whether the dialing socket is bound to an IPv4 address.
    pub(super) ipv4: bool,
}

impl DnsResolver for SameFamily {
    fn resolve(&self, host: &str) -> Pin<Box<dyn DnsLookupFuture>> {
        let (host, ipv4) = (host.to_owned(), self.ipv4);
        Box::pin(async move {
            let mut found = tokio::net::lookup_host(host).await?;
            Ok(found.find(|a| a.is_ipv4() == ipv4))
        })
    }
}

/// Dials `url` from a socket at `bind`, checking the host's certificate by `check`, then
/// reads the session's datagrams until it closes.
async fn dial(
    transport: TransportId,
    bind: SocketAddr,
    url: String,
    check: Check,
    reports: mpsc::UnboundedSender<ClientReport>,
) {
    let report = |dialed| reports.send(ClientReport(transport, dialed)).is_ok();
    let quic = match transport_config() {
        Ok(quic) => quic,
        Err(e) => {
            report(Dialed::Failed(e.to_string()));
            return;
        }
    };
    let builder = ClientConfig::builder().with_bind_address(bind);
    // What to add to a failure so the user knows where the host's certificate was checked.
    let (builder, checked) = match check {
        Check::Hashes(hashes) => (builder.with_server_certificate_hashes(hashes), ""),
        Check::Roots(tls) => (
            builder.with_custom_tls((*tls).clone()),
            " (a host's own certificate is checked against the public roots and NativeOptions::tls_ca)",
        ),
    };
    let ipv4 = bind.is_ipv4();
    let mut config = builder.dns_resolver(SameFamily { ipv4 }).build();
    config.quic_config_mut().transport_config(Arc::new(quic));
    let endpoint = match Endpoint::client(config) {
        Ok(endpoint) => endpoint,
        Err(e) => {
            report(Dialed::Failed(format!("WebTransport client endpoint: {e}")));
            return;
        }
    };
    // A host on the published wtransport 0.7.2 closes a few connections in 256 whose SETTINGS
    // come in two packets around the CONNECT (H3_FRAME_UNEXPECTED, before the request is
    // seen: the token is still free; third_party/wtransport fixes it for ours): dialed again
    // at once, within the member's bound, as that says nothing of the path.
    let mut tries = 0;
    let connection = loop {
        tries += 1;
        match endpoint.connect(&url).await {
            Ok(connection) => break connection,
            Err(ConnectingError::ConnectionError(e)) if tries < DIALS => {
                tracing::debug!(?transport, error = %e, "WebTransport session closed as it opened; dialing again");
            }
            Err(e) => {
                report(Dialed::Failed(format!(
                    "WebTransport session to {url}: {e}{checked}"
                )));
                return;
            }
        }
    };
    if !report(Dialed::Open(connection.clone())) {
        connection.close(VarInt::from_u32(0), b"closed");
        return;
    }
    loop {
        match connection.receive_datagram().await {
            Ok(datagram) => {
                if !report(Dialed::Datagram(datagram.payload())) {
                    connection.close(VarInt::from_u32(0), b"closed");
                    return;
                }
            }
            Err(e) => {
                report(Dialed::Closed(e.to_string()));
                return;
            }
        }
    }
}
