//! The native driver: a thin adapter around the room member (`ackwire_room::member`).
//!
//! One tokio task owns the clock, one UDP socket for every native peer, one WebRTC session
//! per browser link ([`webrtc`]; a host instead holds all its clients' in the task, on a
//! socket of their own: [`lite`]) and the signalling WebSocket ([`signalling`]); it moves
//! bytes and events between them and the member (its outputs through the loop both drivers
//! share, [`outputs`]), and hands the member's events to the
//! [`Room`](crate::Room). The member sits behind a mutex the room's calls share with the
//! task: a send is checked and queued in the caller's call, and the task is woken to carry
//! it out. A host room's host also serves its browsers' WebTransport ([`webtransport`]) and
//! WebSocket ([`websocket`]); a native client may dial either as a browser would
//! ([`wt_client`], [`ws_client`]); the task drives the four alike ([`sessions`]), and both
//! hosts match the sessions that come to them to links by one set of rules ([`tokens`]). Every
//! decision about links — who offers, when to retry, what a failure means — is
//! the member's, shared with the browser driver.

mod certificate;
mod events;
mod h3;
pub(crate) mod lite;
mod sessions;
pub(crate) mod signalling;
mod tokens;
#[cfg(test)]
mod unverified;
pub(crate) mod webrtc;
pub(crate) mod websocket;
pub(crate) mod webtransport;
mod ws_client;
mod wt_client;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ackwire_room::keys::NoiseKeys;
use ackwire_room::member::{
    Command, Event, Member, MemberConfig, MemberFrame, PeerId, Route, TransportEvent, TransportId,
};
use ackwire_signalling::{PeerKind, Role, RoomUrl, UrlJoin};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;

use self::certificate::HostTls;
use self::events::EventQueue;
use self::lite::{LiteError, LiteHost};
use self::sessions::Sessions;
use self::signalling::{Socket, SocketEvent, Trust};
use self::webrtc::{IceOptions, Session, WebRtcEvent};
use self::websocket::{WsHost, WsPlan};
use self::webtransport::{WtError, WtHost, WtPlan};
use self::ws_client::WsClient;
use self::wt_client::WtClient;
use crate::config::{NativeOptions, RoomConfig};
use crate::error::JoinError;
use crate::net::timer::Timer;
use crate::net::udp::{self, Link, RecvBuffers};
use crate::outputs::{self, Carrier};

/// Leaving: the links' goodbyes get this long to go out.
const LEAVE_GRACE: Duration = Duration::from_millis(500);

/// What the room's calls and the driver's task share.
#[derive(Debug)]
struct Shared {
    member: Member,
    start: Instant,
}

impl Shared {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // The member stays consistent across a panic elsewhere: every call into it completes.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// The room's handle on its driver.
#[derive(Debug)]
pub(crate) struct Driver {
    shared: Arc<Mutex<Shared>>,
    wake: Arc<Notify>,
    events: Arc<EventQueue>,
    /// Datagrams the room's sockets refused to send, as the task last counted them.
    send_failures: Arc<AtomicU64>,
    stop: Option<oneshot::Sender<()>>,
    done: Option<oneshot::Receiver<()>>,
}

/// 16 random hex digits: this process, as the room's members know it across server restarts.
fn random_instance() -> String {
    format!("n{:016x}", rand::random::<u64>())
}

/// The address of the interface this machine reaches `server` (`host:port`) through, in the
/// family of `bind`: a UDP socket connected there picks the route, and nothing is sent.
pub(crate) fn route_to(server: &str, bind: SocketAddr) -> std::io::Result<IpAddr> {
    use std::net::ToSocketAddrs;
    let target = server
        .to_socket_addrs()?
        .find(|a| a.is_ipv4() == bind.is_ipv4())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no address of the bound family",
            )
        })?;
    let probe = std::net::UdpSocket::bind(SocketAddr::new(bind.ip(), 0))?;
    probe.connect(target)?;
    Ok(probe.local_addr()?.ip())
}

