//! The browser driver: a thin adapter around the room member (`ackwire_room::member`). It
//! owns the clock (`performance.now()`), one `setTimeout` timer, the signalling WebSocket and
//! one RTCPeerConnection per WebRTC link attempt; it moves bytes and events between them and
//! the member and hands the page what the member says. Every decision about links — who
//! offers, when to retry, what a failure means — is the member's, shared with the native peer.
//!
//! All state sits in one `Rc<RefCell<State>>`. Browser callbacks borrow it briefly, queue
//! what the page must hear, release the borrow and only then call the page, so a page
//! handler may call back into the client.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::time::Duration;

use ackwire_core::emulator::EmulatorConfig;
use ackwire_room::emulation::Emulation;
use ackwire_room::member::{
    Command, IceState, Member, MemberConfig, Output, Route, TransportEvent, TransportId,
};
use ackwire_room::signalling::{IceServer, PeerKind, Sdp, SdpKind, SignalData};
use js_sys::{Function, Reflect, Uint8Array};
use serde::Serialize;

use crate::frames::{self, to_js, to_json};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, spawn_local};
use web_sys::{
    CloseEvent, MessageEvent, RtcConfiguration, RtcDataChannel, RtcDataChannelInit,
    RtcDataChannelState, RtcDataChannelType, RtcIceCandidateInit, RtcIceConnectionState,
    RtcIceTransportPolicy, RtcPeerConnection, RtcPeerConnectionIceEvent, RtcSdpType,
    RtcSessionDescriptionInit, WebSocket,
};

type Shared = Rc<RefCell<State>>;

fn now() -> Duration {
    let ms = web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0);
    Duration::from_secs_f64(ms.max(0.0) / 1000.0)
}

/// One WebRTC link attempt: the peer connection and its data channel.
struct Pc {
    pc: RtcPeerConnection,
    channel: RtcDataChannel,
    /// Browser callbacks must outlive the objects they are attached to.
    _callbacks: Vec<Box<dyn std::any::Any>>,
}

impl Pc {
    /// Closes the connection. The browser may still fire events for it afterwards, so the
    /// handlers are detached first: their closures are dropped with this struct.
    fn shut_down(self) {
        self.channel.set_onopen(None);
        self.channel.set_onmessage(None);
        self.channel.set_onclose(None);
        self.pc.set_onicecandidate(None);
        self.pc.set_oniceconnectionstatechange(None);
        self.channel.close();
        self.pc.close();
    }
}

struct Socket {
    number: u64,
    ws: WebSocket,
    _callbacks: Vec<Box<dyn std::any::Any>>,
}

impl Socket {
    fn shut_down(self) {
        self.ws.set_onopen(None);
        self.ws.set_onmessage(None);
        self.ws.set_onclose(None);
        let _ = self.ws.close();
    }
}

/// The signalling socket the page opened before the driver loaded (`options.earlySocket`):
/// the join rides its URL, so the welcome may already be waiting in `holder.messages`.
struct EarlySocket {
    ws: WebSocket,
    /// The page's `{ ws, instance, messages, opened }`, read when the socket is adopted.
    holder: JsValue,
}

struct State {
    ws_url: String,
    /// Adopted by the first fresh join instead of opening a socket of our own.
    early: Option<EarlySocket>,
    /// Only relayed (TURN) ICE candidates: the player's address is never exposed.
    relay_only: bool,
    member: Member,
    socket: Option<Socket>,
    sockets_opened: u64,
    pcs: HashMap<TransportId, Pc>,
    on_event: Function,
    /// Events for the page (plain objects), handed over once the state is released.
    outbox: Vec<JsValue>,
    timer: Option<i32>,
    tick: Option<Closure<dyn FnMut()>>,
    /// The DTLS certificate every RTCPeerConnection of this page uses.
    certificate: Certificate,
}

/// One DTLS certificate for all of a page's links, made once: a new RTCPeerConnection
/// otherwise makes its own key pair, and its offer or answer waits for it (headless Chromium
/// here: a new connection's offer in 2.6–4 ms with the certificate given, 4.3–6.6 ms
/// without).
enum Certificate {
    /// Made by the page's early script (`earlySocket.certificate` once ready), while the
    /// driver loaded.
    Early(JsValue),
    Ready(JsValue),
    /// Being made by the driver, or the browser would not make one: each connection makes
    /// its own.
    Pending,
}

