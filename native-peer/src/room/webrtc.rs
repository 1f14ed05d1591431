//! The WebRTC transport to one browser peer, with the `webrtc` crate: one RTCPeerConnection
//! and one data channel exactly like the browser's (label `ackwire`, pre-negotiated id 0,
//! unordered, 0 retransmits), so each datagram of the core is one unreliable message.
//!
//! A task per peer owns the connection. The room driver gives it remote signals and
//! datagrams to send; it gives the driver local signals (offer/answer, trickled candidates),
//! `Open`, received datagrams and `Closed`. No protocol logic lives here.
//!
//! Settings (see `../shared/toolchain.md`): ICE gathers only on the configured UDP address
//! (`with_udp_addrs`), mDNS is off (a `.local` name would hide the address we chose), and
//! when we answer we take the DTLS server role, which avoids a 200–400 ms stall before the
//! channel opens.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use rtc::ice::mdns::MulticastDnsMode;
use rtc::peer_connection::transport::RTCDtlsRole;
use serde_json::Value;
use tokio::sync::mpsc;
use webrtc::data_channel::{DataChannel, DataChannelEvent, RTCDataChannelInit};
use webrtc::peer_connection::{
    PeerConnection, PeerConnectionBuilder, PeerConnectionEventHandler, RTCConfigurationBuilder,
    RTCIceCandidateInit, RTCIceCandidateType, RTCIceServer, RTCPeerConnectionIceEvent,
    RTCPeerConnectionState, RTCSessionDescription, SettingEngineBuilder,
};

use super::signalling::{IceServer, Sdp, SignalData};

/// The data channel both sides create (pre-negotiated, so neither waits for an announcement).
const CHANNEL_LABEL: &str = "ackwire";
const CHANNEL_ID: u16 = 0;
/// Datagrams queued for a channel before further ones are dropped (the core sends tens per
/// second; a backlog this long means the channel is stuck, and dropping is what UDP would do).
const SEND_QUEUE: usize = 256;

/// Where WebRTC gathers candidates and what it advertises.
#[derive(Debug, Clone)]
pub struct IceOptions {
    /// Local address to bind for ICE (`IP:0` for an ephemeral port).
    pub bind: std::net::SocketAddr,
    /// Public IP to advertise instead of the bound one (1:1 NAT), if any.
    pub public_ip: Option<IpAddr>,
    /// STUN/TURN servers from the welcome.
    pub servers: Vec<IceServer>,
}

/// What a session tells the room driver.
#[derive(Debug)]
pub enum WebRtcEvent {
    /// Relay this to the peer through signalling.
    Signal(Value),
    /// The data channel is open: datagrams flow.
    Open,
    /// A datagram arrived.
    Datagram(Vec<u8>),
    /// The channel or the connection closed or failed; the session is over.
    Closed(String),
}

enum Command {
    Remote(SignalData),
    Close,
}

/// Handle on one peer's WebRTC task. Dropping it closes the connection.
#[derive(Debug)]
pub struct Session {
    commands: mpsc::UnboundedSender<Command>,
    datagrams: mpsc::Sender<Vec<u8>>,
}

impl Session {
    /// Starts a session with peer `peer`; events go to `events` tagged with `peer`. With
    /// `offer`, we send the offer (we are the newcomer); otherwise we wait for theirs.
    pub fn start(
        peer: u64,
        offer: bool,
        ice: IceOptions,
        events: mpsc::UnboundedSender<(u64, WebRtcEvent)>,
    ) -> Session {
        let (commands, command_rx) = mpsc::unbounded_channel();
        let (datagrams, datagram_rx) = mpsc::channel(SEND_QUEUE);
        tokio::spawn(async move {
            let reason = match run(peer, offer, ice, command_rx, datagram_rx, &events).await {
                Ok(reason) => reason,
                Err(e) => format!("webrtc: {e}"),
            };
            let _ = events.send((peer, WebRtcEvent::Closed(reason)));
        });
        Session {
            commands,
            datagrams,
        }
    }

