// Links recover: a player whose cable is pulled for longer than the core's idle timeout
// comes back on every link and chats again; a signal-server kill and restart leaves exactly
// one link per pair on every page, in the native peer's output and on the dashboard.
// Real Chromium, real ackwire-signal and ackwire-peer, loopback only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launchBrowser, openPage, reliableSettled, sayInChat, startServer } from './harness.mjs';
import { joinNative } from './native.mjs';

const myId = (p, timeout = 10000) => p.page.waitForFunction(() => window.ackwire?.me.id, null, { timeout }).then((h) => h.jsonValue());
const connectedTo = (p, id, timeout = 10000) => p.page.waitForFunction(
  (peer) => window.ackwire.players.get(peer)?.state === 'connected', id, { timeout },
);
const chatsFrom = (p, id, text) => p.page.evaluate(
  ([from, t]) => window.ackwire.chat.filter((m) => m.from === `peer ${from}` && m.text === t).length, [id, text],
);

/** What a page knows of its links and its log's last lines: said when a wait fails. */
const pageState = (p) => p.page.evaluate(() => JSON.stringify({
  links: [...window.ackwire.links.values()].map(({ link, peer, kind, state, reason, transport, unconfirmed, attempt_ms }) => (
    { link, peer, kind, state, reason: reason?.code, transport, unconfirmed, attempt_ms })),
  log: window.ackwire.log.slice(-40),
}));

/** A server and a browser of this test's own, so a restart touches no other test. */
async function world() {
  const env = { server: await startServer(0), browser: await launchBrowser() };
  return {
    env,
    async close() { await env.browser.close(); await env.server.stop(); },
  };
}

test('a player whose cable is pulled past the idle timeout loses its links, gets them back, and what it said meanwhile arrives once', async () => {
  const w = await world();
  const room = 'outage';
  const a = await openPage(w.env, `/room/${room}`);
  const aId = await myId(a);
  const b = await openPage(w.env, `/room/${room}`);
  const bId = await myId(b);
  const native = await joinNative(`${w.env.server.url}/room/${room}`);
  try {
    for (const [p, id] of [[a, bId], [a, native.id], [b, aId], [b, native.id]]) await connectedTo(p, id);
    await a.page.evaluate(() => window.ackwire.client.setOutage(true));
    // A line said while the cable is out but before the links time out: queued on links that
    // are about to die, it must reach everyone once they are back, exactly once.
    const dying = `dying ${Math.random().toString(36).slice(2)}`;
    await sayInChat(a.page, dying);
    // The core's idle timeout is 10 s: the others see the link lost, and say why.
    const lost = await b.page.waitForFunction((id) => {
      const l = window.ackwire.players.get(id);
      return l && l.state !== 'connected' && l.reason && { state: l.state, reason: l.reason.code, why: l.reason.message };
    }, aId, { timeout: 15000 }).then((h) => h.jsonValue());
    console.log(`B's link to A after the cable pull: ${lost.state} (${lost.reason}: ${lost.why})`);
    assert.ok(['idle_timeout', 'channel_closed'].includes(lost.reason), JSON.stringify(lost));
    await native.waitFor('the native losing A', (l) => native.linkState(l, aId, 'lost'), 15000);
    // The table (redrawn four times a second) shows the state and says why.
    const row = await b.page.waitForFunction((id) => {
      const r = document.querySelector(`#peers tbody tr[data-peer="${id}"]`);
      const cells = r && [...r.children].map((td) => td.textContent);
      return cells && cells[1] !== 'connected' && cells[8] !== '' && cells;
    }, aId, { timeout: 2000 }).then((h) => h.jsonValue());
    console.log(`B's table row for A: ${row.join(' | ')}`);
    assert.ok(await b.page.evaluate((id) => window.ackwire.players.get(id)?.state !== 'connected', aId));
    // Lines said while the links are down, both ways: kept, and carried by the next links.
    const down = `down ${Math.random().toString(36).slice(2)}`;
    await sayInChat(a.page, down);
    const toA = `to a ${Math.random().toString(36).slice(2)}`;
    await sayInChat(b.page, toA);

    const plugged = Date.now();
    await a.page.evaluate(() => window.ackwire.client.setOutage(false));
    for (const [p, id] of [[a, bId], [a, native.id], [b, aId]]) await connectedTo(p, id, 20000);
    await native.waitFor('the native linked with A again', (l) => native.linkState(l, aId, 'connected'), 20000, 0);
    console.log(`all of A's links back ${Date.now() - plugged} ms after the cable went back in`);

    const text = `back ${Math.random().toString(36).slice(2)}`;
    await sayInChat(a.page, text);
    try {
      await b.page.waitForFunction(([id, t]) => window.ackwire.chat.some((m) => m.from === `peer ${id}` && m.text === t), [aId, text], { timeout: 5000 });
      await native.waitFor('the chat line', (l) => l.type === 'chat' && l.peer === aId && l.text === text, 5000);
    } catch (e) {
      // Seen once under load (2026-11-30), not since: the line said right after the links came
      // back reached neither B nor the native. What each side knew says where it waited.
      throw new Error(`${e.message}\nA (${aId}): ${await pageState(a)}\nB (${bId}): ${await pageState(b)}\n`
        + `the native's last lines: ${JSON.stringify(native.lines.slice(-30))}`);
    }
    await reliableSettled(a, aId, b, bId);
    await reliableSettled(a, aId, native, native.id);
    assert.equal(await chatsFrom(b, aId, text), 1, 'delivered once to B');
    assert.equal(native.lines.filter((l) => l.type === 'chat' && l.text === text).length, 1, 'delivered once to the native');
    // The line said while the links were dying came with the new links, once, before the next.
    const order = await b.page.evaluate((id) => window.ackwire.chat.filter((m) => m.from === `peer ${id}`).map((m) => m.text), aId);
    const said = [dying, down, text];
    assert.deepEqual(order.filter((t) => said.includes(t)), said, 'B: the lines of the outage once, in order');
    const nativeOrder = native.lines.filter((l) => l.type === 'chat' && l.peer === aId).map((l) => l.text);
    assert.deepEqual(nativeOrder.filter((t) => said.includes(t)), said, 'the native: the lines of the outage once, in order');
    await reliableSettled(b, bId, a, aId);
    assert.equal(await chatsFrom(a, bId, toA), 1, "B's line said while A was down reached A once");
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await native.stop();
    await w.close();
  }
});

