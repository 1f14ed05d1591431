// Player page: a small game on ackwire's public JS API (ackwire.js) and nothing else. It joins
// the room named in the URL as app `ackwire-demo`, sends its dot's position every animation
// frame on channel 0 (unreliable-sequenced: newest wins) and chat on channel 1
// (reliable-ordered), and shows every player's dot and each link's health.
//
// With `?role=client` it joins a host room (`ackwire-peer host`) as a client: its one link is
// to the host, which relays every other player's dot and chat behind a 4-byte origin (u32
// little-endian: the host's id for the player; 0 for the host's own words), as
// native-peer/src/room/demo.rs defines.
import { join } from '/ackwire.js';

const APP = { app: 'ackwire-demo', version: 1, channels: ['unreliable-sequenced', 'reliable-ordered'] };
const POSITION = 0; // 8 bytes: x then y, f32 little-endian, each in [0, 1]
const CHAT = 1; // UTF-8 text

const scriptAt = performance.now();
const room = decodeURIComponent(location.pathname.split('/')[2] ?? '');
const params = new URLSearchParams(location.search);
const num = (key) => (params.has(key) ? Number(params.get(key)) : undefined);
const emulation = { latencyMs: num('latency'), jitterMs: num('jitter'), lossPct: num('loss'), seed: num('seed') };
// ?relay: ICE over TURN relays only (no TURN server configured: no path at all).
const relayOnly = params.has('relay');
// ?role=client: a client of a host room.
const role = params.get('role') ?? undefined;
// ?attempt=SECS: a link not connected after that long is lost and tried again (default 20).
const attemptTimeoutMs = params.has('attempt') ? num('attempt') * 1000 : undefined;
// Joining starts first: the signalling socket opens before anything else here runs.
const joining = join(location.href, { ...APP, relayOnly, emulation, role, attemptTimeoutMs });
const ORIGIN = 4; // a relayed message's origin: u32 little-endian

const $ = (id) => document.getElementById(id);
$('room-name').textContent = room;
$('dashboard-link').href = `/room/${encodeURIComponent(room)}/dashboard`;
// Say what the URL asked for in the words of its parameters.
const asked = [['latency', 'ms'], ['jitter', 'ms'], ['loss', '%'], ['seed', '']]
  .filter(([k]) => params.has(k)).map(([k, unit]) => `${k} ${params.get(k)}${unit ? ` ${unit}` : ''}`);
if (relayOnly) asked.push('relay only');
if (attemptTimeoutMs !== undefined) asked.push(`links connect within ${params.get('attempt')} s`);
$('emulation').textContent = asked.length ? `emulated: ${asked.join(', ')}` : 'real link (no emulation)';

// State the page shows; window.ackwire exposes it to tests and curious developers.
// Links are keyed by the peer's id in the room (`link`), which stays the same when the signal
// server restarts; `peer` is its id in the server's current session.
const links = new Map(); // id -> { link, peer, kind, state, reason, transport, candidate, stats, unconfirmed, x, y }
const me = { id: undefined, x: Math.random(), y: Math.random(), vx: 0.0021, vy: 0.0013 };
const metrics = { firstAckMs: undefined };
// When each step of joining first happened, in ms since navigation (performance.now()): where
// a join's time goes. The page's HTML received, this module running; join()'s own steps
// (socket opening and open, wasm loaded, welcome), the links' states, the first packet a peer
// acknowledged (`ack`) and the first position from another player (`state`) are added below.
const timeline = {
  html: performance.getEntriesByType('navigation')[0]?.responseEnd,
  script: scriptAt,
};
metrics.timeline = timeline;
const mark = (step, at = performance.now()) => { timeline[step] ??= at; };
const chat = []; // { from, text, origin? }
// A client's other players, as the host relays them: origin -> { origin, x, y, snapshots }.
const relayed = new Map();
window.ackwire = {
  links, me, metrics, chat, relayed, role: role ?? 'peer', log: [],
  /** The links by the other peer's current server id (links whose peer is not in the room are left out). */
  get players() {
    return new Map([...links.values()].filter((l) => l.peer != null).map((l) => [l.peer, l]));
  },
};

function log(text) {
  window.ackwire.log.push(text);
  const li = document.createElement('li');
  li.textContent = `${(performance.now() / 1000).toFixed(2)} s · ${text}`;
  $('log').prepend(li);
  while ($('log').children.length > 30) $('log').lastChild.remove();
}

// The badge says what the signalling socket does; links have their own summary next to it.
const SIGNALLING = { connecting: 'connecting…', joining: 'joining…', joined: 'signalling connected', reconnecting: 'signalling lost, reconnecting', closed: 'left' };
function setStatus(state, detail, text) {
  $('status').dataset.state = state === 'joined' ? 'connected' : state;
  $('status').textContent = text ?? SIGNALLING[state] ?? state;
  $('status').title = detail ?? '';
}

