//! Join tickets under random input: `verify` never panics, whatever text it is given, and
//! never accepts a ticket changed in any way from one the secret minted.

use ackwire_signalling::Role;
use ackwire_signalling::ticket::{self, Claims, TicketError};
use proptest::prelude::*;

const SECRET: &[u8] = b"proptest secret, 32 bytes or more";

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![Just(Role::Peer), Just(Role::Host), Just(Role::Client)]
}

fn claims() -> impl Strategy<Value = Claims> {
    (
        "[A-Za-z0-9_-]{1,64}",
        role(),
        "[!-~]{1,64}",
        proptest::option::of("[A-Za-z0-9_-]{1,64}"),
        any::<u64>(),
    )
        .prop_map(|(room, role, identity, app, expires)| {
            Claims::new(room, role, identity, app.as_deref(), expires).unwrap()
        })
}

/// One change to a ticket's text.
#[derive(Debug, Clone)]
enum Mutation {
    Replace(usize, char),
    Insert(usize, char),
    Remove(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let c = prop_oneof![
        proptest::char::range('-', '~'),
        Just('.'),
        Just('='),
        Just(' '),
        any::<char>(),
    ];
    prop_oneof![
        (any::<usize>(), c.clone()).prop_map(|(i, c)| Mutation::Replace(i, c)),
        (any::<usize>(), c).prop_map(|(i, c)| Mutation::Insert(i, c)),
        any::<usize>().prop_map(Mutation::Remove),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

/// `ticket` changed by `m` (the ticket is ASCII: every index is a char boundary).
fn apply(ticket: &str, m: &Mutation) -> String {
    let mut text = ticket.to_owned();
    match *m {
        Mutation::Replace(i, c) => {
            let i = i % text.len();
            text.replace_range(i..=i, c.encode_utf8(&mut [0; 4]));
        }
        Mutation::Insert(i, c) => text.insert(i % (text.len() + 1), c),
        Mutation::Remove(i) => {
            text.remove(i % text.len());
        }
        Mutation::Truncate(i) => text.truncate(i % text.len()),
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn verify_never_panics_on_any_text(
        text in prop_oneof![
            any::<String>(),
            "v1\\.[A-Za-z0-9_-]{0,300}\\.[A-Za-z0-9_=.-]{0,60}",
            "v[0-9]{0,3}\\.[ -~]{0,80}",
        ],
        now in any::<u64>(),
        room in "[ -~]{0,70}",
        role in role(),
    ) {
        let _ = ticket::verify(SECRET, &text, now, &room, role, None);
        let _ = ticket::verify(b"", &text, now, &room, role, Some(&room));
    }

    #[test]
    fn a_minted_ticket_verifies_for_its_own_join_only(claims in claims(), now in any::<u64>()) {
        let text = ticket::mint(SECRET, &claims);
        prop_assert!(text.len() <= ticket::MAX_TICKET_LEN);
        let got = ticket::verify(SECRET, &text, now, claims.room(), claims.role(), claims.app());
        if now < claims.expires() {
            prop_assert_eq!(got, Ok(claims));
        } else {
            prop_assert_eq!(got, Err(TicketError::Expired { expires: claims.expires() }));
        }
    }

    #[test]
    fn a_changed_ticket_is_never_accepted(claims in claims(), m in mutation()) {
        let text = ticket::mint(SECRET, &claims);
        let changed = apply(&text, &m);
        prop_assume!(changed != text);
        let got = ticket::verify(SECRET, &changed, 0, claims.room(), claims.role(), claims.app());
        prop_assert!(got.is_err(), "{:?} accepted {}", m, changed);
    }
}
