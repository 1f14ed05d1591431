//! The room member in virtual time: every link transition, recovery after outages and
//! server restarts, ICE failure, and bad input, with members driven only by their own
//! timeouts and by what arrives for them (`world/mod.rs`).

use crate::world;

use std::net::SocketAddr;
use std::time::Duration;

use ackwire_room::member::{
    Event, Failure, FrameError, LinkState, MemberConfig, ReceiveError, Route, SendError,
    TransportKind,
};
use ackwire_room::signalling::{PeerKind, ServerFrameType};
use world::World;

const S: Duration = Duration::from_secs(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The states link `n → m` went through, deduplicated in order.
fn states(w: &World, n: usize, m: usize) -> Vec<LinkState> {
    let link = w.link(n, m).map(|l| l.peer);
    let mut seen: Vec<LinkState> = Vec::new();
    for e in &w.nodes[n].events {
        if let Event::Link(info) = e
            && Some(info.peer) == link
            && seen.last() != Some(&info.state)
        {
            seen.push(info.state);
        }
    }
    seen
}

#[test]
fn two_browsers_negotiate_connect_and_chat_exactly_once() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Browser, |_| {});
    w.run_until_true(2 * S, "link up", |w| w.fully_linked(&[a, b]));
    assert_eq!(
        states(&w, b, a),
        [
            LinkState::Negotiating,
            LinkState::Open,
            LinkState::Connected
        ]
    );
    let link = w.link(a, b).unwrap();
    assert_eq!(link.transport, TransportKind::WebRtc);
    assert_eq!(link.candidate.as_deref(), Some("host"));
    assert_eq!(w.offers_relayed, 2, "one offer, one answer");

    assert_eq!(w.say(a, "hello"), 1);
    let to_a = w.peer(b, a);
    w.with(b, |m, _| m.send_latest(to_a, 0, b"dot 0.25 0.75"))
        .unwrap();
    w.run_for(2 * S);
    assert_eq!(w.chats(b, "hello"), 1);
    // A connected link says how long its attempt took, after its first ack too.
    let link = w.link(a, b).unwrap();
    assert!(link.first_ack_at.is_some(), "{link:?}");
    assert!(
        link.attempt_ms > ms(20) && link.attempt_ms < S,
        "{:?}",
        link.attempt_ms
    );
    assert_eq!(w.received(a, 0, b"dot 0.25 0.75"), 1);
}

#[test]
fn natives_link_over_udp_and_with_browsers_over_webrtc() {
    let mut w = World::new();
    let n1 = w.add(PeerKind::Native, |_| {});
    let n2 = w.add(PeerKind::Native, |_| {});
    let b = w.add(PeerKind::Browser, |_| {});
    w.run_until_true(2 * S, "trio linked", |w| w.fully_linked(&[n1, n2, b]));
    assert_eq!(w.link(n1, n2).unwrap().transport, TransportKind::Udp);
    assert_eq!(w.link(n2, n1).unwrap().transport, TransportKind::Udp);
    assert_eq!(w.link(n1, b).unwrap().transport, TransportKind::WebRtc);
    assert_eq!(w.link(b, n2).unwrap().transport, TransportKind::WebRtc);
    // No negotiation between the natives: 2 browser links × (offer + answer).
    assert_eq!(w.offers_relayed, 4);
}

/// From the first moment either end of `a`–`b` is open to the moment both are connected.
fn open_to_connected(w: &mut World, a: usize, b: usize) -> Duration {
    let state = |w: &World, n, m| w.link(n, m).map(|l| l.state);
    let open = |w: &World| {
        [(a, b), (b, a)]
            .iter()
            .any(|&(n, m)| state(w, n, m) == Some(LinkState::Open))
    };
    let limit = w.now + 2 * S;
    while !open(w) {
        assert!(w.now < limit, "never open");
        w.run_for(ms(1));
    }
    let opened = w.now;
    while !(w.connected(a, b) && w.connected(b, a)) {
        assert!(w.now < limit, "never connected");
        w.run_for(ms(1));
    }
    w.now - opened
}

#[test]
fn a_link_on_a_data_channel_connects_one_round_trip_after_it_opens_and_raw_udp_in_two() {
    // The core's channel handshake on WebRTC (ICE and DTLS vouch for the peer); the cookie
    // round trip on raw UDP, where it is what stops spoofed sources (docs/wire.md).
    let mut w = World::new();
    let b = w.add(PeerKind::Browser, |_| {});
    let n = w.add(PeerKind::Native, |_| {});
    assert_eq!(open_to_connected(&mut w, b, n), 2 * world::HOP);
    let mut w = World::new();
    let n1 = w.add(PeerKind::Native, |_| {});
    let n2 = w.add(PeerKind::Native, |_| {});
    assert_eq!(open_to_connected(&mut w, n1, n2), 4 * world::HOP);
    assert_eq!(w.link(n1, n2).unwrap().transport, TransportKind::Udp);
}

