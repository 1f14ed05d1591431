//! A member's configuration: who and where it is, and every knob with its documented default;
//! also the core configuration its links run, derived from the application it plays.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ackwire_core::ConnectionConfig;

#[cfg(doc)] // named in the docs alone
use super::{Event, SendError};
use crate::backoff::Backoff;
use crate::emulation::Emulation;
use crate::keys::UdpKeys;
use crate::signalling::{AppInfo, ChannelKind, InvalidApp, PeerKind, Role, WebTransportInfo};

/// How a member behaves; every field has a documented default except who and where it is.
#[derive(Debug, Clone)]
pub struct MemberConfig {
    /// Room name.
    pub room: String,
    /// The application this member plays: its id, version and channel layout. Every member
    /// of a room plays the same one (the server refuses others).
    pub app: AppInfo,
    /// Browser or native.
    pub kind: PeerKind,
    /// Natives: where other natives reach our UDP socket. `None` for browsers.
    pub udp_addr: Option<SocketAddr>,
    /// What this member is in its room: a mesh [`Role::Peer`] (the default: it links to
    /// every other member), or in a host room the [`Role::Host`] (it links to every client)
    /// or a [`Role::Client`] (it links to the host alone). The room's first member fixes
    /// the room's topology; a member of the other topology is refused.
    pub role: Role,
    /// This program instance: random, 1–64 of `A-Z a-z 0-9 - _` (see the `member` docs).
    pub instance: String,
    /// The join ticket the game's backend minted for this member (`ackwire_signalling::ticket`),
    /// for a server that requires one: every fresh join carries it (in the socket's URL, or in
    /// the `join` frame after a refused resume); a resume does not. `None`: open rooms.
    pub ticket: Option<String>,
    /// A client of a host room: the identity its host must have (the host's join ticket's,
    /// which the server gives its members), for a game whose backend told the client who
    /// hosts. `None` (the default): the first host with an identity this member meets is
    /// pinned for the member's life. Either way, a host of another identity (or of none, once
    /// one is pinned) gets no link, and [`Event::HostRefused`] says why.
    ///
    /// [`Event::HostRefused`]: super::Event::HostRefused
    pub host_identity: Option<String>,
    /// 32 random bytes keying the cookies of the links we accept.
    pub secret: [u8; 32],
    /// Random seed for backoff jitter and the links' delivery lives.
    pub seed: u64,
    /// Link emulation for every link, both directions (`None`: real links).
    pub emulation: Option<Emulation>,
    /// The core connection of every link: rates, timeouts, datagram size. Its `channels` and
    /// `protocol_id` are the member's: the application's channels plus the member's own, and
    /// an id derived from the application, so members of different applications never
    /// complete a handshake. Default: `ConnectionConfig::default()`.
    pub connection: ConnectionConfig,
    /// Retries of the signalling socket and of failed links. Default: 250 ms doubling to 2 s.
    pub backoff: Backoff,
    /// A link attempt that is not connected after this long is lost. Default: 20 s (longer
    /// than a browser's own ICE timeout, so ICE usually says why first).
    pub attempt_timeout: Duration,
    /// A direct UDP attempt between natives that is not connected after this long gives way
    /// to WebRTC (see `roles`). Default: 2 s (a handshake takes one round trip; its packets
    /// are resent every 250 ms).
    pub direct_timeout: Duration,
    /// A link whose peer is not in the room (after a server restart) is dropped after this
    /// long. Default: 20 s (the server's reconnect grace plus a reconnect or two).
    pub orphan_grace: Duration,
    /// Stats reports (for dashboards, and [`Event::Stats`]) come this often. Default: 1 s.
    pub stats_period: Duration,
    /// How often each synced link pings its peer's clock ([`crate::clock`]; a new link pings
    /// every 100 ms until synced). Default: 250 ms, four pings and pongs a second per link,
    /// 9 and 17 bytes each. Longer widens the reading's bound between pings by the drift it
    /// allows for (100 ppm until the rate is estimated, `ClockReading::drift_ppm`).
    pub clock_period: Duration,
    /// Bytes of reliable messages kept per peer until it confirms them (each message plus
    /// its index): beyond it a reliable send to that peer is refused with
    /// [`SendError::Full`] (one message always fits when none is kept). Default: 4 MiB.
    pub peer_budget: usize,
    /// Natives: the key pair that encrypts links to other natives (its public half goes in
    /// the join as `udp_key`). `None` (the default, and browsers'): plaintext UDP links,
    /// which encrypting natives refuse.
    pub udp_keys: Option<Arc<dyn UdpKeys>>,
    /// A host room's host: where it serves WebTransport (its driver's endpoint), published
    /// in its join so clients that can dial it do, before WebRTC. `None` (the default): its
    /// clients link over WebRTC (browsers) or UDP (natives).
    pub webtransport: Option<WebTransportInfo>,
    /// A client of a host room can dial WebTransport (a browser that has it): it links to a
    /// host that publishes a service that way first, and over WebRTC when the session fails
    /// within [`webtransport_timeout`](Self::webtransport_timeout). Default: `false`.
    pub dials_webtransport: bool,
    /// A WebTransport attempt not ready after this long gives way to WebRTC. Default: 3 s
    /// (a session is ready in two or three round trips; its handshake packets are resent
    /// after a second).
    pub webtransport_timeout: Duration,
    /// A client of a host room can dial a WebSocket (browsers): it links to a host whose
    /// service has one that way when nothing else reaches it (its WebRTC attempt failed, or
    /// it has no WebRTC). Default: `false`.
    pub dials_websocket: bool,
    /// The driver can open WebRTC peer connections. A browser without `RTCPeerConnection`
    /// (WebKitGTK) sets `false`: it links to a host over WebTransport or its WebSocket only,
    /// and a link with neither is lost at once ([`Failure::NoTransport`]). Default: `true`.
    ///
    /// [`Failure::NoTransport`]: super::Failure::NoTransport
    pub webrtc: bool,
    /// A client's WebRTC attempt to a host that serves a WebSocket gives way to the WebSocket
    /// when its data channel is not open after this long (the path to a host is short: an
    /// ICE-lite host answers the first checks). Default: 8 s.
    pub websocket_after: Duration,
}

