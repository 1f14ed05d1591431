// The example game (examples/pong) plays a round: its native host (`pong-host`, on the
// `ackwire` crate) against players on the public APIs alone, served by the signal server with
// `--static /pong=examples/pong/web`: the JS page (web/ackwire.js) in Chromium, in Firefox and
// in WebKitGTK (over the host's WebSocket: it has no WebRTC), and the same client in Rust
// compiled to wasm32 (`rust.html`) in Chromium. Each round is
// first to 2 between a paddle that plays by itself (`?auto=track`) and one that misses on
// purpose (`?auto=miss`), so its winner and score are known before it starts.
//
// Shown for each round: the players' inputs reach the host (its `paddles` lines), nearly all
// before the tick they are stamped with, the host's
// snapshots reach every page (each page's history of ball positions matches the host's
// `tick` lines, bit for bit, and the ball moves), and the score is decided the same on the
// host and on every page, with no console errors. Firefox needs the veth "LAN" firefox.test.mjs
// describes.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, afterEach, before, test } from 'node:test';
import { join } from 'node:path';
import { artifactsDir, lanInNamespace, launchBrowser, launchFirefox, printJoinMedians, requireEnv, startServer } from './harness.mjs';
import { jsonLines } from './native.mjs';
import { launchWebKit } from './webkit.mjs';

const POINTS = 2;
/** Both autoplayers' targets when missing: the paddle's centre at the top or the bottom. */
const MISS_TARGETS = [40, 440];
const env = {};

before(async () => {
  env.removeLan = lanInNamespace();
  env.server = await startServer(0, { args: ['--static', `/pong=${requireEnv('ACKWIRE_PONG_WEB_DIR')}`] });
  env.chromium = await launchBrowser();
});
// Each test's pages end with it: a page whose host has stopped plays on, rejoining and drawing
// every frame, and the next tests' pages and hosts then shared the two cores with all of them
// (by the file's last test, seven Chromium pages, a Firefox one and a WebKit one).
afterEach(closePlayers);
after(async () => {
  await env.webkit?.close();
  await env.firefox?.close();
  await env.chromium?.close();
  await env.server?.stop();
  env.removeLan?.();
});

/**
 * The host in `room`, every tick logged, on every interface as a server listens: its ICE-lite
 * WebRTC sends no checks, so it must offer addresses Firefox pairs with (the LAN, not loopback).
 */
