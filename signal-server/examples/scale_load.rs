//! Load test of several instances sharing rooms through Redis (docs/scale-out.md), all on
//! 127.0.0.1: a `redis-server` of its own (no persistence), N instances in child processes,
//! and N × M idle WebSocket clients in rooms of 8 that span every instance. It reports:
//! - relay latency p50/p99 between two peers on the same instance and on different ones,
//!   in the same run;
//! - each instance's RSS, empty and holding its clients, and Redis's memory;
//! - failover: instance 0 is killed (SIGKILL) and its clients reconnect to the others with
//!   their tokens: the time from each reconnect to its welcome, and whether any survivor
//!   heard a `peer_left` (none should, within the reconnect grace).
//!
//! ```text
//! cargo run --release -p ackwire-signal --example scale_load -- --instances 3 --clients-per-instance 5000
//! ```
//!
//! The last line of output is one JSON object with the figures and the goals.

mod support;

use std::{
    io::{BufRead, BufReader},
    net::SocketAddr,
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use clap::Parser;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::{Ws, drive_clients, metric, percentile, rss_kb, serve_child, spawn_server, welcomed};
use tokio::{sync::Semaphore, task::JoinSet};
use tokio_tungstenite::tungstenite::Message;

#[derive(Debug, Parser)]
struct Args {
    /// Instances sharing the rooms.
    #[arg(long, default_value_t = 3)]
    instances: usize,
    /// Idle clients each instance holds.
    #[arg(long, default_value_t = 5000)]
    clients_per_instance: usize,
    /// Signals relayed per second between peers on one instance, and as many across.
    #[arg(long, default_value_t = 200)]
    relays_per_sec: u32,
    /// Length of the relay phase.
    #[arg(long, default_value_t = 10)]
    duration_secs: u64,
    /// Internal: run an instance in this process, sharing rooms through this Redis.
    #[arg(long, hide = true)]
    serve: bool,
    #[arg(long, hide = true)]
    redis: Option<String>,
}

/// Peers per room: consecutive clients, on instances in turn, so every room spans them all.
const ROOM_SIZE: usize = 8;
/// Each sender stays well under the server's default 20 messages/s.
const PER_SENDER_RATE: u32 = 10;
/// The instances' reconnect grace, and how long survivors are watched after the kill: the
/// instance is found dead within 3 s, then its peers wait out the grace.
const GRACE: Duration = Duration::from_secs(5);
const WATCH_AFTER_KILL: Duration = Duration::from_secs(10);
/// Goals (issue #21).
const GOAL_EXTRA_P50_MS: f64 = 1.0;
const GOAL_RSS_MB: f64 = 60.0;
const GOAL_RESUME_MS: f64 = 2000.0;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.serve {
        // The server's descriptors: one per client.
        rlimit::increase_nofile_limit(u64::MAX).context("raising RLIMIT_NOFILE")?;
        let redis = args.redis.context("--serve needs --redis")?;
        return serve_child(|c| {
            c.reconnect_grace = GRACE;
            c.redis = Some(redis);
        });
    }
    if !(2..=ROOM_SIZE).contains(&args.instances) {
        bail!("--instances: 2 to {ROOM_SIZE}");
    }
    drive_clients(args.instances * args.clients_per_instance, run(args))
}

/// The test's own `redis-server`, killed when the test ends.
struct Redis {
    child: Child,
    url: String,
}

impl Redis {
    fn start() -> anyhow::Result<Redis> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::piped())
            .spawn()
            .context("redis-server (installed by `cargo xtask setup`)")?;
        let stdout = child.stdout.take().context("redis stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        loop {
            let line = lines.next().context("redis-server exited")??;
            if line.contains("Ready to accept connections") {
                break;
            }
        }
        // Keep draining its log.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Redis {
            child,
            url: format!("redis://127.0.0.1:{port}/"),
        })
    }

    /// `used_memory` from `INFO memory`, in bytes.
    async fn used_memory(&self) -> Option<u64> {
        let client = redis::Client::open(self.url.as_str()).ok()?;
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query_async(&mut conn)
            .await
            .ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Default)]
