//! The browser driver: joins a room through `/ws`, opens one unordered, 0-retransmit
//! RTCDataChannel per remote peer, and drives a [`Link`] per peer from one timer.
//!
//! All state sits in one `Rc<RefCell<State>>`. Browser callbacks borrow it briefly, queue
//! what the page must hear, release the borrow and only then call the page, so a page
//! handler may call back into the client.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};
use std::time::Duration;

use js_sys::{Function, Reflect, Uint8Array};
use serde_json::{Value, json};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, spawn_local};
use web_sys::{
    CloseEvent, MessageEvent, RtcConfiguration, RtcDataChannel, RtcDataChannelInit,
    RtcDataChannelState, RtcDataChannelType, RtcIceCandidateInit, RtcPeerConnection,
    RtcPeerConnectionIceEvent, RtcSdpType, RtcSessionDescriptionInit, WebSocket,
};

use crate::link::{Emulation, Link, LinkEvent, Role};
use ackwire_room::demo::{cookie_address, we_accept};
use ackwire_room::signalling::{
    IceServer, Incoming, Outgoing, PeerInfo, Resume, Sdp, SignalData, VERSION,
};

/// Stats go to the server (and on to dashboards) this often.
const STATS_PERIOD: Duration = Duration::from_secs(1);
/// Signalling reconnects back off from this delay, doubling up to the maximum, and never give
/// up: a server restart must not strand a player.
const RECONNECT_FIRST_DELAY_MS: i32 = 500;
const RECONNECT_MAX_DELAY_MS: i32 = 8000;

type Shared = Rc<RefCell<State>>;

fn now() -> Duration {
    let ms = web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0);
    Duration::from_secs_f64(ms.max(0.0) / 1000.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A remote peer: its signalling id within one epoch. The epoch advances when the server
/// gives us a new identity (it restarted); a restarted server reuses ids, so links from
/// before keep their old-epoch keys and never collide with new peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    epoch: u32,
    id: u64,
}

/// One remote peer: its RTCPeerConnection, data channel and protocol link.
struct Peer {
    kind: String,
    pc: RtcPeerConnection,
    channel: RtcDataChannel,
    /// Present once the data channel is open.
    link: Option<Link>,
    remote_described: bool,
    early_candidates: Vec<RtcIceCandidateInit>,
    refused: u64,
    /// Browser callbacks must outlive the objects they are attached to.
    _callbacks: Vec<Box<dyn std::any::Any>>,
}

impl Peer {
    /// Closes the connection. The browser may still fire events for it afterwards, so the
    /// handlers are detached first: their closures are dropped with this struct.
    fn shut_down(self) {
        self.channel.set_onopen(None);
        self.channel.set_onmessage(None);
        self.channel.set_onclose(None);
        self.pc.set_onicecandidate(None);
        self.channel.close();
        self.pc.close();
    }
}

struct State {
    ws_url: String,
    room: String,
    me: Option<u64>,
    token: Option<String>,
    ws: Option<WebSocket>,
    ws_callbacks: Vec<Box<dyn std::any::Any>>,
    reconnects: u32,
    closed: bool,
    ice_servers: Vec<IceServer>,
    emulation: Option<Emulation>,
    epoch: u32,
    peers: BTreeMap<Key, Peer>,
    position: (f32, f32),
    on_event: Function,
    outbox: Vec<Value>,
    timer: Option<i32>,
    tick: Option<Closure<dyn FnMut()>>,
    next_stats: Duration,
}

impl State {
    fn key(&self, id: u64) -> Key {
        Key {
            epoch: self.epoch,
            id,
        }
    }

    /// How the page names a peer: its id, or `id·epoch` for a link from before a rejoin.
    fn label(&self, key: Key) -> Value {
        if key.epoch == self.epoch {
            json!(key.id)
        } else {
            json!(format!("{}·{}", key.id, key.epoch))
        }
    }

    fn emit(&mut self, event: Value) {
        self.outbox.push(event);
    }

    /// Joins the room, taking back our id if we had one.
    fn send_join(&self) {
        let resume = match (self.me, &self.token) {
            (Some(peer_id), Some(token)) => Some(Resume {
                peer_id,
                token: token.clone(),
            }),
            _ => None,
        };
        self.send_signalling(&Outgoing::Join {
            version: VERSION,
            room: self.room.clone(),
            kind: "browser",
            udp_addr: None,
            resume,
        });
    }

