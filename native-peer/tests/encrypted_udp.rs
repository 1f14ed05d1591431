//! Encrypted native links between two real `ackwire-peer` processes on loopback: encryption
//! is on by default, a listener's key file gives it a stable fingerprint that a connector
//! pins, a wrong pin or a plaintext listener is refused with a clear error, and a relay
//! recording every datagram between them (a packet capture) never sees the demo message's
//! plaintext, which the same run with `--insecure` on both sides shows; so does a real packet
//! capture (`tcpdump`) of loopback in a network namespace the test makes.

mod capture;
mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use capture::Capture;
use common::{Peer, connect, connect_in, listen, listen_in, num};

/// The demo message's fixed label, in every message the connector sends and the echo.
const LABEL: &[u8] = b"ackwire demo state";

/// A UDP relay between one connector and `listener`, keeping a copy of every datagram.
struct Relay {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    fn to(listener: SocketAddr) -> Relay {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let addr = socket.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen_in, stop_in) = (seen.clone(), stop.clone());
        thread::spawn(move || {
            let mut connector = None;
            let mut buf = [0u8; 2048];
            while !stop_in.load(Ordering::Relaxed) {
                let Ok((len, from)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                seen_in.lock().unwrap().push(buf[..len].to_vec());
                let to = if from == listener {
                    match connector {
                        Some(c) => c,
                        None => continue,
                    }
                } else {
                    connector = Some(from);
                    listener
                };
                let _ = socket.send_to(&buf[..len], to);
            }
        });
        Relay { addr, seen, stop }
    }

    fn datagrams(&self) -> Vec<Vec<u8>> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn carries_label(datagram: &[u8]) -> bool {
    capture::holds(datagram, LABEL)
}

/// The fingerprint from a listener's "listener key" log line.
fn fingerprint(listener: &Peer) -> String {
    let line = listener
        .wait_for_log(Duration::from_secs(10), |l| l.contains("listener key"))
        .expect("the listener logs its key");
    line.split("fingerprint=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a fingerprint field")
        .to_owned()
}

/// Runs a connector through a relay to `listener` for 3 s; returns its summary and every
/// datagram the relay carried.
fn relayed(listener: &Peer, extra: &[&str]) -> (serde_json::Value, Vec<Vec<u8>>) {
    let relay = Relay::to(listener.addr);
    let mut args = vec!["--duration", "3"];
    args.extend_from_slice(extra);
    let reports = connect(relay.addr, &args).finish();
    (reports.last().unwrap().clone(), relay.datagrams())
}

#[test]
fn a_pinned_encrypted_link_carries_the_demo_both_ways_and_no_datagram_shows_its_plaintext() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("listen.key");
    let key_path = key_file.to_str().unwrap();
    let listener = listen(&["--key", key_path]);
    let key = fingerprint(&listener);
    assert_eq!(key.len(), 44, "{key}");
    assert!(key_file.exists(), "the key file was created");

    let (summary, seen) = relayed(&listener, &["--server-key", &key]);
    assert!(
        num(&summary, "packets_received") >= 20.0,
        "the listener's packets came back: {summary}"
    );
    assert_eq!(num(&summary, "packets_unauthenticated"), 0.0);
    assert!(seen.len() >= 40, "{} datagrams", seen.len());
    assert!(
        !seen.iter().any(|d| carries_label(d)),
        "plaintext on the wire"
    );
    drop(listener);

    // The same key file after a restart: the same fingerprint, so the pin still holds.
    let listener = listen(&["--key", key_path]);
    assert_eq!(fingerprint(&listener), key);
    let (summary, _) = relayed(&listener, &["--server-key", &key]);
    assert!(num(&summary, "packets_received") >= 20.0, "{summary}");

    // The check can see plaintext: with encryption off on both sides, the label shows.
    let plain = listen(&["--insecure"]);
    let (summary, seen) = relayed(&plain, &["--insecure"]);
    assert!(num(&summary, "packets_received") >= 20.0, "{summary}");
    assert!(seen.iter().any(|d| carries_label(d)));
}

#[test]
fn without_a_pin_the_connector_trusts_the_first_key_and_logs_it_to_pin() {
    let listener = listen(&[]);
    let key = fingerprint(&listener);
    let client = connect(listener.addr, &["--duration", "2"]);
    let line = client
        .wait_for_log(Duration::from_secs(10), |l| l.contains("on first use"))
        .expect("the connector says it trusted a key on first use");
    assert!(line.contains(&format!("--server-key {key}")), "{line}");
    let summary = client.finish().pop().unwrap();
    assert!(num(&summary, "packets_acked") > 0.0);
}

#[test]
fn a_wrong_pin_or_a_plaintext_listener_is_refused_at_once_with_a_clear_error() {
    use std::time::Instant;
    let listener = listen(&[]);
    let other = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let started = Instant::now();
    let client = connect(listener.addr, &["--server-key", other]);
    let line = client
        .wait_for_log(Duration::from_secs(10), |l| l.contains("refused"))
        .expect("an error");
    assert!(line.contains("not the pinned one"), "{line}");
    assert!(
        line.contains(&fingerprint(&listener)),
        "names the key: {line}"
    );
    let (status, _) = client.exit();
    assert!(!status.success());
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "refused at once"
    );

    let plain = listen(&["--insecure"]);
    let started = Instant::now();
    let client = connect(plain.addr, &[]);
    let line = client
        .wait_for_log(Duration::from_secs(10), |l| l.contains("refused"))
        .expect("an error");
    assert!(line.contains("without encryption"), "{line}");
    let (status, _) = client.exit();
    assert!(!status.success());
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "refused at once"
    );
}

#[test]
fn a_bad_key_argument_or_key_file_stops_the_peer_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let garbled = dir.path().join("garbled.key");
    std::fs::write(&garbled, "not a key\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ackwire-peer"))
        .args(["listen", "--bind", "127.0.0.1:0", "--key"])
        .arg(&garbled)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("does not hold a key"), "{stderr}");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ackwire-peer"))
        .args(["connect", "127.0.0.1:9", "--server-key", "short"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("44 characters of base64"), "{stderr}");
}

#[test]
fn a_packet_capture_of_an_encrypted_link_in_a_namespace_shows_no_plaintext() {
    let capture = Capture::start("secure");
    let listener = listen_in(&capture.netns, &[]);
    let key = fingerprint(&listener);
    let summary = connect_in(
        &capture.netns,
        listener.addr,
        &["--duration", "3", "--server-key", &key],
    )
    .finish()
    .pop()
    .unwrap();
    assert!(num(&summary, "packets_received") >= 20.0, "{summary}");
    drop(listener);
    let seen = capture.datagrams();
    assert!(seen.len() >= 40, "{} datagrams captured", seen.len());
    assert!(
        !seen.iter().any(|d| carries_label(d)),
        "plaintext on the wire"
    );

    // The same capture of an `--insecure` link shows the label: the check can see plaintext.
    let capture = Capture::start("plain");
    let listener = listen_in(&capture.netns, &["--insecure"]);
    let summary = connect_in(
        &capture.netns,
        listener.addr,
        &["--duration", "3", "--insecure"],
    )
    .finish()
    .pop()
    .unwrap();
    assert!(num(&summary, "packets_received") >= 20.0, "{summary}");
    drop(listener);
    assert!(capture.datagrams().iter().any(|d| carries_label(d)));
}
