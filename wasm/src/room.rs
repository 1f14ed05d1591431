//! [`WasmRoom`]: `ackwire::Room` for JavaScript, call for call. The JS module (`web/ackwire.js`)
//! wraps it in the public `Room` (an `EventTarget`) and `join()`; this file only translates:
//! JS values in, checked, typed JS errors and plain JS objects out.
//!
//! Every error thrown here is an `Error` with a `code` property, and nothing was sent:
//! `unknown_peer`, `not_connected`, `unknown_channel`, `too_large`, `reliable`, `full`,
//! `closed` (from [`SendError`]), `bad_payload` (data neither a `Uint8Array` nor a string),
//! and for joining `bad_options`, `invalid_app`, `bad_url`, `invalid_config`,
//! `unsupported_browser`.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::rc::{Rc, Weak};
use std::task::Poll;
use std::time::Duration;

use ackwire::{
    App, ChannelKind, EarlySocket, Emulation, EmulatorConfig, Event, Failure, GoneReason, IceState,
    JoinError, LinkInfo, LinkState, MemberError, PeerId, PeerKind, Role, Room, RoomConfig,
    SendError, ServerId, SignallingState, Stats, TransportKind,
};
use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use serde::Serialize;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, spawn_local};

/// A joined room, as JavaScript holds it (`web/ackwire.js` wraps it in its `Room`).
#[wasm_bindgen]
pub struct WasmRoom {
    inner: Rc<Inner>,
}

struct Inner {
    /// `None` once [`WasmRoom::close`] took it: every call then throws `closed`.
    room: RefCell<Option<Room>>,
    /// `options.onEvent`, called with each event as a plain object.
    on_event: Function,
}

#[wasm_bindgen]
impl WasmRoom {
    /// Joins the room at `url` (a room page's URL, or a server's with `options.room`).
    ///
    /// `options`: `app` (id), `version`, `channels` (kinds by name: `unreliable`,
    /// `unreliable-sequenced`, `reliable-ordered`, `reliable-unordered`), `room`, `role`
    /// (`peer`, the default, `host` or `client`), `ticket` (the join ticket from the game's
    /// backend, a string), `hostIdentity` (a client's host's identity, a string), `relayOnly`,
    /// `webTransport`, `webRtc`, `webSocket` (`false`: a host room's client never links to its
    /// host that way; `webRtc: false` only for a client), `peerBudget`
    /// (bytes), `attemptTimeoutMs` (how long a link may take to connect), `emulation`
    /// (`{ latencyMs, jitterMs, lossPct, seed }`, each optional), `earlySocket` (see
    /// `ackwire::EarlySocket`) and `onEvent(event)`, called with every event of the room as
    /// a plain object with a `type`, outside any call into the room.
    #[wasm_bindgen(constructor)]
    pub fn new(url: &str, options: &JsValue) -> Result<WasmRoom, JsValue> {
        let on_event: Function = get(options, "onEvent")
            .dyn_into()
            .map_err(|_| error("bad_options", "options.onEvent must be a function"))?;
        let mut config = RoomConfig::new(app(options)?);
        if let Some(room) = get(options, "room").as_string() {
            config = config.with_room(room);
        }
        config = config.with_role(role(&get(options, "role"))?);
        let ticket = get(options, "ticket");
        if !ticket.is_undefined() && !ticket.is_null() {
            let ticket = ticket
                .as_string()
                .ok_or_else(|| error("bad_options", "options.ticket must be a string"))?;
            config = config.with_ticket(ticket);
        }
        let host_identity = get(options, "hostIdentity");
        if !host_identity.is_undefined() && !host_identity.is_null() {
            let identity = host_identity
                .as_string()
                .ok_or_else(|| error("bad_options", "options.hostIdentity must be a string"))?;
            config = config.with_host_identity(identity);
        }
        if let Some(emulation) = emulation(&get(options, "emulation"))? {
            config = config.with_emulation(emulation);
        }
        config.browser.relay_only = get(options, "relayOnly").is_truthy();
        // Only `false` turns one off: absent, it is on.
        config.browser.webtransport = get(options, "webTransport") != JsValue::FALSE;
        config.browser.websocket = get(options, "webSocket") != JsValue::FALSE;
        config.browser.webrtc = get(options, "webRtc") != JsValue::FALSE;
        if !config.browser.webrtc && config.role != Role::Client {
            return Err(error(
                "bad_options",
                "options.webRtc: false is for a host room's client only",
            ));
        }
        let budget = get(options, "peerBudget");
        if !budget.is_undefined() {
            config.peer_budget = budget
                .as_f64()
                .filter(|b| b.fract() == 0.0 && *b >= 1.0 && *b <= 9_007_199_254_740_991.0)
                .ok_or_else(|| {
                    error(
                        "bad_options",
                        "options.peerBudget must be a whole number of bytes",
                    )
                })? as usize;
        }
        let attempt = get(options, "attemptTimeoutMs");
        if !attempt.is_undefined() {
            config.attempt_timeout = attempt
                .as_f64()
                .filter(|ms| ms.is_finite() && *ms >= 1.0)
                .map(|ms| Duration::from_secs_f64(ms / 1e3))
                .ok_or_else(|| {
                    error(
                        "bad_options",
                        "options.attemptTimeoutMs: milliseconds, 1 or more",
                    )
                })?;
        }
        let early = get(options, "earlySocket");
        if early.is_object() {
            config.browser.early_socket = Some(EarlySocket::new(early));
        }
        let room = Room::join(url, config).map_err(|e| join_error(&e))?;
        let inner = Rc::new(Inner {
            room: RefCell::new(Some(room)),
            on_event,
        });
        spawn_local(pump(Rc::downgrade(&inner)));
        Ok(WasmRoom { inner })
    }

