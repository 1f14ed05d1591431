//! The room driver: a thin loop around [`Links`]. It owns the clock and the transports
//! (one UDP socket for every native peer, one WebRTC session per browser peer), follows the
//! room through signalling, and reports. All protocol work happens in the core via `Links`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::f32::consts::TAU;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::links::{LinkEvent, Links};
use super::signalling::{
    self, Incoming, JoinRequest, Outgoing, PeerInfo, SignalData, SignallingEvent,
};
use super::webrtc::{IceOptions, Session, WebRtcEvent};
use super::{JoinArgs, RoomError, parse_room_url};
use crate::link::{self, Link};

/// Stats go to the server (and on to dashboards), and to stdout, this often.
pub const STATS_PERIOD: Duration = Duration::from_secs(1);
/// One lap of the demo dot.
const LAP: Duration = Duration::from_secs(8);
/// Datagrams from addresses no native of the room has (yet) are kept this long, at most
/// [`EARLY_DATAGRAMS`] of them: a newcomer's first connect request usually arrives before the
/// server's `peer_joined` about it, and replaying it saves the core's 250 ms resend.
const EARLY_DATAGRAM_TTL: Duration = Duration::from_secs(1);
const EARLY_DATAGRAMS: usize = 32;
/// Largest datagram read from the UDP socket (bigger than any the core sends, so an
/// oversized one shows up as refused rather than silently cut).
const RECV_BUF: usize = 2048;

/// Peer ids are unique only within one server session: a restarted server hands them out
/// again from 1. Links are therefore keyed by `(epoch << EPOCH_SHIFT) | id`, where the epoch
/// counts our fresh joins; links made under an earlier epoch keep flowing, untouched by the
/// new session's ids. Within one epoch keys order like ids, so the core's roles hold.
const EPOCH_SHIFT: u32 = 48;

fn id_of(key: u64) -> u64 {
    key & ((1 << EPOCH_SHIFT) - 1)
}

fn epoch_of(key: u64) -> u64 {
    key >> EPOCH_SHIFT
}

/// How a link's datagrams travel.
#[derive(Debug)]
enum Transport {
    Udp(SocketAddr),
    WebRtc { session: Session, open: bool },
}

impl Transport {
    fn label(&self) -> &'static str {
        match self {
            Transport::Udp(_) => "udp",
            Transport::WebRtc { .. } => "webrtc",
        }
    }
}

#[derive(Debug)]
struct Remote {
    kind: String,
    transport: Transport,
    /// When we learned of the peer (connect times are measured from here).
    since: Duration,
    position: Option<(f32, f32)>,
    refused: u64,
}

/// Where our dot is at `t`: a circle around the middle of the field.
fn demo_position(t: Duration) -> (f32, f32) {
    let angle = TAU * (t.as_secs_f32() % LAP.as_secs_f32()) / LAP.as_secs_f32();
    (0.5 + 0.35 * angle.cos(), 0.5 + 0.35 * angle.sin())
}

struct Driver {
    start: Instant,
    json: bool,
    room: String,
    udp: Link,
    udp_addr: SocketAddr,
    ice: IceOptions,
    me: Option<u64>,
    /// Fresh joins so far, minus one (see [`EPOCH_SHIFT`]).
    epoch: u64,
    links: Option<Links>,
    remotes: BTreeMap<u64, Remote>,
    by_addr: HashMap<SocketAddr, u64>,
    signalling: mpsc::Sender<Outgoing>,
    webrtc_events: mpsc::UnboundedSender<(u64, WebRtcEvent)>,
    emulation: Option<link::EmulationOptions>,
    next_stats: Duration,
    unknown_datagrams: u64,
    /// Recent datagrams from unknown addresses, oldest first (see [`EARLY_DATAGRAM_TTL`]).
    early: VecDeque<(Duration, SocketAddr, Vec<u8>)>,
}