/// A host's WebTransport (its socket and certificate: its own, `options.certificate`, or
/// self-signed) and, unless `options.websocket` is off, its WebSocket (its listener), on
/// `ice_bind`'s IP: what its join publishes, and the rest of their setup once the runtime
/// runs.
fn plan_sessions(
    url: &RoomUrl,
    options: &NativeOptions,
    ice_bind: SocketAddr,
) -> Result<(WtPlan, Option<WsPlan>), JoinError> {
    let rotation = options.webtransport_rotation;
    if rotation.is_zero() || rotation > webtransport::MAX_ROTATION {
        return Err(JoinError::WebTransportRotation(rotation));
    }
    let own = options
        .certificate
        .as_ref()
        .map(HostTls::load)
        .transpose()?;
    let server = url.server();
    let bind = SocketAddr::new(ice_bind.ip(), options.webtransport_port);
    let route = || route_to(&server, bind);
    let mut wt =
        WtPlan::bind(bind, options.public_ip, route, own.clone()).map_err(|e| match e {
            WtError::Bind { addr, source } => JoinError::Bind { addr, source },
            WtError::Address(source) => JoinError::NothingToAdvertise {
                bind,
                server: server.clone(),
                source,
            },
            other => JoinError::Runtime(std::io::Error::other(other)),
        })?;
    if !options.websocket {
        return Ok((wt, None));
    }
    let bind = SocketAddr::new(ice_bind.ip(), options.websocket_port);
    let ws = WsPlan::bind(bind, wt.host(), own.as_ref()).map_err(|e| JoinError::Bind {
        addr: bind,
        // Say which socket this is: the others are UDP.
        source: std::io::Error::new(
            e.kind(),
            format!("the host's WebSocket listener (TCP): {e}"),
        ),
    })?;
    wt.serve_websocket(ws.url().to_owned());
    Ok((wt, Some(ws)))
}

