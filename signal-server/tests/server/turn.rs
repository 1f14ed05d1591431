//! The TURN credentials a welcome carries, tried on a real coturn (Debian's `turnserver`, which
//! `cargo xtask setup` installs) configured as `docs/signalling.md` says: they allocate a relay
//! and carry data; the same scheme with an expired time is refused. Everything on 127.0.0.1.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use crate::common::Server;

const SECRET: &str = "north-wind";

/// A coturn on 127.0.0.1 that takes short-lived credentials made with `SECRET`.
struct Coturn {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Coturn {
    fn start() -> Coturn {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .unwrap()
            .port();
        let mut child = Command::new("turnserver")
            .args(["-n", "-v", "--no-cli", "--no-tls", "--no-dtls", "--no-tcp"])
            .args(["--listening-ip", "127.0.0.1", "--relay-ip", "127.0.0.1"])
            .args(["--listening-port", &port.to_string()])
            .args(["--realm", "ackwire.test", "--use-auth-secret"])
            .args(["--static-auth-secret", SECRET])
            // The test's two relays send to each other on loopback.
            .arg("--allow-loopback-peers")
            .arg("--pidfile")
            .arg(dir.path().join("turnserver.pid"))
            .arg("--db")
            .arg(dir.path().join("turndb"))
            .args(["--log-file", "stdout"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("turnserver (coturn) runs: `cargo xtask setup` installs it");
        // Ready once it says its UDP listener is open.
        let ready = format!("UDP listener opened on: 127.0.0.1:{port}");
        let mut log = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains(&ready) {
            line.clear();
            assert!(log.read_line(&mut line).unwrap() > 0, "turnserver exited");
        }
        std::thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
        Coturn {
            child,
            port,
            _dir: dir,
        }
    }

    /// Allocates a relay with `username`/`credential` and sends a few messages through it
    /// (coturn's own test client).
    fn allocate(&self, username: &str, credential: &str) -> Output {
        Command::new("turnutils_uclient")
            .args([
                "-p",
                &self.port.to_string(),
                "-u",
                username,
                "-w",
                credential,
            ])
            .args(["-y", "-n", "1", "-c", "127.0.0.1"])
            .output()
            .expect("turnutils_uclient runs")
    }
}

impl Drop for Coturn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Messages the test client got back through the relay (its last `tot_recv_msgs=`).
fn received(output: &Output) -> u64 {
    let text = String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
    text.rsplit("tot_recv_msgs=")
        .next()
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn welcome_credentials_allocate_a_relay_on_coturn_and_expired_ones_are_refused() {
    let coturn = Coturn::start();
    let url = format!("turn:127.0.0.1:{}?transport=udp", coturn.port);
    let server = Server::start(|c| {
        c.turn_urls = vec![url.clone()];
        c.turn_secret = Some(SECRET.into());
    })
    .await;
    let (_peer, welcome) = server.peer("lobby").await;
    let turn = &welcome["ice_servers"][0];
    assert_eq!(turn["urls"][0], url.as_str());
    let (username, credential) = (
        turn["username"].as_str().unwrap(),
        turn["credential"].as_str().unwrap(),
    );
    let allocated = coturn.allocate(username, credential);
    assert!(
        allocated.status.success(),
        "{}",
        String::from_utf8_lossy(&allocated.stdout)
    );
    assert!(received(&allocated) > 0, "data went through the relay");

    // The same scheme a minute past its expiry: coturn refuses the allocation.
    let stale =
        ackwire_signal::turn::Turn::new(vec![url.clone()], SECRET.into(), Duration::from_secs(1))
            .unwrap()
            .credentials(7, SystemTime::now() - Duration::from_secs(60));
    let refused = coturn.allocate(&stale.username, &stale.credential);
    assert!(!refused.status.success(), "an expired credential allocated");
    // And a credential made with another secret.
    let forged = ackwire_signal::turn::credential("guess", username);
    assert!(!coturn.allocate(username, &forged).status.success());
    server.stop().await;
}
