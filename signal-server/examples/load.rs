//! Load test: N idle WebSocket clients in rooms of 8 plus M signal relays per second, all
//! on 127.0.0.1. Reports connections held, relay latency p50/p99, join latency (connect →
//! welcome, p50/p99, with the join in the URL and with a join frame) and the server's RSS.
//! Then, in the same run, what join tickets cost (`--ticket-secret-file`): two more server
//! children, twins but for the ticket secret, each joined `JOIN_PROBES * 2` times, their
//! probes interleaved (open, ticketed, ticketed, open, ...) so drift hits both alike; each
//! ticketed join carries a fresh ticket (minted before its clock starts).
//!
//! ```text
//! cargo run --release -p ackwire-signal --example load -- --clients 10000 --relays-per-sec 1000 --duration-secs 20
//! ```
//!
//! By default it starts the server in a child process (this same executable with `--serve`),
//! so the RSS figure is the server's alone. `--connect 127.0.0.1:PORT --server-pid PID` uses a
//! running server instead (start it with `--max-connections-per-ip` and
//! `--rooms-per-ip-per-min` above the client count: every client comes from 127.0.0.1). The
//! last line of output is one JSON object with the figures.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

mod support;

use anyhow::{Context, bail};
use clap::Parser;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::{
    Ws, connect_one, drive_clients, metric, percentile, rss_kb, serve_child, spawn_server,
};
use tokio::{sync::Semaphore, task::JoinSet};
use tokio_tungstenite::tungstenite::Message;

#[derive(Debug, Parser)]
struct Args {
    /// Clients to connect and keep connected.
    #[arg(long, default_value_t = 1000)]
    clients: usize,
    /// Signals relayed per second, spread over senders that stay under the rate limit.
    #[arg(long, default_value_t = 200)]
    relays_per_sec: u32,
    /// Length of the relay phase, after all clients are connected.
    #[arg(long, default_value_t = 10)]
    duration_secs: u64,
    /// Use a running server on this loopback address instead of starting one.
    #[arg(long)]
    connect: Option<SocketAddr>,
    /// The running server's pid, to read its RSS (with `--connect`).
    #[arg(long)]
    server_pid: Option<u32>,
    /// Internal: run the server in this process and print its address.
    #[arg(long, hide = true)]
    serve: bool,
    /// Internal, with `--serve`: require join tickets signed with the secret in this file.
    #[arg(long, hide = true)]
    serve_tickets: Option<std::path::PathBuf>,
}

/// The ticket twins' secret (the ticketed child reads it from a file).
const TICKET_SECRET: &[u8] = b"the load test's ticket secret, 32 bytes or more";

/// Peers per room; the server's default cap is 16.
const ROOM_SIZE: usize = 8;
/// Joins timed one after another, per kind of join.
const JOIN_PROBES: usize = 200;
/// Each sender stays well under the server's default 20 messages/s.
const PER_SENDER_RATE: u32 = 10;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.serve {
        // The server's descriptors: one per client.
        rlimit::increase_nofile_limit(u64::MAX).context("raising RLIMIT_NOFILE")?;
        let tickets = args.serve_tickets;
        return serve_child(|config| config.ticket_secret_file = tickets);
    }
    drive_clients(args.clients, run(args))
}

#[derive(Default)]
struct Shared {
    held: AtomicUsize,
    received: AtomicUsize,
    sent: AtomicUsize,
    latencies_us: Mutex<Vec<u64>>,
}

/// Connect → welcome of `n` joins one after another, each into a fresh room and closed
/// after, in microseconds, sorted.
async fn join_latencies(addr: SocketAddr, n: usize, in_url: bool) -> anyhow::Result<Vec<u64>> {
    let mut took = Vec::with_capacity(n);
    for i in 0..n {
        let room = format!("probe-{}-{i}", if in_url { "url" } else { "frame" });
        let start = Instant::now();
        let (mut ws, _) = connect_one(addr, &room, in_url).await?;
        took.push(start.elapsed().as_micros() as u64);
        ws.close(None).await?;
        while let Some(Ok(_)) = ws.next().await {}
    }
    took.sort_unstable();
    Ok(took)
}

