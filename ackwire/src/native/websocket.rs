//! A host's WebSocket: the last resort of a host room's clients that reach the host neither
//! over WebTransport nor over WebRTC (a browser without WebRTC such as WebKitGTK, a network
//! that blocks UDP). Every client's connection on one TCP listener, beside the host's
//! WebTransport ([`webtransport`](super::webtransport)), whose service publishes its URL
//! (`ws://<ip>:<port>/ackwire`: [`WsPlan::url`]).
//!
//! A host with a certificate browsers trust
//! ([`NativeOptions::certificate`](crate::NativeOptions::certificate),
//! [`certificate`](super::certificate)) serves TLS with it (rustls, in front of the
//! upgrade, within the same handshake time) and publishes `wss://<name>:<port>/ackwire`: a
//! page served over `https://` may open only that. Each handshake gets the certificate
//! current then, so a renewal reaches new connections as it reaches new WebTransport
//! sessions.
//!
//! The core's packets ride one binary message each (at most
//! [`WEBTRANSPORT_DATAGRAM`](ackwire_room::member::WEBTRANSPORT_DATAGRAM) bytes: the member
//! sizes a WebSocket link as a WebTransport one). TCP delivers them in order and resends
//! what it loses, so a lost segment holds back the packets behind it; the core runs as over
//! any other link, resending reliable messages itself. A text message or one over
//! [`MAX_MESSAGE`] closes that connection (and only it).
//!
//! The member matches a connection to its link by the link's token, as it does a
//! WebTransport session, by the same rules ([`tokens`](super::tokens)): the client sends it
//! in the connection's path (`/ackwire?token=…`) and over signalling
//! ([`Command::AcceptWebSocket`](ackwire_room::member::Command::AcceptWebSocket)). Either
//! may come first: a connection whose token the member has not named yet is held, unread,
//! for up to the hold (its packets wait in TCP's buffers), then closed; a connection whose
//! token already has one is closed at once. A request on another path is refused in the
//! handshake (HTTP 404), one without a well-formed token too (400).
//!
//! The listener's task and a handshake task per incoming connection only report, through
//! one channel the room's task reads ([`Sessions::next`], then [`Sessions::handle`]): the
//! member is only ever touched from the room's task, and every decision is made there. A
//! taken connection gets a task of its own ([`Conn`], shared with the native client of
//! [`ws_client`](super::ws_client)) that reads its messages into that channel and writes
//! what the room's task queued. Sending never blocks the room's task: a packet that finds
//! the connection's queue full is dropped and counted, as a datagram lost on the way would
//! be (the core resends reliable data itself). A connection whose peer stops reading fills
//! its queue; a room that stops reading (the game is behind on its events) fills the
//! channel, and the connections' tasks stop reading their sockets: TCP holds their senders
//! back.

use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ackwire_room::member::{Route, TransportEvent, TransportId};
use ackwire_signalling::webtransport::session_token;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio_rustls::TlsAcceptor;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::{
    Callback, ErrorResponse, Request, Response,
};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message, Utf8Bytes};

use super::certificate::{HostTls, Service};
use super::sessions::{SessionEvent, Sessions};
use super::tokens::{Arrival, Expiry, Tokens};

/// The path of the published URL (a connection's own adds `?token=…`).
const PATH: &str = "/ackwire";

/// The largest message taken (a core packet is at most 1,184 bytes); a larger one closes the
/// connection.
pub(super) const MAX_MESSAGE: usize = 2048;

/// Packets queued for a connection's writer; one that finds it full is dropped and counted.
/// 256 packets are about 8 s of a link's 30 packets a second, or a burst of 300 KB.
const QUEUE: usize = 256;

/// Reports waiting for the room's task, from every connection together; beyond, the
/// connections' tasks wait (and stop reading their sockets).
pub(super) const REPORTS: usize = 1024;

/// A connection's read buffer: a few packets (the default 128 KiB would cost a host of
/// hundreds of clients tens of MB).
const READ_BUFFER: usize = 4 << 10;

/// Bytes a connection's writer gathers before it writes; it also writes whenever its queue
/// is empty, so this only batches a burst into fewer writes.
const WRITE_BUFFER: usize = 4 << 10;

/// An incoming connection that has not finished its HTTP upgrade (and its TLS handshake
/// before it, with the host's own certificate) after this long is dropped.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// A close frame gets this long to go out before the connection is dropped anyway.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The listener waits this long after a failed accept (out of file descriptors, say) before
/// the next, rather than spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Both ends' limits: small buffers, messages of at most [`MAX_MESSAGE`].
pub(super) fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(WRITE_BUFFER)
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE))
}

