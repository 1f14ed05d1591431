//! The peer's side of the protocol: the core's [`Listener`] for `listen`, one core
//! [`Connection`] for `connect`, the demo traffic between them, and counters of every
//! datagram that reached no connection.
//!
//! Nothing here knows about sockets or clocks: datagrams come in through
//! [`Connections::on_datagram`], go out through the [`Link`] given to each call, and
//! [`Connections::poll`] runs whatever is due.

use std::net::SocketAddr;
use std::time::Duration;

use ackwire_core::{
    Connection, ConnectionConfig, ConnectionError, ConnectionEvent, ConnectionState, Counters,
    DisconnectReason, HandshakeError, Listener, ListenerError, NoiseInitiator, NoiseResponder,
    ReceiveError, StaticKey, Stats,
};
use serde::Serialize;

use crate::keys::Fingerprint;
use crate::link::{self, Link};

/// The design's MTU budget: larger datagrams are refused before reaching the core.
pub const MAX_DATAGRAM: usize = 1200;

/// The channel of the connecting side's state messages: the default `ConnectionConfig`'s
/// unreliable-sequenced one (newest wins).
const STATE_CHANNEL: u8 = 0;

/// Bytes of each demo message a connecting peer sends.
pub const DEMO_PAYLOAD_LEN: usize = 32;

/// The connecting side's demo message: a running counter and a fixed label, standing in for
/// a game's state update. One rides in every data packet.
fn demo_message(counter: u64) -> [u8; DEMO_PAYLOAD_LEN] {
    const LABEL: &[u8; DEMO_PAYLOAD_LEN - 8] = b"ackwire demo state ....!";
    let mut message = [0u8; DEMO_PAYLOAD_LEN];
    message[..8].copy_from_slice(&counter.to_be_bytes());
    message[8..].copy_from_slice(LABEL);
    message
}

/// Why a datagram was refused before it reached the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatagramError {
    /// Larger than [`MAX_DATAGRAM`]; `len` is the datagram's real length.
    #[error("{len}-byte datagram exceeds the {max}-byte limit", max = MAX_DATAGRAM)]
    Oversized {
        /// The datagram's length in bytes.
        len: usize,
    },
    /// No bytes at all.
    #[error("empty datagram")]
    Empty,
}

impl DatagramError {
    /// Checks a datagram's size before the core parses it.
    pub fn check(datagram: &[u8]) -> Result<(), DatagramError> {
        match datagram.len() {
            0 => Err(DatagramError::Empty),
            len if len > MAX_DATAGRAM => Err(DatagramError::Oversized { len }),
            _ => Ok(()),
        }
    }
}

/// Datagrams that reached no connection, or that a connection refused, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// Larger than [`MAX_DATAGRAM`].
    pub oversized: u64,
    /// Not an ackwire packet: empty, truncated, another wire version, garbled header,
    /// malformed control packet or message frames.
    pub malformed: u64,
    /// A well-formed packet its connection refused: duplicate, stale, acking packets never
    /// sent, or for another connection id (a stray or forged sender).
    pub rejected: u64,
    /// From an address without a connection and not a handshake step (a `connect` peer: from
    /// any address but its listener's).
    pub foreign: u64,
    /// A handshake step the listener refused: wrong protocol id, or a forged, expired or
    /// replayed cookie, or too many handshakes at once; or a channel request (from any
    /// address: raw UDP takes the cookie handshake alone).
    pub handshake: u64,
    /// From a new address while the connection table was full.
    pub table_full: u64,
    /// Harmless repeats of a step already taken (the redundant copies of a disconnect, an
    /// `accepted` the connector already had): not an attack, counted apart.
    pub late: u64,
}

impl Dropped {
    /// Everything refused except the harmless `late` repeats.
    pub fn total(&self) -> u64 {
        self.oversized
            + self.malformed
            + self.rejected
            + self.foreign
            + self.handshake
            + self.table_full
    }

