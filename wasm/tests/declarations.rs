//! `web/ackwire.d.ts` (the npm package's TypeScript declarations) against the code it
//! declares, so neither drifts from the other: the error codes the bindings and `ackwire.js`
//! throw and the server refuses with, the links' failure codes, the events and their fields,
//! a link's fields and the core's `Stats` as JavaScript gets them. Native: it reads the sources.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeSet;
use std::time::Duration;

const DTS: &str = include_str!("../../web/ackwire.d.ts");
const ACKWIRE_JS: &str = include_str!("../../web/ackwire.js");
const BINDINGS: &str = include_str!("../src/room.rs");
const MEMBER_EVENTS: &str = include_str!("../../room/src/member/events.rs");

type Set = BTreeSet<String>;

/// The text between `start` and the next occurrence of `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).unwrap_or_else(|| panic!("no {start:?}")) + start.len();
    let len = text[from..]
        .find(end)
        .unwrap_or_else(|| panic!("no {end:?} after {start:?}"));
    &text[from..from + len]
}

/// The quoted strings (`quote` 'single' or "double") of `text`.
fn literals(text: &str, quote: char) -> Set {
    text.split(quote)
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The body of Rust function `name` (rustfmt's layout: it ends at its indentation's `}`).
fn rust_fn<'a>(source: &'a str, name: &str) -> &'a str {
    let head = format!("fn {name}(");
    let at = source.find(&head).unwrap_or_else(|| panic!("no {head}"));
    let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
    let indent = &source[line_start..at];
    let indent = &indent[..indent.len() - indent.trim_start().len()];
    between(&source[at..], "", &format!("\n{indent}}}"))
}

/// The codes in the `error("code", ..)` calls and `=> "code"` arms of the bindings' functions
/// `names`.
fn binding_codes(names: &[&str]) -> Set {
    let mut codes = Set::new();
    for name in names {
        let body = rust_fn(BINDINGS, name);
        // A call's first argument may sit on the next line (rustfmt), after any whitespace.
        let calls = body.split("error(").skip(1).map(str::trim_start);
        let arms = body.split("=> ").skip(1);
        for rest in calls.chain(arms) {
            if let Some(literal) = rest.strip_prefix('"') {
                codes.insert(literal.split('"').next().unwrap().to_owned());
            }
        }
    }
    codes
}

/// The string literals of the d.ts's `export type name = ...;`.
fn union(name: &str) -> Set {
    literals(between(DTS, &format!("export type {name} ="), ";"), '\'')
}

/// The properties of the d.ts's interface `name` (its own, not inherited), without `type`.
fn interface(name: &str) -> Set {
    let body = between(DTS, &format!("export interface {name} "), "\n}");
    body.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('/') && !l.starts_with('*'))
        .flat_map(|l| l.split(';'))
        .filter_map(|l| l.trim().trim_start_matches("readonly ").split_once(':'))
        .map(|(key, _)| key.trim_end_matches('?').to_owned())
        .filter(|key| key != "type" && !key.contains(' ') && !key.is_empty())
        .collect()
}

fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

fn set(items: &[&str]) -> Set {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_server_codes_are_every_error_code_of_the_signalling_protocol() {
    let server: Set = ackwire::ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_owned())
        .collect();
    assert_eq!(union("ServerErrorCode"), server);
}

#[test]
fn the_roles_are_the_signalling_protocols() {
    use ackwire::Role;
    let all = [Role::Peer, Role::Host, Role::Client];
    // A role added to the protocol fails to compile here until it is listed above.
    for role in all {
        match role {
            Role::Peer | Role::Host | Role::Client => {}
        }
    }
    let names: Set = all.iter().map(|r| r.as_str().to_owned()).collect();
    assert_eq!(union("Role"), names);
}

#[test]
fn the_send_codes_are_those_the_bindings_throw_from_sending() {
    let thrown = binding_codes(&["send_error", "payload", "peer_id", "channel_index"]);
    assert_eq!(union("SendErrorCode"), thrown);
}

#[test]
fn the_join_codes_are_the_servers_and_those_the_bindings_and_ackwire_js_throw_from_joining() {
    let mut thrown = binding_codes(&["join_error", "app", "emulation", "role", "new"]);
    for piece in ACKWIRE_JS.split("codeError('").skip(1) {
        thrown.insert(piece.split('\'').next().unwrap().to_owned());
    }
    let declared = between(DTS, "export type JoinErrorCode =", ";");
    assert!(
        declared.contains("ServerErrorCode"),
        "a join rejects with the server's refusals"
    );
    assert_eq!(literals(declared, '\''), thrown);
}

