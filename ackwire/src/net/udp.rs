//! The peer's link: one UDP socket serving every connection, optionally wrapped in the core's
//! link emulator in both directions.
//!
//! The emulator models this peer's whole network link (as `tc netem` would), so a single
//! emulator per direction carries the datagrams of all connections. It moves bare byte strings,
//! so each datagram is tagged with its remote address on the way in and untagged on the way
//! out.
//!
//! The socket is read and written in batches (`batch.rs`): a read takes up to [`IO_BATCH`]
//! datagrams per system call, and [`Link::send`] queues a datagram that [`Link::flush`] (or
//! a full queue) sends with the rest of its batch in one call. The answers to a read batch
//! are made while each connection is in cache, as it is read, and leave together at the
//! batch's end.

mod batch;

pub use batch::IO_BATCH;

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use ackwire_room::emulation::TwoWay;
use tokio::io::Interest;
use tokio::net::UdpSocket;

use batch::{Arrival, Queued};

/// Datagrams read per readiness wake-up before the driver looks at its timers again: large
/// enough to amortise the wake-up, small enough that a flood cannot starve the send pacing.
pub const RECV_BATCH: usize = 256;

/// The longest a datagram is taken to have waited in the socket's buffer before a read: a
/// bound on what a wall-clock step between the kernel's stamp and the read could claim.
pub const MAX_BUFFERED_WAIT: Duration = Duration::from_millis(250);

/// Size of each slot of [`RecvBuffers`]: the largest datagram UDP can carry (65,507 payload
/// bytes over IPv4, 65,527 over IPv6, short of jumbograms). A smaller slot would cut a larger
/// datagram silently to its own size, and the peer would then report the cut length, not the
/// datagram's; reading costs only the datagram's bytes whatever the slot's size.
pub const RECV_BUF_LEN: usize = 65_536;

/// What [`Link::read_ready`] reads into: [`IO_BATCH`] slots of [`RECV_BUF_LEN`] bytes, one
/// per datagram of a batched read. 2 MiB of address space, of which only the pages datagrams
/// are written to become resident (a small datagram touches one page of its slot).
#[derive(Debug)]
pub struct RecvBuffers(Box<[u8]>);

impl RecvBuffers {
    /// Zeroed slots (fresh pages from the OS, made resident as datagrams arrive).
    pub fn new() -> RecvBuffers {
        RecvBuffers(vec![0; IO_BATCH * RECV_BUF_LEN].into_boxed_slice())
    }
}

