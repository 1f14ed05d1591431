//! The driver loop: a thin loop around the core. Datagrams in go to
//! [`Connections::on_datagram`] (which calls `Endpoint::receive`), due packets go out through
//! `poll_transmit_with`, and the loop sleeps until the earliest `poll_timeout`, emulator
//! release or report tick, or until the socket is readable.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use ackwire_core::Config;
use thiserror::Error;
use tokio::net::UdpSocket;
use tokio::time::Instant;

use crate::connections::{Admission, Connections, MAX_DATAGRAM};
use crate::link::{EmulationOptions, Link};
use crate::report::{Output, Report, Reporter};

/// A wake-up time meaning "no timer".
const NEVER: Duration = Duration::from_secs(365 * 24 * 3600);
/// Marks the timer as spent, so the next turn re-arms it even for the same deadline.
const FIRED: Duration = Duration::MAX;

/// What the peer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Accept connections from any address and echo their traffic.
    Listen {
        /// Bound on simultaneous connections.
        max_connections: usize,
    },
    /// Open one connection to this address and send the demo traffic.
    Connect {
        /// The listening peer.
        remote: SocketAddr,
    },
}

/// Everything the driver needs besides its socket.
#[derive(Debug, Clone)]
pub struct PeerOptions {
    /// Listen or connect.
    pub role: Role,
    /// The core's configuration for every connection.
    pub config: Config,
    /// Link emulation, if any.
    pub emulation: Option<EmulationOptions>,
    /// Stop after this long; `None` runs until the stop future resolves.
    pub duration: Option<Duration>,
    /// Where reports go.
    pub output: Output,
}

/// Why the peer could not run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PeerError {
    /// The core refused the configuration.
    #[error("invalid protocol configuration: {0}")]
    Config(#[from] ackwire_core::ConfigError),
    /// The link emulator refused the impairment settings.
    #[error("invalid link emulation: {0}")]
    Emulation(#[from] ackwire_core::emulator::EmulatorError),
    /// The socket failed in a way that concerns every connection.
    #[error("socket error: {0}")]
    Socket(#[from] std::io::Error),
}

/// Runs the peer on `socket` until `duration` elapses or `stop` resolves, then emits and
/// returns the final summary.
pub async fn run(
    socket: UdpSocket,
    options: PeerOptions,
    stop: impl Future<Output = ()>,
) -> Result<Report, PeerError> {
    options.config.validate()?;
    let mut link = Link::new(socket, options.emulation.clone())?;
    link.writable().await?;
    let admission = match options.role {
        Role::Listen { max_connections } => Admission::Open { max_connections },
        Role::Connect { .. } => Admission::Closed,
    };
    let mut connections = Connections::new(options.config.clone(), admission);
    let start = Instant::now();
    let clock = || start.elapsed();
    if let Role::Connect { remote } = options.role {
        connections.open(clock(), remote, &mut link)?;
    }
    tracing::info!(local = %link.local_addr()?, role = ?options.role, "peer running");

    let mut reporter = Reporter::default();
    let interval = options.output.interval();
    let mut next_report = interval;
    // One byte beyond the largest accepted datagram, so oversized ones are seen as such.
    let mut buf = vec![0u8; MAX_DATAGRAM + 1];
    tokio::pin!(stop);
    // One timer, moved each turn: cheaper than a new timer-wheel entry per wake-up.
    let sleep = tokio::time::sleep_until(start + NEVER);
    tokio::pin!(sleep);
    let mut armed = NEVER;
    loop {
        let now = clock();
        connections.handle_timeout(now, &mut link);
        link.poll_emulation(now, |link, from, datagram| {
            connections.on_datagram(now, from, datagram, link)
        });
        if let (Some(at), Some(every)) = (next_report, interval) {
            if now >= at {
                let report = reporter.tick(now, &connections, link.send_failures());
                if options.output.emit(&report).is_err() {
                    // Nobody reads the reports any more (closed pipe): stop like Ctrl-C.
                    break;
                }
                // Skip ticks missed while the machine stalled rather than bursting them out.
                next_report = Some((at + every).max(now));
            }
        }
        if options.duration.is_some_and(|d| now >= d) {
            break;
        }
        let wake = [
            connections.poll_timeout(),
            link.poll_timeout(),
            next_report,
            options.duration,
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(NEVER);
        if wake != armed {
            sleep.as_mut().reset(start + wake);
            armed = wake;
        }
        tokio::select! {
            biased;
            () = &mut stop => break,
            ready = link.readable() => {
                ready?;
                let now = clock();
                link.read_ready(now, &mut buf, |link, from, datagram| {
                    connections.on_datagram(now, from, datagram, link)
                });
            }
            () = &mut sleep => armed = FIRED,
        }
    }
    let summary = reporter.summary(clock(), &connections, link.send_failures());
    // The summary is the last word even when stdout is gone; nothing more can be done then.
    let _ = options.output.emit(&summary);
    tracing::info!(
        sent = summary.totals.packets_sent,
        acked = summary.totals.packets_acked,
        lost = summary.totals.packets_lost,
        dropped = summary.dropped.total(),
        "peer stopped"
    );
    Ok(summary)
}
