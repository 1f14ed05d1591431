//! Rooms, their peers and dashboard subscribers: the server's only shared state.
//!
//! One mutex guards it all. Every operation is short and never awaits: fan-out only
//! `try_send`s into bounded per-connection queues, so a slow client can never stall the lock.
//!
//! With a broker (`--redis`, [`crate::broker`]) a room also holds the peers other instances
//! serve (remote slots, mirrored from Redis): they are listed in welcomes and relayed to
//! through the broker, and what happens to local peers is told to the other instances.

use std::{
    borrow::Cow,
    collections::{BTreeMap, HashMap, HashSet, VecDeque},
    net::{IpAddr, SocketAddr},
    sync::{
        Arc, Mutex, MutexGuard, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
};

use ackwire_signalling::{
    AppInfo, LeaveReason, PeerId, PeerInfo, PeerKind, PublicKey, Resume, RoomSnapshot, ServerFrame,
};
use axum::extract::ws::Utf8Bytes;
use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use crate::{
    admission::Admission,
    broker::{Broker, Record},
    config::Config,
    error::SignalError,
    metrics::{CloseCause, DropReason, Metrics},
    protocol::to_text,
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

/// The hub's way to reach one connection.
#[derive(Debug, Clone)]
pub struct Link {
    /// The connection.
    pub conn: ConnId,
    tx: mpsc::Sender<Utf8Bytes>,
    kick: Arc<Kick>,
}

impl Link {
    /// A link and the receiving end of its bounded outbound queue.
    pub fn new(conn: ConnId, queue: usize, kick: Arc<Kick>) -> (Self, mpsc::Receiver<Utf8Bytes>) {
        let (tx, rx) = mpsc::channel(queue.max(1));
        (Link { conn, tx, kick }, rx)
    }

    /// Queue a frame, or say why it was dropped (and count it). A full queue means the
    /// client stopped reading, so it is closed at once (its task stops waiting on the socket).
    fn send(&self, text: &Utf8Bytes, metrics: &Metrics) -> Result<(), DropReason> {
        let reason = match self.tx.try_send(text.clone()) {
            Ok(()) => return Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.kick.kick(CloseCause::SlowReader);
                DropReason::QueueFull
            }
            Err(mpsc::error::TrySendError::Closed(_)) => DropReason::Closing,
        };
        metrics.frame_dropped(reason);
        Err(reason)
    }
}

#[derive(Debug)]
struct PeerSlot {
    info: PeerInfo,
    token: String,
    /// `None` while the peer's link is down and it may still resume.
    link: Option<Link>,
    /// Bumped on every detach, so a stale grace timer cannot evict a resumed peer.
    generation: u64,
    /// The instance holding the peer's socket, for a peer another instance serves; `None`
    /// for this instance's own.
    home: Option<String>,
    /// A remote peer whose instance died: it waits out the grace for a resume elsewhere.
    orphaned: bool,
}

impl PeerSlot {
    fn local(info: PeerInfo, token: String, link: Link) -> Self {
        PeerSlot {
            info,
            token,
            link: Some(link),
            generation: 0,
            home: None,
            orphaned: false,
        }
    }

    fn remote(info: PeerInfo, home: String) -> Self {
        PeerSlot {
            info,
            token: String::new(),
            link: None,
            generation: 0,
            home: Some(home),
            orphaned: false,
        }
    }
}

/// Peers that left a room lately, so a snapshot read before their leave cannot bring them
/// back.
const GONE_KEPT: usize = 64;

#[derive(Debug, Default)]
struct Room {
    peers: BTreeMap<PeerId, PeerSlot>,
    gone: VecDeque<PeerId>,
    /// The application the room plays: its first member's (`None`: it declared none). With
    /// a broker, Redis holds the one every instance enforces; this copy is for snapshots.
    app: Option<AppInfo>,
}

impl Room {
    /// Whether `conn` holds `peer_id`'s link: a connection speaks for its peer only until
    /// another one takes the peer over (a resume) or replaces it (the same instance joining).
    fn held_by(&self, peer_id: PeerId, conn: ConnId) -> bool {
        self.peers
            .get(&peer_id)
            .and_then(|s| s.link.as_ref())
            .is_some_and(|l| l.conn == conn)
    }

    fn has_local(&self) -> bool {
        self.peers.values().any(|p| p.home.is_none())
    }

    fn forget_peer(&mut self, peer_id: PeerId) {
        if self.gone.len() == GONE_KEPT {
            self.gone.pop_front();
        }
        self.gone.push_back(peer_id);
    }

    /// The room as a dashboard sees it: no peer's address.
    fn snapshot(&self, name: &str) -> RoomSnapshot {
        RoomSnapshot {
            room: name.to_owned(),
            app: self.app.clone(),
            peers: self.peers.values().map(|p| watched(&p.info)).collect(),
        }
    }
}

/// A peer as dashboards see it: a native's UDP address and key, and where anyone connects
/// from, are for its room's members alone.
pub(crate) fn watched(info: &PeerInfo) -> PeerInfo {
    PeerInfo {
        udp_addr: None,
        udp_key: None,
        network: None,
        ..info.clone()
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
    rooms: HashMap<String, Room>,
    subscribers: HashMap<ConnId, Subscriber>,
}

impl State {
    /// Send `text` to every attached peer of `room` except `except`, and `watched` (or
    /// `text`) to its subscribers. A reader whose queue is full is being closed; the others
    /// are not held up by it.
    fn broadcast(
        &self,
        metrics: &Metrics,
        room: &str,
        except: Option<PeerId>,
        text: &Utf8Bytes,
        watched: Option<&Utf8Bytes>,
    ) {
        if let Some(r) = self.rooms.get(room) {
            for (id, slot) in &r.peers {
                if Some(*id) != except
                    && let Some(link) = &slot.link
                {
                    let _ = link.send(text, metrics);
                }
            }
        }
        self.notify_subscribers(metrics, room, watched.unwrap_or(text));
    }

    fn notify_subscribers(&self, metrics: &Metrics, room: &str, text: &Utf8Bytes) {
        for sub in self.subscribers.values() {
            if sub.room.as_deref().is_none_or(|r| r == room) {
                let _ = sub.link.send(text, metrics);
            }
        }
    }
}

/// What a successful join hands back to the connection.
#[derive(Debug)]
pub struct Joined {
    /// The peer's id.
    pub peer_id: PeerId,
    /// Its resume token.
    pub token: String,
    /// True when an earlier id was taken back.
    pub resumed: bool,
    /// The other peers.
    pub peers: Vec<PeerInfo>,
    /// Its network tag, for its welcome (natives only).
    pub network: Option<String>,
}

/// What a peer asks for when it joins.
#[derive(Debug)]
pub struct JoinRequest {
    /// Validated room name.
    pub room: String,
    /// Browser or native.
    pub kind: PeerKind,
    /// Natives' UDP address.
    pub udp_addr: Option<SocketAddr>,
    /// Natives' public key for encrypted UDP links (only with `udp_addr`).
    pub udp_key: Option<PublicKey>,
    /// The address the connection is counted under ([`Permit::client`](crate::admission::Permit::client)): a join that creates
    /// a room spends one of its room creations.
    pub client: IpAddr,
    /// Validated program instance id; a new peer with it replaces the room's old one.
    pub instance: Option<String>,
    /// The validated application it plays: the room's first member fixes the room's, and a
    /// fresh join must declare the same (a resume is not checked).
    pub app: Option<AppInfo>,
    /// Earlier credentials, if resuming (the instance is then ignored).
    pub resume: Option<Resume>,
    /// The id the broker reserved for a new peer (room size and room limits were checked
    /// there, across instances); `None` without a broker.
    pub id: Option<PeerId>,
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
}

/// A fresh 128-bit resume token, as 32 hex digits.
pub(crate) fn new_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// Comparison time independent of where the strings differ, so tokens cannot be guessed byte by byte.
pub(crate) fn tokens_match(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
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
        }
    }

    /// Shares rooms with the other instances of `broker`.
    pub fn set_broker(&self, broker: Arc<Broker>) {
        let _ = self.broker.set(broker);
    }

    /// The broker, when rooms are shared (`--redis`).
    pub fn broker(&self) -> Option<&Arc<Broker>> {
        self.broker.get()
    }

    /// Keys network tags from now on: all instances of a broker use one key, so tags compare
    /// across them.
    pub fn set_network_key(&self, key: [u8; 32]) {
        *self.network_key.lock().unwrap_or_else(|e| e.into_inner()) = key;
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
        // State stays consistent across a panic: every mutation is a single map operation.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Put `link`'s connection into a room, as a new peer or resuming an earlier one.
    pub fn join(&self, req: JoinRequest, link: Link) -> Result<Joined, SignalError> {
        let mut st = self.lock();
        if let Some(resume) = &req.resume {
            let slot = st
                .rooms
                .get_mut(&req.room)
                .and_then(|r| r.peers.get_mut(&resume.peer_id))
                .filter(|s| s.home.is_none() && tokens_match(&s.token, &resume.token))
                .ok_or(SignalError::ResumeRejected(resume.peer_id))?;
            if let Some(old) = slot.link.replace(link) {
                old.kick.kick(CloseCause::ReplacedByResume);
            }
            if req.udp_addr.is_some() {
                slot.info.udp_addr = req.udp_addr;
                slot.info.udp_key = req.udp_key;
            }
            // It may come back from elsewhere (another network); newcomers see where.
            let network = slot.info.udp_addr.map(|_| self.network_tag(req.client));
            slot.info.network = network.clone();
            // Every welcome carries a new token and the one just used is dead: a token that
            // leaked is worth at most one takeover, which its owner notices at once.
            slot.token = new_token();
            if let Some(broker) = self.broker() {
                broker.put(&req.room, &slot.info, &slot.token);
            }
            let (peer_id, token) = (resume.peer_id, slot.token.clone());
            return Ok(self.resumed(&st.rooms[&req.room], peer_id, token, network));
        }

        let room_count = st.rooms.len();
        // With a broker, the room's limits were checked across instances by the reservation.
        let reserved = req.id.is_some();
        let room = match st.rooms.get_mut(&req.room) {
            Some(room) => room,
            None if reserved => {
                self.metrics.rooms.inc();
                st.rooms.entry(req.room.clone()).or_default()
            }
            None if room_count >= self.config.max_rooms => return Err(SignalError::TooManyRooms),
            None if !self.admission.create_room(req.client) => {
                return Err(SignalError::RoomCreationLimited);
            }
            None => {
                self.metrics.rooms.inc();
                st.rooms.entry(req.room.clone()).or_default()
            }
        };
        // The same program instance joining again (without its token, while its old entry
        // waits out the reconnect grace, say) takes the old entry's place.
        let replaced = req.instance.as_deref().and_then(|instance| {
            room.peers
                .values()
                .find(|p| p.info.instance.as_deref() == Some(instance))
                .map(|p| p.info.id)
        });
        // The first member fixes the room's application (a peer it replaces does not count);
        // with a broker the reservation checked it against Redis, which every instance shares,
        // and this room's copy follows.
        let others = room.peers.len() - usize::from(replaced.is_some());
        let fixes_app = reserved || others == 0;
        if !fixes_app && room.app != req.app {
            return Err(SignalError::app_mismatch(
                req.room,
                room.app.clone(),
                req.app,
            ));
        }
        if !reserved && replaced.is_none() && room.peers.len() >= self.config.max_peers_per_room {
            return Err(SignalError::RoomFull(req.room));
        }
        // Nothing below can fail.
        if fixes_app {
            room.app = req.app;
        }
        if let Some(old_id) = replaced
            && let Some(old) = room.peers.remove(&old_id)
        {
            if let Some(link) = old.link {
                link.kick.kick(CloseCause::ReplacedByInstance);
            }
            room.forget_peer(old_id);
            self.metrics.peers.dec();
            // Its instance closes it, wherever it is.
            if let Some(broker) = self.broker() {
                broker.left(&req.room, old_id, LeaveReason::Replaced);
            }
        }
        let info = PeerInfo {
            id: req
                .id
                .unwrap_or_else(|| self.next_peer.fetch_add(1, Ordering::Relaxed)),
            kind: req.kind,
            udp_addr: req.udp_addr,
            instance: req.instance,
            udp_key: req.udp_key,
            // Natives only: they alone choose a path by it (a browser's never needs the tag).
            network: req.udp_addr.map(|_| self.network_tag(req.client)),
        };
        let network = info.network.clone();
        let peer_id = info.id;
        let token = new_token();
        let peers = room.peers.values().map(|p| p.info.clone()).collect();
        let joined = to_text(&ServerFrame::PeerJoined {
            room: Cow::Borrowed(&req.room),
            peer: info.clone(),
        });
        let joined_watched = to_text(&ServerFrame::PeerJoined {
            room: Cow::Borrowed(&req.room),
            peer: watched(&info),
        });
        if let Some(broker) = self.broker() {
            broker.joined(&req.room, &info, &token, room.app.as_ref());
        }
        room.peers
            .insert(peer_id, PeerSlot::local(info, token.clone(), link));
        self.metrics.peers.inc();
        self.metrics.joins.inc();
        if let Some(old_id) = replaced {
            let left = to_text(&ServerFrame::PeerLeft {
                room: Cow::Borrowed(&req.room),
                peer_id: old_id,
                reason: LeaveReason::Replaced,
            });
            st.broadcast(&self.metrics, &req.room, Some(peer_id), &left, None);
        }
        st.broadcast(
            &self.metrics,
            &req.room,
            Some(peer_id),
            &joined,
            Some(&joined_watched),
        );
        Ok(Joined {
            peer_id,
            token,
            resumed: false,
            peers,
            network,
        })
    }

    /// Relay a signal from `from` on connection `conn` to `to`, which must be an attached
    /// peer of the sender's own room.
    pub fn relay(
        &self,
        room: &str,
        from: PeerId,
        conn: ConnId,
        to: PeerId,
        data: &Value,
    ) -> Result<(), SignalError> {
        let st = self.lock();
        let r = st
            .rooms
            .get(room)
            .filter(|r| r.held_by(from, conn))
            .ok_or(SignalError::NotJoined)?;
        let slot = r
            .peers
            .get(&to)
            .filter(|_| to != from)
            .ok_or(SignalError::UnknownPeer(to))?;
        let frame = to_text(&ServerFrame::Signal {
            from,
            data: Cow::Borrowed(data),
        });
        if let (Some(home), Some(broker)) = (&slot.home, self.broker()) {
            // Its instance delivers it; a peer gone meanwhile is news the sender gets from
            // the room.
            broker.forward(home, room, to, frame.as_str())?;
            self.metrics.signals_relayed.inc();
            return Ok(());
        }
        let link = slot.link.as_ref().ok_or(SignalError::UnknownPeer(to))?;
        if link.send(&frame, &self.metrics).is_err() {
            // The target stopped reading and is being closed; the sender learns its signal
            // went nowhere rather than waiting for an answer.
            return Err(SignalError::PeerNotReading(to));
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
        conn: ConnId,
        links: &Value,
    ) -> Result<(), SignalError> {
        let st = self.lock();
        if !st.rooms.get(room).is_some_and(|r| r.held_by(peer_id, conn)) {
            return Err(SignalError::NotJoined);
        }
        self.metrics.stats_reports.inc();
        if let Some(broker) = self.broker() {
            broker.stats(room, peer_id, links);
        }
        if !st.subscribers.is_empty() {
            let text = to_text(&ServerFrame::Stats {
                room: Cow::Borrowed(room),
                peer_id,
                links: Cow::Borrowed(links),
            });
            st.notify_subscribers(&self.metrics, room, &text);
        }
        Ok(())
    }

    /// Remove the peer on connection `conn` now and tell its room (nothing if another
    /// connection took the peer over or replaced it meanwhile).
    pub fn leave(&self, room: &str, peer_id: PeerId, conn: ConnId, reason: LeaveReason) {
        let mut st = self.lock();
        if st.rooms.get(room).is_some_and(|r| r.held_by(peer_id, conn)) {
            self.remove_peer(&mut st, room, peer_id, reason);
        }
    }

    /// Removes a peer and tells the room's local peers and watchers (and, for a local peer,
    /// the other instances).
    fn remove_peer(&self, st: &mut State, room: &str, peer_id: PeerId, reason: LeaveReason) {
        let Some(r) = st.rooms.get_mut(room) else {
            return;
        };
        let Some(slot) = r.peers.remove(&peer_id) else {
            return;
        };
        r.forget_peer(peer_id);
        self.metrics.peers.dec();
        if slot.home.is_none()
            && let Some(broker) = self.broker()
        {
            broker.left(room, peer_id, reason);
        }
        let note = to_text(&ServerFrame::PeerLeft {
            room: Cow::Borrowed(room),
            peer_id,
            reason,
        });
        st.broadcast(&self.metrics, room, None, &note, None);
        self.settle_locked(st, room);
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
            None => r.peers.is_empty(),
            Some(_) => !r.has_local() && !watched,
        };
        if !idle {
            return;
        }
        let mirrored = r.peers.len();
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
    pub fn detach(self: &Arc<Self>, room: &str, peer_id: PeerId, conn: ConnId) {
        let generation = {
            let mut st = self.lock();
            let Some(slot) = st
                .rooms
                .get_mut(room)
                .and_then(|r| r.peers.get_mut(&peer_id))
            else {
                return;
            };
            if slot.link.as_ref().is_none_or(|l| l.conn != conn) {
                return;
            }
            slot.link = None;
            slot.generation += 1;
            slot.generation
        };
        let hub = Arc::clone(self);
        let room = room.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(hub.config.reconnect_grace).await;
            let mut st = hub.lock();
            let expired = st
                .rooms
                .get(&room)
                .and_then(|r| r.peers.get(&peer_id))
                .is_some_and(|s| {
                    s.home.is_none() && s.link.is_none() && s.generation == generation
                });
            if expired {
                hub.remove_peer(&mut st, &room, peer_id, LeaveReason::Lost);
            }
        });
    }

    // ----- shared rooms (with a broker) -----

    /// The room's peer that joined with `instance`: a new join of it replaces that one.
    pub fn instance_peer(&self, room: &str, instance: Option<&str>) -> Option<PeerId> {
        let instance = instance?;
        self.lock().rooms.get(room).and_then(|r| {
            r.peers
                .values()
                .find(|p| p.info.instance.as_deref() == Some(instance))
                .map(|p| p.info.id)
        })
    }

    /// Whether this instance holds the peer (its socket is, or was until it dropped, here).
    pub fn holds_local(&self, room: &str, peer_id: PeerId) -> bool {
        self.lock()
            .rooms
            .get(room)
            .and_then(|r| r.peers.get(&peer_id))
            .is_some_and(|s| s.home.is_none())
    }

    /// A peer taken over from another instance ([`Broker::take_over`]) now lives here, on
    /// `link`: the room sees no leave and no join.
    pub fn adopt(
        &self,
        room: &str,
        mut info: PeerInfo,
        token: String,
        link: Link,
        client: IpAddr,
    ) -> Joined {
        let mut st = self.lock();
        if !st.rooms.contains_key(room) {
            self.metrics.rooms.inc();
        }
        let r = st.rooms.entry(room.to_owned()).or_default();
        if info.udp_addr.is_some() {
            info.network = Some(self.network_tag(client));
        }
        let network = info.network.clone();
        let peer_id = info.id;
        if r.peers
            .insert(peer_id, PeerSlot::local(info, token.clone(), link))
            .is_none()
        {
            self.metrics.peers.inc();
        }
        self.resumed(r, peer_id, token, network)
    }

    /// What a welcome says to a peer that took its id back.
    fn resumed(
        &self,
        room: &Room,
        peer_id: PeerId,
        token: String,
        network: Option<String>,
    ) -> Joined {
        let peers = room
            .peers
            .values()
            .filter(|p| p.info.id != peer_id)
            .map(|p| p.info.clone())
            .collect();
        self.metrics.joins.inc();
        self.metrics.resumes.inc();
        Joined {
            peer_id,
            token,
            resumed: true,
            peers,
            network,
        }
    }

    /// The peers other instances serve in `room`, read from Redis when this instance starts
    /// serving it: mirrored, and announced to the local peers if they are new to them. `app`
    /// is the room's application as Redis holds it (`None` when Redis holds none: the room
    /// is empty, and its next member fixes it).
    pub fn mirror(&self, room: &str, me: &str, records: Vec<Record>, app: Option<Option<AppInfo>>) {
        self.sync(room, me, records, app, false);
    }

    /// As [`Hub::mirror`], after Redis was out of reach: remote peers it no longer lists are
    /// gone.
    pub fn resync(&self, room: &str, me: &str, records: Vec<Record>, app: Option<Option<AppInfo>>) {
        self.sync(room, me, records, app, true);
    }

    fn sync(
        &self,
        room: &str,
        me: &str,
        records: Vec<Record>,
        app: Option<Option<AppInfo>>,
        prune: bool,
    ) {
        let mut st = self.lock();
        if !st.rooms.contains_key(room) {
            self.metrics.rooms.inc();
        }
        let r = st.rooms.entry(room.to_owned()).or_default();
        if let Some(app) = app {
            r.app = app;
        }
        let listed: HashSet<PeerId> = records.iter().map(|rec| rec.info.id).collect();
        let mut joined = Vec::new();
        for rec in records {
            if rec.home == me || r.gone.contains(&rec.info.id) {
                continue;
            }
            match r.peers.get_mut(&rec.info.id) {
                Some(slot) if slot.home.is_some() => {
                    slot.home = Some(rec.home);
                    slot.info = rec.info;
                }
                Some(_) => {}
                None => {
                    joined.push(rec.info.clone());
                    r.peers
                        .insert(rec.info.id, PeerSlot::remote(rec.info, rec.home));
                    self.metrics.peers.inc();
                }
            }
        }
        let mut left = Vec::new();
        if prune {
            left = r
                .peers
                .values()
                .filter(|p| p.home.is_some() && !listed.contains(&p.info.id))
                .map(|p| p.info.id)
                .collect();
            for id in &left {
                r.peers.remove(id);
                r.forget_peer(*id);
                self.metrics.peers.dec();
            }
        }
        for info in joined {
            self.announce_joined(&st, room, &info);
        }
        for peer_id in left {
            let note = to_text(&ServerFrame::PeerLeft {
                room: Cow::Borrowed(room),
                peer_id,
                reason: LeaveReason::Lost,
            });
            st.broadcast(&self.metrics, room, None, &note, None);
        }
    }

    fn announce_joined(&self, st: &State, room: &str, info: &PeerInfo) {
        let joined = to_text(&ServerFrame::PeerJoined {
            room: Cow::Borrowed(room),
            peer: info.clone(),
        });
        let joined_watched = to_text(&ServerFrame::PeerJoined {
            room: Cow::Borrowed(room),
            peer: watched(info),
        });
        st.broadcast(
            &self.metrics,
            room,
            Some(info.id),
            &joined,
            Some(&joined_watched),
        );
    }

    /// Another instance's peer joined a room this instance serves; `app` is the room's
    /// application as the joining instance saw it, after Redis accepted the join (the room
    /// may have emptied and been taken by another application since this one last looked).
    pub fn mirror_joined(&self, room: &str, info: PeerInfo, home: String, app: Option<AppInfo>) {
        let mut st = self.lock();
        let Some(r) = st.rooms.get_mut(room) else {
            return;
        };
        r.app = app;
        match r.peers.get_mut(&info.id) {
            Some(slot) => {
                if slot.home.is_some() {
                    slot.home = Some(home);
                    slot.info = info;
                }
            }
            None => self.add_remote(&mut st, room, info, home),
        }
    }

    /// Mirrors a peer of another instance that is new to this one, and tells the room's local
    /// peers and watchers.
    fn add_remote(&self, st: &mut State, room: &str, info: PeerInfo, home: String) {
        let Some(r) = st.rooms.get_mut(room) else {
            return;
        };
        r.gone.retain(|id| *id != info.id);
        r.peers
            .insert(info.id, PeerSlot::remote(info.clone(), home));
        self.metrics.peers.inc();
        self.announce_joined(st, room, &info);
    }

    /// A peer of a room this instance serves left on another instance (or was evicted, or
    /// replaced by a new join of its program elsewhere).
    pub fn mirror_left(&self, room: &str, peer_id: PeerId, reason: LeaveReason) {
        let mut st = self.lock();
        let Some(slot) = st.rooms.get(room).and_then(|r| r.peers.get(&peer_id)) else {
            return;
        };
        if slot.home.is_none() {
            if reason != LeaveReason::Replaced {
                // Ours, and alive: the others took this instance for dead. Put it back.
                if let Some(broker) = self.broker() {
                    let app = st.rooms.get(room).and_then(|r| r.app.as_ref());
                    broker.joined(room, &slot.info, &slot.token, app);
                }
                return;
            }
            if let Some(link) = &slot.link {
                link.kick.kick(CloseCause::ReplacedByInstance);
            }
        }
        let Some(r) = st.rooms.get_mut(room) else {
            return;
        };
        r.peers.remove(&peer_id);
        r.forget_peer(peer_id);
        self.metrics.peers.dec();
        let note = to_text(&ServerFrame::PeerLeft {
            room: Cow::Borrowed(room),
            peer_id,
            reason,
        });
        st.broadcast(&self.metrics, room, None, &note, None);
        self.settle_locked(&mut st, room);
    }

    /// A peer resumed on `home`: if it was ours, its old socket is closed here.
    pub fn mirror_moved(&self, room: &str, info: PeerInfo, home: String) {
        let mut st = self.lock();
        let Some(r) = st.rooms.get_mut(room) else {
            return;
        };
        match r.peers.get_mut(&info.id) {
            Some(slot) => {
                if let Some(link) = slot.link.take() {
                    link.kick.kick(CloseCause::ReplacedByResume);
                }
                slot.home = Some(home);
                slot.info = info;
                slot.token.clear();
                slot.orphaned = false;
                slot.generation += 1;
            }
            None => self.add_remote(&mut st, room, info, home),
        }
        self.settle_locked(&mut st, room);
    }

    /// Another instance's peer reported stats: for this instance's watchers of the room.
    pub fn mirror_stats(&self, room: &str, peer_id: PeerId, links: &Value) {
        let st = self.lock();
        if st.subscribers.is_empty() {
            return;
        }
        let text = to_text(&ServerFrame::Stats {
            room: Cow::Borrowed(room),
            peer_id,
            links: Cow::Borrowed(links),
        });
        st.notify_subscribers(&self.metrics, room, &text);
    }

    /// Another instance's event of a room this instance does not serve, for its all-rooms
    /// watchers (a room it serves reaches them as its own events do).
    fn to_all_rooms_watchers(&self, room: &str, text: &Utf8Bytes) {
        let st = self.lock();
        if st.rooms.contains_key(room) {
            return;
        }
        for sub in st.subscribers.values().filter(|s| s.room.is_none()) {
            let _ = sub.link.send(text, &self.metrics);
        }
    }

    /// A peer joined a room of another instance (for all-rooms watchers).
    pub fn watched_joined(&self, room: &str, info: &PeerInfo) {
        let text = to_text(&ServerFrame::PeerJoined {
            room: Cow::Borrowed(room),
            peer: watched(info),
        });
        self.to_all_rooms_watchers(room, &text);
    }

    /// A peer left a room of another instance (for all-rooms watchers).
    pub fn watched_left(&self, room: &str, peer_id: PeerId, reason: LeaveReason) {
        let text = to_text(&ServerFrame::PeerLeft {
            room: Cow::Borrowed(room),
            peer_id,
            reason,
        });
        self.to_all_rooms_watchers(room, &text);
    }

    /// A stats report in a room of another instance (for all-rooms watchers).
    pub fn watched_stats(&self, room: &str, peer_id: PeerId, links: &Value) {
        let text = to_text(&ServerFrame::Stats {
            room: Cow::Borrowed(room),
            peer_id,
            links: Cow::Borrowed(links),
        });
        self.to_all_rooms_watchers(room, &text);
    }

    /// A frame another instance relayed to one of this instance's peers.
    pub fn deliver(&self, room: &str, to: PeerId, text: &str) {
        let st = self.lock();
        if let Some(link) = st
            .rooms
            .get(room)
            .and_then(|r| r.peers.get(&to))
            .and_then(|s| s.link.as_ref())
        {
            let _ = link.send(&Utf8Bytes::from(text), &self.metrics);
        }
    }

    /// This instance's own peers, as Redis keeps them (home left for the broker to fill),
    /// each with its room's application.
    pub fn local_records(&self) -> Vec<(String, Option<AppInfo>, Record)> {
        let st = self.lock();
        st.rooms
            .iter()
            .flat_map(|(room, r)| {
                r.peers.values().filter(|p| p.home.is_none()).map(|p| {
                    (
                        room.clone(),
                        r.app.clone(),
                        Record {
                            info: p.info.clone(),
                            token: p.token.clone(),
                            home: String::new(),
                        },
                    )
                })
            })
            .collect()
    }

    /// The instances this one mirrors peers of (orphans aside).
    pub fn remote_homes(&self) -> HashSet<String> {
        let st = self.lock();
        st.rooms
            .values()
            .flat_map(|r| r.peers.values())
            .filter(|p| !p.orphaned)
            .filter_map(|p| p.home.clone())
            .collect()
    }

    /// These instances died: each of their peers waits out the reconnect grace for a resume
    /// on another instance, then leaves its room (`lost`).
    pub fn homes_lost(self: &Arc<Self>, dead: &HashSet<String>) {
        let mut orphans = Vec::new();
        {
            let mut st = self.lock();
            for (room, r) in &mut st.rooms {
                for slot in r.peers.values_mut() {
                    if let Some(home) = slot.home.as_ref().filter(|h| dead.contains(*h))
                        && !slot.orphaned
                    {
                        slot.orphaned = true;
                        orphans.push((room.clone(), slot.info.id, home.clone()));
                    }
                }
            }
        }
        for (room, peer_id, home) in orphans {
            tracing::info!(%room, peer_id, %home, "peer's instance is gone; waiting for its resume");
            let hub = Arc::clone(self);
            tokio::spawn(async move {
                tokio::time::sleep(hub.config.reconnect_grace).await;
                if let Some(broker) = hub.broker() {
                    broker.evict(&room, peer_id, &home).await;
                }
            });
        }
    }

    /// Watch `room` (or all rooms) and get their current state.
    pub fn subscribe(&self, room: Option<String>, link: Link) -> Vec<RoomSnapshot> {
        let mut st = self.lock();
        let rooms = match &room {
            Some(name) => st
                .rooms
                .get(name)
                .map(|r| vec![r.snapshot(name)])
                .unwrap_or_default(),
            None => st.rooms.iter().map(|(n, r)| r.snapshot(n)).collect(),
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

    fn link(hub: &Hub) -> (Link, mpsc::Receiver<Utf8Bytes>) {
        Link::new(hub.next_conn_id(), 8, Arc::new(Kick::default()))
    }

    fn join(room: &str, resume: Option<Resume>) -> JoinRequest {
        JoinRequest {
            room: room.into(),
            kind: PeerKind::Browser,
            udp_addr: None,
            udp_key: None,
            client: LOOPBACK,
            instance: None,
            app: None,
            resume,
            id: None,
        }
    }

    #[test]
    fn a_connection_whose_peer_was_resumed_elsewhere_no_longer_speaks_for_it() {
        let hub = hub();
        let (a, mut a_rx) = link(&hub);
        let (old, _old_rx) = link(&hub);
        let (new, _new_rx) = link(&hub);
        let (a_conn, old_conn) = (a.conn, old.conn);
        let ida = hub.join(join("r", None), a).unwrap().peer_id;
        let b = hub.join(join("r", None), old).unwrap();
        a_rx.try_recv().unwrap(); // b's peer_joined
        let resume = Resume {
            peer_id: b.peer_id,
            token: b.token,
        };
        hub.join(join("r", Some(resume)), new).unwrap();

        let data = Value::from("stale");
        assert_eq!(
            hub.relay("r", b.peer_id, old_conn, ida, &data),
            Err(SignalError::NotJoined)
        );
        assert_eq!(
            hub.report_stats("r", b.peer_id, old_conn, &data),
            Err(SignalError::NotJoined)
        );
        hub.leave("r", b.peer_id, old_conn, LeaveReason::Left);
        assert!(
            a_rx.try_recv().is_err(),
            "the room heard the stale connection"
        );
        assert!(hub.lock().rooms["r"].peers.contains_key(&b.peer_id));
        // The holder itself still speaks for its peer.
        assert_eq!(hub.relay("r", ida, a_conn, b.peer_id, &data), Ok(()));
    }

    #[test]
    fn a_connection_whose_peer_was_replaced_by_its_instance_no_longer_speaks_for_it() {
        let hub = hub();
        let (a, mut a_rx) = link(&hub);
        let (old, _old_rx) = link(&hub);
        let (new, _new_rx) = link(&hub);
        let (a_conn, old_conn, new_conn) = (a.conn, old.conn, new.conn);
        let same = || JoinRequest {
            instance: Some("prog-1".into()),
            ..join("r", None)
        };
        let ida = hub.join(join("r", None), a).unwrap().peer_id;
        let idold = hub.join(same(), old).unwrap().peer_id;
        let idnew = hub.join(same(), new).unwrap().peer_id;
        let frames: Vec<Value> = std::iter::from_fn(|| a_rx.try_recv().ok())
            .map(|t| serde_json::from_str(t.as_str()).unwrap())
            .collect();
        let kinds: Vec<_> = frames.iter().map(|f| f["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["peer_joined", "peer_left", "peer_joined"]);
        assert_eq!(frames[1]["reason"], "replaced");

        assert_eq!(
            hub.relay("r", idold, old_conn, ida, &Value::Null),
            Err(SignalError::NotJoined)
        );
        hub.leave("r", idold, old_conn, LeaveReason::Left);
        assert!(
            a_rx.try_recv().is_err(),
            "the room heard the replaced connection"
        );
        let st = hub.lock();
        let ids: Vec<_> = st.rooms["r"].peers.keys().copied().collect();
        assert_eq!(ids, [ida, idnew]);
        assert!(st.rooms["r"].held_by(idnew, new_conn) && st.rooms["r"].held_by(ida, a_conn));
    }
}
