//! A rollback game on ackwire and [ggrs](https://docs.rs/ggrs): up to four players each steer
//! a dot on a wrapping field; every player simulates every frame from everyone's inputs, and
//! ggrs rolls back and replays when a remote input it predicted turns out different. The
//! room is a mesh; ggrs's messages ride channel [`GGRS`] ([`ackwire::rollback`]).
//!
//! The simulation is integer arithmetic only, so that every machine computes the same state
//! bit for bit: [`Game::checksum`] is what ggrs's desync detection compares. A [`Player`] is
//! one player's session, the same code natively (`src/native.rs`, `rollback-player`) and in a
//! browser (`src/page.rs`, `web/index.html`).
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::ops::Deref;

use ackwire::rollback::{GgrsSocket, players};
use ackwire::{App, ChannelKind, LinkState, PeerId, Room};
use ggrs::{
    DesyncDetection, GgrsError, GgrsEvent, InputStatus, P2PSession, PredictRepeatLast,
    SessionBuilder, SessionState,
};

#[cfg(target_arch = "wasm32")]
mod page;

/// The browser player (`web/index.html`).
#[cfg(target_arch = "wasm32")]
pub use page::start;

/// The unreliable channel ggrs's messages ride.
pub const GGRS: u8 = 0;

/// What every member of a rollback room declares.
pub fn app() -> App {
    App::new("rollback", 1, [ChannelKind::Unreliable])
}

/// The field's size, in units; positions wrap.
pub const FIELD: i32 = 1000;

/// A player's input for one frame: bit 0 up, 1 down, 2 left, 3 right.
pub type Input = u8;

/// ggrs's parameters for this game.
#[derive(Debug)]
pub struct Config;

impl ggrs::Config for Config {
    type Input = Input;
    type InputPredictor = PredictRepeatLast;
    type State = Game;
    type Address = PeerId;
}

/// Every dot, and the frame they are at.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Game {
    pub frame: u32,
    pub dots: Vec<[i32; 2]>,
}

impl Game {
    /// `players` dots spread along the diagonal.
    pub fn new(players: usize) -> Game {
        Game {
            frame: 0,
            dots: (0..players as i32)
                .map(|i| [i * FIELD / 4, i * FIELD / 4])
                .collect(),
        }
    }

    /// One frame: each dot moves 3 units a frame the way its input says.
    pub fn step(&mut self, inputs: &[(Input, InputStatus)]) {
        for (dot, (input, _)) in self.dots.iter_mut().zip(inputs) {
            let dx = i32::from(input & 8 != 0) - i32::from(input & 4 != 0);
            let dy = i32::from(input & 2 != 0) - i32::from(input & 1 != 0);
            dot[0] = (dot[0] + 3 * dx).rem_euclid(FIELD);
            dot[1] = (dot[1] + 3 * dy).rem_euclid(FIELD);
        }
        self.frame += 1;
    }

    /// FNV-1a over the frame and every coordinate: what desync detection compares.
    pub fn checksum(&self) -> u128 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let words = std::iter::once(self.frame as i32).chain(self.dots.iter().flatten().copied());
        for byte in words.flat_map(i32::to_le_bytes) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        u128::from(hash)
    }
}

/// Carries out what ggrs asks after `advance_frame`: save, load, step. Calls `saved` with
/// each state saved (its frame and checksum; a frame saved again after a rollback replaces
/// what it was).
pub fn handle(
    game: &mut Game,
    requests: Vec<ggrs::GgrsRequest<Config>>,
    mut saved: impl FnMut(i32, u128),
) {
    for request in requests {
        match request {
            ggrs::GgrsRequest::SaveGameState { cell, frame } => {
                debug_assert_eq!(frame, game.frame as i32);
                cell.save(frame, Some(game.clone()), Some(game.checksum()));
                saved(frame, game.checksum());
            }
            ggrs::GgrsRequest::LoadGameState { cell, .. } => {
                if let Some(saved) = cell.load() {
                    *game = saved;
                }
            }
            ggrs::GgrsRequest::AdvanceFrame { inputs } => game.step(&inputs),
        }
    }
}

/// The input a scripted player gives at `frame`: a pattern of its own (by its handle `me`),
/// changing every 7 frames, so remote predictions miss and rollbacks happen.
pub fn scripted_input(frame: u32, me: usize) -> Input {
    [1u8, 8, 2, 4][(frame as usize / 7 + me) % 4]
}

/// The path every player of the e2e and the demos emulates on each of its links: 20 ± 10 ms
/// each way and `loss_percent` of the datagrams lost (the core's emulator, `seed` its own).
pub fn emulation(loss_percent: f64, seed: u64) -> ackwire::Emulation {
    ackwire::Emulation {
        config: ackwire::EmulatorConfig::default()
            .with_latency(std::time::Duration::from_millis(20))
            .with_jitter(std::time::Duration::from_millis(10))
            .with_loss_percent(loss_percent),
        seed,
        impair_after: std::time::Duration::ZERO,
    }
}