async function startHost(room, extra = [], { log = 'warn' } = {}) {
  const child = spawn(requireEnv('ACKWIRE_PONG_HOST_BIN'),
    [`${env.server.url}/pong/?room=${room}`, '--points', String(POINTS), '--bind', '0.0.0.0:0', '--ticks', ...extra],
    { env: { ...process.env, RUST_LOG: log, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const host = jsonLines(child);
  /** Its log (stderr), line by line as it comes: `host.logged(re)` resolves at the first match. */
  let stderr = '';
  const waiting = [];
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
    for (const w of waiting.splice(0)) if (!w.check()) waiting.push(w);
  });
  host.logged = (re, count = 1, timeout = 30000) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the host did not log ${re} ${count} times in ${timeout} ms:\n${stderr}`)), timeout);
    const w = {
      check: () => {
        const done = stderr.split('\n').filter((l) => re.test(l)).length >= count;
        if (done) { clearTimeout(timer); resolve(stderr); }
        return done;
      },
    };
    if (!w.check()) waiting.push(w);
  });
  await host.waitFor('joined', (l) => l.type === 'joined', 15000);
  return host;
}

/** How to close each page the running test opened (`closePlayers`). */
const opened = [];

/** Closes the pages the test that just ended opened (the browsers stay up for the next). */
async function closePlayers() {
  for (const close of opened.splice(0)) await close().catch(() => {});
}

/**
 * Opens `path` in Chromium (a context of its own) or Firefox, collecting uncaught errors and
 * console errors; `wait(fn, arg)` resolves once `fn(arg)` is truthy in the page. The page is
 * closed as its test ends.
 */
async function player(browser, path, name) {
  const errors = [];
  let page;
  if (browser === 'firefox') {
    env.firefox ??= await launchFirefox();
    page = await env.firefox.newPage();
    opened.push(() => page.close());
  } else {
    const context = await env.chromium.newContext();
    opened.push(() => context.close());
    page = await context.newPage();
  }
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  const sockets = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  await page.goto(env.server.url + path);
  const wait = (fn, arg, timeout = 20000) => (browser === 'firefox'
    ? page.waitForFunction(fn, { timeout }, arg)
    : page.waitForFunction(fn, arg, { timeout }));
  // As JSON: WebDriver BiDi hands an object met twice (the score in `results` and in `score`)
  // back only once.
  const state = async () => JSON.parse(await page.evaluate(() => JSON.stringify(window.pong)));
  return { page, errors, path, name, wait, state, sockets };
}

/**
 * Opens `path` in WebKitGTK (one window: one WebKit player at a time), as `player` does in the
 * others. Its driver has no console and no script that runs before the page's: errors are
 * collected from the moment the page has loaded (one before that shows as a page that never
 * gets its side).
 */
async function webkitPlayer(path, name) {
  env.webkit ??= await launchWebKit();
  const webkit = env.webkit;
  // Its one window leaves the game as the test ends.
  opened.push(() => webkit.goto('about:blank'));
  await webkit.goto(env.server.url + path);
  await webkit.evaluate(`window.__errors = [];
    addEventListener('error', (e) => __errors.push(e.message));
    addEventListener('unhandledrejection', (e) => __errors.push(String(e.reason)));`);
  const wait = (fn, arg, timeout = 20000) => webkit.waitFor(`return (${fn})(arguments[0]);`, { timeout }, arg);
  const state = async () => JSON.parse(await webkit.evaluate('return JSON.stringify(window.pong)'));
  const page = {
    screenshot: async ({ path: file }) => writeFileSync(file, Buffer.from(await webkit.screenshot(), 'base64')),
    evaluate: (fn) => webkit.evaluate(`return (${fn})();`),
  };
  const p = { page, errors: [], path, name, wait, state, sockets: [] };
  // Read when the round's checks read `errors`: after the round.
  Object.defineProperty(p, 'errors', { get: () => p.collected ?? [] });
  p.collectErrors = async () => { p.collected = await webkit.evaluate('return window.__errors'); };
  return p;
}

/** Opens `path` and waits until the host gave it `side`; `name` names its screenshot. */
async function seated(browser, path, side, name) {
  const p = browser === 'webkit' ? await webkitPlayer(path, name) : await player(browser, path, name);
  await p.wait((s) => window.pong?.side === s, side);
  return p;
}

/**
 * Plays one round to its end and checks everything the file's header promises; `winner` and
 * `loser` are the seated players, `watchers` every other page.
 */
async function playRound(host, { winner, loser, watchers = [], timely = 0.8 }) {
  const pages = [winner, loser, ...watchers];
  const over = await host.waitFor('the round decided', (l) => l.type === 'over', 60000);
  const winnerSide = (await winner.state()).side;
  const story = () => host.lines.filter((l) => l.type !== 'tick').map((l) => JSON.stringify(l)).join('\n');
  assert.equal(over.winner, winnerSide, `the tracking paddle wins; the host said:\n${story()}`);
  assert.deepEqual(over.score, winnerSide === 'left' ? [POINTS, 0] : [0, POINTS], `the missing paddle never scores; the host said:\n${story()}`);
  const goals = host.lines.filter((l) => l.type === 'goal');
  assert.equal(goals.length, POINTS - 1, 'a goal for each point but the last (the last ends the round)');

  // Inputs reached the host: both sides' targets moved it, the missing one's to where it aims.
  const paddles = host.lines.filter((l) => l.type === 'paddles' && l.left.peer !== null && l.right.peer !== null);
  const last = paddles.at(-1);
  const loserSide = winnerSide === 'left' ? 'right' : 'left';
  assert.ok(last[winnerSide].inputs > 0 && last[loserSide].inputs > 0, `inputs from both: ${JSON.stringify(last)}`);
  assert.ok(paddles.some((l) => MISS_TARGETS.includes(l[loserSide].target)), 'the missing paddle\'s targets reached the host');
  // The tracker's target is off the middle only while the ball comes to it (a second or less
  // of a short round, which the paddles lines' one sample a second can miss): its paddle, in
  // every tick the host logged, is what shows its targets arrived.
  const winnerPaddle = host.lines.filter((l) => l.type === 'tick').map((l) => l.paddles[winnerSide === 'left' ? 0 : 1]);
  assert.ok(winnerPaddle.some((y) => Math.abs(y - 240) > 1), `the tracking paddle's targets reached the host: its paddle's extremes ${Math.min(...winnerPaddle)}..${Math.max(...winnerPaddle)}`);
  // Stamped with the tick they reach the host by (room.inputTick, Room::input_tick): nearly all
  // came in time (the first half second's, before the clock was synced, are applied at once).
  for (const side of [winnerSide, loserSide]) {
    assert.ok(last[side].timely >= timely * last[side].inputs, `${side}: ${last[side].timely} of ${last[side].inputs} inputs in time for their tick`);
  }

  // Every page: the round's result, and the host's own ball positions.
  const ticks = new Map(host.lines.filter((l) => l.type === 'tick').map((l) => [l.tick, l.ball]));
  for (const p of pages) {
    await p.wait(() => window.pong.results.length > 0, null, 10000);
    await p.collectErrors?.();
    const s = await p.state();
    assert.deepEqual(s.results[0], { winner: over.winner, score: over.score }, `${p.path}: the result`);
    const matched = s.history.filter(([tick]) => ticks.has(tick));
    assert.ok(matched.length >= 10, `${p.path}: ${matched.length} snapshots matched the host's ticks`);
    for (const [tick, x, y] of matched) {
      const [hx, hy] = ticks.get(tick);
      assert.ok(Math.fround(hx) === x && Math.fround(hy) === y, `${p.path}: tick ${tick} at ${x},${y}; the host had ${hx},${hy}`);
    }
    assert.ok(new Set(s.history.map(([, x]) => x)).size > 10, `${p.path}: the ball moves`);
    // Drawn between the host's states, on the host's clock (ackwire::sync::Snapshots in Rust,
    // Snapshots in ackwire.js).
    assert.ok(s.interpolated > s.snapshots / 2, `${p.path}: ${s.interpolated} frames drawn between two states (${s.snapshots} states)`);
    const shot = join(artifactsDir(), `pong-${p.name}.png`);
    await p.page.screenshot({ path: shot });
    console.log(`${p.path}: ${s.side}, ${s.snapshots} snapshots, ${s.interpolated} frames drawn between two, ${s.sent} inputs sent, ${matched.length} checked against the host`);
    assert.deepEqual(p.errors, [], `${p.path}: no errors`);
  }
  console.log(`round over: ${over.winner} ${over.score.join('-')}; inputs the host took: ${JSON.stringify(last)}`);
}

