// Shared e2e plumbing: the real `ackwire-signal` binary and Debian's Chromium via
// playwright-core. `cargo xtask test` runs these files inside a network namespace with only
// loopback up and passes the paths below in the environment.
import { execFileSync, spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';

/** An environment variable `cargo xtask test` sets; a clear error when run some other way. */
export const requireEnv = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the e2e suite through \`cargo xtask test\``);
  return value;
};

/**
 * Starts the signal server on `host`:`port` (0: an ephemeral port), with `args` besides;
 * resolves once it is listening, with its URL (https with `--tls-cert`), port and stop().
 * With `netns`, it runs in that network namespace (`ip netns exec`, which keeps the pid);
 * `quiet` keeps its log to itself (a bench's output stays readable).
 */
export async function startServer(port = 0, { args = [], host = '127.0.0.1', netns, quiet = false } = {}) {
  const scheme = args.includes('--tls-cert') ? 'https' : 'http';
  const argv = ['--bind', `${host}:${port}`, '--web-dir', requireEnv('ACKWIRE_WEB_DIR'), ...args];
  const [program, programArgs] = netns
    ? ['ip', ['netns', 'exec', netns, requireEnv('ACKWIRE_SIGNAL_BIN'), ...argv]]
    : [requireEnv('ACKWIRE_SIGNAL_BIN'), argv];
  const child = spawn(program, programArgs, {
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'info', NO_COLOR: '1' },
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  let log = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not report its address:\n${log}`)), 15000);
    child.stderr.on('data', (chunk) => {
      log += chunk;
      if (!quiet) process.stderr.write(chunk);
      const m = new RegExp(`listening.*?(${host.replaceAll('.', '\\.')}:\\d+)`).exec(log);
      if (m) { clearTimeout(timer); resolve(`${scheme}://${m[1]}`); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited (${code}):\n${log}`)); });
  });
  return {
    url,
    port: Number(new URL(url).port),
    /** Stops the server: SIGTERM (a clean shutdown), or `'SIGKILL'` (a crash: no goodbyes). */
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await exited;
    },
  };
}

