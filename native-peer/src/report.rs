//! What the peer reports: one [`Report`] per tick (a JSON line, a plain line, or a refreshing
//! terminal line) and a final summary with the same keys.

use std::io::{self, Write};
use std::time::Duration;

use ackwire_core::{Counters, Mode};
use serde::Serialize;

use crate::connections::{Connections, Dropped};
use crate::link::LinkCounters;

/// One report. The first twelve fields are the stable JSON contract (`t_s` to
/// `bytes_received`); the rest are extras.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Seconds since the peer started.
    pub t_s: f64,
    /// Smoothed RTT (a listener: the mean over its connections).
    pub rtt_ms: f64,
    /// Smoothed RTT deviation (a listener: the mean over its connections).
    pub jitter_ms: f64,
    /// The core's loss over its recent-packet window, `loss_window_packets` resolved packets
    /// (a listener: the mean over its connections): what the congestion mode reacts to.
    pub loss_pct: f64,
    /// The congestion mode; a listener reports `bad` if any connection is in bad mode.
    pub mode: Mode,
    /// Packets actually sent per second: over the last tick, or in the summary over the run.
    pub send_rate_hz: f64,
    /// Counters summed over every connection (`packets_sent` to `header_bytes_sent`).
    #[serde(flatten)]
    pub counters: Counters,
    /// Recovery time `t` of the congestion avoidance (a listener: the longest).
    pub recovery_time_ms: f64,
    /// How many resolved packets `loss_pct` covers per connection.
    pub loss_window_packets: u32,
    /// Lost share of every packet resolved (acked or declared lost) since the start, over
    /// every connection: the steady figure.
    pub loss_cumulative_pct: f64,
    /// Live connections.
    pub connections: usize,
    /// Connections in bad mode.
    pub connections_bad: usize,
    /// Datagrams refused, by reason.
    pub dropped: Dropped,
    /// Messages a listener could not echo (the connection's queue was full).
    pub echo_refused: u64,
    /// Packets the core refused to write (zero unless a bug; each is logged).
    pub transmit_errors: u64,
    /// Datagrams through the socket (`datagrams_in`, `datagrams_out`, `send_failures`).
    #[serde(flatten)]
    pub link: LinkCounters,
    /// True on the final summary line only.
    pub summary: bool,
}

/// Builds reports, remembering the previous tick to measure the send rate.
///
/// Made when the peer starts (at time zero, nothing sent yet): the first tick measures the
/// packets sent since the start over the time since the start, every later tick those since
/// the previous tick, so each tick's `send_rate_hz` times its interval is the packets it saw.
#[derive(Debug, Default)]
pub struct Reporter {
    /// Time and packets sent at the previous tick; the start, `(0, 0)`, before the first.
    last: (Duration, u64),
}

/// Packets per second: `packets` over `elapsed`, or 0 over no time at all.
fn rate(packets: u64, elapsed: Duration) -> f64 {
    if elapsed.is_zero() {
        0.0
    } else {
        packets as f64 / elapsed.as_secs_f64()
    }
}

impl Reporter {
    /// The report at `now`.
    pub fn tick(&mut self, now: Duration, connections: &Connections, link: LinkCounters) -> Report {
        let counters = connections.counters();
        let (then, sent) = self.last;
        let send_rate_hz = rate(
            counters.packets_sent.saturating_sub(sent),
            now.saturating_sub(then),
        );
        self.last = (now, counters.packets_sent);
        let mut report = snapshot(now, connections, counters, link);
        report.send_rate_hz = send_rate_hz;
        report
    }

    /// The final summary at `now`: the send rate over the whole run.
    pub fn summary(&self, now: Duration, connections: &Connections, link: LinkCounters) -> Report {
        let counters = connections.counters();
        let mut report = snapshot(now, connections, counters, link);
        report.send_rate_hz = rate(counters.packets_sent, now);
        report.summary = true;
        report
    }
}

fn snapshot(
    now: Duration,
    connections: &Connections,
    counters: Counters,
    link: LinkCounters,
) -> Report {
    let (mut rtt, mut jitter, mut loss, mut recovery, mut bad) = (0.0, 0.0, 0.0, 0.0f64, 0);
    let mut measured = 0;
    let all = connections.stats();
    for stats in &all {
        if stats.counters.packets_acked > 0 {
            rtt += stats.rtt_ms;
            jitter += stats.jitter_ms;
            measured += 1;
        }
        loss += stats.loss_percent;
        recovery = recovery.max(stats.recovery_time_ms);
        if stats.mode == Mode::Bad {
            bad += 1;
        }
    }
    let mean = |sum: f64, n: usize| if n == 0 { 0.0 } else { sum / n as f64 };
    Report {
        t_s: now.as_secs_f64(),
        rtt_ms: mean(rtt, measured),
        jitter_ms: mean(jitter, measured),
        loss_pct: mean(loss, all.len()),
        mode: if bad > 0 { Mode::Bad } else { Mode::Good },
        send_rate_hz: 0.0,
        counters,
        recovery_time_ms: recovery,
        loss_window_packets: connections.loss_window_packets().into(),
        loss_cumulative_pct: counters.loss_percent(),
        connections: connections.len(),
        connections_bad: bad,
        dropped: connections.dropped(),
        echo_refused: connections.echo_refused(),
        transmit_errors: connections.transmit_errors(),
        link,
        summary: false,
    }
}

/// Where reports go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// One JSON object per line on stdout.
    Json,
    /// A line redrawn in place (stdout is a terminal).
    Live,
    /// One human-readable line per tick (stdout is a file or pipe).
    Plain,
    /// Nothing (benchmarks drive many peers at once).
    Silent,
}

impl Output {
    /// How often this output wants a report: a terminal refreshes faster than a log.
    pub fn interval(self) -> Option<Duration> {
        match self {
            Output::Json | Output::Plain => Some(Duration::from_secs(1)),
            Output::Live => Some(Duration::from_millis(250)),
            Output::Silent => None,
        }
    }

    /// Writes one report. Write errors (a closed pipe) are returned so the peer can stop.
    pub fn emit(self, report: &Report) -> io::Result<()> {
        let mut out = io::stdout().lock();
        match self {
            Output::Json => {
                serde_json::to_writer(&mut out, report)?;
                writeln!(out)?;
            }
            // Clear the line and redraw it; the summary ends it so the shell prompt starts
            // on a fresh line.
            Output::Live => {
                write!(out, "\r\x1b[2K{}", human(report))?;
                if report.summary {
                    writeln!(out)?;
                }
            }
            Output::Plain => writeln!(out, "{}", human(report))?,
            Output::Silent => {}
        }
        out.flush()
    }
}

fn human(r: &Report) -> String {
    let mode = match r.mode {
        Mode::Good => "good",
        Mode::Bad => "bad ",
    };
    format!(
        "{}{:7.1}s  rtt {:6.1} ms  jitter {:5.1} ms  loss {:5.1}% (all {:4.1}%)  mode {mode}  rate {:5.1} Hz  \
         sent {}  recv {}  acked {}  lost {}  conns {}  dropped {}",
        if r.summary { "summary " } else { "" },
        r.t_s,
        r.rtt_ms,
        r.jitter_ms,
        r.loss_pct,
        r.loss_cumulative_pct,
        r.send_rate_hz,
        r.counters.packets_sent,
        r.counters.packets_received,
        r.counters.packets_acked,
        r.counters.packets_lost,
        r.connections,
        r.dropped.total(),
    )
}