impl MemberConfig {
    /// A configuration with the documented defaults.
    pub fn new(
        room: impl Into<String>,
        app: AppInfo,
        kind: PeerKind,
        instance: impl Into<String>,
    ) -> Self {
        MemberConfig {
            room: room.into(),
            app,
            kind,
            udp_addr: None,
            role: Role::Peer,
            instance: instance.into(),
            ticket: None,
            host_identity: None,
            secret: [0; 32],
            seed: 0,
            emulation: None,
            connection: ConnectionConfig::default(),
            backoff: Backoff::default(),
            attempt_timeout: Duration::from_secs(20),
            direct_timeout: Duration::from_secs(2),
            orphan_grace: Duration::from_secs(20),
            stats_period: Duration::from_secs(1),
            clock_period: crate::clock::SLOW_PING,
            peer_budget: crate::delivery::DEFAULT_PEER_BUDGET,
            udp_keys: None,
            webtransport: None,
            dials_webtransport: false,
            webtransport_timeout: Duration::from_secs(3),
            dials_websocket: false,
            webrtc: true,
            websocket_after: Duration::from_secs(8),
        }
    }

    /// The core configuration every link runs: the application's channels, then the
    /// member's control channel (reliable-ordered), and a protocol id of the application's.
    /// Refused when the application declares a channel kind the core does not run.
    pub fn link_config(&self) -> Result<ConnectionConfig, InvalidApp> {
        let mut channels = Vec::with_capacity(self.app.channels.len() + 1);
        for &kind in &self.app.channels {
            channels.push(core_kind(kind)?);
        }
        channels.push(ackwire_core::ChannelKind::ReliableOrdered);
        Ok(self
            .connection
            .clone()
            .with_channels(channels)
            .with_protocol_id(protocol_id(&self.app)))
    }
}

/// The core's channel kind for one a join declares: the same delivery, under the same name.
/// The schema names the kinds itself, so the signal server needs no core.
fn core_kind(kind: ChannelKind) -> Result<ackwire_core::ChannelKind, InvalidApp> {
    use ackwire_core::ChannelKind as Core;
    Ok(match kind {
        ChannelKind::Unreliable => Core::Unreliable,
        ChannelKind::UnreliableSequenced => Core::UnreliableSequenced,
        ChannelKind::ReliableOrdered => Core::ReliableOrdered,
        ChannelKind::ReliableUnordered => Core::ReliableUnordered,
        // A kind the schema learned before this member's core did.
        _ => return Err(InvalidApp::ChannelKind(kind.as_str().to_owned())),
    })
}

/// The core's protocol id for `app`: FNV-1a of its declaration, so a handshake between
/// members of different applications (or versions, or layouts) fails even without the server.
fn protocol_id(app: &AppInfo) -> u64 {
    let text = format!("ackwire-room/1 {app}");
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
