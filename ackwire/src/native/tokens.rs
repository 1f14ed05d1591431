//! How a host takes the sessions that come to it, its WebTransport's
//! ([`WtHost`](super::webtransport::WtHost)) and its WebSocket's
//! ([`WsHost`](super::websocket::WsHost)) alike: by the link's token, which the client sends
//! in its session's path (`/ackwire?token=…`) and over signalling (the member's
//! `AcceptWebTransport`, `AcceptWebSocket`).
//!
//! Either may come first: a session whose token the member has not named yet is held, for up
//! to the host's hold ([`HOLD`] in a room), then refused; a token whose session has not come
//! is kept until its transport closes. A session whose token already has one is refused, as
//! is one whose token already has one held, or one beyond [`MAX_HELD`]; a token is taken
//! once. [`Tokens`] keeps these rules, and only them: what a session is, how one is taken and
//! how one is refused are the host's.

use std::collections::HashMap;
use std::time::Duration;

use ackwire_room::member::TransportId;
use ackwire_signalling::webtransport::is_token;

/// How long a session whose token the member has not named is held before it is refused: a
/// client sends its token over signalling as it dials, so the two arrive about together.
pub(crate) const HOLD: Duration = Duration::from_secs(10);

/// At most this many sessions held at once; beyond, a new one is refused.
const MAX_HELD: usize = 1024;

/// A host's sessions by token: `S`, a taken session as the host keeps it; `H`, one that came
/// (held until its token is named).
pub(super) struct Tokens<S, H> {
    hold: Duration,
    /// The tokens the member named, until their transport closes.
    named: HashMap<String, TransportId>,
    transports: HashMap<TransportId, Slot<S>>,
    /// Sessions whose token the member has not named yet.
    held: HashMap<String, Held<H>>,
    /// Holds so far: each hold's number, so that an old hold's expiry leaves a newer one be.
    holds: u64,
}

/// A transport the member named: its token, and its session once one showed it.
struct Slot<S> {
    token: String,
    session: Option<S>,
}

struct Held<H> {
    session: H,
    number: u64,
}

/// What became of a session that came with a token.
pub(super) enum Arrival<H> {
    /// Its transport's now.
    Taken,
    /// Held until the member names its token: the host hands this back to
    /// [`Tokens::expired`] once it is [due](Expiry::due).
    Held(Expiry),
    /// Refused: the host turns it away, saying why.
    Refused(H, &'static str),
}

/// The end of one session's hold.
#[derive(Debug)]
pub(super) struct Expiry {
    token: String,
    number: u64,
    hold: Duration,
}

impl Expiry {
    /// Waits out the hold.
    pub(super) async fn due(self) -> Expiry {
        tokio::time::sleep(self.hold).await;
        self
    }
}

impl<S, H> Tokens<S, H> {
    /// A session whose token the member has not named is held for `hold`.
    pub(super) fn new(hold: Duration) -> Tokens<S, H> {
        Tokens {
            hold,
            named: HashMap::new(),
            transports: HashMap::new(),
            held: HashMap::new(),
            holds: 0,
        }
    }

    /// The member names `token` for `transport`: the session that shows it is `transport`'s,
    /// made by `take` now if it is held, else when it comes ([`Self::arrived`]). False, and
    /// nothing changes, for a malformed token, one already named or a known transport.
    pub(super) fn name(
        &mut self,
        transport: TransportId,
        token: String,
        take: impl FnOnce(H) -> S,
    ) -> bool {
        if !is_token(&token) || self.named.contains_key(&token) || self.has(transport) {
            return false;
        }
        self.named.insert(token.clone(), transport);
        let session = self.held.remove(&token).map(|held| take(held.session));
        self.transports.insert(transport, Slot { token, session });
        true
    }

    /// A session showed `token`: made `transport`'s by `take` if the member named it for a
    /// transport that has none, held if the member has not named it, refused otherwise.
    pub(super) fn arrived(
        &mut self,
        token: String,
        session: H,
        take: impl FnOnce(TransportId, H) -> S,
    ) -> Arrival<H> {
        if let Some(&transport) = self.named.get(&token) {
            return match self.transports.get_mut(&transport) {
                Some(slot) if slot.session.is_none() => {
                    slot.session = Some(take(transport, session));
                    Arrival::Taken
                }
                _ => Arrival::Refused(session, "this token has a connection"),
            };
        }
        if self.held.contains_key(&token) || self.held.len() >= MAX_HELD {
            return Arrival::Refused(session, "this token has a connection waiting");
        }
        self.holds += 1;
        let number = self.holds;
        self.held.insert(token.clone(), Held { session, number });
        Arrival::Held(Expiry {
            token,
            number,
            hold: self.hold,
        })
    }

    /// A hold is over: the session it held, still unnamed, to refuse (none if it was taken).
    pub(super) fn expired(&mut self, expiry: Expiry) -> Option<H> {
        let Expiry { token, number, .. } = expiry;
        // A newer session held for the token has a hold of its own.
        if self.held.get(&token)?.number != number {
            return None;
        }
        self.held.remove(&token).map(|held| held.session)
    }

