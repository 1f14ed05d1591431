//! The browser driver (wasm32): a thin adapter around the room member
//! (`ackwire_room::member`), on web-sys.
//!
//! It owns the clock (`performance.now()`), one `setTimeout` timer, the signalling WebSocket
//! ([`signalling`]) and one RTCPeerConnection with its data channel per WebRTC link attempt
//! ([`webrtc`]), or one WebTransport session ([`webtransport`]) or WebSocket ([`websocket`])
//! per link attempt to a host room's host; it moves bytes and events between them and the
//! member (its outputs through the loop both drivers share, [`outputs`](crate::outputs)), and
//! queues the member's events for the [`Room`](crate::Room). Every decision about links — who
//! offers, when to retry, what a failure means — is the member's, shared with the native
//! driver.
//!
//! All state sits in one `Rc<RefCell<State>>`. Browser callbacks borrow it briefly (through
//! [`with_state`]), carry out what the member asked for and release it; nothing here calls
//! the application while it is borrowed (events wait in the [`Inbox`] and wake whoever waits
//! for them in a later microtask), so an application may call back into the room from any
//! event handler.

mod frames;
mod signalling;
mod webrtc;
mod websocket;
mod webtransport;

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

use ackwire_room::member::{
    Command, Event, Member, MemberConfig, MemberFrame, PeerId, Route, TransportEvent, TransportId,
};
use ackwire_signalling::{PeerKind, Role, RoomUrl, UrlJoin};
use js_sys::Reflect;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::WebSocket;

use crate::config::RoomConfig;
use crate::error::JoinError;
use crate::outputs::{self, Carrier};

/// Leaving: the links' goodbyes get this long to go out (as the native driver).
const LEAVE_GRACE: Duration = Duration::from_millis(500);

/// The early socket, until the member's first join adopts (or refuses) it.
struct Early {
    ws: WebSocket,
    holder: JsValue,
}

/// The member's events until the room takes them.
#[derive(Default)]
struct Inbox {
    events: VecDeque<Event>,
    /// Channels the game drains with [`Driver::receive`] (bit per channel): their messages
    /// no longer come out of `poll_event` and `next_event`.
    separated: u64,
    /// Whoever waits in [`Driver::next_event`].
    waker: Option<Waker>,
    /// The room was closed: once empty, no event comes any more.
    closed: bool,
    /// Events queued so far, and whoever waits for the next one (`Room::joined`).
    queued: u64,
    watchers: Vec<Waker>,
}

impl Inbox {
    /// Wakes whoever waits for an event (`next_event`) or for a change (`Room::joined`).
    fn wake(&mut self) {
        self.waker
            .take()
            .into_iter()
            .chain(self.watchers.drain(..))
            .for_each(Waker::wake);
    }

    /// The oldest event that is not a message of a separated channel.
    fn pop(&mut self) -> Option<Event> {
        let separated = self.separated;
        let at = self.events.iter().position(|e| {
            !matches!(e, Event::Message { channel, .. }
                if separated & 1u64.checked_shl(u32::from(*channel)).unwrap_or(0) != 0)
        })?;
        self.events.remove(at)
    }
}

type Shared = Rc<RefCell<State>>;

struct State {
    url: RoomUrl,
    early: Option<Early>,
    relay_only: bool,
    member: Member,
    socket: Option<signalling::Socket>,
    sockets_opened: u64,
    pcs: HashMap<TransportId, webrtc::Pc>,
    /// A client's sessions and WebSockets to its host (one, and any closing).
    to_host: Vec<(TransportId, ToHost)>,
    inbox: Inbox,
    timer: Option<i32>,
    tick: Option<Closure<dyn FnMut()>>,
    /// The DTLS certificate every RTCPeerConnection of this room uses.
    certificate: webrtc::Certificate,
    /// The early socket's holder, whose peer connections (offered while the driver loaded)
    /// the member's first links may adopt; none once the early socket's frames were handed
    /// over, or it was not adopted.
    early_links: Option<JsValue>,
    /// Closed: sockets and peer connections are gone, and no timer is armed again.
    shut: bool,
    /// [`Driver::leave`] started the leaving, which shuts the state down when done.
    leaving: bool,
}

