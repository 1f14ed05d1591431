// Pong on ackwire: a player in plain JS, on the JS API alone (`/ackwire.js`, served by the
// signal server). The host (`pong-host`, native) owns the ball and the score; this page sends
// its paddle's target every frame and draws what the host sends back.
//
// The messages (little-endian; ../src/protocol.rs is the reference, the host and the Rust
// client use it):
//   channel 0, unreliable-sequenced, player → host: u32 tick to apply it at (room.inputTick,
//              0 for at once), f32 paddle target (its centre's y)
//   channel 1, unreliable-sequenced, host → all: u32 tick, f32 ball x, y, velocity x, y,
//              left paddle y, right paddle y (28 bytes)
//   channel 2, reliable-ordered, host → players: u8 kind + 3 × u8:
//              1 side (side, points to win, 0), 2 score (scorer or 255, left, right),
//              3 over (winner, left, right); a side is 0 left, 1 right, 2 spectator
import { join, Snapshots } from '/ackwire.js';

const W = 640, H = 480, PADDLE_X = [20, 620], PADDLE_W = 10, PADDLE_H = 80, BALL_R = 5;
const INPUT = 0, STATE = 1, EVENTS = 2;
// The host's tick, in ms: its states are stamped with their tick (src/protocol.rs, TICK).
const TICK_MS = 33.333;
const SIDES = ['left', 'right', 'spectator'];
/** Snapshots kept in `pong.history` (ten seconds' worth). */
const HISTORY = 300;
/** Units a held key moves the paddle's target per frame. */
const KEY_STEP = 9;

const params = new URLSearchParams(location.search);
/** `?auto=track` plays by itself, `?auto=miss` misses on purpose (tests, demos). */
const auto = params.get('auto');
const canvas = document.getElementById('field');
const ctx = canvas.getContext('2d');
const statusLine = document.getElementById('status');

// When each step of joining first happened, in ms after navigation (the cold-start bench reads
// it): the HTML, this module running, join()'s own steps (`connect`: the socket the HTML
// opened; the welcome, the host's link), the first snapshot.
const steps = { html: performance.getEntriesByType('navigation')[0]?.responseEnd, script: performance.now() };
/** What the page shows, for anyone to read (the e2e does): the same as the Rust client's. */
const pong = {
  side: null, points: null, score: [0, 0], winner: null, results: [], snapshots: 0, history: [], sent: 0,
  get interpolated() { return drawn.between; },
  get timeline() { return { ...room?.timeline, ...steps }; },
};
window.pong = pong;
let snapshot = null;
// The host's states by tick, drawn between two on its clock: ball x, y, the paddles' y.
const drawn = new Snapshots(TICK_MS);
let target = H / 2;
let keys = 0;

function decodeSnapshot(data) {
  if (data.byteLength !== 28) return null;
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const f = (i) => v.getFloat32(4 + 4 * i, true);
  return { tick: v.getUint32(0, true), ball: [f(0), f(1)], velocity: [f(2), f(3)], paddles: [f(4), f(5)] };
}

/** Where the ball will meet `side`'s paddle (walls folded in), or the middle if it moves away. */
function arrival(s, side) {
  const dir = side === 'left' ? -1 : 1;
  if (Math.sign(s.velocity[0]) !== dir) return H / 2;
  const face = PADDLE_X[side === 'left' ? 0 : 1] - dir * (PADDLE_W / 2 + BALL_R);
  const y = s.ball[1] + (s.velocity[1] * (face - s.ball[0])) / s.velocity[0];
  const span = H - 2 * BALL_R;
  const m = (((y - BALL_R) % (2 * span)) + 2 * span) % (2 * span);
  return BALL_R + (m <= span ? m : 2 * span - m);
}

function hearEvent(data) {
  if (data.byteLength !== 4) return;
  const [kind, a, b, c] = data;
  if (kind === 1) {
    [pong.side, pong.points] = [SIDES[a], b];
    say(pong.side === 'spectator' ? 'watching: both sides are taken' : `you play ${pong.side}: the mouse, W/S or the arrows`);
  } else if (kind === 2 || kind === 3) {
    // The score: a round starting (no scorer: no winner yet), a goal, or a round won.
    pong.score = [b, c];
    pong.winner = kind === 3 ? SIDES[a] : a === 255 ? null : pong.winner;
    if (kind === 3) pong.results.push({ winner: pong.winner, score: pong.score });
  }
}

const say = (text) => { statusLine.textContent = text; };

