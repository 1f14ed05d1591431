//! Clocks in virtual time: members whose clocks are seconds apart and drift read each
//! other's within the bound they report, on a quiet network and at 10 % loss with 40 ms of
//! spread in each datagram's delay (the core emulator's 20 ms jitter, `latency ± jitter`);
//! the room's clock is one every member reads alike (`ackwire_room::clock`).

use crate::world;

use std::time::Duration;

use ackwire_room::member::ClockReading;
use ackwire_room::signalling::{PeerKind, Role};
use world::{Faults, Skew, World};

const S: Duration = Duration::from_secs(1);

/// A's reading of B's clock every 100 ms of virtual time for `run`: each reading is checked
/// against B's true clock and its own bound. Returns the errors once synced.
fn watch(w: &mut World, a: usize, b: usize, run: Duration) -> Vec<Duration> {
    let mut errors = Vec::new();
    let end = w.now + run;
    let peer = w.peer(a, b);
    while w.now < end {
        w.run_for(Duration::from_millis(100));
        let Some(reading) = w.with(a, |m, now| m.peer_clock(now, peer)) else {
            continue;
        };
        let truth = w.nodes[b].skew.local(w.now);
        let error = reading.time.abs_diff(truth);
        assert!(
            error <= reading.uncertainty,
            "at {:?}: off by {error:?}, outside its bound: {reading:?}",
            w.now
        );
        if reading.synced {
            errors.push(error);
        }
    }
    errors.sort();
    errors
}

fn pair(skew_b: Skew) -> (World, usize, usize) {
    let mut w = World::new();
    let a = w.add(PeerKind::Browser, |_| {});
    let b = w.add_skewed(PeerKind::Native, "home", skew_b, |_| {});
    w.run_until_true(2 * S, "link up", |w| w.fully_linked(&[a, b]));
    (w, a, b)
}

/// 3.25 s ahead of the world, running 80 ppm fast.
const SKEWED: Skew = Skew {
    ahead: Duration::from_millis(3250),
    ppm: 80,
};

#[test]
fn a_peer_clock_seconds_apart_is_read_within_a_millisecond_on_a_quiet_network() {
    let (mut w, a, b) = pair(SKEWED);
    // Synced within half a second of connecting: four pings 100 ms apart.
    let peer = w.peer(a, b);
    w.run_for(S);
    let reading = w
        .with(a, |m, now| m.peer_clock(now, peer))
        .expect("a reading");
    assert!(reading.synced, "{reading:?}");
    let errors = watch(&mut w, a, b, 60 * S);
    let worst = *errors.last().unwrap();
    assert!(worst <= Duration::from_millis(1), "worst error {worst:?}");
    // And B reads A's the same way.
    let errors = watch(&mut w, b, a, 10 * S);
    assert!(*errors.last().unwrap() <= Duration::from_millis(1));
}

#[test]
fn at_ten_percent_loss_and_20_ms_jitter_the_error_stays_within_the_jitter_and_the_bound() {
    let (mut w, a, b) = pair(SKEWED);
    w.seed_faults(7);
    w.set_faults(Faults {
        loss: 0.10,
        duplicate: 0.0,
        reorder: 1.0,
        max_delay: Duration::from_millis(40),
    });
    let errors = watch(&mut w, a, b, 120 * S);
    assert!(
        errors.len() > 1000,
        "synced for most of the run: {}",
        errors.len()
    );
    let (median, worst) = (errors[errors.len() / 2], *errors.last().unwrap());
    println!("clock error at 10 % loss, 20 ms jitter: median {median:?}, worst {worst:?}");
    assert!(worst <= Duration::from_millis(20), "worst error {worst:?}");
}

#[test]
fn every_member_of_a_room_reads_the_same_room_clock() {
    // A host room: the clients read the host's clock, the host its own.
    let mut w = World::new();
    let host = w.add_skewed(PeerKind::Native, "home", SKEWED, |c| c.role = Role::Host);
    let clients = [
        w.add(PeerKind::Browser, |c| c.role = Role::Client),
        w.add_skewed(
            PeerKind::Native,
            "home",
            Skew {
                ahead: Duration::from_secs(40),
                ppm: -50,
            },
            |c| c.role = Role::Client,
        ),
    ];
    w.run_until_true(3 * S, "clients linked", |w| {
        clients.iter().all(|&c| w.connected(c, host))
    });
    w.run_for(S);
    let on_host = w.with(host, |m, now| m.clock(now)).unwrap();
    assert_eq!(on_host, ClockReading::own(w.nodes[host].skew.local(w.now)));
    for c in clients {
        let reading = w.with(c, |m, now| m.clock(now)).expect("the host's clock");
        assert!(reading.synced);
        assert!(
            reading.time.abs_diff(on_host.time) <= Duration::from_millis(1),
            "{reading:?}"
        );
    }

    // A mesh: everyone reads the clock of the member the server numbered first.
    let mut w = World::new();
    let first = w.add_skewed(PeerKind::Native, "home", SKEWED, |_| {});
    let others = [
        w.add(PeerKind::Browser, |_| {}),
        w.add(PeerKind::Native, |_| {}),
    ];
    w.run_until_true(3 * S, "mesh linked", |w| {
        w.fully_linked(&[first, others[0], others[1]])
    });
    w.run_for(S);
    let truth = w.nodes[first].skew.local(w.now);
    assert_eq!(
        w.with(first, |m, now| m.clock(now)),
        Some(ClockReading::own(truth))
    );
    for n in others {
        let reading = w
            .with(n, |m, now| m.clock(now))
            .expect("the first member's clock");
        assert!(
            reading.time.abs_diff(truth) <= Duration::from_millis(1),
            "{reading:?}"
        );
    }
}
