//! The host's QUIC endpoint and the little HTTP/3 a WebTransport session needs, sans-IO
//! (quinn-proto, wtransport-proto) and polled in the room's own task, as [`lite`](super::lite)
//! polls str0m: one UDP socket, every connection's state machine beside it, no task of their
//! own.
//!
//! Why not a runtime's QUIC (quinn, wtransport on it): there every datagram crossed four
//! tasks (the endpoint's driver, the connection's, a reader, the room's), and at 64 players
//! the host spent a third more of a core per WebTransport player than per str0m one, all of
//! it in waking threads (`perf`: futex and eventfd, the user-space work equal). Here a
//! datagram is read, decrypted, handed to the member and answered in one turn of the room's
//! task.
//!
//! What it speaks, per connection (one session each: browsers do not pool WebTransport
//! sessions unless asked):
//! - it opens its HTTP/3 control stream with SETTINGS (WebTransport, HTTP/3 datagrams,
//!   extended CONNECT, no QPACK dynamic table) as soon as it accepts the connection, so they
//!   leave as 0.5-RTT data behind its handshake flight and the browser sends its CONNECT with
//!   its Finished;
//! - the client's first bidirectional stream carries its CONNECT (`:protocol webtransport`):
//!   its path goes up as an [`H3Event::Request`], and [`H3Endpoint::respond`] answers it
//!   (200 opens the session; anything else refuses it and closes the connection shortly
//!   after);
//! - datagrams of the session ride QUIC DATAGRAM frames behind its quarter stream id;
//! - the client's unidirectional streams (its control stream, QPACK's) are read and their
//!   bytes dropped: with no dynamic table there is nothing in them the host needs; its other
//!   streams are refused (the host's sessions carry datagrams only);
//! - the CONNECT stream finished or reset ends the session, and the connection with it.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, ServerConfig, Side,
    StreamEvent, StreamId, VarInt,
};
use wtransport_proto::datagram::Datagram;
use wtransport_proto::error::ErrorCode;
use wtransport_proto::frame::{Frame, FrameKind};
use wtransport_proto::headers::Headers;
use wtransport_proto::ids::{QStreamId, SessionId, StatusCode};
use wtransport_proto::session::{SessionRequest, SessionResponse};
use wtransport_proto::settings::Settings;
use wtransport_proto::stream_header::StreamHeader;

/// Datagrams read from the socket in one turn before the connections they touched are
/// driven (their acknowledgements and answers then leave together).
const READ_BATCH: usize = 64;

/// The most of a CONNECT request's HEADERS frame the host buffers: a browser's is a few
/// hundred bytes.
const MAX_REQUEST: usize = 16 << 10;

/// A refused session's connection stays this long for the refusal to reach the client, then
/// closes (a client that stays would hold the host's state to the idle timeout).
const REFUSED_LINGER: Duration = Duration::from_secs(1);

/// A UDP datagram's largest size.
const MAX_UDP: usize = 65_535;

/// A session on the endpoint, named for as long as its connection lives (never reused, unlike
/// quinn's connection handles).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct SessionKey(u64);

/// What the endpoint has for its owner, in order.
#[derive(Debug)]
pub(crate) enum H3Event {
    /// A client asks for a WebTransport session at `path` (answer with
    /// [`H3Endpoint::respond`]).
    Request {
        session: SessionKey,
        path: String,
        from: SocketAddr,
    },
    /// A datagram on an open session.
    Datagram { session: SessionKey, payload: Bytes },
    /// A session that asked (answered or not) ended: the client closed it, or its connection
    /// was lost. Nothing more is told of it.
    Closed { session: SessionKey, reason: String },
}

/// Why a datagram was not sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SendError {
    /// No open session by that key (never opened, or ended).
    #[error("no open session")]
    NoSession,
    /// QUIC would not take it (too large for the path, datagrams off).
    #[error("{0}")]
    Quic(#[from] quinn_proto::SendDatagramError),
}

/// Bytes for one of the connection's streams that flow control has not let out yet.
#[derive(Debug, Default)]
struct Outgoing {
    bytes: Vec<u8>,
    /// Finish the stream once they are out.
    finish: bool,
}

/// Where a connection's one session is.
#[derive(Debug)]
enum Session {
    /// No CONNECT yet; what arrived of it on `stream` (the client's first bidirectional).
    Waiting {
        stream: Option<StreamId>,
        buffer: Vec<u8>,
    },
    /// Asked for, not answered yet.
    Requested { stream: StreamId },
    /// Answered 200: datagrams flow.
    Open {
        stream: StreamId,
        qstream: QStreamId,
    },
    /// Refused, or ended: the connection closes.
    Over,
}

