//! A small world in virtual time for room members: a signalling server that can die and
//! come back (with or without reusing ids), WebRTC peer connections that negotiate, run ICE
//! and carry datagrams (or fail when candidates are lost), raw UDP between natives, and
//! blackouts. Each member wakes only on its own `poll_timeout` or on something arriving for
//! it, as a real driver does.
#![allow(dead_code, unreachable_pub)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

use ackwire_room::member::{
    Command, Event, IceState, LinkInfo, LinkState, Member, MemberConfig, Output,
    PeerId as PeerIdOf, Route, TransportEvent, TransportId,
};
use ackwire_room::signalling::rules::{self, Effect, Room};
use ackwire_room::signalling::{
    AppInfo, ChannelKind, ClientFrame, LeaveReason, PeerId, PeerKind, SdpKind, ServerFrame,
    SignalData,
};

/// One-way delay of every network hop (signalling and data).
pub const HOP: Duration = Duration::from_millis(5);
/// ICE checks succeed this long after both sides have each other's description and a candidate.
pub const ICE_CONNECT: Duration = Duration::from_millis(40);
/// ICE gives up this long after both descriptions are set with no usable candidate.
pub const ICE_FAIL: Duration = Duration::from_secs(5);

/// A small deterministic PRNG (SplitMix64): the world's faults and the explorer's schedules
/// come from a seed, so every run of a seed is the same run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        // Multiply-shift: no modulo bias worth the name at these sizes.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p` (0 to 1).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.next_u64() >> 11) as f64 / ((1u64 << 53) as f64)) < p
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// Faults on every datagram between members (UDP and data channel alike; signalling is not
/// touched): each is lost with probability `loss`, else sent twice with probability
/// `duplicate`, and each copy is held back by up to `max_delay` more than the hop with
/// probability `reorder` (so later datagrams overtake it). [`Faults::NONE`] is the world
/// of the other tests: no randomness is drawn at all, so their runs are unchanged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Faults {
    pub loss: f64,
    pub duplicate: f64,
    pub reorder: f64,
    pub max_delay: Duration,
}

impl Faults {
    pub const NONE: Faults = Faults {
        loss: 0.0,
        duplicate: 0.0,
        reorder: 0.0,
        max_delay: Duration::ZERO,
    };

    pub fn is_off(&self) -> bool {
        self.loss <= 0.0
            && self.duplicate <= 0.0
            && (self.reorder <= 0.0 || self.max_delay.is_zero())
    }
}

/// What the faults did, for tests that check they happen.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FaultCounts {
    pub carried: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub delayed: u64,
}

#[derive(Debug)]
enum Action {
    /// The server gets a frame from member `from` (on connection `conn`).
    ToServer {
        from: usize,
        conn: u64,
        frame: ClientFrame,
    },
    /// Member `to` gets a server frame (if still on connection `conn`).
    ToMember {
        to: usize,
        conn: u64,
        text: String,
    },
    SocketOpen {
        to: usize,
        conn: u64,
    },
    SocketClosed {
        to: usize,
        conn: u64,
    },
    Transport {
        to: usize,
        transport: TransportId,
        event: TransportEvent,
    },
    Datagram {
        to: usize,
        route: Route,
        bytes: Vec<u8>,
    },
    IceCheck {
        pc: usize,
    },
    /// A client's WebTransport session reaches its host (QUIC's handshake and the CONNECT).
    WtArrive {
        session: usize,
    },
}

/// Picks datagrams to drop ([`World::drop_datagrams`]).
pub type DatagramFilter = fn(&[u8]) -> bool;

/// Which members an action calls into.
enum Reach {
    /// None: the server's replies travel as later actions.
    Server,
    One(usize),
    /// An ICE check may reach either end.
    Any,
}

impl Action {
    fn reach(&self) -> Reach {
        match self {
            Action::ToServer { .. } => Reach::Server,
            Action::ToMember { to, .. }
            | Action::SocketOpen { to, .. }
            | Action::SocketClosed { to, .. }
            | Action::Transport { to, .. }
            | Action::Datagram { to, .. } => Reach::One(*to),
            Action::IceCheck { .. } => Reach::Any,
            // It only schedules the sessions' openings.
            Action::WtArrive { .. } => Reach::Server,
        }
    }
}

/// A WebTransport session or a WebSocket from a client to a host room's host. The host's
/// service URLs name its node: `https://wt.test/n<node>`, `ws://wt.test/n<node>`
/// ([`World::webtransport_service`]).
#[derive(Debug)]
struct WtSession {
    client: usize,
    client_transport: TransportId,
    host: usize,
    host_transport: Option<TransportId>,
    token: String,
    /// A WebSocket (TCP), not a WebTransport session.
    websocket: bool,
    /// The CONNECT reached the host.
    arrived: bool,
    open: bool,
    closed: bool,
}

#[derive(Debug)]
struct Pc {
    owner: usize,
    transport: TransportId,
    remote: Option<usize>,
    described: bool,
    got_candidate: bool,
    open: bool,
    closed: bool,
    failed: bool,
    since: Option<Duration>,
}

/// A signalling connection as the server's rules name it: (member, connection number).
type Conn = (usize, u64);

/// The signalling server's memory: lost when it dies. Its room runs the signal server's own
/// rules (`ackwire_signalling::rules`); the world only carries out what they say.
#[derive(Debug)]
struct Server {
    room: Room<Conn>,
    next_id: PeerId,
    /// The peer each connection joined as (the server's sessions). Ordered, so that a walk
    /// over it is the same in every run (a seeded schedule must replay exactly).
    sessions: BTreeMap<Conn, PeerId>,
    /// Peers whose resume token the server lost ([`World::forget_token`]).
    forgotten: BTreeSet<PeerId>,
}

impl Server {
    fn new(next_id: PeerId) -> Server {
        Server {
            room: Room::new("lobby", 1000),
            next_id,
            sessions: BTreeMap::new(),
            forgotten: BTreeSet::new(),
        }
    }