    fn send_signalling(&self, frame: &Outgoing) {
        if let (Some(ws), Ok(text)) = (&self.ws, serde_json::to_string(frame)) {
            if ws.ready_state() == WebSocket::OPEN {
                let _ = ws.send_with_str(&text);
            }
        }
    }
}

/// Borrows the state, runs `f`, releases it, then hands queued events to the page.
fn with_state<R>(shared: &Shared, f: impl FnOnce(&mut State, &Shared) -> R) -> R {
    let (result, events, callback) = {
        let mut state = shared.borrow_mut();
        let result = f(&mut state, shared);
        (
            result,
            std::mem::take(&mut state.outbox),
            state.on_event.clone(),
        )
    };
    for event in events {
        if let Ok(js) = js_sys::JSON::parse(&event.to_string()) {
            let _ = callback.call1(&JsValue::NULL, &js);
        }
    }
    result
}

fn upgrade(weak: &Weak<RefCell<State>>) -> Option<Shared> {
    weak.upgrade()
}

/// A player in a room: what the page holds.
#[wasm_bindgen]
pub struct Client {
    shared: Shared,
}

#[wasm_bindgen]
impl Client {
    /// Joins `room` through the signalling server at `ws_url` (e.g. `ws://host/ws`).
    ///
    /// `options`: `{ latencyMs, jitterMs, lossPct, seed }` for the link emulator (all optional;
    /// absent or zero means a real link), and `onEvent(event)`, called with plain objects:
    /// `status`, `welcome`, `peer-joined`, `peer-left`, `link-open`, `first-ack`, `position`,
    /// `error`.
    #[wasm_bindgen(constructor)]
    pub fn new(ws_url: String, room: String, options: JsValue) -> Result<Client, JsError> {
        let number = |key: &str| {
            Reflect::get(&options, &key.into())
                .ok()
                .and_then(|v| v.as_f64())
        };
        let on_event: Function = Reflect::get(&options, &"onEvent".into())
            .ok()
            .and_then(|f| f.dyn_into().ok())
            .ok_or_else(|| JsError::new("options.onEvent must be a function"))?;
        let latency = number("latencyMs").unwrap_or(0.0);
        let jitter = number("jitterMs").unwrap_or(0.0);
        let loss = number("lossPct").unwrap_or(0.0);
        let emulation = (latency > 0.0 || jitter > 0.0 || loss > 0.0).then(|| Emulation {
            config: ackwire_core::emulator::EmulatorConfig {
                latency: Duration::from_secs_f64(latency / 1000.0),
                jitter: Duration::from_secs_f64(jitter / 1000.0),
                loss_percent: loss,
                ..Default::default()
            },
            seed: number("seed").unwrap_or(1.0) as u64,
        });
        if let Some(e) = &emulation {
            ackwire_core::emulator::LinkEmulator::new(e.config.clone(), e.seed)
                .map_err(|err| JsError::new(&format!("link emulator settings: {err}")))?;
        }
        let shared = Rc::new(RefCell::new(State {
            ws_url,
            room,
            me: None,
            token: None,
            ws: None,
            ws_callbacks: Vec::new(),
            reconnects: 0,
            closed: false,
            ice_servers: Vec::new(),
            emulation,
            epoch: 0,
            peers: BTreeMap::new(),
            position: (0.5, 0.5),
            on_event,
            outbox: Vec::new(),
            timer: None,
            tick: None,
            next_stats: Duration::ZERO,
        }));
        let weak = Rc::downgrade(&shared);
        shared.borrow_mut().tick = Some(Closure::new(move || {
            if let Some(shared) = upgrade(&weak) {
                tick(&shared);
            }
        }));
        connect_signalling(&shared)?;
        Ok(Client { shared })
    }

    /// This player's dot, in [0, 1] × [0, 1]; every outgoing packet carries the newest one.
    #[wasm_bindgen(js_name = setPosition)]
    pub fn set_position(&self, x: f32, y: f32) {
        self.shared.borrow_mut().position = (x, y);
    }

