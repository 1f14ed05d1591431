//! The protocol side of one link attempt: a core [`Connection`] (the accepting side holds an
//! [`Acceptor`] until the handshake completes), optionally behind the two-way emulator.
//! Whatever carries its datagrams (a data channel, a UDP socket) is the member's concern, and
//! what its messages mean is the application's.

use std::time::Duration;

#[cfg(not(target_arch = "wasm32"))]
use ackwire_core::{Accept, Acceptor};
use ackwire_core::{
    ChannelAcceptor, Connection, ConnectionConfig, ConnectionConfigError, ConnectionEvent,
    ConnectionState, DisconnectReason, ProtectError, Stats,
};

use crate::emulation::{Emulation, TwoWay};
use crate::keys::LinkKeys;

/// What a link's protocol learned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CoreEvent {
    Connected,
    Message {
        channel: u8,
        bytes: Vec<u8>,
    },
    /// The peer acknowledged our first packet, at this time.
    FirstAck {
        at: Duration,
    },
    Disconnected {
        reason: DisconnectReason,
    },
}

/// Why a datagram was refused by a link's protocol. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RefusedDatagram {
    /// The connection refused it (malformed, duplicate, stale, another connection).
    #[error("refused by the connection: {0}")]
    Connection(#[from] ackwire_core::ConnectionError),
    /// The acceptor refused it (not a handshake step, forged or expired cookie).
    #[error("refused by the acceptor: {0}")]
    Handshake(#[from] ackwire_core::HandshakeError),
    /// No protocol runs on this link right now (it is negotiating, lost or gone).
    #[error("the link is not open")]
    NotOpen,
}

/// Why a link's protocol could not start. The member refuses a configuration that would
/// lead here, so it means a bug; the link fails with it rather than run without its keys.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum SetupError {
    /// The connection configuration.
    #[error("connection config: {0}")]
    Config(#[from] ConnectionConfigError),
    /// The keys could not be put on the connection.
    #[error("cannot encrypt the link: {0}")]
    Keys(#[from] ProtectError),
    /// Keys of the other role.
    #[error("cannot encrypt the link: keys of the other role")]
    Role,
    /// The cookie handshake's acceptor in a browser, which has no raw UDP.
    #[cfg(target_arch = "wasm32")]
    #[error("no raw UDP in a browser")]
    NoUdp,
}

/// Which core handshake a link runs (`docs/wire.md`, "The channel handshake").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handshake {
    /// Raw UDP: the stateless cookie round trip stops spoofed sources.
    Cookie,
    /// A WebRTC data channel, which ICE and DTLS already authenticated: one round trip.
    Channel,
}

/// Which end of the core handshake a link is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Role {
    /// Runs the acceptor, keyed with `secret` (the member's, new at each start) and `attempt`
    /// (the member's count of acceptors): no two of its acceptors hand out the same
    /// connection ids, so a late `disconnect` of an old connection never closes a new one.
    Accept {
        /// The member's secret.
        secret: [u8; 32],
        /// This acceptor's number among the member's, from 1.
        attempt: u64,
    },
    /// Connects at once.
    Connect,
}

#[derive(Debug)]
enum Side {
    /// The cookie handshake's acceptor (raw UDP). Not in the browser's build: a browser has
    /// no raw UDP, and its bundle then carries no SHA-256 and HMAC for cookies.
    #[cfg(not(target_arch = "wasm32"))]
    Accepting(Box<Acceptor>),
    ChannelAccepting(Box<ChannelAcceptor>),
    Connection(Box<Connection>),
}

#[derive(Debug)]
pub(crate) struct CoreLink {
    side: Side,
    /// The remote as the acceptor's cookie binds it.
    #[cfg(not(target_arch = "wasm32"))]
    address: Vec<u8>,
    emulator: Option<TwoWay>,
    /// Datagrams ready for the transport.
    out: Vec<Vec<u8>>,
    acked_any: bool,
    datagram_size: usize,
    /// A channel connector: its connection takes messages before the accept.
    early: bool,
}

