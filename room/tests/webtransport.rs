//! WebTransport links in virtual time: a browser client dials a host that serves it (no
//! offer, no ICE), its messages flow exactly once both ways over the session's datagrams, and
//! a session that never becomes ready gives way to WebRTC within the member's bound.

use crate::world;

use std::time::Duration;

use ackwire_room::member::{LinkState, MemberConfig, SendError, SignallingState, TransportKind};
use ackwire_room::signalling::{CertHash, PeerKind, Role, WebTransportInfo};
use world::{HOP, World};

const S: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

/// A host at node 0 that serves WebTransport (it must be the world's first member).
fn host(w: &mut World) -> usize {
    let host = w.add(PeerKind::Native, |c| {
        c.role = Role::Host;
        c.webtransport = Some(World::webtransport_service(0));
    });
    assert_eq!(host, 0, "the host is the world's first member");
    host
}

/// A client (a browser, or a native in a load generator) that dials WebTransport or not.
fn browser_client(dials: bool) -> impl FnOnce(&mut MemberConfig) {
    move |c| {
        c.role = Role::Client;
        c.dials_webtransport = dials;
    }
}

fn transport(w: &World, n: usize, m: usize) -> TransportKind {
    w.link(n, m).expect("a link").transport
}

#[test]
fn a_browser_that_can_dial_links_to_its_host_over_webtransport_with_no_offer() {
    let mut w = World::new();
    let host = host(&mut w);
    let wt = w.add(PeerKind::Browser, browser_client(true));
    // A browser without WebTransport, and a native, link as they always did.
    let rtc = w.add(PeerKind::Browser, browser_client(false));
    let native = w.add(PeerKind::Native, |c| c.role = Role::Client);
    w.run_until_true(3 * S, "every client linked", |w| {
        [wt, rtc, native]
            .iter()
            .all(|&c| w.connected(c, host) && w.connected(host, c))
    });
    assert_eq!(transport(&w, wt, host), TransportKind::WebTransport);
    assert_eq!(transport(&w, host, wt), TransportKind::WebTransport);
    assert_eq!(transport(&w, rtc, host), TransportKind::WebRtc);
    assert_eq!(transport(&w, native, host), TransportKind::Udp);
    assert_eq!(w.webtransport_opened(), 1);
    // No session description was ever relayed between the WebTransport client and its host.
    assert!(!w.offers.iter().any(|&(a, b)| a == wt || b == wt));
    // The session is ready three hops after the dial plus the response's hop: with the
    // member's own round trips it connects well inside what WebRTC's offer, answer and ICE
    // take in this world.
    let took = w.link(wt, host).unwrap().attempt_ms;
    let rtc_took = w.link(rtc, host).unwrap().attempt_ms;
    assert!(
        took < rtc_took,
        "WebTransport {took:?}, WebRTC {rtc_took:?}"
    );
    assert!(took <= 6 * HOP + MS, "WebTransport took {took:?}");
}

#[test]
fn messages_cross_a_webtransport_link_exactly_once_in_both_directions() {
    let mut w = World::new();
    let host = host(&mut w);
    let client = w.add(PeerKind::Browser, browser_client(true));
    // Sent while the session is dialed: it waits, then rides the early connection.
    w.run_until_true(S, "the host heard of", |w| w.link(client, host).is_some());
    assert_eq!(w.link(client, host).unwrap().state, LinkState::Negotiating);
    assert_eq!(w.say(client, "early"), 1);
    w.run_until_true(3 * S, "linked", |w| w.connected(client, host));
    assert_eq!(w.say(host, "state"), 1);
    assert_eq!(w.say(client, "input"), 1);
    // The largest unreliable message the member allows fits one WebTransport datagram.
    let max = w.nodes[client].member.max_message_size(0).unwrap();
    let big = vec![7u8; max];
    let peer = w.peer(client, host);
    w.with(client, |m, _| m.send(peer, 0, &big))
        .expect("a full-size unreliable message");
    w.run_for(S);
    assert_eq!(w.chats(host, "early"), 1);
    assert_eq!(w.chats(host, "input"), 1);
    assert_eq!(w.chats(client, "state"), 1);
    assert_eq!(w.received(host, 0, &big), 1);
}

