//! The core side of a room: one protocol link per remote peer, whatever carries it.
//!
//! Every link is the core's: peers with a higher signalling id than ours connect to us and
//! land in one [`Listener`]; we connect ([`Connection::connect`]) to peers with a lower id.
//! The acceptor's address bytes are the remote's peer id as decimal text, on UDP exactly as
//! on a data channel, so both transports share this one code path (and match the browser
//! driver, `wasm/src/client.rs`). The driver hands datagrams in with the sender's peer id and
//! sends what comes out to the peer id it is given; it never sees a protocol byte.
//!
//! The demo rides on the default [`ConnectionConfig`]: channel 0 (unreliable-sequenced)
//! carries our dot's position (x then y, `f32` little-endian), at most one queued so every
//! packet carries the newest; channel 1 (reliable-ordered) carries chat as UTF-8.
//!
//! Link emulation (`--latency/--jitter/--loss`) sits per link between the core and the
//! transport, in both directions, as in the browser.

use std::collections::BTreeMap;
use std::time::Duration;

use ackwire_core::emulator::{EmulatorConfig, EmulatorError, LinkEmulator};
use ackwire_core::{
    Connection, ConnectionConfig, ConnectionConfigError, ConnectionEvent, ConnectionState,
    DisconnectReason, Listener, ListenerError, SendError, Stats,
};

use crate::link::EmulationOptions;

pub use ackwire_room::demo::{CHAT_CHANNEL, MAX_CHAT_BYTES, POSITION_CHANNEL};
use ackwire_room::demo::{cookie_address as address, decode_position, encode_position, we_accept};

/// A connector whose connection ended while the peer is still in the room tries again after
/// this long (the acceptor side needs nothing: the peer reconnects to us).
pub const RECONNECT_DELAY: Duration = Duration::from_secs(1);

/// Something a link learned.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkEvent {
    /// The handshake with `peer` completed.
    Connected {
        /// Remote peer id.
        peer: u64,
    },
    /// `peer`'s dot is here.
    Position {
        /// Remote peer id.
        peer: u64,
        /// In [0, 1].
        x: f32,
        /// In [0, 1].
        y: f32,
    },
    /// A chat message from `peer`, delivered exactly once, in order.
    Chat {
        /// Remote peer id.
        peer: u64,
        /// The text (invalid UTF-8 replaced).
        text: String,
    },
    /// The connection with `peer` ended.
    Disconnected {
        /// Remote peer id.
        peer: u64,
        /// Why.
        reason: DisconnectReason,
    },
}

