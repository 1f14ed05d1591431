// Native peers (`ackwire-peer join`) in rooms with browser players: browser ↔ native over a
// WebRTC data channel (the `webrtc` crate on the native side), native ↔ native over raw UDP,
// all driven by the same protocol core, all charted on the dashboard. Loopback only.
//
// Chat convention of the native peer: it greets each peer once when their link connects
// ("hello from native peer N") and answers each chat line from a browser with "echo: TEXT".
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { artifactsDir, launchBrowser, openPage, printJoinMedians, reliableSettled, sayInChat, startServer, useServerAndBrowser } from './harness.mjs';
import { joinNative } from './native.mjs';

const env = useServerAndBrowser();

// Measured ~90 ms on an idle machine (the browser offers, the native answers). The bound leaves room
// for a loaded CI machine while catching the known regression: without a zero peer-reflexive
// acceptance wait the native's ICE agent waits a further second before nominating.
const CONNECT_BOUND_MS = 1500;

// A loopback path is a few ms even through WebRTC (each header's ack delay takes the peer's
// wait for its next paced packet out of the sample); the bound leaves room for a loaded
// machine (CI read up to 15.3 ms beside cargo builds) and still fails a held ack (33-100 ms).
const RTT_BOUND_MS = 30;

const myId = (p) => p.page.waitForFunction(() => window.ackwire?.me.id, null, { timeout: 10000 }).then((h) => h.jsonValue());
const connectedTo = (p, id, timeout = 10000) => p.page.waitForFunction(
  (peer) => window.ackwire.players.get(peer)?.state === 'connected', id, { timeout },
);
const chatsFrom = (p, id, text) => p.page.evaluate(
  ([from, t]) => window.ackwire.chat.filter((m) => m.from === `peer ${from}` && m.text === t).length, [id, text],
);

/** The dashboard card for `room/from→to`, once 30 packets of its link were acked. */
async function dashboardLink(dash, room, from, to, timeout = 10000) {
  const key = `${room}/${from}→${to}`;
  const handle = await dash.page.waitForFunction((k) => {
    const card = document.querySelector(`section.link[data-link="${k}"]`);
    const latest = window.ackwireDashboard.links.get(k)?.latest;
    if (!card || !latest || latest.packets_acked < 30) return false;
    return { transport: card.querySelector('h2 small')?.textContent, rtt: latest.rtt_ms, acked: latest.packets_acked, state: latest.connection_state };
  }, key, { timeout });
  return handle.jsonValue();
}

/** Waits until the native's stats show its link `link` (a link id) acking more than `atLeast`. */
const nativeAcks = (native, link, atLeast, timeout = 5000, from = 0) => native.waitFor(
  `acks on link ${link} above ${atLeast}`,
  (l) => l.type === 'stats' && (native.linkById(l, link)?.stats?.packets_acked ?? 0) > atLeast,
  timeout, from,
).then((l) => native.linkById(l, link));