    fn count_datagram(&mut self, error: &DatagramError) -> &'static str {
        match error {
            DatagramError::Oversized { .. } => {
                self.oversized += 1;
                "oversized"
            }
            DatagramError::Empty => {
                self.malformed += 1;
                "malformed"
            }
        }
    }

    fn count_connection(&mut self, error: &ConnectionError) -> &'static str {
        match error {
            ConnectionError::Empty
            | ConnectionError::Control(_)
            | ConnectionError::Frame(_)
            | ConnectionError::Packet(ReceiveError::Header(_)) => {
                self.malformed += 1;
                "malformed"
            }
            ConnectionError::Unexpected { .. } => {
                self.late += 1;
                "late"
            }
            _ => {
                self.rejected += 1;
                "rejected"
            }
        }
    }

    fn count_listener(&mut self, error: &ListenerError) -> &'static str {
        match error {
            ListenerError::Connection(e) => self.count_connection(e),
            ListenerError::Full(_) => {
                self.table_full += 1;
                "table full"
            }
            ListenerError::Handshake(HandshakeError::Control(_))
            | ListenerError::Handshake(HandshakeError::UnsupportedVersion(_)) => {
                self.malformed += 1;
                "malformed"
            }
            // The copies of a disconnect that arrive after its connection is gone.
            ListenerError::Handshake(HandshakeError::LateDisconnect { .. }) => {
                self.late += 1;
                "late"
            }
            ListenerError::Handshake(HandshakeError::UnknownConnection) => {
                self.foreign += 1;
                "foreign"
            }
            _ => {
                self.handshake += 1;
                "handshake"
            }
        }
    }
}

/// How a `connect` peer's connection ended, for the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Still running, or ended on this side's request (Ctrl-C, `--duration`).
    Clean,
    /// The listener closed the connection.
    ClosedByPeer,
    /// The listener never completed the handshake.
    Unreachable,
    /// The listener fell silent for the idle timeout.
    TimedOut,
    /// This side refused the listener: not the pinned key, a key exchange that did not
    /// authenticate, or no encryption.
    Refused,
}

#[derive(Debug)]
enum Side {
    // Boxed: one of either exists per process, and the listener is the larger by far.
    Listen(Box<Listener>),
    Connect {
        remote: SocketAddr,
        connection: Box<Connection>,
        demo_sent: u64,
    },
}

/// All connections of one peer.
#[derive(Debug)]
pub struct Connections {
    side: Side,
    dropped: Dropped,
    /// Echoed messages the listener could not queue (a full channel queue).
    echo_refused: u64,
    /// Times the core refused to write a packet (a `TransmitError`): a bug, counted and
    /// logged while every other connection keeps being served.
    transmit_errors: u64,
    ending: Ending,
    closing: bool,
    buf: Vec<u8>,
    /// Room for a secure challenge (65 bytes).
    reply: [u8; 128],
    /// The connector's pinned listener key, if any.
    pinned: Option<Fingerprint>,
}

/// Whether and how a peer encrypts its links (`docs/wire.md`, "Key exchange").
#[derive(Debug, Clone)]
pub enum Security {
    /// Plaintext packets, no key exchange (`--insecure`): for debugging with a capture.
    Off,
    /// A listener with this static key (`--key FILE`, or a new one per start).
    Listener(StaticKey),
    /// A connector, pinning the listener's key (`--server-key`) or trusting it on first use.
    Connector {
        /// The pinned fingerprint, if any.
        pinned: Option<Fingerprint>,
    },
}

impl Connections {
    /// A listener keyed with `secret` (32 random bytes, new at each start) serving up to
    /// `max_connections` peers.
    pub fn listen(
        config: ConnectionConfig,
        secret: [u8; 32],
        max_connections: usize,
    ) -> Result<Connections, ackwire_core::ConnectionConfigError> {
        let listener = Listener::new(config, secret)?.with_max_connections(max_connections);
        Ok(Connections::new(Side::Listen(Box::new(listener))))
    }

