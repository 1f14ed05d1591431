// The rollback game (examples/rollback) plays between browsers and a native program on the
// same Rust code: two Chromium pages run its player compiled to wasm32 (`web/index.html`,
// served with `--static /rollback=examples/rollback/web`) and one native `rollback-player`
// runs it natively, in one mesh room, every link through the core's emulator at 10 % loss
// and 20 ± 10 ms each way. ggrs sessions on `ackwire::rollback` play 600 frames at 60 Hz with
// desync detection on (every 10 frames); then every frame all three had settled has the same
// checksum on each, bit for bit, and ggrs rolled back on the way.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { launchBrowser, requireEnv, startServer } from './harness.mjs';
import { jsonLines } from './native.mjs';

const FRAMES = 600;
const PLAYERS = 3;
const LOSS = 10;
const env = {};

before(async () => {
  env.server = await startServer(0, { args: ['--static', `/rollback=${requireEnv('ACKWIRE_ROLLBACK_WEB_DIR')}`] });
  env.browser = await launchBrowser();
});
after(async () => {
  await env.browser?.close();
  await env.server?.stop();
});

test('two Chromium pages and a native player roll back through 10 % loss and agree on every settled frame', async () => {
  const room = 'rollback';
  const child = spawn(requireEnv('ACKWIRE_ROLLBACK_PLAYER_BIN'),
    [`${env.server.url}/room/${room}`, '--players', String(PLAYERS), '--frames', String(FRAMES), '--loss', String(LOSS)],
    { env: { ...process.env, RUST_LOG: 'warn', NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const native = jsonLines(child);
  try {
    const pages = [];
    for (const seed of [2, 3]) {
      const page = await (await env.browser.newContext()).newPage();
      const errors = [];
      page.on('pageerror', (err) => errors.push(err.message));
      page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
      await page.goto(`${env.server.url}/rollback/?room=${room}&players=${PLAYERS}&frames=${FRAMES}&loss=${LOSS}&seed=${seed}`);
      pages.push({ page, errors });
    }
    await native.waitFor('the mesh of three', (l) => l.type === 'linked' || l.type === 'failed', 30000);
    const done = await native.waitFor('600 frames played', (l) => l.type === 'done' || l.type === 'failed', 90000);
    assert.equal(done.type, 'done', JSON.stringify(done));
    const states = [];
    for (const { page, errors } of pages) {
      await page.waitForFunction(() => window.rollback?.done || window.rollback?.error, null, { timeout: 60000 });
      const state = await page.evaluate(() => window.rollback);
      assert.equal(state.error, undefined, `a page's session failed: ${state.error}`);
      assert.deepEqual(errors, []);
      states.push(state);
    }
    const players = [
      { name: 'native', me: done.me, settled: done.settled, desyncs: done.desyncs, rollbacks: done.rollbacks, checksums: done.checksums },
      ...states.map((s, i) => ({ name: `page ${i + 1}`, ...s })),
    ];
    for (const p of players) assert.deepEqual(p.desyncs, [], `${p.name}: ggrs found desyncs`);
    const settled = Math.min(...players.map((p) => p.settled));
    assert.ok(settled > FRAMES / 2, `settled up to frame ${settled}`);
    for (let frame = 0; frame <= settled; frame++) {
      const sums = players.map((p) => p.checksums[frame]);
      assert.ok(sums[0] !== undefined && sums.every((s) => s === sums[0]), `frame ${frame}: ${sums.join(' ')}`);
    }
    const rollbacks = players.reduce((sum, p) => sum + p.rollbacks, 0);
    assert.ok(rollbacks > 0, 'predictions missed and were rolled back');
    console.log(`${FRAMES} frames at 60 Hz, ${LOSS} % loss: frames 0..=${settled} identical on the native `
      + `and both pages, no desync (checked every 10 frames), rollbacks ${players.map((p) => `${p.name} ${p.rollbacks}`).join(', ')}`);
  } finally {
    child.kill('SIGTERM');
  }
});
