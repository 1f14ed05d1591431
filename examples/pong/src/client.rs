//! The game client in Rust on `wasm32`: the same `ackwire::Room` the host uses natively,
//! polled once per animation frame, drawing to a canvas. `web/rust.html` loads it and calls
//! [`start`]. It plays exactly as `web/pong.js` does and shows the same `window.pong`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use ackwire::sync::{Snapshots, Ticks};
use ackwire::{Event, GoneReason, LinkState, Role, Room, RoomConfig};
use serde::Serialize;
use serde_json::json;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, KeyboardEvent, PointerEvent};

use crate::protocol::{
    BALL_R, EVENTS, GameEvent, HEIGHT, INPUT, Input, PADDLE_H, PADDLE_W, PADDLE_X, STATE, Side,
    Snapshot, TICK, WIDTH, app,
};

/// Snapshots kept in `window.pong.history` (ten seconds' worth).
const HISTORY: usize = 300;
/// Units a held key moves the paddle's target per frame.
const KEY_STEP: f32 = 9.0;

/// `window.pong`, what the page (and the e2e) reads: the same as `web/pong.js`'s.
#[derive(Default, Serialize)]
struct Status {
    side: Option<Side>,
    points: Option<u8>,
    winner: Option<Side>,
    score: [u8; 2],
    /// Each round's `{winner, score}`.
    results: Vec<serde_json::Value>,
    /// The host's snapshots: tick, ball x, y (as the f64 a JS number holds, so exact).
    history: VecDeque<(u32, f64, f64)>,
    sent: u32,
    snapshots: u32,
    /// Frames drawn from the state buffer with a state after the render time, so between
    /// two of the host's states.
    interpolated: u64,
}

struct Client {
    room: Room,
    ctx: CanvasRenderingContext2d,
    status: Status,
    snapshot: Option<Snapshot>,
    ticks: Ticks,
    /// The host's states by tick, drawn between two at the room's clock less a delay that
    /// follows the path's jitter (`ackwire::sync`): ball x, y, the paddles' y.
    drawn: Snapshots<[f32; 4]>,
    target: f32,
    keys: f32,
    auto: Option<String>,
    line: String,
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
    let ticks = Ticks::new(TICK).ok_or("a tick of no length")?;
    let client = Rc::new(RefCell::new(Client {
        room,
        ctx,
        status: Status::default(),
        snapshot: None,
        ticks,
        drawn: Snapshots::new(ticks),
        target: HEIGHT / 2.0,
        keys: 0.0,
        auto: params.get("auto"),
        line: "joining…".into(),
    }));
    client.borrow().publish()?;

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
    /// Sets `window.pong` to the status now.
    fn publish(&self) -> Result<(), JsValue> {
        let status = serde_json::to_string(&self.status).map_err(|e| e.to_string())?;
        let window = web_sys::window().ok_or("no window")?;
        js_sys::Reflect::set(&window, &"pong".into(), &js_sys::JSON::parse(&status)?).map(drop)
    }

    fn frame(&mut self) {
        // The host's states and events first (only the host's count), then everything else.
        let host = self.room.host();
        while let Some((peer, bytes)) = self.room.on(STATE).receive() {
            if let Some(s) = Snapshot::decode(&bytes).filter(|_| Some(peer) == host) {
                self.state(s);
            }
        }
        while let Some((peer, bytes)) = self.room.on(EVENTS).receive() {
            if let Some(e) = GameEvent::decode(&bytes).filter(|_| Some(peer) == host) {
                self.event(e);
            }
        }
        while let Some(event) = self.room.poll_event() {
            self.hear(event);
        }
        if let (Some(host), Some(side @ (Side::Left | Side::Right))) = (host, self.status.side) {
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
            // For the tick it reaches the host by; 0 (at once) until the host's clock is synced.
            let tick = self.room.input_tick(self.ticks).unwrap_or(0) as u32;
            let input = Input {
                tick,
                target: self.target,
            };
            let sent = self.room.on(INPUT).send_latest(host, &input.encode());
            self.status.sent += u32::from(sent.is_ok());
        }
        self.draw();
        let _ = self.publish();
    }

    fn state(&mut self, s: Snapshot) {
        self.snapshot = Some(s);
        if let Some(clock) = self.room.clock() {
            let [[x, y], [left, right]] = [s.ball, s.paddles];
            self.drawn
                .push(u64::from(s.tick), clock.time, [x, y, left, right]);
        }
        let history = &mut self.status.history;
        history.push_back((s.tick, s.ball[0].into(), s.ball[1].into()));
        if history.len() > HISTORY {
            history.pop_front();
        }
        self.status.snapshots += 1;
    }

    fn event(&mut self, event: GameEvent) {
        let status = &mut self.status;
        match event {
            GameEvent::Side { side, points } => {
                (status.side, status.points) = (Some(side), Some(points))
            }
            GameEvent::Round { score } => (status.score, status.winner) = (score, None),
            GameEvent::Goal { score, .. } => status.score = score,
            GameEvent::Over { winner, score } => {
                (status.score, status.winner) = (score, Some(winner));
                status
                    .results
                    .push(json!({"winner": winner, "score": score}));
            }
        }
    }

    fn hear(&mut self, event: Event) {
        self.line = match event {
            Event::Joined { .. } => "joined: waiting for the host".into(),
            Event::Refused { message, .. } => format!("refused: {message}"),
            // A player links to the host alone. When it leaves or is lost the player waits,
            // and links to the next host by itself.
            Event::PeerLeft {
                reason,
                role: Role::Host,
                ..
            } => match reason {
                GoneReason::Left => "the host left: waiting for it to come back",
                _ => "lost the host: waiting for it to come back",
            }
            .into(),
            Event::Link(link) => match (link.state, &link.reason) {
                (LinkState::Lost, Some(why)) => format!("link to the host lost: {why}"),
                (state, _) => format!("link to the host: {state:?}").to_lowercase(),
            },
            _ => return,
        };
    }

    fn draw(&mut self) {
        // Between the host's two states around the render time, once its clock is read (a
        // round trip after the link connects).
        let shown = self.room.clock().and_then(|c| self.drawn.sample(c.time));
        self.status.interpolated = self.drawn.between();
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
            &format!("{}   {}", self.status.score[0], self.status.score[1]),
            f64::from(WIDTH) / 2.0,
            40.0,
        );
        ctx.set_font("16px monospace");
        let info = match (self.status.winner, self.status.side) {
            (Some(w), Some(me)) if w == me => "you win!".to_owned(),
            (Some(w), _) => format!("{} wins", w.name()),
            (None, Some(Side::Spectator)) => "watching".to_owned(),
            (None, Some(side)) => format!("you play {}", side.name()),
            (None, None) => self.line.clone(),
        };
        let _ = ctx.fill_text(&info, f64::from(WIDTH) / 2.0, f64::from(HEIGHT) - 16.0);
        let Some([bx, by, left, right]) = shown else {
            return;
        };
        for (i, y) in [left, right].into_iter().enumerate() {
            let mine = self.status.side.is_some_and(|side| side as usize == i);
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
            (bx - BALL_R).into(),
            (by - BALL_R).into(),
            (2.0 * BALL_R).into(),
            (2.0 * BALL_R).into(),
        );
    }
}