struct Conn {
    key: SessionKey,
    quic: quinn_proto::Connection,
    /// The host's control stream, once opened (the client may not allow it at first).
    control: Option<StreamId>,
    /// What waits for flow control, per stream of the host's.
    outgoing: HashMap<StreamId, Outgoing>,
    session: Session,
    /// The session asked for, and not yet told closed.
    asked: bool,
    /// When a refused session's connection closes.
    close_at: Option<Instant>,
    /// QUIC's own next timer.
    timeout: Option<Instant>,
    /// The earlier of the two, as filed in the endpoint's deadlines.
    deadline: Option<Instant>,
}

/// The host's QUIC endpoint on its socket, and every connection on it.
pub(crate) struct H3Endpoint {
    socket: tokio::net::UdpSocket,
    endpoint: Endpoint,
    conns: HashMap<ConnectionHandle, Conn>,
    handles: HashMap<SessionKey, ConnectionHandle>,
    /// Every connection's next deadline, soonest first: the room's loop asks for the soonest
    /// after every packet, which a scan of every connection would make linear in players.
    deadlines: BTreeSet<(Instant, ConnectionHandle)>,
    next_key: u64,
    events: VecDeque<H3Event>,
    /// The SETTINGS every connection's control stream opens with.
    settings: Vec<u8>,
    recv: Box<[u8]>,
    send: Vec<u8>,
    /// Datagrams the socket would not take (its buffer full): QUIC sees them lost.
    unsent: u64,
}

impl std::fmt::Debug for H3Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H3Endpoint")
            .field("socket", &self.socket)
            .field("connections", &self.conns.len())
            .finish_non_exhaustive()
    }
}

impl H3Endpoint {
    /// Serves `config` on `socket` (non-blocking; inside a tokio runtime).
    pub(crate) fn new(
        socket: std::net::UdpSocket,
        config: ServerConfig,
    ) -> std::io::Result<H3Endpoint> {
        let socket = tokio::net::UdpSocket::from_std(socket)?;
        // No path MTU discovery: the socket may fragment, and the core's packets fit the
        // initial MTU (webtransport.rs's `INITIAL_MTU`).
        let endpoint = Endpoint::new(
            Arc::new(EndpointConfig::default()),
            Some(Arc::new(config)),
            false,
            None,
        );
        let mut settings = Vec::new();
        write_frame(&mut settings, Some(StreamHeader::new_control()), None);
        let frame = Settings::builder()
            .qpack_max_table_capacity(wtransport_proto::varint::VarInt::from_u32(0))
            .qpack_blocked_streams(wtransport_proto::varint::VarInt::from_u32(0))
            .enable_connect_protocol()
            .enable_webtransport()
            .enable_h3_datagrams()
            .webtransport_max_sessions(wtransport_proto::varint::VarInt::from_u32(1))
            .build();
        write_frame(&mut settings, None, Some(frame.generate_frame()));
        Ok(H3Endpoint {
            socket,
            endpoint,
            conns: HashMap::new(),
            handles: HashMap::new(),
            deadlines: BTreeSet::new(),
            next_key: 0,
            events: VecDeque::new(),
            settings,
            recv: vec![0; MAX_UDP].into_boxed_slice(),
            send: Vec::with_capacity(MAX_UDP),
            unsent: 0,
        })
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// New connections get `config` (a new certificate); open ones keep theirs.
    pub(crate) fn set_server_config(&mut self, config: ServerConfig) {
        self.endpoint.set_server_config(Some(Arc::new(config)));
    }

    /// UDP datagrams the socket would not take (QUIC sends what they carried again, but a
    /// core packet in one is lost).
    pub(crate) fn unsent(&self) -> u64 {
        self.unsent
    }

    /// The next event, if any.
    pub(crate) fn poll_event(&mut self) -> Option<H3Event> {
        self.events.pop_front()
    }

    /// When [`Self::handle_timeout`] is next due.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.first().map(|&(at, _)| at)
    }

    /// Waits until the socket has something to read (cancel-safe).
    pub(crate) async fn readable(&self) -> std::io::Result<()> {
        self.socket.readable().await
    }

