// A join does not wait for the wasm (docs/api.md, "Cold start"): the page's script opens the
// signalling socket at once and, once the welcome names natives, offers to each of them from
// JS, and answers the offers of the browsers already in the room; the browser driver adopts
// those live connections when the wasm is there. Here the wasm is held back until the other
// end of the link is open, then the page's member takes the link over and it connects (one
// DTLS handshake on the wire: the adopted connection, not a second one), chats, and survives
// a signalling server restart. The other order, the wasm before the welcome (a welcome later
// than the 50 ms the compiled wasm waits for it), is forced here by holding the welcome back.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { captureUdp } from './capture.mjs';
import { launchBrowser, requireEnv, sayInChat, startServer } from './harness.mjs';
import { joinNative } from './native.mjs';

test('the bound the wasm waits for the server\'s first frame and an early link\'s first candidate is the one docs/api.md and the .d.ts state', () => {
  const web = requireEnv('ACKWIRE_WEB_DIR');
  const flat = (file) => readFileSync(file, 'utf8').replace(/\s+/g, ' ');
  const ms = Number(/const GATHERING_WAIT_MS = (\d+);/.exec(flat(join(web, 'ackwire.js')))?.[1]);
  assert.ok(ms > 0, 'ackwire.js names its bound');
  assert.ok(flat(join(web, '../docs/api.md')).includes(`(or ${ms} ms after it was made)`), `docs/api.md says ${ms} ms`);
  assert.ok(flat(join(web, 'ackwire.d.ts')).includes(`(or ${ms} ms after the link was made)`), `the .d.ts says ${ms} ms`);
  // The same bound for the server's first frame (`timeline.heard`).
  assert.ok(flat(join(web, '../docs/api.md')).includes(`start; ${ms} ms at most: \`timeline.heard\``), `docs/api.md says ${ms} ms for the welcome`);
  assert.ok(flat(join(web, 'ackwire.d.ts')).includes(`The wasm waits for it (${ms} ms at most)`), `the .d.ts says ${ms} ms for the welcome`);
});

const connectedTo = (page, id, timeout = 15000) => page.waitForFunction(
  (peer) => window.ackwire?.players.get(peer)?.state === 'connected', id, { timeout },
);

/** A page in a fresh context of `browser`, and the errors it throws. */
async function freshPage(browser) {
  const page = await (await browser.newContext()).newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err.message));
  return { page, errors };
}

/** A page on `url` whose wasm is only served once `release()` is called. */
async function pageWithHeldWasm(browser, url) {
  const { page, errors } = await freshPage(browser);
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  let requested;
  const asked = new Promise((resolve) => { requested = resolve; });
  await page.route(/ackwire_wasm_bg\.wasm/, async (route) => {
    requested();
    await released;
    await route.continue();
  });
  await page.goto(url);
  return { page, errors, release, asked };
}

/** A signal server, a browser to open pages in, and a native peer in `room`. */
async function nativeRoom(room) {
  const server = await startServer(0);
  const browser = await launchBrowser();
  const url = `${server.url}/room/${room}`;
  return { server, browser, url, native: await joinNative(url) };
}

test('the wasm arriving after the welcome: the page offered already, the driver adopts the open link, and it survives a server restart', async () => {
  const { server, browser, url, native } = await nativeRoom('early');
  let restarted;
  try {
    const capture = await captureUdp('early-join');
    const player = await pageWithHeldWasm(browser, url);
    await player.asked;
    // With the wasm still held, the native's end of the link opens: offer, answer, ICE, DTLS
    // and SCTP all ran on the page's JS alone.
    const open = await native.waitFor('its link to the page open', (l) => l.type === 'link' && l.state === 'open', 15000);
    player.release();
    await connectedTo(player.page, native.id);
    const connected = await native.waitFor('the link connected', (l) => native.linkState(l, open.peer, 'connected'), 10000);
    assert.equal(connected.transport, 'webrtc');
    const timeline = await player.page.evaluate(() => window.ackwire.metrics.timeline);
    assert.ok(timeline.offer < timeline.wasm, `offered at ${timeline.offer} ms, wasm ready at ${timeline.wasm} ms`);
    console.log(`offer ${timeline.offer.toFixed(0)} ms, wasm ${timeline.wasm.toFixed(0)} ms, `
      + `connected ${timeline.connected?.toFixed(0)} ms after navigation (the wasm held until the native's end was open)`);
    // One DTLS handshake: the page's connection was adopted, no second one made.
    const handshakes = await capture.stop();
    const hellos = handshakes.filter((m) => m.type === 'ClientHello');
    assert.equal(hellos.length, 1, handshakes.map((m) => `${m.type} ${m.from} → ${m.to}`).join('\n'));

    // Reliable chat both ways over the adopted link, exactly once.
    const greeting = `hello from native peer ${native.id}`;
    await player.page.waitForFunction(([id, t]) => window.ackwire.chat.some((m) => m.from === `peer ${id}` && m.text === t), [native.id, greeting], { timeout: 5000 });
    await sayInChat(player.page, 'early bird');
    await native.waitFor('the chat line', (l) => l.type === 'chat' && l.text === 'early bird', 5000);

    // The signalling server restarts: the link does not pass through it and keeps flowing; the
    // page joins the new server (its early socket long adopted) and still links with the native.
    const mark = native.lines.length;
    await server.stop();
    restarted = await startServer(server.port);
    const welcome = await native.waitFor('a new welcome', (l) => l.type === 'welcome', 15000, mark);
    await player.page.waitForFunction(
      () => window.ackwire.log.filter((l) => l.startsWith('welcomed as peer')).length >= 2, null, { timeout: 15000 },
    );
    await connectedTo(player.page, welcome.peer_id);
    await sayInChat(player.page, 'after the restart');
    await native.waitFor('the chat line after the restart', (l) => l.type === 'chat' && l.text === 'after the restart', 5000, mark);
    assert.deepEqual(player.errors, []);
  } finally {
    await native.stop();
    await browser.close();
    await (restarted ?? server).stop();
  }
});

