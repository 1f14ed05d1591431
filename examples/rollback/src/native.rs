//! `rollback-player`: one native player of the rollback game, playing its scripted inputs
//! (`scripted_input`) at 60 frames a second in a mesh room of `--players` members, every link
//! through the core's emulator at `--loss` percent. It prints one JSON object per line:
//! `linked` (the mesh is complete), `started` (its handle), `progress` every 60 frames, and
//! `done` once it played `--frames` and kept answering its peers for 3 s more, with every
//! settled frame's checksum (hex, by frame), the desyncs ggrs found and the rollbacks.
//!
//! ```text
//! rollback-player http://127.0.0.1:8080/room/NAME [--players 3] [--frames 600] [--loss 10]
//! ```

use std::sync::Arc;
use std::time::Duration;

use ackwire::{Room, RoomConfig};
use rollback::{Player, app, emulation, linked, scripted_input};
use serde_json::json;

fn say(value: serde_json::Value) {
    println!("{value}");
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let (mut url, mut players, mut frames, mut loss) = (String::new(), 3usize, 600u32, 0.0f64);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_default();
        match arg.as_str() {
            "--players" => players = value().parse().expect("--players N (2-4)"),
            "--frames" => frames = value().parse().expect("--frames N"),
            "--loss" => loss = value().parse().expect("--loss PERCENT"),
            _ => url = arg,
        }
    }
    let mut config = RoomConfig::new(app());
    if loss > 0.0 {
        config = config.with_emulation(emulation(loss, 7));
    }
    let room = match Room::join(&url, config) {
        Ok(room) => Arc::new(room),
        Err(e) => {
            eprintln!(
                "rollback-player: {e}\nusage: rollback-player URL [--players N] [--frames N] [--loss PERCENT]"
            );
            return std::process::ExitCode::from(2);
        }
    };
    // The mesh first: every member linked to every other computes the same player order.
    let mut tick = tokio::time::interval(Duration::from_millis(16));
    while !linked(&room, players - 1) {
        tick.tick().await;
        while room.poll_event().is_some() {}
    }
    say(json!({"type": "linked"}));
    let Some(mut player) = Player::start(Arc::clone(&room)) else {
        say(json!({"type": "failed", "why": "no session: the room has no server id"}));
        return std::process::ExitCode::FAILURE;
    };
    say(json!({"type": "started", "me": player.me}));
    while player.game.frame < frames {
        tick.tick().await;
        // The game's own events (links, peers); ggrs reads its channel itself.
        while room.poll_event().is_some() {}
        if let Err(e) = player.frame(scripted_input(player.game.frame, player.me)) {
            say(json!({"type": "failed", "why": e.to_string()}));
            return std::process::ExitCode::FAILURE;
        }
        if player.game.frame > 0 && player.game.frame.is_multiple_of(60) {
            say(json!({"type": "progress", "frame": player.game.frame, "settled": player.settled}));
        }
    }
    // Peers still behind need this player's inputs, resent until they ack them.
    for _ in 0..180 {
        tick.tick().await;
        while room.poll_event().is_some() {}
        player.poll();
    }
    let checksums: serde_json::Map<String, serde_json::Value> = player
        .checksums
        .range(..=player.settled)
        .map(|(frame, sum)| (frame.to_string(), format!("{sum:x}").into()))
        .collect();
    say(json!({
        "type": "done",
        "me": player.me,
        "frame": player.game.frame,
        "settled": player.settled,
        "rollbacks": player.rollbacks,
        "desyncs": player.desyncs,
        "checksums": checksums,
    }));
    drop(player);
    if let Ok(mut room) = Arc::try_unwrap(room) {
        room.close().await;
    }
    std::process::ExitCode::SUCCESS
}