/** A UDP port free right now on `host`. */
export const freePort = (host = '127.0.0.1') => new Promise((resolve) => {
  const s = createSocket('udp4');
  s.bind(0, host, () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

/**
 * coturn (Debian's `turnserver`, which `cargo xtask setup` installs) listening and relaying
 * on `host`, taking credentials made with `secret` (coturn's use-auth-secret scheme, the
 * signal server's `--turn-secret`); resolves once its UDP listener is open.
 */
export async function startCoturn(secret, { host = '127.0.0.1', extra = [] } = {}) {
  const port = await freePort(host);
  const dir = mkdtempSync(join(tmpdir(), 'ackwire-turn-'));
  const child = spawn('turnserver', [
    '-n', '-v', '--no-cli', '--no-tls', '--no-dtls', '--no-tcp',
    '--listening-ip', host, '--relay-ip', host, '--listening-port', String(port),
    '--realm', 'ackwire.test', '--use-auth-secret', '--static-auth-secret', secret,
    '--pidfile', join(dir, 'turnserver.pid'), '--db', join(dir, 'turndb'), '--log-file', 'stdout',
    ...extra,
  ], { stdio: ['ignore', 'pipe', 'ignore'] });
  let log = '';
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`coturn did not open its listener:\n${log}`)), 15000);
    child.stdout.on('data', (chunk) => {
      log += chunk;
      if (log.includes(`UDP listener opened on: ${host}:${port}`)) { clearTimeout(timer); resolve(); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`turnserver exited (${code}):\n${log}`)); });
  });
  return {
    url: `turn:${host}:${port}?transport=udp`,
    log: () => log,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Launches headless stock Firefox (Debian's firefox-esr) through puppeteer-core over WebDriver
 * BiDi, with ICE candidates on loopback too, with real addresses (no mDNS names), on every
 * interface. `executablePath` and `debuggingPort` to run it through a wrapper (in another
 * network namespace, say: `firefoxIn` in nat.mjs).
 */
export function launchFirefox({ executablePath, debuggingPort } = {}) {
  return puppeteer.launch({
    browser: 'firefox',
    executablePath: executablePath ?? process.env.FIREFOX ?? '/usr/bin/firefox-esr',
    headless: true,
    ...(debuggingPort ? { debuggingPort } : {}),
    extraPrefsFirefox: {
      'media.peerconnection.ice.loopback': true,
      'media.peerconnection.ice.obfuscate_host_addresses': false,
      'media.peerconnection.ice.default_address_only': false,
    },
  });
}

/**
 * A veth pair inside this namespace, 10.99.N.1 ↔ 10.99.N.2, a default route through it: the
 * "LAN" Firefox needs to gather ICE candidates (it uses the default-route interface; with only
 * `lo` it gathers none). It exists only inside the namespace `cargo xtask test` made. Its
 * names, subnet and route metric come from this process's id, so test files running at once
 * each have their own. Returns the function that removes it.
 */
export function lanInNamespace() {
  const n = process.pid % 250;
  const [a, b] = [`lan${process.pid}a`, `lan${process.pid}b`];
  const ip = (...args) => execFileSync('ip', args);
  ip('link', 'add', a, 'type', 'veth', 'peer', 'name', b);
  ip('addr', 'add', `10.99.${n}.1/24`, 'dev', a);
  ip('addr', 'add', `10.99.${n}.2/24`, 'dev', b);
  ip('link', 'set', a, 'up');
  ip('link', 'set', b, 'up');
  ip('route', 'add', 'default', 'dev', a, 'metric', String(process.pid));
  return () => ip('link', 'del', a);
}

/**
 * Launches headless Debian Chromium with the flags these machines need, and `extraArgs`;
 * `executablePath` to run it through a wrapper (in another network namespace, say).
 */
export function launchBrowser(extraArgs = [], { executablePath } = {}) {
  return chromium.launch({
    executablePath: executablePath ?? process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      // playwright gives every launch a fresh, empty profile directory of its own.
      '--disable-dev-shm-usage',
      // WebRTC on loopback (see ../shared/toolchain.md): gather host candidates on lo.
      '--allow-loopback-in-peer-connection', '--use-fake-ui-for-media-stream',
      '--disable-features=WebRtcHideLocalIpsWithMdns',
      ...extraArgs,
    ],
  });
}

/**
 * Prints the medians of joins' timelines (`timeline` steps, ms after navigation) after
 * `label`, and returns the median of a step. A step only some joins reached (an offer made
 * before the wasm) is the median of those, printed with how many: a missing step is not a
 * number to sort among the others.
 */
export function printJoinMedians(label, runs, steps) {
  const reached = (step) => runs.map((r) => r[step]).filter(Number.isFinite).sort((x, y) => x - y);
  const median = (step) => reached(step)[Math.floor(reached(step).length / 2)] ?? NaN;
  const shown = (step) => {
    const n = reached(step).length;
    return `${step} ${median(step).toFixed(0)}${n < runs.length ? ` (${n} of ${runs.length})` : ''}`;
  };
  console.log(`${label}, medians of ${runs.length} (ms after navigation): ${steps.map(shown).join(', ')}`);
  return median;
}

/**
 * Says `text` in a demo page's chat as a player does: typed, then Enter, which submits the
 * form wherever it is on the page. A click aimed at its button could land elsewhere: the links
 * table above the form grows as links come, and the room's sections appear once the join is in.
 */
export async function sayInChat(page, text) {
  await page.fill('#chat-input', text);
  await page.press('#chat-input', 'Enter');
}

/** Where screenshots and other artifacts go. */
export const artifactsDir = () => process.env.ACKWIRE_ARTIFACTS ?? tmpdir();

/**
 * Starts a server and a browser before the calling file's tests and stops both after them.
 * The returned object gets `server` and `browser` once the tests run.
 */
export function useServerAndBrowser() {
  const env = {};
  before(async () => {
    env.server = await startServer();
    env.browser = await launchBrowser();
  });
  after(async () => {
    await env.browser?.close();
    await env.server?.stop();
  });
  return env;
}

/**
 * Opens `path` in a fresh browser context (a separate player, with its own storage) and
 * collects uncaught page errors, which every test expects to stay empty.
 */
export async function openPage(env, path, viewport = { width: 1280, height: 900 }) {
  const context = await env.browser.newContext({ viewport });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err.message));
  // Console errors from the first request on (a missing favicon, a failed fetch).
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  await page.goto(env.server.url + path);
  return { page, errors, consoleErrors };
}

/**
 * Resolves once nothing `from` sent reliably to `to` can still arrive: `from` has every
 * reliable message to `to` confirmed, then `to` has accepted a packet `from` sent after that
 * (its `packets_received` passes what `from` had sent by then). A check that a message arrived
 * exactly once follows this instead of a pause. Each side is a demo page (`openPage`) or a
 * native peer (`joinNative`); `fromId` and `toId` are their ids in the server's session.
 */
export async function reliableSettled(from, fromId, to, toId, timeout = 10000) {
  const sent = from.page
    ? await from.page.waitForFunction((id) => {
      const l = window.ackwire.players.get(id);
      return l?.unconfirmed === 0 && l.stats ? { n: l.stats.packets_sent } : null;
    }, toId, { timeout }).then((h) => h.jsonValue()).then((v) => v.n)
    : from.link(await from.waitFor(`nothing unconfirmed to ${toId}`, (l) => {
      const k = l.type === 'stats' && from.link(l, toId);
      return k && k.unconfirmed === 0 && k.stats;
    }, timeout, from.lines.length), toId).stats.packets_sent;
  if (to.page) {
    await to.page.waitForFunction(([id, n]) => (window.ackwire.players.get(id)?.stats?.packets_received ?? -1) > n,
      [fromId, sent], { timeout });
  } else {
    await to.waitFor(`a packet from ${fromId} sent after its last confirmation`,
      (l) => l.type === 'stats' && (to.link(l, fromId)?.stats?.packets_received ?? -1) > sent, timeout, to.lines.length);
  }
}