    /// `Room::send`, `send_latest`, `broadcast` and `broadcast_latest` in one call (one
    /// binding instead of four: each costs the bundle its own glue): `data` (a `Uint8Array`,
    /// or a string sent as UTF-8) on `channel` to `peer` (`undefined` back), or to every peer
    /// when `peer` is `undefined` (`{ sent, refused: [{ peer, error }] }` back); with
    /// `latest`, in place of what the unreliable channel holds and has not sent yet.
    pub fn send(
        &self,
        peer: &JsValue,
        channel: &JsValue,
        data: &JsValue,
        latest: bool,
    ) -> Result<JsValue, JsValue> {
        let peer = if peer.is_undefined() {
            None
        } else {
            Some(peer_id(peer)?)
        };
        let (channel, bytes) = (channel_index(channel)?, payload(data)?);
        let sent = self.with_room(|room| match (peer, latest) {
            (Some(peer), false) => room.send(peer, channel, &bytes).map(|()| None),
            (Some(peer), true) => room.send_latest(peer, channel, &bytes).map(|()| None),
            (None, false) => room.broadcast(channel, &bytes).map(Some),
            (None, true) => room.broadcast_latest(channel, &bytes).map(Some),
        })?;
        let Some(report) = sent.map_err(send_error)? else {
            return Ok(JsValue::UNDEFINED);
        };
        let refused = Array::new();
        for (peer, e) in report.refused {
            let entry = Object::new();
            let _ = Reflect::set(&entry, &"peer".into(), &f64::from(peer.0).into());
            let _ = Reflect::set(&entry, &"error".into(), &send_error(e));
            refused.push(&entry);
        }
        let out = Object::new();
        let _ = Reflect::set(&out, &"sent".into(), &(report.sent as f64).into());
        let _ = Reflect::set(&out, &"refused".into(), &refused);
        Ok(out.into())
    }

    /// `Room::send_capacity`: `{ messages, bytes }` a send to `peer` on `channel` takes now;
    /// throws as `send` does.
    #[wasm_bindgen(js_name = sendCapacity)]
    pub fn send_capacity(&self, peer: &JsValue, channel: &JsValue) -> Result<JsValue, JsValue> {
        let (peer, channel) = (peer_id(peer)?, channel_index(channel)?);
        let capacity = self
            .with_room(|r| r.send_capacity(peer, channel))?
            .map_err(send_error)?;
        let out = Object::new();
        let _ = Reflect::set(&out, &"messages".into(), &(capacity.messages as f64).into());
        let _ = Reflect::set(&out, &"bytes".into(), &(capacity.bytes as f64).into());
        Ok(out.into())
    }