function linksStatus() {
  const all = [...links.values()];
  const connected = all.filter((l) => l.state === 'connected').length;
  const failing = all.filter((l) => l.reason && l.state !== 'connected');
  $('links-status').dataset.state = failing.length ? 'failing' : connected === all.length ? 'ok' : 'pending';
  $('links-status').textContent = all.length === 0 ? 'no links yet'
    : `links: ${connected} of ${all.length} connected${failing.length ? ` · ${failing[0].reason.message}` : ''}`;
}

/** The page's entry for a link: what the table and the dots need. */
function remember(info) {
  const known = links.get(info.id);
  // A link that is not connected has no live position: its old updates are not where the
  // player is, and must not be glided from when it connects again.
  const live = info.state === 'connected';
  const entry = {
    ...known,
    link: info.id, peer: info.serverId, kind: info.kind, state: info.state, reason: info.reason,
    transport: info.transport, candidate: info.candidate, stats: info.stats, attempt_ms: info.attemptMs,
    unconfirmed: info.unconfirmed,
    x: live ? known?.x : undefined, y: live ? known?.y : undefined,
    snapshots: live ? known?.snapshots : undefined, interval: live ? known?.interval : undefined,
  };
  links.set(info.id, entry);
  return { known, entry };
}

const name = (id) => `peer ${links.get(id)?.peer ?? '?'}`;

function listen(r) {
  r.addEventListener('signalling', (e) => {
    setStatus(e.state, e.detail);
    log(`signalling ${e.state}${e.detail ? ` (${e.detail})` : ''}`);
  });
  r.addEventListener('joined', (e) => {
    mark('welcome', e.timeStamp);
    me.id = e.serverId;
    $('me').textContent = `peer ${e.serverId}`;
    log(`welcomed as peer ${e.serverId}${e.resumed ? ' (resumed)' : ''}`);
  });
  r.addEventListener('refused', (e) => log(`refused by the server (${e.code}): ${e.message}`));
  r.addEventListener('peerjoin', (e) => log(`peer ${e.serverId} (${e.kind}${e.role === 'peer' ? '' : `, ${e.role}`}) joined`));
  r.addEventListener('peerleave', (e) => {
    if (e.role === 'host') {
      // The client stays in the room, and links to the host when it is back.
      log(e.reason === 'left' ? 'the host left: waiting for it to come back' : 'lost the host: waiting for it to come back');
      relayed.clear();
    } else {
      log(`peer ${e.serverId ?? '?'} left (${e.reason})`);
    }
    links.delete(e.peer);
    linksStatus();
  });
  r.addEventListener('link', (e) => {
    const info = e.link;
    const { known } = remember(info);
    if (info.state === 'gone') links.delete(info.id);
    mark(info.state, e.timeStamp);
    if (known?.state !== info.state) {
      log(`link to peer ${info.serverId ?? '?'} (${info.transport}): ${info.state}${info.reason && info.state !== 'connected' ? ` — ${info.reason.message}` : ''}`);
    }
    if (info.firstAckAt != null && metrics.firstAckMs === undefined) {
      metrics.firstAckMs = info.firstAckAt;
      mark('ack', info.firstAckAt);
      log(`first packet acked by peer ${info.serverId} at ${info.firstAckAt.toFixed(0)} ms after opening the page`);
    }
    linksStatus();
  });
  r.addEventListener('message', (e) => {
    // The first state update: what a player waits for after opening the URL (the cold-start
    // bench reads it).
    if (e.channel === POSITION) mark('state', e.timeStamp);
    if (role === 'client' && e.peer === r.host) {
      hearRelayed(e);
    } else if (e.channel === CHAT) {
      addChat(name(e.peer), e.text);
    } else if (e.channel === POSITION && e.data.length === 8) {
      const l = links.get(e.peer);
      if (l?.state !== 'connected') return;
      const view = new DataView(e.data.buffer, e.data.byteOffset, 8);
      const [x, y] = [view.getFloat32(0, true), view.getFloat32(4, true)];
      Object.assign(l, { x, y });
      snapshot(l, performance.now(), x, y);
    }
  });
  r.addEventListener('undelivered', (e) => {
    if (e.channel === CHAT) addChat('you', `${e.text} (not delivered: ${name(e.peer)} left)`);
  });
}

