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
  await dash.page.screenshot({ path: join(artifactsDir(), 'dashboard.png'), fullPage: true });

  await a.page.context().close();
  await dash.page.waitForFunction((id) => ![...document.querySelectorAll('section.link')]
    .some((c) => c.dataset.link.includes(`/${id}→`) || c.dataset.link.endsWith(`→${id}`)), aId, { timeout: 5000 });
  await b.page.waitForFunction((id) => !window.ackwire.players.has(id), aId, { timeout: 5000 });
  assert.deepEqual([...dash.errors, ...b.errors], []);
  await b.page.context().close();
  await dash.page.context().close();
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
  await new Promise((r) => setTimeout(r, 2000));
  const later = await shown(dash, 'slow', slowId, otherId);
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
