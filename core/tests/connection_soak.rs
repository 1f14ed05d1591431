//! Soak: ten virtual minutes of game-like traffic both ways over a link with 20% loss,
//! jitter, reordering and duplication, plus a 2 s total blackout. Every reliable message is
//! delivered exactly once (in order on the ordered channel), the sequenced channel never goes
//! backwards, and the buffers stay within their bounds throughout.

mod pair;

use std::collections::HashSet;
use std::time::Duration;

use ackwire_core::emulator::EmulatorConfig;
use ackwire_core::frame::{MAX_MESSAGE_SIZE, RELIABLE_WINDOW};
use ackwire_core::{ChannelKind, Connection, ConnectionConfig, ConnectionState, SendError};
use pair::{ConnPair, Side};

const MS: Duration = Duration::from_millis(1);
const SNAPSHOT: u8 = 0;
const ORDERED: u8 = 1;
const UNORDERED: u8 = 2;

/// What one side's application sent (and had accepted) and still has to send.
#[derive(Default)]
struct App {
    next: u32,
    ordered_sent: Vec<Vec<u8>>,
    unordered_sent: Vec<Vec<u8>>,
    backlog: Vec<(u8, Vec<u8>)>,
    window_full: u32,
}

impl App {
    /// One 50 ms game tick: a snapshot, an event on each reliable channel, and every 5 s a
    /// 20 KB state blob (fragmented). Refused sends wait in the app's backlog (backpressure).
    fn tick(&mut self, connection: &mut Connection, tick: u32) {
        let n = self.next;
        self.next += 1;
        connection.send(SNAPSHOT, &n.to_be_bytes()).unwrap();
        let size = 4 + (n as usize * 37) % 200;
        let mut event = n.to_be_bytes().to_vec();
        event.resize(size, n as u8);
        self.backlog.push((ORDERED, event.clone()));
        self.backlog.push((UNORDERED, event));
        if tick.is_multiple_of(100) {
            let mut blob = n.to_be_bytes().to_vec();
            blob.resize(20_000, (n % 251) as u8);
            self.backlog.push((ORDERED, blob));
        }
        let mut kept = Vec::new();
        for (channel, bytes) in self.backlog.drain(..) {
            // Keep the ordered channel's order: once one is refused, later ones wait too.
            let blocked = channel == ORDERED && kept.iter().any(|(c, _)| *c == ORDERED);
            if blocked {
                kept.push((channel, bytes));
                continue;
            }
            match connection.send(channel, &bytes) {
                Ok(()) if channel == ORDERED => self.ordered_sent.push(bytes),
                Ok(()) => self.unordered_sent.push(bytes),
                Err(SendError::WindowFull { .. }) => {
                    self.window_full += 1;
                    kept.push((channel, bytes));
                }
                Err(e) => panic!("{e}"),
            }
        }
        self.backlog = kept;
    }
}

fn check_delivery(sender: &App, receiver: &Side) {
    let ordered: Vec<&[u8]> = receiver.messages(ORDERED).collect();
    assert_eq!(ordered.len(), sender.ordered_sent.len());
    assert!(
        ordered
            .iter()
            .zip(&sender.ordered_sent)
            .all(|(got, sent)| *got == sent.as_slice()),
        "ordered channel out of order or corrupted"
    );
    let unordered: Vec<&[u8]> = receiver.messages(UNORDERED).collect();
    let distinct: HashSet<&[u8]> = unordered.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        unordered.len(),
        "an unordered message arrived twice"
    );
    let sent: HashSet<&[u8]> = sender.unordered_sent.iter().map(Vec::as_slice).collect();
    assert_eq!(distinct, sent);
    let snapshots: Vec<u32> = receiver
        .messages(SNAPSHOT)
        .map(|b| u32::from_be_bytes(b.try_into().unwrap()))
        .collect();
    assert!(
        snapshots.windows(2).all(|w| w[0] < w[1]),
        "snapshots went backwards"
    );
    assert!(
        snapshots.len() as u32 > sender.next / 2,
        "{}",
        snapshots.len()
    );
}

