//! What a `Listener` holds per connection, measured with the counting allocator (see
//! `fleet`): idle, with chat-rate reliable traffic, and after the traffic stops. Its own test
//! binary without the libtest harness (`harness = false`), so the counting allocator sees no
//! other thread's work.

use std::time::Duration;

#[path = "fleet/mod.rs"]
mod fleet;

use fleet::{CHAT_CHANNEL, Fleet};

fn main() {
    memory_returns_after_chat_traffic_stops();
    println!("test memory_returns_after_chat_traffic_stops ... ok");
    a_burst_of_the_full_window_is_delivered_and_its_storage_returned();
    println!("test a_burst_of_the_full_window_is_delivered_and_its_storage_returned ... ok");
    no_allocation_per_packet_at_chat_rate_after_warm_up();
    println!("test no_allocation_per_packet_at_chat_rate_after_warm_up ... ok");
}

/// Quiet reliable traffic frees its storage after `RELEASE_AFTER` (2 s); a little longer.
const QUIET: Duration = Duration::from_secs(3);

fn memory_returns_after_chat_traffic_stops() {
    let mut fleet = Fleet::new(200);
    let [idle, busy, after] = fleet.memory_phases();
    println!("  bytes per connection: idle {idle:.0}, chatting {busy:.0}, after {after:.0}");
    assert!(fleet.chat_received > 0 && fleet.chat_echoed_back == fleet.chat_received);
    // The budget (docs/architecture.md): 16 KiB chatting, 4 KiB idle once the chat stops,
    // and what the chat grew is returned (a few hundred bytes stay: the event queue and the
    // unreliable queues keep the room they grew to).
    assert!(busy <= 16_384.0, "{busy:.0} bytes per chatting connection");
    assert!(
        after <= 4_096.0,
        "{after:.0} bytes per connection after the chat"
    );
    assert!(
        after - idle <= 1_024.0,
        "{:.0} bytes per connection kept after the chat stopped",
        after - idle
    );
}

fn a_burst_of_the_full_window_is_delivered_and_its_storage_returned() {
    // The same fleet twice, one with a client sending a full window at once: the difference
    // is what the burst left in the listener (the timer wheel's buckets, a fixed cost that
    // a few connections cannot amortise, grow alike in both).
    let mut quiet = Fleet::new(16);
    let mut fleet = Fleet::new(16);
    // No state updates: the unreliable queue a burst delays keeps the capacity it grew to,
    // which is the queue's business, not the reliable window's.
    quiet.state = false;
    fleet.state = false;
    quiet.run_for(Duration::from_secs(1));
    fleet.run_for(Duration::from_secs(1));
    let client = &mut fleet.clients[0];
    let n = 1024u32;
    for i in 0..n {
        client
            .send(CHAT_CHANNEL, &i.to_le_bytes())
            .expect("window has room");
    }
    assert_eq!(client.buffered().reliable_in_flight, n as usize);
    if n == 1024 {
        assert!(
            client.send(CHAT_CHANNEL, b"one more").is_err(),
            "the window is full"
        );
    }
    quiet.run_for(Duration::from_secs(1));
    fleet.run_for(Duration::from_secs(1));
    assert_eq!(
        fleet.chat_received,
        u64::from(n),
        "every message arrived once"
    );
    assert_eq!(fleet.chat_echoed_back, u64::from(n), "and came back once");
    let burst = fleet.tally.net_bytes - quiet.tally.net_bytes;
    quiet.run_for(QUIET);
    fleet.run_for(QUIET);
    let kept = fleet.tally.net_bytes - quiet.tally.net_bytes;
    println!("  listener bytes beyond a quiet twin: {burst} after the burst, {kept} once quiet");
    assert!(burst > 8_192, "the rings grew to hold the burst");
    assert!(kept <= 1_024, "{kept} bytes kept after the burst");
}

fn no_allocation_per_packet_at_chat_rate_after_warm_up() {
    // Chat only, no state updates: two packets in three carry nothing but acks. A twin
    // without the chat shows what the listener allocates anyway (its timer wheel's buckets
    // still growing to their first full lap).
    let mut quiet = Fleet::new(100);
    let mut fleet = Fleet::new(100);
    quiet.state = false;
    fleet.state = false;
    fleet.chat = true;
    quiet.run_for(Duration::from_secs(3));
    fleet.run_for(Duration::from_secs(3));
    let (tally, chat, datagrams) = (fleet.tally, fleet.chat_received, fleet.datagrams_in);
    let quiet_tally = quiet.tally;
    quiet.run_for(Duration::from_secs(3));
    fleet.run_for(Duration::from_secs(3));
    let allocations = fleet.tally.allocations - tally.allocations;
    let baseline = quiet.tally.allocations - quiet_tally.allocations;
    let (chat, datagrams) = (fleet.chat_received - chat, fleet.datagrams_in - datagrams);
    println!(
        "  {allocations} allocations for {datagrams} datagrams carrying {chat} chat messages \
         ({baseline} without the chat)"
    );
    assert!(chat > 0 && datagrams > 2 * chat);
    // A message's own: the copy the listener hands out, and the echo's queued copy.
    assert!(
        allocations <= 2 * chat + baseline,
        "{allocations} allocations for {chat} messages in {datagrams} datagrams"
    );
}
