//! A peer's clock, as this member estimates it: pings and pongs on the control channel
//! (docs/wire.md, "Room members", "Clock"), each giving the peer's clock reading between our
//! ping's departure and its pong's arrival.
//!
//! One exchange bounds the truth: the peer read its clock `remote` after our ping left at
//! `sent` and before its pong came back at `back` (our clock), so its clock runs ahead of
//! ours by between `remote - back` and `remote - sent`, whatever the path's asymmetry,
//! queueing or pacing did to the exchange: an exchange that waited (a resend, a queue, the
//! sender's next pacing slot) only has a wider interval. Every interval holds the truth, once
//! widened by what the two clocks may have drifted apart since it was taken ([`DRIFT_PPM`]);
//! so does their intersection, whose midpoint is the reading and half whose width its bound.
//! The estimator keeps the last [`WINDOW`] exchanges.

use std::time::Duration;

use ackwire_core::Connection;

use crate::delivery::DeliveryError;

/// The control message that asks the peer for its clock: `0x03`, then our clock.
pub(crate) const PING: u8 = 3;
/// The answer: `0x04`, the ping's clock as it came, then the answering member's clock.
pub(crate) const PONG: u8 = 4;
/// A ping's length: the type and one microsecond count.
pub(crate) const PING_LEN: usize = 1 + 8;
/// A pong's length: the type and two microsecond counts.
pub(crate) const PONG_LEN: usize = 1 + 8 + 8;

/// Exchanges kept: the reading rests on all of them.
pub const WINDOW: usize = 16;
/// Exchanges before the estimate says it is synced.
pub const SYNCED_AFTER: u32 = 4;
/// Pings while not yet synced: one every this long (queued at the member's next step after
/// it), so a new link is synced within about half a second.
pub const FAST_PING: Duration = Duration::from_millis(100);
/// Pings once synced, one every this long by default (`MemberConfig::clock_period`): the
/// window then covers the last 4 s.
pub const SLOW_PING: Duration = Duration::from_millis(250);
/// How far two clocks may drift apart, in parts per million, for the bound: quartz clocks of
/// ordinary machines stay within ±50 ppm of true time each.
pub const DRIFT_PPM: u64 = 100;
/// An exchange whose round trip took longer than this is not taken (its bound says little,
/// and a pong that old may answer a ping of an earlier link).
const MAX_ROUND_TRIP: Duration = Duration::from_secs(10);

/// A control message of the clock's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClockMessage {
    /// The sender's clock, in microseconds.
    Ping { sent: u64 },
    /// The ping's clock echoed, and the answering member's clock when it took the ping.
    Pong { sent: u64, remote: u64 },
}

impl ClockMessage {
    /// Whether `bytes` (a control message) is one of the clock's.
    pub(crate) fn is_clock(bytes: &[u8]) -> bool {
        matches!(bytes.first(), Some(&PING | &PONG))
    }

    /// Reads a clock message; `None` for a wrong length (or another type).
    pub(crate) fn parse(bytes: &[u8]) -> Option<ClockMessage> {
        let word = |at: usize| {
            bytes
                .get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
        };
        match (bytes.first(), bytes.len()) {
            (Some(&PING), PING_LEN) => Some(ClockMessage::Ping { sent: word(1)? }),
            (Some(&PONG), PONG_LEN) => Some(ClockMessage::Pong {
                sent: word(1)?,
                remote: word(9)?,
            }),
            _ => None,
        }
    }

    /// Its bytes, in a buffer on the stack (`len` of them): a ping a quarter second per
    /// link should not cost a heap allocation of its own.
    pub(crate) fn encode(&self) -> ([u8; PONG_LEN], usize) {
        let mut out = [0u8; PONG_LEN];
        match *self {
            ClockMessage::Ping { sent } => {
                out[0] = PING;
                out[1..9].copy_from_slice(&sent.to_le_bytes());
                (out, PING_LEN)
            }
            ClockMessage::Pong { sent, remote } => {
                out[0] = PONG;
                out[1..9].copy_from_slice(&sent.to_le_bytes());
                out[9..17].copy_from_slice(&remote.to_le_bytes());
                (out, PONG_LEN)
            }
        }
    }