/// Connect → welcome of `n` joins on each of `open` and `ticketed` (twin servers but for the
/// ticket secret), interleaved, each into a fresh room and closed after, in microseconds,
/// sorted: `(open, ticketed)`.
async fn ticket_join_latencies(
    open: SocketAddr,
    ticketed: SocketAddr,
    n: usize,
) -> anyhow::Result<(Vec<u64>, Vec<u64>)> {
    use ackwire_signalling::{
        Role,
        ticket::{self, Claims},
    };
    let expires = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs()
        + 3600;
    let mut took = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..2 * n {
        // open, ticketed, ticketed, open, ...: neither always goes first.
        let with_ticket = (i % 2 == 1) ^ (i % 4 >= 2);
        let room = format!("probe-ticket-{i}");
        let query = if with_ticket {
            let claims = Claims::new(&room, Role::Peer, format!("user-{i}"), None, expires)?;
            let ticket = ticket::mint(TICKET_SECRET, &claims);
            format!("version=1&room={room}&kind=browser&ticket={ticket}")
        } else {
            format!("version=1&room={room}&kind=browser")
        };
        let addr = if with_ticket { ticketed } else { open };
        let url = format!("ws://{addr}/ws?{query}");
        let start = Instant::now();
        let (mut ws, _) = support::welcomed(&url, None).await?;
        let us = start.elapsed().as_micros() as u64;
        if with_ticket {
            &mut took.1
        } else {
            &mut took.0
        }
        .push(us);
        ws.close(None).await?;
        while let Some(Ok(_)) = ws.next().await {}
    }
    took.0.sort_unstable();
    took.1.sort_unstable();
    Ok(took)
}

/// Read until the connection ends, timing any relayed signal that carries a send time.
async fn read_loop(mut ws: Ws, shared: Arc<Shared>, epoch: Instant) {
    while let Some(Ok(msg)) = ws.next().await {
        if let Message::Text(t) = msg
            && let Ok(v) = serde_json::from_str::<Value>(t.as_str())
            && v["type"] == "signal"
            && let Some(sent_us) = v["data"]["t"].as_u64()
        {
            let now_us = epoch.elapsed().as_micros() as u64;
            shared.received.fetch_add(1, Ordering::Relaxed);
            shared
                .latencies_us
                .lock()
                .unwrap()
                .push(now_us.saturating_sub(sent_us));
        }
    }
    shared.held.fetch_sub(1, Ordering::Relaxed);
}

/// Send signals to `to` at `rate`/s until `until`, while still reading (to answer pings).
async fn send_loop(
    ws: Ws,
    to: u64,
    rate: u32,
    until: Instant,
    shared: Arc<Shared>,
    epoch: Instant,
) {
    let (mut tx, mut rx) = ws.split();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if Instant::now() >= until {
                    break;
                }
                let t = epoch.elapsed().as_micros() as u64;
                let msg = json!({"type": "signal", "to": to, "data": {"t": t}});
                if tx.send(Message::text(msg.to_string())).await.is_err() {
                    break;
                }
                shared.sent.fetch_add(1, Ordering::Relaxed);
            }
            msg = rx.next() => if !matches!(msg, Some(Ok(_))) { break },
        }
    }
    // Keep the connection held (and reading) until the run ends.
    while let Some(Ok(_)) = rx.next().await {}
    shared.held.fetch_sub(1, Ordering::Relaxed);
}

