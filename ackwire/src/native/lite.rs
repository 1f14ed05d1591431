//! A host's WebRTC: every client's peer connection on one UDP socket per address the host
//! offers (a server has one), each an ICE-lite str0m [`Rtc`] driven in the room's own task,
//! with no task, socket or timer per client.
//!
//! The `webrtc` crate (the [`webrtc`](super::webrtc) sessions peers use) costs a host 476 KiB
//! and a socket per connection; str0m 62 KiB on one socket, at 0.39× the CPU
//! (`cargo xtask bench host-stack`, `docs/host-stack.md`). A host only ever answers: its
//! clients lead (`ackwire_room`'s `roles`), so ICE-lite suffices. It answers the clients'
//! checks and never sends its own, and its candidates are addresses the clients can reach
//! ([`plan`]: the 1:1 NAT's public IP, the bound IP, or every interface's). It gathers nothing
//! and uses no TURN server: a client behind any NAT reaches it from its own side (`prflx` at
//! the client, or through the client's relay), which is what a server with a reachable
//! address is for.
//!
//! The same policy as every link ([`ackwire_room::webrtc`]): one pre-negotiated data channel,
//! unordered, no retransmissions; the member's [`TransportEvent`]s out, its signals in.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use ackwire_room::member::{IceState, TransportEvent, TransportId};
use ackwire_room::webrtc::{DATA_CHANNEL, path_type};
use ackwire_signalling::{Sdp, SdpKind, SignalData};
use str0m::change::SdpOffer;
use str0m::channel::{ChannelConfig, ChannelId, Reliability};
use str0m::crypto::CryptoProvider;
use str0m::crypto::dtls::DtlsCert;
use str0m::net::{Protocol, Receive};
use str0m::{Candidate, CandidateKind, Event, IceConnectionState, Input, Output, Rtc};

use super::webrtc::WebRtcEvent;

/// A received datagram larger than this is cut and refused by its `Rtc` (a DTLS record of
/// the channel's messages is far smaller; the core's datagrams are at most 1,200 bytes).
const RECV_BUFFER: usize = 2048;

/// Why the host's WebRTC socket could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum LiteError {
    /// The socket could not be bound.
    #[error("cannot bind the host's WebRTC socket at {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The crypto library gave no DTLS certificate.
    #[error("no DTLS certificate could be made for the host's WebRTC")]
    Certificate,
}

/// One client's peer connection.
struct Session {
    rtc: Rtc,
    channel: Option<ChannelId>,
    /// When `rtc` wants [`Input::Timeout`] next.
    deadline: Instant,
    /// The earliest of this session's entries in [`LiteHost::timers`] (never after
    /// `deadline`), or `None` when it has none left that counts.
    scheduled: Option<Instant>,
    /// Relay candidates the client trickled: a path from one of them is `relay`.
    relays: Vec<SocketAddr>,
    /// Where the client's last datagram came from: the nominated pair's far end.
    source: Option<SocketAddr>,
    /// Whether the session has failed (told once; the member closes it).
    failed: bool,
}

/// One address the host offers: a socket, and the candidate address it stands for (what
/// str0m is told its datagrams arrive at).
struct Port {
    socket: tokio::net::UdpSocket,
    local: SocketAddr,
}

/// The host's sockets, one per address it offers, and what they would not send.
struct Sockets {
    ports: Vec<Port>,
    /// Datagrams a socket refused: a full send buffer, or an OS error (an unreachable
    /// address, a firewall's refusal).
    send_failures: u64,
}

impl Sockets {
    /// Sends `contents` to `destination` from the socket of the candidate `source` (the
    /// first socket if none is). One the socket refuses is dropped, as it could have been on
    /// the way (the link counts it lost and its congestion control reacts), and counted.
    fn send(&mut self, source: SocketAddr, destination: SocketAddr, contents: &[u8]) {
        let port = self.ports.iter().find(|p| p.local == source);
        let refused = match port.or(self.ports.first()) {
            Some(port) => port.socket.try_send_to(contents, destination).err(),
            None => Some(std::io::ErrorKind::AddrNotAvailable.into()),
        };
        if let Some(e) = refused {
            self.send_failures += 1;
            tracing::debug!(%destination, error = %e, "host WebRTC datagram not sent");
        }
    }
}

