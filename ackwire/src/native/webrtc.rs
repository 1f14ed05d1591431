//! The WebRTC transport to one browser peer, with the `webrtc` crate: one RTCPeerConnection
//! and one data channel exactly like the browser's (label `ackwire`, pre-negotiated id 0,
//! unordered, 0 retransmits), so each datagram of the core is one unreliable message.
//!
//! A task per peer connection owns it. The room member's commands come in (remote signals,
//! close) with datagrams to send; the member's [`TransportEvent`]s go out (local signals,
//! remote description set, ICE state, channel open/closed, failures) with received datagrams.
//! No room logic lives here: the member decides who offers, holds early candidates and
//! reacts to failures.
//!
//! Settings: ICE gathers only on the configured UDP address
//! (`with_udp_addrs`), mDNS is off (a `.local` name would hide the address we chose), and
//! when we answer we take the DTLS server role, which sends no HelloVerifyRequest
//! (`third_party/rtc-dtls/PATCHED.md`), so that role costs no round trip; as the client (when
//! we offer) our ClientHello leaves as ICE selects its pair (the same file). ICE timing: see
//! `setting_engine`.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use rtc::ice::mdns::MulticastDnsMode;
use rtc::peer_connection::transport::RTCDtlsRole;
use tokio::sync::{Notify, mpsc};
use webrtc::data_channel::{DataChannel, DataChannelEvent, RTCDataChannelInit};
use webrtc::peer_connection::{
    PeerConnection, PeerConnectionBuilder, PeerConnectionEventHandler, RTCConfigurationBuilder,
    RTCIceCandidateInit, RTCIceCandidateType, RTCIceConnectionState, RTCIceServer,
    RTCPeerConnectionIceEvent, RTCPeerConnectionState, RTCSessionDescription, SettingEngineBuilder,
};

use ackwire_room::member::{TransportEvent, TransportId};
use ackwire_signalling::{IceServer, Sdp, SdpKind, SignalData};

use ackwire_room::webrtc::{DATA_CHANNEL, PATH_POLL, PATH_POLLS};
/// Datagrams queued for a channel before further ones are dropped (the core sends tens per
/// second; a backlog this long means the channel is stuck, and dropping is what UDP would do).
const SEND_QUEUE: usize = 256;

/// Where WebRTC gathers candidates and what it advertises.
#[derive(Debug, Clone)]
pub(crate) struct IceOptions {
    /// Local address to bind for ICE (`IP:0` for an ephemeral port).
    pub bind: std::net::SocketAddr,
    /// Public IP to advertise instead of the bound one (1:1 NAT), if any.
    pub public_ip: Option<IpAddr>,
    /// STUN/TURN servers from the welcome.
    pub servers: Vec<IceServer>,
}

/// What a session tells the room driver.
#[derive(Debug)]
pub(crate) enum WebRtcEvent {
    /// For the room member.
    Transport(TransportEvent),
    /// A datagram arrived.
    Datagram(Vec<u8>),
}

type Events = mpsc::UnboundedSender<(TransportId, WebRtcEvent)>;

enum Command {
    Remote(SignalData),
    Close,
}

/// Handle on one peer's WebRTC task. Dropping it closes the connection.
#[derive(Debug)]
pub(crate) struct Session {
    commands: mpsc::UnboundedSender<Command>,
    datagrams: mpsc::Sender<Vec<u8>>,
}

impl Session {
    /// Starts peer connection `peer`; events go to `events` tagged with it. With `offer`,
    /// we create and send the offer; otherwise we wait for theirs.
    pub(crate) fn start(
        peer: TransportId,
        offer: bool,
        ice: IceOptions,
        events: Events,
    ) -> Session {
        let (commands, command_rx) = mpsc::unbounded_channel();
        let (datagrams, datagram_rx) = mpsc::channel(SEND_QUEUE);
        tokio::spawn(async move {
            if let Err(e) = run(peer, offer, ice, command_rx, datagram_rx, &events).await {
                let event = TransportEvent::Failed(e.to_string());
                let _ = events.send((peer, WebRtcEvent::Transport(event)));
            }
        });
        Session {
            commands,
            datagrams,
        }
    }

