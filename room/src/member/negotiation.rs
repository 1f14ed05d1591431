//! WebRTC negotiation: one peer connection per attempt, offers and answers as the roles
//! say, trickled candidates held until the remote description is set, and the transport's
//! events (channel open and closed, ICE, the path, failures).

use std::time::Duration;

use super::links::{Attempt, Rtc, Transport};
use super::{Command, EARLY_MAX, Failure, IceState, Member, ServerId, TransportEvent, TransportId};
use crate::core_link::Handshake;
use crate::signalling::{ClientFrame, SdpKind, SignalData};

/// Candidates held for a peer connection whose remote description is not set yet.
const PENDING_CANDIDATES_MAX: usize = 64;

impl Member {
    /// A new WebRTC attempt on link `i` with `peer`: a peer connection of its own, offering or
    /// answering.
    pub(super) fn open_rtc(&mut self, now: Duration, i: usize, peer: ServerId, offerer: bool) {
        let transport = TransportId(self.next_transport);
        self.next_transport += 1;
        let rtc = Rtc {
            id: transport,
            offerer,
            offer_seen: offerer,
            described: false,
            pending: Vec::new(),
            ice: None,
            path: None,
        };
        // The answering side waits for an offer as long as it takes; its clock starts with
        // the offer. A client with its host's WebSocket to fall back to waits less.
        let timeout = if self.has_websocket(i) {
            self.config.attempt_timeout.min(self.config.websocket_after)
        } else {
            self.config.attempt_timeout
        };
        let deadline = offerer.then_some(now + timeout);
        self.links[i].attempt = Attempt::Negotiating { rtc, deadline };
        self.command(Command::OpenPeerConnection {
            transport,
            peer,
            offer: offerer,
            ice_servers: self.session.ice_servers().to_vec(),
        });
    }

    /// A fresh answering peer connection for link `i` with `peer`, replacing whatever it had.
    fn start_answering(&mut self, now: Duration, i: usize, peer: ServerId) {
        self.close_transport(now, i);
        self.links[i].started = now;
        self.links[i].took = None;
        self.links[i].first_ack = None;
        self.open_rtc(now, i, peer, false);
        self.link_event(now, i);
    }

    /// A signal relayed from the peer with server id `from`.
    pub(super) fn on_signal(&mut self, now: Duration, from: ServerId, data: SignalData) {
        let Some(i) = self.links.iter().position(|l| l.server_id == Some(from)) else {
            // Its join may still be on the way: keep it briefly.
            if self.early_signals.len() == EARLY_MAX {
                self.early_signals.pop_front();
            }
            self.early_signals.push_back((now, from, data));
            return;
        };
        match data {
            SignalData::WebTransport {
                webtransport: token,
            } => return self.on_session_token(now, i, token, false),
            SignalData::WebSocket { websocket: token } => {
                return self.on_session_token(now, i, token, true);
            }
            _ => {}
        }
        let offer = matches!(&data, SignalData::Sdp { sdp } if sdp.kind == SdpKind::Offer);
        if self.links[i].direct_udp().is_some() {
            if !offer {
                return;
            }
            // The other native found no direct UDP path and fell back to WebRTC: follow.
            self.links[i].via_ice = true;
            self.start_answering(now, i, from);
        }
        match data {
            SignalData::Sdp { .. } if offer => {
                let fresh = self.links[i]
                    .attempt
                    .rtc()
                    .is_some_and(|r| !r.offerer && !r.offer_seen);
                if !fresh {
                    // A new offer for a link that had one: the peer started over.
                    let was_up = matches!(
                        self.links[i].attempt,
                        Attempt::Open { .. } | Attempt::Connected { .. }
                    );
                    self.start_answering(now, i, from);
                    if was_up {
                        self.links[i].reason = Some(Failure::Restarted);
                    }
                }
                let deadline = now + self.config.attempt_timeout;
                let link = &mut self.links[i];
                link.started = now;
                if let Attempt::Negotiating {
                    rtc,
                    deadline: when,
                } = &mut link.attempt
                {
                    rtc.offer_seen = true;
                    *when = Some(deadline);
                    let transport = rtc.id;
                    self.command(Command::ApplyRemoteSignal { transport, data });
                }
            }
            SignalData::Sdp { .. } => {
                if let Some(rtc) = self.links[i].attempt.rtc().filter(|r| r.offerer) {
                    let transport = rtc.id;
                    self.command(Command::ApplyRemoteSignal { transport, data });
                }
            }
            SignalData::WebTransport { .. } | SignalData::WebSocket { .. } => {}
            SignalData::Candidate { .. } => {
                let Some(rtc) = self.links[i].attempt.rtc_mut() else {
                    return;
                };
                if rtc.described {
                    let transport = rtc.id;
                    self.command(Command::ApplyRemoteSignal { transport, data });
                } else if rtc.pending.len() < PENDING_CANDIDATES_MAX {
                    rtc.pending.push(data);
                }
            }
        }
    }

