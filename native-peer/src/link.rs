//! The peer's link: one UDP socket serving every connection, optionally wrapped in the core's
//! link emulator in both directions.
//!
//! The emulator models this peer's whole network link (as `tc netem` would), so a single
//! emulator per direction carries the datagrams of all connections. It moves bare byte strings,
//! so each datagram is tagged with its remote address on the way in and untagged on the way
//! out.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use ackwire_room::emulation::TwoWay;
use tokio::net::UdpSocket;

/// Datagrams read per readiness wake-up before the driver looks at its timers again: large
/// enough to amortise the wake-up, small enough that a flood cannot starve the send pacing.
pub const RECV_BATCH: usize = 256;

/// Size of the buffer [`Link::read_ready`] reads into: the largest datagram UDP can carry
/// (65,507 payload bytes over IPv4, 65,527 over IPv6, short of jumbograms). A smaller buffer
/// would cut a larger datagram silently to its own size, and the peer would then report the
/// cut length, not the datagram's; reading costs only the datagram's bytes whatever the
/// buffer's size.
pub const RECV_BUF_LEN: usize = 65_536;

/// Requested socket buffer size. One socket carries every connection, and connections that
/// send in step (a game's tick) arrive in bursts: the kernel's 208 KiB default holds only
/// ~170 small datagrams. The kernel caps the request at `net.core.rmem_max`/`wmem_max`.
pub const SOCKET_BUFFER_BYTES: usize = 4 << 20;

/// Binds the peer's UDP socket at `addr` with [`SOCKET_BUFFER_BYTES`] buffers, non-blocking.
pub fn bind(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::DGRAM,
        Some(socket2::Protocol::UDP),
    )?;
    // Best effort: a smaller buffer still works, it only drops earlier under a burst.
    if let Err(e) = socket.set_recv_buffer_size(SOCKET_BUFFER_BYTES) {
        tracing::debug!(error = %e, "cannot enlarge the receive buffer");
    }
    if let Err(e) = socket.set_send_buffer_size(SOCKET_BUFFER_BYTES) {
        tracing::debug!(error = %e, "cannot enlarge the send buffer");
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// What the emulator does to this peer's link, and from when: the room member's two-way
/// emulator, here around the whole socket rather than one link.
pub use ackwire_room::emulation::Emulation as EmulationOptions;

/// What the socket itself has done, below the protocol (handshakes, garbage and
/// disconnects included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkCounters {
    /// Datagrams read from the socket.
    pub datagrams_in: u64,
    /// Datagrams the socket took to send.
    pub datagrams_out: u64,
    /// Datagrams the socket refused to send (full send buffer or an OS error).
    pub send_failures: u64,
}

/// One socket plus the optional emulation around it.
///
/// The socket is read and written without blocking. To sleep until a datagram arrives, the
/// driver [`watch`](Self::watch)es it (a duplicate registered with tokio's reactor) and
/// awaits [`readable`](Self::readable); a driver that reads on a timer under load
/// [`unwatch`](Self::unwatch)es it, because a registered socket wakes the thread for every
/// datagram that arrives, wanted or not.
#[derive(Debug)]
pub struct Link {
    socket: std::net::UdpSocket,
    watch: Option<UdpSocket>,
    emulation: Option<TwoWay>,
    counters: LinkCounters,
}

/// Longest [`address_bytes`]: family byte, 16 address bytes, 2 port bytes (IPv6).
pub const ADDRESS_LEN: usize = 19;
/// Length of an IPv4 [`address_bytes`]: family byte, 4 address bytes, 2 port bytes.
const V4_ADDRESS_LEN: usize = 7;

/// A socket address as bytes: `4 | 4 address bytes | port` or `6 | 16 address bytes | port`
/// (port big-endian), 7 or 19 bytes. The key of its connection in the core's `Listener` (which
/// binds its handshake cookies to it) and the tag of a datagram in the emulator. IPv4 keys
/// are short because every datagram is hashed and compared by its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressBytes {
    len: u8,
    bytes: [u8; ADDRESS_LEN],
}

