//! How a [`Room`](crate::Room) joins and behaves: [`RoomConfig`], with the options of the
//! target it runs on (`NativeOptions` natively, `BrowserOptions` and its `EarlySocket` in a
//! browser). The room and both drivers read it; it knows neither.

#[cfg(not(target_arch = "wasm32"))]
use std::net::{IpAddr, SocketAddr};
#[cfg(not(target_arch = "wasm32"))]
use std::path::PathBuf;
use std::time::Duration;

use ackwire_core::ConnectionConfig;
use ackwire_room::emulation::Emulation;
use ackwire_signalling::{AppInfo as App, Role};
#[cfg(target_arch = "wasm32")]
use js_sys::Reflect;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen::{JsCast, JsValue};
#[cfg(target_arch = "wasm32")]
use web_sys::WebSocket;

/// How a [`Room`](crate::Room) joins and behaves; [`RoomConfig::new`] gives the documented
/// defaults.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RoomConfig {
    /// What the game plays: id, version and channel layout. Required.
    pub app: App,
    /// The room's name when [`Room::join`](crate::Room::join) is given a server's URL rather
    /// than a room page's. Default: none.
    pub room: Option<String>,
    /// What this player is in the room: [`Role::Peer`] of a mesh (every player links to
    /// every other), or in a host room the [`Role::Host`] (an authoritative server every
    /// client links to) or a [`Role::Client`] (linked to the host alone). The room's first
    /// member fixes its topology; a join of the other is refused
    /// ([`ErrorCode::TopologyMismatch`](crate::ErrorCode::TopologyMismatch)), and so is a
    /// second host while the first is connected. Default: [`Role::Peer`].
    pub role: Role,
    /// The join ticket the game's backend minted for this player
    /// ([`ticket::mint`](ackwire_signalling::ticket::mint)), for a signal server that requires
    /// one (`--ticket-secret-file`): it names the room, the role, the player's identity, the
    /// application and an expiry. Every fresh join carries it; a refused one is
    /// [`Event::Refused`](crate::Event::Refused) with a `ticket_*` code, and the room stops.
    /// Default: none (open rooms).
    pub ticket: Option<String>,
    /// A client of a host room: the identity its host must have (the host's join ticket's),
    /// for a game whose backend told the client who hosts. Default: none: the first host with
    /// an identity is pinned for the room's life. A host of another identity gets no link;
    /// [`Event::HostRefused`](crate::Event::HostRefused) says why.
    pub host_identity: Option<String>,
    /// Every link through the core's link emulator, both directions (latency, jitter,
    /// loss): to try a game on a bad network. Default: none (real links).
    pub emulation: Option<Emulation>,
    /// The core connection of every link: rates, timeouts, the largest datagram. Its
    /// channels come from [`app`](Self::app). Default: `ConnectionConfig::default()`.
    pub connection: ConnectionConfig,
    /// How often [`Event::Stats`](crate::Event::Stats) comes (and dashboards get a report).
    /// Default: 1 s.
    pub stats_period: Duration,
    /// A link not connected after this long is lost and tried again. Default: 20 s.
    pub attempt_timeout: Duration,
    /// Bytes of reliable messages kept per peer until it confirms them: beyond, a reliable
    /// send to that peer is refused with [`SendError::Full`](crate::SendError::Full) (one
    /// message always fits when none is kept). Default: 4 MiB.
    pub peer_budget: usize,
    /// Native programs: sockets, addresses, TLS trust, encryption.
    #[cfg(not(target_arch = "wasm32"))]
    pub native: NativeOptions,
    /// Browsers: ICE policy.
    #[cfg(target_arch = "wasm32")]
    pub browser: BrowserOptions,
}

impl RoomConfig {
    /// A configuration for `app` with every default.
    pub fn new(app: App) -> RoomConfig {
        RoomConfig {
            app,
            room: None,
            role: Role::Peer,
            ticket: None,
            host_identity: None,
            emulation: None,
            connection: ConnectionConfig::default(),
            stats_period: Duration::from_secs(1),
            attempt_timeout: Duration::from_secs(20),
            peer_budget: ackwire_room::DEFAULT_PEER_BUDGET,
            #[cfg(not(target_arch = "wasm32"))]
            native: NativeOptions::default(),
            #[cfg(target_arch = "wasm32")]
            browser: BrowserOptions::default(),
        }
    }

    /// The same, joining room `name` (for a server's URL).
    pub fn with_room(mut self, name: impl Into<String>) -> RoomConfig {
        self.room = Some(name.into());
        self
    }

    /// The same, as `role` (a host room's host or client).
    pub fn with_role(mut self, role: Role) -> RoomConfig {
        self.role = role;
        self
    }

