// Live dashboard: subscribes to one room (/room/{name}/dashboard) or all (/dashboard). Each
// room at a glance (a mesh as a grid of its directed links, a host room as a star: the host
// in the centre, a spoke to each client), then a table of every directed link (the two
// directions of a pair side by side); a row opens its card: RTT with its jitter band and the
// 250 ms threshold, loss beside the send rate on their own axes, the congestion mode as
// shaded bands, and the series for export.
import uPlot from '/vendor/uPlot.esm.js';

const parts = location.pathname.split('/');
const room = parts[1] === 'room' ? decodeURIComponent(parts[2]) : undefined;
/** Series are kept this long whatever the window shows. */
const KEEP_S = 300;
/** The core's default RTT threshold: above it a link is in bad mode. */
const RTT_THRESHOLD_MS = 250;
const $ = (id) => document.getElementById(id);
$('scope').textContent = room ? `· room ${room}` : '· all rooms';
let windowS = Number($('window').value);

// link key "room/from→to" -> { card, row, charts, data, latest, report, room, from, to }
const links = new Map();
// "room/peer" -> what that player emulates on its links (from its own reports)
const emulations = new Map();
// room -> { topology: 'mesh' | 'host', roles: peer id -> 'peer' | 'host' | 'client' }, from
// the server's snapshots and peer_joined frames
const rooms = new Map();
window.ackwireDashboard = { links, rooms, events: [] };

const linkKey = (r, from, to) => `${r}/${from}→${to}`;
const topologyOf = (r) => rooms.get(r)?.topology ?? 'mesh';
const roleOf = (r, peer) => rooms.get(r)?.roles.get(peer) ?? 'peer';

/** A room as the server's snapshot shows it (the topology is absent for a mesh, a role for a mesh peer). */
function onSnapshot(snapshot) {
  rooms.set(snapshot.room, {
    topology: snapshot.topology ?? 'mesh',
    roles: new Map((snapshot.peers ?? []).map((p) => [p.id, p.role ?? 'peer'])),
  });
}

function onPeerJoined(r, peer) {
  if (typeof peer?.id !== 'number') return;
  if (!rooms.has(r)) rooms.set(r, { topology: 'mesh', roles: new Map() });
  const info = rooms.get(r);
  const role = peer?.role ?? 'peer';
  info.roles.set(peer.id, role);
  // The room's first member fixed its topology, and every member's role is of it.
  info.topology = role === 'peer' ? 'mesh' : 'host';
}

function showTopology() {
  if (!room) return;
  $('topology').hidden = !rooms.has(room);
  $('topology').textContent = topologyOf(room) === 'host' ? '· host room' : '· mesh';
  $('topology').dataset.topology = topologyOf(room);
}

/** "3 (host) → 5": a host room's host is named so. */
function who(l) {
  const name = (peer) => `${peer}${roleOf(l.room, peer) === 'host' ? ' (host)' : ''}`;
  return `${room ? '' : `${l.room} · `}${name(l.from)} → ${name(l.to)}`;
}

function setStatus(state, text) {
  $('status').dataset.state = state;
  $('status').textContent = text ?? state;
}

function summary() {
  $('empty').hidden = links.size > 0;
  $('matrix').hidden = links.size === 0;
  $('summary').textContent = links.size ? `${links.size} directed link${links.size > 1 ? 's' : ''}` : 'no links yet';
}

/** "150 ms ± 20 ms each way, 10 % loss", or "—" for a real link. */
function emulationWords(e) {
  if (!e) return '—';
  const words = [];
  if (e.latency_ms) words.push(`${Math.round(e.latency_ms)} ms${e.jitter_ms ? ` ± ${Math.round(e.jitter_ms)} ms` : ''} each way`);
  else if (e.jitter_ms) words.push(`± ${Math.round(e.jitter_ms)} ms jitter`);
  if (e.loss_percent) words.push(`${e.loss_percent} % loss`);
  return words.join(', ') || 'none';
}

const clock = (u, ticks) => ticks.map((t) => new Date(t * 1000).toLocaleTimeString([], { hour12: false }));

