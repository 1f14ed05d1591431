//! The room member's message API in virtual time: each channel's promise under loss, reliable
//! messages across lost links and server restarts, what is handed back when a peer goes for
//! good, the application check, and every refusal (`world/mod.rs` is the room).

use crate::world;

use std::sync::Arc;
use std::time::Duration;

use ackwire_core::emulator::EmulatorConfig;
use ackwire_core::frame::{FrameKind, Frames};
use ackwire_core::wire::Packet;
use ackwire_room::backoff::Backoff;
use ackwire_room::emulation::Emulation;
use ackwire_room::member::{
    Budget, Event, Failure, LinkState, Member, MemberConfig, MemberError, Output, PeerId,
    SendError, SignallingState,
};
use ackwire_room::signalling::{AppInfo, ErrorCode, PeerKind};
use world::{CHAT, World};

const S: Duration = Duration::from_secs(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// 10 % loss each way on every link, with some latency and jitter.
fn lossy(config: &mut MemberConfig) {
    config.emulation = Some(Emulation {
        config: EmulatorConfig::default()
            .with_latency(ms(20))
            .with_jitter(ms(10))
            .with_loss_percent(10.0),
        seed: 7 + config.secret[0] as u64,
        impair_after: Duration::ZERO,
    });
}

/// The numbers `n` received on `channel`, in arrival order.
fn numbers(w: &World, n: usize, channel: u8) -> Vec<u32> {
    w.nodes[n]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Message {
                channel: c, bytes, ..
            } if *c == channel => Some(u32::from_le_bytes(bytes[..4].try_into().unwrap())),
            _ => None,
        })
        .collect()
}

/// The bytes of every chat message `n` received, in order.
fn chat(w: &World, n: usize) -> Vec<&Vec<u8>> {
    w.nodes[n]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Message {
                channel: CHAT,
                bytes,
                ..
            } => Some(bytes),
            _ => None,
        })
        .collect()
}

/// The chat lines `n` received, in order.
fn lines(w: &World, n: usize) -> Vec<String> {
    chat(w, n)
        .into_iter()
        .map(|bytes| String::from_utf8(bytes.clone()).unwrap())
        .collect()
}

fn each_channel_keeps_its_promise_under_loss(kind: PeerKind) {
    let mut w = World::new();
    let a = w.add(kind, lossy);
    let b = w.add(kind, lossy);
    w.run_until_true(10 * S, "linked", |w| w.fully_linked(&[a, b]));
    let to_b = w.peer(a, b);
    for i in 0u32..300 {
        let bytes = i.to_le_bytes();
        w.with(a, |m, _| {
            m.send(to_b, 1, &bytes).unwrap();
            m.send(to_b, 2, &bytes).unwrap();
            m.send_latest(to_b, 0, &bytes).unwrap();
            m.send(to_b, 3, &bytes).unwrap();
        });
        w.run_for(ms(10));
    }
    w.run_for(10 * S);
    // Reliable-ordered: every one, once, in order.
    assert_eq!(numbers(&w, b, 1), (0..300).collect::<Vec<_>>(), "{kind:?}");
    // Reliable-unordered: every one, once.
    let mut unordered = numbers(&w, b, 2);
    unordered.sort();
    assert_eq!(unordered, (0..300).collect::<Vec<_>>(), "{kind:?}");
    // Sequenced: never an older one after a newer one; some lost to the 10 %.
    let sequenced = numbers(&w, b, 0);
    assert!(sequenced.windows(2).all(|p| p[0] < p[1]), "{sequenced:?}");
    assert!(
        sequenced.len() > 10 && sequenced.len() < 300,
        "{}",
        sequenced.len()
    );
    // Unreliable: some lost, none twice.
    let mut unreliable = numbers(&w, b, 3);
    let got = unreliable.len();
    unreliable.sort();
    unreliable.dedup();
    assert_eq!(unreliable.len(), got);
    assert!(got < 300, "10 % loss loses some");
    assert_eq!(w.link(a, b).unwrap().unconfirmed, 0, "every copy confirmed");
}

