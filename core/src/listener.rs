//! Many peers on one socket: an [`Acceptor`] plus the connections it made, keyed by the
//! peer's address bytes. A UDP server driver is then a loop of `receive` (sending back any
//! challenge at once), `poll_transmit` until `None`, `poll_event`, and `poll_timeout`, with no
//! protocol logic of its own.
//!
//! Datagrams from an address with a connection go to that connection; anything else goes to
//! the acceptor, which answers connect requests without storing anything. Connections are
//! dropped once closed and their last event has been taken.

use core::time::Duration;
use std::collections::{HashMap, VecDeque};

use thiserror::Error;

use crate::channel::SendError;
use crate::connection::{
    Connection, ConnectionConfig, ConnectionConfigError, ConnectionError, ConnectionEvent,
    ConnectionState,
};
use crate::endpoint::TransmitError;
use crate::handshake::{Accept, Acceptor, HandshakeError};

/// Why [`Listener::receive`] refused a datagram. Nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ListenerError {
    /// From an address without a connection, and not a valid handshake step.
    #[error("handshake: {0}")]
    Handshake(#[from] HandshakeError),
    /// Refused by the address's connection.
    #[error("connection: {0}")]
    Connection(#[from] ConnectionError),
}

/// Why [`Listener::send`] refused a message. Nothing was queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ListenerSendError {
    /// No connection with this address.
    #[error("no connection with this address")]
    UnknownAddress,
    /// The connection refused it.
    #[error(transparent)]
    Send(#[from] SendError),
}

/// An acceptor and its connections, for a driver serving many peers on one socket.
#[derive(Debug)]
pub struct Listener {
    acceptor: Acceptor,
    connections: HashMap<Box<[u8]>, Connection>,
    /// Addresses in acceptance order; `poll_transmit` and `poll_event` start after the one
    /// served last, so no connection starves the others.
    order: VecDeque<Box<[u8]>>,
}

impl Listener {
    /// A listener whose connections use `config`, keyed with `secret` (32 random bytes from
    /// the driver, new at each start).
    pub fn new(config: ConnectionConfig, secret: [u8; 32]) -> Result<Self, ConnectionConfigError> {
        Ok(Listener {
            acceptor: Acceptor::new(config, secret)?,
            connections: HashMap::new(),
            order: VecDeque::new(),
        })
    }

    /// The acceptor (for its config and replay-cache size).
    pub fn acceptor(&self) -> &Acceptor {
        &self.acceptor
    }

    /// Takes in one datagram from `from`. `Ok(Some(len))`: send `reply[..len]` back to `from`
    /// now (a challenge; 33 bytes of `reply` suffice). On error nothing changed.
    pub fn receive(
        &mut self,
        now: Duration,
        from: &[u8],
        datagram: &[u8],
        reply: &mut [u8],
    ) -> Result<Option<usize>, ListenerError> {
        if let Some(connection) = self.connections.get_mut(from) {
            connection.receive(now, datagram)?;
            return Ok(None);
        }
        match self.acceptor.receive(now, from, datagram, reply)? {
            Accept::Reply { len } => Ok(Some(len)),
            Accept::Connection(connection) => {
                self.connections.insert(from.into(), *connection);
                self.order.push_back(from.into());
                Ok(None)
            }
        }
    }

    /// The next datagram due to any peer: its address and length in `buf`. Call until `None`.
    pub fn poll_transmit(
        &mut self,
        now: Duration,
        buf: &mut [u8],
    ) -> Result<Option<(&[u8], usize)>, TransmitError> {
        for _ in 0..self.order.len() {
            let connection = self.connections.get_mut(&self.order[0]).expect("ordered");
            if let Some(len) = connection.poll_transmit(now, buf)? {
                return Ok(Some((&self.order[0], len)));
            }
            self.order.rotate_left(1);
        }
        Ok(None)
    }

    /// The next event from any connection, with the peer's address. A connection whose
    /// [`ConnectionEvent::Disconnected`] has been taken, and that has nothing left to send,
    /// is dropped.
    pub fn poll_event(&mut self) -> Option<(Box<[u8]>, ConnectionEvent)> {
        for _ in 0..self.order.len() {
            let address = self.order.front().expect("non-empty").clone();
            let connection = self.connections.get_mut(&address).expect("ordered");
            if let Some(event) = connection.poll_event() {
                return Some((address, event));
            }
            if connection.state() == ConnectionState::Closed {
                self.connections.remove(&address);
                self.order.pop_front();
            } else {
                self.order.rotate_left(1);
            }
        }
        None
    }

    /// Queues a message for the peer at `to`.
    pub fn send(&mut self, to: &[u8], channel: u8, bytes: &[u8]) -> Result<(), ListenerSendError> {
        let connection = self
            .connections
            .get_mut(to)
            .ok_or(ListenerSendError::UnknownAddress)?;
        Ok(connection.send(channel, bytes)?)
    }

    /// When to call back at the latest (the earliest of the connections' timeouts).
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.connections
            .values()
            .filter_map(Connection::poll_timeout)
            .min()
    }

    /// The connection with the peer at `address`.
    pub fn connection(&self, address: &[u8]) -> Option<&Connection> {
        self.connections.get(address)
    }

    /// The connection with the peer at `address`, mutably (to close it, for instance).
    pub fn connection_mut(&mut self, address: &[u8]) -> Option<&mut Connection> {
        self.connections.get_mut(address)
    }

    /// Every connection with its peer's address, in no particular order.
    pub fn connections(&self) -> impl Iterator<Item = (&[u8], &Connection)> {
        self.connections.iter().map(|(a, c)| (&**a, c))
    }
}
