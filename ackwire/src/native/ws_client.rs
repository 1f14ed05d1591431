//! A native client that dials its host's WebSocket as a browser without WebRTC does
//! ([`NativeOptions::dial_websocket`](crate::NativeOptions::dial_websocket)): load generators
//! and tests stand in for such browsers with it, and it proves the host's side end to end.
//!
//! The member's [`Command::OpenWebSocket`](ackwire_room::member::Command::OpenWebSocket) is
//! carried out as the browser driver does: a new link token
//! ([`link_token`]) goes to the member first
//! ([`TransportEvent::LocalSignal`], which it relays to the host), then the connection to
//! `service.websocket_url(&token)`; [`TransportEvent::ChannelOpen`] once it is open, `Failed`
//! if it never opens (refused, unreachable), `ChannelClosed` when it closes after that.
//! Each connection runs in a task of its own ([`Conn`], the one the host's side uses), which
//! only reports to the room's task. A `wss://` host (one with a certificate of its own,
//! [`NativeOptions::certificate`](crate::NativeOptions::certificate)) is checked as a browser
//! checks it: its certificate must chain to the public roots, or to `tls_ca`'s certificates
//! ([`Trust::host_roots`](super::signalling::Trust::host_roots)), and hold the URL's name.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use ackwire_room::member::{Route, TransportEvent, TransportId};
use ackwire_signalling::{SignalData, WebTransportInfo};
use tokio::sync::mpsc;
use tokio_tungstenite::Connector;

use super::certificate::provider;
use super::sessions::{SessionEvent, Sessions, link_token};
use super::signalling::tls_refusal;
use super::websocket::{Conn, Pumped, REPORTS, config};

/// What the client's connections report (handed back to [`Sessions::handle`]).
#[derive(Debug)]
pub(crate) enum WsReport {
    /// For the member as it is (the token's signal, a dial that cannot start).
    Tell(TransportId, TransportEvent),
    /// A connection's task reported.
    Pumped(TransportId, Pumped),
}

/// A client's WebSocket connections to its host, by the member's transport.
#[derive(Debug)]
pub(crate) struct WsClient {
    conns: HashMap<TransportId, Conn>,
    /// How a `wss://` host's certificate is checked.
    tls: Arc<rustls::ClientConfig>,
    /// What the client has for the member itself, before anything its tasks report.
    told: VecDeque<(TransportId, TransportEvent)>,
    reports: mpsc::Sender<WsReport>,
    reports_rx: mpsc::Receiver<WsReport>,
    /// Packets dropped on a full queue or an ended connection.
    send_failures: u64,
}

impl WsClient {
    /// A client that checks a `wss://` host's certificate against `roots`.
    pub(crate) fn new(roots: Arc<rustls::RootCertStore>) -> Result<WsClient, rustls::Error> {
        let (reports, reports_rx) = mpsc::channel(REPORTS);
        let tls = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(WsClient {
            conns: HashMap::new(),
            tls: Arc::new(tls),
            told: VecDeque::new(),
            reports,
            reports_rx,
            send_failures: 0,
        })
    }

    /// The member's `OpenWebSocket`: the token to the member (before anything else of the
    /// connection), then the dial (inside a tokio runtime: it spawns the connection's task).
    pub(crate) fn open(&mut self, transport: TransportId, service: &WebTransportInfo) {
        let token = link_token();
        let Some(url) = service.websocket_url(&token) else {
            let why = "the host serves no WebSocket";
            self.told
                .push_back((transport, TransportEvent::Failed(why.into())));
            return;
        };
        let signal = SignalData::WebSocket { websocket: token };
        self.told
            .push_back((transport, TransportEvent::LocalSignal(signal)));
        let tls = Connector::Rustls(Arc::clone(&self.tls));
        let connect = async move {
            // Packets are small and latency-bound: no Nagle delay (over TLS too).
            let disable_nagle = true;
            let connecting = tokio_tungstenite::connect_async_tls_with_config(
                &url,
                Some(config()),
                disable_nagle,
                Some(tls),
            );
            connecting.await.map(|(ws, _)| ws).map_err(|e| match tls_refusal(&e) {
                Some(tls) => format!(
                    "WebSocket to {url}: TLS: {tls} (a host's certificate is checked against the public roots and NativeOptions::tls_ca)"
                ),
                None => format!("WebSocket to {url}: {e}"),
            })
        };
        let wrap: fn(TransportId, Pumped) -> WsReport = WsReport::Pumped;
        let conn = Conn::spawn(transport, connect, self.reports.clone(), wrap);
        // A transport is opened once; an old connection under its id would close here.
        self.conns.insert(transport, conn);
    }
}

