//! Packet protection costs no heap: two endpoints sealing, opening and acking each other's
//! packets in steady state (AES-256-GCM, in place in the caller's buffers) allocate nothing.
//! Its own test binary without the libtest harness (`harness = false`), so the counting
//! allocator sees no other thread's work.

use std::alloc::System;
use std::time::Duration;

use ackwire_core::protection::PacketKeys;
use ackwire_core::{Config, Endpoint, Mode};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn main() {
    sealing_and_opening_in_steady_state_allocate_nothing();
    println!("test sealing_and_opening_in_steady_state_allocate_nothing ... ok");
}

/// `from` seals its next packet (carrying `payload`) at `now` into `buf`; its length.
fn seal(from: &mut Endpoint, now: Duration, payload: &[u8], buf: &mut [u8]) -> usize {
    from.poll_transmit_with(now, buf, |_, space| {
        space[..payload.len()].copy_from_slice(payload);
        payload.len()
    })
    .unwrap()
    .expect("a packet is due")
    .len
}

fn sealing_and_opening_in_steady_state_allocate_nothing() {
    let config = Config::default().with_initial_mode(Mode::Good);
    let mut a = Endpoint::new(config.clone(), Duration::ZERO).unwrap();
    let mut b = Endpoint::new(config, Duration::ZERO).unwrap();
    let (up, down) = (([0x11; 32], [0x22; 12]), ([0x33; 32], [0x44; 12]));
    a.protect(PacketKeys::aes_256_gcm(up, down)).unwrap();
    b.protect(PacketKeys::aes_256_gcm(down, up)).unwrap();
    let payload = [0x5Au8; 96];
    let mut round = |i: u64| {
        let now = Duration::from_millis(34 * i);
        let mut buf = [0u8; 1200];
        let len = seal(&mut a, now, &payload, &mut buf);
        assert_eq!(
            b.receive_in_place(now, &mut buf[..len]).unwrap().payload,
            payload
        );
        let len = seal(&mut b, now, &payload, &mut buf);
        assert_eq!(
            a.receive_in_place(now, &mut buf[..len]).unwrap().payload,
            payload
        );
        // Take the acks' events, as a driver does (a queue never drained would grow).
        while a.poll_event().is_some() || b.poll_event().is_some() {}
    };
    // Warm up: every ring grows to what a steady link holds.
    for i in 0..2_000 {
        round(i);
    }
    let region = Region::new(GLOBAL);
    for i in 2_000..12_000 {
        round(i);
    }
    let change = region.change();
    assert_eq!(change.allocations, 0, "{change:?}");
    assert_eq!(change.reallocations, 0, "{change:?}");
    assert_eq!(a.stats().counters.packets_unauthenticated, 0);
    assert!(a.stats().counters.packets_acked >= 11_990);
}
