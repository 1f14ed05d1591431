//! The native room driver: a thin adapter around the room member (`ackwire_room::member`).
//! It owns the clock, one UDP socket for every native peer, one WebRTC session per browser
//! link and the signalling WebSocket, moves bytes and events between them and the member,
//! and plays the demo (a circling dot, a greeting, an echo). Every decision about links —
//! who offers, when to retry, what a failure means — is the member's.

use std::collections::HashMap;
use std::f32::consts::TAU;
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::time::Duration;

use ackwire_room::keys::NoiseKeys;
use ackwire_room::member::{
    Command, Event, LinkId, LinkInfo, LinkState, Member, MemberConfig, Output, Route,
    SignallingState, TransportId,
};
use ackwire_room::signalling::PeerKind;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::signalling::{Socket, SocketEvent, Trust};
use super::webrtc::{IceOptions, Session, WebRtcEvent};
use super::{JoinArgs, RoomError, parse_room_url};
use crate::link::{self, Link, RecvBuffers};
use crate::timer::Timer;

/// The JSON stats line (and the terminal view) comes this often.
pub const STATS_PERIOD: Duration = Duration::from_secs(1);
/// One lap of the demo dot.
const LAP: Duration = Duration::from_secs(8);
/// Leaving: the links' goodbyes get this long to go out.
const LEAVE_GRACE: Duration = Duration::from_millis(500);

/// Where our dot is at `t`: a circle around the middle of the field.
fn demo_position(t: Duration) -> (f32, f32) {
    let angle = TAU * (t.as_secs_f32() % LAP.as_secs_f32()) / LAP.as_secs_f32();
    (0.5 + 0.35 * angle.cos(), 0.5 + 0.35 * angle.sin())
}

/// How the driver talks to a person: one JSON object per line, a refreshing terminal view,
/// or log lines only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Console {
    Json,
    Live,
    Log,
}

struct Driver {
    start: Instant,
    console: Console,
    member: Member,
    udp: Link,
    ice: IceOptions,
    ws_url: String,
    trust: Trust,
    socket: Option<(u64, Socket)>,
    sockets_opened: u64,
    socket_events: mpsc::UnboundedSender<(u64, SocketEvent)>,
    sessions: HashMap<TransportId, Session>,
    webrtc_events: mpsc::UnboundedSender<(TransportId, WebRtcEvent)>,
    next_stats: Duration,
    unknown_datagrams: u64,
    /// Lines of the terminal view last drawn.
    live_lines: usize,
}

