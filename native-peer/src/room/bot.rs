//! The demo's native player: a loop around a [`Room`]'s events and a tick that moves its
//! dot. It uses the `ackwire` crate's public API only.
//!
//! Its JSON lines (`--json`, one object per line on stdout) are what the e2e tests read:
//! `welcome` (`peer_id`: our server id), `signalling`, `peer-joined` / `peer-left`
//! (`peer_id`, `role`), `link` (a link's state: `link` is the room's stable id for the peer,
//! `peer` its current server id), `chat` (`peer`, `text`; `origin` when the host relayed it),
//! `refused` (`code`, `message`), `stats` once a second (`links`, each with the peer's last
//! `position`; `relayed`: the dots the host relays, by origin), and `left` at the end.

use std::collections::HashMap;
use std::f32::consts::TAU;
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use ackwire::{
    App, Emulation, Event, LinkInfo, LinkState, NativeOptions, PeerId, PeerKind, Role, Room,
    RoomConfig, SignallingState,
};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::demo::{self, CHAT, FROM_HOST, POSITION, Relayed};
use super::{JoinArgs, RoomError};
use crate::flags::ArgError;

/// One lap of the demo dot.
const LAP: Duration = Duration::from_secs(8);
/// How often the dot's newest position is handed to the room: faster than the fastest packet
/// rate (30 packets/s), so every packet carries a fresh one.
const TICK: Duration = Duration::from_millis(20);

/// Where our dot is at `t`: a circle around the middle of the field.
fn demo_position(t: Duration) -> (f32, f32) {
    let angle = TAU * (t.as_secs_f32() % LAP.as_secs_f32()) / LAP.as_secs_f32();
    (0.5 + 0.35 * angle.cos(), 0.5 + 0.35 * angle.sin())
}

/// How the bot talks to a person: one JSON object per line, a refreshing terminal view,
/// or log lines only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Console {
    Json,
    Live,
    Log,
}

/// What the bot knows of a peer.
#[derive(Debug)]
struct Peer {
    kind: PeerKind,
    /// Its dot, from its last position message.
    position: Option<(f32, f32)>,
    /// Its link's last state.
    state: Option<LinkState>,
}

struct Bot {
    start: Instant,
    console: Console,
    room: Room,
    /// A mesh peer, a host room's host (the relay) or a client.
    role: Role,
    peers: HashMap<PeerId, Peer>,
    /// A client's view of the other players: their dots as the host relays them, by origin.
    relayed: HashMap<u32, (f32, f32)>,
    /// Lines of the terminal view last drawn.
    live_lines: usize,
    /// The server refused the room for good, and why.
    refused: Option<(ackwire::ErrorCode, String)>,
    /// The room stopped for another reason, and why: another program joined in its place.
    stopped: Option<String>,
    /// The bot is leaving: the room's signalling closes because it asked.
    leaving: bool,
}

fn seconds(flag: &'static str, value: Option<f64>) -> Result<Option<Duration>, ArgError> {
    value
        .map(|secs| {
            Duration::try_from_secs_f64(secs)
                .map_err(|_| ArgError::BadDuration { flag, value: secs })
        })
        .transpose()
}

/// The room configuration `join`'s flags (and `host`'s `role`) ask for.
fn config(args: &JoinArgs, role: Role) -> Result<RoomConfig, RoomError> {
    let app = if args.app == demo::APP_ID && args.app_version == demo::APP_VERSION {
        demo::app()
    } else {
        App::new(args.app.clone(), args.app_version, demo::app().channels)
    };
    let mut config = RoomConfig::new(app).with_role(role);
    config.ticket = args.ticket.clone();
    config.host_identity = args.host_identity.clone();
    config.emulation = args.common.emulation()?.map(|e: Emulation| e);
    if let Some(attempt) = seconds("attempt-timeout", args.attempt_timeout)? {
        if attempt.is_zero() {
            return Err(ArgError::Zero {
                flag: "attempt-timeout",
            }
            .into());
        }
        config.attempt_timeout = attempt;
    }
    let mut native = NativeOptions::default();
    native.bind = args.bind;
    native.advertise = args.advertise;
    native.ice_bind = args.ice_bind;
    native.public_ip = args.public_ip;
    native.tls_ca = args.tls_ca.clone();
    native.encrypt = !args.common.insecure;
    native.host_ice_lite = !args.full_ice;
    config.native = native;
    Ok(config)
}