// Every chart: time on x (clock time only, so nothing is clipped under it), labelled y axes.
function chart(target, title, series, { scales = {}, axes = [], bands = [] } = {}) {
  return new uPlot({
    title, width: 390, height: 170, series: [{}, ...series], bands, legend: { live: false },
    scales: { x: { time: true, range: () => { const now = Date.now() / 1000; return [now - windowS, now]; } }, ...scales },
    axes: [{ values: clock, size: 30, space: 70 }, ...axes],
  }, [[], ...series.map(() => [])], target);
}

/** The RTT scale is shared by every card (and always shows the threshold), so they compare. */
function sharedRttMax() {
  let max = 0;
  for (const l of links.values()) for (const v of l.data.hi) if (v > max) max = v;
  return Math.max(RTT_THRESHOLD_MS * 1.2, max * 1.1);
}

function addLink(r, from, to, transport) {
  const key = linkKey(r, from, to);
  const card = document.createElement('section');
  card.className = 'link';
  card.dataset.link = key;
  card.hidden = true;
  card.innerHTML = `<h2>${room ? '' : `${r} · `}peer ${from}'s link to peer ${to} <small>${transport ?? ''}</small>
      <button class="export" data-format="csv" type="button">CSV</button> <button class="export" data-format="json" type="button">JSON</button></h2>
    <p class="state">link <b class="link-state">—</b> <span class="why"></span></p>
    <p class="latest">RTT <b class="rtt">—</b> · jitter <b class="jitter">—</b> · loss <b class="loss">—</b>
      <small class="loss-window">(last 64 packets)</small> · <b class="loss-all">—</b> <small>since start</small>
      · mode <b class="mode">—</b> · rate <b class="rate">—</b></p><div class="charts"></div>`;
  const row = document.createElement('tr');
  row.dataset.link = key;
  row.tabIndex = 0;
  row.setAttribute('aria-expanded', 'false');
  row.innerHTML = `<td class="who"></td>${'<td></td>'.repeat(8)}`;
  const toggle = () => {
    card.hidden = !card.hidden;
    row.setAttribute('aria-expanded', String(!card.hidden));
    if (!card.hidden) {
      redraw(entry);
      card.scrollIntoView({ block: 'nearest' });
    }
  };
  row.addEventListener('click', () => entry.toggle());
  row.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); entry.toggle(); } });
  const charts = card.querySelector('.charts');
  const boxes = [0, 1, 2].map(() => charts.appendChild(document.createElement('div')));
  const rtt = chart(boxes[0], 'RTT ± jitter', [
    { label: 'RTT', stroke: '#2a7de1', width: 2 },
    { label: '+ jitter', stroke: '#2a7de155' },
    { label: '− jitter', stroke: '#2a7de155' },
    { label: `bad above ${RTT_THRESHOLD_MS} ms`, stroke: '#d33', dash: [6, 4], width: 1 },
  ], {
    scales: { y: { range: () => [0, sharedRttMax()] } },
    axes: [{ label: 'ms', size: 50 }],
    bands: [{ series: [2, 3], fill: '#2a7de122' }],
  });
  const loss = chart(boxes[1], 'loss and send rate', [
    { label: 'loss %, last 64', stroke: '#d33', width: 2, scale: '%' },
    { label: 'loss %, all', stroke: '#822', width: 1, dash: [4, 3], scale: '%' },
    { label: 'packets/s', stroke: '#888', scale: 'pps' },
  ], {
    scales: { '%': { range: [0, 100] }, pps: { range: [0, 35] } },
    axes: [{ scale: '%', label: 'loss %', size: 50 }, { scale: 'pps', label: 'packets/s', side: 1, size: 50, grid: { show: false } }],
  });
  const stepped = uPlot.paths.stepped({ align: 1 });
  const mode = chart(boxes[2], 'congestion mode', [
    { label: 'good (30 packets/s)', stroke: '#2a2', fill: '#2a24', paths: stepped },
    { label: 'bad (10 packets/s)', stroke: '#d33', fill: '#d334', paths: stepped },
  ], {
    scales: { y: { range: [0, 1] } },
    axes: [{ show: false }],
  });
  card.querySelectorAll('.export').forEach((b) => b.addEventListener('click', () => exportSeries(entry, b.dataset.format)));
  const entry = {
    card, row, charts: { rtt, loss, mode },
    data: { t: [], rtt: [], hi: [], lo: [], loss: [], lossAll: [], rate: [], good: [], bad: [] },
    latest: undefined, report: undefined, state: undefined, seenAt: 0, room: r, from, to, toggle,
  };
  links.set(key, entry);
  placeRow(entry);
  $('links').append(card);
  summary();
  return entry;
}