test('a newcomer whose wasm arrives after the offer of a player already in the room answers from JS, and the driver adopts the open link', async () => {
  const server = await startServer(0);
  const browser = await launchBrowser();
  const url = `${server.url}/room/early-pair`;
  try {
    const first = await (await browser.newContext()).newPage();
    await first.goto(url);
    const firstId = await first.waitForFunction(() => window.ackwire?.me.id, null, { timeout: 10000 }).then((h) => h.jsonValue());
    const capture = await captureUdp('early-pair');
    const newcomer = await pageWithHeldWasm(browser, url);
    await newcomer.asked;
    // The player already in the room offers to the newcomer; the newcomer's JS answers, and
    // the link opens on the first player's side while the newcomer's wasm is still held.
    const newcomerId = await first.waitForFunction(
      () => [...window.ackwire.players.entries()].find(([, p]) => p.state === 'open' || p.state === 'connected')?.[0],
      null, { timeout: 15000 },
    ).then((h) => h.jsonValue());
    newcomer.release();
    await connectedTo(newcomer.page, firstId);
    await connectedTo(first, newcomerId);
    const timeline = await newcomer.page.evaluate(() => window.ackwire.metrics.timeline);
    assert.ok(timeline.answer < timeline.wasm, `answered at ${timeline.answer} ms, wasm ready at ${timeline.wasm} ms`);
    console.log(`answer ${timeline.answer.toFixed(0)} ms, wasm ${timeline.wasm.toFixed(0)} ms, `
      + `connected ${timeline.connected?.toFixed(0)} ms after navigation (the wasm held until the other end was open)`);
    const hellos = (await capture.stop()).filter((m) => m.type === 'ClientHello');
    assert.equal(hellos.length, 1, 'one DTLS handshake: the adopted connection');
    // Chat both ways, once each.
    await sayInChat(newcomer.page, 'hi from the newcomer');
    await first.waitForFunction((t) => window.ackwire.chat.filter((m) => m.text === t).length === 1, 'hi from the newcomer', { timeout: 5000 })
      .catch(async (err) => {
        const seen = async (p) => JSON.stringify(await p.evaluate(() => ({ chat: window.ackwire.chat, log: window.ackwire.log, links: [...window.ackwire.links.values()].map((l) => [l.link, l.peer, l.state]) })));
        throw new Error(`${err.message}\nfirst: ${await seen(first)}\nnewcomer: ${await seen(newcomer.page)}`);
      });
    assert.deepEqual(newcomer.errors, []);
  } finally {
    await browser.close();
    await server.stop();
  }
});

test('a server that serves the wasm without its media type: the page compiles the bytes instead, and joins', async () => {
  const { server, browser, url, native } = await nativeRoom('octet-stream');
  try {
    const { page, errors } = await freshPage(browser);
    let served = 0;
    await page.route(/ackwire_wasm_bg\.wasm/, async (route) => {
      const response = await route.fetch();
      served += 1;
      await route.fulfill({ response, headers: { ...response.headers(), 'content-type': 'application/octet-stream' } });
    });
    await page.goto(url);
    await connectedTo(page, native.id);
    // Streaming compilation refused the response; the bindings' own load fetched it again.
    assert.equal(served, 2, 'the wasm was asked for twice');
    assert.deepEqual(errors, []);
  } finally {
    await native.stop();
    await browser.close();
    await server.stop();
  }
});

test('the wasm before the welcome: the member offers as always, and nothing was offered early', async () => {
  const { server, browser, url, native } = await nativeRoom('late-welcome');
  try {
    const { page, errors } = await freshPage(browser);
    // The page's wasm instantiated, as a flag the test can wait on (ackwire.js compiles it as
    // it downloads and instantiates the module; the bindings' fallback instantiates the bytes).
    await page.addInitScript(() => {
      for (const name of ['instantiate', 'instantiateStreaming']) {
        const real = WebAssembly[name];
        WebAssembly[name] = (...args) => real(...args).then((r) => { window.wasmReady = true; return r; });
      }
    });
    // The server's frames wait until then; the page's go through.
    await page.routeWebSocket(/\/ws/, (ws) => {
      const upstream = ws.connectToServer();
      const held = [];
      let open = false;
      const flush = () => { while (held.length) ws.send(held.shift()); };
      upstream.onMessage((m) => { if (open) ws.send(m); else held.push(m); });
      ws.onMessage((m) => upstream.send(m));
      page.waitForFunction(() => window.wasmReady, null, { timeout: 15000 }).then(() => { open = true; flush(); }, () => {});
    });
    await page.goto(url);
    await connectedTo(page, native.id);
    const timeline = await page.evaluate(() => window.ackwire.metrics.timeline);
    assert.equal(timeline.offer, undefined, 'no early offer');
    assert.ok(timeline.welcome > timeline.wasm, `welcome ${timeline.welcome} ms, wasm ${timeline.wasm} ms`);
    assert.deepEqual(errors, []);
  } finally {
    await native.stop();
    await browser.close();
    await server.stop();
  }
});