    /// The same, joining with `ticket` from the game's backend.
    pub fn with_ticket(mut self, ticket: impl Into<String>) -> RoomConfig {
        self.ticket = Some(ticket.into());
        self
    }

    /// The same, as a client that links only with a host of `identity`.
    pub fn with_host_identity(mut self, identity: impl Into<String>) -> RoomConfig {
        self.host_identity = Some(identity.into());
        self
    }

    /// The same, with every link emulated.
    pub fn with_emulation(mut self, emulation: Emulation) -> RoomConfig {
        self.emulation = Some(emulation);
        self
    }
}

/// Native sockets, addresses and trust; every field has a documented default.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NativeOptions {
    /// Local UDP address for links to other natives. Default `0.0.0.0:0`: every interface,
    /// a port chosen by the OS; `127.0.0.1:0` keeps the program on this machine.
    pub bind: SocketAddr,
    /// The UDP address other natives send to (behind a NAT with a forwarded port: the public
    /// one). Default: the bound address, or with a wildcard `bind` the address of the
    /// interface this machine reaches the signalling server through, with the bound port.
    pub advertise: Option<SocketAddr>,
    /// Local address WebRTC gathers ICE candidates on (port 0: any; a wildcard IP: every
    /// interface but loopback). Default: `bind`'s IP.
    pub ice_bind: Option<SocketAddr>,
    /// Public IP to put in WebRTC host candidates instead of the local one (1:1 NAT).
    /// Default: none.
    pub public_ip: Option<IpAddr>,
    /// PEM certificates a server's certificate must chain to: a private CA, or the server's
    /// own self-signed certificate. An `https://` signalling server's must chain to them
    /// instead of the public roots. As a host room's client that dials its host as a browser
    /// does (`dial_websocket`, `dial_webtransport`), a host with a [`certificate`] of its own
    /// (a `wss://` WebSocket, a WebTransport service without hashes) must chain to them or to
    /// the public roots: a client that trusts a private signalling server still reaches a
    /// host with a public certificate. An `http://` room takes it from a host room's client
    /// alone (nobody else checks anything with it there). Default: none (the public web PKI,
    /// as a browser).
    ///
    /// [`certificate`]: NativeOptions::certificate
    pub tls_ca: Option<PathBuf>,
    /// Encrypt links to other natives (a Noise key exchange, then AES-256-GCM; browsers'
    /// links ride DTLS either way). Default `true`; `false` only to read packet captures:
    /// natives that encrypt reach this one through WebRTC instead.
    pub encrypt: bool,
    /// As a room's host ([`Role::Host`]), answer every client's WebRTC with an ICE-lite agent
    /// (str0m) on one UDP socket per address offered, shared by all clients: about 62 KiB a
    /// client against 476 KiB and a socket each on the `webrtc` crate (`docs/host-stack.md`).
    /// The addresses: `public_ip` (one socket at `ice_bind`), else `ice_bind`'s IP, else each
    /// interface's. It gathers nothing and uses no TURN, so clients must be able to reach one
    /// of them (a public or LAN host). Default `true`; `false` for a host behind a NAT: each
    /// client's link then goes as a peer's does (STUN, TURN). Ignored unless the role is
    /// `Host`.
    pub host_ice_lite: bool,
    /// As a room's host with `host_ice_lite`, also serve WebTransport: browsers that have it
    /// link over WebTransport datagrams (HTTP/3 over QUIC, every client on one UDP socket)
    /// before WebRTC. The host makes a self-signed certificate (ECDSA P-256, 14 days) and
    /// publishes `https://<ip>:<port>/ackwire` and the certificate's SHA-256 in its join; the
    /// IP is `public_ip`, else `ice_bind`'s, else (a wildcard) the interface the signalling
    /// server is reached through. A host with a [`certificate`](Self::certificate) of its own
    /// presents that instead and publishes `https://<name>:<port>/ackwire` with no hash
    /// (browsers check it against their roots). Default `true`; `false`: browsers link over WebRTC alone
    /// (and no WebSocket is served: its URL is published with this service, `websocket`).
    /// Ignored unless the role is `Host` and `host_ice_lite` is on.
    pub webtransport: bool,
    /// The UDP port of the host's WebTransport (on `ice_bind`'s IP), when it serves it
    /// (`webtransport`). Default 0: any free port (it is published, so clients need not know
    /// it); a fixed one for a firewall's rule.
    pub webtransport_port: u16,
    /// How often the host's WebTransport makes a new certificate (browsers accept a pinned one
    /// for 14 days at most), when it serves it (`webtransport`). Nobody is dropped: the host
    /// publishes the next certificate's hash beside the current one (its clients hear it as
    /// `peer_updated`), presents it to new sessions an overlap later (half the period, at
    /// most a day), then publishes it alone; open sessions keep theirs (docs/signalling.md,
    /// "Rotating the certificate"). A host with a [`certificate`](Self::certificate) of its
    /// own makes none: it reads its files again this often instead (a renewed certificate is
    /// presented from then on, to both services). Default 7 days; more than zero and at most
    /// 12 days (else
    /// [`JoinError::WebTransportRotation`](crate::JoinError::WebTransportRotation)).
    pub webtransport_rotation: std::time::Duration,
    /// As a host room's client, link to a host that serves WebTransport over a session to its
    /// service (as a browser does) instead of raw UDP or WebRTC; a session not ready within
    /// 3 s gives way to the ordinary path. For load generators and tests, which stand in for
    /// browsers: a native game has no reason to. Default `false`.
    pub dial_webtransport: bool,
    /// As a room's host that serves WebTransport (`webtransport`, on the same conditions),
    /// also serve a WebSocket: the last resort of clients that reach the host neither over
    /// WebTransport nor over WebRTC (a browser without WebRTC such as WebKitGTK, a network
    /// that blocks UDP). The core's packets ride it one per binary message, in order on one
    /// TCP stream (a lost segment holds back the ones behind it: a worse link than the
    /// others, but a link). The host publishes `ws://<ip>:<port>/ackwire` beside its
    /// WebTransport URL, with the same IP.
    ///
    /// A page served over `https://` may open only `wss://` (browsers block mixed content),
    /// and a WebSocket cannot pin a self-signed certificate by hash as WebTransport does: a
    /// host without a [`certificate`](Self::certificate) serves plain `ws://`, which reaches
    /// natives and pages served over `http://` only (a page served over `https://` falls
    /// back no further than WebRTC). A host with one serves TLS with it and publishes
    /// `wss://<name>:<port>/ackwire`, which every page reaches. Default `true`; `false`:
    /// clients link over WebTransport and WebRTC alone.
    pub websocket: bool,
    /// The TCP port of the host's WebSocket (on `ice_bind`'s IP), when it serves one
    /// (`websocket`). Default 0: any free port (it is published, so clients need not know
    /// it); a fixed one for a firewall's rule.
    pub websocket_port: u16,
    /// As a room's host that serves WebTransport (`webtransport`, on the same conditions),
    /// present this certificate, one browsers trust (Let's Encrypt's, say), instead of making
    /// self-signed ones: its WebTransport publishes `https://<name>:<port>/ackwire` with no
    /// hash, and its WebSocket serves TLS, `wss://<name>:<port>/ackwire`, which pages served
    /// over `https://` may open. The files are read again every `webtransport_rotation`, so a
    /// renewed certificate is presented without a restart (open connections keep theirs); a
    /// renewal that cannot be read keeps the current one (and logs a warning). Files that
    /// cannot be read at the join, or a name the certificate does not hold, fail
    /// [`Room::join`](crate::Room::join)
    /// ([`JoinError::Certificate`](crate::JoinError::Certificate),
    /// [`JoinError::CertificateName`](crate::JoinError::CertificateName)). Default: none
    /// (self-signed certificates, pinned by hash, and a plain `ws://` WebSocket).
    pub certificate: Option<HostCertificate>,
    /// As a host room's client, link to a host that serves a WebSocket over it, as a browser
    /// without WebRTC does: after WebTransport if `dial_webtransport` is on too, never over
    /// WebRTC, and again over it when the connection drops. A host that serves none is
    /// linked over raw UDP alone. For load generators and tests, which stand in for such
    /// browsers: a native game has no reason to. Default `false`.
    pub dial_websocket: bool,
    /// Bytes of messages (`Message`, `Undelivered`) waiting for the game to take them as
    /// events. Beyond it the room stops reading its sockets until the game catches up, so
    /// nothing more is acknowledged and reliable senders are held back (their sends say
    /// `Full`); an unreliable message that finds it full pushes out the oldest unreliable ones
    /// waiting (or is dropped itself), as the network could have, counted in
    /// [`Room::dropped_events`](crate::Room::dropped_events). A game that reads its events
    /// every frame never gets near it. Default: 16 MiB.
    pub event_budget: usize,
}