/// The sockets a host's WebRTC binds and the candidate each stands for: `(bind, candidate
/// IP)`. With a 1:1 NAT's `public_ip`, one socket at `bind` advertised as that IP; with a
/// bound IP, that one; with a wildcard, one per interface address of its family (loopback
/// only when there is nothing else), as the `webrtc` crate gathers; where interfaces cannot
/// be listed, the address `route` finds (the way to the signalling server).
pub(crate) fn plan(
    bind: SocketAddr,
    public_ip: Option<IpAddr>,
    route: impl FnOnce() -> std::io::Result<IpAddr>,
) -> std::io::Result<Vec<(SocketAddr, IpAddr)>> {
    if let Some(ip) = public_ip {
        return Ok(vec![(bind, ip)]);
    }
    if !bind.ip().is_unspecified() {
        return Ok(vec![(bind, bind.ip())]);
    }
    let mut ips = interface_ips(bind.is_ipv4());
    if ips.is_empty() {
        ips.push(route()?);
    }
    Ok(ips
        .into_iter()
        .map(|ip| (SocketAddr::new(ip, bind.port()), ip))
        .collect())
}

/// The addresses of this machine's interfaces that are up, of one family: all but loopback
/// and IPv6 link-local, or loopback's alone when that is all there is.
#[cfg(target_os = "linux")]
fn interface_ips(v4: bool) -> Vec<IpAddr> {
    use nix::net::if_::InterfaceFlags;
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    let mut ips: Vec<(IpAddr, bool)> = Vec::new();
    for interface in interfaces {
        if !interface.flags.contains(InterfaceFlags::IFF_UP) {
            continue;
        }
        let address = interface.address.as_ref();
        let ip = match (
            address.and_then(|a| a.as_sockaddr_in()),
            address.and_then(|a| a.as_sockaddr_in6()),
        ) {
            (Some(v4addr), _) if v4 => IpAddr::V4(v4addr.ip()),
            (_, Some(v6addr)) if !v4 && (v6addr.ip().segments()[0] & 0xffc0) != 0xfe80 => {
                IpAddr::V6(v6addr.ip())
            }
            _ => continue,
        };
        if !ips.iter().any(|(known, _)| *known == ip) {
            ips.push((ip, ip.is_loopback()));
        }
    }
    let outside: Vec<IpAddr> = ips
        .iter()
        .filter(|(_, lo)| !lo)
        .map(|(ip, _)| *ip)
        .collect();
    if outside.is_empty() {
        ips.into_iter().map(|(ip, _)| ip).collect()
    } else {
        outside
    }
}

#[cfg(not(target_os = "linux"))]
fn interface_ips(_v4: bool) -> Vec<IpAddr> {
    Vec::new()
}

/// Every client's WebRTC on the host's few sockets: open, signal and close per client, and
/// the sockets' datagrams in; the member's events and the clients' datagrams out through
/// [`Self::pop`].
pub(crate) struct LiteHost {
    sockets: Sockets,
    crypto: Arc<CryptoProvider>,
    /// One certificate for every session, as a browser has one per origin: a session costs no
    /// key generation.
    cert: DtlsCert,
    sessions: HashMap<TransportId, Session>,
    /// Which session a source address belongs to (learnt from the first datagram it accepts).
    by_source: HashMap<SocketAddr, TransportId>,
    events: VecDeque<(TransportId, WebRtcEvent)>,
    /// Sessions by deadline, earliest first, so a wake-up touches only the sessions due. An
    /// entry goes stale when its session's deadline moves or the session closes; a stale
    /// entry is settled when it reaches the front ([`Self::next_due`], [`Session::scheduled`]).
    timers: BinaryHeap<Reverse<(Instant, TransportId)>>,
    buf: Vec<u8>,
    /// The clock str0m runs on: the driver's `now` is `epoch + now`.
    epoch: Instant,
}

impl std::fmt::Debug for LiteHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiteHost")
            .field("candidates", &self.local_addrs())
            .field("sessions", &self.sessions.len())
            .finish_non_exhaustive()
    }
}