    /// Sends a chat message to every connected peer on the reliable-ordered channel: each
    /// receives it exactly once, in order. Returns how many peers it was queued for.
    #[wasm_bindgen(js_name = sendChat)]
    pub fn send_chat(&self, text: &str) -> Result<u32, JsError> {
        let mut queued = 0;
        let mut last_error = None;
        for peer in self.shared.borrow_mut().peers.values_mut() {
            if let Some(link) = peer.link.as_mut() {
                match link.send_chat(text) {
                    Ok(()) => queued += 1,
                    Err(err) => last_error = Some(err),
                }
            }
        }
        match (queued, last_error) {
            (0, Some(err)) => Err(JsError::new(&err)),
            _ => {
                tick(&self.shared);
                Ok(queued)
            }
        }
    }

    /// Our server-assigned peer id, once welcomed.
    #[wasm_bindgen(getter, js_name = peerId)]
    pub fn peer_id(&self) -> Option<f64> {
        self.shared.borrow().me.map(|id| id as f64)
    }

    /// Every remote peer with its link state and the core's `Stats` (as a JSON string).
    #[wasm_bindgen(js_name = peersJson)]
    pub fn peers_json(&self) -> String {
        let state = self.shared.borrow();
        let peers: Vec<Value> = state
            .peers
            .iter()
            .map(|(&key, p)| {
                json!({
                    "id": state.label(key),
                    "kind": p.kind,
                    "state": p.link.as_ref().and_then(Link::stats).and_then(|s| s.connection_state)
                        .map(|s| format!("{s:?}").to_lowercase()).unwrap_or_else(|| "connecting".into()),
                    "refused": p.refused,
                    "stats": p.link.as_ref().and_then(Link::stats),
                })
            })
            .collect();
        Value::Array(peers).to_string()
    }

    /// The RTCPeerConnection to `peer`, for the page's own `getStats()` (ICE candidate types).
    #[wasm_bindgen(js_name = peerConnection)]
    pub fn peer_connection(&self, peer: f64) -> Option<RtcPeerConnection> {
        let state = self.shared.borrow();
        state
            .peers
            .get(&state.key(peer as u64))
            .map(|p| p.pc.clone())
    }

    /// Leaves the room and closes every connection.
    pub fn close(&self) {
        with_state(&self.shared, |state, _| {
            state.closed = true;
            if let Some(ws) = state.ws.take() {
                ws.set_onclose(None);
                ws.set_onmessage(None);
                let _ = ws.close();
            }
            let at = now();
            let position = state.position;
            for (_, mut peer) in std::mem::take(&mut state.peers) {
                if let Some(link) = peer.link.as_mut() {
                    // Tell the peer now (the core sends its disconnect redundantly) rather
                    // than leaving it to time out.
                    link.close();
                    let channel = &peer.channel;
                    link.poll(
                        at,
                        position,
                        |d| drop(channel.send_with_u8_array(d)),
                        &mut Vec::new(),
                    );
                }
                peer.shut_down();
            }
            if let (Some(id), Some(w)) = (state.timer.take(), web_sys::window()) {
                w.clear_timeout_with_handle(id);
            }
        });
    }
}

fn connect_signalling(shared: &Shared) -> Result<(), JsError> {
    let url = shared.borrow().ws_url.clone();
    let ws = WebSocket::new(&url).map_err(|e| JsError::new(&format!("WebSocket {url}: {e:?}")))?;
    let weak = Rc::downgrade(shared);
    let on_open = Closure::<dyn FnMut()>::new({
        let weak = weak.clone();
        move || {
            if let Some(shared) = upgrade(&weak) {
                with_state(&shared, |state, _| state.send_join());
            }
        }
    });
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new({
        let weak = weak.clone();
        move |event: MessageEvent| {
            let (Some(shared), Some(text)) = (upgrade(&weak), event.data().as_string()) else {
                return;
            };
            match serde_json::from_str::<Incoming>(&text) {
                Ok(frame) => on_signalling(&shared, frame),
                Err(err) => with_state(&shared, |state, _| {
                    state.emit(json!({"type": "error", "code": "bad_server_frame", "message": err.to_string()}))
                }),
            }
        }
    });
    let on_close = Closure::<dyn FnMut(CloseEvent)>::new(move |event: CloseEvent| {
        if let Some(shared) = upgrade(&weak) {
            on_signalling_closed(&shared, event.code(), event.reason());
        }
    });
    ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    let mut state = shared.borrow_mut();
    state.ws = Some(ws);
    state.ws_callbacks = vec![Box::new(on_open), Box::new(on_message), Box::new(on_close)];
    Ok(())
}