impl std::ops::Deref for AddressBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// The bytes of `addr` (see [`AddressBytes`]).
pub fn address_bytes(addr: SocketAddr) -> AddressBytes {
    let mut bytes = [0u8; ADDRESS_LEN];
    let port = addr.port().to_be_bytes();
    let len = match addr.ip() {
        IpAddr::V4(v4) => {
            bytes[0] = 4;
            bytes[1..5].copy_from_slice(&v4.octets());
            bytes[5..7].copy_from_slice(&port);
            V4_ADDRESS_LEN
        }
        IpAddr::V6(v6) => {
            bytes[0] = 6;
            bytes[1..17].copy_from_slice(&v6.octets());
            bytes[17..19].copy_from_slice(&port);
            ADDRESS_LEN
        }
    };
    AddressBytes {
        len: len as u8,
        bytes,
    }
}

/// The socket address [`address_bytes`] made, or `None` for bytes it cannot have made.
pub fn parse_address(bytes: &[u8]) -> Option<SocketAddr> {
    let port = |at: usize| u16::from_be_bytes([bytes[at], bytes[at + 1]]);
    match (bytes.first()?, bytes.len()) {
        (4, V4_ADDRESS_LEN) => {
            let octets: [u8; 4] = bytes[1..5].try_into().expect("4 address bytes");
            Some(SocketAddr::new(Ipv4Addr::from(octets).into(), port(5)))
        }
        (6, ADDRESS_LEN) => {
            let octets: [u8; 16] = bytes[1..17].try_into().expect("16 address bytes");
            Some(SocketAddr::new(Ipv6Addr::from(octets).into(), port(17)))
        }
        _ => None,
    }
}

/// The length of the address tag at the start of `tagged` (its family byte tells).
fn tag_len(tagged: &[u8]) -> usize {
    if tagged[0] == 4 {
        V4_ADDRESS_LEN
    } else {
        ADDRESS_LEN
    }
}

fn tag(addr: SocketAddr, datagram: &[u8]) -> Vec<u8> {
    let address = address_bytes(addr);
    let mut tagged = Vec::with_capacity(address.len() + datagram.len());
    tagged.extend_from_slice(&address);
    tagged.extend_from_slice(datagram);
    tagged
}

fn untag(tagged: &mut [u8]) -> (SocketAddr, &mut [u8]) {
    let len = tag_len(tagged);
    let addr = parse_address(&tagged[..len]).expect("tagged by `tag`");
    (addr, &mut tagged[len..])
}

impl Link {
    /// A link over `socket`, emulated when `emulation` is given.
    pub fn new(
        socket: std::net::UdpSocket,
        emulation: Option<EmulationOptions>,
    ) -> Result<Link, ackwire_core::emulator::EmulatorError> {
        let emulation = emulation
            .map(|options| TwoWay::new(&options, Duration::ZERO))
            .transpose()?;
        Ok(Link {
            socket,
            watch: None,
            emulation,
            counters: LinkCounters::default(),
        })
    }

    /// The socket's local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Datagrams through the socket so far.
    pub fn counters(&self) -> LinkCounters {
        self.counters
    }

    /// Sends one datagram to `to` (through the emulator when there is one).
    pub fn send(&mut self, now: Duration, to: SocketAddr, datagram: &[u8]) {
        match &mut self.emulation {
            Some(emulation) => emulation.send(now, &tag(to, datagram)),
            None => send_now(&self.socket, &mut self.counters, to, datagram),
        }
    }

    /// Registers the socket with tokio's reactor (if it is not) so that
    /// [`readable`](Self::readable) can wait for it. Must be called within a tokio runtime.
    pub fn watch(&mut self) -> io::Result<()> {
        if self.watch.is_none() {
            self.watch = Some(UdpSocket::from_std(self.socket.try_clone()?)?);
        }
        Ok(())
    }

    /// Takes the socket out of the reactor: datagrams no longer wake the thread.
    pub fn unwatch(&mut self) {
        self.watch = None;
    }

    /// Resolves once the socket has a datagram to read; never, unless [`watch`]ed.
    ///
    /// [`watch`]: Self::watch
    pub async fn readable(&self) -> io::Result<()> {
        match &self.watch {
            Some(watch) => watch.readable().await,
            None => std::future::pending().await,
        }
    }

