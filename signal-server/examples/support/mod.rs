//! What the load examples share: spawning a server child, reading its RSS and metrics,
//! percentiles, and joining a room as a browser would.
#![allow(dead_code, unreachable_pub)]

use std::{
    io::BufRead,
    net::SocketAddr,
    process::{Child, Command, Stdio},
};

use anyhow::{Context, bail};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::{
    MaybeTlsStream, WebSocketStream, connect_async_with_config,
    tungstenite::{Message, protocol::WebSocketConfig},
};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// The server child is killed when the load test ends, however it ends.
pub struct ServerChild(pub Child);

impl Drop for ServerChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The server side of `--serve`: a server on an ephemeral loopback port, announced on stdout
/// as `LISTENING ADDR`, with the per-address limits lifted (every client comes from
/// 127.0.0.1) and `tweak` applied.
pub fn serve_child(tweak: impl FnOnce(&mut ackwire_signal::Config)) -> anyhow::Result<()> {
    tokio::runtime::Runtime::new()?.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("LISTENING {}", listener.local_addr()?);
        let mut config = ackwire_signal::Config {
            bind: listener.local_addr()?,
            max_rooms: usize::MAX,
            max_connections_per_ip: usize::MAX,
            rooms_per_ip_per_min: u32::MAX,
            ..ackwire_signal::Config::default()
        };
        tweak(&mut config);
        ackwire_signal::serve(listener, config, ackwire_signal::shutdown_signal()).await?;
        Ok(())
    })
}

/// The load generator's side: `clients` connections (one descriptor each, plus the
/// server's when it is a child), driven on one worker thread so the server keeps the rest.
pub fn drive_clients(
    clients: usize,
    run: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let nofile = rlimit::increase_nofile_limit(u64::MAX).context("raising RLIMIT_NOFILE")?;
    if (nofile as usize) < clients + 64 {
        bail!("RLIMIT_NOFILE is {nofile}; {clients} clients need more");
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?
        .block_on(run)
}

/// This same executable with `--serve` and `args`: a server in a child process (so its RSS
/// is its own), which prints `LISTENING ADDR` first.
pub fn spawn_server(args: &[String]) -> anyhow::Result<(ServerChild, SocketAddr)> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().context("child stdout")?;
    let child = ServerChild(child);
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line)?;
    let addr = line
        .trim()
        .strip_prefix("LISTENING ")
        .context("server did not report its address")?
        .parse()?;
    Ok((child, addr))
}

pub fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

pub async fn metric(addr: SocketAddr, series: &str) -> Option<f64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = TcpStream::connect(addr).await.ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).await.ok()?;
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

/// Connect and join `room`: with the join in the URL (the welcome is the first frame), or
/// with a join frame after the upgrade.
pub async fn connect_one(addr: SocketAddr, room: &str, in_url: bool) -> anyhow::Result<(Ws, u64)> {
    let (ws, welcome) = if in_url {
        let url = format!("ws://{addr}/ws?version=1&room={room}&kind=browser");
        welcomed(&url, None).await?
    } else {
        let join = json!({"type": "join", "version": 1, "room": room, "kind": "browser"});
        welcomed(&format!("ws://{addr}/ws"), Some(join)).await?
    };
    Ok((ws, welcome["peer_id"].as_u64().context("peer id")?))
}

/// Opens `url`, sends `join` if given, and waits for the welcome.
pub async fn welcomed(url: &str, join: Option<Value>) -> anyhow::Result<(Ws, Value)> {
    // Small client buffers so the load generator itself fits in memory at 10k clients.
    let config = WebSocketConfig::default()
        .read_buffer_size(4096)
        .write_buffer_size(0);
    // No Nagle, as browsers open their sockets.
    let (mut ws, _) = connect_async_with_config(url, Some(config), true).await?;
    if let Some(join) = join {
        ws.send(Message::text(join.to_string())).await?;
    }
    while let Some(msg) = ws.next().await {
        if let Message::Text(t) = msg? {
            let v: Value = serde_json::from_str(t.as_str())?;
            if v["type"] == "welcome" {
                return Ok((ws, v));
            }
            bail!("join refused: {v}");
        }
    }
    bail!("closed before welcome")
}
