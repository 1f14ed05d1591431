//! What the host and its players say to each other: the application, its channels, the field
//! and every message's bytes. Shared by the host (`host.rs`) and the Rust client (`client.rs`);
//! `web/pong.js` writes and reads the same bytes.
//!
//! Every number is little-endian; positions are in field units (a 640 × 480 field, y down).
//!
//! | channel | kind | direction | message |
//! |---|---|---|---|
//! | 0 `INPUT` | unreliable-sequenced, `send_latest` every frame | player → host | 8 bytes: `u32` the tick it is for (`Room::input_tick`; 0 until the host's clock is synced: at once), `f32` paddle target: the y its centre should move to |
//! | 1 `STATE` | unreliable-sequenced, `broadcast_latest` every tick | host → all | 28 bytes: `u32` tick, `f32` ball x, y, velocity x, y (units/s), left paddle y, right paddle y |
//! | 2 `EVENTS` | reliable-ordered | host → one or all | 4 bytes: `u8` kind, then three `u8`s (below) |
//!
//! Events: `1` side (`side`, points to win, 0) to one peer when its link connects or it takes
//! a free side; `2` score (`scorer` or 255 when a round starts or to a peer that comes back,
//! left, right); `3` over (`winner`, left, right). A side is `0` left, `1` right,
//! `2` spectator.

use ackwire::App;
use serde::Serialize;

/// The host's tick: it simulates and sends its state 30 times a second, tick `n` ending at
/// `(n + 1) × TICK` on its clock, the room's (`ackwire::sync::FixedStep`).
pub const TICK: std::time::Duration = std::time::Duration::from_micros(33_333);

ackwire::channels! {
    /// The layout every member declares.
    pub CHANNELS;
    /// Player → host: the paddle's target, for a tick.
    pub INPUT: Sequenced,
    /// Host → all: the snapshots.
    pub STATE: Sequenced,
    /// Host → players: sides, goals, the winner.
    pub EVENTS: ReliableOrdered,
}

/// The field, the paddles' centres and sizes, the ball's half size.
pub const WIDTH: f32 = 640.0;
pub const HEIGHT: f32 = 480.0;
pub const PADDLE_X: [f32; 2] = [20.0, 620.0];
pub const PADDLE_W: f32 = 10.0;
pub const PADDLE_H: f32 = 80.0;
pub const BALL_R: f32 = 5.0;

/// What every member of a pong room declares (bump the version when a layout changes).
pub fn app() -> App {
    App::new("pong", 2, CHANNELS)
}

/// A player's paddle target, for the host to apply at `tick`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Input {
    pub tick: u32,
    pub target: f32,
}

impl Input {
    pub fn encode(&self) -> [u8; 8] {
        let mut out = [0; 8];
        out[..4].copy_from_slice(&self.tick.to_le_bytes());
        out[4..].copy_from_slice(&self.target.to_le_bytes());
        out
    }

    /// `None` for a wrong length or a target that is not a number.
    pub fn decode(bytes: &[u8]) -> Option<Input> {
        let bytes: &[u8; 8] = bytes.try_into().ok()?;
        let [t0, t1, t2, t3, y0, y1, y2, y3] = *bytes;
        let target = f32::from_le_bytes([y0, y1, y2, y3]);
        target.is_finite().then_some(Input {
            tick: u32::from_le_bytes([t0, t1, t2, t3]),
            target,
        })
    }
}

/// Which paddle a peer plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Left = 0,
    Right = 1,
    Spectator = 2,
}

impl Side {
    pub fn from_byte(b: u8) -> Option<Side> {
        [Side::Left, Side::Right, Side::Spectator]
            .get(usize::from(b))
            .copied()
    }

    pub fn name(self) -> &'static str {
        ["left", "right", "spectator"][self as usize]
    }

    /// The other paddle.
    pub fn other(self) -> Side {
        [Side::Right, Side::Left, Side::Spectator][self as usize]
    }
}

/// The host's view of the field at one tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    pub tick: u32,
    pub ball: [f32; 2],
    pub velocity: [f32; 2],
    pub paddles: [f32; 2],
}

/// The field at rest: the ball in the middle, still, and the paddles halfway down.
impl Default for Snapshot {
    fn default() -> Snapshot {
        Snapshot {
            tick: 0,
            ball: [WIDTH / 2.0, HEIGHT / 2.0],
            velocity: [0.0; 2],
            paddles: [HEIGHT / 2.0; 2],
        }
    }
}