#[test]
fn a_session_that_never_becomes_ready_gives_way_to_webrtc_within_the_timeout() {
    let mut w = World::new();
    let host = host(&mut w);
    w.block_webtransport(host);
    let client = w.add(PeerKind::Browser, browser_client(true));
    w.run_until_true(S, "the host heard of", |w| w.link(client, host).is_some());
    assert_eq!(w.say(client, "kept"), 1);
    w.run_until_true(5 * S, "linked over WebRTC", |w| w.connected(client, host));
    let timeout = MemberConfig::new("r", world::app(), PeerKind::Browser, "i").webtransport_timeout;
    assert!(w.now >= timeout, "it waited the session out: {:?}", w.now);
    assert!(w.now < timeout + S, "and fell back at once: {:?}", w.now);
    assert_eq!(transport(&w, client, host), TransportKind::WebRtc);
    assert_eq!(transport(&w, host, client), TransportKind::WebRtc);
    w.run_for(S);
    assert_eq!(
        w.chats(host, "kept"),
        1,
        "what it sent meanwhile arrives once"
    );
    assert_eq!(w.webtransport_opened(), 0);
}

#[test]
fn a_host_without_webtransport_is_reached_over_webrtc_by_a_client_that_can_dial() {
    let mut w = World::new();
    let host = w.add(PeerKind::Native, |c| c.role = Role::Host);
    let client = w.add(PeerKind::Browser, browser_client(true));
    w.run_until_true(3 * S, "linked", |w| w.connected(client, host));
    assert_eq!(transport(&w, client, host), TransportKind::WebRtc);
}

#[test]
fn a_client_that_restarts_its_session_is_taken_again_by_the_host() {
    let mut w = World::new();
    let host = host(&mut w);
    let client = w.add(PeerKind::Browser, browser_client(true));
    w.run_until_true(3 * S, "linked", |w| w.connected(client, host));
    // The path dies both ways: both sides time out and the client dials again.
    w.set_blackout(host, client, true);
    w.run_until_true(30 * S, "the link lost", |w| {
        w.link(client, host)
            .is_some_and(|l| l.state != LinkState::Connected)
    });
    w.set_blackout(host, client, false);
    w.run_until_true(30 * S, "linked again", |w| {
        w.connected(client, host) && w.connected(host, client)
    });
    assert_eq!(transport(&w, client, host), TransportKind::WebTransport);
    assert!(w.webtransport_opened() >= 2);
    assert_eq!(w.say(client, "back"), 1);
    w.run_for(S);
    assert_eq!(w.chats(host, "back"), 1);
}

#[test]
fn a_token_of_the_wrong_shape_changes_nothing_on_the_hosts_link() {
    let mut w = World::new();
    let host = host(&mut w);
    let client = w.add(PeerKind::Browser, browser_client(true));
    w.run_until_true(3 * S, "linked", |w| w.connected(host, client));
    let from = w.nodes[client].member.server_id().unwrap();
    for token in [
        "",
        "XYZ",
        "0123456789ABCDEF0123456789ABCDEF",
        &"a".repeat(33),
    ] {
        let frame =
            serde_json::json!({"type": "signal", "from": from, "data": {"webtransport": token}});
        w.with(host, |m, now| m.handle_frame(now, &frame.to_string()))
            .expect("a signal is a well-formed frame");
    }
    w.run_for(S);
    let link = w.link(host, client).unwrap();
    assert_eq!(link.state, LinkState::Connected);
    assert_eq!(link.reason, None, "never restarted");
    assert_eq!(w.webtransport_opened(), 1);
}

/// The world host's service at node 0 with the certificates `hashes` (one byte each).
fn rotated(hashes: &[u8]) -> WebTransportInfo {
    WebTransportInfo {
        cert_hashes: hashes.iter().map(|&b| CertHash([b; 32])).collect(),
        ..World::webtransport_service(0)
    }
}

