//! A peer's clock, as this member estimates it: pings and pongs on the control channel
//! (docs/wire.md, "Room members", "Clock"), each giving the peer's clock reading between our
//! ping's departure and its pong's arrival.
//!
//! One exchange bounds the truth: the peer read its clock `remote` after our ping left at
//! `sent` and before its pong came back at `back` (our clock), so its clock runs ahead of
//! ours by between `remote - back` and `remote - sent`, whatever the path's asymmetry,
//! queueing or pacing did to the exchange: an exchange that waited (a resend, a queue, the
//! sender's next pacing slot) only has a wider interval. The reading rests on the last
//! [`WINDOW`] exchanges: each one's interval, moved to the moment asked about by what the two
//! clocks may have drifted apart since it was taken, holds the truth; so does their
//! intersection, whose midpoint is the reading and half whose width its bound.
//!
//! How far the clocks drift apart comes from a longer history: the narrowest exchange of
//! each [`RATE_BUCKET`] of the last [`RATE_BUCKETS`] of them (about a minute). If the offset
//! between the clocks grows linearly (one steady rate), any two exchanges bound that rate:
//! it rose by at least the later one's low minus the earlier one's high, and at most the
//! later one's high minus the earlier one's low, over the time between them. The range
//! every pair allows is the rate's (`rate_range`, recomputed when the history changes,
//! not per reading). While that range is narrower than ±[`DRIFT_PPM`], or lies wholly
//! outside it (the exchanges prove the clocks drift apart faster than the allowance), each
//! interval is moved along it: by the range's low end times its age below, its high end
//! above. Otherwise (too few exchanges yet) each interval is widened by [`DRIFT_PPM`] of its
//! age both ways, and intervals that then do not meet leave the narrowest one alone. An
//! exchange that no one rate fits together with the history (the peer's clock jumped, or
//! changed its pace) starts the history again from itself, and the allowance holds until
//! the new history pins the rate down. It holds too while the intervals do not meet along
//! the rate.

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
/// How far two clocks may drift apart, in parts per million, for the bound while the
/// exchanges do not pin their rate down: quartz clocks of ordinary machines stay within
/// ±50 ppm of true time each.
pub const DRIFT_PPM: u64 = 100;
/// The rate's history keeps the narrowest exchange that came back in each span this long.
pub const RATE_BUCKET: Duration = Duration::from_secs(2);
/// Spans the rate's history keeps: the last 64 s of exchanges (32 of them at most), over
/// which the clocks' rate is taken to hold steady.
pub const RATE_BUCKETS: usize = 32;
/// Parts per billion in one: rates are counted in ppb (µs of offset per 1000 s).
const PPB: i64 = 1_000_000_000;
/// [`DRIFT_PPM`] in ppb.
const DRIFT_PPB: i64 = DRIFT_PPM as i64 * 1000;
/// A rate range reaching beyond ±1 % is not used: no clock is that far off, and such a range
/// comes from a clock that jumped between two exchanges alone in the history.
const MAX_RATE_PPB: i64 = PPB / 100;
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
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ClockReading {
    /// The other clock's time at the moment asked about (`now` in the asker's clock): a
    /// member's clock is the `now` its driver passes it, so the time since that member's room
    /// began (`Room::join`).
    pub time: Duration,
    /// The reading is within this of the other clock's true time: at most half the round
    /// trip of the best exchange it rests on (the others narrow it), plus what the clocks
    /// may have drifted apart since: `drift_uncertainty_ppm` of its age. Zero for a member's
    /// own clock.
    pub uncertainty: Duration,
    /// Exchanges the reading rests on, at most [`WINDOW`].
    pub samples: u32,
    /// At least [`SYNCED_AFTER`] exchanges came back on this link: the reading is as good as
    /// the path allows (its own clock: always).
    pub synced: bool,
    /// The other clock's rate against ours, in parts per million (80: it gains 80 µs a second
    /// on ours; negative: it runs slow), once the exchanges of the last minute pin it down
    /// (to within ±[`DRIFT_PPM`], or wholly outside it); `None` until then, or while no one
    /// rate fits them (a clock that jumped). `Some(0.0)` for a member's own clock.
    pub drift_ppm: Option<f64>,
    /// The rate is within this many ppm of `drift_ppm` if it held steady over that minute:
    /// the drift `uncertainty` allows for. [`DRIFT_PPM`] around zero while `drift_ppm` is
    /// `None` (the allowance for ordinary clocks); 0 for a member's own clock.
    pub drift_uncertainty_ppm: f64,
}

