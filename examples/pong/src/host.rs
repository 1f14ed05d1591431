//! `pong-host`: the authoritative side of the example game, a native program on the `ackwire`
//! crate. It owns the ball and the score and simulates them at 30 Hz, tick `n` at `n × TICK`
//! on the room's clock (`ackwire::sync::FixedStep`), applying each player's input at the tick
//! it is stamped with (`Room::input_tick`). The first two players whose links connect get the
//! left and the right paddle, everyone else watches (and takes a side that frees up).
//! Messages: `protocol.rs`.
//!
//! ```text
//! pong-host http://127.0.0.1:8080/pong/?room=table [--points 5] [--bind 0.0.0.0:0] [--ticks]
//!     [--webtransport-port PORT] [--webtransport-rotation SECONDS]
//!     [--tls-cert fullchain.pem --tls-key privkey.pem --tls-name NAME]
//! ```
//!
//! `--webtransport-rotation` makes its self-signed WebTransport certificates that often
//! (default a week: `NativeOptions::webtransport_rotation`); the e2e rotates mid-game.
//!
//! With `--tls-cert`, `--tls-key` and `--tls-name` (all three, as `ackwire-signal` names its
//! TLS files) the host presents a certificate browsers trust for `NAME` (Let's Encrypt's, read
//! again every week: `NativeOptions::certificate`), so players on a page served over https
//! reach it over its WebSocket too (`wss://`).
//!
//! The URL is the one players open (or any `http://HOST/room/NAME`). It prints one JSON object
//! per line: `joined`, `link` (state changes), `seat`, `round`, `goal`, `over`, `paddles`
//! (every second: each side's peer, target, position, inputs received and how many came in
//! time for their tick) and with `--ticks` `tick` (every snapshot it sends).

use std::path::PathBuf;
use std::time::Duration;

use ackwire::sync::{FixedStep, Ticks};
use ackwire::{Broadcast, Event, HostCertificate, PeerId, Role, Room, RoomConfig, SendError};
use pong::protocol::{
    BALL_R, EVENTS, GameEvent, HEIGHT, INPUT, Input, PADDLE_H, PADDLE_W, PADDLE_X, STATE, Side,
    Snapshot, TICK, WIDTH, app,
};
use serde_json::json;

/// What the host's command line takes, said with every error in it.
const USAGE: &str = "usage: pong-host URL [--points N] [--bind ADDR] [--webtransport-port PORT] [--webtransport-rotation SECONDS] [--tls-cert PATH --tls-key PATH --tls-name NAME] [--ticks]";

const DT: f32 = 1.0 / 30.0;
/// Units per second.
const PADDLE_SPEED: f32 = 540.0;
const SERVE_SPEED: f32 = 300.0;
const MAX_SPEED: f32 = 600.0;
/// Each return is this much faster, and leaves at an angle set by where it hit the paddle.
const SPEEDUP: f32 = 1.06;
const SPIN: f32 = 150.0;
/// Serve angles in turn (radians): varied, yet every run plays the same.
const SERVE_ANGLES: [f32; 5] = [0.35, -0.5, 0.15, -0.25, 0.6];
/// Ticks before a serve (half a second), and after a won round before the next.
const SERVE_WAIT: u32 = 15;
const OVER_WAIT: u32 = 90;
const MIDDLE: [f32; 2] = [WIDTH / 2.0, HEIGHT / 2.0];

#[derive(Default)]
enum Phase {
    /// A side is empty.
    #[default]
    Waiting,
    /// The ball is served at this tick.
    Serving(u32),
    Playing,
    /// The next round may start at this tick.
    Over(u32),
}

#[derive(Default)]
struct Game {
    /// What every tick sends: tick, ball, velocity, paddles.
    now: Snapshot,
    targets: [f32; 2],
    /// Each side's newest input, waiting for its tick.
    pending: [Option<Input>; 2],
    inputs: [u64; 2],
    /// Inputs that came before the tick they are stamped with (the rest, late or sent before
    /// the player's clock was synced, are applied at once).
    timely: [u64; 2],
    seats: [Option<PeerId>; 2],
    /// Peers watching, in the order they came: the first takes a side that frees up.
    watching: Vec<PeerId>,
    score: [u8; 2],
    points: u8,
    serves: usize,
    phase: Phase,
}