impl Driver {
    /// Checks everything that can be checked now, then starts the driver's task: on the
    /// caller's tokio runtime, or on a thread of its own without one.
    pub(crate) fn start(url: RoomUrl, config: RoomConfig) -> Result<Driver, JoinError> {
        let options = &config.native;
        let trust = match &options.tls_ca {
            None => Trust::PublicRoots,
            // A host room's client may check its host's own certificate with it (a `wss://`
            // WebSocket, WebTransport without hashes); anyone else, only the server's.
            Some(path) if !url.ws_url.starts_with("wss://") && config.role != Role::Client => {
                return Err(JoinError::TlsCa {
                    path: path.clone(),
                    reason: format!(
                        "the room URL {} is not https://, and only a host room's client checks anything else with it",
                        url.ws_url
                    ),
                });
            }
            Some(path) => Trust::from_pem_file(path)?,
        };
        let socket = udp::bind(options.bind).map_err(|source| JoinError::Bind {
            addr: options.bind,
            source,
        })?;
        let bound = socket.local_addr().map_err(|source| JoinError::Bind {
            addr: options.bind,
            source,
        })?;
        let udp_addr = match options.advertise {
            Some(addr) => addr,
            None if bound.ip().is_unspecified() => {
                let server = url.server();
                match route_to(&server, bound) {
                    Ok(ip) => SocketAddr::new(ip, bound.port()),
                    Err(source) => {
                        return Err(JoinError::NothingToAdvertise {
                            bind: bound,
                            server,
                            source,
                        });
                    }
                }
            }
            None => bound,
        };
        let mut member_config = MemberConfig::new(
            url.room.clone(),
            config.app.clone(),
            PeerKind::Native,
            random_instance(),
        );
        member_config.udp_addr = Some(udp_addr);
        member_config.secret = rand::random();
        member_config.seed = rand::random();
        member_config.emulation = config.emulation.clone();
        member_config.role = config.role;
        member_config.ticket = config.ticket.clone();
        member_config.host_identity = config.host_identity.clone();
        member_config.connection = config.connection.clone();
        member_config.stats_period = config.stats_period;
        member_config.attempt_timeout = config.attempt_timeout;
        member_config.peer_budget = config.peer_budget;
        // Links to other natives are encrypted with a key new at each start, announced in the
        // join; browsers' links ride DTLS either way.
        if options.encrypt {
            member_config.udp_keys = Some(Arc::new(NoiseKeys::generate()));
        } else {
            tracing::warn!("encryption off: links to other natives are plaintext");
        }
        let ice_bind = options
            .ice_bind
            .unwrap_or_else(|| SocketAddr::new(options.bind.ip(), 0));
        // A host's WebTransport and WebSocket: bound now, so the join publishes them.
        let rotation = options.webtransport_rotation;
        let serves = config.role == Role::Host && options.host_ice_lite && options.webtransport;
        let (webtransport, websocket) = match serves {
            true => {
                let (wt, ws) = plan_sessions(&url, options, ice_bind)?;
                member_config.webtransport = Some(wt.info().clone());
                (Some(wt), ws)
            }
            false => (None, None),
        };
        // A client that dials its host's WebTransport as a browser does (load generators),
        // and checks a host's own certificate as a browser does, with `tls_ca` besides.
        let client = config.role == Role::Client;
        let (dial_wt, dial_ws) = (
            client && options.dial_webtransport,
            client && options.dial_websocket,
        );
        let host_roots = (dial_wt || dial_ws).then(|| trust.host_roots());
        let dialer = (host_roots.clone())
            .filter(|_| dial_wt)
            .map(|roots| WtClient::new(bound.ip(), roots));
        member_config.dials_webtransport = dialer.is_some();
        // A client that dials its host's WebSocket as a browser without WebRTC does.
        let ws_dialer = (host_roots.filter(|_| dial_ws))
            .map(WsClient::new)
            .transpose()
            .map_err(|e| JoinError::Runtime(std::io::Error::other(e)))?;
        if ws_dialer.is_some() {
            member_config.dials_websocket = true;
            member_config.webrtc = false;
        }
        let member = Member::new(member_config, Duration::ZERO)?;
        tracing::info!(room = %url.room, server = %url.ws_url, %udp_addr, %ice_bind, "joining");
        // A host's WebRTC sockets, each with the address its clients reach it at.
        let lite = match (config.role, options.host_ice_lite) {
            (Role::Host, true) => {
                let server = url.server();
                let plan = lite::plan(ice_bind, options.public_ip, || route_to(&server, ice_bind))
                    .map_err(|source| JoinError::NothingToAdvertise {
                        bind: ice_bind,
                        server: server.clone(),
                        source,
                    })?;
                Some(plan)
            }
            _ => None,
        };

        let shared = Arc::new(Mutex::new(Shared {
            member,
            start: Instant::now(),
        }));
        let wake = Arc::new(Notify::new());
        let reliable = config
            .app
            .channels
            .iter()
            .map(|k| k.is_reliable())
            .collect();
        let events = Arc::new(EventQueue::new(options.event_budget, reliable));
        let send_failures = Arc::new(AtomicU64::new(0));
        let (stop, stop_rx) = oneshot::channel();
        let (done_tx, done) = oneshot::channel();
        let precise = config.emulation.is_some();
        let setup = {
            let (shared, wake, events) = (shared.clone(), wake.clone(), events.clone());
            let send_failures = send_failures.clone();
            let ice = IceOptions {
                bind: ice_bind,
                public_ip: options.public_ip,
                servers: Vec::new(),
            };
            let epoch = lock(&shared).start.into_std();
            move || -> Result<_, JoinError> {
                let mut udp = Link::new(socket, None)
                    .map_err(|e| JoinError::Runtime(std::io::Error::other(e)))?;
                // A room's few links wake the loop per datagram; it never reads on a timer.
                udp.watch().map_err(JoinError::Runtime)?;
                let mut io = Io::new(url, trust, udp, ice, events, send_failures);
                io.dialer = dialer;
                io.ws_dialer = ws_dialer;
                if let Some(plan) = lite {
                    let host = LiteHost::bind(&plan, epoch).map_err(|e| match e {
                        LiteError::Bind { addr, source } => JoinError::Bind { addr, source },
                        other => JoinError::Runtime(std::io::Error::other(other)),
                    })?;
                    tracing::info!(candidates = ?host.local_addrs(), "host: every client's WebRTC on these sockets (ICE-lite)");
                    io.lite = Some(host);
                }
                if let Some(plan) = webtransport {
                    let now = lock(&shared).now();
                    let host = WtHost::start(plan, tokens::HOLD, Some(rotation), now)
                        .map_err(|e| JoinError::Runtime(std::io::Error::other(e)))?;
                    tracing::info!(url = %host.info().url, local = %host.local_addr(), "host: browsers' WebTransport on this socket");
                    io.webtransport = Some(host);
                }
                if let Some(plan) = websocket {
                    let host = WsHost::start(plan, tokens::HOLD).map_err(JoinError::Runtime)?;
                    tracing::info!(url = %host.url(), local = %host.local_addr(), "host: browsers' WebSocket on this listener");
                    io.websocket = Some(host);
                }
                Ok(run(shared, wake, io, precise, stop_rx, done_tx))
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let _entered = handle.enter();
                let task = setup()?;
                handle.spawn(task);
            }
            Err(_) => {
                // A game loop without a runtime: the room runs one of its own, on its thread.
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(JoinError::Runtime)?;
                let task = {
                    let _entered = runtime.enter();
                    setup()?
                };
                std::thread::Builder::new()
                    .name("ackwire-room".into())
                    .spawn(move || runtime.block_on(task))
                    .map_err(JoinError::Runtime)?;
            }
        }
        Ok(Driver {
            shared,
            wake,
            events,
            send_failures,
            stop: Some(stop),
            done: Some(done),
        })
    }