    /// Reads up to [`RECV_BATCH`] waiting datagrams into `buf` without blocking and hands each
    /// one (or, when emulated, each one the inbound emulator releases later) to `deliver`,
    /// mutable where it lies, so that a protected datagram is opened in place (the core's
    /// `receive_in_place`) with no copy.
    /// A datagram larger than `buf` is cut to its size: with [`RECV_BUF_LEN`] bytes every
    /// datagram is read whole, so an oversized one shows at its real length. Returns how many
    /// datagrams it read.
    pub fn read_ready(
        &mut self,
        now: Duration,
        buf: &mut [u8],
        mut deliver: impl FnMut(&mut Link, SocketAddr, &mut [u8]),
    ) -> usize {
        let mut read = 0;
        for _ in 0..RECV_BATCH {
            // Through the registered duplicate when there is one, so that tokio learns the
            // socket ran dry (WouldBlock) and waits for the next datagram.
            let received = match &self.watch {
                Some(watch) => watch.try_recv_from(buf),
                None => self.socket.recv_from(buf),
            };
            match received {
                Ok((len, from)) => {
                    read += 1;
                    self.counters.datagrams_in += 1;
                    match &mut self.emulation {
                        Some(emulation) => emulation.arrive(now, &tag(from, &buf[..len])),
                        None => deliver(self, from, &mut buf[..len]),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                // Linux reports ICMP errors for earlier sends here; they concern one remote
                // only, so the socket keeps serving the others.
                Err(e) => tracing::debug!(error = %e, "recv error"),
            }
        }
        read
    }

    /// Moves datagrams the emulator releases by `now` onto the wire and to `deliver` (with
    /// the time each was due, at most `now`), and applies a pending impairment once its time
    /// has come.
    pub fn poll_emulation(
        &mut self,
        now: Duration,
        mut deliver: impl FnMut(&mut Link, Duration, SocketAddr, &mut [u8]),
    ) {
        let Some(emulation) = &mut self.emulation else {
            return;
        };
        while let Some(mut tagged) = emulation.poll_send(now) {
            let (to, datagram) = untag(&mut tagged);
            send_now(&self.socket, &mut self.counters, to, datagram);
        }
        while let Some(emulation) = &mut self.emulation {
            let Some((due, mut tagged)) = emulation.poll_arrive(now) else {
                break;
            };
            let (from, datagram) = untag(&mut tagged);
            deliver(self, due, from, datagram);
        }
    }

    /// When the emulation next needs [`poll_emulation`](Self::poll_emulation), if ever.
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.emulation.as_ref()?.poll_timeout()
    }
}

/// A full send buffer drops the datagram, as a congested router would: the core counts it as
/// lost and its congestion avoidance reacts, which is what an unreliable link promises anyway.
fn send_now(
    socket: &std::net::UdpSocket,
    counters: &mut LinkCounters,
    to: SocketAddr,
    datagram: &[u8],
) {
    match socket.send_to(datagram, to) {
        Ok(_) => counters.datagrams_out += 1,
        Err(e) => {
            counters.send_failures += 1;
            tracing::debug!(error = %e, %to, "send failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_tags_round_trip_for_both_families() {
        for addr in ["127.0.0.1:40000", "[::1]:9", "[::ffff:127.0.0.1]:1"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let mut tagged = tag(addr, b"payload");
            assert_eq!(untag(&mut tagged), (addr, &mut b"payload".to_vec()[..]));
            assert_eq!(parse_address(&address_bytes(addr)), Some(addr));
        }
    }

    #[test]
    fn bytes_no_address_could_have_made_parse_to_none() {
        assert_eq!(parse_address(b"short"), None);
        assert_eq!(parse_address(b""), None);
        let mut bytes = address_bytes("127.0.0.1:1".parse().unwrap()).to_vec();
        assert_eq!(bytes.len(), 7, "IPv4 keys are short");
        bytes[0] = 5;
        assert_eq!(parse_address(&bytes), None);
        // A family byte that does not match the length.
        let mut bytes = address_bytes("[2001:db8::1]:1".parse().unwrap()).to_vec();
        bytes[0] = 4;
        assert_eq!(parse_address(&bytes), None);
        let mut bytes = address_bytes("10.0.0.1:9".parse().unwrap()).to_vec();
        bytes[0] = 6;
        assert_eq!(parse_address(&bytes), None);
    }
}