    /// A signal from the peer (its offer/answer or a candidate).
    pub(crate) fn remote_signal(&self, data: SignalData) {
        let _ = self.commands.send(Command::Remote(data));
    }

    /// Queues a datagram; dropped, like on a full UDP socket, if the channel is backed up.
    pub(crate) fn send(&self, datagram: &[u8]) -> bool {
        self.datagrams.try_send(datagram.to_vec()).is_ok()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Close);
    }
}

/// Forwards the connection's callbacks to the room member.
struct Handler {
    peer: TransportId,
    events: Events,
    /// Whether ICE has connected (see the wake-ups in `run`), and a wake-up when that changes.
    ice_connected: AtomicBool,
    ice_changed: Notify,
}

impl Handler {
    fn tell(&self, event: TransportEvent) {
        let _ = self.events.send((self.peer, WebRtcEvent::Transport(event)));
    }
}

#[async_trait::async_trait]
impl PeerConnectionEventHandler for Handler {
    async fn on_ice_candidate(&self, event: RTCPeerConnectionIceEvent) {
        let Ok(init) = event.candidate.to_json() else {
            return;
        };
        // The browser's convention: one media section, mid "0".
        let data = SignalData::Candidate {
            candidate: init.candidate,
            sdp_mid: Some("0".into()),
            sdp_m_line_index: Some(0),
        };
        self.tell(TransportEvent::LocalSignal(data));
    }

    async fn on_ice_connection_state_change(&self, state: RTCIceConnectionState) {
        let connected = matches!(
            state,
            RTCIceConnectionState::Connected | RTCIceConnectionState::Completed
        );
        if self.ice_connected.swap(connected, Ordering::Relaxed) != connected {
            self.ice_changed.notify_one();
        }
        let state = ackwire_room::webrtc::ice_state(&state.to_string());
        self.tell(TransportEvent::Ice(state));
    }

    async fn on_connection_state_change(&self, state: RTCPeerConnectionState) {
        tracing::debug!(transport = self.peer.0, %state, "webrtc connection state");
        if state == RTCPeerConnectionState::Failed {
            self.tell(TransportEvent::Failed("the peer connection failed".into()));
        }
    }
}

/// The path of the selected candidate pair: `relay` when either end is a TURN relay, else the
/// local candidate's type (`host`, `srflx`, `prflx`), as the browser driver reports it. The
/// crate's stats report carries no candidate pairs (0.21.1); its ICE transport names the pair.
async fn selected_path(pc: &impl PeerConnection) -> Option<String> {
    let ice = pc.sctp().await?.transport().ice_transport();
    let pair = ice.get_selected_candidate_pair().await.ok()??;
    Some(ackwire_room::webrtc::path_type(
        &pair.local().typ.to_string(),
        &pair.remote().typ.to_string(),
    ))
}

/// How often a connection that may be relayed wakes the `webrtc` crate's driver (see `run`).
const RELAY_FLUSH: Duration = Duration::from_millis(2);

/// How long the ICE agent waits before it may nominate a relayed pair (see `setting_engine`).
const RELAY_ACCEPTANCE_MIN_WAIT: Duration = Duration::from_millis(100);

/// How often the ICE agent checks its pairs and decides on a nomination while it connects
/// (the `rtc` default is 200 ms), and how many checks a pair gets before it fails: the
/// default 1.4 s of attempts, at this pace (see `setting_engine`).
const ICE_CHECK_INTERVAL: Duration = Duration::from_millis(50);
const ICE_MAX_BINDING_REQUESTS: u16 = 28;

