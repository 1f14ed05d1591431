//! Channels, reliable messages, packing and fragmentation between two connected peers.

mod pair;

use std::time::Duration;

use ackwire_core::emulator::EmulatorConfig;
use ackwire_core::frame::{Frames, MAX_MESSAGE_SIZE, RELIABLE_WINDOW};
use ackwire_core::wire::Packet;
use ackwire_core::{CONNECTION_TAG_LEN, ChannelKind, ConnectionConfig, ConnectionEvent, SendError};
use pair::ConnPair;

const MS: Duration = Duration::from_millis(1);

fn all_kinds() -> ConnectionConfig {
    ConnectionConfig::default().with_channels(vec![
        ChannelKind::UnreliableSequenced,
        ChannelKind::ReliableOrdered,
        ChannelKind::ReliableUnordered,
        ChannelKind::Unreliable,
    ])
}

fn lossy(loss_percent: f64) -> EmulatorConfig {
    EmulatorConfig::default()
        .with_latency(40 * MS)
        .with_jitter(20 * MS)
        .with_loss_percent(loss_percent)
        .with_reorder_percent(5.0)
        .with_reorder_delay(30 * MS)
        .with_duplicate_percent(5.0)
}

/// Sends `count` numbered messages on `channel`, one every `gap`, over a lossy link; returns
/// the numbers the server received, in arrival order, and the client's resend count.
fn numbered(channel: u8, loss: f64, count: u32, gap: Duration, seed: u64) -> (Vec<u32>, u64) {
    let mut pair = ConnPair::new(all_kinds(), lossy(loss), seed);
    pair.connect();
    for i in 0..count {
        pair.client.send(channel, &i.to_be_bytes()).unwrap();
        pair.run_for(gap);
    }
    pair.run_for(Duration::from_secs(5));
    assert_eq!(pair.client.buffered().reliable_in_flight, 0);
    let got = pair
        .server_side
        .messages(channel)
        .map(|b| u32::from_be_bytes(b.try_into().unwrap()))
        .collect();
    (got, pair.client.stats().messages_resent)
}

#[test]
fn reliable_ordered_messages_arrive_once_and_in_order_over_a_lossy_link() {
    let (got, resent) = numbered(1, 25.0, 300, 20 * MS, 3);
    assert_eq!(got, (0..300).collect::<Vec<_>>());
    assert!(resent > 0, "the loss was real");
}

#[test]
fn reliable_unordered_messages_arrive_exactly_once() {
    let (mut got, _) = numbered(2, 25.0, 300, 20 * MS, 4);
    got.sort_unstable();
    assert_eq!(got, (0..300).collect::<Vec<_>>());
}

#[test]
fn sequenced_messages_never_go_backwards_and_stale_ones_are_dropped() {
    let (got, _) = numbered(0, 10.0, 600, 10 * MS, 5);
    assert!(got.windows(2).all(|w| w[0] < w[1]), "went backwards");
    assert!(got.len() > 400, "most arrive: {}", got.len());
    assert!(got.len() < 600, "some were lost on a 10% link");
}

#[test]
fn a_256_kib_message_is_fragmented_and_reassembled_intact() {
    let mut pair = ConnPair::new(all_kinds(), lossy(10.0), 6);
    pair.connect();
    let big: Vec<u8> = (0..MAX_MESSAGE_SIZE).map(|i| (i * 7 % 251) as u8).collect();
    pair.client.send(1, &big).unwrap();
    pair.client.send(1, b"after").unwrap();
    pair.client.send(2, &big[..5000]).unwrap();
    pair.run_for(Duration::from_secs(60));
    let ordered: Vec<&[u8]> = pair.server_side.messages(1).collect();
    assert_eq!(ordered.len(), 2);
    assert!(ordered[0] == &big[..], "reassembled bytes differ");
    assert_eq!(ordered[1], b"after");
    let unordered: Vec<&[u8]> = pair.server_side.messages(2).collect();
    assert_eq!(unordered, [&big[..5000]]);
    assert_eq!(pair.server().buffered().receive_bytes, 0);
}

