//! Host rooms in virtual time: clients link to the host alone, hear when it leaves or is
//! lost, wait, and link again when a host comes back, without joining again; and the
//! refusals that keep a room a star.

use crate::world;

use std::time::Duration;

use ackwire_room::member::{Event, GoneReason, SignallingState};
use ackwire_room::signalling::{ErrorCode, PeerKind, Role};
use world::World;

const S: Duration = Duration::from_secs(1);

fn as_role(role: Role) -> impl FnOnce(&mut ackwire_room::member::MemberConfig) {
    move |c| c.role = role
}

/// Member `n`'s `Joined` events: a member that never joins again has one.
fn joins(w: &World, n: usize) -> usize {
    w.nodes[n]
        .events
        .iter()
        .filter(|e| matches!(e, Event::Joined { .. }))
        .count()
}

/// Whether host `h` and each client are linked, each client to the host alone.
fn star(w: &World, h: usize, clients: &[usize]) -> bool {
    w.links(h).len() == clients.len()
        && clients
            .iter()
            .all(|&c| w.links(c).len() == 1 && w.connected(c, h) && w.connected(h, c))
}

/// Host `host`'s process dies: its signalling socket drops, and nothing more reaches
/// `clients` from it.
fn crash(w: &mut World, host: usize, clients: &[usize]) {
    w.drop_socket(host);
    for &c in clients {
        w.set_blackout(host, c, true);
    }
}

#[test]
fn clients_link_to_the_host_alone_over_webrtc_and_udp_and_the_host_relays() {
    let mut w = World::new();
    let host = w.add(PeerKind::Native, as_role(Role::Host));
    let clients = [
        w.add(PeerKind::Browser, as_role(Role::Client)),
        w.add(PeerKind::Browser, as_role(Role::Client)),
        w.add(PeerKind::Native, as_role(Role::Client)),
    ];
    w.run_until_true(3 * S, "a star", |w| star(w, host, &clients));
    // Nobody else was ever offered to: every negotiation had the host at one end.
    assert!(w.offers.iter().all(|&(a, b)| a == host || b == host));
    for &c in &clients {
        assert_eq!(w.nodes[c].member.role(), Role::Client);
        let host_id = w.nodes[c].member.host().expect("a client knows its host");
        assert_eq!(host_id, w.peer(c, host));
        assert!(w.nodes[c].events.iter().any(|e| matches!(
            e,
            Event::PeerJoined {
                role: Role::Host,
                ..
            }
        )));
    }
    // The native client reaches the native host over raw UDP, the browsers over WebRTC.
    assert_eq!(
        w.link(clients[2], host).unwrap().transport,
        ackwire_room::member::TransportKind::Udp
    );
    // A client speaks to the host; the host (the game's server) relays to the others.
    assert_eq!(w.say(clients[0], "hi all"), 1);
    w.run_until_true(S, "the host heard", |w| w.chats(host, "hi all") == 1);
    assert_eq!(w.say(host, "hi all"), 3);
    w.run_for(S);
    for &c in &clients {
        assert_eq!(w.chats(c, "hi all"), 1, "client {c}, exactly once");
    }
    assert_eq!(w.chats(host, "hi all"), 1);
}

#[test]
fn clients_hear_the_host_left_wait_and_link_to_the_next_host_without_joining_again() {
    let mut w = World::new();
    let host = w.add(PeerKind::Native, as_role(Role::Host));
    let clients = [
        w.add(PeerKind::Browser, as_role(Role::Client)),
        w.add(PeerKind::Native, as_role(Role::Client)),
    ];
    w.run_until_true(3 * S, "a star", |w| star(w, host, &clients));
    let now = w.now;
    w.nodes[host].member.close(now);
    w.run_for(2 * S);
    for &c in &clients {
        assert!(
            w.nodes[c].events.iter().any(|e| matches!(
                e,
                Event::PeerLeft {
                    role: Role::Host,
                    reason: GoneReason::Left,
                    ..
                }
            )),
            "client {c} heard the host left"
        );
        assert!(w.links(c).is_empty());
        assert_eq!(w.nodes[c].member.host(), None);
        assert_eq!(
            w.nodes[c].member.signalling_state(),
            SignallingState::Joined
        );
    }
    // The host comes back (its instance again): the clients link without a new join.
    let back = w.add(PeerKind::Native, |c| {
        c.role = Role::Host;
        c.instance = "inst0".into();
    });
    w.run_until_true(3 * S, "a star again", |w| star(w, back, &clients));
    for &c in &clients {
        assert_eq!(joins(&w, c), 1, "client {c} joined once");
    }
}

