//! Rooms shared by several `ackwire-signal` instances through Redis (`--redis`); the design,
//! the keys and the failure cases are in docs/scale-out.md.
//!
//! Redis holds what every instance must agree on: each room's peers (their info, resume
//! token and home instance), the peer id counter, the set of rooms and which instances are
//! alive. Each instance keeps its own hub (`rooms::Hub`, which the broker reaches only
//! through [`Mirror`]) for the sockets it holds, plus a mirror of the other instances' peers
//! in the rooms it serves; events reach it over Redis pub/sub:
//! - `ackwire:room:{room}`: joins, leaves, moves (a resume on another instance) and stats
//!   reports of one room, published by the instance where they happen;
//! - `ackwire:to:{instance}`: frames for the peers an instance holds (relayed signals).
//!
//! Writes go out in order through one queue drained by the broker's task, so a room hears a
//! peer join before it hears its signals; session-facing steps that must be atomic across
//! instances (reserving a place in a room, taking a peer over, evicting a dead instance's
//! peer) are Lua scripts.

use std::{
    collections::{HashMap, HashSet},
    net::IpAddr,
    sync::{
        Arc, Mutex, OnceLock, Weak,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use ackwire_signalling::rules::RuleError;
use ackwire_signalling::{
    AppInfo, LeaveReason, PeerId, PeerInfo, Resume, Role, RoomSnapshot, Topology,
};
use futures_util::StreamExt;
use redis::{
    AsyncCommands, Script,
    aio::{MultiplexedConnection, PubSubSink},
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{OnceCell, mpsc};

use ackwire_signalling::rules::tokens_match;

use crate::error::SignalError;

/// What the broker tells this instance's rooms of the other instances (the hub implements
/// it; the broker knows no hub).
pub trait Mirror: Send + Sync + std::fmt::Debug {
    /// The key of network tags every instance shares from now on.
    fn set_network_key(&self, key: [u8; 32]);
    /// The peers other instances serve in `room` (`me` is this instance), read when this
    /// instance starts serving it; `app`: the room's application as Redis holds it (`None`
    /// when it holds none).
    fn mirror(&self, room: &str, me: &str, records: Vec<Record>, app: Option<Option<AppInfo>>);
    /// As [`Mirror::mirror`], after Redis was out of reach: remote peers it no longer lists
    /// are gone.
    fn resync(&self, room: &str, me: &str, records: Vec<Record>, app: Option<Option<AppInfo>>);
    /// Another instance's peer joined a room this instance serves, which plays `app`.
    fn mirror_joined(&self, room: &str, info: PeerInfo, home: String, app: Option<AppInfo>);
    /// A peer of a room this instance serves left on another instance (or was evicted, or
    /// replaced).
    fn mirror_left(&self, room: &str, peer_id: PeerId, reason: LeaveReason);
    /// A peer resumed on `home`.
    fn mirror_moved(&self, room: &str, info: PeerInfo, home: String);
    /// Another instance's peer reported stats, for this instance's watchers of the room.
    fn mirror_stats(&self, room: &str, peer_id: PeerId, links: &Value);
    /// A peer joined a room of another instance (for all-rooms watchers).
    fn watched_joined(&self, room: &str, info: &PeerInfo);
    /// A peer left a room of another instance (for all-rooms watchers).
    fn watched_left(&self, room: &str, peer_id: PeerId, reason: LeaveReason);
    /// A stats report in a room of another instance (for all-rooms watchers).
    fn watched_stats(&self, room: &str, peer_id: PeerId, links: &Value);
    /// A frame another instance relayed to one of this instance's peers.
    fn deliver(&self, room: &str, to: PeerId, text: &str);
    /// This instance's own peers, as Redis keeps them (home left for the broker to fill),
    /// each with its room's application.
    fn local_records(&self) -> Vec<(String, Option<AppInfo>, Record)>;
    /// The instances this one mirrors peers of (orphans aside).
    fn remote_homes(&self) -> HashSet<String>;
    /// These instances died: their peers wait out the reconnect grace for a resume on
    /// another instance. The peers newly orphaned, as `(room, peer, home)`.
    fn homes_lost(&self, dead: &HashSet<String>) -> Vec<(String, PeerId, String)>;
    /// How long a peer whose connection dropped may resume.
    fn reconnect_grace(&self) -> Duration;
}

/// How often an instance says it is alive, and how long that lasts: an instance silent for
/// [`ALIVE_TTL`] is dead, and its peers wait out the reconnect grace for a resume elsewhere.
const ALIVE_EVERY: Duration = Duration::from_millis(1000);
const ALIVE_TTL: Duration = Duration::from_millis(3000);
/// Waits between attempts to reach Redis.
const RECONNECT_MIN: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(2);
/// Writes sent to Redis in one pipeline at most.
const BATCH: usize = 256;

/// A peer as Redis keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// What the room sees.
    pub info: PeerInfo,
    /// Its resume token.
    pub token: String,
    /// The instance holding its socket.
    pub home: String,
}

/// What one instance tells the others of a room.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum RoomEvent {
    Joined {
        origin: String,
        peer: PeerInfo,
        home: String,
        /// The room's application once the peer was in: the instances serving the room
        /// keep their copy (for snapshots) up to date with it.
        #[serde(default)]
        app: Option<AppInfo>,
    },
    Left {
        origin: String,
        peer_id: PeerId,
        reason: LeaveReason,
    },
    /// The peer resumed on `home`.
    Moved {
        origin: String,
        peer: PeerInfo,
        home: String,
    },
    Stats {
        origin: String,
        peer_id: PeerId,
        links: Value,
    },
}

/// A frame for one of the receiving instance's peers.
#[derive(Debug, Serialize, Deserialize)]
struct Delivery {
    room: String,
    to: PeerId,
    text: String,
}

/// A write, in the order the hub made it.
#[derive(Debug)]
enum Op {
    /// Store the record (a join, or a resume's new token) and, for a join (`announce`, with
    /// the room's application), tell the room.
    Put {
        room: String,
        record: Box<Record>,
        announce: Option<Option<AppInfo>>,
    },
    /// Drop the peer and tell the room.
    Left {
        room: String,
        peer_id: PeerId,
        reason: LeaveReason,
    },
    /// Give back a reserved place a join did not take.
    Release {
        room: String,
        peer_id: PeerId,
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

fn peers_key(room: &str) -> String {
    format!("ackwire:peers:{room}")
}

/// The application the room plays, as [`app_json`] writes it; set by the reservation of its
/// first member, gone with its last.
fn app_key(room: &str) -> String {
    format!("ackwire:app:{room}")
}

/// How the room links (`mesh` or `host`, [`Topology::as_str`]); set by the reservation of its
/// first member, gone with its last.
fn topology_key(room: &str) -> String {
    format!("ackwire:topology:{room}")
}

/// A host room's host seat: its host's peer id. Set by the reservation of a host's join,
/// gone with that host (or with the room's last peer).
fn host_key(room: &str) -> String {
    format!("ackwire:host:{room}")
}

/// A room's application as Redis keeps it: canonical JSON (serde writes the fields in one
/// order), `null` for none, so the scripts compare two by their text.
fn app_json(app: Option<&AppInfo>) -> String {
    serde_json::to_string(&app).unwrap_or_default()
}

/// Every room's channel, for all-rooms dashboards.
const ROOM_PATTERN: &str = "ackwire:room:*";

fn room_channel(room: &str) -> String {
    format!("ackwire:room:{room}")
}

fn instance_channel(instance: &str) -> String {
    format!("ackwire:to:{instance}")
}

fn alive_key(instance: &str) -> String {
    format!("ackwire:alive:{instance}")
}

const ROOMS_KEY: &str = "ackwire:rooms";
/// The key of network tags ([`PeerInfo::network`]), shared by all instances (hex).
const NETWORK_KEY: &str = "ackwire:network_key";
const NEXT_PEER_KEY: &str = "ackwire:next_peer";
/// Random, set by the first instance to reach a Redis without state: a new value means Redis
/// lost everything since this instance last saw it.
const EPOCH_KEY: &str = "ackwire:epoch";
/// The placeholder a reservation stores until its join completes.
const RESERVED: &str = "reserved";

/// Takes a place in a room if it has one and may exist, as `{answer, room's app or
/// topology}`: answer 0 when it is full (`ARGV[1]` peers, the cap of the join's topology), -1
/// when the server holds too many rooms, -2 when the client created too many rooms this
/// minute, -3 when the room plays another application than `ARGV[6]` (then with the room's),
/// -4 when it links otherwise than `ARGV[7]` (then with the room's topology), -5 when the join
/// is a host's (`ARGV[8]` is 1) and the room's host seat is another peer's (then with its
/// id); otherwise the new peer's id, held by a placeholder until the join's record replaces
/// it, and for a host the seat's. The places of the peers listed in `ARGV[2]`
/// (space-separated: the join's program's old peer, a dropped host's seat) are the join's,
/// and so is the seat if one of them holds it. The first member (none other left but those)
/// fixes the room's application and topology; a room whose application or topology Redis
/// lost (a restart) takes the joiner's.
const RESERVE: &str = r"
local peers, counter, rooms, created = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local app_key, topology_key, host_key = KEYS[5], KEYS[6], KEYS[7]
local max_peers, taken, room = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local max_rooms, per_ip, app, topology = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7]
local host = ARGV[8] == '1'
local n = redis.call('HLEN', peers)
if n == 0 then
  if redis.call('SCARD', rooms) >= max_rooms then return {-1, ''} end
  local made = redis.call('INCR', created)
  if made == 1 then redis.call('EXPIRE', created, 60) end
  if made > per_ip then return {-2, ''} end
end
local given = {}
for id in string.gmatch(taken, '%d+') do
  given[id] = true
  if redis.call('HEXISTS', peers, id) == 1 then n = n - 1 end
end
local current = redis.call('GET', app_key)
if n > 0 and current and current ~= app then return {-3, current} end
local shape = redis.call('GET', topology_key)
if n > 0 and shape and shape ~= topology then return {-4, shape} end
if host then
  local seat = redis.call('GET', host_key)
  if seat and not given[seat] and redis.call('HEXISTS', peers, seat) == 1 then
    return {-5, seat}
  end
end
if n >= max_peers then return {0, ''} end
local id = redis.call('INCR', counter)
redis.call('HSET', peers, id, 'reserved')
redis.call('SADD', rooms, room)
redis.call('SET', app_key, app)
redis.call('SET', topology_key, topology)
if host then redis.call('SET', host_key, id) end
return {id, ''}
";

/// Replaces a peer's record if it still holds `ARGV[2]` (the one its taker read): 1 if so.
const SWAP: &str = r"
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
";

/// Drops a peer, and the host seat if it holds it (and an emptied room, with its
/// application, topology and seat, which the next first member chooses afresh): with
/// `ARGV[2]`, only if its record is still that one.
const REMOVE: &str = r"
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
local gone = redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('GET', KEYS[5]) == ARGV[1] then redis.call('DEL', KEYS[5]) end
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[3])
  redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
end
return gone
";

/// Gives a Redis without state (new, or restarted without persistence) its epoch, the
/// network-tag key and an id counter that starts at `ARGV[3]` (the time in ms), so ids handed
/// out now never repeat ones peers of an earlier epoch still hold. The epoch and the key.
const INIT: &str = r"
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('SET', KEYS[2], ARGV[2])
  local now = tonumber(redis.call('GET', KEYS[3]) or '0')
  if now < tonumber(ARGV[3]) then redis.call('SET', KEYS[3], ARGV[3]) end
end
return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])}
";