impl LiteHost {
    /// Binds a socket for each `(bind, candidate IP)` of the [`plan`]; the candidate has the
    /// bound port. Needs a tokio runtime.
    pub(crate) fn bind(
        plan: &[(SocketAddr, IpAddr)],
        epoch: Instant,
    ) -> Result<LiteHost, LiteError> {
        let mut ports = Vec::new();
        for &(bind, ip) in plan {
            let bind_error = |source| LiteError::Bind { addr: bind, source };
            let socket = crate::net::udp::bind(bind).map_err(bind_error)?;
            let bound = socket.local_addr().map_err(bind_error)?;
            let socket = tokio::net::UdpSocket::from_std(socket).map_err(bind_error)?;
            let local = SocketAddr::new(ip, bound.port());
            ports.push(Port { socket, local });
        }
        let crypto = str0m::crypto::from_feature_flags();
        let cert = crypto
            .dtls_provider
            .generate_certificate()
            .ok_or(LiteError::Certificate)?;
        Ok(LiteHost {
            sockets: Sockets {
                ports,
                send_failures: 0,
            },
            crypto: Arc::new(crypto),
            cert,
            sessions: HashMap::new(),
            by_source: HashMap::new(),
            events: VecDeque::new(),
            timers: BinaryHeap::new(),
            buf: vec![0; RECV_BUFFER],
            epoch,
        })
    }

    /// The addresses clients reach us at: our candidates.
    pub(crate) fn local_addrs(&self) -> Vec<SocketAddr> {
        self.sockets.ports.iter().map(|p| p.local).collect()
    }

    /// Datagrams its sockets refused to send, all clients' (see [`Sockets::send`]).
    pub(crate) fn send_failures(&self) -> u64 {
        self.sockets.send_failures
    }

    /// How many clients have a peer connection.
    #[cfg(test)]
    pub(crate) fn sessions(&self) -> usize {
        self.sessions.len()
    }

    fn at(&self, now: Duration) -> Instant {
        self.epoch + now
    }

    /// A peer connection for `transport`, waiting for the client's offer. A host never offers
    /// (its clients lead); asked to, it says the attempt failed.
    pub(crate) fn open(&mut self, now: Duration, transport: TransportId, offer: bool) {
        if offer {
            let why = "an ICE-lite host answers and never offers";
            self.tell(transport, TransportEvent::Failed(why.into()));
            return;
        }
        let mut rtc = Rtc::builder()
            .set_ice_lite(true)
            .set_crypto_provider(self.crypto.clone())
            .set_dtls_cert(self.cert.clone())
            .build(self.at(now));
        for port in &self.sockets.ports {
            match Candidate::host(port.local, "udp") {
                Ok(candidate) => drop(rtc.add_local_candidate(candidate)),
                Err(e) => {
                    self.tell(transport, TransportEvent::Failed(e.to_string()));
                    return;
                }
            }
        }
        let mut session = Session {
            rtc,
            channel: None,
            deadline: self.at(now),
            scheduled: None,
            relays: Vec::new(),
            source: None,
            failed: false,
        };
        schedule(&mut self.timers, transport, &mut session);
        self.sessions.insert(transport, session);
    }

    /// A signal from the client: its offer (answered at once, candidates included) or a
    /// trickled candidate.
    pub(crate) fn remote_signal(&mut self, transport: TransportId, data: SignalData) {
        let Some(session) = self.sessions.get_mut(&transport) else {
            return;
        };
        match data {
            SignalData::Sdp { sdp } if sdp.kind == SdpKind::Offer => {
                let answer = SdpOffer::from_sdp_string(&sdp.sdp)
                    .map_err(|e| e.to_string())
                    .and_then(|offer| {
                        session
                            .rtc
                            .sdp_api()
                            .accept_offer(offer)
                            .map_err(|e| e.to_string())
                    });
                match answer {
                    Ok(answer) => {
                        session
                            .rtc
                            .direct_api()
                            .create_data_channel(channel_config());
                        self.tell(transport, TransportEvent::RemoteDescriptionSet);
                        let sdp = Sdp {
                            kind: SdpKind::Answer,
                            sdp: answer.to_sdp_string(),
                        };
                        let signal = SignalData::Sdp { sdp };
                        self.tell(transport, TransportEvent::LocalSignal(signal));
                    }
                    Err(e) => {
                        let why = format!("session description refused: {e}");
                        self.tell(transport, TransportEvent::Failed(why));
                    }
                }
            }
            SignalData::Sdp { .. } => {
                let why = "an answer, to a host that made no offer";
                self.tell(transport, TransportEvent::Failed(why.into()));
            }
            SignalData::Candidate { candidate, .. } => {
                // An ICE-lite agent needs none (it learns each client's address from its
                // checks); a relay's address is kept to name the path. End-of-candidates (an
                // empty string), mDNS names and other families are of no use here.
                match Candidate::from_sdp_string(&candidate) {
                    Ok(c) if c.kind() == CandidateKind::Relayed => session.relays.push(c.addr()),
                    Ok(_) => {}
                    Err(e) => {
                        tracing::trace!(transport = transport.0, error = %e, "candidate unused")
                    }
                }
            }
            // The member applies no session token to a peer connection.
            SignalData::WebTransport { .. } | SignalData::WebSocket { .. } => {}
        }
        self.drive(transport);
    }