/// Joins the room `args.url` and runs until `stop` resolves or `--duration` passes.
pub async fn run(args: &JoinArgs, stop: impl Future<Output = ()>) -> Result<(), RoomError> {
    let url = parse_room_url(&args.url)?;
    let emulation = args.common.emulation()?;
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
    if let Some(e) = &emulation {
        e.config
            .validate()
            .map_err(|e| RoomError::Links(e.into()))?;
    }
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
            return Err(RoomError::NothingToAdvertise(bound));
        }
        None => bound,
    };
    let mut udp = Link::new(socket, None).map_err(|e| RoomError::Links(e.into()))?;
    // A room's few links wake the loop per datagram; it never reads on a timer.
    udp.watch().map_err(|source| RoomError::Bind {
        addr: args.bind,
        source,
    })?;
    let (signalling, mut signalling_events, signalling_task) = signalling::spawn(JoinRequest {
        ws_url: url.ws_url.clone(),
        room: url.room.clone(),
        udp_addr: Some(udp_addr.to_string()),
    });
    let (webrtc_events, mut webrtc_rx) = mpsc::unbounded_channel();
    let ice_bind = args
        .ice_bind
        .unwrap_or_else(|| SocketAddr::new(args.bind.ip(), 0));
    tracing::info!(room = %url.room, server = %url.ws_url, %udp_addr, %ice_bind, "joining");
    let mut driver = Driver {
        start: Instant::now(),
        json: args.common.json,
        room: url.room,
        udp,
        udp_addr,
        ice: IceOptions {
            bind: ice_bind,
            public_ip: args.public_ip,
            servers: Vec::new(),
        },
        me: None,
        epoch: 0,
        links: None,
        remotes: BTreeMap::new(),
        by_addr: HashMap::new(),
        signalling,
        webrtc_events,
        emulation,
        next_stats: STATS_PERIOD,
        unknown_datagrams: 0,
        early: VecDeque::new(),
    };
    let deadline = duration.map(|d| driver.start + d);
    tokio::pin!(stop);
    let mut buf = vec![0u8; RECV_BUF];
    loop {
        let wake = driver.start + driver.poll_timeout();
        let wake = deadline.map_or(wake, |d| wake.min(d));
        tokio::select! {
            () = &mut stop => break,
            () = tokio::time::sleep_until(wake) => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
            }
            event = signalling_events.recv() => match event {
                Some(event) => driver.on_signalling(event),
                None => break,
            },
            Some((peer, event)) = webrtc_rx.recv() => driver.on_webrtc(peer, event),
            ready = driver.udp.readable() => {
                if let Err(e) = ready {
                    tracing::warn!(error = %e, "UDP socket");
                }
                driver.read_udp(&mut buf);
            }
        }
        driver.poll();
    }
    driver.leave();
    // Dropping the driver drops the signalling sender: the task closes the WebSocket cleanly
    // so the room hears `peer_left` at once. Give it a moment to do so.
    drop(driver);
    let _ = tokio::time::timeout(Duration::from_millis(500), signalling_task).await;
    Ok(())
}

impl Driver {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn emit(&self, event: Value) {
        emit(self.json, event);
    }

    /// The link key of peer `id` of the current server session.
    fn key(&self, id: u64) -> u64 {
        (self.epoch << EPOCH_SHIFT) | id
    }

    fn poll_timeout(&mut self) -> Duration {
        let links = self.links.as_mut().and_then(Links::poll_timeout);
        links.map_or(self.next_stats, |t| t.min(self.next_stats))
    }

