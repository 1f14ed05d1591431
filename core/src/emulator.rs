//! A seeded link emulator: latency, jitter, uniform and bursty (Gilbert–Elliott) loss,
//! duplication, reordering and a rate limit, applied to whatever datagrams are pushed through
//! it. It has the core's own shape (`send`, `poll_receive(now)`, `poll_timeout`), so a driver
//! or a test puts one in each direction of any link. The same seed and inputs always give the
//! same deliveries: randomness comes from the seed, never from the OS.

use core::cmp::Reverse;
use core::time::Duration;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Two-state bursty loss (Gilbert–Elliott): the link flips between a good and a bad state
/// once per datagram, and each state has its own loss probability. Probabilities in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GilbertElliott {
    /// Chance of moving from the good to the bad state, per datagram.
    pub good_to_bad: f64,
    /// Chance of moving from the bad back to the good state, per datagram.
    pub bad_to_good: f64,
    /// Loss probability in the good state.
    pub loss_in_good: f64,
    /// Loss probability in the bad state.
    pub loss_in_bad: f64,
}

/// What the emulated link does to datagrams. `Default` is a perfect, instant link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmulatorConfig {
    /// One-way delay added to every datagram.
    pub latency: Duration,
    /// Each datagram's delay varies uniformly within `latency ± jitter` (never below zero).
    pub jitter: Duration,
    /// Independent loss chance per datagram, in percent.
    pub loss_percent: f64,
    /// Bursty loss on top of the uniform loss; `None` for none.
    pub burst_loss: Option<GilbertElliott>,
    /// Chance a delivered datagram arrives twice, in percent.
    pub duplicate_percent: f64,
    /// Chance a datagram is held back by `reorder_delay`, arriving after later ones, in percent.
    pub reorder_percent: f64,
    /// Extra delay of a reordered datagram.
    pub reorder_delay: Duration,
    /// Link capacity in bytes per second; `None` for unlimited. Datagrams queue behind each
    /// other at this rate.
    pub rate_limit_bytes_per_sec: Option<u64>,
    /// With a rate limit, a datagram that would wait longer than this in the queue is dropped
    /// (a router's tail drop).
    pub max_queue_delay: Duration,
}

setters!(EmulatorConfig {
    with_latency => latency: Duration,
    with_jitter => jitter: Duration,
    with_loss_percent => loss_percent: f64,
    with_burst_loss => burst_loss: Option<GilbertElliott>,
    with_duplicate_percent => duplicate_percent: f64,
    with_reorder_percent => reorder_percent: f64,
    with_reorder_delay => reorder_delay: Duration,
    with_rate_limit_bytes_per_sec => rate_limit_bytes_per_sec: Option<u64>,
    with_max_queue_delay => max_queue_delay: Duration,
});

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            latency: Duration::ZERO,
            jitter: Duration::ZERO,
            loss_percent: 0.0,
            burst_loss: None,
            duplicate_percent: 0.0,
            reorder_percent: 0.0,
            reorder_delay: Duration::ZERO,
            rate_limit_bytes_per_sec: None,
            max_queue_delay: Duration::from_secs(1),
        }
    }
}

/// Why an [`EmulatorConfig`] was refused.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
#[non_exhaustive]
pub enum EmulatorError {
    /// A percentage or probability is out of range or not a number.
    #[error("{field} = {value} is out of range")]
    OutOfRange {
        /// The offending field.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// The rate limit is zero bytes per second.
    #[error("rate limit must be above zero")]
    ZeroRate,
}

impl EmulatorConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), EmulatorError> {
        let check = |field: &'static str, value: f64, max: f64| {
            if (0.0..=max).contains(&value) {
                Ok(())
            } else {
                Err(EmulatorError::OutOfRange { field, value })
            }
        };
        check("loss_percent", self.loss_percent, 100.0)?;
        check("duplicate_percent", self.duplicate_percent, 100.0)?;
        check("reorder_percent", self.reorder_percent, 100.0)?;
        if let Some(ge) = self.burst_loss {
            check("good_to_bad", ge.good_to_bad, 1.0)?;
            check("bad_to_good", ge.bad_to_good, 1.0)?;
            check("loss_in_good", ge.loss_in_good, 1.0)?;
            check("loss_in_bad", ge.loss_in_bad, 1.0)?;
        }
        if self.rate_limit_bytes_per_sec == Some(0) {
            return Err(EmulatorError::ZeroRate);
        }
        Ok(())
    }
}

/// SplitMix64: tiny, fast, and fully determined by its seed (not for cryptography).
#[derive(Debug, Clone)]
struct SeededRng(u64);

impl SeededRng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, probability: f64) -> bool {
        probability > 0.0 && self.unit() < probability
    }
}

