//! One WebSocket connection: reads, validates and answers client messages, writes queued
//! frames, pings, and enforces the per-connection limits.

use std::{
    borrow::Cow,
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use ackwire_signalling::rules::tokens_match;
use ackwire_signalling::{
    ClientFrame, IceServer, LeaveReason, PeerId, PeerKind, Role, ServerFrame, Topology, UrlJoin,
    VERSION, WebTransportInfo, webtransport::InvalidWebTransport,
};
use axum::{
    extract::{
        ConnectInfo, Query, RawQuery, State, WebSocketUpgrade,
        rejection::QueryRejection,
        ws::{CloseFrame, Message, Utf8Bytes, WebSocket, close_code},
    },
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use tokio::sync::{mpsc, watch};

use crate::{
    AppState,
    admission::{Permit, Refusal},
    error::SignalError,
    metrics::CloseCause,
    protocol::{error_frame, to_text, validate_instance, validate_room_name},
    rooms::{ConnId, Hub, JoinRequest, Joined, Kick, Link, new_token},
};

/// How long a closing connection waits for the client's close reply, reading what it sends.
const CLOSE_DRAIN: Duration = Duration::from_secs(1);

/// Initial read buffer of the WebSocket layer. Tungstenite allocates 128 KiB by default
/// up front; signalling frames are small, and the buffer grows when one is not.
const READ_BUFFER_BYTES: usize = 2048;

/// `GET /ws`: check the page's origin and the client's address, then upgrade with buffers
/// sized for many mostly idle connections. Refusals are plain HTTP (403, 429), before any
/// WebSocket exists.
pub async fn upgrade(
    ws: WebSocketUpgrade,
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    join: Result<Query<UrlJoin>, QueryRejection>,
) -> Response {
    let admission = app.hub.admission();
    if !admission.origin_allowed(&headers) {
        app.hub.metrics().upgrade_refused(Refusal::Origin);
        return (
            StatusCode::FORBIDDEN,
            "this origin may not open the signalling socket (see --allowed-origins)",
        )
            .into_response();
    }
    let permit = match admission.admit(peer.ip()) {
        Ok(permit) => permit,
        Err(refusal) => {
            app.hub.metrics().upgrade_refused(refusal);
            return (
                StatusCode::TOO_MANY_REQUESTS,
                "too many connections from your address",
            )
                .into_response();
        }
    };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_owned());
    // A join in the URL makes the welcome the first frame: no round trip for a `join` frame.
    let first = match (query.is_some_and(|q| !q.is_empty()), join) {
        (false, _) => None,
        (true, Ok(Query(join))) => Some(
            // Well-formed, but not one application: the same refusal as in a join frame.
            join.into_frame().map_err(SignalError::InvalidApp),
        ),
        (true, Err(rejection)) => Some(Err(SignalError::Malformed(format!(
            "join in the URL: {}",
            rejection.body_text()
        )))),
    };
    let hard_cap = app.hub.config().hard_message_cap();
    ws.read_buffer_size(READ_BUFFER_BYTES)
        // Write each frame straight through; queuing is done (bounded) in front of the socket.
        .write_buffer_size(0)
        .max_write_buffer_size(hard_cap + 1024)
        .max_message_size(hard_cap)
        .max_frame_size(hard_cap)
        .on_upgrade(move |socket| async move {
            let metrics = app.hub.metrics();
            metrics.connections.inc();
            let session = Session {
                bearer,
                loopback: app.loopback,
                ..Session::new(app.hub.clone(), socket, permit)
            };
            session.run(first, app.shutdown).await;
            app.hub.metrics().connections.dec();
        })
}

/// Token bucket: `rate` messages per second sustained, `burst` above it.
#[derive(Debug)]
struct RateLimit {
    tokens: f64,
    last: Instant,
    strikes: u32,
}

impl RateLimit {
    fn new(burst: u32) -> Self {
        RateLimit {
            tokens: f64::from(burst),
            last: Instant::now(),
            strikes: 0,
        }
    }

    /// A larger allowance from now on: the bucket is filled to its new `burst` (a host's
    /// first answers come right after its join).
    fn fill(&mut self, burst: u32) {
        self.tokens = self.tokens.max(f64::from(burst));
    }

    /// Whether one more message may pass now.
    fn allow(&mut self, rate: u32, burst: u32) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * f64::from(rate);
        self.tokens = (self.tokens + refill).min(f64::from(burst));
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            self.strikes = 0;
            true
        } else {
            self.strikes += 1;
            false
        }
    }
}

