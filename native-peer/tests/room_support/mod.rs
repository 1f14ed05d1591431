//! Shared by the `room_*` tests: a signalling server in the test process, `ackwire-peer
//! join --json` processes with their stdout parsed, and a dashboard subscription.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::Message;

/// The signalling server, in this process, on a fixed loopback address (so a restart
/// comes back where the peers look for it).
pub struct Server {
    pub addr: SocketAddr,
    /// `https` when it serves TLS.
    scheme: &'static str,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    pub async fn start(addr: SocketAddr) -> Server {
        Server::start_with(addr, ackwire_signal::config::Config::default()).await
    }

    /// The server with this configuration (its `bind` is set here).
    pub async fn start_with(addr: SocketAddr, config: ackwire_signal::config::Config) -> Server {
        let listener = TcpListener::bind(addr)
            .await
            .expect("bind the signal server");
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel();
        let scheme = if config.tls_cert.is_some() {
            "https"
        } else {
            "http"
        };
        let config = ackwire_signal::config::Config {
            bind: addr,
            ..config
        };
        let task = tokio::spawn(async move {
            let _ = ackwire_signal::serve(listener, config, async {
                let _ = stopped.await;
            })
            .await;
        });
        Server {
            addr,
            scheme,
            stop: Some(stop),
            task,
        }
    }

    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let _ = self.task.await;
    }

    pub fn room_url(&self, room: &str) -> String {
        format!("{}://{}/room/{room}", self.scheme, self.addr)
    }

    /// Waits (from a blocking thread) until the server's metric `series` (an unlabelled one,
    /// on its plain-HTTP `/metrics`) reads `value`: the server has seen what the test did.
    pub fn metric_becomes(addr: SocketAddr, series: &str, value: f64) {
        use std::io::{Read, Write};
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut last = None;
        while Instant::now() < deadline {
            let mut tcp = std::net::TcpStream::connect(addr).expect("the server's port");
            write!(tcp, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
            let mut text = String::new();
            tcp.read_to_string(&mut text).unwrap();
            last = text.lines().find_map(|l| {
                l.strip_prefix(series)?
                    .strip_prefix(' ')?
                    .parse::<f64>()
                    .ok()
            });
            if last == Some(value) {
                return;
            }
            // The server answers a scrape in well under a millisecond; this only spaces them.
            thread::sleep(Duration::from_millis(5));
        }
        panic!("{series} is {last:?}, not {value}, after 10 s");
    }
}

/// The signalling server on a thread of its own inside network namespace `netns`, on that
/// namespace's loopback; stopped on drop.
pub struct ServerIn {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl ServerIn {
    pub fn start(netns: &str) -> ServerIn {
        let namespace =
            std::fs::File::open(format!("/run/netns/{netns}")).expect("the namespace exists");
        let (addr_tx, addr_rx) = mpsc::channel();
        let (stop, stopped) = oneshot::channel();
        let thread = thread::spawn(move || {
            // Sockets made on this thread from now on live in the namespace.
            nix::sched::setns(&namespace, nix::sched::CloneFlags::CLONE_NEWNET)
                .expect("enter the namespace");
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let server = Server::start("127.0.0.1:0".parse().unwrap()).await;
                addr_tx.send(server.addr).unwrap();
                let _ = stopped.await;
                server.stop().await;
            });
        });
        let addr = addr_rx.recv().expect("the server started");
        ServerIn {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn room_url(&self, room: &str) -> String {
        format!("http://{}/room/{room}", self.addr)
    }
}

impl Drop for ServerIn {
    fn drop(&mut self) {
        let _ = self.stop.take().unwrap().send(());
        let _ = self.thread.take().unwrap().join();
    }
}

/// A TCP relay in front of the signal server whose connections can be cut, as a network
/// blip would: the server sees the socket drop without a close frame.
pub struct Proxy {
    pub addr: SocketAddr,
    connections: tokio::sync::watch::Sender<u64>,
}

impl Proxy {
    pub async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (connections, generation) = tokio::sync::watch::channel(0u64);
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let mut generation = generation.clone();
                let born = *generation.borrow_and_update();
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = generation.wait_for(|g| *g != born) => {}
                    }
                });
            }
        });
        Proxy { addr, connections }
    }

    /// Drops every connection relayed so far.
    pub fn cut(&self) {
        self.connections.send_modify(|g| *g += 1);
    }
}

/// A running `ackwire-peer join --json`, its stdout lines parsed in the background.
pub struct Peer {
    child: Child,
    lines: mpsc::Receiver<Value>,
    pub seen: Vec<Value>,
}

impl Peer {
    pub fn join(url: &str) -> Peer {
        Peer::join_with(url, &[])
    }

    /// `join` with extra flags.
    pub fn join_with(url: &str, extra: &[&str]) -> Peer {
        Peer::join_in(None, url, extra)
    }

    /// `join` with extra flags, inside network namespace `netns` if given (`ip netns exec`).
    pub fn join_in(netns: Option<&str>, url: &str, extra: &[&str]) -> Peer {
        Peer::spawn(netns, "join", url, extra)
    }

    /// `host` (a host room's relay) with extra flags.
    pub fn host(url: &str, extra: &[&str]) -> Peer {
        Peer::spawn(None, "host", url, extra)
    }

