// The npm package as a game gets it: the tarball `npm pack` made (`cargo xtask` passes its
// path in ACKWIRE_NPM_TARBALL), unpacked into a temp dir and served by a plain static file
// server on 127.0.0.1 to a page with no bundler, whose import map names `ackwire` after the
// package's own `exports`. Two such pages join one room on the real signal server (another
// origin: it allows the static server's with --allowed-origins) and exchange a string and a
// Uint8Array both ways, with no console errors and nothing loaded from anywhere but the package.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { after, before, test } from 'node:test';
import { launchBrowser, requireEnv, startServer } from './harness.mjs';

const MOUNT = '/node_modules/ackwire/';
const TYPES = { '.js': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };

/** The game's page: joins from the package, sends its two messages to each peer it links to. */
const page = (entry) => `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>ackwire from npm</title>
<script type="importmap">${JSON.stringify({ imports: { ackwire: MOUNT + entry } })}</script>
<script type="module">
  import { join } from 'ackwire';
  const params = new URLSearchParams(location.search);
  const name = params.get('name');
  // Resolves with the first two messages from the other player, rejects if joining fails.
  window.exchanged = join(params.get('room'), {
    app: 'npm-package-test', version: 1, channels: ['unreliable-sequenced', 'reliable-ordered'],
  }).then((room) => new Promise((resolve, reject) => {
    window.room = room;
    const received = [];
    room.addEventListener('connected', (e) => {
      try {
        room.send(e.peer, 1, 'hello from ' + name);
        room.send(e.peer, 1, new Uint8Array([0, 1, 127, 128, 255, name.charCodeAt(0)]));
      } catch (err) {
        reject(err);
      }
    });
    room.addEventListener('message', (e) => {
      received.push({ channel: e.channel, isBytes: e.data instanceof Uint8Array, bytes: Array.from(e.data), text: e.text });
      if (received.length === 2) resolve(received);
    });
  }));
</script>
`;

/**
 * Serves `root` (the unpacked package) under MOUNT and the page at `/`, on 127.0.0.1; records
 * every path asked for.
 */
async function staticServer(root, html) {
  const asked = [];
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    asked.push(path);
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
      return;
    }
    const file = normalize(join(root, path.slice(MOUNT.length)));
    if (!path.startsWith(MOUNT) || !file.startsWith(root)) {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = readFileSync(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${server.address().port}`, asked, close: () => server.close() };
}

const env = {};
before(async () => {
  env.dir = mkdtempSync(join(tmpdir(), 'ackwire-npm-'));
  execFileSync('tar', ['-xzf', requireEnv('ACKWIRE_NPM_TARBALL'), '-C', env.dir]);
  env.root = join(env.dir, 'package');
  env.manifest = JSON.parse(readFileSync(join(env.root, 'package.json'), 'utf8'));
  // The entry point a resolver takes for `import ... from 'ackwire'` in a browser.
  const entry = env.manifest.exports['.'].default.replace(/^\.\//, '');
  env.static = await staticServer(env.root, page(entry));
  env.server = await startServer(0, { args: ['--allowed-origins', env.static.origin] });
  env.browser = await launchBrowser();
});
after(async () => {
  await env.browser?.close();
  await env.server?.stop();
  env.static?.close();
  if (env.dir) rmSync(env.dir, { recursive: true, force: true });
});

test('two plain pages load ackwire from the npm tarball, join a room and exchange text and bytes both ways', { timeout: 60000 }, async () => {
  assert.equal(env.manifest.name, 'ackwire');
  assert.equal(env.manifest.type, 'module');
  const room = `${env.server.url}/room/npm`;
  const players = [];
  // The first error either page reports ends the wait with it (a refused WebSocket, say, on
  // which join() would keep retrying).
  let fail;
  const failed = new Promise((_, reject) => { fail = reject; });
  for (const name of ['a', 'b']) {
    const context = await env.browser.newContext();
    const p = await context.newPage();
    const problems = [];
    const requests = [];
    const problem = (text) => { problems.push(text); fail(new Error(`${name}: ${text}`)); };
    p.on('pageerror', (err) => problem(`page error: ${err.message}`));
    p.on('console', (m) => { if (m.type() === 'error') problem(`console error: ${m.text()}`); });
    p.on('request', (r) => requests.push(r.url()));
    await p.goto(`${env.static.origin}/?${new URLSearchParams({ name, room })}`);
    players.push({ name, page: p, problems, requests });
  }

  const exchanged = Promise.all(players.map((p) => p.page.evaluate(() => window.exchanged)));
  const received = await Promise.race([exchanged, failed]);
  for (const [i, { name }] of players.entries()) {
    const other = players[1 - i].name;
    assert.deepEqual(received[i], [
      { channel: 1, isBytes: true, bytes: [...new TextEncoder().encode(`hello from ${other}`)], text: `hello from ${other}` },
      { channel: 1, isBytes: true, bytes: [0, 1, 127, 128, 255, other.charCodeAt(0)], text: received[i][1].text },
    ], `${name} got ${other}'s string, then its bytes`);
  }

  // Everything came from the package: the JS API, the bindings and the wasm, nothing else.
  for (const file of ['ackwire.js', 'pkg/ackwire_wasm.js', 'pkg/ackwire_wasm_bg.wasm']) {
    assert.ok(env.static.asked.includes(MOUNT + file), `${file} was served from the package`);
  }
  for (const { name, page: p, problems, requests } of players) {
    assert.deepEqual(requests.filter((url) => !url.startsWith(env.static.origin)), [], `${name} loaded nothing from elsewhere`);
    await p.evaluate(() => window.room.close());
    assert.deepEqual(problems, [], `${name}: no errors`);
  }
});
