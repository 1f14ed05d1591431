// The dashboard charts each link live from the stats the players report, and reflects the
// link emulator settings given in a player's URL.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { artifactsDir, openPage, startServer, useServerAndBrowser } from './harness.mjs';

const env = useServerAndBrowser();

const open = (path) => openPage(env, path, { width: 1400, height: 900 });

const peerId = (p) => p.page.waitForFunction(() => window.ackwire?.me.id).then((h) => h.jsonValue());

/** The latest values the dashboard shows for the link `from → to`. */
const shown = (dash, room, from, to) => dash.page.evaluate((key) => {
  const card = document.querySelector(`section.link[data-link="${key}"]`);
  if (!card) return undefined;
  const text = (cls) => card.querySelector(`.${cls}`).textContent;
  const latest = window.ackwireDashboard.links.get(key)?.latest;
  return {
    rtt: parseFloat(text('rtt')), loss: parseFloat(text('loss')), mode: text('mode'),
    lossAll: parseFloat(text('loss-all')), lossWindow: text('loss-window'),
    canvases: card.querySelectorAll('canvas').length,
    resolved: latest ? latest.packets_acked + latest.packets_lost : 0,
  };
}, `${room}/${from}→${to}`);

async function waitShown(dash, room, from, to, predicate, timeout) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    last = await shown(dash, room, from, to);
    if (last && predicate(last)) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.fail(`dashboard link ${from}→${to} in ${room}: last shown ${JSON.stringify(last)}`);
}

test('a lossy player shows its loss on the room dashboard; closing it removes its links', async () => {
  const dash = await open('/room/lossy/dashboard');
  const a = await open('/room/lossy?loss=10&seed=3');
  const aId = await peerId(a);
  const b = await open('/room/lossy');
  const bId = await peerId(b);
  // 10% each way on A's side. The core measures loss over its last 64 resolved packets; once
  // a full window has resolved, the figure is a 64-packet sample of a 10% process (sd 3.75
  // points): 2..25% holds with overwhelming probability, and a lossless link (0%) fails it.
  for (const [from, to] of [[aId, bId], [bId, aId]]) {
    const s = await waitShown(dash, 'lossy', from, to, (v) => v.resolved >= 80, 20000);
    assert.ok(s.loss >= 2 && s.loss <= 25, `link ${from}→${to} shows ${s.loss}% loss`);
    // Beside it, the steadier figure over every packet since the start, the window named.
    assert.ok(s.lossAll >= 2 && s.lossAll <= 25, `link ${from}→${to} shows ${s.lossAll}% since start`);
    assert.equal(s.lossWindow, '(last 64 packets)');
    assert.equal(s.canvases, 3, 'RTT, loss/rate and mode charts');
  }
  // The table first, with the lossy player's direction opened to its charts.
  await dash.page.click(`#matrix tr[data-link="lossy/${aId}→${bId}"]`);
  await dash.page.screenshot({ path: join(artifactsDir(), 'dashboard.png'), fullPage: true });

  await a.page.context().close();
  await dash.page.waitForFunction((id) => ![...document.querySelectorAll('section.link')]
    .some((c) => c.dataset.link.includes(`/${id}→`) || c.dataset.link.endsWith(`→${id}`)), aId, { timeout: 5000 });
  await b.page.waitForFunction((id) => !window.ackwire.players.has(id), aId, { timeout: 5000 });
  assert.deepEqual([...dash.errors, ...b.errors], []);
  await b.page.context().close();
  await dash.page.context().close();
});

