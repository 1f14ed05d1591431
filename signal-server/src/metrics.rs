//! Counters and gauges served at `/metrics` in the Prometheus text format.

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use crate::{admission::Refusal, error::SignalError};

/// Why the server closed a connection itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CloseCause {
    /// Its outbound queue filled up or a write timed out: it stopped reading.
    SlowReader,
    /// Too many rate-limited messages in a row.
    RateLimit,
    /// A frame over the hard size cap.
    TooLarge,
    /// No frame (not even a pong) within the idle timeout.
    IdleTimeout,
    /// The same peer resumed on a newer connection.
    ReplacedByResume,
    /// The same program instance joined its room again, as a new peer.
    ReplacedByInstance,
    /// The server is shutting down.
    Shutdown,
}

impl CloseCause {
    /// Label value in `/metrics` and the close frame's reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SlowReader => "slow_reader",
            Self::RateLimit => "rate_limit",
            Self::TooLarge => "message_too_large",
            Self::IdleTimeout => "idle_timeout",
            Self::ReplacedByResume => "replaced_by_resume",
            Self::ReplacedByInstance => "replaced_by_instance",
            Self::Shutdown => "server_shutdown",
        }
    }
}

/// Why a frame for a client was dropped instead of delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The target's outbound queue was full: it stopped reading and is being closed.
    QueueFull,
    /// The target's connection was already closing (its queue no longer taken).
    Closing,
}

impl DropReason {
    /// Label value in `/metrics`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QueueFull => "queue_full",
            Self::Closing => "closing",
        }
    }
}

/// A write for Redis that was lost because the broker's task, which sends them, had
/// stopped: what it would have told the other instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LostWrite {
    /// A local peer's join (its record and the room's `joined` event).
    Joined,
    /// A resumed peer's new token.
    Token,
    /// A host's new WebTransport service (its record and the room's `updated` event).
    Updated,
    /// A local peer's leave (its removal and the room's `left` event).
    Left,
    /// A place a join reserved and did not take.
    Release,
    /// A stats report for other instances' dashboards.
    Stats,
    /// The `left` event of a dead instance's peer this instance evicted.
    Evicted,
    /// Dropping the subscription to a room nobody here is in any more.
    Forget,
}

impl LostWrite {
    /// Label value in `/metrics`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Joined => "joined",
            Self::Token => "token",
            Self::Updated => "updated",
            Self::Left => "left",
            Self::Release => "release",
            Self::Stats => "stats",
            Self::Evicted => "evicted",
            Self::Forget => "forget",
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabel {
    code: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WriteLabel {
    write: &'static str,
}

fn count(family: &Family<ReasonLabel, Counter>, reason: &'static str) {
    family.get_or_create(&ReasonLabel { reason }).inc();
}

/// All server metrics; cheap atomic updates, rendered on scrape.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Rooms that exist now.
    pub rooms: Gauge,
    /// Peers in rooms now (including ones inside their reconnect grace).
    pub peers: Gauge,
    /// Open WebSocket connections.
    pub connections: Gauge,
    /// Dashboard subscriptions.
    pub subscribers: Gauge,
    /// Successful joins (resumes included).
    pub joins: Counter,
    /// Joins that took back an earlier peer id.
    pub resumes: Counter,
    /// Signals delivered to their target.
    pub signals_relayed: Counter,
    /// Stats reports accepted.
    pub stats_reports: Counter,
    /// Fresh TURN credentials sent to joined peers (`ice_servers` frames).
    pub turn_refreshes: Counter,
    /// Addresses the per-address limits remember now.
    pub clients_tracked: Gauge,
    /// With a broker: rooms of all instances, read from Redis at each scrape.
    pub shared_rooms: Gauge,
    /// With a broker: peers of all instances (reserved places included).
    pub shared_peers: Gauge,
    /// With a broker: 1 while Redis answers and the broker's task runs, 0 while joins are
    /// refused.
    pub broker_up: Gauge,
    broker_writes_lost: Family<WriteLabel, Counter>,
    errors: Family<CodeLabel, Counter>,
    closes: Family<ReasonLabel, Counter>,
    dropped: Family<ReasonLabel, Counter>,
    refused: Family<ReasonLabel, Counter>,
    tls_handshakes: Family<ResultLabel, Counter>,
    tls_reloads: Family<ResultLabel, Counter>,
    /// With TLS: the `notAfter` of the certificate presented now (Unix seconds).
    pub tls_expiry: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new(false, false)
    }
}

