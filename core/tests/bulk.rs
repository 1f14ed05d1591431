//! Bulk transfers: a reliable backlog runs ahead of the cadence under the bulk window, arrives
//! exactly once and in order, backs off on loss above the path's own and on a queue, and
//! leaves the game's own packets their place and their latency. Virtual time: the figures are the protocol's, not
//! the machine's (the same-run comparison with renet on real sockets is `cargo xtask bench
//! bulk`).

mod pair;

use std::time::Duration;

use ackwire_core::emulator::EmulatorConfig;
use ackwire_core::{ChannelKind, Config, ConnectionConfig, ConnectionEvent, SendError};
use pair::ConnPair;

const MS: Duration = Duration::from_millis(1);
const TICK: Duration = Duration::from_micros(33_333);
/// Channel 0 carries the game's state every tick, channel 1 the transfer.
const GAME: u8 = 0;
const BULK: u8 = 1;
const CHUNK: usize = 256 * 1024;

fn config() -> ConnectionConfig {
    ConnectionConfig::default()
        .with_channels(vec![ChannelKind::Unreliable, ChannelKind::ReliableOrdered])
}

fn link(one_way: Duration, loss_percent: f64) -> EmulatorConfig {
    EmulatorConfig::default()
        .with_latency(one_way)
        .with_loss_percent(loss_percent)
}

/// What one transfer measured.
#[derive(Debug)]
struct Transfer {
    /// Bytes per second, from the first chunk queued to the last one delivered.
    rate: f64,
    /// Game-state latency (send to delivery) during the transfer, median and worst.
    game_median: Duration,
    game_worst: Duration,
    /// The same over the half second before it.
    before_median: Duration,
    before_worst: Duration,
    /// Most packets the sender sent in one second of the transfer.
    peak_pps: usize,
}