/// How a session ended, which decides what the room is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The client closed cleanly: leave at once.
    Clean,
    /// The link broke or a limit closed it: keep the peer for the reconnect grace.
    Lost,
    /// The peer resumed elsewhere, or its instance joined again: the room must not hear
    /// anything more from this connection.
    Replaced,
}

/// The refresh timer's deadline (a year away when there is none: its branch is off then).
fn refresh_at(at: Option<Instant>) -> tokio::time::Instant {
    let at = at.unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
    tokio::time::Instant::from_std(at)
}

struct Session {
    hub: Arc<Hub>,
    socket: WebSocket,
    conn: ConnId,
    kick: Arc<Kick>,
    link: Link,
    rx: mpsc::Receiver<Utf8Bytes>,
    joined: Option<(String, PeerId)>,
    /// It joined as its room's host: its frames grow with its clients (see `allowance`).
    host: bool,
    subscribed: bool,
    rate: RateLimit,
    last_heard: Instant,
    /// This connection's place in its address's count.
    permit: Permit,
    /// `Authorization: Bearer` of the upgrade, for the all-rooms subscription.
    bearer: Option<String>,
    /// The server listens on loopback: the all-rooms subscription needs no token.
    loopback: bool,
    /// When this joined peer gets fresh TURN credentials (`ice_servers` frame).
    ice_refresh_at: Option<Instant>,
}

impl Session {
    fn new(hub: Arc<Hub>, socket: WebSocket, permit: Permit) -> Self {
        let conn = hub.next_conn_id();
        let kick = Arc::new(Kick::default());
        let config = hub.config();
        let (link, rx) = Link::new(
            conn,
            config.outbound_queue,
            host_queue(config),
            kick.clone(),
        );
        let rate = RateLimit::new(hub.config().rate_burst);
        Session {
            hub,
            socket,
            conn,
            kick,
            link,
            rx,
            joined: None,
            host: false,
            subscribed: false,
            rate,
            last_heard: Instant::now(),
            permit,
            bearer: None,
            loopback: false,
            ice_refresh_at: None,
        }
    }

    /// Serve the connection; `first` is the join its URL carried, answered before anything
    /// is read.
    async fn run(
        mut self,
        first: Option<Result<ClientFrame, SignalError>>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let refused = match first {
            Some(Ok(join)) => Box::pin(self.dispatch(join)).await.err(),
            Some(Err(err)) => Some(err),
            None => None,
        };
        let closing = match refused {
            Some(err) => self.refuse(err).await.err(),
            None => None,
        };
        let end = match closing {
            Some(cause) => self.close(cause).await,
            None => self.serve(&mut shutdown).await,
        };
        if self.subscribed {
            self.hub.unsubscribe(self.conn);
        }
        if let Some((room, peer)) = self.joined.take() {
            match end {
                End::Clean => self.hub.leave(&room, peer, &self.link, LeaveReason::Left),
                End::Lost => self.hub.detach(&room, peer, &self.link),
                End::Replaced => {}
            }
        }
    }