#[test]
fn each_channel_keeps_its_promise_under_loss_between_natives() {
    each_channel_keeps_its_promise_under_loss(PeerKind::Native);
}

#[test]
fn each_channel_keeps_its_promise_under_loss_between_browsers() {
    each_channel_keeps_its_promise_under_loss(PeerKind::Browser);
}

#[test]
fn send_latest_replaces_what_a_channel_has_not_sent() {
    let mut w = World::new();
    let a = w.add(PeerKind::Native, |_| {});
    let b = w.add(PeerKind::Native, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    let to_b = w.peer(a, b);
    // A hundred values within one packet interval: the packet carries the newest only.
    w.with(a, |m, _| {
        for i in 0u32..100 {
            m.send_latest(to_b, 0, &i.to_le_bytes()).unwrap();
        }
    });
    w.run_for(S);
    assert_eq!(numbers(&w, b, 0), [99]);
}

/// Chat lines sent by `from` while its cable is pulled (before the idle timeout ends the
/// link) arrive at `to` exactly once, in order, once the link is back.
fn lines_sent_while_a_link_dies_arrive_once_after_it_recovers(kinds: [PeerKind; 2], restart: bool) {
    let mut w = World::new();
    let a = w.add(kinds[0], |_| {});
    let b = w.add(kinds[1], |_| {});
    w.run_until_true(5 * S, "linked", |w| w.fully_linked(&[a, b]));
    w.say(a, "before");
    w.run_for(S);
    w.nodes[a].member.set_outage(true);
    let sent: Vec<String> = (0..40).map(|i| format!("line {i}")).collect();
    for line in &sent {
        // Queued while the link is still up: the core has not timed out yet.
        assert_eq!(w.say(a, line), 1, "{line}");
        w.run_for(ms(150));
    }
    if restart {
        w.kill_server();
        w.run_for(S);
        w.start_server();
    }
    w.run_until_true(15 * S, "the link lost", |w| {
        w.links(a).iter().all(|l| l.state != LinkState::Connected)
    });
    // The link died with every line unconfirmed (the cable was out since the first).
    assert_eq!(
        w.links(a)[0].unconfirmed,
        sent.len(),
        "{kinds:?} restart {restart}"
    );
    w.nodes[a].member.set_outage(false);
    w.run_until_true(30 * S, "recovered", |w| w.fully_linked(&[a, b]));
    w.run_for(3 * S);
    let mut expected = vec!["before".to_owned()];
    expected.extend(sent);
    assert_eq!(lines(&w, b), expected, "{kinds:?} restart {restart}");
    assert_eq!(w.link(a, b).unwrap().unconfirmed, 0);
}

#[test]
fn reliable_lines_sent_while_a_link_dies_arrive_once_in_order_after_it_recovers() {
    use PeerKind::{Browser, Native};
    for kinds in [
        [Browser, Browser],
        [Native, Native],
        [Browser, Native],
        [Native, Browser],
    ] {
        lines_sent_while_a_link_dies_arrive_once_after_it_recovers(kinds, false);
    }
}

#[test]
fn reliable_lines_sent_while_a_link_dies_arrive_once_across_a_server_restart() {
    use PeerKind::{Browser, Native};
    for kinds in [[Browser, Browser], [Native, Native]] {
        lines_sent_while_a_link_dies_arrive_once_after_it_recovers(kinds, true);
    }
}

#[test]
fn lines_to_a_peer_that_goes_for_good_come_back_as_undelivered_once_in_order() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Browser, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    let to_b = w.peer(a, b);
    w.set_blackout(a, b, true);
    for i in 0..5 {
        w.say(a, &format!("unheard {i}"));
    }
    w.run_for(ms(200));
    w.vanish(b);
    w.run_until_true(5 * S, "b gone", |w| w.links(a).is_empty());
    let undelivered: Vec<(PeerId, u8, String)> = w.nodes[a]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Undelivered {
                peer,
                channel,
                bytes,
            } => Some((*peer, *channel, String::from_utf8(bytes.clone()).unwrap())),
            _ => None,
        })
        .collect();
    let expected: Vec<_> = (0..5)
        .map(|i| (to_b, CHAT, format!("unheard {i}")))
        .collect();
    assert_eq!(undelivered, expected);
    assert!(w.nodes[a].events.iter().any(|e| matches!(
        e,
        Event::PeerLeft { peer, reason: ackwire_room::member::GoneReason::Lost, .. } if *peer == to_b
    )));
}