/// The signalling link dropped: data channels keep flowing; rejoin with the resume token.
fn on_signalling_closed(shared: &Shared, code: u16, reason: String) {
    let retry = with_state(shared, |state, _| {
        if state.closed {
            return None;
        }
        state.ws = None;
        state.reconnects += 1;
        let delay = RECONNECT_FIRST_DELAY_MS
            .saturating_mul(1 << state.reconnects.min(5).saturating_sub(1))
            .min(RECONNECT_MAX_DELAY_MS);
        state.emit(json!({"type": "status", "state": "reconnecting",
            "reason": format!("signalling closed ({code} {reason}); attempt {} in {delay} ms", state.reconnects)}));
        Some(delay)
    });
    if let Some(delay) = retry {
        let weak = Rc::downgrade(shared);
        let again = Closure::once_into_js(move || {
            if let Some(shared) = upgrade(&weak) {
                if let Err(err) = connect_signalling(&shared) {
                    with_state(&shared, |state, _| {
                        state.emit(json!({"type": "status", "state": "failed", "reason": format!("{err:?}")}))
                    });
                }
            }
        });
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(
                again.unchecked_ref(),
                delay,
            );
        }
    }
}

fn on_signalling(shared: &Shared, frame: Incoming) {
    match frame {
        Incoming::Welcome {
            peer_id,
            token,
            resumed,
            peers,
            ice_servers,
        } => {
            let offer_to = with_state(shared, |state, _| {
                if !resumed && state.me.is_some() {
                    // A new identity (the server forgot us, e.g. it restarted): links from the
                    // old one keep flowing under the old epoch, since the new server may hand
                    // their ids to other peers.
                    state.epoch += 1;
                }
                state.me = Some(peer_id);
                state.token = Some(token);
                state.reconnects = 0;
                state.ice_servers = ice_servers;
                state.emit(json!({"type": "welcome", "peerId": peer_id, "resumed": resumed}));
                state.emit(json!({"type": "status", "state": "connected"}));
                // The newcomer offers to everyone already there; a resumed peer keeps its links.
                if resumed { Vec::new() } else { peers }
            });
            for peer in offer_to {
                if let Err(err) = open_peer(shared, &peer, true) {
                    report_error(shared, "webrtc", &err);
                }
            }
        }
        Incoming::PeerJoined { peer } => {
            with_state(shared, |state, _| {
                state.emit(json!({"type": "peer-joined", "peer": peer.id, "kind": peer.kind}))
            });
            // The newcomer offers; we answer. Prepare the connection now so early ICE
            // candidates have somewhere to go.
            if let Err(err) = open_peer(shared, &peer, false) {
                report_error(shared, "webrtc", &err);
            }
        }
        Incoming::PeerLeft { peer_id, reason } => with_state(shared, |state, _| {
            if let Some(peer) = state.peers.remove(&state.key(peer_id)) {
                peer.shut_down();
            }
            state.emit(json!({"type": "peer-left", "peer": peer_id, "reason": reason}));
        }),
        Incoming::Signal { from, data } => match serde_json::from_value::<SignalData>(data) {
            Ok(data) => on_remote_signal(shared, from, data),
            Err(err) => report_error(shared, "bad_signal", &format!("from peer {from}: {err}")),
        },
        Incoming::Error { code, message } => with_state(shared, |state, _| {
            state.emit(json!({"type": "error", "code": code, "message": message}));
            if code == "resume_rejected" {
                // Our old id expired (or the server restarted): join again as a new peer.
                state.me = None;
                state.token = None;
                state.send_join();
            }
        }),
        Incoming::Other => {}
    }
}

fn report_error(shared: &Shared, code: &str, message: &str) {
    with_state(shared, |state, _| {
        state.emit(json!({"type": "error", "code": code, "message": message}))
    });
}

fn js_err(context: &str, err: JsValue) -> String {
    format!(
        "{context}: {}",
        err.as_string().unwrap_or_else(|| format!("{err:?}"))
    )
}