    fn on_signalling(&mut self, event: SignallingEvent) {
        let frame = match event {
            SignallingEvent::Frame(frame) => frame,
            SignallingEvent::Down { reason } => {
                self.emit(json!({"type": "signalling-down", "reason": reason}));
                return;
            }
        };
        let now = self.now();
        match frame {
            Incoming::Welcome {
                peer_id,
                resumed,
                peers,
                ice_servers,
                ..
            } => {
                if peer_id >> EPOCH_SHIFT != 0 {
                    tracing::error!(peer_id, "peer id out of range");
                    return;
                }
                if self.me.is_some() && !resumed {
                    // A new server session: its ids are a new namespace.
                    self.epoch += 1;
                }
                self.me = Some(peer_id);
                self.ice.servers = ice_servers;
                let me = self.key(peer_id);
                match &mut self.links {
                    Some(links) => links.set_me(me),
                    None => match Links::new(me, now, rand::random(), self.emulation.clone()) {
                        Ok(links) => self.links = Some(links),
                        Err(e) => tracing::error!("{e}"),
                    },
                }
                tracing::info!(peer_id, resumed, peers = peers.len(), "welcome");
                self.emit(
                    json!({"type": "welcome", "peer_id": peer_id, "resumed": resumed,
                    "room": self.room, "udp_addr": self.udp_addr.to_string()}),
                );
                // The newcomer offers to everyone already there; a resumed peer keeps its links.
                if !resumed {
                    for peer in peers {
                        self.add_remote(&peer, true);
                    }
                }
            }
            Incoming::PeerJoined { peer } => self.add_remote(&peer, false),
            Incoming::PeerLeft { peer_id, reason } => {
                if self.remove_remote(self.key(peer_id)) {
                    self.emit(json!({"type": "peer-left", "peer": peer_id, "reason": reason}));
                }
            }
            Incoming::Signal { from, data } => {
                let data = match serde_json::from_value::<SignalData>(data) {
                    Ok(data) => data,
                    Err(e) => {
                        tracing::warn!(from, error = %e, "unreadable signal");
                        return;
                    }
                };
                if matches!(&data, SignalData::Sdp { sdp } if sdp.kind == "offer") {
                    // An offer from a peer we have not heard of yet (its join raced ours).
                    let info = PeerInfo {
                        id: from,
                        kind: "browser".into(),
                        udp_addr: None,
                    };
                    self.add_remote(&info, false);
                }
                match self.remotes.get(&self.key(from)).map(|r| &r.transport) {
                    Some(Transport::WebRtc { session, .. }) => session.remote_signal(data),
                    _ => tracing::debug!(from, "signal for no WebRTC session"),
                }
            }
            Incoming::Error { code, message } => {
                tracing::warn!(%code, %message, "signalling error");
            }
            Incoming::Other => {}
        }
    }

    fn add_remote(&mut self, info: &PeerInfo, offer: bool) {
        let key = self.key(info.id);
        if self.remotes.contains_key(&key) || Some(info.id) == self.me || id_of(key) != info.id {
            return;
        }
        let now = self.now();
        let transport = match (info.kind.as_str(), &info.udp_addr) {
            ("native", Some(addr)) => {
                let Ok(addr) = addr.parse::<SocketAddr>() else {
                    tracing::warn!(peer = info.id, %addr, "native peer with an unusable UDP address");
                    return;
                };
                if addr == self.udp_addr {
                    return;
                }
                if let Some(known) = self.by_addr.get(&addr) {
                    // After a server restart the same native comes back under a new id: its
                    // link under the old id still works, so keep that one.
                    tracing::info!(peer = info.id, known, %addr, "already linked to this address");
                    return;
                }
                self.by_addr.insert(addr, key);
                if let Some(links) = &mut self.links {
                    if let Err(e) = links.open(now, key) {
                        tracing::error!("{e}");
                    }
                }
                self.replay_early(now, addr, key);
                Transport::Udp(addr)
            }
            ("native", None) => {
                tracing::warn!(peer = info.id, "native peer without a UDP address");
                return;
            }
            _ => Transport::WebRtc {
                session: Session::start(key, offer, self.ice.clone(), self.webrtc_events.clone()),
                open: false,
            },
        };
        tracing::info!(peer = info.id, kind = %info.kind, transport = transport.label(), "linking");
        self.remotes.insert(
            key,
            Remote {
                kind: info.kind.clone(),
                transport,
                since: now,
                position: None,
                refused: 0,
            },
        );
    }

    /// Hands the peer at `addr` (now known as `key`) what it sent before we knew it.
    fn replay_early(&mut self, now: Duration, addr: SocketAddr, key: u64) {
        let Some(links) = &mut self.links else {
            return;
        };
        let cutoff = now.saturating_sub(EARLY_DATAGRAM_TTL);
        self.early.retain(|(at, from, datagram)| {
            if *from != addr {
                return *at >= cutoff;
            }
            if *at >= cutoff {
                // Refused ones are dropped, as they would have been on arrival.
                let _ = links.receive(now, key, datagram);
            }
            false
        });
    }

    /// Forgets `peer`: closes its link and transport. True if it was known.
    fn remove_remote(&mut self, peer: u64) -> bool {
        let Some(remote) = self.remotes.remove(&peer) else {
            return false;
        };
        if let Transport::Udp(addr) = remote.transport {
            self.by_addr.remove(&addr);
        }
        if let Some(links) = &mut self.links {
            links.close(peer);
        }
        true
    }