    /// The peer member `n` is in the room as (its socket open or inside its grace).
    fn peer_of(&self, n: usize) -> Option<PeerId> {
        self.sessions
            .iter()
            .filter(|((member, _), _)| *member == n)
            .map(|(_, id)| *id)
            .find(|id| self.room.holds_local(*id))
    }
}

/// The application the world's members play: channel 0 unreliable-sequenced (positions),
/// 1 reliable-ordered (chat), 2 reliable-unordered, 3 unreliable.
pub fn app() -> AppInfo {
    AppInfo::new(
        "world-test",
        1,
        [
            ChannelKind::UnreliableSequenced,
            ChannelKind::ReliableOrdered,
            ChannelKind::ReliableUnordered,
            ChannelKind::Unreliable,
        ],
    )
}

/// The reliable-ordered channel of [`app`].
pub const CHAT: u8 = 1;

/// How a member's clock (the `now` it is given) relates to the world's: `ahead` of it, and
/// running `ppm` parts per million fast (negative: slow). The default is the world's own.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Skew {
    pub ahead: Duration,
    pub ppm: i64,
}

impl Skew {
    /// The member's clock at world time `world`.
    pub fn local(&self, world: Duration) -> Duration {
        let nanos = world.as_nanos() as i128;
        let local =
            self.ahead.as_nanos() as i128 + nanos + nanos * i128::from(self.ppm) / 1_000_000;
        Duration::from_nanos(local.max(0) as u64)
    }

    /// The first world time at which the member's clock reads `local` or later.
    pub fn world(&self, local: Duration) -> Duration {
        if *self == Skew::default() {
            return local;
        }
        let since = (local.as_nanos() as i128 - self.ahead.as_nanos() as i128).max(0);
        let scale = 1_000_000 + i128::from(self.ppm);
        let mut world = Duration::from_nanos(((since * 1_000_000 + scale - 1) / scale) as u64);
        while self.local(world) < local {
            world += Duration::from_nanos(1);
        }
        world
    }
}

pub struct Node {
    pub member: Member,
    /// Its clock against the world's ([`World::add_skewed`]).
    pub skew: Skew,
    pub events: Vec<Event>,
    /// The signalling connection the member has open (0: none).
    conn: u64,
    pub udp: Option<SocketAddr>,
    /// Stats frames this member sent, newest last.
    pub stats_sent: Vec<serde_json::Value>,
    /// Sockets it opened with the join in the URL.
    pub url_joins: u32,
    /// Candidates this member's peer connections never produce (ICE will fail).
    pub no_candidates: bool,
    pub kind: PeerKind,
    /// The server's tag for the public address it sees this member connect from.
    pub network: String,
    /// The program is gone ([`World::vanish`]): nothing reaches it, it runs no more.
    pub gone: bool,
    /// Its path to the server is cut ([`World::cut_signalling`]): sockets fail to open.
    pub signalling_cut: bool,
    /// Its driver has WebRTC (`MemberConfig::webrtc`): one without must never open a peer
    /// connection.
    webrtc: bool,
}

pub struct World {
    pub now: Duration,
    queue: BTreeMap<(Duration, u64), Action>,
    seq: u64,
    pub nodes: Vec<Node>,
    server: Option<Server>,
    next_conn: u64,
    /// Ids of a restarted server start here (1 reuses the old ones).
    pub restart_ids_from: PeerId,
    pcs: Vec<Pc>,
    pc_by_transport: HashMap<(usize, TransportId), usize>,
    wts: Vec<WtSession>,
    /// Hosts whose WebTransport port no client reaches ([`World::block_webtransport`]).
    wt_blocked: BTreeSet<usize>,
    /// Hosts no UDP reaches ([`World::no_udp_to`]).
    no_udp: BTreeSet<usize>,
    /// Every WebTransport dial: (client node, the service its command named), in order.
    pub wt_dials: Vec<(usize, ackwire_room::signalling::WebTransportInfo)>,
    /// Node pairs whose data is dropped (both directions).
    blackout: BTreeSet<(usize, usize)>,
    /// Pairs whose raw UDP datagrams are dropped (a symmetric NAT, a firewall), WebRTC not.
    udp_blocked: BTreeSet<(usize, usize)>,
    /// `(from, to)`: data from `from` to `to` is dropped, the other way passes.
    one_way: BTreeSet<(usize, usize)>,
    /// `(from, to)`: WebRTC datagrams from `from` to `to` for which the filter says true are
    /// dropped (a peer that misbehaves in one way, e.g. never answers a hello).
    drop_if: HashMap<(usize, usize), DatagramFilter>,
    udp_owner: HashMap<SocketAddr, usize>,
    /// Frames the server relayed (signals), for tests that count negotiations.
    pub offers_relayed: usize,
    /// Each offer the server relayed: (from node, to node), in order.
    pub offers: Vec<(usize, usize)>,
    /// Every UDP datagram sent between natives, in order (a packet capture).
    pub udp_seen: Vec<Vec<u8>>,
    /// Faults on member-to-member datagrams ([`World::set_faults`]).
    faults: Faults,
    fault_rng: Rng,
    pub fault_counts: FaultCounts,
    /// How long a datagram between members takes, before faults: [`HOP`] unless a test
    /// shortens the path (a LAN).
    pub datagram_hop: Duration,
}

impl World {
    pub fn new() -> World {
        World {
            now: Duration::ZERO,
            queue: BTreeMap::new(),
            seq: 0,
            nodes: Vec::new(),
            server: Some(Server::new(1)),
            next_conn: 1,
            restart_ids_from: 1,
            pcs: Vec::new(),
            pc_by_transport: HashMap::new(),
            wts: Vec::new(),
            wt_blocked: BTreeSet::new(),
            no_udp: BTreeSet::new(),
            wt_dials: Vec::new(),
            blackout: BTreeSet::new(),
            udp_blocked: BTreeSet::new(),
            one_way: BTreeSet::new(),
            drop_if: HashMap::new(),
            udp_owner: HashMap::new(),
            offers_relayed: 0,
            offers: Vec::new(),
            udp_seen: Vec::new(),
            faults: Faults::NONE,
            fault_rng: Rng::new(0),
            fault_counts: FaultCounts::default(),
            datagram_hop: HOP,
        }
    }

