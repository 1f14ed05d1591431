//! One side of a link at the packet layer: sequencing, redundant acks, RTT, loss and pacing.
//!
//! Sans-IO: the driver passes the time in and moves the bytes. Bytes enter through
//! [`Endpoint::receive`] and leave through [`Endpoint::poll_transmit`] (or
//! [`Endpoint::poll_transmit_with`], which lets the layer above write a payload after the
//! header); what happened to sent packets comes out of [`Endpoint::poll_event`]; and
//! [`Endpoint::poll_timeout`] says when to call back.

use core::time::Duration;
use std::collections::VecDeque;

use thiserror::Error;

use std::sync::Arc;

use crate::bulk::{BulkWindow, REORDER, RESTART_AFTER};
use crate::config::{Config, ConfigError};
use crate::congestion::{Limits, Mode, ModeState};
use crate::loss::LossWindow;
use crate::protection::{KeyLimit, PacketKeys, ProtectError, Protection, TAG_LEN};
use crate::rtt::RttEstimator;
use crate::sequence::distance;
use crate::sequence_buffer::SequenceBuffer;
use crate::stats::{Counters, Stats};
use crate::time::{NEVER, duration, nanos, set};
use crate::wire::{AckDelay, AckField, HeaderError, Packet, PacketHeader};

/// Bytes of the connection tag at the end of every data packet of a plain (unprotected)
/// connection made by the cookie handshake on raw UDP: the low 32 bits of its connection
/// id, big-endian. It binds the packet to its connection, so a late packet of an earlier
/// connection between the same two addresses is refused rather than taken into a new one
/// (a protected packet is bound by its keys; a data channel by its own DTLS association).
pub const CONNECTION_TAG_LEN: usize = 4;

/// Where a datagram of `len` bytes ends before its trailer of `trailer` bytes (a tag), or
/// `Truncated` when the header of `header_len` bytes and the trailer do not both fit.
fn before_trailer(len: usize, header_len: usize, trailer: usize) -> Result<usize, ReceiveError> {
    len.checked_sub(trailer)
        .filter(|&l| l >= header_len)
        .ok_or(ReceiveError::Header(HeaderError::Truncated {
            needed: header_len + trailer,
            available: len,
        }))
}

/// Width of the ack bitfield: how many of the peer's packets each header acknowledges.
const ACK_WINDOW: i32 = 32;
/// A pending ack mark (see `Endpoint::ack_mark`) this far behind the next sequence is given
/// up and set afresh: "at or after" stops meaning anything across half the sequence space.
const ACK_MARK_MAX_AGE: i16 = 1024;

/// A packet leaves at once, whatever the pace, once this many have arrived since the last
/// one left: a peer sending in bulk hears of every packet well before the ack bitfield's 32
/// pass it by. A game's peers send at about the same cadence, so this never fires for them.
pub const ACK_EVERY: u8 = 16;

/// A connection's first this many packets pulled by a queued message while the interval's
/// packet has already left go at once, outside the pace (with `prompt_send`): a link starts in
/// bad mode, and at its 10 packets a second a game's first messages (its first state, a
/// player's first input) would each wait up to 100 ms for an interval that the accept's
/// packet, or an ack, took. Three packets of at most the datagram size, once per connection,
/// are no burst a path notices; the pace holds for everything else.
pub const STARTUP_PACKETS: u8 = 3;

/// Slots the sent ring starts with: the packets of one loss timeout (1 s) at good mode's 30
/// packets/s fit, so at the default rates it rarely grows (16 bytes a slot; the ring grows by
/// doubling, up to `sent_buffer_len`, when more are in flight).
const SENT_RING_START: usize = 32;

/// Something that happened to a packet this endpoint sent, or to the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// The peer acknowledged `sequence`; reported exactly once per packet.
    Acked {
        /// The acknowledged packet.
        sequence: u16,
        /// Time from sending it to learning of its receipt, the peer's ack delay included
        /// (the RTT estimate subtracts the delay the peer reports; this does not).
        rtt: Duration,
    },
    /// No ack for `sequence` within the loss timeout (or its sent-ring slot was needed):
    /// treat it as lost. It is never reported as acked afterwards.
    Lost {
        /// The lost packet.
        sequence: u16,
    },
    /// The congestion mode changed, and with it the send rate.
    ModeChanged {
        /// The new mode.
        mode: Mode,
        /// Recovery time `t` after the change.
        recovery_time: Duration,
    },
}

/// A packet written by [`Endpoint::poll_transmit`]: send `buf[..len]` as one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Sequence number given to the packet.
    pub sequence: u16,
    /// Datagram length, header (and on a protected endpoint the tag) included.
    pub len: usize,
    /// Header length; the payload is `buf[header_len..len]` (less the last
    /// [`TAG_LEN`] bytes, the tag, on a protected endpoint).
    pub header_len: usize,
}

/// An accepted incoming packet: its sequence and its payload (borrowed from the datagram).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received<'a> {
    /// The peer's sequence number for the packet.
    pub sequence: u16,
    /// Bytes after the header, for the layer above.
    pub payload: &'a [u8],
}

/// Why an incoming datagram was refused. A refused datagram changes no state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ReceiveError {
    /// The header is malformed.
    #[error("malformed header: {0}")]
    Header(#[from] HeaderError),
    /// This sequence was already received (the link duplicated it).
    #[error("duplicate packet {sequence}")]
    Duplicate {
        /// The duplicated sequence.
        sequence: u16,
    },
    /// The packet is 32 or more behind the newest received, too old to acknowledge.
    #[error("stale packet {sequence}, newest received is {newest}")]
    Stale {
        /// The stale sequence.
        sequence: u16,
        /// The newest sequence received.
        newest: u16,
    },
    /// The header acknowledges a sequence this endpoint has not sent: not our peer, or corrupt.
    #[error("packet acknowledges {ack}, which was never sent")]
    AckOfUnsent {
        /// The impossible ack.
        ack: u16,
    },
    /// A newest packet carries its ack as a low byte before any full ack arrived, so there
    /// is nothing to resolve it against: the peer broke the encoding rule (or is not ours).
    #[error("a 1-byte ack arrived before any ack it could be resolved against")]
    UnresolvableAck,
    /// Protected endpoint: the packet failed to open (forged, corrupted, or sealed under
    /// another key). Counted in [`Counters::packets_unauthenticated`]; nothing else changed.
    #[error("packet {sequence} failed authentication")]
    Unauthenticated {
        /// The sequence the header claims.
        sequence: u16,
    },
    /// Protected endpoint: a key reached its limit, so nothing more is opened or sealed
    /// (see [`KeyLimit`]).
    #[error("packet keys exhausted: {0}")]
    KeyExhausted(KeyLimit),
    /// Plain connection on raw UDP: the packet does not end with this connection's tag
    /// (a late packet of an earlier connection between the same two addresses, or not the
    /// peer's). Counted in [`Counters::packets_unauthenticated`]; nothing else changed.
    #[error("packet {sequence} belongs to another connection")]
    WrongConnection {
        /// The sequence the header claims.
        sequence: u16,
    },
    /// Protected endpoint: datagrams are decrypted in place, so they must come through
    /// [`Endpoint::receive_in_place`].
    #[error("a protected endpoint takes datagrams through receive_in_place")]
    InPlaceRequired,
}