#[test]
fn oversized_and_misdirected_sends_get_typed_errors_and_queue_nothing() {
    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 7);
    pair.connect();
    let too_big = vec![0u8; MAX_MESSAGE_SIZE + 1];
    assert_eq!(
        pair.client.send(1, &too_big),
        Err(SendError::TooLarge {
            channel: 1,
            len: MAX_MESSAGE_SIZE + 1,
            max: MAX_MESSAGE_SIZE
        })
    );
    let max_unreliable = pair.client.max_message_size(0).unwrap();
    assert!(max_unreliable > 1100 && max_unreliable < 1200);
    assert!(matches!(
        pair.client.send(0, &vec![0u8; max_unreliable + 1]),
        Err(SendError::TooLarge { channel: 0, .. })
    ));
    assert_eq!(pair.client.send(9, b"x"), Err(SendError::UnknownChannel(9)));
    assert_eq!(pair.client.buffered(), Default::default());
    pair.client.send(0, &vec![1u8; max_unreliable]).unwrap();
    pair.run_for(Duration::from_millis(200));
    assert_eq!(pair.server_side.messages(0).count(), 1);
}

#[test]
fn a_full_send_window_refuses_with_window_full_until_acks_free_it() {
    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 8);
    pair.connect();
    for i in 0..RELIABLE_WINDOW {
        pair.client.send(1, &i.to_be_bytes()).unwrap();
    }
    assert_eq!(
        pair.client.send(1, b"one too many"),
        Err(SendError::WindowFull {
            channel: 1,
            needed: 1,
            free: 0
        })
    );
    // A fragmented message needs one id per fragment.
    assert!(matches!(
        pair.client.send(2, &vec![0u8; 2048 * 600]),
        Err(SendError::TooLarge { .. })
    ));
    pair.run_for(Duration::from_secs(3));
    assert_eq!(pair.server_side.messages(1).count(), 1024);
    pair.client.send(1, b"room again").unwrap();
}

#[test]
fn many_small_messages_share_a_packet_and_the_queued_unreliable_ones_go_first() {
    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 9);
    pair.connect();
    pair.run_for(Duration::from_secs(1));
    let before = pair.client_side.datagrams_sent.len();
    let delivered = pair.server_side.events.len();
    for i in 0u32..100 {
        pair.client.send(3, &[i as u8; 20]).unwrap();
    }
    for i in 0u32..40 {
        pair.client.send(1, &[i as u8; 20]).unwrap();
    }
    // The next packet: 1200 bytes hold 53 of the unreliable ones (22 B each), which go
    // first, the game's traffic keeping its place; the rest, and the reliable ones (24 B
    // each), fill the packets after it.
    let next = pair.client.poll_timeout().unwrap();
    pair.run_until(next + 5 * MS);
    let sent = &pair.client_side.datagrams_sent[before..];
    assert!(!sent.is_empty());
    assert!(sent[0].1 > 1150, "packet filled: {} bytes", sent[0].1);
    let first: Vec<u8> = pair.server_side.events[delivered..]
        .iter()
        .filter_map(|(_, e)| match e {
            ConnectionEvent::Message { channel, .. } => Some(*channel),
            _ => None,
        })
        .take(53)
        .collect();
    assert_eq!(
        first,
        vec![3; 53],
        "the first packet's frames are the unreliable ones"
    );
    pair.run_for(Duration::from_millis(200));
    assert_eq!(pair.server_side.messages(1).count(), 40);
    assert_eq!(pair.server_side.messages(3).count(), 100);
}

