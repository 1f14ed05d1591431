//! One serializable snapshot of a link's health, identical from wasm and native drivers.

use serde::{Deserialize, Serialize};

use crate::congestion::Mode;
use crate::connection_state::ConnectionState;

/// What a link has counted since it started. Unlike the gauges in [`Stats`], these only
/// grow, so a driver serving many links sums them (`+=`) into one total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Counters {
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets received and accepted (duplicates, stale and malformed ones excluded).
    pub packets_received: u64,
    /// Sent packets the peer acknowledged.
    pub packets_acked: u64,
    /// Sent packets declared lost.
    pub packets_lost: u64,
    /// Bytes of the data packets sent, as datagrams on the wire: headers included, and on a
    /// protected link the 16-byte tag. Control packets (handshake, disconnect) are not counted.
    pub bytes_sent: u64,
    /// Bytes of the data packets received and accepted, counted as `bytes_sent` counts them
    /// (headers and tag included), so the two sides of a lossless link agree.
    pub bytes_received: u64,
    /// Header bytes among `bytes_sent`.
    pub header_bytes_sent: u64,
    /// Data packets that failed to prove they are this connection's: on a protected link,
    /// failed to open (forged, corrupted, or under another key); on a plain link on raw UDP,
    /// a wrong connection tag (a late packet of an earlier connection). Dropped, and nothing
    /// else changed. Always 0 on a data channel's link.
    #[serde(default)]
    pub packets_unauthenticated: u64,
}

impl Counters {
    /// Lost share, in percent, of the packets resolved (acked or declared lost) so far; 0
    /// before any.
    pub fn loss_percent(&self) -> f64 {
        match self.packets_acked + self.packets_lost {
            0 => 0.0,
            resolved => self.packets_lost as f64 * 100.0 / resolved as f64,
        }
    }
}

impl core::ops::AddAssign for Counters {
    fn add_assign(&mut self, other: Counters) {
        self.packets_sent += other.packets_sent;
        self.packets_received += other.packets_received;
        self.packets_acked += other.packets_acked;
        self.packets_lost += other.packets_lost;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.header_bytes_sent += other.header_bytes_sent;
        self.packets_unauthenticated += other.packets_unauthenticated;
    }
}

/// What an [`Endpoint`](crate::endpoint::Endpoint) has measured so far. Times are in
/// milliseconds as `f64`, which JSON and JavaScript read without conversion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Stats {
    /// Smoothed round-trip time (0 before the first ack).
    pub rtt_ms: f64,
    /// Smoothed deviation of RTT samples.
    pub jitter_ms: f64,
    /// Lost share of the last [`loss_window_packets`](Self::loss_window_packets) resolved
    /// packets: what the congestion mode reacts to, so it moves fast (and swings: a 64-packet
    /// window at 10 % loss has a standard deviation near 4 points).
    pub loss_percent: f64,
    /// How many resolved packets `loss_percent` covers (`Config::loss_window_packets`).
    #[serde(default)]
    pub loss_window_packets: u32,
    /// Lost share of every packet resolved (acked or declared lost) since the link started:
    /// the steady figure to show a person.
    #[serde(default)]
    pub loss_cumulative_percent: f64,
    /// Current congestion mode.
    pub mode: Mode,
    /// Current recovery time `t`.
    pub recovery_time_ms: f64,
    /// Packets per second the endpoint is pacing to now.
    pub send_rate_pps: f64,
    /// How long a message queued now waits for its packet at most: 0 while the current
    /// interval's packet has not left (`Config::prompt_send`), else until the next interval
    /// opens; within one pacing interval. As of the endpoint's last step; a room's link stats
    /// count it from the moment they are read.
    #[serde(default)]
    pub next_packet_ms: f64,
    /// Packets the bulk window lets be in flight now, while a reliable backlog runs ahead of
    /// the cadence (docs/wire.md, "Bulk"); 0 on a link that never had a backlog.
    #[serde(default)]
    pub bulk_window_packets: u32,
    /// Running totals (`packets_sent` to `packets_unauthenticated`), flattened into the same JSON
    /// object as the gauges.
    #[serde(flatten)]
    pub counters: Counters,
    /// Length of the last header sent (5 in steady state).
    pub last_header_len: u32,
    /// Messages accepted by `send` and `send_latest`, less those `send_latest` replaced before
    /// they were sent (zero for a bare endpoint; the fields below too).
    #[serde(default)]
    pub messages_sent: u64,
    /// Reliable frames sent again because no ack came within the resend interval.
    #[serde(default)]
    pub messages_resent: u64,
    /// Messages handed to the application.
    #[serde(default)]
    pub messages_delivered: u64,
    /// Unreliable-sequenced messages dropped for arriving after a newer one.
    #[serde(default)]
    pub messages_dropped_stale: u64,
    /// Reliable message ids awaiting an ack, over all channels.
    #[serde(default)]
    pub reliable_in_flight: u64,
    /// The connection's state; `None` for a bare packet-layer endpoint.
    #[serde(default)]
    pub connection_state: Option<ConnectionState>,
}