    /// Closes `transport`'s peer connection (nothing more is told about it).
    pub(crate) fn close(&mut self, transport: TransportId) {
        if let Some(mut session) = self.sessions.remove(&transport) {
            session.rtc.disconnect();
            self.by_source.retain(|_, t| *t != transport);
        }
    }

    /// Sends `datagram` on `transport`'s channel, if it has one open: dropped otherwise, or
    /// when the channel is backed up, as UDP would.
    pub(crate) fn send(&mut self, transport: TransportId, datagram: &[u8]) -> bool {
        let Some(session) = self.sessions.get_mut(&transport) else {
            return false;
        };
        let Some(mut channel) = session.channel.and_then(|id| session.rtc.channel(id)) else {
            return false;
        };
        let sent = channel.write(true, datagram).unwrap_or(false);
        self.drive(transport);
        sent
    }

    /// Whether `transport` is one of ours.
    pub(crate) fn has(&self, transport: TransportId) -> bool {
        self.sessions.contains_key(&transport)
    }

    /// Waits until a socket may have datagrams.
    pub(crate) async fn readable(&self) -> std::io::Result<()> {
        std::future::poll_fn(|cx| {
            for port in &self.sockets.ports {
                if let Poll::Ready(ready) = port.socket.poll_recv_ready(cx) {
                    return Poll::Ready(ready);
                }
            }
            Poll::Pending
        })
        .await
    }

    /// Reads every datagram waiting and hands each to the session it belongs to.
    pub(crate) fn read_ready(&mut self, now: Duration) {
        for p in 0..self.sockets.ports.len() {
            loop {
                let (n, source) = match self.sockets.ports[p].socket.try_recv_from(&mut self.buf) {
                    Ok(received) => received,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    // An ICMP error from an earlier send (a client gone): nothing to read.
                    Err(e) => {
                        tracing::debug!(error = %e, "host WebRTC socket");
                        continue;
                    }
                };
                let local = self.sockets.ports[p].local;
                self.receive(now, local, source, n);
            }
        }
    }

    fn receive(&mut self, now: Duration, local: SocketAddr, source: SocketAddr, n: usize) {
        let at = self.at(now);
        let Ok(contents) = self.buf[..n].try_into() else {
            // Neither STUN, DTLS nor RTP: not WebRTC at all.
            return;
        };
        let input = Input::Receive(
            at,
            Receive {
                proto: Protocol::Udp,
                source,
                destination: local,
                contents,
            },
        );
        // A known address, or the session whose ICE credentials its STUN check carries.
        let transport = match self.by_source.get(&source) {
            Some(t) => *t,
            // Only a STUN check (first byte 0–3, RFC 7983) starts a path: anything else from
            // an unknown address is dropped without asking every session.
            None if self.buf[0] > 3 => return,
            None => {
                let found = self.sessions.iter().find(|(_, s)| s.rtc.accepts(&input));
                let Some((t, _)) = found else { return };
                self.by_source.insert(source, *t);
                *t
            }
        };
        let Some(session) = self.sessions.get_mut(&transport) else {
            return;
        };
        session.source = Some(source);
        if let Err(e) = session.rtc.handle_input(input) {
            tracing::debug!(transport = transport.0, error = %e, "datagram refused");
        }
        self.drive(transport);
    }