impl Certificate {
    /// The certificate, once there is one.
    fn get(&mut self) -> Option<JsValue> {
        if let Self::Early(holder) = self {
            let made = Reflect::get(holder, &"certificate".into())
                .ok()
                .filter(|c| c.is_object())?;
            *self = Self::Ready(made);
        }
        match self {
            Self::Ready(certificate) => Some(certificate.clone()),
            _ => None,
        }
    }
}

/// Has the browser make the page's certificate (ECDSA P-256, what Chromium makes for a
/// connection itself) and keeps it once made.
fn make_certificate(shared: &Shared) {
    let keygen = js_sys::Object::new();
    let _ = Reflect::set(&keygen, &"name".into(), &"ECDSA".into());
    let _ = Reflect::set(&keygen, &"namedCurve".into(), &"P-256".into());
    let Ok(promise) = RtcPeerConnection::generate_certificate_with_object(&keygen) else {
        return;
    };
    let weak = Rc::downgrade(shared);
    spawn_local(async move {
        if let (Ok(made), Some(shared)) = (JsFuture::from(promise).await, weak.upgrade()) {
            shared.borrow_mut().certificate = Certificate::Ready(made);
        }
    });
}

/// Borrows the state, runs `f`, carries out what the member asked for, re-arms the timer,
/// releases the state, then hands queued events to the page.
fn with_state<R>(shared: &Shared, f: impl FnOnce(&mut State) -> R) -> R {
    let (result, events, callback) = {
        let mut state = shared.borrow_mut();
        let result = f(&mut state);
        flush(&mut state, shared);
        schedule(&mut state);
        (
            result,
            std::mem::take(&mut state.outbox),
            state.on_event.clone(),
        )
    };
    for event in events {
        let _ = callback.call1(&JsValue::NULL, &event);
    }
    result
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
    /// absent or zero means a real link), `relayOnly` (ICE uses TURN relays only, so peers
    /// never learn this player's address; with no TURN server there is no path at all), and
    /// `onEvent(event)`, called with the room member's
    /// events as plain objects (`type`: `signalling`, `welcome`, `peer-joined`, `peer-left`,
    /// `link`, `position`, `chat`, `first-ack`, `server-error`) and the driver's `error`.
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
        let seconds = |ms: f64| {
            Duration::try_from_secs_f64(ms / 1000.0)
                .map_err(|_| JsError::new(&format!("link emulator settings: {ms} ms")))
        };
        let emulation = (latency > 0.0 || jitter > 0.0 || loss > 0.0)
            .then(|| -> Result<Emulation, JsError> {
                Ok(Emulation {
                    config: EmulatorConfig {
                        latency: seconds(latency)?,
                        jitter: seconds(jitter)?,
                        loss_percent: loss,
                        ..EmulatorConfig::default()
                    },
                    seed: number("seed").unwrap_or(1.0) as u64,
                    impair_after: Duration::ZERO,
                })
            })
            .transpose()?;
        let random = random_bytes::<48>().map_err(|e| JsError::new(&e))?;
        // A socket the page opened early joined with its own instance: the member takes it.
        let early_holder = Reflect::get(&options, &"earlySocket".into())
            .ok()
            .filter(|v| v.is_object());
        let early = early_holder.as_ref().and_then(|holder| {
            let ws = Reflect::get(holder, &"ws".into())
                .ok()?
                .dyn_into::<WebSocket>()
                .ok()?;
            let instance = Reflect::get(holder, &"instance".into()).ok()?.as_string()?;
            Some((
                EarlySocket {
                    ws,
                    holder: holder.clone(),
                },
                instance,
            ))
        });
        let instance = match &early {
            Some((_, instance)) => instance.clone(),
            None => {
                let hex: String = random[..8].iter().map(|b| format!("{b:02x}")).collect();
                format!("b{hex}")
            }
        };
        let mut config = MemberConfig::new(room, PeerKind::Browser, instance);
        config.secret.copy_from_slice(&random[8..40]);
        config.seed = u64::from_le_bytes(random[40..48].try_into().unwrap_or_default());
        config.emulation = emulation;
        let member =
            Member::new(config, now()).map_err(|e| JsError::new(&format!("room member: {e}")))?;
        let relay_only = Reflect::get(&options, &"relayOnly".into())
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        let certificate = match &early {
            Some((socket, _)) => Certificate::Early(socket.holder.clone()),
            None => Certificate::Pending,
        };
        let shared = Rc::new(RefCell::new(State {
            ws_url,
            early: early.map(|(socket, _)| socket),
            relay_only,
            member,
            socket: None,
            sockets_opened: 0,
            pcs: HashMap::new(),
            on_event,
            outbox: Vec::new(),
            timer: None,
            tick: None,
            certificate,
        }));
        if matches!(shared.borrow().certificate, Certificate::Pending) {
            make_certificate(&shared);
        }
        let weak = Rc::downgrade(&shared);
        shared.borrow_mut().tick = Some(Closure::new(move || {
            if let Some(shared) = weak.upgrade() {
                with_state(&shared, |state| state.member.handle_timeout(now()));
            }
        }));
        with_state(&shared, |state| state.member.handle_timeout(now()));
        Ok(Client { shared })
    }

    /// This player's dot, in [0, 1] × [0, 1]; every outgoing packet carries the newest one.
    #[wasm_bindgen(js_name = setPosition)]
    pub fn set_position(&self, x: f32, y: f32) {
        self.shared.borrow_mut().member.set_position(x, y);
    }

    /// Sends a chat message to every connected peer on the reliable-ordered channel: each
    /// receives it exactly once, in order. Returns how many peers it was queued for.
    #[wasm_bindgen(js_name = sendChat)]
    pub fn send_chat(&self, text: &str) -> Result<u32, JsError> {
        with_state(&self.shared, |state| state.member.send_chat(now(), text))
            .map(|n| n as u32)
            .map_err(|e| JsError::new(&e.to_string()))
    }

    /// Pulls (`true`) or plugs back this player's network cable for its links (signalling
    /// stays up): links go quiet, are lost after the core's idle timeout and recover once
    /// plugged back. For demos and tests.
    #[wasm_bindgen(js_name = setOutage)]
    pub fn set_outage(&self, on: bool) {
        self.shared.borrow_mut().member.set_outage(on);
    }

    /// Our server-assigned peer id, once welcomed.
    #[wasm_bindgen(getter, js_name = peerId)]
    pub fn peer_id(&self) -> Option<f64> {
        self.shared.borrow().member.peer_id().map(|id| id as f64)
    }

    /// Every link with its state, last failure, ICE candidate type and the core's `Stats`
    /// (a JSON array string).
    #[wasm_bindgen(js_name = linksJson)]
    pub fn links_json(&self) -> String {
        to_json(&self.shared.borrow().member.links(now())).unwrap_or_default()
    }

    /// The signalling socket's state (`connecting`, `joining`, `joined`, `reconnecting`,
    /// `closed`).
    #[wasm_bindgen(getter)]
    pub fn signalling(&self) -> String {
        to_js(&self.shared.borrow().member.signalling_state())
            .as_string()
            .unwrap_or_default()
    }

    /// Leaves the room: the links say goodbye (the core sends its disconnect redundantly) and
    /// the server hears `leave`.
    pub fn close(&self) {
        with_state(&self.shared, |state| state.member.close(now()));
        // A page being hidden gets no more timers: send what is due now and close.
        let mut state = self.shared.borrow_mut();
        if let (Some(id), Some(w)) = (state.timer.take(), web_sys::window()) {
            w.clear_timeout_with_handle(id);
        }
        for (_, pc) in state.pcs.drain() {
            pc.shut_down();
        }
        if let Some(socket) = state.socket.take() {
            socket.shut_down();
        }
    }
}