/// The host's WebSocket before the runtime runs it: the bound listener and the URL the host
/// publishes. Made before the member (which publishes the URL in its join); [`WsHost::start`]
/// runs it.
pub(crate) struct WsPlan {
    listener: std::net::TcpListener,
    url: String,
    /// With the host's own certificate: TLS in front of every connection.
    tls: Option<TlsAcceptor>,
}

impl std::fmt::Debug for WsPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsPlan")
            .field("listener", &self.listener)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl WsPlan {
    /// Binds the listener at `bind` (port 0: any), for clients that dial `host` (the host of
    /// the WebTransport URL: an IP, or the name of `own`); with `own`, the host's own
    /// certificate, they dial `wss://`.
    pub(crate) fn bind(
        bind: SocketAddr,
        host: &str,
        own: Option<&HostTls>,
    ) -> std::io::Result<WsPlan> {
        let tls = match own {
            Some(own) => {
                let config = own
                    .server_config(Service::WebSocket)
                    .map_err(std::io::Error::other)?;
                Some(TlsAcceptor::from(Arc::new(config)))
            }
            None => None,
        };
        let listener = std::net::TcpListener::bind(bind)?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let scheme = if tls.is_some() { "wss" } else { "ws" };
        let url = format!("{scheme}://{host}:{port}{PATH}");
        Ok(WsPlan { listener, url, tls })
    }

    /// What the host publishes: `ws://<ip>:<port>/ackwire`, or `wss://<name>:<port>/ackwire`.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }
}

/// What a connection's task reports.
#[derive(Debug)]
pub(super) enum Pumped {
    /// The connection is open (a client's dial succeeded; a host's taken connection runs).
    Open,
    /// It never opened.
    Failed(String),
    /// A binary message arrived.
    Datagram(Bytes),
    /// It closed, or was closed for breaking the rules.
    Closed(String),
}

/// Where a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Opening,
    Open,
    /// Failed or closed (told); the member closes the transport.
    Ended,
}

/// The room task's handle on one connection: the queue its writer takes packets from.
/// Dropping it closes the connection (with a close frame, if it goes out within a second).
#[derive(Debug)]
pub(super) struct Conn {
    queue: mpsc::Sender<Bytes>,
    state: State,
    /// Dropped with the connection: its task says goodbye and ends.
    _stop: oneshot::Sender<()>,
}

impl Conn {
    /// A connection for `transport`, which `connect` opens (a client's dial; a host's taken
    /// connection at once), run by a task of its own (inside a tokio runtime) that reports
    /// to `reports` through `wrap`.
    pub(super) fn spawn<S, R>(
        transport: TransportId,
        connect: impl Future<Output = Result<WebSocketStream<S>, String>> + Send + 'static,
        reports: mpsc::Sender<R>,
        wrap: fn(TransportId, Pumped) -> R,
    ) -> Conn
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        R: Send + 'static,
    {
        let (queue, queued) = mpsc::channel(QUEUE);
        let (stop, stopped) = oneshot::channel();
        let reporter = Reporter {
            transport,
            reports,
            wrap,
        };
        tokio::spawn(run(connect, queued, stopped, reporter));
        Conn {
            queue,
            state: State::Opening,
            _stop: stop,
        }
    }

    /// Queues `packet` on an open connection, `transport`'s (a host's or a native client's);
    /// one that finds the queue full (the peer reads slower than we send) or the connection
    /// just ended is dropped and counted in `failures`. A connection not open takes nothing
    /// and says nothing (the member sends only on open ones).
    pub(super) fn send(&self, transport: TransportId, packet: &[u8], failures: &mut u64) {
        if self.state != State::Open {
            return;
        }
        if let Err(e) = self.queue.try_send(Bytes::copy_from_slice(packet)) {
            *failures += 1;
            let why = match e {
                mpsc::error::TrySendError::Full(_) => "its queue is full",
                mpsc::error::TrySendError::Closed(_) => "it ended",
            };
            tracing::trace!(?transport, why, "WebSocket packet dropped");
        }
    }

    /// Takes in what the connection's task reported: what it has for the member, if
    /// anything.
    pub(super) fn take(&mut self, transport: TransportId, pumped: Pumped) -> Option<SessionEvent> {
        let event = match (self.state, pumped) {
            (State::Opening, Pumped::Open) => {
                self.state = State::Open;
                SessionEvent::Transport(TransportEvent::ChannelOpen)
            }
            (State::Opening, Pumped::Failed(reason)) => {
                self.state = State::Ended;
                SessionEvent::Transport(TransportEvent::Failed(reason))
            }
            (State::Open, Pumped::Datagram(packet)) => SessionEvent::Datagram(packet),
            (State::Open, Pumped::Closed(reason)) => {
                tracing::debug!(?transport, %reason, "WebSocket closed");
                self.state = State::Ended;
                SessionEvent::Transport(TransportEvent::ChannelClosed)
            }
            _ => return None,
        };
        Some(event)
    }
}