    /// Seeds the faults' randomness (a run's datagram fates follow from it).
    pub fn seed_faults(&mut self, seed: u64) {
        self.fault_rng = Rng::new(seed);
    }

    /// Faults on every datagram sent from now on ([`Faults::NONE`]: a quiet network).
    pub fn set_faults(&mut self, faults: Faults) {
        self.faults = faults;
    }

    pub fn faults(&self) -> Faults {
        self.faults
    }

    /// Adds a member of `room`; it starts joining at once.
    pub fn add(&mut self, kind: PeerKind, tweak: impl FnOnce(&mut MemberConfig)) -> usize {
        self.add_on(kind, "home", tweak)
    }

    /// Adds a member that the server sees connect from the public address tagged `network`
    /// (members added with [`add`](Self::add) share one).
    pub fn add_on(
        &mut self,
        kind: PeerKind,
        network: &str,
        tweak: impl FnOnce(&mut MemberConfig),
    ) -> usize {
        self.add_skewed(kind, network, Skew::default(), tweak)
    }

    /// Adds a member whose clock is `skew` off the world's.
    pub fn add_skewed(
        &mut self,
        kind: PeerKind,
        network: &str,
        skew: Skew,
        tweak: impl FnOnce(&mut MemberConfig),
    ) -> usize {
        let n = self.nodes.len();
        let mut config = MemberConfig::new("lobby", app(), kind, format!("inst{n}"));
        config.secret = [n as u8 + 1; 32];
        config.seed = 1000 + n as u64;
        let udp = (kind == PeerKind::Native)
            .then(|| SocketAddr::from(([127, 0, 0, 1], 40000 + n as u16)));
        config.udp_addr = udp;
        tweak(&mut config);
        let udp = config.udp_addr;
        let webrtc = config.webrtc;
        if let Some(addr) = config.udp_addr {
            self.udp_owner.insert(addr, n);
        }
        let member = Member::new(config, skew.local(self.now)).expect("valid member config");
        self.nodes.push(Node {
            member,
            skew,
            events: Vec::new(),
            conn: 0,
            udp,
            stats_sent: Vec::new(),
            url_joins: 0,
            no_candidates: false,
            kind,
            network: network.to_owned(),
            gone: false,
            signalling_cut: false,
            webrtc,
        });
        self.drain(n);
        n
    }

    fn at(&mut self, delay: Duration, action: Action) {
        self.seq += 1;
        self.queue.insert((self.now + delay, self.seq), action);
    }

    /// Runs until `until` (absolute virtual time).
    pub fn run_until(&mut self, until: Duration) {
        // Each member's next timer, polled again only when something reached that member:
        // the loop's cost is the members' work, not polling every member twice per step.
        let poll = |node: &Node| {
            (!node.gone)
                .then(|| node.member.poll_timeout().map(|t| node.skew.world(t)))
                .flatten()
        };
        let mut timers: Vec<Option<Duration>> = self.nodes.iter().map(poll).collect();
        let mut touched = vec![false; self.nodes.len()];
        loop {
            let next_action = self.queue.keys().next().map(|k| k.0);
            let next_timer = timers.iter().flatten().min().copied();
            let next = [next_action, next_timer].into_iter().flatten().min();
            let Some(next) = next.filter(|&t| t <= until) else {
                self.now = until;
                return;
            };
            self.now = self.now.max(next);
            while let Some(entry) = self.queue.first_entry() {
                if entry.key().0 > self.now {
                    break;
                }
                let action = entry.remove();
                match action.reach() {
                    Reach::Server => {}
                    Reach::One(n) => touched[n] = true,
                    Reach::Any => touched.fill(true),
                }
                self.apply(action);
            }
            for n in 0..self.nodes.len() {
                if std::mem::take(&mut touched[n]) {
                    timers[n] = poll(&self.nodes[n]);
                }
                if timers[n].is_some_and(|t| t <= self.now) {
                    let now = self.nodes[n].skew.local(self.now);
                    self.nodes[n].member.handle_timeout(now);
                    self.drain(n);
                    timers[n] = poll(&self.nodes[n]);
                }
            }
        }
    }

    /// Runs for `d` more.
    pub fn run_for(&mut self, d: Duration) {
        let until = self.now + d;
        self.run_until(until);
    }

    /// Runs until `pred` holds (checked after every step), or panics after `limit`.
    pub fn run_until_true(
        &mut self,
        limit: Duration,
        what: &str,
        mut pred: impl FnMut(&World) -> bool,
    ) {
        let end = self.now + limit;
        while !pred(self) {
            assert!(
                self.now < end,
                "{what}: not within {limit:?} (at {:?})",
                self.now
            );
            let step = self.now + Duration::from_millis(10);
            self.run_until(step);
        }
    }