/// Carries out what the member asked for.
fn flush(state: &mut State, shared: &Shared) {
    while let Some(output) = state.member.poll_output() {
        match output {
            Output::OpenSignalling { join } => {
                if let Some(old) = state.socket.take() {
                    old.shut_down();
                }
                state.sockets_opened += 1;
                // The page's early socket carries this same fresh join (its instance is the
                // member's); a resume, or a socket that already failed, opens anew.
                let early = state.early.take().filter(|e| {
                    join.is_some()
                        && matches!(e.ws.ready_state(), WebSocket::CONNECTING | WebSocket::OPEN)
                });
                if let Some(early) = early {
                    state.socket = Some(adopt_socket(shared, early, state.sockets_opened));
                    continue;
                }
                let url = match join {
                    Some(join) => format!("{}?{}", state.ws_url, join.query()),
                    None => state.ws_url.clone(),
                };
                match open_socket(shared, &url, state.sockets_opened) {
                    Ok(socket) => state.socket = Some(socket),
                    Err(err) => {
                        let at = now();
                        state.member.signalling_closed(at, &err);
                    }
                }
            }
            Output::Frame(frame) => {
                if let (Some(socket), Some(text)) = (&state.socket, to_json(&frame)) {
                    if socket.ws.ready_state() == WebSocket::OPEN {
                        let _ = socket.ws.send_with_str(&text);
                    }
                }
            }
            Output::Command(command) => run_command(state, shared, command),
            Output::Transmit {
                route: Route::WebRtc(transport),
                datagram,
            } => {
                if let Some(pc) = state.pcs.get(&transport) {
                    if pc.channel.ready_state() == RtcDataChannelState::Open {
                        let _ = pc.channel.send_with_u8_array(&datagram);
                    }
                }
            }
            // Browsers have no UDP sockets; the member never routes a browser's link there.
            Output::Transmit { .. } => {}
            Output::Event(event) => state.outbox.push(to_js(&event)),
        }
    }
}