impl Sessions for WsClient {
    type Report = WsReport;

    fn route(transport: TransportId) -> Route {
        Route::WebSocket(transport)
    }

    fn has(&self, transport: TransportId) -> bool {
        self.conns.contains_key(&transport)
    }

    fn send(&mut self, transport: TransportId, datagram: &[u8]) {
        if let Some(conn) = self.conns.get(&transport) {
            conn.send(transport, datagram, &mut self.send_failures);
        }
    }

    /// The connection closes (or its dial stops).
    fn close(&mut self, transport: TransportId) {
        self.conns.remove(&transport);
    }

    fn send_failures(&self) -> u64 {
        self.send_failures
    }

    async fn next(&mut self) -> WsReport {
        if let Some((transport, event)) = self.told.pop_front() {
            return WsReport::Tell(transport, event);
        }
        // The client holds a sender: the channel never closes while it lives.
        match self.reports_rx.recv().await {
            Some(report) => report,
            None => std::future::pending().await,
        }
    }

    fn try_next(&mut self) -> Option<WsReport> {
        if let Some((transport, event)) = self.told.pop_front() {
            return Some(WsReport::Tell(transport, event));
        }
        self.reports_rx.try_recv().ok()
    }

    /// Nothing of a connection the member closed.
    fn handle(&mut self, report: WsReport) -> Option<(TransportId, SessionEvent)> {
        match report {
            WsReport::Tell(transport, event) => Some((transport, SessionEvent::Transport(event))),
            WsReport::Pumped(transport, pumped) => {
                let event = self.conns.get_mut(&transport)?.take(transport, pumped)?;
                Some((transport, event))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use ackwire_signalling::webtransport::CertHash;
    use bytes::Bytes;

    use super::super::sessions::harness::PATIENCE;
    use super::super::signalling::Trust;
    use super::super::tokens::HOLD;
    use super::super::websocket::{WsHost, WsPlan};
    use super::*;

    /// A host on loopback and a client, and what each had for its member so far.
    struct Pair {
        host: WsHost,
        client: WsClient,
        at_host: VecDeque<(TransportId, SessionEvent)>,
        at_client: VecDeque<(TransportId, SessionEvent)>,
    }

    impl Pair {
        fn new() -> Pair {
            let bind = SocketAddr::from(([127, 0, 0, 1], 0));
            let plan = WsPlan::bind(bind, "127.0.0.1", None).expect("bind");
            Pair {
                host: WsHost::start(plan, HOLD).expect("listener"),
                client: WsClient::new(Trust::default().host_roots()).expect("a client"),
                at_host: VecDeque::new(),
                at_client: VecDeque::new(),
            }
        }

        /// The host's service, with its WebSocket at `websocket`.
        fn service(websocket: Option<String>) -> WebTransportInfo {
            WebTransportInfo {
                url: "https://127.0.0.1:1/ackwire".into(),
                cert_hashes: vec![CertHash([0; 32])],
                websocket,
            }
        }

        /// Runs both until `done` holds.
        async fn until(&mut self, mut done: impl FnMut(&Pair) -> bool) {
            let run = async {
                while !done(self) {
                    tokio::select! {
                        report = self.host.next() => {
                            if let Some(event) = self.host.handle(report) {
                                self.at_host.push_back(event);
                            }
                        }
                        report = self.client.next() => {
                            if let Some(event) = self.client.handle(report) {
                                self.at_client.push_back(event);
                            }
                        }
                    }
                }
            };
            tokio::time::timeout(PATIENCE, run)
                .await
                .expect("timed out");
        }

        /// The next thing the client has for its member.
        async fn at_client(&mut self) -> (TransportId, SessionEvent) {
            self.until(|p| !p.at_client.is_empty()).await;
            self.at_client.pop_front().unwrap()
        }

        /// The next thing the host has for its member.
        async fn at_host(&mut self) -> (TransportId, SessionEvent) {
            self.until(|p| !p.at_host.is_empty()).await;
            self.at_host.pop_front().unwrap()
        }

        /// The client's token for `transport`, as its first event.
        async fn token(&mut self, transport: TransportId) -> String {
            match self.at_client().await {
                (
                    t,
                    SessionEvent::Transport(TransportEvent::LocalSignal(SignalData::WebSocket {
                        websocket,
                    })),
                ) if t == transport => websocket,
                other => panic!("expected the token first, got {other:?}"),
            }
        }
    }

    fn is(
        event: &(TransportId, SessionEvent),
        transport: TransportId,
        what: &TransportEvent,
    ) -> bool {
        matches!(event, (t, SessionEvent::Transport(e)) if *t == transport && e == what)
    }

    fn packet(event: (TransportId, SessionEvent), transport: TransportId) -> Bytes {
        match event {
            (t, SessionEvent::Datagram(packet)) if t == transport => packet,
            other => panic!("expected a packet on {transport:?}, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_dial_tells_its_token_first_and_opens_on_the_connection_the_host_takes() {
        let mut p = Pair::new();
        let (ours, theirs) = (TransportId(1), TransportId(40));
        let service = Pair::service(Some(p.host.url().to_owned()));
        p.client.open(ours, &service);
        let token = p.token(ours).await;
        assert!(
            ackwire_signalling::webtransport::is_token(&token),
            "{token}"
        );
        p.host.accept(theirs, token);
        assert!(is(&p.at_client().await, ours, &TransportEvent::ChannelOpen));
        assert!(is(&p.at_host().await, theirs, &TransportEvent::ChannelOpen));

        for i in 0..20u8 {
            p.client.send(ours, &[i; 1184]);
            p.host.send(theirs, &[i; 3]);
        }
        for i in 0..20u8 {
            assert_eq!(packet(p.at_host().await, theirs)[..], [i; 1184]);
            assert_eq!(packet(p.at_client().await, ours)[..], [i; 3]);
        }
        assert_eq!(p.client.send_failures() + p.host.send_failures(), 0);

        // The client's close is the host's `ChannelClosed`; the client hears nothing more.
        p.client.close(ours);
        assert!(!p.client.has(ours));
        assert!(is(
            &p.at_host().await,
            theirs,
            &TransportEvent::ChannelClosed
        ));
        assert!(p.at_client.is_empty());
    }

    #[tokio::test]
    async fn a_connection_the_host_closes_is_told_closed_to_the_client() {
        let mut p = Pair::new();
        let (ours, theirs) = (TransportId(2), TransportId(41));
        p.client
            .open(ours, &Pair::service(Some(p.host.url().to_owned())));
        let token = p.token(ours).await;
        p.host.accept(theirs, token);
        assert!(is(&p.at_client().await, ours, &TransportEvent::ChannelOpen));
        assert!(is(&p.at_host().await, theirs, &TransportEvent::ChannelOpen));
        p.host.close(theirs);
        assert!(is(
            &p.at_client().await,
            ours,
            &TransportEvent::ChannelClosed
        ));
    }

    #[tokio::test]
    async fn a_dial_that_cannot_open_is_told_failed() {
        let mut p = Pair::new();
        // No WebSocket in the service: failed at once, no token.
        p.client.open(TransportId(3), &Pair::service(None));
        let event = p.at_client().await;
        assert!(
            matches!(
                &event,
                (
                    TransportId(3),
                    SessionEvent::Transport(TransportEvent::Failed(_))
                )
            ),
            "{event:?}"
        );
        // A path the host does not serve: refused in the handshake.
        let wrong = format!("{}/elsewhere", p.host.url());
        p.client.open(TransportId(4), &Pair::service(Some(wrong)));
        let _token = p.token(TransportId(4)).await;
        match p.at_client().await {
            (TransportId(4), SessionEvent::Transport(TransportEvent::Failed(reason))) => {
                assert!(reason.contains("404"), "{reason}");
            }
            other => panic!("expected a failure, got {other:?}"),
        }
        assert!(p.at_host.is_empty());
    }
}
