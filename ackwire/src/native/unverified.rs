//! What a native's WebRTC sends to an address nothing verified, on both stacks: the `webrtc`
//! crate's sessions ([`super::webrtc`], a native peer's links, patched in `third_party/rtc`,
//! `rtc-ice`, `rtc-dtls`) and the host's ICE-lite str0m ([`super::lite`], patched in
//! `third_party/is`). Each test runs on loopback with sockets it owns: a "victim" socket that
//! only counts what reaches it, a "member" socket that plays a room member's browser (it
//! knows both ICE passwords, as a member does from the signalling), and a "stranger" socket
//! that knows nothing.
//!
//! - A nomination and a ClientHello forged from the victim's address make no DTLS byte go
//!   there: DTLS leaves only for a pair whose own check the native saw answered. The same
//!   nomination and ClientHello from the member's own address, which answers the checks, do
//!   get the server's flight (the control: the forgery was good enough to be answered).
//! - A tampered `a=fingerprint` fails the link: the channel never opens.
//! - A stranger's datagrams (junk, STUN without or with a wrong MESSAGE-INTEGRITY, a
//!   ClientHello) never get more bytes back than they carried.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ackwire_room::member::{TransportEvent, TransportId};
use ackwire_signalling::{Sdp, SdpKind, SignalData};
use rtc::ice::attributes::control::AttrControlling;
use rtc::ice::attributes::priority::PriorityAttr;
use rtc::ice::attributes::use_candidate::UseCandidateAttr;
use rtc::stun::attributes::ATTR_USERNAME;
use rtc::stun::fingerprint::FINGERPRINT;
use rtc::stun::integrity::MessageIntegrity;
use rtc::stun::message::{BINDING_REQUEST, BINDING_SUCCESS, Message, Setter, TransactionId};
use rtc::stun::textattrs::Username;
use rtc::stun::xoraddr::XorMappedAddress;
use str0m::change::{SdpAnswer, SdpPendingOffer};
use str0m::channel::{ChannelConfig, Reliability};
use str0m::net::{Protocol, Receive};
use str0m::{Candidate, Event, Input, Output, Rtc};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

use super::lite::LiteHost;
use super::webrtc::{IceOptions, Session, WebRtcEvent};

/// Whether `datagram` is a DTLS record (RFC 7983: first byte 20 to 63).
fn is_dtls(datagram: &[u8]) -> bool {
    matches!(datagram.first(), Some(20..=63))
}

/// The crypto provider of the test's STUN messages and ClientHello (`rtc`'s default).
fn provider() -> &'static Arc<dyn rtc::crypto::RTCCryptoProvider> {
    static PROVIDER: std::sync::OnceLock<Arc<dyn rtc::crypto::RTCCryptoProvider>> =
        std::sync::OnceLock::new();
    PROVIDER.get_or_init(|| rtc::crypto::default_provider().unwrap())
}

fn integrity(pwd: &str) -> Box<dyn Setter> {
    Box::new(MessageIntegrity::new_short_term_integrity_with_provider(
        pwd.into(),
        provider().crypto(),
    ))
}

fn stun(attrs: Vec<Box<dyn Setter>>) -> Vec<u8> {
    let mut msg = Message::new();
    msg.build(&attrs).unwrap();
    msg.raw
}

/// The `a=ice-ufrag` and `a=ice-pwd` of `sdp`.
fn ice_credentials(sdp: &str) -> (String, String) {
    let find = |key: &str| {
        sdp.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in {sdp}"))
            .to_owned()
    };
    (find("a=ice-ufrag:"), find("a=ice-pwd:"))
}

/// `sdp` with the last hex digit of its `a=fingerprint` changed.
fn tamper_fingerprint(sdp: &str) -> String {
    let mut lines: Vec<String> = sdp.split("\r\n").map(str::to_owned).collect();
    let line = lines
        .iter_mut()
        .find(|l| l.starts_with("a=fingerprint:"))
        .expect("an a=fingerprint");
    let last = line.pop().unwrap();
    line.push(if last == '0' { '1' } else { '0' });
    lines.join("\r\n")
}