    /// Runs `f` on the member at the driver's `now`, then wakes the task if the member has
    /// something for it.
    pub(crate) fn with_member<R>(&self, f: impl FnOnce(&mut Member, Duration) -> R) -> R {
        let (result, wake) = {
            let mut shared = lock(&self.shared);
            let now = shared.now();
            let result = f(&mut shared.member, now);
            // Output to carry out, or a link's packet due sooner than the task's deadline.
            let wake = shared.member.has_output() || shared.member.take_rearm();
            (result, wake)
        };
        if wake {
            self.wake.notify_one();
        }
        result
    }

    pub(crate) fn poll_event(&self) -> Option<Event> {
        let (event, made_room) = self.events.try_pop()?;
        self.taken(made_room);
        Some(event)
    }

    /// Resolves at the next event queued after this call (or the room's end).
    pub(crate) fn change(&self) -> impl std::future::Future<Output = ()> + '_ {
        self.events.changed()
    }

    pub(crate) fn receive(&self, channel: u8) -> Option<(PeerId, Vec<u8>)> {
        let (message, made_room) = self.events.take_message(channel)?;
        self.taken(made_room);
        Some(message)
    }

    /// Cancel-safe (see `EventQueue::next`).
    pub(crate) async fn next_event(&mut self) -> Option<Event> {
        let (event, made_room) = self.events.next().await?;
        self.taken(made_room);
        Some(event)
    }

    /// Unreliable messages dropped because the game was not taking its events.
    pub(crate) fn dropped_events(&self) -> u64 {
        self.events.dropped()
    }

    /// Datagrams the room's sockets refused to send.
    pub(crate) fn send_failures(&self) -> u64 {
        self.send_failures.load(Ordering::Relaxed)
    }

    /// Taking an event made room in a full queue: the task, which stopped reading for want of
    /// it, reads again.
    fn taken(&self, made_room: bool) {
        if made_room {
            self.wake.notify_one();
        }
    }

    pub(crate) async fn close(&mut self) {
        self.leave();
        if let Some(done) = self.done.take() {
            let _ = done.await;
        }
    }

    /// [`close`](Self::close) without waiting: the driver's task leaves (and ends) by itself.
    pub(crate) fn leave(&mut self) {
        if let Some(stop) = self.stop.take() {
            // Closed now, so a send after this is refused at once; the task says goodbye.
            self.with_member(|member, now| member.close(now));
            let _ = stop.send(());
        }
    }

    /// Whether the driver's task has ended: the room left, or never started.
    pub(crate) fn is_closed(&mut self) -> bool {
        let Some(done) = &mut self.done else {
            return true;
        };
        let ended = !matches!(done.try_recv(), Err(oneshot::error::TryRecvError::Empty));
        if ended {
            self.done = None;
        }
        ended
    }
}