impl Game {
    /// `peer`'s side: the one it has, else a free one, else a spectator's seat; `true` if new.
    fn seat(&mut self, peer: PeerId) -> (Side, bool) {
        if let Some(i) = self.seats.iter().position(|&s| s == Some(peer)) {
            return ([Side::Left, Side::Right][i], false);
        }
        let watching = self.watching.contains(&peer);
        match self.seats.iter().position(Option::is_none) {
            Some(i) => {
                self.seats[i] = Some(peer);
                self.watching.retain(|&p| p != peer);
                ([Side::Left, Side::Right][i], true)
            }
            None if watching => (Side::Spectator, false),
            None => {
                self.watching.push(peer);
                (Side::Spectator, true)
            }
        }
    }

    /// `peer` is gone; if it played, the game waits for the first spectator, returned, to
    /// take its side.
    fn leave(&mut self, peer: PeerId) -> Option<(PeerId, Side)> {
        self.watching.retain(|&p| p != peer);
        let i = self.seats.iter().position(|&s| s == Some(peer))?;
        self.seats[i] = None;
        self.phase = Phase::Waiting;
        (self.now.ball, self.now.velocity) = (MIDDLE, [0.0; 2]);
        let next = *self.watching.first()?;
        Some((next, self.seat(next).0))
    }

    /// A player's input: kept for its tick (the newest replaces one still waiting).
    fn input(&mut self, peer: PeerId, bytes: &[u8]) {
        let i = self.seats.iter().position(|&s| s == Some(peer));
        if let (Some(i), Some(input)) = (i, Input::decode(bytes)) {
            self.inputs[i] += 1;
            self.timely[i] += u64::from(input.tick > self.now.tick);
            self.pending[i] = Some(input);
        }
    }

    /// The ball waits in the middle, already aimed at `toward`, for half a second.
    fn serve(&mut self, toward: Side) {
        let angle = SERVE_ANGLES[self.serves % SERVE_ANGLES.len()];
        let dir = if toward == Side::Left { -1.0 } else { 1.0 };
        self.serves += 1;
        self.now.ball = MIDDLE;
        self.now.velocity = [dir * angle.cos(), angle.sin()].map(|v| v * SERVE_SPEED);
        self.phase = Phase::Serving(self.now.tick + SERVE_WAIT);
    }

    /// Tick `tick`; what it decided, for everyone to hear.
    fn step(&mut self, tick: u64) -> Option<GameEvent> {
        self.now.tick = tick as u32;
        for (pending, target) in self.pending.iter_mut().zip(&mut self.targets) {
            if let Some(input) = pending.take_if(|input| input.tick <= tick as u32) {
                *target = input.target.clamp(PADDLE_H / 2.0, HEIGHT - PADDLE_H / 2.0);
            }
        }
        for (y, target) in self.now.paddles.iter_mut().zip(self.targets) {
            *y += (target - *y).clamp(-PADDLE_SPEED * DT, PADDLE_SPEED * DT);
        }
        match self.phase {
            Phase::Waiting if self.seats.iter().all(Option::is_some) => {
                self.score = [0; 2];
                self.serve(Side::Left);
                Some(GameEvent::Round { score: self.score })
            }
            Phase::Serving(at) if self.now.tick >= at => {
                self.phase = Phase::Playing;
                None
            }
            Phase::Over(until) if self.now.tick >= until => {
                self.phase = Phase::Waiting;
                None
            }
            Phase::Playing => self.fly(),
            _ => None,
        }
    }

