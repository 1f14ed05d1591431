//! What the server calls: [`Broker::start`], the steps a session waits for (they read and
//! write Redis directly, and fail with [`SignalError::BrokerUnavailable`] while it is out of
//! reach), and the writes the hub makes, queued in order for the task (`task.rs`).

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{
        Arc, Mutex, OnceLock, Weak,
        atomic::{AtomicBool, Ordering},
    },
};

use ackwire_signalling::rules::{RuleError, tokens_match};
use ackwire_signalling::{
    AppInfo, LeaveReason, PeerId, PeerInfo, Resume, Role, RoomSnapshot, Topology,
};
use redis::{AsyncCommands, aio::MultiplexedConnection};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{
    Broker, BrokerError, Mirror, lock,
    schema::{
        Delivery, NEXT_PEER_KEY, RESERVED, ROOM_PATTERN, ROOMS_KEY, Record, RoomEvent, app_json,
        app_key, host_key, identities_key, instance_channel, parse_app, peers_key, room_channel,
        topology_key,
    },
    scripts::Scripts,
    task::Op,
};
use crate::{
    error::SignalError,
    metrics::{LostWrite, Metrics},
};

impl Broker {
    /// A broker for the Redis at `url` (checked by the config), and its task, which connects
    /// and keeps reconnecting; `hub` hears what the other instances do, and writes lost to a
    /// stopped task are counted in `metrics`.
    pub fn start<M: Mirror + 'static>(
        url: &str,
        hub: &Arc<M>,
        metrics: Arc<Metrics>,
    ) -> Result<Arc<Broker>, redis::RedisError> {
        let (ops, rx) = mpsc::unbounded_channel();
        let client = redis::Client::open(url)?;
        let broker = Arc::new_cyclic(|this| Broker {
            instance: format!("{:016x}", rand::random::<u64>()),
            client,
            conn: Mutex::new(None),
            sink: Mutex::new(None),
            rooms: Mutex::new(HashMap::new()),
            ops,
            healthy: AtomicBool::new(false),
            hub: OnceLock::new(),
            this: this.clone(),
            scripts: Scripts::new(),
            epoch: Mutex::new(None),
            watching_all: AtomicBool::new(false),
            metrics,
        });
        let hub: Weak<M> = Arc::downgrade(hub);
        let _ = broker.hub.set(hub);
        let task = tokio::spawn(Arc::clone(&broker).run(rx));
        let instance = broker.instance.clone();
        // The task never returns: it ends only by a panic (or with the runtime). The instance
        // then refuses joins and fails `/healthz` by itself (`healthy`); this says why, once.
        tokio::spawn(async move {
            if let Err(err) = task.await
                && err.is_panic()
            {
                tracing::error!(%instance, %err, "the broker's Redis task stopped: joins are refused and /healthz answers 503 until this instance restarts");
            }
        });
        Ok(broker)
    }

    /// Whether Redis answers now and the task that talks to it runs (joins are refused while
    /// not).
    pub fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed) && !self.task_stopped()
    }

    /// Whether the task has stopped: its end of the queue is gone with it.
    fn task_stopped(&self) -> bool {
        self.ops.is_closed()
    }

    pub(super) fn hub(&self) -> Option<Arc<dyn Mirror>> {
        self.hub.get().and_then(Weak::upgrade)
    }

    pub(super) fn connection(&self) -> Result<MultiplexedConnection, SignalError> {
        lock(&self.conn)
            .clone()
            .filter(|_| self.healthy())
            .ok_or(SignalError::BrokerUnavailable)
    }

    // ----- what sessions wait for -----

    /// Listen to `room` and load its peers from the other instances into the hub, once; a
    /// join or a watch of the room waits for this, so its welcome lists every peer.
    pub async fn enter(&self, room: &str) -> Result<(), SignalError> {
        // The task reads the room's events and sends its peers' news: without it, the room
        // here would be cut off from its peers elsewhere.
        if self.task_stopped() {
            return Err(BrokerError::TaskStopped.into());
        }
        let cell = lock(&self.rooms)
            .entry(room.to_owned())
            .or_default()
            .clone();
        cell.get_or_try_init(|| self.load(room)).await.map(|_| ())
    }

    /// Subscribe first, then read: a peer that joins in between is heard of twice, which the
    /// hub takes as once; none is missed.
    async fn load(&self, room: &str) -> Result<(), SignalError> {
        let mut sink = lock(&self.sink)
            .clone()
            .ok_or(SignalError::BrokerUnavailable)?;
        sink.subscribe(room_channel(room))
            .await
            .map_err(unavailable)?;
        let records = self.records(room).await?;
        let app = self.room_app(room).await?;
        if let Some(hub) = self.hub() {
            hub.mirror(room, &self.instance, records, app);
        }
        Ok(())
    }

    /// The room's application as Redis holds it; `None` when it holds none (an empty room)
    /// or one this version cannot read.
    pub(super) async fn room_app(
        &self,
        room: &str,
    ) -> Result<Option<Option<AppInfo>>, SignalError> {
        let mut conn = self.connection()?;
        let text: Option<String> = conn.get(app_key(room)).await.map_err(unavailable)?;
        Ok(text.and_then(|t| parse_app(room, &t)))
    }

    pub(super) async fn records(&self, room: &str) -> Result<Vec<Record>, SignalError> {
        let mut conn = self.connection()?;
        let all: HashMap<String, String> =
            conn.hgetall(peers_key(room)).await.map_err(unavailable)?;
        Ok(all
            .values()
            .filter(|v| v.as_str() != RESERVED)
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect())
    }

    /// A place in `room` for a new peer playing `app` as `role`, within the limits every
    /// instance shares (room size, the cap of the role's topology; rooms; rooms created per
    /// address per minute) and in a room that plays `app` and links as the role does (or is
    /// empty: then it plays `app` and links so from now on); `taken` are the peers whose
    /// places it takes (its program's old peer it replaces, a dropped host's seat). With an
    /// `identity` (its join ticket's), the peer holding it in the room, on whatever instance,
    /// gives its place and identity up, in the same step: the new peer's id, and that peer's
    /// if there was one (the join replaces it).
    pub async fn reserve(
        &self,
        room: &str,
        taken: &[PeerId],
        client: IpAddr,
        limits: (usize, usize, u32),
        (app, role, identity): (Option<&AppInfo>, Role, Option<&str>),
    ) -> Result<(PeerId, Option<PeerId>), SignalError> {
        let (max_peers, max_rooms, per_ip) = limits;
        let taken: Vec<String> = taken.iter().map(PeerId::to_string).collect();
        let mut conn = self.connection()?;
        let (answer, room_has): (i64, String) = self
            .scripts
            .reserve
            .key(peers_key(room))
            .key(NEXT_PEER_KEY)
            .key(ROOMS_KEY)
            .key(format!("ackwire:created:{client}"))
            .key(app_key(room))
            .key(topology_key(room))
            .key(host_key(room))
            .key(identities_key(room))
            .arg(max_peers)
            .arg(taken.join(" "))
            .arg(room)
            .arg(max_rooms)
            .arg(per_ip)
            .arg(app_json(app))
            .arg(role.topology().as_str())
            .arg(u8::from(role == Role::Host))
            .arg(identity.unwrap_or(""))
            .invoke_async(&mut conn)
            .await
            .map_err(unavailable)?;
        // What Redis holds in a form this version cannot read (a later one wrote it) cannot be
        // named, nor a join checked against it.
        match answer {
            0 => Err(SignalError::RoomFull(room.to_owned())),
            -1 => Err(SignalError::TooManyRooms),
            -2 => Err(SignalError::RoomCreationLimited),
            -3 => match parse_app(room, &room_has) {
                Some(room_app) => Err(SignalError::app_mismatch(room, room_app, app.cloned())),
                None => Err(SignalError::BrokerUnavailable),
            },
            -4 => match serde_json::from_value::<Topology>(Value::from(room_has)) {
                Ok(topology) => Err(SignalError::Rule(RuleError::TopologyMismatch {
                    room: room.to_owned(),
                    topology,
                    role,
                })),
                Err(_) => Err(SignalError::BrokerUnavailable),
            },
            -5 => match room_has.parse::<PeerId>() {
                Ok(host) => Err(SignalError::Rule(RuleError::HostTaken {
                    room: room.to_owned(),
                    host,
                })),
                Err(_) => Err(SignalError::BrokerUnavailable),
            },
            id => Ok((id as PeerId, room_has.parse::<PeerId>().ok())),
        }
    }

    /// Takes over a peer another instance held (the resume of a client whose socket, or
    /// whose instance, went away): checks the token, then moves the record here with
    /// `token` as its new one. The peer's info, for the hub.
    pub async fn take_over(
        &self,
        room: &str,
        resume: &Resume,
        token: &str,
    ) -> Result<PeerInfo, SignalError> {
        let rejected = || SignalError::ResumeRejected(resume.peer_id);
        let mut conn = self.connection()?;
        let old: Option<String> = conn
            .hget(peers_key(room), resume.peer_id)
            .await
            .map_err(unavailable)?;
        let old = old.ok_or_else(rejected)?;
        let record: Record = serde_json::from_str(&old).map_err(|_| rejected())?;
        if !tokens_match(&record.token, &resume.token) {
            return Err(rejected());
        }
        let moved = Record {
            token: token.to_owned(),
            home: self.instance.clone(),
            ..record
        };
        let new = serde_json::to_string(&moved).map_err(|_| rejected())?;
        let swapped: i64 = self
            .scripts
            .swap
            .key(peers_key(room))
            .arg(resume.peer_id)
            .arg(&old)
            .arg(&new)
            .invoke_async(&mut conn)
            .await
            .map_err(unavailable)?;
        if swapped != 1 {
            // Taken over (or evicted) by someone else meanwhile.
            return Err(rejected());
        }
        // The instances serving the room must hear where the peer lives now, or they keep
        // routing to its old home: without the task, the resume fails.
        self.publish_event(
            room,
            &RoomEvent::Moved {
                origin: self.instance.clone(),
                peer: moved.info.clone(),
                home: self.instance.clone(),
            },
        )?;
        Ok(moved.info)
    }

    /// For an all-rooms dashboard: listen to every room from now on, and every room as Redis
    /// has it now (peers as dashboards see them).
    pub async fn watch_all(&self) -> Result<Vec<RoomSnapshot>, SignalError> {
        if !self.watching_all.swap(true, Ordering::Relaxed) {
            let sink = lock(&self.sink).clone();
            let subscribed = match sink {
                Some(mut sink) => sink.psubscribe(ROOM_PATTERN).await.map_err(unavailable),
                None => Err(SignalError::BrokerUnavailable),
            };
            if let Err(err) = subscribed {
                self.watching_all.store(false, Ordering::Relaxed);
                return Err(err);
            }
        }
        let mut conn = self.connection()?;
        let mut rooms: Vec<String> = conn.smembers(ROOMS_KEY).await.map_err(unavailable)?;
        rooms.sort_unstable();
        let apps: Vec<Option<String>> = if rooms.is_empty() {
            Vec::new()
        } else {
            let keys: Vec<String> = rooms.iter().map(|r| app_key(r)).collect();
            conn.mget(keys).await.map_err(unavailable)?
        };
        let mut snapshots = Vec::with_capacity(rooms.len());
        for (room, app) in rooms.into_iter().zip(apps) {
            let mut peers: Vec<PeerInfo> = self
                .records(&room)
                .await?
                .into_iter()
                .map(|r| r.info.watched())
                .collect();
            peers.sort_unstable_by_key(|p| p.id);
            if !peers.is_empty() {
                let app = app.and_then(|text| parse_app(&room, &text)).flatten();
                // Its members' roles say how it links: a host room's are hosts and clients.
                let topology = match peers.iter().any(|p| p.role != Role::Peer) {
                    true => Topology::Host,
                    false => Topology::Mesh,
                };
                snapshots.push(RoomSnapshot {
                    room,
                    app,
                    topology,
                    peers,
                });
            }
        }
        Ok(snapshots)
    }

    /// Rooms and peers of every instance, for `/metrics`.
    pub async fn totals(&self) -> Result<(i64, i64), SignalError> {
        let mut conn = self.connection()?;
        let rooms: Vec<String> = conn.smembers(ROOMS_KEY).await.map_err(unavailable)?;
        let mut pipe = redis::pipe();
        for room in &rooms {
            pipe.hlen(peers_key(room));
        }
        let sizes: Vec<i64> = if rooms.is_empty() {
            Vec::new()
        } else {
            pipe.query_async(&mut conn).await.map_err(unavailable)?
        };
        Ok((rooms.len() as i64, sizes.iter().sum()))
    }

    // ----- what the hub tells the others (queued, in order) -----
    //
    // The hub makes these while it carries out a room's rules, with no one to answer: once
    // the task has stopped each is counted as lost (`/metrics`), and the steps sessions wait
    // for (above) refuse new joins.

    /// A local peer got a new token (a resume): store it, if its place is still there.
    pub fn put(&self, room: &str, info: &PeerInfo, token: &str) {
        self.send_put(room, info, token, (None, true), LostWrite::Token);
    }

    /// A local peer joined the room, which plays `app`: store it and tell the room. A fresh
    /// join's (`reserved`) is stored only if its reserved place is still there: another join
    /// of its identity may have taken it meanwhile, and the hub then hears that the peer was
    /// replaced ([`Mirror::place_lost`]). A peer put back is stored whatever Redis holds.
    pub fn joined(
        &self,
        room: &str,
        info: &PeerInfo,
        token: &str,
        app: Option<&AppInfo>,
        reserved: bool,
    ) {
        let put = (Some(app.cloned()), reserved);
        self.send_put(room, info, token, put, LostWrite::Joined);
    }

    fn send_put(
        &self,
        room: &str,
        info: &PeerInfo,
        token: &str,
        (announce, if_present): (Option<Option<AppInfo>>, bool),
        write: LostWrite,
    ) {
        let record = Box::new(Record {
            info: info.clone(),
            token: token.to_owned(),
            home: self.instance.clone(),
        });
        let op = Op::Put {
            room: room.to_owned(),
            record,
            announce,
            if_present,
        };
        self.queue_or_count(op, write);
    }

    /// A local peer changed what the room sees of it (a host's new WebTransport service):
    /// store it, if its place is still there, and tell the room (after the store, in order).
    pub fn updated(&self, room: &str, info: &PeerInfo, token: &str) {
        self.send_put(room, info, token, (None, true), LostWrite::Updated);
        let event = RoomEvent::Updated {
            origin: self.instance.clone(),
            peer: info.clone(),
        };
        if let Err(err) = self.publish_event(room, &event) {
            self.lost(LostWrite::Updated, err);
        }
    }

    /// A local peer left.
    pub fn left(&self, room: &str, peer_id: PeerId, reason: LeaveReason) {
        let op = Op::Left {
            room: room.to_owned(),
            peer_id,
            reason,
        };
        self.queue_or_count(op, LostWrite::Left);
    }

    /// A reservation no join took, made for a join with `identity` (if any) that was to
    /// replace `replaced` (if any): the identity goes back to that peer.
    pub fn release(
        &self,
        room: &str,
        peer_id: PeerId,
        (identity, replaced): (Option<&str>, Option<PeerId>),
    ) {
        let op = Op::Release {
            room: room.to_owned(),
            peer_id,
            identity: identity.map(str::to_owned),
            replaced,
        };
        self.queue_or_count(op, LostWrite::Release);
    }

    /// A frame for a peer `home` holds.
    /// Refused while Redis is out of reach or the task has stopped: a signal is worth sending
    /// now or not at all, and queueing them would grow without bound during an outage.
    pub fn forward(
        &self,
        home: &str,
        room: &str,
        to: PeerId,
        text: &str,
    ) -> Result<(), SignalError> {
        if !self.healthy() {
            return Err(SignalError::BrokerUnavailable);
        }
        let message = serde_json::to_string(&Delivery {
            room: room.to_owned(),
            to,
            text: text.to_owned(),
        })
        .map_err(|e| SignalError::Malformed(e.to_string()))?;
        let op = Op::Publish {
            channel: instance_channel(home),
            message,
        };
        Ok(self.queue(op)?)
    }

    /// A local peer's stats report, for the room's watchers on other instances (dropped while
    /// Redis is out of reach and the task reconnects: the next report follows within seconds).
    pub fn stats(&self, room: &str, peer_id: PeerId, links: &Value) {
        if !self.healthy() && !self.task_stopped() {
            return;
        }
        let event = RoomEvent::Stats {
            origin: self.instance.clone(),
            peer_id,
            links: links.clone(),
        };
        if let Err(err) = self.publish_event(room, &event) {
            self.lost(LostWrite::Stats, err);
        }
    }

    /// No local peer or watcher is in `room` any more.
    pub fn forget(&self, room: &str) {
        lock(&self.rooms).remove(room);
        let op = Op::Forget {
            room: room.to_owned(),
        };
        self.queue_or_count(op, LostWrite::Forget);
    }

    pub(super) fn publish_event(&self, room: &str, event: &RoomEvent) -> Result<(), BrokerError> {
        match serde_json::to_string(event) {
            Ok(message) => self.queue(Op::Publish {
                channel: room_channel(room),
                message,
            }),
            // Our own types always serialise.
            Err(err) => {
                tracing::error!(%err, "unwritable broker event");
                Ok(())
            }
        }
    }

    /// Hands `op` to the task, in order after every earlier write.
    fn queue(&self, op: Op) -> Result<(), BrokerError> {
        self.ops.send(op).map_err(|_| BrokerError::TaskStopped)
    }

    /// [`Broker::queue`] for a write no caller waits on: lost if the task has stopped.
    fn queue_or_count(&self, op: Op, write: LostWrite) {
        if let Err(err) = self.queue(op) {
            self.lost(write, err);
        }
    }

    /// Counts a write that will never reach Redis (the task said why once, loudly).
    pub(super) fn lost(&self, write: LostWrite, err: BrokerError) {
        tracing::debug!(%err, write = write.as_str(), "broker write lost");
        self.metrics.broker_write_lost(write);
    }
}

fn unavailable(err: redis::RedisError) -> SignalError {
    tracing::debug!(%err, "broker request failed");
    SignalError::BrokerUnavailable
}