test('a browser and a native peer connect over WebRTC both ways: positions, one reliable echo, both links charted', async () => {
  const room = 'mixed';
  const player = await openPage(env, `/room/${room}`);
  const browserId = await myId(player);
  const native = await joinNative(`${env.server.url}/room/${room}`);
  try {
    // The native is the newcomer; a browser offers to a native all the same, and the native
    // answers and accepts the core connection (room/src/member/roles.rs, "Who does what").
    await connectedTo(player, native.id);
    const link = await native.waitFor('a WebRTC link', (l) => native.linkState(l, browserId, 'connected'));
    assert.equal(link.transport, 'webrtc');
    const open = native.lines.find((l) => native.linkState(l, browserId, 'open'));
    console.log(`a native newcomer answering the browser: data channel open ${open.attempt_ms} ms, core connected ${link.attempt_ms} ms after the offer reached it`);
    assert.ok(link.attempt_ms < CONNECT_BOUND_MS, `native connected to the browser after ${link.attempt_ms} ms`);

    // The native's dot moves on the page, and the page's position reaches the native.
    const at = () => player.page.evaluate((id) => { const p = window.ackwire.players.get(id); return p?.x === undefined ? null : [p.x, p.y]; }, native.id);
    await player.page.waitForFunction((id) => window.ackwire.players.get(id)?.x !== undefined, native.id, { timeout: 5000 });
    const first = await at();
    await player.page.waitForFunction(([id, [x, y]]) => { const p = window.ackwire.players.get(id); return p.x !== x || p.y !== y; },
      [native.id, first], { timeout: 5000 });
    const second = await at();
    assert.notDeepEqual(first, second, 'the native dot moves');
    for (const v of [...first, ...second]) assert.ok(v >= 0 && v <= 1, `position ${v} on the field`);
    // (The page's own dot wanders too, so compare with the same slack as room.test.mjs.)
    const seen = await native.waitFor('the browser position', (l) => l.type === 'stats' && native.link(l, browserId)?.position,
      5000, native.lines.length);
    const me = await player.page.evaluate(() => [window.ackwire.me.x, window.ackwire.me.y]);
    const [x, y] = native.link(seen, browserId).position;
    assert.ok(Math.abs(x - me[0]) < 0.2 && Math.abs(y - me[1]) < 0.2, `native sees ${[x, y]}, page is at ${me}`);

    // Reliable chat: the greeting and the echo each arrive exactly once.
    const greeting = `hello from native peer ${native.id}`;
    await player.page.waitForFunction(([id, t]) => window.ackwire.chat.some((m) => m.from === `peer ${id}` && m.text === t), [native.id, greeting], { timeout: 5000 });
    const text = `ping ${Math.random().toString(36).slice(2)}`;
    await sayInChat(player.page, text);
    await native.waitFor('the chat line', (l) => l.type === 'chat' && l.peer === browserId && l.text === text, 5000);
    await player.page.waitForFunction(([id, t]) => window.ackwire.chat.some((m) => m.from === `peer ${id}` && m.text === t), [native.id, `echo: ${text}`], { timeout: 5000 });
    await reliableSettled(native, native.id, player, browserId);
    await reliableSettled(player, browserId, native, native.id);
    assert.equal(await chatsFrom(player, native.id, greeting), 1, 'greeting delivered once');
    assert.equal(await chatsFrom(player, native.id, `echo: ${text}`), 1, 'echo delivered once');
    assert.equal(native.lines.filter((l) => l.type === 'chat' && l.text === text).length, 1, 'chat delivered once to the native');

    // Both directions on the dashboard, over WebRTC, with a plausible loopback RTT.
    const dash = await openPage(env, `/room/${room}/dashboard`, { width: 1400, height: 900 });
    for (const [from, to] of [[browserId, native.id], [native.id, browserId]]) {
      const shown = await dashboardLink(dash, room, from, to);
      assert.equal(shown.transport, 'webrtc', `${from}→${to}`);
      assert.equal(shown.state, 'connected');
      assert.ok(shown.rtt > 0 && shown.rtt < RTT_BOUND_MS, `${from}→${to} RTT ${shown.rtt} ms`);
      console.log(`dashboard ${from}→${to}: RTT ${shown.rtt.toFixed(1)} ms after ${shown.acked} acked packets`);
    }
    await dash.page.screenshot({ path: join(artifactsDir(), 'native-peer.png'), fullPage: true });
    assert.deepEqual([...player.errors, ...dash.errors], []);
    await dash.page.context().close();
  } finally {
    await native.stop();
    await player.page.context().close();
  }
});