impl State {
    /// Closes every socket and peer connection and stops the timer.
    fn shut_down(&mut self) {
        self.shut = true;
        webrtc::release_early(self);
        if let (Some(id), Some(window)) = (self.timer.take(), web_sys::window()) {
            window.clear_timeout_with_handle(id);
        }
        for (_, pc) in self.pcs.drain() {
            pc.shut_down();
        }
        for (_, transport) in self.to_host.drain(..) {
            transport.shut_down();
        }
        if let Some(socket) = self.socket.take() {
            socket.shut_down();
        }
        if let Some(early) = self.early.take() {
            let _ = early.ws.close();
        }
        self.inbox.closed = true;
        self.inbox.wake();
    }
}

/// The driver's clock: `performance.now()`, milliseconds since the page's navigation.
fn now() -> Duration {
    let ms = web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0);
    Duration::from_secs_f64(ms.max(0.0) / 1000.0)
}

/// Borrows the state, runs `f` at `now`, carries out what the member asked for and re-arms
/// the timer, then releases the state. Nothing in here calls the application.
fn with_state<R>(shared: &Shared, f: impl FnOnce(&mut State, Duration) -> R) -> R {
    let mut state = shared.borrow_mut();
    let result = f(&mut state, now());
    flush(&mut state, shared);
    schedule(&mut state);
    result
}

/// Runs `f` on the state if the room still exists (browser callbacks hold it weakly).
fn with_weak(weak: &WeakState, f: impl FnOnce(&mut State, Duration)) {
    if let Some(shared) = weak.upgrade() {
        with_state(&shared, f);
    }
}

type WeakState = std::rc::Weak<RefCell<State>>;

/// Reports a transport event to the member (if the room still exists). The member ignores
/// events of a transport it is done with.
fn tell(weak: &WeakState, transport: TransportId, event: TransportEvent) {
    with_weak(weak, |state, now| {
        state.member.handle_transport(now, transport, event)
    });
}

/// Hands a datagram that came on `route` to the member, if the room still exists (whether
/// it does comes back). Refused datagrams change nothing; the member counts them per link.
fn deliver(weak: &WeakState, route: Route, datagram: &[u8]) -> bool {
    let Some(shared) = weak.upgrade() else {
        return false;
    };
    with_state(&shared, |state, now| {
        let _ = state.member.receive(now, route, datagram);
    });
    true
}

/// Carries out what the member asked for.
fn flush(state: &mut State, shared: &Shared) {
    let mut carry = Carry {
        state,
        shared,
        told: false,
    };
    outputs::carry_out(&mut carry);
    // The waiting task runs in a later microtask, after this borrow is released.
    if carry.told {
        carry.state.inbox.wake();
    }
}

/// The page's socket and peer connections, carrying out the member's outputs.
struct Carry<'a> {
    state: &'a mut State,
    shared: &'a Shared,
    /// An event was queued: whoever waits for one is woken once the outputs are done.
    told: bool,
}

