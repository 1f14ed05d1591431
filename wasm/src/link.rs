//! One link to one remote peer: a core [`Connection`] (the acceptor side holds an
//! [`Acceptor`] until the handshake completes), optionally wrapped in the core's link
//! emulator in both directions. Channel 0 (unreliable-sequenced) carries the demo's
//! position, channel 1 (reliable-ordered) the chat.
//!
//! Plain Rust with no browser types, so it is tested natively; `client.rs` moves its bytes
//! over an RTCDataChannel.

use std::time::Duration;

use ackwire_core::emulator::{EmulatorConfig, LinkEmulator};
use ackwire_core::{
    Accept, Acceptor, Connection, ConnectionConfig, ConnectionEvent, ConnectionState, Stats,
};

use ackwire_room::demo::{
    CHAT_CHANNEL, MAX_CHAT_BYTES, POSITION_CHANNEL, decode_position, encode_position,
};

/// Something the link learned that the page shows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LinkEvent {
    /// The handshake completed.
    Connected,
    /// The remote player's dot is here.
    Position { x: f32, y: f32 },
    /// A chat message, delivered exactly once, in order.
    Chat { text: String },
    /// The peer acknowledged its first packet from us, at this time.
    FirstAck { at: Duration },
    /// The connection ended (`reason` is the core's `DisconnectReason`).
    Disconnected { reason: String },
}

/// Link emulation applied to this peer's traffic: the same settings in both directions.
#[derive(Debug, Clone)]
pub(crate) struct Emulation {
    pub(crate) config: EmulatorConfig,
    pub(crate) seed: u64,
}

/// Which side of the handshake this end takes. Between two browsers there is no server, so
/// the peer with the lower signalling id accepts (see `client.rs`).
#[derive(Debug)]
pub(crate) enum Role {
    Connect,
    /// `secret`: 32 random bytes for the acceptor's cookie key.
    Accept {
        secret: [u8; 32],
    },
}

#[derive(Debug)]
pub(crate) struct Link {
    /// Present on the accepting side until the handshake yields the connection.
    acceptor: Option<Acceptor>,
    connection: Option<Connection>,
    /// The remote's address as the acceptor's cookie binds it: its signalling peer id.
    address: Vec<u8>,
    outbound: Option<LinkEmulator>,
    inbound: Option<LinkEmulator>,
    /// Handshake replies written by the acceptor, sent at the next poll.
    replies: Vec<Vec<u8>>,
    acked_any: bool,
    buf: Vec<u8>,
}

impl Link {
    pub(crate) fn new(
        now: Duration,
        role: Role,
        address: &[u8],
        emulation: Option<&Emulation>,
    ) -> Result<Link, String> {
        let config = ConnectionConfig::default();
        let buf = vec![0; config.max_datagram_size];
        let (acceptor, connection) = match role {
            Role::Connect => (
                None,
                Some(Connection::connect(config, now).map_err(|e| e.to_string())?),
            ),
            Role::Accept { secret } => (
                Some(Acceptor::new(config, secret).map_err(|e| e.to_string())?),
                None,
            ),
        };
        let emulator = |salt: u64| -> Result<Option<LinkEmulator>, String> {
            emulation
                .map(|e| {
                    LinkEmulator::new(e.config.clone(), e.seed ^ salt).map_err(|e| e.to_string())
                })
                .transpose()
        };
        Ok(Link {
            acceptor,
            connection,
            address: address.to_vec(),
            outbound: emulator(0x6f75_7462)?,
            inbound: emulator(0x696e_626e)?,
            replies: Vec::new(),
            acked_any: false,
            buf,
        })
    }

    /// A datagram arrived from the peer. Malformed or foreign datagrams are refused by the
    /// core with a typed error and change nothing; the caller counts them.
    pub(crate) fn receive(
        &mut self,
        now: Duration,
        datagram: &[u8],
        events: &mut Vec<LinkEvent>,
    ) -> Result<(), String> {
        match &mut self.inbound {
            Some(emulator) => {
                emulator.send(now, datagram);
                Ok(())
            }
            None => self.deliver(now, datagram, events),
        }
    }

    fn deliver(
        &mut self,
        now: Duration,
        datagram: &[u8],
        events: &mut Vec<LinkEvent>,
    ) -> Result<(), String> {
        if let Some(connection) = &mut self.connection {
            connection
                .receive(now, datagram)
                .map_err(|e| e.to_string())?;
        } else if let Some(acceptor) = &mut self.acceptor {
            let mut reply = [0u8; 256];
            match acceptor
                .receive(now, &self.address, datagram, &mut reply)
                .map_err(|e| e.to_string())?
            {
                Accept::Reply { len } => self.replies.push(reply[..len].to_vec()),
                Accept::Connection(connection) => {
                    self.connection = Some(*connection);
                    self.acceptor = None;
                }
                _ => {}
            }
        }
        self.drain_events(now, events);
        Ok(())
    }