    async fn serve(&mut self, shutdown: &mut watch::Receiver<bool>) -> End {
        let hub = self.hub.clone();
        let config = hub.config();
        let mut ping = tokio::time::interval(config.ping_interval);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ping.tick().await;
        loop {
            let kick = self.kick.clone();
            tokio::select! {
                cause = kick.kicked() => return self.close(cause).await,
                _ = shutdown.changed() => return self.close(CloseCause::Shutdown).await,
                incoming = self.socket.recv() => match incoming {
                    Some(Ok(message)) => {
                        self.last_heard = Instant::now();
                        match message {
                            Message::Close(_) => {
                                // Reading once more flushes tungstenite's queued close reply,
                                // so the client sees a clean close rather than a reset.
                                let _ = tokio::time::timeout(
                                    Duration::from_millis(200),
                                    self.socket.recv(),
                                )
                                .await;
                                return End::Clean;
                            }
                            Message::Pong(_) => {}
                            other => {
                                // Boxed: its futures (parsing, a join) exist only while a
                                // frame is handled, not in every idle connection's task.
                                if let Err(cause) = Box::pin(self.on_message(other)).await {
                                    return self.close(cause).await;
                                }
                            }
                        }
                    }
                    Some(Err(err)) => {
                        tracing::debug!(conn = self.conn, %err, "websocket read failed");
                        if is_capacity_error(&err) {
                            let too_large = SignalError::MessageTooLarge {
                                max: config.max_message_bytes,
                            };
                            let _ = self.refuse(too_large).await;
                            return self.close(CloseCause::TooLarge).await;
                        }
                        return End::Lost;
                    }
                    None => return End::Lost,
                },
                Some(text) = self.rx.recv() => {
                    if let Err(cause) = self.write(Message::Text(text)).await {
                        return self.close(cause).await;
                    }
                }
                () = tokio::time::sleep_until(refresh_at(self.ice_refresh_at)),
                    if self.ice_refresh_at.is_some() =>
                {
                    if let Err(cause) = Box::pin(self.refresh_ice_servers()).await {
                        return self.close(cause).await;
                    }
                }
                _ = ping.tick() => {
                    if self.last_heard.elapsed() >= config.idle_timeout {
                        return self.close(CloseCause::IdleTimeout).await;
                    }
                    if let Err(cause) = self.write(Message::Ping(Default::default())).await {
                        return self.close(cause).await;
                    }
                }
            }
        }
    }