/// Everything the task moves bytes between: sockets, sessions, the member's events.
struct Io {
    url: RoomUrl,
    trust: Trust,
    udp: Link,
    ice: IceOptions,
    socket: Option<(u64, Socket)>,
    sockets_opened: u64,
    socket_events: mpsc::UnboundedSender<(u64, SocketEvent)>,
    socket_rx: mpsc::UnboundedReceiver<(u64, SocketEvent)>,
    sessions: HashMap<TransportId, Session>,
    /// A host's clients' WebRTC, all on one socket (instead of `sessions`).
    lite: Option<LiteHost>,
    webrtc_events: mpsc::UnboundedSender<(TransportId, WebRtcEvent)>,
    webrtc_rx: mpsc::UnboundedReceiver<(TransportId, WebRtcEvent)>,
    /// A host's browsers' WebTransport sessions, all on one socket.
    webtransport: Option<WtHost>,
    /// A client's sessions to its host's WebTransport (`NativeOptions::dial_webtransport`).
    dialer: Option<WtClient>,
    /// A host's browsers' WebSockets, all on one listener.
    websocket: Option<WsHost>,
    /// A client's connections to its host's WebSocket (`NativeOptions::dial_websocket`).
    ws_dialer: Option<WsClient>,
    events: Arc<EventQueue>,
    /// What [`Room::send_failures`](crate::Room::send_failures) reads: the UDP socket's, the
    /// host's WebRTC sockets' and its WebTransport sessions' and WebSockets' refusals,
    /// published at each flush.
    send_failures: Arc<AtomicU64>,
}

impl Drop for Io {
    /// The task is over (however it ended): a game waiting for events gets the rest, then
    /// `None`.
    fn drop(&mut self) {
        self.events.close();
    }
}

impl Io {
    fn new(
        url: RoomUrl,
        trust: Trust,
        udp: Link,
        ice: IceOptions,
        events: Arc<EventQueue>,
        send_failures: Arc<AtomicU64>,
    ) -> Io {
        let (socket_events, socket_rx) = mpsc::unbounded_channel();
        let (webrtc_events, webrtc_rx) = mpsc::unbounded_channel();
        Io {
            url,
            trust,
            udp,
            ice,
            socket: None,
            sockets_opened: 0,
            socket_events,
            socket_rx,
            sessions: HashMap::new(),
            lite: None,
            webrtc_events,
            webrtc_rx,
            webtransport: None,
            dialer: None,
            websocket: None,
            ws_dialer: None,
            events,
            send_failures,
        }
    }

    /// Does everything the member asked for, and tells it what a host's WebRTC has to tell
    /// (which may ask for more).
    fn flush(&mut self, shared: &mut Shared) {
        loop {
            self.flush_member(shared);
            if self.events.is_full() {
                // The game is behind: what the host's clients sent waits (`run`).
                break;
            }
            let Some(lite) = &mut self.lite else { break };
            let now = shared.now();
            let mut told = false;
            while let Some((transport, event)) = lite.pop() {
                told = true;
                deliver(&mut shared.member, now, transport, event);
            }
            if !told {
                break;
            }
        }
        self.udp.flush();
        // The task flushes at the top of every loop, so the game reads a count at most one
        // wake-up old (a host's WebRTC sockets also send as they read and time out).
        let lite = self.lite.as_ref().map_or(0, LiteHost::send_failures);
        let total = self.udp.counters().send_failures
            + lite
            + sessions::send_failures(self.webtransport.as_ref())
            + sessions::send_failures(self.dialer.as_ref())
            + sessions::send_failures(self.websocket.as_ref())
            + sessions::send_failures(self.ws_dialer.as_ref());
        self.send_failures.store(total, Ordering::Relaxed);
    }

    fn flush_member(&mut self, shared: &mut Shared) {
        let now = shared.now();
        outputs::carry_out(&mut Carry {
            io: self,
            member: &mut shared.member,
            now,
        });
    }

    fn command(&mut self, now: Duration, command: Command) {
        if let Command::CloseTransport { transport } = command
            && self.close_session(transport)
        {
            return;
        }
        // Only a native that dials as a browser does (the member's config says so), or a
        // host that serves them.
        let unserved = match command {
            Command::OpenWebTransport {
                transport, service, ..
            } => match &mut self.dialer {
                Some(dialer) => return dialer.open(transport, &service),
                None => (transport, "no WebTransport client in this native"),
            },
            Command::AcceptWebTransport { transport, token } => match &mut self.webtransport {
                Some(wt) => return wt.accept(transport, token),
                None => (transport, "this host serves no WebTransport"),
            },
            Command::OpenWebSocket { transport, service } => match &mut self.ws_dialer {
                Some(dialer) => return dialer.open(transport, &service),
                None => (transport, "no WebSocket client in this native"),
            },
            Command::AcceptWebSocket { transport, token } => match &mut self.websocket {
                Some(ws) => return ws.accept(transport, token),
                None => (transport, "this host serves no WebSocket"),
            },
            command => return self.command_rtc(now, command),
        };
        let (transport, why) = unserved;
        self.tell(transport, TransportEvent::Failed(why.into()));
    }

