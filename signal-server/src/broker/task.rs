//! The Redis task: connects and keeps reconnecting, says this instance is alive, hands what
//! the other instances publish to the hub, sends the hub's writes in pipelines (in order,
//! kept while Redis is out of reach), and evicts the peers of instances that died.

use std::{
    collections::HashSet,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use ackwire_signalling::{AppInfo, LeaveReason, PeerId, Role};
use futures_util::StreamExt;
use redis::{AsyncCommands, aio::MultiplexedConnection};
use tokio::sync::mpsc;

use crate::metrics::LostWrite;

use super::{
    Broker, lock,
    schema::{
        Delivery, EPOCH_KEY, NETWORK_KEY, NEXT_PEER_KEY, RESERVED, ROOM_PATTERN, ROOMS_KEY, Record,
        RoomEvent, alive_key, app_json, app_key, host_key, identities_key, instance_channel,
        parse_key, peers_key, room_channel, topology_key,
    },
};

/// How often an instance says it is alive, and how long that lasts: an instance silent for
/// [`ALIVE_TTL`] is dead, and its peers wait out the reconnect grace for a resume elsewhere.
const ALIVE_EVERY: Duration = Duration::from_millis(1000);
const ALIVE_TTL: Duration = Duration::from_millis(3000);
/// Waits between attempts to reach Redis.
const RECONNECT_MIN: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(2);
/// Writes sent to Redis in one pipeline at most.
const BATCH: usize = 256;

/// A write, in the order the hub made it.
#[derive(Debug)]
pub(super) enum Op {
    /// Store the record (a join, or a resume's new token) and, for a join (`announce`, with
    /// the room's application), tell the room; with `if_present`, only while the peer's place
    /// is there (its reservation's placeholder, or its record).
    Put {
        room: String,
        record: Box<Record>,
        announce: Option<Option<AppInfo>>,
        if_present: bool,
    },
    /// Drop the peer and tell the room.
    Left {
        room: String,
        peer_id: PeerId,
        reason: LeaveReason,
    },
    /// Give back a reserved place a join did not take, and its identity (if it had one) to
    /// the peer it was to replace (if there was one).
    Release {
        room: String,
        peer_id: PeerId,
        identity: Option<String>,
        replaced: Option<PeerId>,
    },
    Publish {
        channel: String,
        message: String,
    },
    /// Stop listening to a room no local peer or watcher is in.
    Forget {
        room: String,
    },
}

impl Broker {
    pub(super) async fn run(self: Arc<Self>, mut ops: mpsc::UnboundedReceiver<Op>) {
        let mut wait = RECONNECT_MIN;
        // A batch that failed is sent again once Redis is back: joins and leaves must reach it.
        let mut unsent: Vec<Op> = Vec::new();
        loop {
            match self.connect().await {
                Ok((conn, stream)) => {
                    wait = RECONNECT_MIN;
                    tracing::info!(instance = %self.instance, "broker connected");
                    self.serve(conn, stream, &mut ops, &mut unsent).await;
                    self.healthy.store(false, Ordering::Relaxed);
                    *lock(&self.conn) = None;
                    *lock(&self.sink) = None;
                    tracing::warn!(instance = %self.instance, "broker connection lost; joins are refused until it is back");
                }
                Err(err) => {
                    tracing::debug!(%err, "broker unreachable");
                }
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(RECONNECT_MAX);
        }
    }

    async fn connect(
        &self,
    ) -> Result<(MultiplexedConnection, redis::aio::PubSubStream), redis::RedisError> {
        let mut conn = self.client.get_multiplexed_async_connection().await?;
        let (mut sink, stream) = self.client.get_async_pubsub().await?.split();
        sink.subscribe(instance_channel(&self.instance)).await?;
        let rooms: Vec<String> = lock(&self.rooms).keys().cloned().collect();
        for room in &rooms {
            sink.subscribe(room_channel(room)).await?;
        }
        if self.watching_all.load(Ordering::Relaxed) {
            sink.psubscribe(ROOM_PATTERN).await?;
        }
        self.alive(&mut conn).await?;
        for script in self.scripts.all() {
            script.prepare_invoke().load_async(&mut conn).await?;
        }
        // One key for every instance's network tags, so they compare across instances.
        let hex = |bytes: [u8; 32]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let since_1970 = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let (epoch, shared): (String, String) = self
            .scripts
            .init
            .key(EPOCH_KEY)
            .key(NETWORK_KEY)
            .key(NEXT_PEER_KEY)
            .arg(hex(rand::random()))
            .arg(hex(rand::random()))
            .arg(since_1970)
            .invoke_async(&mut conn)
            .await?;
        if let (Some(hub), Some(key)) = (self.hub(), parse_key(&shared)) {
            hub.set_network_key(key);
        }
        let previous = lock(&self.epoch).replace(epoch.clone());
        // Redis lost its state: the other instances' peers come back as they reconnect and
        // announce them, so none of ours is dropped for missing from a read made before that.
        let restarted = previous.is_some_and(|p| p != epoch);
        // Redis may have restarted empty: put back what this instance holds, and tell the rooms
        // (an instance that knew the peer all along takes it as news of nothing).
        if let Some(hub) = self.hub() {
            let local = hub.local_records();
            let top = local.iter().map(|(_, _, r)| r.info.id).max().unwrap_or(0);
            if top > 0 {
                let _: i64 = self
                    .scripts
                    .raise
                    .key(NEXT_PEER_KEY)
                    .arg(top)
                    .invoke_async(&mut conn)
                    .await?;
            }
            let mut pipe = redis::pipe();
            for (room, app, record) in &local {
                let text = serde_json::to_string(&Record {
                    home: self.instance.clone(),
                    ..record.clone()
                })
                .unwrap_or_default();
                let joined = RoomEvent::Joined {
                    origin: self.instance.clone(),
                    peer: record.info.clone(),
                    home: self.instance.clone(),
                    app: app.clone(),
                };
                pipe.hset(peers_key(room), record.info.id, text)
                    .ignore()
                    .sadd(ROOMS_KEY, room)
                    .ignore()
                    // A Redis that restarted empty learns the room's application and topology
                    // back; one that kept them (or heard them from another instance first)
                    // keeps its own.
                    .set_nx(app_key(room), app_json(app.as_ref()))
                    .ignore()
                    .set_nx(topology_key(room), record.info.role.topology().as_str())
                    .ignore();
                if record.info.role == Role::Host {
                    // Its seat too, unless another host holds it by now.
                    pipe.set_nx(host_key(room), record.info.id).ignore();
                }
                if let Some(identity) = &record.info.identity {
                    // And its identity, unless another peer took it meanwhile.
                    pipe.hset_nx(identities_key(room), identity, record.info.id)
                        .ignore();
                }
                pipe.publish(
                    room_channel(room),
                    serde_json::to_string(&joined).unwrap_or_default(),
                )
                .ignore();
            }
            if !local.is_empty() {
                let () = pipe.query_async(&mut conn).await?;
            }
        }
        *lock(&self.conn) = Some(conn.clone());
        *lock(&self.sink) = Some(sink);
        self.healthy.store(true, Ordering::Relaxed);
        // What the other instances did meanwhile.
        for room in rooms {
            let read = (self.records(&room).await, self.room_app(&room).await);
            if let ((Ok(records), Ok(app)), Some(hub)) = (read, self.hub()) {
                if restarted {
                    hub.mirror(&room, &self.instance, records, app);
                } else {
                    hub.resync(&room, &self.instance, records, app);
                }
            }
        }
        Ok((conn, stream))
    }

    async fn alive(&self, conn: &mut MultiplexedConnection) -> Result<(), redis::RedisError> {
        let ttl = ALIVE_TTL.as_millis() as u64;
        conn.pset_ex::<_, _, ()>(alive_key(&self.instance), 1, ttl)
            .await
    }

    async fn serve(
        &self,
        mut conn: MultiplexedConnection,
        mut stream: redis::aio::PubSubStream,
        ops: &mut mpsc::UnboundedReceiver<Op>,
        unsent: &mut Vec<Op>,
    ) {
        let mut beat = tokio::time::interval(ALIVE_EVERY);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if !unsent.is_empty() && self.write(&mut conn, unsent).await.is_err() {
                return;
            }
            tokio::select! {
                message = stream.next() => match message {
                    Some(message) => self.on_message(&message),
                    None => return,
                },
                op = ops.recv() => {
                    let Some(op) = op else { return };
                    unsent.push(op);
                    while unsent.len() < BATCH {
                        match ops.try_recv() {
                            Ok(op) => unsent.push(op),
                            Err(_) => break,
                        }
                    }
                }
                _ = beat.tick() => {
                    if self.alive(&mut conn).await.is_err() {
                        return;
                    }
                    self.check_homes(&mut conn).await;
                }
            }
        }
    }

    /// Sends `ops` in one pipeline; they stay queued if Redis does not take them.
    async fn write(
        &self,
        conn: &mut MultiplexedConnection,
        ops: &mut Vec<Op>,
    ) -> Result<(), redis::RedisError> {
        let mut pipe = redis::pipe();
        let mut forget = Vec::new();
        // The puts, in order: the script's answer says whether each found its place.
        let mut puts = Vec::new();
        for op in ops.iter() {
            match op {
                Op::Put {
                    room,
                    record,
                    announce,
                    if_present,
                } => {
                    let text = serde_json::to_string(record).unwrap_or_default();
                    // The reservation set the room's application, topology, seat and
                    // identity already; a peer put back after the others took this instance
                    // for dead may find its room emptied meanwhile.
                    let joined = announce.as_ref().map(|app| {
                        let event = RoomEvent::Joined {
                            origin: self.instance.clone(),
                            peer: record.info.clone(),
                            home: self.instance.clone(),
                            app: app.clone(),
                        };
                        let message = serde_json::to_string(&event).unwrap_or_default();
                        (app_json(app.as_ref()), message)
                    });
                    let announce = joined.as_ref().map(|(a, m)| (a.as_str(), m.as_str()));
                    let put = self
                        .scripts
                        .storing(room, record, &text, *if_present, announce);
                    pipe.invoke_script(&put);
                    puts.push((room.as_str(), record.info.id));
                }
                Op::Left {
                    room,
                    peer_id,
                    reason,
                } => {
                    let removal = self.scripts.removal(room, *peer_id, "", (None, None));
                    pipe.invoke_script(&removal).ignore();
                    let event = RoomEvent::Left {
                        origin: self.instance.clone(),
                        peer_id: *peer_id,
                        reason: *reason,
                    };
                    let message = serde_json::to_string(&event).unwrap_or_default();
                    pipe.publish(room_channel(room), message).ignore();
                }
                Op::Release {
                    room,
                    peer_id,
                    identity,
                    replaced,
                } => {
                    let owner = (identity.as_deref(), *replaced);
                    let removal = self.scripts.removal(room, *peer_id, RESERVED, owner);
                    pipe.invoke_script(&removal).ignore();
                }
                Op::Publish { channel, message } => {
                    pipe.publish(channel, message).ignore();
                }
                Op::Forget { room } => forget.push(room.clone()),
            }
        }
        if ops.iter().any(|op| !matches!(op, Op::Forget { .. })) {
            let stored: Vec<i64> = pipe.query_async(conn).await?;
            let lost: Vec<(String, PeerId)> = puts
                .into_iter()
                .zip(stored)
                .filter(|(_, stored)| *stored == 0)
                .map(|((room, id), _)| (room.to_owned(), id))
                .collect();
            if let Some(hub) = self.hub() {
                for (room, peer_id) in lost {
                    hub.place_lost(&room, peer_id);
                }
            }
        }
        ops.clear();
        if !forget.is_empty() {
            let sink = lock(&self.sink).clone();
            if let Some(mut sink) = sink {
                for room in forget {
                    // Entered again meanwhile: keep listening. An unsubscribe Redis does not
                    // take goes with its connection: a reconnect listens only to rooms entered.
                    if !lock(&self.rooms).contains_key(&room) {
                        let _ = sink.unsubscribe(room_channel(&room)).await;
                    }
                }
            }
        }
        Ok(())
    }

    fn on_message(&self, message: &redis::Msg) {
        let Some(hub) = self.hub() else { return };
        let Ok(payload) = message.get_payload::<String>() else {
            return;
        };
        let channel = message.get_channel_name();
        if let Some(room) = channel.strip_prefix("ackwire:room:") {
            let Ok(event) = serde_json::from_str::<RoomEvent>(&payload) else {
                tracing::warn!(%channel, "unreadable broker event");
                return;
            };
            let (RoomEvent::Joined { origin, .. }
            | RoomEvent::Left { origin, .. }
            | RoomEvent::Updated { origin, .. }
            | RoomEvent::Moved { origin, .. }
            | RoomEvent::Stats { origin, .. }) = &event;
            if *origin == self.instance {
                // Ours: this instance told its own peers and watchers already.
                return;
            }
            if message.from_pattern() {
                // For all-rooms dashboards. A room this instance serves also arrives on its
                // own channel, handled below.
                match event {
                    RoomEvent::Joined { peer, .. } => hub.watched_joined(room, &peer),
                    RoomEvent::Left {
                        peer_id, reason, ..
                    } => hub.watched_left(room, peer_id, reason),
                    RoomEvent::Stats { peer_id, links, .. } => {
                        hub.watched_stats(room, peer_id, &links);
                    }
                    // Dashboards see no WebTransport service.
                    RoomEvent::Moved { .. } | RoomEvent::Updated { .. } => {}
                }
                return;
            }
            match event {
                RoomEvent::Joined {
                    peer, home, app, ..
                } => hub.mirror_joined(room, peer, home, app),
                RoomEvent::Left {
                    peer_id, reason, ..
                } => hub.mirror_left(room, peer_id, reason),
                RoomEvent::Updated { peer, .. } => hub.mirror_updated(room, peer),
                RoomEvent::Moved { peer, home, .. } => hub.mirror_moved(room, peer, home),
                RoomEvent::Stats { peer_id, links, .. } => {
                    hub.mirror_stats(room, peer_id, &links);
                }
            }
        } else if let Ok(delivery) = serde_json::from_str::<Delivery>(&payload) {
            hub.deliver(&delivery.room, delivery.to, &delivery.text);
        }
    }

    /// Finds the instances the mirrored peers live on that stopped saying they are alive.
    async fn check_homes(&self, conn: &mut MultiplexedConnection) {
        let Some(hub) = self.hub() else { return };
        let homes: Vec<String> = hub.remote_homes().into_iter().collect();
        if homes.is_empty() {
            return;
        }
        let keys: Vec<String> = homes.iter().map(|h| alive_key(h)).collect();
        let Ok(alive): Result<Vec<Option<String>>, _> = conn.mget(&keys).await else {
            return;
        };
        let dead: HashSet<String> = homes
            .into_iter()
            .zip(alive)
            .filter(|(_, a)| a.is_none())
            .map(|(h, _)| h)
            .collect();
        if dead.is_empty() {
            return;
        }
        for (room, peer_id, home) in hub.homes_lost(&dead) {
            tracing::info!(%room, peer_id, %home, "peer's instance is gone; waiting for its resume");
            let (grace, this) = (hub.reconnect_grace(), self.this.clone());
            tokio::spawn(async move {
                tokio::time::sleep(grace).await;
                if let Some(broker) = this.upgrade() {
                    broker.evict(&room, peer_id, &home).await;
                }
            });
        }
    }

    /// Evicts a peer whose instance died, unless it resumed elsewhere meanwhile; the room
    /// hears `peer_left` (`lost`) once, from whichever instance evicts it.
    async fn evict(&self, room: &str, peer_id: PeerId, dead_home: &str) {
        let Ok(mut conn) = self.connection() else {
            return;
        };
        let Ok(current) = conn
            .hget::<_, _, Option<String>>(peers_key(room), peer_id)
            .await
        else {
            return;
        };
        let Some(current) = current else {
            // Gone from Redis already (evicted by another instance, or lost with a Redis that
            // restarted): each instance tells its own peers.
            if let Some(hub) = self.hub() {
                hub.mirror_left(room, peer_id, LeaveReason::Lost);
            }
            return;
        };
        let still_there =
            serde_json::from_str::<Record>(&current).is_ok_and(|r| r.home == dead_home);
        if !still_there {
            return;
        }
        let removed: i64 = self
            .scripts
            .removal(room, peer_id, &current, (None, None))
            .invoke_async(&mut conn)
            .await
            .unwrap_or(0);
        if removed == 1 {
            if let Some(hub) = self.hub() {
                hub.mirror_left(room, peer_id, LeaveReason::Lost);
            }
            let event = RoomEvent::Left {
                origin: self.instance.clone(),
                peer_id,
                reason: LeaveReason::Lost,
            };
            if let Err(err) = self.publish_event(room, &event) {
                self.lost(LostWrite::Evicted, err);
            }
        }
    }
}