#[test]
fn a_peer_that_forgot_us_and_meets_us_again_gets_every_line_once_both_ways() {
    let mut w = World::new();
    let a = w.add(PeerKind::Native, |_| {});
    let b = w.add(PeerKind::Native, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    w.say(a, "a1");
    w.say(b, "b1");
    w.run_for(S);
    // The server forgets b: a forgets it too (and meets it as a new peer); b keeps its link
    // to a, renamed, and its count of what a sent.
    w.forget_member(b);
    w.run_until_true(10 * S, "linked again", |w| {
        w.fully_linked(&[a, b])
            && w.nodes[a]
                .events
                .iter()
                .filter(|e| matches!(e, Event::PeerJoined { .. }))
                .count()
                == 2
    });
    w.say(a, "a2");
    w.say(b, "b2");
    w.run_for(2 * S);
    assert_eq!(lines(&w, b), ["a1", "a2"]);
    assert_eq!(lines(&w, a), ["b1", "b2"]);
}

#[test]
fn a_room_playing_another_application_refuses_the_join_and_the_member_stops_saying_why() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let other = AppInfo::new(
        "another-game",
        1,
        [ackwire_room::signalling::ChannelKind::ReliableOrdered],
    );
    let b = w.add(PeerKind::Browser, |c| c.app = other);
    w.run_for(5 * S);
    let refused = w.nodes[b].events.iter().find_map(|e| match e {
        Event::Refused { code, message, .. } => Some((*code, message.clone())),
        _ => None,
    });
    assert!(
        matches!(refused, Some((ErrorCode::AppMismatch, _))),
        "{refused:?}"
    );
    assert_eq!(
        w.nodes[b].member.signalling_state(),
        SignallingState::Closed
    );
    assert_eq!(
        w.nodes[b].member.poll_timeout(),
        None,
        "no retry: it cannot pass"
    );
    assert!(
        w.links(a).is_empty() && w.links(b).is_empty(),
        "never linked"
    );
    assert_eq!(w.nodes[b].url_joins, 1, "one try");
}