    /// Closes `transport` if it is a session's (a host's or a client's, over WebTransport or
    /// a WebSocket); whether it was.
    fn close_session(&mut self, transport: TransportId) -> bool {
        sessions::close(self.webtransport.as_mut(), transport)
            || sessions::close(self.dialer.as_mut(), transport)
            || sessions::close(self.websocket.as_mut(), transport)
            || sessions::close(self.ws_dialer.as_mut(), transport)
    }

    /// The member's command on a WebRTC transport.
    fn command_rtc(&mut self, now: Duration, command: Command) {
        if let Some(lite) = &mut self.lite {
            match command {
                Command::OpenPeerConnection {
                    transport, offer, ..
                } => lite.open(now, transport, offer),
                Command::ApplyRemoteSignal { transport, data } => {
                    lite.remote_signal(transport, data);
                }
                Command::CloseTransport { transport } => lite.close(transport),
                Command::OpenWebTransport { .. }
                | Command::AcceptWebTransport { .. }
                | Command::OpenWebSocket { .. }
                | Command::AcceptWebSocket { .. } => {}
            }
            return;
        }
        match command {
            Command::OpenPeerConnection {
                transport,
                offer,
                ice_servers,
                ..
            } => {
                let ice = IceOptions {
                    servers: ice_servers,
                    ..self.ice.clone()
                };
                let session = Session::start(transport, offer, ice, self.webrtc_events.clone());
                self.sessions.insert(transport, session);
            }
            Command::ApplyRemoteSignal { transport, data } => {
                if let Some(session) = self.sessions.get(&transport) {
                    session.remote_signal(data);
                }
            }
            // Dropping the session closes the peer connection.
            Command::CloseTransport { transport } => drop(self.sessions.remove(&transport)),
            Command::OpenWebTransport { .. }
            | Command::AcceptWebTransport { .. }
            | Command::OpenWebSocket { .. }
            | Command::AcceptWebSocket { .. } => {}
        }
    }

    /// Tells the member `event` about `transport` at the task's next turn (not from inside
    /// the member's own call).
    fn tell(&self, transport: TransportId, event: TransportEvent) {
        let _ = self
            .webrtc_events
            .send((transport, WebRtcEvent::Transport(event)));
    }

    fn on_socket(&mut self, shared: &mut Shared, number: u64, event: SocketEvent) {
        if self.socket.as_ref().map(|(n, _)| *n) != Some(number) {
            return;
        }
        let now = shared.now();
        match event {
            SocketEvent::Open => shared.member.signalling_open(now),
            SocketEvent::Frame(text) => {
                if let Err(e) = shared.member.handle_frame(now, &text) {
                    tracing::warn!(error = %e, "signalling frame refused");
                }
            }
            SocketEvent::Closed(reason) => {
                self.socket = None;
                shared.member.signalling_closed(now, &reason);
            }
            SocketEvent::Replaced(reason) => {
                self.socket = None;
                shared.member.signalling_replaced(now, &reason);
            }
        }
    }

    fn on_webrtc(&mut self, shared: &mut Shared, transport: TransportId, event: WebRtcEvent) {
        let now = shared.now();
        deliver(&mut shared.member, now, transport, event);
    }

    fn read_udp(&mut self, shared: &mut Shared, buf: &mut RecvBuffers) {
        let now = shared.now();
        let member = &mut shared.member;
        // Read as soon as the socket is readable (no coalescing), and the member answers at
        // once at the same time: the read's time stands for the arrival.
        self.udp
            .read_ready(now, buf, |_, _arrived, from, datagram| {
                if let Err(e) = member.receive(now, Route::Udp(from), datagram) {
                    tracing::debug!(%from, error = %e, "datagram refused");
                }
            });
    }
}