/** Rows sorted by room, then pair, then direction: a pair's two directions sit together. */
function placeRow(entry) {
  const order = (l) => [l.room, Math.min(l.from, l.to), Math.max(l.from, l.to), l.from];
  const cmp = (a, b) => {
    const [x, y] = [order(a), order(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
  };
  const body = $('matrix').querySelector('tbody');
  const after = [...links.values()].filter((l) => l !== entry && l.row.isConnected && cmp(l, entry) > 0)
    .sort(cmp)[0];
  body.insertBefore(entry.row, after?.row ?? null);
}

function exportSeries(link, format) {
  const d = link.data;
  const rows = d.t.map((t, i) => ({
    time: new Date(t * 1000).toISOString(), rtt_ms: d.rtt[i], rtt_plus_jitter_ms: d.hi[i], rtt_minus_jitter_ms: d.lo[i],
    loss_percent: d.loss[i], loss_cumulative_percent: d.lossAll[i], send_rate_pps: d.rate[i], mode: d.good[i] ? 'good' : 'bad',
  }));
  const text = format === 'json'
    ? JSON.stringify({ room: link.room, from: link.from, to: link.to, series: rows }, null, 1)
    : [Object.keys(rows[0] ?? { time: '' }).join(','), ...rows.map((r) => Object.values(r).map((v) => v ?? '').join(','))].join('\n');
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text], { type: format === 'json' ? 'application/json' : 'text/csv' }));
  a.download = `ackwire-${link.room}-${link.from}-to-${link.to}.${format}`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

/**
 * Each room at a glance: a mesh as a grid (a row per reporter, a column per peer, each cell a
 * directed link), a host room as a star.
 */
function renderGrids() {
  const seen = new Map();
  const peersOf = (r) => seen.get(r) ?? seen.set(r, new Set()).get(r);
  for (const l of links.values()) peersOf(l.room).add(l.from).add(l.to);
  // A host room shows its members before their links are up.
  for (const [r, info] of rooms) {
    if (info.topology !== 'host') continue;
    for (const peer of info.roles.keys()) peersOf(r).add(peer);
  }
  const grids = $('grids');
  grids.replaceChildren();
  for (const [r, peerSet] of [...seen].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const peers = [...peerSet].sort((a, b) => a - b);
    if (topologyOf(r) === 'host') {
      grids.append(star(r, peers));
      continue;
    }
    const table = document.createElement('table');
    table.className = 'grid';
    table.dataset.room = r;
    const head = document.createElement('tr');
    head.innerHTML = `<th>${room ? '' : `${r}: `}from ╲ to</th>${peers.map((p) => `<th>${p}</th>`).join('')}`;
    table.append(head);
    for (const from of peers) {
      const tr = document.createElement('tr');
      tr.innerHTML = `<th>${from}</th>`;
      for (const to of peers) {
        const td = document.createElement('td');
        const link = links.get(linkKey(r, from, to));
        if (link) {
          const s = link.latest;
          const connected = link.state === 'connected';
          td.dataset.link = linkKey(r, from, to);
          td.dataset.mode = connected ? s?.mode ?? '' : '';
          td.dataset.state = link.state ?? '';
          td.textContent = connected && s?.packets_acked > 0 ? `${s.rtt_ms.toFixed(0)} ms` : link.state ?? '—';
          td.title = `${from} → ${to}: ${link.state ?? '—'}${s ? `, RTT ${s.rtt_ms.toFixed(1)} ms, loss ${s.loss_percent.toFixed(1)} %, ${s.mode}` : ''}`;
          td.addEventListener('click', () => link.toggle());
        } else {
          td.textContent = from === to ? '' : '·';
        }
        tr.append(td);
      }
      table.append(tr);
    }
    grids.append(table);
  }
}