impl Metrics {
    /// The metrics of an instance; `shared` adds the broker's (`--redis`), `tls` those of
    /// HTTPS (`--tls-cert`).
    pub fn new(shared: bool, tls: bool) -> Self {
        let mut m = Metrics {
            registry: Registry::with_prefix("ackwire_signal"),
            rooms: Gauge::default(),
            peers: Gauge::default(),
            connections: Gauge::default(),
            subscribers: Gauge::default(),
            joins: Counter::default(),
            resumes: Counter::default(),
            signals_relayed: Counter::default(),
            stats_reports: Counter::default(),
            turn_refreshes: Counter::default(),
            clients_tracked: Gauge::default(),
            shared_rooms: Gauge::default(),
            shared_peers: Gauge::default(),
            broker_up: Gauge::default(),
            broker_writes_lost: Family::default(),
            errors: Family::default(),
            closes: Family::default(),
            dropped: Family::default(),
            refused: Family::default(),
            tls_handshakes: Family::default(),
            tls_reloads: Family::default(),
            tls_expiry: Gauge::default(),
        };
        let r = &mut m.registry;
        r.register("rooms", "Rooms that exist now", m.rooms.clone());
        r.register("peers", "Peers in rooms now", m.peers.clone());
        r.register(
            "connections",
            "Open WebSocket connections",
            m.connections.clone(),
        );
        r.register(
            "subscribers",
            "Dashboard subscriptions",
            m.subscribers.clone(),
        );
        r.register("joins", "Successful joins", m.joins.clone());
        r.register("resumes", "Joins that resumed a peer id", m.resumes.clone());
        r.register(
            "signals_relayed",
            "Signals relayed",
            m.signals_relayed.clone(),
        );
        r.register(
            "stats_reports",
            "Stats reports received",
            m.stats_reports.clone(),
        );
        r.register(
            "turn_refreshes",
            "Fresh TURN credentials sent to joined peers",
            m.turn_refreshes.clone(),
        );
        r.register(
            "clients_tracked",
            "Client addresses the per-address limits remember",
            m.clients_tracked.clone(),
        );
        r.register("errors", "Error frames sent, by code", m.errors.clone());
        r.register(
            "signals_dropped",
            "Frames for a client (relayed signals, room updates, stats) not delivered, by reason",
            m.dropped.clone(),
        );
        r.register(
            "upgrades_refused",
            "WebSocket upgrades refused before they happened, by reason",
            m.refused.clone(),
        );
        r.register(
            "server_closes",
            "Connections closed by the server, by reason",
            m.closes.clone(),
        );
        if tls {
            r.register(
                "tls_handshakes",
                "TLS handshakes, by result (ok, failed, timed_out)",
                m.tls_handshakes.clone(),
            );
            r.register(
                "tls_reloads",
                "Certificate reloads on SIGHUP, by result (ok, failed: the previous one kept)",
                m.tls_reloads.clone(),
            );
            r.register(
                "tls_certificate_expiry_timestamp_seconds",
                "When the certificate presented now expires (its notAfter, Unix seconds)",
                m.tls_expiry.clone(),
            );
        }
        if shared {
            r.register(
                "shared_rooms",
                "Rooms of every instance sharing this one's Redis",
                m.shared_rooms.clone(),
            );
            r.register(
                "shared_peers",
                "Peers of every instance sharing this one's Redis",
                m.shared_peers.clone(),
            );
            r.register(
                "broker_up",
                "1 while Redis answers and the broker's task runs (joins are refused while 0)",
                m.broker_up.clone(),
            );
            r.register(
                "broker_writes_lost",
                "Writes for Redis lost because the broker's task had stopped, by write",
                m.broker_writes_lost.clone(),
            );
        }
        m
    }
}

impl Metrics {
    /// Count one error frame.
    pub fn error(&self, err: &SignalError) {
        self.errors
            .get_or_create(&CodeLabel {
                code: err.code().as_str(),
            })
            .inc();
    }

    /// Count one connection the server closed.
    pub fn close(&self, cause: CloseCause) {
        count(&self.closes, cause.as_str());
    }

    /// Count one frame for a client that was not delivered.
    pub fn frame_dropped(&self, reason: DropReason) {
        count(&self.dropped, reason.as_str());
    }

    /// Count one write for Redis lost to a stopped broker task.
    pub fn broker_write_lost(&self, write: LostWrite) {
        self.broker_writes_lost
            .get_or_create(&WriteLabel {
                write: write.as_str(),
            })
            .inc();
    }

    /// Count one upgrade refused with an HTTP status.
    pub fn upgrade_refused(&self, reason: Refusal) {
        count(&self.refused, reason.as_str());
    }

    /// Count one TLS handshake that ended: `ok`, `failed` or `timed_out`.
    pub fn tls_handshake(&self, result: &'static str) {
        self.tls_handshakes
            .get_or_create(&ResultLabel { result })
            .inc();
    }

    /// Count one certificate reload: `ok` or `failed`.
    pub fn tls_reload(&self, ok: bool) {
        let result = if ok { "ok" } else { "failed" };
        self.tls_reloads
            .get_or_create(&ResultLabel { result })
            .inc();
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        encode(&mut out, &self.registry).expect("encode metrics");
        out
    }
}