#[test]
fn a_browsers_first_reliable_message_rides_its_channel_request_and_is_acked_as_it_connects() {
    // The connector on a data channel sends early: its hello and a message it kept for the
    // peer leave with the channel request, so the native delivers the message as it accepts
    // (one hop after the channel opened) and the browser hears it acked with the accept (two
    // hops), where waiting for the accept to send would take four (docs/wire.md).
    let mut w = World::new();
    let n = w.add(PeerKind::Native, |_| {});
    let b = w.add(PeerKind::Browser, |_| {});
    w.run_until_true(2 * S, "the browser knows the native", |w| {
        w.link(b, n).is_some()
    });
    assert_eq!(w.say(b, "early"), 1, "kept for the native");
    let limit = w.now + 2 * S;
    let state = |w: &World| w.link(b, n).map(|l| l.state);
    while state(&w) != Some(LinkState::Open) {
        assert!(w.now < limit, "never open");
        w.run_for(ms(1));
    }
    let opened = w.now;
    while w.chats(n, "early") == 0 {
        assert!(w.now < limit, "never delivered");
        w.run_for(ms(1));
    }
    assert_eq!(
        w.now - opened,
        world::HOP,
        "delivered as the native accepts"
    );
    while !w.connected(b, n) {
        assert!(w.now < limit, "never connected");
        w.run_for(ms(1));
    }
    assert_eq!(w.now - opened, 2 * world::HOP);
    let link = w.link(b, n).unwrap();
    assert_eq!(
        link.first_ack_at,
        Some(w.now),
        "the request's packet is acked as the accept arrives"
    );
    assert_eq!(
        link.unconfirmed, 0,
        "the native confirmed the message already"
    );
    w.run_for(S);
    assert_eq!(w.chats(n, "early"), 1, "once");
}

#[test]
fn the_player_already_in_the_room_offers_and_browsers_offer_to_natives() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Browser, |_| {});
    let n = w.add(PeerKind::Native, |_| {});
    let c = w.add(PeerKind::Browser, |_| {});
    w.run_until_true(2 * S, "all linked", |w| w.fully_linked(&[a, b, n, c]));
    let mut offers = w.offers.clone();
    offers.sort();
    // Between browsers whoever was in the room first offers, while the newcomer's page loads;
    // a browser offers to a native, newer or older.
    let mut expected = [(a, b), (a, c), (a, n), (b, c), (b, n), (c, n)];
    expected.sort();
    assert_eq!(offers, expected);
    for (x, y) in offers {
        assert_eq!(w.link(x, y).unwrap().transport, TransportKind::WebRtc);
        assert_eq!(w.link(y, x).unwrap().state, LinkState::Connected);
    }
}

#[test]
fn natives_with_keys_link_encrypted_and_reach_one_without_keys_only_through_webrtc() {
    use std::sync::Arc;
    let keyed = |c: &mut ackwire_room::member::MemberConfig| {
        c.udp_keys = Some(Arc::new(ackwire_room::keys::NoiseKeys::generate()));
    };
    let mut w = World::new();
    let n1 = w.add(PeerKind::Native, keyed);
    let n2 = w.add(PeerKind::Native, keyed);
    w.run_until_true(2 * S, "natives linked", |w| w.fully_linked(&[n1, n2]));
    assert_eq!(w.link(n1, n2).unwrap().transport, TransportKind::Udp);
    assert_eq!(w.say(n2, "secret plans"), 1);
    w.run_for(2 * S);
    assert_eq!(w.chats(n1, "secret plans"), 1);
    assert!(
        !w.udp_seen
            .iter()
            .any(|d| d.windows(12).any(|x| x == b"secret plans")),
        "plaintext on the wire"
    );
    // Every handshake between them was the secure one.
    assert!(w.udp_seen.iter().any(|d| d[0] == 0xA7));
    assert!(!w.udp_seen.iter().any(|d| d[0] == 0xA0 || d[0] == 0xA2));

    // A native without keys (`--insecure`): no raw UDP with the keyed ones, in plaintext or
    // otherwise; their links go through WebRTC (DTLS) at once, with no direct attempt.
    let seen_before = w.udp_seen.len();
    let plain = w.add(PeerKind::Native, |_| {});
    w.run_until_true(3 * S, "the plain native linked", |w| {
        w.fully_linked(&[n1, n2, plain])
    });
    for keyed in [n1, n2] {
        assert_eq!(
            w.link(keyed, plain).unwrap().transport,
            TransportKind::WebRtc
        );
        assert_eq!(
            w.link(plain, keyed).unwrap().transport,
            TransportKind::WebRtc
        );
        assert!(!states(&w, keyed, plain).contains(&LinkState::Lost));
    }
    assert!(
        !w.udp_seen[seen_before..]
            .iter()
            .any(|d| d[0] == 0xA0 || d[0] == 0xA2),
        "no plain handshake on UDP"
    );
    assert_eq!(w.link(n1, n2).unwrap().state, LinkState::Connected);
}