/// A Binding request nominating the pair it comes on, as a controlling browser sends it, for
/// the native whose credentials are `native`, from the member whose ufrag is `member_ufrag`.
fn nomination(native: &(String, String), member_ufrag: &str) -> Vec<u8> {
    stun(vec![
        Box::new(BINDING_REQUEST),
        Box::new(TransactionId::new()),
        Box::new(Username::new(
            ATTR_USERNAME,
            format!("{}:{member_ufrag}", native.0),
        )),
        Box::new(UseCandidateAttr::new()),
        Box::new(AttrControlling(7)),
        // A peer-reflexive candidate's highest priority: what a forger would claim.
        Box::new(PriorityAttr(2_130_706_431)),
        integrity(&native.1),
        Box::new(FINGERPRINT),
    ])
}

/// A DTLS 1.2 ClientHello (with use_srtp, as browsers send it), from the `rtc-dtls` client.
fn client_hello() -> Vec<u8> {
    use rtc::dtls::config::ConfigBuilder;
    use rtc::dtls::crypto::Certificate;
    use rtc::dtls::endpoint::Endpoint;
    use rtc::dtls::extension::extension_use_srtp::SrtpProtectionProfile;
    let provider = provider();
    let certificate =
        Certificate::generate_self_signed(vec!["member".into()], provider.crypto()).unwrap();
    let config = ConfigBuilder::default()
        .with_crypto_provider(provider.clone())
        .with_certificates(vec![certificate])
        .with_insecure_skip_verify(true)
        .with_srtp_protection_profiles(vec![SrtpProtectionProfile::Srtp_Aead_Aes_128_Gcm])
        .build(true, None)
        .unwrap();
    let local: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let mut endpoint = Endpoint::new(local, rtc::shared::TransportProtocol::UDP, None);
    endpoint
        .connect(Instant::now(), local, Arc::new(config), None)
        .unwrap();
    let hello = endpoint
        .poll_transmit()
        .expect("a ClientHello")
        .message
        .to_vec();
    assert!(is_dtls(&hello) && hello[13] == 1, "a ClientHello");
    hello
}

/// What reached a test socket.
#[derive(Default)]
struct Received {
    bytes: AtomicU64,
    dtls_bytes: AtomicU64,
    stun_bytes: AtomicU64,
}

impl Received {
    fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
    fn dtls_bytes(&self) -> u64 {
        self.dtls_bytes.load(Ordering::Relaxed)
    }
    fn stun_bytes(&self) -> u64 {
        self.stun_bytes.load(Ordering::Relaxed)
    }
}

/// A socket the test sends from, counting what reaches it; with `answer_pwd`, it answers
/// every Binding request (a browser answering the native's checks, with its own password).
struct Peer {
    socket: Arc<UdpSocket>,
    received: Arc<Received>,
}