    fn apply(&mut self, action: Action) {
        let now = self.now;
        // A vanished program hears nothing more, and what it had in flight to the server
        // dies with its socket (the server has evicted it already).
        let gone = |n: usize| self.nodes[n].gone;
        let dead = match &action {
            Action::ToServer { from, .. } => gone(*from),
            Action::ToMember { to, .. }
            | Action::SocketOpen { to, .. }
            | Action::SocketClosed { to, .. }
            | Action::Transport { to, .. }
            | Action::Datagram { to, .. } => gone(*to),
            Action::WtArrive { session } => gone(self.wts[*session].host),
            Action::IceCheck { .. } => false,
        };
        if dead {
            return;
        }
        match action {
            Action::ToServer { from, conn, frame } => self.server_receive(from, conn, frame),
            Action::ToMember { to, conn, text } => {
                let now = self.nodes[to].skew.local(now);
                if self.nodes[to].conn == conn {
                    self.nodes[to]
                        .member
                        .handle_frame(now, &text)
                        .expect("server frames parse");
                    self.drain(to);
                }
            }
            Action::SocketOpen { to, conn } => {
                let now = self.nodes[to].skew.local(now);
                if self.nodes[to].conn == conn {
                    self.nodes[to].member.signalling_open(now);
                    self.drain(to);
                }
            }
            Action::SocketClosed { to, conn } => {
                let now = self.nodes[to].skew.local(now);
                if self.nodes[to].conn == conn {
                    self.nodes[to].conn = 0;
                    self.nodes[to]
                        .member
                        .signalling_closed(now, "socket closed");
                    self.drain(to);
                }
            }
            Action::Transport {
                to,
                transport,
                event,
            } => {
                let now = self.nodes[to].skew.local(now);
                self.nodes[to]
                    .member
                    .handle_transport(now, transport, event);
                self.drain(to);
            }
            Action::Datagram { to, route, bytes } => {
                let now = self.nodes[to].skew.local(now);
                let _ = self.nodes[to].member.receive(now, route, &bytes);
                self.drain(to);
            }
            Action::IceCheck { pc } => self.ice_check(pc),
            Action::WtArrive { session } => {
                self.wts[session].arrived = true;
                self.wt_meet(session);
            }
        }
    }

    /// Handles everything member `n` asked for.
    fn drain(&mut self, n: usize) {
        while let Some(output) = self.nodes[n].member.poll_output() {
            match output {
                Output::OpenSignalling { join } => {
                    let conn = self.next_conn;
                    self.next_conn += 1;
                    self.nodes[n].conn = conn;
                    if self.server.is_some() && !self.nodes[n].signalling_cut {
                        self.at(HOP, Action::SocketOpen { to: n, conn });
                        // The server reads a join in the URL as it accepts the socket.
                        if let Some(join) = join {
                            self.nodes[n].url_joins += 1;
                            self.server_receives(n, conn, join.into_frame().expect("a valid join"));
                        }
                    } else {
                        self.at(HOP, Action::SocketClosed { to: n, conn });
                    }
                }
                Output::Frame(frame) => {
                    // As on the wire: the server reads the member's typed frame as JSON.
                    let text = serde_json::to_string(&frame).expect("member frames serialize");
                    let frame: ClientFrame =
                        serde_json::from_str(&text).expect("the server reads member frames");
                    if let ClientFrame::Stats { links, .. } = &frame {
                        self.nodes[n].stats_sent.push(links.clone());
                    }
                    let conn = self.nodes[n].conn;
                    if conn != 0 {
                        self.server_receives(n, conn, frame);
                    }
                }
                Output::Command(command) => self.command(n, command),
                Output::CloseSignalling => self.nodes[n].conn = 0,
                Output::Transmit { route, datagram } => self.transmit(n, route, datagram),
                Output::Event(event) => self.nodes[n].events.push(event),
            }
        }
    }

    // ----- the signalling server -----

    /// `frame` from member `from` on its connection `conn` reaches the server a hop later.
    fn server_receives(&mut self, from: usize, conn: u64, frame: ClientFrame) {
        self.at(HOP, Action::ToServer { from, conn, frame });
    }

    fn send_to_member(&mut self, to: usize, conn: u64, frame: &ServerFrame) {
        let text = serde_json::to_string(frame).unwrap();
        self.at(HOP, Action::ToMember { to, conn, text });
    }

    fn server_receive(&mut self, from: usize, conn: u64, frame: ClientFrame) {
        let network = self.nodes[from].network.clone();
        let Some(server) = self.server.as_mut() else {
            return;
        };
        let me = (from, conn);
        let sender = server.sessions.get(&me).copied();
        // Frames straight back to the sender, then what the rules say.
        let mut replies: Vec<ServerFrame<'static>> = Vec::new();
        let mut effects = Vec::new();
        match frame {
            ClientFrame::Join {
                kind,
                udp_addr,
                instance,
                udp_key,
                app,
                role,
                mut resume,
                ticket,
                webtransport,
                ..
            } => {
                if let Some(r) = &mut resume
                    && server.forgotten.contains(&r.peer_id)
                {
                    r.token = "forgotten".into();
                }
                // This server's stand-in for a backend's tickets: a fresh join's ticket is the
                // identity it names (the real check is the signal server's, tested there).
                let identity = ticket.filter(|_| resume.is_none());
                let join = rules::Join {
                    conn: me,
                    id: server.next_id,
                    // Tokens are secrets: never the same twice, even from a restarted server.
                    token: format!("tok{conn}"),
                    kind,
                    role,
                    udp_addr,
                    udp_key,
                    instance,
                    app,
                    resume,
                    network: Some(network),
                    reserved: false,
                    identity,
                    webtransport: webtransport.map(|w| *w),
                    replaces: None,
                };
                match server.room.join(join) {
                    Ok(mut joined) => {
                        if !joined.resumed {
                            server.next_id += 1;
                        }
                        server.sessions.insert(me, joined.peer_id);
                        effects = std::mem::take(&mut joined.effects);
                        let welcome = joined.welcome("lobby", Vec::new().into());
                        replies.push(to_owned_frame(&welcome));
                    }
                    Err(err) => replies.push(error(&err)),
                }
            }
            ClientFrame::Signal { to, data, .. } => {
                let Some(from_id) = sender else { return };
                match server.room.relay(from_id, &me, to) {
                    Ok(rules::Route::Local(&(member, c))) => {
                        if let Some(sdp) = data.get("sdp") {
                            self.offers_relayed += 1;
                            if sdp.get("type").and_then(|t| t.as_str()) == Some("offer") {
                                self.offers.push((from, member));
                            }
                        }
                        let frame = ServerFrame::Signal {
                            from: from_id,
                            data: std::borrow::Cow::Owned(data),
                        };
                        self.send_to_member(member, c, &frame);
                        return;
                    }
                    Ok(_) => unreachable!("one server"),
                    Err(err) => replies.push(error(&err)),
                }
            }
            ClientFrame::Update { webtransport } => {
                let Some(id) = sender else { return };
                match server.room.update(id, &me, webtransport.map(|w| *w)) {
                    Ok(done) => effects = done,
                    Err(err) => replies.push(error(&err)),
                }
            }
            ClientFrame::Leave => {
                let Some(id) = server.sessions.remove(&me) else {
                    return;
                };
                effects = server.room.leave(id, &me, LeaveReason::Left);
            }
            _ => {}
        }
        for reply in &replies {
            self.send_to_member(from, conn, reply);
        }
        self.carry_out(effects);
    }