#[test]
fn natives_with_no_direct_udp_path_fall_back_to_webrtc_and_chat() {
    let mut w = World::new();
    let n1 = w.add(PeerKind::Native, |_| {});
    let n2 = w.add(PeerKind::Native, |_| {});
    w.block_udp(n1, n2);
    // The direct attempt gives up after the member's 2 s direct timeout; the next attempt
    // runs over ICE at once (no backoff: nothing has tried that path), offered by the higher
    // id, and the other side follows.
    let start = w.now;
    w.run_until_true(4 * S, "natives linked over WebRTC", |w| {
        w.fully_linked(&[n1, n2])
    });
    let took = w.now - start;
    assert!(
        took < Duration::from_millis(2_150),
        "linked {took:?} after joining: the fallback waited"
    );
    for (a, b) in [(n1, n2), (n2, n1)] {
        let link = w.link(a, b).unwrap();
        assert_eq!(link.transport, TransportKind::WebRtc, "{link:?}");
        assert_eq!(link.state, LinkState::Connected);
    }
    assert!(
        w.nodes[n2].events.iter().any(|e| matches!(
            e,
            Event::Link(info) if info.state == LinkState::Lost
                && info.transport == TransportKind::Udp
                && info.reason == Some(Failure::NoDirectPath)
        )),
        "the direct attempt was lost first, saying why"
    );
    assert_eq!(w.offers_relayed, 2, "one offer, one answer");
    assert_eq!(w.say(n1, "via ice"), 1);
    w.run_for(2 * S);
    assert_eq!(w.chats(n2, "via ice"), 1);
}

#[test]
fn natives_on_private_addresses_behind_different_public_ones_skip_the_direct_attempt() {
    // The server saw them connect from different public addresses: a private udp_addr of
    // one cannot be reached from the other, so their link goes through ICE from the start.
    let mut w = World::new();
    let private = |n: u16| {
        move |c: &mut MemberConfig| {
            c.udp_addr = Some(SocketAddr::from(([192, 168, 1, 2], 40000 + n)))
        }
    };
    let n1 = w.add_on(PeerKind::Native, "home-a", private(1));
    let n2 = w.add_on(PeerKind::Native, "home-b", private(2));
    let start = w.now;
    w.run_until_true(2 * S, "natives linked over WebRTC", |w| {
        w.fully_linked(&[n1, n2])
    });
    assert!(
        w.now - start < Duration::from_millis(500),
        "linked {:?} after joining: a direct attempt was waited out",
        w.now - start
    );
    for (a, b) in [(n1, n2), (n2, n1)] {
        assert_eq!(w.link(a, b).unwrap().transport, TransportKind::WebRtc);
        assert!(
            !states(&w, a, b).contains(&LinkState::Lost),
            "nothing failed first"
        );
    }
    assert!(
        w.udp_seen.is_empty(),
        "no datagram went to the unreachable address"
    );

    // Behind one public address (one home), or both on public addresses, the direct attempt
    // runs: raw UDP. One public and one private address on different networks: both sides
    // choose ICE (they agree, whichever side looks).
    let lan = [192, 168, 1, 2];
    let public = [203, 0, 113, 7];
    for (net_b, addr_a, addr_b, transport) in [
        ("home", lan, lan, TransportKind::Udp),
        ("home-b", public, public, TransportKind::Udp),
        ("home-b", public, lan, TransportKind::WebRtc),
        ("home-b", lan, public, TransportKind::WebRtc),
    ] {
        let mut w = World::new();
        let at = |addr: [u8; 4], n: u16| {
            move |c: &mut MemberConfig| c.udp_addr = Some(SocketAddr::from((addr, 40000 + n)))
        };
        let n1 = w.add_on(PeerKind::Native, "home", at(addr_a, 1));
        let n2 = w.add_on(PeerKind::Native, net_b, at(addr_b, 2));
        w.run_until_true(2 * S, "natives linked", |w| w.fully_linked(&[n1, n2]));
        for (a, b) in [(n1, n2), (n2, n1)] {
            let link = w.link(a, b).unwrap();
            assert_eq!(
                link.transport, transport,
                "home/{net_b} {addr_a:?}/{addr_b:?}"
            );
            assert!(
                !states(&w, a, b).contains(&LinkState::Lost),
                "nothing failed first"
            );
        }
    }
}