    /// A connector to `remote`, starting its handshake at `now`.
    pub fn connect(
        config: ConnectionConfig,
        now: Duration,
        remote: SocketAddr,
    ) -> Result<Connections, ackwire_core::ConnectionConfigError> {
        let connection = Box::new(Connection::connect(config, now)?);
        Ok(Connections::new(Side::Connect {
            remote,
            connection,
            demo_sent: 0,
        }))
    }

    /// Encrypts this peer's connections (see [`Security`]): a `listen` peer requires the key
    /// exchange of every connector, with `key` as its static key; a `connect` peer runs it
    /// against its pinned key or, without one, takes the listener's on first use. Call it
    /// before the first datagram. Refused for a security of the other role.
    pub fn secure(&mut self, security: Security) -> Result<(), ackwire_core::ProtectError> {
        match (&mut self.side, security) {
            (_, Security::Off) => Ok(()),
            (Side::Listen(listener), Security::Listener(key)) => {
                listener.set_responder(Box::new(NoiseResponder::nk(key)))
            }
            (Side::Connect { connection, .. }, Security::Connector { pinned }) => {
                self.pinned = pinned;
                connection.secure(NoiseInitiator::nk(pinned.map(|f| f.0)))
            }
            _ => Err(ackwire_core::ProtectError::AlreadyProtected),
        }
    }

    fn new(side: Side) -> Connections {
        Connections {
            side,
            dropped: Dropped::default(),
            echo_refused: 0,
            transmit_errors: 0,
            ending: Ending::Clean,
            closing: false,
            buf: vec![0; MAX_DATAGRAM],
            reply: [0; 128],
            pinned: None,
        }
    }

    /// Hands one incoming datagram to the listener or the connection, then runs whatever it
    /// made due. Anything refused is counted, logged at debug with its length and reason, and
    /// changes no connection. A connect request is answered at once with a challenge of the
    /// same size (never larger, so a spoofed source address gains an attacker nothing).
    /// A protected connection opens `datagram` in place (its bytes are unspecified after).
    ///
    /// `arrived` is when the datagram arrived (a kernel timestamp, or an emulated arrival's
    /// due time), `clock` the driver's clock: the core takes the datagram in at `arrived`, so
    /// the ack delay it reports starts there, and what it answers is stamped with the clock
    /// read after taking it in (a handshake's key exchange takes its time: this side's hold,
    /// not the path's).
    pub fn on_datagram(
        &mut self,
        arrived: Duration,
        clock: impl Fn() -> Duration,
        from: SocketAddr,
        datagram: &mut [u8],
        link: &mut Link,
    ) {
        if let Err(e) = DatagramError::check(datagram) {
            let kind = self.dropped.count_datagram(&e);
            tracing::debug!(%from, len = datagram.len(), kind, error = %e, "datagram refused");
            return;
        }
        let refused = match &mut self.side {
            Side::Listen(listener) => {
                let address = link::address_bytes(from);
                match listener.receive_in_place(arrived, &address, datagram, &mut self.reply) {
                    Ok(Some(len)) => {
                        link.send(clock(), from, &self.reply[..len]);
                        return;
                    }
                    // Answer at once (the echo, a prompt ack), as a raw echo would: the
                    // connection's state is still in cache, and the kernel's too.
                    Ok(None) => return self.poll(clock(), link),
                    Err(e) => (self.dropped.count_listener(&e), e.to_string()),
                }
            }
            Side::Connect {
                remote, connection, ..
            } => {
                if from != *remote {
                    self.dropped.foreign += 1;
                    tracing::debug!(%from, len = datagram.len(), "datagram from a foreign address dropped");
                    return;
                }
                match connection.receive_in_place(arrived, datagram) {
                    Ok(()) => return,
                    Err(e) => (self.dropped.count_connection(&e), e.to_string()),
                }
            }
        };
        let (kind, error) = refused;
        tracing::debug!(%from, len = datagram.len(), kind, error, "datagram refused");
    }