/// Why [`Endpoint::poll_transmit`] could not write a packet. Nothing was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TransmitError {
    /// The buffer cannot hold the largest header.
    #[error("transmit buffer of {available} bytes is under the {needed}-byte header maximum")]
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        available: usize,
    },
    /// The payload writer claimed more bytes than the space it was given.
    #[error("payload writer returned {written} bytes for {available} bytes of space")]
    PayloadOverflow {
        /// Bytes claimed.
        written: usize,
        /// Bytes available after the header.
        available: usize,
    },
    /// Protected endpoint: the next packet number would pass the sending key's limit, so
    /// the packet is not sealed (a nonce is never reused). Nothing was written.
    #[error("packet keys exhausted: {0}")]
    KeyExhausted(KeyLimit),
}

/// When a packet in flight was sent, in nanoseconds.
type SentAt = u64;

/// A packet-layer [`Config`] with the constants every packet reads, derived once and shared
/// by every endpoint made from it (an acceptor's connections share one): per-connection
/// state then holds none of them.
#[derive(Debug)]
pub(crate) struct Settings {
    pub(crate) config: Config,
    good_interval: u64,
    bad_interval: u64,
    loss_timeout: u64,
    limits: Limits,
}

impl Settings {
    /// `config`'s settings, or the reason it is refused.
    pub(crate) fn new(config: Config) -> Result<Settings, ConfigError> {
        config.validate()?;
        Ok(Settings {
            good_interval: nanos(Duration::from_secs_f64(1.0 / config.good_rate_pps)),
            bad_interval: nanos(Duration::from_secs_f64(1.0 / config.bad_rate_pps)),
            loss_timeout: nanos(config.loss_timeout),
            limits: Limits::new(&config),
            config,
        })
    }
}

/// One end of a link at the packet layer. See the [crate docs](crate) for a driving loop.
///
/// A server touches this on every packet of each of its thousands of connections, so it is
/// kept small and laid out in order (`repr(C)`): what every packet reads first, the event
/// queue (idle while nothing listens for packet events) last.
#[derive(Debug)]
#[repr(C)]
pub struct Endpoint {
    /// Shared by every endpoint an acceptor makes: read on every packet, so one copy in
    /// cache serves them all.
    settings: Arc<Settings>,
    /// Latest time seen; earlier `now` values are treated as this. Times here are
    /// nanoseconds (see `crate::time`).
    now: u64,
    /// End of the current send interval: its packet goes out by then at the latest.
    next_send_at: u64,
    /// Before this time nothing can be declared lost and the mode cannot change on its own
    /// (the earliest loss, mode and silence deadline, see `time_deadline`): `handle_timeout`
    /// only moves the clock, as drivers call it several times per packet. The start time
    /// until the first check, which starts the mode's clock.
    check_at: u64,
    /// When an ack last arrived (the start until one does), and when a packet was last
    /// declared lost (`NEVER` until one is): together they tell a silent peer (see
    /// `is_silent`).
    last_ack_at: u64,
    last_loss_at: u64,
    /// `NEVER` until the first packet. Also the send time of the newest packet while it is
    /// in flight (see `newest_in_flight`).
    last_send_at: u64,
    /// Send times of the packets in flight (neither acked nor declared lost), except the
    /// newest one's (see `newest_in_flight`).
    sent: SequenceBuffer<SentAt>,
    /// Bit n set: `remote - n` received.
    received_bits: u32,
    /// Newest sequence received from the peer.
    remote: Option<u16>,
    /// A packet carrying an ack has left: before it, the peer's first packets are acked at
    /// once, outside the pace (the link counts as up when they are).
    acked_any: bool,
    /// When `remote` arrived: the ack delay of a header is the time since.
    remote_at: u64,
    /// Newest ack (of our sequences) taken in from the peer: a 1-byte ack is resolved
    /// against it.
    peer_ack: Option<u16>,
    /// An ack the peer is known to hold, because a packet of ours carrying it was acked: our
    /// ack goes as its low byte while it is within 255 of this (see [`AckField`]).
    ack_floor: Option<u16>,
    /// `(sequence, ack)`: a packet of ours and the ack it carried, waiting for the peer to ack
    /// it (or anything after it) to become `ack_floor`. One at a time, so no per-packet
    /// record is kept.
    ack_mark: Option<(u16, u16)>,
    next_sequence: u16,
    /// Loss-scan cursor: every sequence before it is acked or lost.
    oldest_unresolved: u16,
    /// A packet arrived since the last send (with `prompt_ack`, the interval's packet may go
    /// now).
    ack_pending: bool,
    /// The application queued a message since the last send (with `prompt_send`, the
    /// interval's packet may go now, or when the next interval opens).
    send_pending: bool,
    /// Of the [`STARTUP_PACKETS`], how many are left.
    startup_left: u8,
    /// Queue `Acked` and `Lost` events (a connection turns them off while no packet in flight
    /// carries reliable frames: nothing would read them).
    packet_events: bool,
    /// The newest packet sent (`next_sequence - 1`) is in flight. Its time is `last_send_at`:
    /// it goes into `sent` only if the next packet leaves before it is resolved. In the
    /// steady state every packet is acked before the next one leaves, and the ring (4 KiB per
    /// peer by default, a cache miss per touch on a server with thousands) is not touched.
    newest_in_flight: bool,
    /// `events` is not empty. Checked after every packet, so kept here, in the hot lines,
    /// rather than read from the queue at the struct's cold end.
    events_waiting: bool,
    /// Packets taken in since the last one sent (up to [`ACK_EVERY`]).
    arrivals: u8,
    /// The layer above has reliable frames waiting for room (see [`set_backlog`](Self::set_backlog)).
    backlog: bool,
    /// Length of the last header sent.
    last_header_len: u32,
    congestion: ModeState,
    rtt: RttEstimator,
    loss: LossWindow,
    counters: Counters,
    /// Keys and packet numbers when the creator protected this endpoint
    /// ([`protect`](Self::protect)); behind a pointer, as most endpoints (every browser's)
    /// have none.
    protection: Option<Box<Protection>>,
    /// The bulk window (see [`crate::bulk`]), made on the first backlog: most links never
    /// have one.
    bulk: Option<Box<BulkWindow>>,
    /// The connection tag every data packet ends with, on a plain connection the cookie
    /// handshake made ([`CONNECTION_TAG_LEN`]); `None` when protected or on a channel.
    connection_tag: Option<[u8; CONNECTION_TAG_LEN]>,
    events: VecDeque<Event>,
}