#[cfg(not(target_arch = "wasm32"))]
impl Default for NativeOptions {
    fn default() -> NativeOptions {
        NativeOptions {
            bind: SocketAddr::from(([0, 0, 0, 0], 0)),
            advertise: None,
            ice_bind: None,
            public_ip: None,
            tls_ca: None,
            encrypt: true,
            host_ice_lite: true,
            webtransport: true,
            webtransport_port: 0,
            webtransport_rotation: std::time::Duration::from_secs(7 * 24 * 3600),
            dial_webtransport: false,
            websocket: true,
            websocket_port: 0,
            dial_websocket: false,
            certificate: None,
            event_budget: 16 << 20,
        }
    }
}

/// A certificate of a host's own, which browsers trust
/// ([`NativeOptions::certificate`]): PEM files as a certificate authority's client (certbot,
/// say) writes them, and the name clients dial.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostCertificate {
    /// PEM certificates (`BEGIN CERTIFICATE` blocks): the host's first, then the
    /// intermediates a client needs to reach a root it trusts (certbot's `fullchain.pem`).
    pub chain: PathBuf,
    /// The PEM private key of the first certificate in `chain` (PKCS#8, RSA or EC: certbot's
    /// `privkey.pem`).
    pub key: PathBuf,
    /// The DNS name clients dial (the host's published URLs name it, not an IP): one of the
    /// certificate's names (its subject alternative names), and one that resolves to the
    /// address clients reach the host at. An IP address works too, with a certificate that
    /// names it.
    pub name: String,
}

