// Two players over TLS: the server serves HTTPS and WSS itself (`--tls-cert`/`--tls-key`, a
// self-signed certificate `cargo xtask e2e` makes), Chromium trusts it with
// --ignore-certificate-errors, the pages pick wss: for the signalling socket, and the two
// players get their data channel open. The scripts, styles and wasm come from versioned
// URLs, immutable and brotli-compressed (Chromium offers br over https). A native peer joins
// the same server over wss, trusting that certificate with --tls-ca, and links with a page.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { artifactsDir, launchBrowser, requireEnv, startServer } from './harness.mjs';
import { joinNative } from './native.mjs';

const env = {};

before(async () => {
  env.server = await startServer(0, {
    args: ['--tls-cert', requireEnv('ACKWIRE_E2E_TLS_CERT'), '--tls-key', requireEnv('ACKWIRE_E2E_TLS_KEY')],
  });
  env.browser = await launchBrowser(['--ignore-certificate-errors']);
});

after(async () => {
  await env.browser?.close();
  await env.server?.stop();
});

/** A player page in a context of its own, recording its responses, sockets and errors. */
async function openPlayer(room) {
  const context = await env.browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const player = { page, errors: [], consoleErrors: [], responses: [], sockets: [] };
  page.on('pageerror', (err) => player.errors.push(err.message));
  page.on('console', (msg) => { if (msg.type() === 'error') player.consoleErrors.push(msg.text()); });
  page.on('response', (res) => player.responses.push(res));
  page.on('websocket', (ws) => player.sockets.push(ws.url()));
  await page.goto(`${env.server.url}/room/${room}`);
  return player;
}

/** Waits for the player's welcome; a page that never gets one says what it saw. */
async function welcomed(p) {
  try {
    await p.page.waitForFunction(() => window.ackwire?.me.id !== undefined, null, { timeout: 10000 });
  } catch (e) {
    const assets = p.responses.map((r) => `${r.status()} ${new URL(r.url()).pathname}`);
    throw new Error(`${e.message}\npage errors: ${JSON.stringify(p.errors)}\nconsole errors: ${JSON.stringify(p.consoleErrors)}\nsockets: ${p.sockets}\nresponses: ${assets.join(', ')}`);
  }
}

test('two players load the pages over https, signal over wss and open their data channel', async () => {
  assert.match(env.server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const a = await openPlayer('tls-duo');
  await welcomed(a);
  const b = await openPlayer('tls-duo');
  for (const p of [a, b]) {
    await p.page.waitForFunction(
      () => [...window.ackwire.players.values()].some((pl) => pl.state === 'connected'),
      null, { timeout: 10000 },
    );
  }
  // Positions sent unreliably by one page arrive on the other: the channel carries data.
  const bId = await b.page.evaluate(() => window.ackwire.me.id);
  await a.page.waitForFunction((id) => window.ackwire.players.get(id)?.x !== undefined, bId, { timeout: 5000 });

  const origin = new URL(env.server.url);
  for (const p of [a, b]) {
    assert.equal(new URL(p.page.url()).protocol, 'https:');
    assert.deepEqual(p.sockets.filter((u) => !u.startsWith(`wss://${origin.host}/ws`)), [],
      `signalling sockets: ${p.sockets}`);
    assert.ok(p.sockets.length >= 1, 'a signalling socket was opened');

    // Every script, style and the wasm came from a versioned URL, cacheable for a year.
    const assets = p.responses.filter((r) => /\.(js|wasm|css)$/.test(new URL(r.url()).pathname));
    const unversioned = assets.map((r) => new URL(r.url()).pathname).filter((path) => !path.startsWith('/v/'));
    assert.deepEqual(unversioned, [], 'assets loaded from unversioned URLs');
    for (const r of assets) {
      assert.equal(r.status(), 200, r.url());
      assert.equal((await r.allHeaders())['cache-control'], 'public, max-age=31536000, immutable', r.url());
    }
    const wasm = assets.filter((r) => r.url().endsWith('/pkg/ackwire_wasm_bg.wasm'));
    assert.ok(wasm.length >= 1, `the wasm bundle was fetched: ${assets.map((r) => r.url())}`);
    for (const r of wasm) assert.equal((await r.allHeaders())['content-encoding'], 'br', r.url());
    const page = p.responses.find((r) => r.url() === p.page.url());
    assert.equal((await page.allHeaders())['cache-control'], 'no-cache');

    assert.deepEqual(p.errors, []);
    assert.deepEqual(p.consoleErrors.filter((m) => /import ?map|resolve module|wasm/i.test(m)), []);
  }
  await a.page.screenshot({ path: join(artifactsDir(), 'wss.png'), fullPage: true });
  await b.page.context().close();
  await a.page.waitForFunction((id) => !window.ackwire.players.has(id), bId, { timeout: 5000 });
  await a.page.context().close();
});

test('a native peer joins over wss trusting the certificate with --tls-ca and links with a player', async () => {
  const a = await openPlayer('tls-mixed');
  await welcomed(a);
  const aId = await a.page.evaluate(() => window.ackwire.me.id);
  const native = await joinNative(`${env.server.url}/room/tls-mixed`, ['--tls-ca', requireEnv('ACKWIRE_E2E_TLS_CERT')]);
  try {
    const link = await native.waitFor('a WebRTC link', (l) => native.linkState(l, aId, 'connected'));
    assert.equal(link.transport, 'webrtc');
    await a.page.waitForFunction((id) => window.ackwire.players.get(id)?.state === 'connected', native.id, { timeout: 10000 });
    // The native's greeting arrives over the link, on the reliable channel, once.
    const greeting = `hello from native peer ${native.id}`;
    const greetings = () => a.page.evaluate(([id, t]) => window.ackwire.chat.filter((m) => m.from === `peer ${id}` && m.text === t).length, [native.id, greeting]);
    await a.page.waitForFunction(([id, t]) => window.ackwire.chat.some((m) => m.from === `peer ${id}` && m.text === t), [native.id, greeting], { timeout: 10000 });
    assert.equal(await greetings(), 1);
  } finally {
    await native.stop();
  }
  await a.page.context().close();
});
