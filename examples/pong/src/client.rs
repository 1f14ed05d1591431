//! The game client in Rust on `wasm32`: the same `ackwire::Room` the host uses natively,
//! polled once per animation frame, drawing to a canvas. `web/rust.html` loads it and calls
//! [`start`]. It plays exactly as `web/pong.js` does and shows the same `window.pong`.

use std::cell::RefCell;
use std::rc::Rc;

use ackwire::sync::{Snapshots, Ticks};
use ackwire::{Event, GoneReason, LinkState, PeerId, Role, Room, RoomConfig};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, KeyboardEvent, PointerEvent};

use crate::protocol::{
    BALL_R, EVENTS, GameEvent, HEIGHT, INPUT, PADDLE_H, PADDLE_W, PADDLE_X, STATE, Side, Snapshot,
    TICK, WIDTH, app,
};

/// Snapshots kept in `window.pong.history` (ten seconds' worth).
const HISTORY: u32 = 300;
/// Units a held key moves the paddle's target per frame.
const KEY_STEP: f32 = 9.0;

struct Client {
    room: Room,
    ctx: CanvasRenderingContext2d,
    /// `window.pong`: what the page (and the e2e) reads.
    status: Object,
    history: Array,
    results: Array,
    host: Option<PeerId>,
    side: Option<Side>,
    score: [u8; 2],
    winner: Option<Side>,
    snapshot: Option<Snapshot>,
    /// The host's states by tick, drawn between two at the room's clock less a delay that
    /// follows the path's jitter (`ackwire::sync`): ball x, y, the paddles' y.
    drawn: Snapshots<[f32; 4]>,
    target: f32,
    keys: f32,
    auto: Option<String>,
    line: String,
    sent: u32,
    snapshots: u32,
    /// Frames drawn from the state buffer with a state after the render time, so between
    /// two of the host's states (`window.pong.interpolated`).
    interpolated: u32,
}

/// Joins the room the page's URL names (`?room=NAME`, default `pong`) and plays in `canvas`
/// until the page goes; `?auto=track` or `?auto=miss` lets the paddle play by itself.
#[wasm_bindgen]
pub fn start(canvas: HtmlCanvasElement) -> Result<(), JsValue> {
    let window = web_sys::window().ok_or("no window")?;
    let href = window.location().href()?;
    let params = web_sys::Url::new(&href)?.search_params();
    let config = RoomConfig::new(app())
        .with_room(params.get("room").unwrap_or_else(|| "pong".into()))
        .with_role(Role::Client);
    let room = Room::join(&href, config).map_err(|e| e.to_string())?;
    let ctx: CanvasRenderingContext2d = canvas
        .get_context("2d")?
        .ok_or("no 2d context")?
        .dyn_into()?;
    // `window.pong`, the same shape as `web/pong.js`'s from the start.
    let (status, history, results) = (Object::new(), Array::new(), Array::new());
    let score = Array::of2(&0.into(), &0.into());
    for (key, value) in [
        ("side", JsValue::NULL),
        ("points", JsValue::NULL),
        ("winner", JsValue::NULL),
        ("score", score.into()),
        ("results", results.clone().into()),
        ("history", history.clone().into()),
        ("sent", 0.into()),
        ("snapshots", 0.into()),
        ("interpolated", 0.into()),
    ] {
        Reflect::set(&status, &key.into(), &value)?;
    }
    Reflect::set(&window, &"pong".into(), &status)?;
    let client = Rc::new(RefCell::new(Client {
        room,
        ctx,
        status,
        history,
        results,
        host: None,
        side: None,
        score: [0; 2],
        winner: None,
        snapshot: None,
        drawn: Snapshots::new(Ticks::new(TICK).ok_or("a tick of no length")?),
        target: HEIGHT / 2.0,
        keys: 0.0,
        auto: params.get("auto"),
        line: "joining…".into(),
        sent: 0,
        snapshots: 0,
        interpolated: 0,
    }));

    // The pointer's height over the canvas is the paddle's target.
    let c = Rc::clone(&client);
    let height = canvas.clone();
    listen(&canvas, "pointermove", move |e: PointerEvent| {
        c.borrow_mut().target = e.offset_y() as f32 * HEIGHT / height.client_height().max(1) as f32;
    })?;
    for (name, down) in [("keydown", true), ("keyup", false)] {
        let c = Rc::clone(&client);
        listen(&window, name, move |e: KeyboardEvent| {
            let dir = match e.code().as_str() {
                "ArrowUp" | "KeyW" => -1.0,
                "ArrowDown" | "KeyS" => 1.0,
                _ => return,
            };
            c.borrow_mut().keys = if down { dir } else { 0.0 };
        })?;
    }

    next_frame(client);
    Ok(())
}

