//! Host rooms under the server's rules: one host, clients that see it alone, and the
//! refusals that keep the star a star.

use ackwire_signalling::rules::{DEFAULT_MAX_PEERS_PER_HOST_ROOM, Effect, Join, Room, RuleError};
use ackwire_signalling::{ErrorCode, LeaveReason, PeerId, PeerKind, Role, ServerFrame, Topology};

type R = Room<u32>;

/// A join on connection `conn` as `role`, new id `conn` (ids and connections are numbered
/// alike here).
fn join(conn: u32, role: Role) -> Join<u32> {
    Join {
        role,
        ..Join::new(
            conn,
            PeerId::from(conn),
            format!("token{conn}"),
            PeerKind::Browser,
        )
    }
}

/// Every frame `effects` send to members, with its recipients.
fn sends(effects: &[Effect<u32>]) -> Vec<(Vec<u32>, ServerFrame<'static>)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send { to, frame } if !to.is_empty() => Some((to.clone(), frame.clone())),
            _ => None,
        })
        .collect()
}

fn ids(peers: &[ackwire_signalling::PeerInfo]) -> Vec<PeerId> {
    peers.iter().map(|p| p.id).collect()
}

#[test]
fn clients_see_the_host_alone_and_the_host_sees_every_client() {
    let mut room = R::new("arena", 16);
    // Clients may come before the host: the first client makes it a host room.
    let early = room.join(join(1, Role::Client)).unwrap();
    assert!(early.peers.is_empty());
    assert_eq!(room.topology(), Topology::Host);
    let host = room.join(join(2, Role::Host)).unwrap();
    assert_eq!(ids(&host.peers), [1]);
    // The waiting client hears of the host.
    assert!(matches!(
        &sends(&host.effects)[..],
        [(to, ServerFrame::PeerJoined { peer, .. })] if to == &[1] && peer.id == 2 && peer.role == Role::Host
    ));
    for conn in 3..6 {
        let client = room.join(join(conn, Role::Client)).unwrap();
        assert_eq!(ids(&client.peers), [2], "client {conn} sees the host alone");
        assert_eq!(client.peers[0].role, Role::Host);
        // The host alone hears of it.
        assert!(matches!(
            &sends(&client.effects)[..],
            [(to, ServerFrame::PeerJoined { peer, .. })] if to == &[2] && peer.id == u64::from(conn)
        ));
    }
    assert_eq!(room.host(), Some(2));
    // Dashboards see the whole star.
    let snapshot = room.snapshot();
    assert_eq!(snapshot.topology, Topology::Host);
    assert_eq!(snapshot.peers.len(), 5);
}

#[test]
fn a_clients_join_is_one_frame_to_the_host_however_full_the_room() {
    let mut room = R::new("big", 16);
    room.join(join(1, Role::Host)).unwrap();
    for conn in 2..DEFAULT_MAX_PEERS_PER_HOST_ROOM as u32 {
        room.join(join(conn, Role::Client)).unwrap();
    }
    let last = room
        .join(join(DEFAULT_MAX_PEERS_PER_HOST_ROOM as u32, Role::Client))
        .unwrap();
    let frames = sends(&last.effects);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].0, [1]);
    assert_eq!(last.peers.len(), 1);
    let leave = room.leave(
        DEFAULT_MAX_PEERS_PER_HOST_ROOM as u64,
        &(DEFAULT_MAX_PEERS_PER_HOST_ROOM as u32),
        LeaveReason::Left,
    );
    assert_eq!(sends(&leave).len(), 1);
    assert_eq!(sends(&leave)[0].0, [1]);
}