test('the link table has one row per directed link, pairs side by side, with who emulates what; a row opens its labelled charts and exports its series', async () => {
  const dash = await open('/room/table/dashboard');
  const a = await open('/room/table?loss=10&latency=20');
  const aId = await peerId(a);
  const b = await open('/room/table');
  const bId = await peerId(b);
  const c = await open('/room/table');
  const cId = await peerId(c);
  const keys = [[aId, bId], [aId, cId], [bId, aId], [bId, cId], [cId, aId], [cId, bId]].map(([f, t]) => `table/${f}→${t}`);
  // Six directed links, once each has stats, in pair order: a pair's two directions adjacent.
  const rows = await dash.page.waitForFunction((n) => {
    const rs = [...document.querySelectorAll('#matrix tbody tr')];
    return rs.length === n && rs.every((r) => r.children[3].textContent !== '—')
      && rs.map((r) => ({ link: r.dataset.link, cells: [...r.children].map((td) => td.textContent) }));
  }, keys.length, { timeout: 20000 }).then((h) => h.jsonValue());
  assert.deepEqual(rows.map((r) => r.link).sort(), [...keys].sort());
  const pair = (link) => link.split('/')[1].split('→').map(Number).sort((x, y) => x - y).join('-');
  for (let i = 0; i < rows.length; i += 2) assert.equal(pair(rows[i].link), pair(rows[i + 1].link), JSON.stringify(rows.map((r) => r.link)));
  // The emulation column names the player who runs it, in words: the reporter's · the peer's.
  const emulation = (from, to) => rows.find((r) => r.link === `table/${from}→${to}`).cells[8];
  assert.equal(emulation(aId, bId), '20 ms each way, 10 % loss · —');
  assert.equal(emulation(bId, aId), '— · 20 ms each way, 10 % loss');
  assert.equal(emulation(bId, cId), '— · —');
  for (const r of rows) assert.match(r.cells[7], /packets\/s$/);

  // The grid: the room at a glance, a cell per directed link (none on the diagonal), each with
  // its RTT; a cell opens its card too.
  const grid = await dash.page.$eval('table.grid[data-room="table"]', (t) => ({
    links: [...t.querySelectorAll('td[data-link]')].map((td) => td.dataset.link).sort(),
    rtts: [...t.querySelectorAll('td[data-link]')].map((td) => td.textContent),
  }));
  assert.deepEqual(grid.links, [...keys].sort());
  for (const text of grid.rtts) assert.match(text, /^\d+ ms$/);
  await dash.page.click(`table.grid td[data-link="table/${bId}→${cId}"]`);
  assert.equal(await dash.page.$eval(`section.link[data-link="table/${bId}→${cId}"]`, (card) => card.hidden), false);

  // Cards start closed; a row opens its card, whose charts have labelled axes on their scales.
  const key = `table/${aId}→${bId}`;
  assert.equal(await dash.page.$eval(`section.link[data-link="${key}"]`, (card) => card.hidden), true);
  await dash.page.click(`#matrix tr[data-link="${key}"]`);
  const opened = await dash.page.$eval(`section.link[data-link="${key}"]`, (card) => ({
    hidden: card.hidden, visibleCanvases: [...card.querySelectorAll('canvas')].filter((cv) => cv.offsetWidth > 0).length,
  }));
  assert.deepEqual(opened, { hidden: false, visibleCanvases: 3 });
  const axes = await dash.page.evaluate((k) => {
    const { charts } = window.ackwireDashboard.links.get(k);
    const labels = (u) => u.axes.slice(1).filter((ax) => ax.show !== false).map((ax) => `${ax.scale}:${ax.label}`);
    return { rtt: labels(charts.rtt), loss: labels(charts.loss), threshold: charts.rtt.series[4].label, mode: charts.mode.series.slice(1).map((s) => s.label) };
  }, key);
  assert.deepEqual(axes, {
    rtt: ['y:ms'], loss: ['%:loss %', 'pps:packets/s'], threshold: 'bad above 250 ms',
    mode: ['good (30 packets/s)', 'bad (10 packets/s)'],
  });
  // Its series downloads as CSV, one line per report.
  const [download] = await Promise.all([
    dash.page.waitForEvent('download'),
    dash.page.click(`section.link[data-link="${key}"] button[data-format="csv"]`),
  ]);
  const csv = await download.createReadStream().then(async (stream) => {
    let text = '';
    for await (const chunk of stream) text += chunk;
    return text;
  });
  const lines = csv.trim().split('\n');
  assert.equal(lines[0], 'time,rtt_ms,rtt_plus_jitter_ms,rtt_minus_jitter_ms,loss_percent,loss_cumulative_percent,send_rate_pps,mode');
  assert.ok(lines.length >= 2, csv);
  assert.equal(download.suggestedFilename(), `ackwire-table-${aId}-to-${bId}.csv`);
  // The five-minute window is a choice away.
  await dash.page.selectOption('#window', '300');
  assert.deepEqual([...dash.consoleErrors, ...dash.errors, ...a.errors, ...b.errors, ...c.errors], []);
  for (const p of [a, b, c, dash]) await p.page.context().close();
});

test('150 ms of emulated latency keeps the link in bad mode while a clean link turns good', async () => {
  const dash = await open('/dashboard');
  const slow = await open('/room/slow?latency=150');
  const slowId = await peerId(slow);
  const other = await open('/room/slow');
  const otherId = await peerId(other);
  const clean1 = await open('/room/clean');
  const c1 = await peerId(clean1);
  const clean2 = await open('/room/clean');
  const c2 = await peerId(clean2);
  // The core starts in bad mode and turns good after 4 s of good conditions (its default
  // recovery time); a clean loopback link must get there, a 300 ms RTT link must not.
  await waitShown(dash, 'clean', c1, c2, (s) => s.mode === 'good', 15000);
  const bad = await waitShown(dash, 'slow', slowId, otherId, (s) => s.rtt > 250, 15000);
  assert.equal(bad.mode, 'bad');
  // Still bad 40 resolved packets later (at its 10 Hz, about the 4 s a clean link needs).
  const later = await waitShown(dash, 'slow', slowId, otherId, (s) => s.resolved >= bad.resolved + 40, 15000);
  assert.equal(later.mode, 'bad', `link with RTT ${later.rtt} ms`);
  for (const p of [slow, other, clean1, clean2, dash]) await p.page.context().close();
});

test('with an admin token set, the all-rooms dashboard says how to get in and goes live with #token=', async () => {
  const server = await startServer(0, { args: ['--admin-token', 'e2e-admin-secret'] });
  const guarded = { browser: env.browser, server };
  try {
    const player = await openPage(guarded, '/room/guarded');
    await peerId(player);
    const stranger = await openPage(guarded, '/dashboard');
    await stranger.page.waitForFunction(() => document.getElementById('status').dataset.state === 'failed', null, { timeout: 5000 });
    const said = await stranger.page.textContent('#status');
    assert.match(said, /admin token/);
    assert.match(said, /#token=/);
    const admin = await openPage(guarded, '/dashboard#token=e2e-admin-secret');
    await admin.page.waitForFunction(() => document.getElementById('status').dataset.state === 'connected', null, { timeout: 5000 });
    // A room's own dashboard needs no token.
    const room = await openPage(guarded, '/room/guarded/dashboard');
    await room.page.waitForFunction(() => document.getElementById('status').dataset.state === 'connected', null, { timeout: 5000 });
    assert.deepEqual([...player.errors, ...stranger.errors, ...admin.errors, ...room.errors], []);
    for (const p of [player, stranger, admin, room]) await p.page.context().close();
  } finally {
    await server.stop();
  }
});