/// The service the latest dial of node `n` named.
fn last_dial(w: &World, n: usize) -> &WebTransportInfo {
    &w.wt_dials
        .iter()
        .rev()
        .find(|(c, _)| *c == n)
        .expect("a dial")
        .1
}

#[test]
fn a_host_that_updates_its_service_is_dialed_with_the_new_one_and_keeps_its_clients() {
    let mut w = World::new();
    let host = host(&mut w);
    let early = w.add(PeerKind::Browser, browser_client(true));
    w.run_until_true(3 * S, "linked", |w| {
        w.connected(early, host) && w.connected(host, early)
    });
    assert_eq!(last_dial(&w, early), &World::webtransport_service(0));

    // The host rotates: [current, next]. The session open stays as it is.
    let next = rotated(&[0, 100]);
    w.with(host, |m, now| m.update_webtransport(now, next.clone()));
    w.run_for(S);
    let link = w.link(early, host).unwrap();
    assert_eq!(link.state, LinkState::Connected);
    assert_eq!(link.transport, TransportKind::WebTransport);
    assert_eq!(link.reason, None, "never restarted");
    assert_eq!(w.webtransport_opened(), 1);
    assert_eq!(w.say(early, "through"), 1);

    // A client that links after it dials the new service.
    let late = w.add(PeerKind::Browser, browser_client(true));
    w.run_until_true(3 * S, "the late client linked", |w| w.connected(late, host));
    assert_eq!(transport(&w, late, host), TransportKind::WebTransport);
    assert_eq!(last_dial(&w, late), &next);
    assert_eq!(w.chats(host, "through"), 1);

    // The switch: [next] alone. The early client's next session dials it too.
    let after = rotated(&[100]);
    w.with(host, |m, now| m.update_webtransport(now, after.clone()));
    w.run_for(S);
    assert!(w.connected(early, host) && w.connected(late, host));
    w.set_blackout(host, early, true);
    w.run_until_true(30 * S, "the link lost", |w| {
        w.link(early, host)
            .is_some_and(|l| l.state != LinkState::Connected)
    });
    w.set_blackout(host, early, false);
    w.run_until_true(30 * S, "linked again", |w| {
        w.connected(early, host) && w.connected(host, early)
    });
    assert_eq!(transport(&w, early, host), TransportKind::WebTransport);
    assert_eq!(last_dial(&w, early), &after);
}

#[test]
fn a_service_updated_while_the_hosts_signalling_is_down_reaches_its_clients_with_its_resume() {
    let mut w = World::new();
    let host = host(&mut w);
    let client = w.add(PeerKind::Browser, browser_client(true));
    w.run_until_true(3 * S, "linked", |w| w.connected(client, host));
    w.cut_signalling(host, true);
    w.run_for(100 * MS);
    let next = rotated(&[0, 100]);
    w.with(host, |m, now| m.update_webtransport(now, next.clone()));
    w.cut_signalling(host, false);
    w.run_until_true(30 * S, "the host back in the room", |w| {
        w.nodes[host].member.signalling_state() == SignallingState::Joined
    });
    w.run_for(S);
    assert!(w.connected(client, host), "the open session carried on");
    // The client heard it: its next session dials the new service.
    w.set_blackout(host, client, true);
    w.run_until_true(30 * S, "the link lost", |w| {
        w.link(client, host)
            .is_some_and(|l| l.state != LinkState::Connected)
    });
    w.set_blackout(host, client, false);
    w.run_until_true(30 * S, "linked again", |w| w.connected(client, host));
    assert_eq!(transport(&w, client, host), TransportKind::WebTransport);
    assert_eq!(last_dial(&w, client), &next);
}