/// Every frame: take what the room heard, send the paddle's target, draw; then again.
fn next_frame(client: Rc<RefCell<Client>>) {
    let frame = Closure::once_into_js(move || {
        client.borrow_mut().frame();
        next_frame(client);
    });
    if let Some(window) = web_sys::window() {
        let _ = window.request_animation_frame(frame.unchecked_ref());
    }
}

/// Adds a listener for the page's whole life.
fn listen<E: wasm_bindgen::convert::FromWasmAbi + 'static>(
    target: &web_sys::EventTarget,
    name: &str,
    f: impl FnMut(E) + 'static,
) -> Result<(), JsValue> {
    let f = Closure::<dyn FnMut(E)>::new(f);
    target.add_event_listener_with_callback(name, f.as_ref().unchecked_ref())?;
    f.forget();
    Ok(())
}

impl Client {
    fn set(&self, key: &str, value: JsValue) {
        let _ = Reflect::set(&self.status, &key.into(), &value);
    }

    fn frame(&mut self) {
        while let Some(event) = self.room.poll_event() {
            self.hear(event);
        }
        if let (Some(host), Some(side @ (Side::Left | Side::Right))) = (self.host, self.side) {
            self.target = match (self.auto.as_deref(), self.snapshot) {
                (Some("track"), Some(s)) => s.arrival(side),
                // Away from where the ball will arrive: a sure miss, for tests and demos.
                (Some("miss"), Some(s)) if s.arrival(side) < HEIGHT / 2.0 => {
                    HEIGHT - PADDLE_H / 2.0
                }
                (Some("miss"), Some(_)) => PADDLE_H / 2.0,
                _ => (self.target + self.keys * KEY_STEP)
                    .clamp(PADDLE_H / 2.0, HEIGHT - PADDLE_H / 2.0),
            };
            if self
                .room
                .on(INPUT)
                .send_latest(host, &self.target.to_le_bytes())
                .is_ok()
            {
                self.sent += 1;
                self.set("sent", self.sent.into());
            }
        }
        self.draw();
    }