    fn on_webrtc(&mut self, peer: u64, event: WebRtcEvent) {
        let now = self.now();
        match event {
            WebRtcEvent::Signal(data) => {
                if epoch_of(peer) != self.epoch {
                    // The server that knew this peer's id is gone: nobody to relay to.
                    return;
                }
                let to = id_of(peer);
                if self
                    .signalling
                    .try_send(Outgoing::Signal { to, data })
                    .is_err()
                {
                    tracing::warn!(
                        peer = id_of(peer),
                        epoch = epoch_of(peer),
                        "signalling queue full: a signal was dropped"
                    );
                }
            }
            WebRtcEvent::Open => {
                let Some(remote) = self.remotes.get_mut(&peer) else {
                    return;
                };
                if let Transport::WebRtc { open, .. } = &mut remote.transport {
                    *open = true;
                }
                let after = now.saturating_sub(remote.since);
                tracing::info!(
                    peer = id_of(peer),
                    epoch = epoch_of(peer),
                    after_ms = ms(after),
                    "data channel open"
                );
                self.emit(
                    json!({"type": "channel-open", "peer": id_of(peer), "after_ms": ms(after)}),
                );
                if let Some(links) = &mut self.links {
                    if let Err(e) = links.open(now, peer) {
                        tracing::error!("{e}");
                    }
                }
            }
            WebRtcEvent::Datagram(datagram) => self.deliver(now, peer, &datagram),
            WebRtcEvent::Closed(reason) => {
                // The browser is gone (or its connection failed): drop the link; a new join
                // of that player brings a new peer id and a new session.
                if self
                    .remotes
                    .get(&peer)
                    .is_some_and(|r| matches!(r.transport, Transport::WebRtc { .. }))
                    && self.remove_remote(peer)
                {
                    tracing::info!(peer = id_of(peer), epoch = epoch_of(peer), %reason, "webrtc session ended");
                    self.emit(json!({"type": "link-closed", "peer": id_of(peer), "epoch": epoch_of(peer), "reason": reason}));
                }
            }
        }
    }

    fn deliver(&mut self, now: Duration, peer: u64, datagram: &[u8]) {
        let (Some(links), Some(remote)) = (&mut self.links, self.remotes.get_mut(&peer)) else {
            return;
        };
        if let Err(e) = links.receive(now, peer, datagram) {
            // Refused by the core: changes nothing, counted.
            remote.refused += 1;
            tracing::debug!(peer = id_of(peer), epoch = epoch_of(peer), error = %e, "datagram refused");
        }
    }

    fn read_udp(&mut self, buf: &mut [u8]) {
        let now = self.now();
        let mut arrived = Vec::new();
        self.udp.read_ready(now, buf, |_, from, datagram| {
            arrived.push((from, datagram.to_vec()));
        });
        for (from, datagram) in arrived {
            match self.by_addr.get(&from) {
                Some(&peer) => self.deliver(now, peer, &datagram),
                // Not a native of this room (yet): kept briefly in case it is a newcomer.
                None => {
                    self.unknown_datagrams += 1;
                    if self.early.len() == EARLY_DATAGRAMS {
                        self.early.pop_front();
                    }
                    self.early.push_back((now, from, datagram));
                }
            }
        }
    }

    /// Runs the links, acts on what they report, and sends stats when due.
    fn poll(&mut self) {
        let now = self.now();
        for event in self.run_links(now) {
            self.on_link_event(now, event);
        }
        if now >= self.next_stats {
            self.next_stats = now + STATS_PERIOD;
            self.report(now);
        }
    }

    /// Runs the links: what is due goes out over each peer's transport; returns what they
    /// report.
    fn run_links(&mut self, now: Duration) -> Vec<LinkEvent> {
        let mut events = Vec::new();
        if let Some(links) = &mut self.links {
            let (udp, remotes) = (&mut self.udp, &self.remotes);
            links.poll(
                now,
                demo_position(now),
                |peer, datagram| send_to(udp, remotes, now, peer, datagram),
                &mut events,
            );
        }
        events
    }