impl Carrier for Carry<'_> {
    fn member(&mut self) -> &mut Member {
        &mut self.state.member
    }

    fn open_signalling(&mut self, join: Option<UrlJoin>) {
        signalling::open(self.state, self.shared, join);
    }

    fn close_signalling(&mut self) {
        if let Some(socket) = self.state.socket.take() {
            socket.shut_down();
        }
    }

    fn send_frame(&mut self, frame: &MemberFrame) {
        signalling::send(self.state, frame);
    }

    fn run_command(&mut self, command: Command) {
        // A session's or WebSocket's close here; a peer connection's goes on.
        if let Command::CloseTransport { transport } = command
            && let Some(at) = self.state.to_host.iter().position(|(t, _)| *t == transport)
        {
            return self.state.to_host.swap_remove(at).1.shut_down();
        }
        let (state, shared) = (&mut *self.state, self.shared);
        let (transport, opened) = match command {
            Command::OpenWebTransport {
                transport,
                peer,
                service,
            } => (
                transport,
                webtransport::open(state, shared, transport, peer, &service),
            ),
            Command::OpenWebSocket { transport, service } => (
                transport,
                websocket::open(state, shared, transport, &service),
            ),
            // A browser never hosts a host room's WebTransport, nor its WebSocket.
            Command::AcceptWebTransport { transport, .. }
            | Command::AcceptWebSocket { transport, .. } => (
                transport,
                Err("a browser serves neither WebTransport nor a WebSocket".to_owned()),
            ),
            command => return webrtc::run_command(state, shared, command),
        };
        // A session or WebSocket that cannot even start (no token, a URL the page may not
        // open) is the link's failed attempt.
        if let Err(err) = opened {
            let failed = TransportEvent::Failed(err);
            state.member.handle_transport(now(), transport, failed);
        }
    }

    fn transmit(&mut self, route: Route, datagram: &[u8]) {
        // Browsers have no UDP sockets; the member never routes a browser's link there.
        match route {
            Route::WebRtc(transport) => {
                if let Some(pc) = self.state.pcs.get(&transport) {
                    pc.send(datagram);
                }
            }
            Route::WebTransport(transport) | Route::WebSocket(transport) => {
                if let Some((_, to_host)) = self.state.to_host.iter().find(|(t, _)| *t == transport)
                {
                    to_host.send(datagram);
                }
            }
            Route::Udp(_) => {}
        }
    }

    fn queue_event(&mut self, event: Event) {
        self.state.inbox.events.push_back(event);
        self.state.inbox.queued += 1;
        self.told = true;
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
    let Some(at) = state.member.poll_timeout().filter(|_| !state.shut) else {
        return;
    };
    let delay = (at.saturating_sub(now()).as_secs_f64() * 1000.0).ceil() as i32;
    state.timer = window
        .set_timeout_with_callback_and_timeout_and_arguments_0(tick.as_ref().unchecked_ref(), delay)
        .ok();
}

/// A client's transport to its host beside WebRTC (one list for both: a page has one, and any
/// closing).
enum ToHost {
    Session(webtransport::Session),
    Socket(websocket::Socket),
}

impl ToHost {
    fn send(&self, datagram: &[u8]) {
        match self {
            ToHost::Session(session) => session.send(datagram),
            ToHost::Socket(socket) => socket.send(datagram),
        }
    }

    fn shut_down(self) {
        match self {
            ToHost::Session(session) => session.shut_down(),
            ToHost::Socket(socket) => socket.shut_down(),
        }
    }
}

/// The room's handle on its driver.
pub(crate) struct Driver {
    shared: Shared,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.try_borrow();
        f.debug_struct("Driver")
            .field("member", &state.as_ref().map(|s| &s.member).ok())
            .finish_non_exhaustive()
    }
}

