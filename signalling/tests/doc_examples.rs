//! `docs/signalling.md` is the schema's specification: every frame it shows must parse with
//! the shared types and serialize back to the same JSON, and every frame type must be shown.

use std::collections::BTreeSet;

use ackwire_signalling::{ClientFrame, PeerKind, ServerFrame, ServerFrameType, VERSION};
use serde_json::Value;

const DOC: &str = include_str!("../../docs/signalling.md");

/// Which way an example frame travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    ToServer,
    ToClient,
}

/// `text` without `//` and `/* */` comments (outside JSON strings).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_string, mut escaped) = (false, false);
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every example frame in the document, with its direction and where it was found.
fn examples() -> Vec<(Dir, Value, String)> {
    let mut found = Vec::new();
    let mut heading = "";
    let mut lines = DOC.lines();
    while let Some(line) = lines.next() {
        if line.starts_with('#') {
            heading = line;
            continue;
        }
        let Some(lang) = line.strip_prefix("```") else {
            continue;
        };
        let block: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        if lang == "jsonc" {
            let dir = if heading.contains("Client → server") {
                Dir::ToServer
            } else if heading.contains("Server → client") {
                Dir::ToClient
            } else {
                panic!("jsonc block under {heading:?}: which direction?");
            };
            let text = strip_comments(&block.join("\n"));
            for value in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
                let value = value.unwrap_or_else(|e| panic!("under {heading:?}: {e}"));
                found.push((dir, value, heading.to_owned()));
            }
        } else if heading.contains("Worked exchange") {
            for line in block {
                let json = |arrow| line.split_once(arrow).map(|(_, j)| j.trim());
                let (dir, json) = match (json(" → "), json(" ← ")) {
                    (Some(j), _) => (Dir::ToServer, j),
                    (_, Some(j)) => (Dir::ToClient, j),
                    _ => continue,
                };
                let value = serde_json::from_str(json)
                    .unwrap_or_else(|e| panic!("worked exchange line {line:?}: {e}"));
                found.push((dir, value, line.to_owned()));
            }
        }
    }
    found
}

#[test]
fn every_documented_frame_round_trips_through_the_shared_types() {
    let mut client_types = BTreeSet::new();
    let mut server_types = BTreeSet::new();
    for (dir, value, at) in examples() {
        let kind = value["type"].as_str().unwrap_or_default().to_owned();
        let back = match dir {
            Dir::ToServer => {
                let frame: ClientFrame = serde_json::from_value(value.clone())
                    .unwrap_or_else(|e| panic!("{value} ({at}): {e}"));
                client_types.insert(kind);
                serde_json::to_value(&frame).unwrap()
            }
            Dir::ToClient => {
                let frame: ServerFrame<'static> = serde_json::from_value(value.clone())
                    .unwrap_or_else(|e| panic!("{value} ({at}): {e}"));
                server_types.insert(frame.frame_type().as_str());
                serde_json::to_value(&frame).unwrap()
            }
        };
        assert_eq!(back, value, "({at}) does not serialize back unchanged");
    }
    assert_eq!(
        client_types,
        BTreeSet::from(
            ["join", "leave", "signal", "stats", "subscribe", "update"].map(String::from)
        ),
        "every client frame type is documented"
    );
    assert_eq!(
        server_types,
        BTreeSet::from(ServerFrameType::ALL.map(|t| t.as_str())),
        "every server frame type is documented"
    );
}

#[test]
fn the_documented_browser_join_serializes_byte_for_byte() {
    let join: ClientFrame = ClientFrame::Join {
        version: VERSION,
        room: "lobby".into(),
        kind: PeerKind::Browser,
        udp_addr: None,
        instance: None,
        udp_key: None,
        app: None,
        role: Default::default(),
        ticket: None,
        webtransport: None,
        resume: None,
    };
    let text = serde_json::to_string(&join).unwrap();
    assert_eq!(
        text,
        r#"{"type":"join","version":1,"room":"lobby","kind":"browser"}"#
    );
    assert!(
        DOC.contains(&format!("A → {text}")),
        "the worked exchange shows this join"
    );
}

