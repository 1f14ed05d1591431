//! The driver loop: a thin loop around the core. Datagrams in go to
//! [`Connections::on_datagram`] (the core's `Listener::receive_in_place` or `Connection::receive_in_place`),
//! [`Connections::poll`] sends what is due, and the loop sleeps until the earliest
//! `poll_timeout`, emulator release or report tick, or until the socket is readable.
//! Stopping (Ctrl-C, the end of `--duration`) closes every connection and keeps the loop
//! running until the disconnect packets are out.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use ackwire_core::ConnectionConfig;
use thiserror::Error;
use tokio::time::Instant;

use crate::connections::{Connections, Ending, Security};
use crate::link::{EmulationOptions, Link, RecvBuffers};
use crate::report::{Output, Report, Reporter};
use crate::timer::Timer;

/// A wake-up time meaning "no timer".
const NEVER: Duration = Duration::from_secs(365 * 24 * 3600);
/// A listener under load reads its socket once per this span instead of waking for each
/// datagram (interrupt coalescing, as network cards do): a wake-up costs more than the
/// datagram it brings, while a 1 ms tick gathers the whole batch, at the price of at most
/// ~1 ms (tokio's timer resolution: up to 2) of delay on a receive. Once a read finds the
/// socket empty, the next datagram wakes the loop at once again.
pub const READ_COALESCE: Duration = Duration::from_millis(1);
/// Longest wait for the disconnect packets to leave (the emulator may hold them for its
/// latency) once the peer is stopping.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

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
    pub config: ConnectionConfig,
    /// Link emulation, if any.
    pub emulation: Option<EmulationOptions>,
    /// Stop after this long; `None` runs until the stop future resolves.
    pub duration: Option<Duration>,
    /// Where reports go.
    pub output: Output,
    /// Read on a timer of this period while datagrams keep coming (see [`READ_COALESCE`]);
    /// `None` wakes for every datagram.
    pub coalesce: Option<Duration>,
    /// Encryption of the links (on unless `--insecure`).
    pub security: Security,
}