    /// Queues a chat message on the reliable-ordered channel.
    pub(crate) fn send_chat(&mut self, text: &str) -> Result<(), String> {
        if text.len() > MAX_CHAT_BYTES {
            return Err(format!("chat messages are at most {MAX_CHAT_BYTES} bytes"));
        }
        match &mut self.connection {
            Some(c) if c.state() != ConnectionState::Closed => c
                .send(CHAT_CHANNEL, text.as_bytes())
                .map_err(|e| e.to_string()),
            _ => Err("not connected yet".into()),
        }
    }

    /// Sends what is due at `now` through `send`, delivers emulated arrivals, and reports what
    /// happened. Call at [`poll_timeout`](Self::poll_timeout) and after every receive.
    pub(crate) fn poll(
        &mut self,
        now: Duration,
        position: (f32, f32),
        mut send: impl FnMut(&[u8]),
        events: &mut Vec<LinkEvent>,
    ) {
        while let Some(datagram) = self.inbound.as_mut().and_then(|e| e.poll_receive(now)) {
            // A datagram the emulator lets through is handled like a real arrival; one the
            // core refuses is dropped here exactly as it would be off the wire.
            let _ = self.deliver(now, &datagram, events);
        }
        let mut out: Vec<Vec<u8>> = std::mem::take(&mut self.replies);
        if let Some(connection) = &mut self.connection {
            // Newest wins: keep at most one position queued, so each packet carries a fresh one.
            if connection.state() == ConnectionState::Connected
                && connection.buffered().unreliable_queued == 0
            {
                let bytes = encode_position(position.0, position.1);
                let _ = connection.send(POSITION_CHANNEL, &bytes);
            }
            while let Ok(Some(len)) = connection.poll_transmit(now, &mut self.buf) {
                out.push(self.buf[..len].to_vec());
            }
        }
        for datagram in out {
            match &mut self.outbound {
                Some(emulator) => emulator.send(now, &datagram),
                None => send(&datagram),
            }
        }
        while let Some(datagram) = self.outbound.as_mut().and_then(|e| e.poll_receive(now)) {
            send(&datagram);
        }
        self.drain_events(now, events);
    }

    fn drain_events(&mut self, now: Duration, events: &mut Vec<LinkEvent>) {
        let Some(connection) = &mut self.connection else {
            return;
        };
        while let Some(event) = connection.poll_event() {
            match event {
                ConnectionEvent::Connected { .. } => events.push(LinkEvent::Connected),
                ConnectionEvent::Message { channel, bytes } if channel == POSITION_CHANNEL => {
                    if let Some((x, y)) = decode_position(&bytes) {
                        events.push(LinkEvent::Position { x, y });
                    }
                }
                ConnectionEvent::Message { channel, bytes } if channel == CHAT_CHANNEL => {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    events.push(LinkEvent::Chat { text });
                }
                ConnectionEvent::Disconnected { reason } => events.push(LinkEvent::Disconnected {
                    reason: format!("{reason:?}"),
                }),
                _ => {}
            }
        }
        if !self.acked_any && connection.stats().counters.packets_acked > 0 {
            self.acked_any = true;
            events.push(LinkEvent::FirstAck { at: now });
        }
    }

    /// When [`poll`](Self::poll) must run next, if anything is pending.
    pub(crate) fn poll_timeout(&self) -> Option<Duration> {
        if !self.replies.is_empty() {
            // A handshake reply is waiting: send it at once.
            return Some(Duration::ZERO);
        }
        let connection = self.connection.as_ref().and_then(Connection::poll_timeout);
        [&self.outbound, &self.inbound]
            .into_iter()
            .flatten()
            .filter_map(LinkEmulator::poll_timeout)
            .chain(connection)
            .min()
    }

    /// The core's stats, once the connection exists.
    pub(crate) fn stats(&self) -> Option<Stats> {
        self.connection.as_ref().map(Connection::stats)
    }