/// Re-arms the one timer at the member's next deadline.
fn schedule(state: &mut State) {
    let (Some(window), Some(tick)) = (web_sys::window(), state.tick.as_ref()) else {
        return;
    };
    if let Some(id) = state.timer.take() {
        window.clear_timeout_with_handle(id);
    }
    let Some(at) = state.member.poll_timeout() else {
        return;
    };
    let delay = (at.saturating_sub(now()).as_secs_f64() * 1000.0).ceil() as i32;
    state.timer = window
        .set_timeout_with_callback_and_timeout_and_arguments_0(tick.as_ref().unchecked_ref(), delay)
        .ok();
}

fn open_socket(shared: &Shared, url: &str, number: u64) -> Result<Socket, String> {
    let ws = WebSocket::new(url).map_err(|e| js_err(&format!("WebSocket {url}"), e))?;
    Ok(attach(shared, ws, number))
}

/// Takes over the page's early socket: our handlers replace the page's, then what it already
/// saw (the open, the frames, the welcome among them) is handed to the member in order, in a
/// microtask, so before any later event of the socket (those are tasks).
fn adopt_socket(shared: &Shared, early: EarlySocket, number: u64) -> Socket {
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
        let Some(shared) = weak.upgrade() else { return };
        let live = shared
            .borrow()
            .socket
            .as_ref()
            .is_some_and(|s| s.number == number);
        if !live {
            return;
        }
        if opened {
            with_state(&shared, |state| state.member.signalling_open(now()));
        }
        for text in messages {
            with_state(&shared, |state| server_frame(state, &text));
        }
    });
    socket
}

/// A frame from the signalling server, to the member; one it cannot read is told to the page.
fn server_frame(state: &mut State, text: &str) {
    match frames::server_frame(text) {
        Ok(frame) => state.member.handle_server_frame(now(), frame),
        Err(err) => state.outbox.push(to_js(&DriverError {
            kind: "error",
            code: "bad_server_frame",
            message: err.to_string(),
        })),
    }
}

/// The driver's own `error` event for the page.
#[derive(Serialize)]
struct DriverError {
    #[serde(rename = "type")]
    kind: &'static str,
    code: &'static str,
    message: String,
}

