//! Garbage and forged handshakes aimed at a listening `ackwire-peer` are counted by kind and
//! change nothing for a live connection; a connect request is answered with a challenge no
//! larger than itself (no amplification); Ctrl-C ends the listener cleanly with a summary.

mod common;

use std::net::UdpSocket;
use std::thread;
use std::time::{Duration, Instant};

use ackwire_core::connection::DEFAULT_PROTOCOL_ID;
use ackwire_core::control::{ControlPacket, Cookie};
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
    foreign: u64,
    handshake: u64,
}

fn control(packet: ControlPacket) -> Vec<u8> {
    let mut buf = vec![0u8; packet.encoded_len()];
    let len = packet.emit(&mut buf).unwrap();
    buf.truncate(len);
    buf
}

fn garbage(rng: &mut Rng, sent: &mut Sent) -> Vec<u8> {
    match rng.next() % 7 {
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
            // Random bytes behind the first byte of a foreign wire version (1 or 3), data or
            // control.
            sent.malformed += 1;
            let len = 1 + (rng.next() % 1100) as usize;
            let mut bytes = rng.bytes(len);
            bytes[0] = if rng.next().is_multiple_of(2) {
                0x40
            } else {
                0xC0
            } | (bytes[0] & 0x3F);
            bytes
        }
        3 => {
            // A data packet's prefix cut short, from an address with no connection: the
            // listener does not parse strangers' data packets, it has nothing to route them to.
            sent.foreign += 1;
            vec![0x90, 0x00]
        }
        4 => {
            // Well-formed header (sequence, full ack, ack bits 0x00000001) with a payload, from
            // an address that never connected: a stray or forged data packet.
            sent.foreign += 1;
            let mut bytes = vec![0x8F, 0x12, 0x34, 0xAB, 0xCD, 0x00, 0x01, 0x00, 0x00, 0x00];
            let len = (rng.next() % 64) as usize;
            bytes.extend(rng.bytes(len));
            bytes
        }
        5 => {
            // Another game (or release) knocking.
            sent.handshake += 1;
            control(ControlPacket::ConnectRequest {
                protocol_id: rng.next() | 1,
            })
        }
        _ => {
            // A connect response with a cookie the listener never made.
            sent.handshake += 1;
            let mut nonce = [0u8; 8];
            nonce.copy_from_slice(&rng.bytes(8));
            let mut mac = [0u8; 16];
            mac.copy_from_slice(&rng.bytes(16));
            control(ControlPacket::ConnectResponse {
                protocol_id: DEFAULT_PROTOCOL_ID,
                cookie: Cookie {
                    timestamp_ms: rng.next() % 10_000,
                    nonce,
                    mac,
                },
            })
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
    // From the moment the connection is live (its first ack), for 4 s: 2,000 datagrams,
    // mode changes included.
    client
        .wait_for_report(Duration::from_secs(10), |r| num(r, "packets_acked") > 0.0)
        .expect("the client connects");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(4) {
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

    assert_eq!(
        answers, 0,
        "the listener never answers garbage or forged handshakes"
    );
    let summary = listener_reports.last().unwrap();
    let dropped = &summary["dropped"];
    assert_eq!(dropped["oversized"], sent.oversized, "{summary}");
    assert_eq!(dropped["malformed"], sent.malformed, "{summary}");
    assert_eq!(dropped["foreign"], sent.foreign, "{summary}");
    assert_eq!(dropped["handshake"], sent.handshake, "{summary}");
    assert_eq!(dropped["rejected"], 0, "{summary}");
    // Only the client's two redundant disconnect copies, after the first closed it.
    assert_eq!(dropped["late"], 2, "{summary}");
    assert!(sent.oversized > 0 && sent.malformed > 0 && sent.foreign > 0 && sent.handshake > 0);
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
fn a_connect_request_gets_one_challenge_no_larger_than_itself_and_no_state() {
    // The default listener (encrypted) answers secure requests; one run --insecure, plain
    // ones. Each challenge is no larger than its request, and none opens a connection.
    let secure = control(ControlPacket::SecureRequest {
        protocol_id: DEFAULT_PROTOCOL_ID,
    });
    let plain = control(ControlPacket::ConnectRequest {
        protocol_id: DEFAULT_PROTOCOL_ID,
    });
    for (flags, request) in [(&[][..], &secure), (&["--insecure"][..], &plain)] {
        let listener = listen(flags);
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buf = [0u8; 2048];
        for _ in 0..20 {
            socket.send_to(request, listener.addr).unwrap();
            let (len, from) = socket.recv_from(&mut buf).expect("a challenge");
            assert_eq!(from, listener.addr);
            assert!(
                len <= request.len(),
                "challenge of {len} bytes for a request of {}: amplification",
                request.len()
            );
            assert!(matches!(
                ControlPacket::parse(&buf[..len]),
                Ok(ControlPacket::Challenge { .. } | ControlPacket::SecureChallenge { .. })
            ));
        }
        let reports = listener.interrupt();
        for report in &reports {
            assert_eq!(
                num(report, "connections"),
                0.0,
                "a request alone opened a connection"
            );
        }
        let summary = reports.last().unwrap();
        assert_eq!(summary["dropped"]["handshake"], 0, "{summary}");
        assert_eq!(num(summary, "datagrams_out"), 20.0, "{summary}");
    }
}

#[test]
fn forged_secure_responses_get_no_answer_open_nothing_and_a_real_connector_still_keys() {
    let listener = listen(&[]);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 2048];
    socket
        .send_to(
            &control(ControlPacket::SecureRequest {
                protocol_id: DEFAULT_PROTOCOL_ID,
            }),
            listener.addr,
        )
        .unwrap();
    let len = socket.recv_from(&mut buf).expect("a challenge").0;
    let Ok(ControlPacket::SecureChallenge { cookie, .. }) = ControlPacket::parse(&buf[..len])
    else {
        panic!("not a secure challenge: {:?}", &buf[..len]);
    };
    let mut rng = Rng(0x05EC_00E5);
    let mut junk = || {
        let mut message = [0u8; 48];
        message.copy_from_slice(&rng.bytes(48));
        message
    };
    // The real cookie with a first message that is not a key exchange with the listener's
    // key (it fails to authenticate), then a cookie the listener never made.
    let mut forged_cookie = cookie;
    forged_cookie.mac[0] ^= 1;
    for cookie in [cookie, forged_cookie] {
        let response = control(ControlPacket::SecureResponse {
            protocol_id: DEFAULT_PROTOCOL_ID,
            cookie,
            message: junk(),
        });
        socket.send_to(&response, listener.addr).unwrap();
    }
    assert!(
        socket.recv_from(&mut buf).is_err(),
        "a forged response was answered"
    );
    let report = listener
        .wait_for_report(Duration::from_secs(5), |r| r["dropped"]["handshake"] == 2)
        .expect("both forged responses are counted as refused handshakes");
    assert_eq!(num(&report, "connections"), 0.0, "{report}");

    // The listener is none the worse: a real connector keys a link with it.
    let summary = connect(listener.addr, &["--duration", "2"])
        .finish()
        .pop()
        .unwrap();
    assert!(num(&summary, "packets_acked") >= 10.0, "{summary}");
}

#[test]
fn a_plain_request_to_an_encrypted_listener_gets_no_answer_and_is_counted() {
    let listener = listen(&[]);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let plain = control(ControlPacket::ConnectRequest {
        protocol_id: DEFAULT_PROTOCOL_ID,
    });
    for _ in 0..5 {
        socket.send_to(&plain, listener.addr).unwrap();
    }
    let report = listener
        .wait_for_report(Duration::from_secs(5), |r| r["dropped"]["handshake"] == 5)
        .expect("the five requests are counted as refused handshakes");
    assert_eq!(num(&report, "datagrams_out"), 0.0, "{report}");
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

#[test]
fn datagrams_larger_than_the_mtu_are_logged_at_their_real_length_and_change_nothing() {
    use common::{DEBUG, connect_logging, listen_logging};
    let wait = Duration::from_secs(10);
    let listener = listen_logging(&[], DEBUG);
    let client = connect_logging(listener.addr, &[], DEBUG);
    let connected = client
        .wait_for_report(wait, |r| num(r, "packets_acked") > 0.0)
        .expect("the client connects");
    assert_eq!(connected["dropped"]["oversized"], 0, "{connected}");

    // Far beyond the 1,201 bytes a read cut to the MTU would show, the second close to the
    // largest datagram UDP carries; sent to both ends of the live connection.
    let attacker = UdpSocket::bind("127.0.0.1:0").unwrap();
    let from = attacker.local_addr().unwrap();
    let lens = [4_000, 60_000];
    for len in lens {
        let datagram = vec![0x40; len];
        for to in [listener.addr, client.addr] {
            let sent = attacker.send_to(&datagram, to).unwrap();
            assert_eq!(sent, len);
        }
    }
    for (who, peer) in [("listener", &listener), ("client", &client)] {
        for len in lens {
            let line = peer
                .wait_for_log(wait, |line| line.contains(&format!("from={from}")))
                .unwrap_or_else(|| panic!("the {who} logs the {len}-byte datagram"));
            // In arrival order, which loopback keeps.
            assert!(line.contains(&format!("len={len} ")), "{who}: {line}");
            assert!(line.contains(r#"kind="oversized""#), "{who}: {line}");
            assert!(
                line.contains(&format!("{len}-byte datagram exceeds the 1200-byte limit")),
                "{who}: {line}"
            );
        }
    }

    // Both ends count the two and carry on: the client's connection keeps being acked.
    let acked = num(&connected, "packets_acked");
    let later = client
        .wait_for_report(wait, |r| {
            r["dropped"]["oversized"] == 2 && num(r, "packets_acked") >= acked + 10.0
        })
        .expect("the client counts both and its packets keep being acked");
    assert_eq!(num(&later, "connections"), 1.0, "{later}");
    let listening = listener
        .wait_for_report(wait, |r| r["dropped"]["oversized"] == 2)
        .expect("the listener counts both");
    assert_eq!(num(&listening, "connections"), 1.0, "{listening}");

    let client_reports = client.interrupt();
    let listener_reports = listener.interrupt();
    for (who, reports) in [("client", &client_reports), ("listener", &listener_reports)] {
        let summary = reports.last().unwrap();
        let dropped = &summary["dropped"];
        assert_eq!(dropped["oversized"], 2, "{who}: {summary}");
        for kind in [
            "malformed",
            "rejected",
            "foreign",
            "handshake",
            "table_full",
        ] {
            assert_eq!(dropped[kind], 0, "{who}: {kind} in {summary}");
        }
        assert_eq!(num(summary, "packets_lost"), 0.0, "{who}: {summary}");
        for report in reports.iter() {
            assert!(num(report, "connections") <= 1.0, "{who}: {report}");
        }
    }
    let summary = client_reports.last().unwrap();
    assert!(num(summary, "packets_acked") >= num(summary, "packets_sent") - 3.0);
}
