//! One RTCPeerConnection and its data channel per link attempt (a [`TransportId`]), set up by
//! the shared policy (`ackwire_room::webrtc`); their events to the member.

use std::rc::Rc;

use ackwire_room::member::{Command, Route, ServerId, TransportEvent, TransportId};
use ackwire_room::webrtc::{DATA_CHANNEL, PATH_POLL, PATH_POLLS, ice_state, path_type};
use ackwire_signalling::{IceServer, Sdp, SdpKind, SignalData};
use js_sys::{Function, Reflect, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, spawn_local};
use web_sys::{
    MessageEvent, RtcConfiguration, RtcDataChannel, RtcDataChannelInit, RtcDataChannelState,
    RtcDataChannelType, RtcIceCandidateInit, RtcIceTransportPolicy, RtcPeerConnection,
    RtcPeerConnectionIceEvent, RtcSdpType, RtcSessionDescriptionInit,
};

use super::frames::to_js;
use super::{Shared, State, WeakState, deliver, js_err, now, sleep, tell};

/// One WebRTC link attempt: the peer connection and its data channel.
pub(super) struct Pc {
    pc: RtcPeerConnection,
    channel: RtcDataChannel,
    /// Adopted from the page with the peer's description set there: the member's copy of it
    /// (the next it hands over) is not applied again. The page's link (`settled`).
    described_early: Option<JsValue>,
    /// Browser callbacks must outlive the objects they are attached to.
    _callbacks: Vec<Box<dyn std::any::Any>>,
}

impl Pc {
    /// Sends one datagram, if the channel is open (else it is lost, as on a dead UDP path).
    pub(super) fn send(&self, datagram: &[u8]) {
        if self.channel.ready_state() == RtcDataChannelState::Open {
            let _ = self.channel.send_with_u8_array(datagram);
        }
    }

    /// Closes the connection. The browser may still fire events for it afterwards, so the
    /// handlers are detached first: their closures are dropped with this struct.
    pub(super) fn shut_down(self) {
        self.channel.set_onopen(None);
        self.channel.set_onmessage(None);
        self.channel.set_onclose(None);
        self.pc.set_onicecandidate(None);
        self.pc.set_oniceconnectionstatechange(None);
        self.channel.close();
        self.pc.close();
    }
}

