//! Garbage aimed at a listening `ackwire-peer` is counted and changes nothing for a live
//! connection; Ctrl-C ends the listener cleanly with a summary.

mod common;

use std::net::UdpSocket;
use std::thread;
use std::time::{Duration, Instant};

use common::{connect, listen, num};

/// A tiny deterministic generator, so a failure replays exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

#[derive(Default)]
struct Sent {
    oversized: u64,
    malformed: u64,
    rejected: u64,
}

fn garbage(rng: &mut Rng, sent: &mut Sent) -> Vec<u8> {
    match rng.next() % 5 {
        0 => {
            sent.oversized += 1;
            let len = 1201 + (rng.next() % 800) as usize;
            rng.bytes(len)
        }
        1 => {
            sent.malformed += 1;
            Vec::new()
        }
        2 => {
            // Random bytes behind a prefix of a foreign wire version or with the reserved bit.
            sent.malformed += 1;
            let len = 1 + (rng.next() % 1100) as usize;
            let mut bytes = rng.bytes(len);
            bytes[0] = if rng.next() % 2 == 0 { 0x80 } else { 0x60 } | (bytes[0] & 0x1F);
            bytes
        }
        3 => {
            // A valid prefix cut short.
            sent.malformed += 1;
            vec![0x40, 0x00]
        }
        _ => {
            // Well-formed header (sequence, full ack, ack bits 0x00000001) acking packets the
            // listener never sent to this address: a forged or stray packet.
            sent.rejected += 1;
            let mut bytes = vec![0x4F, 0x12, 0x34, 0xAB, 0xCD, 0x01, 0x00, 0x00, 0x00];
            let len = (rng.next() % 64) as usize;
            bytes.extend(rng.bytes(len));
            bytes
        }
    }
}

#[test]
fn garbage_datagrams_are_counted_by_kind_and_leave_a_live_connection_untouched() {
    let listener = listen(&[]);
    let client = connect(listener.addr, &["--duration", "8"]);

    let attacker = UdpSocket::bind("127.0.0.1:0").unwrap();
    attacker
        .set_read_timeout(Some(Duration::from_millis(1)))
        .unwrap();
    let mut rng = Rng(0x00C0_FFEE);
    let mut sent = Sent::default();
    let mut answers = 0;
    let mut buf = [0u8; 2048];
    let start = Instant::now();
    // 2 s in, for 4 s: 2,000 datagrams while the connection is live, mode changes included.
    thread::sleep(Duration::from_secs(2));
    while start.elapsed() < Duration::from_secs(6) {
        for _ in 0..5 {
            attacker
                .send_to(&garbage(&mut rng, &mut sent), listener.addr)
                .unwrap();
        }
        // Paced at 500/s so the kernel's socket buffer never drops any.
        thread::sleep(Duration::from_millis(10));
        if attacker.recv_from(&mut buf).is_ok() {
            answers += 1;
        }
    }

    let client_reports = client.finish();
    let listener_reports = listener.interrupt();

    assert_eq!(answers, 0, "the listener never answers garbage");
    let summary = listener_reports.last().unwrap();
    let dropped = &summary["dropped"];
    assert_eq!(dropped["oversized"], sent.oversized, "{summary}");
    assert_eq!(dropped["malformed"], sent.malformed, "{summary}");
    assert_eq!(dropped["rejected"], sent.rejected, "{summary}");
    assert!(sent.oversized > 0 && sent.malformed > 0 && sent.rejected > 0);
    for report in &listener_reports {
        assert!(
            num(report, "connections") <= 1.0,
            "garbage opened a connection: {report}"
        );
    }

    let client_summary = client_reports.last().unwrap();
    assert_eq!(num(client_summary, "packets_lost"), 0.0, "{client_summary}");
    assert!(num(client_summary, "packets_acked") >= num(client_summary, "packets_sent") - 3.0);
    let last_tick = &client_reports[client_reports.len() - 2];
    assert_eq!(last_tick["mode"], "good", "{last_tick}");
    assert!(num(last_tick, "send_rate_hz") >= 25.0, "{last_tick}");
    assert!(num(last_tick, "rtt_ms") < 60.0, "{last_tick}");
}

#[test]
fn out_of_range_emulation_flags_are_refused_with_a_clear_error() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ackwire-peer"))
        .args(["connect", "127.0.0.1:9", "--loss", "150", "--duration", "1"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("loss_percent = 150"), "{stderr}");
    assert!(output.stdout.is_empty(), "no report from a refused run");
}