impl CoreLink {
    /// `role`: accept or connect at once, with `handshake`: the cookie handshake (the acceptor
    /// keyed with the secret) or the channel handshake (its first connection id from the
    /// secret). With `keys`, the cookie handshake runs that key exchange and the link is
    /// encrypted (their role must match; the channel handshake takes none: DTLS encrypts). Refused, rather than run in plaintext, when the keys
    /// cannot be used (the datagram size leaves no room for the tag: the member checks it
    /// when it is made).
    pub(crate) fn new(
        now: Duration,
        config: &ConnectionConfig,
        role: Role,
        handshake: Handshake,
        address: Vec<u8>,
        emulation: Option<&Emulation>,
        keys: Option<LinkKeys>,
    ) -> Result<CoreLink, SetupError> {
        #[cfg(target_arch = "wasm32")]
        let _ = address; // only the cookie acceptor binds it
        let early = matches!(role, Role::Connect) && handshake == Handshake::Channel;
        let side = match role {
            Role::Accept { secret, attempt } if handshake == Handshake::Channel => {
                if keys.is_some() {
                    return Err(SetupError::Keys(ProtectError::ChannelHandshake));
                }
                // Ids on an authenticated channel need only differ, not be unpredictable: each
                // acceptor starts 2^32 ids after the one before (no hash in a browser's
                // bundle), and one acceptor never takes 2^32 requests.
                let seed = u64::from_be_bytes(secret[..8].try_into().expect("8 bytes"))
                    .wrapping_add(attempt << 32);
                Side::ChannelAccepting(Box::new(ChannelAcceptor::new(config.clone(), seed)?))
            }
            #[cfg(not(target_arch = "wasm32"))]
            Role::Accept { secret, attempt } => {
                let secret = ackwire_core::attempt_secret(&secret, attempt);
                let mut acceptor = Acceptor::new(config.clone(), secret)?;
                match keys {
                    Some(LinkKeys::Accept(responder)) => acceptor.set_responder(responder)?,
                    Some(LinkKeys::Connect(_)) => return Err(SetupError::Role),
                    None => {}
                }
                Side::Accepting(Box::new(acceptor))
            }
            #[cfg(target_arch = "wasm32")]
            Role::Accept { .. } => return Err(SetupError::NoUdp),
            Role::Connect => {
                let mut connection = match handshake {
                    Handshake::Cookie => Connection::connect(config.clone(), now)?,
                    Handshake::Channel => Connection::connect_on_channel(config.clone(), now)?,
                };
                match keys {
                    Some(LinkKeys::Connect(initiator)) => connection.secure(initiator)?,
                    Some(LinkKeys::Accept(_)) => return Err(SetupError::Role),
                    None => {}
                }
                Side::Connection(Box::new(connection))
            }
        };
        Ok(CoreLink {
            side,
            #[cfg(not(target_arch = "wasm32"))]
            address,
            // Validated when the member was made.
            emulator: emulation.and_then(|e| TwoWay::new(e, now).ok()),
            out: Vec::new(),
            acked_any: false,
            datagram_size: config.max_datagram_size,
            early,
        })
    }

    pub(crate) fn connection(&self) -> Option<&Connection> {
        match &self.side {
            Side::Connection(c) => Some(c),
            _ => None,
        }
    }

    /// The connection, once connected: messages are sent on it.
    pub(crate) fn connected_mut(&mut self) -> Option<&mut Connection> {
        match &mut self.side {
            Side::Connection(c) if c.state() == ConnectionState::Connected => Some(c),
            _ => None,
        }
    }

    /// A channel connector: it sends early (its packets ride beside its requests), so the
    /// member takes its connection from the start.
    pub(crate) fn sends_early(&self) -> bool {
        self.early
    }

    /// The connection while messages may go on it: once connected, or from the start on a
    /// channel connector, which sends early (its packets ride beside its requests).
    pub(crate) fn sending_mut(&mut self) -> Option<&mut Connection> {
        let early = self.early;
        match &mut self.side {
            Side::Connection(c)
                if c.state() == ConnectionState::Connected
                    || (early && c.state() == ConnectionState::Connecting) =>
            {
                Some(c)
            }
            _ => None,
        }
    }

    /// A datagram from the transport. Refused datagrams change nothing.
    pub(crate) fn receive(
        &mut self,
        now: Duration,
        datagram: &[u8],
        events: &mut Vec<CoreEvent>,
    ) -> Result<(), RefusedDatagram> {
        match &mut self.emulator {
            Some(emulator) => {
                emulator.arrive(now, datagram);
                Ok(())
            }
            None => self.deliver(now, datagram, events),
        }
    }

    fn deliver(
        &mut self,
        now: Duration,
        datagram: &[u8],
        events: &mut Vec<CoreEvent>,
    ) -> Result<(), RefusedDatagram> {
        match &mut self.side {
            Side::Connection(connection) => connection.receive(now, datagram)?,
            Side::ChannelAccepting(acceptor) => {
                self.side = Side::Connection(acceptor.receive(now, datagram)?);
            }
            #[cfg(not(target_arch = "wasm32"))]
            Side::Accepting(acceptor) => {
                // Room for a secure challenge (65 bytes).
                let mut reply = [0u8; 128];
                match acceptor.receive(now, &self.address, datagram, &mut reply)? {
                    Accept::Reply { len } => self.out.push(reply[..len].to_vec()),
                    Accept::Connection(connection) => self.side = Side::Connection(connection),
                    _ => {}
                }
            }
        }
        self.drain_events(now, events);
        Ok(())
    }

    pub(crate) fn is_connected(&self) -> bool {
        self.connection()
            .is_some_and(|c| c.state() == ConnectionState::Connected)
    }