#[test]
fn clients_hear_they_lost_the_host_and_a_restarted_host_takes_its_seat_at_once() {
    let mut w = World::new();
    let host = w.add(PeerKind::Native, as_role(Role::Host));
    let clients = [
        w.add(PeerKind::Browser, as_role(Role::Client)),
        w.add(PeerKind::Browser, as_role(Role::Client)),
    ];
    w.run_until_true(3 * S, "a star", |w| star(w, host, &clients));
    // The host's process dies: its socket drops; inside the server's grace a new process
    // (another instance) joins as host and takes the seat.
    crash(&mut w, host, &clients);
    let restarted = w.add(PeerKind::Native, as_role(Role::Host));
    w.run_until_true(3 * S, "a star with the new host", |w| {
        star(w, restarted, &clients)
    });
    for &c in &clients {
        assert!(w.nodes[c].events.iter().any(|e| matches!(
            e,
            Event::PeerLeft {
                role: Role::Host,
                reason: GoneReason::Lost,
                ..
            }
        )));
        assert_eq!(joins(&w, c), 1);
    }
    // The old process, back on its feet, finds its seat taken and stops: a room has one host.
    let refusals = |w: &World| {
        w.nodes[host]
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Refused { code, .. } => Some(*code),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    w.run_until_true(10 * S, "the old host refused", |w| {
        refusals(w).contains(&ErrorCode::HostTaken)
    });
    assert_eq!(
        w.nodes[host].member.signalling_state(),
        SignallingState::Closed
    );
    assert!(star(&w, restarted, &clients));
}

#[test]
fn a_second_host_and_a_mesh_peer_are_refused_for_good_and_the_star_is_untouched() {
    let mut w = World::new();
    let host = w.add(PeerKind::Native, as_role(Role::Host));
    let client = w.add(PeerKind::Browser, as_role(Role::Client));
    w.run_until_true(3 * S, "a star", |w| star(w, host, &[client]));
    let second = w.add(PeerKind::Native, as_role(Role::Host));
    let peer = w.add(PeerKind::Browser, as_role(Role::Peer));
    w.run_for(2 * S);
    for (n, code) in [
        (second, ErrorCode::HostTaken),
        (peer, ErrorCode::TopologyMismatch),
    ] {
        assert!(
            w.nodes[n]
                .events
                .iter()
                .any(|e| matches!(e, Event::Refused { code: c, .. } if *c == code)),
            "{code}"
        );
        assert_eq!(
            w.nodes[n].member.signalling_state(),
            SignallingState::Closed
        );
        assert!(w.links(n).is_empty());
        assert_eq!(joins(&w, n), 0);
    }
    assert!(star(&w, host, &[client]));
    assert_eq!(w.links(client).len(), 1);
}

#[test]
fn a_host_with_many_clients_reports_its_links_in_frames_the_server_takes() {
    let mut w = World::new();
    let host = w.add(PeerKind::Native, as_role(Role::Host));
    let clients: Vec<usize> = (0..40)
        .map(|i| {
            let kind = if i % 4 == 0 {
                PeerKind::Native
            } else {
                PeerKind::Browser
            };
            w.add(kind, as_role(Role::Client))
        })
        .collect();
    w.run_until_true(10 * S, "a star of 40", |w| star(w, host, &clients));
    w.run_for(2 * S);
    let before = w.nodes[host].stats_sent.len();
    w.run_for(S);
    let frames = &w.nodes[host].stats_sent[before..];
    // One period's report: every link once, in frames of at most 16 links, each far under
    // the server's default 16 KiB message cap.
    assert_eq!(frames.len(), 3, "40 links in frames of 16");
    let mut peers: Vec<u64> = Vec::new();
    for frame in frames {
        let links = frame.as_array().expect("a list of links");
        assert!(links.len() <= ackwire_room::member::REPORT_LINKS_PER_FRAME);
        assert!(
            frame.to_string().len() < 16 * 1024,
            "{} bytes",
            frame.to_string().len()
        );
        peers.extend(links.iter().map(|l| l["peer"].as_u64().unwrap()));
    }
    peers.sort_unstable();
    peers.dedup();
    assert_eq!(peers.len(), 40);
}

/// A host room member named `identity` by the game's backend (the test server reads a ticket
/// as the identity it names).
fn named(role: Role, identity: &str) -> impl FnOnce(&mut ackwire_room::member::MemberConfig) {
    let identity = identity.to_owned();
    move |c| {
        c.role = role;
        c.ticket = Some(identity);
    }
}

/// Member `n`'s `HostRefused` events, as (identity, expected).
fn hosts_refused(w: &World, n: usize) -> Vec<(Option<String>, String)> {
    w.nodes[n]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::HostRefused {
                identity, expected, ..
            } => Some((identity.clone(), expected.clone())),
            _ => None,
        })
        .collect()
}