#[test]
fn the_hosts_first_state_leaves_as_the_session_opens_and_arrives_as_the_client_accepts() {
    let mut w = World::new();
    let host = host(&mut w);
    let client = w.add(PeerKind::Browser, browser_client(true));
    // On a session the host connects: its link opens as the CONNECT arrives, half a round
    // trip before the client hears the session is ready.
    w.run_until_true(S, "the host's link open", |w| {
        w.link(host, client)
            .is_some_and(|l| l.state == LinkState::Open)
    });
    assert_ne!(w.link(client, host).unwrap().state, LinkState::Connected);
    let sent = w
        .with(host, |m, _| m.broadcast_latest(0, b"state 1"))
        .unwrap();
    assert_eq!(
        sent.sent, 1,
        "an unreliable state goes out before the client accepted"
    );
    // The client accepts: its own unreliable sends wait for the connection.
    let peer = w.peer(client, host);
    let early = w.with(client, |m, _| m.send(peer, 0, b"input"));
    assert!(
        matches!(early, Err(SendError::NotConnected(_))),
        "{early:?}"
    );
    w.run_until_true(S, "the client connected", |w| w.connected(client, host));
    let connected_at = w.now;
    w.run_until_true(S, "the state arrived", |w| {
        w.received(client, 0, b"state 1") == 1
    });
    assert!(
        w.now <= connected_at + HOP,
        "it came with the handshake: {:?} after",
        w.now - connected_at
    );
    w.run_for(S);
    assert_eq!(w.received(client, 0, b"state 1"), 1);
}

#[test]
fn a_native_client_that_dials_links_to_its_host_over_webtransport_rather_than_udp() {
    let mut w = World::new();
    let host = host(&mut w);
    // A native that dials (a load generator's player), and one that does not.
    let dialer = w.add(PeerKind::Native, browser_client(true));
    let native = w.add(PeerKind::Native, browser_client(false));
    w.run_until_true(3 * S, "both linked", |w| {
        [dialer, native]
            .iter()
            .all(|&c| w.connected(c, host) && w.connected(host, c))
    });
    assert_eq!(transport(&w, dialer, host), TransportKind::WebTransport);
    assert_eq!(transport(&w, host, dialer), TransportKind::WebTransport);
    assert_eq!(transport(&w, native, host), TransportKind::Udp);
    assert_eq!(transport(&w, host, native), TransportKind::Udp);
    assert_eq!(w.webtransport_opened(), 1);
    assert!(!w.offers.iter().any(|&(a, b)| a == dialer || b == dialer));
    // Messages both ways, exactly once, and the largest unreliable one in one datagram.
    assert_eq!(w.say(dialer, "input"), 1);
    assert_eq!(w.say(host, "state"), 2, "to both clients");
    let max = w.nodes[dialer].member.max_message_size(0).unwrap();
    let big = vec![9u8; max];
    let peer = w.peer(dialer, host);
    w.with(dialer, |m, _| m.send(peer, 0, &big))
        .expect("a full-size unreliable message");
    w.run_for(S);
    assert_eq!(w.chats(host, "input"), 1);
    assert_eq!(w.chats(dialer, "state"), 1);
    assert_eq!(w.received(host, 0, &big), 1);
}

#[test]
fn a_native_whose_session_never_becomes_ready_falls_back_to_udp_not_webrtc() {
    let mut w = World::new();
    let host = host(&mut w);
    w.block_webtransport(host);
    let dialer = w.add(PeerKind::Native, browser_client(true));
    w.run_until_true(S, "the host heard of", |w| w.link(dialer, host).is_some());
    assert_eq!(w.say(dialer, "kept"), 1);
    w.run_until_true(5 * S, "linked over UDP", |w| {
        w.connected(dialer, host) && w.connected(host, dialer)
    });
    let timeout = MemberConfig::new("r", world::app(), PeerKind::Native, "i").webtransport_timeout;
    assert!(w.now >= timeout, "it waited the session out: {:?}", w.now);
    assert!(w.now < timeout + S, "and fell back at once: {:?}", w.now);
    assert_eq!(transport(&w, dialer, host), TransportKind::Udp);
    assert_eq!(transport(&w, host, dialer), TransportKind::Udp);
    assert!(!w.offers.iter().any(|&(a, b)| a == dialer || b == dialer));
    w.run_for(S);
    assert_eq!(
        w.chats(host, "kept"),
        1,
        "what it sent meanwhile arrives once"
    );
    assert_eq!(w.webtransport_opened(), 0);
}
