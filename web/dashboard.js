// Live dashboard: subscribes to one room (/room/{name}/dashboard) or all (/dashboard) and
// charts, per link, RTT with its jitter band, loss, send rate and congestion mode.
import uPlot from '/vendor/uPlot.esm.js';

const parts = location.pathname.split('/');
const room = parts[1] === 'room' ? decodeURIComponent(parts[2]) : undefined;
const WINDOW_S = 60;
const $ = (id) => document.getElementById(id);
$('scope').textContent = room ? `· room ${room}` : '· all rooms';

// link key "room/from→to" -> { card, charts, data, latest, reporter, peer, room }
const links = new Map();
window.ackwireDashboard = { links, events: [] };

const linkKey = (r, from, to) => `${r}/${from}→${to}`;

function setStatus(state, text) {
  $('status').dataset.state = state;
  $('status').textContent = text ?? state;
}

function summary() {
  $('empty').hidden = links.size > 0;
  $('summary').textContent = links.size ? `${links.size} link${links.size > 1 ? 's' : ''}` : 'no links yet';
}

function chart(target, title, series, scales = {}, bands = []) {
  return new uPlot({
    title, width: 420, height: 150, series: [{}, ...series], scales: { x: { time: true }, ...scales },
    axes: [{}, { size: 50 }], legend: { live: false }, bands,
  }, [[], ...series.map(() => [])], target);
}

function addLink(r, from, to, transport) {
  const key = linkKey(r, from, to);
  const card = document.createElement('section');
  card.className = 'link';
  card.dataset.link = key;
  card.innerHTML = `<h2>${room ? '' : `${r} · `}peer ${from} → peer ${to} <small>${transport ?? ''}</small></h2>
    <p class="state">link <b class="link-state">—</b> <span class="why"></span></p>
    <p class="latest">RTT <b class="rtt">—</b> · jitter <b class="jitter">—</b> · loss <b class="loss">—</b>
      <small class="loss-window">(last 64 packets)</small> · <b class="loss-all">—</b> <small>since start</small>
      · mode <b class="mode">—</b> · rate <b class="rate">—</b></p><div class="charts"></div>`;
  $('links').append(card);
  const charts = card.querySelector('.charts');
  const rttBox = document.createElement('div');
  const lossBox = document.createElement('div');
  const modeBox = document.createElement('div');
  charts.append(rttBox, lossBox, modeBox);
  const rtt = chart(rttBox, 'RTT ± jitter (ms)', [
    { label: 'RTT', stroke: '#2a7de1', width: 2 },
    { label: 'RTT + jitter', stroke: '#2a7de155' },
    { label: 'RTT − jitter', stroke: '#2a7de155' },
  ], {}, [{ series: [2, 3], fill: '#2a7de122' }]);
  const loss = chart(lossBox, 'loss % · send rate (Hz)', [
    { label: 'loss %, last 64 packets', stroke: '#d33', width: 2, scale: '%' },
    { label: 'loss %, since start', stroke: '#822', width: 1, dash: [4, 3], scale: '%' },
    { label: 'send rate', stroke: '#888', scale: 'Hz' },
  ], { '%': { range: [0, 100] }, Hz: { range: [0, 40] } });
  const mode = chart(modeBox, 'congestion mode', [
    { label: 'mode (1 = good, 0 = bad)', stroke: '#2a2', width: 2, fill: '#2a23', paths: uPlot.paths.stepped({ align: 1 }) },
  ], { y: { range: [-0.1, 1.1] } });
  const entry = { card, charts: { rtt, loss, mode }, data: { t: [], rtt: [], hi: [], lo: [], loss: [], lossAll: [], rate: [], mode: [] }, latest: undefined, state: undefined, seenAt: 0, room: r, from, to };
  links.set(key, entry);
  summary();
  return entry;
}

function dropLinks(predicate) {
  for (const [key, link] of links) {
    if (!predicate(link)) continue;
    link.card.remove();
    for (const c of Object.values(link.charts)) c.destroy();
    links.delete(key);
  }
  summary();
}

const removePeer = (r, peerId) => dropLinks((l) => l.room === r && (l.from === peerId || l.to === peerId));

// A link nobody has reported for this long is gone (its reporter closed it or vanished).
const STALE_S = 3;

function pruneStale() {
  const now = Date.now() / 1000;
  dropLinks((l) => now - l.seenAt > STALE_S);
}

function onStats(r, from, reports) {
  const t = Date.now() / 1000;
  for (const report of reports ?? []) {
    // A peer never reports a link to itself; a report that says so is not charted.
    if (typeof report.peer !== 'number' || report.peer === from) continue;
    const key = linkKey(r, from, report.peer);
    const link = links.get(key) ?? addLink(r, from, report.peer, report.transport);
    link.seenAt = t;
    // The link's state as its reporter's room member sees it, with the reason of a failure.
    link.state = report.state;
    link.card.dataset.state = report.state ?? '';
    link.card.querySelector('.link-state').textContent = `${report.state ?? '—'}${report.ice ? ` · ${report.ice}` : ''}`;
    link.card.querySelector('.why').textContent = report.state !== 'connected' ? report.reason?.message ?? '' : '';
    const s = report.stats;
    if (!s) continue;
    link.latest = s;
    const d = link.data;
    d.t.push(t); d.rtt.push(s.rtt_ms); d.hi.push(s.rtt_ms + s.jitter_ms); d.lo.push(Math.max(0, s.rtt_ms - s.jitter_ms));
    d.loss.push(s.loss_percent); d.lossAll.push(s.loss_cumulative_percent ?? null); d.rate.push(s.send_rate_pps); d.mode.push(s.mode === 'good' ? 1 : 0);
    while (d.t.length && d.t[0] < t - WINDOW_S) for (const series of Object.values(d)) series.shift();
    link.charts.rtt.setData([d.t, d.rtt, d.hi, d.lo]);
    link.charts.loss.setData([d.t, d.loss, d.lossAll, d.rate]);
    link.charts.mode.setData([d.t, d.mode]);
    const q = (cls) => link.card.querySelector(`.${cls}`);
    q('rtt').textContent = `${s.rtt_ms.toFixed(1)} ms`;
    q('jitter').textContent = `${s.jitter_ms.toFixed(1)} ms`;
    q('loss').textContent = `${s.loss_percent.toFixed(1)} %`;
    q('loss-window').textContent = `(last ${s.loss_window_packets ?? 64} packets)`;
    q('loss-all').textContent = `${(s.loss_cumulative_percent ?? 0).toFixed(1)} %`;
    q('mode').textContent = s.mode;
    q('mode').dataset.mode = s.mode;
    q('rate').textContent = `${s.send_rate_pps.toFixed(0)} Hz`;
  }
}

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
        setStatus('connected', 'live'); attempt = 0;
        break;
      case 'stats': onStats(ev.room, ev.peer_id, ev.links); break;
      case 'peer_left': removePeer(ev.room, ev.peer_id); break;
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