    fn on_link_event(&mut self, now: Duration, event: LinkEvent) {
        let Some(links) = &mut self.links else {
            return;
        };
        match event {
            LinkEvent::Connected { peer } => {
                let Some(remote) = self.remotes.get(&peer) else {
                    return;
                };
                let after = now.saturating_sub(remote.since);
                let transport = remote.transport.label();
                tracing::info!(
                    peer = id_of(peer),
                    epoch = epoch_of(peer),
                    transport,
                    after_ms = ms(after),
                    "connected"
                );
                let greeting = format!("hello from native peer {}", self.me.unwrap_or_default());
                if let Err(e) = links.send_chat(peer, &greeting) {
                    tracing::warn!(peer = id_of(peer), epoch = epoch_of(peer), error = %e, "greeting not sent");
                }
                emit(
                    self.json,
                    json!({"type": "link-connected", "peer": id_of(peer), "epoch": epoch_of(peer),
                    "transport": transport, "after_ms": ms(after)}),
                );
            }
            LinkEvent::Position { peer, x, y } => {
                if let Some(remote) = self.remotes.get_mut(&peer) {
                    remote.position = Some((x, y));
                }
            }
            LinkEvent::Chat { peer, text } => {
                tracing::info!(peer = id_of(peer), epoch = epoch_of(peer), %text, "chat");
                emit(
                    self.json,
                    json!({"type": "chat", "peer": id_of(peer), "text": text}),
                );
                // Players (browsers) get an echo; natives only greet each other, so two
                // natives never answer each other forever.
                let from_player = self.remotes.get(&peer).is_some_and(|r| r.kind == "browser");
                if from_player {
                    if let Err(e) = links.send_chat(peer, &format!("echo: {text}")) {
                        tracing::warn!(peer = id_of(peer), epoch = epoch_of(peer), error = %e, "echo not sent");
                    }
                }
            }
            LinkEvent::Disconnected { peer, reason } => {
                tracing::info!(
                    peer = id_of(peer),
                    epoch = epoch_of(peer),
                    ?reason,
                    "link ended"
                );
                emit(
                    self.json,
                    json!({"type": "link-ended", "peer": id_of(peer), "epoch": epoch_of(peer), "reason": reason}),
                );
            }
        }
    }

    /// One stats report: to the server for dashboards (like a browser), and to stdout.
    fn report(&mut self, now: Duration) {
        let Some(links) = &self.links else {
            return;
        };
        let mut for_server = Vec::new();
        let mut for_stdout = Vec::new();
        for (peer, stats) in links.stats() {
            let Some(remote) = self.remotes.get(&peer) else {
                continue;
            };
            let transport = remote.transport.label();
            // Dashboards know the current session's ids only.
            if epoch_of(peer) == self.epoch {
                for_server
                    .push(json!({"peer": id_of(peer), "transport": transport, "stats": stats}));
            }
            for_stdout.push(
                json!({"peer": id_of(peer), "epoch": epoch_of(peer), "kind": remote.kind, "transport": transport,
                "position": remote.position.map(|(x, y)| [x, y]), "refused": remote.refused,
                "stats": stats}),
            );
            if !self.json {
                tracing::info!(peer = id_of(peer), epoch = epoch_of(peer), transport, rtt_ms = stats.rtt_ms, loss_pct = stats.loss_percent,
                    mode = ?stats.mode, sent = stats.counters.packets_sent, "link");
            }
        }
        if !for_server.is_empty() {
            // Dropped while signalling is down: the next second brings fresh numbers.
            let _ = self
                .signalling
                .try_send(Outgoing::Stats { links: for_server });
        }
        self.emit(
            json!({"type": "stats", "t_s": now.as_secs_f64(), "peer_id": self.me,
            "unknown_datagrams": self.unknown_datagrams, "links": for_stdout}),
        );
    }

    /// Closes every link (the core sends its disconnects) and leaves the room.
    fn leave(&mut self) {
        let now = self.now();
        if let Some(links) = &mut self.links {
            for &peer in self.remotes.keys() {
                links.close(peer);
            }
        }
        self.run_links(now);
        self.emit(json!({"type": "left", "t_s": now.as_secs_f64()}));
    }
}

/// Hands a datagram to `peer`'s transport (dropped if it has none, or its channel is not open).
fn send_to(
    udp: &mut Link,
    remotes: &BTreeMap<u64, Remote>,
    now: Duration,
    peer: u64,
    datagram: &[u8],
) {
    match remotes.get(&peer).map(|r| &r.transport) {
        Some(Transport::Udp(addr)) => udp.send(now, *addr, datagram),
        Some(Transport::WebRtc {
            session,
            open: true,
        }) => {
            session.send(datagram);
        }
        _ => {}
    }
}

/// With `--json`, one event per stdout line.
fn emit(json: bool, event: Value) {
    if json {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{event}");
        let _ = out.flush();
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
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