/// Creates the RTCPeerConnection and the data channel to `info`. Both sides create the same
/// pre-negotiated channel (id 0), so neither waits for an `ondatachannel` announcement.
fn open_peer(shared: &Shared, info: &PeerInfo, offer: bool) -> Result<(), String> {
    let key = shared.borrow().key(info.id);
    if shared.borrow().peers.contains_key(&key) {
        return Ok(());
    }
    let config = RtcConfiguration::new();
    config.set_ice_servers(
        &js_sys::JSON::parse(
            &serde_json::to_string(&shared.borrow().ice_servers).unwrap_or_default(),
        )
        .unwrap_or(JsValue::UNDEFINED),
    );
    let pc = RtcPeerConnection::new_with_configuration(&config)
        .map_err(|e| js_err("RTCPeerConnection", e))?;
    let init = RtcDataChannelInit::new();
    init.set_ordered(false);
    init.set_max_retransmits(0);
    init.set_negotiated(true);
    init.set_id(0);
    let channel = pc.create_data_channel_with_data_channel_dict("ackwire", &init);
    channel.set_binary_type(RtcDataChannelType::Arraybuffer);

    let id = info.id;
    let weak = Rc::downgrade(shared);
    let on_candidate = Closure::<dyn FnMut(RtcPeerConnectionIceEvent)>::new({
        let weak = weak.clone();
        move |event: RtcPeerConnectionIceEvent| {
            let (Some(shared), Some(c)) = (upgrade(&weak), event.candidate()) else {
                return;
            };
            let data = SignalData::Candidate {
                candidate: c.candidate(),
                sdp_mid: c.sdp_mid(),
                sdp_m_line_index: c.sdp_m_line_index(),
            };
            let state = shared.borrow();
            // After a rejoin the server knows this id as someone else: say nothing.
            if let (true, Ok(data)) = (state.epoch == key.epoch, serde_json::to_value(&data)) {
                state.send_signalling(&Outgoing::Signal { to: id, data });
            }
        }
    });
    let on_open = Closure::<dyn FnMut()>::new({
        let weak = weak.clone();
        move || {
            if let Some(shared) = upgrade(&weak) {
                on_channel_open(&shared, key);
            }
        }
    });
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new({
        let weak = weak.clone();
        move |event: MessageEvent| {
            if let Some(shared) = upgrade(&weak) {
                let bytes = Uint8Array::new(&event.data()).to_vec();
                on_datagram(&shared, key, &bytes);
            }
        }
    });
    let on_close = Closure::<dyn FnMut()>::new(move || {
        if let Some(shared) = upgrade(&weak) {
            with_state(&shared, |state, _| {
                let label = state.label(key);
                if let Some(peer) = state.peers.get_mut(&key) {
                    if peer.link.take().is_some() {
                        state.emit(json!({"type": "link-closed", "peer": label}));
                    }
                }
            });
        }
    });
    pc.set_onicecandidate(Some(on_candidate.as_ref().unchecked_ref()));
    channel.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    channel.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    channel.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    shared.borrow_mut().peers.insert(
        key,
        Peer {
            kind: info.kind.clone(),
            pc: pc.clone(),
            channel,
            link: None,
            remote_described: false,
            early_candidates: Vec::new(),
            refused: 0,
            _callbacks: vec![
                Box::new(on_candidate),
                Box::new(on_open),
                Box::new(on_message),
                Box::new(on_close),
            ],
        },
    );
    if offer {
        let shared = shared.clone();
        spawn_local(async move {
            if let Err(err) = send_description(&shared, id, &pc, RtcSdpType::Offer).await {
                report_error(&shared, "webrtc", &err);
            }
        });
    }
    Ok(())
}

/// Creates our offer or answer, sets it locally and relays it to `to`.
async fn send_description(
    shared: &Shared,
    to: u64,
    pc: &RtcPeerConnection,
    kind: RtcSdpType,
) -> Result<(), String> {
    let created = match kind {
        RtcSdpType::Offer => JsFuture::from(pc.create_offer()).await,
        _ => JsFuture::from(pc.create_answer()).await,
    }
    .map_err(|e| js_err("create description", e))?;
    let sdp = Reflect::get(&created, &"sdp".into())
        .ok()
        .and_then(|s| s.as_string())
        .ok_or("created description has no sdp")?;
    let desc = RtcSessionDescriptionInit::new(kind);
    desc.set_sdp(&sdp);
    JsFuture::from(pc.set_local_description(&desc))
        .await
        .map_err(|e| js_err("setLocalDescription", e))?;
    let kind = if kind == RtcSdpType::Offer {
        "offer"
    } else {
        "answer"
    };
    let data = serde_json::to_value(SignalData::Sdp {
        sdp: Sdp {
            kind: kind.into(),
            sdp,
        },
    })
    .map_err(|e| e.to_string())?;
    shared
        .borrow()
        .send_signalling(&Outgoing::Signal { to, data });
    Ok(())
}