    /// [`poll_arrivals`](Self::poll_arrivals), then [`poll_transmit`](Self::poll_transmit).
    pub(crate) fn poll(
        &mut self,
        now: Duration,
        pool: &mut Vec<Vec<u8>>,
        ready: &mut Vec<Vec<u8>>,
        events: &mut Vec<CoreEvent>,
    ) {
        self.poll_arrivals(now, events);
        self.poll_transmit(now, pool, ready, events);
    }

    /// Delivers the emulated arrivals that are due and reports what they brought. The member
    /// handles those events before [`poll_transmit`](Self::poll_transmit), so a message it
    /// refuses fails the connection before an ack of its packet leaves.
    pub(crate) fn poll_arrivals(&mut self, now: Duration, events: &mut Vec<CoreEvent>) {
        while let Some((due, datagram)) = self.emulator.as_mut().and_then(|e| e.poll_arrive(now)) {
            // Refused after emulation: dropped exactly as off the wire. Handed over at the
            // time it was due, so a late wake-up counts as our hold, not as path.
            let _ = self.deliver(due, &datagram, events);
        }
    }

    /// Writes what is due into buffers from `pool` and puts them in `ready` for the
    /// transport, and reports what happened.
    pub(crate) fn poll_transmit(
        &mut self,
        now: Duration,
        pool: &mut Vec<Vec<u8>>,
        ready: &mut Vec<Vec<u8>>,
        events: &mut Vec<CoreEvent>,
    ) {
        let mut out = std::mem::take(&mut self.out);
        if let Side::Connection(connection) = &mut self.side {
            loop {
                let mut buf = pool.pop().unwrap_or_default();
                buf.resize(self.datagram_size, 0);
                match connection.poll_transmit(now, &mut buf) {
                    Ok(Some(len)) => {
                        buf.truncate(len);
                        out.push(buf);
                    }
                    // `None`, or a `TransmitError`: the buffer is a full datagram, so an
                    // error would be a bug; the link stops sending this round, never panics.
                    Ok(None) | Err(_) => {
                        pool.push(buf);
                        break;
                    }
                }
            }
        }
        for datagram in out.drain(..) {
            match &mut self.emulator {
                Some(emulator) => {
                    emulator.send(now, &datagram);
                    pool.push(datagram);
                }
                None => ready.push(datagram),
            }
        }
        self.out = out;
        while let Some(datagram) = self.emulator.as_mut().and_then(|e| e.poll_send(now)) {
            ready.push(datagram);
        }
        self.drain_events(now, events);
    }

    fn drain_events(&mut self, now: Duration, events: &mut Vec<CoreEvent>) {
        let Side::Connection(connection) = &mut self.side else {
            return;
        };
        while let Some(event) = connection.poll_event() {
            events.push(match event {
                ConnectionEvent::Connected { .. } => CoreEvent::Connected,
                ConnectionEvent::Message { channel, bytes } => {
                    CoreEvent::Message { channel, bytes }
                }
                ConnectionEvent::Disconnected { reason } => CoreEvent::Disconnected { reason },
                _ => continue,
            });
        }
        if !self.acked_any && connection.stats().counters.packets_acked > 0 {
            self.acked_any = true;
            events.push(CoreEvent::FirstAck { at: now });
        }
    }

    /// When [`poll`](Self::poll) must run next.
    pub(crate) fn poll_timeout(&self) -> Option<Duration> {
        if !self.out.is_empty() {
            return Some(Duration::ZERO);
        }
        let emulator = self.emulator.as_ref().and_then(TwoWay::poll_timeout);
        let connection = self.connection().and_then(Connection::poll_timeout);
        emulator.into_iter().chain(connection).min()
    }

    /// The core's stats, its next packet counted from `now` (the core's own clock stands at
    /// its last step, which may be long ago on a quiet link).
    pub(crate) fn stats(&self, now: Duration) -> Option<Stats> {
        self.connection().map(|c| {
            let mut stats = c.stats();
            let wait = c.next_packet_at().saturating_sub(now);
            stats.next_packet_ms = wait.as_secs_f64() * 1000.0;
            stats
        })
    }

    /// Starts a clean disconnect; the core sends it redundantly at the next polls.
    pub(crate) fn close(&mut self) {
        if let Side::Connection(connection) = &mut self.side {
            connection.close();
            // Our own `Disconnected` is not news to anyone.
            while connection.poll_event().is_some() {}
        }
    }

    /// Whether a closed link has nothing left to send.
    pub(crate) fn is_done(&self) -> bool {
        match &self.side {
            Side::Connection(c) => {
                c.state() == ConnectionState::Closed
                    && self.out.is_empty()
                    && self
                        .emulator
                        .as_ref()
                        .and_then(TwoWay::poll_timeout)
                        .is_none()
            }
            _ => true,
        }
    }
}