#[test]
fn bad_sends_are_refused_with_typed_errors_and_send_nothing() {
    let mut w = World::new();
    let a = w.add(PeerKind::Native, |_| {});
    let b = w.add(PeerKind::Native, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    let to_b = w.peer(a, b);
    let before = w.link(a, b).unwrap().stats.unwrap().messages_sent;
    let m = &mut w.nodes[a].member;
    while m.poll_output().is_some() {}
    let unreliable_max = m.max_message_size(0).unwrap();
    let reliable_max = m.max_message_size(CHAT).unwrap();
    assert_eq!(
        m.max_message_size(4),
        None,
        "the member's own channel is not the app's"
    );
    let refusals = [
        (
            m.send(PeerId(99), CHAT, b"x"),
            SendError::UnknownPeer(PeerId(99)),
        ),
        (m.send(to_b, 4, b"x"), SendError::UnknownChannel(4)),
        (m.send(to_b, 200, b"x"), SendError::UnknownChannel(200)),
        (
            m.send(to_b, 0, &vec![0; unreliable_max + 1]),
            SendError::TooLarge {
                channel: 0,
                len: unreliable_max + 1,
                max: unreliable_max,
            },
        ),
        (
            m.send(to_b, CHAT, &vec![0; reliable_max + 1]),
            SendError::TooLarge {
                channel: CHAT,
                len: reliable_max + 1,
                max: reliable_max,
            },
        ),
        (
            m.send_latest(to_b, CHAT, b"x"),
            SendError::Reliable { channel: CHAT },
        ),
        (
            m.broadcast(0, &vec![0; unreliable_max + 1]).map(|_| ()),
            SendError::TooLarge {
                channel: 0,
                len: unreliable_max + 1,
                max: unreliable_max,
            },
        ),
    ];
    for (got, expected) in refusals {
        assert_eq!(got, Err(expected));
    }
    assert!(!m.has_output(), "nothing to send after refusals");
    // The largest messages pass.
    m.send(to_b, 0, &vec![0; unreliable_max]).unwrap();
    let after = w.link(a, b).unwrap().stats.unwrap().messages_sent;
    assert_eq!(after, before + 1);
    // A peer whose link is down: an unreliable message would be stale, a reliable one is
    // kept for the next connection.
    w.set_blackout(a, b, true);
    w.run_until_true(15 * S, "link lost", |w| !w.connected(a, b));
    assert_eq!(
        w.nodes[a].member.send(to_b, 0, b"x"),
        Err(SendError::NotConnected(to_b))
    );
    let m = &mut w.nodes[a].member;
    assert_eq!(m.broadcast_latest(0, b"x").map(|b| b.sent), Ok(0));
    assert_eq!(m.send(to_b, CHAT, b"kept"), Ok(()));
    assert_eq!(m.broadcast(CHAT, b"kept too").map(|b| b.sent), Ok(1));
    w.set_blackout(a, b, false);
    w.run_until_true(30 * S, "both arrive", |w| {
        w.chats(b, "kept") == 1 && w.chats(b, "kept too") == 1
    });
    w.run_for(5 * S);
    assert_eq!((w.chats(b, "kept"), w.chats(b, "kept too")), (1, 1));
    let now = w.now;
    // A member that left: closed.
    w.nodes[a].member.close(now);
    assert_eq!(
        w.nodes[a].member.send(to_b, CHAT, b"x"),
        Err(SendError::Closed)
    );
}

#[test]
fn a_full_reliable_window_pushes_back_for_that_peer_alone() {
    let mut w = World::new();
    let a = w.add(PeerKind::Native, |_| {});
    let b = w.add(PeerKind::Native, |_| {});
    let c = w.add(PeerKind::Native, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b, c]));
    let to_b = w.peer(a, b);
    w.set_blackout(a, b, true);
    let m = &mut w.nodes[a].member;
    let mut sent = 0;
    let refused = loop {
        match m.send(to_b, CHAT, b"x") {
            Ok(()) => sent += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(
        refused,
        SendError::Full {
            peer: to_b,
            channel: CHAT,
            budget: Budget::Messages,
            used: 1024,
            limit: 1024,
        }
    );
    assert!(sent >= 1000, "{sent}");
    // A broadcast that one peer cannot take still goes to the others, and says who refused.
    let report = m.broadcast(CHAT, b"y").unwrap();
    assert_eq!(report.sent, 1);
    assert_eq!(report.refused, [(to_b, refused)]);
    assert_eq!(w.link(a, b).unwrap().unconfirmed, sent);
    w.run_until_true(2 * S, "c has it", |w| w.chats(c, "y") == 1);
    // Once b's link is back, every kept message reaches it, once, and room frees up.
    w.set_blackout(a, b, false);
    w.run_until_true(60 * S, "b has them all", |w| w.chats(b, "x") == sent);
    w.run_until_true(10 * S, "confirmed", |w| {
        w.link(a, b).is_some_and(|l| l.unconfirmed == 0)
    });
    assert_eq!(w.chats(b, "y"), 0, "refused for b: never sent to it");
}

#[test]
fn encrypted_links_refuse_a_datagram_size_without_room_for_the_tag_where_it_is_configured() {
    let mut config = MemberConfig::new("lobby", world::app(), PeerKind::Native, "inst");
    config.udp_addr = Some("127.0.0.1:4000".parse().unwrap());
    config.udp_keys = Some(Arc::new(ackwire_room::keys::NoiseKeys::generate()));
    let min = ackwire_core::MIN_PROTECTED_DATAGRAM_SIZE;
    config.connection.max_datagram_size = min - 1;
    match Member::new(config.clone(), Duration::ZERO) {
        Err(MemberError::DatagramTooSmall { size, min: said }) => {
            assert_eq!((size, said), (min - 1, min));
        }
        other => panic!("{other:?}"),
    }
    config.connection.max_datagram_size = min;
    assert!(Member::new(config.clone(), Duration::ZERO).is_ok());
    // Without keys (browsers, `--insecure`) the plain minimum is enough.
    config.udp_keys = None;
    config.connection.max_datagram_size = ackwire_core::MIN_DATAGRAM_SIZE;
    assert!(Member::new(config, Duration::ZERO).is_ok());
}

#[test]
fn members_of_different_applications_never_complete_a_handshake() {
    // Even with no server between them (a server that did not check): the core's protocol id
    // is the application's.
    let a = MemberConfig::new("lobby", world::app(), PeerKind::Native, "a")
        .link_config()
        .unwrap();
    let mut other_app = world::app();
    other_app.version += 1;
    let b = MemberConfig::new("lobby", other_app, PeerKind::Native, "b")
        .link_config()
        .unwrap();
    assert_ne!(a.protocol_id, b.protocol_id);
    assert_eq!(
        a.channels.len(),
        world::app().channels.len() + 1,
        "plus the member's own"
    );
}

#[test]
fn a_member_with_nothing_to_do_outputs_nothing_and_frees_what_it_sent() {
    let mut w = World::new();
    let a = w.add(PeerKind::Native, |_| {});
    let b = w.add(PeerKind::Native, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    for i in 0..50 {
        w.say(a, &format!("{i}"));
        w.run_for(ms(50));
    }
    w.run_for(3 * S);
    assert_eq!(lines(&w, b).len(), 50);
    assert_eq!(
        w.link(a, b).unwrap().unconfirmed,
        0,
        "the copies were freed"
    );
    let _ = Output::CloseSignalling;
}

#[test]
fn lines_delivered_whose_acks_were_lost_are_not_delivered_again_on_the_next_link() {
    use PeerKind::{Browser, Native};
    for kinds in [[Native, Native], [Browser, Browser]] {
        let mut w = World::new();
        let a = w.add(kinds[0], |_| {});
        let b = w.add(kinds[1], |_| {});
        w.run_until_true(5 * S, "linked", |w| w.fully_linked(&[a, b]));
        // b hears a, a hears nothing of b: b takes the lines in, a never learns it.
        w.set_one_way_blackout(b, a, true);
        let sent: Vec<String> = (0..20).map(|i| format!("line {i}")).collect();
        for line in &sent {
            w.say(a, line);
            w.run_for(ms(100));
        }
        w.run_until_true(5 * S, "b has them all", |w| lines(w, b).len() == 20);
        assert_eq!(w.link(a, b).unwrap().unconfirmed, 20, "none confirmed to a");
        // a's link times out; the next one carries a's copies again, which b drops.
        w.run_until_true(15 * S, "the link lost", |w| !w.connected(a, b));
        w.set_one_way_blackout(b, a, false);
        w.run_until_true(30 * S, "recovered", |w| w.fully_linked(&[a, b]));
        w.say(a, "after");
        w.run_for(3 * S);
        let mut expected = sent.clone();
        expected.push("after".into());
        assert_eq!(lines(&w, b), expected, "{kinds:?}");
        assert_eq!(w.link(a, b).unwrap().unconfirmed, 0, "{kinds:?}");
    }
}

#[test]
fn the_protocol_id_is_the_fnv_hash_docs_wire_md_shows() {
    let spec = include_str!("../../docs/wire.md");
    let line = spec
        .split("```room-protocol-id\n")
        .nth(1)
        .and_then(|b| b.lines().next())
        .expect("docs/wire.md has a room-protocol-id block");
    let (text, hex) = line.split_once(" => ").unwrap();
    let fnv = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    assert_eq!(format!("{fnv:016x}"), hex.trim());
    let app = AppInfo::new(
        "pong",
        1,
        [
            ackwire_room::signalling::ChannelKind::UnreliableSequenced,
            ackwire_room::signalling::ChannelKind::ReliableOrdered,
        ],
    );
    assert_eq!(text, format!("ackwire-room/1 {app}"));
    let config = MemberConfig::new("lobby", app, PeerKind::Native, "a")
        .link_config()
        .unwrap();
    assert_eq!(config.protocol_id, fnv);
}

fn undelivered(w: &World, n: usize) -> usize {
    w.nodes[n]
        .events
        .iter()
        .filter(|e| matches!(e, Event::Undelivered { .. }))
        .count()
}

#[test]
fn a_member_that_forgot_its_peer_across_a_server_restart_gets_each_of_its_messages_once() {
    let mut w = World::new();
    // a forgets a peer 2 s after a restart; b comes back to the server only after 8 s, and
    // keeps its link to a meanwhile.
    let a = w.add(PeerKind::Native, |c| c.orphan_grace = 2 * S);
    let b = w.add(PeerKind::Native, |c| {
        c.orphan_grace = 60 * S;
        c.backoff = Backoff {
            first: 8 * S,
            max: 8 * S,
            jitter_percent: 0,
        };
    });
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    let to_a = w.peer(b, a);
    // b's lines reach a, but nothing of a's reaches b: b keeps every copy, unconfirmed.
    w.set_one_way_blackout(a, b, true);
    let said: Vec<String> = (0..20).map(|i| format!("line {i}")).collect();
    for line in &said {
        w.with(b, |m, _| m.send(to_a, CHAT, line.as_bytes()))
            .unwrap();
    }
    w.run_until_true(5 * S, "a has them", |w| lines(w, a) == said);
    assert_eq!(w.link(b, a).unwrap().unconfirmed, 20);
    w.kill_server();
    w.start_server();
    w.run_until_true(10 * S, "a forgets b", |w| w.links(a).is_empty());
    assert!(!w.links(b).is_empty(), "b still has its link to a");
    w.set_one_way_blackout(a, b, false);
    w.run_until_true(40 * S, "b's copies confirmed", |w| {
        w.fully_linked(&[a, b]) && w.link(b, a).is_some_and(|l| l.unconfirmed == 0)
    });
    // Meeting b again, a counted on from where it forgot: nothing twice, nothing handed back.
    w.with(b, |m, _| m.send(to_a, CHAT, b"after")).unwrap();
    w.run_until_true(5 * S, "after", |w| w.chats(a, "after") == 1);
    let mut expected = said.clone();
    expected.push("after".into());
    assert_eq!(lines(&w, a), expected);
    assert_eq!(undelivered(&w, b), 0);
}

/// Two natives linked, `a` keeping at most `budget` bytes for its peer: the world, `a`, `b`
/// and `a`'s id for `b`.
fn budgeted_pair(budget: usize) -> (World, usize, usize, PeerId) {
    let mut w = World::new();
    let a = w.add(PeerKind::Native, |c| c.peer_budget = budget);
    let b = w.add(PeerKind::Native, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    let to_b = w.peer(a, b);
    (w, a, b, to_b)
}

#[test]
fn what_a_member_keeps_for_a_peer_that_never_acknowledges_stays_within_its_byte_budget() {
    let budget = 64 * 1024;
    let (mut w, a, b, to_b) = budgeted_pair(budget);
    // b takes everything and acknowledges nothing a hears.
    w.set_one_way_blackout(b, a, true);
    let line = vec![b'x'; 1000];
    let mut sent = 0;
    let refused = loop {
        match w.with(a, |m, _| m.send(to_b, CHAT, &line)) {
            Ok(()) => sent += 1,
            Err(e) => break e,
        }
        w.run_for(Duration::from_millis(10));
    };
    let kept = w.nodes[a].member.kept_bytes(to_b).unwrap();
    assert!(kept <= budget, "{kept} bytes kept");
    assert!(kept + 1005 > budget, "refused only when full: {kept}");
    assert_eq!(
        refused,
        SendError::Full {
            peer: to_b,
            channel: CHAT,
            budget: Budget::Bytes,
            used: kept,
            limit: budget,
        }
    );
    // Acknowledgements flow again: everything arrives once, and the budget frees up.
    w.set_one_way_blackout(b, a, false);
    w.run_until_true(60 * S, "all of them", |w| {
        w.received(b, CHAT, &line) == sent && w.nodes[a].member.kept_bytes(to_b) == Some(0)
    });
    w.run_for(5 * S);
    assert_eq!(w.received(b, CHAT, &line), sent);
}

#[test]
fn a_broadcast_while_one_link_recovers_reaches_that_peer_too_exactly_once() {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Native, |_| {});
    let c = w.add(PeerKind::Browser, |_| {});
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b, c]));
    w.set_blackout(a, b, true);
    w.run_until_true(20 * S, "a's link to b lost", |w| !w.connected(a, b));
    assert_eq!(w.say(a, "goal"), 2, "kept for b, sent to c");
    w.set_blackout(a, b, false);
    w.run_until_true(30 * S, "b has it", |w| w.chats(b, "goal") == 1);
    w.run_for(5 * S);
    assert_eq!((w.chats(b, "goal"), w.chats(c, "goal")), (1, 1));
    assert_eq!(undelivered(&w, a), 0);
}