/** What the host relays to a client: another player's dot or chat line, or its own words. */
function hearRelayed(e) {
  if (e.data.length < ORIGIN) return;
  const origin = new DataView(e.data.buffer, e.data.byteOffset, ORIGIN).getUint32(0, true);
  const payload = e.data.subarray(ORIGIN);
  if (e.channel === CHAT) {
    addChat(origin === 0 ? 'host' : `player ${origin}`, new TextDecoder().decode(payload), origin);
  } else if (e.channel === POSITION && payload.length === 8 && origin !== 0) {
    const view = new DataView(payload.buffer, payload.byteOffset, 8);
    const [x, y] = [view.getFloat32(0, true), view.getFloat32(4, true)];
    const p = relayed.get(origin) ?? { origin };
    Object.assign(p, { x, y });
    relayed.set(origin, p);
    snapshot(p, performance.now(), x, y);
  }
}

function addChat(from, text, origin) {
  chat.push(origin === undefined ? { from, text } : { from, text, origin });
  const li = document.createElement('li');
  li.textContent = `${from}: ${text}`;
  $('chat').append(li);
}

const keys = new Set();
addEventListener('keydown', (e) => {
  if (e.key.startsWith('Arrow') && e.target.tagName !== 'INPUT') { keys.add(e.key); e.preventDefault(); }
});
addEventListener('keyup', (e) => keys.delete(e.key));

function move() {
  const step = 0.01;
  if (keys.size) {
    if (keys.has('ArrowLeft')) me.x -= step;
    if (keys.has('ArrowRight')) me.x += step;
    if (keys.has('ArrowUp')) me.y -= step;
    if (keys.has('ArrowDown')) me.y += step;
  } else {
    me.x += me.vx; me.y += me.vy;
    if (me.x < 0.05 || me.x > 0.95) me.vx = -me.vx;
    if (me.y < 0.05 || me.y > 0.95) me.vy = -me.vy;
  }
  me.x = Math.min(1, Math.max(0, me.x));
  me.y = Math.min(1, Math.max(0, me.y));
}

// Snapshot interpolation: a remote dot is drawn between the two updates around "now minus a
// delay" instead of jumping to each update as it lands. The delay is two update intervals
// (the link's measured spacing of position updates: ~67 ms at 30 packets/s, ~200 ms at 10),
// kept between 40 and 300 ms, so one late or lost update still finds a later one to glide
// to. Unticking "smooth" draws the raw updates, to see what 10 packets/s looks like.
const SNAPSHOTS = 16;
function snapshot(l, t, x, y) {
  l.snapshots ??= [];
  const last = l.snapshots.at(-1);
  if (last) l.interval = l.interval === undefined ? t - last.t : 0.8 * l.interval + 0.2 * (t - last.t);
  l.snapshots.push({ t, x, y });
  if (l.snapshots.length > SNAPSHOTS) l.snapshots.shift();
}

function interpolated(l, now) {
  const snaps = l.snapshots;
  if (!snaps?.length) return { x: l.x, y: l.y };
  const delay = Math.min(300, Math.max(40, 2 * (l.interval ?? 100)));
  l.delayMs = delay;
  const t = now - delay;
  if (t <= snaps[0].t) return snaps[0];
  for (let i = 1; i < snaps.length; i++) {
    const [a, b] = [snaps[i - 1], snaps[i]];
    if (t <= b.t) {
      const f = (t - a.t) / (b.t - a.t || 1);
      return { x: a.x + (b.x - a.x) * f, y: a.y + (b.y - a.y) * f };
    }
  }
  return snaps.at(-1); // no update for a while: hold the last, never guess ahead
}

const hue = (id) => (Number(id) * 137) % 360;
const color = (link, light = 50) => `hsl(${hue(link)} 70% ${light}%)`;

function draw() {
  const canvas = $('arena');
  const ctx = canvas.getContext('2d');
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const dot = (x, y, color, label) => {
    ctx.fillStyle = color;
    ctx.beginPath();
    ctx.arc(x * canvas.width, y * canvas.height, 9, 0, 2 * Math.PI);
    ctx.fill();
    ctx.fillText(label, x * canvas.width + 12, y * canvas.height + 4);
  };
  // Only connected links have a live dot: a lost link's last position is not where the player is.
  const smooth = $('interpolate').checked;
  const now = performance.now();
  for (const l of links.values()) {
    if (l.state !== 'connected' || l.x === undefined) continue;
    l.drawn = smooth ? interpolated(l, now) : { x: l.x, y: l.y };
    dot(l.drawn.x, l.drawn.y, color(l.link), `peer ${l.peer ?? '?'}`);
  }
  for (const p of relayed.values()) {
    p.drawn = smooth ? interpolated(p, now) : { x: p.x, y: p.y };
    dot(p.drawn.x, p.drawn.y, color(p.origin + 7), `player ${p.origin}`);
  }
  dot(me.x, me.y, '#222', 'you');
}

