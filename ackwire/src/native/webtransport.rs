//! A host's WebTransport: browsers that have it link to a host room's host over WebTransport
//! datagrams (HTTP/3 over QUIC), every session on one UDP socket, next to the host's ICE-lite
//! WebRTC ([`lite`](super::lite)).
//!
//! A browser reaches a host with a self-signed certificate without a certificate authority
//! when it is given the certificate's SHA-256 (`serverCertificateHashes`): the host makes an
//! ECDSA P-256 certificate valid for 14 days (browsers refuse longer ones) and publishes its
//! URL and hash in its join ([`WtPlan::info`]). A session opens in one or two round trips
//! fewer than a WebRTC connection (no ICE, no DTLS over SCTP), and a host pays about what
//! str0m costs it per client (the issue-46 spike: ~85 KiB and 14 % of a core at 256 sessions).
//!
//! The member matches a session to its link by the link's token, which the client sends in
//! the session's path (`/ackwire?token=…`) and over signalling
//! ([`Command::AcceptWebTransport`](ackwire_room::member::Command::AcceptWebTransport)), by the
//! rules both of a host's services keep ([`tokens`](super::tokens)): either may come first, a
//! session whose token is not named within the hold is refused, and a token is taken once. A
//! session with no token is refused at once.
//!
//! Browsers refuse a pinned certificate valid for more than 14 days, so a host that runs
//! longer rotates it ([`Rotation`], every 7 days by default:
//! [`NativeOptions::webtransport_rotation`](crate::NativeOptions::webtransport_rotation)) and publishes each step
//! through the member (`Member::update_webtransport`, which its clients hear as
//! `peer_updated`): at each rotation it makes the next certificate and publishes both hashes
//! (`[current, next]`); an overlap later (half the period, at most [`MAX_OVERLAP`]) the
//! endpoint presents the next one to new sessions (quinn's `Endpoint::set_server_config`, which leaves
//! open sessions alone) and it publishes `[next]`. A client dials with the list it heard last,
//! which holds the presented certificate at every step, so nobody is dropped. The steps run on
//! the room task's clock ([`WtHost::poll_timeout`], [`WtHost::handle_timeout`]).
//!
//! A host with a certificate browsers trust
//! ([`NativeOptions::certificate`](crate::NativeOptions::certificate),
//! [`certificate`](super::certificate)) makes none: it presents its own, publishes
//! `https://<name>:<port>/ackwire` with no hash (browsers then check the certificate against
//! their roots), and at each rotation period reads its files again (a renewed certificate
//! reaches new sessions through the TLS configuration's resolver, with no reload; nothing
//! published changes).
//!
//! The endpoint is sans-IO and polled in the room's task ([`h3`](super::h3): quinn-proto and
//! wtransport's HTTP/3 frames), as the host's WebRTC is: the socket readable, a connection's
//! timer or a hold's end is a report ([`WtHost::next`]), handled there ([`WtHost::handle`]),
//! and sending is a call that puts the packet on the socket ([`WtHost::send`]). The member is
//! only ever touched from the room's task, and every decision (which session is whose, when
//! one is refused) is made there. wtransport itself makes the QUIC configuration (TLS with
//! its certificate, the transport's settings) and dials for a native client
//! ([`wt_client`](super::wt_client)).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use ackwire_room::member::{Route, TransportEvent, TransportId};
use ackwire_signalling::webtransport::{CertHash, WebTransportInfo, session_token};
use tokio::sync::mpsc;
use wtransport::config::QuicTransportConfig;
use wtransport::tls::self_signed::time;
use wtransport::{Identity, ServerConfig};
use wtransport_proto::ids::StatusCode;

use super::certificate::{HostTls, Service};
use super::h3::{H3Endpoint, H3Event, SessionKey};
use super::sessions::{SessionEvent, Sessions};
use super::tokens::{Arrival, Expiry, Tokens};

/// The path of the published URL (a session's own path adds `?token=…`).
const PATH: &str = "/ackwire";

/// The socket's receive buffer: every client's packets queue in this one socket (at 256
/// sessions the default 208 KiB overflowed in the spike, losing handshakes and datagrams).
const RECEIVE_BUFFER: usize = 4 << 20;

/// QUIC's first packets: Chromium's own size. With quinn's default 1,200 a datagram carries
/// only ~1,162 bytes until path MTU discovery grows it, less than a core packet on a
/// WebTransport link ([`WEBTRANSPORT_DATAGRAM`](ackwire_room::member::WEBTRANSPORT_DATAGRAM),
/// 1,184 bytes).
const INITIAL_MTU: u16 = 1250;

/// A quiet session sends a QUIC ping this often, so neither side's idle timeout (nor a NAT's
/// mapping) ends it while the core's link is alive.
const KEEP_ALIVE: Duration = Duration::from_secs(3);

/// QUIC's idle timeout: longer than the core's (10 s by default), so a link's loss is the
/// core's decision, and the session goes after it.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The certificate's validity: the longest browsers accept for a pinned hash (14 days), from
/// an hour back (clocks differ).
const VALIDITY: time::Duration = time::Duration::days(14);
const BACKDATE: time::Duration = time::Duration::hours(1);

/// The longest rotation period: a certificate is presented from an overlap after it was made
/// until an overlap after the next is made (period + overlap, at most 13 days), inside its
/// 14 days from an hour back, with 23 hours to spare.
pub(crate) const MAX_ROTATION: Duration = Duration::from_secs(12 * 24 * 3600);

/// The longest overlap between publishing the next certificate and presenting it: long enough
/// for every client to hear of it (they hear at once while their signalling is up; one whose
/// signalling is down hears with its resume).
pub(crate) const MAX_OVERLAP: Duration = Duration::from_secs(24 * 3600);