    /// Starts a clean disconnect (the core sends it redundantly).
    pub(crate) fn close(&mut self) {
        if let Some(connection) = &mut self.connection {
            connection.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(emulation: Option<&Emulation>) -> (Link, Link) {
        let a = Link::new(Duration::ZERO, Role::Connect, b"2", emulation).unwrap();
        let b = Link::new(Duration::ZERO, Role::Accept { secret: [9; 32] }, b"1", None).unwrap();
        (a, b)
    }

    /// Runs two links against each other over a perfect wire until `until`.
    fn exchange(
        a: &mut Link,
        b: &mut Link,
        from: Duration,
        until: Duration,
        ev_a: &mut Vec<LinkEvent>,
        ev_b: &mut Vec<LinkEvent>,
    ) {
        let mut now = from;
        while now < until {
            let (mut to_b, mut to_a) = (Vec::new(), Vec::new());
            a.poll(now, (0.25, 0.5), |d| to_b.push(d.to_vec()), ev_a);
            b.poll(now, (0.75, 1.0), |d| to_a.push(d.to_vec()), ev_b);
            for d in to_b {
                b.receive(now, &d, ev_b).unwrap();
            }
            for d in to_a {
                a.receive(now, &d, ev_a).unwrap();
            }
            let next = [a.poll_timeout(), b.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            now = next.unwrap_or(until).max(now + Duration::from_micros(1));
        }
    }

    /// A pair run from time zero until `until`, with the events each side saw.
    fn connected_pair(
        emulation: Option<&Emulation>,
        until: Duration,
    ) -> (Link, Link, Vec<LinkEvent>, Vec<LinkEvent>) {
        let (mut a, mut b) = pair(emulation);
        let (mut ev_a, mut ev_b) = (Vec::new(), Vec::new());
        exchange(&mut a, &mut b, Duration::ZERO, until, &mut ev_a, &mut ev_b);
        (a, b, ev_a, ev_b)
    }

    #[test]
    fn browsers_connect_and_exchange_positions_and_chat_exactly_once() {
        let (mut a, mut b, mut ev_a, mut ev_b) = connected_pair(None, Duration::from_secs(1));
        assert!(ev_a.contains(&LinkEvent::Connected));
        assert!(ev_b.contains(&LinkEvent::Connected));
        a.send_chat("hello").unwrap();
        exchange(
            &mut a,
            &mut b,
            Duration::from_secs(1),
            Duration::from_secs(3),
            &mut ev_a,
            &mut ev_b,
        );
        assert!(ev_b.contains(&LinkEvent::Position { x: 0.25, y: 0.5 }));
        assert!(ev_a.contains(&LinkEvent::Position { x: 0.75, y: 1.0 }));
        let chats: Vec<_> = ev_b
            .iter()
            .filter(|e| matches!(e, LinkEvent::Chat { .. }))
            .collect();
        assert_eq!(
            chats,
            [&LinkEvent::Chat {
                text: "hello".into()
            }]
        );
        let first_acks = ev_a
            .iter()
            .filter(|e| matches!(e, LinkEvent::FirstAck { .. }))
            .count();
        assert_eq!(first_acks, 1);
    }

    #[test]
    fn chat_survives_emulated_loss_and_arrives_in_order_once() {
        let lossy = Emulation {
            config: EmulatorConfig {
                loss_percent: 30.0,
                ..EmulatorConfig::default()
            },
            seed: 11,
        };
        let (mut a, mut b, mut ev_a, mut ev_b) =
            connected_pair(Some(&lossy), Duration::from_secs(2));
        for i in 0..20 {
            a.send_chat(&format!("m{i}")).unwrap();
        }
        exchange(
            &mut a,
            &mut b,
            Duration::from_secs(2),
            Duration::from_secs(20),
            &mut ev_a,
            &mut ev_b,
        );
        let chats: Vec<String> = ev_b
            .iter()
            .filter_map(|e| match e {
                LinkEvent::Chat { text } => Some(text.clone()),
                _ => None,
            })
            .collect();
        let expected: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
        assert_eq!(chats, expected);
        let loss = a.stats().unwrap().loss_percent;
        assert!((10.0..=50.0).contains(&loss), "measured loss {loss}%");
    }

    #[test]
    fn garbage_datagrams_are_refused_without_disturbing_the_link() {
        let (_, mut b, _, _) = connected_pair(None, Duration::from_secs(1));
        let before = b.stats();
        let mut events = Vec::new();
        assert!(
            b.receive(Duration::from_secs(1), &[0xFF, 0x00], &mut events)
                .is_err()
        );
        assert!(b.receive(Duration::from_secs(1), &[], &mut events).is_err());
        assert_eq!(b.stats(), before);
        assert!(events.is_empty());
    }

    #[test]
    fn chat_before_the_handshake_or_too_long_is_refused() {
        let (mut a, mut b) = pair(None);
        assert!(
            b.send_chat("early").is_err(),
            "the acceptor has no connection yet"
        );
        assert!(a.send_chat(&"x".repeat(MAX_CHAT_BYTES + 1)).is_err());
    }
}
