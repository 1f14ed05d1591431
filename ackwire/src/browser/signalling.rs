//! The signalling WebSocket: opened when the member asks (or adopted from the page, which
//! opened it early with the join in its URL), its frames to and from the member.

use std::rc::{Rc, Weak};

use ackwire_room::member::MemberFrame;
use ackwire_signalling::UrlJoin;
use js_sys::Reflect;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;
use web_sys::{CloseEvent, MessageEvent, WebSocket};

use super::frames::{self, to_json};
use super::{Early, Shared, State, js_err, now, webrtc, with_state};

/// The current signalling socket.
pub(super) struct Socket {
    /// Which of the driver's sockets: events of one it has since replaced are ignored.
    number: u64,
    ws: WebSocket,
    /// Browser callbacks must outlive the socket they are attached to.
    _callbacks: Vec<Box<dyn std::any::Any>>,
}

impl Socket {
    /// Closes it. The browser may still fire its events afterwards, so the handlers are
    /// detached first: their closures are dropped with this struct.
    pub(super) fn shut_down(self) {
        self.ws.set_onopen(None);
        self.ws.set_onmessage(None);
        self.ws.set_onclose(None);
        let _ = self.ws.close();
    }
}

/// Opens the socket the member asked for, with `join` in its URL when it is a fresh join.
pub(super) fn open(state: &mut State, shared: &Shared, join: Option<UrlJoin>) {
    if let Some(old) = state.socket.take() {
        old.shut_down();
    }
    state.sockets_opened += 1;
    let number = state.sockets_opened;
    let url = state.url.socket_url(join.as_ref());
    // The page's early socket carries this same fresh join (its instance is the member's); a
    // resume, a socket that already failed, or one whose URL joined otherwise opens anew.
    if let Some(early) = state.early.take() {
        let live = matches!(
            early.ws.ready_state(),
            WebSocket::CONNECTING | WebSocket::OPEN
        );
        if join.is_some() && live && same_join(&early.ws.url(), &url) {
            state.socket = Some(adopt(shared, early, number));
            return;
        }
        let _ = early.ws.close();
    }
    // Links the page offered on a socket that was not adopted (or whose frames are all
    // handed over already) are not the member's.
    webrtc::release_early(state);
    match WebSocket::new(&url) {
        Ok(ws) => state.socket = Some(attach(shared, ws, number)),
        Err(e) => {
            let at = now();
            let detail = js_err(&format!("WebSocket {url}"), e);
            state.member.signalling_closed(at, &detail);
        }
    }
}

/// Sends a frame of the member's, as JSON written by the browser; dropped (as the member
/// expects) when the socket is not open.
pub(super) fn send(state: &State, frame: &MemberFrame) {
    if let (Some(socket), Some(text)) = (&state.socket, to_json(frame))
        && socket.ws.ready_state() == WebSocket::OPEN
    {
        let _ = socket.ws.send_with_str(&text);
    }
}

/// Whether two socket URLs carry the same join: same scheme, host and path, and the same
/// query parameters in any order and encoding (the page's `URLSearchParams` and the member's
/// encoder differ in what they escape).
fn same_join(a: &str, b: &str) -> bool {
    let normal = |url: &str| -> Option<String> {
        let url = web_sys::Url::new(url).ok()?;
        let params = url.search_params();
        params.sort().ok()?;
        Some(format!(
            "{}//{}{}?{}",
            url.protocol(),
            url.host(),
            url.pathname(),
            String::from(params.to_string())
        ))
    };
    matches!((normal(a), normal(b)), (Some(a), Some(b)) if a == b)
}

/// Takes over the page's early socket: our handlers replace the page's, then what it already
/// saw (the open, the frames, the welcome among them) is handed to the member in order, in a
/// microtask, so before any later event of the socket (those are tasks).
fn adopt(shared: &Shared, early: Early, number: u64) -> Socket {
    let socket = attach(shared, early.ws, number);
    let holder = early.holder;
    let opened = Reflect::get(&holder, &"opened".into())
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let messages: Vec<String> = Reflect::get(&holder, &"messages".into())
        .ok()
        .map(|m| {
            js_sys::Array::from(&m)
                .iter()
                .filter_map(|v| v.as_string())
                .collect()
        })
        .unwrap_or_default();
    let weak = Rc::downgrade(shared);
    spawn_local(async move {
        let Some(shared) = current(&weak, number) else {
            return;
        };
        if opened {
            with_state(&shared, |state, now| state.member.signalling_open(now));
        }
        for text in messages {
            // A frame may have ended this socket (a refusal): the rest is not for the member.
            if current(&weak, number).is_none() {
                break;
            }
            with_state(&shared, |state, now| server_frame(state, now, &text));
        }
        // The welcome was among them: its links claimed what the page opened for them.
        with_state(&shared, |state, _| webrtc::release_early(state));
    });
    socket
}

/// The state, if socket `number` is still the current one.
fn current(weak: &Weak<std::cell::RefCell<State>>, number: u64) -> Option<Shared> {
    let shared = weak.upgrade()?;
    let live = shared
        .borrow()
        .socket
        .as_ref()
        .is_some_and(|s| s.number == number);
    live.then_some(shared)
}

/// A frame from the signalling server, to the member. One the browser cannot read never
/// reaches it: the member counts it and the console tells why (as the native driver logs it).
fn server_frame(state: &mut State, now: std::time::Duration, text: &str) {
    match frames::server_frame(text) {
        Ok(frame) => state.member.handle_server_frame(now, frame),
        Err(err) => {
            state.member.note_unreadable_frame();
            web_sys::console::warn_2(&format!("ackwire: {err}").into(), &text.into());
        }
    }
}

/// Our handlers on `ws`: its open, frames and close go to the member while it is the current
/// socket.
fn attach(shared: &Shared, ws: WebSocket, number: u64) -> Socket {
    let weak = Rc::downgrade(shared);
    let on_open = Closure::<dyn FnMut()>::new({
        let weak = weak.clone();
        move || {
            if let Some(shared) = current(&weak, number) {
                with_state(&shared, |state, now| state.member.signalling_open(now));
            }
        }
    });
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new({
        let weak = weak.clone();
        move |event: MessageEvent| {
            let (Some(shared), Some(text)) = (current(&weak, number), event.data().as_string())
            else {
                return;
            };
            with_state(&shared, |state, now| server_frame(state, now, &text));
        }
    });
    let on_close = Closure::<dyn FnMut(CloseEvent)>::new(move |event: CloseEvent| {
        if let Some(shared) = current(&weak, number) {
            with_state(&shared, |state, now| {
                if let Some(socket) = state.socket.take() {
                    socket.shut_down();
                }
                let detail = format!("signalling closed ({} {})", event.code(), event.reason());
                if event.code() == ackwire_signalling::CLOSE_REPLACED {
                    state.member.signalling_replaced(now, &detail);
                } else {
                    state.member.signalling_closed(now, &detail);
                }
            });
        }
    });
    ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    Socket {
        number,
        ws,
        _callbacks: vec![Box::new(on_open), Box::new(on_message), Box::new(on_close)],
    }
}