/// Joins the room `args.url` and runs until `stop` resolves or `--duration` passes.
pub async fn run(args: &JoinArgs, stop: impl Future<Output = ()>) -> Result<(), RoomError> {
    let url = parse_room_url(&args.url)?;
    let trust = match &args.tls_ca {
        None => Trust::PublicRoots,
        Some(path) if !url.ws_url.starts_with("wss://") => {
            return Err(RoomError::TlsCa {
                path: path.clone(),
                reason: format!("the room URL {} is not https://", args.url),
            });
        }
        Some(path) => Trust::from_pem_file(path)?,
    };
    let emulation = args.common.emulation()?;
    // The member's emulated links release datagrams on its timer: only then meet it exactly.
    let precise = emulation.is_some();
    let duration = args
        .common
        .duration
        .map(|secs| {
            Duration::try_from_secs_f64(secs).map_err(|_| crate::cli::ArgError::BadDuration {
                flag: "duration",
                value: secs,
            })
        })
        .transpose()?;
    let seconds = |flag: &'static str, value: Option<f64>| {
        value
            .map(|secs| {
                Duration::try_from_secs_f64(secs)
                    .map_err(|_| crate::cli::ArgError::BadDuration { flag, value: secs })
            })
            .transpose()
    };
    // When the cable is pulled and plugged back (`--outage-at`, `--outage-for`).
    let mut outage = match (
        seconds("outage-at", args.outage_at)?,
        seconds("outage-for", args.outage_for)?,
    ) {
        (Some(at), Some(length)) => vec![(at + length, false), (at, true)],
        _ => Vec::new(),
    };
    let socket = link::bind(args.bind).map_err(|source| RoomError::Bind {
        addr: args.bind,
        source,
    })?;
    let bound = socket.local_addr().map_err(|source| RoomError::Bind {
        addr: args.bind,
        source,
    })?;
    let udp_addr = match args.advertise {
        Some(addr) => addr,
        None if bound.ip().is_unspecified() => {
            let server = url.server();
            match super::route_to(&server, bound) {
                Ok(ip) => SocketAddr::new(ip, bound.port()),
                Err(source) => {
                    return Err(RoomError::NothingToAdvertise {
                        bind: bound,
                        server,
                        source,
                    });
                }
            }
        }
        None => bound,
    };
    let mut udp = Link::new(socket, None).map_err(|e| RoomError::Member(e.into()))?;
    // A room's few links wake the loop per datagram; it never reads on a timer.
    udp.watch().map_err(|source| RoomError::Bind {
        addr: args.bind,
        source,
    })?;
    let mut config = MemberConfig::new(url.room.clone(), PeerKind::Native, random_instance());
    config.udp_addr = Some(udp_addr);
    config.secret = rand::random();
    config.seed = rand::random();
    config.emulation = emulation;
    // Links to other natives are encrypted with a key new at each start, announced in the
    // join; browsers' links ride DTLS either way.
    if args.common.insecure {
        tracing::warn!("encryption off (--insecure): links to other natives are plaintext");
    } else {
        config.udp_keys = Some(std::sync::Arc::new(NoiseKeys::generate()));
    }
    let start = Instant::now();
    let member = Member::new(config, Duration::ZERO)?;
    let ice_bind = args
        .ice_bind
        .unwrap_or_else(|| SocketAddr::new(args.bind.ip(), 0));
    tracing::info!(room = %url.room, server = %url.ws_url, %udp_addr, %ice_bind, "joining");
    let (socket_events, mut socket_rx) = mpsc::unbounded_channel();
    let (webrtc_events, mut webrtc_rx) = mpsc::unbounded_channel();
    let console = if args.common.json {
        Console::Json
    } else if std::io::stderr().is_terminal() && std::io::stdout().is_terminal() {
        Console::Live
    } else {
        Console::Log
    };
    let mut driver = Driver {
        start,
        console,
        member,
        udp,
        ice: IceOptions {
            bind: ice_bind,
            public_ip: args.public_ip,
            servers: Vec::new(),
        },
        ws_url: url.ws_url,
        trust,
        socket: None,
        sockets_opened: 0,
        socket_events,
        sessions: HashMap::new(),
        webrtc_events,
        next_stats: STATS_PERIOD,
        unknown_datagrams: 0,
        live_lines: 0,
    };
    let deadline = duration.map(|d| start + d);
    tokio::pin!(stop);
    let mut buf = RecvBuffers::new();
    // Precise, so an emulated delay is the delay asked for (see `crate::timer`).
    let mut timer = Timer::new();
    loop {
        driver.flush();
        let next = driver
            .member
            .poll_timeout()
            .into_iter()
            .chain(outage.last().map(|(at, _)| *at))
            .fold(driver.next_stats, Duration::min);
        let wake = start + next;
        let wake = deadline.map_or(wake, |d| wake.min(d));
        timer.reset(wake, precise);
        tokio::select! {
            () = &mut stop => break,
            () = timer.wait() => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
            }
            Some((number, event)) = socket_rx.recv() => driver.on_socket(number, event),
            Some((transport, event)) = webrtc_rx.recv() => driver.on_webrtc(transport, event),
            ready = driver.udp.readable() => {
                if let Err(e) = ready {
                    tracing::warn!(error = %e, "UDP socket");
                }
                driver.read_udp(&mut buf);
            }
        }
        let now = driver.now();
        while let Some(&(_, on)) = outage.last().filter(|(at, _)| *at <= now) {
            outage.pop();
            tracing::warn!(
                on,
                "outage: every datagram of every link is dropped while on"
            );
            driver.member.set_outage(on);
        }
        if driver.member.poll_timeout().is_some_and(|t| t <= now) {
            driver.member.handle_timeout(now);
        }
        if now >= driver.next_stats {
            driver.next_stats = now + STATS_PERIOD;
            driver.report(now);
        }
    }
    driver.leave().await;
    Ok(())
}

/// 16 random hex digits: this process, as the room's members know it across server restarts.
fn random_instance() -> String {
    format!("n{:016x}", rand::random::<u64>())
}

impl Driver {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn json(&self, value: serde_json::Value) {
        if self.console == Console::Json {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{value}");
            let _ = out.flush();
        }
    }