    /// Something happened on a WebRTC transport. Events of transports the member closed are
    /// ignored.
    pub fn handle_transport(
        &mut self,
        now: Duration,
        transport: TransportId,
        event: TransportEvent,
    ) {
        let Some(i) = self
            .links
            .iter()
            .position(|l| l.attempt.transport_id() == Some(transport))
        else {
            return;
        };
        match event {
            TransportEvent::LocalSignal(data) => {
                if let Some(to) = self.links[i].server_id {
                    self.send_frame(ClientFrame::Signal {
                        to,
                        from: None,
                        data,
                    });
                }
            }
            TransportEvent::RemoteDescriptionSet => {
                if let Some(rtc) = self.links[i].attempt.rtc_mut() {
                    rtc.described = true;
                    for data in std::mem::take(&mut rtc.pending) {
                        self.command(Command::ApplyRemoteSignal { transport, data });
                    }
                }
            }
            TransportEvent::ChannelOpen => self.channel_open(now, i),
            TransportEvent::ChannelClosed => self.lose(now, i, Failure::ChannelClosed),
            TransportEvent::Ice(state) => {
                if let Some(rtc) = self.links[i].attempt.rtc_mut() {
                    rtc.ice = Some(state);
                }
                if state == IceState::Failed {
                    self.lose(now, i, Failure::IceFailed);
                }
            }
            TransportEvent::CandidateType(path) => {
                if let Some(rtc) = self.links[i].attempt.rtc_mut() {
                    rtc.path = Some(path);
                }
            }
            TransportEvent::Failed(reason) => self.lose(now, i, Failure::Transport(reason)),
        }
        self.drive(now);
    }

    /// The data channel of link `i`'s attempt opened (or its WebTransport session is ready):
    /// the core handshake starts over it, the offerer connecting and the answerer accepting;
    /// on a session, the host connecting and the client accepting (`Wt::hosting`).
    fn channel_open(&mut self, now: Duration, i: usize) {
        let Some(peer) = self.links[i].server_id else {
            return;
        };
        let accept = match &self.links[i].attempt {
            Attempt::Negotiating { rtc, .. } => !rtc.offerer,
            Attempt::Dialing { wt, .. } => !wt.hosting,
            _ => return,
        };
        match self.new_core(now, accept, Handshake::Channel, peer, i, None) {
            Ok(mut core) => {
                let link = &mut self.links[i];
                let (transport, deadline) =
                    match std::mem::replace(&mut link.attempt, Attempt::Idle) {
                        Attempt::Negotiating { rtc, deadline } => {
                            (Transport::WebRtc(rtc), deadline)
                        }
                        Attempt::Dialing { wt, deadline } => {
                            (Transport::Session(wt), Some(deadline))
                        }
                        _ => return,
                    };
                // A connector takes its connection now: the hello and the copies the peer has
                // not confirmed ride the request's packet, so the peer takes (and acks) them
                // as it accepts (`docs/wire.md`, "The channel handshake").
                if let Some(connection) = core.sending_mut()
                    && let Err(e) = link.delivery.connected(connection)
                {
                    return self.lose(now, i, Failure::Protocol(e.to_string()));
                }
                link.attempt = Attempt::Open {
                    transport,
                    core,
                    deadline,
                };
                self.link_event(now, i);
            }
            Err(failure) => self.lose(now, i, failure),
        }
    }
}
