//! One WebTransport session per link attempt to a host room's host (a [`TransportId`]): its
//! datagrams carry the link, and its events go to the member.
//!
//! The bindings are our own ([`WebTransport`] below): web-sys has the API only under
//! `--cfg=web_sys_unstable_apis`, which every game would have to set. The streams are the
//! stable web-sys ones.

use std::rc::Rc;

use ackwire_room::member::{Route, ServerId, TransportEvent, TransportId};
use ackwire_signalling::{SignalData, WebTransportInfo};
use js_sys::{Array, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, spawn_local};
use web_sys::{
    ReadableStream, ReadableStreamDefaultReader, WritableStream, WritableStreamDefaultWriter,
};

use super::{Shared, State, ToHost, WeakState, deliver, js_err, now, tell, token};

#[wasm_bindgen]
extern "C" {
    /// A session (`new WebTransport(url, options)`).
    #[derive(Clone)]
    pub(super) type WebTransport;

    #[wasm_bindgen(constructor, catch)]
    fn new(url: &str, options: &Object) -> Result<WebTransport, JsValue>;

    /// Resolves once the session is established; rejects if it never is.
    #[wasm_bindgen(method, getter)]
    fn ready(this: &WebTransport) -> Promise;

    /// Settles once the session is closed (resolves when closed cleanly, rejects on error).
    #[wasm_bindgen(method, getter)]
    fn closed(this: &WebTransport) -> Promise;

    #[wasm_bindgen(method, getter)]
    fn datagrams(this: &WebTransport) -> Datagrams;

    #[wasm_bindgen(method, catch)]
    fn close(this: &WebTransport) -> Result<(), JsValue>;

    /// `WebTransportDatagramDuplexStream`.
    type Datagrams;

    #[wasm_bindgen(method, getter)]
    fn readable(this: &Datagrams) -> ReadableStream;

    #[wasm_bindgen(method, getter)]
    fn writable(this: &Datagrams) -> WritableStream;
}

/// One session to the host.
pub(super) struct Session {
    wt: WebTransport,
    /// The datagrams' writer, taken once; none if the browser would not give it.
    writer: Option<WritableStreamDefaultWriter>,
}

impl Session {
    /// Sends one datagram without waiting for it: a refused write is a lost datagram, as on
    /// a dead path (logged at debug).
    pub(super) fn send(&self, datagram: &[u8]) {
        if let Some(writer) = &self.writer {
            let written = writer.write_with_chunk(&Uint8Array::from(datagram));
            let _ = LOST.with(|lost| written.catch(lost));
        }
    }

    /// Closes the session; its task tells the member nothing more (it is no longer ours).
    pub(super) fn shut_down(self) {
        let _ = self.wt.close();
    }
}

thread_local! {
    /// The handler of refused writes: one for the page, never freed (a write may be refused
    /// after its session, or the room, is gone).
    static LOST: Closure<dyn FnMut(JsValue)> = Closure::new(|err: JsValue| {
        web_sys::console::debug_2(&"ackwire: a WebTransport datagram was lost".into(), &err);
    });
}

/// Makes the link's token and hands it to the member (which relays it to the host), then
/// dials `service` with it: the session's events come from its task ([`run`]). A session the
/// page dialed to `peer` while the driver loaded (its token sent) is adopted instead. The
/// member's `OpenWebTransport` (`Carry::run_command`, which closes sessions too).
pub(super) fn open(
    state: &mut State,
    shared: &Shared,
    transport: TransportId,
    peer: ServerId,
    service: &WebTransportInfo,
) -> Result<(), String> {
    if let Some(wt) = claim(state, peer, service) {
        start(state, shared, transport, wt);
        return Ok(());
    }
    let token = token()?;
    let url = service.session_url(&token);
    let signal = SignalData::WebTransport {
        webtransport: token,
    };
    state
        .member
        .handle_transport(now(), transport, TransportEvent::LocalSignal(signal));
    // `serverCertificateHashes` only with hashes: without, the certificate must chain to a
    // root the browser trusts.
    let options = Object::new();
    if !service.cert_hashes.is_empty() {
        let hashes = Array::new();
        for hash in &service.cert_hashes {
            let entry = Object::new();
            let _ = Reflect::set(&entry, &"algorithm".into(), &"sha-256".into());
            let _ = Reflect::set(&entry, &"value".into(), &Uint8Array::from(&hash.0[..]));
            hashes.push(&entry);
        }
        let _ = Reflect::set(&options, &"serverCertificateHashes".into(), &hashes);
    }
    let wt = WebTransport::new(&url, &options).map_err(|e| js_err("WebTransport", e))?;
    start(state, shared, transport, wt);
    Ok(())
}