#[test]
fn a_link_held_in_outage_past_the_idle_timeout_is_lost_then_recovers_and_carries_chat() {
    for kinds in [
        [PeerKind::Browser, PeerKind::Browser],
        [PeerKind::Browser, PeerKind::Native],
        [PeerKind::Native, PeerKind::Native],
    ] {
        let mut w = World::new();
        let a = w.add(kinds[0], |_| {});
        let b = w.add(kinds[1], |_| {});
        w.run_until_true(2 * S, "link up", |w| w.fully_linked(&[a, b]));
        let first = w.link(a, b).unwrap().peer;

        w.set_blackout(a, b, true);
        w.run_for(12 * S);
        for (n, m) in [(a, b), (b, a)] {
            let link = w.link(n, m).unwrap();
            assert!(
                matches!(
                    link.state,
                    LinkState::Retrying | LinkState::Negotiating | LinkState::Open
                ),
                "{kinds:?} {n}→{m} while blacked out: {:?}",
                link.state
            );
            assert!(
                matches!(link.reason, Some(Failure::IdleTimeout(_))),
                "{kinds:?}: {:?}",
                link.reason
            );
        }

        w.set_blackout(a, b, false);
        w.run_until_true(20 * S, "recovered", |w| w.fully_linked(&[a, b]));
        // The same link (same id, same peer), on a new session.
        assert_eq!(w.link(a, b).unwrap().peer, first);
        assert_eq!(
            w.link(a, b).unwrap().reason,
            None,
            "a connected link has no failure"
        );
        w.say(b, "back");
        w.run_for(2 * S);
        assert_eq!(w.chats(a, "back"), 1, "{kinds:?}");
        let s = states(&w, a, b);
        assert!(
            s.contains(&LinkState::Lost) && s.ends_with(&[LinkState::Connected]),
            "{s:?}"
        );
    }
}

#[test]
fn ice_failure_is_reported_with_its_reason_and_retried_with_backoff() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Browser, |_| {});
    // Neither side's candidates ever reach the other: no path.
    w.nodes[a].no_candidates = true;
    w.nodes[b].no_candidates = true;
    w.run_for(world::ICE_FAIL + 2 * S);
    for (n, m) in [(a, b), (b, a)] {
        let link = w.link(n, m).unwrap();
        assert_eq!(link.reason, Some(Failure::IceFailed), "{n}→{m}");
        assert!(link.reason.unwrap().to_string().contains("TURN server"));
    }
    // The failure reaches dashboards too.
    let report = w.nodes[b].stats_sent.last().unwrap().to_string();
    assert!(report.contains("ice_failed"), "{report}");
    // Attempts keep coming, further and further apart.
    w.run_for(60 * S);
    let attempts = w.link(b, a).unwrap().attempts;
    assert!(
        (3..=12).contains(&attempts),
        "{attempts} attempts in a minute"
    );
    // A path appears: the next attempt connects.
    w.nodes[a].no_candidates = false;
    w.nodes[b].no_candidates = false;
    w.run_until_true(30 * S, "connected once a path exists", |w| {
        w.fully_linked(&[a, b])
    });
}

#[test]
fn after_a_server_restart_every_pair_keeps_exactly_one_link_whether_ids_are_reused_or_not() {
    for reuse in [true, false] {
        let mut w = World::new();
        let members: Vec<usize> = [
            PeerKind::Browser,
            PeerKind::Native,
            PeerKind::Browser,
            PeerKind::Native,
        ]
        .into_iter()
        .map(|k| w.add(k, |_| {}))
        .collect();
        w.run_until_true(3 * S, "all linked", |w| w.fully_linked(&members));
        let before: Vec<_> = members.iter().map(|&n| w.links(n)).collect();
        let relayed = w.offers_relayed;

        w.restart_ids_from = if reuse { 1 } else { 100 };
        w.kill_server();
        w.run_for(3 * S);
        // Links do not pass through the server.
        for &n in &members {
            assert!(w.links(n).iter().all(|l| l.state == LinkState::Connected));
        }
        w.start_server();
        w.run_until_true(10 * S, "one link per pair again", |w| {
            w.fully_linked(&members)
        });
        // Still the links from before: renamed, not renegotiated.
        for (i, &n) in members.iter().enumerate() {
            let mut old: Vec<_> = before[i].iter().map(|l| l.peer).collect();
            let mut now: Vec<_> = w.links(n).iter().map(|l| l.peer).collect();
            old.sort();
            now.sort();
            assert_eq!(old, now, "reuse={reuse}: member {n}'s links");
        }
        assert_eq!(w.offers_relayed, relayed, "no renegotiation");
        // Dashboards hear each member report each peer once, under the new ids.
        w.run_for(2 * S);
        for &n in &members {
            let report = w.nodes[n]
                .stats_sent
                .last()
                .unwrap()
                .as_array()
                .unwrap()
                .clone();
            let mut peers: Vec<u64> = report.iter().map(|l| l["peer"].as_u64().unwrap()).collect();
            peers.sort();
            let mut expected: Vec<u64> = members
                .iter()
                .filter(|&&m| m != n)
                .map(|&m| w.nodes[m].member.server_id().unwrap())
                .collect();
            expected.sort();
            assert_eq!(peers, expected, "reuse={reuse}: member {n} reports");
        }
    }
}