test('the socket script docs/api.md shows is the one the example game\'s page runs', () => {
  const root = join(requireEnv('ACKWIRE_WEB_DIR'), '..');
  const script = (text) => /<script>\s*(window\.ackwireSocket[\s\S]*?)<\/script>/.exec(text)?.[1].replace(/\s+/g, ' ').trim();
  const documented = script(readFileSync(join(root, 'docs/api.md'), 'utf8'));
  assert.ok(documented, 'docs/api.md shows the script');
  assert.equal(script(readFileSync(join(root, 'examples/pong/web/index.html'), 'utf8')), documented);
});

test('a Chromium player and a Firefox player on the JS API play a round against the native host: inputs reach it, state reaches both, the score is decided', async () => {
  const host = await startHost('js-round');
  try {
    const started = Date.now();
    // Sides go by the order links connect: the first page is left.
    const chromium = await seated('chromium', '/pong/?room=js-round&auto=track', 'left', 'chromium');
    const firefox = await seated('firefox', '/pong/?room=js-round&auto=miss', 'right', 'firefox');
    await playRound(host, { winner: chromium, loser: firefox });
    // Both browsers have WebTransport, and the host serves it: neither needed WebRTC.
    const links = host.lines.filter((l) => l.type === 'link' && l.state === 'connected');
    assert.deepEqual(links.map((l) => l.transport), ['webtransport', 'webtransport'], JSON.stringify(links));
    // The page's head opened the room's socket before its module ran, and join() adopted it:
    // the only one the page opened.
    const timeline = await chromium.page.evaluate(() => window.pong.timeline);
    assert.ok(timeline.connect < timeline.script, `socket opening at ${timeline.connect} ms, the module at ${timeline.script} ms`);
    assert.equal(chromium.sockets.filter((u) => new URL(u).pathname === '/ws').length, 1, chromium.sockets.join('\n'));
    console.log(`Chromium vs Firefox: decided ${Date.now() - started} ms after the first page opened`);
  } finally {
    await host.stop();
  }
});

