//! Two `ackwire-peer join` processes in one room of a real signalling server on 127.0.0.1:
//! they link over raw UDP (the addresses exchanged in the room), exchange positions and a
//! greeting exactly once, report stats to dashboards like browsers do, and keep their link
//! through a signalling server restart, rejoining once it is back.
//!
//! No WebRTC here (no browser in the room), so no ICE; every socket is on loopback.

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
struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    async fn start(addr: SocketAddr) -> Server {
        let listener = TcpListener::bind(addr)
            .await
            .expect("bind the signal server");
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel();
        let config = ackwire_signal::config::Config {
            bind: addr,
            ..Default::default()
        };
        let task = tokio::spawn(async move {
            let _ = ackwire_signal::serve(listener, config, async {
                let _ = stopped.await;
            })
            .await;
        });
        Server {
            addr,
            stop: Some(stop),
            task,
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let _ = self.task.await;
    }

    fn room_url(&self, room: &str) -> String {
        format!("http://{}/room/{room}", self.addr)
    }
}

/// A running `ackwire-peer join --json`, its stdout lines parsed in the background.
struct Peer {
    child: Child,
    lines: mpsc::Receiver<Value>,
    seen: Vec<Value>,
}

impl Peer {
    fn join(url: &str) -> Peer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ackwire-peer"))
            .args(["join", url, "--json"])
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ackwire-peer join");
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
    fn wait_for(&mut self, what: &str, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
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

    fn peer_id(&mut self) -> u64 {
        let welcome = self.wait_for("welcome", Duration::from_secs(10), |l| {
            l["type"] == "welcome"
        });
        welcome["peer_id"].as_u64().unwrap()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn last(lines: &[Value]) -> &[Value] {
    &lines[lines.len().saturating_sub(4)..]
}

/// The stats entry for the link to `peer` in a stats line, if any.
fn link_to(line: &Value, peer: u64) -> Option<&Value> {
    line["links"].as_array()?.iter().find(|l| l["peer"] == peer)
}

fn acked(line: &Value, peer: u64) -> u64 {
    link_to(line, peer).map_or(0, |l| l["stats"]["packets_acked"].as_u64().unwrap_or(0))
}

/// A dashboard's subscription: collects `stats` events of `room`.
async fn subscribe(server: &Server, room: &str) -> mpsc::Receiver<Value> {
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
            if let Message::Text(text) = message {
                if let Ok(value) = serde_json::from_str::<Value>(&text) {
                    if value["type"] == "stats" && tx.send(value).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// Waits for a dashboard stats event from `from` about `to` over `transport`.
fn dashboard_link(rx: &mpsc::Receiver<Value>, from: u64, to: u64, transport: &str) -> Value {
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

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_natives_in_a_room_link_over_udp_exchange_positions_and_a_greeting_once() {
    let server = Server::start("127.0.0.1:0".parse().unwrap()).await;
    let dashboard = subscribe(&server, "udp-pair").await;
    let url = server.room_url("udp-pair");
    let (mut a, mut b) = blocking(move || {
        let mut a = Peer::join(&url);
        a.peer_id();
        let b = Peer::join(&url);
        (a, b)
    })
    .await;
    let (a, b, a_id, b_id) = blocking(move || {
        let b_id = b.peer_id();
        let a_id = a.seen[0]["peer_id"].as_u64().unwrap();
        for (me, other) in [(&mut a, b_id), (&mut b, a_id)] {
            me.wait_for("a UDP link", Duration::from_secs(10), |l| {
                l["type"] == "link-connected" && l["peer"] == other && l["transport"] == "udp"
            });
            // The other's dot moves: two different positions arrive over the link.
            let first = me.wait_for("a position", Duration::from_secs(10), |l| {
                link_to(l, other).is_some_and(|link| !link["position"].is_null())
            });
            let first = link_to(&first, other).unwrap()["position"].clone();
            me.wait_for("a moved position", Duration::from_secs(10), |l| {
                link_to(l, other)
                    .is_some_and(|link| !link["position"].is_null() && link["position"] != first)
            });
        }
        (a, b, a_id, b_id)
    })
    .await;
    let (a, b) = (a, b);
    // Each side's greeting arrives exactly once (reliable channel), with no echo between
    // natives; stats show a plausible loopback RTT and no loss.
    let (a, b) = blocking(move || {
        let (mut a, mut b) = (a, b);
        thread::sleep(Duration::from_millis(1500));
        for (me, other) in [(&mut a, b_id), (&mut b, a_id)] {
            let line = me.wait_for("stats", Duration::from_secs(3), |l| acked(l, other) > 20);
            let link = link_to(&line, other).unwrap();
            let rtt = link["stats"]["rtt_ms"].as_f64().unwrap();
            // The core's RTT includes the peer's wait for its next paced packet (up to 100 ms
            // at the 10 packets/s of the first seconds), so loopback reads tens of ms.
            assert!(rtt > 0.0 && rtt < 250.0, "loopback RTT {rtt} ms");
            assert_eq!(link["stats"]["packets_lost"], 0);
            let chats: Vec<&Value> = me.seen.iter().filter(|l| l["type"] == "chat").collect();
            assert_eq!(
                chats,
                [&json!({"type": "chat", "peer": other, "text": format!("hello from native peer {other}")})]
            );
        }
        (a, b)
    })
    .await;
    // Both links reach the dashboard, labelled as UDP.
    let (ab, ba) = blocking(move || {
        (
            dashboard_link(&dashboard, a_id, b_id, "udp"),
            dashboard_link(&dashboard, b_id, a_id, "udp"),
        )
    })
    .await;
    assert_eq!(ab["stats"]["connection_state"], "connected");
    assert_eq!(ba["stats"]["connection_state"], "connected");
    drop((a, b));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_link_keeps_flowing_through_a_signalling_restart_and_both_rejoin_as_new_peers() {
    let server = Server::start("127.0.0.1:0".parse().unwrap()).await;
    let addr = server.addr;
    let url = server.room_url("restart");
    let (a, b, a_id, b_id) = blocking(move || {
        let mut a = Peer::join(&url);
        let a_id = a.peer_id();
        let mut b = Peer::join(&url);
        let b_id = b.peer_id();
        a.wait_for("a UDP link", Duration::from_secs(10), |l| {
            l["type"] == "link-connected"
        });
        b.wait_for("a UDP link", Duration::from_secs(10), |l| {
            l["type"] == "link-connected"
        });
        (a, b, a_id, b_id)
    })
    .await;
    server.stop().await;
    // While signalling is down the link carries on: acks keep climbing on both sides.
    let (a, b) = blocking(move || {
        let (mut a, mut b) = (a, b);
        for (me, other) in [(&mut a, b_id), (&mut b, a_id)] {
            me.wait_for("signalling-down", Duration::from_secs(5), |l| {
                l["type"] == "signalling-down"
            });
            let before = acked(
                &me.wait_for("stats", Duration::from_secs(3), |l| acked(l, other) > 0),
                other,
            );
            me.wait_for(
                "acks while signalling is down",
                Duration::from_secs(4),
                |l| acked(l, other) >= before + 20,
            );
        }
        (a, b)
    })
    .await;
    // The server comes back (it remembers nothing): both join again as new peers, and the
    // link made under the old ids keeps flowing.
    let server = Server::start(addr).await;
    let dashboard = subscribe(&server, "restart").await;
    let (a, b, a_new, b_new) = blocking(move || {
        let (mut a, mut b) = (a, b);
        let mut new_ids = Vec::new();
        for (me, other) in [(&mut a, b_id), (&mut b, a_id)] {
            let welcome = me.wait_for("a new welcome", Duration::from_secs(15), |l| {
                l["type"] == "welcome"
            });
            assert_eq!(welcome["resumed"], false);
            new_ids.push(welcome["peer_id"].as_u64().unwrap());
            let before = acked(
                &me.wait_for("stats", Duration::from_secs(3), |l| acked(l, other) > 0),
                other,
            );
            me.wait_for("acks after the restart", Duration::from_secs(4), |l| {
                acked(l, other) >= before + 20
            });
        }
        (a, b, new_ids[0], new_ids[1])
    })
    .await;
    // A native arriving now links with both over UDP, and the dashboard charts those links.
    let url = server.room_url("restart");
    let (a, b, c) = blocking(move || {
        let mut c = Peer::join(&url);
        let c_id = c.peer_id();
        for (from, to) in [(a_new, c_id), (b_new, c_id), (c_id, a_new), (c_id, b_new)] {
            let link = dashboard_link(&dashboard, from, to, "udp");
            assert_eq!(link["stats"]["connection_state"], "connected");
        }
        (a, b, c)
    })
    .await;
    drop(c);
    drop((a, b));
    server.stop().await;
}