#[test]
fn a_blackout_does_not_cause_a_burst_of_resends() {
    let mut pair = ConnPair::new(all_kinds(), lossy(0.0), 10);
    pair.connect();
    pair.run_for(Duration::from_secs(6));
    pair.set_link(lossy(0.0).with_loss_percent(100.0));
    for i in 0u32..200 {
        pair.client.send(1, &i.to_be_bytes()).unwrap();
        pair.run_for(5 * MS);
    }
    pair.run_for(Duration::from_secs(1));
    pair.set_link(lossy(0.0));
    let resumed = pair.now;
    pair.run_for(Duration::from_secs(3));
    // After the link comes back, the packet rate stays at the paced rate (<= 30/s): resends
    // ride the regular packets.
    for second in 0..3u32 {
        let from = resumed + Duration::from_secs(second.into());
        let to = from + Duration::from_secs(1);
        let count = pair
            .client_side
            .datagrams_sent
            .iter()
            .filter(|(at, _)| *at >= from && *at < to)
            .count();
        assert!(count <= 31, "{count} packets in second {second}");
    }
    assert_eq!(pair.server_side.messages(1).count(), 200);
}

#[test]
fn message_ids_wrap_past_65535_without_loss_or_duplication() {
    let mut pair = ConnPair::new(all_kinds(), lossy(10.0), 11);
    pair.connect();
    let total = 70_000u32;
    let mut next = 0u32;
    let mut got = Vec::new();
    while got.len() < total as usize {
        while next < total && pair.client.send(1, &next.to_be_bytes()).is_ok() {
            next += 1;
        }
        pair.run_for(100 * MS);
        got.extend(
            pair.server_side
                .take_messages(1)
                .into_iter()
                .map(|b| u32::from_be_bytes(b.try_into().unwrap())),
        );
        assert!(
            pair.now < Duration::from_secs(600),
            "stalled at {}",
            got.len()
        );
    }
    assert!(
        got.iter().copied().eq(0..total),
        "out of order or duplicated"
    );
    assert_eq!(pair.client.stats().messages_sent, u64::from(total));
}

/// A data packet from the client as the server `to` would receive it: a header far ahead of
/// anything sent so far (so the packet layer takes it), the given payload and `to`'s
/// connection tag.
fn forged_data_packet(to: &ackwire_core::Connection, payload: &[u8]) -> Vec<u8> {
    forged_at(to, 20_000, payload)
}

/// Like [`forged_data_packet`], with packet sequence `sequence`.
fn forged_at(to: &ackwire_core::Connection, sequence: u16, payload: &[u8]) -> Vec<u8> {
    let header = ackwire_core::wire::PacketHeader::first(sequence);
    let mut datagram = vec![0u8; header.encoded_len()];
    header.encode(&mut datagram).unwrap();
    datagram.extend_from_slice(payload);
    datagram.extend_from_slice(&(to.connection_id().unwrap() as u32).to_be_bytes());
    datagram
}

/// The bytes of one frame.
fn frame(channel: u8, kind: ackwire_core::frame::FrameKind, payload: &[u8]) -> Vec<u8> {
    let frame = ackwire_core::frame::FrameRepr {
        channel,
        kind,
        payload,
    };
    let mut bytes = vec![0u8; frame.encoded_len()];
    frame.emit(&mut bytes).unwrap();
    bytes
}

