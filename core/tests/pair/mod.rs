//! A connector and an acceptor joined by two emulated links, driven in virtual time the way a
//! driver would: datagrams from an address with a connection go to it, the rest to the
//! acceptor.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

#[path = "../common/mod.rs"]
mod common;

use ackwire_core::emulator::{EmulatorConfig, LinkEmulator};
use ackwire_core::{
    Accept, Acceptor, ChannelAcceptor, Connection, ConnectionConfig, ConnectionError,
    ConnectionEvent, HandshakeError,
};

pub const CLIENT_ADDR: &[u8] = b"10.0.0.2:5000";
pub const SECRET: [u8; 32] = [42; 32];

/// Everything one side saw.
#[derive(Debug, Default)]
pub struct Side {
    pub events: Vec<(Duration, ConnectionEvent)>,
    pub receive_errors: Vec<ConnectionError>,
    pub datagrams_sent: Vec<(Duration, usize)>,
}

impl Side {
    pub fn messages(&self, channel: u8) -> impl Iterator<Item = &[u8]> + '_ {
        self.events.iter().filter_map(move |(_, e)| match e {
            ConnectionEvent::Message { channel: c, bytes } if *c == channel => {
                Some(bytes.as_slice())
            }
            _ => None,
        })
    }

    pub fn take_messages(&mut self, channel: u8) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        self.events.retain(|(_, e)| match e {
            ConnectionEvent::Message { channel: c, bytes } if *c == channel => {
                out.push(bytes.clone());
                false
            }
            _ => true,
        });
        out
    }
}

pub struct ConnPair {
    pub now: Duration,
    pub client: Connection,
    pub acceptor: Acceptor,
    /// Takes the datagrams in place of `acceptor` when set (an authenticated channel).
    pub channel_acceptor: Option<ChannelAcceptor>,
    pub server: Option<Connection>,
    pub to_server: LinkEmulator,
    pub to_client: LinkEmulator,
    pub client_side: Side,
    pub server_side: Side,
    pub handshake_errors: Vec<HandshakeError>,
}

impl ConnPair {
    pub fn new(config: ConnectionConfig, link: EmulatorConfig, seed: u64) -> ConnPair {
        ConnPair {
            now: Duration::ZERO,
            client: Connection::connect(config.clone(), Duration::ZERO).unwrap(),
            acceptor: Acceptor::new(config, SECRET).unwrap(),
            channel_acceptor: None,
            server: None,
            to_server: LinkEmulator::new(link.clone(), seed).unwrap(),
            to_client: LinkEmulator::new(link, seed.wrapping_add(1)).unwrap(),
            client_side: Side::default(),
            server_side: Side::default(),
            handshake_errors: Vec::new(),
        }
    }

    /// The same over an authenticated channel: the channel handshake.
    pub fn on_channel(config: ConnectionConfig, link: EmulatorConfig, seed: u64) -> ConnPair {
        ConnPair {
            client: Connection::connect_on_channel(config.clone(), Duration::ZERO).unwrap(),
            channel_acceptor: Some(ChannelAcceptor::new(config.clone(), 7).unwrap()),
            ..ConnPair::new(config, link, seed)
        }
    }

    pub fn server(&mut self) -> &mut Connection {
        self.server.as_mut().expect("accepted")
    }

    pub fn set_link(&mut self, link: EmulatorConfig) {
        self.to_server.set_config(link.clone()).unwrap();
        self.to_client.set_config(link).unwrap();
    }

    fn step(&mut self) {
        let now = self.now;
        let mut buf = [0u8; 1500];
        while let Some(datagram) = self.to_server.poll_receive(now) {
            match &mut self.server {
                Some(server) => {
                    if let Err(e) = server.receive(now, &datagram) {
                        self.server_side.receive_errors.push(e);
                    }
                }
                None if self.channel_acceptor.is_some() => {
                    let acceptor = self.channel_acceptor.as_mut().expect("checked");
                    match acceptor.receive(now, &datagram) {
                        Ok(connection) => self.server = Some(*connection),
                        Err(e) => self.handshake_errors.push(e),
                    }
                }
                None => match self.acceptor.receive(now, CLIENT_ADDR, &datagram, &mut buf) {
                    Ok(Accept::Reply { len }) => self.to_client.send(now, &buf[..len]),
                    Ok(Accept::Connection(connection)) => self.server = Some(*connection),
                    Ok(_) => unreachable!(),
                    Err(e) => self.handshake_errors.push(e),
                },
            }
        }
        while let Some(datagram) = self.to_client.poll_receive(now) {
            if let Err(e) = self.client.receive(now, &datagram) {
                self.client_side.receive_errors.push(e);
            }
        }
        while let Some(len) = self.client.poll_transmit(now, &mut buf).unwrap() {
            self.client_side.datagrams_sent.push((now, len));
            self.to_server.send(now, &buf[..len]);
        }
        if let Some(server) = &mut self.server {
            while let Some(len) = server.poll_transmit(now, &mut buf).unwrap() {
                self.server_side.datagrams_sent.push((now, len));
                self.to_client.send(now, &buf[..len]);
            }
            while let Some(event) = server.poll_event() {
                self.server_side.events.push((now, event));
            }
        }
        while let Some(event) = self.client.poll_event() {
            self.client_side.events.push((now, event));
        }
    }

    /// Runs until `end`, waking exactly when a connection or a link asks to.
    pub fn run_until(&mut self, end: Duration) {
        common::run_until(self, end);
    }

    pub fn run_for(&mut self, span: Duration) {
        self.run_until(self.now + span);
    }

    /// Runs until both sides report connected (panics after 5 s).
    pub fn connect(&mut self) {
        let deadline = self.now + Duration::from_secs(5);
        while !(self.connected(&self.client_side) && self.connected(&self.server_side)) {
            assert!(self.now < deadline, "not connected after 5 s");
            self.run_for(Duration::from_millis(10));
        }
    }

    fn connected(&self, side: &Side) -> bool {
        side.events
            .iter()
            .any(|(_, e)| matches!(e, ConnectionEvent::Connected { .. }))
    }
}

impl common::Virtual for ConnPair {
    fn clock(&mut self) -> &mut Duration {
        &mut self.now
    }

    fn step(&mut self) {
        ConnPair::step(self);
    }

    fn timeouts(&self) -> Vec<Option<Duration>> {
        vec![
            self.client.poll_timeout(),
            self.server.as_ref().and_then(Connection::poll_timeout),
            self.to_server.poll_timeout(),
            self.to_client.poll_timeout(),
        ]
    }
}
