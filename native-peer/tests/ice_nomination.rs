//! The `webrtc` crate's ICE agent (`rtc-ice`, patched in `third_party/rtc-ice`) on the
//! controlled side of a browser's link, driven directly. A browser offers to a native, so its
//! agent controls, and Chromium nominates a pair with its very first check, before the
//! native's own check of that pair has succeeded. The native must answer that check at once
//! (RFC 8445, 7.3.1.4), or the browser waits ~50 ms for its retry (the published crate sent no
//! answer). It selects the pair only when its own check of it comes back (7.3.1.5): the
//! nominating request proves only that its sender knows the password, which any member of a
//! room that received the native's answer does, so a pair selected on it alone would send
//! DTLS to an address nothing verified. The browser's ClientHello, which arrives about when
//! that check's answer does, is held by the patched `rtc` crate until then
//! (`third_party/rtc/PATCHED.md`).

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bytes::BytesMut;
use rtc_ice::attributes::control::AttrControlling;
use rtc_ice::attributes::priority::PriorityAttr;
use rtc_ice::attributes::use_candidate::UseCandidateAttr;
use rtc_ice::candidate::CandidateConfig;
use rtc_ice::candidate::candidate_host::CandidateHostConfig;
use rtc_ice::crypto::RTCCryptoProvider;
use rtc_ice::{Agent, AgentConfig};
use rtc_shared::{TaggedBytesMut, TransportContext, TransportProtocol};
use rtc_stun::attributes::ATTR_USERNAME;
use rtc_stun::fingerprint::FINGERPRINT;
use rtc_stun::integrity::MessageIntegrity;
use rtc_stun::message::{
    BINDING_REQUEST, BINDING_SUCCESS, Message, MessageType, Setter, TransactionId,
};
use rtc_stun::textattrs::Username;
use rtc_stun::xoraddr::XorMappedAddress;
use sansio::Protocol;

const NATIVE: &str = "127.0.0.1:40000";
const BROWSER: &str = "127.0.0.1:50000";
const BROWSER_UFRAG: &str = "brws";
const BROWSER_PWD: &str = "browser-password-24chars";

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A native's agent, answering (controlled), with one host candidate at `NATIVE`.
fn controlled_agent(now: Instant) -> Agent {
    let mut agent = Agent::new(now, Arc::new(AgentConfig::default()), provider().clone()).unwrap();
    let host = CandidateHostConfig {
        base_config: CandidateConfig {
            network: "udp".into(),
            address: "127.0.0.1".into(),
            port: 40000,
            component: 1,
            ..CandidateConfig::default()
        },
        ..CandidateHostConfig::default()
    }
    .new_candidate_host()
    .unwrap();
    agent.add_local_candidate(host).unwrap();
    agent
        .start_connectivity_checks(now, false, BROWSER_UFRAG.into(), BROWSER_PWD.into())
        .unwrap();
    agent
}

fn stun(attrs: Vec<Box<dyn Setter>>) -> Message {
    let mut msg = Message::new();
    msg.build(&attrs).unwrap();
    msg
}

/// The crypto provider the agent and the test's messages use (ring, `rtc`'s default).
fn provider() -> &'static Arc<dyn RTCCryptoProvider> {
    static PROVIDER: OnceLock<Arc<dyn RTCCryptoProvider>> = OnceLock::new();
    PROVIDER.get_or_init(|| rtc_ice::crypto::default_provider().unwrap())
}

fn integrity(pwd: &str) -> Box<dyn Setter> {
    Box::new(MessageIntegrity::new_short_term_integrity_with_provider(
        pwd.into(),
        provider().crypto(),
    ))
}

/// Hands `msg` to the agent as a datagram from the browser.
fn from_browser(agent: &mut Agent, now: Instant, msg: &Message) {
    agent
        .handle_read(TaggedBytesMut {
            now,
            transport: TransportContext {
                local_addr: addr(NATIVE),
                peer_addr: addr(BROWSER),
                transport_protocol: TransportProtocol::UDP,
                ecn: None,
            },
            message: BytesMut::from(&msg.raw[..]),
        })
        .unwrap();
}