#[test]
fn the_join_codes_are_declared_for_what_the_bindings_throw_them_for() {
    let doc = between(DTS, "Why `join()` rejected", "*/");
    // A room name that breaks the name rule, from the path or `options.room`, fails the URL's
    // parse, and the bindings throw `bad_url` for that: not `invalid_config`.
    assert!(
        ackwire::RoomUrl::parse("https://play.example.org/", Some("not a name!")).is_err()
            && ackwire::RoomUrl::parse("https://play.example.org/room/not%20a%20name", None)
                .is_err()
    );
    assert!(rust_fn(BINDINGS, "join_error").contains("JoinError::Url(e) => error(\"bad_url\""));
    assert!(between(doc, "`bad_url`", "`invalid_app`").contains("room's name"));
    assert!(!between(doc, "`invalid_config`", "`bad_options`").contains("name"));
    // `onEvent` is ackwire.js's own, and replaces any a page passes: no page can get
    // `bad_options` for it.
    assert!(ACKWIRE_JS.contains("{ ...options, onEvent }"));
    assert!(!doc.contains("onEvent"));
}

#[test]
fn the_failure_codes_are_the_members() {
    let codes = literals(rust_fn(MEMBER_EVENTS, "code"), '"');
    assert_eq!(union("FailureCode"), codes);
}

#[test]
fn a_link_has_the_fields_the_bindings_give_it() {
    let fields: Set = between(BINDINGS, "struct JsLink<'a> {", "\n}")
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .filter_map(|l| l.split_once(':'))
        .map(|(name, _)| camel(name))
        .collect();
    assert_eq!(interface("LinkInfo"), fields);
}

#[test]
fn stats_have_the_cores_json_keys() {
    let endpoint =
        ackwire_core::endpoint::Endpoint::new(ackwire_core::Config::default(), Duration::ZERO)
            .unwrap();
    let json = serde_json::to_value(endpoint.stats()).unwrap();
    let keys: Set = json.as_object().unwrap().keys().cloned().collect();
    assert_eq!(interface("Stats"), keys);
}

#[test]
fn every_event_is_in_the_map_with_the_fields_the_bindings_give_it() {
    // Event name -> its fields, from the bindings' `JsEvent` (serde: variant names
    // lowercased unless renamed, fields camelCase) and `message()` (messages, undelivered).
    let mut events = std::collections::BTreeMap::<String, Set>::new();
    let mut rename = None;
    let mut current = None;
    for line in between(BINDINGS, "enum JsEvent<'a> {", "\n}").lines() {
        if let Some(name) = line.trim().strip_prefix("#[serde(rename = \"") {
            rename = Some(name.trim_end_matches("\")]").to_owned());
        } else if let Some(variant) = line.strip_prefix("    ").and_then(|l| l.strip_suffix(" {")) {
            let name = rename.take().unwrap_or_else(|| variant.to_lowercase());
            events.insert(name.clone(), Set::new());
            current = Some(name);
        } else if let (Some(name), Some((field, _))) = (&current, line.trim().split_once(':')) {
            events.get_mut(name).unwrap().insert(camel(field));
        }
    }
    let message: Set = literals(rust_fn(BINDINGS, "message"), '"')
        .into_iter()
        .filter(|key| ["peer", "channel", "data"].contains(&key.as_str()))
        .collect();
    assert_eq!(message, set(&["peer", "channel", "data"]));
    events.insert("message".into(), message.clone());
    events.insert("undelivered".into(), message);

    let map = between(DTS, "export interface RoomEventMap {", "\n}");
    let mut declared = Set::new();
    for line in map.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (name, interface_name) = line.trim_end_matches(';').split_once(": ").unwrap();
        declared.insert(name.to_owned());
        let fields = events
            .get(name)
            .unwrap_or_else(|| panic!("the d.ts declares event {name}, the bindings have none"));
        let mut own = interface(interface_name);
        // `text` is RoomEvent's getter, narrowed to a string on message events.
        own.remove("text");
        assert_eq!(&own, fields, "the fields of {name} events");
        let body = between(DTS, &format!("export interface {interface_name} "), "\n}");
        assert!(
            body.contains(&format!("readonly type: '{name}';")),
            "{interface_name} is the {name} event"
        );
    }
    let named: Set = events.keys().cloned().collect();
    assert_eq!(declared, named);
}