    /// Does everything the member asked for.
    fn flush(&mut self) {
        let now = self.now();
        let (x, y) = demo_position(now);
        self.member.set_position(x, y);
        while let Some(output) = self.member.poll_output() {
            match output {
                Output::OpenSignalling { join } => {
                    self.sockets_opened += 1;
                    let number = self.sockets_opened;
                    let url = match join {
                        Some(join) => format!("{}?{}", self.ws_url, join.query()),
                        None => self.ws_url.clone(),
                    };
                    let socket =
                        Socket::open(url, self.trust.clone(), number, self.socket_events.clone());
                    self.socket = Some((number, socket));
                }
                Output::Frame(frame) => {
                    if let (Some((_, socket)), Ok(text)) =
                        (&self.socket, serde_json::to_string(&frame))
                    {
                        if !socket.send(text) {
                            tracing::debug!("signalling queue full: a frame was dropped");
                        }
                    }
                }
                Output::Command(command) => self.command(command),
                Output::Transmit { route, datagram } => match route {
                    Route::Udp(addr) => self.udp.send(now, addr, &datagram),
                    Route::WebRtc(transport) => {
                        if let Some(session) = self.sessions.get(&transport) {
                            session.send(&datagram);
                        }
                    }
                },
                Output::Event(event) => self.on_event(now, event),
            }
        }
        self.udp.flush();
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::OpenPeerConnection {
                transport,
                offer,
                ice_servers,
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
            Command::ClosePeerConnection { transport } => drop(self.sessions.remove(&transport)),
        }
    }

    fn on_socket(&mut self, number: u64, event: SocketEvent) {
        if self.socket.as_ref().map(|(n, _)| *n) != Some(number) {
            return;
        }
        let now = self.now();
        match event {
            SocketEvent::Open => self.member.signalling_open(now),
            SocketEvent::Frame(text) => {
                if let Err(e) = self.member.handle_frame(now, &text) {
                    tracing::warn!(error = %e, "signalling frame refused");
                }
            }
            SocketEvent::Closed(reason) => {
                self.socket = None;
                self.member.signalling_closed(now, &reason);
            }
        }
    }

    fn on_webrtc(&mut self, transport: TransportId, event: WebRtcEvent) {
        let now = self.now();
        match event {
            WebRtcEvent::Transport(event) => self.member.handle_transport(now, transport, event),
            WebRtcEvent::Datagram(datagram) => {
                if let Err(e) = self
                    .member
                    .receive(now, Route::WebRtc(transport), &datagram)
                {
                    tracing::debug!(error = %e, "datagram refused");
                }
            }
        }
    }

    fn read_udp(&mut self, buf: &mut RecvBuffers) {
        let now = self.now();
        let mut arrived = Vec::new();
        self.udp.read_ready(now, buf, |_, from, datagram| {
            arrived.push((from, datagram.to_vec()));
        });
        for (from, datagram) in arrived {
            if let Err(e) = self.member.receive(now, Route::Udp(from), &datagram) {
                if matches!(e, ackwire_room::member::ReceiveError::UnknownAddress(_)) {
                    self.unknown_datagrams += 1;
                }
                tracing::debug!(%from, error = %e, "datagram refused");
            }
        }
    }

    fn link(&self, now: Duration, link: LinkId) -> Option<LinkInfo> {
        self.member.links(now).into_iter().find(|l| l.link == link)
    }

    /// The application's part: log state changes, greet, echo, write JSON.
    fn on_event(&mut self, now: Duration, event: Event) {
        match &event {
            Event::Signalling { state, detail } => match state {
                SignallingState::Reconnecting => {
                    tracing::warn!(detail = detail.as_deref().unwrap_or(""), "signalling down")
                }
                SignallingState::Joined => tracing::info!("in the room"),
                _ => tracing::debug!(?state, "signalling"),
            },
            Event::Welcome { peer_id, resumed } => {
                tracing::info!(peer_id, resumed, "welcomed");
            }
            Event::PeerJoined { peer } => {
                tracing::info!(peer = peer.id, kind = peer.kind.as_str(), "peer joined");
            }
            Event::PeerLeft { peer_id, reason } => {
                tracing::info!(peer = peer_id, ?reason, "peer left");
            }
            Event::Link(info) => {
                let peer = info.peer.map_or_else(|| "?".to_owned(), |p| p.to_string());
                match (&info.state, &info.reason) {
                    (LinkState::Connected, _) => tracing::info!(
                        peer, transport = ?info.transport, after_ms = info.attempt_ms.as_millis() as u64,
                        "link connected"
                    ),
                    (LinkState::Lost, Some(reason)) => {
                        tracing::warn!(peer, code = reason.code(), "link lost: {reason}")
                    }
                    (state, _) => tracing::info!(peer, ?state, "link"),
                }
                if info.state == LinkState::Connected {
                    let greeting = format!(
                        "hello from native peer {}",
                        self.member.peer_id().unwrap_or_default()
                    );
                    if let Err(e) = self.member.send_chat_to(now, info.link, &greeting) {
                        tracing::warn!(peer, error = %e, "greeting not sent");
                    }
                }
            }
            Event::Chat { link, peer, text } => {
                tracing::info!(peer = ?peer, %text, "chat");
                // Players (browsers) get an echo; natives only greet each other, so two
                // natives never answer each other forever.
                if self
                    .link(now, *link)
                    .is_some_and(|l| l.kind == PeerKind::Browser)
                {
                    if let Err(e) = self
                        .member
                        .send_chat_to(now, *link, &format!("echo: {text}"))
                    {
                        tracing::warn!(error = %e, "echo not sent");
                    }
                }
            }
            // After a server restart our old id is unknown there: expected, the member joins afresh.
            Event::ServerError { code, message } if code == "resume_rejected" => {
                tracing::info!(%message, "the server forgot us; joining afresh");
            }
            Event::ServerError { code, message } => {
                tracing::warn!(%code, %message, "signalling error");
            }
            Event::Position { .. } | Event::FirstAck { .. } => {}
        }
        if !matches!(event, Event::Position { .. }) {
            if let Ok(value) = serde_json::to_value(&event) {
                self.json(value);
            }
        }
    }