/// Whether a WebRTC datagram between members carries a hello-ack: a reliable message on the
/// room's control channel (the one after the application's) of `0x02` and a life (docs/wire.md).
fn carries_hello_ack(bytes: &[u8]) -> bool {
    let control = world::app().channels.len() as u8;
    Packet::new_checked(bytes).is_ok_and(|packet| {
        Frames::new(packet.payload()).flatten().any(|frame| {
            frame.channel == control
                && matches!(frame.kind, FrameKind::Reliable { .. })
                && frame.payload.len() == 9
                && frame.payload[0] == 0x02
        })
    })
}

#[test]
fn a_peer_that_never_answers_our_hello_fails_the_link_at_twice_the_idle_timeout_and_loses_nothing()
{
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add(PeerKind::Browser, |_| {});
    // b acknowledges everything at the core and delivers, but its hello-acks never reach a:
    // what a queued before the ack would be pinned for good without a deadline.
    w.drop_datagrams(b, a, Some(carries_hello_ack));
    w.run_until_true(5 * S, "linked", |w| w.connected(a, b));
    let connected_at = w.now;
    let to_b = w.peer(a, b);
    let mut sent = Vec::new();
    let lost = loop {
        let line = format!("line {}", sent.len());
        w.with(a, |m, _| m.send(to_b, CHAT, line.as_bytes()))
            .unwrap();
        sent.push(line);
        w.run_for(Duration::from_millis(500));
        let lost = w.nodes[a].events.iter().find_map(|e| match e {
            Event::Link(info) if info.peer == to_b && info.state == LinkState::Lost => {
                Some((w.now, info.reason.clone()))
            }
            _ => None,
        });
        if let Some(lost) = lost {
            break lost;
        }
        assert!(w.now < connected_at + 30 * S, "the link never failed");
    };
    let idle_timeout = 10 * S;
    let after = lost.0 - connected_at;
    assert!(
        after >= 2 * idle_timeout && after <= 2 * idle_timeout + S,
        "failed {after:?} after connecting"
    );
    assert_eq!(
        lost.1,
        Some(Failure::Protocol(
            "the peer never answered our hello".into()
        ))
    );
    assert!(
        w.nodes[a].member.kept_bytes(to_b).unwrap() > 0,
        "copies kept for the next link"
    );
    // b answers again: the next connection confirms everything, each line delivered once.
    w.drop_datagrams(b, a, None);
    w.run_until_true(30 * S, "every line confirmed", |w| {
        w.connected(a, b) && w.nodes[a].member.kept_bytes(to_b) == Some(0)
    });
    w.run_for(2 * S);
    assert_eq!(lines(&w, b), sent);
}

