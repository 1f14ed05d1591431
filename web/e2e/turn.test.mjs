// Links through a TURN relay: a real coturn (Debian's `turnserver`, which `cargo xtask setup`
// installs) beside the signal server, which hands each player short-lived credentials in its
// welcome. Two pages that may use relayed candidates only (`?relay`) connect through it, and
// chat arrives exactly once. Real Chromium, loopback only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launchBrowser, openPage, sayInChat, startCoturn, startServer } from './harness.mjs';
import { joinNative } from './native.mjs';

const SECRET = 'e2e-turn-secret';

/** coturn on loopback, where both players are. */
const startLoopbackCoturn = () => startCoturn(SECRET, { extra: ['--allow-loopback-peers'] });

const myId = (p) => p.page.waitForFunction(() => window.ackwire?.me.id, null, { timeout: 10000 }).then((h) => h.jsonValue());

/** The candidate type of `p`'s connected link to `id` (it comes with the link's stats, a moment after it connects). */
const connectedVia = (p, id, timeout) => p.page.waitForFunction((peer) => {
  const l = window.ackwire.players.get(peer);
  return l?.state === 'connected' && l.candidate;
}, id, { timeout }).then((h) => h.jsonValue());

/**
 * A coturn, a signal server handing it out (`args` besides) and two pages of `room` limited to
 * relayed candidates; runs `body` with them and tears everything down. `opened` is when the
 * first page was opened, `welcomed` when both had their welcome.
 */
async function withRelayOnlyPair(room, args, body) {
  const turn = await startLoopbackCoturn();
  const server = await startServer(0, { args: ['--turn-url', turn.url, '--turn-secret', SECRET, ...args] });
  const browser = await launchBrowser();
  const env = { server, browser };
  try {
    const opened = Date.now();
    const a = await openPage(env, `/room/${room}?relay`);
    const aId = await myId(a);
    const b = await openPage(env, `/room/${room}?relay`);
    const bId = await myId(b);
    await body({ server, turn, a, b, aId, bId, opened, welcomed: Date.now() });
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await browser.close();
    await server.stop();
    await turn.stop();
  }
}

test('two players limited to relayed candidates connect through coturn with the welcome\'s credentials, chat once, and a native peer reaches them through it', () => withRelayOnlyPair('relayed', [], async ({ server, turn, a, b, aId, bId, opened }) => {
  for (const [p, other] of [[a, bId], [b, aId]]) {
    assert.equal(await connectedVia(p, other, 20000), 'relay');
    console.log(`relayed link to peer ${other}: connected ${Date.now() - opened} ms after the first page opened`);
  }
  // coturn really carried it: it logged an allocation for a user named expiry:peer.
  assert.match(turn.log(), new RegExp(`\\d+:(${aId}|${bId})`));
  await sayInChat(a.page, 'through the relay');
  await b.page.waitForFunction((id) => window.ackwire.chat.some((m) => m.from === `peer ${id}` && m.text === 'through the relay'), aId, { timeout: 5000 });
  const copies = await b.page.evaluate((id) => window.ackwire.chat.filter((m) => m.from === `peer ${id}` && m.text === 'through the relay').length, aId);
  assert.equal(copies, 1);

  // A native peer joins: its links to the relay-only pages pair its host candidate with
  // their relayed ones (the pages offer, so their ICE agents choose the pair).
  const native = await joinNative(`${server.url}/room/relayed`);
  try {
    const welcomed = Date.now();
    for (const id of [aId, bId]) {
      const line = await native.waitFor(`link to ${id}`, (l) => native.linkState(l, id, 'connected'), 15000);
      console.log(`native ↔ relay-only page ${id}: connected ${Date.now() - welcomed} ms after the native's welcome (attempt ${line.attempt_ms} ms)`);
    }
    assert.equal(await connectedVia(a, native.id, 5000), 'relay');
  } finally {
    await native.stop();
  }
}));

test('a relayed link that renegotiates after its first credentials expired connects again with the fresh ones the server pushed', () => {
  // Credentials for 8 s, renewed at 6 s. The link is lost to a pulled cable (the core's 10 s
  // idle timeout) and renegotiated after both pages' welcome credentials have expired: coturn
  // takes only the fresh ones.
  const ttl = 8000;
  return withRelayOnlyPair('renewed', ['--turn-ttl', String(ttl / 1000)], async ({ a, b, aId, bId, welcomed }) => {
    assert.equal(await connectedVia(b, aId, 20000), 'relay');
    await a.page.evaluate(() => window.ackwire.client.setOutage(true));
    // The first reason b's link gives once it is no longer connected: the pulled cable's.
    // Either side's 10 s idle timeout comes first: b's own, or a's, which closes a's peer
    // connection, and b's data channel with it.
    const reason = await b.page.waitForFunction((id) => {
      const l = window.ackwire.players.get(id);
      return l && l.state !== 'connected' && l.reason && { state: l.state, ...l.reason };
    }, aId, { timeout: 15000 }).then((h) => h.jsonValue());
    assert.ok(['idle_timeout', 'channel_closed'].includes(reason.code),
      `b lost its link to a to the pulled cable, not: ${JSON.stringify(reason)}\n${await b.page.evaluate(() => window.ackwire.log.join('\n'))}`);
    // Plugged back only once the welcome credentials have expired: they were issued before
    // `welcomed`, for `ttl` (coturn reads their expiry in whole seconds: one more).
    const expired = welcomed + ttl + 1000 - Date.now();
    if (expired > 0) await new Promise((resolve) => setTimeout(resolve, expired));
    const plugged = Date.now();
    await a.page.evaluate(() => window.ackwire.client.setOutage(false));
    assert.equal(await connectedVia(b, aId, 20000), 'relay');
    assert.equal(await connectedVia(a, bId, 5000), 'relay');
    console.log(`relayed link renegotiated ${Date.now() - plugged} ms after the cable went back in, ${Math.round((plugged - welcomed) / 1000)} s after the welcomes (TTL ${ttl / 1000} s)`);
  });
});