/// A star: a native host named `host-a` by the backend, a browser and a native client linked
/// to it.
fn star_of_host_a() -> (World, usize, [usize; 2]) {
    let mut w = World::new();
    let host = w.add(PeerKind::Native, named(Role::Host, "host-a"));
    let clients = [
        w.add(PeerKind::Browser, as_role(Role::Client)),
        w.add(PeerKind::Native, as_role(Role::Client)),
    ];
    w.run_until_true(3 * S, "a star", |w| star(w, host, &clients));
    (w, host, clients)
}

#[test]
fn a_client_pins_its_first_hosts_identity_and_links_with_no_host_of_another() {
    let (mut w, host, clients) = star_of_host_a();
    for &c in &clients {
        assert!(w.nodes[c].events.iter().any(|e| matches!(
            e,
            Event::PeerJoined { role: Role::Host, identity: Some(id), .. } if id == "host-a"
        )));
    }
    // The host leaves for good; the seat is free, and another identity takes it, claiming the
    // old host's program instance besides.
    let now = w.now;
    w.nodes[host].member.close(now);
    w.run_for(2 * S);
    let stranger = w.add(PeerKind::Native, |c| {
        named(Role::Host, "host-b")(c);
        c.instance = "inst0".into();
    });
    w.run_until_true(3 * S, "every client refused the stranger", |w| {
        clients.iter().all(|&c| !hosts_refused(w, c).is_empty())
    });
    w.run_for(3 * S);
    for &c in &clients {
        assert_eq!(
            hosts_refused(&w, c),
            [(Some("host-b".to_owned()), "host-a".to_owned())],
            "client {c}: told once"
        );
        assert!(w.links(c).is_empty(), "client {c} linked with the stranger");
        assert_eq!(w.nodes[c].member.host(), None);
    }
    assert!(w.links(stranger).iter().all(|l| l.stats.is_none()));
    // The stranger goes; host-a comes back (a new program): the clients link with it.
    let now = w.now;
    w.nodes[stranger].member.close(now);
    w.run_for(2 * S);
    let back = w.add(PeerKind::Native, named(Role::Host, "host-a"));
    w.run_until_true(3 * S, "a star with host-a again", |w| {
        star(w, back, &clients)
    });
    for &c in &clients {
        assert_eq!(joins(&w, c), 1, "client {c} joined once");
    }
}

#[test]
fn a_client_configured_with_its_hosts_identity_links_with_that_host_alone() {
    let mut w = World::new();
    let pinned = |c: &mut ackwire_room::member::MemberConfig| {
        c.role = Role::Client;
        c.host_identity = Some("host-a".into());
    };
    let client = w.add(PeerKind::Browser, pinned);
    // The first host to join is not the one the client's backend named, and one without an
    // identity is no better: no link, each said once.
    let wrong = w.add(PeerKind::Native, named(Role::Host, "host-b"));
    w.run_until_true(3 * S, "the wrong host refused", |w| {
        !hosts_refused(w, client).is_empty()
    });
    w.run_for(2 * S);
    assert!(w.links(client).is_empty());
    let now = w.now;
    w.nodes[wrong].member.close(now);
    w.run_for(2 * S);
    let anonymous = w.add(PeerKind::Native, as_role(Role::Host));
    w.run_until_true(3 * S, "the anonymous host refused", |w| {
        hosts_refused(w, client).len() == 2
    });
    assert_eq!(
        hosts_refused(&w, client),
        [
            (Some("host-b".to_owned()), "host-a".to_owned()),
            (None, "host-a".to_owned())
        ]
    );
    assert!(w.links(client).is_empty());
    let now = w.now;
    w.nodes[anonymous].member.close(now);
    w.run_for(2 * S);
    let right = w.add(PeerKind::Native, named(Role::Host, "host-a"));
    w.run_until_true(3 * S, "linked with host-a", |w| star(w, right, &[client]));
}

#[test]
fn a_named_hosts_restarted_program_replaces_it_and_clients_drop_the_old_link_at_once() {
    let (mut w, host, clients) = star_of_host_a();
    // The host's process dies and a new one of the same identity joins (another instance):
    // the server replaces the old, and the clients link with the new one with nothing left
    // of the old link (not kept for the 20 s a link of a replaced peer waits to be renamed).
    crash(&mut w, host, &clients);
    let restarted = w.add(PeerKind::Native, named(Role::Host, "host-a"));
    w.run_until_true(3 * S, "a star with the restarted host", |w| {
        star(w, restarted, &clients)
    });
    for &c in &clients {
        assert!(w.nodes[c].events.iter().any(|e| matches!(
            e,
            Event::PeerLeft {
                role: Role::Host,
                reason: GoneReason::Lost,
                ..
            }
        )));
        assert!(hosts_refused(&w, c).is_empty());
        assert_eq!(joins(&w, c), 1);
    }
}