    /// Does what the server's rules said.
    fn carry_out(&mut self, effects: Vec<Effect<Conn>>) {
        for effect in effects {
            match effect {
                Effect::Send { to, frame } => {
                    for (member, conn) in to {
                        self.send_to_member(member, conn, &frame);
                    }
                }
                // The connection a resume or a replacing join took over is closed.
                Effect::Close {
                    conn: (member, conn),
                    ..
                } => self.at(HOP, Action::SocketClosed { to: member, conn }),
                // No dashboards, no other servers.
                _ => {}
            }
        }
    }

    /// Member `n`'s peer leaves the room for `reason` (its grace ran out, say).
    fn evict(&mut self, n: usize, reason: LeaveReason) {
        let Some(server) = self.server.as_mut() else {
            return;
        };
        if let Some(id) = server.peer_of(n) {
            let effects = server.room.evict(id, reason);
            self.carry_out(effects);
        }
    }

    /// The server dies: every socket closes, its memory is lost.
    pub fn kill_server(&mut self) {
        self.server = None;
        for n in 0..self.nodes.len() {
            let conn = self.nodes[n].conn;
            if conn != 0 {
                self.at(HOP, Action::SocketClosed { to: n, conn });
            }
        }
    }

    /// Whether a server process runs.
    pub fn server_up(&self) -> bool {
        self.server.is_some()
    }

    /// The network heals: no faults, no blackouts, one-way or UDP blocks, no cut signalling
    /// paths, except around members that are gone.
    pub fn heal_network(&mut self) {
        self.faults = Faults::NONE;
        let gone: Vec<bool> = self.nodes.iter().map(|n| n.gone).collect();
        self.blackout.retain(|&(a, b)| gone[a] || gone[b]);
        self.one_way.clear();
        self.udp_blocked.clear();
        for node in &mut self.nodes {
            node.signalling_cut = false;
        }
    }

    /// A new server process: it knows no one.
    pub fn start_server(&mut self) {
        self.server = Some(Server::new(self.restart_ids_from));
    }

    /// Member `n` vanishes without a word (its tab closed): the server notices and tells the
    /// room it was lost.
    pub fn vanish(&mut self, n: usize) {
        self.nodes[n].conn = 0;
        self.nodes[n].gone = true;
        self.blackout_node(n);
        self.evict(n, LeaveReason::Lost);
    }

    /// The server loses member `n`'s socket and forgets it (as after its grace ran out): the
    /// room hears it was lost; `n` finds its socket closed, and its resume is rejected, so it
    /// joins afresh with its instance. Its links, and its members' memory of it, diverge: the
    /// others forget it, it remembers them.
    pub fn forget_member(&mut self, n: usize) {
        self.evict(n, LeaveReason::Lost);
        self.drop_socket(n);
    }

    /// The server forgets member `n`'s resume token (as after its grace ran out, while the
    /// entry itself is still there): its next resume is rejected.
    pub fn forget_token(&mut self, n: usize) {
        if let Some(server) = &mut self.server
            && let Some(id) = server.peer_of(n)
        {
            server.forgotten.insert(id);
        }
    }

    /// Member `n` drops its signalling socket (the server keeps its id for resuming, within
    /// a grace that never runs out here).
    pub fn drop_socket(&mut self, n: usize) {
        let conn = self.nodes[n].conn;
        if conn != 0 {
            if let Some(server) = &mut self.server
                && let Some(id) = server.peer_of(n)
            {
                server.room.detach(id, &(n, conn));
            }
            self.at(Duration::ZERO, Action::SocketClosed { to: n, conn });
        }
    }

    /// Cuts (or restores) member `n`'s path to the server: its socket drops (as in
    /// [`drop_socket`](Self::drop_socket)) and new ones fail to open until restored, so it
    /// comes back to the room late (after a restart, later than its peers' orphan grace).
    pub fn cut_signalling(&mut self, n: usize, on: bool) {
        self.nodes[n].signalling_cut = on;
        if on {
            self.drop_socket(n);
        }
    }

    // ----- transports -----

    pub fn set_blackout(&mut self, a: usize, b: usize, on: bool) {
        let key = (a.min(b), a.max(b));
        if on {
            self.blackout.insert(key);
        } else {
            self.blackout.remove(&key);
        }
    }

    /// Drops the data from `from` to `to` (the other way passes): `to` hears nothing of
    /// `from`, `from` hears `to`.
    /// Drops the WebRTC datagrams from `from` to `to` that `drop` picks (`None`: none).
    pub fn drop_datagrams(&mut self, from: usize, to: usize, drop: Option<DatagramFilter>) {
        match drop {
            Some(drop) => self.drop_if.insert((from, to), drop),
            None => self.drop_if.remove(&(from, to)),
        };
    }

    pub fn set_one_way_blackout(&mut self, from: usize, to: usize, on: bool) {
        if on {
            self.one_way.insert((from, to));
        } else {
            self.one_way.remove(&(from, to));
        }
    }

    /// Drops the raw UDP datagrams between `a` and `b` (their WebRTC traffic passes).
    pub fn block_udp(&mut self, a: usize, b: usize) {
        self.udp_blocked.insert((a.min(b), a.max(b)));
    }

