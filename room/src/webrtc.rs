//! The WebRTC policy both drivers follow, in one place: the data channel every link uses,
//! how an ICE state is named, how the chosen path is told, and how long a driver asks for it.
//! The drivers only translate it to their stack (web-sys in the browser, the `webrtc` crate
//! natively).

use std::time::Duration;

use crate::member::IceState;

/// The one data channel of every link's peer connection. Both sides create it
/// pre-negotiated, so neither waits for an announcement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataChannel {
    /// Its label.
    pub label: &'static str,
    /// Its pre-negotiated stream id.
    pub id: u16,
    /// Delivered in order? No: the core orders what needs ordering.
    pub ordered: bool,
    /// Retransmissions by SCTP: none, the core resends what needs resending.
    pub max_retransmits: u16,
}

/// The data channel of every link: `ackwire`, id 0, unordered, 0 retransmits, so each of the
/// core's datagrams is one unreliable message, as over UDP.
pub const DATA_CHANNEL: DataChannel = DataChannel {
    label: "ackwire",
    id: 0,
    ordered: false,
    max_retransmits: 0,
};

/// After a data channel opens, a driver asks for the selected candidate pair this often...
pub const PATH_POLL: Duration = Duration::from_millis(250);
/// ...at most this many times (the controlled side may learn the pair a moment after the
/// channel opens, through a relay); then it stops asking.
pub const PATH_POLLS: u32 = 40;

/// The ICE connection state named `name` as both stacks spell it (`checking`, `connected`,
/// ...); anything else (`new`, a state a later stack adds) is [`IceState::New`].
pub fn ice_state(name: &str) -> IceState {
    match name {
        "checking" => IceState::Checking,
        "connected" => IceState::Connected,
        "completed" => IceState::Completed,
        "disconnected" => IceState::Disconnected,
        "failed" => IceState::Failed,
        "closed" => IceState::Closed,
        _ => IceState::New,
    }
}

/// The path of a selected candidate pair, from its two ends' candidate types: `relay` when
/// either end is a TURN relay, so a path relayed by the peer's TURN allocation (ours reaching
/// it from a NAT-mapped, `prflx`, address) says so on both sides; otherwise our local
/// candidate's type (`host`, `srflx`, `prflx`).
pub fn path_type(local: &str, remote: &str) -> String {
    if local == "relay" || remote == "relay" {
        "relay".to_owned()
    } else {
        local.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_relayed_at_either_end_is_relay_else_the_local_type() {
        assert_eq!(path_type("prflx", "relay"), "relay");
        assert_eq!(path_type("relay", "host"), "relay");
        assert_eq!(path_type("srflx", "host"), "srflx");
        assert_eq!(ice_state("failed"), IceState::Failed);
        assert_eq!(ice_state("new"), IceState::New);
        assert_eq!(ice_state("teleporting"), IceState::New);
    }
}