    /// The ICE servers for `peer`: the configured ones, then the TURN server with fresh
    /// credentials (and the time to renew them) when there is one.
    fn ice_servers(&mut self, peer: PeerId) -> Cow<'static, [IceServer]> {
        let config = self.hub.config();
        let Some(turn) = config.turn() else {
            self.ice_refresh_at = None;
            return Cow::Owned(config.ice_servers.0.clone());
        };
        self.ice_refresh_at = Some(Instant::now() + turn.refresh_after());
        let mut servers = config.ice_servers.0.clone();
        servers.push(turn.credentials(peer, SystemTime::now()));
        Cow::Owned(servers)
    }

    /// Sends a joined peer fresh TURN credentials (an `ice_servers` frame) before the last
    /// ones expire.
    async fn refresh_ice_servers(&mut self) -> Result<(), CloseCause> {
        let Some((_, peer)) = self.joined else {
            self.ice_refresh_at = None;
            return Ok(());
        };
        let ice_servers = self.ice_servers(peer);
        self.hub.metrics().turn_refreshes.inc();
        self.reply(&ServerFrame::IceServers { ice_servers }).await
    }

    /// Write one frame. Fails with [`CloseCause::SlowReader`] if the client did not take it
    /// within the write timeout, or with the kick's cause if the connection is told to close
    /// meanwhile: a client whose queue filled up is closed then, not a write timeout later.
    async fn write(&mut self, message: Message) -> Result<(), CloseCause> {
        let timeout = self.hub.config().write_timeout;
        let kick = self.kick.clone();
        tokio::select! {
            written = tokio::time::timeout(timeout, self.socket.send(message)) => match written {
                Ok(Ok(())) => Ok(()),
                _ => Err(CloseCause::SlowReader),
            },
            cause = kick.kicked() => Err(cause),
        }
    }

    /// Close with a reason the client can read, and count it.
    async fn close(&mut self, cause: CloseCause) -> End {
        let replaced = matches!(
            cause,
            CloseCause::ReplacedByResume | CloseCause::ReplacedByInstance
        );
        if !replaced {
            self.hub.metrics().close(cause);
        }
        let code = match cause {
            CloseCause::SlowReader | CloseCause::RateLimit => close_code::POLICY,
            CloseCause::TooLarge => close_code::SIZE,
            CloseCause::IdleTimeout | CloseCause::Shutdown => close_code::AWAY,
            CloseCause::ReplacedByResume => 4000,
            CloseCause::ReplacedByInstance => ackwire_signalling::CLOSE_REPLACED,
        };
        let frame = CloseFrame {
            code,
            reason: cause.as_str().into(),
        };
        // A slow reader gets one short chance at the reason; it is closed either way.
        // Boxed, as below: a closing connection's futures would otherwise make every idle
        // connection's task that much bigger.
        let _ = Box::pin(tokio::time::timeout(
            Duration::from_millis(200),
            self.socket.send(Message::Close(Some(frame))),
        ))
        .await;
        // Read (and drop) what the client still sends until its close reply: a socket closed
        // with unread input is reset by the kernel, and a client may then never see the close
        // frame and its reason.
        let drain = async {
            while let Some(Ok(message)) = self.socket.recv().await {
                if matches!(message, Message::Close(_)) {
                    break;
                }
            }
        };
        let _ = Box::pin(tokio::time::timeout(CLOSE_DRAIN, drain)).await;
        if replaced {
            End::Replaced
        } else {
            // Shutting down is not the peer's choice; a restarted server has no rooms anyway.
            End::Lost
        }
    }

    /// Handle one data frame. `Err` means a limit says the connection must close.
    async fn on_message(&mut self, message: Message) -> Result<(), CloseCause> {
        let hub = self.hub.clone();
        let config = hub.config();
        let (rate, burst) = allowance(config, self.host);
        if !self.rate.allow(rate, burst) {
            if self.rate.strikes > config.rate_strikes {
                return Err(CloseCause::RateLimit);
            }
            return self.refuse(SignalError::RateLimited).await;
        }
        let text = match message {
            Message::Text(text) => text,
            Message::Binary(_) => {
                return self
                    .refuse(SignalError::Malformed(
                        "binary frames are not supported; send JSON text".into(),
                    ))
                    .await;
            }
            // Tungstenite answers pings itself.
            _ => return Ok(()),
        };
        if text.len() > config.max_message_bytes {
            let err = SignalError::MessageTooLarge {
                max: config.max_message_bytes,
            };
            return self.refuse(err).await;
        }
        let result = match serde_json::from_str::<ClientFrame>(text.as_str()) {
            Ok(message) => Box::pin(self.dispatch(message)).await,
            Err(err) => Err(SignalError::Malformed(err.to_string())),
        };
        match result {
            Ok(()) => Ok(()),
            Err(err) => self.refuse(err).await,
        }
    }

    /// Send an error frame and count it.
    async fn refuse(&mut self, err: SignalError) -> Result<(), CloseCause> {
        self.hub.metrics().error(&err);
        tracing::debug!(conn = self.conn, code = err.code().as_str(), %err, "refused");
        self.reply(&error_frame(&err)).await
    }

    async fn reply(&mut self, frame: &ServerFrame<'_>) -> Result<(), CloseCause> {
        self.write(Message::Text(to_text(frame))).await
    }

    fn own_id(&self, claimed: Option<PeerId>) -> Result<(&str, PeerId), SignalError> {
        let (room, id) = self.joined.as_ref().ok_or(SignalError::NotJoined)?;
        match claimed {
            Some(claimed) if claimed != *id => Err(SignalError::PeerIdMismatch { claimed }),
            _ => Ok((room, *id)),
        }
    }

    async fn dispatch(&mut self, frame: ClientFrame) -> Result<(), SignalError> {
        match frame {
            ClientFrame::Join {
                version,
                room,
                kind,
                udp_addr,
                instance,
                udp_key,
                app,
                role,
                ticket,
                webtransport,
                resume,
            } => {
                if let Some((room, _)) = &self.joined {
                    return Err(SignalError::AlreadyJoined(room.clone()));
                }
                if version != VERSION {
                    return Err(SignalError::UnsupportedVersion(version));
                }
                validate_room_name(&room)?;
                if let Some(instance) = &instance {
                    validate_instance(instance)?;
                }
                // Checked on a resume too, as the instance is, though a resume keeps the
                // room's application (the peer is in the room already).
                if let Some(app) = &app {
                    app.validate()?;
                }
                if udp_addr.is_some() && kind != PeerKind::Native {
                    return Err(SignalError::InvalidJoin(
                        "udp_addr is only for native peers",
                    ));
                }
                if udp_key.is_some() && udp_addr.is_none() {
                    return Err(SignalError::InvalidJoin(
                        "udp_key is only for native peers with a udp_addr",
                    ));
                }
                if let Some(service) = &webtransport {
                    if role != Role::Host {
                        return Err(SignalError::InvalidJoin(
                            "webtransport is only for a host room's host",
                        ));
                    }
                    validate_webtransport(service)?;
                }
                // With tickets, a fresh join shows its ticket before it touches any room (a
                // refusal changes nothing); where tickets are for hosts alone, another join
                // that carries one shows it too. A resume needs none: its token proves the
                // ticketed join it takes back, and keeps that join's identity.
                let identity = match (self.hub.tickets(), &resume) {
                    (Some(tickets), None) if ticket.is_some() || tickets.required(role) => {
                        let claims = tickets.check(ticket.as_deref(), &room, role, app.as_ref())?;
                        Some(claims.identity().to_owned())
                    }
                    _ => None,
                };
                let request = JoinRequest {
                    room,
                    kind,
                    role,
                    udp_addr,
                    udp_key,
                    webtransport: webtransport.map(|w| *w),
                    client: self.permit.client(),
                    instance,
                    identity,
                    app,
                    resume,
                    id: None,
                    replaces: None,
                };
                let room = request.room.clone();
                let joined = Box::pin(join(self.hub.clone(), self.link.clone(), request)).await?;
                self.joined = Some((room.clone(), joined.peer_id));
                self.host = self.hub.is_host(&room, joined.peer_id);
                if self.host {
                    self.rate.fill(allowance(self.hub.config(), true).1);
                    self.link.widen();
                }
                let ice_servers = self.ice_servers(joined.peer_id);
                // The client's failure to read shows up again at the next write or ping.
                let _ = self.reply(&joined.welcome(&room, ice_servers)).await;
                Ok(())
            }
            ClientFrame::Signal { to, from, data } => {
                let (room, id) = self.own_id(from)?;
                self.hub.relay(room, id, &self.link, to, &data)
            }
            ClientFrame::Stats { from, links } => {
                let (room, id) = self.own_id(from)?;
                self.hub.report_stats(room, id, &self.link, &links)
            }
            ClientFrame::Subscribe { room, token } => {
                match &room {
                    Some(room) => {
                        validate_room_name(room)?;
                        // Its peers on other instances first, so the snapshot lists them.
                        if let Some(broker) = self.hub.broker() {
                            broker.enter(room).await?;
                        }
                    }
                    None => self.may_watch_all(token.as_deref().or(self.bearer.as_deref()))?,
                }
                // Every room of every instance: Redis has them all.
                let shared = match (&room, self.hub.broker()) {
                    (None, Some(broker)) => Some(broker.watch_all().await?),
                    _ => None,
                };
                let local = self.hub.subscribe(room, self.link.clone());
                let rooms = shared.unwrap_or(local);
                self.subscribed = true;
                let _ = self.reply(&ServerFrame::Subscribed { rooms }).await;
                Ok(())
            }
            ClientFrame::Update { webtransport } => {
                let (room, id) = self.own_id(None)?;
                if let Some(service) = &webtransport {
                    validate_webtransport(service)?;
                }
                self.hub
                    .update(room, id, &self.link, webtransport.map(|w| *w))
            }
            ClientFrame::Leave => {
                let (room, id) = self.joined.take().ok_or(SignalError::NotJoined)?;
                self.hub.leave(&room, id, &self.link, LeaveReason::Left);
                Ok(())
            }
        }
    }
}