impl Endpoint {
    /// An endpoint starting at time `now`, or the reason `config` is refused.
    pub fn new(config: Config, now: Duration) -> Result<Endpoint, ConfigError> {
        Ok(Endpoint::with_settings(
            Arc::new(Settings::new(config)?),
            nanos(now),
        ))
    }

    /// Like [`new`](Self::new), with a configuration shared with other endpoints.
    pub(crate) fn with_settings(settings: Arc<Settings>, now: u64) -> Endpoint {
        let config = &settings.config;
        Endpoint {
            // Sized by what is in flight, up to `sent_buffer_len` (see `transmit`).
            sent: SequenceBuffer::new(usize::from(config.sent_buffer_len).min(SENT_RING_START)),
            rtt: RttEstimator::new(config.rtt_smoothing),
            loss: LossWindow::new(usize::from(config.loss_window_packets)),
            congestion: ModeState::new(config, now),
            now,
            next_sequence: 0,
            oldest_unresolved: 0,
            remote: None,
            acked_any: false,
            remote_at: now,
            peer_ack: None,
            ack_floor: None,
            ack_mark: None,
            received_bits: 0,
            next_send_at: now,
            last_send_at: NEVER,
            ack_pending: false,
            send_pending: false,
            startup_left: STARTUP_PACKETS,
            check_at: now,
            packet_events: true,
            newest_in_flight: false,
            events_waiting: false,
            last_ack_at: now,
            last_loss_at: NEVER,
            // Grown on demand and kept: events are few per packet (acks come at most 32 at a
            // time) and drained after each call, so the queue settles at a few slots within
            // its first packets and allocates nothing after; a reserve up front would cost
            // every connection of a busy server kilobytes it never uses.
            events: VecDeque::new(),
            counters: Counters::default(),
            last_header_len: 0,
            arrivals: 0,
            backlog: false,
            bulk: None,
            protection: None,
            connection_tag: None,
            settings,
        }
    }

    /// Protects every data packet from now on with `keys` (see [`crate::protection`]):
    /// each payload sealed under `keys.local`, each received one opened under
    /// `keys.remote`, 16 bytes of tag per packet. Refused once a packet has been sent or
    /// received, or if already protected.
    pub fn protect(&mut self, keys: PacketKeys) -> Result<(), ProtectError> {
        if self.protection.is_some() {
            return Err(ProtectError::AlreadyProtected);
        }
        if self.counters.packets_sent > 0 || self.remote.is_some() {
            return Err(ProtectError::TrafficStarted);
        }
        self.protection = Some(Box::new(Protection::new(keys)));
        // The keys are the connection's own: they bind each packet to it.
        self.connection_tag = None;
        Ok(())
    }

    /// Ends every data packet sent with `tag` and refuses received ones that do not end with
    /// it ([`CONNECTION_TAG_LEN`]); ignored on a protected endpoint, whose keys bind.
    pub(crate) fn bind(&mut self, tag: [u8; CONNECTION_TAG_LEN]) {
        if self.protection.is_none() {
            self.connection_tag = Some(tag);
        }
    }

    /// The bytes after each packet's payload: the tag of protection or the connection tag.
    pub(crate) fn trailer_len(&self) -> usize {
        match (&self.protection, self.connection_tag) {
            (Some(_), _) => TAG_LEN,
            (None, Some(_)) => CONNECTION_TAG_LEN,
            (None, None) => 0,
        }
    }