#[test]
fn a_peer_that_does_not_come_back_after_a_restart_is_dropped_after_the_grace() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Browser, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    w.kill_server();
    w.vanish(b);
    w.start_server();
    w.run_for(25 * S);
    assert!(w.links(a).is_empty(), "{:?}", w.links(a));
    assert!(
        w.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, Event::Link(l) if l.state == LinkState::Gone))
    );
}

#[test]
fn a_peer_that_leaves_takes_its_link_with_it() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Native, |_| {});
    let c = w.add(PeerKind::Native, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b, c]));
    w.vanish(b);
    w.run_for(S);
    assert_eq!(w.links(a).len(), 1);
    assert_eq!(w.links(c).len(), 1);
    let now = w.now;
    w.nodes[c].member.close(now);
    w.run_for(2 * S);
    assert!(w.links(a).is_empty());
    assert!(w.nodes[c].member.is_closed());
    assert!(
        w.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, Event::PeerLeft { .. }))
    );
}

#[test]
fn signalling_drops_are_resumed_with_backoff_and_links_flow_meanwhile_and_only_fresh_joins_ride_the_url()
 {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Browser, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    // A first join rides the socket's URL (the welcome is the first frame).
    assert_eq!(w.nodes[a].url_joins, 1);
    let id = w.nodes[a].member.server_id();
    w.drop_socket(a);
    w.run_for(ms(100));
    assert!(w.connected(b, a));
    w.run_until_true(2 * S, "resumed", |w| {
        w.nodes[a]
            .events
            .iter()
            .any(|e| matches!(e, Event::Joined { resumed: true, .. }))
    });
    assert_eq!(w.nodes[a].member.server_id(), id);
    assert!(w.fully_linked(&[a, b]));
    // The resume carried its token in a frame, never in a URL.
    assert_eq!(w.nodes[a].url_joins, 1);
}

#[test]
fn a_newcomer_whose_first_datagram_overtakes_its_join_connects_at_once() {
    let mut w = World::new();
    let a = w.add(PeerKind::Native, |_| {});
    w.run_for(S);
    let b = w.add(PeerKind::Native, |_| {});
    w.run_until_true(S, "udp link", |w| w.fully_linked(&[a, b]));
    // The connect request of b usually beats peer_joined to a: it was kept and replayed,
    // so the link came up in a few hops, not after the core's resend interval.
    let took = w.links(b)[0].stats.as_ref().unwrap().rtt_ms;
    assert!(took < 50.0, "rtt {took}");
}