let gridsDue = false;

/** Redraws the rooms at a glance once a frame, however many reports came meanwhile (a host room of 256 sends 257 a second). */
function renderGridsSoon() {
  if (gridsDue) return;
  gridsDue = true;
  requestAnimationFrame(() => {
    gridsDue = false;
    renderGrids();
  });
}

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, title) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (title) e.append(Object.assign(document.createElementNS(SVG, 'title'), { textContent: title }));
  return e;
}

/**
 * A host room as a star: the host in the centre, its clients on a circle around it, a spoke
 * per host↔client link (clients link to the host alone), coloured by its state and mode and
 * labelled with its RTT as the host reports it (else as the client does). A spoke opens that
 * link's card. Beyond 32 clients, nodes shrink to dots and go unlabelled.
 */
function star(r, peers) {
  const host = peers.find((p) => roleOf(r, p) === 'host');
  const clients = peers.filter((p) => p !== host);
  const figure = document.createElement('figure');
  figure.className = 'star';
  figure.dataset.room = r;
  figure.dataset.topology = 'host';
  const caption = document.createElement('figcaption');
  caption.textContent = `${room ? '' : `${r}: `}host room · ${host === undefined ? 'no host' : `host ${host}`}`
    + ` · ${clients.length} client${clients.length === 1 ? '' : 's'}`;
  const size = 360;
  const centre = size / 2;
  const drawing = svg('svg', { viewBox: `0 0 ${size} ${size}`, width: size, height: size });
  const labelled = clients.length <= 32;
  const spokes = [];
  const nodes = [];
  const node = (peer, role, x, y) => {
    const g = svg('g', { class: 'node', 'data-peer': peer, 'data-role': role }, `${role} ${peer}`);
    g.append(svg('circle', { cx: x, cy: y, r: role === 'host' ? 24 : labelled ? 14 : 5 }));
    if (role === 'host' || labelled) {
      const text = svg('text', { x, y, 'text-anchor': 'middle', 'dominant-baseline': 'central' });
      text.textContent = role === 'host' ? `host ${peer}` : peer;
      g.append(text);
    }
    nodes.push(g);
  };
  clients.forEach((client, i) => {
    const angle = (2 * Math.PI * i) / clients.length - Math.PI / 2;
    const [x, y] = [centre + (centre - 24) * Math.cos(angle), centre + (centre - 24) * Math.sin(angle)];
    node(client, roleOf(r, client), x, y);
    const link = host !== undefined && (links.get(linkKey(r, host, client)) ?? links.get(linkKey(r, client, host)));
    if (!link) return;
    const s = link.latest;
    const connected = link.state === 'connected';
    const spoke = svg('line', {
      class: 'spoke', x1: centre, y1: centre, x2: x, y2: y,
      'data-host': host, 'data-client': client, 'data-state': link.state ?? '', 'data-mode': connected ? s?.mode ?? '' : '',
    }, `${host} ↔ ${client}: ${link.state ?? '—'}${s?.packets_acked > 0 ? `, RTT ${s.rtt_ms.toFixed(1)} ms, ${s.mode}` : ''}`);
    spoke.addEventListener('click', () => link.toggle());
    spokes.push(spoke);
    if (labelled && connected && s?.packets_acked > 0) {
      const rtt = svg('text', { class: 'rtt', x: centre + (x - centre) * 0.55, y: centre + (y - centre) * 0.55, dx: 6 });
      rtt.textContent = `${s.rtt_ms.toFixed(0)} ms`;
      spokes.push(rtt);
    }
  });
  if (host !== undefined) node(host, 'host', centre, centre);
  drawing.append(...spokes, ...nodes);
  figure.append(caption, drawing);
  return figure;
}

