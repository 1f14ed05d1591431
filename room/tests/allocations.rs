//! The member adds no allocation per message to the core's: two natives linked over
//! (simulated) UDP, messages a→b on a reliable and an unreliable channel in steady state, the
//! heap counted through the members and through two bare core connections doing the same
//! work in the same run. Its own test binary without the libtest harness (`harness = false`),
//! so the counting allocator sees no other thread's work.

use std::alloc::System;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ackwire_core::{
    Accept, Acceptor, ChannelKind, Connection, ConnectionConfig, ConnectionEvent, Mode,
};
use ackwire_room::keys::{NoiseKeys, UdpKeys};
use ackwire_room::member::{Event, Member, MemberConfig, Output, Route};
use ackwire_room::signalling::{AppInfo, PeerKind};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// A packet interval in good mode (30 packets/s), and one message per channel in each.
const TICK: Duration = Duration::from_micros(33_334);
const WARM: u32 = 3_000;
const COUNTED: u32 = 3_000;

fn main() {
    for keyed in [false, true] {
        let core = core_allocations_per_message();
        let member = member_allocations_per_message(keyed);
        println!(
            "allocations per message: core {core:.3}, through the members {member:.3} ({})",
            if keyed { "encrypted" } else { "plaintext" }
        );
        assert!(
            member <= core + 0.001,
            "the member allocates beyond the core: {member} > {core}"
        );
        println!(
            "test the_member_adds_no_allocation_per_message_to_the_cores ({}) ... ok",
            if keyed { "encrypted" } else { "plaintext" }
        );
    }
}

fn app() -> AppInfo {
    AppInfo::new(
        "alloc-test",
        1,
        [
            ackwire_room::signalling::ChannelKind::UnreliableSequenced,
            ackwire_room::signalling::ChannelKind::ReliableOrdered,
        ],
    )
}

fn connection_config() -> ConnectionConfig {
    let mut config = ConnectionConfig::default();
    config.packet.initial_mode = Mode::Good;
    config
}

const PAYLOAD: [u8; 32] = [0x5A; 32];

/// Two bare core connections: `a` sends one reliable and one newest-wins message a tick.
fn core_allocations_per_message() -> f64 {
    let config = connection_config().with_channels(vec![
        ChannelKind::UnreliableSequenced,
        ChannelKind::ReliableOrdered,
        ChannelKind::ReliableOrdered,
    ]);
    let mut acceptor = Acceptor::new(config.clone(), [9; 32]).unwrap();
    let mut a = Connection::connect(config, Duration::ZERO).unwrap();
    let (mut buf, mut reply) = (vec![0u8; 1200], [0u8; 128]);
    let mut b = loop {
        let len = a.poll_transmit(Duration::ZERO, &mut buf).unwrap().unwrap();
        match acceptor
            .receive(Duration::ZERO, b"a", &buf[..len], &mut reply)
            .unwrap()
        {
            Accept::Reply { len } => a.receive(Duration::ZERO, &reply[..len]).unwrap(),
            Accept::Connection(b) => break *b,
            _ => {}
        }
    };
    let mut delivered = 0u64;
    let mut round = |i: u32, delivered: &mut u64| {
        let now = TICK * i;
        a.send(1, &PAYLOAD).unwrap();
        a.send_latest(0, &PAYLOAD).unwrap();
        while let Some(len) = a.poll_transmit(now, &mut buf).unwrap() {
            b.receive(now, &buf[..len]).unwrap();
        }
        while let Some(len) = b.poll_transmit(now, &mut buf).unwrap() {
            a.receive(now, &buf[..len]).unwrap();
        }
        while let Some(event) = b.poll_event() {
            if let ConnectionEvent::Message { .. } = event {
                *delivered += 1;
            }
        }
        while a.poll_event().is_some() {}
    };
    for i in 1..WARM {
        round(i, &mut delivered);
    }
    let before = delivered;
    let region = Region::new(GLOBAL);
    for i in WARM..WARM + COUNTED {
        round(i, &mut delivered);
    }
    let change = region.change();
    let messages = delivered - before;
    assert!(messages >= u64::from(COUNTED) * 2 - 10, "{messages}");
    (change.allocations + change.reallocations) as f64 / messages as f64
}

