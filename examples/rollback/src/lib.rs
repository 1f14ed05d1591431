//! A rollback game on ackwire and [ggrs](https://docs.rs/ggrs): up to four players each steer
//! a dot on a wrapping field; every player simulates every frame from everyone's inputs, and
//! ggrs rolls back and replays when a remote input it predicted turns out different. The
//! room is a mesh; ggrs's messages ride channel [`GGRS`] ([`ackwire::rollback`]).
//!
//! The simulation is integer arithmetic only, so that every machine computes the same state
//! bit for bit: [`Game::checksum`] is what ggrs's desync detection compares.
#![forbid(unsafe_code)]

use ackwire::{App, ChannelKind, PeerId};
use ggrs::{InputStatus, PredictRepeatLast};

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
