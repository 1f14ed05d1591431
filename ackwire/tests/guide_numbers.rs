//! The numbers the guide (`docs/api.md`) states, held to the constants and defaults they come
//! from: a change to one fails here until the guide says the new number.
#![cfg(all(feature = "rooms", not(target_arch = "wasm32")))]

use ackwire::{App, ChannelKind, ConnectionConfig, NativeOptions, Room, RoomConfig};

/// The guide with every run of whitespace made one space (its lines wrap anywhere).
fn guide() -> String {
    include_str!("../../docs/api.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// `n` as the guide writes it: `262,139`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[track_caller]
fn says(guide: &str, text: &str) {
    assert!(guide.contains(text), "docs/api.md should say {text:?}");
}

#[test]
fn the_guide_states_the_message_sizes_a_room_takes() {
    let guide = guide();
    let app = App::new(
        "numbers",
        1,
        [
            ChannelKind::UnreliableSequenced,
            ChannelKind::ReliableOrdered,
        ],
    );
    let mut config = RoomConfig::new(app);
    config.native.bind = "127.0.0.1:0".parse().unwrap();
    // No server answers there: the sizes do not depend on one.
    let room = Room::join("http://127.0.0.1:9/room/numbers", config).unwrap();
    let unreliable = room.max_message_size(0).unwrap();
    let reliable = room.max_message_size(1).unwrap();
    assert_eq!(room.max_message_size(2), None, "an undeclared channel");
    says(
        &guide,
        &format!("{} bytes with the default", thousands(unreliable)),
    );
    says(
        &guide,
        &format!(
            "up to {} bytes (256 KiB less the room's",
            thousands(reliable)
        ),
    );
    says(
        &guide,
        &format!("`max_message_size`: {} bytes", thousands(reliable)),
    );
    let index = ackwire_core::frame::MAX_MESSAGE_SIZE - reliable;
    assert_eq!(ackwire_core::frame::MAX_MESSAGE_SIZE, 256 << 10);
    says(&guide, &format!("the room's {index}-byte index"));
    // Nor do the guide's words for an undeclared channel.
    says(&guide, "an undeclared channel is `None` in Rust");
}

#[test]
fn the_guide_states_the_budgets_and_their_defaults() {
    let guide = guide();
    let window = usize::from(ackwire_core::frame::RELIABLE_WINDOW);
    says(
        &guide,
        &format!("{} reliable messages on the channel", thousands(window)),
    );
    says(
        &guide,
        &format!("{} messages per channel", thousands(window)),
    );
    let app = App::new("numbers", 1, [ChannelKind::ReliableOrdered]);
    assert_eq!(
        RoomConfig::new(app).peer_budget,
        ackwire_room::DEFAULT_PEER_BUDGET
    );
    let peer_mib = ackwire_room::DEFAULT_PEER_BUDGET >> 20;
    assert_eq!(ackwire_room::DEFAULT_PEER_BUDGET, peer_mib << 20);
    says(
        &guide,
        &format!("(default {peer_mib} MiB) of reliable messages"),
    );
    says(&guide, &format!("default {peer_mib} MiB): beyond"));
    let event_budget = NativeOptions::default().event_budget;
    let event_mib = event_budget >> 20;
    assert_eq!(event_budget, event_mib << 20);
    says(&guide, &format!("`event_budget` (default {event_mib} MiB"));
}

#[test]
fn the_guide_states_the_link_rates_and_when_a_link_goes_bad() {
    let guide = guide();
    let connection = ConnectionConfig::default();
    let packet = &connection.packet;
    let (good, bad) = (packet.good_rate_pps, packet.bad_rate_pps);
    assert_eq!((good.fract(), bad.fract()), (0.0, 0.0));
    says(
        &guide,
        &format!("{good} packets a second while it is good and {bad} while it is bad"),
    );
    says(
        &guide,
        &format!(
            "smoothed RTT is over {} ms",
            packet.rtt_threshold.as_millis()
        ),
    );
    assert_eq!(packet.loss_threshold_percent, None);
    says(
        &guide,
        "Loss alone does not make it bad: that trigger is off by default",
    );
    says(
        &guide,
        "smoothed RTT over 250 ms, or a silent peer; loss only where a loss threshold is configured, off by default",
    );
    assert!(
        !guide.contains("RTT over 250 ms, or loss)"),
        "loss is no trigger by default"
    );
    assert_eq!(packet.initial_mode, ackwire::Mode::Bad);
    says(
        &guide,
        &format!(
            "A new link starts bad and turns good after {} s of good conditions",
            packet.initial_recovery_time.as_secs()
        ),
    );
    // Throughput: one datagram per packet; a large message one fragment per packet, and more
    // packets than the cadence while a backlog waits (the bulk window).
    let datagram = connection.max_datagram_size;
    let per_second = good as usize * datagram;
    assert!((35_000..37_000).contains(&per_second), "{per_second} B/s");
    says(&guide, "At its cadence a good link carries about 35 KB/s");
    says(
        &guide,
        &format!("({good} × {} bytes, headers included)", thousands(datagram)),
    );
    let fragment = ackwire_core::frame::FRAGMENT_SIZE;
    assert!(2 * fragment > datagram, "one fragment per packet");
    says(
        &guide,
        &format!("cut into {}-byte fragments", thousands(fragment)),
    );
    says(
        &guide,
        &format!("goes one {}-byte fragment per packet", thousands(fragment)),
    );
    assert!(
        packet.bulk_window_packets > 0,
        "the bulk window is on by default"
    );
    says(
        &guide,
        &format!(
            "while reliable data waits for room and the link's RTT is under {} ms, extra packets leave",
            packet.rtt_threshold.as_millis()
        ),
    );
}

#[test]
fn the_guide_states_how_long_a_link_may_take_to_connect() {
    let guide = guide();
    let app = App::new("numbers", 1, [ChannelKind::ReliableOrdered]);
    let attempt = RoomConfig::new(app).attempt_timeout;
    assert_eq!(attempt.subsec_nanos(), 0);
    let secs = attempt.as_secs();
    says(
        &guide,
        &format!("A link not `connected` {secs} s after its attempt began"),
    );
    says(&guide, &format!("could not connect within {secs} s"));
    let d_ts = include_str!("../../web/ackwire.d.ts")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        d_ts.contains(&format!("(default {})", secs * 1000)),
        "web/ackwire.d.ts should give attemptTimeoutMs's default, {} ms",
        secs * 1000
    );
}