/// Why a datagram or a chat message was refused. Nothing changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// The peer has no link (never opened, or closed).
    #[error("no link with peer {0}")]
    UnknownPeer(u64),
    /// No connection with the peer yet (handshake under way) or any more.
    #[error("not connected to peer {0}")]
    NotConnected(u64),
    /// The connector's connection refused the datagram.
    #[error("refused by the connection: {0}")]
    Connection(#[from] ackwire_core::ConnectionError),
    /// The listener (acceptor or accepted connection) refused the datagram.
    #[error("refused by the listener: {0}")]
    Listener(#[from] ListenerError),
    /// A chat message over [`MAX_CHAT_BYTES`].
    #[error("chat messages are at most {MAX_CHAT_BYTES} bytes (got {0})")]
    ChatTooLong(usize),
    /// The connection would not queue the message.
    #[error("send refused: {0}")]
    Send(#[from] SendError),
}

/// Why the links could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinksSetupError {
    /// The connection configuration is invalid.
    #[error("connection config: {0}")]
    Config(#[from] ConnectionConfigError),
    /// The emulation settings are invalid.
    #[error("link emulation: {0}")]
    Emulation(#[from] EmulatorError),
}

/// Emulators of one link, both directions.
#[derive(Debug)]
struct Emulators {
    outbound: LinkEmulator,
    inbound: LinkEmulator,
    /// The impairment and when it starts (`--impair-after`).
    pending: Option<(Duration, EmulatorConfig)>,
}

#[derive(Debug)]
struct Remote {
    /// We connect to lower ids: our connection, once started.
    connector: Option<Connection>,
    /// Our role, fixed when the link opened (our id may change later).
    connects: bool,
    /// Connector whose connection ended: start again at this time.
    retry_at: Option<Duration>,
    emulators: Option<Emulators>,
    connected: bool,
}

/// All links of one room member, keyed by peer id. (A driver may key by any `u64` whose
/// order matches the peer ids' order among links opened under one `me`; see `driver.rs`.)
#[derive(Debug)]
pub struct Links {
    me: u64,
    config: ConnectionConfig,
    listener: Listener,
    remotes: BTreeMap<u64, Remote>,
    emulation: Option<EmulationOptions>,
    started: Duration,
    buf: Vec<u8>,
    reply: Vec<u8>,
    /// Handshake replies to send at the next poll.
    due: Vec<(u64, Vec<u8>)>,
    /// Connections of closed links still sending their disconnect packets.
    closing: Vec<(u64, Connection)>,
}

impl Links {
    /// Links for room member `me`, started at `now`. `secret`: 32 random bytes for the
    /// acceptor's cookie key. `emulation` applies to every link from its start.
    pub fn new(
        me: u64,
        now: Duration,
        secret: [u8; 32],
        emulation: Option<EmulationOptions>,
    ) -> Result<Links, LinksSetupError> {
        if let Some(e) = &emulation {
            e.config.validate()?;
        }
        let config = ConnectionConfig::default();
        let listener = Listener::new(config.clone(), secret)?;
        Ok(Links {
            me,
            buf: vec![0; config.max_datagram_size],
            reply: vec![0; 256],
            config,
            listener,
            remotes: BTreeMap::new(),
            emulation,
            started: now,
            due: Vec::new(),
            closing: Vec::new(),
        })
    }

    /// Our peer id. After a fresh join (the server forgot us) new links use the new id;
    /// links already open keep their roles.
    pub fn set_me(&mut self, me: u64) {
        self.me = me;
    }

    /// The transport to `peer` is up: start its link (as connector if `peer` < us).
    pub fn open(&mut self, now: Duration, peer: u64) -> Result<(), LinksSetupError> {
        if self.remotes.contains_key(&peer) {
            return Ok(());
        }
        let emulators = match &self.emulation {
            None => None,
            Some(options) => {
                let (initial, pending) = if options.impair_after.is_zero() {
                    (options.config.clone(), None)
                } else {
                    (
                        EmulatorConfig::default(),
                        Some((self.started + options.impair_after, options.config.clone())),
                    )
                };
                // Per link and per direction seeds, so links do not drop in lockstep.
                let seed = options.seed ^ peer.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                Some(Emulators {
                    outbound: LinkEmulator::new(initial.clone(), seed)?,
                    inbound: LinkEmulator::new(initial, seed ^ 0x5DEE_CE66_D1CE_5EED)?,
                    pending,
                })
            }
        };
        let connects = !we_accept(self.me, peer);
        let connector = if connects {
            Some(Connection::connect(self.config.clone(), now)?)
        } else {
            None
        };
        self.remotes.insert(
            peer,
            Remote {
                connector,
                connects,
                retry_at: None,
                emulators,
                connected: false,
            },
        );
        Ok(())
    }

    /// Ends the link with `peer`: its connection closes (the core still sends its
    /// disconnect packets at the next polls), and nothing more from `peer` is accepted.
    pub fn close(&mut self, peer: u64) {
        let Some(remote) = self.remotes.remove(&peer) else {
            return;
        };
        match remote.connector {
            Some(mut connection) => {
                connection.close();
                // Its `Disconnected` event is ours, not the application's: drop it.
                while connection.poll_event().is_some() {}
                self.closing.push((peer, connection));
            }
            None => {
                if let Some(connection) = self.listener.connection_mut(&address(peer)) {
                    connection.close();
                }
            }
        }
    }

    /// Whether `peer` has a link.
    pub fn has(&self, peer: u64) -> bool {
        self.remotes.contains_key(&peer)
    }

    /// A datagram from `peer`. Refused datagrams change nothing. Replies and data go out at
    /// the next [`poll`](Self::poll), which the driver runs after every receive.
    pub fn receive(&mut self, now: Duration, peer: u64, datagram: &[u8]) -> Result<(), LinkError> {
        let remote = self
            .remotes
            .get_mut(&peer)
            .ok_or(LinkError::UnknownPeer(peer))?;
        match &mut remote.emulators {
            Some(emulators) => {
                emulators.inbound.send(now, datagram);
                Ok(())
            }
            None => self.deliver(now, peer, datagram),
        }
    }

    fn deliver(&mut self, now: Duration, peer: u64, datagram: &[u8]) -> Result<(), LinkError> {
        let remote = self
            .remotes
            .get_mut(&peer)
            .ok_or(LinkError::UnknownPeer(peer))?;
        if remote.connects {
            let connection = remote
                .connector
                .as_mut()
                .ok_or(LinkError::NotConnected(peer))?;
            connection.receive(now, datagram)?;
            return Ok(());
        }
        if let Some(len) = self
            .listener
            .receive(now, &address(peer), datagram, &mut self.reply)?
        {
            // A challenge: straight back to the peer.
            let reply = self.reply[..len].to_vec();
            self.due.push((peer, reply));
        }
        Ok(())
    }

    /// Queues a chat message to `peer` on the reliable-ordered channel.
    pub fn send_chat(&mut self, peer: u64, text: &str) -> Result<(), LinkError> {
        if text.len() > MAX_CHAT_BYTES {
            return Err(LinkError::ChatTooLong(text.len()));
        }
        let connection = self
            .connection_mut(peer)
            .ok_or(LinkError::UnknownPeer(peer))?;
        if connection.state() != ConnectionState::Connected {
            return Err(LinkError::NotConnected(peer));
        }
        Ok(connection.send(CHAT_CHANNEL, text.as_bytes())?)
    }

    fn connection_mut(&mut self, peer: u64) -> Option<&mut Connection> {
        let remote = self.remotes.get_mut(&peer)?;
        match &mut remote.connector {
            Some(connection) => Some(connection),
            None => self.listener.connection_mut(&address(peer)),
        }
    }

    /// Delivers emulated arrivals, queues our newest `position` where none is queued, and
    /// sends everything due at `now` through `send(peer, datagram)`. Reports what happened.
    /// Call at [`poll_timeout`](Self::poll_timeout) and after every receive.
    pub fn poll(
        &mut self,
        now: Duration,
        position: (f32, f32),
        mut send: impl FnMut(u64, &[u8]),
        events: &mut Vec<LinkEvent>,
    ) {
        let mut arrived = Vec::new();
        for (&peer, remote) in &mut self.remotes {
            if let Some(emulators) = &mut remote.emulators {
                if let Some((at, config)) = &emulators.pending {
                    if now >= *at {
                        // Validated in `new`.
                        let _ = emulators.outbound.set_config(config.clone());
                        let _ = emulators.inbound.set_config(config.clone());
                        emulators.pending = None;
                    }
                }
                while let Some(datagram) = emulators.inbound.poll_receive(now) {
                    arrived.push((peer, datagram));
                }
            }
            if remote.connector.is_none() && remote.connects {
                if let Some(at) = remote.retry_at.filter(|at| now >= *at) {
                    let _ = at;
                    remote.retry_at = None;
                    remote.connector = Connection::connect(self.config.clone(), now).ok();
                }
            }
        }
        for (peer, datagram) in arrived {
            // Refused after emulation: dropped exactly as off the wire.
            let _ = self.deliver(now, peer, &datagram);
        }
        let bytes = encode_position(position.0, position.1);
        let peers: Vec<u64> = self.remotes.keys().copied().collect();
        for peer in peers {
            if let Some(connection) = self.connection_mut(peer) {
                // Newest wins: keep at most one position queued.
                if connection.state() == ConnectionState::Connected
                    && connection.buffered().unreliable_queued == 0
                {
                    let _ = connection.send(POSITION_CHANNEL, &bytes);
                }
            }
        }
        let mut out = std::mem::take(&mut self.due);
        for (&peer, remote) in &mut self.remotes {
            if let Some(connection) = &mut remote.connector {
                while let Ok(Some(len)) = connection.poll_transmit(now, &mut self.buf) {
                    out.push((peer, self.buf[..len].to_vec()));
                }
            }
        }
        for (peer, connection) in &mut self.closing {
            while let Ok(Some(len)) = connection.poll_transmit(now, &mut self.buf) {
                out.push((*peer, self.buf[..len].to_vec()));
            }
        }
        self.closing
            .retain(|(_, c)| c.state() != ConnectionState::Closed);
        while let Ok(Some((to, len))) = self.listener.poll_transmit(now, &mut self.buf) {
            if let Some(peer) = std::str::from_utf8(to).ok().and_then(|t| t.parse().ok()) {
                out.push((peer, self.buf[..len].to_vec()));
            }
        }
        for (peer, datagram) in out {
            match self
                .remotes
                .get_mut(&peer)
                .and_then(|r| r.emulators.as_mut())
            {
                Some(emulators) => emulators.outbound.send(now, &datagram),
                // A closed link's last disconnect packets still go out while the transport is.
                None => send(peer, &datagram),
            }
        }
        for (&peer, remote) in &mut self.remotes {
            if let Some(emulators) = &mut remote.emulators {
                while let Some(datagram) = emulators.outbound.poll_receive(now) {
                    send(peer, &datagram);
                }
            }
        }
        self.drain_events(now, events);
    }

    fn drain_events(&mut self, now: Duration, events: &mut Vec<LinkEvent>) {
        for (&peer, remote) in &mut self.remotes {
            let Some(connection) = &mut remote.connector else {
                continue;
            };
            let mut ended = false;
            while let Some(event) = connection.poll_event() {
                ended |= matches!(event, ConnectionEvent::Disconnected { .. });
                push_event(peer, event, &mut remote.connected, events);
            }
            if ended && connection.state() == ConnectionState::Closed {
                remote.connector = None;
                remote.retry_at = Some(now + RECONNECT_DELAY);
            }
        }
        while let Some(polled) = self.listener.poll_event() {
            let event = polled.event;
            let Some(peer) = std::str::from_utf8(polled.address)
                .ok()
                .and_then(|t| t.parse().ok())
            else {
                continue;
            };
            // A link closed here (`close`) has told the driver already.
            if let Some(remote) = self.remotes.get_mut(&peer) {
                push_event(peer, event, &mut remote.connected, events);
            }
        }
    }

    /// When [`poll`](Self::poll) must run next, if anything is pending.
    pub fn poll_timeout(&mut self) -> Option<Duration> {
        if !self.due.is_empty() {
            return Some(Duration::ZERO);
        }
        let emulators = self.remotes.values().flat_map(|r| {
            r.emulators.iter().flat_map(|e| {
                [
                    e.outbound.poll_timeout(),
                    e.inbound.poll_timeout(),
                    e.pending.as_ref().map(|(at, _)| *at),
                ]
            })
        });
        let connectors = self.remotes.values().map(|r| {
            r.connector
                .as_ref()
                .and_then(Connection::poll_timeout)
                .or(r.retry_at)
        });
        emulators
            .chain(connectors)
            .chain(self.closing.iter().map(|(_, c)| c.poll_timeout()))
            .chain([self.listener.poll_timeout()])
            .flatten()
            .min()
    }

    /// Each open link's stats, by peer id (links still in their handshake have none).
    pub fn stats(&self) -> Vec<(u64, Stats)> {
        self.remotes
            .iter()
            .filter_map(|(&peer, remote)| {
                let connection = match &remote.connector {
                    Some(connection) => Some(connection),
                    None => self.listener.connection(&address(peer)),
                }?;
                Some((peer, connection.stats()))
            })
            .collect()
    }
}

fn push_event(
    peer: u64,
    event: ConnectionEvent,
    connected: &mut bool,
    events: &mut Vec<LinkEvent>,
) {
    match event {
        ConnectionEvent::Connected { .. } => {
            *connected = true;
            events.push(LinkEvent::Connected { peer });
        }
        ConnectionEvent::Message { channel, bytes } if channel == POSITION_CHANNEL => {
            if let Some((x, y)) = decode_position(&bytes) {
                events.push(LinkEvent::Position { peer, x, y });
            }
        }
        ConnectionEvent::Message { channel, bytes } if channel == CHAT_CHANNEL => {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            events.push(LinkEvent::Chat { peer, text });
        }
        ConnectionEvent::Disconnected { reason } => {
            *connected = false;
            events.push(LinkEvent::Disconnected { peer, reason });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Members 1 and 2 over a perfect wire until `until`; returns each side's events.
    fn exchange(
        a: &mut Links,
        b: &mut Links,
        from: Duration,
        until: Duration,
        events: &mut (Vec<LinkEvent>, Vec<LinkEvent>),
    ) {
        let mut now = from;
        while now < until {
            let (mut to_b, mut to_a) = (Vec::new(), Vec::new());
            a.poll(
                now,
                (0.25, 0.5),
                |_, d| to_b.push(d.to_vec()),
                &mut events.0,
            );
            b.poll(
                now,
                (0.75, 1.0),
                |_, d| to_a.push(d.to_vec()),
                &mut events.1,
            );
            for d in to_b {
                let _ = b.receive(now, 1, &d);
            }
            for d in to_a {
                let _ = a.receive(now, 2, &d);
            }
            let next = [a.poll_timeout(), b.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            now = next.unwrap_or(until).max(now + Duration::from_micros(1));
        }
    }

    fn pair() -> (Links, Links) {
        let mut a = Links::new(1, Duration::ZERO, [1; 32], None).unwrap();
        let mut b = Links::new(2, Duration::ZERO, [2; 32], None).unwrap();
        a.open(Duration::ZERO, 2).unwrap();
        b.open(Duration::ZERO, 1).unwrap();
        (a, b)
    }

    /// A pair after one second of exchange (connected), with the events so far.
    fn connected_pair() -> (Links, Links, (Vec<LinkEvent>, Vec<LinkEvent>)) {
        let (mut a, mut b) = pair();
        let mut events = (Vec::new(), Vec::new());
        let second = Duration::from_secs(1);
        exchange(&mut a, &mut b, Duration::ZERO, second, &mut events);
        (a, b, events)
    }

    #[test]
    fn lower_id_accepts_and_both_see_positions_and_a_chat_exactly_once() {
        let (mut a, mut b, mut events) = connected_pair();
        assert!(events.0.contains(&LinkEvent::Connected { peer: 2 }));
        assert!(events.1.contains(&LinkEvent::Connected { peer: 1 }));
        b.send_chat(1, "hi").unwrap();
        exchange(
            &mut a,
            &mut b,
            Duration::from_secs(1),
            Duration::from_secs(3),
            &mut events,
        );
        assert!(events.0.contains(&LinkEvent::Position {
            peer: 2,
            x: 0.75,
            y: 1.0
        }));
        assert!(events.1.contains(&LinkEvent::Position {
            peer: 1,
            x: 0.25,
            y: 0.5
        }));
        let chats: Vec<_> = events
            .0
            .iter()
            .filter(|e| matches!(e, LinkEvent::Chat { .. }))
            .collect();
        assert_eq!(
            chats,
            [&LinkEvent::Chat {
                peer: 2,
                text: "hi".into()
            }]
        );
        assert_eq!(a.stats().len(), 1);
        assert!(a.stats()[0].1.counters.packets_acked > 0);
    }

    #[test]
    fn chat_crosses_an_emulated_lossy_link_in_order_once() {
        let lossy = EmulationOptions {
            config: EmulatorConfig {
                loss_percent: 30.0,
                ..EmulatorConfig::default()
            },
            seed: 5,
            impair_after: Duration::ZERO,
        };
        let mut a = Links::new(1, Duration::ZERO, [1; 32], Some(lossy)).unwrap();
        let mut b = Links::new(2, Duration::ZERO, [2; 32], None).unwrap();
        a.open(Duration::ZERO, 2).unwrap();
        b.open(Duration::ZERO, 1).unwrap();
        let mut events = (Vec::new(), Vec::new());
        exchange(
            &mut a,
            &mut b,
            Duration::ZERO,
            Duration::from_secs(3),
            &mut events,
        );
        for i in 0..20 {
            a.send_chat(2, &format!("m{i}")).unwrap();
        }
        exchange(
            &mut a,
            &mut b,
            Duration::from_secs(3),
            Duration::from_secs(20),
            &mut events,
        );
        let chats: Vec<String> = events
            .1
            .iter()
            .filter_map(|e| match e {
                LinkEvent::Chat { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(chats, (0..20).map(|i| format!("m{i}")).collect::<Vec<_>>());
        let loss = a.stats()[0].1.loss_percent;
        assert!((10.0..=50.0).contains(&loss), "measured loss {loss}%");
    }

    #[test]
    fn refused_input_is_typed_and_changes_nothing() {
        let (mut a, mut b, _) = connected_pair();
        let before = a.stats();
        assert!(matches!(
            a.receive(Duration::from_secs(1), 9, b"x"),
            Err(LinkError::UnknownPeer(9))
        ));
        assert!(a.receive(Duration::from_secs(1), 2, &[0xFF, 0]).is_err());
        assert!(b.receive(Duration::from_secs(1), 1, &[]).is_err());
        assert_eq!(a.stats(), before);
        assert!(matches!(
            a.send_chat(2, &"x".repeat(MAX_CHAT_BYTES + 1)),
            Err(LinkError::ChatTooLong(_))
        ));
        assert!(matches!(
            a.send_chat(7, "hi"),
            Err(LinkError::UnknownPeer(7))
        ));
    }

    #[test]
    fn a_connector_whose_peer_went_quiet_connects_again_after_the_delay() {
        let (mut a, mut b, mut events) = connected_pair();
        // b (the connector) hears nothing for longer than the idle timeout.
        let mut now = Duration::from_secs(1);
        let quiet_until = now + ConnectionConfig::default().idle_timeout + Duration::from_secs(1);
        while now < quiet_until {
            b.poll(now, (0.0, 0.0), |_, _| {}, &mut events.1);
            now += Duration::from_millis(50);
        }
        assert!(events.1.iter().any(|e| matches!(
            e,
            LinkEvent::Disconnected {
                peer: 1,
                reason: DisconnectReason::TimedOut
            }
        )));
        events.1.clear();
        a.close(2);
        a.open(now, 2).unwrap();
        exchange(
            &mut a,
            &mut b,
            now,
            now + Duration::from_secs(3),
            &mut events,
        );
        assert!(events.1.contains(&LinkEvent::Connected { peer: 1 }));
    }
}
