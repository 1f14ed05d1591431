//! What the member tells: its driver ([`Output`]) and the application ([`Event`]), with what
//! those carry (link snapshots, why a link was lost, why a peer is gone) and what a broadcast
//! did peer by peer.

use std::time::Duration;

use ackwire_core::Stats;
use serde::Serialize;
use serde::ser::SerializeStruct;

use super::{
    Command, IceState, LinkState, MemberFrame, PeerId, Route, SendError, ServerId, TransportKind,
};
#[cfg(doc)] // named in the docs alone
use super::{Member, MemberConfig};
use crate::signalling::{ErrorCode, PeerKind, Role, UrlJoin};

/// What the driver must do, or tell the application.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Open the signalling WebSocket, with `join`'s query on the URL when there is one
    /// (`ws://host/ws?version=1&room=..`: the server's first frame is then the welcome); then
    /// call [`Member::signalling_open`] or [`Member::signalling_closed`].
    OpenSignalling {
        /// The join the URL carries; `None` when the member resumes, which takes a frame.
        join: Option<UrlJoin>,
    },
    /// Send this frame on the signalling socket (drop it if the socket is not open).
    Frame(MemberFrame),
    /// Close the signalling socket; ignore whatever it still reports. The member asks for a
    /// new one with [`OpenSignalling`](Self::OpenSignalling) when it wants one.
    CloseSignalling,
    /// Run this on a transport.
    Command(Command),
    /// Send this datagram; hand the buffer back with [`Member::recycle`] once sent, so the
    /// next one needs no allocation.
    Transmit {
        /// Where.
        route: Route,
        /// The bytes.
        datagram: Vec<u8>,
    },
    /// Tell the application.
    Event(Event),
}

/// What the application hears.
// A link's snapshot is the big variant and a common one; events are few (a handful per
// second, plus messages), so boxing it would buy nothing but an allocation each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Event {
    /// The signalling socket's state changed.
    Signalling {
        /// The new state.
        state: SignallingState,
        /// Why, when it dropped.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// We are in the room, under this server id.
    Joined {
        /// Our id in this server session (for dashboards and logs).
        server_id: ServerId,
        /// Whether an earlier id was taken back.
        resumed: bool,
    },
    /// The server refused something we sent. With [`ErrorCode::AppMismatch`] (the room plays
    /// another application), [`ErrorCode::InvalidApp`] or a bad room name the member stops
    /// trying: signalling goes [`Closed`](SignallingState::Closed).
    Refused {
        /// Its code (`docs/signalling.md`, "Errors").
        code: ErrorCode,
        /// Its words.
        message: String,
        /// The member stopped: a join refused for a reason no retry cures (another
        /// application or version in the room, a bad name or ticket, the host's seat taken);
        /// signalling goes [`Closed`](SignallingState::Closed) next. `false`: it tries again
        /// by itself (a full room, a server busy), or only one request was refused.
        fatal: bool,
    },
    /// A peer entered the room (a program instance this member had not met). A client of a
    /// host room hears of the host alone.
    PeerJoined {
        /// The member's id for it, for its whole life.
        peer: PeerId,
        /// Its id in the server's current session.
        server_id: ServerId,
        /// Browser or native.
        kind: PeerKind,
        /// A mesh peer, or the host or a client of a host room.
        role: Role,
        /// Who the game's backend says it is (its join ticket's identity), on a server that
        /// requires tickets; `None` without.
        #[serde(skip_serializing_if = "Option::is_none")]
        identity: Option<String>,
    },
    /// A client of a host room refused a host: its identity is not the one the client
    /// pinned ([`MemberConfig::host_identity`], or the first host's). No link is made with
    /// it; the member stays in the room and links with a host of the pinned identity when one
    /// joins.
    HostRefused {
        /// The refused host's id in the server's session.
        server_id: ServerId,
        /// Its identity, `None` when the server gave it none.
        identity: Option<String>,
        /// The identity the client holds its host to.
        expected: String,
    },
    /// A peer is gone for good; its link with it. For a client whose `role` here is
    /// [`Role::Host`], the host left (`Left`) or was lost (`Lost`): the client stays in the
    /// room, and links again when a host joins.
    PeerLeft {
        /// Who.
        peer: PeerId,
        /// Its last server id, if it had one.
        server_id: Option<ServerId>,
        /// Why.
        reason: GoneReason,
        /// What it was in the room.
        role: Role,
    },
    /// A link changed state (or learned its path or first ack).
    Link(LinkInfo),
    /// A peer's link is connected: messages flow. Once per connection, after its
    /// [`Event::Link`]; a game that only needs to know when it can send to a peer listens
    /// to this and [`Event::Disconnected`] alone.
    Connected {
        /// Whose link.
        peer: PeerId,
    },
    /// A peer's connected link is no longer connected: lost (it recovers by itself while the
    /// peer is in the room, and [`Event::Connected`] comes again) or gone (the peer left:
    /// [`Event::PeerLeft`] follows). Once per [`Event::Connected`].
    Disconnected {
        /// Whose link.
        peer: PeerId,
        /// Why it was lost (`PeerClosed` when the peer said goodbye, leaving); `None` when the
        /// link went with its peer before any failure (the server said it left first, or
        /// this member left).
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<Failure>,
    },
    /// A message from a peer: exactly once and in order where its channel promises it.
    Message {
        /// From whom.
        peer: PeerId,
        /// On which of the application's channels.
        channel: u8,
        /// The bytes sent.
        bytes: Vec<u8>,
    },
    /// A reliable message handed back: its peer left for good (or forgot this member) before
    /// confirming it. It may or may not have arrived: a peer that left can no longer say.
    /// Every accepted reliable message is delivered or handed back, once, never both while
    /// the peer stays in the room; handed back ones come in the order sent.
    Undelivered {
        /// To whom.
        peer: PeerId,
        /// On which channel.
        channel: u8,
        /// The bytes sent.
        bytes: Vec<u8>,
    },
    /// Every link with its core stats, each [`MemberConfig::stats_period`].
    Stats {
        /// The links.
        links: Vec<LinkInfo>,
    },
}