test('two natives and a browser: the natives link over UDP, each with the browser over WebRTC, all on the dashboard', async () => {
  const room = 'trio';
  const url = `${env.server.url}/room/${room}`;
  const a = await joinNative(url);
  const b = await joinNative(url);
  try {
    await a.waitFor('the UDP link', (l) => a.linkState(l, b.id, 'connected') && l.transport === 'udp');
    await b.waitFor('the UDP link', (l) => b.linkState(l, a.id, 'connected') && l.transport === 'udp');
    // The browser is the newcomer now: it offers to both natives, which answer.
    const player = await openPage(env, `/room/${room}`);
    const browserId = await myId(player);
    await connectedTo(player, a.id);
    await connectedTo(player, b.id);
    for (const n of [a, b]) {
      const l = await n.waitFor('the WebRTC link', (x) => n.linkState(x, browserId, 'connected'));
      assert.equal(l.transport, 'webrtc');
    }
    const dash = await openPage(env, `/room/${room}/dashboard`, { width: 1400, height: 1200 });
    const expected = [
      [a.id, b.id, 'udp'], [b.id, a.id, 'udp'],
      [a.id, browserId, 'webrtc'], [browserId, a.id, 'webrtc'],
      [b.id, browserId, 'webrtc'], [browserId, b.id, 'webrtc'],
    ];
    for (const [from, to, transport] of expected) {
      const shown = await dashboardLink(dash, room, from, to);
      assert.equal(shown.transport, transport, `${from}→${to}`);
      assert.ok(shown.rtt > 0 && shown.rtt < RTT_BOUND_MS, `${from}→${to} RTT ${shown.rtt} ms`);
      console.log(`dashboard ${transport} ${from}→${to}: RTT ${shown.rtt.toFixed(2)} ms after ${shown.acked} acked packets`);
    }
    await dash.page.screenshot({ path: join(artifactsDir(), 'native-trio.png'), fullPage: true });
    assert.deepEqual([...player.errors, ...dash.errors], []);
    await dash.page.context().close();
    await player.page.context().close();
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('a native peer outlives a browser vanishing and a signalling restart; its links keep flowing', async () => {
  const room = 'sturdy';
  const server = await startServer(0);
  const browser = await launchBrowser();
  const local = { server, browser };
  const native = await joinNative(`${server.url}/room/${room}`);
  try {
    const stay = await openPage(local, `/room/${room}`);
    const stayId = await myId(stay);
    const gone = await openPage(local, `/room/${room}`);
    const goneId = await myId(gone);
    await connectedTo(stay, native.id);
    await connectedTo(gone, native.id);

    // A player vanishes mid-session (its tab closes).
    await native.waitFor('a link to the leaving player', (l) => native.linkState(l, goneId, 'connected'));
    const stayLink = (await native.waitFor('a link to the staying player', (l) => native.linkState(l, stayId, 'connected'))).link;
    const mark = native.lines.length;
    await gone.page.context().close();
    await native.waitFor('the vanished player to go', (l) => (l.type === 'peer-left' && l.peer_id === goneId)
      || native.linkState(l, goneId, 'gone') || native.linkState(l, goneId, 'lost'), 20000, mark);
    const before = (await nativeAcks(native, stayLink, 0)).stats.packets_acked;
    await nativeAcks(native, stayLink, before + 10, 5000, native.lines.length);
    assert.equal(native.child.exitCode, null, 'the native is still running');

    // The signalling server goes away: links do not pass through it, so they keep flowing.
    await server.stop();
    await native.waitFor('signalling down', (l) => l.type === 'signalling' && l.state === 'reconnecting', 5000, mark);
    const down = native.lines.length;
    const acked = (await nativeAcks(native, stayLink, 0, 5000, down)).stats.packets_acked;
    await nativeAcks(native, stayLink, acked + 10, 5000, native.lines.length);
    assert.equal(await stay.page.evaluate((id) => window.ackwire.players.get(id)?.state, native.id), 'connected');

    // It comes back on the same port: the native joins again (the new server knows no one)
    // and a player arriving now links with it.
    local.server = await startServer(server.port);
    const rejoined = await native.waitFor('a new welcome', (l) => l.type === 'welcome', 15000, down);
    assert.equal(rejoined.resumed, false);
    const late = await openPage(local, `/room/${room}`);
    const lateId = await myId(late);
    await connectedTo(late, rejoined.peer_id, 15000);
    await native.waitFor('a link to the late player', (l) => native.linkState(l, lateId, 'connected'), 10000, down);
    // And the first player's link never stopped (the same link, renamed to the new ids).
    await nativeAcks(native, stayLink, acked + 30, 5000, native.lines.length);
    // The staying browser rejoined the restarted server as a new peer and the newcomer links
    // with it too.
    const stayNewId = await stay.page.waitForFunction(
      () => window.ackwire.log.filter((l) => l.startsWith('welcomed as peer')).length >= 2 && window.ackwire.me.id,
      null, { timeout: 15000 },
    ).then((h) => h.jsonValue());
    await connectedTo(late, stayNewId, 15000);
    assert.equal(await stay.page.getAttribute('#status', 'data-state'), 'connected');
    assert.deepEqual([...stay.errors, ...late.errors], []);
  } finally {
    await native.stop();
    await browser.close();
    await local.server.stop();
  }
});

test('ten browsers join a room with a native peer: where the time from opening the URL to the first acked packet goes (medians printed)', async () => {
  const room = 'join-native';
  const native = await joinNative(`${env.server.url}/room/${room}`);
  const steps = ['html', 'connect', 'socket', 'script', 'heard', 'offer', 'gathered', 'wasm', 'welcome', 'negotiating', 'open', 'connected', 'ack'];
  const runs = [];
  try {
    for (let i = 0; i < 10; i++) {
      const from = native.lines.length;
      const player = await openPage(env, `/room/${room}`);
      // Waited for on the native's output: a wait on the page injects Playwright's script
      // (~330 KB, ~10 ms of its main thread) into the middle of the join.
      await native.waitFor('a browser connected', (l) => l.type === 'link' && l.state === 'connected', 10000, from);
      // The page's own clock: ms since its navigation started.
      runs.push(await player.page.waitForFunction(() => window.ackwire.metrics.timeline.ack && window.ackwire.metrics.timeline, null, { timeout: 10000 })
        .then((h) => h.jsonValue()));
      assert.deepEqual([...player.errors, ...player.consoleErrors], []);
      // The wasm was instantiated only once the server's first frame was in, or after the
      // 50 ms bound (join() runs as the page's module starts, `script`; the wait starts later,
      // once the wasm compiled); and, for a page that offered before it, only once that link
      // had its first candidate, or after the same bound (ackwire.js, `loadBindings`).
      const run = runs.at(-1);
      assert.ok(run.heard <= run.wasm || run.wasm >= run.script + 50, JSON.stringify(run));
      if (run.linked !== undefined) {
        assert.ok(run.wasm >= Math.min(run.gathered ?? Infinity, run.linked + 50), JSON.stringify(run));
      }
      await player.page.context().close();
    }
  } finally {
    await native.stop();
  }
  const median = printJoinMedians('a browser joining a native', runs, steps);
  // A wide bound, for a loaded CI machine (the goal, a first ack within 120 ms, is printed
  // above, not asserted), as in room.test.mjs's ten joins.
  assert.ok(median('ack') < 2500, `median first ack at ${median('ack')} ms`);
});