    /// Every link (one per peer) as a plain object (see [`JsLink`]); none once closed.
    pub fn links(&self) -> JsValue {
        let links = self.with_room(Room::links).unwrap_or_default();
        to_js(&links.iter().map(JsLink::from).collect::<Vec<_>>())
    }

    /// `Room::clock` (`peer` undefined) or `Room::peer_clock`: `[time, uncertainty, samples,
    /// synced, driftPpm, driftUncertaintyPpm]`, times in fractional ms, `synced` 1 or 0 and
    /// `driftPpm` NaN while the drift is not estimated, for `ackwire.js` to name
    /// (`ClockReading` in the `.d.ts`); `undefined` for none. Throws `unknown_peer` for a
    /// `peer` that is not a peer's id. (One export and an array: the bundle's every export
    /// and object field costs bytes.)
    pub fn clock(&self, peer: &JsValue) -> Result<Option<Vec<f64>>, JsValue> {
        let reading = if peer.is_undefined() {
            self.with_room(Room::clock)
        } else {
            let peer = peer_id(peer)?;
            self.with_room(|r| r.peer_clock(peer))
        };
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        Ok(reading.ok().flatten().map(|r| {
            vec![
                ms(r.time),
                ms(r.uncertainty),
                f64::from(r.samples),
                f64::from(u8::from(r.synced)),
                r.drift_ppm.unwrap_or(f64::NAN),
                r.drift_uncertainty_ppm,
            ]
        }))
    }

    /// Our id in the signalling server's current session, once joined.
    #[wasm_bindgen(getter, js_name = serverId)]
    pub fn server_id(&self) -> Option<f64> {
        self.with_room(Room::server_id)
            .ok()
            .flatten()
            .map(|id| id as f64)
    }

    /// `Room::host`: in a host room, the host's id while it is in the room; `undefined` in a
    /// mesh, on the host itself, and while the room has no host.
    #[wasm_bindgen(getter)]
    pub fn host(&self) -> Option<f64> {
        self.with_room(Room::host)
            .ok()
            .flatten()
            .map(|id| f64::from(id.0))
    }

    /// The signalling connection's state: `connecting`, `joining`, `joined`, `reconnecting`
    /// or `closed`.
    #[wasm_bindgen(getter)]
    pub fn signalling(&self) -> JsValue {
        let state = self
            .with_room(Room::signalling_state)
            .unwrap_or(SignallingState::Closed);
        to_js(&state)
    }

    /// `Room::unreadable_frames`: frames from the signalling server this room could not read
    /// (unknown types, dashboards' frames, broken JSON), each refused and logged.
    #[wasm_bindgen(getter, js_name = unreadableFrames)]
    pub fn unreadable_frames(&self) -> f64 {
        self.with_room(Room::unreadable_frames).unwrap_or(0) as f64
    }

    /// `Room::max_message_size`: the largest message `channel` takes.
    #[wasm_bindgen(js_name = maxMessageSize)]
    pub fn max_message_size(&self, channel: &JsValue) -> Result<u32, JsValue> {
        let channel = channel_index(channel)?;
        self.with_room(|room| room.max_message_size(channel))?
            .map(|n| n as u32)
            .ok_or_else(|| send_error(SendError::UnknownChannel(channel)))
    }

    /// `Room::set_outage`: pulls (`true`) or plugs back this player's network cable.
    #[wasm_bindgen(js_name = setOutage)]
    pub fn set_outage(&self, on: bool) -> Result<(), JsValue> {
        self.with_room(|room| room.set_outage(on))
    }

    /// `Room::close`: leaves the room; resolves once the goodbyes went out and every last
    /// event (peers gone, undelivered messages) was handed to `onEvent`. Calls made meanwhile
    /// or after throw `closed`.
    pub fn close(&self) -> js_sys::Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let taken = inner.room.borrow_mut().take();
            if let Some(mut room) = taken {
                room.close().await;
                while let Some(event) = room.poll_event() {
                    deliver(&inner.on_event, &event);
                }
            }
            Ok(JsValue::UNDEFINED)
        })
    }
}

impl WasmRoom {
    fn with_room<R>(&self, f: impl FnOnce(&Room) -> R) -> Result<R, JsValue> {
        let room = self.inner.room.borrow();
        let room = room.as_ref().ok_or_else(|| send_error(SendError::Closed))?;
        Ok(f(room))
    }
}