impl Peer {
    async fn bind(answer_pwd: Option<String>) -> Peer {
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let received = Arc::new(Received::default());
        let (s, r) = (socket.clone(), received.clone());
        tokio::spawn(async move {
            let mut buf = vec![0; 4096];
            while let Ok((n, source)) = s.recv_from(&mut buf).await {
                let datagram = &buf[..n];
                r.bytes.fetch_add(n as u64, Ordering::Relaxed);
                if is_dtls(datagram) {
                    r.dtls_bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
                if matches!(datagram.first(), Some(0..=3)) {
                    r.stun_bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
                let Some(pwd) = &answer_pwd else { continue };
                let mut request = Message::new();
                request.raw = datagram.to_vec();
                if request.decode().is_err() || request.typ != BINDING_REQUEST {
                    continue;
                }
                let answer = stun(vec![
                    Box::new(request),
                    Box::new(BINDING_SUCCESS),
                    Box::new(XorMappedAddress {
                        ip: source.ip(),
                        port: source.port(),
                    }),
                    integrity(pwd),
                    Box::new(FINGERPRINT),
                ]);
                let _ = s.send_to(&answer, source).await;
            }
        });
        Peer { socket, received }
    }

    async fn send(&self, to: SocketAddr, datagram: &[u8]) {
        self.socket.send_to(datagram, to).await.unwrap();
    }
}

/// A browser-like offer (a full ICE agent, so it controls) from str0m, with a host candidate
/// at `addr`.
fn client_offer(addr: SocketAddr) -> (Rtc, SdpPendingOffer, String) {
    let mut client = Rtc::builder().build(Instant::now());
    client.add_local_candidate(Candidate::host(addr, "udp").unwrap());
    let mut change = client.sdp_api();
    change.add_channel_with_config(ChannelConfig {
        label: ackwire_room::webrtc::DATA_CHANNEL.label.into(),
        ordered: false,
        reliability: Reliability::MaxRetransmits { retransmits: 0 },
        negotiated: Some(ackwire_room::webrtc::DATA_CHANNEL.id),
        protocol: String::new(),
    });
    let (offer, pending) = change.apply().unwrap();
    (client, pending, offer.to_sdp_string())
}

fn offer(sdp: &str) -> SignalData {
    SignalData::Sdp {
        sdp: Sdp {
            kind: SdpKind::Offer,
            sdp: sdp.into(),
        },
    }
}

/// The native under test: a `webrtc` crate session, or a host's ICE-lite WebRTC (one of each
/// per test: their sizes do not matter).
#[allow(clippy::large_enum_variant)]
enum Native {
    Session {
        session: Session,
        events: mpsc::UnboundedReceiver<(TransportId, WebRtcEvent)>,
    },
    Lite {
        host: LiteHost,
        epoch: Instant,
    },
}

const T: TransportId = TransportId(1);

impl Native {
    fn session() -> Native {
        let (tx, events) = mpsc::unbounded_channel();
        let ice = IceOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            public_ip: None,
            servers: vec![],
        };
        Native::Session {
            session: Session::start(T, false, ice, tx),
            events,
        }
    }

    fn lite() -> Native {
        let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let epoch = Instant::now();
        let mut host = LiteHost::bind(&[(loopback, loopback.ip())], epoch).unwrap();
        host.open(Duration::ZERO, T, false);
        Native::Lite { host, epoch }
    }

    fn remote_signal(&mut self, data: SignalData) {
        match self {
            Native::Session { session, .. } => session.remote_signal(data),
            Native::Lite { host, .. } => host.remote_signal(T, data),
        }
    }

    /// Runs the native for `time`, returning what it told the member.
    async fn run(&mut self, time: Duration) -> Vec<TransportEvent> {
        let until = tokio::time::Instant::now() + time;
        let mut told = vec![];
        match self {
            Native::Session { events, .. } => loop {
                tokio::select! {
                    event = events.recv() => match event {
                        Some((_, WebRtcEvent::Transport(e))) => told.push(e),
                        Some(_) => {}
                        None => break,
                    },
                    () = tokio::time::sleep_until(until) => break,
                }
            },
            Native::Lite { host, epoch } => loop {
                while let Some((_, event)) = host.pop() {
                    if let WebRtcEvent::Transport(e) = event {
                        told.push(e);
                    }
                }
                let deadline = host
                    .poll_timeout()
                    .map_or(until, |d| (*epoch + d).into())
                    .min(until);
                tokio::select! {
                    ready = host.readable() => {
                        ready.unwrap();
                        host.read_ready(epoch.elapsed());
                    }
                    () = tokio::time::sleep_until(deadline) => {
                        if deadline >= until {
                            break;
                        }
                        host.handle_timeout(epoch.elapsed());
                    }
                }
            },
        }
        told
    }

    /// Takes the native's answer to `offer` and its address, running it until it has both.
    async fn answer(&mut self, offer_sdp: &str) -> (String, SocketAddr) {
        self.remote_signal(offer(offer_sdp));
        let (mut answer, mut addr) = (None, None);
        for _ in 0..100 {
            for event in self.run(Duration::from_millis(20)).await {
                match event {
                    TransportEvent::LocalSignal(SignalData::Sdp { sdp }) => {
                        addr = addr.or_else(|| candidate_addr(&sdp.sdp));
                        answer = Some(sdp.sdp);
                    }
                    TransportEvent::LocalSignal(SignalData::Candidate { candidate, .. }) => {
                        addr = addr.or_else(|| candidate_addr(&candidate));
                    }
                    _ => {}
                }
            }
            if let (Some(answer), Some(addr)) = (&answer, addr) {
                return (answer.clone(), addr);
            }
        }
        panic!("no answer and candidate from the native");
    }
}

/// The address of the first host candidate in `text` (an SDP or one candidate line).
fn candidate_addr(text: &str) -> Option<SocketAddr> {
    text.lines().find_map(|l| {
        let l = l.trim().trim_start_matches("a=");
        let fields: Vec<&str> = l.strip_prefix("candidate:")?.split_whitespace().collect();
        (fields.get(1..3)? == ["1", "udp"] || fields.get(2) == Some(&"udp"))
            .then(|| format!("{}:{}", fields[4], fields[5]).parse().ok())
            .flatten()
    })
}

/// A member forges its nomination and ClientHello from the victim's address, three times over
/// a second: no DTLS byte reaches the victim. The same from the member's own address, which
/// answers the native's checks, gets the server's flight.
async fn forged_source_gets_no_dtls(mut native: Native) {
    let victim = Peer::bind(None).await;
    let (_, _, offer_sdp) = client_offer("127.0.0.1:9".parse().unwrap());
    let member = ice_credentials(&offer_sdp);
    let member_peer = Peer::bind(Some(member.1.clone())).await;
    let (answer, native_addr) = native.answer(&offer_sdp).await;
    let native_creds = ice_credentials(&answer);
    let hello = client_hello();

    let mut forged = 0;
    for _ in 0..3 {
        let request = nomination(&native_creds, &member.0);
        victim.send(native_addr, &request).await;
        victim.send(native_addr, &hello).await;
        forged += request.len() + hello.len();
        native.run(Duration::from_millis(300)).await;
    }
    native.run(Duration::from_millis(700)).await;
    assert!(
        victim.received.bytes() > 0,
        "the forged nomination was answered (the forgery is good)"
    );
    assert_eq!(
        victim.received.dtls_bytes(),
        0,
        "DTLS reached an address that answered no check"
    );
    // What did reach it is STUN: answers to the forged requests, and the native's checks of
    // the pair they made (RFC 8445 checks a peer-reflexive candidate a request teaches it),
    // a few per request (`third_party/rtc-ice/PATCHED.md`, `third_party/is/PATCHED.md`), not
    // one every check interval: no more bytes than the forger sent.
    assert_eq!(
        victim.received.bytes(),
        victim.received.stun_bytes(),
        "only STUN reached the victim"
    );
    eprintln!(
        "victim: {} bytes of STUN back for {forged} forged",
        victim.received.bytes()
    );
    assert!(
        victim.received.bytes() <= forged as u64,
        "{} bytes reflected at the victim for {forged} forged",
        victim.received.bytes()
    );

    // The control: the same messages from the member's own address, which answers.
    member_peer
        .send(native_addr, &nomination(&native_creds, &member.0))
        .await;
    member_peer.send(native_addr, &hello).await;
    native.run(Duration::from_millis(1500)).await;
    assert!(
        member_peer.received.dtls_bytes() > 0,
        "no server flight for the member's own, answered, address"
    );
    assert_eq!(victim.received.dtls_bytes(), 0);
}

#[tokio::test]
async fn a_forged_nomination_and_client_hello_send_no_dtls_to_the_forged_address_session() {
    forged_source_gets_no_dtls(Native::session()).await;
}

#[tokio::test]
async fn a_forged_nomination_and_client_hello_send_no_dtls_to_the_forged_address_lite() {
    forged_source_gets_no_dtls(Native::lite()).await;
}

/// A str0m client links with the native; with `tamper`, the native is given the client's
/// offer with its `a=fingerprint` changed. Whether the native's channel opened, and what it
/// said.
async fn link(mut native: Native, tamper: bool) -> (bool, Vec<TransportEvent>) {
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let client_addr = socket.local_addr().unwrap();
    let (mut client, pending, offer_sdp) = client_offer(client_addr);
    let given = if tamper {
        tamper_fingerprint(&offer_sdp)
    } else {
        offer_sdp.clone()
    };
    assert_eq!(given != offer_sdp, tamper);
    let (answer, native_addr) = native.answer(&given).await;
    client
        .sdp_api()
        .accept_answer(pending, SdpAnswer::from_sdp_string(&answer).unwrap())
        .unwrap();
    client.add_remote_candidate(Candidate::host(native_addr, "udp").unwrap());

    let start = Instant::now();
    let mut told = vec![];
    let mut buf = vec![0; 4096];
    while start.elapsed() < Duration::from_secs(6) {
        let deadline = loop {
            match client.poll_output().unwrap() {
                Output::Timeout(at) => break at,
                Output::Transmit(out) => drop(socket.try_send_to(&out.contents, out.destination)),
                Output::Event(Event::ChannelOpen(..)) | Output::Event(_) => {}
            }
        };
        // The native runs whole steps (a cancelled `run` would lose what it was told); the
        // client takes what arrived in between.
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .clamp(Duration::from_millis(1), Duration::from_millis(5));
        told.extend(native.run(wait).await);
        while let Ok((n, source)) = socket.try_recv_from(&mut buf) {
            let input = Input::Receive(
                Instant::now(),
                Receive {
                    proto: Protocol::Udp,
                    source,
                    destination: client_addr,
                    contents: buf[..n].try_into().unwrap(),
                },
            );
            let _ = client.handle_input(input);
        }
        let _ = client.handle_input(Input::Timeout(Instant::now()));
        if told
            .iter()
            .any(|e| matches!(e, TransportEvent::ChannelOpen))
        {
            return (true, told);
        }
    }
    (false, told)
}

async fn a_tampered_fingerprint_fails_the_link(native: fn() -> Native) {
    let (open, told) = link(native(), false).await;
    assert!(open, "the untampered link opens (the control): {told:?}");
    let (open, told) = link(native(), true).await;
    assert!(!open, "a tampered fingerprint opened the channel: {told:?}");
}

#[tokio::test]
async fn a_tampered_fingerprint_fails_the_link_session() {
    a_tampered_fingerprint_fails_the_link(Native::session).await;
}

#[tokio::test]
async fn a_tampered_fingerprint_fails_the_link_lite() {
    a_tampered_fingerprint_fails_the_link(Native::lite).await;
}

/// A stranger (no password) sends junk, Binding requests without MESSAGE-INTEGRITY, with a
/// wrong one, and a ClientHello at the native's port, before and after a member's link is up:
/// it never gets more bytes back than it sent.
async fn a_stranger_gets_back_no_more_than_it_sent(mut native: Native) {
    let (_, _, offer_sdp) = client_offer("127.0.0.1:9".parse().unwrap());
    let member = ice_credentials(&offer_sdp);
    let (answer, native_addr) = native.answer(&offer_sdp).await;
    let native_creds = ice_credentials(&answer);
    let stranger = Peer::bind(None).await;
    let username = format!("{}:{}", native_creds.0, member.0);
    let no_integrity = stun(vec![
        Box::new(BINDING_REQUEST),
        Box::new(TransactionId::new()),
        Box::new(Username::new(ATTR_USERNAME, username.clone())),
        Box::new(UseCandidateAttr::new()),
        Box::new(AttrControlling(7)),
        Box::new(PriorityAttr(2_130_706_431)),
        Box::new(FINGERPRINT),
    ]);
    let wrong_integrity = stun(vec![
        Box::new(BINDING_REQUEST),
        Box::new(TransactionId::new()),
        Box::new(Username::new(ATTR_USERNAME, username)),
        Box::new(UseCandidateAttr::new()),
        Box::new(AttrControlling(7)),
        Box::new(PriorityAttr(2_130_706_431)),
        integrity("not-the-password-at-all-x"),
        Box::new(FINGERPRINT),
    ]);
    let bare = stun(vec![
        Box::new(BINDING_REQUEST),
        Box::new(TransactionId::new()),
    ]);
    let junk: Vec<Vec<u8>> = (0..8u8)
        .map(|i| {
            (0..(16 + 150 * usize::from(i)))
                .map(|j| (j as u8).wrapping_mul(31).wrapping_add(i))
                .collect()
        })
        .collect();
    let mut sent = 0;
    for datagram in [&no_integrity, &wrong_integrity, &bare, &client_hello()]
        .into_iter()
        .chain(junk.iter())
    {
        stranger.send(native_addr, datagram).await;
        sent += datagram.len();
        native.run(Duration::from_millis(50)).await;
    }
    native.run(Duration::from_millis(1000)).await;
    assert!(
        stranger.received.bytes() <= sent as u64,
        "{} bytes back for {sent}",
        stranger.received.bytes()
    );
    assert_eq!(stranger.received.dtls_bytes(), 0);
}

#[tokio::test]
async fn a_stranger_gets_back_no_more_than_it_sent_session() {
    a_stranger_gets_back_no_more_than_it_sent(Native::session()).await;
}

#[tokio::test]
async fn a_stranger_gets_back_no_more_than_it_sent_lite() {
    a_stranger_gets_back_no_more_than_it_sent(Native::lite()).await;
}