/// A connection task's way to the room's task.
struct Reporter<R> {
    transport: TransportId,
    reports: mpsc::Sender<R>,
    wrap: fn(TransportId, Pumped) -> R,
}

impl<R> Reporter<R> {
    /// Reports `pumped`, waiting for room in the channel; `false` once the room's side is
    /// gone.
    async fn report(&self, pumped: Pumped) -> bool {
        let report = (self.wrap)(self.transport, pumped);
        self.reports.send(report).await.is_ok()
    }
}

/// A connection's task: opens it (or stops, if its handle is dropped first), then carries
/// messages both ways until it ends.
async fn run<S, R>(
    connect: impl Future<Output = Result<WebSocketStream<S>, String>>,
    queued: mpsc::Receiver<Bytes>,
    mut stopped: oneshot::Receiver<()>,
    reporter: Reporter<R>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let connected = tokio::select! {
        biased;
        _ = &mut stopped => return,
        connected = connect => connected,
    };
    match connected {
        Ok(ws) => {
            if reporter.report(Pumped::Open).await {
                pump(ws, queued, stopped, &reporter).await;
            }
        }
        Err(reason) => {
            reporter.report(Pumped::Failed(reason)).await;
        }
    }
}

/// How a connection's messages stopped.
enum End {
    /// Its handle was dropped (the member closed the transport, or the room left), or the
    /// room's task is gone.
    Dropped,
    /// The peer closed it, or it failed.
    Lost(String),
    /// The peer broke the rules: closed with this code and reason.
    Refused(CloseCode, &'static str),
}

/// Carries binary messages both ways on `ws` until it ends; then says why to the peer (a
/// close frame) and to the room's task (unless the room ended it).
async fn pump<S, R>(
    ws: WebSocketStream<S>,
    mut queued: mpsc::Receiver<Bytes>,
    mut stopped: oneshot::Receiver<()>,
    reporter: &Reporter<R>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut sink, mut stream) = ws.split();
    let end = {
        let read = async {
            loop {
                let message = match stream.next().await {
                    Some(Ok(message)) => message,
                    Some(Err(tungstenite::Error::Capacity(_))) => {
                        return End::Refused(CloseCode::Size, "a message over 2 KiB");
                    }
                    Some(Err(e)) => return End::Lost(e.to_string()),
                    None => return End::Lost("the connection ended".into()),
                };
                match message {
                    Message::Binary(packet) => {
                        if !reporter.report(Pumped::Datagram(packet)).await {
                            return End::Dropped;
                        }
                    }
                    Message::Text(_) => {
                        return End::Refused(CloseCode::Unsupported, "a text message");
                    }
                    Message::Close(frame) => {
                        return End::Lost(match frame {
                            Some(frame) => format!("closed by the other end: {frame}"),
                            None => "closed by the other end".into(),
                        });
                    }
                    // Pings are answered by tungstenite as it reads.
                    Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
                }
            }
        };
        let write = async {
            // A burst goes out in as few writes as the buffer allows.
            while let Some(packet) = queued.recv().await {
                sink.feed(Message::Binary(packet)).await?;
                while let Ok(packet) = queued.try_recv() {
                    sink.feed(Message::Binary(packet)).await?;
                }
                sink.flush().await?;
            }
            Ok::<(), tungstenite::Error>(())
        };
        tokio::select! {
            biased;
            _ = &mut stopped => End::Dropped,
            end = read => end,
            written = write => match written {
                Ok(()) => End::Dropped,
                Err(e) => End::Lost(e.to_string()),
            },
        }
    };
    let goodbye = match end {
        End::Dropped => Some((CloseCode::Normal, "closed")),
        End::Refused(code, reason) => {
            tracing::debug!(transport = ?reporter.transport, reason, "WebSocket refused");
            reporter.report(Pumped::Closed(reason.into())).await;
            Some((code, reason))
        }
        End::Lost(reason) => {
            reporter.report(Pumped::Closed(reason)).await;
            None
        }
    };
    let closing = async {
        match goodbye {
            Some((code, reason)) => {
                let frame = CloseFrame {
                    code,
                    reason: Utf8Bytes::from_static(reason),
                };
                sink.send(Message::Close(Some(frame))).await
            }
            // The peer's close frame is answered (or the connection is gone).
            None => sink.close().await,
        }
    };
    let _ = tokio::time::timeout(CLOSE_GRACE, closing).await;
}

