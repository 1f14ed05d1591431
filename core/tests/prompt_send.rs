//! Prompt sends (`Config::prompt_send`, on by default): the interval's one packet leaves as
//! soon as the application queues a message in it, and once it has left, what is queued next
//! goes as the following interval opens. A message waits at most one interval, never the two
//! it could behind a packet that went early to carry an ack, and the rate stays one packet per
//! interval.

mod pair;

use std::time::Duration;

use ackwire_core::emulator::EmulatorConfig;
use ackwire_core::endpoint::STARTUP_PACKETS;
use ackwire_core::{ChannelKind, Config, ConnectionConfig, ConnectionEvent, Mode};
use pair::ConnPair;

const MS: Duration = Duration::from_millis(1);
/// Good mode's interval, 1/30 s, rounded up.
const INTERVAL: Duration = Duration::from_micros(33_334);
const ONE_WAY: Duration = Duration::from_millis(5);

/// What the client's messages waited, each from its send to its packet's departure (its
/// arrival less the path), and the client's packets per second, over 10 s of a message every
/// 47 ms (not a multiple of the interval: they fall anywhere in one) while the server sends
/// at its own cadence, so prompt acks pull packets early too.
fn run(prompt_send: bool) -> (Vec<Duration>, f64) {
    let packet = Config::default()
        .with_initial_mode(Mode::Good)
        .with_prompt_send(prompt_send);
    let config = ConnectionConfig::default()
        .with_channels(vec![ChannelKind::ReliableOrdered])
        .with_packet(packet);
    let mut pair = ConnPair::new(config, EmulatorConfig::default().with_latency(ONE_WAY), 7);
    pair.connect();
    pair.run_for(Duration::from_secs(1));
    let (start, end) = (pair.now, pair.now + Duration::from_secs(10));
    let packets_before = pair.client_side.datagrams_sent.len();
    let mut sent_at = Vec::new();
    let mut next = start;
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    while pair.now < end {
        if pair.now >= next {
            let n = sent_at.len() as u32;
            pair.client.send(0, &n.to_le_bytes()).unwrap();
            sent_at.push(pair.now);
            // 1 to 66 ms apart, pseudo-random: anywhere in an interval, sometimes two in one.
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            next += Duration::from_micros(1_000 + seed % 65_000);
        }
        pair.run_until(next.min(end));
    }
    pair.run_for(Duration::from_secs(1));
    let waits: Vec<Duration> = pair
        .server_side
        .events
        .iter()
        .filter_map(|(at, e)| match e {
            ConnectionEvent::Message { bytes, .. } => {
                let n = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
                Some(at.saturating_sub(sent_at[n] + ONE_WAY))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        waits.len(),
        sent_at.len(),
        "every message arrived (no loss)"
    );
    let packets = pair.client_side.datagrams_sent[packets_before..]
        .iter()
        .filter(|(at, _)| *at < end)
        .count();
    (waits, packets as f64 / 10.0)
}

fn mean(waits: &[Duration]) -> Duration {
    waits.iter().sum::<Duration>() / waits.len() as u32
}

/// The `p`-th percentile.
fn percentile(waits: &[Duration], p: usize) -> Duration {
    let mut sorted = waits.to_vec();
    sorted.sort_unstable();
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

#[test]
fn a_message_waits_at_most_one_interval_and_the_rate_stays_one_packet_per_interval() {
    let (prompt, prompt_rate) = run(true);
    let (clocked, clocked_rate) = run(false);
    let worst = |w: &[Duration]| *w.iter().max().unwrap();
    println!(
        "waits for a packet ({} messages): prompt sends mean {:?} p90 {:?} worst {:?} \
         ({prompt_rate} packets/s); held to the interval's end mean {:?} p90 {:?} worst {:?} \
         ({clocked_rate} packets/s)",
        prompt.len(),
        mean(&prompt),
        percentile(&prompt, 90),
        worst(&prompt),
        mean(&clocked),
        percentile(&clocked, 90),
        worst(&clocked)
    );
    assert!(
        worst(&prompt) <= INTERVAL,
        "worst wait {:?}",
        worst(&prompt)
    );
    // Without them a message can wait two intervals behind a packet that went early for an
    // ack: what prompt sends cure.
    assert!(
        worst(&clocked) > INTERVAL,
        "worst wait {:?}",
        worst(&clocked)
    );
    assert!(percentile(&prompt, 90) < percentile(&clocked, 90));
    // The same packets, so on average the same wait: the tail is what moves.
    assert!(
        mean(&prompt) <= mean(&clocked) + MS,
        "mean {:?}",
        mean(&prompt)
    );
    for rate in [prompt_rate, clocked_rate] {
        assert!((29.0..=31.0).contains(&rate), "{rate} packets/s");
    }
}

#[test]
fn messages_queued_together_share_the_packet_their_first_one_pulls_early() {
    let packet = Config::default().with_initial_mode(Mode::Good);
    let config = ConnectionConfig::default()
        .with_channels(vec![ChannelKind::ReliableOrdered])
        .with_packet(packet);
    let mut pair = ConnPair::new(config, EmulatorConfig::default(), 3);
    pair.connect();
    pair.run_for(Duration::from_secs(1));
    // Queuing alone sends nothing: a frame's messages wait for the driver's next poll, which
    // `take_rearm` asks for when the interval's packet may leave before its deadline.
    let before = pair.client_side.datagrams_sent.len();
    for n in 0..3u8 {
        pair.client.send(0, &[n]).unwrap();
    }
    assert_eq!(pair.client_side.datagrams_sent.len(), before);
    assert!(
        pair.client.take_rearm(),
        "the deadline moved: the packet may leave sooner"
    );
    assert!(!pair.client.take_rearm(), "said once");
    let at = pair.now;
    // When the interval is open: now, else as the next one opens (this one's packet left
    // early to carry an ack), within an interval either way.
    let leaves = pair.client.poll_timeout().unwrap();
    assert!(leaves <= at + INTERVAL, "{leaves:?} for {at:?}");
    pair.run_until(at + INTERVAL);
    let arrived: Vec<Duration> = pair
        .server_side
        .events
        .iter()
        .filter(|(when, e)| *when >= at && matches!(e, ConnectionEvent::Message { .. }))
        .map(|(when, _)| *when)
        .collect();
    // The packet that left at `leaves` (the virtual link hands it over at the next step).
    let departed = pair.client_side.datagrams_sent[before].0;
    assert_eq!(departed, leaves);
    assert_eq!(arrived, [arrived[0]; 3], "all three in the one packet");
    assert!(arrived[0] - departed <= Duration::from_micros(1));
}

#[test]
fn the_peers_first_packet_is_acked_at_once_even_when_a_message_took_the_interval() {
    // Bad mode (10 packets a second) and 1 ms each way; the server sends a message every
    // 10 ms from the start, so as it connects its first packet leaves and a message pulls
    // its interval's packet at once, just before the client's first data packet arrives.
    // That packet's ack still leaves at once, once per connection, outside the pace: the
    // client counts the link as up a round trip after its first packet, not an interval
    // later.
    let config = ConnectionConfig::default()
        .with_channels(vec![ChannelKind::Unreliable])
        .with_packet(Config::default());
    let link = EmulatorConfig::default().with_latency(MS);
    let mut worst = Duration::ZERO;
    for seed in 0..20 {
        let mut pair = ConnPair::new(config.clone(), link.clone(), seed);
        let mut first_data = None;
        // The server's messages start at a different moment of its first interval each time.
        let mut next = None;
        let phase = Duration::from_micros(seed * 500);
        while pair.client.stats().counters.packets_acked == 0 {
            assert!(pair.now < Duration::from_secs(5), "no ack in 5 s");
            if pair.server.is_some() {
                let at = *next.get_or_insert(pair.now + phase);
                if pair.now >= at {
                    pair.server().send(0, b"state").unwrap();
                    next = Some(at + 10 * MS);
                }
            }
            if first_data.is_none() && pair.client.stats().counters.packets_sent > 0 {
                first_data = Some(pair.now);
            }
            pair.run_until(pair.now + MS / 4);
        }
        let took = pair.now - first_data.unwrap();
        worst = worst.max(took);
    }
    println!("first data packet to its ack, worst of 20: {worst:?} (round trip 2 ms)");
    assert!(worst <= 2 * MS + 2 * MS, "{worst:?}");
}

#[test]
fn a_links_first_messages_leave_at_once_and_the_pace_holds_after_its_startup_packets() {
    // Bad mode (10 packets a second, the mode a link starts in) and 1 ms each way, on a
    // channel. The acceptor's interval packet went with its accept, and its first ack went
    // outside the pace; a game's first states, queued 5 ms apart after that, each leave at
    // once while `STARTUP_PACKETS` last. The next waits for the pace: the interval after the
    // accept's packet, 100 ms after it.
    let config = ConnectionConfig::default()
        .with_channels(vec![ChannelKind::Unreliable])
        .with_packet(Config::default());
    let link = EmulatorConfig::default().with_latency(MS);
    let mut pair = ConnPair::on_channel(config, link, 1);
    pair.connect();
    let accepted_at = pair.server_side.datagrams_sent[0].0;
    let mut sent_at = Vec::new();
    for i in 0..=STARTUP_PACKETS {
        pair.server().send(0, &[i]).unwrap();
        sent_at.push(pair.now);
        pair.run_for(5 * MS);
    }
    pair.run_for(150 * MS);
    let arrivals: Vec<Duration> = pair
        .client_side
        .events
        .iter()
        .filter(|(_, e)| matches!(e, ConnectionEvent::Message { .. }))
        .map(|(at, _)| *at)
        .collect();
    assert_eq!(arrivals.len(), sent_at.len());
    for (sent, arrived) in sent_at.iter().zip(&arrivals).take(STARTUP_PACKETS.into()) {
        assert!(
            *arrived - *sent <= 2 * MS,
            "sent {sent:?}, arrived {arrived:?}"
        );
    }
    let last = *arrivals.last().unwrap();
    assert!(
        last >= accepted_at + 100 * MS,
        "the pace holds after the startup packets: {last:?}, accepted at {accepted_at:?}"
    );
}