#[test]
fn send_capacity_says_beforehand_which_sends_a_peers_channel_takes() {
    let (mut w, a, b, to_b) = budgeted_pair(64 * 1024);
    let capacity = |w: &mut World, channel| w.with(a, |m, _| m.send_capacity(to_b, channel));
    // Nothing kept: any one message fits, and the whole window.
    let cap = capacity(&mut w, CHAT).unwrap();
    assert_eq!((cap.messages, cap.bytes), (1024, 262_144));
    // b acknowledges nothing a hears: the copies stay, and each send is taken exactly when
    // the capacity said it would be.
    w.set_one_way_blackout(b, a, true);
    let line = vec![b'x'; 1000];
    let mut taken = 0;
    loop {
        let cap = capacity(&mut w, CHAT).unwrap();
        let fits = cap.messages >= 1 && cap.bytes >= line.len() + 5;
        let sent = w.with(a, |m, _| m.send(to_b, CHAT, &line));
        assert_eq!(sent.is_ok(), fits, "after {taken}: {cap:?}, {sent:?}");
        if sent.is_err() {
            break;
        }
        taken += 1;
        w.run_for(Duration::from_millis(10));
    }
    assert!(taken > 60, "{taken} taken within 64 KiB");
    // An unreliable channel: its queue's room on the connected link; none on a lost one.
    let cap = capacity(&mut w, 3).unwrap();
    assert!(
        cap.messages > 0
            && cap.bytes == cap.messages * w.nodes[a].member.max_message_size(3).unwrap()
    );
    assert_eq!(capacity(&mut w, 9), Err(SendError::UnknownChannel(9)));
    assert_eq!(
        w.with(a, |m, _| m.send_capacity(PeerId(99), CHAT)),
        Err(SendError::UnknownPeer(PeerId(99)))
    );
    w.set_blackout(a, b, true);
    w.run_until_true(20 * S, "a's link to b lost", |w| !w.connected(a, b));
    assert_eq!(capacity(&mut w, 3), Err(SendError::NotConnected(to_b)));
    assert!(
        capacity(&mut w, CHAT).is_ok(),
        "a reliable send is kept while the link is down"
    );
}