    /// `ackwire-peer SUBCOMMAND URL --json` on loopback, with extra flags.
    fn spawn(netns: Option<&str>, subcommand: &str, url: &str, extra: &[&str]) -> Peer {
        let binary = env!("CARGO_BIN_EXE_ackwire-peer");
        let mut command = match netns {
            Some(netns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", netns, binary]);
                c
            }
            None => Command::new(binary),
        };
        let mut child = command
            // On this machine only (the default binds every interface).
            .args([subcommand, url, "--json", "--bind", "127.0.0.1:0"])
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ackwire-peer");
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let pid = child.id();
        thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                eprintln!("[peer {pid}] {line}");
            }
        });
        let (tx, lines) = mpsc::channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(value);
                }
            }
        });
        Peer {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a line matching `pred`, keeping every line read.
    pub fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no {what} within {timeout:?}; last lines: {:?}",
                    last(&self.seen)
                ),
            }
        }
    }

    pub fn peer_id(&mut self) -> u64 {
        let welcome = self.wait_for("welcome", Duration::from_secs(10), |l| {
            l["type"] == "welcome"
        });
        welcome["peer_id"].as_u64().unwrap()
    }
}

impl Peer {
    /// Sends SIGTERM, as a supervisor stopping the peer would.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    /// Kills the process (SIGKILL): a crash, which leaves nothing a chance to say goodbye.
    pub fn crash(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for the process to end by itself (its output closes), keeping every line read;
    /// its exit code.
    pub fn exit_code(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!(
                        "still running after {timeout:?}; last lines: {:?}",
                        last(&self.seen)
                    )
                }
            }
        }
        self.child.wait().expect("wait for ackwire-peer").code()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two natives joined to `url`, one after the other, once their UDP link is up on both
/// sides: `(a, b, a's id, b's id)`.
pub fn linked_pair(url: &str) -> (Peer, Peer, u64, u64) {
    let mut a = Peer::join(url);
    let a_id = a.peer_id();
    let mut b = Peer::join(url);
    let b_id = b.peer_id();
    for (me, other) in [(&mut a, b_id), (&mut b, a_id)] {
        me.wait_for("the UDP link", Duration::from_secs(10), |l| {
            link_state(l, other, "connected") && l["transport"] == "udp"
        });
    }
    (a, b, a_id, b_id)
}

/// Whether `line` reports the link to `peer` entering `state`.
pub fn link_state(line: &Value, peer: u64, state: &str) -> bool {
    line["type"] == "link" && line["peer"] == peer && line["state"] == state
}

/// Whether `line` says signalling dropped.
pub fn signalling_down(line: &Value) -> bool {
    line["type"] == "signalling" && line["state"] == "reconnecting"
}

pub fn last(lines: &[Value]) -> &[Value] {
    &lines[lines.len().saturating_sub(4)..]
}

/// The stats entry for the link to `peer` in a stats line, if any.
pub fn link_to(line: &Value, peer: u64) -> Option<&Value> {
    line["links"].as_array()?.iter().find(|l| l["peer"] == peer)
}

pub fn acked(line: &Value, peer: u64) -> u64 {
    link_to(line, peer).map_or(0, |l| l["stats"]["packets_acked"].as_u64().unwrap_or(0))
}

/// Returns once everything `sender` sent `receiver` reliably has arrived and nothing of it can
/// arrive again: the sender reports nothing awaiting confirmation on the link (so nothing will
/// be resent), then the receiver has taken in more packets on it than the sender had sent by
/// then (loopback keeps order, so every earlier copy came first). Then a count of deliveries
/// is final, with no waiting "for any duplicate".
pub fn in_flight_settled(sender: &mut Peer, sender_id: u64, receiver: &mut Peer, receiver_id: u64) {
    let stat = |line: &Value, peer: u64, key: &str| {
        link_to(line, peer).and_then(|l| l["stats"][key].as_u64())
    };
    let confirmed = sender.wait_for("nothing unconfirmed", Duration::from_secs(10), |l| {
        link_to(l, receiver_id).is_some_and(|link| link["unconfirmed"] == 0)
            && stat(l, receiver_id, "packets_sent").is_some()
    });
    let sent = stat(&confirmed, receiver_id, "packets_sent").unwrap_or(0);
    receiver.wait_for("the packets sent by then", Duration::from_secs(10), |l| {
        stat(l, sender_id, "packets_received").is_some_and(|received| received > sent)
    });
}

/// A dashboard's subscription: collects `stats` events of `room`.
pub async fn subscribe(server: &Server, room: &str) -> mpsc::Receiver<Value> {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", server.addr))
        .await
        .expect("dashboard connects");
    ws.send(Message::text(
        json!({"type": "subscribe", "room": room}).to_string(),
    ))
    .await
    .unwrap();
    let (tx, rx) = mpsc::channel();
    tokio::spawn(async move {
        while let Some(Ok(message)) = ws.next().await {
            if let Message::Text(text) = message
                && let Ok(value) = serde_json::from_str::<Value>(&text)
                && value["type"] == "stats"
                && tx.send(value).is_err()
            {
                return;
            }
        }
    });
    rx
}

/// Waits for a dashboard stats event from `from` about `to` over `transport`.
pub fn dashboard_link(rx: &mpsc::Receiver<Value>, from: u64, to: u64, transport: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Ok(event) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if event["peer_id"] != from {
            continue;
        }
        let link = event["links"]
            .as_array()
            .and_then(|links| links.iter().find(|l| l["peer"] == to));
        if let Some(link) = link {
            assert_eq!(link["transport"], transport, "{event}");
            if link["stats"]["packets_acked"].as_u64().unwrap_or(0) > 0 {
                return link.clone();
            }
        }
    }
    panic!("no dashboard stats for {from}→{to}");
}

pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}