/// Closes a connection the host does not take, with `reason`, in a task of its own.
fn turn_away<S>(ws: WebSocketStream<S>, reason: &'static str)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    tracing::debug!(reason, "WebSocket turned away");
    tokio::spawn(async move {
        let mut ws = ws;
        let frame = CloseFrame {
            code: CloseCode::Policy,
            reason: Utf8Bytes::from_static(reason),
        };
        let _ = tokio::time::timeout(CLOSE_GRACE, ws.close(Some(frame))).await;
    });
}

/// What the listener's tasks report to the room's task (handed back to
/// [`Sessions::handle`]).
pub(crate) struct Report(Happened);

impl std::fmt::Debug for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Report")
    }
}

enum Happened {
    /// A connection with a well-formed token finished its handshake.
    Arrived { token: String, ws: Incoming },
    /// A held connection's hold is over.
    Expired(Expiry),
    /// A taken connection's task reported.
    Pumped(TransportId, Pumped),
    /// An event the host itself has for the member.
    Tell(TransportId, TransportEvent),
}

/// A connection that came, held until its token is named.
type Incoming = Box<WebSocketStream<Box<dyn Stream>>>;

/// A connection's bytes: plain TCP, or TLS over it.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<S: AsyncRead + AsyncWrite + Send + Unpin> Stream for S {}

/// The host's WebSocket listener: connections in, matched to the member's transports by
/// token; their events and packets out through [`Sessions::next`] and [`Sessions::handle`].
pub(crate) struct WsHost {
    local: SocketAddr,
    url: String,
    tokens: Tokens<Conn, Incoming>,
    /// What the host has for the member itself, before anything its tasks report.
    told: VecDeque<(TransportId, TransportEvent)>,
    reports: mpsc::Sender<Report>,
    reports_rx: mpsc::Receiver<Report>,
    /// Packets dropped on a full queue or an ended connection.
    send_failures: u64,
    /// Dropped with the host: the listener's task ends (and the listener closes).
    _stop: oneshot::Sender<()>,
}