async fn run(args: Args) -> anyhow::Result<()> {
    let (_child, addr, pid) = match args.connect {
        Some(addr) => {
            if !addr.ip().is_loopback() {
                bail!("the load test only targets loopback addresses");
            }
            (None, addr, args.server_pid)
        }
        None => {
            let (child, addr) = spawn_server(&[])?;
            let pid = child.0.id();
            (Some(child), addr, Some(pid))
        }
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_base = pid.and_then(rss_kb);

    // What tickets cost a join, measured in this run on twin idle servers, before the load
    // (the twins are stopped before its clients connect).
    let secret = tempfile::NamedTempFile::new()?;
    std::fs::write(secret.path(), TICKET_SECRET)?;
    let (open_child, open_addr) = spawn_server(&[])?;
    let secret_arg = [
        "--serve-tickets".to_owned(),
        secret.path().display().to_string(),
    ];
    let (ticketed_child, ticketed_addr) = spawn_server(&secret_arg)?;
    let (open_joins, ticket_joins) =
        ticket_join_latencies(open_addr, ticketed_addr, 2 * JOIN_PROBES).await?;
    drop((open_child, ticketed_child, secret));
    let twins = (
        percentile(&open_joins, 0.50),
        percentile(&open_joins, 0.99),
        percentile(&ticket_joins, 0.50),
        percentile(&ticket_joins, 0.99),
    );

    let rooms = args.clients.div_ceil(ROOM_SIZE);
    let senders = (args.relays_per_sec.div_ceil(PER_SENDER_RATE) as usize).min(rooms);
    let per_sender = if senders == 0 {
        0
    } else {
        args.relays_per_sec.div_ceil(senders as u32)
    };
    eprintln!(
        "server {addr}: connecting {} clients in {rooms} rooms; {senders} senders x {per_sender}/s",
        args.clients
    );

    let shared = Arc::new(Shared::default());
    let epoch = Instant::now();
    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(256));
    let mut connecting = JoinSet::new();
    for i in 0..args.clients {
        let gate = gate.clone();
        connecting.spawn(async move {
            let _permit = gate.acquire_owned().await?;
            let room = format!("load-{}", i / ROOM_SIZE);
            let (ws, id) = connect_one(addr, &room, true).await?;
            anyhow::Ok((i, ws, id))
        });
    }
    let mut clients: Vec<Option<(Ws, u64)>> = (0..args.clients).map(|_| None).collect();
    let mut failed = 0usize;
    let mut first_error = None;
    while let Some(res) = connecting.join_next().await {
        match res? {
            Ok((i, ws, id)) => clients[i] = Some((ws, id)),
            Err(e) => {
                failed += 1;
                first_error.get_or_insert(e.to_string());
            }
        }
    }
    let connect_secs = started.elapsed().as_secs_f64();
    let connected = args.clients - failed;
    shared.held.store(connected, Ordering::Relaxed);
    eprintln!(
        "connected {connected}/{} in {connect_secs:.1} s",
        args.clients
    );
    if let Some(e) = &first_error {
        eprintln!("first connect error: {e}");
    }

    // Settle, then measure the idle footprint before any relay traffic.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_idle = pid.and_then(rss_kb);

    // Joins while the server holds every idle client, one at a time: the latency a player
    // sees, not a queue of them. The frame joins show what the URL join saves.
    let url_joins = join_latencies(addr, JOIN_PROBES, true).await?;
    let frame_joins = join_latencies(addr, JOIN_PROBES, false).await?;
    let join = (percentile(&url_joins, 0.50), percentile(&url_joins, 0.99));
    let join_frame = (
        percentile(&frame_joins, 0.50),
        percentile(&frame_joins, 0.99),
    );

    let until = Instant::now() + Duration::from_secs(args.duration_secs);
    let mut tasks = JoinSet::new();
    let mut active_rooms = 0;
    for room in 0..rooms {
        let base = room * ROOM_SIZE;
        let pair = (
            clients.get_mut(base).and_then(Option::take),
            clients.get_mut(base + 1).and_then(Option::take),
        );
        match pair {
            (Some((a, _)), Some((b, idb))) if active_rooms < senders => {
                active_rooms += 1;
                tasks.spawn(send_loop(a, idb, per_sender, until, shared.clone(), epoch));
                tasks.spawn(read_loop(b, shared.clone(), epoch));
            }
            (a, b) => {
                for (ws, _) in [a, b].into_iter().flatten() {
                    tasks.spawn(read_loop(ws, shared.clone(), epoch));
                }
            }
        }
    }
    for (ws, _) in clients.into_iter().flatten() {
        tasks.spawn(read_loop(ws, shared.clone(), epoch));
    }
    tokio::time::sleep_until((until + Duration::from_millis(500)).into()).await;

    let rss_end = pid.and_then(rss_kb);
    let server_connections = metric(addr, "ackwire_signal_connections").await;
    let held = shared.held.load(Ordering::Relaxed);
    let mut lat = std::mem::take(&mut *shared.latencies_us.lock().unwrap());
    lat.sort_unstable();
    let sent = shared.sent.load(Ordering::Relaxed);
    let received = shared.received.load(Ordering::Relaxed);
    let (p50, p99) = (percentile(&lat, 0.50), percentile(&lat, 0.99));
    let per_conn_kb = match (rss_base, rss_idle) {
        (Some(b), Some(i)) if connected > 0 => {
            Some((i.saturating_sub(b)) as f64 / connected as f64)
        }
        _ => None,
    };
    tasks.abort_all();

    println!("ackwire-signal load test on {addr}");
    println!(
        "  clients        {connected}/{} connected in {connect_secs:.1} s, {held} still held at the end (server counts {})",
        args.clients,
        server_connections.map_or("?".into(), |c| c.to_string())
    );
    println!(
        "  relays         {sent} sent, {received} received over {} s (target {}/s)",
        args.duration_secs, args.relays_per_sec
    );
    println!("  relay latency  p50 {p50:.3} ms, p99 {p99:.3} ms");
    println!(
        "  join latency   connect → welcome p50 {:.3} ms, p99 {:.3} ms (join in the URL); p50 {:.3} ms, p99 {:.3} ms (join frame); {JOIN_PROBES} each",
        join.0, join.1, join_frame.0, join_frame.1
    );
    println!(
        "  join + ticket  connect → welcome p50 {:.3} ms, p99 {:.3} ms with a ticket; p50 {:.3} ms, p99 {:.3} ms without; {} each, interleaved on twin idle servers: ticket p50 {:+.3} ms (goal ≤ +0.1 ms)",
        twins.2,
        twins.3,
        twins.0,
        twins.1,
        2 * JOIN_PROBES,
        twins.2 - twins.0
    );
    match (rss_base, rss_idle, rss_end) {
        (Some(b), Some(i), Some(e)) => println!(
            "  server RSS     {:.1} MB empty, {:.1} MB with all clients idle, {:.1} MB at the end; {:.1} KB per idle connection",
            b as f64 / 1024.0,
            i as f64 / 1024.0,
            e as f64 / 1024.0,
            per_conn_kb.unwrap_or(f64::NAN)
        ),
        _ => println!("  server RSS     unknown (pass --server-pid with --connect)"),
    }
    let report = json!({
        "clients": args.clients,
        "connected": connected,
        "held": held,
        "server_connections": server_connections,
        "connect_secs": connect_secs,
        "relays_per_sec": args.relays_per_sec,
        "duration_secs": args.duration_secs,
        "relays_sent": sent,
        "relays_received": received,
        "relay_latency_p50_ms": p50,
        "relay_latency_p99_ms": p99,
        "join_p50_ms": join.0,
        "join_p99_ms": join.1,
        "join_frame_p50_ms": join_frame.0,
        "join_frame_p99_ms": join_frame.1,
        "twin_open_join_p50_ms": twins.0,
        "twin_open_join_p99_ms": twins.1,
        "twin_ticket_join_p50_ms": twins.2,
        "twin_ticket_join_p99_ms": twins.3,
        "ticket_join_p50_delta_ms": twins.2 - twins.0,
        "server_rss_empty_kb": rss_base,
        "server_rss_idle_kb": rss_idle,
        "server_rss_end_kb": rss_end,
        "server_kb_per_idle_connection": per_conn_kb,
    });
    println!("{report}");
    if connected < args.clients {
        bail!("{failed} clients failed to connect");
    }
    Ok(())
}