/// Joins the room `args.url` as `role` and plays until `stop` resolves or `--duration`
/// passes.
pub async fn run(
    args: &JoinArgs,
    role: Role,
    stop: impl Future<Output = ()>,
) -> Result<(), RoomError> {
    let duration = seconds("duration", args.common.duration)?;
    // When the cable is pulled and plugged back (`--outage-at`, `--outage-for`).
    let mut outage = match (
        seconds("outage-at", args.outage_at)?,
        seconds("outage-for", args.outage_for)?,
    ) {
        (Some(at), Some(length)) => vec![(at + length, false), (at, true)],
        _ => Vec::new(),
    };
    let room = Room::join(&args.url, config(args, role)?)?;
    let start = Instant::now();
    let console = if args.common.json {
        Console::Json
    } else if std::io::stderr().is_terminal() && std::io::stdout().is_terminal() {
        Console::Live
    } else {
        Console::Log
    };
    let mut bot = Bot {
        start,
        console,
        room,
        role,
        peers: HashMap::new(),
        relayed: HashMap::new(),
        live_lines: 0,
        refused: None,
        stopped: None,
        leaving: false,
    };
    let deadline = duration.map(|d| start + d);
    let mut chat = match seconds("chat-every", args.chat_every)? {
        Some(every) if !every.is_zero() => Some(tokio::time::interval_at(start + every, every)),
        _ => None,
    };
    let mut said = 0u64;
    tokio::pin!(stop);
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let far = start + Duration::from_secs(365 * 24 * 3600);
    loop {
        let next_outage = outage.last().map_or(far, |(at, _)| start + *at);
        tokio::select! {
            () = &mut stop => break,
            () = tokio::time::sleep_until(deadline.unwrap_or(far)) => break,
            () = tokio::time::sleep_until(next_outage) => {
                if let Some((_, on)) = outage.pop() {
                    tracing::warn!(on, "outage: every datagram of every link is dropped while on");
                    bot.room.set_outage(on);
                }
            }
            // The host relays; it has no dot of its own.
            _ = tick.tick(), if role != Role::Host => {
                let (x, y) = demo_position(start.elapsed());
                // Nobody connected yet is not an error (the report says 0); a refusal for all
                // (the room closed) is said.
                if let Err(e) = bot.room.broadcast_latest(POSITION, &demo::encode_position(x, y)) {
                    tracing::warn!(error = %e, "position not sent");
                }
            }
            _ = async { chat.as_mut().expect("guarded").tick().await }, if chat.is_some() => {
                said += 1;
                bot.say(&format!("line {said} from native {}", std::process::id()));
            }
            event = bot.room.next_event() => match event {
                Some(event) => bot.on_event(event),
                None => break,
            },
        }
        if bot.refused.is_some() || bot.stopped.is_some() {
            break;
        }
    }
    bot.leaving = true;
    bot.room.close().await;
    while let Some(event) = bot.room.poll_event() {
        bot.on_event(event);
    }
    bot.json(json!({"type": "left", "t_s": bot.start.elapsed().as_secs_f64()}));
    match (bot.refused, bot.stopped) {
        (Some((code, message)), _) => Err(RoomError::Refused { code, message }),
        (None, Some(detail)) => Err(RoomError::Stopped(detail)),
        (None, None) => Ok(()),
    }
}