/**
 * The restart scenario. `warmup` players join and leave first, so the ids before the restart
 * are above those the new server hands out (none reused); with 0 the new server hands the same
 * ids out again, to whoever rejoins first.
 */
async function restartScenario(warmup) {
  const w = await world();
  const room = 'phoenix';
  for (let i = 0; i < warmup; i++) {
    const p = await openPage(w.env, `/room/${room}`);
    await myId(p);
    await p.page.context().close();
  }
  const a = await openPage(w.env, `/room/${room}`);
  const b = await openPage(w.env, `/room/${room}`);
  const native = await joinNative(`${w.env.server.url}/room/${room}`);
  const dash = await openPage(w.env, `/room/${room}/dashboard`, { width: 1400, height: 900 });
  try {
    const [aId, bId] = [await myId(a), await myId(b)];
    for (const [p, id] of [[a, bId], [a, native.id], [b, aId], [b, native.id]]) await connectedTo(p, id);
    const linkIds = async (p) => p.page.evaluate(() => [...window.ackwire.links.keys()].sort());
    const before = [await linkIds(a), await linkIds(b)];

    const port = w.env.server.port;
    await w.env.server.stop();
    // Down until every member has seen it go (their sockets closed, reconnecting).
    for (const p of [a, b]) {
      await p.page.waitForFunction(() => document.getElementById('status').dataset.state === 'reconnecting', null, { timeout: 10000 });
    }
    await native.waitFor('the server gone', (l) => l.type === 'stats' && l.signalling === 'reconnecting', 10000, native.lines.length);
    const mark = native.lines.length;
    w.env.server = await startServer(port);
    const restarted = Date.now();

    // Everyone joins the new server afresh (it remembers nothing) and gets a new id.
    const welcomed = (p) => p.page.waitForFunction(
      () => window.ackwire.log.filter((l) => l.startsWith('welcomed as peer')).length >= 2 && window.ackwire.me.id, null, { timeout: 10000 },
    ).then((h) => h.jsonValue());
    const [a2, b2] = [await welcomed(a), await welcomed(b)];
    const n2 = (await native.waitFor('a new welcome', (l) => l.type === 'welcome', 10000, mark)).peer_id;
    console.log(`ids before the restart: ${aId}, ${bId}, native ${native.id}; after: ${a2}, ${b2}, native ${n2}`);
    if (warmup > 0) assert.ok([a2, b2, n2].every((id) => ![aId, bId, native.id].includes(id)), 'no id reused');

    // Every page: exactly the two others, connected, under their new ids; never itself.
      const want = { [a2]: [b2, n2], [b2]: [a2, n2] };
    for (const [p, me] of [[a, a2], [b, b2]]) {
      await p.page.waitForFunction(([others]) => {
        const ls = [...window.ackwire.links.values()];
        return ls.length === 2 && ls.every((l) => l.state === 'connected') && others.every((o) => ls.some((l) => l.peer === o));
      }, [want[me]], { timeout: 5000 });
      // The table (redrawn four times a second) says the same: two rows, neither of them us.
      const rows = await p.page.waitForFunction(([others]) => {
        const peers = [...document.querySelectorAll('#peers tbody tr')].map((r) => r.dataset.peer).sort();
        return JSON.stringify(peers) === JSON.stringify(others.map(String).sort()) && peers;
      }, [want[me]], { timeout: 2000 }).then((h) => h.jsonValue());
      assert.ok(!rows.includes(String(me)), `page ${me} lists itself: ${rows}`);
    }
    // The links are the same as before the restart, renamed, not renegotiated.
    assert.deepEqual([await linkIds(a), await linkIds(b)], before);
    const line = await native.waitFor('stats with both links under the new ids', (l) => l.type === 'stats'
      && l.links.length === 2 && [a2, b2].every((id) => native.link(l, id)?.state === 'connected'), 5000, mark);
    assert.equal(line.links.length, 2);

    // The dashboard: the six directed links of the new ids, nothing else.
    const expected = [[a2, b2], [a2, n2], [b2, a2], [b2, n2], [n2, a2], [n2, b2]].map(([f, t]) => `${room}/${f}→${t}`).sort();
    await dash.page.waitForFunction((keys) => {
      const shown = [...document.querySelectorAll('section.link')].map((c) => c.dataset.link).sort();
      return JSON.stringify(shown) === JSON.stringify(keys);
    }, expected, { timeout: 5000 });
    console.log(`one link per pair everywhere ${Date.now() - restarted} ms after the server came back`);
    assert.ok(Date.now() - restarted < 8000);
    assert.deepEqual([...a.errors, ...b.errors, ...dash.errors], []);
  } finally {
    await native.stop();
    await w.close();
  }
}