/// Whether `room` is linked to `others` peers, every link connected: a mesh ready to start,
/// in which every member computes the same player order.
pub fn linked(room: &Room, others: usize) -> bool {
    let links = room.links();
    links.len() == others && links.iter().all(|l| l.state == LinkState::Connected)
}

/// One player's ggrs session on a room: its frames, and what it saw of them.
pub struct Player<R: Deref<Target = Room>> {
    session: P2PSession<Config>,
    /// This player's handle.
    pub me: usize,
    /// The game as simulated so far.
    pub game: Game,
    /// Frames at which ggrs's desync detection found a peer's checksum different.
    pub desyncs: Vec<i32>,
    /// States loaded to replay from (predictions that missed).
    pub rollbacks: usize,
    /// The checksum of each frame's state as last saved: after a rollback, the replayed one.
    pub checksums: BTreeMap<i32, u128>,
    /// The frame every input was confirmed to as this player last advanced: its saved states
    /// up to it are final.
    pub settled: i32,
    _room: std::marker::PhantomData<R>,
}

impl<R: Deref<Target = Room>> std::fmt::Debug for Player<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Player")
            .field("me", &self.me)
            .field("frame", &self.game.frame)
            .field("settled", &self.settled)
            .field("rollbacks", &self.rollbacks)
            .field("desyncs", &self.desyncs)
            .finish_non_exhaustive()
    }
}

impl<R: Deref<Target = Room> + 'static> Player<R> {
    /// A session for every member of `room` (joined, and linked to every other member: see
    /// [`linked`]), desync detection every 10 frames and 2 frames of input delay. `None`
    /// before the room is joined.
    pub fn start(room: R) -> Option<Player<R>> {
        let (me, order) = players(&room)?;
        let mut builder = SessionBuilder::<Config>::new()
            .with_num_players(order.len())
            .ok()?
            .with_desync_detection_mode(DesyncDetection::On { interval: 10 })
            .with_input_delay(2);
        let count = order.len();
        for (handle, player) in order.into_iter().enumerate() {
            builder = builder.add_player(player, handle).ok()?;
        }
        let socket = GgrsSocket::new(room, GGRS).ok()?;
        Some(Player {
            session: builder.start_p2p_session(socket).ok()?,
            me,
            game: Game::new(count),
            desyncs: Vec::new(),
            rollbacks: 0,
            checksums: BTreeMap::new(),
            settled: -1,
            _room: std::marker::PhantomData,
        })
    }

    /// Hears the peers (their inputs, and ggrs's own messages): every frame, and after the
    /// last one too, so that peers still behind get what they miss.
    pub fn poll(&mut self) {
        self.session.poll_remote_clients();
        for event in self.session.events() {
            if let GgrsEvent::DesyncDetected { frame, .. } = event {
                self.desyncs.push(frame);
            }
        }
    }

    /// One frame of the game loop: hears the peers, then, once every peer is synchronized,
    /// adds `input` and advances (rolling back and replaying as ggrs asks). `Ok(false)` while
    /// waiting (synchronizing, or too far ahead of a peer's confirmed inputs).
    pub fn frame(&mut self, input: Input) -> Result<bool, GgrsError> {
        self.poll();
        if self.session.current_state() != SessionState::Running {
            return Ok(false);
        }
        self.session.add_local_input(self.me, input)?;
        let confirmed = self.session.confirmed_frame();
        match self.session.advance_frame() {
            Ok(requests) => {
                self.rollbacks += requests
                    .iter()
                    .filter(|r| matches!(r, ggrs::GgrsRequest::LoadGameState { .. }))
                    .count();
                let checksums = &mut self.checksums;
                handle(&mut self.game, requests, |frame, sum| {
                    checksums.insert(frame, sum);
                });
                self.settled = confirmed;
                Ok(true)
            }
            Err(GgrsError::PredictionThreshold) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_move_by_their_inputs_and_wrap_and_the_checksum_sees_every_change() {
        let mut game = Game::new(2);
        let before = game.checksum();
        game.step(&[(8, InputStatus::Confirmed), (1, InputStatus::Predicted)]);
        assert_eq!(game.dots, [[3, 0], [250, 247]]);
        assert_ne!(game.checksum(), before);
        let mut wrapped = Game::new(1);
        wrapped.step(&[(4 | 1, InputStatus::Confirmed)]);
        assert_eq!(wrapped.dots, [[FIELD - 3, FIELD - 3]]);
    }
}
