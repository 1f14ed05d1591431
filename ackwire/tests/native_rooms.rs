//! The `Room` API between native programs: two rooms in one process join a real signal
//! server on loopback and talk over real UDP sockets, through the core's emulator where a
//! test wants loss. What a game sees: joins, links, messages on every channel kind with each
//! kind's promise, refusals with their reasons, and typed errors for bad sends.
#![cfg(all(feature = "rooms", not(target_arch = "wasm32")))]

mod common;

use common::{joined, linked, server, wait_for};

use std::time::{Duration, Instant};

use ackwire::{
    App, ChannelKind, Emulation, EmulatorConfig, ErrorCode, Event, GoneReason, JoinError,
    MemberError, PeerId, Room, RoomConfig, SendError, SignallingState,
};
use tokio::time::timeout;

/// Every kind of channel: 0 unreliable, 1 sequenced, 2 reliable-ordered, 3 reliable-unordered.
fn app() -> App {
    App::new(
        "rooms-test",
        1,
        [
            ChannelKind::Unreliable,
            ChannelKind::UnreliableSequenced,
            ChannelKind::ReliableOrdered,
            ChannelKind::ReliableUnordered,
        ],
    )
}

fn config(loss: f64) -> RoomConfig {
    let mut config = RoomConfig::new(app());
    config.native.bind = "127.0.0.1:0".parse().unwrap();
    if loss > 0.0 {
        config.emulation = Some(Emulation {
            config: EmulatorConfig::default().with_loss_percent(loss),
            seed: 42,
            impair_after: Duration::ZERO,
        });
    }
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_programs_exchange_their_own_messages_with_each_channels_promise_under_loss() {
    let server = server().await;
    let url = format!("http://{}/room/exchange", server.addr);
    let mut a = Room::join(&url, config(10.0)).unwrap();
    let mut b = Room::join(&url, config(10.0)).unwrap();
    let to_b = linked(&mut a).await.peer;
    let from_a = linked(&mut b).await.peer;
    let count = 200u32;
    for i in 0..count {
        let bytes = i.to_le_bytes();
        a.send(to_b, 0, &bytes).unwrap();
        a.send_latest(to_b, 1, &bytes).unwrap();
        a.send(to_b, 2, &bytes).unwrap();
        a.send(to_b, 3, &bytes).unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut got: [Vec<u32>; 4] = Default::default();
    timeout(Duration::from_secs(30), async {
        while got[2].len() < count as usize || got[3].len() < count as usize {
            if let Event::Message {
                peer,
                channel,
                bytes,
            } = b.next_event().await.unwrap()
            {
                assert_eq!(peer, from_a);
                got[usize::from(channel)].push(u32::from_le_bytes(bytes.try_into().unwrap()));
            }
        }
    })
    .await
    .expect("every reliable message within 30 s");
    let all: Vec<u32> = (0..count).collect();
    assert_eq!(got[2], all, "reliable-ordered: each once, in order");
    got[3].sort();
    assert_eq!(got[3], all, "reliable-unordered: each once");
    assert!(
        got[1].windows(2).all(|w| w[0] < w[1]),
        "sequenced: never older after newer"
    );
    let mut unreliable = got[0].clone();
    unreliable.sort();
    unreliable.dedup();
    assert_eq!(unreliable.len(), got[0].len(), "unreliable: never twice");
    assert!(
        got[0].len() < count as usize,
        "10 % loss each way loses some"
    );
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_that_plays_another_application_refuses_the_join_with_its_reason() {
    let server = server().await;
    let url = format!("http://{}/room/mismatch", server.addr);
    let mut a = Room::join(&url, config(0.0)).unwrap();
    joined(&mut a).await;
    let mut other = RoomConfig::new(App::new("another-game", 3, [ChannelKind::ReliableOrdered]));
    other.native.bind = "127.0.0.1:0".parse().unwrap();
    let mut b = Room::join(&url, other).unwrap();
    let (code, message) = wait_for(&mut b, "a refusal", |e| match e {
        Event::Refused {
            code,
            message,
            fatal,
        } => {
            assert!(fatal, "another application: no retry cures it");
            Some((code, message))
        }
        _ => None,
    })
    .await;
    assert_eq!(code, ErrorCode::AppMismatch);
    assert!(
        message.contains("rooms-test v1") && message.contains("another-game v3"),
        "{message}"
    );
    wait_for(&mut b, "signalling closed", |e| match e {
        Event::Signalling {
            state: SignallingState::Closed,
            ..
        } => Some(()),
        _ => None,
    })
    .await;
    assert!(a.links().is_empty() && b.links().is_empty(), "never linked");
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sends_get_typed_errors_and_send_nothing() {
    let server = server().await;
    let url = format!("http://{}/room/errors", server.addr);
    let mut a = Room::join(&url, config(0.0)).unwrap();
    let mut b = Room::join(&url, config(0.0)).unwrap();
    let to_b = linked(&mut a).await.peer;
    linked(&mut b).await;
    let max = a.max_message_size(0).unwrap();
    assert_eq!(
        a.send(PeerId(77), 2, b"x"),
        Err(SendError::UnknownPeer(PeerId(77)))
    );
    assert_eq!(a.send(to_b, 4, b"x"), Err(SendError::UnknownChannel(4)));
    assert_eq!(
        a.send(to_b, 0, &vec![0; max + 1]),
        Err(SendError::TooLarge {
            channel: 0,
            len: max + 1,
            max
        })
    );
    assert_eq!(
        a.send_latest(to_b, 2, b"x"),
        Err(SendError::Reliable { channel: 2 })
    );
    // Nothing of those arrived; the next good one does, first.
    a.send(to_b, 2, b"good").unwrap();
    let first = wait_for(&mut b, "a message", |e| match e {
        Event::Message { channel, bytes, .. } => Some((channel, bytes)),
        _ => None,
    })
    .await;
    assert_eq!(first, (2, b"good".to_vec()));
    // A peer that left: unknown.
    b.close().await;
    wait_for(&mut a, "b leaving", |e| {
        matches!(e, Event::PeerLeft { .. }).then_some(())
    })
    .await;
    assert_eq!(a.send(to_b, 2, b"x"), Err(SendError::UnknownPeer(to_b)));
    a.close().await;
    assert_eq!(a.send(to_b, 2, b"x"), Err(SendError::Closed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encryption_is_never_silently_off_a_datagram_too_small_for_the_tag_is_refused_at_join() {
    let server = server().await;
    let url = format!("http://{}/room/small", server.addr);
    let min = ackwire_core_min();
    let mut small = config(0.0);
    small.connection.max_datagram_size = min - 1;
    match Room::join(&url, small.clone()) {
        Err(JoinError::Config(MemberError::DatagramTooSmall { size, min: said })) => {
            assert_eq!((size, said), (min - 1, min));
        }
        other => panic!("{other:?}"),
    }
    // Plaintext only when asked for.
    small.native.encrypt = false;
    let mut room = Room::join(&url, small).unwrap();
    room.close().await;
}

/// The smallest datagram an encrypted link takes: a full fragment and the 16-byte tag.
fn ackwire_core_min() -> usize {
    ackwire_core::MIN_PROTECTED_DATAGRAM_SIZE
}

#[test]
fn a_game_loop_without_a_runtime_joins_and_polls() {
    // A plain thread, as a game's main loop: the room runs a runtime of its own.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(server());
    let url = format!("http://{}/room/loop", server.addr);
    let room = Room::join(&url, config(0.0)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let joined = loop {
        if let Some(Event::Joined { server_id, .. }) = room.poll_event() {
            break server_id;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not joined within 10 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(room.server_id(), Some(joined));
    drop(room);
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_that_stops_taking_events_holds_its_senders_back_and_loses_nothing() {
    let server = server().await;
    let url = format!("http://{}/room/budget", server.addr);
    let mut a = Room::join(&url, config(0.0)).unwrap();
    let mut slow = config(0.0);
    slow.native.event_budget = 16 * 1024;
    let mut b = Room::join(&url, slow).unwrap();
    let to_b = linked(&mut a).await.peer;
    linked(&mut b).await;
    // b stops taking events; a sends more than b's budget and the room's window hold.
    let count = 1500u32;
    let payload = |i: u32| {
        let mut bytes = vec![7u8; 64];
        bytes[..4].copy_from_slice(&i.to_le_bytes());
        bytes
    };
    // 250 messages a second: well within what the link carries, so only b's full budget
    // (its task stops reading, so nothing is acknowledged) can hold a back.
    let mut next = 0;
    let mut pushed_back = false;
    while !pushed_back && next < count {
        match a.send(to_b, 2, &payload(next)) {
            Ok(()) => next += 1,
            Err(SendError::Full { .. }) => pushed_back = true,
            Err(e) => panic!("{e}"),
        }
        if next % 5 == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert!(pushed_back, "a was never held back: all {count} taken");
    // b catches up: every message arrives once, in order, and a sends the rest.
    let mut got = Vec::new();
    timeout(Duration::from_secs(60), async {
        while got.len() < count as usize {
            while next < count && a.send(to_b, 2, &payload(next)).is_ok() {
                next += 1;
            }
            let event = tokio::time::timeout(Duration::from_millis(50), b.next_event()).await;
            if let Ok(Some(Event::Message {
                channel: 2, bytes, ..
            })) = event
            {
                assert_eq!(bytes.len(), 64);
                got.push(u32::from_le_bytes(bytes[..4].try_into().unwrap()));
            }
        }
    })
    .await
    .expect("everything within 60 s once b reads");
    assert_eq!(got, (0..count).collect::<Vec<_>>(), "each once, in order");
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_programs_read_one_room_clock_over_real_udp_at_ten_percent_loss_and_20_ms_jitter() {
    let server = server().await;
    let url = format!("http://{}/room/clock", server.addr);
    // Every datagram of A's, both ways: 25 ± 20 ms late, 10 % lost.
    let mut impaired = config(0.0);
    impaired.emulation = Some(Emulation {
        config: EmulatorConfig::default()
            .with_loss_percent(10.0)
            .with_latency(Duration::from_millis(25))
            .with_jitter(Duration::from_millis(20)),
        seed: 7,
        impair_after: Duration::ZERO,
    });
    let mut a = Room::join(&url, impaired).unwrap();
    let mut b = Room::join(&url, config(0.0)).unwrap();
    linked(&mut a).await;
    linked(&mut b).await;
    // The member the server numbered first reads its own clock; the other estimates it.
    let (exact, estimated) = if a.server_id() < b.server_id() {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    let mut errors = Vec::new();
    let mut first_synced = None;
    let start = tokio::time::Instant::now();
    while errors.len() < 120 {
        tick.tick().await;
        while exact.poll_event().is_some() || estimated.poll_event().is_some() {}
        let truth = exact.clock().expect("its own clock");
        assert_eq!(truth.uncertainty, Duration::ZERO);
        let Some(reading) = estimated.clock().filter(|r| r.synced) else {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "synced within 10 s"
            );
            continue;
        };
        first_synced.get_or_insert(start.elapsed());
        let error = reading.time.abs_diff(truth.time);
        // The two reads are a few µs apart: 1 ms covers a thread switch between them.
        assert!(
            error <= reading.uncertainty + Duration::from_millis(1),
            "off by {error:?}, outside its bound: {reading:?}"
        );
        errors.push(error);
    }
    errors.sort();
    let (median, worst) = (errors[errors.len() / 2], errors[errors.len() - 1]);
    println!(
        "room clock over real UDP, 10 % loss, 25 ± 20 ms each way: synced {:?} after the link, \
         error median {median:?}, worst {worst:?} (120 reads, 6 s)",
        first_synced.unwrap()
    );
    assert!(worst <= Duration::from_millis(20), "worst error {worst:?}");
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_that_cannot_await_leaves_at_once_and_its_peer_hears_it_left() {
    let server = server().await;
    let url = format!("http://{}/room/leave", server.addr);
    let mut a = Room::join(&url, config(0.0)).unwrap();
    let mut b = Room::join(&url, config(0.0)).unwrap();
    let to_b = linked(&mut a).await.peer;
    linked(&mut b).await;
    a.leave();
    assert_eq!(
        a.send(to_b, 2, b"late"),
        Err(SendError::Closed),
        "refused at once"
    );
    let reason = wait_for(&mut b, "a's leaving", |e| match e {
        Event::PeerLeft { reason, .. } => Some(reason),
        _ => None,
    })
    .await;
    assert_eq!(reason, GoneReason::Left, "said goodbye, not lost");
    // A's room finishes by itself: its events end, and it says it is closed.
    timeout(Duration::from_secs(5), async {
        while a.next_event().await.is_some() {}
    })
    .await
    .expect("a's room closed within 5 s");
    assert!(a.is_closed());
    assert!(!b.is_closed());
    b.leave();
    drop(b); // dropped while leaving: it finishes on its own
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_can_be_awaited_until_joined_or_refused_for_good_and_its_events_stay() {
    let server = server().await;
    let url = format!("http://{}/room/awaited", server.addr);
    let mut a = Room::join(&url, config(0.0)).unwrap();
    let id = timeout(Duration::from_secs(10), a.joined())
        .await
        .expect("joined within 10 s")
        .expect("joined");
    assert_eq!(a.server_id(), Some(id));
    assert_eq!(a.joined().await.unwrap(), id, "joined: at once, again");
    // The Joined event is still there for the game's loop.
    let joined = std::iter::from_fn(|| a.poll_event()).find_map(|e| match e {
        Event::Joined { server_id, .. } => Some(server_id),
        _ => None,
    });
    assert_eq!(joined, Some(id));

    // A room playing another game: no retry can cure that.
    let mut other = RoomConfig::new(App::new("another-game", 3, [ChannelKind::ReliableOrdered]));
    other.native.bind = "127.0.0.1:0".parse().unwrap();
    let b = Room::join(&url, other).unwrap();
    let refused = timeout(Duration::from_secs(10), b.joined())
        .await
        .expect("an answer within 10 s");
    assert!(
        matches!(
            refused,
            Err(JoinError::Refused {
                code: ErrorCode::AppMismatch,
                ..
            })
        ),
        "{refused:?}"
    );
    // And a room left says so, whether its welcome came before the leave or never: a left
    // room never looks joined.
    let mut c = Room::join(&url, config(0.0)).unwrap();
    c.leave();
    assert!(matches!(c.joined().await, Err(JoinError::Left)));
    a.leave();
    assert!(matches!(a.joined().await, Err(JoinError::Left)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_input_stamped_with_input_tick_reaches_the_host_before_that_tick() {
    use ackwire::Role;
    use ackwire::sync::Ticks;
    let server = server().await;
    let url = format!("http://{}/room/input-ticks", server.addr);
    let ticks = Ticks::new(Duration::from_millis(20)).unwrap();
    let mut host = Room::join(&url, config(0.0).with_role(Role::Host)).unwrap();
    let mut client = Room::join(&url, config(0.0).with_role(Role::Client)).unwrap();
    assert_eq!(client.input_tick(ticks), None, "no host yet");
    let to_host = linked(&mut client).await.peer;
    linked(&mut host).await;
    assert_eq!(host.input_tick(ticks), None, "a host stamps nothing");
    // Synced within half a second of the link: then every input is stamped.
    let stamped = timeout(Duration::from_secs(5), async {
        loop {
            if let Some(tick) = client.input_tick(ticks) {
                return tick;
            }
            while client.poll_event().is_some() {}
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the host's clock synced within 5 s");
    assert!(
        stamped > ticks.at(client.clock().unwrap().time),
        "ahead of the host's tick"
    );
    // 100 inputs, 5 ms apart, each stamped as it leaves; the host notes its own tick as each
    // arrives. Both rooms run in this process, so one `Instant` also times each input's way
    // from the client's send to the host's loop taking it.
    let mut sent = Vec::new();
    let mut arrived = Vec::new();
    let mut every = tokio::time::interval(Duration::from_millis(5));
    timeout(Duration::from_secs(20), async {
        while arrived.len() < 100 {
            tokio::select! {
                _ = every.tick(), if sent.len() < 100 => {
                    // The room's clock read first: the host's clock is at most its time plus
                    // its uncertainty now, so an input taken sooner than `allowance` after
                    // this moment is taken before its tick starts, whatever else held it.
                    let left = Instant::now();
                    let reading = client.clock().expect("synced");
                    let tick = client.input_tick(ticks).expect("stays synced");
                    let allowance = ticks
                        .start(tick)
                        .saturating_sub(reading.time + reading.uncertainty);
                    let mut bytes = tick.to_le_bytes().to_vec();
                    bytes.extend_from_slice(&(sent.len() as u64).to_le_bytes());
                    client.send(to_host, 2, &bytes).unwrap();
                    sent.push((left, allowance));
                    while client.poll_event().is_some() {}
                }
                event = host.next_event() => {
                    if let Some(Event::Message { bytes, .. }) = event {
                        let tick = u64::from_le_bytes(bytes[..8].try_into().unwrap());
                        let index = u64::from_le_bytes(bytes[8..].try_into().unwrap()) as usize;
                        let at = ticks.at(host.clock().unwrap().time);
                        // Timed after the host's clock is read: the way is at least this long.
                        let (left, allowance) = sent[index];
                        arrived.push((tick, at, left.elapsed() < allowance));
                    }
                }
            }
        }
    })
    .await
    .expect("every input within 20 s");
    // Each came before its tick, and not needlessly early: on loopback the margin is the
    // wait for the link's next packet (within a pacing interval, 100 ms in bad mode: 5
    // ticks) less the time the input waited, and a tick's rounding. The host's tick is read
    // when this loop takes the message, not when its datagram arrived: on a loaded machine
    // (CI runs three test binaries on two cores) a thread of either room or of this loop
    // may stall for longer than an input's whole margin (once, 15 inputs in a row, 2026-12-01),
    // so an input may come late only if its way took longer than its stamp allowed, and most
    // must not take that long.
    let leads: Vec<u64> = arrived
        .iter()
        .map(|&(stamped, at, _)| stamped.saturating_sub(at))
        .collect();
    let in_time = arrived.iter().filter(|&&(_, _, in_time)| in_time).count();
    println!(
        "inputs' lead over the host's tick at arrival (20 ms ticks; {in_time} of 100 taken \
         within their stamp's allowance): {leads:?}"
    );
    for &(stamped, at, in_time) in &arrived {
        assert!(
            stamped > at || !in_time,
            "input for tick {stamped} came in tick {at}, taken within its stamp's allowance"
        );
        assert!(
            stamped <= at + 7,
            "input for tick {stamped} came already in tick {at}"
        );
    }
    assert!(
        in_time >= 50,
        "only {in_time} of 100 inputs taken within their stamp's allowance: {leads:?}"
    );
    // Counted from the moment it is asked (not the core's last step): applied within the
    // link's next packet and a tick or two of margin, not a pacing interval later.
    let mut sorted = leads.clone();
    sorted.sort_unstable();
    assert!(
        sorted[sorted.len() / 2] <= 4,
        "median lead {} ticks",
        sorted[sorted.len() / 2]
    );
    host.close().await;
    client.close().await;
}