impl ClockReading {
    /// A member's own clock: exact.
    pub fn own(now: Duration) -> ClockReading {
        ClockReading {
            time: now,
            uncertainty: Duration::ZERO,
            samples: 0,
            synced: true,
            drift_ppm: Some(0.0),
            drift_uncertainty_ppm: 0.0,
        }
    }
}

/// One exchange: when its pong came back, and the bounds it sets on the peer's clock minus
/// ours, in µs: `remote - back` to `remote - sent`.
#[derive(Debug, Clone, Copy, Default)]
struct Exchange {
    back: Duration,
    low: i64,
    high: i64,
}

impl Exchange {
    /// Its round trip, the width of its bounds (µs).
    fn width(&self) -> u64 {
        self.high.abs_diff(self.low)
    }
}

/// Bounds on the peer's clock minus ours, in µs: `(low, high)`.
type Interval = (i64, i64);

/// A range of the peer's clock rate against ours, in parts per billion: `low..=high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rate {
    low: i64,
    high: i64,
}

impl Rate {
    /// Whether the reading moves its intervals along this range rather than the allowance:
    /// it is narrower than ±[`DRIFT_PPM`], or lies wholly outside it (the allowance is then
    /// wrong), and stays within ±1 %.
    fn usable(&self) -> bool {
        let (low, high) = (self.low, self.high);
        low <= high
            && -MAX_RATE_PPB <= low
            && high <= MAX_RATE_PPB
            && (high - low < 2 * DRIFT_PPB || low > DRIFT_PPB || high < -DRIFT_PPB)
    }
}

/// `a / b` rounded up, for `b > 0`.
fn div_ceil(a: i64, b: i64) -> i64 {
    a.div_euclid(b) + i64::from(a.rem_euclid(b) != 0)
}

/// What two exchanges say of the rate (ppb) if the offset grew linearly between them: by at
/// least `later.low - earlier.high` and at most `later.high - earlier.low` over the time
/// between them (bounds rounded outwards). `None` for two that came back at one instant, or a
/// rise too large to count in ppb (hours): they bound nothing.
fn pair_rate(earlier: &Exchange, later: &Exchange) -> Option<Rate> {
    let span = signed(micros(later.back.checked_sub(earlier.back)?));
    if span == 0 {
        return None;
    }
    let rise = |to: i64, from: i64| to.checked_sub(from)?.checked_mul(PPB);
    Some(Rate {
        low: rise(later.low, earlier.high)?.div_euclid(span),
        high: div_ceil(rise(later.high, earlier.low)?, span),
    })
}

/// The rates (ppb) a steady drift may have and still pass through every exchange's bounds:
/// what every pair allows. `None` when no one rate does (a clock that jumped, or changed its
/// pace); unbounded with fewer than two exchanges.
fn rate_range(exchanges: &[Exchange]) -> Option<Rate> {
    let mut range = Rate {
        low: i64::MIN,
        high: i64::MAX,
    };
    for (i, a) in exchanges.iter().enumerate() {
        for b in &exchanges[i + 1..] {
            let (earlier, later) = if a.back <= b.back { (a, b) } else { (b, a) };
            if let Some(pair) = pair_rate(earlier, later) {
                range.low = range.low.max(pair.low);
                range.high = range.high.min(pair.high);
            }
        }
    }
    (range.low <= range.high).then_some(range)
}

