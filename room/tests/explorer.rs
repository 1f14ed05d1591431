//! A deterministic schedule explorer (simulation testing in the manner of FoundationDB and
//! TigerBeetle) for the room's reliable-message promise: every reliable message a member
//! accepted (`send` returned `Ok`) is delivered to its peer exactly once, or handed back to
//! its sender as `Event::Undelivered` exactly once when the peer left for good or one side
//! forgot the other; never neither; on a reliable-ordered channel, in send order. Delivered
//! *and* handed back is allowed only where no protocol can know better (the receiver
//! vanished or forgot the sender after delivering, or the sender gave the peer up: the server
//! said it left or lost it, or it was not back within the orphan grace), and counted.
//!
//! Each seed builds a random schedule (3–4 browser and native members, reliable sends to
//! random peers at random times, datagram loss, duplication and reordering, blackouts
//! shorter and longer than the idle timeout, server deaths shorter and longer than the
//! members' orphan grace, forgotten members, dropped sockets, a member gone for good), plays
//! it in the virtual-time [`World`], lets the network heal until every survivor is linked
//! and nothing is unconfirmed, then checks every accepted message. Everything comes from the
//! seed: no wall clock, no threads, so a failing seed replays exactly.
//!
//! - `ACKWIRE_SEED=<n>`: run that seed alone (and print its schedule and outcome).
//! - `ACKWIRE_SEEDS=<n>`: run seeds `0..n` (default [`DEFAULT_SEEDS`]); with
//!   `ACKWIRE_SEED_FROM=<s>`, seeds `s..s+n` (`cargo xtask sim` splits a range so).
//! - `ACKWIRE_VERBOSE=1`: a line per seed (what it sent, what became of it, what it did).
//! - `ACKWIRE_STRICT=1`: also fail when a message was both delivered and handed back where
//!   no protocol can know better (see [`Kind::AmbiguousHandBack`]).
//! - `ACKWIRE_KEEP=<i,j,..>` (with `ACKWIRE_SEED`): only those steps of the seed's schedule,
//!   as a shrunk schedule prints them.
//! - `ACKWIRE_SHRINK=all|0`: shrink every failing seed, or none (default: the first failing
//!   seed of each kind of violation).

mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use ackwire_room::member::{Event, GoneReason, LinkState, MemberConfig, PeerId, SendError};
use ackwire_room::signalling::PeerKind;
use world::{Faults, Rng, World};

/// The reliable-ordered and the reliable-unordered channel of `world::app()`.
const ORDERED: u8 = 1;
const UNORDERED: u8 = 2;

/// Seeds a plain `cargo test -p ackwire-room --test explorer` (and so `cargo xtask test`)
/// runs: about 20 s on the 2-core development machine (the protocol's crates build optimised
/// even in tests, Cargo.toml). `cargo xtask sim --seeds N` runs more. Shrinking a failure adds
/// a run per step.
const DEFAULT_SEEDS: u64 = 1000;

/// How long the schedule's actions span, in virtual time.
const HORIZON_MS: u64 = 25_000;

/// How long a healed network gets to link every survivor and confirm every message.
const QUIESCE_LIMIT: Duration = Duration::from_secs(90);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

// ----- schedules -----

#[derive(Debug, Clone, PartialEq)]
enum Act {
    /// `count` reliable messages from `from` to `to` on `channel`, one after the other.
    Send {
        from: usize,
        to: usize,
        channel: u8,
        count: u32,
    },
    /// Datagram faults from now on (percentages; reordering holds a datagram back by up to
    /// `delay_ms` on top of the hop).
    Faults {
        loss: u32,
        dup: u32,
        reorder: u32,
        delay_ms: u64,
    },
    Blackout {
        a: usize,
        b: usize,
        on: bool,
    },
    OneWay {
        from: usize,
        to: usize,
        on: bool,
    },
    KillServer,
    StartServer,
    ForgetMember(usize),
    DropSocket(usize),
    /// `n`'s path to the server is cut (its socket drops and new ones fail) or restored.
    CutSignalling {
        n: usize,
        on: bool,
    },
    Vanish(usize),
}

