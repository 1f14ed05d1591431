// Two signal servers sharing rooms through a Redis of the test's own (docs/scale-out.md):
// players of one room on different servers link over WebRTC, chat exactly once, and the
// room's dashboard on either server charts both directions.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { after, before, test } from 'node:test';
import { launchBrowser, openPage, sayInChat, startServer } from './harness.mjs';

/** A TCP port free right now on loopback. */
const freeTcpPort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

/** `redis-server` (installed by `cargo xtask setup`) on a free port, without persistence. */
async function startRedis() {
  const port = await freeTcpPort();
  const child = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`redis-server not ready:\n${log}`)), 10000);
    child.stdout.on('data', (chunk) => {
      log += chunk;
      if (log.includes('Ready to accept connections')) { clearTimeout(timer); resolve(); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`redis-server exited (${code}):\n${log}`)); });
  });
  return { url: `redis://127.0.0.1:${port}/`, stop: () => child.kill('SIGKILL') };
}

/** Resolves once the server reaches Redis (`/healthz` says ok). */
async function healthy(server) {
  for (let i = 0; i < 200; i++) {
    if ((await fetch(`${server.url}/healthz`)).ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`${server.url} never reached Redis`);
}

const ctx = {};
before(async () => {
  ctx.redis = await startRedis();
  const args = ['--redis', ctx.redis.url];
  ctx.one = await startServer(0, { args });
  ctx.two = await startServer(0, { args });
  await Promise.all([healthy(ctx.one), healthy(ctx.two)]);
  ctx.browser = await launchBrowser();
});
after(async () => {
  await ctx.browser?.close();
  await ctx.one?.stop();
  await ctx.two?.stop();
  ctx.redis?.stop();
});

const on = (server, path) => openPage({ server, browser: ctx.browser }, path, { width: 1400, height: 900 });
const peerId = (p) => p.page.waitForFunction(() => window.ackwire?.me.id).then((h) => h.jsonValue());
const chatsFrom = (p, id, text) => p.page.evaluate(
  ([from, t]) => window.ackwire.chat.filter((m) => m.from === `peer ${from}` && m.text === t).length, [id, text],
);

test('players of one room on two servers link, chat exactly once, and both dashboards chart both links', async () => {
  const dashOne = await on(ctx.one, '/room/across/dashboard');
  const dashTwo = await on(ctx.two, '/room/across/dashboard');
  const started = Date.now();
  const a = await on(ctx.one, '/room/across');
  const aId = await peerId(a);
  const b = await on(ctx.two, '/room/across');
  const bId = await peerId(b);
  for (const p of [a, b]) {
    await p.page.waitForFunction(
      () => [...window.ackwire.players.values()].some((pl) => pl.state === 'connected'),
      null, { timeout: 10000 },
    );
  }
  console.log(`across two servers: both pages connected ${Date.now() - started} ms after the first opened`);

  for (const [from, fromId, to] of [[a, aId, b], [b, bId, a]]) {
    const text = `hello from ${fromId} across servers`;
    await sayInChat(from.page, text);
    await to.page.waitForFunction(([id, t]) => window.ackwire.chat.some((m) => m.from === `peer ${id}` && m.text === t), [fromId, text], { timeout: 5000 });
    assert.equal(await chatsFrom(to, fromId, text), 1, 'delivered once');
  }

  const keys = [`across/${aId}→${bId}`, `across/${bId}→${aId}`].sort();
  for (const dash of [dashOne, dashTwo]) {
    const rows = await dash.page.waitForFunction((n) => {
      const rs = [...document.querySelectorAll('#matrix tbody tr')];
      return rs.length === n && rs.every((r) => r.children[3].textContent !== '—') && rs.map((r) => r.dataset.link);
    }, keys.length, { timeout: 10000 }).then((h) => h.jsonValue());
    assert.deepEqual(rows.sort(), keys);
  }
  assert.deepEqual([...a.errors, ...b.errors, ...dashOne.errors, ...dashTwo.errors], []);
});