    fn hear(&mut self, event: Event) {
        match event {
            // Only the host's state and events count.
            Event::Message { peer, .. } if Some(peer) != self.host => {}
            Event::Message { channel, bytes, .. } if channel == STATE => {
                let Some(s) = Snapshot::decode(&bytes) else {
                    return;
                };
                self.snapshot = Some(s);
                if let Some(clock) = self.room.clock() {
                    let [x, y] = s.ball;
                    let [left, right] = s.paddles;
                    self.drawn
                        .push(u64::from(s.tick), clock.time, [x, y, left, right]);
                }
                let entry = Array::of3(&s.tick.into(), &s.ball[0].into(), &s.ball[1].into());
                self.history.push(&entry);
                if self.history.length() > HISTORY {
                    self.history.shift();
                }
                self.snapshots += 1;
                self.set("snapshots", self.snapshots.into());
            }
            Event::Message { channel, bytes, .. } if channel == EVENTS => {
                match GameEvent::decode(&bytes) {
                    Some(GameEvent::Side(side, points)) => {
                        self.side = Some(side);
                        self.set("side", side.name().into());
                        self.set("points", points.into());
                    }
                    Some(GameEvent::Score(scorer, score)) => {
                        self.score = score;
                        if scorer.is_none() {
                            self.winner = None;
                            self.set("winner", JsValue::NULL);
                        }
                        self.set(
                            "score",
                            Array::of2(&score[0].into(), &score[1].into()).into(),
                        );
                    }
                    Some(GameEvent::Over(winner, score)) => {
                        self.score = score;
                        self.winner = Some(winner);
                        let score = Array::of2(&score[0].into(), &score[1].into());
                        self.set("score", score.clone().into());
                        self.set("winner", winner.name().into());
                        let result = Object::new();
                        let _ = Reflect::set(&result, &"winner".into(), &winner.name().into());
                        let _ = Reflect::set(&result, &"score".into(), &score);
                        self.results.push(&result);
                    }
                    None => {}
                }
            }
            Event::Joined { .. } => self.line = "joined: waiting for the host".into(),
            Event::Refused { message, .. } => self.line = format!("refused: {message}"),
            // The room's host: a player links to it alone, and inputs go to it. When it leaves
            // or is lost the player waits, and links to the next host by itself.
            Event::PeerJoined {
                peer,
                role: Role::Host,
                ..
            } => self.host = Some(peer),
            Event::PeerLeft { peer, reason, .. } if Some(peer) == self.host => {
                self.host = None;
                self.line = match reason {
                    GoneReason::Left => "the host left: waiting for it to come back",
                    _ => "lost the host: waiting for it to come back",
                }
                .into();
            }
            Event::Link(link) if Some(link.peer) == self.host => {
                self.line = match (link.state, &link.reason) {
                    (LinkState::Lost, Some(why)) => format!("link to the host lost: {why}"),
                    (state, _) => format!("link to the host: {state:?}").to_lowercase(),
                };
            }
            _ => {}
        }
    }

    fn draw(&mut self) {
        // Between the host's two states around the render time; the newest until the
        // room's clock is read.
        let held = self.drawn.held();
        let shown = match self.room.clock().and_then(|c| self.drawn.sample(c.time)) {
            Some([x, y, left, right]) => {
                if self.drawn.held() == held {
                    self.interpolated += 1;
                    self.set("interpolated", self.interpolated.into());
                }
                Some(([x, y], [left, right]))
            }
            None => self.snapshot.map(|s| (s.ball, s.paddles)),
        };
        let ctx = &self.ctx;
        ctx.set_fill_style_str("#111");
        ctx.fill_rect(0.0, 0.0, WIDTH.into(), HEIGHT.into());
        ctx.set_fill_style_str("#444");
        // The net, clear of the score and the message.
        for y in (60..HEIGHT as i32 - 40).step_by(24) {
            ctx.fill_rect(f64::from(WIDTH) / 2.0 - 1.0, f64::from(y), 2.0, 12.0);
        }
        ctx.set_fill_style_str("#eee");
        ctx.set_font("32px monospace");
        ctx.set_text_align("center");
        let _ = ctx.fill_text(
            &format!("{}   {}", self.score[0], self.score[1]),
            f64::from(WIDTH) / 2.0,
            40.0,
        );
        ctx.set_font("16px monospace");
        let info = match (self.winner, self.side) {
            (Some(w), Some(me)) if w == me => "you win!".to_owned(),
            (Some(w), _) => format!("{} wins", w.name()),
            (None, Some(Side::Spectator)) => "watching".to_owned(),
            (None, Some(side)) => format!("you play {}", side.name()),
            (None, None) => self.line.clone(),
        };
        let _ = ctx.fill_text(&info, f64::from(WIDTH) / 2.0, f64::from(HEIGHT) - 16.0);
        let Some((ball, paddles)) = shown else { return };
        for (i, y) in paddles.into_iter().enumerate() {
            let mine = self.side.is_some_and(|side| side as usize == i);
            ctx.set_fill_style_str(if mine { "#6cf" } else { "#eee" });
            ctx.fill_rect(
                (PADDLE_X[i] - PADDLE_W / 2.0).into(),
                (y - PADDLE_H / 2.0).into(),
                PADDLE_W.into(),
                PADDLE_H.into(),
            );
        }
        ctx.set_fill_style_str("#eee");
        ctx.fill_rect(
            (ball[0] - BALL_R).into(),
            (ball[1] - BALL_R).into(),
            (2.0 * BALL_R).into(),
            (2.0 * BALL_R).into(),
        );
    }
}