impl fmt::Display for Act {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Act::Send {
                from,
                to,
                channel,
                count,
            } => {
                let kind = if channel == ORDERED {
                    "ordered"
                } else {
                    "unordered"
                };
                write!(f, "send n{from} -> n{to} on {channel} ({kind}) x{count}")
            }
            Act::Faults {
                loss,
                dup,
                reorder,
                delay_ms,
            } => write!(
                f,
                "faults loss {loss}% dup {dup}% reorder {reorder}% (up to +{delay_ms} ms)"
            ),
            Act::Blackout { a, b, on } => {
                write!(
                    f,
                    "blackout n{a} <-> n{b} {}",
                    if on { "on" } else { "off" }
                )
            }
            Act::OneWay { from, to, on } => {
                write!(
                    f,
                    "one-way blackout n{from} -> n{to} {}",
                    if on { "on" } else { "off" }
                )
            }
            Act::KillServer => write!(f, "kill the server"),
            Act::StartServer => write!(f, "start a new server"),
            Act::ForgetMember(n) => write!(f, "the server forgets n{n}"),
            Act::DropSocket(n) => write!(f, "n{n} drops its signalling socket"),
            Act::CutSignalling { n, on } => write!(
                f,
                "n{n}'s path to the server {}",
                if on { "cut" } else { "restored" }
            ),
            Act::Vanish(n) => write!(f, "n{n} vanishes for good"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Step {
    /// Its place in the seed's full schedule (a shrunk schedule keeps a subset).
    index: usize,
    /// After the room first linked up.
    at: Duration,
    act: Act,
}

#[derive(Debug, Clone, PartialEq)]
struct Schedule {
    seed: u64,
    kinds: Vec<PeerKind>,
    /// Every member's core idle timeout (a link silent this long is lost).
    idle: Duration,
    /// Each member's orphan grace (a peer not back this long after a restart is forgotten).
    graces: Vec<Duration>,
    steps: Vec<Step>,
    /// How many steps the seed's full schedule has.
    total: usize,
}

impl Schedule {
    /// Only the steps of the full schedule numbered in `keep`.
    fn keep(mut self, keep: &BTreeSet<usize>) -> Schedule {
        self.steps.retain(|s| keep.contains(&s.index));
        self
    }

    /// How to replay exactly this schedule.
    fn replay(&self) -> String {
        let mut command = format!("ACKWIRE_SEED={}", self.seed);
        if self.steps.len() < self.total {
            let keep: Vec<String> = self.steps.iter().map(|s| s.index.to_string()).collect();
            let _ = write!(command, " ACKWIRE_KEEP={}", keep.join(","));
        }
        command + " cargo test -p ackwire-room --test explorer"
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {}: idle timeout {:?}", self.seed, self.idle)?;
        for (n, (kind, grace)) in self.kinds.iter().zip(&self.graces).enumerate() {
            writeln!(f, "  n{n}: {kind:?}, orphan grace {grace:?}")?;
        }
        for step in &self.steps {
            writeln!(
                f,
                "  [{:>2}] t+{:>6.3}s  {}",
                step.index,
                step.at.as_secs_f64(),
                step.act
            )?;
        }
        Ok(())
    }
}

/// The schedule of `seed`: the same seed, the same schedule.
///
/// Background noise (sends to random peers at random times, changing datagram faults,
/// dropped sockets) plus a few *episodes*: a fault aimed at a pair with reliable traffic
/// in flight just before and during it, because the promise is at stake exactly when a
/// link dies, or a member is forgotten or gone, while messages are unconfirmed. Uniformly
/// scattered faults almost never land in those windows.
fn schedule(seed: u64) -> Schedule {
    let mut rng = Rng::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x5EED);
    let members = rng.range(3, 4) as usize;
    let kinds: Vec<PeerKind> = (0..members)
        .map(|_| rng.pick(&[PeerKind::Browser, PeerKind::Native]))
        .collect();
    let idle = ms(rng.pick(&[1_500, 2_500, 4_000]));
    // Short graces, so a server death can outlast them and members forget each other.
    let graces: Vec<Duration> = (0..members)
        .map(|_| ms(rng.pick(&[1_500, 3_000, 6_000, 20_000])))
        .collect();
    let mut steps = Vec::new();
    let at = |rng: &mut Rng| ms(rng.below(HORIZON_MS));
    let pair = |rng: &mut Rng| {
        let a = rng.below(members as u64) as usize;
        let b = (a + 1 + rng.below(members as u64 - 1) as usize) % members;
        (a, b)
    };
    let send = |rng: &mut Rng, from: usize, to: usize, most: u64| Act::Send {
        from,
        to,
        channel: rng.pick(&[ORDERED, UNORDERED]),
        count: rng.range(1, most) as u32,
    };
    // Background sends.
    for _ in 0..rng.range(10, 30) {
        let (from, to) = pair(&mut rng);
        let act = send(&mut rng, from, to, 4);
        steps.push(Step {
            index: 0,
            at: at(&mut rng),
            act,
        });
    }
    for i in 0..rng.range(1, 3) {
        let act = Act::Faults {
            loss: rng.pick(&[0, 5, 10, 25, 40]),
            dup: rng.pick(&[0, 5, 20]),
            reorder: rng.pick(&[0, 10, 30]),
            delay_ms: rng.pick(&[20, 100, 400]),
        };
        let when = if i == 0 { Duration::ZERO } else { at(&mut rng) };
        steps.push(Step {
            index: 0,
            at: when,
            act,
        });
    }
    for _ in 0..rng.below(2) {
        let n = rng.below(members as u64) as usize;
        steps.push(Step {
            index: 0,
            at: at(&mut rng),
            act: Act::DropSocket(n),
        });
    }
    let idle_ms = idle.as_millis() as u64;
    let mut vanished = false;
    let mut killed = false;
    for _ in 0..rng.range(1, 4) {
        let t = at(&mut rng);
        let (a, b) = pair(&mut rng);
        let mut push = |rng: &mut Rng, from_ms: u64, to_ms: u64, act: Act| {
            let when = t + ms(rng.range(from_ms, to_ms));
            steps.push(Step {
                index: 0,
                at: when,
                act,
            });
        };
        // Traffic both ways around the fault: some queued before it, some during.
        for _ in 0..rng.range(1, 4) {
            let (from, to) = if rng.chance(0.5) { (a, b) } else { (b, a) };
            let act = send(&mut rng, from, to, 8);
            push(&mut rng, 0, 600, act);
        }
        // Cut the confirmations (one way) or everything (both ways) for a while, around
        // the idle timeout.
        let cut = rng.below(3);
        let len = rng.pick(&[
            idle_ms / 3,
            idle_ms * 9 / 10,
            idle_ms * 11 / 10,
            idle_ms * 3,
        ]);
        let cut_start = rng.range(0, 300);
        for (when, on) in [(cut_start, true), (cut_start + len, false)] {
            let act = match cut {
                0 => Act::OneWay { from: b, to: a, on },
                1 => Act::Blackout { a, b, on },
                _ => continue,
            };
            push(&mut rng, when, when, act);
        }
        // Sometimes a flood on both reliable channels while the link is cut: hundreds of
        // copies kept unconfirmed, all resent on the next connection (before its hello is
        // known to have arrived).
        if cut < 2 && rng.chance(0.2) {
            for channel in [ORDERED, UNORDERED] {
                let count = rng.range(300, 1_100) as u32;
                let act = Act::Send {
                    from: a,
                    to: b,
                    channel,
                    count,
                };
                push(&mut rng, cut_start + 20, cut_start + 200, act);
            }
        }
        // Then, while messages are unconfirmed, one of:
        match rng.below(5) {
            // the server forgets one of them (the others forget it; it remembers them);
            0 | 1 => {
                let n = if rng.chance(0.5) { a } else { b };
                push(&mut rng, 50, 1_500, Act::ForgetMember(n));
            }
            // one of them is gone for good;
            2 if !vanished => {
                vanished = true;
                push(&mut rng, 50, 1_500, Act::Vanish(b));
            }
            // the server dies, for less or more than the graces, and one of them comes
            // back late;
            3 if !killed => {
                killed = true;
                let down = rng.range(300, 8_000);
                push(&mut rng, 0, 800, Act::KillServer);
                let back = 800 + down;
                push(&mut rng, back, back, Act::StartServer);
                if rng.chance(0.6) {
                    let n = if rng.chance(0.5) { a } else { b };
                    let late = rng.range(1_000, 8_000);
                    push(&mut rng, 0, 500, Act::CutSignalling { n, on: true });
                    push(
                        &mut rng,
                        back + late,
                        back + late,
                        Act::CutSignalling { n, on: false },
                    );
                }
            }
            // or nothing more than the cut.
            _ => {}
        }
    }
    // A stable sort: actions drawn for the same instant keep their drawing order.
    steps.sort_by_key(|s| s.at);
    for (index, step) in steps.iter_mut().enumerate() {
        step.index = index;
    }
    Schedule {
        seed,
        kinds,
        idle,
        graces,
        total: steps.len(),
        steps,
    }
}

// ----- a run -----

/// One `send` the schedule made.
#[derive(Debug, Clone)]
struct Sent {
    from: usize,
    to: usize,
    channel: u8,
    /// The sender's id for the receiver.
    peer: PeerId,
    at: Duration,
    result: Result<(), SendError>,
}

impl Sent {
    fn payload(&self, k: usize) -> Vec<u8> {
        format!("n{}>n{} c{} #{k}", self.from, self.to, self.channel).into_bytes()
    }
}

/// The number of the message in a payload.
fn message_number(bytes: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(bytes).ok()?;
    text.rsplit_once('#')?.1.parse().ok()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// A member panicked.
    Panic,
    /// The room never linked up before the schedule began (nothing was checked).
    NeverLinked,
    /// Neither delivered nor handed back.
    Lost,
    /// Delivered more than once.
    Duplicated,
    /// Handed back more than once.
    HandedBackTwice,
    /// Handed back although the receiver is still there and the sender kept its link.
    HandedBackWithoutCause,
    /// A sender removed its link to a peer with no reason in the schedule.
    LinkRemovedWithoutCause,
    /// A reliable-ordered channel delivered out of send order.
    OutOfOrder,
    /// Delivered to a member it was not sent to, or under another channel.
    Misdelivered,
    /// Delivered or handed back although `send` refused it.
    RefusedButSeen,
    /// Delivered and handed back, though the receiver still remembers the sender (it kept
    /// the link it delivered the message on): the sender gave up on a peer that could have
    /// told it what it had, had the sender kept its copies (and its life for the peer)
    /// until the peer came back or left for good.
    DeliveredAndHandedBack,
    /// Delivered and handed back, where no protocol can do better (the two generals): the
    /// receiver vanished, or itself forgot the sender (removed the link it delivered the
    /// message on), after delivering it and before its confirmation reached the sender.
    /// The `Undelivered` event says the message "may not have been delivered". Allowed by
    /// default; `ACKWIRE_STRICT=1` (the promise read literally: never both) fails it.
    AmbiguousHandBack,
}

impl Kind {
    fn fails(self, strict: bool) -> bool {
        self != Kind::AmbiguousHandBack || strict
    }
}

#[derive(Debug, Clone)]
struct Violation {
    kind: Kind,
    what: String,
}

#[derive(Debug, Clone)]
struct Outcome {
    violations: Vec<Violation>,
    /// Accepted reliable sends.
    accepted: usize,
    /// Sends refused (not promised).
    refused: usize,
    delivered: usize,
    handed_back: usize,
    /// The healed network linked every survivor and confirmed everything in time.
    quiesced: bool,
    /// Virtual time at the end.
    end: Duration,
    /// A digest of everything every member told its application, for replay checks.
    digest: u64,
}

impl Outcome {
    fn failing(&self, strict: bool) -> Vec<&Violation> {
        self.violations
            .iter()
            .filter(|v| v.kind.fails(strict))
            .collect()
    }
}

/// The facts a run leaves for the checker.
struct Record {
    sent: Vec<Sent>,
    /// Members that vanished.
    vanished: BTreeSet<usize>,
    /// Members the server forgot (`forget_member`).
    forgotten: BTreeSet<usize>,
    server_killed: bool,
    /// Per member: the member's ids for its peers, as learned when sending (`PeerId` → node).
    peers: Vec<BTreeMap<PeerId, usize>>,
    /// Per member, everything it told its application.
    events: Vec<Vec<Event>>,
}

/// The sender's id for node `to`, if it has a link to it now. Server ids never repeat in
/// these runs (see `run`), so a link carrying `to`'s current server id is `to`'s; once
/// learned an id stays pinned to its node (a member never reuses a `PeerId`), which also
/// names `to` while the server is away.
fn peer_for(
    w: &World,
    peers: &mut BTreeMap<PeerId, usize>,
    from: usize,
    to: usize,
) -> Option<PeerId> {
    if let Some(link) = w.link(from, to) {
        let pinned = *peers.entry(link.peer).or_insert(to);
        assert_eq!(pinned, to, "n{from}'s peer {} named two members", link.peer);
        return Some(link.peer);
    }
    let links = w.links(from);
    peers
        .iter()
        .filter(|&(_, &n)| n == to)
        .map(|(&p, _)| p)
        .filter(|p| links.iter().any(|l| l.peer == *p))
        .max()
}

fn settled(w: &World, survivors: &[usize]) -> bool {
    w.fully_linked(survivors)
        && survivors
            .iter()
            .all(|&n| w.links(n).iter().all(|l| l.unconfirmed == 0))
}

/// Plays `schedule` and checks the promise.
fn run(schedule: &Schedule) -> Outcome {
    let mut record = Record {
        sent: Vec::new(),
        vanished: BTreeSet::new(),
        forgotten: BTreeSet::new(),
        server_killed: false,
        peers: vec![BTreeMap::new(); schedule.kinds.len()],
        events: Vec::new(),
    };
    let mut end = Duration::ZERO;
    let mut quiesced = false;
    let mut never_linked = false;
    let played = catch_unwind(AssertUnwindSafe(|| {
        let mut w = World::new();
        w.seed_faults(schedule.seed ^ 0xFA17);
        for (n, &kind) in schedule.kinds.iter().enumerate() {
            let (idle, grace) = (schedule.idle, schedule.graces[n]);
            w.add(kind, |config: &mut MemberConfig| {
                config.connection.idle_timeout = idle;
                config.orphan_grace = grace;
            });
        }
        let all: Vec<usize> = (0..schedule.kinds.len()).collect();
        let deadline = ms(10_000);
        while !w.fully_linked(&all) && w.now < deadline {
            w.run_for(ms(10));
        }
        if !w.fully_linked(&all) {
            never_linked = true;
            end = w.now;
            return;
        }
        let t0 = w.now;
        let mut restarts = 0;
        for step in &schedule.steps {
            w.run_until(t0 + step.at);
            play(&mut w, &step.act, &mut record, &mut restarts);
        }
        w.run_for(ms(500));
        // Quiesce: heal the network, bring the server back, and wait for every survivor to
        // link with every other and confirm everything.
        w.heal_network();
        if !w.server_up() {
            restarts += 1;
            w.restart_ids_from = 1000 * restarts;
            w.start_server();
        }
        let survivors: Vec<usize> = all
            .iter()
            .copied()
            .filter(|n| !record.vanished.contains(n))
            .collect();
        let limit = w.now + QUIESCE_LIMIT;
        while !settled(&w, &survivors) && w.now < limit {
            w.run_for(ms(50));
        }
        quiesced = settled(&w, &survivors);
        // Let what is in flight land.
        w.run_for(ms(2_000));
        end = w.now;
        record.events = w.nodes.iter().map(|n| n.events.clone()).collect();
    }));
    let mut violations = Vec::new();
    if let Err(panic) = played {
        let what = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        violations.push(Violation {
            kind: Kind::Panic,
            what: format!("panic: {what}"),
        });
    }
    if never_linked {
        violations.push(Violation {
            kind: Kind::NeverLinked,
            what: "the room never linked up".into(),
        });
    }
    let checked = if violations.is_empty() {
        check(&record, &mut violations)
    } else {
        Counts::default()
    };
    if !quiesced && violations.iter().any(|v| v.kind == Kind::Lost) {
        violations.push(Violation {
            kind: Kind::Lost,
            what: format!(
                "(the healed room did not settle within {QUIESCE_LIMIT:?}: some link never \
                 reconnected or kept unconfirmed messages)"
            ),
        });
    }
    Outcome {
        violations,
        accepted: record.sent.iter().filter(|s| s.result.is_ok()).count(),
        refused: record.sent.iter().filter(|s| s.result.is_err()).count(),
        delivered: checked.delivered,
        handed_back: checked.handed_back,
        quiesced,
        end,
        digest: digest(&record.events, end),
    }
}

/// Carries out one action of the schedule.
fn play(w: &mut World, act: &Act, record: &mut Record, restarts: &mut u64) {
    let live = |n: usize, record: &Record| !record.vanished.contains(&n);
    match *act {
        Act::Send {
            from,
            to,
            channel,
            count,
        } => {
            // A program that is gone sends nothing.
            if !live(from, record) {
                return;
            }
            for _ in 0..count {
                let Some(peer) = peer_for(w, &mut record.peers[from], from, to) else {
                    return;
                };
                let mut sent = Sent {
                    from,
                    to,
                    channel,
                    peer,
                    at: w.now,
                    result: Ok(()),
                };
                let payload = sent.payload(record.sent.len());
                sent.result = w.with(from, |m, _| m.send(peer, channel, &payload));
                record.sent.push(sent);
            }
        }
        Act::Faults {
            loss,
            dup,
            reorder,
            delay_ms,
        } => w.set_faults(Faults {
            loss: f64::from(loss) / 100.0,
            duplicate: f64::from(dup) / 100.0,
            reorder: f64::from(reorder) / 100.0,
            max_delay: ms(delay_ms),
        }),
        Act::Blackout { a, b, on } => w.set_blackout(a, b, on),
        Act::OneWay { from, to, on } => w.set_one_way_blackout(from, to, on),
        Act::KillServer => {
            if w.server_up() {
                record.server_killed = true;
                w.kill_server();
            }
        }
        Act::StartServer => {
            if !w.server_up() {
                // Fresh server ids each time: a server id then names one member for the
                // whole run, which is how the explorer tells who a link goes to (id reuse
                // across restarts has its own tests in member.rs).
                *restarts += 1;
                w.restart_ids_from = 1000 * *restarts;
                w.start_server();
            }
        }
        Act::ForgetMember(n) => {
            if live(n, record) {
                record.forgotten.insert(n);
                w.forget_member(n);
            }
        }
        Act::DropSocket(n) => {
            if live(n, record) {
                w.drop_socket(n);
            }
        }
        Act::CutSignalling { n, on } => {
            if live(n, record) {
                w.cut_signalling(n, on);
            }
        }
        Act::Vanish(n) => {
            // Two members stay, so there is a room left to check.
            let left = (0..w.nodes.len()).filter(|&m| live(m, record)).count();
            if live(n, record) && left > 2 {
                record.vanished.insert(n);
                w.vanish(n);
            }
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    delivered: usize,
    handed_back: usize,
}

/// The promise, message by message.
fn check(record: &Record, violations: &mut Vec<Violation>) -> Counts {
    let mut counts = Counts::default();
    let mut out = |kind: Kind, what: String| violations.push(Violation { kind, what });
    let describe = |k: usize| {
        let s = &record.sent[k];
        format!(
            "message #{k} (n{} -> n{} on channel {}, sent at {:.3}s to peer {})",
            s.from,
            s.to,
            s.channel,
            s.at.as_secs_f64(),
            s.peer
        )
    };
    // Where each message went: deliveries (node, channel) and hand-backs (peer, channel).
    // Deliveries: (node, channel, the receiver's id for the sender).
    let mut delivered: Vec<Vec<(usize, u8, PeerId)>> = vec![Vec::new(); record.sent.len()];
    let mut handed_back: Vec<Vec<(PeerId, u8)>> = vec![Vec::new(); record.sent.len()];
    // Per (sender, receiver, channel): message numbers in the order the receiver got them.
    let mut arrivals: BTreeMap<(usize, usize, u8), Vec<usize>> = BTreeMap::new();
    // Per member: the peers whose links it removed.
    let mut removed: Vec<BTreeMap<PeerId, GoneReason>> = vec![BTreeMap::new(); record.events.len()];
    for (n, events) in record.events.iter().enumerate() {
        for event in events {
            match event {
                Event::Message {
                    channel,
                    bytes,
                    peer,
                } if *channel == ORDERED || *channel == UNORDERED => {
                    let Some(k) = message_number(bytes).filter(|&k| k < record.sent.len()) else {
                        out(
                            Kind::Misdelivered,
                            format!(
                                "n{n} got a message no one sent: {:?}",
                                String::from_utf8_lossy(bytes)
                            ),
                        );
                        continue;
                    };
                    delivered[k].push((n, *channel, *peer));
                    counts.delivered += 1;
                    let s = &record.sent[k];
                    arrivals.entry((s.from, n, *channel)).or_default().push(k);
                }
                Event::Undelivered {
                    peer,
                    channel,
                    bytes,
                } => {
                    let Some(k) = message_number(bytes).filter(|&k| k < record.sent.len()) else {
                        out(
                            Kind::Misdelivered,
                            format!(
                                "n{n} was handed back a message it never sent: {:?}",
                                String::from_utf8_lossy(bytes)
                            ),
                        );
                        continue;
                    };
                    if record.sent[k].from != n {
                        out(
                            Kind::Misdelivered,
                            format!("{} was handed back to n{n}", describe(k)),
                        );
                        continue;
                    }
                    handed_back[k].push((*peer, *channel));
                    counts.handed_back += 1;
                }
                Event::PeerLeft { peer, reason, .. } => {
                    removed[n].insert(*peer, *reason);
                }
                _ => {}
            }
        }
    }
    // Links removed with nothing in the schedule to remove them.
    for (n, gone) in removed.iter().enumerate() {
        for (peer, reason) in gone {
            let Some(&m) = record.peers[n].get(peer) else {
                continue;
            };
            let cause = record.vanished.contains(&m)
                || record.forgotten.contains(&m)
                || record.server_killed;
            if !cause {
                out(
                    Kind::LinkRemovedWithoutCause,
                    format!(
                        "n{n} removed its link to n{m} (peer {peer}, {reason:?}) though n{m} neither vanished nor was forgotten and the server never died"
                    ),
                );
            }
        }
    }
    for (k, s) in record.sent.iter().enumerate() {
        let got = &delivered[k];
        let back = &handed_back[k];
        if let Err(err) = s.result {
            if !got.is_empty() || !back.is_empty() {
                out(
                    Kind::RefusedButSeen,
                    format!(
                        "{} was refused ({err}) yet delivered {} time(s) and handed back {} time(s)",
                        describe(k),
                        got.len(),
                        back.len()
                    ),
                );
            }
            continue;
        }
        if let Some(&(n, c, _)) = got.iter().find(|&&(n, c, _)| n != s.to || c != s.channel) {
            out(
                Kind::Misdelivered,
                format!("{} was delivered to n{n} on channel {c}", describe(k)),
            );
        }
        if let Some(&(p, c)) = back.iter().find(|&&(p, c)| p != s.peer || c != s.channel) {
            out(
                Kind::Misdelivered,
                format!(
                    "{} was handed back as for peer {p} on channel {c}",
                    describe(k)
                ),
            );
        }
        let sender_gone = record.vanished.contains(&s.from);
        let receiver_gone = record.vanished.contains(&s.to);
        let link_removed = removed[s.from].contains_key(&s.peer);
        let (d, u) = (got.len(), back.len());
        if d > 1 {
            out(
                Kind::Duplicated,
                format!("{} was delivered {d} times", describe(k)),
            );
        }
        if u > 1 {
            out(
                Kind::HandedBackTwice,
                format!("{} was handed back {u} times", describe(k)),
            );
        }
        // The receiver forgot the sender (removed its link to it): copies that may have
        // reached its old life come back rather than arrive twice.
        let receiver_dropped_sender = removed[s.to]
            .keys()
            .any(|p| record.peers[s.to].get(p) == Some(&s.from));
        if u > 0 && !receiver_gone && !link_removed && !receiver_dropped_sender {
            out(
                Kind::HandedBackWithoutCause,
                format!(
                    "{} was handed back though n{} is still there and n{} kept its link",
                    describe(k),
                    s.to,
                    s.from
                ),
            );
        }
        if d > 0 && u > 0 {
            // Whether the receiver forgot the sender after delivering: it removed the link
            // it delivered the message on.
            let receiver_forgot = got
                .iter()
                .any(|&(n, _, p)| removed.get(n).is_some_and(|r| r.contains_key(&p)));
            let (kind, why) = if receiver_gone {
                (Kind::AmbiguousHandBack, format!("n{} vanished", s.to))
            } else if receiver_forgot {
                (
                    Kind::AmbiguousHandBack,
                    format!("n{} forgot n{} after delivering it", s.to, s.from),
                )
            } else if let Some(reason) = removed[s.from].get(&s.peer) {
                // The sender gave the peer up (the server said it left or lost it, or it was
                // not back within the orphan grace): for the sender it left the room, and
                // whether it had the message before is what no one can tell it any more.
                (
                    Kind::AmbiguousHandBack,
                    format!(
                        "n{} gave n{} up ({reason:?}) after it was delivered",
                        s.from, s.to
                    ),
                )
            } else {
                (
                    Kind::DeliveredAndHandedBack,
                    format!(
                        "n{} removed its link to n{}, which still remembers n{}",
                        s.from, s.to, s.from
                    ),
                )
            };
            out(
                kind,
                format!("{} was delivered and handed back ({why})", describe(k)),
            );
        }
        // A program that vanished can promise nothing more about what it sent.
        if d == 0 && u == 0 && !sender_gone {
            let why = if link_removed {
                "n{from} removed its link to n{to} yet did not hand it back"
            } else {
                "the link is still there"
            }
            .replace("{from}", &s.from.to_string())
            .replace("{to}", &s.to.to_string());
            out(
                Kind::Lost,
                format!(
                    "{} was neither delivered nor handed back ({why})",
                    describe(k)
                ),
            );
        }
    }
    for ((from, to, channel), ks) in &arrivals {
        if *channel != ORDERED {
            continue;
        }
        // First deliveries only: a duplicate is its own violation.
        let mut seen = BTreeSet::new();
        let firsts: Vec<usize> = ks.iter().copied().filter(|k| seen.insert(*k)).collect();
        if let Some(pair) = firsts.windows(2).find(|p| p[0] > p[1]) {
            out(
                Kind::OutOfOrder,
                format!(
                    "n{to} got n{from}'s ordered messages out of order: #{} before #{} (arrival order {:?})",
                    pair[0], pair[1], firsts
                ),
            );
        }
    }
    counts
}

/// FNV-1a over what every member told its application, and the end time.
fn digest(events: &[Vec<Event>], end: Duration) -> u64 {
    let mut text = String::new();
    for (n, events) in events.iter().enumerate() {
        for event in events {
            let _ = writeln!(text, "{n} {event:?}");
        }
    }
    let _ = write!(text, "{end:?}");
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

// ----- shrinking and reporting -----

/// Drops steps one at a time (last first) while the run still fails the same way.
fn shrink(schedule: &Schedule, kind: Kind, strict: bool, budget: usize) -> (Schedule, usize) {
    let fails = |s: &Schedule| run(s).failing(strict).iter().any(|v| v.kind == kind);
    let mut best = schedule.clone();
    let mut runs = 0;
    let mut i = best.steps.len();
    while i > 0 && runs < budget {
        i -= 1;
        let mut candidate = best.clone();
        candidate.steps.remove(i);
        runs += 1;
        if fails(&candidate) {
            best = candidate;
        }
    }
    (best, runs)
}

fn report(schedule: &Schedule, outcome: &Outcome, strict: bool) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "\n=== seed {} FAILED: {} accepted, {} refused, {} delivered, {} handed back; settled: {}; end {:.3}s",
        schedule.seed,
        outcome.accepted,
        outcome.refused,
        outcome.delivered,
        outcome.handed_back,
        outcome.quiesced,
        outcome.end.as_secs_f64()
    );
    // A few of each kind: a flood broken once breaks hundreds of times alike.
    let mut shown: BTreeMap<Kind, usize> = BTreeMap::new();
    for v in outcome.failing(strict) {
        let count = shown.entry(v.kind).or_default();
        *count += 1;
        if *count <= 6 {
            let _ = writeln!(text, "  [{:?}] {}", v.kind, v.what);
        }
    }
    for (kind, count) in shown.into_iter().filter(|&(_, c)| c > 6) {
        let _ = writeln!(text, "  [{kind:?}] ... {} more like these", count - 6);
    }
    let _ = write!(text, "schedule:\n{schedule}");
    let _ = writeln!(text, "replay: {}", schedule.replay());
    text
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value}: not a number")),
    )
}

