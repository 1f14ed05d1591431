//! What the sessions between a host room's clients and its host have in common, whatever
//! carries them: a host's WebTransport endpoint ([`WtHost`](super::webtransport::WtHost)) and
//! WebSocket listener ([`WsHost`](super::websocket::WsHost)), and a native client's dialed
//! sessions of either kind ([`WtClient`](super::wt_client::WtClient),
//! [`WsClient`](super::ws_client::WsClient)).
//!
//! Each runs tasks of its own that only report, through one channel the room's task reads
//! ([`Sessions::next`], then [`Sessions::handle`]): the member is only ever touched from the
//! room's task, and every decision (which connection is whose, when one is refused) is made
//! there. The room's task handles the four kinds alike ([`take_reports`], [`send`]); only
//! their routes differ ([`Sessions::route`]).

use std::future::Future;
use std::time::Duration;

use ackwire_room::member::{Member, Route, TransportEvent, TransportId};
use bytes::Bytes;

use super::events::EventQueue;

/// Reports taken in one turn of the room's loop: it flushes the member's output between
/// batches, so a busy host still answers.
const BATCH: usize = 256;

/// What a session tells the member.
#[derive(Debug)]
pub(crate) enum SessionEvent {
    /// Its state ([`TransportEvent::ChannelOpen`], `ChannelClosed`, `Failed`, or the client's
    /// token as a `LocalSignal`).
    Transport(TransportEvent),
    /// A core packet arrived on it (a WebTransport datagram, a WebSocket binary message).
    Datagram(Bytes),
}