    /// A signal from the peer (its offer/answer or a candidate).
    pub fn remote_signal(&self, data: SignalData) {
        let _ = self.commands.send(Command::Remote(data));
    }

    /// Queues a datagram; dropped, like on a full UDP socket, if the channel is backed up.
    pub fn send(&self, datagram: &[u8]) -> bool {
        self.datagrams.try_send(datagram.to_vec()).is_ok()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Close);
    }
}

/// Forwards the connection's callbacks to the session task.
struct Handler {
    peer: u64,
    events: mpsc::UnboundedSender<(u64, WebRtcEvent)>,
    failed: mpsc::UnboundedSender<String>,
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
        if let Ok(data) = serde_json::to_value(data) {
            let _ = self.events.send((self.peer, WebRtcEvent::Signal(data)));
        }
    }

    async fn on_connection_state_change(&self, state: RTCPeerConnectionState) {
        tracing::debug!(peer = self.peer, %state, "webrtc connection state");
        if matches!(
            state,
            RTCPeerConnectionState::Failed | RTCPeerConnectionState::Closed
        ) {
            let _ = self.failed.send(format!("connection {state}"));
        }
    }
}

fn setting_engine(ice: &IceOptions) -> webrtc::peer_connection::SettingEngine {
    let mut settings = SettingEngineBuilder::new()
        .with_multicast_dns_mode(MulticastDnsMode::Disabled)
        .with_answering_dtls_role(RTCDtlsRole::Server)
        // When we offer, the browser's checks usually arrive before its trickled candidates,
        // so its address is first learnt as peer-reflexive, a pair the controlling agent
        // would otherwise wait 1 s to accept.
        .with_prflx_acceptance_min_wait(Some(Duration::ZERO))
        .with_include_loopback_candidate(ice.bind.ip().is_loopback());
    if let Some(ip) = ice.public_ip {
        settings = settings.with_nat_1to1_ips(vec![ip.to_string()], RTCIceCandidateType::Host);
    }
    settings.build()
}

async fn run(
    peer: u64,
    offer: bool,
    ice: IceOptions,
    mut commands: mpsc::UnboundedReceiver<Command>,
    mut datagrams: mpsc::Receiver<Vec<u8>>,
    events: &mpsc::UnboundedSender<(u64, WebRtcEvent)>,
) -> Result<String, webrtc::error::Error> {
    let servers = ice
        .servers
        .iter()
        .map(|s| RTCIceServer {
            urls: s.urls.clone(),
            username: s.username.clone(),
            credential: s.credential.clone(),
        })
        .collect();
    let (failed_tx, mut failed) = mpsc::unbounded_channel();
    let pc = PeerConnectionBuilder::new()
        .with_configuration(
            RTCConfigurationBuilder::new()
                .with_ice_servers(servers)
                .build(),
        )
        .with_setting_engine(setting_engine(&ice))
        .with_handler(Arc::new(Handler {
            peer,
            events: events.clone(),
            failed: failed_tx,
        }))
        .with_udp_addrs(vec![ice.bind])
        .build()
        .await?;
    let channel = pc
        .create_data_channel(
            CHANNEL_LABEL,
            Some(RTCDataChannelInit {
                ordered: false,
                max_retransmits: Some(0),
                negotiated: Some(CHANNEL_ID),
                ..RTCDataChannelInit::default()
            }),
        )
        .await?;
    if offer {
        let description = pc.create_offer(None).await?;
        pc.set_local_description(description.clone()).await?;
        signal_description(peer, events, "offer", description.sdp);
    }
    let reader = tokio::spawn(read_channel(peer, channel.clone(), events.clone()));
    let mut remote_described = false;
    let mut early_candidates = Vec::new();
    let reason = loop {
        tokio::select! {
            command = commands.recv() => match command {
                None | Some(Command::Close) => break "closed locally".to_owned(),
                Some(Command::Remote(SignalData::Sdp { sdp })) => {
                    // A description we cannot use changes nothing: the session waits for a
                    // good one (or the peer leaving).
                    match apply_description(&pc, peer, sdp, events).await {
                        Ok(()) => {
                            remote_described = true;
                            for candidate in early_candidates.drain(..) {
                                add_candidate(&pc, peer, candidate).await;
                            }
                        }
                        Err(e) => tracing::warn!(peer, error = %e, "session description refused"),
                    }
                }
                Some(Command::Remote(SignalData::Candidate { candidate, sdp_mid, sdp_m_line_index })) => {
                    let init = RTCIceCandidateInit {
                        candidate,
                        sdp_mid,
                        sdp_mline_index: sdp_m_line_index,
                        ..RTCIceCandidateInit::default()
                    };
                    if remote_described {
                        add_candidate(&pc, peer, init).await;
                    } else {
                        // Trickled before the description arrived: hold until it is set.
                        early_candidates.push(init);
                    }
                }
            },
            datagram = datagrams.recv() => {
                let Some(datagram) = datagram else { break "closed locally".to_owned() };
                // Unordered with 0 retransmits: a failed send is a lost datagram, which the
                // core notices and counts.
                if let Err(e) = channel.try_send(BytesMut::from(&datagram[..])).await {
                    tracing::debug!(peer, error = %e, "data channel send failed");
                }
            }
            reason = failed.recv() => break reason.unwrap_or_else(|| "handler gone".into()),
        }
    };
    reader.abort();
    let _ = channel.close().await;
    let _ = pc.close().await;
    Ok(reason)
}