fn verbose() -> bool {
    std::env::var("ACKWIRE_VERBOSE").is_ok_and(|v| v == "1")
}

fn strict() -> bool {
    std::env::var("ACKWIRE_STRICT").is_ok_and(|v| v == "1")
}

// ----- the tests -----

/// The promise under random schedules: every accepted reliable message is delivered once or
/// handed back once (only when its peer left for good or one side forgot the other), never
/// neither, in order on an ordered channel, and nothing panics.
#[test]
fn every_accepted_reliable_message_is_delivered_once_or_handed_back_once_under_random_schedules() {
    let strict = strict();
    let (seeds, single): (Vec<u64>, bool) = match env_u64("ACKWIRE_SEED") {
        Some(seed) => (vec![seed], true),
        None => (
            {
                let from = env_u64("ACKWIRE_SEED_FROM").unwrap_or(0);
                (from..from + env_u64("ACKWIRE_SEEDS").unwrap_or(DEFAULT_SEEDS)).collect()
            },
            false,
        ),
    };
    // `ACKWIRE_KEEP=3,7,12` (with `ACKWIRE_SEED`): only those steps, as a shrunk schedule
    // prints them.
    let keep: Option<BTreeSet<usize>> = std::env::var("ACKWIRE_KEEP").ok().map(|list| {
        list.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| s.trim().parse().expect("ACKWIRE_KEEP: step numbers"))
            .collect()
    });
    // Shrinking costs a run per step: by default only the first failing seed of each kind of
    // violation is shrunk (`ACKWIRE_SHRINK=all`: every one, `0`: none).
    let shrink_policy = std::env::var("ACKWIRE_SHRINK").unwrap_or_default();
    let mut shrunk_kinds = BTreeSet::new();
    let mut failures = Vec::new();
    let (mut accepted, mut ambiguous) = (0, 0);
    for &seed in &seeds {
        let mut schedule = schedule(seed);
        if let (true, Some(keep)) = (single, &keep) {
            schedule = schedule.keep(keep);
        }
        let outcome = run(&schedule);
        accepted += outcome.accepted;
        ambiguous += outcome
            .violations
            .iter()
            .filter(|v| v.kind == Kind::AmbiguousHandBack)
            .count();
        if single {
            println!("{schedule}");
            println!(
                "outcome: {} accepted, {} refused, {} delivered, {} handed back, settled {}, end {:.3}s, digest {:016x}",
                outcome.accepted,
                outcome.refused,
                outcome.delivered,
                outcome.handed_back,
                outcome.quiesced,
                outcome.end.as_secs_f64(),
                outcome.digest
            );
            for v in &outcome.violations {
                println!("  [{:?}] {}", v.kind, v.what);
            }
        }
        if verbose() {
            let acts = |f: fn(&Act) -> bool| schedule.steps.iter().filter(|s| f(&s.act)).count();
            println!(
                "seed {seed}: {} members, {} accepted, {} refused, {} delivered, {} handed back, {} ambiguous, forgets {}, vanish {}, kills {}, settled {}, end {:.1}s",
                schedule.kinds.len(),
                outcome.accepted,
                outcome.refused,
                outcome.delivered,
                outcome.handed_back,
                outcome
                    .violations
                    .iter()
                    .filter(|v| v.kind == Kind::AmbiguousHandBack)
                    .count(),
                acts(|a| matches!(a, Act::ForgetMember(_))),
                acts(|a| matches!(a, Act::Vanish(_))),
                acts(|a| matches!(a, Act::KillServer)),
                outcome.quiesced,
                outcome.end.as_secs_f64()
            );
        }
        let failing = outcome.failing(strict);
        if failing.is_empty() {
            continue;
        }
        let kinds: BTreeSet<Kind> = failing.iter().map(|v| v.kind).collect();
        eprintln!("{}", report(&schedule, &outcome, strict));
        let kind = failing[0].kind;
        let wanted = match shrink_policy.as_str() {
            "0" => false,
            "all" => true,
            _ => shrunk_kinds.insert(kind),
        };
        if !wanted {
            failures.push((seed, kinds));
            continue;
        }
        let (shrunk, runs) = shrink(&schedule, kind, strict, 80);
        if shrunk.steps.len() < schedule.steps.len() {
            let outcome = run(&shrunk);
            eprintln!(
                "shrunk ({runs} runs, {} of {} steps, still {kind:?}):{}",
                shrunk.steps.len(),
                schedule.steps.len(),
                report(&shrunk, &outcome, strict)
            );
        }
        failures.push((seed, kinds));
    }
    println!(
        "{} seeds, {accepted} accepted messages, {ambiguous} ambiguous hand-backs of delivered messages ({})",
        seeds.len(),
        if strict {
            "failures under ACKWIRE_STRICT"
        } else {
            "allowed; ACKWIRE_STRICT=1 fails them"
        }
    );
    assert!(
        failures.is_empty(),
        "{} of {} seeds broke the promise: {}",
        failures.len(),
        seeds.len(),
        failures
            .iter()
            .map(|(seed, kinds)| format!("{seed} {kinds:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// Replays are exact: the same seed gives the same schedule and the same outcome, down to
/// every event every member heard, so a failing seed can be replayed and shrunk.
#[test]
fn the_same_seed_replays_the_same_schedule_and_outcome() {
    for seed in [3, 11] {
        let (a, b) = (schedule(seed), schedule(seed));
        assert_eq!(a, b, "seed {seed}");
        let (x, y) = (run(&a), run(&b));
        assert_eq!(x.digest, y.digest, "seed {seed}");
        assert_eq!(x.end, y.end, "seed {seed}");
        assert_ne!(schedule(seed + 1), a, "another seed, another schedule");
    }
}

/// The fault model does what the explorer relies on: with faults on, datagrams are lost,
/// duplicated and held back; off, the world draws nothing and delivers each one once.
#[test]
fn seeded_faults_lose_duplicate_and_reorder_datagrams_and_stop_when_healed() {
    let mut w = World::new();
    w.seed_faults(42);
    let a = w.add(PeerKind::Native, |_| {});
    let b = w.add(PeerKind::Browser, |_| {});
    w.run_until_true(Duration::from_secs(5), "linked", |w| {
        w.fully_linked(&[a, b])
    });
    w.set_faults(Faults {
        loss: 0.2,
        duplicate: 0.2,
        reorder: 0.3,
        max_delay: ms(200),
    });
    let to_b = w.peer(a, b);
    for i in 0u32..100 {
        w.with(a, |m, _| m.send(to_b, ORDERED, &i.to_le_bytes()).unwrap());
        w.run_for(ms(20));
    }
    let counts = w.fault_counts;
    assert!(
        counts.lost > 0 && counts.duplicated > 0 && counts.delayed > 0,
        "{counts:?}"
    );
    w.heal_network();
    w.run_until_true(Duration::from_secs(20), "confirmed", |w| {
        w.connected(a, b) && w.link(a, b).is_some_and(|l| l.unconfirmed == 0)
    });
    assert_eq!(w.fault_counts.carried, counts.carried, "healed: no draws");
    let got: Vec<u32> = w.nodes[b]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Message { channel, bytes, .. } if *channel == ORDERED => {
                Some(u32::from_le_bytes(bytes[..4].try_into().unwrap()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(got, (0..100).collect::<Vec<_>>());
    assert!(w.connected(b, a) && w.links(a)[0].state == LinkState::Connected);
}

/// The checker itself: each way a promise can break is named (a checker that sees nothing
/// would pass every seed).
#[test]
fn the_checker_names_every_way_the_promise_can_break() {
    let sent = |from, to, channel, peer| Sent {
        from,
        to,
        channel,
        peer: PeerId(peer),
        at: Duration::ZERO,
        result: Ok(()),
    };
    let message = |s: &Sent, k: usize| Event::Message {
        peer: PeerId(9),
        channel: s.channel,
        bytes: s.payload(k),
    };
    let undelivered = |s: &Sent, k: usize| Event::Undelivered {
        peer: s.peer,
        channel: s.channel,
        bytes: s.payload(k),
    };
    // n0 sends #0..#5 to n1 (its peer 1); n1 never vanished and n0 kept its link.
    let mut s: Vec<Sent> = (0..6).map(|_| sent(0, 1, ORDERED, 1)).collect();
    s[5].result = Err(SendError::NotConnected(PeerId(1)));
    let events = vec![
        // #2 handed back without cause, #5 refused but handed back.
        vec![undelivered(&s[2], 2), undelivered(&s[5], 5)],
        // #1 twice, #3 before #0 (out of order), #4 lost.
        vec![
            message(&s[1], 1),
            message(&s[1], 1),
            message(&s[3], 3),
            message(&s[0], 0),
        ],
    ];
    let record = Record {
        sent: s,
        vanished: BTreeSet::new(),
        forgotten: BTreeSet::new(),
        server_killed: false,
        peers: vec![BTreeMap::from([(PeerId(1), 1)]), BTreeMap::new()],
        events,
    };
    let mut violations = Vec::new();
    check(&record, &mut violations);
    let kinds: BTreeSet<Kind> = violations.iter().map(|v| v.kind).collect();
    assert_eq!(
        kinds,
        BTreeSet::from([
            Kind::Duplicated,
            Kind::HandedBackWithoutCause,
            Kind::OutOfOrder,
            Kind::Lost,
            Kind::RefusedButSeen,
        ]),
        "{violations:#?}"
    );
    let lost: Vec<&Violation> = violations.iter().filter(|v| v.kind == Kind::Lost).collect();
    assert_eq!(lost.len(), 1);
    assert!(lost[0].what.contains("#4"), "{}", lost[0].what);
}
