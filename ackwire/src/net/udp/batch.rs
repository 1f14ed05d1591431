//! Batched socket I/O: many datagrams per system call. On Linux a read is one `recvmmsg`
//! and a flush one `sendmmsg` (each datagram to its own address, as a server answers many
//! peers at once); elsewhere both fall back to one call per datagram.
//!
//! Why not GSO/GRO: UDP segmentation offload coalesces datagrams *to one destination* (and
//! GRO *from one source*) into one buffer. A game server sends each peer one datagram per
//! tick and hears one from each, so a batch almost never holds two datagrams of one flow;
//! `sendmmsg`/`recvmmsg` batch across flows, which is what a server's traffic is made of.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

/// Most datagrams one batched call moves.
pub const IO_BATCH: usize = 32;

/// One datagram a batched read took in: its real length, where it came from, and when the
/// kernel took it in (wall-clock time since the Unix epoch), where the socket tells.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Arrival {
    pub(super) len: usize,
    pub(super) from: Option<SocketAddr>,
    pub(super) at: Option<Duration>,
}

/// Asks the kernel to stamp each datagram with its arrival time (`SO_TIMESTAMPNS`), so that
/// the time a datagram waited in the socket buffer counts as this side's hold, not as path.
/// Where that is not possible, arrivals carry no time and the read's time stands for it.
pub(super) fn stamp_arrivals(socket: &UdpSocket) {
    imp::stamp_arrivals(socket)
}

