//! Two endpoints driven the way real drivers drive them, in virtual time.
//!
//! Unlike `common::run_until`, which steps both sides whenever anything happens, each side
//! here wakes only when its own `poll_timeout` comes (a little late, like an OS timer) or when
//! a datagram arrives for it, and each keeps its own clock, offset from the other's by a
//! random phase. What a side measures is then what a native or browser driver would measure.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use ackwire_core::emulator::{EmulatorConfig, LinkEmulator};
use ackwire_core::{Config, Endpoint, Event, Stats};

/// splitmix64: the seeded source of phases and timer lateness.
#[derive(Debug, Clone)]
pub struct Random(u64);

impl Random {
    pub fn new(seed: u64) -> Random {
        Random(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, span)`.
    pub fn below(&mut self, span: Duration) -> Duration {
        let nanos = span.as_nanos() as u64;
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.next() % nanos)
    }
}

/// One side: an endpoint, its clock's offset from the shared one, and what it did.
pub struct Side {
    pub endpoint: Endpoint,
    /// This side's clock reads the shared clock plus this.
    pub offset: Duration,
    /// Shared-clock time of the side's next timer wake-up.
    wake_at: Duration,
    /// Events, with the side's own clock reading.
    pub events: Vec<(Duration, Event)>,
    /// `(shared time, header length)` of every packet sent.
    pub headers: Vec<(Duration, usize)>,
    /// Stats snapshots taken by `Driven::sample_every`.
    pub snapshots: Vec<(Duration, Stats)>,
}

impl Side {
    fn local(&self, shared: Duration) -> Duration {
        shared + self.offset
    }

    /// Header lengths of packets sent at or after `from` (shared clock).
    pub fn header_lens_since(&self, from: Duration) -> impl Iterator<Item = usize> + '_ {
        self.headers
            .iter()
            .filter(move |(at, _)| *at >= from)
            .map(|(_, len)| *len)
    }
}

/// Two sides and the links between them; `sides[0]` sends on `links[0]`.
pub struct Driven {
    pub now: Duration,
    pub sides: [Side; 2],
    pub links: [LinkEmulator; 2],
    random: Random,
    /// Timers fire up to this late (uniform), as OS timers do.
    pub timer_slack: Duration,
    sample_every: Option<Duration>,
    next_sample: Duration,
}

impl Driven {
    /// Sides on `configs`, `links[i]` carrying side `i`'s datagrams. Each clock starts at a
    /// random phase within one second of the shared zero.
    pub fn new(configs: [Config; 2], links: [EmulatorConfig; 2], seed: u64) -> Driven {
        let mut random = Random::new(seed);
        let [config_a, config_b] = configs;
        let [link_a, link_b] = links;
        let mut side = |config: Config| {
            let offset = random.below(Duration::from_secs(1));
            Side {
                endpoint: Endpoint::new(config, offset).unwrap(),
                offset,
                wake_at: Duration::ZERO,
                events: Vec::new(),
                headers: Vec::new(),
                snapshots: Vec::new(),
            }
        };
        let sides = [side(config_a), side(config_b)];
        let links = [
            LinkEmulator::new(link_a, random.next()).unwrap(),
            LinkEmulator::new(link_b, random.next()).unwrap(),
        ];
        Driven {
            now: Duration::ZERO,
            sides,
            links,
            random,
            timer_slack: Duration::from_millis(1),
            sample_every: None,
            next_sample: Duration::ZERO,
        }
    }

    /// Both sides on `config`, over links of the same conditions.
    pub fn symmetric(config: Config, link: EmulatorConfig, seed: u64) -> Driven {
        Driven::new([config.clone(), config], [link.clone(), link], seed)
    }

    /// Records both sides' stats every `period` (shared clock) from now on.
    pub fn sample_every(&mut self, period: Duration) {
        self.sample_every = Some(period);
        self.next_sample = self.now;
    }

    /// What a driver does after it woke for side `i`: send all that is due, take the events,
    /// and set its timer.
    fn flush(&mut self, i: usize) {
        let mut buf = [0u8; 1200];
        let now = self.sides[i].local(self.now);
        let side = &mut self.sides[i];
        while let Some(t) = side.endpoint.poll_transmit(now, &mut buf).unwrap() {
            side.headers.push((self.now, t.header_len));
            self.links[i].send(self.now, &buf[..t.len]);
        }
        while let Some(event) = side.endpoint.poll_event() {
            side.events.push((now, event));
        }
        let due = side.endpoint.poll_timeout().saturating_sub(side.offset);
        side.wake_at = due.max(self.now) + self.random.below(self.timer_slack);
    }

    /// Runs until the shared clock reaches `end`.
    pub fn run_until(&mut self, end: Duration) {
        for i in 0..2 {
            if self.sides[i].headers.is_empty() && self.now == Duration::ZERO {
                self.flush(i);
            }
        }
        loop {
            let arrivals = self.links.iter().map(|l| l.poll_timeout());
            let timers = self.sides.iter().map(|s| Some(s.wake_at));
            let sample = self.sample_every.map(|_| self.next_sample);
            let next = arrivals
                .chain(timers)
                .chain([sample])
                .flatten()
                .min()
                .unwrap_or(end);
            if next > end {
                self.now = end;
                return;
            }
            self.now = next.max(self.now);
            if let Some(period) = self.sample_every
                && self.next_sample <= self.now
            {
                for side in &mut self.sides {
                    side.snapshots.push((self.now, side.endpoint.stats()));
                }
                self.next_sample += period;
            }
            for i in 0..2 {
                // Datagrams on link i arrive at side 1 - i, which reads them all, then sends.
                let to = 1 - i;
                let mut arrived = false;
                while let Some(datagram) = self.links[i].poll_receive(self.now) {
                    let local = self.sides[to].local(self.now);
                    let _ = self.sides[to].endpoint.receive(local, &datagram);
                    arrived = true;
                }
                if arrived {
                    self.flush(to);
                }
            }
            for i in 0..2 {
                if self.sides[i].wake_at <= self.now {
                    let local = self.sides[i].local(self.now);
                    self.sides[i].endpoint.handle_timeout(local);
                    self.flush(i);
                }
            }
        }
    }

    pub fn run_for(&mut self, span: Duration) {
        self.run_until(self.now + span);
    }
}

/// A link with a fixed one-way delay and nothing else.
pub fn delayed(one_way: Duration) -> EmulatorConfig {
    EmulatorConfig::default().with_latency(one_way)
}