/// A host's WebTransport service, in its join or its update: refused as `invalid_join`.
fn validate_webtransport(service: &WebTransportInfo) -> Result<(), SignalError> {
    service.validate().map_err(|e| {
        SignalError::InvalidJoin(match e {
            InvalidWebTransport::TooManyHashes => "webtransport.cert_hashes holds at most 4 hashes",
            _ => "webtransport.url must be https://, at most 256 characters, with no query or fragment",
        })
    })
}

/// The messages per second (sustained, burst) a connection may send. A host room's host
/// signals for all its clients (an answer and candidates for each client's link, its report
/// of every link each second, and all of it at once when its clients come back after a
/// restart), so its allowance grows by 2/s sustained and 4 of burst per place of the host
/// room's cap: 532/s and 1,064 at the defaults. Anyone else's is the configured one.
fn allowance(config: &crate::config::Config, host: bool) -> (u32, u32) {
    if !host {
        return (config.rate_per_sec, config.rate_burst);
    }
    let places = u32::try_from(config.max_peers_per_host_room).unwrap_or(u32::MAX);
    (
        config.rate_per_sec.saturating_add(places.saturating_mul(2)),
        config.rate_burst.saturating_add(places.saturating_mul(4)),
    )
}

/// The frames a host room's host may have waiting before it counts as not reading: it
/// receives for all its clients (their offers, candidates, joins and leaves, all at once when
/// they come back after its restart), so the queue grows by 8 frames per place of the host
/// room's cap: 2,112 at the defaults. Anyone else's is `--outbound-queue`.
fn host_queue(config: &crate::config::Config) -> usize {
    config
        .outbound_queue
        .saturating_add(config.max_peers_per_host_room.saturating_mul(8))
}