/// Our handlers on `ws`: its open, frames and close go to the member while it is the current
/// socket.
fn attach(shared: &Shared, ws: WebSocket, number: u64) -> Socket {
    let weak = Rc::downgrade(shared);
    // Events of a socket the driver has since replaced are ignored.
    let current = move |weak: &Weak<RefCell<State>>| {
        let shared = weak.upgrade()?;
        let live = shared
            .borrow()
            .socket
            .as_ref()
            .is_some_and(|s| s.number == number);
        live.then_some(shared)
    };
    let on_open = Closure::<dyn FnMut()>::new({
        let weak = weak.clone();
        move || {
            if let Some(shared) = current(&weak) {
                with_state(&shared, |state| state.member.signalling_open(now()));
            }
        }
    });
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new({
        let weak = weak.clone();
        move |event: MessageEvent| {
            let (Some(shared), Some(text)) = (current(&weak), event.data().as_string()) else {
                return;
            };
            with_state(&shared, |state| server_frame(state, &text));
        }
    });
    let on_close = Closure::<dyn FnMut(CloseEvent)>::new(move |event: CloseEvent| {
        if let Some(shared) = current(&weak) {
            with_state(&shared, |state| {
                if let Some(socket) = state.socket.take() {
                    socket.shut_down();
                }
                let detail = format!("signalling closed ({} {})", event.code(), event.reason());
                state.member.signalling_closed(now(), &detail);
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

/// Reports a transport event to the member (if the client still exists).
fn tell(weak: &Weak<RefCell<State>>, transport: TransportId, event: TransportEvent) {
    if let Some(shared) = weak.upgrade() {
        with_state(&shared, |state| {
            state.member.handle_transport(now(), transport, event)
        });
    }
}

fn run_command(state: &mut State, shared: &Shared, command: Command) {
    match command {
        Command::OpenPeerConnection {
            transport,
            offer,
            ice_servers,
        } => match open_peer_connection(
            shared,
            transport,
            &ice_servers,
            state.relay_only,
            state.certificate.get(),
        ) {
            Ok(pc) => {
                let connection = pc.pc.clone();
                state.pcs.insert(transport, pc);
                if offer {
                    let weak = Rc::downgrade(shared);
                    spawn_local(async move {
                        relay_description(&weak, transport, &connection, RtcSdpType::Offer).await;
                    });
                }
            }
            Err(err) => {
                let at = now();
                state
                    .member
                    .handle_transport(at, transport, TransportEvent::Failed(err));
            }
        },
        Command::ApplyRemoteSignal { transport, data } => {
            let Some(pc) = state.pcs.get(&transport).map(|p| p.pc.clone()) else {
                return;
            };
            let weak = Rc::downgrade(shared);
            spawn_local(async move {
                apply_signal(&weak, transport, &pc, data).await;
            });
        }
        Command::ClosePeerConnection { transport } => {
            if let Some(pc) = state.pcs.remove(&transport) {
                pc.shut_down();
            }
        }
    }
}

/// Applies a remote description (answering an offer) or candidate, telling the member what
/// came of it.
async fn apply_signal(
    weak: &Weak<RefCell<State>>,
    transport: TransportId,
    pc: &RtcPeerConnection,
    data: SignalData,
) {
    match data {
        SignalData::Sdp { sdp } => {
            let kind = match sdp.kind {
                SdpKind::Offer => RtcSdpType::Offer,
                SdpKind::Answer => RtcSdpType::Answer,
            };
            let desc = RtcSessionDescriptionInit::new(kind);
            desc.set_sdp(&sdp.sdp);
            if let Err(e) = JsFuture::from(pc.set_remote_description(&desc)).await {
                let err = js_err("setRemoteDescription", e);
                return tell(weak, transport, TransportEvent::Failed(err));
            }
            tell(weak, transport, TransportEvent::RemoteDescriptionSet);
            if kind == RtcSdpType::Offer {
                relay_description(weak, transport, pc, RtcSdpType::Answer).await;
            }
        }
        SignalData::Candidate {
            candidate,
            sdp_mid,
            sdp_m_line_index,
        } => {
            let init = RtcIceCandidateInit::new(&candidate);
            init.set_sdp_mid(sdp_mid.as_deref());
            init.set_sdp_m_line_index(sdp_m_line_index);
            // A candidate the browser cannot use (another address family) is not fatal.
            let _ =
                JsFuture::from(pc.add_ice_candidate_with_opt_rtc_ice_candidate_init(Some(&init)))
                    .await;
        }
    }
}

/// Creates our offer or answer, relays it at once, then waits for the browser to apply it
/// here: the peer works on it meanwhile (an answer or candidate that comes back first waits in
/// the connection's operations chain, which keeps the order). Setting it locally takes
/// Chromium 2–15 ms, off a join's critical path this way.
async fn relay_description(
    weak: &Weak<RefCell<State>>,
    transport: TransportId,
    pc: &RtcPeerConnection,
    kind: RtcSdpType,
) {
    let created = match kind {
        RtcSdpType::Offer => JsFuture::from(pc.create_offer()).await,
        _ => JsFuture::from(pc.create_answer()).await,
    };
    let sdp = match created {
        Ok(created) => Reflect::get(&created, &"sdp".into())
            .ok()
            .and_then(|s| s.as_string()),
        Err(e) => {
            let err = js_err("create description", e);
            return tell(weak, transport, TransportEvent::Failed(err));
        }
    };
    let Some(sdp) = sdp else {
        let err = "created description has no sdp".to_owned();
        return tell(weak, transport, TransportEvent::Failed(err));
    };
    let desc = RtcSessionDescriptionInit::new(kind);
    desc.set_sdp(&sdp);
    // Started before the description leaves, so it is first in the operations chain.
    let applied = JsFuture::from(pc.set_local_description(&desc));
    let kind = if kind == RtcSdpType::Offer {
        SdpKind::Offer
    } else {
        SdpKind::Answer
    };
    let data = SignalData::Sdp {
        sdp: Sdp { kind, sdp },
    };
    tell(weak, transport, TransportEvent::LocalSignal(data));
    if let Err(e) = applied.await {
        let err = js_err("setLocalDescription", e);
        tell(weak, transport, TransportEvent::Failed(err));
    }
}

/// Creates the RTCPeerConnection and its data channel. Both sides create the same
/// pre-negotiated channel (id 0), so neither waits for an `ondatachannel` announcement.
fn open_peer_connection(
    shared: &Shared,
    transport: TransportId,
    ice_servers: &[IceServer],
    relay_only: bool,
    certificate: Option<JsValue>,
) -> Result<Pc, String> {
    let config = RtcConfiguration::new();
    if let Some(certificate) = certificate {
        config.set_certificates(&js_sys::Array::of1(&certificate));
    }
    if relay_only {
        config.set_ice_transport_policy(RtcIceTransportPolicy::Relay);
    }
    config.set_ice_servers(&to_js(ice_servers));
    let pc = RtcPeerConnection::new_with_configuration(&config)
        .map_err(|e| js_err("RTCPeerConnection", e))?;
    let init = RtcDataChannelInit::new();
    init.set_ordered(false);
    init.set_max_retransmits(0);
    init.set_negotiated(true);
    init.set_id(0);
    let channel = pc.create_data_channel_with_data_channel_dict("ackwire", &init);
    channel.set_binary_type(RtcDataChannelType::Arraybuffer);

    let weak = Rc::downgrade(shared);
    let on_candidate = Closure::<dyn FnMut(RtcPeerConnectionIceEvent)>::new({
        let weak = weak.clone();
        move |event: RtcPeerConnectionIceEvent| {
            if let Some(c) = event.candidate() {
                let data = SignalData::Candidate {
                    candidate: c.candidate(),
                    sdp_mid: c.sdp_mid(),
                    sdp_m_line_index: c.sdp_m_line_index(),
                };
                tell(&weak, transport, TransportEvent::LocalSignal(data));
            }
        }
    });
    let on_ice = Closure::<dyn FnMut()>::new({
        let weak = weak.clone();
        let pc = pc.clone();
        move || {
            let state = match pc.ice_connection_state() {
                RtcIceConnectionState::Checking => IceState::Checking,
                RtcIceConnectionState::Connected => IceState::Connected,
                RtcIceConnectionState::Completed => IceState::Completed,
                RtcIceConnectionState::Disconnected => IceState::Disconnected,
                RtcIceConnectionState::Failed => IceState::Failed,
                RtcIceConnectionState::Closed => IceState::Closed,
                _ => IceState::New,
            };
            tell(&weak, transport, TransportEvent::Ice(state));
        }
    });
    let on_open = Closure::<dyn FnMut()>::new({
        let weak = weak.clone();
        let pc = pc.clone();
        move || {
            tell(&weak, transport, TransportEvent::ChannelOpen);
            // Which path ICE chose (host, srflx, relay): for the player and the dashboard. The
            // stats may name the chosen pair a moment after the channel opens (the controlled
            // side, through a relay): ask again until they do, while the connection lives.
            let (weak, pc) = (weak.clone(), pc.clone());
            spawn_local(async move {
                for _ in 0..CANDIDATE_TYPE_TRIES {
                    if weak.upgrade().is_none() {
                        return;
                    }
                    if let Some(kind) = candidate_type(&pc).await {
                        tell(&weak, transport, TransportEvent::CandidateType(kind));
                        return;
                    }
                    sleep(CANDIDATE_TYPE_RETRY_MS).await;
                }
            });
        }
    });
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new({
        let weak = weak.clone();
        move |event: MessageEvent| {
            let Some(shared) = weak.upgrade() else {
                return;
            };
            let bytes = Uint8Array::new(&event.data()).to_vec();
            with_state(&shared, |state| {
                // Refused datagrams change nothing; the member counts them per link.
                let _ = state
                    .member
                    .receive(now(), Route::WebRtc(transport), &bytes);
            });
        }
    });
    let on_close = Closure::<dyn FnMut()>::new(move || {
        tell(&weak, transport, TransportEvent::ChannelClosed);
    });
    pc.set_onicecandidate(Some(on_candidate.as_ref().unchecked_ref()));
    pc.set_oniceconnectionstatechange(Some(on_ice.as_ref().unchecked_ref()));
    channel.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    channel.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    channel.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    Ok(Pc {
        pc,
        channel,
        _callbacks: vec![
            Box::new(on_candidate),
            Box::new(on_ice),
            Box::new(on_open),
            Box::new(on_message),
            Box::new(on_close),
        ],
    })
}

/// Times the candidate type is asked for after the channel opens, and the wait between.
const CANDIDATE_TYPE_TRIES: u32 = 40;
const CANDIDATE_TYPE_RETRY_MS: i32 = 250;

/// Resolves after `ms` milliseconds (the browser's timer).
async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = JsFuture::from(promise).await;
}

/// The path type of the pair ICE chose (the transport's `selectedCandidatePairId` where the
/// browser reports it, else a pair marked `selected` (Firefox) or nominated and succeeded):
/// `relay` when either end of it is a TURN relay, so a path relayed by the peer's TURN
/// allocation (ours reaching it from a NAT-mapped, `prflx`, address) says so on both sides;
/// otherwise our local candidate's type. `None` while the stats name no such pair yet.
async fn candidate_type(pc: &RtcPeerConnection) -> Option<String> {
    let report = JsFuture::from(pc.get_stats()).await.ok()?;
    let get = |obj: &JsValue, key: &str| Reflect::get(obj, &key.into()).ok();
    let text = |obj: &JsValue, key: &str| get(obj, key).and_then(|v| v.as_string());
    let flag = |obj: &JsValue, key: &str| get(obj, key).and_then(|v| v.as_bool()) == Some(true);
    let lookup: Function = get(&report, "get")?.dyn_into().ok()?;
    let by_id = |id: JsValue| {
        lookup
            .call1(&report, &id)
            .ok()
            .filter(|v| !v.is_undefined())
    };
    let mut chosen = None;
    for entry in js_sys::try_iter(&report).ok()??.flatten() {
        let stats = Reflect::get_u32(&entry, 1).ok()?;
        match text(&stats, "type").as_deref() {
            Some("transport") => {
                if let Some(pair) = get(&stats, "selectedCandidatePairId").and_then(&by_id) {
                    chosen = Some(pair);
                    break;
                }
            }
            Some("candidate-pair")
                if flag(&stats, "selected")
                    || (flag(&stats, "nominated")
                        && text(&stats, "state").as_deref() == Some("succeeded")) =>
            {
                chosen = Some(stats);
            }
            _ => {}
        }
    }
    let chosen = chosen?;
    let kind = |end: &str| {
        get(&chosen, end)
            .and_then(&by_id)
            .and_then(|c| text(&c, "candidateType"))
    };
    let local = kind("localCandidateId")?;
    if kind("remoteCandidateId").as_deref() == Some("relay") {
        return Some("relay".to_owned());
    }
    Some(local)
}

/// `n` bytes from the browser's CSPRNG: the instance id, cookie secret and backoff seed.
fn random_bytes<const N: usize>() -> Result<[u8; N], String> {
    let mut bytes = [0u8; N];
    web_sys::window()
        .and_then(|w| w.crypto().ok())
        .ok_or("no crypto")?
        .get_random_values_with_u8_array(&mut bytes)
        .map_err(|e| js_err("crypto.getRandomValues", e))?;
    Ok(bytes)
}

fn js_err(context: &str, err: JsValue) -> String {
    format!(
        "{context}: {}",
        err.as_string().unwrap_or_else(|| format!("{err:?}"))
    )
}
