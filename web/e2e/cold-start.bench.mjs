// Cold start, counted in round trips: from opening the example game's URL (examples/pong, its
// JS page) to its first state update from the host, from opening the demo's room page to the
// first packet a native peer in the room acknowledged, and from opening the demo's room page
// to a connected link with a browser already in the room, on a path with no added delay and
// with a fixed delay each way (docs/cold-start.md). The real release `ackwire-signal` serving
// the pages, the game's release host (`pong-host`, room `table`), the release native peer
// (`ackwire-peer join`, room `native`) and the resident browser (a Chromium on the demo's
// `/room/pair`) sit in a "server" namespace, a fresh Chromium (new profile, empty cache) in a
// "client" one, and delayed-path.mjs's userspace bridge between them. Prints each step's
// medians and the round trips it used; asserts only that every join completed with no page
// error.
//
// `cargo xtask bench join-rtt` runs it (release builds, under `unshare --net`).
// ACKWIRE_COLD_RUNS joins per delay (7), ACKWIRE_COLD_DELAYS the delays each way in ms
// (0,20,50; the summary counts round trips between the first and last added delay, and from
// 0 to the first), ACKWIRE_COLD_PAGES the joins (game,game-webrtc,demo,pair: the game's page
// with its host over WebTransport, the same over WebRTC, the demo's page with a native peer,
// the demo's page with a browser).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { launchBrowser, requireEnv, startServer } from './harness.mjs';
import { SERVER_ADDR, buildDelayedPath } from './delayed-path.mjs';
import { chromiumIn } from './netns.mjs';
import { joinNative, jsonLines } from './native.mjs';

const RUNS = Number(process.env.ACKWIRE_COLD_RUNS ?? 7);
const DELAYS = (process.env.ACKWIRE_COLD_DELAYS ?? '0,20,50').split(',').map(Number);
const PAGES = (process.env.ACKWIRE_COLD_PAGES ?? 'game,game-webrtc,demo,pair').split(',');
assert.ok(PAGES.length && PAGES.every((p) => ['game', 'game-webrtc', 'demo', 'pair'].includes(p)), 'ACKWIRE_COLD_PAGES names some of game, game-webrtc, demo, pair');
assert.ok(RUNS >= 1 && DELAYS.length >= 2 && DELAYS[0] === 0, 'ACKWIRE_COLD_DELAYS starts at 0 and has a larger delay');

// A page's timeline over WebRTC (the game's page with `transport=webrtc`, the demo's
// web/room.js; ms after navigation) and the least round trips each step can take from
// navigation (docs/cold-start.md, "The minimum").
const STEPS = [
  ['html', 'html received', 2],
  ['socket', 'socket open', 4],
  ['wasm', 'wasm ready', 4],
  ['welcome', 'welcome', 4],
  ['offer', 'offer sent', 4],
  ['open', 'data channel open', 10],
  ['connected', 'core connected', 11],
  ['state', 'first state update', 11],
];
const MINIMUM = 11;
// The game's page (`pong.timeline` in examples/pong/web/pong.js) joins its host over
// WebTransport: the page dials at the welcome (`offer`: its token sent), the session is ready
// after QUIC's handshake, with the host's HTTP/3 SETTINGS in its flight (0.5-RTT:
// third_party/wtransport), and the CONNECT (two round trips); the
// host connects as it accepts, so its channel request and first state come with the session's
// response and wait in it until the driver adopts the session (`claimed`, once the wasm runs),
// when the core connects at once (docs/cold-start.md, "Over WebTransport").
const GAME_STEPS = [
  ['html', 'html received', 2],
  ['socket', 'socket open', 4],
  ['wasm', 'wasm ready', 4],
  ['welcome', 'welcome', 4],
  ['offer', 'session dialed', 4],
  ['ready', 'session ready', 6],
  ['claimed', 'session adopted', 6],
  ['open', 'link open', 6],
  ['connected', 'core connected', 6],
  ['state', 'first state update', 6],
];
const GAME_MINIMUM = 6;
// The demo's page joining a native peer (`ackwire-peer join`, the webrtc crate's full ICE
// agent): its timeline (web/room.js) up to the first packet the native acknowledged. The same
// steps and minimum as the game's: the browser offers at the welcome, the first packet's ack
// rides the native's reply to it (docs/cold-start.md, "The minimum").
const DEMO_STEPS = STEPS.filter(([k]) => k !== 'state').concat([['ack', 'first packet acked', 11]]);
// A browser joining a browser: the demo page's timeline (web/room.js) up to its link with
// the resident player connected. The resident offers as the newcomer's welcome leaves, so its
// offer arrives with it. No minimum is printed past the answer: between two Chromiums the
// data channel opens in fewer round trips than the table's DTLS and SCTP take
// (docs/cold-start.md, "A browser joining a browser").
const PAIR_STEPS = STEPS.filter(([k]) => k !== 'state')
  .map(([k, label, min]) => (k === 'offer' ? ['answer', 'answer sent', 4] : [k, label, min > 4 ? '—' : min]));