struct Shared {
    same_us: Mutex<Vec<u64>>,
    cross_us: Mutex<Vec<u64>>,
    peer_left: AtomicUsize,
}

/// What one client does once everyone is connected.
enum Role {
    /// Send signals to `to` (on the same instance, or not) at `rate`/s from `from` to
    /// `until`.
    Sender {
        to: u64,
        cross: bool,
        from: Instant,
        until: Instant,
        rate: u32,
    },
    Reader,
}

/// Runs one client: sends if it is a sender, and reads until its socket ends, timing relayed
/// signals and counting `peer_left` frames.
async fn client(ws: Ws, role: Role, shared: Arc<Shared>, epoch: Instant) {
    let (mut tx, mut rx) = ws.split();
    let mut sending = match role {
        Role::Sender {
            to,
            cross,
            from,
            until,
            rate,
        } => Some((to, cross, from, until, rate)),
        Role::Reader => None,
    };
    let mut tick = tokio::time::interval(Duration::from_secs_f64(
        1.0 / f64::from(sending.map_or(1, |s| s.4)),
    ));
    loop {
        tokio::select! {
            _ = tick.tick(), if sending.is_some() => {
                let Some((to, cross, from, until, _)) = sending else { continue };
                let now = Instant::now();
                if now >= until {
                    sending = None;
                    continue;
                }
                if now < from {
                    continue;
                }
                let t = epoch.elapsed().as_micros() as u64;
                let msg = json!({"type": "signal", "to": to, "data": {"t": t, "cross": cross}});
                if tx.send(Message::text(msg.to_string())).await.is_err() {
                    return;
                }
            }
            msg = rx.next() => {
                let Some(Ok(msg)) = msg else { return };
                let Message::Text(text) = msg else { continue };
                let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else { continue };
                if v["type"] == "peer_left" {
                    shared.peer_left.fetch_add(1, Ordering::Relaxed);
                } else if v["type"] == "signal" && let Some(sent) = v["data"]["t"].as_u64() {
                    let took = (epoch.elapsed().as_micros() as u64).saturating_sub(sent);
                    let bucket = if v["data"]["cross"] == true { &shared.cross_us } else { &shared.same_us };
                    bucket.lock().unwrap().push(took);
                }
            }
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let redis = Redis::start()?;
    let mut instances = Vec::new();
    for _ in 0..args.instances {
        instances.push(spawn_server(&["--redis".into(), redis.url.clone()])?);
    }
    for (_, addr) in &instances {
        let deadline = Instant::now() + Duration::from_secs(10);
        while metric(*addr, "ackwire_signal_broker_up").await != Some(1.0) {
            if Instant::now() > deadline {
                bail!("instance {addr} never reached Redis");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let addrs: Vec<SocketAddr> = instances.iter().map(|(_, a)| *a).collect();
    let pids: Vec<u32> = instances.iter().map(|(c, _)| c.0.id()).collect();
    let rss_empty: Vec<Option<u64>> = pids.iter().map(|p| rss_kb(*p)).collect();
    let redis_empty = redis.used_memory().await;

    let total = args.instances * args.clients_per_instance;
    eprintln!(
        "{} instances, {total} clients in rooms of {ROOM_SIZE} spanning them all",
        args.instances
    );
    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(256));
    let mut connecting = JoinSet::new();
    for i in 0..total {
        let (gate, addr) = (gate.clone(), addrs[i % args.instances]);
        connecting.spawn(async move {
            let _permit = gate.acquire_owned().await?;
            let url = format!(
                "ws://{addr}/ws?version=1&room=scale-{}&kind=browser",
                i / ROOM_SIZE
            );
            let (ws, welcome) = welcomed(&url, None).await?;
            anyhow::Ok((i, ws, welcome))
        });
    }
    let mut clients: Vec<Option<(Ws, Value)>> = (0..total).map(|_| None).collect();
    while let Some(done) = connecting.join_next().await {
        let (i, ws, welcome) = done??;
        clients[i] = Some((ws, welcome));
    }
    let connect_secs = started.elapsed().as_secs_f64();
    eprintln!("connected {total} in {connect_secs:.1} s");
    let id = |c: &Option<(Ws, Value)>| c.as_ref().and_then(|(_, w)| w["peer_id"].as_u64());
    let tokens: Vec<(u64, String)> = clients
        .iter()
        .map(|c| {
            let w = &c.as_ref().expect("connected").1;
            (
                id(c).unwrap_or(0),
                w["token"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();

    // Senders: in even rooms a peer signals one on its own instance (i and i + N share
    // one), in odd rooms one on the next instance (i and i + 1).
    let rooms = total / ROOM_SIZE;
    let senders = (args.relays_per_sec.div_ceil(PER_SENDER_RATE) as usize).min(rooms / 2);
    let epoch = Instant::now();
    let from = Instant::now() + Duration::from_secs(1);
    let until = from + Duration::from_secs(args.duration_secs);
    let shared = Arc::new(Shared::default());
    let mut roles: Vec<Role> = (0..total).map(|_| Role::Reader).collect();
    for room in 0..2 * senders {
        let base = room * ROOM_SIZE;
        let cross = room % 2 == 1;
        let to = base + if cross { 1 } else { args.instances };
        roles[base] = Role::Sender {
            to: tokens[to].0,
            cross,
            from,
            until,
            rate: PER_SENDER_RATE,
        };
    }
    let mut tasks = JoinSet::new();
    for (c, role) in clients.into_iter().zip(roles) {
        let (ws, _) = c.expect("connected");
        tasks.spawn(client(ws, role, shared.clone(), epoch));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_idle: Vec<Option<u64>> = pids.iter().map(|p| rss_kb(*p)).collect();
    let redis_idle = redis.used_memory().await;
    tokio::time::sleep_until((until + Duration::from_millis(500)).into()).await;
    let mut same = std::mem::take(&mut *shared.same_us.lock().unwrap());
    let mut cross = std::mem::take(&mut *shared.cross_us.lock().unwrap());
    same.sort_unstable();
    cross.sort_unstable();
    let same_p = (percentile(&same, 0.5), percentile(&same, 0.99));
    let cross_p = (percentile(&cross, 0.5), percentile(&cross, 0.99));

    // Failover: kill instance 0; its clients resume on the others.
    let left_before = shared.peer_left.load(Ordering::Relaxed);
    let (mut killed, _) = instances.remove(0);
    killed.0.kill()?;
    killed.0.wait()?;
    let survivors = addrs[1..].to_vec();
    let killed_at = Instant::now();
    let mut resuming = JoinSet::new();
    for (n, i) in (0..total).filter(|i| i % args.instances == 0).enumerate() {
        let gate = gate.clone();
        let addr = survivors[n % survivors.len()];
        let (peer_id, token) = tokens[i].clone();
        let room = format!("scale-{}", i / ROOM_SIZE);
        let (shared, epoch) = (shared.clone(), epoch);
        resuming.spawn(async move {
            let _permit = gate.acquire_owned().await?;
            let join = json!({"type": "join", "version": 1, "room": room, "kind": "browser",
                "resume": {"peer_id": peer_id, "token": token}});
            let start = Instant::now();
            let (ws, welcome) = welcomed(&format!("ws://{addr}/ws"), Some(join)).await?;
            let took = start.elapsed().as_micros() as u64;
            if welcome["resumed"] != true || welcome["peer_id"] != peer_id {
                bail!("resume of {peer_id} answered {welcome}");
            }
            tokio::spawn(client(ws, Role::Reader, shared, epoch));
            anyhow::Ok(took)
        });
    }
    let mut resume_us = Vec::new();
    while let Some(done) = resuming.join_next().await {
        resume_us.push(done??);
    }
    let all_resumed_secs = killed_at.elapsed().as_secs_f64();
    resume_us.sort_unstable();
    let resume_p = (
        percentile(&resume_us, 0.5),
        percentile(&resume_us, 0.99),
        percentile(&resume_us, 1.0),
    );
    tokio::time::sleep_until((killed_at + WATCH_AFTER_KILL).into()).await;
    let left_after = shared.peer_left.load(Ordering::Relaxed) - left_before;
    let rss_after: Vec<Option<u64>> = pids[1..].iter().map(|p| rss_kb(*p)).collect();
    tasks.abort_all();

    let mb = |kb: &Option<u64>| kb.map_or(f64::NAN, |k| k as f64 / 1024.0);
    let extra_p50 = cross_p.0 - same_p.0;
    let max_rss = rss_idle.iter().map(mb).fold(0.0, f64::max);
    println!(
        "ackwire-signal scale-out load test: {} instances sharing rooms through Redis",
        args.instances
    );
    println!(
        "  clients        {total} in {rooms} rooms of {ROOM_SIZE} ({} per instance), connected in {connect_secs:.1} s",
        args.clients_per_instance
    );
    println!(
        "  relay, same instance     p50 {:.3} ms, p99 {:.3} ms ({} signals)",
        same_p.0,
        same_p.1,
        same.len()
    );
    println!(
        "  relay, across instances  p50 {:.3} ms, p99 {:.3} ms ({} signals): +{extra_p50:.3} ms at p50 (goal ≤ {GOAL_EXTRA_P50_MS} ms)",
        cross_p.0,
        cross_p.1,
        cross.len()
    );
    for (n, (empty, idle)) in rss_empty.iter().zip(&rss_idle).enumerate() {
        println!(
            "  instance {n} RSS  {:.1} MB empty, {:.1} MB holding {} clients",
            mb(empty),
            mb(idle),
            args.clients_per_instance
        );
    }
    println!("  (goal ≤ {GOAL_RSS_MB} MB per instance; largest {max_rss:.1} MB)");
    println!(
        "  Redis memory   {:.1} MB empty, {:.1} MB with every room",
        redis_empty.unwrap_or(0) as f64 / 1048576.0,
        redis_idle.unwrap_or(0) as f64 / 1048576.0
    );
    println!(
        "  failover       instance 0 killed; its {} clients resumed on the others: reconnect → welcome p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (goal ≤ {GOAL_RESUME_MS} ms); all back {all_resumed_secs:.2} s after the kill; peer_left heard by anyone in the {} s after: {left_after}",
        resume_us.len(),
        resume_p.0,
        resume_p.1,
        resume_p.2,
        WATCH_AFTER_KILL.as_secs()
    );
    let report = json!({
        "instances": args.instances,
        "clients": total,
        "connect_secs": connect_secs,
        "relay_same_p50_ms": same_p.0,
        "relay_same_p99_ms": same_p.1,
        "relay_cross_p50_ms": cross_p.0,
        "relay_cross_p99_ms": cross_p.1,
        "relay_cross_extra_p50_ms": extra_p50,
        "rss_empty_kb": rss_empty,
        "rss_idle_kb": rss_idle,
        "rss_after_failover_kb": rss_after,
        "redis_used_memory_bytes": redis_idle,
        "resume_p50_ms": resume_p.0,
        "resume_p99_ms": resume_p.1,
        "resume_max_ms": resume_p.2,
        "all_resumed_secs": all_resumed_secs,
        "peer_left_after_failover": left_after,
        "goal_extra_p50_met": extra_p50 <= GOAL_EXTRA_P50_MS,
        "goal_rss_met": max_rss <= GOAL_RSS_MB,
        "goal_resume_met": resume_p.2 <= GOAL_RESUME_MS,
    });
    println!("{report}");
    if left_after > 0 {
        bail!("{left_after} peer_left frames after the failover: a resumed peer was seen leaving");
    }
    Ok(())
}
