//! Who does what in a pair, decided in one place: both sides derive the same answers from the
//! ids, kinds, addresses and tags they share, so there is no glare and no round trip.
//!
//! One side of each pair **leads**: it offers the WebRTC session (and every renegotiation),
//! runs the core's connector, and between natives decides the fallback from raw UDP to ICE.
//! The other answers and accepts.
//! - **two browsers**: the lower id, the player already in the room. It offers as soon as
//!   the server announces the newcomer, so the offer waits at the newcomer's page while that
//!   page still loads its driver, and the newcomer only answers.
//! - **a native and a browser**: the browser, whoever came first. The native answers within
//!   a few ms and the browser's ICE agent controls; the other way round the native's agent
//!   (the `webrtc` crate's) would control, nominate only at its next check run, and hold the
//!   browser's DTLS until then (a browser's median join measured 196 ms that way, 114–145 ms
//!   this way; `cargo xtask bench joins`).
//! - **two natives**: nothing to negotiate; the higher id connects over UDP and the lower
//!   accepts. When no direct path works, the higher id falls back to ICE and offers.
//! - **a host and its client**: the client, whatever their kinds, as clients connect to
//!   servers. A native host answers every WebRTC offer on one socket with an ICE-lite agent,
//!   which only answers checks and so must never offer; a host that restarts (a higher id)
//!   still only accepts.

use std::net::{IpAddr, SocketAddr};

use super::ServerId;
use crate::signalling::{PeerInfo, PeerKind, Role};

/// One end of a pair: its kind and its role in the room.
pub(super) type End = (PeerKind, Role);

/// Whether we (`me`, of kind and role `ours`) lead the link with `peer` (`theirs`).
pub(super) fn we_lead(ours: End, me: ServerId, theirs: End, peer: ServerId) -> bool {
    match (ours.1, theirs.1) {
        (Role::Client, Role::Host) => return true,
        (Role::Host, Role::Client) => return false,
        _ => {}
    }
    match (ours.0, theirs.0) {
        (PeerKind::Browser, PeerKind::Browser) => me < peer,
        (PeerKind::Native, PeerKind::Browser) => false,
        (PeerKind::Browser, PeerKind::Native) => true,
        (PeerKind::Native, PeerKind::Native) => me > peer,
    }
}

/// Whether raw UDP is the first path to try with a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Udp {
    /// Two natives with addresses: raw UDP to this one.
    To(SocketAddr),
    /// The peer advertises our own address: it is this program (an old entry of ours).
    Ourselves,
    /// WebRTC.
    No,
}

/// The first path to `peer` from a member of kind `ours` at `our_addr`.
pub(super) fn udp_between(ours: PeerKind, our_addr: Option<SocketAddr>, peer: &PeerInfo) -> Udp {
    match (ours, our_addr, peer.kind, peer.udp_addr) {
        (PeerKind::Native, Some(mine), PeerKind::Native, Some(theirs)) if mine == theirs => {
            Udp::Ourselves
        }
        (PeerKind::Native, Some(_), PeerKind::Native, Some(theirs)) => Udp::To(theirs),
        _ => Udp::No,
    }
}

/// Whether two natives go through WebRTC at once rather than try raw UDP first:
/// - when exactly one of them encrypts its UDP links (the other runs `--insecure`): WebRTC's
///   DTLS encrypts the link, rather than plaintext or no link at all;
/// - when raw UDP would have to cross NATs: the server saw them connect from different
///   public addresses (their network tags differ) and one address is private (RFC 1918,
///   shared CGNAT space, loopback, link-local, IPv6 unique-local), so it cannot be reached
///   from the other's network. Unknown tags (an older server) say nothing.
pub(super) fn skip_direct(
    ours: Option<SocketAddr>,
    we_encrypt: bool,
    theirs: SocketAddr,
    they_encrypt: bool,
    our_tag: Option<&str>,
    their_tag: Option<&str>,
) -> bool {
    if we_encrypt != they_encrypt {
        return true;
    }
    let elsewhere = our_tag.zip(their_tag).is_some_and(|(a, b)| a != b);
    elsewhere && ours.is_some_and(|ours| is_private(ours.ip()) || is_private(theirs.ip()))
}

/// An address that is only reachable from its own network.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || (v4.octets()[0] == 100 && v4.octets()[1] & 0xC0 == 64)
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_private(IpAddr::V4(v4)),
            None => v6.is_loopback() || v6.is_unique_local() || v6.is_unicast_link_local(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_side_of_every_pair_leads() {
        use PeerKind::{Browser, Native};
        for roles in [(Role::Peer, Role::Peer), (Role::Client, Role::Host)] {
            for (a, b) in [
                (Browser, Browser),
                (Browser, Native),
                (Native, Browser),
                (Native, Native),
            ] {
                for (x, y) in [(1, 2), (2, 1)] {
                    let (one, other) = ((a, roles.0), (b, roles.1));
                    assert_ne!(
                        we_lead(one, x, other, y),
                        we_lead(other, y, one, x),
                        "{one:?} {x} / {other:?} {y}"
                    );
                }
            }
        }
        // A browser leads with a native whoever came first.
        assert!(we_lead((Browser, Role::Peer), 9, (Native, Role::Peer), 1));
        assert!(!we_lead((Native, Role::Peer), 1, (Browser, Role::Peer), 9));
    }

    #[test]
    fn a_client_leads_with_its_host_even_a_restarted_one() {
        use PeerKind::{Browser, Native};
        let host = (Native, Role::Host);
        // The host restarted: its id is the higher; the native client still connects.
        assert!(we_lead((Native, Role::Client), 3, host, 9));
        assert!(!we_lead(host, 9, (Native, Role::Client), 3));
        assert!(we_lead((Browser, Role::Client), 3, host, 1));
    }

    #[test]
    fn natives_skip_raw_udp_across_nats_or_with_one_side_unencrypted() {
        let private: SocketAddr = "192.168.1.2:4000".parse().unwrap();
        let public: SocketAddr = "203.0.113.7:4000".parse().unwrap();
        let cgnat: SocketAddr = "100.64.0.9:4000".parse().unwrap();
        // Same public address: a private address is reachable.
        assert!(!skip_direct(
            Some(private),
            true,
            private,
            true,
            Some("a"),
            Some("a")
        ));
        // Different networks and a private address on either side: no direct path.
        assert!(skip_direct(
            Some(private),
            true,
            public,
            true,
            Some("a"),
            Some("b")
        ));
        assert!(skip_direct(
            Some(public),
            true,
            cgnat,
            true,
            Some("a"),
            Some("b")
        ));
        // Both public: try it.
        assert!(!skip_direct(
            Some(public),
            true,
            public,
            true,
            Some("a"),
            Some("b")
        ));
        // Unknown tags say nothing.
        assert!(!skip_direct(
            Some(private),
            true,
            public,
            true,
            None,
            Some("b")
        ));
        // One encrypts, the other does not: DTLS rather than plaintext.
        assert!(skip_direct(Some(public), true, public, false, None, None));
    }
}
