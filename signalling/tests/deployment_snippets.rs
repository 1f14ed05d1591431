//! `docs/deployment.md`'s Node backend mints join tickets byte for byte as `ticket::mint`
//! does: its `js` block is run with `node` (installed by `cargo xtask setup`) on claims of
//! every shape, and each ticket compared with the Rust one. (Its Rust block is a doctest of
//! this crate.)

use std::path::Path;
use std::process::Command;

use ackwire_signalling::Role;
use ackwire_signalling::ticket::{self, Claims};
use serde_json::json;

const DOC: &str = include_str!("../../docs/deployment.md");

/// The first ```js block after `heading`.
fn js_block(heading: &str) -> &'static str {
    let at = DOC
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    DOC[at..]
        .split("```js\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap_or_else(|| panic!("no js block after {heading:?}"))
}

#[test]
fn the_node_backend_mints_the_same_tickets_as_mint() {
    let secret = "0123456789abcdef0123456789abcdef";
    let long = "a".repeat(64);
    let cases = [
        (
            "arena",
            Role::Client,
            "user-4417",
            Some("pong"),
            1_900_000_000u64,
        ),
        ("lobby", Role::Peer, "u", None, 0),
        (
            "arena",
            Role::Host,
            "game-server-eu-1",
            Some("pong"),
            u64::MAX,
        ),
        (&long, Role::Client, &"~".repeat(64), Some(&long), 1 << 40),
        (
            "r",
            Role::Peer,
            "steam:76561198!@#$%^&*()",
            Some("x"),
            12345,
        ),
    ];
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("deployment-node");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mint.mjs"), js_block("## Join tickets")).unwrap();
    let claims: Vec<_> = cases
        .iter()
        .map(|(room, role, identity, app, expires)| {
            json!({"room": room, "role": role.as_str(), "identity": identity,
                "app": app.unwrap_or(""), "expires": expires.to_string()})
        })
        .chain([json!({"room": "no spaces", "role": "peer", "identity": "u", "expires": "1"})])
        .collect();
    let harness = format!(
        "import {{ mintTicket }} from './mint.mjs';\n\
         for (const c of {cases}) {{\n\
           try {{ console.log(mintTicket('{secret}', {{ ...c, expires: BigInt(c.expires) }})); }}\n\
           catch (e) {{ console.log(`refused: ${{e.message}}`); }}\n\
         }}\n",
        cases = serde_json::to_string(&claims).unwrap()
    );
    std::fs::write(dir.join("run.mjs"), harness).unwrap();
    let out = Command::new("node")
        .arg(dir.join("run.mjs"))
        .output()
        .expect("node (installed by `cargo xtask setup`)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    let printed: Vec<&str> = printed.lines().collect();
    assert_eq!(printed.len(), cases.len() + 1, "{printed:?}");
    for ((room, role, identity, app, expires), node) in cases.iter().zip(&printed) {
        let claims = Claims::new(*room, *role, *identity, *app, *expires).unwrap();
        assert_eq!(
            *node,
            ticket::mint(secret.as_bytes(), &claims),
            "{claims:?}"
        );
    }
    assert_eq!(printed[cases.len()], "refused: invalid ticket claims");
}
