//! One link to one remote peer: the core's endpoint, optionally wrapped in the core's link
//! emulator in both directions, carrying the demo's position in every packet.
//!
//! Plain Rust with no browser types, so it is tested natively; `client.rs` moves its bytes
//! over an RTCDataChannel.

use std::time::Duration;

use ackwire_core::emulator::{EmulatorConfig, LinkEmulator};
use ackwire_core::{Config, Endpoint, Event, Stats};

/// A datagram fits the seeds' safe UDP payload; WebRTC data channels carry it unchanged.
const DATAGRAM_BYTES: usize = 1200;
/// Demo payload: tag byte, then x and y as little-endian `f32`.
const POSITION_TAG: u8 = 0x01;
const POSITION_LEN: usize = 9;

/// Something the link learned that the page shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum LinkEvent {
    /// The remote player's dot is here (newest packet wins).
    Position { x: f32, y: f32 },
    /// The first of our packets the peer acknowledged, at this time.
    FirstAck { at: Duration },
}

/// Link emulation applied to this peer's traffic: the same settings in both directions.
#[derive(Debug, Clone)]
pub(crate) struct Emulation {
    pub(crate) config: EmulatorConfig,
    pub(crate) seed: u64,
}

#[derive(Debug)]
pub(crate) struct Link {
    endpoint: Endpoint,
    outbound: Option<LinkEmulator>,
    inbound: Option<LinkEmulator>,
    newest_position: Option<u16>,
    first_ack: Option<Duration>,
    buf: Vec<u8>,
}

impl Link {
    pub(crate) fn new(now: Duration, emulation: Option<&Emulation>) -> Result<Link, String> {
        let endpoint = Endpoint::new(Config::default(), now).map_err(|e| e.to_string())?;
        let emulator = |salt: u64| -> Result<Option<LinkEmulator>, String> {
            emulation
                .map(|e| {
                    LinkEmulator::new(e.config.clone(), e.seed ^ salt).map_err(|e| e.to_string())
                })
                .transpose()
        };
        Ok(Link {
            endpoint,
            outbound: emulator(0x6f75_7462)?,
            inbound: emulator(0x696e_626e)?,
            newest_position: None,
            first_ack: None,
            buf: vec![0; DATAGRAM_BYTES],
        })
    }

    /// A datagram arrived from the peer. Malformed or foreign datagrams are refused by the
    /// core with a typed error and change nothing; they are counted by the caller.
    pub(crate) fn receive(
        &mut self,
        now: Duration,
        datagram: &[u8],
        events: &mut Vec<LinkEvent>,
    ) -> Result<(), String> {
        match &mut self.inbound {
            Some(emulator) => {
                emulator.send(now, datagram);
                Ok(())
            }
            None => self.deliver(now, datagram, events),
        }
    }

    fn deliver(
        &mut self,
        now: Duration,
        datagram: &[u8],
        events: &mut Vec<LinkEvent>,
    ) -> Result<(), String> {
        let received = self
            .endpoint
            .receive(now, datagram)
            .map_err(|e| e.to_string())?;
        // Positions are "newest wins": a packet older than the newest one seen is not shown.
        let fresh = self
            .newest_position
            .is_none_or(|newest| ackwire_core::sequence::more_recent(received.sequence, newest));
        if fresh {
            if let Some((x, y)) = decode_position(received.payload) {
                self.newest_position = Some(received.sequence);
                events.push(LinkEvent::Position { x, y });
            }
        }
        self.drain_events(now, events);
        Ok(())
    }

    /// Sends what is due at `now` through `send`, delivers emulated arrivals, and reports what
    /// happened. Call at [`poll_timeout`](Self::poll_timeout) and after every receive.
    pub(crate) fn poll(
        &mut self,
        now: Duration,
        position: (f32, f32),
        mut send: impl FnMut(&[u8]),
        events: &mut Vec<LinkEvent>,
    ) {
        while let Some(datagram) = self.inbound.as_mut().and_then(|e| e.poll_receive(now)) {
            // A datagram the emulator lets through is handled like a real arrival; one the
            // core refuses is dropped here exactly as it would be off the wire.
            let _ = self.deliver(now, &datagram, events);
        }
        self.endpoint.handle_timeout(now);
        loop {
            let written = self
                .endpoint
                .poll_transmit_with(now, &mut self.buf, |_, space| {
                    encode_position(position, space)
                });
            match written {
                Ok(Some(t)) => match &mut self.outbound {
                    Some(emulator) => emulator.send(now, &self.buf[..t.len]),
                    None => send(&self.buf[..t.len]),
                },
                _ => break,
            }
        }
        while let Some(datagram) = self.outbound.as_mut().and_then(|e| e.poll_receive(now)) {
            send(&datagram);
        }
        self.drain_events(now, events);
    }

