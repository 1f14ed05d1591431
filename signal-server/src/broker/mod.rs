//! Rooms shared by several `ackwire-signal` instances through Redis (`--redis`); the design,
//! the keys and the failure cases are in docs/scale-out.md.
//!
//! Redis holds what every instance must agree on: each room's peers (their info, resume
//! token and home instance), the peer id counter, the set of rooms and which instances are
//! alive. Each instance keeps its own hub (`rooms::Hub`, which the broker reaches only
//! through [`Mirror`]) for the sockets it holds, plus a mirror of the other instances' peers
//! in the rooms it serves; events reach it over Redis pub/sub:
//! - `ackwire:room:{room}`: joins, leaves, updates (a host's new service), moves (a resume on
//!   another instance) and stats
//!   reports of one room, published by the instance where they happen;
//! - `ackwire:to:{instance}`: frames for the peers an instance holds (relayed signals).
//!
//! Writes go out in order through one queue drained by the broker's task, so a room hears a
//! peer join before it hears its signals; session-facing steps that must be atomic across
//! instances (reserving a place in a room, taking a peer over, evicting a dead instance's
//! peer) are Lua scripts.
//!
//! The parts:
//! - `api.rs`: what the server calls: starting the broker, the steps a session waits for
//!   (entering a room, reserving a place, taking a peer over, dashboards' snapshots) and the
//!   writes the hub queues (joins, leaves, relayed frames, stats);
//! - `task.rs`: the Redis task: the connection loop with its reconnects, the pub/sub stream
//!   handed to the hub, the queue of writes sent in pipelines, the alive beat and the
//!   eviction of dead instances' peers;
//! - `schema.rs`: what Redis holds and carries: the keys, the channels and the forms of
//!   their values and messages;
//! - `scripts.rs`: the Lua scripts, each in a `.lua` file beside it.

mod api;
mod schema;
mod scripts;
mod task;

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, OnceLock, Weak, atomic::AtomicBool},
    time::Duration,
};

use ackwire_signalling::{AppInfo, LeaveReason, PeerId, PeerInfo};
use redis::aio::{MultiplexedConnection, PubSubSink};
use serde_json::Value;
use tokio::sync::{OnceCell, mpsc};

pub use schema::Record;

use crate::{error::SignalError, metrics::Metrics};

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
    /// Another instance's peer changed what the room sees of it (a host's new WebTransport
    /// service).
    fn mirror_updated(&self, room: &str, info: PeerInfo);
    /// A peer resumed on `home`.
    fn mirror_moved(&self, room: &str, info: PeerInfo, home: String);
    /// This instance's peer `peer_id` of `room` lost its place in Redis before its record
    /// was stored: another join of its identity replaced it meanwhile, on some instance.
    fn place_lost(&self, room: &str, peer_id: PeerId);
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

/// This instance's link to Redis: the API the server calls is in `api.rs`, the task that
/// talks to Redis in `task.rs`.
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
    /// The writes, in order, to the task.
    ops: mpsc::UnboundedSender<task::Op>,
    healthy: AtomicBool,
    hub: OnceLock<Weak<dyn Mirror>>,
    /// Itself, for the tasks it starts.
    this: Weak<Broker>,
    scripts: scripts::Scripts,
    /// The Redis epoch this instance last saw.
    epoch: Mutex<Option<String>>,
    /// An all-rooms dashboard is (or was) connected here: this instance listens to every
    /// room's channel too.
    watching_all: AtomicBool,
    /// Where writes lost to a stopped task are counted.
    metrics: Arc<Metrics>,
}

/// Why the broker could not take a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
enum BrokerError {
    /// The task that talks to Redis has stopped (it panicked): nothing this instance writes
    /// reaches Redis or the other instances any more, until the instance restarts.
    #[error("the broker's Redis task has stopped")]
    TaskStopped,
}

impl From<BrokerError> for SignalError {
    /// A client hears what it hears while Redis is out of reach: its join or signal was
    /// refused, and the load balancer (told by `/healthz`) sends its retry elsewhere.
    fn from(err: BrokerError) -> SignalError {
        tracing::debug!(%err, "broker write refused");
        SignalError::BrokerUnavailable
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
