//! The core's link emulator around one link, in both directions, as `tc netem` would sit on
//! a network interface: what a player asks for with `?latency=&jitter=&loss=` (browser) or
//! `--latency/--jitter/--loss` (native).

use std::time::Duration;

use ackwire_core::emulator::{EmulatorConfig, EmulatorError, LinkEmulator};

/// What the emulator does to a link, and from when.
#[derive(Debug, Clone, PartialEq)]
pub struct Emulation {
    /// The impairment, applied to both directions.
    pub config: EmulatorConfig,
    /// Seed of the outbound emulator; the inbound one uses a seed derived from it.
    pub seed: u64,
    /// The link is perfect until this long after the emulation starts, then impaired: lets a
    /// demo or a test watch a good link degrade. Zero: impaired from the start.
    pub impair_after: Duration,
}

impl Emulation {
    /// The same settings with the seed mixed with `salt`, so several links of one member do
    /// not drop in lockstep.
    pub fn salted(&self, salt: u64) -> Emulation {
        Emulation {
            seed: self.seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ..self.clone()
        }
    }
}

/// Two emulators, one per direction, that switch to the impairment at its time.
#[derive(Debug)]
pub struct TwoWay {
    outbound: LinkEmulator,
    inbound: LinkEmulator,
    /// The impairment still to apply, and when.
    pending: Option<(Duration, EmulatorConfig)>,
}

impl TwoWay {
    /// Emulators for `emulation`, started at `now`. Invalid settings are refused.
    pub fn new(emulation: &Emulation, now: Duration) -> Result<TwoWay, EmulatorError> {
        emulation.config.validate()?;
        let (initial, pending) = if emulation.impair_after.is_zero() {
            (emulation.config.clone(), None)
        } else {
            (
                EmulatorConfig::default(),
                Some((now + emulation.impair_after, emulation.config.clone())),
            )
        };
        Ok(TwoWay {
            outbound: LinkEmulator::new(initial.clone(), emulation.seed)?,
            inbound: LinkEmulator::new(initial, emulation.seed ^ 0x5DEE_CE66_D1CE_5EED)?,
            pending,
        })
    }

    fn impair_if_due(&mut self, now: Duration) {
        if let Some((at, config)) = &self.pending
            && now >= *at
        {
            // Validated in `new`.
            let _ = self.outbound.set_config(config.clone());
            let _ = self.inbound.set_config(config.clone());
            self.pending = None;
        }
    }

    /// A datagram leaving us enters the outbound emulator.
    pub fn send(&mut self, now: Duration, datagram: &[u8]) {
        self.impair_if_due(now);
        self.outbound.send(now, datagram);
    }

    /// A datagram that arrived from the network enters the inbound emulator.
    pub fn arrive(&mut self, now: Duration, datagram: &[u8]) {
        self.impair_if_due(now);
        self.inbound.send(now, datagram);
    }

    /// The next datagram the outbound emulator lets onto the network at `now`.
    pub fn poll_send(&mut self, now: Duration) -> Option<Vec<u8>> {
        self.impair_if_due(now);
        self.outbound.poll_receive(now)
    }

    /// The next datagram the inbound emulator delivers to us by `now`, with the time it was
    /// due: a driver that woke late hands it to the core at that time, so the lateness counts
    /// as the core's own hold (reported as ack delay) rather than as path.
    pub fn poll_arrive(&mut self, now: Duration) -> Option<(Duration, Vec<u8>)> {
        self.impair_if_due(now);
        let due = self.inbound.poll_timeout()?;
        self.inbound
            .poll_receive(now)
            .map(|datagram| (due, datagram))
    }

    /// When either direction has a datagram due, or the impairment starts.
    pub fn poll_timeout(&self) -> Option<Duration> {
        [
            self.outbound.poll_timeout(),
            self.inbound.poll_timeout(),
            self.pending.as_ref().map(|(at, _)| *at),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions_are_delayed_and_the_impairment_starts_on_time() {
        let emulation = Emulation {
            config: EmulatorConfig::default().with_latency(Duration::from_millis(50)),
            seed: 3,
            impair_after: Duration::from_secs(2),
        };
        let mut two = TwoWay::new(&emulation, Duration::ZERO).unwrap();
        // Before the impairment: straight through.
        two.send(Duration::ZERO, b"a");
        assert_eq!(two.poll_send(Duration::ZERO).as_deref(), Some(&b"a"[..]));
        assert_eq!(two.poll_timeout(), Some(Duration::from_secs(2)));
        // After: 50 ms each way.
        let t = Duration::from_secs(3);
        two.arrive(t, b"b");
        assert_eq!(two.poll_arrive(t), None);
        // Polled late, it still says when it was due.
        assert_eq!(
            two.poll_arrive(t + Duration::from_millis(60)),
            Some((t + Duration::from_millis(50), b"b".to_vec()))
        );
    }

    #[test]
    fn invalid_settings_are_refused() {
        let emulation = Emulation {
            config: EmulatorConfig::default().with_loss_percent(150.0),
            seed: 1,
            impair_after: Duration::ZERO,
        };
        assert!(TwoWay::new(&emulation, Duration::ZERO).is_err());
    }
}
