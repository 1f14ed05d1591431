//! Two endpoints joined by two emulated links, driven in virtual time.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashSet;
use std::time::Duration;

use ackwire_core::emulator::{EmulatorConfig, LinkEmulator};
use ackwire_core::{Config, Endpoint, Event};

/// Everything one side saw.
#[derive(Debug, Default)]
pub struct Log {
    pub events: Vec<(Duration, Event)>,
    /// Peer sequences this side accepted.
    pub received: HashSet<u16>,
    /// Own sequences this side sent.
    pub sent: HashSet<u16>,
}

impl Log {
    pub fn acked(&self) -> impl Iterator<Item = u16> + '_ {
        self.events.iter().filter_map(|(_, e)| match e {
            Event::Acked { sequence, .. } => Some(*sequence),
            _ => None,
        })
    }

    pub fn lost(&self) -> impl Iterator<Item = u16> + '_ {
        self.events.iter().filter_map(|(_, e)| match e {
            Event::Lost { sequence } => Some(*sequence),
            _ => None,
        })
    }
}

pub struct Pair {
    pub now: Duration,
    pub a: Endpoint,
    pub b: Endpoint,
    pub a_to_b: LinkEmulator,
    pub b_to_a: LinkEmulator,
    pub a_log: Log,
    pub b_log: Log,
}

impl Pair {
    pub fn new(config: Config, a_to_b: EmulatorConfig, b_to_a: EmulatorConfig, seed: u64) -> Pair {
        Pair {
            now: Duration::ZERO,
            a: Endpoint::new(config.clone(), Duration::ZERO).unwrap(),
            b: Endpoint::new(config, Duration::ZERO).unwrap(),
            a_to_b: LinkEmulator::new(a_to_b, seed).unwrap(),
            b_to_a: LinkEmulator::new(b_to_a, seed.wrapping_add(1)).unwrap(),
            a_log: Log::default(),
            b_log: Log::default(),
        }
    }

    /// Both sides over the same link conditions.
    pub fn symmetric(config: Config, link: EmulatorConfig, seed: u64) -> Pair {
        Pair::new(config, link.clone(), link, seed)
    }

    fn step(&mut self) {
        let now = self.now;
        let mut buf = [0u8; 1200];
        while let Some(datagram) = self.a_to_b.poll_receive(now) {
            if let Ok(packet) = self.b.receive(now, &datagram) {
                self.b_log.received.insert(packet.sequence);
            }
        }
        while let Some(datagram) = self.b_to_a.poll_receive(now) {
            if let Ok(packet) = self.a.receive(now, &datagram) {
                self.a_log.received.insert(packet.sequence);
            }
        }
        if let Some(t) = self.a.poll_transmit(now, &mut buf).unwrap() {
            self.a_log.sent.insert(t.sequence);
            self.a_to_b.send(now, &buf[..t.len]);
        }
        if let Some(t) = self.b.poll_transmit(now, &mut buf).unwrap() {
            self.b_log.sent.insert(t.sequence);
            self.b_to_a.send(now, &buf[..t.len]);
        }
        while let Some(event) = self.a.poll_event() {
            self.a_log.events.push((now, event));
        }
        while let Some(event) = self.b.poll_event() {
            self.b_log.events.push((now, event));
        }
    }

    /// Runs until `end`, waking exactly when an endpoint or a link asks to.
    pub fn run_until(&mut self, end: Duration) {
        run_until(self, end);
    }

    pub fn run_for(&mut self, span: Duration) {
        self.run_until(self.now + span);
    }
}

/// Something driven in virtual time: one step handles everything due at `now`.
pub trait Virtual {
    /// The virtual clock.
    fn clock(&mut self) -> &mut Duration;
    /// Handles everything due at the current time.
    fn step(&mut self);
    /// When each part (protocol sides and links) next needs a step.
    fn timeouts(&self) -> Vec<Option<Duration>>;
}

impl Virtual for Pair {
    fn clock(&mut self) -> &mut Duration {
        &mut self.now
    }

    fn step(&mut self) {
        Pair::step(self);
    }

    fn timeouts(&self) -> Vec<Option<Duration>> {
        vec![
            Some(self.a.poll_timeout()),
            Some(self.b.poll_timeout()),
            self.a_to_b.poll_timeout(),
            self.b_to_a.poll_timeout(),
        ]
    }
}

/// Steps `sim` until `end`, waking exactly when one of its parts asks to. Something due now
/// was handled by the step, so the clock always moves on (no spinning on one instant).
pub fn run_until(sim: &mut impl Virtual, end: Duration) {
    loop {
        sim.step();
        let now = *sim.clock();
        let next = sim.timeouts().into_iter().flatten().min().unwrap_or(end);
        let next = next.max(now + Duration::from_micros(1));
        if next > end {
            *sim.clock() = end;
            sim.step();
            return;
        }
        *sim.clock() = next;
    }
}
