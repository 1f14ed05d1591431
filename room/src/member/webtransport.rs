//! WebTransport links between a host room's host and its browser clients: the client dials
//! the service the host published in its join, with a token it sends the host through the
//! signal server; the host takes the session that shows that token. Once the session is
//! ready the core's channel handshake runs over its datagrams, as over a data channel (QUIC's
//! TLS authenticates the host by the certificate hash signalling gave; the token, which only
//! the client and the host saw, the client). A client whose session never becomes ready links
//! over WebRTC instead (`Link::via_webrtc`), and the host follows when the offer comes.
//!
//! The host's WebSocket is the last resort, the same way: a client whose WebRTC attempt to
//! the host never opened (or that has no WebRTC) dials it with a token of its own
//! (`Link::via_websocket`), and the host takes the connection that shows it. TCP carries
//! the core's packets in order and resends what it loses; the core runs as over a session.

use std::net::SocketAddr;
use std::time::Duration;

use super::links::{Attempt, Wt};
use super::{Command, Failure, Member, ServerId, TransportId};
use crate::signalling::{PeerInfo, Role, webtransport};

impl Member {
    /// Whether link `i` starts with a WebTransport session: we are a client that can dial, the
    /// peer is the host and publishes a service, and no session to it has failed yet.
    pub(super) fn dials_webtransport(&self, i: usize) -> bool {
        let link = &self.links[i];
        self.config.dials_webtransport
            && self.config.role == Role::Client
            && link.role == Role::Host
            && link.webtransport.is_some()
            && !link.via_webrtc
    }

    /// Whether link `i` could fall back to its host's WebSocket: we can dial one, and have not
    /// fallen back yet.
    pub(super) fn has_websocket(&self, i: usize) -> bool {
        self.websocket_to(i) && !self.links[i].via_websocket
    }

    /// Whether link `i` goes over its host's WebSocket: we can dial one, and WebRTC failed or
    /// we have none.
    pub(super) fn dials_websocket(&self, i: usize) -> bool {
        self.websocket_to(i) && (self.links[i].via_websocket || !self.config.webrtc)
    }

    /// Whether we are a client that can dial a WebSocket, and link `i`'s peer is the host and
    /// publishes one.
    fn websocket_to(&self, i: usize) -> bool {
        let link = &self.links[i];
        self.config.dials_websocket
            && self.config.role == Role::Client
            && link.role == Role::Host
            && (link.webtransport.as_ref()).is_some_and(|s| s.websocket.is_some())
    }

    /// A new session attempt of link `i` to the host `peer`, over its WebSocket with
    /// `websocket`, else over WebTransport: the driver dials (its token comes back as a signal
    /// for the host). A session not ready within `webtransport_timeout` gives way to WebRTC;
    /// the WebSocket, the last resort, has no fallback: it takes as long as any attempt may.
    pub(super) fn dial_session(
        &mut self,
        now: Duration,
        i: usize,
        peer: ServerId,
        websocket: bool,
    ) {
        let Some(service) = self.links[i].webtransport.clone() else {
            return;
        };
        let transport = self.new_transport();
        let timeout = if websocket {
            self.config.attempt_timeout
        } else {
            self.config.webtransport_timeout
        };
        self.links[i].attempt = Attempt::Dialing {
            wt: Wt {
                id: transport,
                websocket,
                hosting: false,
            },
            deadline: now + timeout,
        };
        self.command(if websocket {
            Command::OpenWebSocket { transport, service }
        } else {
            Command::OpenWebTransport {
                transport,
                peer,
                service,
            }
        });
    }

    /// A client's token for link `i` (for its WebSocket with `websocket`): a host that serves
    /// it waits for the session that shows it, in place of whatever the link had (the client
    /// started over). Anyone else, or a token of the wrong shape, changes nothing.
    pub(super) fn on_session_token(
        &mut self,
        now: Duration,
        i: usize,
        token: String,
        websocket: bool,
    ) {
        let serves = self
            .config
            .webtransport
            .as_ref()
            .is_some_and(|s| !websocket || s.websocket.is_some());
        if self.config.role != Role::Host
            || !serves
            || self.links[i].role != Role::Client
            || !webtransport::is_token(&token)
        {
            return;
        }
        let was_up = matches!(
            self.links[i].attempt,
            Attempt::Open { .. } | Attempt::Connected { .. }
        );
        self.close_transport(now, i);
        let transport = self.new_transport();
        let link = &mut self.links[i];
        link.started = now;
        link.took = None;
        link.first_ack = None;
        if was_up {
            link.reason = Some(Failure::Restarted);
        }
        link.attempt = Attempt::Dialing {
            wt: Wt {
                id: transport,
                websocket,
                hosting: true,
            },
            deadline: now + self.config.attempt_timeout,
        };
        self.command(if websocket {
            Command::AcceptWebSocket { transport, token }
        } else {
            Command::AcceptWebTransport { transport, token }
        });
        self.link_event(now, i);
    }

    /// A datagram from `addr` that no link takes: a host waiting for the session of a native
    /// client at that address takes it as the client having given up its session for raw UDP
    /// (its session never became ready: `Link::via_webrtc`), and follows with a UDP attempt
    /// (which the datagram then goes to). Whether it did.
    pub(super) fn udp_instead_of_session(&mut self, now: Duration, addr: SocketAddr) -> bool {
        let Some(i) = self.links.iter().position(|l| {
            l.udp == Some(addr)
                && !l.via_ice
                && matches!(
                    l.attempt,
                    Attempt::Dialing {
                        wt: Wt { hosting: true, .. },
                        ..
                    }
                )
        }) else {
            return false;
        };
        self.start_attempt(now, i);
        self.links[i].direct_udp() == Some(addr)
    }

    /// A `peer_updated`: the peer's new WebTransport service (a host's next certificate) is
    /// what the next session to it dials; one open or being dialed is not touched. A link
    /// that had nothing to try with (`Failure::NoTransport`) tries again with it.
    pub(super) fn peer_updated(&mut self, now: Duration, info: &PeerInfo) {
        let Some(i) = self.links.iter().position(|l| l.server_id == Some(info.id)) else {
            return;
        };
        self.links[i].webtransport = info.webtransport.clone();
        let link = &self.links[i];
        if matches!(link.attempt, Attempt::Idle) && link.reason == Some(Failure::NoTransport) {
            self.start_attempt(now, i);
        }
    }

    pub(super) fn new_transport(&mut self) -> TransportId {
        let transport = TransportId(self.next_transport);
        self.next_transport += 1;
        transport
    }
}