#[test]
fn the_documented_host_room_refusals_carry_the_rules_own_messages() {
    use ackwire_signalling::rules::RuleError;
    use ackwire_signalling::{ErrorCode, Role, Topology};
    let refusals = [
        RuleError::TopologyMismatch {
            room: "arena".into(),
            topology: Topology::Host,
            role: Role::Peer,
        },
        RuleError::HostTaken {
            room: "arena".into(),
            host: 1,
        },
        RuleError::ClientToClient(3),
    ];
    for err in refusals {
        let frame: ServerFrame<'static> = ServerFrame::Error {
            code: err.code(),
            message: err.to_string(),
        };
        let text = serde_json::to_string(&frame).unwrap();
        assert!(
            DOC.contains(&format!("← {text}")),
            "the host room's worked exchange shows {text}"
        );
        assert!(
            DOC.contains(&format!("| `{}` |", err.code().as_str())),
            "the Errors table lists {}",
            err.code().as_str()
        );
        assert_ne!(err.code(), ErrorCode::Unknown);
    }
}

/// The `key value` lines of the first ```text block after `heading`.
fn text_block(heading: &str) -> Vec<(String, String)> {
    let at = DOC
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    let block = DOC[at..]
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap_or_else(|| panic!("no text block after {heading:?}"));
    block
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

#[test]
fn the_documented_ticket_is_minted_byte_for_byte() {
    use ackwire_signalling::Role;
    use ackwire_signalling::ticket::{self, Claims};
    let lines = text_block("#### Join tickets");
    let field = |key: &str| -> &str {
        &lines
            .iter()
            .find(|(k, _)| k == key)
            .unwrap_or_else(|| panic!("no {key} line"))
            .1
    };
    let role = match field("role") {
        "peer" => Role::Peer,
        "host" => Role::Host,
        "client" => Role::Client,
        other => panic!("role {other}"),
    };
    let claims = Claims::new(
        field("room"),
        role,
        field("identity"),
        Some(field("app")),
        field("expires").parse().unwrap(),
    )
    .unwrap();
    let secret = field("secret").as_bytes();
    let minted = ticket::mint(secret, &claims);
    assert_eq!(minted, field("ticket"));
    // Its parts, as the table lays them out.
    let (signed, tag) = minted.rsplit_once('.').unwrap();
    assert_eq!(signed, field("signed"));
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let hex = |bytes: &[u8]| {
        bytes
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let payload = b64.decode(&signed["v1.".len()..]).unwrap();
    assert_eq!(hex(&payload), field("payload"));
    assert_eq!(
        hex(&b64.decode(tag).unwrap()).replace(' ', ""),
        field("tag")
    );
    // And it is the ticket of the URL, frame and worked-exchange examples.
    assert!(DOC.matches(&minted).count() >= 5);
    let now = claims.expires() - 1;
    assert_eq!(
        ticket::verify(secret, &minted, now, "arena", Role::Client, Some("pong")),
        Ok(claims)
    );
}

#[test]
fn the_documented_ticket_refusals_carry_the_tickets_own_messages() {
    use ackwire_signalling::Role;
    use ackwire_signalling::ticket::TicketError;
    for err in [
        TicketError::Missing,
        TicketError::WrongRole {
            ticket: Role::Client,
            join: Role::Host,
        },
    ] {
        let frame: ServerFrame<'static> = ServerFrame::Error {
            code: err.code(),
            message: err.to_string(),
        };
        let text = serde_json::to_string(&frame).unwrap();
        assert!(
            DOC.contains(&format!("← {text}")),
            "the tickets' worked exchange shows {text}"
        );
    }
}

#[test]
fn the_errors_table_lists_every_code() {
    use ackwire_signalling::ErrorCode;
    let table = DOC
        .split("\n## Errors\n")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .expect("an Errors section");
    for code in ErrorCode::ALL {
        if code == ErrorCode::Unknown {
            continue;
        }
        assert!(
            table.contains(&format!("| `{}` |", code.as_str())),
            "the Errors table lists {}",
            code.as_str()
        );
    }
}