    fn drain_events(&mut self, now: Duration, events: &mut Vec<LinkEvent>) {
        while let Some(event) = self.endpoint.poll_event() {
            if let Event::Acked { .. } = event {
                if self.first_ack.is_none() {
                    self.first_ack = Some(now);
                    events.push(LinkEvent::FirstAck { at: now });
                }
            }
        }
    }

    /// When [`poll`](Self::poll) must run next.
    pub(crate) fn poll_timeout(&self) -> Duration {
        let mut at = self.endpoint.poll_timeout();
        for emulator in [&self.outbound, &self.inbound].into_iter().flatten() {
            if let Some(t) = emulator.poll_timeout() {
                at = at.min(t);
            }
        }
        at
    }

    pub(crate) fn stats(&self) -> Stats {
        self.endpoint.stats()
    }
}

fn encode_position((x, y): (f32, f32), space: &mut [u8]) -> usize {
    if space.len() < POSITION_LEN {
        return 0;
    }
    space[0] = POSITION_TAG;
    space[1..5].copy_from_slice(&x.to_le_bytes());
    space[5..9].copy_from_slice(&y.to_le_bytes());
    POSITION_LEN
}

fn decode_position(payload: &[u8]) -> Option<(f32, f32)> {
    if payload.len() != POSITION_LEN || payload[0] != POSITION_TAG {
        return None;
    }
    let x = f32::from_le_bytes(payload[1..5].try_into().ok()?);
    let y = f32::from_le_bytes(payload[5..9].try_into().ok()?);
    (x.is_finite() && y.is_finite()).then_some((x, y))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs two links against each other over a perfect wire for `secs` of virtual time.
    fn exchange(a: &mut Link, b: &mut Link, secs: u64) -> (Vec<LinkEvent>, Vec<LinkEvent>) {
        let (mut ev_a, mut ev_b) = (Vec::new(), Vec::new());
        let mut now = Duration::ZERO;
        while now < Duration::from_secs(secs) {
            let (mut to_b, mut to_a) = (Vec::new(), Vec::new());
            a.poll(now, (1.0, 2.0), |d| to_b.push(d.to_vec()), &mut ev_a);
            b.poll(now, (3.0, 4.0), |d| to_a.push(d.to_vec()), &mut ev_b);
            for d in to_b {
                b.receive(now, &d, &mut ev_b).unwrap();
            }
            for d in to_a {
                a.receive(now, &d, &mut ev_a).unwrap();
            }
            now = a
                .poll_timeout()
                .min(b.poll_timeout())
                .max(now + Duration::from_micros(1));
        }
        (ev_a, ev_b)
    }

    #[test]
    fn positions_cross_the_link_and_the_first_ack_is_reported_once() {
        let mut a = Link::new(Duration::ZERO, None).unwrap();
        let mut b = Link::new(Duration::ZERO, None).unwrap();
        let (ev_a, ev_b) = exchange(&mut a, &mut b, 3);
        assert!(ev_b.contains(&LinkEvent::Position { x: 1.0, y: 2.0 }));
        assert!(ev_a.contains(&LinkEvent::Position { x: 3.0, y: 4.0 }));
        let first_acks = ev_a
            .iter()
            .filter(|e| matches!(e, LinkEvent::FirstAck { .. }))
            .count();
        assert_eq!(first_acks, 1);
        assert!(a.stats().packets_acked > 20);
    }

    #[test]
    fn emulated_loss_shows_in_the_measured_loss() {
        let lossy = Emulation {
            config: EmulatorConfig {
                loss_percent: 10.0,
                ..EmulatorConfig::default()
            },
            seed: 7,
        };
        let mut a = Link::new(Duration::ZERO, Some(&lossy)).unwrap();
        let mut b = Link::new(Duration::ZERO, None).unwrap();
        exchange(&mut a, &mut b, 60);
        let loss = a.stats().loss_percent;
        // 10% each way on a's side; redundant acks make ack loss irrelevant, so a's packets
        // show ~10% (binomial spread over the 64-packet window allows a wide margin).
        assert!((2.0..=22.0).contains(&loss), "measured loss {loss}%");
        assert!(b.stats().packets_lost > 0);
    }

    #[test]
    fn garbage_datagrams_are_refused_without_disturbing_the_link() {
        let mut a = Link::new(Duration::ZERO, None).unwrap();
        let mut b = Link::new(Duration::ZERO, None).unwrap();
        exchange(&mut a, &mut b, 1);
        let before = b.stats();
        let mut events = Vec::new();
        assert!(
            b.receive(Duration::from_secs(1), &[0xFF, 0x00], &mut events)
                .is_err()
        );
        assert!(b.receive(Duration::from_secs(1), &[], &mut events).is_err());
        assert_eq!(b.stats(), before);
        assert!(events.is_empty());
    }

    #[test]
    fn malformed_position_payloads_are_ignored() {
        assert_eq!(decode_position(&[POSITION_TAG, 0, 0]), None);
        let mut nan = [0u8; POSITION_LEN];
        encode_position((f32::NAN, 1.0), &mut nan);
        assert_eq!(decode_position(&nan), None);
    }
}