#[test]
fn bad_frames_and_datagrams_are_refused_with_typed_errors_and_change_nothing() {
    let mut w = World::new();
    let a = w.add(PeerKind::Native, |_| {});
    let b = w.add(PeerKind::Native, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    let now = w.now;
    let before = w.links(a);
    let m = &mut w.nodes[a].member;
    assert!(matches!(
        m.handle_frame(now, "not json"),
        Err(FrameError::Malformed(_))
    ));
    assert!(matches!(
        m.handle_frame(now, r#"{"type":"signal","from":2,"data":{"x":1}}"#),
        Err(FrameError::BadSignal { from: 2, .. })
    ));
    // A later version's frame type, and a dashboard's: refused by name and counted, never
    // dropped unseen.
    assert!(matches!(
        m.handle_frame(now, r#"{"type":"teleport","to":1}"#),
        Err(FrameError::UnknownType(name)) if name == "teleport"
    ));
    assert!(matches!(
        m.handle_frame(now, r#"{"type":"subscribed","rooms":[]}"#),
        Err(FrameError::NotForMembers(ServerFrameType::Subscribed))
    ));
    assert_eq!(m.unreadable_frames(), 4);
    let stranger = "127.0.0.9:9".parse().unwrap();
    assert_eq!(
        m.receive(now, Route::Udp(stranger), b"hi"),
        Err(ReceiveError::UnknownAddress(stranger))
    );
    let peer = w.nodes[b].udp.unwrap();
    let m = &mut w.nodes[a].member;
    assert!(matches!(
        m.receive(now, Route::Udp(peer), &[0xFF, 0]),
        Err(ReceiveError::Refused(_))
    ));
    let max = m.max_message_size(0).unwrap();
    let to_b = m.links(now)[0].peer;
    assert_eq!(
        m.send(to_b, 0, &vec![0; max + 1]),
        Err(SendError::TooLarge {
            channel: 0,
            len: max + 1,
            max
        })
    );
    let after = w.links(a);
    assert_eq!(after[0].refused, before[0].refused + 1);
    assert_eq!(after[0].state, before[0].state);
    assert_eq!(
        after[0].stats.as_ref().unwrap().counters.packets_received,
        before[0].stats.as_ref().unwrap().counters.packets_received
    );
}

#[test]
fn a_broadcast_in_a_room_of_one_goes_to_nobody() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    w.run_for(S);
    assert_eq!(w.say(a, "anyone?"), 0);
}

#[test]
fn a_pulled_cable_loses_every_link_and_plugging_it_back_recovers_them() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Native, |_| {});
    let c = w.add(PeerKind::Browser, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b, c]));
    w.nodes[a].member.set_outage(true);
    w.run_for(12 * S);
    for m in [b, c] {
        let link = w.link(m, a).unwrap();
        assert_ne!(link.state, LinkState::Connected);
        // Whoever times out first closes its peer connection, which the other may hear.
        assert!(
            matches!(
                link.reason,
                Some(Failure::IdleTimeout(_) | Failure::ChannelClosed)
            ),
            "{:?}",
            link.reason
        );
    }
    assert!(w.connected(b, c), "the others' link is untouched");
    w.nodes[a].member.set_outage(false);
    w.run_until_true(20 * S, "recovered", |w| w.fully_linked(&[a, b, c]));
}

#[test]
fn a_peer_that_rejoins_afresh_and_replaces_its_old_entry_keeps_its_link() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Browser, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    let (link, old_id, relayed) = (
        w.link(b, a).unwrap().peer,
        w.nodes[a].member.server_id(),
        w.offers_relayed,
    );
    // A's socket drops and the server no longer takes its token: A joins afresh with its
    // instance, the server replaces the old entry, and B hears `replaced` then `peer_joined`.
    w.forget_token(a);
    w.drop_socket(a);
    w.run_until_true(5 * S, "A under a new id", |w| {
        w.nodes[a].member.server_id() != old_id && w.fully_linked(&[a, b])
    });
    // To B's application the peer never left: the same peer, renamed.
    assert!(
        !w.nodes[b]
            .events
            .iter()
            .any(|e| matches!(e, Event::PeerLeft { .. }))
    );
    assert_eq!(w.link(b, a).unwrap().peer, link, "the same peer, renamed");
    assert_eq!(w.links(b).len(), 1);
    assert_eq!(w.offers_relayed, relayed, "no renegotiation");
}

