//! One wake-up timer per driver loop, optionally precise to a tenth of a millisecond.
//!
//! tokio's timers round a deadline up to the next whole millisecond and fire up to ~2 ms
//! late. For protocol timers that is harmless (the core measures its own holds and reports
//! them as ack delay), but an emulated 10 ms hop released that late becomes an 11-12 ms hop,
//! and every RTT the peer reports would carry the difference. A precise wait is therefore
//! armed [`EARLY`] before its deadline and sleeps the rest on the thread (the kernel's
//! nanosleep, precise to its 50 µs timer slack). That holds the driver's thread for up to
//! [`EARLY`] per wake-up, so drivers ask for it only while emulating. (A timerfd in the
//! runtime's epoll set would be exact without holding the thread, but tokio registers a raw
//! descriptor only through `unsafe`, which this crate forbids.)

use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// How much earlier than its deadline a precise wait asks tokio to wake it.
pub const EARLY: Duration = Duration::from_millis(2);

/// A one-shot timer that is re-armed for each wait.
#[derive(Debug)]
pub struct Timer {
    sleep: Pin<Box<Sleep>>,
    /// The armed deadline, and whether to meet it precisely; `None` once fired.
    armed: Option<(Instant, bool)>,
}

impl Default for Timer {
    fn default() -> Self {
        Timer::new()
    }
}

impl Timer {
    /// An unarmed timer. Must be called inside a tokio runtime with time enabled.
    pub fn new() -> Timer {
        Timer {
            sleep: Box::pin(tokio::time::sleep_until(Instant::now())),
            armed: None,
        }
    }

    /// Arms the timer for `deadline` (replacing any earlier arming); a deadline already past
    /// fires at once. `precise`: meet it within ~0.1 ms rather than tokio's 0-2 ms.
    pub fn reset(&mut self, deadline: Instant, precise: bool) {
        if self.armed == Some((deadline, precise)) {
            return;
        }
        self.armed = Some((deadline, precise));
        let wake = if precise {
            deadline.checked_sub(EARLY).unwrap_or(deadline)
        } else {
            deadline
        };
        self.sleep.as_mut().reset(wake);
    }

    /// Resolves when the armed deadline has passed; pending forever while unarmed. Safe to
    /// cancel in `select!`: the arming stays until it fires or is reset.
    pub async fn wait(&mut self) {
        let Some((deadline, precise)) = self.armed else {
            return std::future::pending().await;
        };
        self.sleep.as_mut().await;
        if precise {
            let left = deadline.saturating_duration_since(Instant::now());
            if !left.is_zero() {
                std::thread::sleep(left);
            }
        }
        self.armed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_precise_wait_ends_within_a_fraction_of_a_millisecond_of_its_deadline() {
        let mut timer = Timer::new();
        let mut late = Vec::new();
        for k in 1..=21u64 {
            let deadline = Instant::now() + Duration::from_micros(3_000 + 137 * k);
            timer.reset(deadline, true);
            timer.wait().await;
            let now = Instant::now();
            assert!(now >= deadline, "woke before the deadline");
            late.push(now - deadline);
        }
        late.sort();
        // tokio alone wakes 0-2 ms late; the kernel's sleep, within its 50 µs slack. A loaded
        // machine can still deschedule the thread now and then, hence the median and a wide
        // bound.
        assert!(
            late[10] < Duration::from_micros(300),
            "median {:?} late",
            late[10]
        );
    }

    #[tokio::test]
    async fn an_unarmed_timer_never_fires_and_a_past_deadline_fires_at_once() {
        let mut timer = Timer::new();
        let unarmed = tokio::time::timeout(Duration::from_millis(20), timer.wait()).await;
        assert!(unarmed.is_err());
        timer.reset(Instant::now() - Duration::from_millis(5), false);
        timer.wait().await;
    }
}
