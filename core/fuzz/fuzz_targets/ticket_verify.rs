//! Any text as a join ticket (`ackwire_signalling::ticket`): `verify` returns claims or a typed
//! error and never panics, whatever the text, the secret, the time or the join; and a ticket it
//! accepts is exactly the one `mint` writes for those claims (one text per ticket: nothing
//! changed in a ticket still passes).
#![no_main]

use ackwire_signalling::Role;
use ackwire_signalling::ticket::{self, Claims};
use libfuzzer_sys::fuzz_target;

const SECRET: &[u8] = b"the fuzz target's secret, 32 bytes";

fuzz_target!(|data: &[u8]| {
    // The first bytes pick the time, the role and whether the join declares an application;
    // the rest is the ticket (lossy UTF-8: a server gets text).
    let (now, role, app, rest) = match data {
        [a, b, rest @ ..] => (
            u64::from(*a) << 32 | u64::from(*b) << 24,
            [Role::Peer, Role::Host, Role::Client][usize::from(*a % 3)],
            (*b & 1 == 1).then_some("pong"),
            rest,
        ),
        _ => (0, Role::Peer, None, data),
    };
    let text = String::from_utf8_lossy(rest);
    let _ = ticket::verify(b"", &text, now, "lobby", role, app);
    if let Ok(claims) = ticket::verify(SECRET, &text, now, "lobby", role, app) {
        assert_eq!(ticket::mint(SECRET, &claims), text);
        assert!(now < claims.expires());
        assert_eq!((claims.room(), claims.role(), claims.app()), ("lobby", role, app));
    }
    // A real ticket with the input spliced in: never accepted unless unchanged.
    let minted = ticket::mint(
        SECRET,
        &Claims::new("lobby", role, "user-1", app, u64::MAX).expect("valid claims"),
    );
    let at = usize::from(data.first().copied().unwrap_or(0)) % (minted.len() + 1);
    let spliced = format!("{}{}{}", &minted[..at], text, &minted[at..]);
    if spliced != minted {
        assert!(ticket::verify(SECRET, &spliced, now, "lobby", role, app).is_err());
    }
});
