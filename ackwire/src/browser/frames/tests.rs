//! The browser reads and writes signalling frames through its own `JSON`; the server and the
//! native peer through serde. These check that both read and write the same frames. Runs in
//! headless Chromium through `wasm-bindgen-test-runner` (see `cargo xtask test`).

use std::borrow::Cow;
use std::time::Duration;

use super::{FrameError, server_frame, to_json};
use ackwire_core::{ConnectionState, Counters, Mode, Stats};
use ackwire_room::member::{
    EmulationReport, Failure, LinkReport, LinkState, MemberFrame, MemberServerFrame, TransportKind,
};
use ackwire_signalling::{
    AppInfo, CertHash, ChannelKind, ClientFrame, ErrorCode, IceServer, LeaveReason, PeerInfo,
    PeerKind, PublicKey, Resume, Role, Sdp, SdpKind, ServerFrame, ServerFrameType, SignalData,
    VERSION, WebTransportInfo,
};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn native(id: u64) -> PeerInfo {
    PeerInfo {
        id,
        kind: PeerKind::Native,
        role: Default::default(),
        udp_addr: Some("[2001:db8::7]:40000".parse().unwrap()),
        instance: Some(format!("n-{id}")),
        udp_key: None,
        network: Some("9f2c01aa77e3b0d4".into()),
        identity: Some(format!("user:{id}")),
        webtransport: None,
    }
}

/// A host room's native host serving WebTransport, with `hashes` certificate hashes.
fn wt_host(id: u64, hashes: usize) -> PeerInfo {
    PeerInfo {
        webtransport: Some(WebTransportInfo {
            url: "https://192.0.2.8:4433/ackwire".into(),
            cert_hashes: (0..hashes)
                .map(|i| CertHash([0xa0 + i as u8; 32]))
                .collect(),
            websocket: Some("ws://192.0.2.8:4433/ackwire".into()),
        }),
        ..with_role(native(id), Role::Host)
    }
}

fn browser(id: u64) -> PeerInfo {
    PeerInfo::new(id, PeerKind::Browser)
}

/// A member of a host room.
fn with_role(peer: PeerInfo, role: Role) -> PeerInfo {
    PeerInfo { role, ..peer }
}

fn candidate(mid: Option<&str>, index: Option<u16>) -> SignalData {
    SignalData::Candidate {
        candidate: "candidate:1 1 udp 2122260223 192.0.2.4 50000 typ host".into(),
        sdp_mid: mid.map(str::to_owned),
        sdp_m_line_index: index,
    }
}