    fn blackout_node(&mut self, n: usize) {
        for m in 0..self.nodes.len() {
            if m != n {
                self.set_blackout(n, m, true);
            }
        }
    }

    fn blocked(&self, a: usize, b: usize) -> bool {
        self.blackout.contains(&(a.min(b), a.max(b)))
    }

    fn command(&mut self, n: usize, command: Command) {
        match command {
            Command::OpenPeerConnection {
                transport, offer, ..
            } => {
                assert!(
                    self.nodes[n].webrtc,
                    "member {n} has no WebRTC but opened a peer connection"
                );
                let pc = self.pcs.len();
                self.pcs.push(Pc {
                    owner: n,
                    transport,
                    remote: None,
                    described: false,
                    got_candidate: false,
                    open: false,
                    closed: false,
                    failed: false,
                    since: None,
                });
                self.pc_by_transport.insert((n, transport), pc);
                if offer {
                    self.local_description(pc, SdpKind::Offer);
                }
            }
            Command::ApplyRemoteSignal { transport, data } => {
                let Some(&pc) = self.pc_by_transport.get(&(n, transport)) else {
                    return;
                };
                if self.pcs[pc].closed {
                    return;
                }
                match data {
                    SignalData::Sdp { sdp } => {
                        let remote: usize = sdp.sdp.trim_start_matches("pc:").parse().unwrap();
                        self.pcs[pc].remote = Some(remote);
                        self.pcs[pc].described = true;
                        self.pcs[pc].since = Some(self.now);
                        self.at(
                            Duration::ZERO,
                            Action::Transport {
                                to: n,
                                transport,
                                event: TransportEvent::RemoteDescriptionSet,
                            },
                        );
                        if sdp.kind == SdpKind::Offer {
                            self.local_description(pc, SdpKind::Answer);
                        }
                        self.at(ICE_FAIL, Action::IceCheck { pc });
                    }
                    SignalData::WebTransport { .. } | SignalData::WebSocket { .. } => {
                        panic!("a session token applied to a peer connection")
                    }
                    SignalData::Candidate { .. } => {
                        assert!(self.pcs[pc].described, "candidate before the description");
                        self.pcs[pc].got_candidate = true;
                    }
                }
                self.at(ICE_CONNECT, Action::IceCheck { pc });
            }
            Command::OpenWebTransport {
                transport, service, ..
            } => {
                self.wt_dials.push((n, service.clone()));
                self.dial_session(n, transport, &service.url, false);
            }
            Command::OpenWebSocket { transport, service } => {
                let url = service
                    .websocket
                    .expect("a WebSocket dialed where none is served");
                self.dial_session(n, transport, &url, true);
            }
            Command::AcceptWebTransport { transport, token } => {
                self.accept_session(n, transport, &token, false);
            }
            Command::AcceptWebSocket { transport, token } => {
                self.accept_session(n, transport, &token, true);
            }
            Command::CloseTransport { transport } => {
                if let Some(session) = self.wt_of(n, transport) {
                    let w = &mut self.wts[session];
                    let was_open = w.open;
                    w.closed = true;
                    w.open = false;
                    let (to, their) = if w.client == n {
                        (w.host, w.host_transport)
                    } else {
                        (w.client, Some(w.client_transport))
                    };
                    if was_open && let Some(transport) = their {
                        self.at(
                            HOP,
                            Action::Transport {
                                to,
                                transport,
                                event: TransportEvent::ChannelClosed,
                            },
                        );
                    }
                    return;
                }
                let Some(&pc) = self.pc_by_transport.get(&(n, transport)) else {
                    return;
                };
                let was_open = self.pcs[pc].open;
                self.pcs[pc].closed = true;
                self.pcs[pc].open = false;
                if let Some(remote) = self.pcs[pc].remote {
                    let r = &self.pcs[remote];
                    // An SCTP abort travels the network like anything else.
                    if was_open && r.open && r.remote == Some(pc) && !self.blocked(n, r.owner) {
                        let (to, transport) = (r.owner, r.transport);
                        self.at(
                            HOP,
                            Action::Transport {
                                to,
                                transport,
                                event: TransportEvent::ChannelClosed,
                            },
                        );
                    }
                }
            }
        }
    }

    /// Client `n` dials the session (a WebSocket with `websocket`) at `url`, which names the
    /// host's node: its token goes to the host, the session arrives when the handshakes are
    /// done.
    fn dial_session(&mut self, n: usize, transport: TransportId, url: &str, websocket: bool) {
        let token = format!("{:032x}", self.wts.len() + 1);
        let host = url
            .rsplit_once("/n")
            .and_then(|(_, n)| n.parse().ok())
            .expect("a world host's service names its node");
        let signal = if websocket {
            SignalData::WebSocket {
                websocket: token.clone(),
            }
        } else {
            SignalData::WebTransport {
                webtransport: token.clone(),
            }
        };
        self.at(
            Duration::ZERO,
            Action::Transport {
                to: n,
                transport,
                event: TransportEvent::LocalSignal(signal),
            },
        );
        let session = self.wts.len();
        self.wts.push(WtSession {
            client: n,
            client_transport: transport,
            host,
            host_transport: None,
            token,
            websocket,
            arrived: false,
            open: false,
            closed: false,
        });
        // QUIC's handshake, then the CONNECT: three hops; TCP's, then the upgrade: four. A
        // blocked UDP port answers nothing (the browser's own handshake timeout is longer
        // than the member's); TCP goes through.
        let udp_blocked = !websocket && self.wt_blocked.contains(&host);
        if !udp_blocked && !self.blocked(n, host) {
            let hops = if websocket { 4 } else { 3 };
            self.at(hops * HOP, Action::WtArrive { session });
        }
    }