fn on_remote_signal(shared: &Shared, from: u64, data: SignalData) {
    match data {
        SignalData::Sdp { sdp } => {
            let kind = match sdp.kind.as_str() {
                "offer" => RtcSdpType::Offer,
                "answer" => RtcSdpType::Answer,
                other => {
                    return report_error(
                        shared,
                        "webrtc",
                        &format!("peer {from} sent an sdp of type {other:?}"),
                    );
                }
            };
            if kind == RtcSdpType::Offer {
                // Normally peer_joined announced it first; if the offer overtook it, the
                // kind is learned from the room later.
                let info = PeerInfo {
                    id: from,
                    kind: "unknown".into(),
                    udp_addr: None,
                };
                if let Err(err) = open_peer(shared, &info, false) {
                    return report_error(shared, "webrtc", &err);
                }
            }
            let key = shared.borrow().key(from);
            let Some(pc) = shared.borrow().peers.get(&key).map(|p| p.pc.clone()) else {
                return report_error(
                    shared,
                    "webrtc",
                    &format!("answer from unknown peer {from}"),
                );
            };
            let shared = shared.clone();
            spawn_local(async move {
                let desc = RtcSessionDescriptionInit::new(kind);
                desc.set_sdp(&sdp.sdp);
                let result = async {
                    JsFuture::from(pc.set_remote_description(&desc))
                        .await
                        .map_err(|e| js_err("setRemoteDescription", e))?;
                    let early = {
                        let mut state = shared.borrow_mut();
                        match state.peers.get_mut(&key) {
                            Some(peer) => {
                                peer.remote_described = true;
                                std::mem::take(&mut peer.early_candidates)
                            }
                            None => Vec::new(),
                        }
                    };
                    for candidate in early {
                        let _ = JsFuture::from(
                            pc.add_ice_candidate_with_opt_rtc_ice_candidate_init(Some(&candidate)),
                        )
                        .await;
                    }
                    if kind == RtcSdpType::Offer {
                        send_description(&shared, from, &pc, RtcSdpType::Answer).await?;
                    }
                    Ok::<(), String>(())
                }
                .await;
                if let Err(err) = result {
                    report_error(&shared, "webrtc", &err);
                }
            });
        }
        SignalData::Candidate {
            candidate,
            sdp_mid,
            sdp_m_line_index,
        } => {
            let init = RtcIceCandidateInit::new(&candidate);
            init.set_sdp_mid(sdp_mid.as_deref());
            init.set_sdp_m_line_index(sdp_m_line_index);
            let mut state = shared.borrow_mut();
            let key = state.key(from);
            let Some(peer) = state.peers.get_mut(&key) else {
                return;
            };
            if peer.remote_described {
                let pc = peer.pc.clone();
                drop(state);
                spawn_local(async move {
                    let _ = JsFuture::from(
                        pc.add_ice_candidate_with_opt_rtc_ice_candidate_init(Some(&init)),
                    )
                    .await;
                });
            } else {
                // Trickled before the description arrived: hold until it is set.
                peer.early_candidates.push(init);
            }
        }
    }
}

/// 32 bytes from the browser's CSPRNG, for an acceptor's cookie secret.
fn random_secret() -> Result<[u8; 32], String> {
    let mut secret = [0u8; 32];
    web_sys::window()
        .and_then(|w| w.crypto().ok())
        .ok_or("no crypto")?
        .get_random_values_with_u8_array(&mut secret)
        .map_err(|e| js_err("crypto.getRandomValues", e))?;
    Ok(secret)
}

fn on_channel_open(shared: &Shared, key: Key) {
    with_state(shared, |state, shared| {
        let at = now();
        let emulation = state.emulation.clone();
        // No server sits between two peers: `we_accept` decides, the same on both ends.
        let role = match state.me {
            Some(me) if we_accept(me, key.id) => match random_secret() {
                Ok(secret) => Role::Accept { secret },
                Err(err) => {
                    return state.emit(json!({"type": "error", "code": "link", "message": err}));
                }
            },
            _ => Role::Connect,
        };
        let label = state.label(key);
        let Some(peer) = state.peers.get_mut(&key) else {
            return;
        };
        match Link::new(at, role, &cookie_address(key.id), emulation.as_ref()) {
            Ok(link) => {
                peer.link = Some(link);
                state.emit(json!({"type": "link-open", "peer": label, "atMs": ms(at)}));
            }
            Err(err) => state.emit(json!({"type": "error", "code": "link", "message": err})),
        }
        schedule(state, shared, at);
    });
    tick(shared);
}