/// Hands the room's events to `onEvent`, one at a time, until the room closes. The room is
/// borrowed only while polled (`Room::next_event` is cancel-safe: a fresh future per poll
/// leaves its waker and holds nothing), never while JavaScript runs, so a handler may call
/// into the room.
async fn pump(inner: Weak<Inner>) {
    loop {
        let event = poll_fn(|cx| {
            let Some(inner) = inner.upgrade() else {
                return Poll::Ready(None);
            };
            let Ok(mut slot) = inner.room.try_borrow_mut() else {
                // Not while another call holds it (there is none in a microtask): next tick.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            };
            let Some(room) = slot.as_mut() else {
                return Poll::Ready(None);
            };
            pin!(room.next_event()).poll(cx)
        })
        .await;
        let (Some(event), Some(inner)) = (event, inner.upgrade()) else {
            return;
        };
        deliver(&inner.on_event, &event);
    }
}

fn deliver(on_event: &Function, event: &Event) {
    if let Some(js) = event_to_js(event) {
        // A handler that throws is the page's bug; the room carries on.
        let _ = on_event.call1(&JsValue::NULL, &js);
    }
}

/// A link as JavaScript sees it: camelCase, ids as numbers, `stats` the core's `Stats` in
/// its JSON form (snake_case, as dashboards and `ackwire-peer` print it).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsLink<'a> {
    /// The member's id for the peer, for the room's whole life.
    id: PeerId,
    server_id: Option<ServerId>,
    kind: PeerKind,
    transport: TransportKind,
    state: LinkState,
    reason: &'a Option<Failure>,
    ice: Option<IceState>,
    candidate: &'a Option<String>,
    attempt_ms: f64,
    attempts: u32,
    /// On the page's clock (`performance.now()`).
    first_ack_at: Option<f64>,
    refused: u64,
    unconfirmed: usize,
    stats: &'a Option<Stats>,
}

impl<'a> From<&'a LinkInfo> for JsLink<'a> {
    fn from(l: &'a LinkInfo) -> JsLink<'a> {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        JsLink {
            id: l.peer,
            server_id: l.server_id,
            kind: l.kind,
            transport: l.transport,
            state: l.state,
            reason: &l.reason,
            ice: l.ice,
            candidate: &l.candidate,
            attempt_ms: ms(l.attempt_ms),
            attempts: l.attempts,
            first_ack_at: l.first_ack_at.map(ms),
            refused: l.refused,
            unconfirmed: l.unconfirmed,
            stats: &l.stats,
        }
    }
}

/// Every event but messages, as JavaScript sees it (`type` is the JS event's name).
#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
enum JsEvent<'a> {
    Signalling {
        state: SignallingState,
        detail: Option<&'a str>,
    },
    Joined {
        server_id: ServerId,
        resumed: bool,
    },
    Refused {
        code: &'static str,
        message: &'a str,
        fatal: bool,
    },
    #[serde(rename = "peerjoin")]
    PeerJoined {
        peer: PeerId,
        server_id: ServerId,
        kind: PeerKind,
        role: Role,
        identity: Option<&'a str>,
    },
    HostRefused {
        server_id: ServerId,
        identity: Option<&'a str>,
        expected: &'a str,
    },
    #[serde(rename = "peerleave")]
    PeerLeft {
        peer: PeerId,
        server_id: Option<ServerId>,
        reason: GoneReason,
        role: Role,
    },
    Link {
        peer: PeerId,
        link: JsLink<'a>,
    },
    Connected {
        peer: PeerId,
    },
    Disconnected {
        peer: PeerId,
        reason: &'a Option<Failure>,
    },
    Stats {
        links: Vec<JsLink<'a>>,
    },
}

