//! A `redis-server` of each test's own, and instances of the server sharing rooms through it.

use std::{
    net::SocketAddr,
    process::Stdio,
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use super::Server;

/// A `redis-server` of the test's own.
pub struct Redis {
    pub port: u16,
    child: Child,
}

impl Redis {
    pub async fn start() -> Redis {
        let port = free_port();
        Redis::start_on(port).await
    }

    /// On `port` (again, after [`Redis::kill`]): empty, as a restarted Redis without
    /// persistence is.
    pub async fn start_on(port: u16) -> Redis {
        let mut child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server (installed by `cargo xtask setup`)");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("Ready to accept connections") {
                    return;
                }
            }
            panic!("redis-server exited before it was ready");
        };
        tokio::time::timeout(super::WAIT, ready)
            .await
            .expect("redis-server ready");
        // Keep draining its log so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Redis { port, child }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub async fn kill(mut self) -> u16 {
        self.child.kill().await.unwrap();
        self.port
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An instance in this process, sharing rooms through `redis`, once it reaches Redis.
pub async fn instance(redis: &Redis, tweak: impl FnOnce(&mut ackwire_signal::Config)) -> Server {
    let url = redis.url();
    let server = Server::start(|c| {
        c.redis = Some(url);
        tweak(c);
    })
    .await;
    healthz_says(server.addr, 200).await;
    server
}

/// Waits until `/healthz` answers `status`.
pub async fn healthz_says(addr: SocketAddr, status: u16) {
    let deadline = Instant::now() + super::WAIT;
    loop {
        let (code, _) = super::http_get(addr, "/healthz").await;
        if code == status {
            return;
        }
        assert!(Instant::now() < deadline, "/healthz never said {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