impl std::fmt::Debug for WsHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsHost")
            .field("local", &self.local)
            .field("url", &self.url)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl WsHost {
    /// Listens on the plan's listener (inside a tokio runtime). A connection whose token the
    /// member has not named is held for `hold` ([`HOLD`](super::tokens::HOLD) in a room).
    pub(crate) fn start(plan: WsPlan, hold: Duration) -> std::io::Result<WsHost> {
        let listener = TcpListener::from_std(plan.listener)?;
        let local = listener.local_addr()?;
        let (reports, reports_rx) = mpsc::channel(REPORTS);
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(listen(listener, plan.tls, reports.clone(), stopped));
        Ok(WsHost {
            local,
            url: plan.url,
            tokens: Tokens::new(hold),
            told: VecDeque::new(),
            reports,
            reports_rx,
            send_failures: 0,
            _stop: stop,
        })
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// What the host publishes.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The member's [`Command::AcceptWebSocket`]: the connection that shows `token` is
    /// `transport`, now if it came already, else when it comes.
    ///
    /// [`Command::AcceptWebSocket`]: ackwire_room::member::Command::AcceptWebSocket
    pub(crate) fn accept(&mut self, transport: TransportId, token: String) {
        let reports = &self.reports;
        if !self
            .tokens
            .name(transport, token, |ws| take(transport, ws, reports))
        {
            let why = "not a WebSocket token, or one already taken";
            self.told
                .push_back((transport, TransportEvent::Failed(why.into())));
        }
    }

    /// A connection showed `token`: taken, held or turned away ([`Tokens::arrived`]).
    fn arrived(&mut self, token: String, ws: Incoming) {
        let reports = &self.reports;
        match self
            .tokens
            .arrived(token, ws, |transport, ws| take(transport, ws, reports))
        {
            Arrival::Taken => {}
            Arrival::Held(expiry) => {
                let reports = self.reports.clone();
                tokio::spawn(async move {
                    let expired = Report(Happened::Expired(expiry.due().await));
                    let _ = reports.send(expired).await;
                });
            }
            Arrival::Refused(ws, why) => turn_away(*ws, why),
        }
    }
}

/// Runs `ws` as `transport`'s connection.
fn take(transport: TransportId, ws: Incoming, reports: &mpsc::Sender<Report>) -> Conn {
    let wrap: fn(TransportId, Pumped) -> Report =
        |transport, pumped| Report(Happened::Pumped(transport, pumped));
    Conn::spawn(
        transport,
        std::future::ready(Ok(*ws)),
        reports.clone(),
        wrap,
    )
}

impl Sessions for WsHost {
    type Report = Report;

    fn route(transport: TransportId) -> Route {
        Route::WebSocket(transport)
    }

    fn has(&self, transport: TransportId) -> bool {
        self.tokens.has(transport)
    }

    fn send(&mut self, transport: TransportId, datagram: &[u8]) {
        if let Some(conn) = self.tokens.session(transport) {
            conn.send(transport, datagram, &mut self.send_failures);
        }
    }

    /// The connection closes (or is turned away if it comes), and its token is forgotten.
    fn close(&mut self, transport: TransportId) {
        // Dropping the connection's handle closes it.
        self.tokens.close(transport);
    }

    fn send_failures(&self) -> u64 {
        self.send_failures
    }

    async fn next(&mut self) -> Report {
        if let Some((transport, event)) = self.told.pop_front() {
            return Report(Happened::Tell(transport, event));
        }
        // The host holds a sender: the channel never closes while it lives.
        match self.reports_rx.recv().await {
            Some(report) => report,
            None => std::future::pending().await,
        }
    }

    fn try_next(&mut self) -> Option<Report> {
        if let Some((transport, event)) = self.told.pop_front() {
            return Some(Report(Happened::Tell(transport, event)));
        }
        self.reports_rx.try_recv().ok()
    }

    fn handle(&mut self, report: Report) -> Option<(TransportId, SessionEvent)> {
        match report.0 {
            Happened::Arrived { token, ws } => {
                self.arrived(token, ws);
                None
            }
            Happened::Expired(expiry) => {
                if let Some(ws) = self.tokens.expired(expiry) {
                    turn_away(*ws, "its token was never named");
                }
                None
            }
            Happened::Pumped(transport, pumped) => {
                let conn = self.tokens.session_mut(transport)?;
                Some((transport, conn.take(transport, pumped)?))
            }
            Happened::Tell(transport, event) => Some((transport, SessionEvent::Transport(event))),
        }
    }
}

/// Takes every incoming connection to its handshake (through `tls`, with the host's own
/// certificate), until the host is dropped.
async fn listen(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    reports: mpsc::Sender<Report>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            biased;
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, from)) => {
                    tokio::spawn(handshake(stream, from, tls.clone(), reports.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "host WebSocket: accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
}

/// The token of a request on the published path, or the HTTP refusal of any other: 404 on
/// another path, 400 without a well-formed token.
fn admit(request: &Request) -> Result<String, (StatusCode, &'static str)> {
    let uri = request.uri();
    if uri.path() != PATH {
        return Err((StatusCode::NOT_FOUND, "no such path"));
    }
    let path = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
    session_token(path).map(str::to_owned).ok_or((
        StatusCode::BAD_REQUEST,
        "no link token (?token=<32 hex digits>)",
    ))
}

/// The handshake's check ([`admit`]): keeps the token of an admitted request.
struct Admission<'a>(&'a mut Option<String>);

impl Callback for Admission<'_> {
    fn on_request(self, request: &Request, response: Response) -> Result<Response, ErrorResponse> {
        match admit(request) {
            Ok(token) => {
                *self.0 = Some(token);
                Ok(response)
            }
            Err((status, why)) => {
                let mut refusal = ErrorResponse::new(Some(why.to_owned()));
                *refusal.status_mut() = status;
                Err(refusal)
            }
        }
    }
}

/// One incoming connection's TLS handshake (with `tls`) and HTTP upgrade; a request refused
/// by [`admit`] ends here, an admitted one goes to the room's task.
async fn handshake(
    stream: TcpStream,
    from: SocketAddr,
    tls: Option<TlsAcceptor>,
    reports: mpsc::Sender<Report>,
) {
    // Packets are small and latency-bound: no Nagle delay.
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(%from, error = %e, "WebSocket: TCP_NODELAY not set");
    }
    let mut token = None;
    let upgrade = async {
        let stream: Box<dyn Stream> = match tls {
            Some(tls) => Box::new(tls.accept(stream).await.map_err(|e| format!("TLS: {e}"))?),
            None => Box::new(stream),
        };
        let admission = Admission(&mut token);
        tokio_tungstenite::accept_hdr_async_with_config(stream, admission, Some(config()))
            .await
            .map_err(|e| e.to_string())
    };
    let ws = match tokio::time::timeout(HANDSHAKE, upgrade).await {
        Ok(Ok(ws)) => ws,
        Ok(Err(e)) => {
            tracing::debug!(%from, error = %e, "WebSocket handshake refused or failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%from, "WebSocket handshake timed out");
            return;
        }
    };
    if let Some(token) = token {
        let ws = Box::new(ws);
        let _ = reports.send(Report(Happened::Arrived { token, ws })).await;
    }
}