    /// Reads what the socket has (a batch at most) and drives every connection it touched.
    pub(crate) fn read(&mut self, now: Instant) {
        let mut touched = Vec::new();
        for _ in 0..READ_BATCH {
            let (len, from) = match self.socket.try_recv_from(&mut self.recv) {
                Ok(read) => read,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                // An ICMP error queued on the socket (a client gone): the next read goes on.
                Err(e) => {
                    tracing::trace!(error = %e, "host WebTransport socket");
                    continue;
                }
            };
            let data = BytesMut::from(&self.recv[..len]);
            self.send.clear();
            match self
                .endpoint
                .handle(now, from, None, None, data, &mut self.send)
            {
                Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                    if let Some(conn) = self.conns.get_mut(&handle) {
                        conn.quic.handle_event(event);
                        touched.push(handle);
                    }
                }
                Some(DatagramEvent::NewConnection(incoming)) => {
                    self.send.clear();
                    match self.endpoint.accept(incoming, now, &mut self.send, None) {
                        Ok((handle, quic)) => {
                            self.accepted(handle, quic);
                            touched.push(handle);
                        }
                        Err(e) => {
                            tracing::debug!(%from, error = %e.cause, "WebTransport connection not accepted");
                            if let Some(transmit) = e.response {
                                self.transmit(transmit.destination, transmit.size);
                            }
                        }
                    }
                }
                Some(DatagramEvent::Response(transmit)) => {
                    self.transmit(transmit.destination, transmit.size);
                }
                None => {}
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for handle in touched {
            self.drive(handle, now);
        }
    }

    /// Fires the timers due at `now`.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<ConnectionHandle> = self
            .deadlines
            .iter()
            .take_while(|&&(at, _)| at <= now)
            .map(|&(_, handle)| handle)
            .collect();
        for handle in due {
            if let Some(conn) = self.conns.get_mut(&handle) {
                if conn.timeout.is_some_and(|t| t <= now) {
                    conn.quic.handle_timeout(now);
                }
                if conn.close_at.is_some_and(|t| t <= now) {
                    conn.close_at = None;
                    conn.quic
                        .close(now, h3_code(ErrorCode::NoError), Bytes::new());
                }
            }
            self.drive(handle, now);
        }
    }

    /// Answers `session`'s request with `status`: 200 opens it; any other refuses it (and its
    /// connection closes a moment later). False if the session is gone or was answered.
    pub(crate) fn respond(
        &mut self,
        session: SessionKey,
        status: StatusCode,
        now: Instant,
    ) -> bool {
        let Some(&handle) = self.handles.get(&session) else {
            return false;
        };
        let Some(conn) = self.conns.get_mut(&handle) else {
            return false;
        };
        let Session::Requested { stream } = conn.session else {
            return false;
        };
        let mut response = Vec::new();
        let frame = SessionResponse::with_status_code(status)
            .headers()
            .generate_frame();
        write_frame(&mut response, None, Some(frame));
        let open = status == StatusCode::OK;
        conn.write(stream, &response, !open);
        if open {
            conn.session = Session::Open {
                stream,
                qstream: QStreamId::from_session_id(session_id(stream)),
            };
        } else {
            conn.session = Session::Over;
            conn.asked = false;
            conn.close_at = Some(now + REFUSED_LINGER);
        }
        self.drive(handle, now);
        true
    }

    /// Sends `payload` as a datagram of `session`, now.
    pub(crate) fn send_datagram(
        &mut self,
        session: SessionKey,
        payload: &[u8],
        now: Instant,
    ) -> Result<(), SendError> {
        let handle = *self.handles.get(&session).ok_or(SendError::NoSession)?;
        let conn = self.conns.get_mut(&handle).ok_or(SendError::NoSession)?;
        let Session::Open { qstream, .. } = conn.session else {
            return Err(SendError::NoSession);
        };
        let datagram = Datagram::new(qstream, payload);
        let mut bytes = vec![0; datagram.write_size()];
        // The buffer is the datagram's exact size.
        let _ = datagram.write(&mut bytes);
        conn.quic.datagrams().send(Bytes::from(bytes), true)?;
        self.flush(handle, now);
        Ok(())
    }

    /// Ends `session` (its connection closes); nothing more is told of it.
    pub(crate) fn close(&mut self, session: SessionKey, now: Instant) {
        let Some(&handle) = self.handles.get(&session) else {
            return;
        };
        if let Some(conn) = self.conns.get_mut(&handle) {
            conn.asked = false;
            conn.session = Session::Over;
            conn.quic.close(
                now,
                h3_code(ErrorCode::NoError),
                Bytes::from_static(b"closed"),
            );
        }
        self.drive(handle, now);
    }

    /// A connection quinn accepted: its control stream opens as soon as the client allows
    /// it (now, or when the rest of its ClientHello comes), so SETTINGS leave in 0.5-RTT.
    fn accepted(&mut self, handle: ConnectionHandle, quic: quinn_proto::Connection) {
        let key = SessionKey(self.next_key);
        self.next_key += 1;
        let mut conn = Conn {
            key,
            quic,
            control: None,
            outgoing: HashMap::new(),
            session: Session::Waiting {
                stream: None,
                buffer: Vec::new(),
            },
            asked: false,
            close_at: None,
            timeout: None,
            deadline: None,
        };
        conn.open_control(&self.settings);
        self.handles.insert(key, handle);
        self.conns.insert(handle, conn);
    }