/// The plain object `onEvent` gets for `event`; `None` for an event this version does not
/// know.
fn event_to_js(event: &Event) -> Option<JsValue> {
    let js = match event {
        Event::Message {
            peer,
            channel,
            bytes,
        } => return Some(message("message", *peer, *channel, bytes)),
        Event::Undelivered {
            peer,
            channel,
            bytes,
        } => return Some(message("undelivered", *peer, *channel, bytes)),
        Event::Signalling { state, detail } => JsEvent::Signalling {
            state: *state,
            detail: detail.as_deref(),
        },
        Event::Joined { server_id, resumed } => JsEvent::Joined {
            server_id: *server_id,
            resumed: *resumed,
        },
        Event::Refused {
            code,
            message,
            fatal,
        } => JsEvent::Refused {
            code: code.as_str(),
            message,
            fatal: *fatal,
        },
        Event::PeerJoined {
            peer,
            server_id,
            kind,
            role,
            identity,
        } => JsEvent::PeerJoined {
            peer: *peer,
            server_id: *server_id,
            kind: *kind,
            role: *role,
            identity: identity.as_deref(),
        },
        Event::HostRefused {
            server_id,
            identity,
            expected,
        } => JsEvent::HostRefused {
            server_id: *server_id,
            identity: identity.as_deref(),
            expected,
        },
        Event::PeerLeft {
            peer,
            server_id,
            reason,
            role,
        } => JsEvent::PeerLeft {
            peer: *peer,
            server_id: *server_id,
            reason: *reason,
            role: *role,
        },
        Event::Link(info) => JsEvent::Link {
            peer: info.peer,
            link: JsLink::from(info),
        },
        Event::Connected { peer } => JsEvent::Connected { peer: *peer },
        Event::Disconnected { peer, reason } => JsEvent::Disconnected {
            peer: *peer,
            reason,
        },
        Event::Stats { links } => JsEvent::Stats {
            links: links.iter().map(JsLink::from).collect(),
        },
        _ => return None,
    };
    Some(to_js(&js))
}

/// `{ type, peer, channel, data }` with the bytes copied straight into a `Uint8Array`.
fn message(kind: &str, peer: PeerId, channel: u8, bytes: &[u8]) -> JsValue {
    let object = Object::new();
    let _ = Reflect::set(&object, &"type".into(), &kind.into());
    let _ = Reflect::set(&object, &"peer".into(), &peer.0.into());
    let _ = Reflect::set(&object, &"channel".into(), &channel.into());
    let _ = Reflect::set(&object, &"data".into(), &Uint8Array::from(bytes));
    object.into()
}

/// A Rust value as a plain JS object, as `JSON.parse` of its serde JSON would give.
fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .unwrap_or(JsValue::NULL)
}