fn member(n: u8, udp: SocketAddr, keys: Option<Arc<dyn UdpKeys>>) -> Member {
    let mut config = MemberConfig::new("alloc", app(), PeerKind::Native, format!("inst{n}"));
    config.udp_addr = Some(udp);
    config.secret = [n; 32];
    config.connection = connection_config();
    config.udp_keys = keys;
    // Stats come once an hour, and so do clock pings once synced (in the warm-up): a report
    // a second and four pings a second are costs per second, not per message.
    config.stats_period = Duration::from_secs(3600);
    config.clock_period = Duration::from_secs(3600);
    Member::new(config, Duration::ZERO).unwrap()
}

fn welcome(me: u64, other: u64, udp: SocketAddr, key: Option<String>) -> String {
    let key = key.map_or(String::new(), |k| format!(r#","udp_key":"{k}""#));
    format!(
        r#"{{"type":"welcome","version":1,"room":"alloc","peer_id":{me},"token":"t{me}","resumed":false,"peers":[{{"id":{other},"kind":"native","udp_addr":"{udp}","instance":"inst{other}"{key}}}]}}"#
    )
}

/// Two members linked over simulated UDP: `a` sends one reliable and one newest-wins
/// message to `b` a tick.
fn member_allocations_per_message(keyed: bool) -> f64 {
    let (addr_a, addr_b): (SocketAddr, SocketAddr) = (
        "127.0.0.1:1".parse().unwrap(),
        "127.0.0.1:2".parse().unwrap(),
    );
    let keys: [Option<Arc<dyn UdpKeys>>; 2] = if keyed {
        [
            Some(Arc::new(NoiseKeys::generate())),
            Some(Arc::new(NoiseKeys::generate())),
        ]
    } else {
        [None, None]
    };
    let key_text = |k: &Option<Arc<dyn UdpKeys>>| k.as_ref().map(|k| k.public_key().to_string());
    let (welcome_a, welcome_b) = (
        welcome(1, 2, addr_b, key_text(&keys[1])),
        welcome(2, 1, addr_a, key_text(&keys[0])),
    );
    let mut a = member(1, addr_a, keys[0].clone());
    let mut b = member(2, addr_b, keys[1].clone());
    for (m, text) in [(&mut a, &welcome_a), (&mut b, &welcome_b)] {
        m.handle_timeout(Duration::ZERO);
        m.signalling_open(Duration::ZERO);
        m.handle_frame(Duration::ZERO, text).unwrap();
    }
    let mut delivered = 0u64;
    // Moves every datagram each member has for the other, and counts b's messages.
    let exchange = |now: Duration, a: &mut Member, b: &mut Member, delivered: &mut u64| {
        for _ in 0..4 {
            pump(now, a, b, addr_a, delivered);
            pump(now, b, a, addr_b, delivered);
        }
    };
    let mut now = Duration::ZERO;
    for _ in 0..100 {
        now += TICK;
        a.handle_timeout(now);
        b.handle_timeout(now);
        exchange(now, &mut a, &mut b, &mut delivered);
    }
    // a's link to b (its peer id is a's own name for b).
    let to_b = a.links(now)[0].peer;
    assert_eq!(
        a.links(now)[0].state,
        ackwire_room::member::LinkState::Connected
    );
    let round = |i: u32, a: &mut Member, b: &mut Member, delivered: &mut u64| {
        let now = TICK * (100 + i);
        a.send(to_b, 1, &PAYLOAD).unwrap();
        a.send_latest(to_b, 0, &PAYLOAD).unwrap();
        a.handle_timeout(now);
        b.handle_timeout(now);
        exchange(now, a, b, delivered);
    };
    for i in 1..WARM {
        round(i, &mut a, &mut b, &mut delivered);
    }
    let before = delivered;
    let region = Region::new(GLOBAL);
    for i in WARM..WARM + COUNTED {
        round(i, &mut a, &mut b, &mut delivered);
    }
    let change = region.change();
    let messages = delivered - before;
    assert!(messages >= u64::from(COUNTED) * 2 - 10, "{messages}");
    // Copies are freed as acks come: at most the last tick's is still out.
    assert!(a.links(now)[0].unconfirmed <= 1, "{:?}", a.links(now)[0]);
    (change.allocations + change.reallocations) as f64 / messages as f64
}

/// Hands `from`'s datagrams to `to` (and the buffers back to `from`); counts messages.
fn pump(
    now: Duration,
    from: &mut Member,
    to: &mut Member,
    from_addr: SocketAddr,
    delivered: &mut u64,
) {
    while let Some(output) = from.poll_output() {
        match output {
            Output::Transmit { datagram, .. } => {
                let _ = to.receive(now, Route::Udp(from_addr), &datagram);
                from.recycle(datagram);
            }
            Output::Event(Event::Message { .. }) => *delivered += 1,
            _ => {}
        }
    }
}