#[cfg(test)]
mod tests {
    use rustls::pki_types::CertificateDer;
    use tokio_tungstenite::MaybeTlsStream;

    use super::super::certificate::tests::write_self_signed;
    use super::super::sessions::harness::{Harness, Host};
    use super::super::tokens::HOLD;
    use super::*;
    use crate::config::HostCertificate;

    /// The largest core packet on a WebSocket link.
    const LARGEST: usize = ackwire_room::member::WEBTRANSPORT_DATAGRAM;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";
    const OTHER: &str = "1123456789abcdef0123456789abcdef";

    type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

    impl Host for WsHost {
        fn held(&self) -> usize {
            self.tokens.held()
        }
    }

    /// A host on loopback whose connections are held for `hold`.
    fn harness(hold: Duration) -> Harness<WsHost> {
        let bind = SocketAddr::from(([127, 0, 0, 1], 0));
        let plan = WsPlan::bind(bind, "127.0.0.1", None).expect("bind");
        Harness::new(WsHost::start(plan, hold).expect("listener"))
    }

    impl Harness<WsHost> {
        /// A client dialling the host's URL with `query` after it (`?token=…`).
        async fn dial_query(&mut self, query: &str) -> Result<Client, tungstenite::Error> {
            let url = format!("{}{query}", self.host.url());
            self.run(tokio_tungstenite::connect_async(url))
                .await
                .map(|(ws, _)| ws)
        }

        /// A client dialling the host with `token`, once it is open.
        async fn dial(&mut self, token: &str) -> Client {
            self.dial_query(&format!("?token={token}"))
                .await
                .expect("the connection opens")
        }

        /// A client with `token`, taken as `transport`, once the member heard it open.
        async fn open(&mut self, transport: TransportId, token: &str) -> Client {
            self.host.accept(transport, token.into());
            let client = self.dial(token).await;
            self.assert_open(transport).await;
            client
        }

        /// The next message `client` reads, while the host runs.
        async fn read(&mut self, client: &mut Client) -> Option<Message> {
            self.run(client.next()).await.map(|m| m.expect("a message"))
        }
    }

    /// The close frame a turned-away or closed client reads, then the end of its stream.
    async fn close_code(h: &mut Harness<WsHost>, client: &mut Client) -> CloseCode {
        match h.read(client).await {
            Some(Message::Close(Some(frame))) => frame.code,
            other => panic!("expected a close frame, got {other:?}"),
        }
    }