impl Driver {
    /// Checks what the browser offers, makes the member and starts it: its first output opens
    /// (or adopts) the signalling socket.
    pub(crate) fn start(url: RoomUrl, config: RoomConfig) -> Result<Driver, JoinError> {
        web_sys::window().ok_or_else(|| JoinError::Browser("no window".into()))?;
        let options = config.browser;
        // A host room's client links to its host over WebTransport or the host's WebSocket
        // without WebRTC (WebKitGTK has no RTCPeerConnection); anyone else links over WebRTC.
        let webrtc = options.webrtc && global_function("RTCPeerConnection");
        if !webrtc && config.role != Role::Client {
            return Err(JoinError::Browser(
                "no WebRTC (RTCPeerConnection, or BrowserOptions::webrtc): only a host room's client joins without it".into(),
            ));
        }
        let random = random_bytes::<48>().map_err(JoinError::Browser)?;
        // An early socket joined with its own instance: the member joins as that one.
        let early = options.early_socket.as_ref().and_then(|e| {
            let (ws, instance) = e.parts()?;
            Some((
                Early {
                    ws,
                    holder: e.holder().clone(),
                },
                instance,
            ))
        });
        let instance = match &early {
            Some((_, instance)) => instance.clone(),
            None => {
                format!("b{}", hex(&random[..8]))
            }
        };
        let mut member_config =
            MemberConfig::new(url.room.clone(), config.app, PeerKind::Browser, instance);
        member_config.secret.copy_from_slice(&random[8..40]);
        member_config.seed = u64::from_le_bytes(random[40..48].try_into().unwrap_or_default());
        member_config.emulation = config.emulation;
        member_config.role = config.role;
        member_config.ticket = config.ticket;
        member_config.host_identity = config.host_identity;
        member_config.connection = config.connection;
        member_config.stats_period = config.stats_period;
        member_config.attempt_timeout = config.attempt_timeout;
        member_config.peer_budget = config.peer_budget;
        member_config.dials_webtransport = options.webtransport && global_function("WebTransport");
        member_config.webrtc = webrtc;
        member_config.dials_websocket = options.websocket;
        let member = match Member::new(member_config, now()) {
            Ok(member) => member,
            Err(e) => {
                // The page's socket joined as a member that will never be.
                if let Some((early, _)) = early {
                    let _ = early.ws.close();
                }
                return Err(e.into());
            }
        };
        let certificate = match &early {
            Some((early, _)) if webrtc => webrtc::Certificate::Early(early.holder.clone()),
            _ => webrtc::Certificate::Pending,
        };
        let early_links = early.as_ref().map(|(early, _)| early.holder.clone());
        let shared = Rc::new(RefCell::new(State {
            url,
            early: early.map(|(early, _)| early),
            relay_only: options.relay_only,
            member,
            socket: None,
            sockets_opened: 0,
            pcs: HashMap::new(),
            to_host: Vec::new(),
            inbox: Inbox::default(),
            timer: None,
            tick: None,
            certificate,
            early_links,
            shut: false,
            leaving: false,
        }));
        if webrtc && matches!(shared.borrow().certificate, webrtc::Certificate::Pending) {
            webrtc::make_certificate(&shared);
        }
        let weak = Rc::downgrade(&shared);
        shared.borrow_mut().tick = Some(Closure::new(move || {
            with_weak(&weak, |state, now| state.member.handle_timeout(now));
        }));
        with_state(&shared, |state, now| state.member.handle_timeout(now));
        Ok(Driver { shared })
    }

    /// Runs `f` on the member at `performance.now()`, then carries out what it asked for and
    /// re-arms the timer.
    pub(crate) fn with_member<R>(&self, f: impl FnOnce(&mut Member, Duration) -> R) -> R {
        with_state(&self.shared, |state, now| f(&mut state.member, now))
    }

    pub(crate) fn poll_event(&self) -> Option<Event> {
        self.shared.borrow_mut().inbox.pop()
    }

