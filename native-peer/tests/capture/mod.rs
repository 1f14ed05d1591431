//! A packet capture for the tests that check what crosses the wire: a network namespace with
//! only `lo` up, and `tcpdump` recording its UDP (setup installs it). Shared by the
//! `encrypted_udp` and `room_udp` tests.

#![allow(dead_code, unreachable_pub)]

use std::thread;

/// A network namespace with only `lo` up, removed on drop; with a `tcpdump` of its UDP.
pub struct Capture {
    pub netns: String,
    file: std::path::PathBuf,
    tcpdump: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Capture {
    pub fn start(tag: &str) -> Capture {
        use std::io::{BufRead, BufReader};
        use std::process::{Command, Stdio};
        let netns = format!("ackw-cap-{}-{tag}", std::process::id());
        let ip = |args: &[&str]| {
            let status = Command::new("ip").args(args).status().expect("run ip");
            assert!(status.success(), "ip {args:?}");
        };
        ip(&["netns", "add", &netns]);
        ip(&["netns", "exec", &netns, "ip", "link", "set", "lo", "up"]);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lo.pcap");
        let mut tcpdump = Command::new("ip")
            .args(["netns", "exec", &netns, "tcpdump", "-i", "lo", "-n", "-U"])
            // Each packet handed over as it comes: otherwise the kernel holds them in blocks
            // for up to a second, and a short exchange ends before any reaches the file.
            .arg("--immediate-mode")
            .arg("-w")
            .arg(&file)
            .arg("udp")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump (cargo xtask setup installs it)");
        // tcpdump says "listening on lo" once the capture runs.
        let stderr = BufReader::new(tcpdump.stderr.take().unwrap());
        let mut lines = stderr.lines();
        assert!(
            lines.any(|l| l.is_ok_and(|l| l.contains("listening on"))),
            "tcpdump did not start"
        );
        thread::spawn(move || lines.for_each(drop));
        Capture {
            netns,
            file,
            tcpdump,
            _dir: dir,
        }
    }

    /// Stops the capture (SIGINT flushes it) and returns the UDP payloads it holds.
    pub fn datagrams(mut self) -> Vec<Vec<u8>> {
        let status = std::process::Command::new("kill")
            .args(["-INT", &self.tcpdump.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.tcpdump.wait().unwrap();
        pcap_udp_payloads(&std::fs::read(&self.file).unwrap())
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.tcpdump.kill();
        let _ = self.tcpdump.wait();
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.netns])
            .status();
    }
}

/// The UDP payloads of a classic pcap file of IPv4 on loopback (Ethernet framing).
fn pcap_udp_payloads(file: &[u8]) -> Vec<Vec<u8>> {
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!(u32_at(file, 0), 0xa1b2_c3d4, "a little-endian pcap file");
    assert_eq!(u32_at(file, 20), 1, "Ethernet link type");
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= file.len() {
        let len = u32_at(file, at + 8) as usize;
        let frame = &file[at + 16..at + 16 + len];
        at += 16 + len;
        let ip = &frame[14..];
        let header = usize::from(ip[0] & 0x0f) * 4;
        if ip[0] >> 4 == 4 && ip[9] == 17 {
            out.push(ip[header + 8..].to_vec());
        }
    }
    out
}

/// Whether `datagram` holds `text` anywhere.
pub fn holds(datagram: &[u8], text: &[u8]) -> bool {
    datagram.windows(text.len()).any(|w| w == text)
}