/// The task's sockets and sessions, carrying out the member's outputs at `now`.
struct Carry<'a> {
    io: &'a mut Io,
    member: &'a mut Member,
    now: Duration,
}

impl Carrier for Carry<'_> {
    fn member(&mut self) -> &mut Member {
        self.member
    }

    fn open_signalling(&mut self, join: Option<UrlJoin>) {
        let io = &mut *self.io;
        io.sockets_opened += 1;
        let number = io.sockets_opened;
        let url = io.url.socket_url(join.as_ref());
        let socket = Socket::open(url, io.trust.clone(), number, io.socket_events.clone());
        io.socket = Some((number, socket));
    }

    fn close_signalling(&mut self) {
        self.io.socket = None;
    }

    fn send_frame(&mut self, frame: &MemberFrame) {
        if let (Some((_, socket)), Ok(text)) = (&self.io.socket, serde_json::to_string(frame))
            && !socket.send(text)
        {
            tracing::debug!("signalling queue full: a frame was dropped");
        }
    }

    fn run_command(&mut self, command: Command) {
        self.io.command(self.now, command);
    }

    fn transmit(&mut self, route: Route, datagram: &[u8]) {
        let io = &mut *self.io;
        match (route, &mut io.lite) {
            (Route::Udp(addr), _) => io.udp.send(self.now, addr, datagram),
            (Route::WebRtc(transport), Some(lite)) if lite.has(transport) => {
                lite.send(transport, datagram);
            }
            (Route::WebRtc(transport), _) => {
                if let Some(session) = io.sessions.get(&transport) {
                    session.send(datagram);
                }
            }
            (Route::WebTransport(transport), _) => {
                let (host, client) = (io.webtransport.as_mut(), io.dialer.as_mut());
                sessions::send(host, client, transport, datagram);
            }
            (Route::WebSocket(transport), _) => {
                let (host, client) = (io.websocket.as_mut(), io.ws_dialer.as_mut());
                sessions::send(host, client, transport, datagram);
            }
        }
    }

    fn queue_event(&mut self, event: Event) {
        self.io.events.push(event);
    }
}

/// Hands a WebRTC transport's event or datagram to the member.
fn deliver(member: &mut Member, now: Duration, transport: TransportId, event: WebRtcEvent) {
    match event {
        WebRtcEvent::Transport(event) => member.handle_transport(now, transport, event),
        WebRtcEvent::Datagram(datagram) => {
            if let Err(e) = member.receive(now, Route::WebRtc(transport), &datagram) {
                tracing::debug!(error = %e, "datagram refused");
            }
        }
    }
}

/// Hands a report of `sessions` (and what else they have waiting) to the member.
fn on_report<S: Sessions>(
    shared: &Mutex<Shared>,
    sessions: Option<&mut S>,
    events: &EventQueue,
    report: S::Report,
) {
    let mut guard = lock(shared);
    let now = guard.now();
    sessions::take_reports(sessions, &mut guard.member, now, events, report);
}

/// Until a host's WebRTC socket may have datagrams; never without one.
async fn lite_readable(lite: Option<&LiteHost>) -> std::io::Result<()> {
    match lite {
        Some(lite) => lite.readable().await,
        None => std::future::pending().await,
    }
}