/// A datagram queued to send: where to, and its bytes' range in the queue's buffer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Queued {
    pub(super) to: SocketAddr,
    pub(super) start: usize,
    pub(super) end: usize,
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io::{IoSlice, IoSliceMut};
    use std::os::fd::AsRawFd;

    use nix::sys::socket::{
        ControlMessageOwned, MsgFlags, MultiHeaders, SockaddrLike, SockaddrStorage, recvmmsg,
        setsockopt, sockopt,
    };
    use nix::sys::time::TimeSpec;
    use rustix::net::{MMsgHdr, SendAncillaryBuffer, SendFlags, SocketAddrAny, sendmmsg};

    use super::*;

    pub(super) fn stamp_arrivals(socket: &UdpSocket) {
        if let Err(e) = setsockopt(socket, sockopt::ReceiveTimestampns, &true) {
            tracing::debug!(error = %e, "no kernel receive timestamps: reads stand for arrivals");
        }
    }

    /// The kernel's receive time of one message, if it carries one.
    fn arrival_time(
        message: &nix::sys::socket::RecvMsg<'_, '_, SockaddrStorage>,
    ) -> Option<Duration> {
        message.cmsgs().ok()?.find_map(|cmsg| match cmsg {
            ControlMessageOwned::ScmTimestampns(ts) => Some(Duration::new(
                u64::try_from(ts.tv_sec()).ok()?,
                u32::try_from(ts.tv_nsec()).ok()?,
            )),
            _ => None,
        })
    }

    /// The message headers of a run of `recvmmsg` calls on one socket. Made per read
    /// (one allocation per wake-up, not per datagram or per call): they hold raw pointers,
    /// and a driver that kept them would make its future `!Send`.
    #[derive(Debug)]
    pub(in crate::net::udp) struct Receiver {
        headers: MultiHeaders<SockaddrStorage>,
    }

    impl Receiver {
        pub(in crate::net::udp) fn new() -> Receiver {
            Receiver {
                headers: MultiHeaders::preallocate(IO_BATCH, Some(nix::cmsg_space!(TimeSpec))),
            }
        }

        /// Reads up to [`IO_BATCH`] waiting datagrams, datagram `i` into slot `i` of `slots`
        /// (each `slot_len` bytes, long enough for any datagram, so none is cut), and
        /// describes them in `arrived`. Returns how many; `WouldBlock` when none waits.
        pub(in crate::net::udp) fn recv(
            &mut self,
            socket: &UdpSocket,
            slots: &mut [u8],
            slot_len: usize,
            arrived: &mut [Arrival; IO_BATCH],
        ) -> io::Result<usize> {
            let mut chunks = slots.chunks_exact_mut(slot_len);
            let mut iovs: [[IoSliceMut<'_>; 1]; IO_BATCH] = std::array::from_fn(|_| {
                [IoSliceMut::new(
                    chunks.next().expect("IO_BATCH slots of slot_len bytes"),
                )]
            });
            let received = recvmmsg(
                socket.as_raw_fd(),
                &mut self.headers,
                iovs.iter_mut(),
                MsgFlags::MSG_DONTWAIT,
                None,
            )?;
            let mut count = 0;
            for (message, arrival) in received.zip(arrived.iter_mut()) {
                *arrival = Arrival {
                    len: message.bytes,
                    from: message.address.as_ref().and_then(socket_addr),
                    at: arrival_time(&message),
                };
                count += 1;
            }
            Ok(count)
        }
    }

    fn socket_addr(address: &SockaddrStorage) -> Option<SocketAddr> {
        match (address.as_sockaddr_in(), address.as_sockaddr_in6()) {
            (Some(v4), _) => Some(SocketAddr::from(*v4)),
            (_, Some(v6)) => Some(SocketAddr::from(*v6)),
            _ => {
                debug_assert!(
                    false,
                    "a UDP socket's peer of family {:?}",
                    address.family()
                );
                None
            }
        }
    }

    /// Sends `queued` (at most [`IO_BATCH`]) in one `sendmmsg`, from the first. Returns how
    /// many left; an error is the first datagram's (the kernel stops at the first that fails).
    pub(in crate::net::udp) fn send(
        socket: &UdpSocket,
        queued: &[Queued],
        bytes: &[u8],
    ) -> io::Result<usize> {
        let count = queued.len().min(IO_BATCH);
        let addrs: [Option<SocketAddrAny>; IO_BATCH] =
            std::array::from_fn(|i| queued.get(i).map(|q| SocketAddrAny::from(q.to)));
        let iovs: [[IoSlice<'_>; 1]; IO_BATCH] = std::array::from_fn(|i| {
            [IoSlice::new(
                queued.get(i).map_or(&[][..], |q| &bytes[q.start..q.end]),
            )]
        });
        let mut controls: [SendAncillaryBuffer<'_, '_, '_>; IO_BATCH] =
            std::array::from_fn(|_| SendAncillaryBuffer::default());
        let mut messages =
            controls
                .iter_mut()
                .zip(&addrs)
                .zip(&iovs)
                .map(|((control, addr), iov)| match addr {
                    Some(addr) => MMsgHdr::new_with_addr(addr, iov, control),
                    None => MMsgHdr::new(iov, control),
                });
        let mut headers: [MMsgHdr<'_>; IO_BATCH] =
            std::array::from_fn(|_| messages.next().expect("IO_BATCH messages"));
        Ok(sendmmsg(
            socket,
            &mut headers[..count],
            SendFlags::DONTWAIT,
        )?)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;

    pub(super) fn stamp_arrivals(_socket: &UdpSocket) {}

    /// One `recv_from` per call (no `recvmmsg` here).
    #[derive(Debug)]
    pub(in crate::net::udp) struct Receiver;

    impl Receiver {
        pub(in crate::net::udp) fn new() -> Receiver {
            Receiver
        }

        pub(in crate::net::udp) fn recv(
            &mut self,
            socket: &UdpSocket,
            slots: &mut [u8],
            slot_len: usize,
            arrived: &mut [Arrival; IO_BATCH],
        ) -> io::Result<usize> {
            let (len, from) = socket.recv_from(&mut slots[..slot_len])?;
            arrived[0] = Arrival {
                len,
                from: Some(from),
                at: None,
            };
            Ok(1)
        }
    }

    /// One `send_to` per datagram (no `sendmmsg` here), stopping at the first failure.
    pub(in crate::net::udp) fn send(
        socket: &UdpSocket,
        queued: &[Queued],
        bytes: &[u8],
    ) -> io::Result<usize> {
        for (sent, q) in queued.iter().enumerate() {
            if let Err(e) = socket.send_to(&bytes[q.start..q.end], q.to) {
                return if sent == 0 { Err(e) } else { Ok(sent) };
            }
        }
        Ok(queued.len())
    }
}

pub(super) use imp::{Receiver, send};