#[test]
fn a_host_room_has_its_own_cap_far_above_a_meshs() {
    let mut room = R::new("big", 4);
    room.join(join(1, Role::Host)).unwrap();
    for conn in 2..=DEFAULT_MAX_PEERS_PER_HOST_ROOM as u32 {
        room.join(join(conn, Role::Client)).unwrap();
    }
    let err = room.join(join(9999, Role::Client)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::RoomFull);
    assert_eq!(room.len(), DEFAULT_MAX_PEERS_PER_HOST_ROOM);

    let mut small = R::new("small", 16).with_host_room_cap(2);
    small.join(join(1, Role::Host)).unwrap();
    small.join(join(2, Role::Client)).unwrap();
    assert_eq!(
        small.join(join(3, Role::Client)).unwrap_err().code(),
        ErrorCode::RoomFull
    );
}

#[test]
fn signals_between_two_clients_are_refused_and_the_host_signals_anyone() {
    let mut room = R::new("arena", 16);
    room.join(join(1, Role::Host)).unwrap();
    room.join(join(2, Role::Client)).unwrap();
    room.join(join(3, Role::Client)).unwrap();
    let err = room.relay(2, &2, 3).unwrap_err();
    assert_eq!(err, RuleError::ClientToClient(3));
    assert_eq!(err.code(), ErrorCode::ClientToClient);
    assert!(room.relay(2, &2, 1).is_ok());
    assert!(room.relay(1, &1, 3).is_ok());
}

#[test]
fn the_first_member_fixes_the_topology_and_the_other_kind_is_refused() {
    let mut mesh = R::new("mesh", 16);
    mesh.join(join(1, Role::Peer)).unwrap();
    for role in [Role::Host, Role::Client] {
        let err = mesh.join(join(2, role)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TopologyMismatch);
        assert!(err.to_string().contains("mesh room"), "{err}");
    }
    assert_eq!(mesh.len(), 1);

    let mut hosted = R::new("hosted", 16);
    hosted.join(join(1, Role::Host)).unwrap();
    let err = hosted.join(join(2, Role::Peer)).unwrap_err();
    assert_eq!(
        err,
        RuleError::TopologyMismatch {
            room: "hosted".into(),
            topology: Topology::Host,
            role: Role::Peer
        }
    );
    // Emptied, the room takes whatever its next first member is.
    hosted.leave(1, &1, LeaveReason::Left);
    hosted.join(join(3, Role::Peer)).unwrap();
    assert_eq!(hosted.topology(), Topology::Mesh);
}

#[test]
fn a_second_host_is_refused_while_the_first_is_connected_and_takes_a_dropped_hosts_seat() {
    let mut room = R::new("arena", 16);
    room.join(join(1, Role::Host)).unwrap();
    room.join(join(2, Role::Client)).unwrap();
    let err = room.join(join(3, Role::Host)).unwrap_err();
    assert_eq!(
        err,
        RuleError::HostTaken {
            room: "arena".into(),
            host: 1
        }
    );
    assert_eq!(err.code(), ErrorCode::HostTaken);
    assert_eq!(room.len(), 2);
    // The host's connection drops (it crashed): a restarted host need not wait its grace.
    room.detach(1, &1).unwrap();
    let back = room.join(join(4, Role::Host)).unwrap();
    assert_eq!(ids(&back.peers), [2]);
    assert_eq!(room.host(), Some(4));
    let to_client: Vec<ServerFrame> = sends(&back.effects)
        .into_iter()
        .filter(|(to, _)| to.contains(&2))
        .map(|(_, f)| f)
        .collect();
    assert!(matches!(
        &to_client[..],
        [
            ServerFrame::PeerLeft { peer_id: 1, reason: LeaveReason::Lost, .. },
            ServerFrame::PeerJoined { peer, .. },
        ] if peer.id == 4
    ));
}