/// Why a remote session description was not applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DescriptionError {
    /// `type` is neither `offer` nor `answer`.
    #[error("session description of type {0:?}")]
    UnknownType(String),
    /// The WebRTC stack refused it (malformed SDP, wrong signalling state).
    #[error(transparent)]
    WebRtc(#[from] webrtc::error::Error),
}

/// Applies the peer's offer or answer; to an offer, creates and relays our answer.
async fn apply_description(
    pc: &impl PeerConnection,
    peer: u64,
    sdp: Sdp,
    events: &mpsc::UnboundedSender<(u64, WebRtcEvent)>,
) -> Result<(), DescriptionError> {
    let description = match sdp.kind.as_str() {
        "offer" => RTCSessionDescription::offer(sdp.sdp)?,
        "answer" => RTCSessionDescription::answer(sdp.sdp)?,
        other => return Err(DescriptionError::UnknownType(other.to_owned())),
    };
    let offer = description.sdp_type == webrtc::peer_connection::RTCSdpType::Offer;
    pc.set_remote_description(description).await?;
    if offer {
        let description = pc.create_answer(None).await?;
        pc.set_local_description(description.clone()).await?;
        signal_description(peer, events, "answer", description.sdp);
    }
    Ok(())
}

fn signal_description(
    peer: u64,
    events: &mpsc::UnboundedSender<(u64, WebRtcEvent)>,
    kind: &str,
    sdp: String,
) {
    let data = SignalData::Sdp {
        sdp: Sdp {
            kind: kind.into(),
            sdp,
        },
    };
    if let Ok(data) = serde_json::to_value(data) {
        let _ = events.send((peer, WebRtcEvent::Signal(data)));
    }
}

async fn add_candidate(pc: &impl PeerConnection, peer: u64, candidate: RTCIceCandidateInit) {
    if let Err(e) = pc.add_ice_candidate(candidate).await {
        // A candidate we cannot use (another address family, an mDNS name) is not fatal.
        tracing::debug!(peer, error = %e, "remote candidate refused");
    }
}

async fn read_channel(
    peer: u64,
    channel: Arc<dyn DataChannel>,
    events: mpsc::UnboundedSender<(u64, WebRtcEvent)>,
) {
    while let Some(event) = channel.poll().await {
        let event = match event {
            DataChannelEvent::OnOpen => WebRtcEvent::Open,
            DataChannelEvent::OnMessage(message) => WebRtcEvent::Datagram(message.data.to_vec()),
            DataChannelEvent::OnClose => WebRtcEvent::Closed("data channel closed".into()),
            _ => continue,
        };
        let closed = matches!(event, WebRtcEvent::Closed(_));
        if events.send((peer, event)).is_err() || closed {
            return;
        }
    }
}