    /// Packets of `size` bytes, each different, numbered by their first bytes.
    fn packets(n: usize, size: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut packet = vec![(i % 251) as u8; size];
                packet[..2].copy_from_slice(&(i as u16).to_be_bytes());
                packet
            })
            .collect()
    }

    /// `packets` each way on `transport`, checked in order and byte for byte.
    async fn exchange(
        h: &mut Harness<WsHost>,
        transport: TransportId,
        client: &mut Client,
        n: usize,
    ) {
        let up = packets(n, LARGEST);
        for packet in &up {
            let message = Message::binary(packet.clone());
            h.run(client.send(message)).await.expect("the client sends");
        }
        for packet in &up {
            assert_eq!(h.packet(transport).await[..], packet[..]);
        }
        let down = packets(n, 100);
        for packet in &down {
            h.host.send(transport, packet);
        }
        assert_eq!(h.host.send_failures(), 0);
        for packet in &down {
            match h.read(client).await {
                Some(Message::Binary(got)) => assert_eq!(got[..], packet[..]),
                other => panic!("expected a packet, got {other:?}"),
            }
        }
    }

    #[test]
    fn the_published_url_names_the_address_clients_reach_and_the_bound_port() {
        let bind = SocketAddr::from(([127, 0, 0, 1], 0));
        let plan = WsPlan::bind(bind, "203.0.113.7", None).unwrap();
        let port = plan.listener.local_addr().unwrap().port();
        assert_eq!(plan.url(), format!("ws://203.0.113.7:{port}/ackwire"));
        let v6 = WsPlan::bind("[::1]:0".parse().unwrap(), "[::1]", None);
        // A machine without IPv6 has nothing to check.
        if let Ok(v6) = v6 {
            let port = v6.listener.local_addr().unwrap().port();
            assert_eq!(v6.url(), format!("ws://[::1]:{port}/ackwire"));
        }
    }

    #[tokio::test]
    async fn a_host_with_its_own_certificate_serves_wss_with_the_one_current_at_each_handshake() {
        let dir = tempfile::tempdir().unwrap();
        let (chain, key, first) = write_self_signed(dir.path(), "host", &["localhost"]);
        let own = HostTls::load(&HostCertificate::new(chain, key, "localhost")).unwrap();
        let bind = SocketAddr::from(([127, 0, 0, 1], 0));
        let plan = WsPlan::bind(bind, own.name(), Some(&own)).unwrap();
        let port = plan.listener.local_addr().unwrap().port();
        assert_eq!(plan.url(), format!("wss://localhost:{port}/ackwire"));
        let mut h = Harness::new(WsHost::start(plan, HOLD).unwrap());
        let trusting = |cert: &CertificateDer<'static>| {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(cert.clone()).unwrap();
            let config =
                rustls::ClientConfig::builder_with_provider(super::super::certificate::provider())
                    .with_safe_default_protocol_versions()
                    .unwrap()
                    .with_root_certificates(roots)
                    .with_no_client_auth();
            Some(tokio_tungstenite::Connector::Rustls(Arc::new(config)))
        };
        let base = h.host.url().to_owned();
        let url = |token: &str| format!("{base}?token={token}");

        let transport = TransportId(1);
        h.host.accept(transport, TOKEN.into());
        let dial = tokio_tungstenite::connect_async_tls_with_config(
            url(TOKEN),
            None,
            true,
            trusting(&first),
        );
        let (mut client, _) = h.run(dial).await.expect("TLS with the certificate");
        h.assert_open(transport).await;
        exchange(&mut h, transport, &mut client, 3).await;

        // Renewed: the next handshake gets the new certificate, the open connection carries
        // on. (The periods are the WebTransport host's: `webtransport::tests`.)
        let (_, _, second) = write_self_signed(dir.path(), "host", &["localhost"]);
        assert!(own.renew().unwrap());
        let dial = tokio_tungstenite::connect_async_tls_with_config(
            url(OTHER),
            None,
            true,
            trusting(&first),
        );
        let refused = h.run(dial).await.expect_err("the old certificate is gone");
        assert!(
            super::super::signalling::tls_refusal(&refused).is_some(),
            "{refused:?}"
        );
        let dial = tokio_tungstenite::connect_async_tls_with_config(
            url(OTHER),
            None,
            true,
            trusting(&second),
        );
        let (_renewed, _) = h.run(dial).await.expect("TLS with the new certificate");
        h.until_held(1).await;
        exchange(&mut h, transport, &mut client, 3).await;
    }

    #[tokio::test]
    async fn a_connection_with_a_named_token_carries_the_largest_packets_both_ways_in_order() {
        let mut h = harness(HOLD);
        let transport = TransportId(7);
        let mut client = h.open(transport, TOKEN).await;
        exchange(&mut h, transport, &mut client, 50).await;
        h.assert_nothing_for_the_member();
    }

    #[tokio::test]
    async fn a_connection_that_comes_before_its_token_is_held_unread_and_then_taken() {
        let mut h = harness(HOLD);
        let mut client = h.dial(TOKEN).await;
        h.until_held(1).await;
        // What it sends meanwhile waits, unread, for the member to name its token.
        let early = b"a connect request".to_vec();
        h.run(client.send(Message::binary(early.clone())))
            .await
            .unwrap();
        h.assert_nothing_for_the_member();

        let transport = TransportId(3);
        h.host.accept(transport, TOKEN.into());
        assert_eq!(h.host.held(), 0);
        h.assert_open(transport).await;
        assert_eq!(h.packet(transport).await[..], early[..]);
        exchange(&mut h, transport, &mut client, 10).await;
    }

    #[tokio::test]
    async fn a_request_without_a_well_formed_token_or_on_another_path_is_refused_and_changes_nothing()
     {
        // Held connections would wait a minute: the test's patience is 10 s.
        let mut h = harness(Duration::from_secs(60));
        h.host.accept(TransportId(1), TOKEN.into());
        let upper = TOKEN.to_uppercase();
        for (query, status) in [
            ("", 400),
            ("?token=", 400),
            ("?token=0123", 400),
            (&*format!("?token={upper}"), 400),
            (&*format!("?token={TOKEN}&more=1"), 400),
            (&*format!("/other?token={TOKEN}"), 404),
        ] {
            match h.dial_query(query).await {
                Err(tungstenite::Error::Http(response)) => {
                    assert_eq!(response.status().as_u16(), status, "{query}");
                }
                other => panic!("{query}: expected HTTP {status}, got {other:?}"),
            }
        }
        assert_eq!(h.host.held(), 0);
        h.assert_nothing_for_the_member();
        // The named token still opens, once.
        let _client = h.dial(TOKEN).await;
        h.assert_open(TransportId(1)).await;
    }

    #[tokio::test]
    async fn a_connection_whose_token_is_never_named_is_turned_away_after_the_hold() {
        let mut h = harness(Duration::from_millis(200));
        let mut client = h.dial(OTHER).await;
        assert_eq!(close_code(&mut h, &mut client).await, CloseCode::Policy);
        assert_eq!(h.host.held(), 0);
        h.assert_nothing_for_the_member();
        // Named too late: the member waits for a connection that never comes (its attempt
        // times out), and nothing is opened.
        h.host.accept(TransportId(1), OTHER.into());
        h.assert_nothing_for_the_member();
    }

    #[tokio::test]
    async fn a_second_connection_with_a_taken_token_is_turned_away_at_once() {
        let mut h = harness(Duration::from_secs(60));
        let transport = TransportId(9);
        let mut first = h.open(transport, TOKEN).await;

        let mut second = h.dial(TOKEN).await;
        assert_eq!(close_code(&mut h, &mut second).await, CloseCode::Policy);
        h.assert_nothing_for_the_member();
        // And a second transport for the same token is refused.
        h.host.accept(TransportId(10), TOKEN.into());
        assert!(matches!(
            h.event().await,
            (
                TransportId(10),
                SessionEvent::Transport(TransportEvent::Failed(_))
            )
        ));
        // The first still works.
        exchange(&mut h, transport, &mut first, 3).await;
    }

    #[tokio::test]
    async fn a_text_or_oversize_message_closes_that_connection_only() {
        const THIRD: &str = "2123456789abcdef0123456789abcdef";
        let mut h = harness(HOLD);
        let (texting, oversize, good) = (TransportId(1), TransportId(2), TransportId(3));
        let mut texter = h.open(texting, TOKEN).await;
        let mut big = h.open(oversize, OTHER).await;
        let mut client = h.open(good, THIRD).await;

        h.run(texter.send(Message::text("hello"))).await.unwrap();
        h.assert_closed(texting).await;
        assert_eq!(
            close_code(&mut h, &mut texter).await,
            CloseCode::Unsupported
        );

        let too_big = vec![7u8; MAX_MESSAGE + 1];
        h.run(big.send(Message::binary(too_big))).await.unwrap();
        h.assert_closed(oversize).await;
        assert_eq!(close_code(&mut h, &mut big).await, CloseCode::Size);

        // A closed one takes nothing more (the member closes it next); the other carries on.
        h.host.send(texting, b"late");
        assert_eq!(h.host.send_failures(), 0);
        exchange(&mut h, good, &mut client, 5).await;
    }

    #[tokio::test]
    async fn closing_the_transport_closes_the_clients_connection_and_tells_nothing() {
        let mut h = harness(HOLD);
        let transport = TransportId(4);
        let mut client = h.open(transport, TOKEN).await;

        h.host.close(transport);
        assert!(!h.host.has(transport));
        assert_eq!(close_code(&mut h, &mut client).await, CloseCode::Normal);
        // Sending on it now is a no-op, and nothing more is told about it.
        h.host.send(transport, b"late");
        assert_eq!(h.host.send_failures(), 0);
        h.assert_nothing_for_the_member();
        // Its token is free again: a new connection with it waits for the member.
        let _again = h.dial(TOKEN).await;
        h.until_held(1).await;
    }

    #[tokio::test]
    async fn a_connection_the_client_closes_is_told_closed() {
        let mut h = harness(HOLD);
        let transport = TransportId(5);
        let mut client = h.open(transport, TOKEN).await;
        h.run(client.close(None)).await.unwrap();
        h.assert_closed(transport).await;
    }

    #[tokio::test]
    async fn a_send_that_finds_the_queue_full_is_dropped_and_counted_and_the_rest_arrive() {
        // One thread: the connection's task cannot take from its queue until the test
        // awaits, so the queue fills exactly.
        let mut h = harness(HOLD);
        let transport = TransportId(6);
        let mut client = h.open(transport, TOKEN).await;
        let sent = packets(QUEUE + 10, 200);
        for packet in &sent {
            h.host.send(transport, packet);
        }
        assert_eq!(h.host.send_failures(), 10);
        for packet in &sent[..QUEUE] {
            match h.read(&mut client).await {
                Some(Message::Binary(got)) => assert_eq!(got[..], packet[..]),
                other => panic!("expected a packet, got {other:?}"),
            }
        }
        // The queue drained: the next one goes.
        h.host.send(transport, b"after");
        assert_eq!(h.host.send_failures(), 10);
        assert_eq!(
            h.read(&mut client).await,
            Some(Message::binary(&b"after"[..]))
        );
    }
}
