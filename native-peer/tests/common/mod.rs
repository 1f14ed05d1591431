//! Launches real `ackwire-peer` processes on 127.0.0.1 and collects their JSON reports.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running peer whose stdout lines are collected in the background.
pub struct Peer {
    child: Child,
    /// The address it serves on (from its "peer running" log line).
    pub addr: SocketAddr,
    lines: mpsc::Receiver<String>,
    logs: mpsc::Receiver<String>,
}

/// The log filter of peers spawned by [`listen`] and [`connect`].
pub const INFO: &str = "info";
/// A log filter that adds the peer's own debug lines (each refused datagram, for one).
pub const DEBUG: &str = "info,ackwire_peer=debug";

fn spawn(args: &[&str], log_filter: &str) -> Peer {
    spawn_in(None, args, log_filter)
}

/// [`spawn`], inside network namespace `netns` (`ip netns exec`) when given.
fn spawn_in(netns: Option<&str>, args: &[&str], log_filter: &str) -> Peer {
    let bin = env!("CARGO_BIN_EXE_ackwire-peer");
    let mut command = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, bin]);
            c
        }
        None => Command::new(bin),
    };
    let mut child = command
        .args(args)
        .env("RUST_LOG", log_filter)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ackwire-peer");
    let (addr_tx, addr_rx) = mpsc::channel();
    let (log_tx, logs) = mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    thread::spawn(move || {
        // Keep draining so the peer never blocks on a full pipe.
        for line in stderr.lines().map_while(Result::ok) {
            if let Some(rest) = line.split("local=").nth(1) {
                let addr = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let _ = addr_tx.send(addr);
            }
            eprintln!("[peer {}] {line}", std::process::id());
            let _ = log_tx.send(line);
        }
    });
    let (line_tx, lines) = mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = line_tx.send(line);
        }
    });
    let addr = addr_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("peer logs its address")
        .parse()
        .expect("a socket address");
    Peer {
        child,
        addr,
        lines,
        logs,
    }
}

/// `ackwire-peer listen --bind 127.0.0.1:0 --json` plus `extra` flags.
pub fn listen(extra: &[&str]) -> Peer {
    listen_logging(extra, INFO)
}

/// [`listen`] with `RUST_LOG=log_filter`.
pub fn listen_logging(extra: &[&str], log_filter: &str) -> Peer {
    let mut args = vec!["listen", "--bind", "127.0.0.1:0", "--json"];
    args.extend_from_slice(extra);
    spawn(&args, log_filter)
}

/// [`listen`] inside network namespace `netns` (`ip netns exec`).
pub fn listen_in(netns: &str, extra: &[&str]) -> Peer {
    let mut args = vec!["listen", "--bind", "127.0.0.1:0", "--json"];
    args.extend_from_slice(extra);
    spawn_in(Some(netns), &args, INFO)
}

/// [`connect`] inside network namespace `netns` (`ip netns exec`).
pub fn connect_in(netns: &str, to: SocketAddr, extra: &[&str]) -> Peer {
    let to = to.to_string();
    let mut args = vec!["connect", to.as_str(), "--bind", "127.0.0.1:0", "--json"];
    args.extend_from_slice(extra);
    spawn_in(Some(netns), &args, INFO)
}

/// `ackwire-peer connect ADDR --json` plus `extra` flags.
pub fn connect(to: SocketAddr, extra: &[&str]) -> Peer {
    connect_logging(to, extra, INFO)
}

/// [`connect`] with `RUST_LOG=log_filter`.
pub fn connect_logging(to: SocketAddr, extra: &[&str], log_filter: &str) -> Peer {
    let to = to.to_string();
    let mut args = vec!["connect", to.as_str(), "--bind", "127.0.0.1:0", "--json"];
    args.extend_from_slice(extra);
    spawn(&args, log_filter)
}

impl Peer {
    /// Waits for the peer to exit successfully and returns its JSON lines; the last is the
    /// summary.
    pub fn finish(mut self) -> Vec<Value> {
        let status = self.child.wait().expect("wait for peer");
        assert!(status.success(), "peer exited with {status}");
        let reports: Vec<Value> = self
            .lines
            .iter()
            .map(|line| serde_json::from_str(&line).expect("every stdout line is JSON"))
            .collect();
        let (summary, ticks) = reports.split_last().expect("at least a summary");
        assert_eq!(summary["summary"], true, "last line is the summary");
        assert!(ticks.iter().all(|r| r["summary"] == false));
        reports
    }

    /// The next JSON line, if one comes within `timeout`.
    pub fn next_report(&self, timeout: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(timeout).ok()?;
        Some(serde_json::from_str(&line).expect("every stdout line is JSON"))
    }

    /// Reads the peer's JSON lines until one satisfies `pred`, for at most `within`.
    pub fn wait_for_report(
        &self,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let end = Instant::now() + within;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.next_report(left) {
                Some(report) if pred(&report) => return Some(report),
                Some(_) => {}
                None => return None,
            }
        }
        None
    }

    /// Reads the peer's log lines (stderr) until one satisfies `pred`, for at most `within`.
    pub fn wait_for_log(&self, within: Duration, pred: impl Fn(&str) -> bool) -> Option<String> {
        let end = Instant::now() + within;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.logs.recv_timeout(left) {
                Ok(line) if pred(&line) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        None
    }

    /// Waits for the peer to exit, whatever its status, and returns the status with its
    /// stdout lines.
    pub fn exit(mut self) -> (std::process::ExitStatus, Vec<String>) {
        let status = self.child.wait().expect("wait for peer");
        (status, self.lines.iter().collect())
    }

    /// Sends SIGINT (what Ctrl-C sends) and returns at once.
    pub fn signal_interrupt(&self) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    /// Sends SIGINT (what Ctrl-C sends), then [`finish`](Self::finish)es.
    pub fn interrupt(self) -> Vec<Value> {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
        self.finish()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // A failed test must not leave its peers running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A report field as f64.
pub fn num(report: &Value, key: &str) -> f64 {
    report[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {report}"))
}