/// Connects, sends `total` bytes in 256 KiB chunks (each as soon as the send window takes
/// it) while a 40-byte game state goes every tick, and checks every chunk arrived exactly
/// once, in order, intact.
fn transfer(config: ConnectionConfig, link: EmulatorConfig, total: usize, seed: u64) -> Transfer {
    let mut pair = ConnPair::new(config, link, seed);
    pair.connect();
    // Five seconds of game traffic first: RTT samples, and the link in good mode (after its
    // 4 s of recovery), the steady state a transfer's effect is measured against.
    let warm = Duration::from_secs(5);
    let mut next_tick = pair.now;
    let mut tick = 0u64;
    let mut game_sent = Vec::new();
    let mut step_game = |pair: &mut ConnPair, next_tick: &mut Duration, tick: &mut u64| {
        while pair.now >= *next_tick {
            let mut state = [0u8; 40];
            state[..8].copy_from_slice(&tick.to_be_bytes());
            pair.client.send(GAME, &state).unwrap();
            game_sent.push(pair.now);
            *tick += 1;
            *next_tick += TICK;
        }
    };
    while pair.now < warm {
        step_game(&mut pair, &mut next_tick, &mut tick);
        pair.run_until(next_tick.min(warm));
    }
    let start = pair.now;
    let chunks = total / CHUNK;
    let chunk = |n: usize| -> Vec<u8> {
        (0..CHUNK)
            .map(|i| (i as u32).wrapping_mul(2654435761).wrapping_add(n as u32) as u8)
            .collect()
    };
    let sent_from = pair.client_side.datagrams_sent.len();
    let mut queued = 0;
    let deadline = start + Duration::from_secs(600);
    while pair.server_side.messages(BULK).count() < chunks {
        assert!(pair.now < deadline, "the transfer stalled");
        while queued < chunks {
            match pair.client.send(BULK, &chunk(queued)) {
                Ok(()) => queued += 1,
                Err(SendError::WindowFull { .. }) => break,
                Err(e) => panic!("{e}"),
            }
        }
        step_game(&mut pair, &mut next_tick, &mut tick);
        let until = next_tick.min(pair.now + 5 * MS);
        pair.run_until(until);
    }
    let done = pair
        .server_side
        .events
        .iter()
        .rev()
        .find_map(|(at, e)| {
            matches!(e, ConnectionEvent::Message { channel: BULK, .. }).then_some(*at)
        })
        .unwrap();
    let got: Vec<&[u8]> = pair.server_side.messages(BULK).collect();
    assert_eq!(got.len(), chunks, "each chunk once");
    for (n, bytes) in got.iter().enumerate() {
        assert!(
            *bytes == chunk(n).as_slice(),
            "chunk {n} intact and in order"
        );
    }
    // Game latency: each state's delivery time against its send time, for the ticks sent
    // during the transfer and over the half second before it.
    let latencies = |from: Duration, to: Duration| -> (Duration, Duration) {
        let mut all: Vec<Duration> = pair
            .server_side
            .events
            .iter()
            .filter_map(|(at, e)| match e {
                ConnectionEvent::Message {
                    channel: GAME,
                    bytes,
                } => {
                    let tick = u64::from_be_bytes(bytes[..8].try_into().unwrap());
                    Some((game_sent[tick as usize], *at))
                }
                _ => None,
            })
            .filter(|(sent, at)| *sent >= from && *at <= to)
            .map(|(sent, at)| at - sent)
            .collect();
        all.sort();
        assert!(!all.is_empty());
        (all[all.len() / 2], *all.last().unwrap())
    };
    let (before_median, before_worst) = latencies(start - Duration::from_millis(500), start);
    let (game_median, game_worst) = latencies(start, done);
    let took = done - start;
    let sends: Vec<Duration> = pair.client_side.datagrams_sent[sent_from..]
        .iter()
        .map(|(at, _)| *at)
        .filter(|at| *at <= done)
        .collect();
    let peak_pps = sends
        .iter()
        .map(|from| {
            sends
                .iter()
                .filter(|at| **at >= *from && **at < *from + Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0);
    Transfer {
        rate: total as f64 / took.as_secs_f64(),
        game_median,
        game_worst,
        before_median,
        before_worst,
        peak_pps,
    }
}

#[test]
fn a_4_mib_transfer_on_a_clean_link_runs_past_1_mb_per_s_and_arrives_once_in_order() {
    let t = transfer(config(), link(MS, 0.0), 4 * 1024 * 1024, 1);
    println!("clean, 2 ms RTT: {t:?}");
    assert!(t.rate >= 1_000_000.0, "{:.0} B/s", t.rate);
    assert!(
        t.peak_pps > 300,
        "ran past the cadence: {} packets/s",
        t.peak_pps
    );
    assert!(
        t.game_worst <= t.before_worst + TICK,
        "the game's state is at most one tick later than before: {t:?}"
    );
}

#[test]
fn at_50_ms_rtt_and_random_loss_the_transfer_keeps_its_rate_and_arrives_exactly_once() {
    // 5 % loss seen before the transfer is the path's own, not congestion: the window does
    // not back off for it (docs/wire.md, "Bulk").
    for (loss, floor) in [(1.0, 1_000_000.0), (5.0, 1_000_000.0)] {
        let t = transfer(config(), link(25 * MS, loss), 1024 * 1024, 2);
        println!("{loss} % loss, 50 ms RTT: {t:?}");
        assert!(t.rate >= floor, "{loss} %: {:.0} B/s", t.rate);
        assert!(
            t.game_median <= t.before_median + TICK,
            "{loss} %: the game's state at most a tick later: {t:?}"
        );
    }
}

#[test]
fn a_queue_on_the_path_is_a_signal_so_the_game_state_is_not_held_behind_the_transfer() {
    // A 2 MB/s bottleneck with a deep buffer: a sender that filled it would add up to a
    // second of delay to every packet, the game's included.
    let bottleneck = link(10 * MS, 0.0)
        .with_rate_limit_bytes_per_sec(Some(2_000_000))
        .with_max_queue_delay(Duration::from_secs(1));
    let t = transfer(config(), bottleneck, 2 * 1024 * 1024, 3);
    println!("2 MB/s bottleneck, 20 ms RTT: {t:?}");
    assert!(t.rate >= 500_000.0, "{:.0} B/s", t.rate);
    assert!(
        t.game_median <= t.before_median + TICK,
        "the game's state waits at most a tick in the queue: {t:?}"
    );
}

#[test]
fn on_a_lossy_path_the_transfer_tolerates_its_random_loss_but_not_a_full_queue_above_it() {
    // 5 % random loss (the game's packets saw it before the transfer, so the window takes it
    // for the path's) and a 1 MB/s bottleneck whose short buffer (20 ms) overflows: the
    // overflow comes on top of the random loss, so it is still a signal, as is the queue's
    // delay. The transfer keeps a good share of the bottleneck and the game's state waits no
    // longer than before.
    let lossy = link(10 * MS, 5.0)
        .with_rate_limit_bytes_per_sec(Some(1_000_000))
        .with_max_queue_delay(20 * MS);
    let t = transfer(config(), lossy, 1024 * 1024, 6);
    println!("5 % loss, 1 MB/s bottleneck with a 20 ms buffer, 20 ms RTT: {t:?}");
    assert!(t.rate >= 300_000.0, "{:.0} B/s", t.rate);
    assert!(
        t.game_median <= t.before_median + TICK,
        "the game's state waits at most a tick: {t:?}"
    );
}

#[test]
fn with_the_bulk_window_off_or_a_bad_link_the_link_keeps_to_its_cadence() {
    let off = config().with_packet(Config::default().with_bulk_window_packets(0));
    let t = transfer(off, link(MS, 0.0), CHUNK, 4);
    assert!(t.peak_pps <= 31, "{} packets/s", t.peak_pps);
    // RTT over the 250 ms threshold: bad conditions, 10 packets/s and nothing extra.
    let far = link(150 * MS, 0.0);
    let t = transfer(config(), far, CHUNK, 5);
    assert!(t.peak_pps <= 11, "{} packets/s", t.peak_pps);
}