impl Bot {
    /// Says `text` reliably to every peer in the room, and what became of it: who took it,
    /// who refused it and why.
    fn say(&mut self, text: &str) {
        match self.room.broadcast(CHAT, text.as_bytes()) {
            Ok(outcome) => {
                let refused: Vec<Value> = outcome
                    .refused
                    .iter()
                    .map(|(peer, e)| json!({"link": peer, "error": e.to_string()}))
                    .collect();
                if !refused.is_empty() {
                    tracing::warn!(text, ?outcome.refused, "a chat line some peers refused");
                }
                self.json(
                    json!({"type": "said", "text": text, "sent": outcome.sent, "refused": refused}),
                );
            }
            Err(e) => {
                tracing::warn!(error = %e, text, "chat line not sent");
                self.json(json!({"type": "said", "text": text, "sent": 0, "error": e.to_string()}));
            }
        }
    }

    fn json(&self, value: Value) {
        if self.console == Console::Json {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{value}");
            let _ = out.flush();
        }
    }

    /// A link as the JSON lines show it: `link` is the room's stable id for the peer,
    /// `peer` its id in the server's current session, `position` its dot.
    fn link_json(&self, info: &LinkInfo) -> Value {
        let mut value = serde_json::to_value(info).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.insert("link".into(), json!(info.peer));
            map.insert("peer".into(), json!(info.server_id));
            map.remove("server_id");
            let position = self.peers.get(&info.peer).and_then(|p| p.position);
            map.insert("position".into(), json!(position));
        }
        value
    }

    fn server_id(&self, peer: PeerId) -> Option<u64> {
        self.room
            .links()
            .into_iter()
            .find(|l| l.peer == peer)
            .and_then(|l| l.server_id)
    }

    /// The application's part: log, greet, echo, remember dots, write JSON.
    fn on_event(&mut self, event: Event) {
        match event {
            Event::Signalling { state, detail } => {
                match state {
                    SignallingState::Reconnecting => {
                        tracing::warn!(detail = detail.as_deref().unwrap_or(""), "signalling down")
                    }
                    SignallingState::Joined => tracing::info!("in the room"),
                    // Stopped by the room itself: not a refusal (that comes as one), so another
                    // program took its place.
                    SignallingState::Closed if self.refused.is_none() && !self.leaving => {
                        let detail = detail.clone().unwrap_or_default();
                        tracing::warn!(%detail, "the room stopped");
                        self.stopped = Some(detail);
                    }
                    _ => tracing::debug!(?state, "signalling"),
                }
                self.json(json!({"type": "signalling", "state": state, "detail": detail}));
            }
            Event::Joined { server_id, resumed } => {
                tracing::info!(peer_id = server_id, resumed, "welcomed");
                self.json(json!({"type": "welcome", "peer_id": server_id, "resumed": resumed}));
            }
            Event::Refused { code, message, .. } => {
                // After a server restart our old id is unknown there: expected, the room
                // joins afresh by itself.
                if code == ackwire::ErrorCode::ResumeRejected {
                    tracing::info!(%message, "the server forgot us; joining afresh");
                } else {
                    tracing::warn!(%code, %message, "the server refused");
                }
                self.json(json!({"type": "refused", "code": code, "message": message}));
                if self.room.signalling_state() == SignallingState::Closed {
                    self.refused = Some((code, message));
                }
            }
            Event::PeerJoined {
                peer,
                server_id,
                kind,
                role,
                identity,
            } => {
                tracing::info!(peer = server_id, kind = kind.as_str(), %role, ?identity, "peer joined");
                self.peers.insert(
                    peer,
                    Peer {
                        kind,
                        position: None,
                        state: None,
                    },
                );
                self.json(json!({"type": "peer-joined", "link": peer, "peer_id": server_id, "kind": kind, "role": role, "identity": identity}));
            }
            Event::HostRefused {
                server_id,
                identity,
                expected,
            } => {
                tracing::warn!(peer = server_id, ?identity, %expected, "a host of another identity joined: no link with it");
                self.json(json!({"type": "host-refused", "peer_id": server_id, "identity": identity, "expected": expected}));
            }
            Event::PeerLeft {
                peer,
                server_id,
                reason,
                role,
            } => {
                tracing::info!(peer = server_id, ?reason, %role, "peer left");
                self.peers.remove(&peer);
                self.json(json!({"type": "peer-left", "link": peer, "peer_id": server_id, "reason": reason, "role": role}));
            }
            Event::Link(info) => self.on_link(&info),
            Event::Message {
                peer,
                channel: POSITION,
                bytes,
            } => {
                if self.is_host(peer) {
                    if let Some(relayed) = Relayed::decode(&bytes)
                        && let Some(position) = demo::decode_position(relayed.payload)
                    {
                        self.relayed.insert(relayed.origin, position);
                    }
                } else if let (Some(p), Some(position)) =
                    (self.peers.get_mut(&peer), demo::decode_position(&bytes))
                {
                    p.position = Some(position);
                    if self.role == Role::Host {
                        self.relay(peer, POSITION, &bytes);
                    }
                }
            }
            Event::Message {
                peer,
                channel: CHAT,
                bytes,
            } => {
                let server_id = self.server_id(peer);
                if self.is_host(peer) {
                    let Some(relayed) = Relayed::decode(&bytes) else {
                        tracing::warn!(len = bytes.len(), "a relayed chat line without its origin");
                        return;
                    };
                    let text = demo::chat_text(relayed.payload);
                    tracing::info!(origin = relayed.origin, %text, "chat (relayed)");
                    self.json(json!({"type": "chat", "link": peer, "peer": server_id, "origin": relayed.origin, "text": text}));
                    return;
                }
                let text = demo::chat_text(&bytes);
                tracing::info!(peer = ?server_id, %text, "chat");
                self.json(json!({"type": "chat", "link": peer, "peer": server_id, "text": text}));
                if self.role == Role::Host {
                    self.relay(peer, CHAT, &bytes);
                    return;
                }
                // Players (browsers) get an echo; natives only greet each other, so two
                // natives never answer each other forever.
                if self
                    .peers
                    .get(&peer)
                    .is_some_and(|p| p.kind == PeerKind::Browser)
                    && let Err(e) = self
                        .room
                        .send(peer, CHAT, format!("echo: {text}").as_bytes())
                {
                    tracing::warn!(error = %e, "echo not sent");
                }
            }
            Event::Undelivered {
                peer,
                channel,
                bytes,
            } => {
                tracing::warn!(%peer, channel, len = bytes.len(), "a reliable message was never confirmed");
            }
            Event::Stats { links } => self.report(&links),
            _ => {}
        }
    }

    /// Whether `peer` is the host of our host room (then what it sends is relayed).
    fn is_host(&self, peer: PeerId) -> bool {
        self.role == Role::Client && self.room.host() == Some(peer)
    }

    /// The host's job: `bytes` from client `from` to every other connected client, behind
    /// its origin; positions unreliably, chat reliably. Positions are queued with `send`,
    /// not `send_latest`: that keeps one message per peer and channel whoever it is about,
    /// so each packet would carry only the newest origin's dot and the others could starve
    /// (docs/api.md, "State: `send_latest`"). Each packet carries every dot queued since the
    /// last; the receiver's sequenced channel drops none of one packet.
    fn relay(&mut self, from: PeerId, channel: u8, bytes: &[u8]) {
        let relayed = Relayed::encode(from.0, bytes);
        // The peers and the room borrowed apart: no list of recipients per message.
        let (peers, room) = (&self.peers, &mut self.room);
        let clients = peers
            .iter()
            .filter(|(id, p)| **id != from && p.state == Some(LinkState::Connected))
            .map(|(id, _)| *id);
        for to in clients {
            if let Err(e) = room.send(to, channel, &relayed) {
                tracing::warn!(%to, channel, error = %e, "not relayed");
            }
        }
    }

    fn on_link(&mut self, info: &LinkInfo) {
        let peer = info
            .server_id
            .map_or_else(|| "?".to_owned(), |p| p.to_string());
        // A link event may only tell a new path or first ack: log changes of state.
        let changed = self
            .peers
            .get_mut(&info.peer)
            .is_none_or(|p| p.state.replace(info.state) != Some(info.state));
        match (&info.state, &info.reason) {
            _ if !changed => {}
            (LinkState::Connected, _) => tracing::info!(
                peer, transport = ?info.transport, after_ms = info.attempt_ms.as_millis() as u64,
                "link connected"
            ),
            (LinkState::Lost, Some(reason)) => {
                tracing::warn!(peer, code = reason.code(), "link lost: {reason}")
            }
            (state, _) => tracing::debug!(peer, ?state, "link"),
        }
        let mut line = self.link_json(info);
        if let Value::Object(map) = &mut line {
            map.insert("type".into(), json!("link"));
        }
        self.json(line);
        // Greet once per connection (a link event of a connected link may only tell its
        // first ack).
        if info.state == LinkState::Connected && info.first_ack_at.is_none() {
            let me = self.room.server_id().unwrap_or_default();
            let greeting = match self.role {
                Role::Host => {
                    Relayed::encode(FROM_HOST, format!("hello from native host {me}").as_bytes())
                }
                _ => format!("hello from native peer {me}").into_bytes(),
            };
            if let Err(e) = self.room.send(info.peer, CHAT, &greeting) {
                tracing::warn!(peer, error = %e, "greeting not sent");
            }
        }
    }

    /// Once a second: the JSON stats line, or the terminal view.
    fn report(&mut self, links: &[LinkInfo]) {
        match self.console {
            Console::Json => {
                let links: Vec<Value> = links.iter().map(|l| self.link_json(l)).collect();
                self.json(json!({
                    "type": "stats", "t_s": self.start.elapsed().as_secs_f64(),
                    "peer_id": self.room.server_id(),
                    "signalling": self.room.signalling_state(), "links": links,
                    "relayed": self.relayed.iter().map(|(o, p)| (o.to_string(), json!(p))).collect::<serde_json::Map<_, _>>(),
                }));
            }
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
                    self.room.server_id().map_or("?".into(), |p| p.to_string()),
                    self.room.signalling_state(),
                    links.len()
                );
                for l in links {
                    let _ = writeln!(out, "  {}", link_line(l));
                }
                let _ = out.flush();
                self.live_lines = links.len() + 1;
            }
            Console::Log => {}
        }
    }
}