    /// Host `n` takes the session (a WebSocket with `websocket`) that shows `token` as
    /// `transport`.
    fn accept_session(&mut self, n: usize, transport: TransportId, token: &str, websocket: bool) {
        let Some(session) = self.wts.iter().position(|w| {
            w.host == n
                && w.token == token
                && w.websocket == websocket
                && !w.closed
                && w.host_transport.is_none()
        }) else {
            return;
        };
        self.wts[session].host_transport = Some(transport);
        self.wt_meet(session);
    }

    /// The WebTransport session of member `n`'s `transport`, on either side.
    fn wt_of(&self, n: usize, transport: TransportId) -> Option<usize> {
        self.wts.iter().position(|w| {
            (w.client == n && w.client_transport == transport)
                || (w.host == n && w.host_transport == Some(transport))
        })
    }

    /// A session whose CONNECT arrived and whose token the host was told opens: the host at
    /// once, the client when the response reaches it.
    fn wt_meet(&mut self, session: usize) {
        let w = &mut self.wts[session];
        let Some(host_transport) = w.host_transport else {
            return;
        };
        if !w.arrived || w.open || w.closed {
            return;
        }
        w.open = true;
        let (host, client, client_transport) = (w.host, w.client, w.client_transport);
        self.at(
            Duration::ZERO,
            Action::Transport {
                to: host,
                transport: host_transport,
                event: TransportEvent::ChannelOpen,
            },
        );
        self.at(
            HOP,
            Action::Transport {
                to: client,
                transport: client_transport,
                event: TransportEvent::ChannelOpen,
            },
        );
    }

    /// The service a host at node `n` publishes in the world.
    pub fn webtransport_service(n: usize) -> ackwire_room::signalling::WebTransportInfo {
        ackwire_room::signalling::WebTransportInfo {
            url: format!("https://wt.test/n{n}"),
            cert_hashes: vec![ackwire_room::signalling::CertHash([n as u8; 32])],
            websocket: Some(format!("ws://wt.test/n{n}")),
        }
    }

    /// No client reaches host `n`'s WebTransport port (a firewall that drops UDP to it).
    pub fn block_webtransport(&mut self, n: usize) {
        self.wt_blocked.insert(n);
    }

    /// No UDP reaches host `n` or leaves it: neither its WebTransport port, nor ICE, nor raw
    /// UDP (a network that carries TCP alone); its WebSocket still does.
    pub fn no_udp_to(&mut self, n: usize) {
        self.wt_blocked.insert(n);
        self.no_udp.insert(n);
    }

    /// How many WebSockets opened.
    pub fn websockets_opened(&self) -> usize {
        self.wts
            .iter()
            .filter(|w| w.websocket && w.arrived && w.host_transport.is_some())
            .count()
    }

    /// How many WebTransport sessions opened.
    pub fn webtransport_opened(&self) -> usize {
        self.wts
            .iter()
            .filter(|w| !w.websocket && w.arrived && w.host_transport.is_some())
            .count()
    }

    fn local_description(&mut self, pc: usize, kind: SdpKind) {
        let (owner, transport) = (self.pcs[pc].owner, self.pcs[pc].transport);
        let sdp = SignalData::Sdp {
            sdp: ackwire_room::signalling::Sdp {
                kind,
                sdp: format!("pc:{pc}"),
            },
        };
        self.at(
            Duration::ZERO,
            Action::Transport {
                to: owner,
                transport,
                event: TransportEvent::LocalSignal(sdp),
            },
        );
        if !self.nodes[owner].no_candidates {
            let candidate = SignalData::Candidate {
                candidate: format!("candidate:{pc} 1 udp 1 127.0.0.1 5000 typ host"),
                sdp_mid: Some("0".into()),
                sdp_m_line_index: Some(0),
            };
            self.at(
                Duration::from_millis(1),
                Action::Transport {
                    to: owner,
                    transport,
                    event: TransportEvent::LocalSignal(candidate),
                },
            );
        }
    }

    fn ice_check(&mut self, pc: usize) {
        let p = &self.pcs[pc];
        if p.closed || p.open || p.failed {
            return;
        }
        let Some(remote) = p.remote else { return };
        let r = &self.pcs[remote];
        let paired = r.remote == Some(pc) && !r.closed;
        let usable = p.described && r.described && (p.got_candidate || r.got_candidate);
        let udp = !self.no_udp.contains(&p.owner) && !self.no_udp.contains(&r.owner);
        if paired && usable && udp && !self.blocked(p.owner, r.owner) {
            for x in [pc, remote] {
                if self.pcs[x].open {
                    continue;
                }
                self.pcs[x].open = true;
                let (to, transport) = (self.pcs[x].owner, self.pcs[x].transport);
                for event in [
                    TransportEvent::Ice(IceState::Connected),
                    TransportEvent::CandidateType("host".into()),
                    TransportEvent::ChannelOpen,
                ] {
                    self.at(
                        Duration::ZERO,
                        Action::Transport {
                            to,
                            transport,
                            event,
                        },
                    );
                }
            }
        } else if p.since.is_some_and(|s| self.now >= s + ICE_FAIL) {
            let (to, transport) = (p.owner, p.transport);
            self.pcs[pc].failed = true;
            self.at(
                Duration::ZERO,
                Action::Transport {
                    to,
                    transport,
                    event: TransportEvent::Ice(IceState::Failed),
                },
            );
        }
    }