/// A rotation step whose certificate could not be made is tried again this much later.
const RETRY: Duration = Duration::from_secs(60);

/// Why the host's WebTransport endpoint could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum WtError {
    /// The socket could not be made or bound.
    #[error("cannot bind the host's WebTransport socket at {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Bound to a wildcard address, and no route gives the address clients reach.
    #[error("no address to publish for the host's WebTransport: {0}")]
    Address(std::io::Error),
    /// The certificate could not be made (or the host's own used).
    #[error("no certificate for the host's WebTransport: {0}")]
    Certificate(String),
    /// The QUIC endpoint could not start on the socket.
    #[error("the host's WebTransport endpoint: {0}")]
    Endpoint(std::io::Error),
}

/// The IP clients reach the host's WebTransport at: the 1:1 NAT's `public_ip`, else the bound
/// IP, else (a wildcard) the interface `route` finds (the way to the signalling server).
pub(crate) fn reach_ip(
    bind: IpAddr,
    public_ip: Option<IpAddr>,
    route: impl FnOnce() -> std::io::Result<IpAddr>,
) -> std::io::Result<IpAddr> {
    match public_ip {
        Some(ip) => Ok(ip),
        None if !bind.is_unspecified() => Ok(bind),
        None => route(),
    }
}

/// `ip` as a URL's host: an IPv6 address in brackets.
pub(crate) fn url_host(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// The host's WebTransport before the runtime runs it: the bound socket, the certificate and
/// what the host publishes. Made before the member (which publishes [`Self::info`] in its
/// join); [`WtHost::start`] runs it.
pub(crate) struct WtPlan {
    socket: std::net::UdpSocket,
    tls: Tls,
    /// The host of the published URL: the IP clients reach the host at, or its own
    /// certificate's name.
    host: String,
    info: WebTransportInfo,
}

/// Which certificate the host presents.
enum Tls {
    /// One it made, pinned by its hash, replaced every rotation ([`Rotation`]).
    SelfSigned {
        identity: Identity,
        /// The certificate's names, for the next ones.
        names: Vec<String>,
    },
    /// Its own ([`NativeOptions::certificate`](crate::NativeOptions::certificate)), which
    /// browsers check against their roots, read again every rotation period.
    Own(HostTls),
}

impl std::fmt::Debug for WtPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WtPlan")
            .field("socket", &self.socket)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl WtPlan {
    /// Binds the UDP socket at `bind` (port 0: any) and makes the certificate, for clients
    /// that reach the host at [`reach_ip`]`(bind's IP, public_ip, route)`; or, with `own`, a
    /// certificate of the host's own, for clients that dial its name.
    pub(crate) fn bind(
        bind: SocketAddr,
        public_ip: Option<IpAddr>,
        route: impl FnOnce() -> std::io::Result<IpAddr>,
        own: Option<HostTls>,
    ) -> Result<WtPlan, WtError> {
        use socket2::{Domain, Protocol, Socket, Type};
        let failed = |source| WtError::Bind { addr: bind, source };
        let socket = Socket::new(Domain::for_address(bind), Type::DGRAM, Some(Protocol::UDP))
            .map_err(failed)?;
        // Best effort: the OS caps it (Linux: net.core.rmem_max).
        if let Err(e) = socket.set_recv_buffer_size(RECEIVE_BUFFER) {
            tracing::debug!(error = %e, "host WebTransport socket: SO_RCVBUF not raised");
        }
        socket.set_nonblocking(true).map_err(failed)?;
        socket.bind(&bind.into()).map_err(failed)?;
        let socket: std::net::UdpSocket = socket.into();
        let port = socket.local_addr().map_err(failed)?.port();
        // A certificate browsers trust is checked against the name they dial: no hash.
        let (tls, host, cert_hashes) = match own {
            Some(own) => {
                let host = own.url_host();
                (Tls::Own(own), host, Vec::new())
            }
            None => {
                let ip = reach_ip(bind.ip(), public_ip, route).map_err(WtError::Address)?;
                let names = vec![ip.to_string(), "localhost".to_owned()];
                let (identity, hash) = certificate(&names)?;
                (
                    Tls::SelfSigned { identity, names },
                    url_host(ip),
                    vec![hash],
                )
            }
        };
        let info = WebTransportInfo {
            url: format!("https://{host}:{port}{PATH}"),
            cert_hashes,
            websocket: None,
        };
        Ok(WtPlan {
            socket,
            tls,
            host,
            info,
        })
    }

    /// What the host publishes: its URL (no query) and its certificate's hash (and its
    /// WebSocket's URL, once [`Self::serve_websocket`] gives it).
    pub(crate) fn info(&self) -> &WebTransportInfo {
        &self.info
    }

    /// The host of the published URL (the WebSocket's is the same): the IP clients reach the
    /// host at, or its own certificate's name.
    pub(crate) fn host(&self) -> &str {
        &self.host
    }

    /// Publishes the host's WebSocket (`ws://…` or `wss://…`,
    /// [`WsPlan`](super::websocket::WsPlan)) beside the service, in every step of the
    /// certificate's rotation too.
    pub(crate) fn serve_websocket(&mut self, url: String) {
        self.info.websocket = Some(url);
    }
}

/// A self-signed certificate for `names`, valid 14 days from an hour ago, and its hash.
fn certificate(names: &[String]) -> Result<(Identity, CertHash), WtError> {
    let not_before = time::OffsetDateTime::now_utc() - BACKDATE;
    let identity = Identity::self_signed_builder()
        .subject_alt_names(names.iter().cloned())
        .not_before(not_before)
        .offset_from_not_before(VALIDITY)
        .build()
        .map_err(|e| WtError::Certificate(e.to_string()))?;
    let hash = identity
        .certificate_chain()
        .as_slice()
        .first()
        .map(|cert| CertHash(*cert.hash().as_ref()))
        .ok_or_else(|| WtError::Certificate("no certificate in the chain".into()))?;
    Ok((identity, hash))
}

/// QUIC's settings for the host's sessions (the same at every certificate), and a dialing
/// native client's ([`wt_client`](super::wt_client)).
pub(crate) fn transport_config() -> Result<QuicTransportConfig, WtError> {
    let mut transport = QuicTransportConfig::default();
    transport
        .initial_mtu(INITIAL_MTU)
        .keep_alive_interval(Some(KEEP_ALIVE))
        .max_idle_timeout(Some(
            IDLE_TIMEOUT
                .try_into()
                .map_err(|e| WtError::Endpoint(std::io::Error::other(e)))?,
        ));
    Ok(transport)
}

/// Where the certificate rotation is, on the room task's clock.
struct Rotation {
    period: Duration,
    overlap: Duration,
    /// When the next step is due.
    at: Duration,
    /// The certificate presented to new sessions.
    current: CertHash,
    /// The next certificate, published beside the current one until the switch.
    next: Option<(Identity, CertHash)>,
    /// The certificates' names.
    names: Vec<String>,
}

impl Rotation {
    /// Every `period` from `now`.
    fn new(period: Duration, now: Duration, current: CertHash, names: Vec<String>) -> Rotation {
        Rotation {
            period,
            overlap: (period / 2).min(MAX_OVERLAP),
            at: now + period,
            current,
            next: None,
            names,
        }
    }
}

/// What the host does every rotation period, on the room task's clock.
enum Schedule {
    /// Its self-signed certificates: the next one made and published, then presented.
    Rotation(Rotation),
    /// Its own certificate's files read again ([`HostTls::renew`]): a renewed certificate
    /// is presented from then on (by its WebSocket too), and nothing published changes.
    Renewal {
        period: Duration,
        /// When the next reading is due.
        at: Duration,
        tls: HostTls,
    },
}

/// What the room's task hands back to [`WtHost::handle`].
pub(crate) struct Report(Happened);

impl std::fmt::Debug for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Report")
    }
}