    #[cfg(test)]
    fn to_vec(self) -> Vec<u8> {
        let (bytes, len) = self.encode();
        bytes[..len].to_vec()
    }
}

/// A member's clock as a microsecond count on the wire.
pub(crate) fn micros(now: Duration) -> u64 {
    // Without `as_micros`'s u128: 128-bit arithmetic costs the browser's bundle ~0.5 KB.
    now.as_secs()
        .saturating_mul(1_000_000)
        .saturating_add(u64::from(now.subsec_micros()))
}

/// A clock reading as i64 µs (ours and peers' clocks count from their rooms' start: they fit
/// i64 for 290,000 years).
fn signed(micros: u64) -> i64 {
    i64::try_from(micros).unwrap_or(i64::MAX)
}

/// What the member knows of another clock at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClockReading {
    /// The other clock's time at the moment asked about (`now` in the asker's clock): a
    /// member's clock is the `now` its driver passes it, so the time since that member's room
    /// began (`Room::join`).
    pub time: Duration,
    /// The reading is within this of the other clock's true time: at most half the round
    /// trip of the best exchange it rests on (the others narrow it), plus what the clocks
    /// may have drifted apart since ([`DRIFT_PPM`]). Zero for a member's own clock.
    pub uncertainty: Duration,
    /// Exchanges the reading rests on, at most [`WINDOW`].
    pub samples: u32,
    /// At least [`SYNCED_AFTER`] exchanges came back on this link: the reading is as good as
    /// the path allows (its own clock: always).
    pub synced: bool,
}

impl ClockReading {
    /// A member's own clock: exact.
    pub fn own(now: Duration) -> ClockReading {
        ClockReading {
            time: now,
            uncertainty: Duration::ZERO,
            samples: 0,
            synced: true,
        }
    }
}

/// One exchange: when its pong came back, and the bounds it sets on the peer's clock minus
/// ours, in µs: `remote - back` to `remote - sent`.
#[derive(Debug, Clone, Copy)]
struct Exchange {
    back: Duration,
    low: i64,
    high: i64,
}

/// The peer's clock may have drifted this far from ours (µs) in `age`.
fn drift(age: Duration) -> i64 {
    signed(micros(age).saturating_mul(DRIFT_PPM) / 1_000_000)
}

/// The estimate of one peer's clock, and when to ask it next.
#[derive(Debug, Clone, Default)]
pub(crate) struct PeerClock {
    /// The last [`WINDOW`] exchanges, a ring whose next slot is `next`.
    exchanges: Vec<Exchange>,
    next: usize,
    /// Exchanges taken so far.
    taken: u32,
    next_ping: Duration,
}

impl PeerClock {
    /// A ping to send at `now`, if one is due: every [`FAST_PING`] until synced, then every
    /// `period` (`MemberConfig::clock_period`), counted from the last one that went out
    /// ([`pinged`](Self::pinged)).
    pub(crate) fn ping_due(&self, now: Duration) -> Option<ClockMessage> {
        (now >= self.next_ping).then(|| ClockMessage::Ping { sent: micros(now) })
    }

    /// The ping due at `now` was queued: the next is due a period later. One the connection
    /// refused (its control channel's window full) stays due, and is tried at the member's
    /// next step.
    pub(crate) fn pinged(&mut self, now: Duration, period: Duration) {
        let every = if self.taken < SYNCED_AFTER {
            FAST_PING
        } else {
            period
        };
        self.next_ping = now + every;
    }

    /// A clock message arrived on the control channel (`control`) of `core` at `now`: a ping
    /// is answered at once, so the pong leaves with the prompt reply to the packet that
    /// brought it; a pong is taken. A ping or pong of the wrong length is refused, before its
    /// packet is acknowledged, like any unreadable control message.
    pub(crate) fn take(
        &mut self,
        core: &mut Connection,
        control: u8,
        now: Duration,
        bytes: &[u8],
    ) -> Result<(), DeliveryError> {
        match ClockMessage::parse(bytes).ok_or(DeliveryError::Control)? {
            ClockMessage::Ping { sent } => {
                let pong = ClockMessage::Pong {
                    sent,
                    remote: micros(now),
                };
                // A pong that cannot be queued (the control channel's window is full) is a
                // sample the peer misses; it pings again.
                let (bytes, len) = pong.encode();
                let _ = core.send(control, &bytes[..len]);
            }
            ClockMessage::Pong { sent, remote } => self.pong(now, sent, remote),
        }
        Ok(())
    }