    /// Moves the ball one tick: off the walls, off a paddle it crosses, or into a goal.
    fn fly(&mut self) -> Option<GameEvent> {
        let (from, v) = (self.now.ball, self.now.velocity);
        let [x, y] = [from[0] + v[0] * DT, from[1] + v[1] * DT];
        self.now.ball = [x, y];
        if !(BALL_R..=HEIGHT - BALL_R).contains(&y) {
            let wall = if y < BALL_R { BALL_R } else { HEIGHT - BALL_R };
            self.now.ball[1] = 2.0 * wall - y;
            self.now.velocity[1] = -v[1];
        }
        for (i, dir) in [-1.0, 1.0].into_iter().enumerate() {
            // The plane the ball's centre touches the paddle's face at: crossed this tick?
            let face = PADDLE_X[i] - dir * (PADDLE_W / 2.0 + BALL_R);
            if dir * v[0] <= 0.0 || dir * (from[0] - face) > 0.0 || dir * (x - face) < 0.0 {
                continue;
            }
            let offset =
                from[1] + (y - from[1]) * (face - from[0]) / (x - from[0]) - self.now.paddles[i];
            if offset.abs() <= PADDLE_H / 2.0 + BALL_R {
                let spin = SPIN * offset / (PADDLE_H / 2.0);
                let v = [-v[0] * SPEEDUP, self.now.velocity[1] + spin];
                let slower = (MAX_SPEED / v[0].hypot(v[1])).min(1.0);
                (self.now.ball[0], self.now.velocity) = (face, v.map(|v| v * slower));
            }
        }
        let scorer = match self.now.ball[0] {
            x if x < -BALL_R => Side::Right,
            x if x > WIDTH + BALL_R => Side::Left,
            _ => return None,
        };
        self.score[scorer as usize] += 1;
        let score = self.score;
        if score[scorer as usize] >= self.points {
            self.phase = Phase::Over(self.now.tick + OVER_WAIT);
            self.now.velocity = [0.0; 2];
            return Some(GameEvent::Over {
                winner: scorer,
                score,
            });
        }
        // The one who conceded receives.
        self.serve(scorer.other());
        Some(GameEvent::Goal { scorer, score })
    }
}