fn messages(connection: &mut ackwire_core::Connection) -> Vec<(u8, Vec<u8>)> {
    std::iter::from_fn(|| connection.poll_event())
        .filter_map(|event| match event {
            ConnectionEvent::Message { channel, bytes } => Some((channel, bytes)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_first_sequenced_message_is_delivered_whatever_its_sequence_and_later_ones_only_if_newer() {
    use ackwire_core::frame::FrameKind::Sequenced;

    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 14);
    pair.connect();
    let now = pair.now;
    let server = pair.server.as_mut().unwrap();
    messages(server);
    let first = forged_at(
        server,
        20_000,
        &frame(0, Sequenced { sequence: 40_000 }, b"a"),
    );
    server.receive(now, &first).unwrap();
    assert_eq!(messages(server), [(0, b"a".to_vec())]);
    let payload = [
        frame(0, Sequenced { sequence: 39_999 }, b"older"),
        frame(0, Sequenced { sequence: 40_000 }, b"same"),
        frame(0, Sequenced { sequence: 40_001 }, b"newer"),
    ]
    .concat();
    server
        .receive(now, &forged_at(server, 20_001, &payload))
        .unwrap();
    assert_eq!(messages(server), [(0, b"newer".to_vec())]);
    assert_eq!(server.stats().messages_dropped_stale, 2);
}

#[test]
fn reliable_ids_start_at_zero_and_an_id_behind_the_window_is_dropped_in_a_packet_still_taken() {
    use ackwire_core::frame::FrameKind::Reliable;
    use ackwire_core::{ConnectionError, ReceiveError};

    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 15);
    pair.connect();
    let now = pair.now;
    let server = pair.server.as_mut().unwrap();
    messages(server);
    // Id 40000 is behind the first awaited id, 0 (RFC 1982): a duplicate, not an error.
    let behind = forged_at(server, 20_000, &frame(1, Reliable { id: 40_000 }, b"lost"));
    server.receive(now, &behind).unwrap();
    assert_eq!(messages(server), []);
    assert_eq!(
        server.receive(now, &behind),
        Err(ConnectionError::Packet(ReceiveError::Duplicate {
            sequence: 20_000
        })),
        "the packet was taken in (and so is acked)"
    );
    let first = forged_at(server, 20_001, &frame(1, Reliable { id: 0 }, b"first"));
    server.receive(now, &first).unwrap();
    assert_eq!(messages(server), [(1, b"first".to_vec())]);
}

#[test]
fn a_data_packet_the_packet_layer_refuses_is_a_packet_error_and_changes_nothing() {
    use ackwire_core::wire::HeaderError;
    use ackwire_core::{ConnectionError, ReceiveError};

    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 16);
    pair.connect();
    let now = pair.now;
    let server = pair.server.as_mut().unwrap();
    let datagram = forged_data_packet(server, &[0x03, 1, b'x']);
    server.receive(now, &datagram).unwrap();
    messages(server);
    let before = (server.stats(), server.buffered());
    assert_eq!(
        server.receive(now, &datagram),
        Err(ConnectionError::Packet(ReceiveError::Duplicate {
            sequence: 20_000
        }))
    );
    let mut other_version = forged_at(server, 20_001, &[0x03, 1, b'x']);
    other_version[0] = other_version[0] & 0x3F | 0x40;
    assert_eq!(
        server.receive(now, &other_version),
        Err(ConnectionError::Packet(ReceiveError::Header(
            HeaderError::UnsupportedVersion(1)
        )))
    );
    assert_eq!((server.stats(), server.buffered()), before);
    assert_eq!(messages(server), []);
}

#[test]
fn a_full_unreliable_queue_refuses_with_queue_full_and_queues_nothing() {
    let config = all_kinds().with_unreliable_queue_len(3);
    let mut client = ackwire_core::Connection::connect(config, Duration::ZERO).unwrap();
    for _ in 0..3 {
        client.send(3, b"queued while connecting").unwrap();
    }
    assert_eq!(
        client.send(3, b"one too many"),
        Err(SendError::QueueFull { channel: 3 })
    );
    assert_eq!(client.buffered().unreliable_queued, 3);
    assert_eq!(client.stats().messages_sent, 3);
}

#[test]
fn an_unacked_reliable_message_rides_again_only_once_per_resend_interval() {
    let config = all_kinds()
        .with_packet(ackwire_core::Config::default().with_initial_mode(ackwire_core::Mode::Good));
    let mut pair = ConnPair::new(config, EmulatorConfig::default(), 17);
    pair.connect();
    pair.run_for(Duration::from_millis(500));
    pair.client.send(1, b"reliable").unwrap();
    // Nothing reaches the server from here on: the message is never acked.
    let start = pair.now;
    let mut buf = [0u8; 1200];
    let mut carried = Vec::new();
    let mut packets = 0;
    for ms in 0..400 {
        let now = start + ms * MS;
        while let Some(len) = pair.client.poll_transmit(now, &mut buf).unwrap() {
            packets += 1;
            // Without the connection tag the last 4 bytes are.
            let packet = Packet::new_checked(&buf[..len - CONNECTION_TAG_LEN]).unwrap();
            if Frames::new(packet.payload()).next().is_some() {
                carried.push(ms);
            }
        }
    }
    // 30 packets/s: 12 packets, the message in the first and then every 100 ms (the resend
    // interval's floor; the RTT here is near zero), not in every packet.
    assert!((12..=13).contains(&packets), "{packets} packets");
    assert_eq!(carried.len(), 4, "carried at {carried:?} ms");
    assert!(
        carried.windows(2).all(|w| w[1] - w[0] >= 100),
        "{carried:?}"
    );
}

#[test]
fn a_packet_with_an_impossible_frame_is_refused_whole_and_changes_nothing() {
    use ackwire_core::ConnectionError;
    use ackwire_core::frame::FrameError;

    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 12);
    pair.connect();
    pair.run_for(Duration::from_secs(1));
    let good = [0x03, 1, b'x']; // an unreliable frame on channel 3, first in every packet
    let cases: [(&[u8], FrameError); 4] = [
        // Reliable id 5000 on channel 1: beyond the 1024-id window.
        (
            &[0x81, 0x13, 0x88, 1, b'x'],
            FrameError::BeyondWindow {
                channel: 1,
                id: 5000,
            },
        ),
        (&[0x09, 1, b'x'], FrameError::UnknownChannel(9)),
        // An unreliable frame on the reliable-ordered channel.
        (
            &[0x01, 1, b'x'],
            FrameError::WrongKind {
                channel: 1,
                kind: "unreliable",
            },
        ),
        (
            &[0x81, 0x00, 0x00, 5, b'x'],
            FrameError::Truncated {
                needed: 9,
                available: 5,
            },
        ),
    ];
    let now = pair.now;
    let server = pair.server.as_mut().unwrap();
    for (bad, error) in cases {
        // After a good frame, and alone (a one-frame payload is parsed once, on a path of
        // its own).
        for payload in [[&good[..], bad].concat(), bad.to_vec()] {
            let before = (server.stats(), server.buffered());
            let datagram = forged_data_packet(server, &payload);
            assert_eq!(
                server.receive(now, &datagram),
                Err(ConnectionError::Frame(error))
            );
            assert_eq!((server.stats(), server.buffered()), before);
            assert_eq!(
                server.poll_event(),
                None,
                "the good frame was not delivered"
            );
        }
    }
    // The same packet without the bad frame is taken.
    server
        .receive(now, &forged_data_packet(server, &good))
        .unwrap();
    assert_eq!(
        server.poll_event(),
        Some(ackwire_core::ConnectionEvent::Message {
            channel: 3,
            bytes: b"x".to_vec()
        })
    );
}