#[test]
fn fresh_ice_servers_from_the_server_are_used_by_the_next_peer_connection() {
    use ackwire_room::member::{Command, Member, MemberConfig, Output};

    let mut member = Member::new(
        MemberConfig::new("lobby", world::app(), PeerKind::Browser, "inst"),
        Duration::ZERO,
    )
    .unwrap();
    member.signalling_open(Duration::ZERO);
    let turn = |user: &str| {
        format!(r#"{{"urls":["turn:203.0.113.1:3478"],"username":"{user}","credential":"c"}}"#)
    };
    // The ICE servers of each peer connection the member asks for, in order.
    let opened = |member: &mut Member| -> Vec<String> {
        std::iter::from_fn(|| member.poll_output())
            .filter_map(|output| match output {
                Output::Command(Command::OpenPeerConnection { ice_servers, .. }) => {
                    Some(ice_servers[0].username.clone())
                }
                _ => None,
            })
            .collect()
    };
    let welcome = format!(
        r#"{{"type":"welcome","version":1,"room":"lobby","peer_id":3,"token":"t","resumed":false,"peers":[],"ice_servers":[{}]}}"#,
        turn("1000:3")
    );
    member.handle_frame(ms(10), &welcome).unwrap();
    opened(&mut member);
    // Peer 2 arrives (a peer connection for it, answering): the welcome's credentials.
    let joined = |id: u32| {
        format!(r#"{{"type":"peer_joined","room":"lobby","peer":{{"id":{id},"kind":"browser"}}}}"#)
    };
    member.handle_frame(ms(20), &joined(2)).unwrap();
    assert_eq!(opened(&mut member), ["1000:3"]);
    // Fresh credentials before those expire: the next peer connection uses them.
    let fresh = format!(
        r#"{{"type":"ice_servers","ice_servers":[{}]}}"#,
        turn("5000:3")
    );
    member.handle_frame(ms(30), &fresh).unwrap();
    assert!(opened(&mut member).is_empty(), "open links are left alone");
    member.handle_frame(ms(40), &joined(1)).unwrap();
    assert_eq!(opened(&mut member), ["5000:3"]);
}

#[test]
fn a_join_refused_while_the_servers_broker_is_away_is_tried_again_after_the_backoff() {
    use ackwire_room::member::{Member, MemberConfig, Output, SignallingState};

    let mut member = Member::new(
        MemberConfig::new("lobby", world::app(), PeerKind::Browser, "inst"),
        Duration::ZERO,
    )
    .unwrap();
    let opens = |member: &mut Member| {
        std::iter::from_fn(|| member.poll_output())
            .filter(|o| matches!(o, Output::OpenSignalling { .. }))
            .count()
    };
    member.handle_timeout(Duration::ZERO);
    assert_eq!(opens(&mut member), 1);
    member.signalling_open(ms(5));
    let refused = r#"{"type":"error","code":"broker_unavailable","message":"the server cannot reach its broker (Redis) now; try again shortly"}"#;
    member.handle_frame(ms(10), refused).unwrap();
    assert_eq!(member.signalling_state(), SignallingState::Reconnecting);
    // Nothing before the backoff; a fresh socket (with the join in its URL) after it.
    let retry = member.poll_timeout().expect("a retry is scheduled");
    assert!(retry > ms(10));
    member.handle_timeout(retry - ms(1));
    assert_eq!(opens(&mut member), 0);
    member.handle_timeout(retry);
    let outputs: Vec<Output> = std::iter::from_fn(|| member.poll_output()).collect();
    assert!(
        outputs
            .iter()
            .any(|o| matches!(o, Output::OpenSignalling { join: Some(_) })),
        "{outputs:?}"
    );
    // Once in a room, the same error (refusing something else) leaves the socket alone.
    member.signalling_open(retry);
    let welcome = r#"{"type":"welcome","version":1,"room":"lobby","peer_id":3,"token":"t","resumed":false,"peers":[]}"#;
    member.handle_frame(retry + ms(1), welcome).unwrap();
    member.handle_frame(retry + ms(2), refused).unwrap();
    assert_eq!(member.signalling_state(), SignallingState::Joined);
}

#[test]
fn a_ticket_rides_every_fresh_join_and_no_resume_and_a_refused_one_stops_the_member() {
    use ackwire_room::member::{Event, Member, MemberConfig, Output, SignallingState};
    use ackwire_room::signalling::{ClientFrame, ErrorCode};

    let mut config = MemberConfig::new("lobby", world::app(), PeerKind::Browser, "inst");
    config.ticket = Some("v1.payload.tag".into());
    let mut member = Member::new(config, Duration::ZERO).unwrap();
    let drain =
        |member: &mut Member| std::iter::from_fn(|| member.poll_output()).collect::<Vec<_>>();
    member.handle_timeout(Duration::ZERO);
    let url_ticket = drain(&mut member).into_iter().find_map(|o| match o {
        Output::OpenSignalling { join: Some(join) } => Some(join.ticket),
        _ => None,
    });
    assert_eq!(
        url_ticket,
        Some(Some("v1.payload.tag".into())),
        "the URL join carries it"
    );
    member.signalling_open(ms(5));
    let welcome = r#"{"type":"welcome","version":1,"room":"lobby","peer_id":3,"token":"t","resumed":false,"peers":[]}"#;
    member.handle_frame(ms(6), welcome).unwrap();
    // The socket drops: the member takes its id back with its token alone.
    member.signalling_closed(ms(10), "socket closed");
    drain(&mut member);
    let retry = member.poll_timeout().unwrap();
    member.handle_timeout(retry);
    member.signalling_open(retry);
    let joins = |outputs: Vec<Output>| -> Vec<(bool, Option<String>)> {
        outputs
            .into_iter()
            .filter_map(|o| match o {
                Output::Frame(ClientFrame::Join { resume, ticket, .. }) => {
                    Some((resume.is_some(), ticket))
                }
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        joins(drain(&mut member)),
        [(true, None)],
        "a resume carries no ticket"
    );
    // The server forgot it: the fresh join frame carries the ticket again.
    let rejected = r#"{"type":"error","code":"resume_rejected","message":"cannot resume peer 3"}"#;
    member.handle_frame(retry + ms(1), rejected).unwrap();
    let outputs = drain(&mut member);
    assert!(
        outputs.iter().any(|o| matches!(
            o,
            Output::Event(Event::Refused {
                code: ErrorCode::ResumeRejected,
                fatal: false,
                ..
            })
        )),
        "a refusal the member cures by itself is not fatal"
    );
    assert_eq!(joins(outputs), [(false, Some("v1.payload.tag".into()))]);
    // A ticket the server refuses cannot pass later: the member stops and says why.
    let expired = r#"{"type":"error","code":"ticket_expired","message":"the ticket expired at 1 (Unix seconds); get a fresh one"}"#;
    member.handle_frame(retry + ms(2), expired).unwrap();
    assert_eq!(member.signalling_state(), SignallingState::Closed);
    let outputs = drain(&mut member);
    let refused = outputs.iter().find_map(|o| match o {
        Output::Event(Event::Refused { code, fatal, .. }) => Some((*code, *fatal)),
        _ => None,
    });
    assert_eq!(refused, Some((ErrorCode::TicketExpired, true)));
    member.handle_timeout(retry + Duration::from_secs(60));
    assert!(
        !drain(&mut member)
            .iter()
            .any(|o| matches!(o, Output::OpenSignalling { .. })),
        "no retry"
    );
}

#[test]
fn a_member_whose_place_another_program_took_stops_instead_of_taking_it_back() {
    use ackwire_room::member::{Member, MemberConfig, Output, SignallingState};

    let mut config = MemberConfig::new("lobby", world::app(), PeerKind::Browser, "inst");
    config.ticket = Some("v1.payload.tag".into());
    let mut member = Member::new(config, Duration::ZERO).unwrap();
    member.handle_timeout(Duration::ZERO);
    member.signalling_open(ms(5));
    let welcome = r#"{"type":"welcome","version":1,"room":"lobby","peer_id":3,"token":"t","resumed":false,"peers":[]}"#;
    member.handle_frame(ms(6), welcome).unwrap();
    std::iter::from_fn(|| member.poll_output()).for_each(drop);
    // The server closed the socket with CLOSE_REPLACED: the same identity joined elsewhere.
    member.signalling_replaced(ms(10), "signalling closed (4001 replaced_by_instance)");
    assert_eq!(member.signalling_state(), SignallingState::Closed);
    member.handle_timeout(ms(10) + Duration::from_secs(60));
    assert!(
        !std::iter::from_fn(|| member.poll_output())
            .any(|o| matches!(o, Output::OpenSignalling { .. })),
        "no socket to take the place back"
    );
}

/// Member `n`'s `Connected` and `Disconnected` events for its link to `m`, in order: `true`
/// for connected, `false` for disconnected, with the reason's code.
fn connections(
    w: &World,
    n: usize,
    peer: ackwire_room::member::PeerId,
) -> Vec<(bool, Option<&'static str>)> {
    w.nodes[n]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Connected { peer: p } if *p == peer => Some((true, None)),
            Event::Disconnected { peer: p, reason } if *p == peer => {
                Some((false, reason.as_ref().map(Failure::code)))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn connected_and_disconnected_come_once_per_transition_whatever_the_link_events_repeat() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Native, |_| {});
    w.run_until_true(2 * S, "link up", |w| w.fully_linked(&[a, b]));
    let to_b = w.link(a, b).unwrap().peer;
    // Stats and first acks repeat the connected state in `Link` events; not `Connected`.
    w.run_for(3 * S);
    let repeated = w.nodes[a]
        .events
        .iter()
        .filter(
            |e| matches!(e, Event::Link(l) if l.peer == to_b && l.state == LinkState::Connected),
        )
        .count();
    assert!(repeated > 1, "the link repeats its state: {repeated}");
    assert_eq!(connections(&w, a, to_b), [(true, None)]);

    // A pulled cable: lost once (the idle timeout), connected once when it is back.
    w.set_blackout(a, b, true);
    w.run_for(12 * S);
    w.set_blackout(a, b, false);
    w.run_until_true(20 * S, "recovered", |w| w.fully_linked(&[a, b]));
    assert_eq!(
        connections(&w, a, to_b),
        [(true, None), (false, Some("idle_timeout")), (true, None)]
    );

    // b leaves: its goodbye disconnects the link (`peer_closed`), once, before a hears it
    // left the room.
    w.with(b, |m, now| m.close(now));
    w.run_for(S);
    assert_eq!(
        connections(&w, a, to_b),
        [
            (true, None),
            (false, Some("idle_timeout")),
            (true, None),
            (false, Some("peer_closed"))
        ]
    );
    let last = |is: fn(&Event) -> bool| w.nodes[a].events.iter().rposition(is).unwrap();
    assert!(
        last(|e| matches!(e, Event::Disconnected { .. }))
            < last(|e| matches!(e, Event::PeerLeft { .. })),
        "PeerLeft follows Disconnected"
    );
}