fn on_datagram(shared: &Shared, key: Key, bytes: &[u8]) {
    with_state(shared, |state, _| {
        let at = now();
        let mut events = Vec::new();
        let Some(peer) = state.peers.get_mut(&key) else {
            return;
        };
        let Some(link) = peer.link.as_mut() else {
            return;
        };
        if link.receive(at, bytes, &mut events).is_err() {
            // Malformed or foreign: refused by the core, changes nothing, counted.
            peer.refused += 1;
        }
        emit_link_events(state, key, events);
    });
    tick(shared);
}

fn emit_link_events(state: &mut State, key: Key, events: Vec<LinkEvent>) {
    let id = state.label(key);
    for event in events {
        let event = match event {
            LinkEvent::Connected => {
                json!({"type": "link-connected", "peer": id, "atMs": ms(now())})
            }
            LinkEvent::Position { x, y } => json!({"type": "position", "peer": id, "x": x, "y": y}),
            LinkEvent::Chat { text } => json!({"type": "chat", "peer": id, "text": text}),
            LinkEvent::FirstAck { at } => json!({"type": "first-ack", "peer": id, "atMs": ms(at)}),
            LinkEvent::Disconnected { reason } => {
                // The peer closed (or timed out): this link is over even if signalling has
                // not said so yet (a page killed without a close frame stays in its room for
                // the server's reconnect grace). A new offer from it starts a fresh link.
                if let Some(peer) = state.peers.remove(&key) {
                    peer.shut_down();
                }
                json!({"type": "link-closed", "peer": id, "reason": reason})
            }
        };
        state.emit(event);
    }
}

/// Runs every link that is due, reports stats once a second, and re-arms the timer at the
/// earliest time any link asked for (the core decides the send rate, not this loop).
fn tick(shared: &Shared) {
    with_state(shared, |state, shared| {
        let at = now();
        let position = state.position;
        let mut all_events = Vec::new();
        for (&key, peer) in state.peers.iter_mut() {
            let Some(link) = peer.link.as_mut() else {
                continue;
            };
            if peer.channel.ready_state() != RtcDataChannelState::Open {
                continue;
            }
            let mut events = Vec::new();
            let channel = &peer.channel;
            link.poll(
                at,
                position,
                |datagram| {
                    let _ = channel.send_with_u8_array(datagram);
                },
                &mut events,
            );
            all_events.push((key, events));
        }
        for (key, events) in all_events {
            emit_link_events(state, key, events);
        }
        if at >= state.next_stats {
            state.next_stats = at + STATS_PERIOD;
            report_stats(state);
        }
        schedule(state, shared, at);
    });
}

fn report_stats(state: &State) {
    let links: Vec<Value> = state
        .peers
        .iter()
        // Only links the server can name: those of our current identity.
        .filter(|(key, _)| key.epoch == state.epoch)
        .filter_map(|(key, peer)| {
            let stats = peer.link.as_ref()?.stats()?;
            Some(json!({"peer": key.id, "transport": "webrtc", "stats": stats}))
        })
        .collect();
    if !links.is_empty() {
        state.send_signalling(&Outgoing::Stats { links });
    }
}

fn schedule(state: &mut State, _shared: &Shared, at: Duration) {
    let mut next = state.next_stats;
    for peer in state.peers.values() {
        if let Some(link) = &peer.link {
            if let Some(at) = link.poll_timeout() {
                next = next.min(at);
            }
        }
    }
    let (Some(window), Some(tick)) = (web_sys::window(), state.tick.as_ref()) else {
        return;
    };
    if let Some(id) = state.timer.take() {
        window.clear_timeout_with_handle(id);
    }
    let delay = ms(next.saturating_sub(at)).ceil() as i32;
    state.timer = window
        .set_timeout_with_callback_and_timeout_and_arguments_0(tick.as_ref().unchecked_ref(), delay)
        .ok();
}