enum Happened {
    /// The socket has datagrams to read.
    Readable,
    /// A connection's timer is due.
    Timer,
    /// What the endpoint made of them.
    H3(H3Event),
    /// A held session's hold is over.
    Expired(Expiry),
    /// An event the host itself has for the member.
    Tell {
        transport: TransportId,
        event: TransportEvent,
    },
}

/// Where a transport's session is, once one showed its token.
enum State {
    /// Accepted: datagrams flow.
    Open(SessionKey),
    /// Failed or closed (told); the member closes the transport.
    Ended,
}

/// The host's WebTransport endpoint: sessions in, matched to the member's transports by
/// token; their events and datagrams out through [`Self::next`] and [`Self::handle`].
pub(crate) struct WtHost {
    local: SocketAddr,
    info: WebTransportInfo,
    h3: H3Endpoint,
    schedule: Option<Schedule>,
    tokens: Tokens<State, SessionKey>,
    /// Whose each open session is.
    taken: HashMap<SessionKey, TransportId>,
    reports: mpsc::UnboundedSender<Report>,
    reports_rx: mpsc::UnboundedReceiver<Report>,
    /// Datagrams a session would not send (too large, closed).
    send_failures: u64,
}

impl std::fmt::Debug for WtHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WtHost")
            .field("local", &self.local)
            .field("url", &self.info.url)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl WtHost {
    /// Starts the endpoint on the plan's socket (inside a tokio runtime, whose reactor the
    /// socket joins). A session whose token the member has not named is held for `hold`
    /// ([`HOLD`](super::tokens::HOLD) in a room). With `rotation`, every that long from
    /// `now` (the room task's clock; see [`Self::handle_timeout`]) a new self-signed
    /// certificate, or the host's own read again.
    pub(crate) fn start(
        plan: WtPlan,
        hold: Duration,
        rotation: Option<Duration>,
        now: Duration,
    ) -> Result<WtHost, WtError> {
        let period = rotation.filter(|p| !p.is_zero());
        // wtransport's builder makes quinn's configuration (TLS with ALPN h3, the
        // transport's settings); the endpoint runs it sans-IO. Its socket is not bound.
        let builder = ServerConfig::builder().with_bind_default(0);
        let (config, schedule) = match plan.tls {
            Tls::SelfSigned { identity, names } => {
                let schedule =
                    period
                        .zip(plan.info.cert_hashes.first())
                        .map(|(period, &current)| {
                            Schedule::Rotation(Rotation::new(period, now, current, names))
                        });
                let config = builder
                    .with_custom_transport(identity, transport_config()?)
                    .build();
                (config, schedule)
            }
            Tls::Own(tls) => {
                let config = tls
                    .server_config(Service::WebTransport)
                    .map_err(|e| WtError::Certificate(e.to_string()))?;
                let config = builder
                    .with_custom_tls_and_transport(config, transport_config()?)
                    .build();
                let schedule = period.map(|period| Schedule::Renewal {
                    period,
                    at: now + period,
                    tls,
                });
                (config, schedule)
            }
        };
        let h3 = H3Endpoint::new(plan.socket, config.quic_config().clone())
            .map_err(WtError::Endpoint)?;
        let local = h3.local_addr().map_err(WtError::Endpoint)?;
        let (reports, reports_rx) = mpsc::unbounded_channel();
        Ok(WtHost {
            local,
            h3,
            schedule,
            info: plan.info,
            tokens: Tokens::new(hold),
            taken: HashMap::new(),
            reports,
            reports_rx,
            send_failures: 0,
        })
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// What the host publishes.
    pub(crate) fn info(&self) -> &WebTransportInfo {
        &self.info
    }

    /// When the certificate rotation's next step (or the renewal) is due, on the room task's
    /// clock.
    pub(crate) fn poll_timeout(&self) -> Option<Duration> {
        self.schedule.as_ref().map(|s| match s {
            Schedule::Rotation(r) => r.at,
            Schedule::Renewal { at, .. } => *at,
        })
    }

    /// The rotation's step due at `now`, if one is: the service the host publishes from now
    /// on (`Member::update_webtransport`). At a rotation, the next certificate is made and
    /// both hashes published (`[current, next]`); an overlap later new sessions get the next
    /// one (open ones keep theirs) and it alone is published. A host with its own
    /// certificate reads its files again instead, and publishes nothing new.
    pub(crate) fn handle_timeout(&mut self, now: Duration) -> Option<WebTransportInfo> {
        let r = match self.schedule.as_mut()? {
            Schedule::Rotation(r) if r.at <= now => r,
            Schedule::Renewal { period, at, tls } if *at <= now => {
                *at = now + *period;
                match tls.renew() {
                    Ok(true) => {
                        tracing::info!(
                            name = tls.name(),
                            "host certificate renewed: new connections get the new one"
                        );
                    }
                    Ok(false) => tracing::debug!(name = tls.name(), "host certificate unchanged"),
                    Err(e) => {
                        tracing::warn!(error = %e, "host certificate not renewed: the current one stays");
                    }
                }
                return None;
            }
            _ => return None,
        };
        match r.next.take() {
            None => match certificate(&r.names) {
                Ok((identity, hash)) => {
                    r.next = Some((identity, hash));
                    r.at = now + r.overlap;
                    self.info.cert_hashes = vec![r.current, hash];
                }
                Err(e) => {
                    tracing::warn!(error = %e, "host WebTransport: no next certificate; trying again in a minute");
                    r.at = now + RETRY;
                    return None;
                }
            },
            Some((identity, hash)) => {
                let transport = match transport_config() {
                    Ok(transport) => transport,
                    Err(e) => {
                        tracing::warn!(error = %e, "host WebTransport: certificate not switched; trying again in a minute");
                        r.next = Some((identity, hash));
                        r.at = now + RETRY;
                        return None;
                    }
                };
                // Its socket is not bound: only its QUIC configuration is used.
                let config = ServerConfig::builder()
                    .with_bind_default(0)
                    .with_custom_transport(identity, transport)
                    .build();
                self.h3.set_server_config(config.quic_config().clone());
                r.current = hash;
                r.at = now + r.period.saturating_sub(r.overlap);
                self.info.cert_hashes = vec![hash];
            }
        }
        tracing::info!(cert_hashes = ?self.info.cert_hashes, "host WebTransport: certificate rotation");
        Some(self.info.clone())
    }

    /// The member's [`Command::AcceptWebTransport`]: the session that shows `token` is
    /// `transport`, now if it came already, else when it comes.
    ///
    /// [`Command::AcceptWebTransport`]: ackwire_room::member::Command::AcceptWebTransport
    pub(crate) fn accept(&mut self, transport: TransportId, token: String) {
        let (h3, taken, reports) = (&mut self.h3, &mut self.taken, &self.reports);
        let named = self.tokens.name(transport, token, |session| {
            take(h3, taken, reports, transport, session)
        });
        if !named {
            let why = "not a WebTransport token, or one already taken";
            self.tell(transport, TransportEvent::Failed(why.into()));
        }
    }

    /// A session showed `token`: taken, held or refused ([`Tokens::arrived`]).
    fn arrived(&mut self, token: String, session: SessionKey) {
        let (h3, taken, reports) = (&mut self.h3, &mut self.taken, &self.reports);
        match self.tokens.arrived(token, session, |transport, session| {
            take(h3, taken, reports, transport, session)
        }) {
            Arrival::Taken => {}
            Arrival::Held(expiry) => {
                let reports = self.reports.clone();
                tokio::spawn(async move {
                    let _ = reports.send(Report(Happened::Expired(expiry.due().await)));
                });
            }
            Arrival::Refused(session, why) => refuse(&mut self.h3, session, why),
        }
    }

    /// Tells the member `event` about `transport` at the room task's next turn.
    fn tell(&self, transport: TransportId, event: TransportEvent) {
        let _ = self
            .reports
            .send(Report(Happened::Tell { transport, event }));
    }

    /// What the endpoint has for the member: a session asked for, a datagram, a session
    /// closed.
    fn on_h3(&mut self, event: H3Event) -> Option<(TransportId, SessionEvent)> {
        match event {
            H3Event::Request {
                session,
                path,
                from,
            } => {
                match session_token(&path).map(str::to_owned) {
                    Some(token) => self.arrived(token, session),
                    None => {
                        tracing::debug!(%from, "WebTransport session refused: no token in its path");
                        self.h3
                            .respond(session, StatusCode::NOT_FOUND, Instant::now());
                    }
                }
                None
            }
            H3Event::Datagram { session, payload } => self
                .taken
                .get(&session)
                .map(|&transport| (transport, SessionEvent::Datagram(payload))),
            H3Event::Closed { session, reason } => {
                let transport = self.taken.remove(&session)?;
                let state = self.tokens.session_mut(transport)?;
                tracing::debug!(?transport, %reason, "WebTransport session closed");
                *state = State::Ended;
                Some((
                    transport,
                    SessionEvent::Transport(TransportEvent::ChannelClosed),
                ))
            }
        }
    }
}

impl Sessions for WtHost {
    type Report = Report;

    fn route(transport: TransportId) -> Route {
        Route::WebTransport(transport)
    }

    /// Datagrams the sessions would not send, and UDP datagrams the socket would not take.
    fn send_failures(&self) -> u64 {
        self.send_failures + self.h3.unsent()
    }

    /// Whether `transport` is one of this endpoint's.
    fn has(&self, transport: TransportId) -> bool {
        self.tokens.has(transport)
    }

    /// The member's `CloseTransport`: the session closes (or is refused if it comes), and
    /// its token is forgotten.
    fn close(&mut self, transport: TransportId) {
        if let Some(State::Open(session)) = self.tokens.close(transport) {
            self.taken.remove(&session);
            self.h3.close(session, Instant::now());
        }
    }

    /// Sends `datagram` on `transport`'s session, if it is open; one it would not send (too
    /// large for the path, the session gone) is dropped and counted, as one lost on the way
    /// would be.
    fn send(&mut self, transport: TransportId, datagram: &[u8]) {
        if let Some(&State::Open(session)) = self.tokens.session(transport)
            && let Err(e) = self.h3.send_datagram(session, datagram, Instant::now())
        {
            self.send_failures += 1;
            tracing::debug!(?transport, len = datagram.len(), error = %e, "WebTransport datagram not sent");
        }
    }

    /// The socket readable, a timer due, or a report (cancel-safe).
    async fn next(&mut self) -> Report {
        if let Some(event) = self.h3.poll_event() {
            return Report(Happened::H3(event));
        }
        let timeout = self.h3.poll_timeout();
        let timer = async {
            match timeout {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            // The host holds a sender: the channel never closes while it lives.
            Some(report) = self.reports_rx.recv() => report,
            readable = self.h3.readable() => {
                if let Err(e) = readable {
                    tracing::warn!(error = %e, "host WebTransport socket");
                }
                Report(Happened::Readable)
            }
            () = timer => Report(Happened::Timer),
        }
    }

    /// A report already waiting, if any: the endpoint's events first.
    fn try_next(&mut self) -> Option<Report> {
        match self.h3.poll_event() {
            Some(event) => Some(Report(Happened::H3(event))),
            None => self.reports_rx.try_recv().ok(),
        }
    }

    /// Takes in a report: what it has for the member, if anything (the endpoint's events
    /// come through [`Self::try_next`]).
    fn handle(&mut self, report: Report) -> Option<(TransportId, SessionEvent)> {
        match report.0 {
            Happened::Readable => {
                self.h3.read(Instant::now());
                None
            }
            Happened::Timer => {
                self.h3.handle_timeout(Instant::now());
                None
            }
            Happened::H3(event) => self.on_h3(event),
            Happened::Expired(expiry) => {
                if let Some(session) = self.tokens.expired(expiry) {
                    refuse(&mut self.h3, session, "its token was never named");
                }
                None
            }
            Happened::Tell { transport, event } => {
                Some((transport, SessionEvent::Transport(event)))
            }
        }
    }
}

/// Accepts `session` as `transport`'s (HTTP 200), telling the member its channel is open; or
/// its failure, if the session closed before it was taken.
fn take(
    h3: &mut H3Endpoint,
    taken: &mut HashMap<SessionKey, TransportId>,
    reports: &mpsc::UnboundedSender<Report>,
    transport: TransportId,
    session: SessionKey,
) -> State {
    let (state, event) = if h3.respond(session, StatusCode::OK, Instant::now()) {
        taken.insert(session, transport);
        (State::Open(session), TransportEvent::ChannelOpen)
    } else {
        let why = "WebTransport session closed before it was accepted";
        (State::Ended, TransportEvent::Failed(why.into()))
    };
    // The host holds the receiver: the channel is open while it lives.
    let _ = reports.send(Report(Happened::Tell { transport, event }));
    state
}

/// Refuses a session (HTTP 403), saying `why` in the log.
fn refuse(h3: &mut H3Endpoint, session: SessionKey, why: &'static str) {
    tracing::debug!(why, "WebTransport session refused");
    h3.respond(session, StatusCode::FORBIDDEN, Instant::now());
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wtransport::endpoint::endpoint_side::Client;
    use wtransport::error::ConnectingError;
    use wtransport::tls::Sha256Digest;
    use wtransport::{ClientConfig, Connection, Endpoint, VarInt};

    use rustls::pki_types::CertificateDer;

    use super::super::certificate::tests::write_self_signed;
    use super::super::sessions::harness::{Harness, Host};
    use super::super::tokens::HOLD;
    use super::super::wt_client::SameFamily;
    use super::*;
    use crate::config::HostCertificate;

    /// The largest core packet on a WebTransport link.
    const LARGEST: usize = ackwire_room::member::WEBTRANSPORT_DATAGRAM;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    impl Host for WtHost {
        fn held(&self) -> usize {
            self.tokens.held()
        }
    }

    /// A host on loopback whose sessions are held for `hold`.
    fn harness(hold: Duration) -> Harness<WtHost> {
        Harness::rotating(hold, None)
    }

    impl Harness<WtHost> {
        /// A host that rotates its certificate every `rotation` from zero on the clock its
        /// tests hand [`WtHost::handle_timeout`].
        fn rotating(hold: Duration, rotation: Option<Duration>) -> Harness<WtHost> {
            let bind = SocketAddr::from(([127, 0, 0, 1], 0));
            let never = || unreachable!("a bound IP needs no route");
            let plan = WtPlan::bind(bind, None, never, None).expect("bind");
            Harness::new(WtHost::start(plan, hold, rotation, Duration::ZERO).expect("endpoint"))
        }

        /// A native client dialling the host with `token` (pinning the published hash, with
        /// Chromium's first packet size).
        fn dial(
            &self,
            token: &str,
        ) -> tokio::task::JoinHandle<Result<(Endpoint<Client>, Connection), ConnectingError>>
        {
            self.dial_pinning(token, self.host.info().clone())
        }

        /// A native client dialling `info`'s URL with `token`, pinning `info`'s hashes alone.
        fn dial_pinning(
            &self,
            token: &str,
            info: WebTransportInfo,
        ) -> tokio::task::JoinHandle<Result<(Endpoint<Client>, Connection), ConnectingError>>
        {
            let url = info.session_url(token);
            tokio::spawn(async move {
                let hashes = info.cert_hashes.iter().map(|h| Sha256Digest::new(h.0));
                let mut config = ClientConfig::builder()
                    .with_bind_default()
                    .with_server_certificate_hashes(hashes)
                    .build();
                let mut transport = QuicTransportConfig::default();
                transport.initial_mtu(INITIAL_MTU);
                config
                    .quic_config_mut()
                    .transport_config(Arc::new(transport));
                let endpoint = Endpoint::client(config).expect("client endpoint");
                let connection = endpoint.connect(url).await?;
                Ok((endpoint, connection))
            })
        }
    }

    /// One datagram each way on `transport`, checked byte for byte.
    async fn exchange(
        h: &mut Harness<WtHost>,
        transport: TransportId,
        client: &Connection,
        size: usize,
    ) {
        let up: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        client.send_datagram(&up).expect("the client sends");
        assert_eq!(h.packet(transport).await[..], up[..]);
        let down: Vec<u8> = up.iter().rev().copied().collect();
        h.host.send(transport, &down);
        assert_eq!(h.host.send_failures(), 0);
        let got = h.run(client.receive_datagram()).await.expect("a datagram");
        assert_eq!(got.payload()[..], down[..]);
    }

    #[test]
    fn the_published_url_names_the_address_clients_reach() {
        let lan = IpAddr::from([192, 168, 1, 5]);
        let public = IpAddr::from([203, 0, 113, 7]);
        let any = IpAddr::from([0, 0, 0, 0]);
        let never = || -> std::io::Result<IpAddr> { unreachable!("no route needed") };
        assert_eq!(reach_ip(lan, Some(public), never).unwrap(), public);
        assert_eq!(reach_ip(lan, None, never).unwrap(), lan);
        assert_eq!(reach_ip(any, None, || Ok(lan)).unwrap(), lan);

        let bind = SocketAddr::from(([127, 0, 0, 1], 0));
        let plan = WtPlan::bind(bind, None, never, None).unwrap();
        let info = plan.info();
        let port = plan.socket.local_addr().unwrap().port();
        assert_eq!(info.url, format!("https://127.0.0.1:{port}/ackwire"));
        assert_eq!(plan.host(), "127.0.0.1");
        assert!(info.validate().is_ok());
        assert_eq!(info.cert_hashes.len(), 1);
        // The hash is the certificate's own (what a browser checks).
        let Tls::SelfSigned { identity, .. } = &plan.tls else {
            panic!("a self-signed certificate");
        };
        let cert = &identity.certificate_chain().as_slice()[0];
        assert_eq!(info.cert_hashes[0].0, *cert.hash().as_ref());
        assert_eq!(url_host(IpAddr::from([0, 0, 0, 0, 0, 0, 0, 1])), "[::1]");
    }

    #[test]
    fn a_host_with_its_own_certificate_publishes_its_name_and_no_hash() {
        let dir = tempfile::tempdir().unwrap();
        let (chain, key, _) = write_self_signed(dir.path(), "host", &["localhost"]);
        let own = HostTls::load(&HostCertificate::new(chain, key, "localhost")).unwrap();
        // Neither the public IP nor a route is needed: clients dial the name.
        let bind = SocketAddr::from(([127, 0, 0, 1], 0));
        let never = || -> std::io::Result<IpAddr> { unreachable!("no route needed") };
        let public = Some(IpAddr::from([203, 0, 113, 7]));
        let plan = WtPlan::bind(bind, public, never, Some(own)).unwrap();
        let port = plan.socket.local_addr().unwrap().port();
        assert_eq!(plan.info().url, format!("https://localhost:{port}/ackwire"));
        assert!(plan.info().cert_hashes.is_empty());
        assert!(plan.info().validate().is_ok());
        assert_eq!(plan.host(), "localhost");
    }

    /// A native client dialling `url` with `token`, trusting `roots` alone (no hashes: as
    /// a browser checks a certificate of the host's own).
    fn dial_trusting(
        url: &str,
        token: &str,
        roots: &[CertificateDer<'static>],
    ) -> tokio::task::JoinHandle<Result<(Endpoint<Client>, Connection), ConnectingError>> {
        let mut store = rustls::RootCertStore::empty();
        for cert in roots {
            store.add(cert.clone()).unwrap();
        }
        let tls = wtransport::tls::client::build_default_tls_config(Arc::new(store), None);
        let config = ClientConfig::builder()
            .with_bind_address(SocketAddr::from(([127, 0, 0, 1], 0)))
            .with_custom_tls(tls)
            .dns_resolver(SameFamily { ipv4: true })
            .build();
        let url = format!("{url}?token={token}");
        tokio::spawn(async move {
            let endpoint = Endpoint::client(config).expect("client endpoint");
            let connection = endpoint.connect(url).await?;
            Ok((endpoint, connection))
        })
    }

    #[tokio::test]
    async fn a_renewed_certificate_is_presented_to_new_sessions_after_the_period_and_open_ones_carry_on()
     {
        const SECOND: &str = "1123456789abcdef0123456789abcdef";
        const STALE: &str = "2123456789abcdef0123456789abcdef";
        const BROKEN: &str = "3123456789abcdef0123456789abcdef";
        let dir = tempfile::tempdir().unwrap();
        let (chain, key, first) = write_self_signed(dir.path(), "host", &["localhost"]);
        let own = HostTls::load(&HostCertificate::new(chain, key, "localhost")).unwrap();
        let bind = SocketAddr::from(([127, 0, 0, 1], 0));
        let never = || -> std::io::Result<IpAddr> { unreachable!("no route needed") };
        let plan = WtPlan::bind(bind, None, never, Some(own)).unwrap();
        let period = Duration::from_secs(3600);
        let mut h = Harness::new(WtHost::start(plan, HOLD, Some(period), Duration::ZERO).unwrap());
        let url = h.host.info().url.clone();
        assert_eq!(h.host.poll_timeout(), Some(period));

        let early = TransportId(1);
        h.host.accept(early, TOKEN.into());
        let dial = dial_trusting(&url, TOKEN, std::slice::from_ref(&first));
        let (_e1, client) = h.run(dial).await.unwrap().expect("the first certificate");
        h.assert_open(early).await;

        // Renewed on disk; nothing changes before the period.
        let (_, _, second) = write_self_signed(dir.path(), "host", &["localhost"]);
        assert!(h.host.handle_timeout(period / 2).is_none());
        // At the period the files are read again: nothing new is published (no hash, the
        // same URL), and the next reading is a period later.
        let published = h.host.info().clone();
        assert!(h.host.handle_timeout(period).is_none());
        assert_eq!(h.host.info(), &published);
        assert_eq!(h.host.poll_timeout(), Some(2 * period));

        // New sessions get the new certificate: one trusting the old alone is refused by its
        // own TLS (the host never hears of it), one trusting the new connects.
        h.host.accept(TransportId(2), STALE.into());
        let dial = dial_trusting(&url, STALE, std::slice::from_ref(&first));
        let refused = h.run(dial).await.unwrap().err();
        assert!(
            matches!(refused, Some(ConnectingError::ConnectionError(_))),
            "{refused:?}"
        );
        let late = TransportId(3);
        h.host.accept(late, SECOND.into());
        let dial = dial_trusting(&url, SECOND, std::slice::from_ref(&second));
        let (_e3, late_client) = h.run(dial).await.unwrap().expect("the new certificate");
        h.assert_open(late).await;
        exchange(&mut h, late, &late_client, 100).await;
        // The session open before it carries on.
        exchange(&mut h, early, &client, LARGEST).await;

        // Files that cannot be read at the next period: the current certificate stays.
        std::fs::write(dir.path().join("host.pem"), "half a certificate").unwrap();
        assert!(h.host.handle_timeout(2 * period).is_none());
        assert_eq!(h.host.poll_timeout(), Some(3 * period));
        let broken = TransportId(4);
        h.host.accept(broken, BROKEN.into());
        let dial = dial_trusting(&url, BROKEN, std::slice::from_ref(&second));
        let (_e4, _c4) = h
            .run(dial)
            .await
            .unwrap()
            .expect("still the new certificate");
        h.assert_open(broken).await;
    }

    #[tokio::test]
    async fn a_session_with_a_named_token_opens_and_carries_the_largest_datagrams_both_ways() {
        let mut h = harness(HOLD);
        let transport = TransportId(7);
        h.host.accept(transport, TOKEN.into());
        let dial = h.dial(TOKEN);
        let (_endpoint, client) = h.run(dial).await.unwrap().expect("the session opens");
        h.assert_open(transport).await;

        exchange(&mut h, transport, &client, 100).await;
        exchange(&mut h, transport, &client, LARGEST).await;
        h.assert_nothing_for_the_member();
    }

    #[tokio::test]
    async fn a_session_that_comes_before_its_token_is_held_and_then_taken() {
        let mut h = harness(HOLD);
        let mut dial = h.dial(TOKEN);
        // The session arrives and waits for the member's command.
        h.until_held(1).await;
        assert!(!dial.is_finished());
        h.assert_nothing_for_the_member();

        let transport = TransportId(3);
        h.host.accept(transport, TOKEN.into());
        let (_endpoint, client) = h.run(&mut dial).await.unwrap().expect("the session opens");
        h.assert_open(transport).await;
        assert_eq!(h.host.held(), 0);
        exchange(&mut h, transport, &client, LARGEST).await;
    }

    #[tokio::test]
    async fn a_session_whose_token_is_never_named_is_refused_after_the_hold() {
        let mut h = harness(Duration::from_millis(200));
        let dial = h.dial(TOKEN);
        let refused = h.run(dial).await.unwrap().err();
        assert!(
            matches!(refused, Some(ConnectingError::SessionRejected)),
            "{refused:?}"
        );
        assert_eq!(h.host.held(), 0);
        h.assert_nothing_for_the_member();
        // Named too late: the member waits for a session that never comes (its attempt times
        // out), and nothing is opened.
        h.host.accept(TransportId(1), TOKEN.into());
        h.assert_nothing_for_the_member();
    }

    #[tokio::test]
    async fn a_session_without_a_token_is_refused_at_once() {
        // Held sessions would wait a minute: the test's patience is 10 s.
        let mut h = harness(Duration::from_secs(60));
        for bad in ["", "0123", "0123456789ABCDEF0123456789ABCDEF"] {
            let dial = h.dial(bad);
            let refused = h.run(dial).await.unwrap().err();
            assert!(
                matches!(refused, Some(ConnectingError::SessionRejected)),
                "{bad}: {refused:?}"
            );
        }
        assert_eq!(h.host.held(), 0);
        h.assert_nothing_for_the_member();
    }

    #[tokio::test]
    async fn a_second_session_with_a_taken_token_is_refused_at_once() {
        let mut h = harness(Duration::from_secs(60));
        let transport = TransportId(9);
        h.host.accept(transport, TOKEN.into());
        let first = h.dial(TOKEN);
        let (_endpoint, client) = h.run(first).await.unwrap().expect("the first opens");
        h.assert_open(transport).await;

        let second = h.dial(TOKEN);
        let refused = h.run(second).await.unwrap().err();
        assert!(
            matches!(refused, Some(ConnectingError::SessionRejected)),
            "{refused:?}"
        );
        h.assert_nothing_for_the_member();
        // The first still works.
        exchange(&mut h, transport, &client, 100).await;
    }

    #[tokio::test]
    async fn closing_the_transport_closes_the_clients_session() {
        let mut h = harness(HOLD);
        let transport = TransportId(4);
        h.host.accept(transport, TOKEN.into());
        let dial = h.dial(TOKEN);
        let (_endpoint, client) = h.run(dial).await.unwrap().expect("the session opens");
        h.assert_open(transport).await;

        h.host.close(transport);
        assert!(!h.host.has(transport));
        h.run(client.closed()).await;
        // Sending on it now is a no-op, and nothing more is told about it.
        h.host.send(transport, b"late");
        assert_eq!(h.host.send_failures(), 0);
        h.assert_nothing_for_the_member();
    }

    #[tokio::test]
    async fn a_session_the_client_closes_is_told_closed() {
        let mut h = harness(HOLD);
        let transport = TransportId(5);
        h.host.accept(transport, TOKEN.into());
        let dial = h.dial(TOKEN);
        let (_endpoint, client) = h.run(dial).await.unwrap().expect("the session opens");
        h.assert_open(transport).await;

        client.close(VarInt::from_u32(0), b"bye");
        h.assert_closed(transport).await;
    }

    #[tokio::test]
    async fn a_rotation_keeps_open_sessions_and_new_ones_dial_the_certificate_last_published() {
        const LATE: &str = "1123456789abcdef0123456789abcdef";
        const OVERLAPPING: &str = "2123456789abcdef0123456789abcdef";
        const STALE: &str = "3123456789abcdef0123456789abcdef";
        let period = Duration::from_millis(200);
        let mut h = Harness::rotating(HOLD, Some(period));
        let first = h.host.info().clone();
        assert_eq!(first.cert_hashes.len(), 1);
        assert_eq!(h.host.poll_timeout(), Some(period));

        // A client connected before the rotation.
        let early = TransportId(1);
        h.host.accept(early, TOKEN.into());
        let dial = h.dial(TOKEN);
        let (_e1, client) = h.run(dial).await.unwrap().expect("the session opens");
        h.assert_open(early).await;
        exchange(&mut h, early, &client, 100).await;

        // Nothing is due before the period; at it, the next certificate is published beside
        // the current one.
        assert!(
            h.host
                .handle_timeout(period - Duration::from_millis(1))
                .is_none()
        );
        let both = h.host.handle_timeout(period).expect("a rotation");
        assert_eq!(both.url, first.url);
        assert_eq!(both.cert_hashes.len(), 2);
        assert_eq!(both.cert_hashes[0], first.cert_hashes[0]);
        let next = both.cert_hashes[1];
        assert_ne!(next, first.cert_hashes[0]);
        assert!(both.validate().is_ok());
        assert_eq!(h.host.info(), &both);
        let overlap = period / 2;
        assert_eq!(h.host.poll_timeout(), Some(period + overlap));

        // Within the overlap the current certificate is still presented: a client that read
        // the list before the rotation still connects.
        let overlapping = TransportId(2);
        h.host.accept(overlapping, OVERLAPPING.into());
        let dial = h.dial_pinning(OVERLAPPING, first.clone());
        let (_e2, _c2) = h
            .run(dial)
            .await
            .unwrap()
            .expect("the old hash still works");
        h.assert_open(overlapping).await;

        // The switch: the next certificate alone, and the next rotation a period after the
        // last.
        let after = h.host.handle_timeout(period + overlap).expect("the switch");
        assert_eq!(after.cert_hashes, [next]);
        assert_eq!(h.host.poll_timeout(), Some(2 * period));

        // The session open before it carries on, both ways, with the largest datagrams.
        exchange(&mut h, early, &client, LARGEST).await;
        exchange(&mut h, early, &client, 100).await;

        // A client pinning the new hash alone connects; one pinning the old hash alone is
        // refused by its own TLS (the host never hears of it).
        let late = TransportId(3);
        h.host.accept(late, LATE.into());
        let dial = h.dial_pinning(LATE, after.clone());
        let (_e3, late_client) = h.run(dial).await.unwrap().expect("the new hash works");
        h.assert_open(late).await;
        exchange(&mut h, late, &late_client, 100).await;
        h.host.accept(TransportId(4), STALE.into());
        let dial = h.dial_pinning(STALE, first.clone());
        let refused = h.run(dial).await.unwrap().err();
        assert!(
            matches!(refused, Some(ConnectingError::ConnectionError(_))),
            "{refused:?}"
        );
        h.assert_nothing_for_the_member();
        // The early client, again, after all of it.
        exchange(&mut h, early, &client, 100).await;
    }

    #[test]
    fn the_overlap_is_half_the_period_at_most_a_day_and_a_presented_certificate_outlives_its_use() {
        let hash = CertHash([1; 32]);
        let short = Rotation::new(Duration::from_secs(10), Duration::ZERO, hash, Vec::new());
        assert_eq!(short.overlap, Duration::from_secs(5));
        let long = Rotation::new(super::MAX_ROTATION, Duration::ZERO, hash, Vec::new());
        assert_eq!(long.overlap, MAX_OVERLAP);
        // Presented from an overlap after it is made until an overlap after the next is made.
        let presented_until = long.period + long.overlap;
        let valid_for = Duration::from_secs(14 * 24 * 3600 - 3600);
        assert!(presented_until + Duration::from_secs(23 * 3600) <= valid_for);
    }
}