let room;
try {
  room = await join(location.href, {
    app: 'pong', version: 2,
    channels: ['unreliable-sequenced', 'unreliable-sequenced', 'reliable-ordered'],
    room: params.get('room') ?? 'pong',
    // The host room pong-host made: players link to the host alone.
    role: 'client',
    // Over WebTransport when the browser and the host have it (`?transport=webrtc`: WebRTC
    // first, as a browser without WebTransport plays; `?transport=websocket`: over the host's
    // WebSocket alone, as a browser with neither plays).
    webTransport: !['webrtc', 'websocket'].includes(params.get('transport')),
    webRtc: params.get('transport') !== 'websocket',
  });
  say('joined: waiting for the host');
} catch (err) {
  // A room playing another game, a bad room name...: say why, in the page.
  say(`could not join: ${err.message} (${err.code})`);
}

// Only the host's state and events count; inputs go to it (`room.host`). A player links to it
// alone; when it leaves or is lost the player waits, and links to the next host by itself.
room?.addEventListener('message', (e) => {
  if (e.peer !== room.host) return;
  if (e.channel === STATE) {
    const s = decodeSnapshot(e.data);
    if (!s) return;
    snapshot = s;
    const clock = room.clock();
    if (clock) drawn.push(s.tick, clock.time, [...s.ball, ...s.paddles]);
    steps.state ??= e.timeStamp;
    pong.snapshots += 1;
    pong.history.push([s.tick, s.ball[0], s.ball[1]]);
    if (pong.history.length > HISTORY) pong.history.shift();
  } else if (e.channel === EVENTS) {
    hearEvent(e.data);
  }
});
room?.addEventListener('peerleave', (e) => {
  if (e.role === 'host') say(`${e.reason === 'left' ? 'the host left' : 'lost the host'}: waiting for it to come back`);
});
room?.addEventListener('link', (e) => {
  if (e.link.state === 'lost') say(`link to the host lost: ${e.link.reason?.message ?? ''}`);
  else if (e.link.state === 'connected' && pong.side) say(`you play ${pong.side}`);
  else if (!pong.side) say(`link to the host: ${e.link.state}`);
});

canvas.addEventListener('pointermove', (e) => { target = (e.offsetY * H) / canvas.clientHeight; });
const KEYS = { ArrowUp: -1, KeyW: -1, ArrowDown: 1, KeyS: 1 };
addEventListener('keydown', (e) => { if (e.code in KEYS) { keys = KEYS[e.code]; e.preventDefault(); } });
addEventListener('keyup', (e) => { if (e.code in KEYS) keys = 0; });

function control() {
  const side = pong.side;
  if (room.host === null || (side !== 'left' && side !== 'right')) return;
  if (auto === 'track' && snapshot) target = arrival(snapshot, side);
  // Away from where the ball will arrive: a sure miss.
  else if (auto === 'miss' && snapshot) target = arrival(snapshot, side) < H / 2 ? H - PADDLE_H / 2 : PADDLE_H / 2;
  else target += keys * KEY_STEP;
  target = Math.min(H - PADDLE_H / 2, Math.max(PADDLE_H / 2, target));
  const input = new DataView(new ArrayBuffer(8));
  input.setUint32(0, room.inputTick(TICK_MS) ?? 0, true);
  input.setFloat32(4, target, true);
  try {
    room.sendLatest(room.host, INPUT, new Uint8Array(input.buffer));
    pong.sent += 1;
  } catch (err) {
    // `not_connected` while the link recovers: the next frame sends again.
    if (err.code !== 'not_connected') throw err;
  }
}

function draw() {
  ctx.fillStyle = '#111';
  ctx.fillRect(0, 0, W, H);
  ctx.fillStyle = '#444';
  // The net, clear of the score and the message.
  for (let y = 60; y < H - 40; y += 24) ctx.fillRect(W / 2 - 1, y, 2, 12);
  ctx.fillStyle = '#eee';
  ctx.textAlign = 'center';
  ctx.font = '32px monospace';
  ctx.fillText(`${pong.score[0]}   ${pong.score[1]}`, W / 2, 40);
  if (pong.winner) {
    ctx.font = '16px monospace';
    ctx.fillText(pong.winner === pong.side ? 'you win!' : `${pong.winner} wins`, W / 2, H - 16);
  }
  // Between the host's two states around the render time, once its clock is read (a round
  // trip after the link connects).
  const clock = room?.clock();
  const shown = clock && drawn.sample(clock.time);
  if (!shown) return;
  const [bx, by, ...paddles] = shown;
  paddles.forEach((y, i) => {
    ctx.fillStyle = SIDES[i] === pong.side ? '#6cf' : '#eee';
    ctx.fillRect(PADDLE_X[i] - PADDLE_W / 2, y - PADDLE_H / 2, PADDLE_W, PADDLE_H);
  });
  ctx.fillStyle = '#eee';
  ctx.fillRect(bx - BALL_R, by - BALL_R, 2 * BALL_R, 2 * BALL_R);
}

function frame() {
  if (room) control();
  draw();
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