/// One DTLS certificate for all of a page's links, made once: a new RTCPeerConnection
/// otherwise makes its own key pair, and its offer or answer waits for it (headless Chromium
/// here: a new connection's offer in 2.6–4 ms with the certificate given, 4.3–6.6 ms
/// without).
pub(super) enum Certificate {
    /// Made by the page's early script (`certificate` on the early socket's holder, once
    /// ready), while the driver loaded.
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
pub(super) fn make_certificate(shared: &Shared) {
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

/// Runs a transport command of the member's.
pub(super) fn run_command(state: &mut State, shared: &Shared, command: Command) {
    match command {
        Command::OpenPeerConnection {
            transport,
            peer,
            offer,
            ice_servers,
        } => {
            if claim(state, peer).is_some_and(|l| adopt(state, shared, transport, &l)) {
                return;
            }
            let certificate = state.certificate.get();
            match open(
                shared,
                transport,
                &ice_servers,
                state.relay_only,
                certificate,
            ) {
                Ok(pc) => {
                    let connection = pc.pc.clone();
                    state.pcs.insert(transport, pc);
                    if offer {
                        let weak = Rc::downgrade(shared);
                        spawn_local(async move {
                            relay_description(&weak, transport, &connection, RtcSdpType::Offer)
                                .await;
                        });
                    }
                }
                Err(err) => {
                    let at = now();
                    state
                        .member
                        .handle_transport(at, transport, TransportEvent::Failed(err));
                }
            }
        }
        Command::ApplyRemoteSignal { transport, data } => {
            let Some(adopted) = state.pcs.get_mut(&transport) else {
                return;
            };
            let weak = Rc::downgrade(shared);
            if let (SignalData::Sdp { .. }, Some(link)) = (&data, adopted.described_early.take()) {
                // The page set it before the driver came (and answered an offer): once that is
                // done, the member hears it as if it had been done here.
                spawn_local(async move {
                    let settled = Reflect::get(&link, &"settled".into()).unwrap_or_default();
                    if let Ok(settled) = settled.dyn_into::<js_sys::Promise>() {
                        let _ = JsFuture::from(settled).await;
                    }
                    tell(&weak, transport, TransportEvent::RemoteDescriptionSet);
                });
                return;
            }
            let pc = adopted.pc.clone();
            spawn_local(async move {
                apply_signal(&weak, transport, &pc, data).await;
            });
        }
        Command::CloseTransport { transport } => {
            if let Some(pc) = state.pcs.remove(&transport) {
                pc.shut_down();
            }
        }
        // WebTransport sessions' and WebSockets' (`webtransport`, `websocket`).
        Command::OpenWebTransport { .. }
        | Command::AcceptWebTransport { .. }
        | Command::OpenWebSocket { .. }
        | Command::AcceptWebSocket { .. } => {}
    }
}

/// Applies a remote description (answering an offer) or candidate, telling the member what
/// came of it.
async fn apply_signal(
    weak: &WeakState,
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
        // A WebTransport session's or WebSocket's token: no peer connection's business.
        SignalData::WebTransport { .. } | SignalData::WebSocket { .. } => {}
    }
}

/// Creates our offer or answer, relays it at once, then waits for the browser to apply it
/// here: the peer works on it meanwhile (an answer or candidate that comes back first waits in
/// the connection's operations chain, which keeps the order). Setting it locally takes
/// Chromium 2–15 ms, off a join's critical path this way.
async fn relay_description(
    weak: &WeakState,
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

/// Creates the RTCPeerConnection and its data channel ([`DATA_CHANNEL`]: both sides create
/// the same pre-negotiated channel, so neither waits for an `ondatachannel` announcement).
fn open(
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
    init.set_ordered(DATA_CHANNEL.ordered);
    init.set_max_retransmits(DATA_CHANNEL.max_retransmits);
    init.set_negotiated(true);
    init.set_id(DATA_CHANNEL.id);
    let channel = pc.create_data_channel_with_data_channel_dict(DATA_CHANNEL.label, &init);
    channel.set_binary_type(RtcDataChannelType::Arraybuffer);
    Ok(attach(shared, transport, pc, channel))
}

/// Our handlers on a peer connection and its channel: their events go to the member as
/// `transport`'s.
fn attach(
    shared: &Shared,
    transport: TransportId,
    pc: RtcPeerConnection,
    channel: RtcDataChannel,
) -> Pc {
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
            // By its name, as both stacks spell the states (`ackwire_room::webrtc`).
            let name = Reflect::get(&pc, &"iceConnectionState".into())
                .ok()
                .and_then(|s| s.as_string())
                .unwrap_or_default();
            tell(&weak, transport, TransportEvent::Ice(ice_state(&name)));
        }
    });
    let on_open = Closure::<dyn FnMut()>::new({
        let weak = weak.clone();
        let pc = pc.clone();
        move || opened(&weak, transport, &pc)
    });
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new({
        let weak = weak.clone();
        move |event: MessageEvent| {
            let bytes = Uint8Array::new(&event.data()).to_vec();
            deliver(&weak, Route::WebRtc(transport), &bytes);
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
    Pc {
        pc,
        channel,
        described_early: None,
        _callbacks: vec![
            Box::new(on_candidate),
            Box::new(on_ice),
            Box::new(on_open),
            Box::new(on_message),
            Box::new(on_close),
        ],
    }
}

/// The channel of `transport` opened: the member hears it, then which path ICE chose (host,
/// srflx, relay), for the player and the dashboard. The stats may name the chosen pair a
/// moment after the channel opens (the controlled side, through a relay): asked again until
/// they do, while the connection lives.
fn opened(weak: &WeakState, transport: TransportId, pc: &RtcPeerConnection) {
    tell(weak, transport, TransportEvent::ChannelOpen);
    let (weak, pc) = (weak.clone(), pc.clone());
    spawn_local(async move {
        for _ in 0..PATH_POLLS {
            if weak.upgrade().is_none() {
                return;
            }
            if let Some(path) = selected_path(&pc).await {
                tell(&weak, transport, TransportEvent::CandidateType(path));
                return;
            }
            sleep(PATH_POLL).await;
        }
    });
}

/// The connection the page opened to `peer` while the driver loaded (`earlyLinks` in
/// `web/ackwire.js`), if there is one: the driver takes it over.
fn claim(state: &State, peer: ServerId) -> Option<JsValue> {
    let holder = state.early_links.as_ref()?;
    let claim: Function = Reflect::get(holder, &"claim".into())
        .ok()?
        .dyn_into()
        .ok()?;
    // A Number, as the page read it from the welcome (ids stay far below 2^53).
    let link = claim.call1(holder, &JsValue::from_f64(peer as f64)).ok()?;
    link.is_object().then_some(link)
}

/// Takes over a connection the page opened early as `transport`: our handlers replace the
/// page's, and once what the page started on it is done (its offer or answer sent, maybe the
/// peer's description and candidates applied), the member hears how far ICE and the channel
/// got, as it would have heard it. `false` if the page's object is not a connection (the
/// driver then opens its own).
fn adopt(state: &mut State, shared: &Shared, transport: TransportId, link: &JsValue) -> bool {
    let part = |name: &str| Reflect::get(link, &name.into()).unwrap_or_default();
    let (Ok(pc), Ok(channel), Ok(settled)) = (
        part("pc").dyn_into::<RtcPeerConnection>(),
        part("channel").dyn_into::<RtcDataChannel>(),
        part("settled").dyn_into::<js_sys::Promise>(),
    ) else {
        return false;
    };
    let mut adopted = attach(shared, transport, pc.clone(), channel.clone());
    adopted.described_early = part("described").is_truthy().then(|| link.clone());
    state.pcs.insert(transport, adopted);
    let weak = Rc::downgrade(shared);
    let link = link.clone();
    spawn_local(async move {
        let _ = JsFuture::from(settled).await;
        if let Some(err) = Reflect::get(&link, &"error".into())
            .ok()
            .and_then(|e| e.as_string())
        {
            return tell(&weak, transport, TransportEvent::Failed(err));
        }
        // What our handlers would have said had they been there: the ICE state, the open, and
        // what the channel carried meanwhile (the peer's first handshake packet, if its end
        // opened first), all before any later event of theirs (those are tasks).
        let open = channel.ready_state() == RtcDataChannelState::Open;
        for (target, handler) in [
            (JsValue::from(pc), "oniceconnectionstatechange"),
            (JsValue::from(channel), if open { "onopen" } else { "" }),
        ] {
            if let Ok(f) =
                Reflect::get(&target, &handler.into()).and_then(|f| f.dyn_into::<Function>())
            {
                let _ = f.call0(&target);
            }
        }
        let received = Reflect::get(&link, &"received".into()).unwrap_or_default();
        for data in js_sys::Array::from(&received).iter() {
            let bytes = Uint8Array::new(&data).to_vec();
            deliver(&weak, Route::WebRtc(transport), &bytes);
        }
    });
    true
}

/// The page's early connections no member claimed are closed, and no more are made.
pub(super) fn release_early(state: &mut State) {
    let Some(holder) = state.early_links.take() else {
        return;
    };
    if let Some(release) = Reflect::get(&holder, &"release".into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
    {
        let _ = release.call0(&holder);
    }
}

/// The path of the pair ICE chose ([`path_type`] of its two ends): the transport's
/// `selectedCandidatePairId` where the browser reports it, else a pair marked `selected`
/// (Firefox) or nominated and succeeded. `None` while the stats name no such pair yet.
async fn selected_path(pc: &RtcPeerConnection) -> Option<String> {
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
    let remote = kind("remoteCandidateId").unwrap_or_default();
    Some(path_type(&local, &remote))
}