    /// Runs everything due at `now`: takes events (the listener queues its echoes), sends
    /// every due packet through `link`, and takes the events that sending raised.
    pub fn poll(&mut self, now: Duration, link: &mut Link) {
        self.drain_events();
        match &mut self.side {
            Side::Listen(listener) => loop {
                match listener.poll_transmit(now, &mut self.buf) {
                    Ok(Some((to, len))) => match link::parse_address(to) {
                        Some(to) => link.send(now, to, &self.buf[..len]),
                        // Listener keys are `address_bytes`; a key that is not cannot be
                        // answered, and the other connections still can.
                        None => {
                            self.transmit_errors += 1;
                            tracing::error!(address = ?to, "a connection keyed by bytes that are not a socket address");
                        }
                    },
                    Ok(None) => break,
                    // The buffer holds a full datagram, so this is a bug: a process holding
                    // thousands of connections logs it and keeps serving. The next poll
                    // tries again.
                    Err(e) => {
                        self.transmit_errors += 1;
                        tracing::error!(error = %e, "the listener could not write a packet");
                        break;
                    }
                }
            },
            Side::Connect {
                remote,
                connection,
                demo_sent,
            } => {
                // The newest state update replaces any still queued, so every data packet
                // carries the latest one, at whatever rate the congestion mode allows.
                if connection.state() == ConnectionState::Connected
                    && connection
                        .send_latest(STATE_CHANNEL, &demo_message(*demo_sent))
                        .is_ok()
                {
                    *demo_sent += 1;
                }
                loop {
                    match connection.poll_transmit(now, &mut self.buf) {
                        Ok(Some(len)) => link.send(now, *remote, &self.buf[..len]),
                        Ok(None) => break,
                        Err(e) => {
                            self.transmit_errors += 1;
                            tracing::error!(error = %e, "the connection could not write a packet");
                            break;
                        }
                    }
                }
            }
        }
        self.drain_events();
    }

