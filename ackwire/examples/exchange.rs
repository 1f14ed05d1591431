//! A native program on the `ackwire` crate that exchanges numbered messages with every peer
//! of a room on all four kinds of channel, and reports what it received: the e2e suite's
//! native side of `web/e2e/api.test.mjs`, and a small example of the API.
//!
//! ```text
//! cargo run -p ackwire --example exchange -- http://127.0.0.1:8080/room/lobby --count 200 --loss 10
//! ```
//!
//! Channels (app `ackwire-exchange` v1, or `--app ID`): 0 unreliable, 1 unreliable-sequenced,
//! 2 reliable-ordered, 3 reliable-unordered. When a link connects, it sends `--count`
//! messages on 0, 2 and 3 (each a u32 little-endian, 0 to count − 1, one of each per tick),
//! and on 1 the same count with `send_latest`, then keeps sending the last value on 1. It prints
//! one JSON object per line on stdout: `joined`, `refused` (then exits 1), `link`, `sent`
//! (per peer, once its messages are all queued) and `received` (per peer and channel, the
//! numbers in arrival order) every second and when it stops (`--duration`, or Ctrl-C).

use std::collections::BTreeMap;
use std::time::Duration;

use ackwire::{
    App, ChannelKind, Emulation, EmulatorConfig, ErrorCode, Event, LinkState, PeerId, Room,
    RoomConfig, SignallingState,
};
use serde_json::json;

/// One message of each kind per tick, a bit faster than the packet rate.
const TICK: Duration = Duration::from_millis(25);

struct Args {
    url: String,
    count: u32,
    loss: f64,
    app: String,
    duration: Duration,
}

fn args() -> Args {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        url: String::new(),
        count: 100,
        loss: 0.0,
        app: "ackwire-exchange".into(),
        duration: Duration::from_secs(60),
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("a value after the flag");
        match arg.as_str() {
            "--count" => parsed.count = value().parse().expect("--count N"),
            "--loss" => parsed.loss = value().parse().expect("--loss PCT"),
            "--app" => parsed.app = value(),
            "--duration" => {
                parsed.duration = Duration::from_secs_f64(value().parse().expect("--duration SECS"))
            }
            url => parsed.url = url.to_owned(),
        }
    }
    parsed
}

/// What is being sent to one peer.
struct Sending {
    next: u32,
}

fn say(value: serde_json::Value) {
    println!("{value}");
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args = args();
    let app = App::new(
        args.app.clone(),
        1,
        [
            ChannelKind::Unreliable,
            ChannelKind::UnreliableSequenced,
            ChannelKind::ReliableOrdered,
            ChannelKind::ReliableUnordered,
        ],
    );
    let mut config = RoomConfig::new(app);
    config.native.bind = "127.0.0.1:0".parse().expect("an address");
    if args.loss > 0.0 {
        config.emulation = Some(Emulation {
            config: EmulatorConfig::default().with_loss_percent(args.loss),
            seed: 7,
            impair_after: Duration::ZERO,
        });
    }
    let mut room = match Room::join(&args.url, config) {
        Ok(room) => room,
        Err(e) => {
            eprintln!("exchange: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let mut sending: BTreeMap<PeerId, Sending> = BTreeMap::new();
    let mut received: BTreeMap<PeerId, [Vec<u32>; 4]> = BTreeMap::new();
    let mut refused = None;
    let mut tick = tokio::time::interval(TICK);
    let mut report = tokio::time::interval(Duration::from_secs(1));
    let stop = tokio::time::sleep(args.duration);
    tokio::pin!(stop);
    // Made once: a Ctrl-C arriving between two turns of the loop is then not lost.
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let report_all = |received: &BTreeMap<PeerId, [Vec<u32>; 4]>| {
        for (peer, channels) in received {
            for (channel, numbers) in channels.iter().enumerate() {
                say(
                    json!({"type": "received", "peer": peer, "channel": channel, "numbers": numbers}),
                );
            }
        }
    };
    loop {
        tokio::select! {
            () = &mut stop => break,
            _ = &mut interrupted => break,
            _ = report.tick() => report_all(&received),
            _ = tick.tick() => {
                for (&peer, s) in &mut sending {
                    if s.next < args.count {
                        let bytes = s.next.to_le_bytes();
                        // Reliable ones may meet backpressure: then this tick sends nothing.
                        if room.send(peer, 2, &bytes).is_ok() && room.send(peer, 3, &bytes).is_ok() {
                            let _ = room.send(peer, 0, &bytes);
                            let _ = room.send_latest(peer, 1, &bytes);
                            s.next += 1;
                            if s.next == args.count {
                                say(json!({"type": "sent", "peer": peer, "count": args.count}));
                            }
                        }
                    } else {
                        // The newest value, again and again: it arrives despite the loss.
                        let _ = room.send_latest(peer, 1, &(args.count - 1).to_le_bytes());
                    }
                }
            }
            event = room.next_event() => match event {
                Some(Event::Joined { server_id, .. }) => say(json!({"type": "joined", "server_id": server_id})),
                Some(Event::Refused { code, message, .. }) => {
                    say(json!({"type": "refused", "code": code, "message": message}));
                    if code == ErrorCode::AppMismatch {
                        refused = Some(code);
                    }
                }
                Some(Event::Signalling { state: SignallingState::Closed, .. }) if refused.is_some() => break,
                Some(Event::Link(link)) => {
                    say(json!({"type": "link", "peer": link.peer, "state": link.state}));
                    if link.state == LinkState::Connected {
                        sending.entry(link.peer).or_insert(Sending { next: 0 });
                    }
                }
                Some(Event::Message { peer, channel, bytes }) => {
                    if let (Ok(number), Some(list)) = (
                        <[u8; 4]>::try_from(bytes.as_slice()),
                        received.entry(peer).or_default().get_mut(usize::from(channel)),
                    ) {
                        list.push(u32::from_le_bytes(number));
                    }
                }
                Some(_) => {}
                None => break,
            },
        }
    }
    report_all(&received);
    room.close().await;
    if refused.is_some() {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