/// What a peer's channel takes now ([`Member::send_capacity`](super::Member::send_capacity)):
/// sends within both figures are taken; one beyond either is refused with
/// [`SendError::Full`](super::SendError::Full).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SendCapacity {
    /// More messages: on a reliable channel, copies the peer may still hold on it (1,024 at
    /// most); on an unreliable one, room in the link's queue.
    pub messages: usize,
    /// More bytes: on a reliable channel, the peer's budget left, each message counting its
    /// bytes and an index of up to 5 (any one message when nothing is kept); on an
    /// unreliable one, `messages` of the largest size.
    pub bytes: usize,
}

/// The signalling socket's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SignallingState {
    /// Opening the socket.
    Connecting,
    /// Socket open, join sent.
    Joining,
    /// In the room.
    Joined,
    /// The socket dropped; the next attempt is scheduled.
    Reconnecting,
    /// Left the room, or the server refused it for good (see [`Event::Refused`]).
    Closed,
}

/// Why a peer is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GoneReason {
    /// It left the room.
    Left,
    /// Its connection to the signalling server dropped and it did not come back in time.
    Lost,
    /// It did not come back after the signalling server restarted.
    NotBack,
    /// We left the room.
    WeLeft,
}

/// A link as the application, the dashboards and logs see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkInfo {
    /// The peer at the other end.
    pub peer: PeerId,
    /// The peer's id in the current server session (`None` while it is not in the room).
    pub server_id: Option<ServerId>,
    /// Browser or native.
    pub kind: PeerKind,
    /// UDP or WebRTC.
    pub transport: TransportKind,
    /// Where the link is in its life.
    pub state: LinkState,
    /// Why it was last lost (kept until it connects again).
    pub reason: Option<Failure>,
    /// WebRTC: the ICE connection state.
    pub ice: Option<IceState>,
    /// WebRTC: the selected path (`host`, `srflx`, `prflx`, `relay`).
    pub candidate: Option<String>,
    /// How long the current attempt took to connect (connected), or has run so far
    /// (wanted, negotiating, open), in ms; 0 while lost or retrying.
    #[serde(serialize_with = "millis")]
    pub attempt_ms: Duration,
    /// Attempts since the link last connected.
    pub attempts: u32,
    /// When the current connection's first packet was acknowledged, on the driver's clock.
    #[serde(serialize_with = "opt_millis")]
    pub first_ack_at: Option<Duration>,
    /// Datagrams refused on this link.
    pub refused: u64,
    /// Reliable messages sent and not yet confirmed by the peer.
    pub unconfirmed: usize,
    /// The core's stats, once the protocol runs.
    pub stats: Option<Stats>,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1e6).round() / 1e3)
}

fn opt_millis<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => millis(d, s),
        None => s.serialize_none(),
    }
}