function dropLinks(predicate) {
  let removed = false;
  for (const [key, link] of links) {
    if (!predicate(link)) continue;
    link.card.remove();
    link.row.remove();
    removed = true;
    for (const c of Object.values(link.charts)) c.destroy();
    links.delete(key);
  }
  if (removed) renderGridsSoon();
  summary();
}

const removePeer = (r, peerId) => dropLinks((l) => l.room === r && (l.from === peerId || l.to === peerId));

// A link nobody has reported for this long is gone (its reporter closed it or vanished).
const STALE_S = 3;

function pruneStale() {
  const now = Date.now() / 1000;
  dropLinks((l) => now - l.seenAt > STALE_S);
}

const fmt = (v, unit, digits = 1) => (v === undefined || v === null ? '—' : `${v.toFixed(digits)}${unit}`);

function renderRow(link) {
  const s = link.latest;
  const report = link.report;
  // RTT and jitter mean nothing until the first ack.
  const measured = s?.packets_acked > 0;
  const cells = link.row.children;
  cells[0].textContent = who(link);
  cells[1].textContent = `${report?.transport ?? '—'}${report?.ice ? ` · ${report.ice}` : ''}`;
  cells[2].textContent = report?.state ?? '—';
  cells[2].dataset.state = report?.state ?? '';
  cells[2].title = report?.state !== 'connected' ? report?.reason?.message ?? '' : '';
  cells[3].textContent = measured ? fmt(s.rtt_ms, ' ms') : '—';
  cells[4].textContent = measured ? fmt(s.jitter_ms, ' ms') : '—';
  cells[5].textContent = s ? `${fmt(s.loss_percent, ' %')} · ${fmt(s.loss_cumulative_percent, ' %')}` : '—';
  cells[6].textContent = s?.mode ?? '—';
  cells[6].dataset.mode = s?.mode ?? '';
  cells[7].textContent = s ? fmt(s.send_rate_pps, ' packets/s', 0) : '—';
  const words = (peer) => (emulations.has(`${link.room}/${peer}`) ? emulationWords(emulations.get(`${link.room}/${peer}`)) : '?');
  cells[8].textContent = `${words(link.from)} · ${words(link.to)}`;
}

/** Charts are drawn only while their card is open (a room of 8 players has 56 links). */
function redraw(link) {
  if (link.card.hidden) return;
  const d = link.data;
  link.charts.rtt.setData([d.t, d.rtt, d.hi, d.lo, d.t.map(() => RTT_THRESHOLD_MS)]);
  link.charts.loss.setData([d.t, d.loss, d.lossAll, d.rate]);
  link.charts.mode.setData([d.t, d.good, d.bad]);
}

let rttMax = 0;