/// Counts of what the emulator did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmulatorStats {
    /// Datagrams pushed in.
    pub sent: u64,
    /// Datagrams dropped (uniform, burst or queue loss).
    pub dropped: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Datagrams handed out by `poll_receive`.
    pub delivered: u64,
}

/// One direction of an emulated link.
#[derive(Debug, Clone)]
pub struct LinkEmulator {
    config: EmulatorConfig,
    rng: SeededRng,
    burst_bad: bool,
    link_free_at: Duration,
    /// Ordered by delivery time, then by arrival order (stable for equal times).
    in_flight: BinaryHeap<Reverse<(Duration, u64, Vec<u8>)>>,
    order: u64,
    stats: EmulatorStats,
}

impl LinkEmulator {
    /// An emulator with these conditions, its randomness fixed by `seed`.
    pub fn new(config: EmulatorConfig, seed: u64) -> Result<LinkEmulator, EmulatorError> {
        config.validate()?;
        Ok(LinkEmulator {
            config,
            rng: SeededRng(seed),
            burst_bad: false,
            link_free_at: Duration::ZERO,
            in_flight: BinaryHeap::new(),
            order: 0,
            stats: EmulatorStats::default(),
        })
    }

    /// Changes the conditions for datagrams sent from now on (in-flight ones keep theirs).
    pub fn set_config(&mut self, config: EmulatorConfig) -> Result<(), EmulatorError> {
        config.validate()?;
        self.config = config;
        Ok(())
    }

    /// The conditions in force.
    pub fn config(&self) -> &EmulatorConfig {
        &self.config
    }

    /// What the emulator has done so far.
    pub fn stats(&self) -> EmulatorStats {
        self.stats
    }

    /// Pushes one datagram into the link at `now`.
    pub fn send(&mut self, now: Duration, datagram: &[u8]) {
        self.stats.sent += 1;
        let burst_lost = match self.config.burst_loss {
            Some(ge) => {
                let flip = if self.burst_bad {
                    ge.bad_to_good
                } else {
                    ge.good_to_bad
                };
                if self.rng.chance(flip) {
                    self.burst_bad = !self.burst_bad;
                }
                let loss = if self.burst_bad {
                    ge.loss_in_bad
                } else {
                    ge.loss_in_good
                };
                self.rng.chance(loss)
            }
            None => false,
        };
        let uniform_lost = self.rng.chance(self.config.loss_percent / 100.0);
        if burst_lost || uniform_lost {
            self.stats.dropped += 1;
            return;
        }
        let mut departs = now;
        if let Some(rate) = self.config.rate_limit_bytes_per_sec {
            departs = self.link_free_at.max(now);
            if departs - now > self.config.max_queue_delay {
                self.stats.dropped += 1;
                return;
            }
            self.link_free_at =
                departs + Duration::from_secs_f64(datagram.len() as f64 / rate as f64);
        }
        let copies = if self.rng.chance(self.config.duplicate_percent / 100.0) {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let arrives = departs + self.delay();
            self.order += 1;
            self.in_flight
                .push(Reverse((arrives, self.order, datagram.to_vec())));
        }
    }

    fn delay(&mut self) -> Duration {
        let latency = self.config.latency.as_secs_f64();
        let jitter = self.config.jitter.as_secs_f64();
        let mut delay = latency + (self.rng.unit() * 2.0 - 1.0) * jitter;
        if self.rng.chance(self.config.reorder_percent / 100.0) {
            delay += self.config.reorder_delay.as_secs_f64();
        }
        Duration::from_secs_f64(delay.max(0.0))
    }

    /// The next datagram that has arrived by `now`, if any.
    pub fn poll_receive(&mut self, now: Duration) -> Option<Vec<u8>> {
        match self.in_flight.peek() {
            Some(Reverse((arrives, _, _))) if *arrives <= now => {
                self.stats.delivered += 1;
                self.in_flight
                    .pop()
                    .map(|Reverse((_, _, datagram))| datagram)
            }
            _ => None,
        }
    }

    /// When the next datagram arrives, if any is in flight.
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.in_flight
            .peek()
            .map(|Reverse((arrives, _, _))| *arrives)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn run(config: EmulatorConfig, seed: u64, count: u32) -> Vec<(Duration, Vec<u8>)> {
        let mut link = LinkEmulator::new(config, seed).unwrap();
        for i in 0..count {
            link.send(i * 10 * MS, &i.to_be_bytes());
        }
        let mut out = Vec::new();
        while let Some(at) = link.poll_timeout() {
            out.push((at, link.poll_receive(at).unwrap()));
        }
        out
    }