    /// The earliest entry that stands for a live session's deadline, left in place. Stale
    /// entries in front of it (a closed or failed session, or a deadline that moved later,
    /// as it does on most datagrams) are settled first, so the driver never wakes for one.
    fn next_due(&mut self) -> Option<(Instant, TransportId)> {
        while let Some(&Reverse((due, transport))) = self.timers.peek() {
            let Some(session) = self.sessions.get_mut(&transport) else {
                self.timers.pop(); // closed
                continue;
            };
            if !session.failed && session.deadline <= due {
                return Some((due, transport));
            }
            self.timers.pop();
            if session.scheduled == Some(due) {
                session.scheduled = None;
            }
            // A failed session was told once; the member closes it.
            if !session.failed {
                schedule(&mut self.timers, transport, session);
            }
        }
        None
    }

    /// When the next session wants its timeout.
    pub(crate) fn poll_timeout(&mut self) -> Option<Duration> {
        let (due, _) = self.next_due()?;
        Some(due.saturating_duration_since(self.epoch))
    }

    /// Gives every session whose deadline has come its timeout.
    pub(crate) fn handle_timeout(&mut self, now: Duration) {
        let at = self.at(now);
        while let Some((due, transport)) = self.next_due()
            && due <= at
        {
            self.timers.pop();
            if let Some(session) = self.sessions.get_mut(&transport) {
                if session.scheduled == Some(due) {
                    session.scheduled = None;
                }
                if let Err(e) = session.rtc.handle_input(Input::Timeout(at)) {
                    tracing::debug!(transport = transport.0, error = %e, "timeout refused");
                }
            }
            self.drive(transport);
        }
    }

    /// The next event for the member, or a client's datagram.
    pub(crate) fn pop(&mut self) -> Option<(TransportId, WebRtcEvent)> {
        self.events.pop_front()
    }

    fn tell(&mut self, transport: TransportId, event: TransportEvent) {
        self.events
            .push_back((transport, WebRtcEvent::Transport(event)));
    }

    /// Polls `transport`'s session until only a timeout is left: sends what it transmits and
    /// queues what it tells.
    fn drive(&mut self, transport: TransportId) {
        let Some(session) = self.sessions.get_mut(&transport) else {
            return;
        };
        if session.failed {
            return;
        }
        loop {
            match session.rtc.poll_output() {
                Ok(Output::Timeout(at)) => {
                    session.deadline = at;
                    schedule(&mut self.timers, transport, session);
                    break;
                }
                Ok(Output::Transmit(t)) => {
                    self.sockets.send(t.source, t.destination, &t.contents);
                }
                Ok(Output::Event(event)) => {
                    let event = match event {
                        Event::IceConnectionStateChange(state) => {
                            WebRtcEvent::Transport(TransportEvent::Ice(ice_state(state)))
                        }
                        Event::ChannelOpen(id, _) => {
                            session.channel = Some(id);
                            let relayed =
                                session.source.is_some_and(|s| session.relays.contains(&s));
                            let remote = if relayed { "relay" } else { "host" };
                            let path = path_type("host", remote);
                            self.events.push_back((
                                transport,
                                WebRtcEvent::Transport(TransportEvent::ChannelOpen),
                            ));
                            WebRtcEvent::Transport(TransportEvent::CandidateType(path))
                        }
                        Event::ChannelData(data) => WebRtcEvent::Datagram(data.data),
                        Event::ChannelClose(_) => {
                            session.channel = None;
                            WebRtcEvent::Transport(TransportEvent::ChannelClosed)
                        }
                        _ => continue,
                    };
                    self.events.push_back((transport, event));
                }
                Err(e) => {
                    session.failed = true;
                    self.events.push_back((
                        transport,
                        WebRtcEvent::Transport(TransportEvent::Failed(e.to_string())),
                    ));
                    return;
                }
            }
        }
        if !session.rtc.is_alive() {
            session.failed = true;
            let why = "the peer connection closed";
            self.tell(transport, TransportEvent::Failed(why.into()));
        }
    }
}