const median = (values) => {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (!v.length) return NaN;
  return v.length % 2 ? v[v.length >> 1] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const f = (v, digits = 0) => (Number.isFinite(v) ? v.toFixed(digits) : '—');

const tag = process.env.ACKWIRE_NETNS_TAG ?? `ackcold${process.pid}`;
const path = await buildDelayedPath(tag);
let server;
let host;
let chromium;
let resident;
let native;
const cleanup = async () => {
  await resident?.browser.close().catch(() => {});
  resident?.chromium.remove();
  await native?.stop().catch(() => {});
  await host?.stop().catch(() => {});
  await server?.stop().catch(() => {});
  chromium?.remove();
  await path.remove();
};
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => cleanup().finally(() => process.exit(130)));

/** `url` in a new page of `browser`, collecting the page's errors and console errors. */
async function openCold(browser, url) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(url, { timeout: 30000 });
  return { page, errors };
}

/** The game's timeline (examples/pong/web/pong.js) once its first state update came. */
const gameTimeline = () => window.pong.timeline.state && window.pong.timeline;
/** The demo's timeline (web/room.js) once its first packet was acked. */
const demoTimeline = () => window.ackwire.metrics.timeline.ack && window.ackwire.metrics.timeline;

/**
 * One cold join of a native's room: a new Chromium (fresh profile) opens `url`; the page's
 * timeline once `done` (run in the page) returns it. `native` is the game's host or the native
 * peer, its JSON lines read.
 */
async function coldJoin(url, native, done) {
  const from = native.lines.length;
  // The server's documentation-range address is not a secure context, and WebTransport is
  // only in secure ones: the page is taken as the https page a deployed game serves.
  const secure = `--unsafely-treat-insecure-origin-as-secure=${new URL(url).origin}`;
  const browser = await launchBrowser([secure], { executablePath: chromium.path });
  let peer;
  try {
    const { page, errors } = await openCold(browser, url);
    // Waited for on the native's output first: a wait on the page injects Playwright's script
    // into the middle of the join (see the joins stage).
    const linked = await native.waitFor('a browser connected', (l) => l.type === 'link' && l.state === 'connected', 30000, from);
    peer = linked.peer;
    const timeline = await page.waitForFunction(done, null, { timeout: 15000 }).then((h) => h.jsonValue());
    assert.deepEqual(errors, [], 'the page reported errors');
    return timeline;
  } finally {
    const left = native.lines.length;
    await browser.close();
    // The next join starts with the native alone in the room again.
    if (peer !== undefined) {
      await native.waitFor('the browser gone', (l) => l.type === 'link' && l.peer === peer && l.state !== 'connected', 10000, left).catch(() => {});
    }
  }
}

/**
 * One cold join of the demo's room page where the resident player waits: its timeline once
 * its link with the resident connected (seen on the resident's page first, as above).
 */