    fn drain_events(&mut self) {
        match &mut self.side {
            Side::Listen(listener) if !listener.has_events() => {}
            Side::Listen(listener) => {
                while let Some(polled) = listener.poll_event() {
                    let peer = || link::parse_address(polled.address);
                    match polled.event {
                        // Echo: the listener plays every message back on its channel.
                        ConnectionEvent::Message { channel, bytes }
                            if polled.connection.send(channel, &bytes).is_err() =>
                        {
                            self.echo_refused += 1;
                        }
                        ConnectionEvent::Connected { connection_id } => {
                            tracing::debug!(peer = ?peer(), connection_id, "connection accepted");
                        }
                        ConnectionEvent::ModeChanged { mode, .. } => {
                            tracing::debug!(peer = ?peer(), ?mode, "mode changed");
                        }
                        ConnectionEvent::Disconnected { reason } => {
                            tracing::debug!(peer = ?peer(), ?reason, "connection ended");
                        }
                        _ => {}
                    }
                }
            }
            Side::Connect {
                remote, connection, ..
            } => {
                while let Some(event) = connection.poll_event() {
                    match event {
                        ConnectionEvent::Connected { connection_id } => {
                            let key = connection.acceptor_key().map(Fingerprint);
                            tracing::info!(%remote, connection_id = format_args!("{connection_id:016x}"), encrypted = key.is_some(), "connected");
                            if let (Some(key), None) = (key, self.pinned) {
                                tracing::warn!(
                                    %remote,
                                    "trusted the listener's key {key} on first use: pin it with --server-key {key}"
                                );
                            }
                        }
                        ConnectionEvent::ModeChanged {
                            mode,
                            recovery_time,
                        } => {
                            tracing::info!(?mode, ?recovery_time, "mode changed");
                        }
                        ConnectionEvent::Disconnected { reason } => {
                            self.ending = match reason {
                                DisconnectReason::Closed => Ending::Clean,
                                DisconnectReason::ClosedByPeer => Ending::ClosedByPeer,
                                DisconnectReason::HandshakeTimedOut => Ending::Unreachable,
                                DisconnectReason::AcceptorKeyMismatch
                                | DisconnectReason::KeyExchangeFailed
                                | DisconnectReason::Unencrypted => Ending::Refused,
                                _ => Ending::TimedOut,
                            };
                            match reason {
                                DisconnectReason::AcceptorKeyMismatch => tracing::error!(
                                    %remote,
                                    key = %connection.acceptor_key().map(Fingerprint).map_or_else(String::new, |k| k.to_string()),
                                    pinned = %self.pinned.map_or_else(String::new, |k| k.to_string()),
                                    "refused: the listener's key is not the pinned one (another server, or a man in the middle)"
                                ),
                                DisconnectReason::KeyExchangeFailed => tracing::error!(
                                    %remote,
                                    "refused: the listener could not prove it holds its key (a man in the middle?)"
                                ),
                                DisconnectReason::Unencrypted => tracing::error!(
                                    %remote,
                                    "refused: the listener runs without encryption (--insecure); pass --insecure here too to talk to it in plaintext"
                                ),
                                _ => {}
                            }

                            match self.ending {
                                Ending::Clean => tracing::info!("disconnected"),
                                Ending::ClosedByPeer => {
                                    tracing::info!(%remote, "the listener closed the connection")
                                }
                                Ending::Unreachable => tracing::error!(
                                    %remote,
                                    "no answer to the handshake: is a listener running there? (one running --insecure answers only --insecure peers, and the other way round)"
                                ),
                                Ending::Refused => {}
                                Ending::TimedOut => {
                                    tracing::error!(%remote, "the listener went silent")
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// When [`poll`](Self::poll) must run next, if ever.
    pub fn poll_timeout(&mut self) -> Option<Duration> {
        match &mut self.side {
            Side::Listen(listener) => listener.poll_timeout(),
            Side::Connect { connection, .. } => connection.poll_timeout(),
        }
    }

    /// Closes every connection (Ctrl-C or the end of `--duration`): disconnect packets go out
    /// with the next [`poll`](Self::poll).
    pub fn close(&mut self) {
        self.closing = true;
        match &mut self.side {
            Side::Listen(listener) => listener.close_all(),
            Side::Connect { connection, .. } => connection.close(),
        }
    }

    /// True once nothing is left to run: a `connect` peer's connection has ended, or a
    /// closing listener has sent its last disconnect.
    pub fn is_finished(&self) -> bool {
        match &self.side {
            Side::Listen(listener) => self.closing && listener.is_empty(),
            Side::Connect { connection, .. } => connection.state() == ConnectionState::Closed,
        }
    }

    /// How a `connect` peer's connection ended (always [`Ending::Clean`] for a listener).
    pub fn ending(&self) -> Ending {
        self.ending
    }

    /// Every open connection's stats; a connector's own, whatever its state, so the final
    /// summary still shows what it measured last.
    pub fn stats(&self) -> Vec<Stats> {
        match &self.side {
            Side::Listen(listener) => listener.connections().map(|(_, c)| c.stats()).collect(),
            Side::Connect { connection, .. } => vec![connection.stats()],
        }
    }

    /// Connections open now (handshakes under way included).
    pub fn len(&self) -> usize {
        match &self.side {
            Side::Listen(listener) => listener.len(),
            Side::Connect { connection, .. } => {
                usize::from(connection.state() != ConnectionState::Closed)
            }
        }
    }

    /// True when no connection is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Counters summed over every connection this peer has had.
    pub fn counters(&self) -> Counters {
        match &self.side {
            Side::Listen(listener) => listener.counters(),
            Side::Connect { connection, .. } => connection.stats().counters,
        }
    }

    /// Resolved packets the core's windowed loss covers per connection.
    pub fn loss_window_packets(&self) -> u16 {
        let config = match &self.side {
            Side::Listen(listener) => listener.acceptor().config(),
            Side::Connect { connection, .. } => connection.config(),
        };
        config.packet.loss_window_packets
    }

    /// Datagrams refused so far.
    pub fn dropped(&self) -> Dropped {
        self.dropped
    }

    /// Messages the listener could not echo because the connection's queue was full.
    pub fn echo_refused(&self) -> u64 {
        self.echo_refused
    }

    /// Times the core refused to write a packet (logged at error level; zero unless a bug).
    pub fn transmit_errors(&self) -> u64 {
        self.transmit_errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> (Link, std::net::UdpSocket) {
        let remote = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let socket = link::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        (Link::new(socket, None).unwrap(), remote)
    }

    #[test]
    fn a_packet_the_core_cannot_write_is_counted_and_the_peer_keeps_running() {
        let (mut link, remote) = link();
        let to = remote.local_addr().unwrap();
        let mut peer =
            Connections::connect(ConnectionConfig::default(), Duration::ZERO, to).unwrap();
        // A buffer under the header maximum makes `poll_transmit` fail, as a core bug would.
        peer.buf.truncate(4);
        peer.poll(Duration::ZERO, &mut link);
        assert_eq!(peer.transmit_errors(), 1);
        link.flush();

        // With a whole buffer again the same connection sends its connect request.
        peer.buf.resize(MAX_DATAGRAM, 0);
        peer.poll(Duration::from_millis(200), &mut link);
        link.flush();
        remote
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0; 2048];
        let (len, from) = remote.recv_from(&mut buf).unwrap();
        assert_eq!(from, link.local_addr().unwrap());
        assert!(len > 0);
        assert_eq!(peer.transmit_errors(), 1);
    }

    /// Moves every datagram waiting on `from`'s socket to `to` (loopback delivers at send).
    fn pump(now: Duration, link: &mut Link, peer: &mut Connections) -> usize {
        let mut bufs = link::RecvBuffers::new();
        link.read_ready(now, &mut bufs, |link, arrived, from, datagram| {
            peer.on_datagram(arrived, || now, from, datagram, link)
        })
    }

    #[test]
    fn a_listener_that_cannot_write_counts_it_and_keeps_its_connections() {
        let (mut server_link, _) = link();
        let (mut client_link, _) = link();
        let server = server_link.local_addr().unwrap();
        let mut listener = Connections::listen(ConnectionConfig::default(), [7; 32], 8).unwrap();
        let mut client =
            Connections::connect(ConnectionConfig::default(), Duration::ZERO, server).unwrap();
        let mut now = Duration::ZERO;
        let mut step = |now: Duration, listener: &mut Connections, client: &mut Connections| {
            client.poll(now, &mut client_link);
            client_link.flush();
            pump(now, &mut server_link, listener);
            listener.poll(now, &mut server_link);
            server_link.flush();
            pump(now, &mut client_link, client)
        };
        while listener.is_empty() || client.is_empty() {
            now += Duration::from_millis(10);
            step(now, &mut listener, &mut client);
            assert!(now < Duration::from_secs(5), "never connected");
        }

        listener.buf.truncate(4);
        now += Duration::from_millis(200);
        step(now, &mut listener, &mut client);
        assert!(listener.transmit_errors() >= 1);

        // Restored, the same connection carries packets again: the client hears from it.
        listener.buf.resize(MAX_DATAGRAM, 0);
        let heard = (0..10)
            .map(|_| {
                now += Duration::from_millis(50);
                step(now, &mut listener, &mut client)
            })
            .sum::<usize>();
        assert!(heard > 0);
        assert_eq!(listener.len(), 1);
    }
}
