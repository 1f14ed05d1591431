// A host room of the demo: `ackwire-peer host` (native) is the authoritative relay; three
// Chromium pages, a Firefox page and a native client join it as clients (`?role=client`,
// `--role client`). Every client links to the host alone; chat and dots reach every other
// client through the host, exactly once, tagged with their origin; when the host restarts,
// every client hears it left and is back with one link to the new host within 5 s, without
// joining again.
//
// Firefox needs an interface with a default route to gather candidates: the namespace gets a
// veth "LAN" in 10.99.0.0/16 that exists only inside it (`lanInNamespace`). The host listens
// on every interface, as a server does: its ICE-lite WebRTC answers checks and sends none, so
// its candidates must be addresses Firefox pairs with (Firefox pairs no LAN candidate of its
// own with a loopback one).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lanInNamespace, launchBrowser, launchFirefox, openPage, startServer } from './harness.mjs';
import { joinNative } from './native.mjs';

/** `waitForFunction` in Playwright's (Chromium) or Puppeteer's (Firefox) argument order. */
function waitIn(p, fn, arg, timeout) {
  const handle = p.firefox
    ? p.page.waitForFunction(fn, { timeout }, arg)
    : p.page.waitForFunction(fn, arg, { timeout });
  return handle.then((h) => h.jsonValue());
}

/** Whether the page's one link is to `host`, connected. */
const linkedToHost = (host) => {
  const links = [...window.ackwire.links.values()];
  return links.length === 1 && links[0].peer === host && links[0].state === 'connected';
};

/** The native client's stats line where its one link is to `host`, connected. */
const nativeLinked = (host) => (l) => l.type === 'stats' && l.links.length === 1
  && l.links[0].peer === host && l.links[0].state === 'connected';

test('a native host relays for three Chromium pages, a Firefox page and a native client: a star, chat and dots once each, and a host restart survived in 5 s', async () => {
  const removeLan = lanInNamespace();
  const server = await startServer();
  const chromium = await launchBrowser();
  const firefox = await launchFirefox();
  const room = 'arena';
  const url = `${server.url}/room/${room}`;
  let host = await joinNative(url, [], { command: 'host', bind: '0.0.0.0:0' });
  let native;
  try {
    const pages = [];
    for (let i = 0; i < 3; i++) pages.push(await openPage({ server, browser: chromium }, `/room/${room}?role=client`));
    const ff = await firefox.newPage();
    const ffErrors = [];
    ff.on('pageerror', (err) => ffErrors.push(err.message));
    await ff.goto(`${url}?role=client`);
    pages.push({ page: ff, errors: ffErrors, firefox: true });
    native = await joinNative(url, ['--role', 'client']);
    for (const p of pages) p.id = await waitIn(p, () => window.ackwire?.me.id, undefined, 10000);

    // The star: every client's one link is to the host; the host has one per client.
    const started = Date.now();
    for (const p of pages) await waitIn(p, linkedToHost, host.id, 20000);
    await native.waitFor('its one link, to the host', nativeLinked(host.id), 20000);
    const clients = [...pages.map((p) => p.id), native.id].sort((a, b) => a - b);
    await host.waitFor('a link to each client', (l) => l.type === 'stats'
      && l.links.filter((k) => k.state === 'connected').map((k) => k.peer).sort((a, b) => a - b).join() === clients.join(), 20000);
    console.log(`star of 5 clients linked ${Date.now() - started} ms after the last joined`);

    // Chat: each page says two lines; every other client gets both through the host, in
    // order, each once, from one origin per sender (the second line arriving means the
    // first, sent before it on the same ordered path, can no longer arrive).
    for (const p of pages) {
      for (const text of [`first from ${p.id}`, `second from ${p.id}`]) {
        await p.page.evaluate((t) => {
          document.getElementById('chat-input').value = t;
          document.getElementById('chat-form').requestSubmit();
        }, text);
      }
    }
    const origins = new Map(); // sender id -> the origin each client saw it under
    for (const p of pages) {
      for (const sender of pages.filter((o) => o !== p)) {
        const seen = await waitIn(p, (id) => {
          const got = window.ackwire.chat.filter((m) => m.text === `first from ${id}` || m.text === `second from ${id}`);
          return got.some((m) => m.text === `second from ${id}`) && got;
        }, sender.id, 15000);
        assert.deepEqual(seen.map((m) => m.text), [`first from ${sender.id}`, `second from ${sender.id}`], `page ${p.id} hears ${sender.id} once each, in order`);
        assert.equal(seen[0].origin, seen[1].origin);
        assert.notEqual(seen[0].origin, 0);
        origins.set(sender.id, [...(origins.get(sender.id) ?? []), seen[0].origin]);
      }
    }
    for (const sender of pages) {
      const second = await native.waitFor(`the relayed line of ${sender.id}`, (l) => l.type === 'chat' && l.text === `second from ${sender.id}`, 15000);
      const firsts = native.lines.filter((l) => l.type === 'chat' && l.text === `first from ${sender.id}`);
      assert.equal(firsts.length, 1, 'the native client hears it once');
      assert.equal(firsts[0].origin, second.origin);
      origins.get(sender.id).push(second.origin);
    }
    // The host tags a sender the same for everyone, and each sender differently.
    const tags = [...origins.values()].map((o) => new Set(o));
    assert.ok(tags.every((t) => t.size === 1), JSON.stringify([...origins]));
    assert.equal(new Set(tags.map((t) => [...t][0])).size, pages.length);

    // Dots: every page draws the four other clients' dots, relayed; so does the native.
    for (const p of pages) await waitIn(p, () => window.ackwire.relayed.size === 4, undefined, 10000);
    await native.waitFor('four relayed dots', (l) => l.type === 'stats' && Object.keys(l.relayed).length === 4, 10000);

    // The host restarts: every client hears it left, stays in the room, and links to the
    // new host within 5 s of its welcome, without joining again.
    await host.stop();
    for (const p of pages) {
      await waitIn(p, () => window.ackwire.links.size === 0
        && window.ackwire.log.some((l) => l.startsWith('the host left')), undefined, 10000);
    }
    await native.waitFor('the host left', (l) => l.type === 'peer-left' && l.role === 'host' && l.reason === 'left', 10000);
    host = await joinNative(url, [], { command: 'host', bind: '0.0.0.0:0' });
    const back = Date.now();
    for (const p of pages) await waitIn(p, linkedToHost, host.id, Math.max(1, 5000 - (Date.now() - back)));
    await native.waitFor('a link to the new host', nativeLinked(host.id), Math.max(1, 5000 - (Date.now() - back)), native.lines.length);
    console.log(`every client back with one link to the new host ${Date.now() - back} ms after its welcome`);
    for (const p of pages) {
      const welcomes = await p.page.evaluate(() => window.ackwire.log.filter((l) => l.startsWith('welcomed')).length);
      assert.equal(welcomes, 1, `page ${p.id} joined once`);
    }
    assert.equal(native.lines.filter((l) => l.type === 'welcome').length, 1);
    assert.deepEqual(pages.flatMap((p) => p.errors), []);
  } finally {
    await native?.stop();
    await host.stop();
    await firefox.close();
    await chromium.close();
    await server.stop();
    removeLan();
  }
});
