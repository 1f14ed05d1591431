//! The host's command line, as a player setting up a game meets it.

use std::process::Command;

#[test]
fn a_host_started_without_a_room_url_says_how_to_use_it_and_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_pong-host"))
        .output()
        .expect("pong-host runs");
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("usage: pong-host URL"), "{said}");
}