function onStats(r, from, reports) {
  const t = Date.now() / 1000;
  const updated = [];
  for (const report of reports ?? []) {
    // A peer never reports a link to itself; a report that says so is not charted.
    if (typeof report.peer !== 'number' || report.peer === from) continue;
    emulations.set(`${r}/${from}`, report.emulation ?? null);
    const key = linkKey(r, from, report.peer);
    const link = links.get(key) ?? addLink(r, from, report.peer, report.transport);
    link.seenAt = t;
    link.report = report;
    // The link's state as its reporter's room member sees it, with the reason of a failure.
    link.state = report.state;
    link.card.dataset.state = report.state ?? '';
    link.card.querySelector('.link-state').textContent = `${report.state ?? '—'}${report.ice ? ` · ${report.ice}` : ''}`;
    link.card.querySelector('.link-state').dataset.state = report.state ?? '';
    link.card.querySelector('.why').textContent = report.state !== 'connected' ? report.reason?.message ?? '' : '';
    const s = report.stats;
    if (s) {
      link.latest = s;
      const d = link.data;
      const measured = s.packets_acked > 0;
      d.t.push(t);
      // Before the first ack there is no RTT: a gap, not a 0.
      d.rtt.push(measured ? s.rtt_ms : null);
      d.hi.push(measured ? s.rtt_ms + s.jitter_ms : null);
      d.lo.push(measured ? Math.max(0, s.rtt_ms - s.jitter_ms) : null);
      d.loss.push(s.loss_percent); d.lossAll.push(s.loss_cumulative_percent ?? null); d.rate.push(s.send_rate_pps);
      d.good.push(s.mode === 'good' ? 1 : 0); d.bad.push(s.mode === 'good' ? 0 : 1);
      while (d.t.length && d.t[0] < t - KEEP_S) for (const series of Object.values(d)) series.shift();
      const q = (cls) => link.card.querySelector(`.${cls}`);
      q('rtt').textContent = measured ? `${s.rtt_ms.toFixed(1)} ms` : '—';
      q('jitter').textContent = measured ? `${s.jitter_ms.toFixed(1)} ms` : '—';
      q('loss').textContent = `${s.loss_percent.toFixed(1)} %`;
      q('loss-window').textContent = `(last ${s.loss_window_packets ?? 64} packets)`;
      q('loss-all').textContent = `${(s.loss_cumulative_percent ?? 0).toFixed(1)} %`;
      q('mode').textContent = s.mode;
      q('mode').dataset.mode = s.mode;
      q('rate').textContent = `${s.send_rate_pps.toFixed(0)} packets/s`;
    }
    renderRow(link);
    updated.push(link);
  }
  // The reporter's emulation shows on the rows where it is the peer, too.
  for (const link of links.values()) if (link.room === r && link.to === from) renderRow(link);
  renderGridsSoon();
  // When the shared RTT scale moves, every open card follows; otherwise only the reported.
  const max = sharedRttMax();
  const moved = max !== rttMax;
  rttMax = max;
  for (const link of moved ? links.values() : updated) redraw(link);
}

$('window').addEventListener('change', (e) => {
  windowS = Number(e.target.value);
  for (const link of links.values()) redraw(link);
});

function connect(attempt = 0) {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const ws = new WebSocket(`${scheme}://${location.host}/ws`);
  // Watching every room needs the server's admin token, given as `/dashboard#token=T`: a
  // fragment never leaves the browser except in this frame (no logs, no Referer).
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  const subscribe = room ? { type: 'subscribe', room } : { type: 'subscribe', ...(token ? { token } : {}) };
  ws.onopen = () => ws.send(JSON.stringify(subscribe));
  ws.onmessage = (msg) => {
    const ev = JSON.parse(msg.data);
    window.ackwireDashboard.events.push(ev.type);
    switch (ev.type) {
      case 'subscribed':
        // A (re)subscription starts a fresh picture: after a server restart the old peer ids
        // mean nothing, and live links report again within a second.
        if (attempt > 0) dropLinks(() => true);
        rooms.clear();
        for (const snapshot of ev.rooms ?? []) onSnapshot(snapshot);
        setStatus('connected', 'live'); attempt = 0;
        showTopology();
        renderGridsSoon();
        break;
      case 'stats': onStats(ev.room, ev.peer_id, ev.links); break;
      case 'peer_joined':
        onPeerJoined(ev.room, ev.peer);
        showTopology();
        renderGridsSoon();
        break;
      case 'peer_left':
        rooms.get(ev.room)?.roles.delete(ev.peer_id);
        removePeer(ev.room, ev.peer_id);
        renderGridsSoon();
        break;
      case 'error':
        setStatus('failed', ev.code === 'admin_token_required'
          ? 'watching every room needs the admin token: open /dashboard#token=<token>, or a room\'s own dashboard (/room/<name>/dashboard)'
          : `${ev.code}: ${ev.message}`);
        break;
      default: break;
    }
  };
  ws.onclose = () => {
    setStatus('reconnecting', 'reconnecting…');
    setTimeout(() => connect(attempt + 1), Math.min(2000, 250 * 2 ** attempt));
  };
}

summary();
connect();
setInterval(pruneStale, 1000);