/// Raises the id counter to at least `ARGV[1]` (after Redis came back empty).
const RAISE: &str = r"
local now = tonumber(redis.call('GET', KEYS[1]) or '0')
if now < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
";

/// This instance's link to Redis.
#[derive(Debug)]
pub struct Broker {
    /// This instance's name among the others: random, new at each start.
    instance: String,
    client: redis::Client,
    /// Commands, while Redis is reachable.
    conn: Mutex<Option<MultiplexedConnection>>,
    /// Subscriptions, while Redis is reachable.
    sink: Mutex<Option<PubSubSink>>,
    /// Rooms this instance listens to; each is loaded once (see [`Broker::enter`]).
    rooms: Mutex<HashMap<String, Arc<OnceCell<()>>>>,
    ops: mpsc::UnboundedSender<Op>,
    healthy: AtomicBool,
    hub: OnceLock<Weak<dyn Mirror>>,
    /// Itself, for the tasks it starts.
    this: Weak<Broker>,
    reserve: Script,
    swap: Script,
    remove: Script,
    raise: Script,
    init: Script,
    /// The Redis epoch this instance last saw.
    epoch: Mutex<Option<String>>,
    /// An all-rooms dashboard is (or was) connected here: this instance listens to every
    /// room's channel too.
    watching_all: AtomicBool,
}