fn setting_engine(ice: &IceOptions) -> webrtc::peer_connection::SettingEngine {
    let mut settings = SettingEngineBuilder::new()
        .with_multicast_dns_mode(MulticastDnsMode::Disabled)
        .with_answering_dtls_role(RTCDtlsRole::Server)
        // When we offer (to another native, over ICE), its checks usually arrive before its
        // trickled candidates, so its address is first learnt as peer-reflexive, a pair the
        // controlling agent would otherwise wait 1 s to accept.
        .with_prflx_acceptance_min_wait(Some(Duration::ZERO))
        // When we control (offering to another native), the agent nominates the best pair
        // that succeeded only at its periodic check (`contact`), every 200 ms by default: a
        // link waited up to that long after its first successful check, and a relayed pair
        // up to that long after its acceptance wait. Checked every 50 ms, with as many
        // attempts per pair as the default 1.4 s holds.
        .with_ice_connection_attempts(Some(ICE_CHECK_INTERVAL), Some(ICE_MAX_BINDING_REQUESTS))
        // When we control, a pair through a TURN relay is nominated after the agent has run
        // this long (the `rtc` default is 2 s). That wait exists so a direct pair still being
        // checked can win: one that works answers its first checks within a round trip, and
        // when the peer is reachable only through a relay (symmetric NATs on both sides) every
        // link paid the whole wait (`docs/native-rooms.md`).
        .with_relay_acceptance_min_wait(Some(RELAY_ACCEPTANCE_MIN_WAIT))
        .with_include_loopback_candidate(ice.bind.ip().is_loopback());
    if let Some(ip) = ice.public_ip {
        settings = settings.with_nat_1to1_ips(vec![ip.to_string()], RTCIceCandidateType::Host);
    }
    settings.build()
}