/// The driver's loop, until the room stops it (or is dropped); then it leaves the room.
async fn run(
    shared: Arc<Mutex<Shared>>,
    wake: Arc<Notify>,
    mut io: Io,
    precise: bool,
    mut stop: oneshot::Receiver<()>,
    done: oneshot::Sender<()>,
) {
    let start = lock(&shared).start;
    let mut buf = RecvBuffers::new();
    // Precise while emulating, so an emulated delay is the delay asked for (`net::timer`).
    let mut timer = Timer::new();
    loop {
        let next = {
            let mut guard = lock(&shared);
            io.flush(&mut guard);
            let lite = io.lite.as_mut().and_then(LiteHost::poll_timeout);
            let wt = io.webtransport.as_ref().and_then(WtHost::poll_timeout);
            [guard.member.poll_timeout(), lite, wt]
                .into_iter()
                .flatten()
                .min()
        };
        match next {
            Some(at) => timer.reset(start + at, precise),
            None => timer.reset(start + Duration::from_secs(3600), false),
        }
        // The game is behind on its events: read nothing until it catches up (it wakes us),
        // so nothing more is acknowledged and reliable senders are held back.
        let reading = !io.events.is_full();
        tokio::select! {
            _ = &mut stop => break,
            () = wake.notified() => {}
            () = timer.wait() => {}
            Some((number, event)) = io.socket_rx.recv() => {
                let mut guard = lock(&shared);
                io.on_socket(&mut guard, number, event);
                // Carried out under the same lock: a game that sees what a frame did to the
                // member (`joined` sees the welcome) finds the events it made already queued.
                io.flush(&mut guard);
            }
            Some((transport, event)) = io.webrtc_rx.recv(), if reading => {
                io.on_webrtc(&mut lock(&shared), transport, event);
            }
            ready = io.udp.readable(), if reading => {
                if let Err(e) = ready {
                    tracing::warn!(error = %e, "UDP socket");
                }
                io.read_udp(&mut lock(&shared), &mut buf);
            }
            report = sessions::next(io.webtransport.as_mut()), if reading => {
                on_report(&shared, io.webtransport.as_mut(), &io.events, report);
            }
            report = sessions::next(io.dialer.as_mut()), if reading => {
                on_report(&shared, io.dialer.as_mut(), &io.events, report);
            }
            report = sessions::next(io.websocket.as_mut()), if reading => {
                on_report(&shared, io.websocket.as_mut(), &io.events, report);
            }
            report = sessions::next(io.ws_dialer.as_mut()), if reading => {
                on_report(&shared, io.ws_dialer.as_mut(), &io.events, report);
            }
            ready = lite_readable(io.lite.as_ref()), if reading => {
                if let Err(e) = ready {
                    tracing::warn!(error = %e, "host WebRTC socket");
                }
                let now = lock(&shared).now();
                if let Some(lite) = &mut io.lite {
                    lite.read_ready(now);
                }
            }
        }
        let mut guard = lock(&shared);
        let now = guard.now();
        if guard.member.poll_timeout().is_some_and(|t| t <= now) {
            guard.member.handle_timeout(now);
        }
        if let Some(lite) = &mut io.lite
            && lite.poll_timeout().is_some_and(|t| t <= now)
        {
            lite.handle_timeout(now);
        }
        // A certificate rotation's step: the room hears the service (the loop's flush sends
        // the member's update).
        if let Some(wt) = &mut io.webtransport
            && wt.poll_timeout().is_some_and(|t| t <= now)
            && let Some(service) = wt.handle_timeout(now)
        {
            guard.member.update_webtransport(now, service);
        }
    }
    leave(&shared, &mut io).await;
    let _ = done.send(());
}

/// Closes every link (the core sends its disconnects), leaves the room, and gives the
/// goodbyes a moment to go out.
async fn leave(shared: &Mutex<Shared>, io: &mut Io) {
    let (start, until) = {
        let mut guard = lock(shared);
        let now = guard.now();
        guard.member.close(now);
        io.flush(&mut guard);
        (guard.start, guard.start + now + LEAVE_GRACE)
    };
    loop {
        let wake = {
            let guard = lock(shared);
            if guard.member.is_closed() || Instant::now() >= until {
                break;
            }
            guard
                .member
                .poll_timeout()
                .map_or(until, |t| (start + t).min(until))
        };
        tokio::time::sleep_until(wake).await;
        let mut guard = lock(shared);
        let now = guard.now();
        guard.member.handle_timeout(now);
        io.flush(&mut guard);
    }
    // Dropping the socket closes the WebSocket cleanly; give its task a moment.
    io.socket = None;
    io.sessions.clear();
    // Dropping the host's WebTransport and WebSocket closes their sessions, endpoint and
    // listener.
    io.webtransport = None;
    io.dialer = None;
    io.websocket = None;
    io.ws_dialer = None;
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_bind_advertises_the_interface_the_server_is_reached_through() {
        // The signalling server on loopback: loopback is the way there (nothing is sent).
        let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let ip = route_to("127.0.0.1:8080", any).unwrap();
        assert_eq!(ip, IpAddr::from([127, 0, 0, 1]));
        // No address of the bound family: a clear error, not a wrong address.
        let v6_only = route_to("[::1]:8080", any).unwrap_err();
        assert_eq!(v6_only.kind(), std::io::ErrorKind::NotFound);
    }
}