    /// The member's `CloseTransport`: `transport` and its token are forgotten (a session
    /// that shows the token after this is held again); its session, if it had one, comes
    /// back to be closed.
    pub(super) fn close(&mut self, transport: TransportId) -> Option<S> {
        let slot = self.transports.remove(&transport)?;
        self.named.remove(&slot.token);
        slot.session
    }

    /// Whether the member named a token for `transport` (and has not closed it).
    pub(super) fn has(&self, transport: TransportId) -> bool {
        self.transports.contains_key(&transport)
    }

    /// `transport`'s session, once one showed its token.
    pub(super) fn session(&self, transport: TransportId) -> Option<&S> {
        self.transports.get(&transport)?.session.as_ref()
    }

    pub(super) fn session_mut(&mut self, transport: TransportId) -> Option<&mut S> {
        self.transports.get_mut(&transport)?.session.as_mut()
    }

    /// Sessions held for a token the member has not named.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.held.len()
    }
}

impl<S, H> std::fmt::Debug for Tokens<S, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("transports", &self.transports.len())
            .field("held", &self.held.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    /// Sessions are their names; a taken one is its transport's number and name.
    type Table = Tokens<(u64, &'static str), &'static str>;

    fn take(transport: TransportId, session: &'static str) -> (u64, &'static str) {
        (transport.0, session)
    }

    #[test]
    fn a_session_that_comes_after_its_token_is_named_is_taken_and_a_second_is_refused() {
        let mut t = Table::new(HOLD);
        assert!(t.name(TransportId(1), TOKEN.into(), |_| unreachable!()));
        assert!(t.session(TransportId(1)).is_none());
        assert!(matches!(
            t.arrived(TOKEN.into(), "first", take),
            Arrival::Taken
        ));
        assert_eq!(t.session(TransportId(1)), Some(&(1, "first")));
        assert!(matches!(
            t.arrived(TOKEN.into(), "second", take),
            Arrival::Refused("second", _)
        ));
        assert_eq!(t.held(), 0);
    }

    #[test]
    fn a_session_that_comes_first_is_held_until_named_and_its_expiry_then_refuses_nothing() {
        let mut t = Table::new(HOLD);
        let Arrival::Held(expiry) = t.arrived(TOKEN.into(), "early", take) else {
            panic!("not held");
        };
        assert_eq!(t.held(), 1);
        // One session held per token.
        assert!(matches!(
            t.arrived(TOKEN.into(), "again", take),
            Arrival::Refused("again", _)
        ));
        assert!(t.name(TransportId(2), TOKEN.into(), |s| (2, s)));
        assert_eq!(t.session(TransportId(2)), Some(&(2, "early")));
        assert_eq!(t.held(), 0);
        assert_eq!(t.expired(expiry), None);
    }

    #[test]
    fn a_hold_that_expires_refuses_its_own_session_and_not_a_newer_one() {
        let mut t = Table::new(HOLD);
        let Arrival::Held(old) = t.arrived(TOKEN.into(), "old", take) else {
            panic!("not held");
        };
        let Arrival::Held(expired) =
            t.arrived("1123456789abcdef0123456789abcdef".into(), "other", take)
        else {
            panic!("not held");
        };
        assert_eq!(t.expired(expired), Some("other"));
        // `old`'s session is taken and closed; a new one with its token is held anew.
        assert!(t.name(TransportId(3), TOKEN.into(), |s| (3, s)));
        assert_eq!(t.close(TransportId(3)), Some((3, "old")));
        assert!(matches!(
            t.arrived(TOKEN.into(), "new", take),
            Arrival::Held(_)
        ));
        assert_eq!(t.expired(old), None);
        assert_eq!(t.held(), 1);
    }

    #[test]
    fn a_malformed_or_named_token_or_a_known_transport_is_not_named() {
        let mut t = Table::new(HOLD);
        let other = "1123456789abcdef0123456789abcdef";
        assert!(!t.name(TransportId(1), "0123".into(), |_| unreachable!()));
        assert!(!t.name(TransportId(1), TOKEN.to_uppercase(), |_| unreachable!()));
        assert!(t.name(TransportId(1), TOKEN.into(), |_| unreachable!()));
        assert!(!t.name(TransportId(2), TOKEN.into(), |_| unreachable!()));
        assert!(!t.name(TransportId(1), other.into(), |_| unreachable!()));
        // Closed, the token is free for another transport.
        assert_eq!(t.close(TransportId(1)), None);
        assert!(!t.has(TransportId(1)));
        assert!(t.name(TransportId(2), TOKEN.into(), |_| unreachable!()));
    }

    #[test]
    fn beyond_the_most_held_a_session_is_refused() {
        let mut t = Table::new(HOLD);
        for i in 0..MAX_HELD {
            let token = format!("{i:032x}");
            assert!(matches!(t.arrived(token, "held", take), Arrival::Held(_)));
        }
        assert!(matches!(
            t.arrived(TOKEN.into(), "one more", take),
            Arrival::Refused("one more", _)
        ));
        assert_eq!(t.held(), MAX_HELD);
    }
}