/// The peer's clock may have drifted this far from ours (µs) in `age`.
fn drift(age: Duration) -> i64 {
    signed(micros(age).saturating_mul(DRIFT_PPM) / 1_000_000)
}

/// How far an offset moves (µs) in `age` µs at `rate` ppb, rounded down (`up`: rounded up);
/// `None` if it overflows.
fn shift(rate: i64, age: i64, up: bool) -> Option<i64> {
    let moved = rate.checked_mul(age)?;
    Some(if up {
        div_ceil(moved, PPB)
    } else {
        moved.div_euclid(PPB)
    })
}

/// How the reading moves an exchange's bounds to the moment asked about.
#[derive(Debug, Clone, Copy)]
enum Projection {
    /// Widened by [`DRIFT_PPM`] of its age both ways.
    Allowance,
    /// Along a rate range: its low end times the age below, its high end above.
    Along(Rate),
}

impl Projection {
    /// `exchange`'s bounds moved `age` on.
    fn bounds(self, exchange: &Exchange, age: Duration) -> Interval {
        match self {
            Projection::Allowance => {
                let d = drift(age);
                (
                    exchange.low.saturating_sub(d),
                    exchange.high.saturating_add(d),
                )
            }
            Projection::Along(rate) => {
                let age = signed(micros(age));
                // A shift too large to count is unbounded: the interval says nothing.
                let low = shift(rate.low, age, false).unwrap_or(i64::MIN);
                let high = shift(rate.high, age, true).unwrap_or(i64::MAX);
                (
                    exchange.low.saturating_add(low),
                    exchange.high.saturating_add(high),
                )
            }
        }
    }
}

/// An exchange kept for the rate: the narrowest of its bucket (`back / RATE_BUCKET`).
#[derive(Debug, Clone, Copy)]
struct Kept {
    bucket: u64,
    exchange: Exchange,
}