#[test]
fn the_hosts_leave_is_told_to_every_client_and_the_room_waits_for_a_host() {
    let mut room = R::new("arena", 16);
    room.join(join(1, Role::Host)).unwrap();
    room.join(join(2, Role::Client)).unwrap();
    room.join(join(3, Role::Client)).unwrap();
    let left = room.leave(1, &1, LeaveReason::Left);
    let frames = sends(&left);
    assert_eq!(frames.len(), 1);
    let (mut to, frame) = frames[0].clone();
    to.sort_unstable();
    assert_eq!(to, [2, 3]);
    assert!(matches!(
        frame,
        ServerFrame::PeerLeft {
            peer_id: 1,
            reason: LeaveReason::Left,
            ..
        }
    ));
    assert_eq!(room.host(), None);
    assert_eq!(room.topology(), Topology::Host);
    // A client joining meanwhile sees nobody, and waits.
    assert!(room.join(join(4, Role::Client)).unwrap().peers.is_empty());
    let host = room.join(join(5, Role::Host)).unwrap();
    assert_eq!(ids(&host.peers), [2, 3, 4]);
}

#[test]
fn places_taken_answers_before_a_reservation_as_the_join_would() {
    let mut room = R::new("arena", 16).with_host_room_cap(3);
    let host = Join {
        instance: Some("run-1".into()),
        ..join(1, Role::Host)
    };
    room.join(host).unwrap();
    room.join(join(2, Role::Client)).unwrap();
    room.join(join(3, Role::Client)).unwrap();
    assert_eq!(
        room.places_taken(Role::Peer, None, None)
            .unwrap_err()
            .code(),
        ErrorCode::TopologyMismatch
    );
    assert_eq!(
        room.places_taken(Role::Host, None, None).unwrap_err(),
        RuleError::HostTaken {
            room: "arena".into(),
            host: 1
        }
    );
    assert_eq!(room.places_taken(Role::Client, None, None), Ok(vec![]));
    // The host's own program takes its place back; a dropped host's seat is free.
    assert_eq!(
        room.places_taken(Role::Host, Some("run-1"), None),
        Ok(vec![1])
    );
    room.detach(1, &1).unwrap();
    assert_eq!(
        room.places_taken(Role::Host, Some("run-2"), None),
        Ok(vec![1])
    );
    // ...and its place in the full room with it.
    assert_eq!(ids(&room.join(join(4, Role::Host)).unwrap().peers), [2, 3]);
    assert_eq!(room.len(), 3);
}

/// A host join with the identity its ticket names.
fn host_of(conn: u32, identity: &str) -> Join<u32> {
    Join {
        identity: Some(identity.into()),
        ..join(conn, Role::Host)
    }
}

#[test]
fn a_dropped_hosts_seat_goes_back_to_its_identity_alone_until_its_grace_ends() {
    let mut room = R::new("arena", 16);
    room.join(host_of(1, "host-a")).unwrap();
    room.join(join(2, Role::Client)).unwrap();
    room.detach(1, &1).unwrap();
    // A stranger holding a host ticket of its own waits for the blip: no seat.
    let refused = RuleError::HostTaken {
        room: "arena".into(),
        host: 1,
    };
    assert_eq!(room.join(host_of(3, "stranger")).unwrap_err(), refused);
    assert_eq!(
        room.places_taken(Role::Host, None, Some("stranger")),
        Err(refused.clone())
    );
    // Nor does a host without an identity (a server whose tickets do not cover hosts).
    assert_eq!(room.join(join(4, Role::Host)).unwrap_err(), refused);
    assert_eq!(room.host(), Some(1));
    assert_eq!(room.len(), 2);
    // The same identity, restarted, takes it back at once.
    assert_eq!(
        room.places_taken(Role::Host, Some("run-2"), Some("host-a")),
        Ok(vec![1])
    );
    let back = room.join(host_of(5, "host-a")).unwrap();
    assert_eq!(ids(&back.peers), [2]);
    assert_eq!(room.host(), Some(5));
    // Once a named host's grace is over, the seat is free for whoever the backend lets host.
    let generation = room.detach(5, &5).unwrap();
    assert!(room.join(host_of(6, "host-b")).is_err());
    room.expire(5, generation);
    assert_eq!(room.host(), None);
    room.join(host_of(6, "host-b")).unwrap();
    assert_eq!(room.host(), Some(6));
}