test('the Rust client compiled to wasm32 plays a round against a JS player and the host; a third page watches', async () => {
  const host = await startHost('rust-round');
  try {
    const rust = await seated('chromium', '/pong/rust.html?room=rust-round&auto=track', 'left', 'rust');
    const js = await seated('chromium', '/pong/?room=rust-round&auto=miss', 'right', 'js');
    const watcher = await seated('chromium', '/pong/?room=rust-round', 'spectator', 'watcher');
    await playRound(host, { winner: rust, loser: js, watchers: [watcher] });
  } finally {
    await host.stop();
  }
});

test('with the host\'s WebTransport port blocked, players fall back to WebRTC within the member\'s bound and play a round', async () => {
  // This file's own network namespace: a firewall that drops UDP to the port, and nothing else.
  const port = '4433';
  const rule = ['INPUT', '-p', 'udp', '--dport', port, '-j', 'DROP'];
  execFileSync('iptables', ['-I', ...rule]);
  const host = await startHost('blocked', ['--webtransport-port', port]);
  try {
    const started = Date.now();
    const tracker = await seated('chromium', '/pong/?room=blocked&auto=track', 'left', 'blocked-track');
    const seatedAfter = Date.now() - started;
    const misser = await seated('chromium', '/pong/?room=blocked&auto=miss', 'right', 'blocked-miss');
    // Each page tried the session first: Chromium logs its failure on the console itself
    // (as it does a failed fetch), the one error these pages may show.
    for (const p of [tracker, misser]) {
      const tried = (e) => e.startsWith(`Failed to establish a connection to https://127.0.0.1:${port}/ackwire?token=`);
      // Chromium gives up on the session after its own 4 s idle timeout, after the member did.
      if (!p.errors.some(tried)) await p.page.waitForEvent('console', { predicate: (m) => tried(m.text()), timeout: 10000 });
      p.errors.splice(0, p.errors.length, ...p.errors.filter((e) => !tried(e)));
    }
    await playRound(host, { winner: tracker, loser: misser });
    const links = host.lines.filter((l) => l.type === 'link' && l.state === 'connected');
    assert.deepEqual(links.map((l) => l.transport), ['webrtc', 'webrtc'], JSON.stringify(links));
    // The session is given 3 s (MemberConfig::webtransport_timeout), then WebRTC at once.
    assert.ok(seatedAfter < 8000, `seated ${seatedAfter} ms after the page opened`);
    console.log(`WebTransport blocked: the first player seated over WebRTC ${seatedAfter} ms after its page opened`);
  } finally {
    await host.stop();
    execFileSync('iptables', ['-D', ...rule]);
  }
});