async fn run(
    peer: TransportId,
    offer: bool,
    ice: IceOptions,
    mut commands: mpsc::UnboundedReceiver<Command>,
    mut datagrams: mpsc::Receiver<Vec<u8>>,
    events: &Events,
) -> Result<(), webrtc::error::Error> {
    let servers = ice_servers(&ice.servers);
    let handler = Arc::new(Handler {
        peer,
        events: events.clone(),
        ice_connected: AtomicBool::new(false),
        ice_changed: Notify::new(),
    });
    let pc = PeerConnectionBuilder::new()
        .with_configuration(
            RTCConfigurationBuilder::new()
                .with_ice_servers(servers)
                .build(),
        )
        .with_setting_engine(setting_engine(&ice))
        .with_handler(handler.clone())
        .with_udp_addrs(vec![ice.bind])
        .build()
        .await?;
    let channel = pc
        .create_data_channel(
            DATA_CHANNEL.label,
            Some(RTCDataChannelInit {
                ordered: DATA_CHANNEL.ordered,
                max_retransmits: Some(DATA_CHANNEL.max_retransmits),
                negotiated: Some(DATA_CHANNEL.id),
                ..RTCDataChannelInit::default()
            }),
        )
        .await?;
    if offer {
        let description = pc.create_offer(None).await?;
        pc.set_local_description(description.clone()).await?;
        handler.tell(description_signal(SdpKind::Offer, description.sdp));
    }
    let open = Arc::new(AtomicBool::new(false));
    let reader = tokio::spawn(read_channel(
        peer,
        channel.clone(),
        events.clone(),
        open.clone(),
    ));
    // Works around the `webrtc` crate's driver (0.21.1): each pass flushes its TURN client's
    // queue *before* it drains the connection's own packets, so a packet for a relayed pair
    // is only queued, and leaves at the driver's next wake-up: its next timer (up to 200 ms
    // apart while DTLS and SCTP shake hands) or our next send. Two natives relayed to each
    // other took 200-400 ms per DTLS flight, and read an RTT of 87 ms on a 1 ms path (each
    // datagram waited for the next). A no-op call that wakes the driver every RELAY_FLUSH
    // bounds that wait (2.7-3.3 ms RTT there; `web/e2e/nat.test.mjs`). Only connections
    // given a TURN server pay for the wake-ups once the channel is open.
    //
    // From ICE connected until the channel opens, every connection is woken so: each pass of
    // the driver also sends the connection's packets *before* it hands the connection the
    // events that make some, so the SCTP INIT that the end of the DTLS handshake queues
    // waited for the next timer too (~200 ms on loopback). That takes a few round trips, so
    // a few wake-ups a link (none while ICE checks, or fails).
    let may_relay = ice
        .servers
        .iter()
        .flat_map(|s| &s.urls)
        .any(|u| u.starts_with("turn"));
    // The selected pair's candidate type, asked until ICE has chosen one (as browsers do).
    let mut path_poll = tokio::time::interval(PATH_POLL);
    let mut path_polls = 0u32;
    let mut relay_flush = tokio::time::interval(RELAY_FLUSH);
    relay_flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = path_poll.tick(), if path_polls < PATH_POLLS => {
                path_polls += 1;
                if let Some(kind) = selected_path(&pc).await {
                    handler.tell(TransportEvent::CandidateType(kind));
                    path_polls = PATH_POLLS;
                }
            }
            _ = relay_flush.tick(), if may_relay
                || (handler.ice_connected.load(Ordering::Relaxed) && !open.load(Ordering::Relaxed)) => {
                // Our channel never uses the low-water mark (0, its default): setting it
                // again changes nothing but wakes the driver.
                let _ = channel.set_buffered_amount_low_threshold(0).await;
            }
            // Only to look at the wake-ups' condition again.
            () = handler.ice_changed.notified() => {}
            command = commands.recv() => match command {
                None | Some(Command::Close) => break,
                Some(Command::Remote(SignalData::Sdp { sdp })) => {
                    match apply_description(&pc, sdp).await {
                        Ok(answer) => {
                            handler.tell(TransportEvent::RemoteDescriptionSet);
                            if let Some(answer) = answer {
                                handler.tell(answer);
                            }
                        }
                        Err(e) => handler.tell(TransportEvent::Failed(format!("session description refused: {e}"))),
                    }
                }
                Some(Command::Remote(SignalData::Candidate { candidate, sdp_mid, sdp_m_line_index })) => {
                    let init = RTCIceCandidateInit {
                        candidate,
                        sdp_mid,
                        sdp_mline_index: sdp_m_line_index,
                        ..RTCIceCandidateInit::default()
                    };
                    if let Err(e) = pc.add_ice_candidate(init).await {
                        // A candidate we cannot use (another address family, an mDNS name) is not fatal.
                        tracing::debug!(transport = peer.0, error = %e, "remote candidate refused");
                    }
                }
                // The member applies no session token to a peer connection.
                Some(Command::Remote(
                    SignalData::WebTransport { .. } | SignalData::WebSocket { .. },
                )) => {}
            },
            datagram = datagrams.recv() => {
                let Some(datagram) = datagram else { break };
                // Unordered with 0 retransmits: a failed send is a lost datagram, which the
                // core notices and counts.
                if let Err(e) = channel.try_send(BytesMut::from(&datagram[..])).await {
                    tracing::debug!(transport = peer.0, error = %e, "data channel send failed");
                }
            }
        }
    }
    reader.abort();
    let _ = channel.close().await;
    let _ = pc.close().await;
    Ok(())
}

/// The welcome's servers for the `webrtc` crate, plus a `stun:` twin of every UDP `turn:` URL.
///
/// Browsers learn their server-reflexive address from a TURN server too; the `webrtc` crate
/// asks only `stun:` URLs. Without that candidate a native behind a NAT offers its peers only
/// its private and relayed addresses, so a peer's TURN allocation never gets a permission for
/// the native's public IP and the native's checks to that relay are dropped; a TURN server
/// answers STUN binding requests on its own port (RFC 8656 §2.2), so the twin costs nothing.
fn ice_servers(servers: &[IceServer]) -> Vec<RTCIceServer> {
    let mut out: Vec<RTCIceServer> = servers
        .iter()
        .map(|s| RTCIceServer {
            urls: s.urls.clone(),
            username: s.username.clone(),
            credential: s.credential.clone(),
        })
        .collect();
    let twins: Vec<String> = servers
        .iter()
        .flat_map(|s| &s.urls)
        .filter_map(|url| stun_twin(url))
        .filter(|twin| !servers.iter().any(|s| s.urls.contains(twin)))
        .collect();
    if !twins.is_empty() {
        out.push(RTCIceServer {
            urls: twins,
            ..RTCIceServer::default()
        });
    }
    out
}