    #[test]
    fn perfect_link_delivers_everything_in_order_after_the_latency() {
        let config = EmulatorConfig {
            latency: 40 * MS,
            ..EmulatorConfig::default()
        };
        let out = run(config, 1, 10);
        assert_eq!(out.len(), 10);
        for (i, (at, bytes)) in out.iter().enumerate() {
            assert_eq!(*at, (i as u32 * 10 + 40) * MS);
            assert_eq!(bytes, &(i as u32).to_be_bytes());
        }
    }

    #[test]
    fn same_seed_gives_the_same_deliveries_and_another_seed_does_not() {
        let config = EmulatorConfig {
            latency: 30 * MS,
            jitter: 20 * MS,
            loss_percent: 20.0,
            duplicate_percent: 5.0,
            reorder_percent: 5.0,
            reorder_delay: 50 * MS,
            ..EmulatorConfig::default()
        };
        assert_eq!(run(config.clone(), 7, 500), run(config.clone(), 7, 500));
        assert_ne!(run(config.clone(), 7, 500), run(config, 8, 500));
    }

    #[test]
    fn uniform_loss_drops_about_the_configured_share() {
        let config = EmulatorConfig {
            loss_percent: 25.0,
            ..EmulatorConfig::default()
        };
        let delivered = run(config, 3, 10_000).len();
        assert!((7300..=7700).contains(&delivered), "{delivered}");
    }

    #[test]
    fn burst_loss_drops_in_runs() {
        // Mean bad run 1/0.25 = 4 datagrams, bad 1/6 of the time, everything lost while bad.
        let config = EmulatorConfig {
            burst_loss: Some(GilbertElliott {
                good_to_bad: 0.05,
                bad_to_good: 0.25,
                loss_in_good: 0.0,
                loss_in_bad: 1.0,
            }),
            ..EmulatorConfig::default()
        };
        let out = run(config, 11, 20_000);
        let received: Vec<u32> = out
            .iter()
            .map(|(_, b)| u32::from_be_bytes(b[..4].try_into().unwrap()))
            .collect();
        let lost = 20_000 - received.len();
        let gaps = received.windows(2).filter(|w| w[1] != w[0] + 1).count();
        let mean_run = lost as f64 / gaps as f64;
        assert!((2800..=3900).contains(&lost), "lost {lost}");
        assert!(mean_run > 3.0, "losses come in runs, mean {mean_run}");
    }

    #[test]
    fn duplication_and_reordering_happen_at_the_configured_rates() {
        let config = EmulatorConfig {
            latency: 10 * MS,
            duplicate_percent: 10.0,
            reorder_percent: 10.0,
            reorder_delay: 35 * MS,
            ..EmulatorConfig::default()
        };
        let out = run(config, 5, 5_000);
        let dupes = out.len() - 5_000;
        assert!((400..=600).contains(&dupes), "{dupes}");
        let seq: Vec<u32> = out
            .iter()
            .map(|(_, b)| u32::from_be_bytes(b[..4].try_into().unwrap()))
            .collect();
        let out_of_order = seq.windows(2).filter(|w| w[1] < w[0]).count();
        assert!(out_of_order > 300, "{out_of_order}");
    }

    #[test]
    fn rate_limit_queues_and_tail_drops() {
        // 1000 B/s, 100-byte datagrams every 10 ms: 10x the capacity.
        let mut link = LinkEmulator::new(
            EmulatorConfig {
                rate_limit_bytes_per_sec: Some(1000),
                max_queue_delay: 500 * MS,
                ..EmulatorConfig::default()
            },
            1,
        )
        .unwrap();
        for i in 0..100u32 {
            link.send(i * 10 * MS, &[0u8; 100]);
        }
        let mut arrivals = Vec::new();
        while let Some(at) = link.poll_timeout() {
            link.poll_receive(at).unwrap();
            arrivals.push(at);
        }
        assert!(arrivals.windows(2).all(|w| w[1] - w[0] >= 100 * MS));
        assert!(link.stats().dropped > 80, "{:?}", link.stats());
    }

    #[test]
    fn out_of_range_settings_are_refused() {
        let config = EmulatorConfig {
            loss_percent: 101.0,
            ..EmulatorConfig::default()
        };
        assert_eq!(
            LinkEmulator::new(config, 0).unwrap_err(),
            EmulatorError::OutOfRange {
                field: "loss_percent",
                value: 101.0
            }
        );
        let zero = EmulatorConfig {
            rate_limit_bytes_per_sec: Some(0),
            ..EmulatorConfig::default()
        };
        assert_eq!(
            LinkEmulator::new(zero, 0).unwrap_err(),
            EmulatorError::ZeroRate
        );
    }
}