/// Puts a connection in a room. With a broker the room is shared: its peers on other
/// instances are loaded first, a new peer's place (and id) is reserved across instances, and
/// a resume of a peer another instance held takes it over from there.
async fn join(hub: Arc<Hub>, link: Link, mut request: JoinRequest) -> Result<Joined, SignalError> {
    let Some(broker) = hub.broker() else {
        return hub.join(request, link);
    };
    let room = request.room.clone();
    let result = async {
        broker.enter(&room).await?;
        match &request.resume {
            Some(resume) if !hub.holds_local(&room, resume.peer_id) => {
                let token = new_token();
                let info = broker.take_over(&room, resume, &token).await?;
                Ok(hub.adopt(&room, info, token, link.clone(), request.client))
            }
            Some(_) => hub.join(request, link.clone()),
            None => {
                // The room's shape and host seat first: a join they refuse is told so, not
                // that the room is full.
                let taken = hub.places_taken(
                    &room,
                    request.role,
                    request.instance.as_deref(),
                    request.identity.as_deref(),
                )?;
                let config = hub.config();
                let cap = match request.role.topology() {
                    Topology::Mesh => config.max_peers_per_room,
                    Topology::Host => config.max_peers_per_host_room,
                };
                let limits = (cap, config.max_rooms, config.rooms_per_ip_per_min);
                let identity = request.identity.clone();
                let (id, replaces) = broker
                    .reserve(
                        &room,
                        &taken,
                        request.client,
                        limits,
                        (request.app.as_ref(), request.role, identity.as_deref()),
                    )
                    .await?;
                request.id = Some(id);
                request.replaces = replaces;
                hub.join(request, link.clone())
                    .inspect_err(|_| broker.release(&room, id, (identity.as_deref(), replaces)))
            }
        }
    }
    .await;
    if result.is_err() {
        hub.settle(&room);
    }
    result
}

impl Session {
    /// Every room's peers and stats are the operator's: they need the admin token, or, with
    /// none configured, a server that only local clients can reach.
    fn may_watch_all(&self, token: Option<&str>) -> Result<(), SignalError> {
        let allowed = match &self.hub.config().admin_token {
            Some(admin) => token.is_some_and(|t| tokens_match(t, admin)),
            None => self.loopback,
        };
        if allowed {
            Ok(())
        } else {
            Err(SignalError::AdminTokenRequired)
        }
    }
}

fn is_capacity_error(err: &axum::Error) -> bool {
    // axum wraps tungstenite's error; its message is the stable way to see the kind.
    err.to_string().contains("Space limit exceeded")
}
