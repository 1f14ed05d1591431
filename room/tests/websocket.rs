//! WebSocket links in virtual time, a host room's last resort: a browser without WebRTC
//! (WebKitGTK) links to its host over the host's WebSocket; a client that no UDP reaches the
//! host from tries WebTransport, then WebRTC, then the WebSocket, each within its bound; and
//! what was sent meanwhile arrives exactly once.

use crate::world;

use std::time::Duration;

use ackwire_room::member::{Failure, MemberConfig, TransportKind};
use ackwire_room::signalling::{PeerKind, Role};
use world::World;

const S: Duration = Duration::from_secs(1);

/// A host at node 0 that serves WebTransport and a WebSocket, or WebTransport alone.
fn host(w: &mut World, websocket: bool) -> usize {
    let host = w.add(PeerKind::Native, |c| {
        c.role = Role::Host;
        let mut service = World::webtransport_service(0);
        if !websocket {
            service.websocket = None;
        }
        c.webtransport = Some(service);
    });
    assert_eq!(host, 0, "the host is the world's first member");
    host
}

/// A browser client: with WebTransport and WebRTC (Chromium), or with neither (WebKitGTK).
fn browser(full: bool) -> impl FnOnce(&mut MemberConfig) {
    move |c| {
        c.role = Role::Client;
        c.dials_webtransport = full;
        c.webrtc = full;
        c.dials_websocket = true;
    }
}

fn transport(w: &World, n: usize, m: usize) -> TransportKind {
    w.link(n, m).expect("a link").transport
}

fn defaults() -> MemberConfig {
    MemberConfig::new("r", world::app(), PeerKind::Browser, "i")
}

#[test]
fn a_browser_without_webrtc_links_to_its_host_over_the_websocket_and_messages_cross_once() {
    let mut w = World::new();
    let host = host(&mut w, true);
    let webkit = w.add(PeerKind::Browser, browser(false));
    let chromium = w.add(PeerKind::Browser, browser(true));
    w.run_until_true(S, "the host heard of", |w| w.link(webkit, host).is_some());
    assert_eq!(w.say(webkit, "early"), 1);
    w.run_until_true(3 * S, "both linked", |w| {
        [webkit, chromium]
            .iter()
            .all(|&c| w.connected(c, host) && w.connected(host, c))
    });
    assert_eq!(transport(&w, webkit, host), TransportKind::WebSocket);
    assert_eq!(transport(&w, host, webkit), TransportKind::WebSocket);
    // The other player is on WebTransport, as before: the WebSocket is nobody's first choice.
    assert_eq!(transport(&w, chromium, host), TransportKind::WebTransport);
    assert_eq!(w.websockets_opened(), 1);
    // No offer was ever made for the WebKit player: it has no RTCPeerConnection (the world
    // panics if a member without WebRTC opens one).
    assert!(!w.offers.iter().any(|&(a, b)| a == webkit || b == webkit));
    assert_eq!(w.say(host, "state"), 2, "to both players");
    assert_eq!(w.say(webkit, "input"), 1);
    let max = w.nodes[webkit].member.max_message_size(0).unwrap();
    let big = vec![9u8; max];
    let peer = w.peer(webkit, host);
    w.with(webkit, |m, _| m.send(peer, 0, &big))
        .expect("a full-size unreliable message");
    w.run_for(S);
    assert_eq!(w.chats(host, "early"), 1);
    assert_eq!(w.chats(host, "input"), 1);
    assert_eq!(w.chats(webkit, "state"), 1);
    assert_eq!(w.received(host, 0, &big), 1);
}

#[test]
fn a_client_no_udp_reaches_the_host_from_falls_back_to_webrtc_then_to_the_websocket() {
    let mut w = World::new();
    let host = host(&mut w, true);
    w.no_udp_to(host);
    let client = w.add(PeerKind::Browser, browser(true));
    w.run_until_true(S, "the host heard of", |w| w.link(client, host).is_some());
    assert_eq!(w.say(client, "kept"), 1);
    let config = defaults();
    let bound = config.webtransport_timeout + config.websocket_after;
    w.run_until_true(bound + 2 * S, "linked over the WebSocket", |w| {
        w.connected(client, host) && w.connected(host, client)
    });
    // The session was waited out, then WebRTC until ICE failed or its own bound: neither
    // longer.
    assert!(
        w.now > config.webtransport_timeout + S,
        "it tried both first: {:?}",
        w.now
    );
    assert!(w.now < bound + S, "and fell back at once: {:?}", w.now);
    assert_eq!(w.webtransport_opened(), 0);
    assert!(
        w.offers.iter().any(|&(a, _)| a == client),
        "WebRTC was tried"
    );
    assert_eq!(transport(&w, client, host), TransportKind::WebSocket);
    assert_eq!(transport(&w, host, client), TransportKind::WebSocket);
    w.run_for(S);
    assert_eq!(
        w.chats(host, "kept"),
        1,
        "what it sent meanwhile arrives once"
    );
    assert_eq!(w.say(host, "after"), 1);
    w.run_for(S);
    assert_eq!(w.chats(client, "after"), 1);
}

#[test]
fn a_browser_without_webrtc_and_a_host_without_a_websocket_lose_their_link_until_the_host_serves_one()
 {
    let mut w = World::new();
    let host = host(&mut w, false);
    let webkit = w.add(PeerKind::Browser, browser(false));
    w.run_until_true(S, "the link failed", |w| {
        w.link(webkit, host)
            .is_some_and(|l| l.reason == Some(Failure::NoTransport))
    });
    w.run_for(5 * S);
    // It never opened anything it does not have, and never linked.
    assert!(!w.connected(webkit, host));
    assert_eq!(w.websockets_opened(), 0);
    assert!(!w.offers.iter().any(|&(a, b)| a == webkit || b == webkit));
    assert_eq!(Failure::NoTransport.code(), "no_transport");
    // It does not retry in vain; a host that starts serving a WebSocket is reached at once.
    assert_eq!(w.link(webkit, host).unwrap().attempts, 1);
    w.with(host, |m, now| {
        m.update_webtransport(now, World::webtransport_service(0));
    });
    w.run_until_true(2 * S, "linked over the new WebSocket", |w| {
        w.connected(webkit, host) && w.connected(host, webkit)
    });
    assert_eq!(transport(&w, webkit, host), TransportKind::WebSocket);
}

#[test]
fn a_websocket_token_for_a_host_that_serves_none_changes_nothing() {
    let mut w = World::new();
    let host = host(&mut w, false);
    let client = w.add(PeerKind::Browser, browser(true));
    w.run_until_true(3 * S, "linked", |w| w.connected(client, host));
    assert_eq!(transport(&w, host, client), TransportKind::WebTransport);
    let from = w.nodes[client].member.server_id().unwrap();
    for token in ["0123456789abcdef0123456789abcdef", "XYZ"] {
        let frame =
            serde_json::json!({"type": "signal", "from": from, "data": {"websocket": token}});
        w.with(host, |m, now| m.handle_frame(now, &frame.to_string()))
            .expect("a signal is a well-formed frame");
    }
    w.run_for(S);
    assert_eq!(
        w.link(host, client).unwrap().reason,
        None,
        "never restarted"
    );
    assert!(w.connected(host, client), "the link is untouched");
    assert_eq!(transport(&w, host, client), TransportKind::WebTransport);
}