test('after a signal-server restart that hands the same ids out again, every page, the native and the dashboard show exactly one link per pair within 5 s', () => restartScenario(0));

test('after a signal-server restart with all-new ids, every page, the native and the dashboard show exactly one link per pair within 5 s', () => restartScenario(3));

test('a link with no network path fails with a reason the player understands, on the page and the dashboard', async () => {
  const w = await world();
  const room = 'nopath';
  const dash = await openPage(w.env, `/room/${room}/dashboard`, { width: 1400, height: 900 });
  // ?relay: ICE may use TURN relays only, and this server offers none: no candidate pair can
  // work. ?attempt=5 (the JS API's `attemptTimeoutMs`; the native's `--attempt-timeout`): a
  // link not connected after 5 s is lost, not after the default 20.
  const a = await openPage(w.env, `/room/${room}?relay&attempt=5`);
  const aId = await myId(a);
  const b = await openPage(w.env, `/room/${room}?attempt=5`);
  const bId = await myId(b);
  const native = await joinNative(`${w.env.server.url}/room/${room}`, ['--attempt-timeout', '5']);
  /** The reason names the path's want, and a timeout the 5 s asked for. */
  const explains = (code, why) => {
    assert.ok(['ice_failed', 'timeout'].includes(code), `${code}: ${why}`);
    assert.match(why, code === 'timeout' ? /within 5 s; .*TURN server/ : /TURN server/);
  };
  try {
    const started = Date.now();
    // Within the browser's ICE timeout or the 5 s attempt timeout, whichever says so first,
    // both pages show the link failed and why.
    for (const [p, other] of [[a, bId], [b, aId]]) {
      const failed = await p.page.waitForFunction((id) => {
        const l = window.ackwire.players.get(id);
        return l && l.reason && l.state !== 'connected' && { state: l.state, code: l.reason.code, why: l.reason.message };
      }, other, { timeout: 15000 }).then((h) => h.jsonValue());
      console.log(`no path: ${failed.code} after ${Date.now() - started} ms: "${failed.why}"`);
      explains(failed.code, failed.why);
    }
    // The native peer, too, says why it cannot reach A, while its link with B works.
    const lost = await native.waitFor('the link to A lost', (l) => native.linkState(l, aId, 'lost'), 15000);
    explains(lost.reason.code, lost.reason.message);
    await connectedTo(b, native.id);
    // The header's link summary says so too, and the signalling badge still says connected.
    assert.match(await b.page.textContent('#links-status'), /TURN server/);
    assert.equal(await b.page.getAttribute('#status', 'data-state'), 'connected');
    // The dashboard shows the failed link and its reason.
    const card = await dash.page.waitForFunction((key) => {
      const c = document.querySelector(`section.link[data-link="${key}"]`);
      return c && c.dataset.state !== 'connected' && c.querySelector('.why').textContent.includes('TURN') && c.dataset.state;
    }, `${room}/${bId}→${aId}`, { timeout: 5000 }).then((h) => h.jsonValue());
    assert.notEqual(card, 'connected');
    assert.deepEqual([...a.errors, ...b.errors, ...dash.errors], []);
  } finally {
    await native.stop();
    await w.close();
  }
});