#[test]
fn send_latest_gives_each_packet_only_the_newest_value_and_reliable_traffic_still_flows() {
    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 13);
    pair.connect();
    let ConnPair {
        now,
        client,
        server,
        ..
    } = &mut pair;
    let server = server.as_mut().unwrap();
    let mut buf = [0u8; 1200];
    let mut latest = 0u32;
    let mut reliable_sent = 0u32;
    // Per latest-value channel (0 sequenced, 3 unreliable): the values the client's packets
    // carried, and the values the server delivered.
    let (mut carried, mut delivered) = ([vec![], vec![]], [vec![], vec![]]);
    let mut reliable = Vec::new();
    for step in 0..3000 {
        // Many calls per packet: one a millisecond, packets at 10 to 30 a second.
        latest += 1;
        client.send_latest(0, &latest.to_be_bytes()).unwrap();
        client.send_latest(3, &latest.to_be_bytes()).unwrap();
        if step % 50 == 0 && step < 2000 {
            client.send(1, &reliable_sent.to_be_bytes()).unwrap();
            reliable_sent += 1;
        }
        while let Some(len) = client.poll_transmit(*now, &mut buf).unwrap() {
            // Without the connection tag the last 4 bytes are.
            let packet = Packet::new_checked(&buf[..len - CONNECTION_TAG_LEN]).unwrap();
            for (k, channel) in [0u8, 3].into_iter().enumerate() {
                let frames: Vec<_> = Frames::new(packet.payload())
                    .map(Result::unwrap)
                    .filter(|f| f.channel == channel)
                    .collect();
                assert!(frames.len() <= 1, "{} on channel {channel}", frames.len());
                if let [frame] = frames[..] {
                    assert_eq!(frame.payload, latest.to_be_bytes(), "not the newest");
                    carried[k].push(latest);
                }
            }
            server.receive(*now, &buf[..len]).unwrap();
        }
        while let Some(len) = server.poll_transmit(*now, &mut buf).unwrap() {
            client.receive(*now, &buf[..len]).unwrap();
        }
        while let Some(event) = server.poll_event() {
            if let ConnectionEvent::Message { channel, bytes } = event {
                let value = u32::from_be_bytes(bytes.try_into().unwrap());
                match channel {
                    0 => delivered[0].push(value),
                    3 => delivered[1].push(value),
                    _ => reliable.push(value),
                }
            }
        }
        while client.poll_event().is_some() {}
        assert!(
            client.buffered().unreliable_queued <= 2,
            "a backlog built up"
        );
        *now += MS;
    }
    for k in 0..2 {
        assert_eq!(delivered[k], carried[k], "every packet's value, once");
        assert!(carried[k].windows(2).all(|w| w[0] < w[1]));
        assert!(
            (30..=100).contains(&carried[k].len()),
            "one per packet, not one per call: {}",
            carried[k].len()
        );
    }
    assert_eq!(reliable, (0..reliable_sent).collect::<Vec<_>>());
    let stats = client.stats();
    assert_eq!(
        stats.messages_sent,
        (carried[0].len() + carried[1].len() + client.buffered().unreliable_queued) as u64
            + u64::from(reliable_sent),
        "replaced messages are not counted as sent"
    );
    assert_eq!(server.stats().messages_dropped_stale, 0);
}

