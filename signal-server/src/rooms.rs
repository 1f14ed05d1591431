//! Rooms, their peers and dashboard subscribers: the server's only shared state.
//!
//! The rules of a room (who may join, resume, replace, relay and leave, and who hears of it)
//! are `ackwire_signalling::rules`, sans-IO; the hub holds one [`Room`] of them per room and
//! carries out what they return ([`Effect`]s): frames into the bounded per-connection queues,
//! connections to close, and news for the broker. It adds what is the server's alone: the
//! limits of a whole server (rooms, room creations per address), ids, tokens and network
//! tags (its randomness), the reconnect grace (its clock), dashboards and metrics.
//!
//! One mutex guards it all. Every operation is short and never awaits: fan-out only
//! `try_send`s into bounded per-connection queues, so a slow client can never stall the lock.
//!
//! With a broker (`--redis`, [`crate::broker`]) a room also holds the peers other instances
//! serve (mirrored from Redis): they are listed in welcomes and relayed to through the
//! broker, and what happens to local peers is told to the other instances. The broker knows
//! no hub: it tells it what the others did through [`Mirror`], which the hub implements.

use std::{
    collections::{HashMap, HashSet},
    net::{IpAddr, SocketAddr},
    sync::{
        Arc, Mutex, MutexGuard, OnceLock,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use ackwire_signalling::rules::{self, Effect, Room, Route, Shared, Takeover};
use ackwire_signalling::{
    AppInfo, LeaveReason, PeerId, PeerInfo, PeerKind, PublicKey, Resume, Role, RoomSnapshot,
    ServerFrame, WebTransportInfo,
};
use axum::extract::ws::Utf8Bytes;
use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use crate::{
    admission::Admission,
    broker::{Broker, Mirror, Record},
    config::Config,
    error::SignalError,
    metrics::{CloseCause, DropReason, Metrics},
    protocol::to_text,
    tickets::TicketSecret,
};

/// Identifies one WebSocket connection (a peer keeps its id across connections; this does not).
pub type ConnId = u64;

/// Tells a connection's task to close, and why.
#[derive(Debug, Default)]
pub struct Kick {
    cause: Mutex<Option<CloseCause>>,
    notify: Notify,
}

impl Kick {
    /// Ask the connection to close; the first cause wins.
    pub fn kick(&self, cause: CloseCause) {
        let mut slot = self.cause.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(cause);
            self.notify.notify_one();
        }
    }

    /// Resolves once [`Kick::kick`] was called, with its cause.
    pub async fn kicked(&self) -> CloseCause {
        loop {
            if let Some(cause) = *self.cause.lock().unwrap_or_else(|e| e.into_inner()) {
                return cause;
            }
            self.notify.notified().await;
        }
    }
}

/// The hub's way to reach one connection; the rules name connections by it (two links are
/// the same connection when their ids are).
#[derive(Debug, Clone)]
pub struct Link {
    /// The connection.
    pub conn: ConnId,
    tx: mpsc::Sender<Utf8Bytes>,
    /// How many frames may wait in `tx` before the client counts as not reading: `queue`, or
    /// up to the channel's capacity once [`Link::widen`] says it is a host.
    limit: Arc<AtomicUsize>,
    kick: Arc<Kick>,
}

impl Link {
    /// A link and the receiving end of its outbound queue: `queue` frames, or `most` once
    /// [`widened`](Link::widen) (a channel's capacity costs nothing until it is used).
    pub fn new(
        conn: ConnId,
        queue: usize,
        most: usize,
        kick: Arc<Kick>,
    ) -> (Self, mpsc::Receiver<Utf8Bytes>) {
        let queue = queue.max(1);
        let (tx, rx) = mpsc::channel(most.max(queue));
        let limit = Arc::new(AtomicUsize::new(queue));
        (
            Link {
                conn,
                tx,
                limit,
                kick,
            },
            rx,
        )
    }

    /// Lets the whole capacity queue: a host receives for all its clients at once (every
    /// offer and candidate when they come back after its restart).
    pub fn widen(&self) {
        self.limit.store(self.tx.max_capacity(), Ordering::Relaxed);
    }

    /// Queue a frame, or say why it was dropped (and count it). A full queue means the
    /// client stopped reading, so it is closed at once (its task stops waiting on the socket).
    fn send(&self, text: &Utf8Bytes, metrics: &Metrics) -> Result<(), DropReason> {
        let queued = self.tx.max_capacity() - self.tx.capacity();
        let reason = if self.tx.is_closed() {
            DropReason::Closing
        } else if queued >= self.limit.load(Ordering::Relaxed) {
            DropReason::QueueFull
        } else {
            match self.tx.try_send(text.clone()) {
                Ok(()) => return Ok(()),
                Err(mpsc::error::TrySendError::Full(_)) => DropReason::QueueFull,
                Err(mpsc::error::TrySendError::Closed(_)) => DropReason::Closing,
            }
        };
        if matches!(reason, DropReason::QueueFull) {
            self.kick.kick(CloseCause::SlowReader);
        }
        metrics.frame_dropped(reason);
        Err(reason)
    }
}

impl PartialEq for Link {
    fn eq(&self, other: &Link) -> bool {
        self.conn == other.conn
    }
}

#[derive(Debug)]
struct Subscriber {
    /// `None` watches every room.
    room: Option<String>,
    link: Link,
}

#[derive(Debug, Default)]
struct State {
    rooms: HashMap<String, Room<Link>>,
    subscribers: HashMap<ConnId, Subscriber>,
}

impl State {
    /// Whether anyone watches `room` (or every room).
    fn watched(&self, room: &str) -> bool {
        self.subscribers
            .values()
            .any(|s| s.room.as_deref().is_none_or(|r| r == room))
    }

    fn notify_subscribers(&self, metrics: &Metrics, room: &str, text: &Utf8Bytes) {
        for sub in self.subscribers.values() {
            if sub.room.as_deref().is_none_or(|r| r == room) {
                let _ = sub.link.send(text, metrics);
            }
        }
    }
}

/// What a successful join hands back to the connection (the rules' answer, its effects
/// carried out).
pub type Joined = rules::Joined<Link>;

/// What a peer asks for when it joins.
#[derive(Debug)]
pub struct JoinRequest {
    /// Validated room name.
    pub room: String,
    /// Browser or native.
    pub kind: PeerKind,
    /// A mesh peer, or a host room's host or client.
    pub role: Role,
    /// Natives' UDP address.
    pub udp_addr: Option<SocketAddr>,
    /// Natives' public key for encrypted UDP links (only with `udp_addr`).
    pub udp_key: Option<PublicKey>,
    /// A host's WebTransport service (hosts only).
    pub webtransport: Option<WebTransportInfo>,
    /// The address the connection is counted under ([`Permit::client`](crate::admission::Permit::client)): a join that creates
    /// a room spends one of its room creations.
    pub client: IpAddr,
    /// Validated program instance id; a new peer with it replaces the room's old one.
    pub instance: Option<String>,
    /// The identity of the join's ticket (a server that requires tickets checked it); a new
    /// peer with it replaces the room's old one, as an instance does.
    pub identity: Option<String>,
    /// The validated application it plays: the room's first member fixes the room's, and a
    /// fresh join must declare the same (a resume is not checked).
    pub app: Option<AppInfo>,
    /// Earlier credentials, if resuming (the instance is then ignored).
    pub resume: Option<Resume>,
    /// The id the broker reserved for a new peer (room size and room limits were checked
    /// there, across instances); `None` without a broker.
    pub id: Option<PeerId>,
    /// The peer the broker's reservation found holding `identity`, on any instance: the join
    /// replaces it.
    pub replaces: Option<PeerId>,
}

/// All rooms and subscribers.
#[derive(Debug)]
pub struct Hub {
    config: Arc<Config>,
    metrics: Arc<Metrics>,
    admission: Arc<Admission>,
    state: Mutex<State>,
    next_peer: AtomicU64,
    next_conn: AtomicU64,
    /// Keys the network tags ([`PeerInfo::network`]); new at each start (shared by all
    /// instances of a broker), never sent.
    network_key: Mutex<[u8; 32]>,
    broker: OnceLock<Arc<Broker>>,
    /// The join tickets' secret: with one, every fresh join needs a ticket.
    tickets: Option<TicketSecret>,
}

/// A fresh 128-bit resume token, as 32 hex digits.
pub(crate) fn new_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

impl Hub {
    /// An empty hub.
    pub fn new(config: Arc<Config>, metrics: Arc<Metrics>) -> Self {
        Hub {
            admission: Arc::new(Admission::new(config.clone())),
            config,
            metrics,
            state: Mutex::default(),
            next_peer: AtomicU64::new(1),
            next_conn: AtomicU64::new(1),
            network_key: Mutex::new(rand::random()),
            broker: OnceLock::new(),
            tickets: None,
        }
    }

    /// The same hub, requiring a ticket checked with `tickets` of every fresh join (none:
    /// rooms are open).
    pub fn with_tickets(self, tickets: Option<TicketSecret>) -> Hub {
        Hub { tickets, ..self }
    }

    /// The join tickets' secret, when joins need tickets.
    pub fn tickets(&self) -> Option<&TicketSecret> {
        self.tickets.as_ref()
    }

    /// Shares rooms with the other instances of `broker`.
    pub fn set_broker(&self, broker: Arc<Broker>) {
        let _ = self.broker.set(broker);
    }

    /// The broker, when rooms are shared (`--redis`).
    pub fn broker(&self) -> Option<&Arc<Broker>> {
        self.broker.get()
    }

    /// The tag of the public address `client` (the address a connection is counted under:
    /// an IPv6 one by its /64): the first 8 bytes of HMAC-SHA256 under the hub's key, in hex.
    /// Equal tags mean the same address; the address cannot be read back from one.
    fn network_tag(&self, client: IpAddr) -> String {
        use hmac::{Hmac, KeyInit, Mac};
        let key = *self.network_key.lock().unwrap_or_else(|e| e.into_inner());
        let mut mac =
            Hmac::<sha2::Sha256>::new_from_slice(&key).expect("HMAC takes a key of any length");
        match client {
            IpAddr::V4(v4) => mac.update(&v4.octets()),
            IpAddr::V6(v6) => mac.update(&v6.octets()),
        }
        mac.finalize().into_bytes()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The configuration the hub enforces.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The metrics it updates.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Per-address limits.
    pub fn admission(&self) -> &Arc<Admission> {
        &self.admission
    }

    /// A fresh connection id.
    pub fn next_conn_id(&self) -> ConnId {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // State stays consistent across a panic: every rule leaves its room whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `rule` on `room` (made first if `create`; nothing if it does not exist), keeps
    /// the peer count, and carries out the effects.
    fn with_room<R>(
        &self,
        st: &mut State,
        room: &str,
        create: bool,
        rule: impl FnOnce(&mut Room<Link>) -> (R, Vec<Effect<Link>>),
    ) -> Option<R> {
        if create && !st.rooms.contains_key(room) {
            self.metrics.rooms.inc();
            let new = Room::new(room, self.config.max_peers_per_room)
                .with_host_room_cap(self.config.max_peers_per_host_room);
            st.rooms.insert(room.to_owned(), new);
        }
        let r = st.rooms.get_mut(room)?;
        let before = r.len();
        let (answer, effects) = rule(r);
        let after = r.len();
        self.metrics.peers.inc_by(after as i64 - before as i64);
        self.carry_out(st, room, effects);
        Some(answer)
    }

    /// Does what the rules said.
    fn carry_out(&self, st: &State, room: &str, effects: Vec<Effect<Link>>) {
        for effect in effects {
            match effect {
                Effect::Send { to, frame } => {
                    if to.is_empty() {
                        continue;
                    }
                    let text = to_text(&frame);
                    for link in to {
                        // A reader whose queue is full is being closed; the others are not
                        // held up by it.
                        let _ = link.send(&text, &self.metrics);
                    }
                }
                Effect::Watchers(frame) => {
                    if st.watched(room) {
                        st.notify_subscribers(&self.metrics, room, &to_text(&frame));
                    }
                }
                Effect::Close { conn, cause } => conn.kick.kick(match cause {
                    Takeover::Resumed => CloseCause::ReplacedByResume,
                    Takeover::Replaced => CloseCause::ReplacedByInstance,
                }),
                Effect::Shared(news) => {
                    let Some(broker) = self.broker() else {
                        continue;
                    };
                    match news {
                        Shared::Joined {
                            info,
                            token,
                            app,
                            reserved,
                        } => broker.joined(room, &info, &token, app.as_ref(), reserved),
                        Shared::Token { info, token } => broker.put(room, &info, &token),
                        Shared::Updated { info, token } => broker.updated(room, &info, &token),
                        Shared::Left { peer_id, reason } => broker.left(room, peer_id, reason),
                        other => tracing::warn!(?other, "news the broker cannot share"),
                    }
                }
                other => tracing::warn!(?other, "an effect this server cannot carry out"),
            }
        }
    }

    /// Put `link`'s connection into a room, as a new peer or resuming an earlier one.
    pub fn join(&self, req: JoinRequest, link: Link) -> Result<Joined, SignalError> {
        let mut st = self.lock();
        // With a broker, the room's limits were checked across instances by the reservation.
        let reserved = req.id.is_some();
        if !st.rooms.contains_key(&req.room) {
            if let Some(resume) = &req.resume {
                return Err(SignalError::ResumeRejected(resume.peer_id));
            }
            if !reserved && st.rooms.len() >= self.config.max_rooms {
                return Err(SignalError::TooManyRooms);
            }
            if !reserved && !self.admission.create_room(req.client) {
                return Err(SignalError::RoomCreationLimited);
            }
        }
        let id = match (&req.resume, req.id) {
            (Some(_), _) => 0,
            (None, Some(id)) => id,
            (None, None) => self.next_peer.fetch_add(1, Ordering::Relaxed),
        };
        let join = rules::Join {
            conn: link,
            id,
            token: new_token(),
            kind: req.kind,
            role: req.role,
            udp_addr: req.udp_addr,
            udp_key: req.udp_key,
            webtransport: req.webtransport,
            instance: req.instance,
            identity: req.identity,
            app: req.app,
            resume: req.resume,
            // The rules keep it for natives alone (a browser's never needs the tag).
            network: Some(self.network_tag(req.client)),
            reserved,
            replaces: req.replaces,
        };
        let joined = self.with_room(&mut st, &req.room, true, |r| match r.join(join) {
            Ok(mut joined) => {
                let effects = std::mem::take(&mut joined.effects);
                (Ok(joined), effects)
            }
            Err(err) => (Err(err), Vec::new()),
        });
        match joined {
            Some(Ok(joined)) => {
                self.metrics.joins.inc();
                if joined.resumed {
                    self.metrics.resumes.inc();
                }
                Ok(joined)
            }
            Some(Err(err)) => {
                self.settle_locked(&mut st, &req.room);
                Err(err.into())
            }
            None => unreachable!("the room was made above"),
        }
    }

    /// Relay a signal from `from` on connection `conn` to `to`, which must be an attached
    /// peer of the sender's own room.
    pub fn relay(
        &self,
        room: &str,
        from: PeerId,
        conn: &Link,
        to: PeerId,
        data: &Value,
    ) -> Result<(), SignalError> {
        let st = self.lock();
        let route = st
            .rooms
            .get(room)
            .ok_or(SignalError::NotJoined)?
            .relay(from, conn, to)?;
        let frame = to_text(&ServerFrame::Signal {
            from,
            data: std::borrow::Cow::Borrowed(data),
        });
        match route {
            // Its instance delivers it; a peer gone meanwhile is news the sender gets from
            // the room.
            Route::Remote(home) => self.broker().ok_or(SignalError::UnknownPeer(to))?.forward(
                home,
                room,
                to,
                frame.as_str(),
            )?,
            Route::Local(link) => {
                if link.send(&frame, &self.metrics).is_err() {
                    // The target stopped reading and is being closed; the sender learns its
                    // signal went nowhere rather than waiting for an answer.
                    return Err(SignalError::PeerNotReading(to));
                }
            }
        }
        self.metrics.signals_relayed.inc();
        Ok(())
    }

    /// Forward a stats report of `peer_id` on connection `conn` to the room's dashboard
    /// subscribers.
    pub fn report_stats(
        &self,
        room: &str,
        peer_id: PeerId,
        conn: &Link,
        links: &Value,
    ) -> Result<(), SignalError> {
        let st = self.lock();
        st.rooms
            .get(room)
            .ok_or(SignalError::NotJoined)?
            .report(peer_id, conn)?;
        self.metrics.stats_reports.inc();
        if let Some(broker) = self.broker() {
            broker.stats(room, peer_id, links);
        }
        if st.watched(room) {
            let text = to_text(&ServerFrame::Stats {
                room: std::borrow::Cow::Borrowed(room),
                peer_id,
                links: std::borrow::Cow::Borrowed(links),
            });
            st.notify_subscribers(&self.metrics, room, &text);
        }
        Ok(())
    }

    /// A host's `update` on connection `conn`: its new WebTransport service, for its clients
    /// here and on the other instances (refused for anyone but a host: nothing changes).
    pub fn update(
        &self,
        room: &str,
        peer_id: PeerId,
        conn: &Link,
        webtransport: Option<WebTransportInfo>,
    ) -> Result<(), SignalError> {
        let mut st = self.lock();
        self.with_room(&mut st, room, false, |r| {
            match r.update(peer_id, conn, webtransport) {
                Ok(effects) => (Ok(()), effects),
                Err(err) => (Err(err), Vec::new()),
            }
        })
        .ok_or(SignalError::NotJoined)?
        .map_err(SignalError::from)
    }

    /// Remove the peer on connection `conn` now and tell its room (nothing if another
    /// connection took the peer over or replaced it meanwhile).
    pub fn leave(&self, room: &str, peer_id: PeerId, conn: &Link, reason: LeaveReason) {
        let mut st = self.lock();
        self.with_room(&mut st, room, false, |r| {
            ((), r.leave(peer_id, conn, reason))
        });
        self.settle_locked(&mut st, room);
    }

    /// Drops a room nobody here is in or watches: without a broker, an empty room; with one,
    /// also a room of other instances' peers alone (this instance stops listening to it).
    fn settle_locked(&self, st: &mut State, room: &str) {
        let Some(r) = st.rooms.get(room) else { return };
        let watched = st
            .subscribers
            .values()
            .any(|s| s.room.as_deref() == Some(room));
        let idle = match self.broker() {
            None => r.is_empty(),
            Some(_) => !r.has_local() && !watched,
        };
        if !idle {
            return;
        }
        let mirrored = r.len();
        st.rooms.remove(room);
        self.metrics.rooms.dec();
        self.metrics.peers.dec_by(mirrored as i64);
        if let Some(broker) = self.broker() {
            broker.forget(room);
        }
    }

    /// After a join or watch that did not happen: drop the room if it was only loaded for it.
    pub fn settle(&self, room: &str) {
        let mut st = self.lock();
        self.settle_locked(&mut st, room);
    }

    /// The peer's link dropped: keep its slot for the reconnect grace, then evict it unless
    /// it resumed. Does nothing if the peer already moved to a newer connection.
    pub fn detach(self: &Arc<Self>, room: &str, peer_id: PeerId, conn: &Link) {
        let generation = {
            let mut st = self.lock();
            let Some(generation) = st.rooms.get_mut(room).and_then(|r| r.detach(peer_id, conn))
            else {
                return;
            };
            generation
        };
        let hub = Arc::clone(self);
        let room = room.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(hub.config.reconnect_grace).await;
            let mut st = hub.lock();
            hub.with_room(&mut st, &room, false, |r| {
                ((), r.expire(peer_id, generation))
            });
            hub.settle_locked(&mut st, &room);
        });
    }

    // ----- shared rooms (with a broker) -----

    /// Before a fresh join's reservation across instances: whether it fits the room's
    /// topology and host seat as this instance sees them (refused as the join would be), and
    /// the peers whose places it takes (its program's old peer, its identity's, a dropped
    /// host's seat).
    pub fn places_taken(
        &self,
        room: &str,
        role: Role,
        instance: Option<&str>,
        identity: Option<&str>,
    ) -> Result<Vec<PeerId>, SignalError> {
        match self.lock().rooms.get(room) {
            Some(r) => Ok(r.places_taken(role, instance, identity)?),
            None => Ok(Vec::new()),
        }
    }

    /// Whether `peer_id` is the host of `room` (a host room's, here or on another instance).
    pub fn is_host(&self, room: &str, peer_id: PeerId) -> bool {
        self.lock()
            .rooms
            .get(room)
            .is_some_and(|r| r.host() == Some(peer_id))
    }

    /// Whether this instance holds `peer_id` of `room` (its connection is, or was until it
    /// dropped, here).
    pub fn holds_local(&self, room: &str, peer_id: PeerId) -> bool {
        self.lock()
            .rooms
            .get(room)
            .is_some_and(|r| r.holds_local(peer_id))
    }

    /// A peer taken over from another instance ([`Broker::take_over`]) now lives here, on
    /// `link`: the room sees no leave and no join.
    pub fn adopt(
        &self,
        room: &str,
        info: PeerInfo,
        token: String,
        link: Link,
        client: IpAddr,
    ) -> Joined {
        let network = Some(self.network_tag(client));
        let mut st = self.lock();
        let joined = self
            .with_room(&mut st, room, true, |r| {
                (r.adopt(info, token, link, network), Vec::new())
            })
            .expect("the room was made");
        self.metrics.joins.inc();
        self.metrics.resumes.inc();
        joined
    }

    /// A frame another instance relayed to one of this instance's peers.
    pub fn deliver(&self, room: &str, to: PeerId, text: &str) {
        let st = self.lock();
        if let Some(link) = st.rooms.get(room).and_then(|r| r.conn_of(to)) {
            let _ = link.send(&Utf8Bytes::from(text), &self.metrics);
        }
    }

    /// Another instance's event of a room this instance does not serve, for its all-rooms
    /// watchers (a room it serves reaches them as its own events do).
    fn to_all_rooms_watchers(&self, room: &str, frame: &ServerFrame<'_>) {
        let st = self.lock();
        if st.rooms.contains_key(room) || !st.subscribers.values().any(|s| s.room.is_none()) {
            return;
        }
        let text = to_text(frame);
        for sub in st.subscribers.values().filter(|s| s.room.is_none()) {
            let _ = sub.link.send(&text, &self.metrics);
        }
    }

    /// Watch `room` (or all rooms) and get their current state.
    pub fn subscribe(&self, room: Option<String>, link: Link) -> Vec<RoomSnapshot> {
        let mut st = self.lock();
        let rooms = match &room {
            Some(name) => st
                .rooms
                .get(name)
                .map(|r| vec![r.snapshot()])
                .unwrap_or_default(),
            None => st.rooms.values().map(Room::snapshot).collect(),
        };
        if st
            .subscribers
            .insert(link.conn, Subscriber { room, link })
            .is_none()
        {
            self.metrics.subscribers.inc();
        }
        rooms
    }

    /// Drop a connection's subscription, if any.
    pub fn unsubscribe(&self, conn: ConnId) {
        let mut st = self.lock();
        if let Some(sub) = st.subscribers.remove(&conn) {
            self.metrics.subscribers.dec();
            if let Some(room) = sub.room {
                self.settle_locked(&mut st, &room);
            }
        }
    }
}

/// What the broker hears from the other instances, carried out by the room rules.
impl Mirror for Hub {
    fn set_network_key(&self, key: [u8; 32]) {
        *self.network_key.lock().unwrap_or_else(|e| e.into_inner()) = key;
    }

    fn mirror(&self, room: &str, me: &str, records: Vec<Record>, app: Option<Option<AppInfo>>) {
        self.sync(room, me, records, app, false);
    }

    fn resync(&self, room: &str, me: &str, records: Vec<Record>, app: Option<Option<AppInfo>>) {
        self.sync(room, me, records, app, true);
    }

    fn mirror_joined(&self, room: &str, info: PeerInfo, home: String, app: Option<AppInfo>) {
        let mut st = self.lock();
        self.with_room(&mut st, room, false, |r| {
            ((), r.remote_joined(info, home, app))
        });
    }

    fn mirror_left(&self, room: &str, peer_id: PeerId, reason: LeaveReason) {
        let mut st = self.lock();
        if self
            .with_room(&mut st, room, false, |r| {
                ((), r.remote_left(peer_id, reason))
            })
            .is_some()
        {
            self.settle_locked(&mut st, room);
        }
    }

    fn mirror_updated(&self, room: &str, info: PeerInfo) {
        let mut st = self.lock();
        self.with_room(&mut st, room, false, |r| ((), r.remote_updated(info)));
    }

    fn mirror_moved(&self, room: &str, info: PeerInfo, home: String) {
        let mut st = self.lock();
        if self
            .with_room(&mut st, room, false, |r| ((), r.remote_moved(info, home)))
            .is_some()
        {
            self.settle_locked(&mut st, room);
        }
    }

    fn place_lost(&self, room: &str, peer_id: PeerId) {
        // As another instance's news that it was replaced: its connection is closed, the room
        // here hears it leave, and the replacer told the others.
        self.mirror_left(room, peer_id, LeaveReason::Replaced);
    }

    fn mirror_stats(&self, room: &str, peer_id: PeerId, links: &Value) {
        let st = self.lock();
        if !st.watched(room) {
            return;
        }
        let text = to_text(&ServerFrame::Stats {
            room: std::borrow::Cow::Borrowed(room),
            peer_id,
            links: std::borrow::Cow::Borrowed(links),
        });
        st.notify_subscribers(&self.metrics, room, &text);
    }

    fn watched_joined(&self, room: &str, info: &PeerInfo) {
        self.to_all_rooms_watchers(
            room,
            &ServerFrame::PeerJoined {
                room: room.into(),
                peer: info.watched(),
            },
        );
    }

    fn watched_left(&self, room: &str, peer_id: PeerId, reason: LeaveReason) {
        self.to_all_rooms_watchers(
            room,
            &ServerFrame::PeerLeft {
                room: room.into(),
                peer_id,
                reason,
            },
        );
    }

    fn watched_stats(&self, room: &str, peer_id: PeerId, links: &Value) {
        self.to_all_rooms_watchers(
            room,
            &ServerFrame::Stats {
                room: room.into(),
                peer_id,
                links: std::borrow::Cow::Borrowed(links),
            },
        );
    }

    fn deliver(&self, room: &str, to: PeerId, text: &str) {
        Hub::deliver(self, room, to, text);
    }

    fn local_records(&self) -> Vec<(String, Option<AppInfo>, Record)> {
        let st = self.lock();
        st.rooms
            .iter()
            .flat_map(|(room, r)| {
                r.local_peers().map(|(info, token)| {
                    (
                        room.clone(),
                        r.app().cloned(),
                        Record {
                            info: info.clone(),
                            token: token.to_owned(),
                            home: String::new(),
                        },
                    )
                })
            })
            .collect()
    }

    fn remote_homes(&self) -> HashSet<String> {
        let st = self.lock();
        st.rooms
            .values()
            .flat_map(Room::remote_homes)
            .map(str::to_owned)
            .collect()
    }

    fn homes_lost(&self, dead: &HashSet<String>) -> Vec<(String, PeerId, String)> {
        let mut st = self.lock();
        st.rooms
            .iter_mut()
            .flat_map(|(room, r)| {
                r.orphan(dead)
                    .into_iter()
                    .map(|(peer_id, home)| (room.clone(), peer_id, home))
            })
            .collect()
    }

    fn reconnect_grace(&self) -> Duration {
        self.config.reconnect_grace
    }
}

impl Hub {
    /// The peers other instances serve in `room`, read from Redis: mirrored, and announced
    /// to the local peers if they are new to them; with `prune`, mirrored peers Redis no
    /// longer lists are gone.
    fn sync(
        &self,
        room: &str,
        me: &str,
        records: Vec<Record>,
        app: Option<Option<AppInfo>>,
        prune: bool,
    ) {
        let listed = records.into_iter().map(|r| (r.info, r.home)).collect();
        let mut st = self.lock();
        self.with_room(&mut st, room, true, |r| {
            ((), r.sync(me, listed, app, prune))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub() -> Hub {
        let hub = Hub::new(Arc::new(Config::default()), Arc::new(Metrics::default()));
        // Every test client comes from loopback and stays connected.
        std::mem::forget(hub.admission().admit(LOOPBACK).unwrap());
        hub
    }

    const LOOPBACK: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn link(hub: &Hub) -> (Link, mpsc::Receiver<Utf8Bytes>, Arc<Kick>) {
        let kick = Arc::new(Kick::default());
        let (link, rx) = Link::new(hub.next_conn_id(), 8, 8, kick.clone());
        (link, rx, kick)
    }

    fn join(room: &str, resume: Option<Resume>) -> JoinRequest {
        JoinRequest {
            room: room.into(),
            kind: PeerKind::Browser,
            role: Role::Peer,
            udp_addr: None,
            udp_key: None,
            webtransport: None,
            client: LOOPBACK,
            instance: None,
            identity: None,
            app: None,
            resume,
            id: None,
            replaces: None,
        }
    }

    fn kicked(kick: &Kick) -> Option<CloseCause> {
        *kick.cause.lock().unwrap()
    }

    #[test]
    fn a_widened_link_queues_up_to_its_capacity_before_it_counts_as_not_reading() {
        let metrics = Metrics::default();
        let frame = Utf8Bytes::from_static("{}");
        let kick = Arc::new(Kick::default());
        let (link, _rx) = Link::new(1, 4, 10, kick.clone());
        for _ in 0..4 {
            link.send(&frame, &metrics).unwrap();
        }
        assert!(matches!(
            link.send(&frame, &metrics),
            Err(DropReason::QueueFull)
        ));
        assert_eq!(kicked(&kick), Some(CloseCause::SlowReader));
        let kick = Arc::new(Kick::default());
        let (host, _rx) = Link::new(2, 4, 10, kick.clone());
        // Every clone (the one the room holds) sees the widening.
        let held = host.clone();
        host.widen();
        for _ in 0..10 {
            held.send(&frame, &metrics).unwrap();
        }
        assert_eq!(kicked(&kick), None);
        assert!(matches!(
            held.send(&frame, &metrics),
            Err(DropReason::QueueFull)
        ));
        assert_eq!(kicked(&kick), Some(CloseCause::SlowReader));
    }

    #[test]
    fn a_connection_whose_peer_was_resumed_elsewhere_is_closed_and_no_longer_speaks_for_it() {
        let hub = hub();
        let (a, mut a_rx, _) = link(&hub);
        let (old, _old_rx, old_kick) = link(&hub);
        let (new, _new_rx, _) = link(&hub);
        let ida = hub.join(join("r", None), a.clone()).unwrap().peer_id;
        let b = hub.join(join("r", None), old.clone()).unwrap();
        a_rx.try_recv().unwrap(); // b's peer_joined
        let resume = Resume {
            peer_id: b.peer_id,
            token: b.token.clone(),
        };
        let back = hub.join(join("r", Some(resume)), new).unwrap();
        assert_ne!(back.token, b.token, "every welcome rotates the token");
        assert_eq!(kicked(&old_kick), Some(CloseCause::ReplacedByResume));

        let data = Value::from("stale");
        assert_eq!(
            hub.relay("r", b.peer_id, &old, ida, &data),
            Err(SignalError::NotJoined)
        );
        assert_eq!(
            hub.report_stats("r", b.peer_id, &old, &data),
            Err(SignalError::NotJoined)
        );
        hub.leave("r", b.peer_id, &old, LeaveReason::Left);
        assert!(
            a_rx.try_recv().is_err(),
            "the room heard the stale connection"
        );
        assert!(hub.holds_local("r", b.peer_id));
        // The holder itself still speaks for its peer.
        assert_eq!(hub.relay("r", ida, &a, b.peer_id, &data), Ok(()));
    }

    #[test]
    fn a_connection_whose_peer_was_replaced_by_its_instance_is_closed_and_the_room_hears_it_once() {
        let hub = hub();
        let (a, mut a_rx, _) = link(&hub);
        let (old, _old_rx, old_kick) = link(&hub);
        let (new, _new_rx, _) = link(&hub);
        let same = || JoinRequest {
            instance: Some("prog-1".into()),
            ..join("r", None)
        };
        let ida = hub.join(join("r", None), a).unwrap().peer_id;
        let idold = hub.join(same(), old.clone()).unwrap().peer_id;
        let idnew = hub.join(same(), new).unwrap().peer_id;
        assert_eq!(kicked(&old_kick), Some(CloseCause::ReplacedByInstance));
        let frames: Vec<Value> = std::iter::from_fn(|| a_rx.try_recv().ok())
            .map(|t| serde_json::from_str(t.as_str()).unwrap())
            .collect();
        let kinds: Vec<_> = frames.iter().map(|f| f["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["peer_joined", "peer_left", "peer_joined"]);
        assert_eq!(frames[1]["reason"], "replaced");

        assert_eq!(
            hub.relay("r", idold, &old, ida, &Value::Null),
            Err(SignalError::NotJoined)
        );
        hub.leave("r", idold, &old, LeaveReason::Left);
        assert!(
            a_rx.try_recv().is_err(),
            "the room heard the replaced connection"
        );
        let ids: Vec<_> = hub.lock().rooms["r"]
            .snapshot()
            .peers
            .iter()
            .map(|p| p.id)
            .collect();
        assert_eq!(ids, [ida, idnew]);
        assert_eq!(hub.metrics().peers.get(), 2);
    }

    #[test]
    fn an_empty_room_is_dropped_and_the_gauges_follow() {
        let hub = hub();
        let (a, _a_rx, _) = link(&hub);
        let id = hub.join(join("r", None), a.clone()).unwrap().peer_id;
        assert_eq!(
            (hub.metrics().rooms.get(), hub.metrics().peers.get()),
            (1, 1)
        );
        hub.leave("r", id, &a, LeaveReason::Left);
        assert_eq!(
            (hub.metrics().rooms.get(), hub.metrics().peers.get()),
            (0, 0)
        );
        assert!(hub.lock().rooms.is_empty());
    }
}