/// One line of the terminal view: who, state, RTT, loss, mode, transport.
fn link_line(l: &LinkInfo) -> String {
    let peer = l
        .server_id
        .map_or_else(|| "?".to_owned(), |p| p.to_string());
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

    /// `join`'s flags after the URL, parsed as the command line would be.
    fn join_args(flags: &[&str]) -> JoinArgs {
        use clap::{Args as _, FromArgMatches as _};
        let command = JoinArgs::augment_args(clap::Command::new("join").no_binary_name(true));
        let argv = std::iter::once("http://127.0.0.1:9/room/x").chain(flags.iter().copied());
        JoinArgs::from_arg_matches(&command.try_get_matches_from(argv).unwrap()).unwrap()
    }

    #[test]
    fn attempt_timeout_flag_sets_how_long_a_link_may_take_and_refuses_zero() {
        let default = config(&join_args(&[]), Role::Peer).unwrap();
        assert_eq!(default.attempt_timeout, Duration::from_secs(20));
        let short = config(&join_args(&["--attempt-timeout", "2.5"]), Role::Peer).unwrap();
        assert_eq!(short.attempt_timeout, Duration::from_millis(2500));
        for bad in ["0", "-1", "nan"] {
            let flag = format!("--attempt-timeout={bad}");
            let err = config(&join_args(&[&flag]), Role::Peer).unwrap_err();
            assert!(matches!(err, RoomError::Arg(_)), "{bad}: {err}");
            assert!(
                err.to_string().contains("--attempt-timeout"),
                "{bad}: {err}"
            );
        }
    }
}
