//! A flood of connect requests costs the acceptor no memory: it answers each with a cookie and
//! keeps nothing. Its own test binary without the libtest harness (`harness = false`), so the
//! counting allocator sees no other thread's work.

use std::alloc::System;
use std::time::Duration;

use ackwire_core::control::ControlPacket;
use ackwire_core::{Accept, Acceptor, ConnectionConfig};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn main() {
    a_flood_of_connect_requests_allocates_nothing_and_stores_nothing();
    println!("test a_flood_of_connect_requests_allocates_nothing_and_stores_nothing ... ok");
}

fn a_flood_of_connect_requests_allocates_nothing_and_stores_nothing() {
    let config = ConnectionConfig::default();
    let mut acceptor = Acceptor::new(config.clone(), [9; 32]).unwrap();
    let mut request = [0u8; 33];
    ControlPacket::ConnectRequest {
        protocol_id: config.protocol_id,
    }
    .emit(&mut request)
    .unwrap();
    let mut reply = [0u8; 64];
    let mut address = *b"198.51.100.0:00000";
    let mut challenges = 0;

    let region = Region::new(GLOBAL);
    for i in 0..100_000u32 {
        // Every request from a different (spoofed) address and port.
        address[14..].copy_from_slice(&i.to_be_bytes()[..]);
        let now = Duration::from_micros(u64::from(i) * 10);
        if let Ok(Accept::Reply { len }) = acceptor.receive(now, &address, &request, &mut reply) {
            challenges += usize::from(len == 33);
        }
    }
    let change = region.change();

    assert_eq!(challenges, 100_000);
    assert_eq!(change.allocations, 0, "{change:?}");
    assert_eq!(change.bytes_allocated, 0);
    assert_eq!(acceptor.used_cookies(), 0);
}