/// How many datagrams a session keeps until they are read (the default is one): the host
/// connects as the session opens, and its first packets wait for the driver.
const DATAGRAMS_QUEUED: u32 = 256;

/// The session `transport` runs on from now on.
fn start(state: &mut State, shared: &Shared, transport: TransportId, wt: WebTransport) {
    let _ = Reflect::set(
        &wt.datagrams(),
        &"incomingHighWaterMark".into(),
        &DATAGRAMS_QUEUED.into(),
    );
    let writer = wt.datagrams().writable().get_writer().ok();
    let session = Session {
        wt: wt.clone(),
        writer,
    };
    state.to_host.push((transport, ToHost::Session(session)));
    spawn_local(run(Rc::downgrade(shared), transport, wt));
}

/// The session the page dialed to `peer` while the driver loaded (`earlyLinks` in
/// `web/ackwire.js`), if it dialed `service` (a host that changed its service since gets a
/// new session; the page's is closed).
fn claim(state: &State, peer: ServerId, service: &WebTransportInfo) -> Option<WebTransport> {
    let holder = state.early_links.as_ref()?;
    let claim: js_sys::Function = Reflect::get(holder, &"claimSession".into())
        .ok()?
        .dyn_into()
        .ok()?;
    // A Number, as the page read it from the welcome (ids stay far below 2^53).
    let session = claim.call1(holder, &JsValue::from_f64(peer as f64)).ok()?;
    let wt: WebTransport = Reflect::get(&session, &"wt".into()).ok()?.dyn_into().ok()?;
    let url = Reflect::get(&session, &"url".into()).ok()?.as_string()?;
    if url
        .strip_prefix(service.url.as_str())?
        .starts_with("?token=")
    {
        Some(wt)
    } else {
        let _ = wt.close();
        None
    }
}

/// The session's life: ready (or refused), its datagrams to the member until it closes,
/// then its close. Once the member closed it, it ignores what comes of it.
async fn run(weak: WeakState, transport: TransportId, wt: WebTransport) {
    // Both settle, whatever happens, and neither may reject unheard: `closed`'s handlers are
    // attached here, at once. Attached only once the datagrams' reader had ended, a session
    // the host dropped rejected `closed` first, and the page reported an unhandled
    // `WebTransportError` (seen in the host-room e2e's host restart).
    let closed = JsFuture::from(wt.closed());
    if let Err(e) = JsFuture::from(wt.ready()).await {
        tell(
            &weak,
            transport,
            TransportEvent::Failed(js_err("WebTransport", e)),
        );
        let _ = closed.await;
        return;
    }
    tell(&weak, transport, TransportEvent::ChannelOpen);
    let reader: ReadableStreamDefaultReader =
        wt.datagrams().readable().get_reader().unchecked_into();
    while let Ok(read) = JsFuture::from(reader.read()).await {
        // `{ done: true }` once the session closed: no `value`.
        let value = Reflect::get(&read, &"value".into()).unwrap_or_default();
        if !value.is_object() {
            break;
        }
        let datagram = value.unchecked_into::<Uint8Array>().to_vec();
        if !deliver(&weak, Route::WebTransport(transport), &datagram) {
            return;
        }
    }
    let _ = closed.await;
    tell(&weak, transport, TransportEvent::ChannelClosed);
}