#[test]
fn send_latest_replaces_a_backlog_queued_by_send() {
    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 14);
    pair.connect();
    for i in 0u8..5 {
        pair.client.send(0, &[i]).unwrap();
        pair.client.send(3, &[i]).unwrap();
    }
    assert_eq!(pair.client.buffered().unreliable_queued, 10);
    let sent_before = pair.client.stats().messages_sent;
    pair.client.send_latest(0, b"newest").unwrap();
    pair.client.send_latest(3, b"newest").unwrap();
    assert_eq!(pair.client.buffered().unreliable_queued, 2);
    assert_eq!(pair.client.stats().messages_sent, sent_before - 8);
    pair.run_for(Duration::from_millis(200));
    assert_eq!(
        pair.server_side.messages(0).collect::<Vec<_>>(),
        [b"newest"]
    );
    assert_eq!(
        pair.server_side.messages(3).collect::<Vec<_>>(),
        [b"newest"]
    );
}

#[test]
fn send_latest_called_more_than_half_the_sequence_range_between_packets_is_still_delivered() {
    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 15);
    pair.connect();
    pair.client.send_latest(0, &0u32.to_be_bytes()).unwrap();
    pair.run_for(Duration::from_millis(200));
    // Replaced messages never left, so their sequences are reused: the next one sent still
    // reads as newer than the last delivered.
    for i in 1..=40_000u32 {
        pair.client.send_latest(0, &i.to_be_bytes()).unwrap();
    }
    pair.run_for(Duration::from_millis(200));
    let got: Vec<&[u8]> = pair.server_side.messages(0).collect();
    assert_eq!(got, [&0u32.to_be_bytes()[..], &40_000u32.to_be_bytes()[..]]);
    assert_eq!(pair.server().stats().messages_dropped_stale, 0);
}