/// Every frame type a member acts on, in every shape the schema allows.
fn every_server_frame() -> Vec<MemberServerFrame<'static>> {
    let turn = IceServer {
        urls: vec![
            "turn:203.0.113.9:3478".into(),
            "turn:203.0.113.9:3478?transport=tcp".into(),
        ],
        username: "1764090000:p".into(),
        credential: "c2VjcmV0".into(),
    };
    let stun = IceServer {
        urls: vec!["stun:203.0.113.9:3478".into()],
        username: String::new(),
        credential: String::new(),
    };
    let mut frames = vec![
        ServerFrame::Welcome {
            version: VERSION,
            room: "lobby".into(),
            peer_id: 7,
            token: "04a7f1".into(),
            resumed: false,
            peers: vec![browser(1), native(3)],
            ice_servers: Cow::Owned(vec![stun.clone(), turn.clone()]),
            network: Some("9f2c01aa77e3b0d4".into()),
        },
        ServerFrame::Welcome {
            version: VERSION,
            room: "r-2".into(),
            peer_id: 9_007_199_254_740_991,
            token: "t".into(),
            resumed: true,
            peers: Vec::new(),
            ice_servers: Cow::Owned(Vec::new()),
            network: None,
        },
        ServerFrame::PeerJoined {
            room: "lobby".into(),
            peer: native(12),
        },
        ServerFrame::PeerJoined {
            room: "lobby".into(),
            peer: browser(13),
        },
        // A host room: a client's welcome names the host alone; the host hears of clients.
        ServerFrame::Welcome {
            version: VERSION,
            room: "arena".into(),
            peer_id: 8,
            token: "t".into(),
            resumed: false,
            peers: vec![with_role(native(1), Role::Host)],
            ice_servers: Cow::Owned(Vec::new()),
            network: None,
        },
        ServerFrame::PeerJoined {
            room: "arena".into(),
            peer: with_role(browser(14), Role::Client),
        },
        ServerFrame::PeerJoined {
            room: "arena".into(),
            peer: with_role(browser(15), Role::Host),
        },
        // A host serving WebTransport: with its certificates' hashes, or a real certificate.
        ServerFrame::Welcome {
            version: VERSION,
            room: "arena".into(),
            peer_id: 9,
            token: "t".into(),
            resumed: false,
            peers: vec![wt_host(1, 2)],
            ice_servers: Cow::Owned(Vec::new()),
            network: None,
        },
        ServerFrame::PeerJoined {
            room: "arena".into(),
            peer: wt_host(2, 0),
        },
        // The host rotated its certificate: its whole description, with the new service.
        ServerFrame::PeerUpdated {
            room: "arena".into(),
            peer: wt_host(1, 2),
        },
        ServerFrame::PeerUpdated {
            room: "arena".into(),
            peer: with_role(native(1), Role::Host),
        },
        ServerFrame::IceServers {
            ice_servers: Cow::Owned(vec![turn]),
        },
        ServerFrame::Error {
            code: ErrorCode::RoomFull,
            message: "room lobby is full (16 peers)".into(),
        },
        ServerFrame::Signal {
            from: 4,
            data: SignalData::Sdp {
                sdp: Sdp {
                    kind: SdpKind::Offer,
                    sdp: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n".into(),
                },
            },
        },
        ServerFrame::Signal {
            from: 4,
            data: candidate(Some("0"), Some(0)),
        },
        ServerFrame::Signal {
            from: 4,
            data: candidate(None, None),
        },
    ];
    for reason in [LeaveReason::Left, LeaveReason::Lost, LeaveReason::Replaced] {
        frames.push(ServerFrame::PeerLeft {
            room: "lobby".into(),
            peer_id: 3,
            reason,
        });
    }
    frames
}

#[wasm_bindgen_test]
fn every_frame_the_server_writes_reads_the_same_in_the_browser() {
    for frame in every_server_frame() {
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(server_frame(&text), Ok(frame), "{text}");
    }
}

#[wasm_bindgen_test]
fn optional_fields_may_be_null_and_unknown_fields_are_ignored() {
    let text = r#"{"type":"peer_joined","room":"lobby","extra":[1],"peer":{"id":5,"kind":"browser","udp_addr":null,"instance":null,"later":true}}"#;
    assert_eq!(
        server_frame(text),
        Ok(ServerFrame::PeerJoined {
            room: "lobby".into(),
            peer: browser(5),
        })
    );
    // One URL as a plain string, as browsers accept it.
    let text = r#"{"type":"ice_servers","ice_servers":[{"urls":"stun:203.0.113.9:3478"}]}"#;
    let Ok(ServerFrame::IceServers { ice_servers }) = server_frame(text) else {
        panic!("not read: {text}");
    };
    assert_eq!(ice_servers[0].urls, ["stun:203.0.113.9:3478"]);
}

