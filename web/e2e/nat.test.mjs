// Players on other networks, each behind a symmetric NAT: every "home" is a network
// namespace behind its own router namespace that masquerades with a random public port per
// flow (`MASQUERADE --random-fully`) and lets only replies in. The routers' public sides, the
// signal server and coturn share an "internet" bridge in 203.0.113.0/24 (TEST-NET-3, which
// exists only inside the test's namespace). No two homes have a direct path: a link goes
// through the TURN relay, with the credentials the welcome carries, or it fails and says why.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launchBrowser, launchFirefox, openPage, sayInChat, startCoturn, startServer } from './harness.mjs';
import { PUBLIC, buildInternet, chromiumIn, firefoxIn } from './nat.mjs';
import { joinNative } from './native.mjs';

const SECRET = 'e2e-nat-secret';

/** Each browser opens `room`, one after the other; resolves with `[page, its peer id]` each. */
async function joinInTurn(server, browsers, room, query = '') {
  const joined = [];
  for (const browser of browsers) {
    const page = await openPage({ server, browser }, `/room/${room}${query}`);
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

/** A page of either browser, with one way to wait and to evaluate (playwright and puppeteer differ). */
function player(name, id, page, errors, puppeteer) {
  return {
    name,
    id,
    errors,
    waitFor: (fn, arg, timeout) => (puppeteer ? page.waitForFunction(fn, { timeout }, arg) : page.waitForFunction(fn, arg, { timeout }))
      .then((h) => h.jsonValue()),
    evaluate: (fn, arg) => page.evaluate(fn, arg),
    async chat(text) {
      await sayInChat(page, text);
    },
  };
}

test('Chromium, Firefox and native players, each behind its own symmetric NAT, link through the TURN relay and chat once', async () => {
  const internet = buildInternet(5);
  const [aHome, bHome, fHome, ...nativeHomes] = internet.homes;
  const wrappers = [aHome, bHome].map(chromiumIn);
  const ffWrapper = await firefoxIn(fHome);
  const turn = await startCoturn(SECRET, { host: PUBLIC });
  const server = await startServer(0, { host: PUBLIC, args: ['--turn-url', turn.url, '--turn-secret', SECRET] });
  const browsers = await Promise.all(wrappers.map((w) => launchBrowser([], { executablePath: w.path })));
  const firefox = await launchFirefox({ executablePath: ffWrapper.path, debuggingPort: ffWrapper.port });
  const natives = [];
  try {
    const room = 'behind-nats';
    const [[a, aId], [b, bId]] = await joinInTurn(server, browsers, room);
    const ffPage = await firefox.newPage();
    const ffErrors = [];
    ffPage.on('pageerror', (err) => ffErrors.push(err.message));
    await ffPage.goto(`${server.url}/room/${room}`);
    const fId = await ffPage.waitForFunction(() => window.ackwire?.me.id, { timeout: 15000 }).then((h) => h.jsonValue());
    for (const home of nativeHomes) {
      natives.push(await joinNative(`${server.url}/room/${room}`, [], { netns: home }));
    }
    const allPresent = Date.now();
    const [c, d] = natives;
    const pages = [
      player('Chromium A', aId, a.page, a.errors, false),
      player('Chromium B', bId, b.page, b.errors, false),
      player('Firefox', fId, ffPage, ffErrors, true),
    ];
    const everyone = [aId, bId, fId, c.id, d.id];
    const times = [];
    // Every pair: the pages' links (state and chosen path in their tables), the natives' (the
    // member's link events: a WebRTC link once their direct UDP attempt found no path).
    for (const page of pages) {
      for (const other of everyone.filter((id) => id !== page.id)) {
        const [candidate, attemptMs] = await page.waitFor((peer) => {
          const l = window.ackwire.players.get(peer);
          return l?.state === 'connected' && l.candidate && [l.candidate, l.attempt_ms];
        }, other, 25000).catch(async (e) => {
          const l = await page.evaluate((peer) => JSON.stringify(window.ackwire.players.get(peer)), other);
          throw new Error(`${page.name}'s link to ${other}: ${l}`, { cause: e });
        });
        assert.equal(candidate, 'relay', `${page.name}'s path to ${other} goes through the relay (its table says ${candidate})`);
        times.push([`${page.name} → ${other}`, attemptMs]);
      }
    }
    for (const [native, other] of [[c, d.id], [d, c.id]]) {
      const line = await native.waitFor(`link to ${other}`, (l) => native.linkState(l, other, 'connected'), 25000);
      assert.equal(line.transport, 'webrtc', `natives behind symmetric NATs meet over WebRTC: ${JSON.stringify(line)}`);
      times.push([`native ${native.id} → native ${other}`, line.attempt_ms]);
      // Through the relay in a few round trips: ~210-310 ms on an idle machine. The ICE and DTLS
      // timing itself is held by native-peer/tests/webrtc_link_time.rs (< 500 ms on loopback);
      // here the bound is wide, for load: CI runs this beside cargo builds and three browsers on
      // two cores, where it read 1,077 ms, and 3.5 s and 4.6 s on slower days (in the second, the
      // DTLS handshake and then the SCTP association each waited ~1 s, their first resend's
      // timer). It still fails a link that waits longer than that: on a resend timer that
      // doubles, or on a flight that never leaves.
      assert.ok(line.attempt_ms < 6000, `native ${native.id} → native ${other} took ${line.attempt_ms} ms over the relay`);
    }
    // Each link's own clock: from the attempt's start (its peer's arrival) to connected.
    for (const [what, ms] of times) console.log(`behind symmetric NATs: ${what} connected ${Math.round(ms)} ms after the link began`);
    console.log(`behind symmetric NATs: all links up ${Date.now() - allPresent} ms after all five were present`);
    // The natives' own reading of their relayed link: RTT from acked packets.
    for (const [native, other] of [[c, d], [d, c]]) {
      const line = await native.waitFor(`RTT to ${other.id} over the relay`, (l) => l.type === 'stats'
        && native.link(l, other.id)?.stats?.rtt_ms > 0 && native.link(l, other.id)?.candidate, 10000);
      // The native's own reading of the chosen path, as the pages' tables give theirs.
      assert.equal(native.link(line, other.id).candidate, 'relay');
      const rttMs = native.link(line, other.id).stats.rtt_ms;
      console.log(`native ${native.id} ↔ native ${other.id} over the relay: RTT ${rttMs.toFixed(1)} ms`);
      // The relay is on this machine (a path of ~1 ms); a wide bound, for load: CI runs
      // this beside two compiling lanes, where readings of 73 and 299 ms were seen (the
      // latter on a fresh machine, 2026-11-30). A link stalling on its retransmission timers
      // reads seconds.
      assert.ok(rttMs < 1000, `RTT ${rttMs} ms over a relay on this machine`);
    }
    // Acked packets over the relay: an RTT in the pages' link tables.
    for (const [page, other] of [[pages[0], bId], [pages[2], aId]]) {
      const rtt = await page.waitFor((peer) => {
        const row = document.querySelector(`#peers tbody tr[data-peer="${peer}"]`);
        const m = row && /(\d+(\.\d+)?) ms/.exec(row.textContent);
        return m && Number(m[1]);
      }, other, 10000);
      console.log(`${page.name} → ${other} RTT over the relay: ${rtt} ms, ${Date.now() - allPresent} ms after all were present`);
    }
    // coturn carried them: allocations for users named expiry:peer.
    for (const id of everyone) assert.match(turn.log(), new RegExp(`\\d+:${id}\\b`));

    // Chat, exactly once: a page to the other pages; each native greets every peer once its
    // link is up.
    await pages[0].chat('hello across the NATs');
    for (const page of pages.slice(1)) {
      await page.waitFor((t) => window.ackwire.chat.some((m) => m.text === t), 'hello across the NATs', 10000);
      assert.equal(await page.evaluate((t) => window.ackwire.chat.filter((m) => m.text === t).length, 'hello across the NATs'), 1, page.name);
    }
    for (const page of pages) {
      for (const native of natives) {
        const greeting = `hello from native peer ${native.id}`;
        await page.waitFor((t) => window.ackwire.chat.some((m) => m.text === t), greeting, 10000);
        assert.equal(await page.evaluate((t) => window.ackwire.chat.filter((m) => m.text === t).length, greeting), 1, page.name);
      }
    }
    for (const [native, other] of [[c, d], [d, c]]) {
      const greeting = `hello from native peer ${other.id}`;
      await native.waitFor(`${other.id}'s greeting`, (l) => l.type === 'chat' && l.text === greeting, 10000);
      assert.equal(native.lines.filter((l) => l.type === 'chat' && l.text === greeting).length, 1);
    }
    assert.deepEqual(pages.flatMap((p) => p.errors), []);
  } finally {
    await Promise.all(natives.map((n) => n.stop()));
    await firefox.close();
    await Promise.all(browsers.map((br) => br.close()));
    await server.stop();
    await turn.stop();
    wrappers.forEach((w) => w.remove());
    ffWrapper.remove();
    internet.remove();
  }
});

test('a native host on the public side: Chromium, Firefox and native clients, each behind its own symmetric NAT, link to it directly without TURN', async () => {
  const internet = buildInternet(3);
  const [cHome, fHome, nHome] = internet.homes;
  const wrapper = chromiumIn(cHome);
  const ffWrapper = await firefoxIn(fHome);
  // No TURN, no STUN: a public host's candidates are public, which is all a client needs.
  const server = await startServer(0, { host: PUBLIC });
  const browser = await launchBrowser([], { executablePath: wrapper.path });
  const firefox = await launchFirefox({ executablePath: ffWrapper.path, debuggingPort: ffWrapper.port });
  const room = 'public-host';
  const url = `${server.url}/room/${room}`;
  const host = await joinNative(url, [], { command: 'host', bind: `${PUBLIC}:0` });
  let native;
  try {
    const cr = await openPage({ server, browser }, `/room/${room}?role=client`);
    const crId = await cr.page.waitForFunction(() => window.ackwire?.me.id, null, { timeout: 15000 }).then((h) => h.jsonValue());
    const ffPage = await firefox.newPage();
    const ffErrors = [];
    ffPage.on('pageerror', (err) => ffErrors.push(err.message));
    await ffPage.goto(`${url}?role=client`);
    const fId = await ffPage.waitForFunction(() => window.ackwire?.me.id, { timeout: 15000 }).then((h) => h.jsonValue());
    native = await joinNative(url, ['--role', 'client'], { netns: nHome });
    const allPresent = Date.now();
    const pages = [
      player('Chromium', crId, cr.page, cr.errors, false),
      player('Firefox', fId, ffPage, ffErrors, true),
    ];
    // Each page's one link: to the host, on a direct path (the pages' tables say which).
    for (const page of pages) {
      const [peer, candidate, attemptMs] = await page.waitFor(() => {
        const links = [...window.ackwire.links.values()];
        return links.length === 1 && links[0].state === 'connected' && links[0].candidate
          && [links[0].peer, links[0].candidate, links[0].attempt_ms];
      }, undefined, 25000).catch(async (e) => {
        const l = await page.evaluate(() => JSON.stringify([...window.ackwire.links.values()]));
        throw new Error(`${page.name}'s links: ${l}`, { cause: e });
      });
      assert.equal(peer, host.id);
      assert.ok(['host', 'srflx', 'prflx'].includes(candidate), `${page.name} → the host: a direct path, not ${candidate}`);
      console.log(`behind a symmetric NAT, to a public host: ${page.name} connected directly (${candidate}) ${Math.round(attemptMs)} ms after its link began`);
    }
    const line = await native.waitFor('its link to the host', (l) => l.type === 'stats' && l.links.length === 1
      && l.links[0].state === 'connected' && l.links[0].candidate, 25000);
    const link = line.links[0];
    assert.equal(link.peer, host.id);
    // Another network than the host's: straight to ICE, which finds the public host's path.
    assert.equal(link.transport, 'webrtc');
    assert.ok(['host', 'srflx', 'prflx'].includes(link.candidate), `native client → the host: ${link.candidate}`);
    console.log(`behind a symmetric NAT, to a public host: the native client connected directly (${link.candidate}) ${Math.round(link.attempt_ms)} ms after its link began; all three ${Date.now() - allPresent} ms after all were present`);
    await host.waitFor('three clients', (l) => l.type === 'stats' && l.links.filter((k) => k.state === 'connected').length === 3, 10000);

    // Chat through the host, once: from the Chromium page to Firefox and the native.
    await pages[0].chat('hello through the host');
    await pages[1].waitFor((t) => window.ackwire.chat.some((m) => m.text === t), 'hello through the host', 10000);
    await native.waitFor('the relayed line', (l) => l.type === 'chat' && l.text === 'hello through the host', 10000);
    assert.equal(await pages[1].evaluate((t) => window.ackwire.chat.filter((m) => m.text === t).length, 'hello through the host'), 1);
    assert.deepEqual(pages.flatMap((p) => p.errors), []);
  } finally {
    await native?.stop();
    await host.stop();
    await firefox.close();
    await browser.close();
    await server.stop();
    wrapper.remove();
    ffWrapper.remove();
    internet.remove();
  }
});

test('two Chromium players behind cone NATs, with a STUN server only, link directly and chat once', async () => {
  const internet = buildInternet(2, { nat: 'cone' });
  const wrappers = internet.homes.map(chromiumIn);
  // coturn answers STUN binding requests without credentials: here it is only a STUN server.
  const stun = await startCoturn(SECRET, { host: PUBLIC });
  const stunUrl = stun.url.replace(/^turn:/, 'stun:').replace(/\?.*$/, '');
  const server = await startServer(0, { host: PUBLIC, args: ['--ice-servers', JSON.stringify([{ urls: [stunUrl] }])] });
  const browsers = await Promise.all(wrappers.map((w) => launchBrowser([], { executablePath: w.path })));
  try {
    const room = 'cone';
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
      assert.notEqual(candidate, 'relay');
      console.log(`Chromium ↔ Chromium behind cone NATs: connected directly (${candidate}) ${Date.now() - bothPresent} ms after both were present`);
    }
    // No relay exists here: the link is the NATs' own path.
    assert.doesNotMatch(stun.log(), /ALLOCATE processed, success/);
    await sayInChat(a.page, 'hello through the hole');
    await b.page.waitForFunction((t) => window.ackwire.chat.some((m) => m.text === t), 'hello through the hole', { timeout: 10000 });
    assert.equal(await b.page.evaluate((t) => window.ackwire.chat.filter((m) => m.text === t).length, 'hello through the hole'), 1);
    assert.deepEqual([...a.errors, ...b.errors], []);
  } finally {
    await Promise.all(browsers.map((br) => br.close()));
    await server.stop();
    await stun.stop();
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
    // Links that have not connected after 5 s are lost (`?attempt=5`, the JS API's
    // `attemptTimeoutMs`), not after the default 20.
    const [[a, aId], [b, bId]] = await joinInTurn(server, browsers, room, '?attempt=5');
    for (const [page, other] of [[a, bId], [b, aId]]) {
      const failed = await failureOf(page.page, other, 15000);
      console.log(`no TURN, behind symmetric NATs: ${failed.state} (${failed.code}: ${failed.message})`);
      assert.ok(['ice_failed', 'timeout'].includes(failed.code), JSON.stringify(failed));
      assert.match(failed.message, failed.code === 'timeout' ? /within 5 s; .*TURN server/ : /TURN server/);
    }
  } finally {
    await Promise.all(browsers.map((b) => b.close()));
    await server.stop();
    wrappers.forEach((w) => w.remove());
    internet.remove();
  }
});
