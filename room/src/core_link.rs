//! The protocol side of one link: a core [`Connection`] (the accepting side holds an
//! [`Acceptor`] until the handshake completes), optionally behind the two-way emulator, playing
//! the demo: the newest position on the unreliable-sequenced channel, chat on the
//! reliable-ordered one. Whatever carries its datagrams (a data channel, a UDP socket) is the
//! member's concern.

use std::time::Duration;

use ackwire_core::{
    Accept, Acceptor, Connection, ConnectionConfig, ConnectionConfigError, ConnectionEvent,
    ConnectionState, DisconnectReason, SendError, Stats,
};

use crate::demo::{
    CHAT_CHANNEL, MAX_CHAT_BYTES, POSITION_CHANNEL, decode_position, encode_position,
};
use crate::emulation::{Emulation, TwoWay};
use crate::keys::LinkKeys;

/// What a link's protocol learned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CoreEvent {
    Connected,
    Position {
        x: f32,
        y: f32,
    },
    Chat {
        text: String,
    },
    /// The peer acknowledged our first packet, at this time.
    FirstAck {
        at: Duration,
    },
    Disconnected {
        reason: DisconnectReason,
    },
}

/// Why a chat message was not queued. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChatError {
    /// Longer than [`MAX_CHAT_BYTES`].
    #[error("chat messages are at most {MAX_CHAT_BYTES} bytes (got {0})")]
    TooLong(usize),
    /// No link is connected yet, so there is no one to send to.
    #[error("no connected peer to send to yet")]
    NoOneConnected,
    /// The core would not queue it.
    #[error("send refused: {0}")]
    Send(#[from] SendError),
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

#[derive(Debug)]
enum Side {
    Accepting(Box<Acceptor>),
    Connection(Box<Connection>),
}

#[derive(Debug)]
pub(crate) struct CoreLink {
    side: Side,
    /// The remote as the acceptor's cookie binds it.
    address: Vec<u8>,
    emulator: Option<TwoWay>,
    /// Datagrams ready for the transport.
    out: Vec<Vec<u8>>,
    acked_any: bool,
    buf: Vec<u8>,
}

impl CoreLink {
    /// `accept`: run the acceptor, keyed with `secret`; else connect at once. With `keys`,
    /// the handshake runs that key exchange and the link is encrypted (its role must match
    /// `accept`).
    pub(crate) fn new(
        now: Duration,
        config: &ConnectionConfig,
        accept: bool,
        secret: [u8; 32],
        address: Vec<u8>,
        emulation: Option<&Emulation>,
        keys: Option<LinkKeys>,
    ) -> Result<CoreLink, ConnectionConfigError> {
        let side = if accept {
            let mut acceptor = Acceptor::new(config.clone(), secret)?;
            if let Some(LinkKeys::Accept(responder)) = keys {
                // The demo's datagram size leaves room for the tag.
                let _ = acceptor.set_responder(responder);
            }
            Side::Accepting(Box::new(acceptor))
        } else {
            let mut connection = Connection::connect(config.clone(), now)?;
            if let Some(LinkKeys::Connect(initiator)) = keys {
                let _ = connection.secure(initiator);
            }
            Side::Connection(Box::new(connection))
        };
        Ok(CoreLink {
            side,
            address,
            // Validated when the member was made.
            emulator: emulation.and_then(|e| TwoWay::new(e, now).ok()),
            out: Vec::new(),
            acked_any: false,
            buf: vec![0; config.max_datagram_size],
        })
    }

    fn connection(&self) -> Option<&Connection> {
        match &self.side {
            Side::Connection(c) => Some(c),
            Side::Accepting(_) => None,
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

    pub(crate) fn send_chat(&mut self, text: &str) -> Result<(), ChatError> {
        match &mut self.side {
            Side::Connection(c) if c.state() == ConnectionState::Connected => {
                Ok(c.send(CHAT_CHANNEL, text.as_bytes())?)
            }
            _ => Err(ChatError::NoOneConnected),
        }
    }

    /// Delivers emulated arrivals, sends what is due (carrying `position`, the newest), and
    /// reports what happened. Datagrams for the transport go to `send`.
    pub(crate) fn poll(
        &mut self,
        now: Duration,
        position: (f32, f32),
        mut send: impl FnMut(Vec<u8>),
        events: &mut Vec<CoreEvent>,
    ) {
        while let Some((due, datagram)) = self.emulator.as_mut().and_then(|e| e.poll_arrive(now)) {
            // Refused after emulation: dropped exactly as off the wire. Handed over at the
            // time it was due, so a late wake-up counts as our hold, not as path.
            let _ = self.deliver(due, &datagram, events);
        }
        let mut out = std::mem::take(&mut self.out);
        if let Side::Connection(connection) = &mut self.side {
            if connection.state() == ConnectionState::Connected {
                let bytes = encode_position(position.0, position.1);
                let _ = connection.send_latest(POSITION_CHANNEL, &bytes);
            }
            while let Ok(Some(len)) = connection.poll_transmit(now, &mut self.buf) {
                out.push(self.buf[..len].to_vec());
            }
        }
        for datagram in out {
            match &mut self.emulator {
                Some(emulator) => emulator.send(now, &datagram),
                None => send(datagram),
            }
        }
        while let Some(datagram) = self.emulator.as_mut().and_then(|e| e.poll_send(now)) {
            send(datagram);
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
                ConnectionEvent::Message { channel, bytes } if channel == POSITION_CHANNEL => {
                    match decode_position(&bytes) {
                        Some((x, y)) => CoreEvent::Position { x, y },
                        None => continue,
                    }
                }
                ConnectionEvent::Message { channel, bytes } if channel == CHAT_CHANNEL => {
                    let mut text = String::from_utf8_lossy(&bytes).into_owned();
                    text.truncate(MAX_CHAT_BYTES);
                    CoreEvent::Chat { text }
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

    pub(crate) fn stats(&self) -> Option<Stats> {
        self.connection().map(Connection::stats)
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
            Side::Accepting(_) => true,
        }
    }
}