impl Broker {
    /// A broker for the Redis at `url` (checked by the config), and its task, which connects
    /// and keeps reconnecting; `hub` hears what the other instances do.
    pub fn start<M: Mirror + 'static>(
        url: &str,
        hub: &Arc<M>,
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
            reserve: Script::new(RESERVE),
            swap: Script::new(SWAP),
            remove: Script::new(REMOVE),
            raise: Script::new(RAISE),
            init: Script::new(INIT),
            epoch: Mutex::new(None),
            watching_all: AtomicBool::new(false),
        });
        let hub: Weak<M> = Arc::downgrade(hub);
        let _ = broker.hub.set(hub);
        tokio::spawn(Arc::clone(&broker).run(rx));
        Ok(broker)
    }

    /// Whether Redis answers now.
    pub fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    fn hub(&self) -> Option<Arc<dyn Mirror>> {
        self.hub.get().and_then(Weak::upgrade)
    }

    fn connection(&self) -> Result<MultiplexedConnection, SignalError> {
        lock(&self.conn)
            .clone()
            .filter(|_| self.healthy())
            .ok_or(SignalError::BrokerUnavailable)
    }

    // ----- what sessions wait for -----

    /// Listen to `room` and load its peers from the other instances into the hub, once; a
    /// join or a watch of the room waits for this, so its welcome lists every peer.
    pub async fn enter(&self, room: &str) -> Result<(), SignalError> {
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
    async fn room_app(&self, room: &str) -> Result<Option<Option<AppInfo>>, SignalError> {
        let mut conn = self.connection()?;
        let text: Option<String> = conn.get(app_key(room)).await.map_err(unavailable)?;
        Ok(text.and_then(|t| parse_app(room, &t)))
    }

    async fn records(&self, room: &str) -> Result<Vec<Record>, SignalError> {
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
    /// places it takes (its program's old peer it replaces, a dropped host's seat).
    pub async fn reserve(
        &self,
        room: &str,
        taken: &[PeerId],
        client: IpAddr,
        limits: (usize, usize, u32),
        (app, role): (Option<&AppInfo>, Role),
    ) -> Result<PeerId, SignalError> {
        let (max_peers, max_rooms, per_ip) = limits;
        let taken: Vec<String> = taken.iter().map(PeerId::to_string).collect();
        let mut conn = self.connection()?;
        let (answer, room_has): (i64, String) = self
            .reserve
            .key(peers_key(room))
            .key(NEXT_PEER_KEY)
            .key(ROOMS_KEY)
            .key(format!("ackwire:created:{client}"))
            .key(app_key(room))
            .key(topology_key(room))
            .key(host_key(room))
            .arg(max_peers)
            .arg(taken.join(" "))
            .arg(room)
            .arg(max_rooms)
            .arg(per_ip)
            .arg(app_json(app))
            .arg(role.topology().as_str())
            .arg(u8::from(role == Role::Host))
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
            id => Ok(id as PeerId),
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
        self.publish_event(
            room,
            &RoomEvent::Moved {
                origin: self.instance.clone(),
                peer: moved.info.clone(),
                home: self.instance.clone(),
            },
        );
        Ok(moved.info)
    }

    /// Evicts a peer whose instance died, unless it resumed elsewhere meanwhile; the room
    /// hears `peer_left` (`lost`) once, from whichever instance evicts it.
    pub async fn evict(&self, room: &str, peer_id: PeerId, dead_home: &str) {
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
            .removal(room, peer_id, &current)
            .invoke_async(&mut conn)
            .await
            .unwrap_or(0);
        if removed == 1 {
            if let Some(hub) = self.hub() {
                hub.mirror_left(room, peer_id, LeaveReason::Lost);
            }
            self.publish_event(
                room,
                &RoomEvent::Left {
                    origin: self.instance.clone(),
                    peer_id,
                    reason: LeaveReason::Lost,
                },
            );
        }
    }

    /// The `remove` script for `peer_id` of `room`: only if its record is still `only`, or
    /// whatever it is with `""`.
    fn removal(&self, room: &str, peer_id: PeerId, only: &str) -> redis::ScriptInvocation<'_> {
        let mut call = self.remove.prepare_invoke();
        call.key(peers_key(room))
            .key(ROOMS_KEY)
            .key(app_key(room))
            .key(topology_key(room))
            .key(host_key(room))
            .arg(peer_id)
            .arg(only)
            .arg(room);
        call
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

    /// A local peer got a new token (a resume): store it.
    pub fn put(&self, room: &str, info: &PeerInfo, token: &str) {
        self.send_put(room, info, token, None);
    }

    /// A local peer joined the room, which plays `app`: store it and tell the room.
    pub fn joined(&self, room: &str, info: &PeerInfo, token: &str, app: Option<&AppInfo>) {
        self.send_put(room, info, token, Some(app.cloned()));
    }

    fn send_put(
        &self,
        room: &str,
        info: &PeerInfo,
        token: &str,
        announce: Option<Option<AppInfo>>,
    ) {
        let record = Box::new(Record {
            info: info.clone(),
            token: token.to_owned(),
            home: self.instance.clone(),
        });
        let _ = self.ops.send(Op::Put {
            room: room.to_owned(),
            record,
            announce,
        });
    }

    /// A local peer left.
    pub fn left(&self, room: &str, peer_id: PeerId, reason: LeaveReason) {
        let _ = self.ops.send(Op::Left {
            room: room.to_owned(),
            peer_id,
            reason,
        });
    }

    /// A reservation no join took.
    pub fn release(&self, room: &str, peer_id: PeerId) {
        let _ = self.ops.send(Op::Release {
            room: room.to_owned(),
            peer_id,
        });
    }

    /// A frame for a peer `home` holds.
    /// Refused while Redis is out of reach: a signal is worth sending now or not at all,
    /// and queueing them would grow without bound during an outage.
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
        let _ = self.ops.send(Op::Publish {
            channel: instance_channel(home),
            message,
        });
        Ok(())
    }

    /// A local peer's stats report, for the room's watchers on other instances (dropped while
    /// Redis is out of reach: the next report follows within seconds).
    pub fn stats(&self, room: &str, peer_id: PeerId, links: &Value) {
        if !self.healthy() {
            return;
        }
        self.publish_event(
            room,
            &RoomEvent::Stats {
                origin: self.instance.clone(),
                peer_id,
                links: links.clone(),
            },
        );
    }

    /// No local peer or watcher is in `room` any more.
    pub fn forget(&self, room: &str) {
        lock(&self.rooms).remove(room);
        let _ = self.ops.send(Op::Forget {
            room: room.to_owned(),
        });
    }

    fn publish_event(&self, room: &str, event: &RoomEvent) {
        if let Ok(message) = serde_json::to_string(event) {
            let _ = self.ops.send(Op::Publish {
                channel: room_channel(room),
                message,
            });
        }
    }

    // ----- the task -----

    async fn run(self: Arc<Self>, mut ops: mpsc::UnboundedReceiver<Op>) {
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
        // Pipelines run scripts by their hash: Redis must know them (again, if it restarted).
        for script in [
            &self.reserve,
            &self.swap,
            &self.remove,
            &self.raise,
            &self.init,
        ] {
            script.prepare_invoke().load_async(&mut conn).await?;
        }
        // One key for every instance's network tags, so they compare across instances.
        let hex = |bytes: [u8; 32]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let since_1970 = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let (epoch, shared): (String, String) = self
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
        for op in ops.iter() {
            match op {
                Op::Put {
                    room,
                    record,
                    announce,
                } => {
                    let text = serde_json::to_string(record).unwrap_or_default();
                    pipe.hset(peers_key(room), record.info.id, text)
                        .ignore()
                        .sadd(ROOMS_KEY, room)
                        .ignore();
                    if let Some(app) = announce {
                        // The reservation set them already; a peer put back after the others
                        // took this instance for dead may find its room emptied meanwhile.
                        pipe.set_nx(app_key(room), app_json(app.as_ref())).ignore();
                        let topology = record.info.role.topology();
                        pipe.set_nx(topology_key(room), topology.as_str()).ignore();
                        if record.info.role == Role::Host {
                            pipe.set_nx(host_key(room), record.info.id).ignore();
                        }
                        let event = RoomEvent::Joined {
                            origin: self.instance.clone(),
                            peer: record.info.clone(),
                            home: self.instance.clone(),
                            app: app.clone(),
                        };
                        let message = serde_json::to_string(&event).unwrap_or_default();
                        pipe.publish(room_channel(room), message).ignore();
                    }
                }
                Op::Left {
                    room,
                    peer_id,
                    reason,
                } => {
                    pipe.invoke_script(&self.removal(room, *peer_id, ""))
                        .ignore();
                    let event = RoomEvent::Left {
                        origin: self.instance.clone(),
                        peer_id: *peer_id,
                        reason: *reason,
                    };
                    let message = serde_json::to_string(&event).unwrap_or_default();
                    pipe.publish(room_channel(room), message).ignore();
                }
                Op::Release { room, peer_id } => {
                    pipe.invoke_script(&self.removal(room, *peer_id, RESERVED))
                        .ignore();
                }
                Op::Publish { channel, message } => {
                    pipe.publish(channel, message).ignore();
                }
                Op::Forget { room } => forget.push(room.clone()),
            }
        }
        if ops.iter().any(|op| !matches!(op, Op::Forget { .. })) {
            let () = pipe.query_async(conn).await?;
        }
        ops.clear();
        if !forget.is_empty() {
            let sink = lock(&self.sink).clone();
            if let Some(mut sink) = sink {
                for room in forget {
                    // Entered again meanwhile: keep listening.
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
                    RoomEvent::Moved { .. } => {}
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
}

fn parse_key(hex: &str) -> Option<[u8; 32]> {
    let mut key = [0u8; 32];
    if hex.len() != 64 {
        return None;
    }
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

/// A room's application from its [`app_json`] text; `None` (logged) for text this version
/// cannot read.
fn parse_app(room: &str, text: &str) -> Option<Option<AppInfo>> {
    serde_json::from_str(text)
        .inspect_err(|err| tracing::warn!(%room, %err, "unreadable application in Redis"))
        .ok()
}

fn unavailable(err: redis::RedisError) -> SignalError {
    tracing::debug!(%err, "broker request failed");
    SignalError::BrokerUnavailable
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