#[test]
fn a_4_mib_transfer_between_members_runs_ahead_of_the_cadence_and_arrives_once_in_order() {
    // Two natives over a 20 ms RTT path: 16 messages of 256 KiB, sent as the capacity allows.
    // At the cadence alone (30 packets of one 1 KiB fragment a second) this takes 2 minutes
    // and more; the bulk window (docs/wire.md, "Bulk") runs ahead of it.
    let mut w = World::new();
    let path = |c: &mut MemberConfig| {
        c.emulation = Some(Emulation {
            config: EmulatorConfig::default().with_latency(ms(10)),
            seed: 3 + c.secret[0] as u64,
            impair_after: Duration::ZERO,
        });
    };
    let a = w.add(PeerKind::Native, path);
    let b = w.add(PeerKind::Native, path);
    w.run_until_true(2 * S, "linked", |w| w.fully_linked(&[a, b]));
    // The link's good mode, as in a game under way.
    w.run_for(5 * S);
    let to_b = w.peer(a, b);
    let size = w.nodes[a].member.max_message_size(CHAT).unwrap();
    let message = |n: u32| -> Vec<u8> {
        (0..size as u32)
            .map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(n) as u8)
            .collect()
    };
    let start = w.now;
    let mut sent = 0u32;
    while chat(&w, b).len() < 16 {
        assert!(w.now < start + 60 * S, "the transfer stalled");
        while sent < 16 && w.with(a, |m, _| m.send(to_b, CHAT, &message(sent))).is_ok() {
            sent += 1;
        }
        w.run_for(ms(10));
    }
    let took = w.now - start;
    let got = chat(&w, b);
    assert_eq!(got.len(), 16, "each message once");
    for (n, bytes) in got.iter().enumerate() {
        assert!(
            **bytes == message(n as u32),
            "message {n} intact and in order"
        );
    }
    let rate = 16.0 * size as f64 / took.as_secs_f64();
    println!(
        "4 MiB between members at 20 ms RTT: {took:?}, {:.2} MB/s",
        rate / 1e6
    );
    assert!(rate >= 1e6, "{rate:.0} B/s");
}
