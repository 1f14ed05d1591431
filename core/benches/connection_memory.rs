//! The memory budget of a connection: heap bytes a `Listener` holds per connection, measured
//! with the counting allocator (only what the listener's own calls allocate and free; the
//! clients live in the same process and are left out), in memory, no sockets.
//!
//! At 2,000 and 10,000 connections (spread over one 30 pps interval, in good mode, each
//! sending a 32-byte state update per packet that the listener echoes, as
//! `ackwire-peer listen` does): with no reliable traffic; with steady chat-rate reliable
//! traffic (a 32-byte reliable-ordered message every 3rd packet of each client, 10 per
//! second, echoed reliably too) after 5 s of it; and 3 s after the chat stopped (reliable
//! storage is freed after 2 s of quiet). The driver's fleet is `core/tests/fleet/mod.rs`.
//!
//! Run: `cargo bench -p ackwire-core --bench connection_memory`.

use std::time::Instant;

#[path = "../tests/fleet/mod.rs"]
mod fleet;

use fleet::Fleet;

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported (two sizes only).
    println!("heap bytes per connection held by a Listener (counting allocator, in memory)");
    println!(
        "{:>11} | {:>19} | {:>19} | {:>20} | {:>6}",
        "connections", "no reliable", "chat, 10 msgs/s", "3 s after it stops", "run"
    );
    for connections in [2_000, 10_000] {
        let started = Instant::now();
        let mut fleet = Fleet::new(connections);
        let [idle, busy, after] = fleet.memory_phases();
        assert!(fleet.chat_received > 0 && fleet.chat_echoed_back == fleet.chat_received);
        println!(
            "{connections:>11} | {:>19} | {:>19} | {:>20} | {:>5.1}s",
            kib(idle),
            kib(busy),
            kib(after),
            started.elapsed().as_secs_f64()
        );
    }
    println!("goal: chat <= 16 KiB; idle once the chat stops <= 4 KiB");
}

fn kib(bytes: f64) -> String {
    format!("{bytes:.0} B ({:.1} KiB)", bytes / 1024.0)
}