    /// Everything a connection has to do after something happened to it: its events, its
    /// packets out, its timer; forgotten once drained.
    fn drive(&mut self, handle: ConnectionHandle, now: Instant) {
        let Some(conn) = self.conns.get_mut(&handle) else {
            return;
        };
        while let Some(event) = conn.quic.poll() {
            conn.on_event(event, &self.settings, &mut self.events);
        }
        // The client's limit on streams comes with its transport parameters, in its
        // ClientHello, which may span two packets (Firefox's does): the control stream
        // opens once the limit is known (quinn tells no `Available` for it).
        conn.open_control(&self.settings);
        self.flush(handle, now);
    }

    /// A connection's packets out, its endpoint events, its timer.
    fn flush(&mut self, handle: ConnectionHandle, now: Instant) {
        let Some(conn) = self.conns.get_mut(&handle) else {
            return;
        };
        loop {
            self.send.clear();
            let Some(transmit) = conn.quic.poll_transmit(now, 1, &mut self.send) else {
                break;
            };
            match self
                .socket
                .try_send_to(&self.send[..transmit.size], transmit.destination)
            {
                Ok(_) => {}
                Err(e) => {
                    self.unsent += 1;
                    tracing::trace!(error = %e, "host WebTransport datagram not sent");
                }
            }
        }
        while let Some(event) = conn.quic.poll_endpoint_events() {
            if let Some(event) = self.endpoint.handle_event(handle, event) {
                conn.quic.handle_event(event);
            }
        }
        conn.timeout = conn.quic.poll_timeout();
        let deadline = [conn.timeout, conn.close_at].into_iter().flatten().min();
        if deadline != conn.deadline {
            if let Some(at) = conn.deadline.take() {
                self.deadlines.remove(&(at, handle));
            }
            if let Some(at) = deadline {
                self.deadlines.insert((at, handle));
            }
            conn.deadline = deadline;
        }
        if conn.quic.is_drained() {
            let conn = self.conns.remove(&handle).expect("the connection driven");
            self.handles.remove(&conn.key);
            if let Some(at) = conn.deadline {
                self.deadlines.remove(&(at, handle));
            }
            if conn.asked {
                self.events.push_back(H3Event::Closed {
                    session: conn.key,
                    reason: "the connection closed".into(),
                });
            }
        }
    }

    /// Sends `self.send[..size]`, a packet of the endpoint's own.
    fn transmit(&mut self, to: SocketAddr, size: usize) {
        if self.socket.try_send_to(&self.send[..size], to).is_err() {
            self.unsent += 1;
        }
    }
}

impl Drop for H3Endpoint {
    /// Every connection closes now (the client hears it rather than timing out).
    fn drop(&mut self) {
        let now = Instant::now();
        let handles: Vec<ConnectionHandle> = self.conns.keys().copied().collect();
        for handle in handles {
            if let Some(conn) = self.conns.get_mut(&handle) {
                conn.asked = false;
                conn.quic.close(
                    now,
                    h3_code(ErrorCode::NoError),
                    Bytes::from_static(b"closed"),
                );
            }
            self.flush(handle, now);
        }
    }
}

impl Conn {
    /// Opens the host's control stream and queues its SETTINGS, if the client allows a stream.
    fn open_control(&mut self, settings: &[u8]) {
        if self.control.is_some() {
            return;
        }
        if let Some(stream) = self.quic.streams().open(Dir::Uni) {
            self.control = Some(stream);
            self.write(stream, settings, false);
        }
    }

    /// Writes `bytes` on the host's `stream` (what flow control holds back goes on
    /// [`StreamEvent::Writable`]), finishing it after them with `finish`.
    fn write(&mut self, stream: StreamId, bytes: &[u8], finish: bool) {
        let out = self.outgoing.entry(stream).or_default();
        out.bytes.extend_from_slice(bytes);
        out.finish |= finish;
        self.flush_stream(stream);
    }

    fn flush_stream(&mut self, stream: StreamId) {
        let Some(out) = self.outgoing.get_mut(&stream) else {
            return;
        };
        let mut send = self.quic.send_stream(stream);
        while !out.bytes.is_empty() {
            match send.write(&out.bytes) {
                Ok(n) => {
                    out.bytes.drain(..n);
                }
                Err(quinn_proto::WriteError::Blocked) => return,
                // Stopped or gone: nothing more goes on it.
                Err(_) => {
                    self.outgoing.remove(&stream);
                    return;
                }
            }
        }
        if out.finish {
            // Fails only for a stream already stopped or reset: the client has gone from it.
            let _ = send.finish();
        }
        self.outgoing.remove(&stream);
    }