/// The STUN messages the agent sends to the browser, decoded.
fn to_browser(agent: &mut Agent) -> Vec<Message> {
    std::iter::from_fn(|| agent.poll_write())
        .filter(|out| out.transport.peer_addr == addr(BROWSER))
        .map(|out| {
            let mut msg = Message::new();
            msg.raw = out.message.to_vec();
            msg.decode().unwrap();
            msg
        })
        .collect()
}

fn of_type(msgs: &[Message], typ: MessageType) -> Vec<&Message> {
    msgs.iter().filter(|m| m.typ == typ).collect()
}

/// A browser's check of the native's pair, nominating it (USE-CANDIDATE), with `priority`,
/// authenticated with the native's credentials.
fn nomination(local_ufrag: &str, local_pwd: &str, priority: u32) -> Message {
    stun(vec![
        Box::new(BINDING_REQUEST),
        Box::new(TransactionId::new()),
        Box::new(Username::new(
            ATTR_USERNAME,
            format!("{local_ufrag}:{BROWSER_UFRAG}"),
        )),
        Box::new(UseCandidateAttr::new()),
        Box::new(AttrControlling(7)),
        Box::new(PriorityAttr(priority)),
        integrity(local_pwd),
        Box::new(FINGERPRINT),
    ])
}

#[test]
fn a_first_check_that_nominates_is_answered_at_once_and_its_pair_selected_when_our_check_succeeds()
{
    let now = Instant::now();
    let mut native = controlled_agent(now);
    let local_ufrag = native.get_local_credentials().ufrag.clone();
    let local_pwd = native.get_local_credentials().pwd.clone();

    // Chromium's first check of the pair, nominating it: the native has never checked it.
    let nomination = nomination(&local_ufrag, &local_pwd, 1_862_270_975);
    from_browser(&mut native, now, &nomination);
    let sent = to_browser(&mut native);
    let answers = of_type(&sent, BINDING_SUCCESS);
    assert_eq!(answers.len(), 1, "the nominating check is answered at once");
    assert_eq!(answers[0].transaction_id, nomination.transaction_id);
    let selected = |native: &Agent| {
        native
            .get_selected_candidate_pair()
            .map(|(local, remote)| (local.addr(), remote.addr()))
    };
    assert_eq!(
        selected(&native),
        None,
        "nothing selected before the native's own check of the pair came back"
    );

    // The native checks the pair itself (a triggered check); its answer selects the pair.
    let checks = of_type(&sent, BINDING_REQUEST);
    assert_eq!(checks.len(), 1, "one triggered check back");
    let answer = stun(vec![
        Box::new(checks[0].clone()),
        Box::new(BINDING_SUCCESS),
        Box::new(XorMappedAddress {
            ip: addr(NATIVE).ip(),
            port: addr(NATIVE).port(),
        }),
        integrity(BROWSER_PWD),
        Box::new(FINGERPRINT),
    ]);
    from_browser(&mut native, now, &answer);
    assert_eq!(selected(&native), Some((addr(NATIVE), addr(BROWSER))));
}

/// A nomination from an address that never answers (a member of the room forging the
/// browser's check from a victim's address: it knows the password from the native's answer)
/// is answered and checked, but its pair is never selected, however long the native waits and
/// however often the forgery repeats.
#[test]
fn a_nomination_whose_pair_never_answers_our_check_is_never_selected() {
    let start = Instant::now();
    let mut native = controlled_agent(start);
    let local_ufrag = native.get_local_credentials().ufrag.clone();
    let local_pwd = native.get_local_credentials().pwd.clone();
    let mut checks = 0;
    for ms in (0..10_000).step_by(50) {
        let now = start + std::time::Duration::from_millis(ms);
        if ms % 500 == 0 {
            let nomination = nomination(&local_ufrag, &local_pwd, 2_130_706_431);
            from_browser(&mut native, now, &nomination);
        }
        native.handle_timeout(now).unwrap();
        checks += of_type(&to_browser(&mut native), BINDING_REQUEST).len();
        assert!(
            native.get_selected_candidate_pair().is_none(),
            "a pair was selected at {ms} ms without an answered check"
        );
    }
    assert!(checks > 0, "the native did check the forged pair");
}