test('with no UDP reaching the host, a player tries WebTransport, then WebRTC, then links over the host\'s WebSocket and plays a round', async () => {
  // This file's own network namespace: a firewall that drops every UDP datagram to the host's
  // sockets (WebTransport, ICE-lite) and the pages' (ICE), as a network that carries TCP alone.
  const rule = ['INPUT', '-p', 'udp', '-j', 'DROP'];
  execFileSync('iptables', ['-I', ...rule]);
  const host = await startHost('no-udp');
  try {
    const started = Date.now();
    const tracker = await seated('chromium', '/pong/?room=no-udp&auto=track', 'left', 'no-udp-track');
    const seatedAfter = Date.now() - started;
    // The other forced onto the WebSocket at once, as a browser with neither would be.
    const misser = await seated('chromium', '/pong/?room=no-udp&auto=miss&transport=websocket', 'right', 'no-udp-miss');
    for (const p of [tracker]) {
      // Chromium logs the failed session on the console itself, the one error allowed.
      const tried = (e) => e.startsWith('Failed to establish a connection to https://');
      p.errors.splice(0, p.errors.length, ...p.errors.filter((e) => !tried(e)));
    }
    await playRound(host, { winner: tracker, loser: misser });
    const links = host.lines.filter((l) => l.type === 'link' && l.state === 'connected');
    assert.deepEqual(links.map((l) => l.transport), ['websocket', 'websocket'], JSON.stringify(links));
    // 3 s for the session (webtransport_timeout), then WebRTC until ICE fails or 8 s
    // (websocket_after), then the WebSocket at once.
    assert.ok(seatedAfter > 3000 && seatedAfter < 16000, `seated ${seatedAfter} ms after the page opened`);
    console.log(`no UDP: the first player seated over the WebSocket ${seatedAfter} ms after its page opened`);
  } finally {
    await host.stop();
    execFileSync('iptables', ['-D', ...rule]);
  }
});

test('a WebKit player (WebKitGTK: no WebRTC, no WebTransport) plays a round over the host\'s WebSocket against a Chromium player on WebTransport', async () => {
  const host = await startHost('webkit');
  try {
    const started = Date.now();
    const webkit = await seated('webkit', '/pong/?room=webkit&auto=track', 'left', 'webkit');
    const seatedAfter = Date.now() - started;
    // The round starts as the second player is seated. On a loaded machine this page has been
    // slow to start taking the host's state (twice, it still tracked the ball as it was before
    // the first serve while the serve crossed the field, and missed): it plays once it does.
    await webkit.wait(() => window.pong.snapshots >= 60, null, 30000);
    const chromium = await seated('chromium', '/pong/?room=webkit&auto=miss', 'right', 'webkit-chromium');
    const has = await webkit.page.evaluate(() => ({ rtc: typeof RTCPeerConnection, wt: typeof WebTransport }));
    assert.deepEqual(has, { rtc: 'undefined', wt: 'undefined' }, 'the engine this test is for');
    // WebKitGTK on Xvfb draws a few frames a second on a loaded machine (75 inputs in a
    // round where Chromium sends 300) and its inputs ride TCP: 59 of 75 came in time in one
    // CI run. A wider bound for it; the figure is printed with the round.
    await playRound(host, { winner: webkit, loser: chromium, timely: 0.6 });
    const links = host.lines.filter((l) => l.type === 'link' && l.state === 'connected');
    assert.deepEqual(links.map((l) => l.transport), ['websocket', 'webtransport'], JSON.stringify(links));
    console.log(`WebKitGTK ${env.webkit.capabilities.browserVersion}: seated over the WebSocket ${seatedAfter} ms after its page was asked for (its launch included)`);
  } finally {
    await host.stop();
  }
});