impl Default for RecvBuffers {
    fn default() -> Self {
        RecvBuffers::new()
    }
}

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
///
/// Sending queues: the driver calls [`flush`](Self::flush) before it waits (reads and
/// emulator releases flush by themselves, and a full batch goes at once).
#[derive(Debug)]
pub struct Link {
    socket: std::net::UdpSocket,
    watch: Option<UdpSocket>,
    emulation: Option<TwoWay>,
    counters: LinkCounters,
    /// Datagrams [`send`](Self::send) queued for the next [`flush`](Self::flush), at most
    /// [`IO_BATCH`]; their bytes lie one after another in `outbox_bytes`. Both keep their
    /// capacity, so queueing allocates nothing once the first batch has been sent.
    outbox: Vec<Queued>,
    outbox_bytes: Vec<u8>,
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
        batch::stamp_arrivals(&socket);
        Ok(Link {
            socket,
            watch: None,
            emulation,
            counters: LinkCounters::default(),
            outbox: Vec::new(),
            outbox_bytes: Vec::new(),
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

    /// Sends one datagram to `to` (through the emulator when there is one): queued, and on
    /// the wire at the next [`flush`](Self::flush) or once the queue holds a whole batch.
    pub fn send(&mut self, now: Duration, to: SocketAddr, datagram: &[u8]) {
        match &mut self.emulation {
            Some(emulation) => emulation.send(now, &tag(to, datagram)),
            None => self.queue(to, datagram),
        }
    }

    fn queue(&mut self, to: SocketAddr, datagram: &[u8]) {
        let start = self.outbox_bytes.len();
        self.outbox_bytes.extend_from_slice(datagram);
        self.outbox.push(Queued {
            to,
            start,
            end: self.outbox_bytes.len(),
        });
        if self.outbox.len() == IO_BATCH {
            self.flush();
        }
    }

    /// Sends every queued datagram, a batch per system call. A datagram the socket refuses
    /// is dropped and counted (a full send buffer drops the rest of the batch, as a
    /// congested router would: the core counts them lost and its congestion avoidance
    /// reacts, which is what an unreliable link promises anyway).
    pub fn flush(&mut self) {
        let mut at = 0;
        while at < self.outbox.len() {
            let rest = &self.outbox[at..];
            match batch::send(&self.socket, rest, &self.outbox_bytes) {
                Ok(sent) if sent > 0 => {
                    self.counters.datagrams_out += sent as u64;
                    at += sent;
                }
                // sendmmsg sends at least one datagram or fails; were a kernel to say zero,
                // retrying could spin, so the batch is dropped as if the buffer were full.
                Ok(_) => {
                    self.counters.send_failures += rest.len() as u64;
                    tracing::debug!(dropped = rest.len(), "send sent nothing");
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.counters.send_failures += rest.len() as u64;
                    tracing::debug!(dropped = rest.len(), "send buffer full");
                    break;
                }
                // Concerns one remote only (unreachable, refused by a firewall): the others
                // in the batch still go.
                Err(e) => {
                    self.counters.send_failures += 1;
                    tracing::debug!(error = %e, to = %rest[0].to, "send failed");
                    at += 1;
                }
            }
        }
        self.outbox.clear();
        self.outbox_bytes.clear();
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

    /// Reads up to [`RECV_BATCH`] waiting datagrams into `bufs` without blocking, a batch
    /// per system call, and hands each one (or, when emulated, each one the inbound
    /// emulator releases later) to `deliver`, mutable where it lies, so that a protected
    /// datagram is opened in place (the core's `receive_in_place`) with no copy. Every
    /// datagram is read whole, so an oversized one shows at its real length. What `deliver`
    /// sends is flushed before this returns. Returns how many datagrams it read.
    ///
    /// `deliver` also gets each datagram's arrival on the driver's clock (`now` being the
    /// driver's time at this call): when the kernel stamped it, the time of its read less
    /// the time it waited in the socket's buffer (at most [`MAX_BUFFERED_WAIT`]), else the
    /// time of its read. Handing that to the core's `receive` starts the ack delay when the
    /// datagram arrived, so a read deferred to coalesce wake-ups counts as this side's hold,
    /// not as the path's. What `deliver` sends should be stamped with the driver's clock read
    /// afresh: the datagrams before it in the batch took their time.
    pub fn read_ready(
        &mut self,
        now: Duration,
        bufs: &mut RecvBuffers,
        mut deliver: impl FnMut(&mut Link, Duration, SocketAddr, &mut [u8]),
    ) -> usize {
        let entered = std::time::Instant::now();
        let mut receiver = batch::Receiver::new();
        let mut arrived = [Arrival::default(); IO_BATCH];
        let (mut read, mut errors) = (0, 0);
        while read < RECV_BATCH {
            let mut recv = || receiver.recv(&self.socket, &mut bufs.0, RECV_BUF_LEN, &mut arrived);
            // Through the registered duplicate when there is one, so that tokio learns the
            // socket ran dry (WouldBlock) and waits for the next datagram.
            let received = match &self.watch {
                Some(watch) => watch.try_io(Interest::READABLE, recv),
                None => recv(),
            };
            let count = match received {
                Ok(count) => count,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                // Linux reports ICMP errors for earlier sends here; they concern one remote
                // only, so the socket keeps serving the others.
                Err(e) => {
                    tracing::debug!(error = %e, "recv error");
                    errors += 1;
                    if errors == IO_BATCH {
                        break;
                    }
                    continue;
                }
            };
            // The read's time on both clocks: the driver's (for the arrival handed over)
            // and the wall clock (the kernel's stamps are on it).
            let read_now = now + entered.elapsed();
            let read_at = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            read += count;
            self.counters.datagrams_in += count as u64;
            let slots = bufs.0.chunks_exact_mut(RECV_BUF_LEN);
            for (slot, arrival) in slots.zip(&arrived[..count]) {
                // UDP datagrams always have a source; `None` only for a family we do not use.
                let Some(from) = arrival.from else { continue };
                let datagram = &mut slot[..arrival.len];
                // A wall clock stepped back reads as no wait; one stepped forward is bounded.
                let waited = arrival.at.map_or(Duration::ZERO, |at| {
                    read_at.saturating_sub(at).min(MAX_BUFFERED_WAIT)
                });
                let arrived = read_now.saturating_sub(waited);
                match &mut self.emulation {
                    Some(emulation) => emulation.arrive(arrived, &tag(from, datagram)),
                    None => deliver(self, arrived, from, datagram),
                }
            }
            // A short batch drained the socket. Unless tokio is watching it (then it must
            // see WouldBlock to wait again), the call that would say so is saved.
            if count < IO_BATCH && self.watch.is_none() {
                break;
            }
        }
        self.flush();
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
        if self.emulation.is_none() {
            return;
        }
        while let Some(mut tagged) = self.emulation.as_mut().and_then(|e| e.poll_send(now)) {
            let (to, datagram) = untag(&mut tagged);
            // Not `send`: that would put it back into the emulator.
            self.queue(to, datagram);
        }
        self.flush();
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

    fn loopback_link() -> Link {
        Link::new(bind("127.0.0.1:0".parse().unwrap()).unwrap(), None).unwrap()
    }

    fn client() -> std::net::UdpSocket {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        // Loopback delivers at once; the timeout only turns a missing answer into a failure.
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        socket
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_datagram_read_late_is_dated_when_it_arrived() {
        let mut link = loopback_link();
        let server = link.local_addr().unwrap();
        let peer = client();
        let mut bufs = RecvBuffers::new();
        let now = Duration::from_secs(10);
        // The kernel turns receive stamping on for the whole stack in deferred work, so the
        // first datagrams after a socket asks for it may be stamped only when read (as if
        // read at once, the behaviour without stamps): a few tries at most.
        for _ in 0..20 {
            let sent = std::time::Instant::now();
            peer.send_to(b"early", server).unwrap();
            // The datagram waits in the socket's buffer: the condition under test (a read
            // deferred to coalesce wake-ups), not a synchronisation.
            std::thread::sleep(Duration::from_millis(30));
            let mut arrivals = Vec::new();
            link.read_ready(now, &mut bufs, |_, arrived, _, _| arrivals.push(arrived));
            let waited = sent.elapsed();
            assert_eq!(arrivals.len(), 1);
            // An unstamped datagram is dated at its read, a little after `now`.
            let before_read = now.saturating_sub(arrivals[0]);
            assert!(
                before_read <= waited,
                "dated {before_read:?} before the read; only {waited:?} passed since the send"
            );
            if before_read >= Duration::from_millis(30) {
                return;
            }
        }
        panic!("no datagram was dated before its read");
    }

    #[test]
    fn a_burst_from_many_peers_is_read_whole_in_batches_and_every_answer_reaches_its_sender() {
        let mut link = loopback_link();
        let server = link.local_addr().unwrap();
        // More peers than one batch holds, each with a datagram of its own size and bytes,
        // and one far larger than any the protocol sends: read whole, at its real length.
        let clients: Vec<_> = (0..3 * IO_BATCH + 5).map(|_| client()).collect();
        let payload = |i: usize| vec![i as u8; if i == 7 { 60_000 } else { 20 + i }];
        for (i, client) in clients.iter().enumerate() {
            client.send_to(&payload(i), server).unwrap();
        }
        let mut seen = Vec::new();
        let mut bufs = RecvBuffers::new();
        let read = link.read_ready(Duration::ZERO, &mut bufs, |link, _, from, datagram| {
            seen.push((from, datagram.to_vec()));
            // Answer with the datagram's length, queued until the read's batch is done.
            link.send(Duration::ZERO, from, &(datagram.len() as u32).to_be_bytes());
        });
        assert_eq!(read, clients.len());
        assert_eq!(seen.len(), clients.len());
        for (i, client) in clients.iter().enumerate() {
            let from = client.local_addr().unwrap();
            assert!(
                seen.contains(&(from, payload(i))),
                "datagram {i} read as sent"
            );
            let mut answer = [0u8; 8];
            let (len, answered_by) = client.recv_from(&mut answer).unwrap();
            assert_eq!(answered_by, server);
            assert_eq!(answer[..len], (payload(i).len() as u32).to_be_bytes());
        }
        let counters = link.counters();
        assert_eq!(counters.datagrams_in, clients.len() as u64);
        assert_eq!(counters.datagrams_out, clients.len() as u64);
        assert_eq!(counters.send_failures, 0);
    }

    #[test]
    fn a_datagram_the_socket_refuses_is_counted_and_the_rest_of_its_batch_still_goes() {
        let mut link = loopback_link();
        let (first, last) = (client(), client());
        link.send(Duration::ZERO, first.local_addr().unwrap(), b"one");
        // An IPv4 socket cannot send to an IPv6 address: refused for this datagram alone.
        link.send(
            Duration::ZERO,
            "[2001:db8::1]:9".parse().unwrap(),
            b"refused",
        );
        link.send(Duration::ZERO, last.local_addr().unwrap(), b"two");
        assert_eq!(link.counters().datagrams_out, 0, "queued until the flush");
        link.flush();
        let mut buf = [0u8; 16];
        let len = first.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"one");
        let len = last.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"two");
        let counters = link.counters();
        assert_eq!((counters.datagrams_out, counters.send_failures), (2, 1));
        // Nothing is sent twice: the queue is empty after a flush.
        link.flush();
        assert_eq!(link.counters().datagrams_out, 2);
    }

    #[test]
    fn a_full_batch_goes_without_waiting_for_the_flush() {
        let mut link = loopback_link();
        let peer = client();
        let to = peer.local_addr().unwrap();
        for i in 0..IO_BATCH {
            link.send(Duration::ZERO, to, &[i as u8]);
        }
        assert_eq!(link.counters().datagrams_out, IO_BATCH as u64);
        let mut buf = [0u8; 4];
        for i in 0..IO_BATCH {
            assert_eq!(peer.recv(&mut buf).unwrap(), 1);
            assert_eq!(buf[0], i as u8, "in the order sent");
        }
    }
}
