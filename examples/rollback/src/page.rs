//! The browser player: the same [`Player`](crate::Player) on `wasm32`, its frames on a 16 ms
//! timer, the dots drawn on a canvas. `web/index.html` loads it and calls [`start`]; the page's
//! URL says the room and the game (`?room=NAME&players=3&frames=600&loss=10`). It keeps
//! `window.rollback` up to date for the page and the e2e: `me`, `frame`, `settled`,
//! `rollbacks`, `desyncs` (frames), `checksums` (hex by frame, each frame's last saved
//! state) and `done` (it played its frames and answered its peers for 3 s more).

use std::cell::RefCell;
use std::rc::Rc;

use ackwire::{Room, RoomConfig};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

use crate::{FIELD, Player, app, emulation, linked, scripted_input};

/// Frames the player keeps answering its peers after its last one (3 s at 60 Hz).
const AFTER: u32 = 180;

struct Page {
    room: Rc<Room>,
    player: Option<Player<Rc<Room>>>,
    players: usize,
    frames: u32,
    after: u32,
    ctx: CanvasRenderingContext2d,
    status: Object,
    checksums: Object,
    /// Checksums already written to `window.rollback.checksums`, by frame.
    written: std::collections::BTreeMap<i32, u128>,
}

/// Joins the room the page's URL names and plays in `canvas` until its frames are done.
#[wasm_bindgen]
pub fn start(canvas: HtmlCanvasElement) -> Result<(), JsValue> {
    let window = web_sys::window().ok_or("no window")?;
    let href = window.location().href()?;
    let params = web_sys::Url::new(&href)?.search_params();
    let number = |key: &str, default: f64| {
        params
            .get(key)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(default)
    };
    let mut config =
        RoomConfig::new(app()).with_room(params.get("room").unwrap_or_else(|| "rollback".into()));
    let loss = number("loss", 0.0);
    if loss > 0.0 {
        config = config.with_emulation(emulation(loss, number("seed", 1.0) as u64));
    }
    let room = Rc::new(Room::join(&href, config).map_err(|e| e.to_string())?);
    let ctx: CanvasRenderingContext2d = canvas
        .get_context("2d")?
        .ok_or("no 2d context")?
        .dyn_into()?;
    let (status, checksums) = (Object::new(), Object::new());
    Reflect::set(&status, &"checksums".into(), &checksums)?;
    Reflect::set(&status, &"desyncs".into(), &Array::new())?;
    Reflect::set(&status, &"done".into(), &false.into())?;
    Reflect::set(&window, &"rollback".into(), &status)?;
    let page = Rc::new(RefCell::new(Page {
        room,
        player: None,
        players: number("players", 2.0) as usize,
        frames: number("frames", 600.0) as u32,
        after: 0,
        ctx,
        status,
        checksums,
        written: Default::default(),
    }));
    // A timer, not animation frames: ggrs wants its frames at a steady 60 Hz, and a page
    // the browser does not paint still plays.
    let interval = Rc::new(RefCell::new(None));
    let (p, handle) = (Rc::clone(&page), Rc::clone(&interval));
    let tick = Closure::<dyn FnMut()>::new(move || {
        if !p.borrow_mut().frame()
            && let (Some(window), Some(id)) = (web_sys::window(), handle.borrow_mut().take())
        {
            window.clear_interval_with_handle(id);
        }
    });
    let id = window.set_interval_with_callback_and_timeout_and_arguments_0(
        tick.as_ref().unchecked_ref(),
        16,
    )?;
    *interval.borrow_mut() = Some(id);
    tick.forget();
    Ok(())
}

impl Page {
    fn set(&self, key: &str, value: JsValue) {
        let _ = Reflect::set(&self.status, &key.into(), &value);
    }

    /// One timer tick; `false` once done.
    fn frame(&mut self) -> bool {
        // The game's own events (links, peers); ggrs reads its channel itself.
        while self.room.poll_event().is_some() {}
        if self.player.is_none() && linked(&self.room, self.players - 1) {
            self.player = Player::start(Rc::clone(&self.room));
            if let Some(player) = &self.player {
                self.set("me", player.me.into());
            }
        }
        let Some(player) = &mut self.player else {
            return true;
        };
        if player.game.frame < self.frames {
            let input = scripted_input(player.game.frame, player.me);
            if let Err(e) = player.frame(input) {
                self.set("error", e.to_string().into());
                return false;
            }
        } else if self.after < AFTER {
            player.poll();
            self.after += 1;
        }
        let (frame, settled, rollbacks) = (player.game.frame, player.settled, player.rollbacks);
        // Each frame's last saved checksum, as it changes (a replay saves a frame again).
        for (&at, &sum) in &player.checksums {
            if self.written.get(&at) != Some(&sum) {
                let _ = Reflect::set(&self.checksums, &at.into(), &format!("{sum:x}").into());
                self.written.insert(at, sum);
            }
        }
        let desyncs: Array = player.desyncs.iter().map(|&f| JsValue::from(f)).collect();
        let dots = player.game.dots.clone();
        let done = frame >= self.frames && self.after >= AFTER;
        self.set("frame", frame.into());
        self.set("settled", settled.into());
        self.set("rollbacks", (rollbacks as u32).into());
        self.set("desyncs", desyncs.into());
        self.set("done", done.into());
        self.draw(&dots);
        !done
    }

    fn draw(&self, dots: &[[i32; 2]]) {
        let ctx = &self.ctx;
        let scale = f64::from(ctx.canvas().map_or(400, |c| c.width())) / f64::from(FIELD);
        ctx.set_fill_style_str("#111");
        ctx.fill_rect(0.0, 0.0, f64::from(FIELD) * scale, f64::from(FIELD) * scale);
        for (i, [x, y]) in dots.iter().enumerate() {
            ctx.set_fill_style_str(["#6cf", "#fc6", "#6f9", "#f69"][i % 4]);
            ctx.fill_rect(
                f64::from(*x) * scale - 4.0,
                f64::from(*y) * scale - 4.0,
                8.0,
                8.0,
            );
        }
    }
}