/// A link's token: 16 bytes from the OS's CSPRNG (`rand`'s thread generator, seeded from
/// it), as 32 lowercase hex digits, which a client sends in its session's path and over
/// signalling (`ackwire_signalling::webtransport::is_token`).
pub(crate) fn link_token() -> String {
    rand::random::<[u8; 16]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One kind of session, as the room's task drives it.
pub(crate) trait Sessions {
    /// What the sessions' tasks report (handed back to [`Self::handle`]).
    type Report;

    /// The route the member's packets take on `transport`.
    fn route(transport: TransportId) -> Route;

    /// Whether `transport` is one of these sessions.
    fn has(&self, transport: TransportId) -> bool;

    /// Sends a core packet on `transport`; one that cannot go (too large, a full queue, the
    /// session gone) is dropped and counted, as one lost on the way would be.
    fn send(&mut self, transport: TransportId, datagram: &[u8]);

    /// The member's `CloseTransport`: the session closes, and nothing more of it is told.
    fn close(&mut self, transport: TransportId);

    /// Packets [`Self::send`] dropped.
    fn send_failures(&self) -> u64;

    /// The next report (cancel-safe).
    fn next(&mut self) -> impl Future<Output = Self::Report> + Send;

    /// A report already waiting, if any.
    fn try_next(&mut self) -> Option<Self::Report>;

    /// Takes in a report: what it has for the member, if anything.
    fn handle(&mut self, report: Self::Report) -> Option<(TransportId, SessionEvent)>;
}

/// The next report of `sessions`; never without them (a `select!` branch of the room's
/// loop).
pub(super) async fn next<S: Sessions>(sessions: Option<&mut S>) -> S::Report {
    match sessions {
        Some(sessions) => sessions.next().await,
        None => std::future::pending().await,
    }
}

/// Hands `first` and what else `sessions` has waiting (up to a batch, or until the game's
/// event queue is full) to the member.
pub(super) fn take_reports<S: Sessions>(
    sessions: Option<&mut S>,
    member: &mut Member,
    now: Duration,
    events: &EventQueue,
    first: S::Report,
) {
    let Some(sessions) = sessions else {
        return;
    };
    let mut report = Some(first);
    for _ in 0..BATCH {
        let Some(next) = report.take().or_else(|| sessions.try_next()) else {
            break;
        };
        deliver::<S>(member, now, sessions.handle(next));
        if events.is_full() {
            break;
        }
    }
}

/// Hands a session's event or packet to the member.
pub(super) fn deliver<S: Sessions>(
    member: &mut Member,
    now: Duration,
    told: Option<(TransportId, SessionEvent)>,
) {
    match told {
        Some((transport, SessionEvent::Transport(event))) => {
            member.handle_transport(now, transport, event);
        }
        Some((transport, SessionEvent::Datagram(datagram))) => {
            if let Err(e) = member.receive(now, S::route(transport), &datagram) {
                tracing::debug!(error = %e, "datagram refused");
            }
        }
        None => {}
    }
}

/// Sends `datagram` on `transport` through whichever of a host's and a client's sessions of
/// one kind has it.
pub(super) fn send<H: Sessions, C: Sessions>(
    host: Option<&mut H>,
    client: Option<&mut C>,
    transport: TransportId,
    datagram: &[u8],
) {
    if let Some(host) = host.filter(|h| h.has(transport)) {
        host.send(transport, datagram);
    } else if let Some(client) = client.filter(|c| c.has(transport)) {
        client.send(transport, datagram);
    }
}

/// Closes `transport` if `sessions` has it; whether it did.
pub(super) fn close<S: Sessions>(sessions: Option<&mut S>, transport: TransportId) -> bool {
    match sessions.filter(|s| s.has(transport)) {
        Some(sessions) => {
            sessions.close(transport);
            true
        }
        None => false,
    }
}

/// Packets `sessions` dropped (none without them).
pub(super) fn send_failures<S: Sessions>(sessions: Option<&S>) -> u64 {
    sessions.map_or(0, Sessions::send_failures)
}

/// A host's sessions driven as the room's task drives them, for the WebTransport and
/// WebSocket hosts' tests: what they have for the member is kept, to be checked in order.
#[cfg(test)]
pub(super) mod harness {
    use std::collections::VecDeque;
    use std::future::Future;
    use std::time::Duration;

    use ackwire_room::member::{TransportEvent, TransportId};

    use super::{SessionEvent, Sessions};

    /// No test waits longer than this for anything.
    pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

    /// A host's sessions, which hold what comes before the member names its token.
    pub(crate) trait Host: Sessions {
        /// Sessions held for a token the member has not named.
        fn held(&self) -> usize;
    }

    /// A host, and what it had for the member so far.
    pub(crate) struct Harness<H> {
        pub(crate) host: H,
        seen: VecDeque<(TransportId, SessionEvent)>,
    }

    impl<H: Host> Harness<H> {
        pub(crate) fn new(host: H) -> Harness<H> {
            Harness {
                host,
                seen: VecDeque::new(),
            }
        }

        /// Takes in `report`, keeping what it has for the member.
        fn keep(&mut self, report: H::Report) {
            if let Some(event) = self.host.handle(report) {
                self.seen.push_back(event);
            }
        }

        /// Runs the host until `work` is done, keeping what it has for the member.
        pub(crate) async fn run<T>(&mut self, work: impl Future<Output = T>) -> T {
            tokio::pin!(work);
            let run = async {
                loop {
                    tokio::select! {
                        out = &mut work => return out,
                        report = self.host.next() => self.keep(report),
                    }
                }
            };
            tokio::time::timeout(PATIENCE, run)
                .await
                .expect("timed out")
        }

        /// The next thing the host has for the member.
        pub(crate) async fn event(&mut self) -> (TransportId, SessionEvent) {
            let next = async {
                loop {
                    if let Some(event) = self.seen.pop_front() {
                        return event;
                    }
                    let report = self.host.next().await;
                    self.keep(report);
                }
            };
            tokio::time::timeout(PATIENCE, next)
                .await
                .expect("timed out")
        }

        /// Runs the host until it holds `n` sessions.
        pub(crate) async fn until_held(&mut self, n: usize) {
            let wait = async {
                while self.host.held() != n {
                    let report = self.host.next().await;
                    self.keep(report);
                }
            };
            tokio::time::timeout(PATIENCE, wait)
                .await
                .expect("timed out");
        }

        /// Takes every report already waiting, and checks the member got nothing at all.
        pub(crate) fn assert_nothing_for_the_member(&mut self) {
            while let Some(report) = self.host.try_next() {
                self.keep(report);
            }
            assert!(self.seen.is_empty(), "the member was told {:?}", self.seen);
        }

        /// Whether the next thing the member hears is `what` of `transport`.
        pub(crate) async fn assert_told(&mut self, transport: TransportId, what: TransportEvent) {
            let event = self.event().await;
            assert!(
                matches!(&event, (t, SessionEvent::Transport(e)) if *t == transport && *e == what),
                "expected {what:?} of {transport:?}, got {event:?}"
            );
        }

        pub(crate) async fn assert_open(&mut self, transport: TransportId) {
            self.assert_told(transport, TransportEvent::ChannelOpen)
                .await;
        }

        pub(crate) async fn assert_closed(&mut self, transport: TransportId) {
            self.assert_told(transport, TransportEvent::ChannelClosed)
                .await;
        }

        /// The next packet the member gets, which must be `transport`'s.
        pub(crate) async fn packet(&mut self, transport: TransportId) -> bytes::Bytes {
            match self.event().await {
                (t, SessionEvent::Datagram(packet)) if t == transport => packet,
                other => panic!("expected a packet on {transport:?}, got {other:?}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_token_is_32_lowercase_hex_digits_and_new_each_time() {
        let (a, b) = (link_token(), link_token());
        assert!(ackwire_signalling::webtransport::is_token(&a), "{a}");
        assert!(ackwire_signalling::webtransport::is_token(&b), "{b}");
        assert_ne!(a, b);
    }
}