#[cfg(not(target_arch = "wasm32"))]
impl HostCertificate {
    /// The certificate chain in `chain`, its key in `key`, for clients that dial `name`.
    pub fn new(
        chain: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
        name: impl Into<String>,
    ) -> HostCertificate {
        HostCertificate {
            chain: chain.into(),
            key: key.into(),
            name: name.into(),
        }
    }
}

/// Browser options; every field has a documented default.
#[cfg(target_arch = "wasm32")]
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BrowserOptions {
    /// ICE uses TURN relays only, so peers never learn this player's address; with no TURN
    /// server there is no path at all. Default `false`.
    pub relay_only: bool,
    /// A signalling socket the page opened with this room's join before the wasm finished
    /// loading, adopted instead of opening one, so the join does not wait for the download.
    /// Default: none.
    pub early_socket: Option<EarlySocket>,
    /// A client of a host room dials its host over WebTransport when the host serves it and
    /// the browser has it (`globalThis.WebTransport`), before WebRTC; `false`: never over it.
    /// Default `true`.
    pub webtransport: bool,
    /// Open WebRTC peer connections (when the browser has `RTCPeerConnection`). `false`: a host
    /// room's client links to its host over WebTransport or the host's WebSocket alone, as a
    /// browser without WebRTC does (a page made to play over the WebSocket); a peer or host
    /// cannot link without WebRTC, so its join fails
    /// ([`JoinError::Browser`](crate::JoinError::Browser)). Default `true`.
    pub webrtc: bool,
    /// A client of a host room links to its host over the host's WebSocket (if it serves one)
    /// when nothing else reaches it: no WebRTC here, or a WebRTC attempt that never opened
    /// (UDP blocked). `false`: never over a WebSocket. Default `true`.
    pub websocket: bool,
}

#[cfg(target_arch = "wasm32")]
impl Default for BrowserOptions {
    fn default() -> BrowserOptions {
        BrowserOptions {
            relay_only: false,
            early_socket: None,
            webtransport: true,
            webrtc: true,
            websocket: true,
        }
    }
}

/// A signalling socket a page opened early, with the join in its URL (what the JS API's
/// `join()` does before it awaits the wasm).
///
/// The holder is a plain JS object the page keeps filling until the driver takes the socket
/// over: `{ ws, instance, messages, opened, certificate?, claim?, release? }`, where `ws` is
/// the `WebSocket`, `instance` the program instance its join declared (the member joins as
/// it), `messages` the text frames received so far, `opened` whether it opened,
/// `certificate` an `RTCCertificate` the page made meanwhile (ECDSA P-256), for every link's
/// peer connection, and `claim(peer)` / `release()` the peer connections the page started by
/// the member's roles meanwhile (`earlyLinks` in `web/ackwire.js`): `claim` hands the one to
/// a peer over (`{ pc, channel, settled, error, described, received }`), `release` closes
/// those no link claimed.
/// The driver adopts the socket only if its URL carries exactly the join the member makes
/// (same server, room, instance, application); otherwise it closes it and joins on a socket of
/// its own.
#[cfg(target_arch = "wasm32")]
#[derive(Debug, Clone)]
pub struct EarlySocket {
    holder: JsValue,
}

#[cfg(target_arch = "wasm32")]
impl EarlySocket {
    /// The page's holder object (see the type's docs).
    pub fn new(holder: JsValue) -> EarlySocket {
        EarlySocket { holder }
    }

    /// The holder itself.
    pub(crate) fn holder(&self) -> &JsValue {
        &self.holder
    }

    /// The socket and the instance it joined as, if the holder has both.
    pub(crate) fn parts(&self) -> Option<(WebSocket, String)> {
        let ws = Reflect::get(&self.holder, &"ws".into())
            .ok()?
            .dyn_into::<WebSocket>()
            .ok()?;
        let instance = Reflect::get(&self.holder, &"instance".into())
            .ok()?
            .as_string()?;
        Some((ws, instance))
    }
}