async function coldPairJoin(url) {
  const before = await resident.page.evaluate(() => [...window.ackwire.players.keys()]);
  const browser = await launchBrowser([], { executablePath: chromium.path });
  try {
    const { page, errors } = await openCold(browser, url);
    await resident.page.waitForFunction((old) => [...window.ackwire.players.entries()]
      .some(([id, p]) => !old.includes(id) && p.state === 'connected'), before, { timeout: 30000 });
    const timeline = await page.waitForFunction(() => window.ackwire.metrics.timeline.connected && window.ackwire.metrics.timeline,
      null, { timeout: 15000 }).then((h) => h.jsonValue());
    assert.deepEqual(errors, [], 'the page reported errors');
    return timeline;
  } finally {
    await browser.close();
    // The next join starts with the resident alone in the room again.
    await resident.page.waitForFunction((old) => [...window.ackwire.players.keys()].every((id) => old.includes(id)),
      before, { timeout: 15000 }).catch(() => {});
  }
}

/**
 * RUNS joins at each delay, interleaved (0, 20, 50, 0, …) so the machine's load drifts alike
 * across them; each printed by its `last` step, then `steps`. The timelines by delay.
 */
async function joinsAtEachDelay(join, last, steps) {
  const runs = Object.fromEntries(DELAYS.map((d) => [d, []]));
  for (let i = 0; i < RUNS; i++) {
    for (const d of DELAYS) {
      path.setDelay(d);
      await sleep(100);
      const timeline = await join();
      runs[d].push(timeline);
      console.log(`  join ${i + 1}/${RUNS} at ${d} ms each way: ${last} ${f(timeline[last])} ms `
        + `(${steps.map((k) => `${k} ${f(timeline[k])}`).join(', ')})`);
    }
  }
  return runs;
}

/** Prints each step's medians and round trips at each delay; returns the medians and `slope`. */
function report(runs, steps, rtt, title) {
  const [base, ...others] = DELAYS;
  const medians = Object.fromEntries(DELAYS.map((d) => [d, Object.fromEntries(steps.map(([k]) => [k, median(runs[d].map((t) => t[k]))]))]));
  // Round trips a step used between two delays: its extra time over the extra RTT. From 0,
  // as the summary counts; between two added delays as well, where the page's own CPU time
  // (a fresh renderer, the wasm compiled) is hidden under network waits at both ends and
  // only round trips remain (docs/cold-start.md, "Counting round trips").
  const slope = (from, to, k) => (medians[to][k] - medians[from][k]) / (rtt(to) - rtt(from));
  const pairs = [...others.map((d) => [base, d]), ...others.slice(1).map((d, i) => [others[i], d])];
  const header = ['step'.padEnd(20), ...DELAYS.map((d) => `${f(rtt(d), 1)} ms RTT`.padStart(12)),
    ...pairs.map(([a, b]) => `RTs ${f(rtt(a), 0)}-${f(rtt(b), 0)}`.padStart(11)), 'minimum'.padStart(8)];
  console.log(`\n${title}: ms after navigation (medians of ${RUNS}); RTs a-b = (median at b - median at a) / (RTT b - RTT a), RTT by the probe's least TCP connect:`);
  console.log(`  ${header.join(' ')}`);
  for (const [k, label, min] of steps) {
    const cells = [label.padEnd(20), ...DELAYS.map((d) => f(medians[d][k]).padStart(12)),
      ...pairs.map(([a, b]) => f(slope(a, b, k), 1).padStart(11)), String(min).padStart(8)];
    console.log(`  ${cells.join(' ')}`);
  }
  return { medians, slope };
}