#[test]
fn send_latest_on_a_reliable_channel_is_refused_with_a_typed_error_and_changes_nothing() {
    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 16);
    pair.connect();
    pair.client.send(0, b"queued").unwrap();
    let before = (pair.client.stats(), pair.client.buffered());
    for channel in [1, 2] {
        assert_eq!(
            pair.client.send_latest(channel, b"x"),
            Err(SendError::Reliable { channel })
        );
    }
    assert_eq!(
        pair.client.send_latest(9, b"x"),
        Err(SendError::UnknownChannel(9))
    );
    let max = pair.client.max_message_size(0).unwrap();
    assert_eq!(
        pair.client.send_latest(0, &vec![0u8; max + 1]),
        Err(SendError::TooLarge {
            channel: 0,
            len: max + 1,
            max
        })
    );
    assert_eq!((pair.client.stats(), pair.client.buffered()), before);
    pair.run_for(Duration::from_millis(200));
    assert_eq!(
        pair.server_side.messages(0).collect::<Vec<_>>(),
        [b"queued"]
    );
    for channel in [1, 2] {
        assert_eq!(pair.server_side.messages(channel).count(), 0);
    }
    pair.client.close();
    assert_eq!(pair.client.send_latest(0, b"x"), Err(SendError::Closed));
}

#[test]
fn reliable_ids_tell_when_a_message_and_all_before_it_were_acked() {
    let mut pair = ConnPair::new(all_kinds(), lossy(20.0), 11);
    pair.connect();
    assert_eq!(
        pair.client.reliable_ids(0),
        None,
        "unreliable channels have none"
    );
    assert_eq!(pair.client.reliable_ids(9), None);
    let (oldest, next) = pair.client.reliable_ids(1).unwrap();
    assert_eq!(
        (oldest, next),
        (0, 0),
        "ids count from 0 on each connection"
    );
    // One id per fragment: a two-fragment message takes two.
    pair.client.send(1, b"short").unwrap();
    let big = vec![7u8; ackwire_core::frame::FRAGMENT_SIZE + 1];
    pair.client.send(1, &big).unwrap();
    assert_eq!(pair.client.reliable_ids(1), Some((0, 3)));
    pair.run_for(Duration::from_secs(5));
    // Everything acked: oldest caught up with next, and the peer has both messages.
    assert_eq!(pair.client.reliable_ids(1), Some((3, 3)));
    assert_eq!(pair.server_side.messages(1).count(), 2);
}

#[test]
fn check_send_says_what_send_would_refuse_and_queues_nothing() {
    let mut pair = ConnPair::new(all_kinds(), EmulatorConfig::default(), 5);
    pair.connect();
    let c = &mut pair.client;
    assert_eq!(c.check_send(1, 10), Ok(()));
    assert_eq!(c.check_send(9, 10), Err(SendError::UnknownChannel(9)));
    let max = c.max_message_size(0).unwrap();
    assert_eq!(
        c.check_send(0, max + 1),
        Err(SendError::TooLarge {
            channel: 0,
            len: max + 1,
            max
        })
    );
    assert_eq!(c.send(0, &vec![0; max + 1]), c.check_send(0, max + 1));
    // Fill channel 1's window: the check refuses the message that would not fit.
    while c.check_send(1, 1).is_ok() {
        c.send(1, b"x").unwrap();
    }
    assert!(matches!(
        c.check_send(1, 1),
        Err(SendError::WindowFull { channel: 1, .. })
    ));
    let before = c.buffered();
    assert_eq!(c.send(1, b"x"), c.check_send(1, 1));
    assert_eq!(c.buffered(), before, "a refused send queues nothing");
    c.close();
    assert_eq!(c.check_send(0, 1), Err(SendError::Closed));
}