/// The estimate of one peer's clock, and when to ask it next.
#[derive(Debug, Clone, Default)]
pub(crate) struct PeerClock {
    /// The last [`WINDOW`] exchanges, a ring whose next slot is `next`.
    exchanges: Vec<Exchange>,
    next: usize,
    /// The narrowest exchange of each of the last [`RATE_BUCKETS`] buckets, at
    /// `bucket % RATE_BUCKETS` (an older bucket's is stale).
    history: [Option<Kept>; RATE_BUCKETS],
    /// The rate range the reading moves its intervals along, from `history` when it last
    /// changed; `None`: the allowance ([`DRIFT_PPM`]).
    rate: Option<Rate>,
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
        self.keep(exchange);
    }

    /// Keeps `exchange` for the rate if it is the narrowest of its bucket so far, and then
    /// bounds the rate anew over the history's last [`RATE_BUCKETS`] buckets. If no one rate
    /// fits them any more (the peer's clock jumped, or changed its pace), the history starts
    /// again from `exchange`, which holds the truth as it is now.
    fn keep(&mut self, exchange: Exchange) {
        let bucket = micros(exchange.back) / micros(RATE_BUCKET);
        let at = (bucket % RATE_BUCKETS as u64) as usize;
        let kept = Kept { bucket, exchange };
        match &mut self.history[at] {
            Some(k) if k.bucket == bucket && k.exchange.width() <= exchange.width() => return,
            slot => *slot = Some(kept),
        }
        let mut recent = [Exchange::default(); RATE_BUCKETS];
        let mut n = 0;
        for k in self.history.iter().flatten() {
            if k.bucket <= bucket && bucket - k.bucket < RATE_BUCKETS as u64 {
                recent[n] = k.exchange;
                n += 1;
            }
        }
        self.rate = match rate_range(&recent[..n]) {
            Some(range) => Some(range).filter(Rate::usable),
            None => {
                self.history = Default::default();
                self.history[at] = Some(kept);
                None
            }
        };
    }

    /// The peer's clock at `now` (ours), once an exchange came back.
    pub(crate) fn reading(&self, now: Duration) -> Option<ClockReading> {
        let taken = &self.exchanges;
        if taken.is_empty() {
            return None;
        }
        // Along the rate once the history pins it down, if the exchanges meet along it; else
        // by the allowance, and the narrowest exchange alone if they do not meet even so.
        let along = self.rate.and_then(|rate| {
            let (meet, _) = self.bounds(now, Projection::Along(rate));
            Some((meet?, rate))
        });
        let ((low, high), rate) = match along {
            Some((meet, rate)) => (meet, Some(rate)),
            None => match self.bounds(now, Projection::Allowance) {
                (Some(meet), _) => (meet, None),
                (None, narrowest) => (narrowest?, None),
            },
        };
        // The midpoint and half the width, rounded up, without overflowing.
        let middle = low / 2 + high / 2 + (low % 2 + high % 2) / 2;
        let half = high.abs_diff(low).div_ceil(2);
        let time = signed(micros(now)).saturating_add(middle);
        // ppb to ppm.
        let ppm = |ppb: i64| ppb as f64 / 1000.0;
        Some(ClockReading {
            time: Duration::from_micros(u64::try_from(time).unwrap_or(0)),
            uncertainty: Duration::from_micros(half),
            samples: taken.len() as u32,
            synced: self.taken >= SYNCED_AFTER,
            drift_ppm: rate.map(|r| (ppm(r.low) + ppm(r.high)) / 2.0),
            drift_uncertainty_ppm: rate
                .map_or(DRIFT_PPM as f64, |r| (ppm(r.high) - ppm(r.low)) / 2.0),
        })
    }

    /// Each exchange's bounds moved to `now` by `projection`: their intersection, if they
    /// meet, and the narrowest of them.
    fn bounds(
        &self,
        now: Duration,
        projection: Projection,
    ) -> (Option<Interval>, Option<Interval>) {
        // Each interval, moved to `now`, holds the truth: so does their intersection, which
        // is never wider than the best one's own bounds.
        let (mut meet, mut narrowest) = ((i64::MIN, i64::MAX), None::<Interval>);
        for e in &self.exchanges {
            let (low, high) = projection.bounds(e, now.saturating_sub(e.back));
            meet = (meet.0.max(low), meet.1.min(high));
            if narrowest.is_none_or(|(l, h)| high.abs_diff(low) < h.abs_diff(l)) {
                narrowest = Some((low, high));
            }
        }
        ((meet.0 <= meet.1).then_some(meet), narrowest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);
    const MS: Duration = Duration::from_millis(1);
    const SECOND: Duration = Duration::from_secs(1);

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

    /// The rates `low..=high` ppb.
    fn rate(low: i64, high: i64) -> Rate {
        Rate { low, high }
    }

    /// An exchange back at `back_s` seconds (our clock) whose bounds are `low..=high` µs.
    fn at(back_s: u64, low: i64, high: i64) -> Exchange {
        Exchange {
            back: Duration::from_secs(back_s),
            low,
            high,
        }
    }

    #[test]
    fn two_exchanges_bound_the_rate_by_how_far_the_offset_can_have_risen_between_them() {
        // Ahead by -100..100 µs, then 10 s later by 700..900 µs: it rose by 600 to 1000 µs
        // over 10 s, so the rate is 60 to 100 ppm.
        let bound = pair_rate(&at(0, -100, 100), &at(10, 700, 900)).unwrap();
        assert_eq!(bound, rate(60_000, 100_000));
        // Falling: -1000 to -600 µs over 10 s.
        let bound = pair_rate(&at(0, -100, 100), &at(10, -900, -700)).unwrap();
        assert_eq!(bound, rate(-100_000, -60_000));
        // Bounds that are not whole ppb round outwards: 1 µs over 3 s is 333.3 ppb.
        let bound = pair_rate(&at(0, 0, 0), &at(3, -1, 1)).unwrap();
        assert_eq!(bound, rate(-334, 334));
        // At one instant they bound nothing; nor does a rise too large to count.
        assert_eq!(pair_rate(&at(5, 0, 10), &at(5, 0, 10)), None);
        assert_eq!(pair_rate(&at(0, 0, 0), &at(1, 0, i64::MAX)), None);
    }

    #[test]
    fn the_rate_is_what_every_pair_allows_and_none_when_no_one_rate_fits() {
        // 60..100 ppm from the first two, 70..90 ppm from the first and the third (20 s, a
        // rise of 1400 to 1800 µs): 70..90, whichever pair says which.
        let history = [at(0, -100, 100), at(10, 700, 900), at(20, 1500, 1700)];
        assert_eq!(rate_range(&history), Some(rate(70_000, 90_000)));
        let mut reversed = history;
        reversed.reverse();
        assert_eq!(rate_range(&reversed), rate_range(&history));
        // One exchange bounds nothing.
        assert_eq!(rate_range(&history[..1]), Some(rate(i64::MIN, i64::MAX)));
        // A clock that jumped 5 ms after the second: no steady rate passes through all three.
        let jumped = [history[0], history[1], at(20, 6500, 6700)];
        assert_eq!(rate_range(&jumped), None);
    }

    #[test]
    fn a_rate_range_is_used_when_narrower_than_the_allowance_or_wholly_outside_it() {
        let ppm = |low: i64, high: i64| rate(low * 1000, high * 1000).usable();
        assert!(
            ppm(70, 90) && ppm(-150, 40),
            "narrower than ±100 ppm, wherever it lies"
        );
        assert!(
            !ppm(-150, 60),
            "as wide as the allowance: the allowance holds"
        );
        assert!(
            ppm(150, 900) && ppm(-900, -101),
            "the allowance proven wrong"
        );
        assert!(!ppm(20_000, 20_010), "no clock is 2 % off");
    }

    /// A peer `ahead` µs ahead of our clock and running `ppm` fast.
    struct Peer {
        ahead: i64,
        ppm: i64,
    }

    impl Peer {
        /// Its clock at ours `now`, in µs.
        fn at(&self, now: Duration) -> u64 {
            let ours = i128::from(micros(now));
            (i128::from(self.ahead) + ours + ours * i128::from(self.ppm) / 1_000_000) as u64
        }

        /// Exchanges every 250 ms over `from..to`, `path.0` µs out and `path.1` back; checks
        /// each reading against the truth and its bound.
        fn talk(&self, clock: &mut PeerClock, from: Duration, to: Duration, path: (u64, u64)) {
            let mut now = from;
            while now < to {
                let sent = micros(now);
                let remote = self.at(now + Duration::from_micros(path.0));
                let back = now + Duration::from_micros(path.0 + path.1);
                clock.pong(back, sent, remote);
                let reading = clock.reading(back).unwrap();
                let error = reading.time.abs_diff(Duration::from_micros(self.at(back)));
                assert!(
                    error <= reading.uncertainty,
                    "at {back:?}: {error:?}, {reading:?}"
                );
                now += SLOW_PING;
            }
        }
    }

    #[test]
    fn a_steady_rate_is_estimated_and_narrows_the_bound_below_the_allowance() {
        // 80 ppm fast, 50 µs each way: after 30 s the rate is known within a few ppm, and
        // the reading between pongs is as good as the path allows, where the allowance
        // added 100 ppm of each interval's age.
        let peer = Peer {
            ahead: 3_250_000,
            ppm: 80,
        };
        let mut clock = PeerClock::default();
        peer.talk(&mut clock, Duration::ZERO, 30 * SECOND, (50, 50));
        let now = 30 * SECOND + 200 * MS;
        let reading = clock.reading(now).unwrap();
        let drift = reading.drift_ppm.expect("estimated");
        assert!(
            (drift - 80.0).abs() <= reading.drift_uncertainty_ppm,
            "{reading:?}"
        );
        assert!(reading.drift_uncertainty_ppm < 5.0, "{reading:?}");
        let (allowance, _) = clock.bounds(now, Projection::Allowance);
        let (low, high) = allowance.unwrap();
        let old = Duration::from_micros(high.abs_diff(low).div_ceil(2));
        // The newest exchange is 0.1 s old: the allowance added 20 µs to its 50.
        assert!(old >= 70 * US, "{old:?}");
        assert!(
            reading.uncertainty <= 52 * US,
            "{reading:?} against {old:?}"
        );
        let error = reading.time.abs_diff(Duration::from_micros(peer.at(now)));
        assert!(error <= reading.uncertainty);
    }

    #[test]
    fn a_clock_four_times_the_allowance_off_is_read_within_its_bound_once_its_rate_is_known() {
        // 400 ppm fast on a 50 µs path: by the allowance alone the intervals miss each other
        // (1.6 ms of drift over the window's 4 s against 0.1 ms round trips) and the
        // narrowest alone is out of its bound by then; along the rate, within it.
        let peer = Peer { ahead: 0, ppm: 400 };
        let mut clock = PeerClock::default();
        // Two exchanges 3 s apart already show the rate is beyond the allowance.
        clock.pong(SECOND, micros(SECOND) - 100, peer.at(SECOND - 50 * US));
        peer.talk(&mut clock, 4 * SECOND, 60 * SECOND, (50, 50));
        let now = 60 * SECOND + 200 * MS;
        let reading = clock.reading(now).unwrap();
        let error = reading.time.abs_diff(Duration::from_micros(peer.at(now)));
        assert!(
            error <= reading.uncertainty && error < 5 * US,
            "{reading:?}"
        );
        assert!(
            (reading.drift_ppm.unwrap() - 400.0).abs() < 1.0,
            "{reading:?}"
        );
        let (allowance, narrowest) = clock.bounds(now, Projection::Allowance);
        assert_eq!(allowance, None, "the intervals miss by the allowance");
        let (low, high) = narrowest.unwrap();
        let truth = signed(peer.at(now)) - signed(micros(now));
        assert!(
            !(low..=high).contains(&truth),
            "the narrowest alone misses the truth"
        );
    }

    #[test]
    fn a_clock_that_jumps_restarts_the_rate_and_the_allowance_holds_meanwhile() {
        let mut peer = Peer { ahead: 0, ppm: 80 };
        let mut clock = PeerClock::default();
        peer.talk(&mut clock, Duration::ZERO, 30 * SECOND, (50, 50));
        assert!(clock.reading(30 * SECOND).unwrap().drift_ppm.is_some());
        // 50 ms ahead all at once: the first exchange after it breaks the rate.
        peer.ahead += 50_000;
        let mut now = 30 * SECOND;
        let mut estimated_at = None;
        while now < 60 * SECOND {
            let back = now + 100 * US;
            clock.pong(back, micros(now), peer.at(now + 50 * US));
            let reading = clock.reading(back).unwrap();
            if now == 30 * SECOND {
                assert_eq!(reading.drift_ppm, None, "{reading:?}");
                assert_eq!(reading.drift_uncertainty_ppm, DRIFT_PPM as f64);
            }
            // Once the window holds none from before the jump, every reading is within its
            // bound again: by the allowance until the new history pins the rate down.
            if now >= 30 * SECOND + SLOW_PING * WINDOW as u32 {
                let error = reading.time.abs_diff(Duration::from_micros(peer.at(back)));
                assert!(error <= reading.uncertainty, "at {now:?}: {reading:?}");
            }
            if reading.drift_ppm.is_some() && estimated_at.is_none() {
                estimated_at = Some(now - 30 * SECOND);
            }
            now += SLOW_PING;
        }
        // Two exchanges of 0.1 ms round trips 2 s apart pin the rate within ±50 ppm: the
        // reading goes along it again once the window holds none from before the jump.
        let estimated_at = estimated_at.expect("the rate is estimated again");
        assert!(
            estimated_at <= SLOW_PING * WINDOW as u32,
            "{estimated_at:?}"
        );
        let reading = clock.reading(now).unwrap();
        assert!((reading.drift_ppm.unwrap() - 80.0).abs() <= reading.drift_uncertainty_ppm);
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