    fn transmit(&mut self, n: usize, route: Route, bytes: Vec<u8>) {
        match route {
            Route::Udp(addr) => {
                // `ACKWIRE_TRACE_UDP=1`: every UDP datagram between natives, as it leaves.
                if std::env::var_os("ACKWIRE_TRACE_UDP").is_some() {
                    eprintln!(
                        "{:.3} n{n} -> {addr}: {} B {:02x?}",
                        self.now.as_secs_f64(),
                        bytes.len(),
                        &bytes[..bytes.len().min(12)]
                    );
                }
                self.udp_seen.push(bytes.clone());
                let Some(&to) = self.udp_owner.get(&addr) else {
                    return;
                };
                if self.blocked(n, to)
                    || self.one_way.contains(&(n, to))
                    || self.udp_blocked.contains(&(n.min(to), n.max(to)))
                    || self.no_udp.contains(&n)
                    || self.no_udp.contains(&to)
                {
                    return;
                }
                let from = self.nodes[n].udp.expect("a native sends UDP");
                self.carry(to, Route::Udp(from), bytes);
            }
            Route::WebRtc(transport) => {
                let Some(&pc) = self.pc_by_transport.get(&(n, transport)) else {
                    return;
                };
                let p = &self.pcs[pc];
                let Some(remote) = p.remote.filter(|_| p.open) else {
                    return;
                };
                let r = &self.pcs[remote];
                if !r.open
                    || r.closed
                    || self.blocked(n, r.owner)
                    || self.one_way.contains(&(n, r.owner))
                {
                    return;
                }
                let (to, transport) = (r.owner, r.transport);
                if self.drop_if.get(&(n, to)).is_some_and(|drop| drop(&bytes)) {
                    return;
                }
                self.carry(to, Route::WebRtc(transport), bytes);
            }
            Route::WebTransport(transport) | Route::WebSocket(transport) => {
                let Some(session) = self.wt_of(n, transport) else {
                    return;
                };
                let w = &self.wts[session];
                let (to, their) = if w.client == n {
                    (w.host, w.host_transport)
                } else {
                    (w.client, Some(w.client_transport))
                };
                let Some(their) = their.filter(|_| w.open && !w.closed) else {
                    return;
                };
                if self.blocked(n, to) || self.one_way.contains(&(n, to)) {
                    return;
                }
                if self.drop_if.get(&(n, to)).is_some_and(|drop| drop(&bytes)) {
                    return;
                }
                let route = if w.websocket {
                    Route::WebSocket(their)
                } else {
                    Route::WebTransport(their)
                };
                self.carry(to, route, bytes);
            }
        }
    }

    /// A datagram for member `to` crosses the network, through the faults if any.
    fn carry(&mut self, to: usize, route: Route, bytes: Vec<u8>) {
        if self.faults.is_off() {
            self.at(self.datagram_hop, Action::Datagram { to, route, bytes });
            return;
        }
        let faults = self.faults;
        self.fault_counts.carried += 1;
        if self.fault_rng.chance(faults.loss) {
            self.fault_counts.lost += 1;
            return;
        }
        let copies = if self.fault_rng.chance(faults.duplicate) {
            self.fault_counts.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut delay = self.datagram_hop;
            if self.fault_rng.chance(faults.reorder) {
                self.fault_counts.delayed += 1;
                let max = faults.max_delay.as_micros() as u64;
                delay += Duration::from_micros(self.fault_rng.range(1, max.max(1)));
            }
            let bytes = bytes.clone();
            self.at(delay, Action::Datagram { to, route, bytes });
        }
    }

    // ----- what the tests look at -----

    pub fn links(&self, n: usize) -> Vec<LinkInfo> {
        self.nodes[n]
            .member
            .links(self.nodes[n].skew.local(self.now))
    }

    /// The link of `n` to the member whose current id is that of `m`.
    pub fn link(&self, n: usize, m: usize) -> Option<LinkInfo> {
        let id = self.nodes[m].member.server_id()?;
        self.links(n).into_iter().find(|l| l.server_id == Some(id))
    }

    /// The member's id for `m` at `n`.
    pub fn peer(&self, n: usize, m: usize) -> PeerIdOf {
        self.link(n, m).expect("a link").peer
    }

    pub fn connected(&self, n: usize, m: usize) -> bool {
        self.link(n, m)
            .is_some_and(|l| l.state == LinkState::Connected)
    }

    /// Every pair among `members` has exactly one link each way, connected, and nobody has
    /// a link to itself or to anyone else.
    pub fn fully_linked(&self, members: &[usize]) -> bool {
        members.iter().all(|&n| {
            let links = self.links(n);
            let me = self.nodes[n].member.server_id();
            links.len() == members.len() - 1
                && links
                    .iter()
                    .all(|l| l.server_id.is_some() && l.server_id != me)
                && members
                    .iter()
                    .filter(|&&m| m != n)
                    .all(|&m| self.connected(n, m))
        })
    }

    /// Messages `n` received on `channel` with these bytes.
    pub fn received(&self, n: usize, channel: u8, bytes: &[u8]) -> usize {
        self.nodes[n]
            .events
            .iter()
            .filter(|e| {
                matches!(e, Event::Message { channel: c, bytes: b, .. } if *c == channel && b == bytes)
            })
            .count()
    }

    /// Chat lines (channel [`CHAT`]) `n` received with this text.
    pub fn chats(&self, n: usize, text: &str) -> usize {
        self.received(n, CHAT, text.as_bytes())
    }

    /// Member `n` says `text` on [`CHAT`] (reliable) to every peer in the room; how many
    /// took it.
    pub fn say(&mut self, n: usize, text: &str) -> usize {
        let sent = self.nodes[n]
            .member
            .broadcast(CHAT, text.as_bytes())
            .expect("chat sent");
        self.drain(n);
        sent.sent
    }

    /// Runs member `n`'s own code against it at the current time, then carries out what it
    /// asked for.
    pub fn with<R>(&mut self, n: usize, f: impl FnOnce(&mut Member, Duration) -> R) -> R {
        let now = self.nodes[n].skew.local(self.now);
        let result = f(&mut self.nodes[n].member, now);
        self.drain(n);
        result
    }
}

/// `frame`, owning its data (as the member will read it from the wire).
fn to_owned_frame(frame: &ServerFrame<'_>) -> ServerFrame<'static> {
    let text = serde_json::to_string(frame).expect("server frames serialize");
    serde_json::from_str(&text).expect("server frames parse")
}

/// The error frame for a rule's refusal.
fn error(err: &rules::RuleError) -> ServerFrame<'static> {
    ServerFrame::Error {
        code: err.code(),
        message: err.to_string(),
    }
}