#[wasm_bindgen_test]
fn a_hosts_webtransport_service_reads_as_serde_reads_it() {
    let text = r#"{"type":"peer_joined","room":"arena","peer":{"id":5,"kind":"native","role":"host","webtransport":null}}"#;
    let read = server_frame(text);
    assert_eq!(
        read,
        Ok(ServerFrame::PeerJoined {
            room: "arena".into(),
            peer: with_role(PeerInfo::new(5, PeerKind::Native), Role::Host),
        })
    );
    assert_eq!(read, Ok(serde_json::from_str(text).unwrap()));
    // No hashes: none (a real certificate); a hash in capitals is the same hash.
    let host = |service: &str| {
        format!(
            r#"{{"type":"peer_joined","room":"arena","peer":{{"id":5,"kind":"native","role":"host","webtransport":{service}}}}}"#
        )
    };
    let service = |text: &str| match server_frame(text) {
        Ok(ServerFrame::PeerJoined { peer, .. }) => peer.webtransport.unwrap(),
        other => panic!("{text}: {other:?}"),
    };
    let url = "https://h.example:443/wt";
    for (text, hashes) in [
        (host(&format!(r#"{{"url":"{url}"}}"#)), vec![]),
        (
            host(&format!(
                r#"{{"url":"{url}","cert_hashes":["{}","{}"]}}"#,
                "AB".repeat(32),
                "0f".repeat(32)
            )),
            vec![CertHash([0xab; 32]), CertHash([0x0f; 32])],
        ),
    ] {
        let read = service(&text);
        assert_eq!((read.url.as_str(), &read.cert_hashes), (url, &hashes));
        assert_eq!(
            server_frame(&text),
            Ok(serde_json::from_str(&text).unwrap())
        );
    }
}

#[wasm_bindgen_test]
fn a_hosts_updated_service_reads_as_serde_reads_it_and_a_broken_one_is_refused() {
    let hash = "c4".repeat(32);
    let text = format!(
        r#"{{"type":"peer_updated","room":"arena","later":1,"peer":{{"id":1,"kind":"native","role":"host","webtransport":{{"url":"https://203.0.113.5:4433/ackwire","cert_hashes":["{hash}","{}"]}}}}}}"#,
        "0d".repeat(32)
    );
    let read = server_frame(&text);
    assert_eq!(read, Ok(serde_json::from_str(&text).unwrap()));
    let Ok(ServerFrame::PeerUpdated { peer, .. }) = read else {
        panic!("not read: {text}");
    };
    let service = peer.webtransport.expect("a service");
    assert_eq!(
        service.cert_hashes,
        [CertHash([0xc4; 32]), CertHash([0x0d; 32])]
    );
    for broken in [
        r#"{"type":"peer_updated","room":"arena"}"#,
        r#"{"type":"peer_updated","room":"arena","peer":[1]}"#,
        r#"{"type":"peer_updated","peer":{"id":1,"kind":"native"}}"#,
        r#"{"type":"peer_updated","room":"arena","peer":{"id":1,"kind":"native","webtransport":{"url":"https://h/","cert_hashes":["xyz"]}}}"#,
    ] {
        assert!(
            matches!(server_frame(broken), Err(FrameError::Field { .. })),
            "{broken}: {:?}",
            server_frame(broken)
        );
        assert!(
            serde_json::from_str::<ServerFrame>(broken).is_err(),
            "{broken}"
        );
    }
}

/// A browser has no UDP links: it does not read natives' keys, and never refuses a frame for
/// one.
#[wasm_bindgen_test]
fn a_natives_key_is_not_read_by_the_browser() {
    let with_key = PeerInfo {
        udp_key: Some(PublicKey([7; 32])),
        ..native(3)
    };
    let frame: ServerFrame = ServerFrame::PeerJoined {
        room: "lobby".into(),
        peer: with_key,
    };
    let text = serde_json::to_string(&frame).unwrap();
    assert_eq!(
        server_frame(&text),
        Ok(ServerFrame::PeerJoined {
            room: "lobby".into(),
            peer: native(3),
        })
    );
}

#[wasm_bindgen_test]
fn dashboard_frames_and_unknown_types_are_refused_by_name() {
    assert_eq!(
        server_frame(r#"{"type":"subscribed","rooms":[]}"#),
        Err(FrameError::NotForMembers(ServerFrameType::Subscribed))
    );
    assert_eq!(
        server_frame(r#"{"type":"stats","room":"lobby","peer_id":1,"links":[]}"#),
        Err(FrameError::NotForMembers(ServerFrameType::Stats))
    );
    let later = r#"{"type":"teleport","to":{"x":1},"when":[1,2]}"#;
    assert_eq!(server_frame(later), Err(FrameError::UnknownType));
    // serde tells the same apart.
    assert!(matches!(
        ackwire_signalling::parse_server_frame(later),
        Err(ackwire_signalling::UnreadableFrame::UnknownType(name)) if name == "teleport"
    ));
}

/// Every type the schema has is read or refused by name: none falls through unseen.
#[wasm_bindgen_test]
fn every_frame_type_of_the_schema_has_an_answer() {
    let read: Vec<ServerFrameType> = every_server_frame()
        .iter()
        .map(ServerFrame::frame_type)
        .collect();
    for kind in ServerFrameType::ALL {
        let text = format!(r#"{{"type":"{kind}"}}"#);
        match server_frame(&text) {
            // The types a member reads refuse a frame without their fields.
            Err(FrameError::Field { .. }) => assert!(read.contains(&kind), "{kind}"),
            Err(FrameError::NotForMembers(k)) => assert!(k == kind && !kind.for_members()),
            other => panic!("{kind}: {other:?}"),
        }
    }
}

#[wasm_bindgen_test]
fn malformed_frames_are_refused_with_what_is_wrong() {
    assert_eq!(server_frame("not json"), Err(FrameError::NotJson));
    assert_eq!(server_frame("[1,2]"), Err(FrameError::NoType));
    assert_eq!(server_frame(r#"{"type":7}"#), Err(FrameError::NoType));
    let field = |text: &str| match server_frame(text) {
        Err(FrameError::Field { frame, field, .. }) => (frame, field),
        other => panic!("{text}: {other:?}"),
    };
    assert_eq!(field(r#"{"type":"welcome"}"#), ("welcome", "version"));
    assert_eq!(
        field(r#"{"type":"peer_left","room":"lobby","peer_id":1.5,"reason":"left"}"#),
        ("peer_left", "peer_id")
    );
    assert_eq!(
        field(r#"{"type":"peer_left","room":"lobby","peer_id":-1,"reason":"left"}"#),
        ("peer_left", "peer_id")
    );
    assert_eq!(
        field(r#"{"type":"peer_left","room":"lobby","peer_id":1,"reason":"gone"}"#),
        ("peer_left", "reason")
    );
    assert_eq!(
        field(
            r#"{"type":"peer_joined","room":"lobby","peer":{"id":1,"kind":"native","udp_addr":"nowhere"}}"#
        ),
        ("peer", "udp_addr")
    );
    assert_eq!(
        field(
            r#"{"type":"peer_joined","room":"arena","peer":{"id":1,"kind":"native","role":"king"}}"#
        ),
        ("peer", "role")
    );
    assert_eq!(
        field(r#"{"type":"ice_servers","ice_servers":[{"urls":[1]}]}"#),
        ("ice server", "urls")
    );
    let host = |service: &str| {
        format!(
            r#"{{"type":"peer_joined","room":"arena","peer":{{"id":1,"kind":"native","role":"host","webtransport":{service}}}}}"#
        )
    };
    let bad_services = [
        (r#""https://h:1/wt""#, "(itself)"),
        (r#"{"cert_hashes":[]}"#, "url"),
        (r#"{"url":7}"#, "url"),
        (
            r#"{"url":"https://h:1/wt","cert_hashes":"ab"}"#,
            "cert_hashes",
        ),
        (
            r#"{"url":"https://h:1/wt","cert_hashes":null}"#,
            "cert_hashes",
        ),
        (
            r#"{"url":"https://h:1/wt","cert_hashes":["abcd"]}"#,
            "cert_hashes",
        ),
        (
            r#"{"url":"https://h:1/wt","cert_hashes":[7]}"#,
            "cert_hashes",
        ),
    ];
    for (service, wrong) in bad_services {
        let text = host(service);
        assert_eq!(field(&text), ("webtransport", wrong), "{text}");
        // serde refuses the same.
        assert!(
            serde_json::from_str::<ServerFrame>(&text).is_err(),
            "{text}"
        );
    }
    let not_hex = host(&format!(
        r#"{{"url":"https://h:1/wt","cert_hashes":["{}"]}}"#,
        "g".repeat(64)
    ));
    assert_eq!(field(&not_hex), ("webtransport", "cert_hashes"));
    assert!(serde_json::from_str::<ServerFrame>(&not_hex).is_err());
    assert_eq!(
        server_frame(r#"{"type":"signal","from":2,"data":{"x":1}}"#),
        Err(FrameError::BadSignal { from: 2 })
    );
    // serde refuses the same frames.
    for text in [
        r#"{"type":"welcome"}"#,
        r#"{"type":"peer_left","room":"lobby","peer_id":1.5,"reason":"left"}"#,
        r#"{"type":"peer_left","room":"lobby","peer_id":1,"reason":"gone"}"#,
        r#"{"type":"peer_joined","room":"arena","peer":{"id":1,"kind":"native","role":"king"}}"#,
    ] {
        assert!(serde_json::from_str::<ServerFrame>(text).is_err(), "{text}");
    }
}

fn stats() -> Stats {
    // Field by field: `Stats` and `Counters` are non-exhaustive, built only by the core.
    let mut counters = Counters::default();
    counters.packets_sent = 900;
    counters.packets_received = 880;
    counters.packets_acked = 870;
    counters.packets_lost = 12;
    counters.bytes_sent = 45_000;
    counters.bytes_received = 44_000;
    counters.header_bytes_sent = 4_500;
    counters.packets_unauthenticated = 0;
    let mut stats = Stats::default();
    stats.rtt_ms = 12.5;
    stats.jitter_ms = 0.75;
    stats.loss_percent = 3.125;
    stats.loss_window_packets = 64;
    stats.loss_cumulative_percent = 1.5;
    stats.mode = Mode::Good;
    stats.recovery_time_ms = 1000.0;
    stats.send_rate_pps = 30.0;
    stats.counters = counters;
    stats.last_header_len = 5;
    stats.messages_sent = 10;
    stats.messages_resent = 1;
    stats.messages_delivered = 9;
    stats.messages_dropped_stale = 2;
    stats.reliable_in_flight = 1;
    stats.connection_state = Some(ConnectionState::Connected);
    stats
}

/// serde's JSON text as JavaScript writes the same value (`150.0` is `150`), fields in order.
fn as_js_writes(text: &str) -> String {
    js_sys::JSON::stringify(&js_sys::JSON::parse(text).unwrap())
        .unwrap()
        .as_string()
        .unwrap()
}

/// The browser writes the member's frames as serde writes them.
#[wasm_bindgen_test]
fn what_the_browser_writes_is_what_serde_writes() {
    let report = |state, reason, stats, emulation| LinkReport {
        peer: 3,
        transport: TransportKind::WebRtc,
        state,
        reason,
        ice: Some("relay".into()),
        stats,
        emulation,
    };
    let frames: Vec<MemberFrame> = vec![
        ClientFrame::Join {
            version: VERSION,
            room: "lobby".into(),
            kind: PeerKind::Browser,
            udp_addr: None,
            instance: Some("b0123456789abcdef".into()),
            udp_key: None,
            app: Some(AppInfo::new(
                "ackwire-demo",
                1,
                [
                    ChannelKind::UnreliableSequenced,
                    ChannelKind::ReliableOrdered,
                ],
            )),
            role: Default::default(),
            ticket: None,
            webtransport: None,
            resume: Some(Resume {
                peer_id: 7,
                token: "04a7".into(),
            }),
        },
        ClientFrame::Join {
            version: VERSION,
            room: "arena".into(),
            kind: PeerKind::Browser,
            udp_addr: None,
            instance: Some("b0123456789abcdef".into()),
            udp_key: None,
            app: None,
            role: Role::Client,
            ticket: None,
            webtransport: None,
            resume: None,
        },
        ClientFrame::Signal {
            to: 3,
            from: None,
            data: candidate(Some("0"), None),
        },
        ClientFrame::Stats {
            from: None,
            links: vec![
                report(
                    LinkState::Connected,
                    None,
                    Some(stats()),
                    Some(EmulationReport {
                        latency_ms: 150.0,
                        jitter_ms: 0.0,
                        loss_percent: 10.0,
                    }),
                ),
                report(
                    LinkState::Lost,
                    Some(Failure::IdleTimeout(Duration::from_secs(5))),
                    None,
                    None,
                ),
            ],
        },
        ClientFrame::Leave,
    ];
    for frame in &frames {
        let ours = to_json(frame).unwrap();
        assert_eq!(ours, as_js_writes(&serde_json::to_string(frame).unwrap()));
        // And the server reads it.
        serde_json::from_str::<ClientFrame>(&ours).unwrap();
    }
}