    /// `packet` (its header checked) without its connection tag, if this endpoint binds;
    /// refused, changing nothing but [`Counters::packets_unauthenticated`], when the tag is
    /// another connection's or missing.
    pub(crate) fn untag<'a>(
        &mut self,
        packet: Packet<&'a [u8]>,
    ) -> Result<Packet<&'a [u8]>, ReceiveError> {
        let Some(tag) = self.connection_tag else {
            return Ok(packet);
        };
        let header_len = packet.header_len();
        let datagram = packet.into_inner();
        let body_len = before_trailer(datagram.len(), header_len, CONNECTION_TAG_LEN)?;
        let (body, got) = datagram.split_at(body_len);
        if got != tag {
            self.counters.packets_unauthenticated += 1;
            return Err(ReceiveError::WrongConnection {
                sequence: u16::from_be_bytes([datagram[1], datagram[2]]),
            });
        }
        Ok(Packet::from_checked(body))
    }

    /// True when data packets are sealed and opened ([`protect`](Self::protect)).
    pub fn is_protected(&self) -> bool {
        self.protection.is_some()
    }

    /// The key limit reached, if any: a protected endpoint then neither sends nor takes in
    /// data packets.
    pub fn key_exhausted(&self) -> Option<KeyLimit> {
        self.protection.as_ref().and_then(|p| p.exhausted())
    }

    /// Takes the protection out (a connection moving it to a fresh endpoint).
    pub(crate) fn take_protection(&mut self) -> Option<Box<Protection>> {
        self.protection.take()
    }

    pub(crate) fn restore_protection(&mut self, protection: Option<Box<Protection>>) {
        self.protection = protection;
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.settings.config
    }

    /// The shared settings, for a fresh endpoint on the same configuration.
    pub(crate) fn settings(&self) -> &Arc<Settings> {
        &self.settings
    }

    /// Current congestion mode.
    pub fn mode(&self) -> Mode {
        self.congestion.mode()
    }

    /// When a message queued now leaves at the latest (on the clock `now` is given in): with
    /// `prompt_send`, as the interval whose packet has not left yet opens (a time past means
    /// at once); without, at the interval's end. Sooner when a packet goes early for an ack.
    pub fn next_packet_at(&self) -> Duration {
        duration(self.next_packet_at_nanos())
    }

    fn next_packet_at_nanos(&self) -> u64 {
        if self.settings.config.prompt_send {
            self.next_send_at.saturating_sub(self.interval())
        } else {
            self.next_send_at
        }
    }

    /// Smoothed round-trip time, once a packet has been acked.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt.rtt()
    }

    /// [`rtt`](Self::rtt) in nanoseconds.
    pub(crate) fn rtt_nanos(&self) -> Option<u64> {
        self.rtt.rtt_nanos()
    }

    /// Sequence number the next packet will get.
    pub fn next_sequence(&self) -> u16 {
        self.next_sequence
    }

    /// Moves the clock to `now` unless it is already later; returns the clock.
    pub(crate) fn clock(&mut self, now: u64) -> u64 {
        self.now = self.now.max(now);
        self.now
    }

    /// The latest time seen, in nanoseconds.
    pub(crate) fn now_nanos(&self) -> u64 {
        self.now
    }

    fn interval(&self) -> u64 {
        match self.congestion.mode() {
            Mode::Good => self.settings.good_interval,
            Mode::Bad => self.settings.bad_interval,
        }
    }

    /// Takes in one datagram from the peer.
    ///
    /// On success the packet's acks have been processed (see [`poll_event`](Self::poll_event))
    /// and its payload is returned for the layer above. On error nothing changed.
    pub fn receive<'a>(
        &mut self,
        now: Duration,
        datagram: &'a [u8],
    ) -> Result<Received<'a>, ReceiveError> {
        let packet = Packet::new_checked(datagram)?;
        if self.protection.is_some() {
            return Err(ReceiveError::InPlaceRequired);
        }
        let packet = self.untag(packet)?;
        self.receive_checked(nanos(now), packet, None)
    }

    /// Like [`receive`](Self::receive), for every endpoint, protected or not: a protected
    /// endpoint opens the payload in place (the returned payload is the plaintext, inside
    /// `datagram`). A datagram that fails to open changes nothing but
    /// [`Counters::packets_unauthenticated`].
    pub fn receive_in_place<'a>(
        &mut self,
        now: Duration,
        datagram: &'a mut [u8],
    ) -> Result<Received<'a>, ReceiveError> {
        if self.protection.is_none() {
            return self.receive(now, datagram);
        }
        let header_len = Packet::new_checked(&*datagram)?.header_len();
        let (packet_number, plaintext) = self.open(header_len, datagram)?;
        self.receive_checked(nanos(now), plaintext, Some(packet_number))
    }

    /// Opens a protected data packet whose header (of `header_len` bytes) is checked: its
    /// packet number, and the packet without its tag, the payload decrypted. Changes
    /// nothing but the failure counter.
    pub(crate) fn open<'a>(
        &mut self,
        header_len: usize,
        datagram: &'a mut [u8],
    ) -> Result<(u64, Packet<&'a [u8]>), ReceiveError> {
        let protection = self
            .protection
            .as_mut()
            .expect("open is for protected endpoints");
        if let Some(limit) = protection.exhausted() {
            return Err(ReceiveError::KeyExhausted(limit));
        }
        let sealed_len = before_trailer(datagram.len(), header_len, TAG_LEN)?;
        let (sealed, tag) = datagram.split_at_mut(sealed_len);
        let tag: &[u8; TAG_LEN] = (&*tag).try_into().expect("split at the tag");
        let (header, payload) = sealed.split_at_mut(header_len);
        let sequence = u16::from_be_bytes([header[1], header[2]]);
        let packet_number = crate::protection::packet_number(protection.largest_received, sequence);
        if protection
            .open(packet_number, header, payload, tag)
            .is_err()
        {
            protection.open_failures += 1;
            self.counters.packets_unauthenticated += 1;
            return Err(ReceiveError::Unauthenticated { sequence });
        }
        Ok((packet_number, Packet::from_checked(&datagram[..sealed_len])))
    }

    /// [`receive`](Self::receive) for a datagram whose header the caller already checked.
    /// `packet_number` is the packet's, opened, on a protected endpoint.
    pub(crate) fn receive_checked<'a>(
        &mut self,
        now: u64,
        packet: Packet<&'a [u8]>,
        packet_number: Option<u64>,
    ) -> Result<Received<'a>, ReceiveError> {
        let header = packet.header();
        let header_len = packet.header_len();
        let datagram = packet.into_inner();
        let sequence = header.sequence;
        // Validate everything before touching state.
        let mut newer_by = None;
        match self.remote {
            None => newer_by = Some(ACK_WINDOW),
            Some(newest) => {
                let ahead = i32::from(distance(newest, sequence));
                if ahead > 0 {
                    newer_by = Some(ahead);
                } else if -ahead >= ACK_WINDOW {
                    return Err(ReceiveError::Stale { sequence, newest });
                } else if self.received_bits & (1 << -ahead) != 0 {
                    return Err(ReceiveError::Duplicate { sequence });
                }
            }
        }
        // The ack this header names, if it names one we can place. A low byte is resolved
        // against the newest ack so far, which is sound for the newest packet only: its ack
        // is at or after every earlier one, and within 255 of one we hold (the sender's rule).
        // An older packet's low byte could be from before that: its acks are left to the
        // newer packets, which repeat them in their bitfields.
        let ack = match (header.ack_bits, header.ack) {
            (0, _) => None,
            (_, AckField::Full(ack)) => Some(ack),
            (_, low) if newer_by.is_some() => match self.peer_ack {
                Some(newest) => Some(low.resolve(newest)),
                None => return Err(ReceiveError::UnresolvableAck),
            },
            _ => None,
        };
        if let Some(ack) = ack {
            let never_sent = self.counters.packets_sent == 0
                || distance(self.next_sequence.wrapping_sub(1), ack) > 0;
            if never_sent {
                return Err(ReceiveError::AckOfUnsent { ack });
            }
        }

        // The arrival as the driver gives it, before the clamp that keeps the endpoint's
        // clock from running back: a driver that read the datagram late (read coalescing)
        // but knows when it arrived (a kernel timestamp) passes that earlier time, and the
        // hold it reports and the RTT it measures start there, not at the read.
        let arrived = now;
        let now = self.clock(now);
        match newer_by {
            Some(ahead) => {
                self.received_bits = if ahead >= ACK_WINDOW {
                    0
                } else {
                    self.received_bits << ahead
                };
                self.received_bits |= 1;
                self.remote = Some(sequence);
                // Even before the endpoint's start: a connection made after slow work (a
                // key exchange) may be handed a packet that arrived during it.
                self.remote_at = arrived;
                if let (Some(protection), Some(number)) = (&mut self.protection, packet_number) {
                    // The newest packet yet: its number is the largest opened, whose low
                    // bits `remote` holds.
                    protection.largest_received = Some(number);
                }
            }
            None => {
                let behind = self.remote.map_or(0, |r| r.wrapping_sub(sequence));
                self.received_bits |= 1 << behind;
            }
        }
        self.counters.packets_received += 1;
        self.arrivals = self.arrivals.saturating_add(1);
        // The datagram as it came off the wire: an opened packet's tag, or the connection
        // tag, counts, as it does in `bytes_sent`.
        let tag_len = self.trailer_len();
        self.counters.bytes_received += (datagram.len() + tag_len) as u64;
        self.ack_pending = true;

        if let Some(ack) = ack {
            self.take_ack(now, arrived, ack, header.ack_bits, header.ack_delay);
        }
        self.detect_losses(now);
        self.update_congestion(now);
        self.check_at = self.time_deadline();
        Ok(Received {
            sequence,
            payload: &datagram[header_len..],
        })
    }

    /// Takes in a validated ack of our packets: `ack` (resolved) and the bitfield below it,
    /// held `delay` by the peer, in a packet that arrived at `arrived` (at or before `now`).
    fn take_ack(&mut self, now: u64, arrived: u64, ack: u16, ack_bits: u32, delay: AckDelay) {
        if self.peer_ack.is_none_or(|newest| distance(newest, ack) > 0) {
            self.peer_ack = Some(ack);
        }
        // The peer has a packet sent at or after the mark, so it holds at least the mark's ack.
        if let Some((marked, carried)) = self.ack_mark
            && distance(marked, ack) >= 0
        {
            self.ack_floor = Some(carried);
            self.ack_mark = None;
        }
        let mut bits = ack_bits;
        // Sequences older than the oldest unresolved one were acked or declared lost
        // already: skip their bits without touching the sent ring. In steady state that
        // leaves a bit or two of the 32, and a server with thousands of peers is spared a
        // cache miss per bit.
        let pending = i32::from(distance(self.oldest_unresolved, ack));
        bits &= match pending {
            ..0 => 0,
            0..=30 => (1u32 << (pending + 1)) - 1,
            _ => u32::MAX,
        };
        while bits != 0 {
            let n = bits.trailing_zeros();
            bits &= bits - 1;
            let acked = ack.wrapping_sub(n as u16);
            // Absent entries were acked or declared lost already: each ack counts once.
            if let Some(sent_at) = self.take_sent(acked) {
                let rtt = arrived.saturating_sub(sent_at);
                let (growing, next) = (self.backlog, self.next_sequence);
                if let Some(bulk) = self.bulk_counting(acked) {
                    bulk.on_acked(acked, growing, next);
                }
                // Only the packet `ack` names has a known hold: the peer says how long it
                // kept it, and the path's round trip is the rest. Never below zero, never
                // above the measured time; a peer can shade a sample by at most the
                // field's 127 ms. The others acked here waited an unknown while longer.
                if n == 0
                    && let Some(held) = delay.nanos()
                {
                    let sample = rtt.saturating_sub(held);
                    self.rtt.on_sample_nanos(sample);
                    if let Some(bulk) = &mut self.bulk {
                        bulk.on_rtt(sample, self.next_sequence);
                    }
                }
                self.loss.record(false);
                self.last_ack_at = now;
                self.counters.packets_acked += 1;
                if self.packet_events {
                    self.push_event(Event::Acked {
                        sequence: acked,
                        rtt: duration(rtt),
                    });
                }
            }
        }
        if self.bulk.is_some() {
            self.scan_for_signals(ack);
        }
    }

    /// The bulk window, if packet `sequence` (just resolved) still counts in its flight: one
    /// behind the cursor was counted out when a signal passed it by.
    fn bulk_counting(&mut self, sequence: u16) -> Option<&mut BulkWindow> {
        self.bulk
            .as_deref_mut()
            .filter(|bulk| distance(sequence, bulk.cursor) <= 0)
    }

    /// Every packet sent [`REORDER`] or more before `ack` and still unacked counts as lost
    /// for the bulk window (a signal), once: the cursor moves past it. It stays in the sent
    /// ring, acked late or declared lost by the timeout as before.
    fn scan_for_signals(&mut self, ack: u16) {
        let Some(mut bulk) = self.bulk.take() else {
            return;
        };
        let horizon = ack.wrapping_sub(REORDER);
        let mut at = if distance(bulk.cursor, self.oldest_unresolved) > 0 {
            self.oldest_unresolved
        } else {
            bulk.cursor
        };
        while distance(at, horizon) >= 0 && at != self.next_sequence {
            if self.sent_at(at).is_some() {
                bulk.on_lost(at, self.next_sequence);
            }
            at = at.wrapping_add(1);
        }
        bulk.cursor = at;
        self.bulk = Some(bulk);
    }

    /// The peer's first packets are waiting for our first ack (with `prompt_ack`): it
    /// leaves at once, outside the pace, once per connection.
    fn first_ack_due(&self) -> bool {
        self.settings.config.prompt_ack && self.ack_pending && !self.acked_any
    }

    /// A message was queued and one of the [`STARTUP_PACKETS`] is left: its packet leaves at
    /// once, outside the pace.
    fn startup_due(&self) -> bool {
        self.settings.config.prompt_send && self.send_pending && self.startup_left > 0
    }

    /// The application queued a message. Whether that moved [`poll_timeout`](Self::poll_timeout)
    /// earlier (with `prompt_send`, the first since the last send).
    pub(crate) fn on_queued(&mut self) -> bool {
        let moved = self.settings.config.prompt_send && !self.send_pending;
        self.send_pending = true;
        moved
    }

    /// Tells the endpoint whether reliable frames wait for room in the packets (the
    /// connection says so after each packet it fills): while they do and the link is in good
    /// mode, packets may leave between the cadence's under the bulk window.
    pub(crate) fn set_backlog(&mut self, backlog: bool) {
        self.backlog = backlog;
    }

    /// Whether the link is good right now for the bulk window: good mode, or (while the mode
    /// waits out its recovery time) an RTT measured under the threshold and a peer that is
    /// not silent. The binary mode's wait keeps the cadence from flapping; the window has
    /// its own brakes, and a transfer at the start of a game need not wait 4 s for them.
    fn conditions_good(&self, now: u64) -> bool {
        self.congestion.mode() == Mode::Good
            || (self.rtt.rtt_nanos().is_some()
                && !self
                    .settings
                    .limits
                    .is_bad(self.rtt.rtt_nanos(), self.loss.percent())
                && !self.is_silent(now))
    }

    /// Whether an extra packet may leave for the backlog at `now`: the link good
    /// ([`conditions_good`](Self::conditions_good)), a bulk window allowed, open, and its
    /// pace reached. Makes the window on the first backlog and afresh
    /// after a quiet second.
    fn bulk_ready(&mut self, now: u64) -> bool {
        let config = &self.settings.config;
        let max = config.bulk_window_packets.min(config.sent_buffer_len);
        if !self.backlog || max == 0 || !self.conditions_good(now) {
            return false;
        }
        let stale = self
            .bulk
            .as_ref()
            .is_none_or(|bulk| now.saturating_sub(bulk.wanted_at) > RESTART_AFTER);
        if stale {
            let in_flight = self.count_in_flight();
            // The link's loss before the transfer (its last 64 resolved packets, the figure
            // `Stats::loss_percent` shows) is the path's own: the window tolerates it.
            self.bulk = Some(Box::new(BulkWindow::new(
                max,
                in_flight,
                self.oldest_unresolved,
                self.next_sequence,
                now,
                self.loss.percent() / 100.0,
            )));
        }
        let bulk = self.bulk.as_deref_mut().expect("made above");
        bulk.wanted_at = now;
        bulk.is_open() && now >= bulk.next_at
    }

    /// Packets in flight (neither acked nor declared lost), counted through the ring.
    fn count_in_flight(&self) -> u32 {
        let mut count = 0;
        let mut at = self.oldest_unresolved;
        while at != self.next_sequence {
            count += u32::from(self.sent_at(at).is_some());
            at = at.wrapping_add(1);
        }
        count
    }

    /// Writes the next packet into `buf` if one is due at `now` (header only, empty payload).
    ///
    /// Returns `Ok(None)` when the pacing says not yet; [`poll_timeout`](Self::poll_timeout)
    /// says when. `buf` must hold at least [`PacketHeader::MAX_LEN`] bytes.
    pub fn poll_transmit(
        &mut self,
        now: Duration,
        buf: &mut [u8],
    ) -> Result<Option<Transmit>, TransmitError> {
        self.poll_transmit_with(now, buf, |_, _| 0)
    }

    /// Like [`poll_transmit`](Self::poll_transmit), with `payload(sequence, space)` writing
    /// the payload into the space after the header and returning how many bytes it wrote.
    /// The layer above uses `sequence` to remember what rode in which packet.
    pub fn poll_transmit_with<F>(
        &mut self,
        now: Duration,
        buf: &mut [u8],
        payload: F,
    ) -> Result<Option<Transmit>, TransmitError>
    where
        F: FnOnce(u16, &mut [u8]) -> usize,
    {
        self.transmit_with(nanos(now), buf, payload)
    }

    /// [`poll_transmit_with`](Self::poll_transmit_with) at `now` in nanoseconds.
    pub(crate) fn transmit_with<F>(
        &mut self,
        now: u64,
        buf: &mut [u8],
        payload: F,
    ) -> Result<Option<Transmit>, TransmitError>
    where
        F: FnOnce(u16, &mut [u8]) -> usize,
    {
        self.handle_timeout_nanos(now);
        let now = self.now;
        let interval = self.interval();
        // The current interval is (next_send_at - interval, next_send_at]: its one packet is
        // due at the end, or earlier once there is an ack to send (see `Config::prompt_ack`).
        let config = &self.settings.config;
        let prompt =
            (config.prompt_ack && self.ack_pending) || (config.prompt_send && self.send_pending);
        let opens_at = self.next_send_at.saturating_sub(interval);
        let cadence = now >= self.next_send_at || (prompt && now >= opens_at);
        // Between the cadence's packets: the first ack of the connection (whose arrival is
        // when the peer counts the link as up: it should not wait for an interval a prompt
        // send took), one of its first packets (`STARTUP_PACKETS`), an ack for a peer sending
        // in bulk, or a packet of our own backlog under the bulk window.
        let first_ack = self.first_ack_due();
        let startup = !cadence && !first_ack && self.startup_due();
        let extra = !cadence
            && (first_ack || startup || self.arrivals >= ACK_EVERY || self.bulk_ready(now));
        if !cadence && !extra {
            return Ok(None);
        }
        if let Some(limit) = self.key_exhausted() {
            return Err(TransmitError::KeyExhausted(limit));
        }
        let tag_len = self.trailer_len();
        if buf.len() < PacketHeader::MAX_LEN + tag_len {
            return Err(TransmitError::BufferTooSmall {
                needed: PacketHeader::MAX_LEN + tag_len,
                available: buf.len(),
            });
        }
        let sequence = self.next_sequence;
        let header = match self.remote {
            Some(remote) => PacketHeader {
                sequence,
                ack: AckField::for_ack(remote, self.ack_floor),
                ack_bits: self.received_bits,
                ack_delay: AckDelay::from_nanos(now.saturating_sub(self.remote_at)),
            },
            None => PacketHeader::first(sequence),
        };
        let header_len = header
            .encode(buf)
            .expect("buffer holds PacketHeader::MAX_LEN");
        let space = buf.len() - header_len - tag_len;
        let written = payload(sequence, &mut buf[header_len..header_len + space]);
        if written > space {
            return Err(TransmitError::PayloadOverflow {
                written,
                available: space,
            });
        }
        if let Some(protection) = &mut self.protection {
            let number = protection.next_packet_number;
            debug_assert_eq!(
                number as u16, sequence,
                "the sequence is the number's low bits"
            );
            let (header, rest) = buf.split_at_mut(header_len);
            let (payload, tag) = rest.split_at_mut(written);
            let tag: &mut [u8; TAG_LEN] = (&mut tag[..TAG_LEN]).try_into().expect("room kept");
            protection.seal(header, payload, tag);
        } else if let Some(tag) = self.connection_tag {
            let at = header_len + written;
            buf[at..at + CONNECTION_TAG_LEN].copy_from_slice(&tag);
        }

        // Bound the sent queue: the ring grows while the packets in flight span more than it
        // holds, up to `sent_buffer_len`; past that, a packet whose slot is needed again is
        // out of time.
        let max = i32::from(self.settings.config.sent_buffer_len);
        loop {
            let (span, ring) = (
                i32::from(distance(self.oldest_unresolved, sequence)),
                self.sent.len() as i32,
            );
            if span < ring.min(max) {
                break;
            }
            if ring < max {
                self.sent.grow();
            } else {
                self.resolve_oldest_as_lost();
            }
        }
        self.hold_newest(sequence, now);
        self.next_sequence = sequence.wrapping_add(1);
        if let Some(remote) = self.remote {
            let stale = |(marked, _): (u16, u16)| distance(marked, sequence) >= ACK_MARK_MAX_AGE;
            if self.ack_mark.is_none_or(stale) {
                self.ack_mark = Some((sequence, remote));
            }
        }
        // This packet's loss deadline, or the losses above, may come first now.
        self.check_at = self.time_deadline();
        let len = header_len + written + tag_len;
        self.counters.packets_sent += 1;
        self.counters.bytes_sent += len as u64;
        self.counters.header_bytes_sent += header_len as u64;
        self.last_header_len = header_len as u32;

        self.acked_any |= self.remote.is_some();
        self.startup_left -= u8::from(startup);
        self.ack_pending = false;
        self.send_pending = false;
        self.arrivals = 0;
        if let Some(bulk) = &mut self.bulk {
            bulk.on_sent(now, extra, self.rtt.rtt_nanos());
        }
        if cadence {
            self.next_send_at = if now.saturating_sub(self.next_send_at) >= interval {
                // The driver stalled: restart the pace rather than bursting to catch up.
                now.saturating_add(interval)
            } else {
                self.next_send_at.saturating_add(interval)
            };
        }
        Ok(Some(Transmit {
            sequence,
            len,
            header_len,
        }))
    }

    /// Advances time to `now`: declares overdue packets lost and updates the mode.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.handle_timeout_nanos(nanos(now));
    }

    pub(crate) fn handle_timeout_nanos(&mut self, now: u64) {
        let now = self.clock(now);
        // Between packets, losses and mode changes are driven by time alone: what a received
        // packet changes (RTT, loss) is applied by `receive` itself.
        if now < self.check_at {
            return;
        }
        self.detect_losses(now);
        self.update_congestion(now);
        self.check_at = self.time_deadline();
    }

    /// The earliest time after `self.now` at which time alone changes something: the oldest
    /// unresolved packet's loss deadline, the mode's next deadline, and (once a loss came
    /// after the last ack) the moment the peer starts to count as silent.
    fn time_deadline(&self) -> u64 {
        let settings = &self.settings;
        let mut at = self.congestion.next_deadline(&settings.limits);
        if let Some(sent_at) = self.sent_at(self.oldest_unresolved) {
            at = at.min(sent_at.saturating_add(settings.loss_timeout));
        }
        let silent_from = self.silent_from();
        if silent_from > self.now {
            at = at.min(silent_from);
        }
        at
    }

    /// When the driver must call back at the latest (send a packet, or a loss, mode or
    /// silence deadline), as a time on the same clock as `now`.
    pub fn poll_timeout(&self) -> Duration {
        duration(self.poll_timeout_nanos())
    }

    /// [`poll_timeout`](Self::poll_timeout) in nanoseconds.
    pub(crate) fn poll_timeout_nanos(&self) -> u64 {
        let mut at = self.next_send_at.min(self.check_at);
        if self.send_pending && self.settings.config.prompt_send {
            // The interval's packet may take it as soon as the interval is open.
            at = at.min(self.next_packet_at_nanos().max(self.now));
        }
        if self.arrivals >= ACK_EVERY || self.first_ack_due() || self.startup_due() {
            at = self.now;
        } else if self.backlog
            && self.settings.config.bulk_window_packets > 0
            && self.conditions_good(self.now)
        {
            // A full window waits for acks, whose arrival wakes the driver anyway.
            match self.bulk.as_deref() {
                Some(bulk) if !bulk.is_open() => {}
                Some(bulk) => at = at.min(bulk.next_at.max(self.now)),
                None => at = self.now,
            }
        }
        at
    }

    /// Turns `Acked` and `Lost` events on or off (on by default); counters and statistics
    /// are kept either way.
    pub(crate) fn set_packet_events(&mut self, on: bool) {
        self.packet_events = on;
    }

    /// True when [`poll_event`](Self::poll_event) has something.
    pub(crate) fn has_events(&self) -> bool {
        self.events_waiting
    }

    fn push_event(&mut self, event: Event) {
        self.events.push_back(event);
        self.events_waiting = true;
    }

    /// The next thing that happened to sent packets or to the link, oldest first.
    ///
    /// Drain this after every `receive` and `poll_transmit`: events queue until taken (the
    /// queue keeps the room it grew to, so a drained queue allocates nothing more).
    pub fn poll_event(&mut self) -> Option<Event> {
        let event = self.events.pop_front();
        self.events_waiting = !self.events.is_empty();
        if event.is_none() {
            // Drained: restart at the buffer's first slot, which stays in cache, rather than
            // walking the whole ring (a cache miss every few events with many connections).
            self.events.clear();
        }
        event
    }

    /// A snapshot of everything measured so far.
    pub fn stats(&self) -> Stats {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        Stats {
            rtt_ms: self.rtt.rtt().map_or(0.0, ms),
            jitter_ms: ms(self.rtt.jitter()),
            loss_percent: self.loss.percent(),
            loss_window_packets: u32::from(self.settings.config.loss_window_packets),
            loss_cumulative_percent: self.counters.loss_percent(),
            mode: self.congestion.mode(),
            recovery_time_ms: ms(self.congestion.recovery_time()),
            send_rate_pps: match self.congestion.mode() {
                Mode::Good => self.settings.config.good_rate_pps,
                Mode::Bad => self.settings.config.bad_rate_pps,
            },
            next_packet_ms: self.next_packet_at_nanos().saturating_sub(self.now) as f64 / 1e6,
            bulk_window_packets: self.bulk.as_ref().map_or(0, |bulk| bulk.window()),
            counters: self.counters,
            last_header_len: self.last_header_len,
            messages_sent: 0,
            messages_resent: 0,
            messages_delivered: 0,
            messages_dropped_stale: 0,
            reliable_in_flight: 0,
            connection_state: None,
        }
    }

    /// `sequence` leaves at `now`, which becomes `last_send_at`: the packet before it, if
    /// still in flight, moves into the ring.
    fn hold_newest(&mut self, sequence: u16, now: u64) {
        let previous = sequence.wrapping_sub(1);
        if self.newest_in_flight {
            self.sent.insert(previous, self.last_send_at);
        } else if usize::from(sequence) & (self.sent.len().min(1 << 14) - 1) == 0 {
            // Now and then (once a lap of the ring, at least every 2^14 packets) the ring
            // sees a sequence go by, so its newest never falls behind by half the sequence
            // space, where "newer" would stop meaning anything. Its slots are all empty but
            // for packets in flight, which this clears none of (see `SequenceBuffer::insert`).
            self.sent.insert(previous, self.last_send_at);
            self.sent.remove(previous);
        }
        self.newest_in_flight = true;
        self.last_send_at = now;
    }

    /// When `sequence` was sent, if it is in flight.
    fn sent_at(&self, sequence: u16) -> Option<SentAt> {
        if sequence == self.next_sequence.wrapping_sub(1) {
            self.newest_in_flight.then_some(self.last_send_at)
        } else if sequence == self.next_sequence {
            // Not sent yet (the loss scan's cursor when nothing is in flight).
            None
        } else {
            self.sent.get(sequence).copied()
        }
    }

    /// Like [`sent_at`](Self::sent_at), and `sequence` is no longer in flight.
    fn take_sent(&mut self, sequence: u16) -> Option<SentAt> {
        if sequence == self.next_sequence.wrapping_sub(1) {
            let in_flight = std::mem::take(&mut self.newest_in_flight);
            in_flight.then_some(self.last_send_at)
        } else if sequence == self.next_sequence {
            None
        } else {
            self.sent.remove(sequence)
        }
    }

    fn resolve_oldest_as_lost(&mut self) {
        let sequence = self.oldest_unresolved;
        if self.take_sent(sequence).is_some() {
            let next = self.next_sequence;
            if let Some(bulk) = self.bulk_counting(sequence) {
                bulk.on_lost(sequence, next);
            }
            self.loss.record(true);
            self.last_loss_at = self.now;
            self.counters.packets_lost += 1;
            if self.packet_events {
                self.push_event(Event::Lost { sequence });
            }
        }
        self.oldest_unresolved = sequence.wrapping_add(1);
    }

    fn detect_losses(&mut self, now: u64) {
        while self.oldest_unresolved != self.next_sequence {
            match self.sent_at(self.oldest_unresolved) {
                Some(sent_at) if now < sent_at.saturating_add(self.settings.loss_timeout) => break,
                _ => self.resolve_oldest_as_lost(),
            }
        }
    }

    /// True when the peer has gone quiet: packets have been declared lost since the last ack,
    /// and no ack has come for a whole loss timeout. RTT alone cannot see this (with no acks
    /// there are no samples), so silence counts as bad conditions: a dead or vanished peer is
    /// never sent to at the good rate.
    fn is_silent(&self, now: u64) -> bool {
        now >= self.silent_from()
    }

    /// From when the peer counts as silent as things stand (`NEVER` while no loss came after
    /// the last ack).
    fn silent_from(&self) -> u64 {
        match set(self.last_loss_at) {
            Some(lost_at) if lost_at >= self.last_ack_at => {
                self.last_ack_at.saturating_add(self.settings.loss_timeout)
            }
            _ => NEVER,
        }
    }

    fn update_congestion(&mut self, now: u64) {
        let limits = &self.settings.limits;
        let bad = limits.is_bad(self.rtt.rtt_nanos(), self.loss.percent()) || self.is_silent(now);
        if let Some(mode) = self.congestion.update(limits, now, bad) {
            if let Some(last) = set(self.last_send_at) {
                self.next_send_at = last.saturating_add(self.interval());
            }
            self.push_event(Event::ModeChanged {
                mode,
                recovery_time: self.congestion.recovery_time(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    /// One step of a scripted exchange: time moves on, then one thing happens.
    #[derive(Debug, Clone)]
    enum Step {
        /// The endpoint under test sends; the peer gets it unless `lost`.
        Send { lost: bool },
        /// The peer sends; the endpoint gets it unless `lost`.
        Reply { lost: bool },
        /// Only the clock moves (a driver waking up for something else).
        Tick,
    }

    fn step() -> impl Strategy<Value = (u64, Step)> {
        (
            0u64..400,
            prop_oneof![
                any::<bool>().prop_map(|lost| Step::Send { lost }),
                any::<bool>().prop_map(|lost| Step::Reply { lost }),
                Just(Step::Tick),
            ],
        )
    }

    /// Drives an endpoint and its peer through `script`; before every `handle_timeout` the
    /// endpoint's `check_at` is reset when `check_always`, which makes every call do the full
    /// loss and mode check. Returns everything the endpoint reported, step by step.
    fn run(script: &[(u64, Step)], check_always: bool) -> Vec<(Vec<Event>, Stats, Duration)> {
        let config = Config {
            initial_mode: Mode::Bad,
            initial_recovery_time: Duration::from_millis(500),
            min_recovery_time: Duration::from_millis(200),
            halving_interval: Duration::from_secs(2),
            loss_timeout: Duration::from_millis(300),
            ..Config::default()
        };
        let mut endpoint = Endpoint::new(config.clone(), Duration::ZERO).unwrap();
        let mut peer = Endpoint::new(config, Duration::ZERO).unwrap();
        let mut now = 0;
        let mut buf = [0u8; 64];
        let mut log = Vec::new();
        for (dt, step) in script {
            now += dt * MS / 4;
            let at = duration(now);
            if check_always {
                endpoint.check_at = 0;
            }
            endpoint.handle_timeout(at);
            match step {
                Step::Send { lost } => {
                    if check_always {
                        endpoint.check_at = 0;
                    }
                    // Whether or not the pacing lets a packet out now is part of the behaviour.
                    if let Some(t) = endpoint.poll_transmit(at, &mut buf).unwrap()
                        && !lost
                    {
                        let _ = peer.receive(at, &buf[..t.len]);
                    }
                }
                Step::Reply { lost } => {
                    peer.handle_timeout(at);
                    if let Some(t) = peer.poll_transmit(at, &mut buf).unwrap()
                        && !lost
                    {
                        let _ = endpoint.receive(at, &buf[..t.len]);
                    }
                }
                Step::Tick => {}
            }
            let events = std::iter::from_fn(|| endpoint.poll_event()).collect();
            log.push((events, endpoint.stats(), endpoint.poll_timeout()));
        }
        log
    }

    proptest! {
        /// `handle_timeout` skips its loss and mode checks until the next time-driven
        /// deadline; doing them on every call instead must make no difference at all.
        #[test]
        fn skipping_checks_until_the_next_deadline_changes_nothing(
            script in proptest::collection::vec(step(), 1..300)
        ) {
            prop_assert_eq!(run(&script, false), run(&script, true));
        }
    }
}