/// Why a link was lost, in words a player understands ([`Display`](std::fmt::Display)) and a
/// stable code ([`Failure::code`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// ICE found no candidate pair that works.
    IceFailed,
    /// Not connected within the attempt timeout (the member's `attempt_timeout`, given).
    Timeout(Duration),
    /// The data channel closed.
    ChannelClosed,
    /// The WebRTC stack reported an error.
    Transport(String),
    /// Nothing arrived for the core's idle timeout.
    IdleTimeout(Duration),
    /// The peer closed its side.
    PeerClosed,
    /// The peer never completed the core handshake.
    HandshakeTimeout,
    /// The peer started the link over (a new offer while ours was up).
    Restarted,
    /// The other native answered a raw UDP link without encryption where this one requires
    /// it (its join announced a key it does not use): no link in plaintext.
    Unencrypted,
    /// The other native's key exchange did not prove the key signalling gave for it.
    KeyRefused,
    /// This side could not put its keys on the link (its configuration cannot encrypt): no
    /// link in plaintext.
    Keying(String),
    /// The peer's messages broke the member's framing (a bug, or not an ackwire member).
    Protocol(String),
    /// A direct UDP attempt between natives got no answer within `direct_timeout`: the next
    /// attempt goes through WebRTC (ICE, with STUN and TURN).
    NoDirectPath,
    /// Nothing this side can open reaches the peer: a browser without WebRTC, and a host
    /// that serves neither WebTransport it can dial nor a WebSocket.
    NoTransport,
}

impl Failure {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Failure::IceFailed => "ice_failed",
            Failure::Timeout(_) => "timeout",
            Failure::ChannelClosed => "channel_closed",
            Failure::Transport(_) => "transport",
            Failure::IdleTimeout(_) => "idle_timeout",
            Failure::PeerClosed => "peer_closed",
            Failure::HandshakeTimeout => "handshake_timeout",
            Failure::Restarted => "restarted",
            Failure::Unencrypted => "unencrypted",
            Failure::KeyRefused => "key_refused",
            Failure::Keying(_) => "keying",
            Failure::Protocol(_) => "protocol",
            Failure::NoTransport => "no_transport",
            Failure::NoDirectPath => "no_direct_path",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::IceFailed => f.write_str(
                "no network path to this player: ICE failed; this network needs a TURN server (see docs/deployment.md)",
            ),
            // Whole seconds, else milliseconds, as u64: a float's printer would grow the wasm
            // bundle by ~5 KB gzipped, a u128's (`as_millis`) by ~0.5 KB.
            Failure::Timeout(after) => {
                if after.subsec_millis() == 0 {
                    write!(f, "could not connect within {} s", after.as_secs())?;
                } else {
                    let ms = after.as_secs() * 1000 + u64::from(after.subsec_millis());
                    write!(f, "could not connect within {ms} ms")?;
                }
                f.write_str("; this network may need a TURN server (see docs/deployment.md)")
            }
            Failure::ChannelClosed => f.write_str("the data channel closed"),
            Failure::Transport(reason) => write!(f, "transport error: {reason}"),
            Failure::IdleTimeout(after) => {
                write!(f, "nothing heard from this player for {} s", after.as_secs())
            }
            Failure::PeerClosed => f.write_str("the other player closed the link"),
            Failure::HandshakeTimeout => f.write_str("the other player never answered"),
            Failure::Restarted => f.write_str("the other player started the link over"),
            Failure::Unencrypted => f.write_str(
                "the other player's program answered without encryption; this one requires it",
            ),
            Failure::KeyRefused => f.write_str(
                "the other player's key did not match the one the server gave (a man in the middle?)",
            ),
            Failure::Keying(reason) => write!(f, "no link without encryption: {reason}"),
            Failure::Protocol(reason) => {
                write!(f, "the other player's program broke the protocol: {reason}")
            }
            Failure::NoDirectPath => f.write_str(
                "no direct UDP path to this player (NATs or a firewall); trying WebRTC (ICE) instead",
            ),
            Failure::NoTransport => f.write_str(
                "nothing this browser can open reaches the host (no WebRTC here, and the host serves no WebSocket)",
            ),
        }
    }
}

impl Serialize for Failure {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut failure = s.serialize_struct("Failure", 2)?;
        failure.serialize_field("code", self.code())?;
        failure.serialize_field("message", &self.to_string())?;
        failure.end()
    }
}

/// What a broadcast did, peer by peer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Broadcast {
    /// The peers it was queued for (on a reliable channel: kept for, whatever their link).
    pub sent: usize,
    /// The peers that refused it, each with why (a full queue: [`SendError::Full`]); every
    /// other peer got it. Empty (and not allocated) when everyone took it.
    pub refused: Vec<(PeerId, SendError)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_says_the_attempt_timeout_it_waited_in_whole_units() {
        let said = |after| Failure::Timeout(after).to_string();
        assert!(said(Duration::from_secs(20)).starts_with("could not connect within 20 s; "));
        assert!(
            said(Duration::from_millis(2500)).starts_with("could not connect within 2500 ms; ")
        );
        assert!(said(Duration::from_secs(5)).contains("TURN server"));
        assert_eq!(Failure::Timeout(Duration::from_secs(5)).code(), "timeout");
    }
}