    fn on_event(&mut self, event: Event, settings: &[u8], events: &mut VecDeque<H3Event>) {
        match event {
            Event::Stream(StreamEvent::Opened { dir }) => {
                while let Some(stream) = self.quic.streams().accept(dir) {
                    self.read_stream(stream, events);
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => self.read_stream(id, events),
            Event::Stream(StreamEvent::Writable { id }) => self.flush_stream(id),
            Event::Stream(StreamEvent::Available { dir: Dir::Uni }) => self.open_control(settings),
            Event::DatagramReceived => {
                while let Some(datagram) = self.quic.datagrams().recv() {
                    self.on_datagram(datagram, events);
                }
            }
            Event::ConnectionLost { reason } => {
                tracing::debug!(session = ?self.key, %reason, "WebTransport connection lost");
                self.session = Session::Over;
                if std::mem::take(&mut self.asked) {
                    events.push_back(H3Event::Closed {
                        session: self.key,
                        reason: reason.to_string(),
                    });
                }
            }
            Event::Stream(
                StreamEvent::Finished { .. }
                | StreamEvent::Stopped { .. }
                | StreamEvent::Available { dir: Dir::Bi },
            )
            | Event::HandshakeDataReady
            | Event::Connected
            | Event::DatagramsUnblocked => {}
        }
    }

    /// A datagram of the session (its quarter stream id first); others are dropped.
    fn on_datagram(&mut self, datagram: Bytes, events: &mut VecDeque<H3Event>) {
        let Session::Open { qstream, .. } = self.session else {
            return;
        };
        let Ok(parsed) = Datagram::read(&datagram) else {
            return;
        };
        if parsed.qstream_id() != qstream {
            return;
        }
        let start = datagram.len() - parsed.payload().len();
        events.push_back(H3Event::Datagram {
            session: self.key,
            payload: datagram.slice(start..),
        });
    }

    /// Reads what `stream` has: the CONNECT on the client's first bidirectional stream,
    /// nothing on its unidirectional ones (dropped), a refusal on any other.
    fn read_stream(&mut self, stream: StreamId, events: &mut VecDeque<H3Event>) {
        if stream.dir() == Dir::Uni {
            self.drain(stream);
            return;
        }
        match &mut self.session {
            Session::Waiting { stream: first, .. } if first.is_none_or(|s| s == stream) => {
                *first = Some(stream);
                self.read_request(stream, events);
            }
            Session::Requested { stream: s } | Session::Open { stream: s, .. } if *s == stream => {
                // Capsules (a close, a drain) or nothing: the stream's end is what counts.
                if self.drain(stream) {
                    self.session = Session::Over;
                    if std::mem::take(&mut self.asked) {
                        events.push_back(H3Event::Closed {
                            session: self.key,
                            reason: "the client closed the session".into(),
                        });
                    }
                    let code = h3_code(ErrorCode::NoError);
                    self.quic.close(Instant::now(), code, Bytes::new());
                }
            }
            _ => {
                let code = h3_code(ErrorCode::RequestRejected);
                // Each fails only for a side of the stream already closed: nothing to refuse.
                let _ = self.quic.recv_stream(stream).stop(code);
                if stream.initiator() == Side::Client {
                    let _ = self.quic.send_stream(stream).reset(code);
                }
            }
        }
    }

    /// Reads and drops what `stream` has; true once it ended (finished or reset).
    fn drain(&mut self, stream: StreamId) -> bool {
        let mut recv = self.quic.recv_stream(stream);
        let Ok(mut chunks) = recv.read(true) else {
            return true;
        };
        let ended = loop {
            match chunks.next(usize::MAX) {
                Ok(Some(_)) => {}
                Ok(None) => break true,
                Err(quinn_proto::ReadError::Blocked) => break false,
                Err(quinn_proto::ReadError::Reset(_)) => break true,
            }
        };
        // Whether a flow-control credit should go out: the connection is flushed after
        // every event anyway.
        let _ = chunks.finalize();
        ended
    }

    /// Buffers the CONNECT stream until its HEADERS frame is whole, then asks the owner.
    fn read_request(&mut self, stream: StreamId, events: &mut VecDeque<H3Event>) {
        let Session::Waiting { buffer, .. } = &mut self.session else {
            return;
        };
        let mut recv = self.quic.recv_stream(stream);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let mut ended = false;
        loop {
            match chunks.next(MAX_REQUEST + 1 - buffer.len().min(MAX_REQUEST)) {
                Ok(Some(chunk)) => buffer.extend_from_slice(&chunk.bytes),
                Ok(None) | Err(quinn_proto::ReadError::Reset(_)) => {
                    ended = true;
                    break;
                }
                Err(quinn_proto::ReadError::Blocked) => break,
            }
            if buffer.len() > MAX_REQUEST {
                break;
            }
        }
        let _ = chunks.finalize();
        let parsed = parse_request(buffer);
        match parsed {
            Ok(Some(request)) => {
                self.session = Session::Requested { stream };
                self.asked = true;
                events.push_back(H3Event::Request {
                    session: self.key,
                    path: request.path().to_owned(),
                    from: self.quic.remote_address(),
                });
            }
            Ok(None) if !ended && buffer.len() <= MAX_REQUEST => {}
            Ok(None) => self.refuse_malformed(ErrorCode::Message, "an unfinished request"),
            Err((code, why)) => self.refuse_malformed(code, why),
        }
    }

    /// A CONNECT stream the host cannot read: the connection closes with `code`.
    fn refuse_malformed(&mut self, code: ErrorCode, why: &'static str) {
        tracing::debug!(session = ?self.key, why, "WebTransport request refused");
        self.session = Session::Over;
        self.quic.close(
            Instant::now(),
            h3_code(code),
            Bytes::from_static(why.as_bytes()),
        );
    }
}

/// A CONNECT request from the start of a request stream: `None` until its HEADERS frame is
/// whole.
fn parse_request(buffer: &[u8]) -> Result<Option<SessionRequest>, (ErrorCode, &'static str)> {
    let mut reader = wtransport_proto::bytes::BufferReader::new(buffer);
    loop {
        let frame = match Frame::read_from_buffer(&mut reader) {
            Ok(Some(frame)) => frame,
            Ok(None) => return Ok(None),
            Err(_) => return Err((ErrorCode::Frame, "a malformed frame")),
        };
        match frame.kind() {
            FrameKind::Headers => {
                let headers = Headers::with_frame(&frame)
                    .map_err(|code| (code, "headers that do not decode"))?;
                return SessionRequest::try_from(headers)
                    .map(Some)
                    .map_err(|_| (ErrorCode::Message, "not a WebTransport CONNECT"));
            }
            // Reserved frames exercise the parser: skipped, as HTTP/3 asks.
            FrameKind::Exercise(_) => {}
            _ => return Err((ErrorCode::FrameUnexpected, "a frame before the headers")),
        }
    }
}

/// The session id of the session on CONNECT stream `stream`.
fn session_id(stream: StreamId) -> SessionId {
    let id = wtransport_proto::varint::VarInt::try_from_u64(u64::from(VarInt::from(stream)))
        .expect("a QUIC stream id is a varint");
    SessionId::try_from_session_stream(wtransport_proto::ids::StreamId::new(id))
        .expect("a client's bidirectional stream")
}

/// An HTTP/3 error code as QUIC's.
fn h3_code(code: ErrorCode) -> VarInt {
    VarInt::from_u64(code.to_code().into_inner()).expect("HTTP/3 codes are varints")
}

/// Appends a stream header and a frame to `out`.
fn write_frame(out: &mut Vec<u8>, header: Option<StreamHeader>, frame: Option<Frame>) {
    // A Vec grows: neither write runs out of room.
    if let Some(header) = header {
        let _ = header.write(out);
    }
    if let Some(frame) = frame {
        let _ = frame.write(out);
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;

    use wtransport::quinn;
    use wtransport::tls::Sha256Digest;

    use super::*;

    /// A host endpoint on loopback with a self-signed certificate, and its hash.
    fn endpoint() -> (H3Endpoint, Sha256Digest) {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        socket.set_nonblocking(true).expect("non-blocking");
        let identity = wtransport::Identity::self_signed(["localhost"]).expect("certificate");
        let hash = identity.certificate_chain().as_slice()[0].hash();
        let config = wtransport::ServerConfig::builder()
            .with_bind_default(0)
            .with_identity(identity)
            .build();
        let h3 = H3Endpoint::new(socket, config.quic_config().clone()).expect("endpoint");
        (h3, hash)
    }

    /// A bare QUIC connection to `to` with HTTP/3's ALPN, pinning `hash` as a browser does:
    /// it says what a browser would not.
    async fn connect(to: SocketAddr, hash: Sha256Digest) -> quinn::Connection {
        let config = wtransport::ClientConfig::builder()
            .with_bind_default()
            .with_server_certificate_hashes([hash])
            .build();
        let mut endpoint =
            quinn::Endpoint::client("127.0.0.1:0".parse().expect("address")).expect("client");
        endpoint.set_default_client_config(config.quic_config().clone());
        endpoint
            .connect(to, "localhost")
            .expect("connect")
            .await
            .expect("handshake")
    }

    /// A HEADERS frame of `headers`.
    fn headers_frame(headers: &[(&str, &str)]) -> Vec<u8> {
        let headers: Headers = headers.iter().copied().collect();
        let mut out = Vec::new();
        write_frame(&mut out, None, Some(headers.generate_frame()));
        out
    }

    /// A browser's CONNECT for `path`.
    fn connect_request(path: &str) -> Vec<u8> {
        headers_frame(&[
            (":method", "CONNECT"),
            (":scheme", "https"),
            (":protocol", "webtransport"),
            (":authority", "localhost"),
            (":path", path),
        ])
    }

    /// Runs the endpoint until `client` is done, answering every request with `status`;
    /// the client's output and every event the endpoint told, with the key of the last
    /// session asked for.
    async fn serve<T>(
        h3: &mut H3Endpoint,
        status: StatusCode,
        client: impl Future<Output = T>,
    ) -> (T, Vec<H3Event>) {
        enum Step {
            Done,
            Read,
            Timer,
        }
        let mut events = Vec::new();
        let mut client = std::pin::pin!(client);
        let mut out = None;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while out.is_none() {
            let timeout = h3.poll_timeout();
            let step = tokio::select! {
                o = &mut client => { out = Some(o); Step::Done }
                _ = h3.readable() => Step::Read,
                () = async {
                    match timeout {
                        Some(at) => tokio::time::sleep_until(at.into()).await,
                        None => std::future::pending().await,
                    }
                } => Step::Timer,
                () = tokio::time::sleep_until(deadline) => panic!("the client did not finish"),
            };
            match step {
                Step::Done => {}
                Step::Read => h3.read(Instant::now()),
                Step::Timer => h3.handle_timeout(Instant::now()),
            }
            while let Some(event) = h3.poll_event() {
                if let H3Event::Request { session, .. } = &event {
                    assert!(h3.respond(*session, status, Instant::now()));
                }
                if let H3Event::Datagram { session, payload } = &event {
                    // Echoed, so the client knows it arrived.
                    h3.send_datagram(*session, payload, Instant::now())
                        .expect("echo");
                }
                events.push(event);
            }
        }
        (out.expect("the client's output"), events)
    }

    /// The status of the response on `recv`.
    async fn response(recv: &mut quinn::RecvStream) -> u16 {
        let mut buffer = Vec::new();
        loop {
            let mut chunk = [0; 512];
            let n = recv
                .read(&mut chunk)
                .await
                .expect("read")
                .expect("a response");
            buffer.extend_from_slice(&chunk[..n]);
            let mut reader = wtransport_proto::bytes::BufferReader::new(&buffer);
            if let Some(frame) = Frame::read_from_buffer(&mut reader).expect("a frame") {
                let headers = Headers::with_frame(&frame).expect("headers");
                return headers
                    .get(":status")
                    .expect("a status")
                    .parse()
                    .expect("a number");
            }
        }
    }

    /// The CONNECT stream of a session the host accepted.
    async fn open_session(conn: &quinn::Connection) -> (quinn::SendStream, quinn::RecvStream) {
        let (mut send, mut recv) = conn.open_bi().await.expect("stream");
        send.write_all(&connect_request("/ackwire?token=abc"))
            .await
            .expect("write");
        assert_eq!(response(&mut recv).await, 200);
        (send, recv)
    }

    /// A datagram of the session on stream 0.
    fn datagram(qstream: u64, payload: &[u8]) -> Bytes {
        let qstream = QStreamId::from_session_id(session_id(StreamId::from(
            VarInt::from_u64(qstream * 4).expect("varint"),
        )));
        let datagram = Datagram::new(qstream, payload);
        let mut bytes = vec![0; datagram.write_size()];
        datagram.write(&mut bytes).expect("room");
        Bytes::from(bytes)
    }

    /// The H3 error code a connection was closed with.
    fn closed_with(error: quinn::ConnectionError) -> u64 {
        match error {
            quinn::ConnectionError::ApplicationClosed(close) => close.error_code.into_inner(),
            other => panic!("not closed by the host's application: {other}"),
        }
    }

    #[tokio::test]
    async fn a_session_asked_for_and_accepted_carries_its_datagrams_and_drops_another_sessions() {
        let (mut h3, hash) = endpoint();
        let to = h3.local_addr().expect("address");
        let (echoed, events) = serve(&mut h3, StatusCode::OK, async move {
            let conn = connect(to, hash).await;
            let (_send, _recv) = open_session(&conn).await;
            // Session 1 is no session of this connection's: dropped.
            conn.send_datagram(datagram(1, b"elsewhere")).expect("send");
            conn.send_datagram(datagram(0, b"hello")).expect("send");
            conn.read_datagram().await.expect("the echo")
        })
        .await;
        assert_eq!(&echoed[..], &datagram(0, b"hello")[..]);
        let told: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                H3Event::Datagram { payload, .. } => Some(payload.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(told, [Bytes::from_static(b"hello")]);
        assert!(
            matches!(&events[0], H3Event::Request { path, .. } if path == "/ackwire?token=abc")
        );
    }

    #[tokio::test]
    async fn a_request_that_is_not_a_webtransport_connect_closes_the_connection_and_tells_nothing()
    {
        let (mut h3, hash) = endpoint();
        let to = h3.local_addr().expect("address");
        let (error, events) = serve(&mut h3, StatusCode::OK, async move {
            let conn = connect(to, hash).await;
            let (mut send, _recv) = conn.open_bi().await.expect("stream");
            let get = headers_frame(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "localhost"),
                (":path", "/ackwire?token=abc"),
            ]);
            send.write_all(&get).await.expect("write");
            conn.closed().await
        })
        .await;
        assert_eq!(
            closed_with(error),
            ErrorCode::Message.to_code().into_inner()
        );
        assert!(events.is_empty(), "{events:?}");
    }

    #[tokio::test]
    async fn bytes_that_are_no_frame_close_the_connection_and_tell_nothing() {
        let (mut h3, hash) = endpoint();
        let to = h3.local_addr().expect("address");
        let (error, events) = serve(&mut h3, StatusCode::OK, async move {
            let conn = connect(to, hash).await;
            let (mut send, _recv) = conn.open_bi().await.expect("stream");
            // A frame type no HTTP/3 defines, where the headers belong.
            send.write_all(&[0x3f, 0xe1, 0x01, 0x00])
                .await
                .expect("write");
            conn.closed().await
        })
        .await;
        assert_eq!(closed_with(error), ErrorCode::Frame.to_code().into_inner());
        assert!(events.is_empty(), "{events:?}");
    }

    #[tokio::test]
    async fn a_refused_session_hears_its_status_and_its_connection_closes() {
        let (mut h3, hash) = endpoint();
        let to = h3.local_addr().expect("address");
        let ((status, error), events) = serve(&mut h3, StatusCode::FORBIDDEN, async move {
            let conn = connect(to, hash).await;
            let (mut send, mut recv) = conn.open_bi().await.expect("stream");
            send.write_all(&connect_request("/ackwire?token=abc"))
                .await
                .expect("write");
            (response(&mut recv).await, conn.closed().await)
        })
        .await;
        assert_eq!(status, 403);
        assert_eq!(
            closed_with(error),
            ErrorCode::NoError.to_code().into_inner()
        );
        // Asked for, refused: nothing more is told of it.
        assert_eq!(events.len(), 1, "{events:?}");
    }

    #[tokio::test]
    async fn another_stream_beside_the_session_is_refused_and_the_session_carries_on() {
        let (mut h3, hash) = endpoint();
        let to = h3.local_addr().expect("address");
        let ((stopped, echoed), _) = serve(&mut h3, StatusCode::OK, async move {
            let conn = connect(to, hash).await;
            let (_send, _recv) = open_session(&conn).await;
            let (mut other, _other_recv) = conn.open_bi().await.expect("stream");
            other
                .write_all(b"a stream the host does not take")
                .await
                .expect("write");
            let stopped = other.stopped().await.expect("stopped");
            conn.send_datagram(datagram(0, b"still here"))
                .expect("send");
            (stopped, conn.read_datagram().await.expect("the echo"))
        })
        .await;
        let rejected = ErrorCode::RequestRejected.to_code().into_inner();
        assert_eq!(stopped.map(|code| code.into_inner()), Some(rejected));
        assert_eq!(&echoed[..], &datagram(0, b"still here")[..]);
    }

    #[tokio::test]
    async fn a_session_the_client_ends_is_told_closed_once() {
        let (mut h3, hash) = endpoint();
        let to = h3.local_addr().expect("address");
        let (error, events) = serve(&mut h3, StatusCode::OK, async move {
            let conn = connect(to, hash).await;
            let (mut send, _recv) = open_session(&conn).await;
            send.finish().expect("finish");
            conn.closed().await
        })
        .await;
        assert_eq!(
            closed_with(error),
            ErrorCode::NoError.to_code().into_inner()
        );
        let closed = events
            .iter()
            .filter(|e| matches!(e, H3Event::Closed { .. }))
            .count();
        assert_eq!(closed, 1, "{events:?}");
    }

    #[tokio::test]
    async fn the_host_sends_its_settings_without_being_asked() {
        let (mut h3, hash) = endpoint();
        let to = h3.local_addr().expect("address");
        let (settings, events) = serve(&mut h3, StatusCode::OK, async move {
            let conn = connect(to, hash).await;
            let mut control = conn.accept_uni().await.expect("the host's control stream");
            let mut buffer = vec![0; 256];
            let mut read = 0;
            loop {
                let n = control
                    .read(&mut buffer[read..])
                    .await
                    .expect("read")
                    .expect("more");
                read += n;
                let mut reader = wtransport_proto::bytes::BufferReader::new(&buffer[..read]);
                let header = StreamHeader::read_from_buffer(&mut reader).expect("a header");
                if header.is_none() {
                    continue;
                }
                if let Some(frame) = Frame::read_from_buffer(&mut reader).expect("a frame") {
                    break Settings::with_frame(&frame).expect("settings");
                }
            }
        })
        .await;
        use wtransport_proto::settings::SettingId;
        assert!(settings.get(SettingId::EnableWebTransport).is_some());
        assert!(settings.get(SettingId::H3Datagram).is_some());
        assert!(events.is_empty());
    }
}