#[test]
fn ten_minutes_at_20_percent_loss_with_a_blackout_deliver_every_reliable_message_once() {
    let config = ConnectionConfig::default().with_channels(vec![
        ChannelKind::UnreliableSequenced,
        ChannelKind::ReliableOrdered,
        ChannelKind::ReliableUnordered,
    ]);
    let link = EmulatorConfig::default()
        .with_latency(50 * MS)
        .with_jitter(25 * MS)
        .with_loss_percent(20.0)
        .with_duplicate_percent(3.0)
        .with_reorder_percent(5.0)
        .with_reorder_delay(40 * MS);
    let blackout = link.clone().with_loss_percent(100.0);
    let mut pair = ConnPair::new(config, link.clone(), 2024);
    pair.connect();
    let (mut client_app, mut server_app) = (App::default(), App::default());
    let mut peak = ackwire_core::Buffered::default();
    let start = pair.now;
    let end = start + Duration::from_secs(600);
    let mut tick = 0u32;
    while pair.now < end {
        let at = start + 50 * MS * tick;
        if at == start + Duration::from_secs(300) {
            pair.set_link(blackout.clone());
        }
        if at == start + Duration::from_secs(302) {
            pair.set_link(link.clone());
        }
        client_app.tick(&mut pair.client, tick);
        server_app.tick(pair.server.as_mut().unwrap(), tick);
        pair.run_until(at + 50 * MS);
        for b in [pair.client.buffered(), pair.server().buffered()] {
            peak.reliable_in_flight = peak.reliable_in_flight.max(b.reliable_in_flight);
            peak.reliable_send_bytes = peak.reliable_send_bytes.max(b.reliable_send_bytes);
            peak.unreliable_queued = peak.unreliable_queued.max(b.unreliable_queued);
            peak.receive_held = peak.receive_held.max(b.receive_held);
            peak.receive_bytes = peak.receive_bytes.max(b.receive_bytes);
        }
        tick += 1;
    }
    // Let everything in flight land.
    pair.run_for(Duration::from_secs(30));

    assert_eq!(
        pair.client.state(),
        ConnectionState::Connected,
        "survived the blackout"
    );
    assert_eq!(pair.server().state(), ConnectionState::Connected);
    assert!(client_app.backlog.is_empty() && server_app.backlog.is_empty());
    check_delivery(&client_app, &pair.server_side);
    check_delivery(&server_app, &pair.client_side);
    assert!(client_app.ordered_sent.len() > 11_000);

    // Bounded memory: two reliable channels, each at most a window of ids; each id holds at
    // most one fragment (1 KiB). Snapshots (20/s) queue while the link is silent (the 2 s
    // blackout counts as bad conditions: 10 packets/s) and until reliable data drains; the
    // queue stays far below its configured bound.
    let window = 2 * usize::from(RELIABLE_WINDOW);
    assert!(peak.reliable_in_flight <= window, "{peak:?}");
    assert!(peak.receive_held <= window, "{peak:?}");
    assert!(peak.reliable_send_bytes <= window * 1024, "{peak:?}");
    assert!(peak.receive_bytes <= 2 * MAX_MESSAGE_SIZE, "{peak:?}");
    assert!(peak.unreliable_queued <= 64, "{peak:?}");
    for b in [pair.client.buffered(), pair.server().buffered()] {
        assert_eq!(b, ackwire_core::Buffered::default(), "drained at the end");
    }

    let stats = pair.client.stats();
    assert!(stats.loss_percent > 5.0, "{stats:?}");
    assert!(stats.messages_resent > 1000, "{stats:?}");
    eprintln!(
        "soak: {} packets sent, {} messages resent, {} window-full refusals, peak {peak:?}",
        stats.counters.packets_sent, stats.messages_resent, client_app.window_full
    );
}