/// Why the peer could not run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PeerError {
    /// The core refused the configuration.
    #[error("invalid protocol configuration: {0}")]
    Config(#[from] ackwire_core::ConnectionConfigError),
    /// The link emulator refused the impairment settings.
    #[error("invalid link emulation: {0}")]
    Emulation(#[from] ackwire_core::emulator::EmulatorError),
    /// The security settings do not fit the role, or the datagram size leaves no room for
    /// the tag.
    #[error("cannot encrypt: {0}")]
    Security(#[from] ackwire_core::ProtectError),
    /// The socket failed in a way that concerns every connection.
    #[error("socket error: {0}")]
    Socket(#[from] std::io::Error),
}

/// How the run ended: the final summary, and for a `connect` peer how its connection ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The last report (also written to the output).
    pub summary: Report,
    /// [`Ending::Clean`] unless the connection ended from the other side or never began.
    pub ending: Ending,
}

/// Runs the peer on `socket` until `duration` elapses, `stop` resolves or (a `connect` peer)
/// the connection ends; closes its connections cleanly, then emits and returns the summary.
pub async fn run(
    socket: std::net::UdpSocket,
    options: PeerOptions,
    stop: impl Future<Output = ()>,
) -> Result<Outcome, PeerError> {
    options.config.validate()?;
    let mut link = Link::new(socket, options.emulation.clone())?;
    let start = Instant::now();
    let clock = || start.elapsed();
    let mut connections = match options.role {
        Role::Listen { max_connections } => {
            let mut config = options.config.clone();
            // A cookie is remembered as used for its lifetime; a full table's worth of peers
            // may connect within one lifetime, so the replay cache must hold them all.
            config.replay_cache_len = config.replay_cache_len.max(max_connections);
            Connections::listen(config, rand::random(), max_connections)?
        }
        Role::Connect { remote } => Connections::connect(options.config.clone(), clock(), remote)?,
    };
    connections.secure(options.security.clone())?;
    tracing::info!(local = %link.local_addr()?, role = ?options.role, "peer running");

    let mut reporter = Reporter::default();
    let interval = options.output.interval();
    let mut next_report = interval;
    // Room for a batch of any UDP datagrams, so an oversized one is refused and logged at
    // its real length.
    let mut buf = RecvBuffers::new();
    tokio::pin!(stop);
    // One timer, moved each turn; precise, so an emulated delay is the delay asked for.
    let mut timer = Timer::new();
    // Set once stopping: the time by which the disconnects must be out.
    let mut closing_until: Option<Duration> = None;
    // While set, the socket had datagrams at the last read: read it again at this time
    // instead of waking on each new datagram.
    let mut read_again_at: Option<Duration> = None;
    loop {
        let now = clock();
        if let (Some(at), Some(period)) = (read_again_at, options.coalesce)
            && now >= at
        {
            let read = link.read_ready(now, &mut buf, |link, arrived, from, datagram| {
                connections.on_datagram(arrived, clock, from, datagram, link)
            });
            read_again_at = (read > 0).then(|| now + period);
        }
        // An emulated arrival is handed over as arrived at the time it was due, even when the
        // wake-up came a little later: the core then counts the lateness as its own hold.
        link.poll_emulation(now, |link, due, from, datagram| {
            connections.on_datagram(due, clock, from, datagram, link)
        });
        connections.poll(now, &mut link);
        link.poll_emulation(now, |link, due, from, datagram| {
            connections.on_datagram(due, clock, from, datagram, link)
        });
        if let (Some(at), Some(every)) = (next_report, interval)
            && now >= at
            && closing_until.is_none()
        {
            let report = reporter.tick(now, &connections, link.counters());
            if options.output.emit(&report).is_err() {
                // Nobody reads the reports any more (closed pipe): stop like Ctrl-C.
                closing_until = Some(now + CLOSE_GRACE);
                connections.close();
                continue;
            }
            // Skip ticks missed while the machine stalled rather than bursting them out.
            next_report = Some((at + every).max(now));
        }
        match closing_until {
            // Stopping: done once the disconnects are out (the emulator holds nothing more).
            Some(until)
                if (connections.is_finished() && link.poll_timeout().is_none()) || now >= until =>
            {
                break;
            }
            Some(_) => {}
            None if options.duration.is_some_and(|d| now >= d) => {
                closing_until = Some(now + CLOSE_GRACE);
                connections.close();
                continue;
            }
            // The connection ended from the other side (or never began).
            None if connections.is_finished() => break,
            None => {}
        }
        // While datagrams keep coming, connection timers wait for the next read tick (at
        // most `READ_COALESCE` late, the delay the core's timer wheel allows anyway): one
        // wake-up then serves both, where a listener with thousands of connections, which
        // always has some deadline within the next millisecond, would otherwise wake twice.
        let timers = match (connections.poll_timeout(), read_again_at) {
            (Some(timer), Some(read)) => Some(timer.max(read)),
            (timer, _) => timer,
        };
        let wake = [
            timers,
            link.poll_timeout(),
            next_report.filter(|_| closing_until.is_none()),
            options.duration.filter(|_| closing_until.is_none()),
            closing_until,
            read_again_at,
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(NEVER);
        // Precise only for an emulator release: its lateness would be added to the path.
        timer.reset(start + wake, link.poll_timeout() == Some(wake));
        // What this turn queued leaves now, in as few system calls as it fills batches.
        link.flush();
        if read_again_at.is_none() {
            link.watch()?;
        }
        tokio::select! {
            biased;
            () = &mut stop, if closing_until.is_none() => {
                tracing::info!("stopping: disconnecting");
                closing_until = Some(clock() + CLOSE_GRACE);
                connections.close();
            }
            ready = link.readable(), if read_again_at.is_none() => {
                ready?;
                let now = clock();
                // Answers are stamped afresh: a handshake's key exchange before them in the
                // batch takes its time, which is this side's hold, not the path's.
                link.read_ready(now, &mut buf, |link, arrived, from, datagram| {
                    connections.on_datagram(arrived, clock, from, datagram, link)
                });
                if let Some(period) = options.coalesce {
                    link.unwatch();
                    read_again_at = Some(now + period);
                }
            }
            () = timer.wait() => {}
        }
    }
    // The last turn's packets (the disconnects among them) broke out before its flush.
    link.flush();
    let summary = reporter.summary(clock(), &connections, link.counters());
    // The summary is the last word even when stdout is gone; nothing more can be done then.
    let _ = options.output.emit(&summary);
    tracing::info!(
        sent = summary.counters.packets_sent,
        acked = summary.counters.packets_acked,
        lost = summary.counters.packets_lost,
        dropped = summary.dropped.total(),
        "peer stopped"
    );
    Ok(Outcome {
        summary,
        ending: connections.ending(),
    })
}

/// Resolves on Ctrl-C or SIGTERM (a supervisor's stop), so every subcommand ends cleanly:
/// disconnects sent, room left, summary written.
pub async fn stop_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