test('a certificate rotation mid-game drops nobody, and a player who joins after it links over WebTransport with the new certificate', async () => {
  // A rotation every 8 s: at 8 s the host publishes [current, next], at 12 s (half the period
  // later) its endpoint presents the next one and it publishes that alone.
  const host = await startHost('rotation', ['--webtransport-rotation', '8'], { log: 'warn,ackwire::native::webtransport=info' });
  try {
    const first = await seated('chromium', '/pong/?room=rotation&auto=track', 'left', 'rotation-first');
    const linked = host.lines.length;
    const [before, since] = [(await first.state()).snapshots, Date.now()];
    const rotation = /host WebTransport: certificate rotation/;
    const log = await host.logged(rotation, 2);
    const hashes = log.split('\n').filter((l) => rotation.test(l)).map((l) => /cert_hashes=\[(.*?)\]/.exec(l)[1]);
    assert.equal(hashes[0].split(',').length, 2, `the next certificate published beside the current one: ${hashes[0]}`);
    assert.equal(hashes[1].split(',').length, 1, `then alone, once presented: ${hashes[1]}`);
    // The first player's session, on the old certificate, never dropped.
    const dropped = host.lines.slice(linked).filter((l) => l.type === 'link' && l.state !== 'connected');
    assert.deepEqual(dropped, [], 'no link changed state through the rotation');
    // And its state kept coming on that session through both steps and after the switch: the
    // core paces them at 30 a second, 10 while the link's congestion mode is bad (a local run
    // counted 22 a second on average). So 8 a second over the time it took (not a fixed count:
    // the page may be seated late) fails only a stall.
    const [after, seconds] = [(await first.state()).snapshots, (Date.now() - since) / 1000];
    assert.ok(after - before >= 8 * seconds, `${after - before} states in ${seconds.toFixed(1)} s through the rotation`);
    await first.wait((n) => window.pong.snapshots >= n + 30, after);
    // A newcomer dials with the hash published now, the new certificate's: over WebTransport,
    // not WebRTC. Then the round runs on both sessions: the host takes both players' inputs
    // and both pages its states and its events. (Who wins is the other tests' business: the
    // first page, idle for 15 s, has at times been slow to track the first serve.)
    const second = await seated('chromium', '/pong/?room=rotation&auto=miss', 'right', 'rotation-second');
    const links = host.lines.filter((l) => l.type === 'link' && l.state === 'connected');
    assert.deepEqual(links.map((l) => l.transport), ['webtransport', 'webtransport'], JSON.stringify(links));
    const over = await host.waitFor('the round decided', (l) => l.type === 'over', 60000);
    const last = host.lines.filter((l) => l.type === 'paddles').at(-1);
    assert.ok(last.left.inputs > 0 && last.right.inputs > 0, `inputs from both: ${JSON.stringify(last)}`);
    for (const p of [first, second]) {
      await p.wait(() => window.pong.results.length > 0, null, 10000);
      const s = await p.state();
      assert.deepEqual(s.results[0], { winner: over.winner, score: over.score }, `${p.path}: the result`);
      assert.deepEqual(p.errors, [], `${p.path}: no errors`);
    }
  } finally {
    await host.stop();
  }
});

test('ten joins of the game\'s JS page: where the time from opening the URL to the first state update goes (medians printed)', async () => {
  const host = await startHost('joins');
  const steps = ['html', 'connect', 'socket', 'script', 'wasm', 'welcome', 'offer', 'negotiating', 'open', 'connected', 'state'];
  const runs = [];
  try {
    for (let i = 0; i < 10; i++) {
      const from = host.lines.length;
      const context = await env.chromium.newContext();
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (err) => errors.push(err.message));
      await page.goto(`${env.server.url}/pong/?room=joins`);
      // Waited for on the host's output: a wait on the page injects Playwright's script
      // (~330 KB, ~10 ms of its main thread) into the middle of the join.
      const { peer } = await host.waitFor('a browser connected', (l) => l.type === 'link' && l.state === 'connected', 10000, from);
      // The page's own clock: ms since its navigation started.
      runs.push(await page.waitForFunction(() => window.pong.timeline.state && window.pong.timeline, null, { timeout: 10000 })
        .then((h) => h.jsonValue()));
      assert.deepEqual(errors, []);
      const left = host.lines.length;
      await context.close();
      // The next join finds the host alone again.
      await host.waitFor('the page gone', (l) => l.type === 'link' && l.peer === peer && l.state !== 'connected', 10000, left).catch(() => {});
    }
  } finally {
    await host.stop();
  }
  const median = printJoinMedians('the example game\'s page joining its host', runs, steps);
  // A wide bound, for a loaded CI machine (the figures are printed above, not asserted), as
  // the demo page's ten joins have: CI's runs read 800–1,300 ms with its builds beside them,
  // and 1,732 once (the HTML itself at 355 ms). It fails a join that waits out a timeout.
  assert.ok(median('state') < 2500, `median first state update at ${median('state')} ms`);
});
