// Players on other networks, each behind a symmetric NAT: every "home" is a network
// namespace behind its own router namespace that masquerades with a random public port per
// flow (`MASQUERADE --random-fully`) and lets only replies in. The routers' public sides, the
// signal server and coturn share an "internet" bridge in 203.0.113.0/24 (TEST-NET-3, which
// exists only inside the test's namespace). No two homes have a direct path: a link goes
// through the TURN relay, with the credentials the welcome carries, or it fails and says why.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launchBrowser, openPage, startCoturn, startServer } from './harness.mjs';
import { PUBLIC, buildInternet, chromiumIn } from './nat.mjs';

const SECRET = 'e2e-nat-secret';

/** Each browser opens `room`, one after the other; resolves with `[page, its peer id]` each. */
async function joinInTurn(server, browsers, room) {
  const joined = [];
  for (const browser of browsers) {
    const page = await openPage({ server, browser }, `/room/${room}`);
    const id = await page.page.waitForFunction(() => window.ackwire?.me.id, null, { timeout: 15000 }).then((h) => h.jsonValue());
    joined.push([page, id]);
  }
  return joined;
}

/** The failure reason a page shows for its link to `peer`, once it has one. */
const failureOf = (page, peer, timeout) => page.waitForFunction((id) => {
  const l = window.ackwire.players.get(id);
  return l && l.state !== 'connected' && l.reason && { state: l.state, code: l.reason.code, message: l.reason.message };
}, peer, { timeout }).then((h) => h.jsonValue());

// Skipped until it passes every run: in 4 runs on this topology the pair connected through the
// relay in ~160 ms twice (first RTT 2.6 ms), but once never left "negotiating" (no ICE state
// at all) and once the chat sent after the first RTT did not arrive within 10 s. Native peers
// do not connect here at all (docs/native-rooms.md, "Behind symmetric NATs"). Both are issue
// #24's open work.
test('two Chromium players, each behind its own symmetric NAT, link through the TURN relay and chat once', { skip: 'not yet reliable (see the comment above)' }, async () => {
  const internet = buildInternet(2);
  const wrappers = internet.homes.map(chromiumIn);
  const turn = await startCoturn(SECRET, { host: PUBLIC });
  const server = await startServer(0, { host: PUBLIC, args: ['--turn-url', turn.url, '--turn-secret', SECRET] });
  const browsers = await Promise.all(wrappers.map((w) => launchBrowser([], { executablePath: w.path })));
  try {
    const room = 'behind-nats';
    const [[a, aId], [b, bId]] = await joinInTurn(server, browsers, room);
    const bothPresent = Date.now();
    for (const [page, other] of [[a, bId], [b, aId]]) {
      const candidate = await page.page.waitForFunction((peer) => {
        const l = window.ackwire.players.get(peer);
        return l?.state === 'connected' && l.candidate;
      }, other, { timeout: 20000 }).then((h) => h.jsonValue()).catch(async (e) => {
        const l = await page.page.evaluate((peer) => JSON.stringify(window.ackwire.players.get(peer)), other);
        throw new Error(`the link to ${other}: ${l}`, { cause: e });
      });
      assert.equal(candidate, 'relay', `the path to ${other} goes through the relay (its table says ${candidate})`);
      console.log(`Chromium ↔ Chromium behind symmetric NATs: connected through the relay ${Date.now() - bothPresent} ms after both were present`);
    }
    // Acked packets over the relay: an RTT in the link table.
    const rtt = await a.page.waitForFunction((peer) => {
      const row = document.querySelector(`#peers tbody tr[data-peer="${peer}"]`);
      const m = row && /(\d+(\.\d+)?) ms/.exec(row.textContent);
      return m && Number(m[1]);
    }, bId, { timeout: 10000 }).then((h) => h.jsonValue());
    console.log(`first RTT over the relay: ${rtt} ms, ${Date.now() - bothPresent} ms after both were present`);
    // coturn carried them: allocations for users named expiry:peer.
    for (const id of [aId, bId]) assert.match(turn.log(), new RegExp(`\\d+:${id}\\b`));

    await a.page.fill('#chat-input', 'hello across the NATs');
    await a.page.click('#chat-form button');
    await b.page.waitForFunction((t) => window.ackwire.chat.some((m) => m.text === t), 'hello across the NATs', { timeout: 10000 });
    assert.equal(await b.page.evaluate((t) => window.ackwire.chat.filter((m) => m.text === t).length, 'hello across the NATs'), 1);
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await Promise.all(browsers.map((b) => b.close()));
    await server.stop();
    await turn.stop();
    wrappers.forEach((w) => w.remove());
    internet.remove();
  }
});

test('without a TURN server, players behind symmetric NATs see the link fail with its reason, not "connecting" for ever', async () => {
  const internet = buildInternet(2);
  const wrappers = internet.homes.map(chromiumIn);
  const server = await startServer(0, { host: PUBLIC });
  const browsers = await Promise.all(wrappers.map((w) => launchBrowser([], { executablePath: w.path })));
  try {
    const room = 'no-relay';
    const [[a, aId], [b, bId]] = await joinInTurn(server, browsers, room);
    for (const [page, other] of [[a, bId], [b, aId]]) {
      const failed = await failureOf(page.page, other, 30000);
      console.log(`no TURN, behind symmetric NATs: ${failed.state} (${failed.code}: ${failed.message})`);
      assert.ok(['ice_failed', 'timeout'].includes(failed.code), JSON.stringify(failed));
      assert.match(failed.message, /TURN server/);
    }
  } finally {
    await Promise.all(browsers.map((b) => b.close()));
    await server.stop();
    wrappers.forEach((w) => w.remove());
    internet.remove();
  }
});
