// Player page: joins the room named in the URL, shows every player's dot and each link's
// health. The wasm driver does signalling, WebRTC and the protocol; this file only draws.
import init, { Client } from '/pkg/ackwire_wasm.js';

const room = decodeURIComponent(location.pathname.split('/')[2] ?? '');
const params = new URLSearchParams(location.search);
const num = (key) => (params.has(key) ? Number(params.get(key)) : undefined);
const emulation = { latencyMs: num('latency'), jitterMs: num('jitter'), lossPct: num('loss'), seed: num('seed') };

const $ = (id) => document.getElementById(id);
$('room-name').textContent = room;
$('dashboard-link').href = `/room/${encodeURIComponent(room)}/dashboard`;
$('emulation').textContent = Object.entries(emulation).filter(([, v]) => v !== undefined)
  .map(([k, v]) => `${k} ${v}`).join(', ') || 'real link (no emulation)';

// State the page shows; window.ackwire exposes it to tests and curious developers.
const players = new Map(); // peer id (or `id·epoch` for links from before a rejoin) -> { x, y, state, ice }
let epoch = 0;
const me = { id: undefined, x: Math.random(), y: Math.random(), vx: 0.0021, vy: 0.0013 };
const metrics = { firstAckMs: undefined, linkOpenMs: undefined, connectedMs: undefined };
const chat = []; // { from, text }
window.ackwire = { players, me, metrics, chat, log: [] };

function log(text) {
  window.ackwire.log.push(text);
  const li = document.createElement('li');
  li.textContent = `${(performance.now() / 1000).toFixed(2)} s · ${text}`;
  $('log').prepend(li);
  while ($('log').children.length > 30) $('log').lastChild.remove();
}

function setStatus(state, reason) {
  $('status').dataset.state = state;
  $('status').textContent = reason ? `${state}: ${reason}` : state;
}

function player(id) {
  if (!players.has(id)) players.set(id, { x: undefined, y: undefined, state: 'connecting', ice: '—' });
  return players.get(id);
}

function onEvent(ev) {
  switch (ev.type) {
    case 'status': setStatus(ev.state, ev.reason); log(`signalling ${ev.state}${ev.reason ? ` (${ev.reason})` : ''}`); break;
    case 'welcome':
      if (!ev.resumed && me.id !== undefined) {
        // The server gave us a new identity (it restarted): links from before keep flowing and
        // are now named `id·epoch` by the driver, since the new server may reuse their ids.
        for (const [id, p] of [...players]) {
          if (typeof id === 'number') { players.delete(id); players.set(`${id}·${epoch}`, p); }
        }
        epoch += 1;
      }
      me.id = ev.peerId; $('me').textContent = `peer ${ev.peerId}`;
      log(`welcomed as peer ${ev.peerId}${ev.resumed ? ' (resumed)' : ''}`);
      break;
    case 'peer-joined': player(ev.peer); log(`peer ${ev.peer} (${ev.kind}) joined`); break;
    case 'peer-left': players.delete(ev.peer); log(`peer ${ev.peer} left (${ev.reason})`); break;
    case 'link-open':
      player(ev.peer).state = 'handshake';
      metrics.linkOpenMs ??= ev.atMs;
      log(`data channel to peer ${ev.peer} open at ${ev.atMs.toFixed(0)} ms`);
      break;
    case 'link-connected':
      player(ev.peer).state = 'connected';
      metrics.connectedMs ??= ev.atMs;
      log(`connected to peer ${ev.peer} at ${ev.atMs.toFixed(0)} ms`);
      break;
    case 'link-closed': players.delete(ev.peer); log(`link to peer ${ev.peer} closed (${ev.reason})`); break;
    case 'chat': addChat(`peer ${ev.peer}`, ev.text); break;
    case 'first-ack':
      metrics.firstAckMs ??= ev.atMs;
      log(`first packet acked by peer ${ev.peer} at ${ev.atMs.toFixed(0)} ms after opening the page`);
      break;
    case 'position': Object.assign(player(ev.peer), { x: ev.x, y: ev.y }); break;
    case 'error': log(`error ${ev.code}: ${ev.message}`); break;
    default: break;
  }
}

function addChat(from, text) {
  chat.push({ from, text });
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

const hue = (id) => (Number(id) * 137) % 360;

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
  for (const [id, p] of players) if (p.x !== undefined) dot(p.x, p.y, `hsl(${hue(id)} 70% 50%)`, `peer ${id}`);
  dot(me.x, me.y, `hsl(${hue(me.id ?? 0)} 90% 40%)`, 'you');
}

const fmt = (v, unit, digits = 1) => (v === undefined || v === null ? '—' : `${v.toFixed(digits)}${unit}`);

function renderPeers(peers) {
  const body = $('peers').querySelector('tbody');
  body.replaceChildren();
  for (const peer of peers) {
    const s = peer.stats;
    const row = document.createElement('tr');
    row.dataset.peer = peer.id;
    // RTT and jitter mean nothing until the first ack: show a dash, not 0.
    const measured = s?.packets_acked > 0;
    const cells = [`${peer.id} (${peer.kind})`, peer.state, measured ? fmt(s.rtt_ms, ' ms') : '—', measured ? fmt(s.jitter_ms, ' ms') : '—',
      fmt(s?.loss_percent, ' %'), s?.mode ?? '—', fmt(s?.send_rate_pps, ' Hz', 0), player(peer.id).ice];
    for (const text of cells) {
      const td = document.createElement('td');
      td.textContent = text;
      row.append(td);
    }
    row.children[5].dataset.mode = s?.mode ?? '';
    body.append(row);
  }
  $('no-peers').hidden = peers.length > 0;
}

// Which ICE candidate type carries each link (host, srflx, relay): from the browser's getStats.
async function refreshIce(client, peers) {
  for (const peer of peers) {
    const pc = client.peerConnection(peer.id);
    if (!pc) continue;
    const report = await pc.getStats();
    for (const s of report.values()) {
      if (s.type === 'candidate-pair' && s.nominated && s.state === 'succeeded') {
        const local = report.get(s.localCandidateId);
        if (local) player(peer.id).ice = local.candidateType;
      }
    }
  }
}

async function main() {
  try {
    await init();
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const client = new Client(`${scheme}://${location.host}/ws`, room, { ...emulation, onEvent });
    window.ackwire.client = client;
    addEventListener('pagehide', () => client.close());
    $('chat-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const text = $('chat-input').value.trim();
      if (!text) return;
      try {
        const n = client.sendChat(text);
        addChat('you', n ? text : `${text} (no one to send to yet)`);
        $('chat-input').value = '';
      } catch (err) {
        log(`chat not sent: ${err.message ?? err}`);
      }
    });
    const frame = () => {
      move();
      client.setPosition(me.x, me.y);
      draw();
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
    setInterval(() => {
      const peers = JSON.parse(client.peersJson());
      renderPeers(peers);
      refreshIce(client, peers).catch(() => {});
    }, 250);
  } catch (err) {
    setStatus('failed', String(err));
    log(`failed: ${err}`);
  }
}

main();