    /// A pong came back at `now`: takes its exchange unless the ping it echoes cannot be ours
    /// (from the future, or older than [`MAX_ROUND_TRIP`]).
    pub(crate) fn pong(&mut self, now: Duration, sent: u64, remote: u64) {
        let back = micros(now);
        let Some(round_trip) = back.checked_sub(sent) else {
            return;
        };
        if Duration::from_micros(round_trip) > MAX_ROUND_TRIP {
            return;
        }
        let exchange = Exchange {
            back: now,
            low: signed(remote).saturating_sub(signed(back)),
            high: signed(remote).saturating_sub(signed(sent)),
        };
        match self.exchanges.get_mut(self.next) {
            Some(slot) => *slot = exchange,
            None => self.exchanges.push(exchange),
        }
        self.next = (self.next + 1) % WINDOW;
        self.taken = self.taken.saturating_add(1);
    }

    /// The peer's clock at `now` (ours), once an exchange came back.
    pub(crate) fn reading(&self, now: Duration) -> Option<ClockReading> {
        let taken = &self.exchanges;
        if taken.is_empty() {
            return None;
        }
        // Each exchange, widened by the drift since it was taken, holds the truth: so does
        // their intersection, which is never wider than the best exchange's own bounds.
        // Bounds that do not meet (clocks that drifted more than allowed, or a peer that
        // does not keep one clock) leave the narrowest exchange alone as the best guess.
        let (mut meet, mut narrowest) = ((i64::MIN, i64::MAX), None::<(i64, i64)>);
        for e in taken {
            let d = drift(now.saturating_sub(e.back));
            let (low, high) = (e.low.saturating_sub(d), e.high.saturating_add(d));
            meet = (meet.0.max(low), meet.1.min(high));
            if narrowest.is_none_or(|(l, h)| high.saturating_sub(low) < h.saturating_sub(l)) {
                narrowest = Some((low, high));
            }
        }
        let (low, high) = if meet.0 <= meet.1 { meet } else { narrowest? };
        // The midpoint and half the width, rounded up, without overflowing.
        let middle = low / 2 + high / 2 + (low % 2 + high % 2) / 2;
        let half = high.abs_diff(low).div_ceil(2);
        let time = signed(micros(now)).saturating_add(middle);
        Some(ClockReading {
            time: Duration::from_micros(u64::try_from(time).unwrap_or(0)),
            uncertainty: Duration::from_micros(half),
            samples: taken.len() as u32,
            synced: self.taken >= SYNCED_AFTER,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn ping_and_pong_are_the_bytes_docs_wire_md_shows() {
        let spec = include_str!("../../docs/wire.md");
        let block = |tag: &str| {
            let body = spec
                .split(&format!("```{tag}\n"))
                .nth(1)
                .unwrap_or_else(|| panic!("docs/wire.md has a {tag} block"));
            let line = body.split("```").next().unwrap().trim();
            let (hex, fields) = line.split_once("=>").unwrap();
            let hex = hex.replace(' ', "");
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            (bytes, fields.trim().to_owned())
        };
        let (ping, fields) = block("room-clock-ping");
        assert_eq!(fields, "sent=1000000");
        let message = ClockMessage::Ping { sent: 1_000_000 };
        assert_eq!(message.to_vec(), ping);
        assert_eq!(ClockMessage::parse(&ping), Some(message));
        let (pong, fields) = block("room-clock-pong");
        assert_eq!(fields, "sent=1000000 remote=5000000");
        let message = ClockMessage::Pong {
            sent: 1_000_000,
            remote: 5_000_000,
        };
        assert_eq!(message.to_vec(), pong);
        assert_eq!(ClockMessage::parse(&pong), Some(message));
    }

    #[test]
    fn a_clock_message_of_the_wrong_length_is_refused() {
        let ping = ClockMessage::Ping { sent: 7 }.to_vec();
        let pong = ClockMessage::Pong { sent: 7, remote: 9 }.to_vec();
        for bad in [&ping[..8], &pong[..16], &[PING][..], &[PONG][..]] {
            assert_eq!(ClockMessage::parse(bad), None, "{bad:02x?}");
        }
        let mut long = pong.clone();
        long.push(0);
        assert_eq!(ClockMessage::parse(&long), None);
        assert!(ClockMessage::is_clock(&long) && !ClockMessage::is_clock(&[2]));
    }

    #[test]
    fn the_reading_rests_on_every_exchange_and_is_within_its_bound() {
        // The peer's clock runs 5 s ahead of ours. Paths of different asymmetry: the bound
        // holds after each exchange, and together they bound the truth more tightly than
        // any one of them (the best alone, 2 ms out and 3 back, says ±2.5 ms).
        let ahead = 5_000_000i128;
        let mut clock = PeerClock::default();
        let mut now = Duration::from_secs(1);
        for (out, back) in [(40, 2), (3, 30), (2, 3), (25, 25)] {
            let sent = micros(now);
            let remote = (i128::from(sent) + out * 1000 + ahead) as u64;
            now += MS * (out + back) as u32;
            clock.pong(now, sent, remote);
            let reading = clock.reading(now).unwrap();
            let truth = Duration::from_micros((i128::from(micros(now)) + ahead) as u64);
            let error = reading.time.abs_diff(truth);
            assert!(error <= reading.uncertainty, "{error:?} > {reading:?}");
        }
        // At most 2 ms back (the first) and 2 ms out (the third): ±2 ms, and the few µs
        // the clocks may have drifted since.
        let reading = clock.reading(now).unwrap();
        let us = |d: Duration| d.as_micros() as i128;
        assert!(
            (2000..2010).contains(&us(reading.uncertainty)),
            "{reading:?}"
        );
        assert_eq!((reading.samples, reading.synced), (4, true));
        // A minute later the bound has grown by the drift allowance, 100 ppm of a minute.
        let later = clock.reading(now + Duration::from_secs(60)).unwrap();
        let grown = us(later.uncertainty) - us(reading.uncertainty);
        assert!((5998..=6002).contains(&grown), "{grown} µs");
    }

    #[test]
    fn bounds_that_do_not_meet_fall_back_to_the_narrowest_exchange() {
        // A peer whose clock jumped 1 s between two exchanges: no offset fits both.
        let mut clock = PeerClock::default();
        let now = Duration::from_secs(1);
        let sent = micros(now);
        clock.pong(now + 10 * MS, sent, sent + 5_000);
        clock.pong(now + 14 * MS, sent, sent + 1_005_000);
        let reading = clock.reading(now + 14 * MS).unwrap();
        assert_eq!(
            reading.uncertainty,
            Duration::from_micros(5000),
            "the 10 ms exchange"
        );
        assert_eq!(reading.time, now + 14 * MS, "its midpoint: 0 ahead of ours");
    }

    #[test]
    fn pongs_that_cannot_answer_our_pings_are_not_taken() {
        let mut clock = PeerClock::default();
        let now = Duration::from_secs(20);
        clock.pong(now, micros(now) + 1, 0);
        clock.pong(now, micros(now - Duration::from_secs(11)), 0);
        assert_eq!(clock.reading(now), None);
    }

    #[test]
    fn pings_are_fast_until_synced_then_once_a_second() {
        let mut clock = PeerClock::default();
        let mut now = Duration::ZERO;
        let mut pinged = Vec::new();
        while now < Duration::from_secs(3) {
            if let Some(ClockMessage::Ping { sent }) = clock.ping_due(now) {
                clock.pinged(now, SLOW_PING);
                pinged.push(now);
                clock.pong(now + MS, sent, sent);
            }
            now += 10 * MS;
        }
        let gaps: Vec<_> = pinged.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(&gaps[..4], [FAST_PING; 4]);
        assert!(gaps[4..].iter().all(|&g| g == SLOW_PING), "{gaps:?}");
    }
}