/// Makes sure `session` has an entry in `timers` no later than its deadline. Only a deadline
/// that moves earlier adds one, so a session keeps few entries however often it is driven.
fn schedule(
    timers: &mut BinaryHeap<Reverse<(Instant, TransportId)>>,
    transport: TransportId,
    session: &mut Session,
) {
    if session.scheduled.is_none_or(|s| session.deadline < s) {
        timers.push(Reverse((session.deadline, transport)));
        session.scheduled = Some(session.deadline);
    }
}

/// str0m's ICE state as the member knows it (str0m has no `failed` or `closed`: a session
/// that stays disconnected is no longer alive, which the member hears as a failure).
fn ice_state(state: IceConnectionState) -> IceState {
    match state {
        IceConnectionState::New => IceState::New,
        IceConnectionState::Checking => IceState::Checking,
        IceConnectionState::Connected => IceState::Connected,
        IceConnectionState::Completed => IceState::Completed,
        IceConnectionState::Disconnected => IceState::Disconnected,
    }
}

/// The data channel of every link ([`DATA_CHANNEL`]) in str0m's terms.
fn channel_config() -> ChannelConfig {
    ChannelConfig {
        label: DATA_CHANNEL.label.into(),
        ordered: DATA_CHANNEL.ordered,
        reliability: Reliability::MaxRetransmits {
            retransmits: DATA_CHANNEL.max_retransmits,
        },
        negotiated: Some(DATA_CHANNEL.id),
        protocol: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> LiteHost {
        let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
        LiteHost::bind(&[(loopback, loopback.ip())], Instant::now()).unwrap()
    }

    fn local(host: &LiteHost) -> SocketAddr {
        host.local_addrs()[0]
    }

    #[test]
    fn the_plan_advertises_the_public_ip_else_the_bound_one_else_every_interface() {
        let any: SocketAddr = "0.0.0.0:5000".parse().unwrap();
        let public: IpAddr = "203.0.113.9".parse().unwrap();
        let no_route = || Err(std::io::Error::other("no route"));
        assert_eq!(plan(any, Some(public), no_route).unwrap(), [(any, public)]);
        let bound: SocketAddr = "192.0.2.4:0".parse().unwrap();
        assert_eq!(plan(bound, None, no_route).unwrap(), [(bound, bound.ip())]);
        // A wildcard: this machine's interfaces, at the port asked for, never a wildcard.
        let ips = plan(any, None, || Ok(IpAddr::from([127, 0, 0, 1]))).unwrap();
        assert!(!ips.is_empty());
        for (bind, ip) in ips {
            assert_eq!(bind, SocketAddr::new(ip, 5000));
            assert!(ip.is_ipv4() && !ip.is_unspecified());
        }
    }

    fn events(host: &mut LiteHost) -> Vec<(TransportId, WebRtcEvent)> {
        std::iter::from_fn(|| host.pop()).collect()
    }

    fn offer_signal(text: &str) -> SignalData {
        SignalData::Sdp {
            sdp: Sdp {
                kind: SdpKind::Offer,
                sdp: text.into(),
            },
        }
    }

    #[tokio::test]
    async fn bad_signals_fail_the_attempt_with_the_reason_and_a_host_never_offers() {
        let mut host = host();
        let t = TransportId(1);
        host.open(Duration::ZERO, t, false);
        host.remote_signal(t, offer_signal("v=0 not a session"));
        let told = events(&mut host);
        assert!(
            matches!(&told[..], [(_, WebRtcEvent::Transport(TransportEvent::Failed(why)))]
                if why.starts_with("session description refused")),
            "{told:?}"
        );
        let answer = SignalData::Sdp {
            sdp: Sdp {
                kind: SdpKind::Answer,
                sdp: "v=0".into(),
            },
        };
        host.remote_signal(t, answer);
        assert!(matches!(
            &events(&mut host)[..],
            [(_, WebRtcEvent::Transport(TransportEvent::Failed(_)))]
        ));
        // A candidate it cannot parse is passed over.
        let candidate = SignalData::Candidate {
            candidate: "candidate:garbage".into(),
            sdp_mid: None,
            sdp_m_line_index: None,
        };
        host.remote_signal(t, candidate);
        assert!(events(&mut host).is_empty());
        // Asked to offer: refused, nothing opened.
        host.open(Duration::ZERO, TransportId(2), true);
        assert!(!host.has(TransportId(2)));
        assert!(matches!(
            &events(&mut host)[..],
            [(t, WebRtcEvent::Transport(TransportEvent::Failed(_)))] if *t == TransportId(2)
        ));
        // Signals for a transport it does not have change nothing.
        host.remote_signal(TransportId(9), offer_signal("v=0"));
        assert!(events(&mut host).is_empty());
        assert_eq!(host.sessions(), 1);
        host.close(t);
        assert_eq!(host.sessions(), 0);
    }

    #[tokio::test]
    async fn datagrams_no_session_accepts_are_dropped_and_change_nothing() {
        let mut host = host();
        host.open(Duration::ZERO, TransportId(1), false);
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        // Not WebRTC at all, a DTLS-looking record, and a STUN request with unknown credentials.
        let mut stun = vec![0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42];
        stun.extend_from_slice(&[7; 12]);
        // On loopback a datagram is queued at the receiver when `send_to` returns.
        for datagram in [&b"hello"[..], &[22, 254, 253, 0, 0][..], &stun[..]] {
            sender.send_to(datagram, local(&host)).unwrap();
        }
        host.readable().await.unwrap();
        host.read_ready(Duration::ZERO);
        assert!(events(&mut host).is_empty());
        assert!(host.by_source.is_empty(), "no source was tied to a session");
        assert_eq!(host.sessions(), 1);
    }

    #[tokio::test]
    async fn a_datagram_its_socket_refuses_is_counted_and_the_next_still_goes() {
        let mut host = host();
        let from = local(&host);
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        client.set_nonblocking(true).unwrap();
        // tokio tries a send only once its reactor has seen the socket writable.
        host.sockets.ports[0].socket.writable().await.unwrap();
        // An IPv4 socket cannot send to an IPv6 address: the kernel refuses it, nothing leaves.
        host.sockets
            .send(from, "[::1]:9".parse().unwrap(), b"refused");
        assert_eq!(host.send_failures(), 1);
        host.sockets
            .send(from, client.local_addr().unwrap(), b"sent");
        assert_eq!(host.send_failures(), 1, "a datagram sent is not counted");
        // On loopback a datagram is queued at the receiver when the send returns.
        let mut buf = [0; 16];
        let (n, source) = client.recv_from(&mut buf).unwrap();
        assert_eq!((&buf[..n], source), (&b"sent"[..], from));
    }

    #[tokio::test]
    async fn a_wake_up_gives_timeouts_to_the_sessions_due_and_closed_sessions_leave_no_timer() {
        let mut host = host();
        assert_eq!(host.poll_timeout(), None, "no sessions, no wake-up");
        for t in 1..=3 {
            host.open(Duration::from_millis(t), TransportId(t), false);
        }
        // A new session wants its first timeout at once.
        assert_eq!(host.poll_timeout(), Some(Duration::from_millis(1)));
        // Only the first is due at 1 ms: after it, the earliest is the second's.
        host.handle_timeout(Duration::from_millis(1));
        assert_eq!(host.poll_timeout(), Some(Duration::from_millis(2)));
        host.handle_timeout(Duration::from_millis(3));
        let next = host.poll_timeout().expect("live sessions keep a timer");
        assert!(
            next > Duration::from_millis(3),
            "each asked for a later one: {next:?}"
        );
        // Waking up often adds no entries: each session keeps one.
        for ms in 4..100 {
            host.handle_timeout(Duration::from_millis(ms));
        }
        assert!(host.timers.len() <= 3, "{} entries", host.timers.len());
        // None failed or was told anything but that it is checking (no client yet).
        let told = events(&mut host);
        assert!(
            told.iter().all(|(_, e)| matches!(
                e,
                WebRtcEvent::Transport(TransportEvent::Ice(IceState::Checking))
            )),
            "{told:?}"
        );
        for t in 1..=3 {
            host.close(TransportId(t));
        }
        // Closed sessions' entries are dropped as they come due, and none are made.
        host.handle_timeout(Duration::from_secs(3600));
        assert_eq!(host.poll_timeout(), None);
        assert!(events(&mut host).is_empty());
    }

    /// Whether `datagram` is a STUN request carrying USE-CANDIDATE (attribute 0x0025): a
    /// nomination.
    fn nominates(datagram: &[u8]) -> bool {
        if datagram.len() < 20 || datagram[0] > 3 {
            return false;
        }
        let mut at = 20;
        while at + 4 <= datagram.len() {
            let kind = u16::from_be_bytes([datagram[at], datagram[at + 1]]);
            let len = usize::from(u16::from_be_bytes([datagram[at + 2], datagram[at + 3]]));
            if kind == 0x0025 {
                return true;
            }
            at += 4 + len.div_ceil(4) * 4;
        }
        false
    }

    /// Chromium nominates an ICE-lite host's pair only with a later check than its first (on
    /// its ~60 ms ping schedule), and sends its ClientHello as soon as the first is answered.
    /// The host answers DTLS on the path the client's checks came from without waiting for
    /// the nomination (the `is` crate's ackwire patch): here a client whose nominations never
    /// arrive still opens the channel with the host.
    #[tokio::test]
    async fn the_host_answers_dtls_before_the_client_nominates_its_pair() {
        use str0m::change::SdpAnswer;
        let epoch = Instant::now();
        let mut host = host();
        let t = TransportId(1);
        host.open(Duration::ZERO, t, false);
        // The client: a full agent that offers (so controls), on its own loopback socket.
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let client_addr = socket.local_addr().unwrap();
        let mut client = Rtc::builder().build(epoch);
        client.add_local_candidate(Candidate::host(client_addr, "udp").unwrap());
        let mut change = client.sdp_api();
        change.add_channel_with_config(channel_config());
        let (offer, pending) = change.apply().unwrap();
        host.remote_signal(t, offer_signal(&offer.to_sdp_string()));
        let answer = events(&mut host)
            .into_iter()
            .find_map(|(_, e)| match e {
                WebRtcEvent::Transport(TransportEvent::LocalSignal(SignalData::Sdp { sdp })) => {
                    Some(sdp.sdp)
                }
                _ => None,
            })
            .expect("the host answers the offer at once");
        let answer = SdpAnswer::from_sdp_string(&answer).unwrap();
        client.sdp_api().accept_answer(pending, answer).unwrap();

        let (mut nominations_dropped, mut host_open, mut client_open) = (0, false, false);
        let mut buf = vec![0; 2048];
        while !(host_open && client_open) {
            let now = epoch.elapsed();
            // The client's output, its nominations dropped on the way.
            let client_deadline = loop {
                match client.poll_output().unwrap() {
                    Output::Timeout(at) => break at,
                    Output::Transmit(out) if nominates(&out.contents) => nominations_dropped += 1,
                    Output::Transmit(out) => {
                        drop(socket.try_send_to(&out.contents, out.destination))
                    }
                    Output::Event(Event::ChannelOpen(..)) => client_open = true,
                    Output::Event(_) => {}
                }
            };
            for (_, event) in events(&mut host) {
                match event {
                    WebRtcEvent::Transport(TransportEvent::ChannelOpen) => host_open = true,
                    WebRtcEvent::Transport(TransportEvent::Failed(why)) => panic!("{why}"),
                    _ => {}
                }
            }
            if host_open && client_open {
                break;
            }
            assert!(
                now < Duration::from_secs(10),
                "no channel: the host waited for a nomination"
            );
            let host_deadline = host
                .poll_timeout()
                .map_or(now + Duration::from_secs(1), |d| d);
            let wake = (epoch + host_deadline).min(client_deadline);
            tokio::select! {
                received = socket.recv_from(&mut buf) => {
                    let (n, source) = received.unwrap();
                    let input = Input::Receive(Instant::now(), Receive {
                        proto: Protocol::Udp,
                        source,
                        destination: client_addr,
                        contents: buf[..n].try_into().unwrap(),
                    });
                    client.handle_input(input).unwrap();
                }
                ready = host.readable() => {
                    ready.unwrap();
                    host.read_ready(epoch.elapsed());
                }
                () = tokio::time::sleep_until(wake.into()) => {
                    client.handle_input(Input::Timeout(Instant::now())).unwrap();
                    host.handle_timeout(epoch.elapsed());
                }
            }
        }
        assert!(
            nominations_dropped > 0,
            "the client did nominate; none reached the host"
        );
    }
}