try {
  // What the path is at each delay, before it is used.
  const probes = {};
  for (const d of DELAYS) {
    path.setDelay(d);
    await sleep(50);
    const p = await path.probe(30);
    probes[d] = { udp: median(p.udp), udpMin: Math.min(...p.udp), tcp: median(p.tcp), tcpMin: Math.min(...p.tcp) };
  }
  path.setDelay(0);
  server = await startServer(8080, {
    host: SERVER_ADDR, netns: path.server, quiet: true, args: ['--static', `/pong=${requireEnv('ACKWIRE_PONG_WEB_DIR')}`],
  });
  // The path's RTT: the least TCP connect time of the probe (the server's kernel answers, so
  // only the path and the probing process's wake-up are in it; the medians also carry this
  // shared host's scheduling delays, which the joins carry at every delay alike).
  const rtt = (d) => probes[d].tcpMin;
  const [base, ...others] = DELAYS;
  // The summary: the round trips between the two largest delays when there are three (the
  // count that only round trips make), and the brief's count from no added delay beside it.
  const top = others[0];
  const far = others.at(-1);
  chromium = chromiumIn(path.client);
  // The game's host, in the server's namespace, on its every interface as a deployed host
  // binds; its log at errors only (its JSON lines are read, not printed): each join ends with
  // the page closed under it, which it would warn about.
  if (PAGES.includes('game') || PAGES.includes('game-webrtc')) {
    const child = spawn('ip', ['netns', 'exec', path.server, requireEnv('ACKWIRE_PONG_HOST_BIN'), `${server.url}/pong/?room=table`], {
      env: { ...process.env, RUST_LOG: process.env.ACKWIRE_COLD_NATIVE_LOG ?? 'error', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    host = jsonLines(child);
    await host.waitFor('the host joined', (l) => l.type === 'joined', 15000);
  }
  // The game's page over WebTransport (`game`), and over WebRTC as a browser without
  // WebTransport joins (`game-webrtc`), the same host in the same run.
  for (const [kind, query, steps, minimum, via, hop] of [
    ['game', '', GAME_STEPS, GAME_MINIMUM, 'WebTransport', ['ready', 'session ready', 6]],
    ['game-webrtc', '&transport=webrtc', STEPS, MINIMUM, 'WebRTC', ['open', 'data channel open', 10]],
  ]) {
    if (!PAGES.includes(kind)) continue;
    const url = `${server.url}/pong/?room=table${query}`;
    console.log(`\ncold start: ${url} opened in a new Chromium (fresh profile, empty cache) in the client namespace; `
      + `${RUNS} joins at each of ${DELAYS.map((d) => `${d} ms`).join(', ')} added each way, interleaved; medians`);
    // A join not counted: the server's and the host's first page and link after start.
    await coldJoin(url, host, gameTimeline);
    const runs = await joinsAtEachDelay(() => coldJoin(url, host, gameTimeline), 'state', steps.map(([k]) => k).filter((k) => k !== 'state'));
    const { medians, slope } = report(runs, steps, rtt, `a browser joining the example game's native host over ${via}`);
    // After the handshake the first snapshot leaves at the host's next tick (30 Hz) or its next
    // paced packet: shown per join, since on a short path the tick, not the RTT, decides it.
    const after = (d) => runs[d].map((t) => t.state - t.connected);
    console.log(`first state update after core connected, per join (ms): ${DELAYS.map((d) => `at ${f(rtt(d), 1)} ms RTT ${after(d).map((v) => f(v)).join(' ')}`).join('; ')}`);
    const at = (d) => `${f(medians[d].state)} ms at ${f(rtt(d), d === base ? 2 : 1)} ms RTT`;
    const [key, label, least] = hop;
    const counted = others.length > 1
      ? `${f(slope(top, far, 'state'), 1)} round trips between ${f(rtt(top), 0)} and ${f(rtt(far), 0)} ms RTT (minimum ${minimum}; `
        + `${label} ${f(slope(top, far, key), 1)}, minimum ${least}), ${f(slope(base, top, 'state'), 1)} from ${f(rtt(base), 1)} to ${f(rtt(top), 0)} ms RTT`
      : `${f(slope(base, top, 'state'), 1)} round trips (minimum ${minimum}; ${label} ${f(slope(base, top, key), 1)}, minimum ${least})`;
    console.log(`\ncold-start (${via}): first state update ${DELAYS.map(at).join(', ')}; ${counted}; `
      + `${RUNS} cold joins at each delay, all completed`);
  }

  if (PAGES.includes('demo')) {
    // The demo's page joining a native peer, which waits in the server's namespace on every
    // interface (as `ackwire-peer join` binds by default), its log at errors only.
    const url = `${server.url}/room/native`;
    const log = process.env.RUST_LOG;
    process.env.RUST_LOG = process.env.ACKWIRE_COLD_NATIVE_LOG ?? 'error';
    native = await joinNative(url, [], { netns: path.server }).finally(() => { process.env.RUST_LOG = log; });
    console.log(`\n${url}: a native peer (ackwire-peer join) in the server namespace; a new Chromium (fresh profile) joins it from the client namespace`);
    await coldJoin(url, native, demoTimeline);
    const runs = await joinsAtEachDelay(() => coldJoin(url, native, demoTimeline), 'ack',
      ['html', 'connect', 'socket', 'script', 'wasm', 'welcome', 'offer', 'open', 'connected']);
    const { medians, slope } = report(runs, DEMO_STEPS, rtt, 'the demo\'s page joining a native peer');
    const at = (d) => `${f(medians[d].ack)} ms at ${f(rtt(d), d === base ? 2 : 1)} ms RTT`;
    const counted = others.length > 1
      ? `${f(slope(top, far, 'ack'), 1)} round trips between ${f(rtt(top), 0)} and ${f(rtt(far), 0)} ms RTT (minimum ${MINIMUM}; `
        + `data channel open ${f(slope(top, far, 'open'), 1)}, minimum 10), ${f(slope(base, top, 'ack'), 1)} from ${f(rtt(base), 1)} to ${f(rtt(top), 0)} ms RTT`
      : `${f(slope(base, top, 'ack'), 1)} round trips (minimum ${MINIMUM}; data channel open ${f(slope(base, top, 'open'), 1)}, minimum 10)`;
    console.log(`\njoin-rtt, the demo's page: first packet acked ${DELAYS.map(at).join(', ')}; ${counted}; `
      + `${RUNS} cold joins at each delay, all completed`);
  }

  if (PAGES.includes('pair')) {
    // A browser joining a browser already in the room.
    const residentChromium = chromiumIn(path.server);
    const residentBrowser = await launchBrowser([], { executablePath: residentChromium.path });
    resident = { chromium: residentChromium, browser: residentBrowser };
    const pairUrl = `${server.url}/room/pair`;
    resident.page = await residentBrowser.newPage();
    await resident.page.goto(pairUrl);
    await resident.page.waitForFunction(() => window.ackwire?.me.id, null, { timeout: 15000 });
    console.log(`\n${pairUrl}: a resident Chromium in the server namespace; a new one (fresh profile) joins it from the client namespace`);
    await coldPairJoin(pairUrl);
    const pairRuns = await joinsAtEachDelay(() => coldPairJoin(pairUrl), 'connected', ['html', 'connect', 'socket', 'script', 'wasm', 'welcome', 'answer', 'open']);
    const pair = report(pairRuns, PAIR_STEPS, rtt, 'a browser joining a browser');
    const pairAt = (d) => `${f(pair.medians[d].connected)} ms at ${f(rtt(d), d === base ? 2 : 1)} ms RTT`;
    const pairCounted = others.length > 1
      ? `${f(pair.slope(top, far, 'connected'), 1)} round trips between ${f(rtt(top), 0)} and ${f(rtt(far), 0)} ms RTT, `
        + `${f(pair.slope(base, top, 'connected'), 1)} from ${f(rtt(base), 1)} to ${f(rtt(top), 0)} ms RTT`
      : `${f(pair.slope(base, top, 'connected'), 1)} round trips`;
    console.log(`\njoin-rtt, browser to browser: link connected ${DELAYS.map(pairAt).join(', ')}; ${pairCounted}; `
      + `${RUNS} cold joins at each delay, all completed`);
  }

  const bridge = await path.stats();

  console.log('\npath, client -> server, probed before the joins (30 each; median, min):');
  for (const d of DELAYS) {
    const p = probes[d];
    console.log(`  ${String(d).padStart(3)} ms each way: UDP echo ${f(p.udp, 2)} ms (min ${f(p.udpMin, 2)}), TCP connect ${f(p.tcp, 2)} ms (min ${f(p.tcpMin, 2)})`);
  }
  console.log('bridge, frames forwarded and how late they left (p50 / p99 / max):');
  for (const [d, s] of Object.entries(bridge)) {
    console.log(`  ${String(Number(d)).padStart(3)} ms each way: ${s.frames} frames, ${f(s.late_p50_us)} / ${f(s.late_p99_us)} / ${f(s.late_max_us)} us late, ${s.dropped} dropped`);
  }
} finally {
  await cleanup();
}