    /// Once a second: the JSON stats line, or the terminal view.
    fn report(&mut self, now: Duration) {
        let links = self.member.links(now);
        match self.console {
            Console::Json => self.json(json!({
                "type": "stats", "t_s": now.as_secs_f64(), "peer_id": self.member.peer_id(),
                "signalling": self.member.signalling_state(),
                "unknown_datagrams": self.unknown_datagrams, "links": links,
            })),
            Console::Live => {
                // Redraw in place: up over the last view, clear, print (stdout; logs go to
                // stderr and only on changes).
                let mut out = std::io::stdout().lock();
                if self.live_lines > 0 {
                    let _ = write!(out, "\x1b[{}A\x1b[J", self.live_lines);
                }
                let _ = writeln!(
                    out,
                    "peer {} · signalling {:?} · {} link(s)",
                    self.member.peer_id().map_or("?".into(), |p| p.to_string()),
                    self.member.signalling_state(),
                    links.len()
                );
                for l in &links {
                    let _ = writeln!(out, "  {}", link_line(l));
                }
                let _ = out.flush();
                self.live_lines = links.len() + 1;
            }
            Console::Log => {}
        }
    }

    /// Closes every link (the core sends its disconnects), leaves the room, and gives the
    /// goodbyes a moment to go out.
    async fn leave(&mut self) {
        let now = self.now();
        self.member.close(now);
        self.flush();
        let until = self.start + now + LEAVE_GRACE;
        while !self.member.is_closed() && Instant::now() < until {
            let wake = self
                .member
                .poll_timeout()
                .map_or(until, |t| (self.start + t).min(until));
            tokio::time::sleep_until(wake).await;
            let now = self.now();
            self.member.handle_timeout(now);
            self.flush();
        }
        self.json(json!({"type": "left", "t_s": self.now().as_secs_f64()}));
        // Dropping the socket closes the WebSocket cleanly; give the task a moment.
        self.socket = None;
        self.sessions.clear();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One line of the terminal view: who, state, RTT, loss, mode, transport.
fn link_line(l: &LinkInfo) -> String {
    let peer = l.peer.map_or_else(|| "?".to_owned(), |p| p.to_string());
    let numbers = l
        .stats
        .as_ref()
        .filter(|s| s.counters.packets_acked > 0)
        .map_or_else(
            || "—".to_owned(),
            |s| {
                format!(
                    "rtt {:.1} ms  loss {:.1} %  {:?}",
                    s.rtt_ms, s.loss_percent, s.mode
                )
            },
        );
    let reason = l
        .reason
        .as_ref()
        .map(|r| format!("  ({r})"))
        .unwrap_or_default();
    format!(
        "peer {peer:>4} {:<8} {:<11?} {numbers}  {:?}{}{reason}",
        l.kind.as_str(),
        l.state,
        l.transport,
        l.candidate
            .as_deref()
            .map(|c| format!(" {c}"))
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_dot_moves_and_stays_on_the_field() {
        let a = demo_position(Duration::ZERO);
        let b = demo_position(Duration::from_secs(2));
        assert_ne!(a, b);
        for s in 0..100 {
            let (x, y) = demo_position(Duration::from_millis(s * 97));
            assert!((0.0..=1.0).contains(&x) && (0.0..=1.0).contains(&y));
        }
    }
}