/// `stun:HOST:PORT` for a `turn:HOST:PORT` URL over UDP (the default transport); `None` for
/// `turns:`, TCP and anything else.
fn stun_twin(url: &str) -> Option<String> {
    let rest = url.strip_prefix("turn:")?;
    let (host_port, query) = rest.split_once('?').unwrap_or((rest, ""));
    let udp = query.is_empty() || query == "transport=udp";
    udp.then(|| format!("stun:{host_port}"))
}

/// Why a remote session description was not applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum DescriptionError {
    /// The WebRTC stack refused it (malformed SDP, wrong signalling state).
    #[error(transparent)]
    WebRtc(#[from] webrtc::error::Error),
}

/// Applies the peer's offer or answer; to an offer, creates our answer and returns it to relay.
async fn apply_description(
    pc: &impl PeerConnection,
    sdp: Sdp,
) -> Result<Option<TransportEvent>, DescriptionError> {
    let description = match sdp.kind {
        SdpKind::Offer => RTCSessionDescription::offer(sdp.sdp)?,
        SdpKind::Answer => RTCSessionDescription::answer(sdp.sdp)?,
    };
    let offer = description.sdp_type == webrtc::peer_connection::RTCSdpType::Offer;
    pc.set_remote_description(description).await?;
    if !offer {
        return Ok(None);
    }
    let description = pc.create_answer(None).await?;
    pc.set_local_description(description.clone()).await?;
    Ok(Some(description_signal(SdpKind::Answer, description.sdp)))
}

fn description_signal(kind: SdpKind, sdp: String) -> TransportEvent {
    TransportEvent::LocalSignal(SignalData::Sdp {
        sdp: Sdp { kind, sdp },
    })
}

async fn read_channel(
    peer: TransportId,
    channel: Arc<dyn DataChannel>,
    events: Events,
    open: Arc<AtomicBool>,
) {
    while let Some(event) = channel.poll().await {
        let event = match event {
            DataChannelEvent::OnOpen => {
                open.store(true, Ordering::Relaxed);
                WebRtcEvent::Transport(TransportEvent::ChannelOpen)
            }
            DataChannelEvent::OnMessage(message) => WebRtcEvent::Datagram(message.data.to_vec()),
            DataChannelEvent::OnClose => WebRtcEvent::Transport(TransportEvent::ChannelClosed),
            _ => continue,
        };
        let closed = matches!(event, WebRtcEvent::Transport(TransportEvent::ChannelClosed));
        if events.send((peer, event)).is_err() || closed {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(urls: &[&str]) -> IceServer {
        IceServer {
            urls: urls.iter().map(|u| (*u).to_owned()).collect(),
            username: "1795587000:7".into(),
            credential: "secret".into(),
        }
    }

    #[test]
    fn a_udp_turn_server_is_also_asked_for_our_public_address() {
        let out = ice_servers(&[server(&[
            "turn:203.0.113.1:3478?transport=udp",
            "turn:[2001:db8::1]:3478",
            "turns:203.0.113.1:5349",
            "turn:203.0.113.1:3478?transport=tcp",
        ])]);
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0].username, "1795587000:7",
            "the TURN entry is kept whole"
        );
        assert_eq!(
            out[1].urls,
            ["stun:203.0.113.1:3478", "stun:[2001:db8::1]:3478"]
        );
        assert!(out[1].username.is_empty() && out[1].credential.is_empty());
    }

    #[test]
    fn no_twin_is_added_for_a_stun_server_already_listed_or_without_turn() {
        let listed = ice_servers(&[
            server(&["turn:203.0.113.1:3478"]),
            server(&["stun:203.0.113.1:3478"]),
        ]);
        assert_eq!(listed.len(), 2);
        assert!(ice_servers(&[server(&["stun:203.0.113.1:3478"])]).len() == 1);
        assert!(ice_servers(&[]).is_empty());
    }
}