const fmt = (v, unit, digits = 1) => (v === undefined || v === null ? '—' : `${v.toFixed(digits)}${unit}`);

function renderPeers(rows) {
  const body = $('peers').querySelector('tbody');
  body.replaceChildren();
  for (const l of rows) {
    const s = l.stats;
    const row = document.createElement('tr');
    row.dataset.peer = l.peer ?? '';
    row.dataset.state = l.state;
    // RTT and jitter mean nothing until the first ack: show a dash, not 0.
    const measured = s?.packets_acked > 0;
    const cells = [`${l.peer ?? '?'} (${l.kind})`, l.state, measured ? fmt(s.rtt_ms, ' ms') : '—', measured ? fmt(s.jitter_ms, ' ms') : '—',
      s ? `${fmt(s.loss_percent, ' %')} · ${fmt(s.loss_cumulative_percent, ' %')}` : '—', s?.mode ?? '—', fmt(s?.send_rate_pps, ' pkt/s', 0), `${l.transport}${l.candidate ? ` · ${l.candidate}` : ''}`,
      l.state === 'connected' ? '' : l.reason?.message ?? ''];
    for (const text of cells) {
      const td = document.createElement('td');
      td.textContent = text;
      row.append(td);
    }
    // The colour key: the row's swatch is the dot's colour.
    row.children[0].style.borderLeft = `6px solid ${color(l.link)}`;
    row.children[5].dataset.mode = s?.mode ?? '';
    body.append(row);
  }
  $('no-peers').hidden = rows.length > 0;
}

/**
 * Shows the page: its room's sections (hidden in the HTML), and the whole page, which the
 * head script keeps unpainted until then (400 ms at most). The sections' first layout is the
 * page's largest (~10 ms cold: style, and each font loaded), and a page showing them at once
 * acked its first packet ~9 ms later; a page painting its header as it loads, 3–36 ms later
 * in five A/Bs (docs/cold-start.md, "On loopback"): on loopback both ran while the link's
 * handshake waited on this thread. So the page appears once the join is in, at an idle
 * moment (250 ms at most), or at once when it fails.
 */
function reveal({ now = false } = {}) {
  const show = () => {
    document.documentElement.style.visibility = '';
    document.querySelector('main').hidden = false;
  };
  if (now) show();
  else (globalThis.requestIdleCallback ?? setTimeout)(show, { timeout: 250 });
}

async function main() {
  let r;
  try {
    r = await joining;
    reveal();
  } catch (err) {
    reveal({ now: true });
    // Refused (a room playing another game: app_mismatch), or the page cannot run a room.
    const why = err.code ? `${err.message} (${err.code})` : String(err);
    setStatus('failed', why, `not joined: ${err.message ?? err}`);
    log(`could not join: ${why}`);
    return;
  }
  listen(r);
  for (const [step, at] of Object.entries(r.timeline)) if (step !== 'start') mark(step, at);
  me.id = r.serverId;
  window.ackwire.client = r;
  addEventListener('pagehide', () => r.close());
  $('chat-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('chat-input').value.trim();
    if (!text) return;
    try {
      const { sent, refused } = r.broadcast(CHAT, text);
      addChat('you', sent ? text : `${text} (no one to send to yet)`);
      for (const { peer, error } of refused) log(`not sent to ${name(peer)} (${error.code}): ${text}`);
      $('chat-input').value = '';
    } catch (err) {
      log(`chat not sent (${err.code}): ${err.message}`);
    }
  });
  const position = new DataView(new ArrayBuffer(8));
  const bytes = new Uint8Array(position.buffer);
  const frame = () => {
    move();
    position.setFloat32(0, me.x, true);
    position.setFloat32(4, me.y, true);
    try {
      r.broadcastLatest(POSITION, bytes);
    } catch (err) {
      if (err.code === 'closed') return; // left the room: the game is over
      throw err;
    }
    draw();
    requestAnimationFrame(frame);
  };
  // The first frame makes the canvas's context and shapes its first text (~8 ms of the main
  // thread): started when the page is idle, it does not hold back a link's handshake.
  (globalThis.requestIdleCallback ?? setTimeout)(() => requestAnimationFrame(frame), { timeout: 250 });
  $('outage').addEventListener('change', (e) => {
    r.setOutage(e.target.checked);
    log(e.target.checked ? 'cable pulled: links go quiet' : 'cable plugged back');
  });
  // The table, four times a second: the links' states, paths and the core's stats.
  setInterval(() => {
    for (const info of r.peers) if (info.state !== 'gone') remember(info);
    renderPeers([...links.values()]);
    linksStatus();
  }, 250);
}

main();