fn say(value: serde_json::Value) {
    println!("{value}");
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    // The game's lines go to stdout; the stack's log to stderr, at warnings unless `RUST_LOG`
    // asks for more (`RUST_LOG=str0m=debug` shows the players' WebRTC sessions).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter.unwrap_or_else(|_| "warn".into()))
        .init();
    let (mut url, mut points, mut bind, mut ticks) = (String::new(), 5u8, None, false);
    let mut webtransport_port = 0;
    let mut rotation = None;
    let (mut tls_cert, mut tls_key, mut tls_name) = (None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_default();
        match arg.as_str() {
            "--points" => points = value().parse().expect("--points N (1-255)"),
            "--bind" => bind = Some(value().parse().expect("--bind IP:PORT")),
            "--ticks" => ticks = true,
            // The UDP port browsers reach it at over WebTransport (a firewall's open port).
            "--webtransport-port" => {
                webtransport_port = value().parse().expect("--webtransport-port PORT")
            }
            "--webtransport-rotation" => {
                let seconds: f64 = value().parse().expect("--webtransport-rotation SECONDS");
                rotation = Some(Duration::from_secs_f64(seconds));
            }
            // A certificate browsers trust, instead of self-signed ones pinned by hash.
            "--tls-cert" => tls_cert = Some(PathBuf::from(value())),
            "--tls-key" => tls_key = Some(PathBuf::from(value())),
            "--tls-name" => tls_name = Some(value()),
            _ => url = arg,
        }
    }
    let certificate = match (tls_cert, tls_key, tls_name) {
        (Some(chain), Some(key), Some(name)) => Some(HostCertificate::new(chain, key, name)),
        (None, None, None) => None,
        _ => {
            eprintln!("pong-host: --tls-cert, --tls-key and --tls-name go together\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    // A host room: every player links to this host alone.
    let mut config = RoomConfig::new(app()).with_role(Role::Host);
    // The players' URL names the room in its query.
    if let Some((_, room)) = url.split_once("room=") {
        config = config.with_room(room.split(['&', '#']).next().unwrap_or_default());
    }
    config.native.bind = bind.unwrap_or(config.native.bind);
    config.native.webtransport_port = webtransport_port;
    if let Some(rotation) = rotation {
        config.native.webtransport_rotation = rotation;
    }
    config.native.certificate = certificate;
    let mut room = match Room::join(&url, config) {
        Ok(room) => room,
        Err(e) => {
            eprintln!("pong-host: {e}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    // The field at rest, the paddles' targets where the paddles are.
    let mut game = Game {
        targets: Snapshot::default().paddles,
        points: points.max(1),
        ..Game::default()
    };
    // Ticks on the room's clock (the host's own): each simulated once, in order, however
    // late the timer wakes.
    let mut step = FixedStep::new(Ticks::new(TICK).expect("a tick"));
    let mut wake = tokio::time::Instant::now();
    // Events are reliable: a player whose link is down gets them when it is back, so a player
    // hears its side and the score once, when it is seated. A refusal (its queue full: it has
    // stopped reading) is said, never dropped in silence.
    let refused = |what: &str, peer: Option<PeerId>, e: SendError| {
        say(json!({"type": "refused-send", "what": what, "peer": peer, "error": e.to_string()}));
    };
    let tell = |room: &Room, peer, event: GameEvent| {
        let sent = room.on(EVENTS).send(peer, &event.encode());
        sent.unwrap_or_else(|e| refused("event", Some(peer), e));
    };
    let broadcast = |what: &str, sent: Result<Broadcast, SendError>| match sent {
        Ok(report) => report
            .refused
            .into_iter()
            .for_each(|(p, e)| refused(what, Some(p), e)),
        Err(e) => refused(what, None, e),
    };
    // One listener for the loop: one made each turn misses a Ctrl-C that comes mid-turn.
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        tokio::select! {
            _ = &mut interrupted => break,
            _ = tokio::time::sleep_until(wake) => {
                // The host's own clock: the room's, which its players' ticks count on.
                let time = room.clock().map_or(Duration::ZERO, |c| c.time);
                // The players' paddle targets, newest last: a frame loop's drain.
                while let Some((peer, bytes)) = room.on(INPUT).receive() {
                    game.input(peer, &bytes);
                }
                for tick in step.due(time) {
                    if let Some(event) = game.step(tick) {
                        say(json!(event));
                        broadcast("event", room.on(EVENTS).broadcast(&event.encode()));
                    }
                    let now = game.now;
                    broadcast("state", room.on(STATE).broadcast_latest(&now.encode()));
                    if ticks {
                        say(json!({"type": "tick", "tick": now.tick, "ball": now.ball, "paddles": now.paddles}));
                    }
                    if now.tick.is_multiple_of(30) {
                        let side = |i: usize| json!({"peer": game.seats[i], "target": game.targets[i], "y": now.paddles[i], "inputs": game.inputs[i], "timely": game.timely[i]});
                        say(json!({"type": "paddles", "tick": now.tick, "left": side(0), "right": side(1)}));
                    }
                }
                wake = tokio::time::Instant::now() + step.next_due().unwrap_or(time) - time;
            }
            event = room.next_event() => match event {
                Some(Event::Joined { .. }) => say(json!({"type": "joined", "url": url})),
                Some(Event::Refused { code, message, fatal }) => say(json!({"type": "refused", "code": code, "message": message, "fatal": fatal})),
                Some(Event::Connected { peer }) => {
                    // What carries it: `webtransport`, `webrtc` or `udp`.
                    let transport = room.links().into_iter().find(|l| l.peer == peer).map(|l| l.transport);
                    say(json!({"type": "link", "peer": peer, "state": "connected", "transport": transport}));
                    let (side, new) = game.seat(peer);
                    if new {
                        say(json!({"type": "seat", "peer": peer, "side": side}));
                        tell(&room, peer, GameEvent::Side { side, points: game.points });
                        tell(&room, peer, GameEvent::Round { score: game.score });
                    }
                }
                Some(Event::Disconnected { peer, reason }) => say(json!({"type": "link", "peer": peer, "state": "disconnected", "reason": reason.map(|r| r.code())})),
                Some(Event::PeerLeft { peer, .. }) => {
                    if let Some((next, side)) = game.leave(peer) {
                        say(json!({"type": "seat", "peer": next, "side": side}));
                        tell(&room, next, GameEvent::Side { side, points: game.points });
                    }
                }
                Some(_) => {}
                None => break,
            },
        }
    }
    room.close().await;
    std::process::ExitCode::SUCCESS
}
