//! The broker alone against a real `redis-server` on loopback, with a hub of the test's own
//! (a [`Mirror`] that says what it hears), for what the server's own hub never does: die
//! inside the broker's task.

use std::{collections::HashSet, sync::Arc, time::Duration};

use crate::common::{WAIT, redis::Redis};
use ackwire_signal::{
    SignalError,
    broker::{Broker, Mirror, Record},
    metrics::Metrics,
};
use ackwire_signalling::{AppInfo, LeaveReason, PeerId, PeerInfo};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// What the test hub was told, in order.
#[derive(Debug, PartialEq, Eq)]
enum Heard {
    /// The broker reached Redis (it says so after it subscribed to its own channel).
    NetworkKey,
    /// A relayed frame reached the hub, which then panicked: a bug of the hub, inside the
    /// broker's task.
    Delivered,
}

/// A hub that mirrors nothing, says when the broker connected, and panics on a delivery.
#[derive(Debug)]
struct PanickingHub {
    heard: mpsc::UnboundedSender<Heard>,
}

impl Mirror for PanickingHub {
    fn set_network_key(&self, _key: [u8; 32]) {
        self.heard.send(Heard::NetworkKey).unwrap();
    }
    fn mirror(&self, _: &str, _: &str, _: Vec<Record>, _: Option<Option<AppInfo>>) {}
    fn resync(&self, _: &str, _: &str, _: Vec<Record>, _: Option<Option<AppInfo>>) {}
    fn mirror_joined(&self, _: &str, _: PeerInfo, _: String, _: Option<AppInfo>) {}
    fn mirror_left(&self, _: &str, _: PeerId, _: LeaveReason) {}
    fn mirror_updated(&self, _: &str, _: PeerInfo) {}
    fn mirror_moved(&self, _: &str, _: PeerInfo, _: String) {}
    fn place_lost(&self, _: &str, _: PeerId) {}
    fn mirror_stats(&self, _: &str, _: PeerId, _: &Value) {}
    fn watched_joined(&self, _: &str, _: &PeerInfo) {}
    fn watched_left(&self, _: &str, _: PeerId, _: LeaveReason) {}
    fn watched_stats(&self, _: &str, _: PeerId, _: &Value) {}
    fn deliver(&self, _: &str, _: PeerId, _: &str) {
        self.heard.send(Heard::Delivered).unwrap();
        panic!("the test hub's bug, inside the broker's task");
    }
    fn local_records(&self) -> Vec<(String, Option<AppInfo>, Record)> {
        Vec::new()
    }
    fn remote_homes(&self) -> HashSet<String> {
        HashSet::new()
    }
    fn homes_lost(&self, _: &HashSet<String>) -> Vec<(String, PeerId, String)> {
        Vec::new()
    }
    fn reconnect_grace(&self) -> Duration {
        Duration::from_secs(15)
    }
}

async fn next(heard: &mut mpsc::UnboundedReceiver<Heard>) -> Heard {
    tokio::time::timeout(WAIT, heard.recv())
        .await
        .expect("the broker said nothing")
        .expect("the hub is alive")
}

/// The value of `series` in the `/metrics` text `metrics` renders (0 when absent).
fn read(metrics: &Metrics, series: &str) -> f64 {
    metrics
        .render()
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn once_the_broker_task_died_joins_and_relays_are_refused_and_the_hubs_writes_counted_lost() {
    let redis = Redis::start().await;
    let (tx, mut heard) = mpsc::unbounded_channel();
    let hub = Arc::new(PanickingHub { heard: tx });
    let metrics = Arc::new(Metrics::new(true, false));
    let broker = Broker::start(&redis.url(), &hub, Arc::clone(&metrics)).unwrap();
    assert_eq!(next(&mut heard).await, Heard::NetworkKey);

    // A frame for one of its peers, on the channel it listens to: once connected, the task
    // hands it to the hub, which panics.
    let mut redis_conn = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let channels: Vec<String> = redis::cmd("PUBSUB")
        .arg("CHANNELS")
        .arg("ackwire:to:*")
        .query_async(&mut redis_conn)
        .await
        .unwrap();
    let [own] = &channels[..] else {
        panic!("one instance listens: {channels:?}")
    };
    let instance = own.strip_prefix("ackwire:to:").unwrap();
    let delivery = json!({"room": "lobby", "to": 1, "text": "{}"}).to_string();
    let _: i64 = redis::cmd("PUBLISH")
        .arg(own)
        .arg(delivery)
        .query_async(&mut redis_conn)
        .await
        .unwrap();
    assert_eq!(next(&mut heard).await, Heard::Delivered);
    // One thing runs at a time here (`#[tokio::test]` runs on one thread), and a task that
    // panics is dropped before anything else runs: the task is gone, its end of the queue
    // with it, though Redis answered when it died.

    assert!(!broker.healthy(), "/healthz answers 503, broker_up reads 0");
    // What a session waits for is refused, with the code a client retries on.
    assert_eq!(
        broker.enter("lobby").await,
        Err(SignalError::BrokerUnavailable),
        "joins and room watches are refused"
    );
    assert_eq!(
        broker.forward(instance, "lobby", 1, "{}"),
        Err(SignalError::BrokerUnavailable),
        "a relay to a peer on another instance fails"
    );
    // What the hub tells the others, with nobody waiting for it, is counted at `/metrics`.
    let lost =
        |write: &str| format!("ackwire_signal_broker_writes_lost_total{{write=\"{write}\"}}");
    broker.left("lobby", 7, LeaveReason::Left);
    broker.left("lobby", 8, LeaveReason::Lost);
    broker.release("lobby", 9, (None, None));
    broker.stats("lobby", 7, &json!([]));
    broker.forget("lobby");
    assert_eq!(read(&metrics, &lost("left")), 2.0);
    assert_eq!(read(&metrics, &lost("release")), 1.0);
    assert_eq!(read(&metrics, &lost("stats")), 1.0);
    assert_eq!(read(&metrics, &lost("forget")), 1.0);
}