impl Snapshot {
    pub fn encode(&self) -> [u8; 28] {
        let mut out = [0; 28];
        out[..4].copy_from_slice(&self.tick.to_le_bytes());
        let floats = [self.ball, self.velocity, self.paddles].concat();
        for (i, f) in floats.iter().enumerate() {
            out[4 + 4 * i..8 + 4 * i].copy_from_slice(&f.to_le_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Snapshot> {
        let bytes: &[u8; 28] = bytes.try_into().ok()?;
        let f = |i: usize| {
            f32::from_le_bytes(bytes[4 + 4 * i..8 + 4 * i].try_into().unwrap_or_default())
        };
        Some(Snapshot {
            tick: u32::from_le_bytes(bytes[..4].try_into().ok()?),
            ball: [f(0), f(1)],
            velocity: [f(2), f(3)],
            paddles: [f(4), f(5)],
        })
    }

    /// Where the ball's centre will meet `side`'s paddle, walls included, or the middle
    /// when it is moving away: what the autoplayers aim at (or away from).
    pub fn arrival(&self, side: Side) -> f32 {
        let toward = match side {
            Side::Left => self.velocity[0] < 0.0,
            Side::Right => self.velocity[0] > 0.0,
            Side::Spectator => false,
        };
        if !toward {
            return HEIGHT / 2.0;
        }
        let face = match side {
            Side::Left => PADDLE_X[0] + PADDLE_W / 2.0 + BALL_R,
            _ => PADDLE_X[1] - PADDLE_W / 2.0 - BALL_R,
        };
        let y = self.ball[1] + self.velocity[1] * (face - self.ball[0]) / self.velocity[0];
        // Bounces off the walls fold the straight path back into the field.
        let span = HEIGHT - 2.0 * BALL_R;
        let m = (y - BALL_R).rem_euclid(2.0 * span);
        BALL_R + if m <= span { m } else { 2.0 * span - m }
    }
}

/// A reliable event from the host; as JSON (the host's output lines), tagged by its `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum GameEvent {
    /// The peer plays `side`; a round is won at `points`.
    Side { side: Side, points: u8 },
    /// A round starts at this score (left, right), or a peer that comes is told the score.
    Round { score: [u8; 2] },
    /// `scorer` scored: the score after it.
    Goal { scorer: Side, score: [u8; 2] },
    /// The round is won by `winner`, at this score.
    Over { winner: Side, score: [u8; 2] },
}

impl GameEvent {
    pub fn encode(&self) -> [u8; 4] {
        match *self {
            GameEvent::Side { side, points } => [1, side as u8, points, 0],
            GameEvent::Round { score: [l, r] } => [2, 255, l, r],
            GameEvent::Goal {
                scorer,
                score: [l, r],
            } => [2, scorer as u8, l, r],
            GameEvent::Over {
                winner,
                score: [l, r],
            } => [3, winner as u8, l, r],
        }
    }

    pub fn decode(bytes: &[u8]) -> Option<GameEvent> {
        let &[kind, a, b, c] = bytes else {
            return None;
        };
        let score = [b, c];
        Some(match (kind, Side::from_byte(a)) {
            (1, Some(side)) => GameEvent::Side { side, points: b },
            (2, None) if a == 255 => GameEvent::Round { score },
            (2, Some(scorer)) => GameEvent::Goal { scorer, score },
            (3, Some(winner)) => GameEvent::Over { winner, score },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_decode_to_what_was_encoded() {
        let s = Snapshot {
            tick: 7,
            ball: [1.5, 2.0],
            velocity: [-300.0, 40.0],
            paddles: [40.0, 440.0],
        };
        assert_eq!(Snapshot::decode(&s.encode()), Some(s));
        assert_eq!(Snapshot::decode(&[0; 27]), None);
        let input = Input {
            tick: 90,
            target: 212.5,
        };
        assert_eq!(Input::decode(&input.encode()), Some(input));
        let nan = Input {
            target: f32::NAN,
            ..input
        };
        assert_eq!(Input::decode(&nan.encode()), None);
        assert_eq!(Input::decode(&input.encode()[..7]), None);
        for e in [
            GameEvent::Side {
                side: Side::Right,
                points: 2,
            },
            GameEvent::Round { score: [0, 0] },
            GameEvent::Goal {
                scorer: Side::Left,
                score: [1, 0],
            },
            GameEvent::Over {
                winner: Side::Left,
                score: [2, 1],
            },
        ] {
            assert_eq!(GameEvent::decode(&e.encode()), Some(e));
        }
        assert_eq!(GameEvent::decode(&[2, 7, 0, 0]), None, "no such side");
        let over = GameEvent::Over {
            winner: Side::Right,
            score: [1, 3],
        };
        assert_eq!(
            serde_json::to_value(over).unwrap(),
            serde_json::json!({"type": "over", "winner": "right", "score": [1, 3]}),
            "the host's output line"
        );
    }

    #[test]
    fn arrival_folds_the_path_at_the_walls() {
        let face = PADDLE_X[1] - PADDLE_W / 2.0 - BALL_R;
        let straight = Snapshot {
            ball: [face - 100.0, 200.0],
            velocity: [100.0, 50.0],
            ..Default::default()
        };
        assert_eq!(straight.arrival(Side::Right), 250.0);
        let bounced = Snapshot {
            ball: [face - 100.0, 400.0],
            velocity: [100.0, 200.0],
            ..Default::default()
        };
        // 600 would be 125 past the bottom wall's 475: back up to 350.
        assert_eq!(bounced.arrival(Side::Right), 350.0);
        assert_eq!(bounced.arrival(Side::Left), HEIGHT / 2.0, "moving away");
    }
}