fn get(object: &JsValue, key: &str) -> JsValue {
    Reflect::get(object, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

/// An `Error` with a `code` property.
fn error(code: &str, message: &str) -> JsValue {
    let error = js_sys::Error::new(message);
    let _ = Reflect::set(&error, &"code".into(), &code.into());
    error.into()
}

fn send_error(e: SendError) -> JsValue {
    let code = match e {
        SendError::UnknownPeer(_) => "unknown_peer",
        SendError::NotConnected(_) => "not_connected",
        SendError::UnknownChannel(_) => "unknown_channel",
        SendError::TooLarge { .. } => "too_large",
        SendError::Reliable { .. } => "reliable",
        SendError::Full { .. } => "full",
        SendError::Closed => "closed",
        _ => "send_failed",
    };
    error(code, &e.to_string())
}

fn join_error(e: &JoinError) -> JsValue {
    // Each variant's words from its own type: `JoinError`'s Display would bring every
    // variant's, among them the core settings' numbers, whose formatting would cost the
    // bundle the float printer. This binding checks the emulation first and exposes no other
    // setting, so those say no more than what they are.
    match e {
        JoinError::Url(e) => error("bad_url", &e.to_string()),
        JoinError::Config(MemberError::App(e)) => error("invalid_app", &e.to_string()),
        JoinError::Config(MemberError::Config(_) | MemberError::Emulation(_)) => {
            error("invalid_config", "invalid connection or emulation settings")
        }
        JoinError::Config(_) => error("invalid_config", "invalid room or instance name"),
        JoinError::Browser(reason) => error("unsupported_browser", reason),
        _ => error("join_failed", "the room could not be joined"),
    }
}

/// A whole number in `0..=max`.
fn whole(value: &JsValue, max: f64) -> Option<f64> {
    value
        .as_f64()
        .filter(|n| n.fract() == 0.0 && (0.0..=max).contains(n))
}

fn peer_id(value: &JsValue) -> Result<PeerId, JsValue> {
    whole(value, f64::from(u32::MAX))
        .map(|n| PeerId(n as u32))
        .ok_or_else(|| error("unknown_peer", "a peer is its id: a whole number"))
}

fn channel_index(value: &JsValue) -> Result<u8, JsValue> {
    whole(value, 255.0)
        .map(|n| n as u8)
        .ok_or_else(|| error("unknown_channel", "a channel is its index: a whole number"))
}

/// A message's bytes: a `Uint8Array`'s, or a string's as UTF-8.
fn payload(data: &JsValue) -> Result<Vec<u8>, JsValue> {
    if let Some(text) = data.as_string() {
        return Ok(text.into_bytes());
    }
    data.dyn_ref::<Uint8Array>()
        .map(Uint8Array::to_vec)
        .ok_or_else(|| error("bad_payload", "a message is a Uint8Array or a string"))
}

/// The application `options` declare: `app`, `version`, `channels`.
fn app(options: &JsValue) -> Result<App, JsValue> {
    let bad = |what: &str| error("invalid_app", &format!("options.{what}"));
    let id = get(options, "app")
        .as_string()
        .ok_or_else(|| bad("app: the application's id, a string"))?;
    let version = whole(&get(options, "version"), f64::from(u32::MAX))
        .ok_or_else(|| bad("version: a whole number"))? as u32;
    let channels = get(options, "channels");
    if !Array::is_array(&channels) {
        return Err(bad("channels: an array of channel kinds"));
    }
    let channels = Array::from(&channels)
        .iter()
        .map(|name| match name.as_string().as_deref() {
            Some("unreliable") => Ok(ChannelKind::Unreliable),
            Some("unreliable-sequenced") => Ok(ChannelKind::UnreliableSequenced),
            Some("reliable-ordered") => Ok(ChannelKind::ReliableOrdered),
            Some("reliable-unordered") => Ok(ChannelKind::ReliableUnordered),
            _ => Err(bad(
                "channels: each one of unreliable, unreliable-sequenced, reliable-ordered, reliable-unordered",
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(App::new(id, version, channels))
}

/// `options.role`: absent (or `null`) is a mesh `peer`.
fn role(value: &JsValue) -> Result<Role, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(Role::Peer);
    }
    match value.as_string().as_deref() {
        Some("peer") => Ok(Role::Peer),
        Some("host") => Ok(Role::Host),
        Some("client") => Ok(Role::Client),
        _ => Err(error(
            "bad_options",
            "options.role: 'peer', 'host' or 'client'",
        )),
    }
}

/// `{ latencyMs, jitterMs, lossPct, seed }`: absent, or all zero, is a real link.
fn emulation(value: &JsValue) -> Result<Option<Emulation>, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    let number = |key: &str| -> Result<f64, JsValue> {
        let v = get(value, key);
        if v.is_undefined() || v.is_null() {
            return Ok(0.0);
        }
        v.as_f64()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| {
                error(
                    "invalid_config",
                    &format!("emulation.{key}: a number, 0 or more"),
                )
            })
    };
    let (latency, jitter, loss) = (
        number("latencyMs")?,
        number("jitterMs")?,
        number("lossPct")?,
    );
    if latency == 0.0 && jitter == 0.0 && loss == 0.0 {
        return Ok(None);
    }
    let seed = get(value, "seed").as_f64().unwrap_or(1.0);
    Ok(Some(Emulation {
        config: EmulatorConfig::default()
            .with_latency(Duration::from_secs_f64(latency / 1e3))
            .with_jitter(Duration::from_secs_f64(jitter / 1e3))
            .with_loss_percent(loss),
        seed: seed as u64,
        impair_after: Duration::ZERO,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    fn field(object: &JsValue, key: &str) -> JsValue {
        get(object, key)
    }

    #[wasm_bindgen_test]
    fn a_message_event_carries_its_bytes_as_a_uint8array() {
        let event = Event::Message {
            peer: PeerId(3),
            channel: 1,
            bytes: vec![0, 1, 255],
        };
        let js = event_to_js(&event).unwrap();
        assert_eq!(field(&js, "type").as_string().unwrap(), "message");
        assert_eq!(field(&js, "peer").as_f64(), Some(3.0));
        assert_eq!(field(&js, "channel").as_f64(), Some(1.0));
        let data = field(&js, "data").dyn_into::<Uint8Array>().unwrap();
        assert_eq!(data.to_vec(), [0, 1, 255]);
    }

    #[wasm_bindgen_test]
    fn events_are_camel_case_with_codes_and_states_by_name() {
        let js = event_to_js(&Event::Refused {
            code: ackwire::ErrorCode::AppMismatch,
            message: "room lobby plays pong".into(),
            fatal: true,
        })
        .unwrap();
        assert_eq!(field(&js, "type").as_string().unwrap(), "refused");
        assert_eq!(field(&js, "fatal").as_bool(), Some(true));
        assert_eq!(field(&js, "code").as_string().unwrap(), "app_mismatch");
        let js = event_to_js(&Event::PeerJoined {
            peer: PeerId(2),
            server_id: 17,
            kind: PeerKind::Native,
            role: Role::Host,
            identity: Some("host-7".into()),
        })
        .unwrap();
        assert_eq!(field(&js, "type").as_string().unwrap(), "peerjoin");
        assert_eq!(field(&js, "serverId").as_f64(), Some(17.0));
        assert_eq!(field(&js, "kind").as_string().unwrap(), "native");
        assert_eq!(field(&js, "role").as_string().unwrap(), "host");
        assert_eq!(field(&js, "identity").as_string().unwrap(), "host-7");
        let js = event_to_js(&Event::HostRefused {
            server_id: 18,
            identity: None,
            expected: "host-7".into(),
        })
        .unwrap();
        assert_eq!(field(&js, "type").as_string().unwrap(), "hostrefused");
        assert_eq!(field(&js, "serverId").as_f64(), Some(18.0));
        assert!(field(&js, "identity").is_null());
        assert_eq!(field(&js, "expected").as_string().unwrap(), "host-7");
        let js = event_to_js(&Event::PeerLeft {
            peer: PeerId(2),
            server_id: None,
            reason: GoneReason::NotBack,
            role: Role::Peer,
        })
        .unwrap();
        assert_eq!(field(&js, "type").as_string().unwrap(), "peerleave");
        assert_eq!(field(&js, "reason").as_string().unwrap(), "not_back");
        // A mesh peer's role is named too: every peer event has one.
        assert_eq!(field(&js, "role").as_string().unwrap(), "peer");
    }

    #[wasm_bindgen_test]
    fn a_link_is_camel_case_with_times_in_ms_and_the_cores_stats_as_json() {
        let info = LinkInfo {
            peer: PeerId(4),
            server_id: Some(9),
            kind: PeerKind::Browser,
            transport: TransportKind::WebRtc,
            state: LinkState::Lost,
            reason: Some(Failure::IceFailed),
            ice: Some(IceState::Failed),
            candidate: Some("relay".into()),
            attempt_ms: Duration::from_micros(1500),
            attempts: 2,
            first_ack_at: Some(Duration::from_millis(812)),
            refused: 0,
            unconfirmed: 1,
            stats: None,
        };
        let js = event_to_js(&Event::Link(info)).unwrap();
        assert_eq!(field(&js, "peer").as_f64(), Some(4.0));
        let link = field(&js, "link");
        assert_eq!(field(&link, "id").as_f64(), Some(4.0));
        assert_eq!(field(&link, "serverId").as_f64(), Some(9.0));
        assert_eq!(field(&link, "state").as_string().unwrap(), "lost");
        assert_eq!(field(&link, "transport").as_string().unwrap(), "webrtc");
        assert_eq!(field(&link, "ice").as_string().unwrap(), "failed");
        assert_eq!(field(&link, "attemptMs").as_f64(), Some(1.5));
        assert_eq!(field(&link, "firstAckAt").as_f64(), Some(812.0));
        let reason = field(&link, "reason");
        assert_eq!(field(&reason, "code").as_string().unwrap(), "ice_failed");
        assert!(
            field(&reason, "message")
                .as_string()
                .unwrap()
                .contains("TURN")
        );
        assert!(field(&link, "stats").is_null());
    }
}