    /// Resolves at the next event queued after this call (or the room's end). The page runs
    /// one thread: nothing is queued between the call and the future's first poll.
    pub(crate) fn change(&self) -> impl std::future::Future<Output = ()> + '_ {
        let seen = self.shared.borrow().inbox.queued;
        poll_fn(move |cx| {
            let mut state = self.shared.borrow_mut();
            let inbox = &mut state.inbox;
            if inbox.queued > seen || inbox.closed {
                Poll::Ready(())
            } else {
                inbox.watchers.push(cx.waker().clone());
                Poll::Pending
            }
        })
    }

    pub(crate) fn receive(&self, channel: u8) -> Option<(PeerId, Vec<u8>)> {
        let inbox = &mut self.shared.borrow_mut().inbox;
        inbox.separated |= 1u64.checked_shl(u32::from(channel)).unwrap_or(0);
        let events = &mut inbox.events;
        let at = events
            .iter()
            .position(|e| matches!(e, Event::Message { channel: c, .. } if *c == channel))?;
        match events.remove(at)? {
            Event::Message { peer, bytes, .. } => Some((peer, bytes)),
            _ => None,
        }
    }

    /// Cancel-safe: each poll takes an event or leaves its waker, and holds nothing between
    /// polls, so a dropped future loses no event.
    pub(crate) async fn next_event(&mut self) -> Option<Event> {
        poll_fn(|cx| {
            let mut state = self.shared.borrow_mut();
            let inbox = &mut state.inbox;
            if let Some(event) = inbox.pop() {
                Poll::Ready(Some(event))
            } else if inbox.closed {
                Poll::Ready(None)
            } else {
                inbox.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    /// Leaves: every link says goodbye (for up to [`LEAVE_GRACE`]), the server hears `leave`,
    /// then the socket and the peer connections close. A page being hidden may get no more
    /// timers: the goodbyes and the `leave` go out in the first step, before any wait.
    pub(crate) async fn close(&mut self) {
        leave(self.shared.clone()).await;
    }

    /// [`close`](Self::close) without waiting: the leaving runs on the page's event loop,
    /// and the driver, dropped meanwhile, lets it finish.
    pub(crate) fn leave(&mut self) {
        let mut state = self.shared.borrow_mut();
        if state.shut || state.leaving {
            return;
        }
        state.leaving = true;
        drop(state);
        // Closed now, so a send after this is refused at once; the goodbyes go out with it.
        self.with_member(|member, now| member.close(now));
        wasm_bindgen_futures::spawn_local(leave(self.shared.clone()));
    }

    /// Whether the room has left (or never joined): nothing more will happen in it.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.borrow().shut
    }
}

/// The leaving both [`Driver::close`] and [`Driver::leave`] run.
async fn leave(shared: Rc<RefCell<State>>) {
    if shared.borrow().shut {
        return;
    }
    let until = now() + LEAVE_GRACE;
    with_state(&shared, |state, now| state.member.close(now));
    loop {
        let wait = {
            let state = shared.borrow();
            let at = now();
            if state.shut || state.member.is_closed() || at >= until {
                break;
            }
            let next = state.member.poll_timeout().map_or(until, |t| t.min(until));
            next.saturating_sub(at)
        };
        sleep(wait).await;
        with_state(&shared, |state, now| state.member.handle_timeout(now));
    }
    // The `leave` frame was queued on the socket before its close, and goes first.
    shared.borrow_mut().shut_down();
}

impl Drop for Driver {
    /// Dropped without [`close`](Driver::close): everything closes at once. The browser's
    /// objects outlive the driver, so their handlers are detached first (a handler whose
    /// closure is gone would throw).
    fn drop(&mut self) {
        if let Ok(mut state) = self.shared.try_borrow_mut()
            && !state.leaving
        {
            state.shut_down();
            state.tick = None;
        }
    }
}

/// Resolves after `wait` (the browser's timer).
async fn sleep(wait: Duration) {
    let ms = (wait.as_secs_f64() * 1000.0).ceil() as i32;
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// `N` bytes from the browser's CSPRNG: the instance id, cookie secret and backoff seed.
fn random_bytes<const N: usize>() -> Result<[u8; N], String> {
    let mut bytes = [0u8; N];
    web_sys::window()
        .and_then(|w| w.crypto().ok())
        .ok_or("no crypto")?
        .get_random_values_with_u8_array(&mut bytes)
        .map_err(|e| js_err("crypto.getRandomValues", e))?;
    Ok(bytes)
}

/// `bytes` as lowercase hex digits: the instance id, a link's token.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A new link's token for its host: 128 random bits as 32 lowercase hex digits, the shape the
/// host takes (`ackwire_signalling::webtransport::is_token`), for a WebTransport session or a
/// WebSocket.
fn token() -> Result<String, String> {
    Ok(hex(&random_bytes::<16>()?))
}

/// Whether the page's global `name` is a function: what the browser offers (a constructor).
fn global_function(name: &str) -> bool {
    Reflect::get(&js_sys::global(), &name.into()).is_ok_and(|f| f.is_function())
}

/// `context: message` of a JS exception (a string, or an `Error`'s message; a DOMException
/// is an `Error`). No `Debug` formatting: it would bring string escaping into the bundle.
fn js_err(context: &str, err: JsValue) -> String {
    let text = err
        .as_string()
        .or_else(|| {
            err.dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
        })
        .unwrap_or_else(|| "(no message)".to_owned());
    format!("{context}: {text}")
}
