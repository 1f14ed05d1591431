// Two browser players in one room over real WebRTC data channels (loopback only), the
// protocol core driving each link from WebAssembly.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { artifactsDir, openPage, printJoinMedians, reliableSettled, sayInChat, useServerAndBrowser } from './harness.mjs';

const env = useServerAndBrowser();

const openPlayer = (room) => openPage(env, `/room/${room}`);

const peersShown = (page) => page.$$eval('#peers tbody tr', (rows) => rows.map((r) => ({
  peer: r.dataset.peer,
  cells: [...r.children].map((td) => td.textContent),
})));

// The goal is < 500 ms on loopback (measured 530-600 ms on an idle machine, 1.6 s with
// both cores busy compiling). The
// assertion allows for a loaded CI machine while still catching a regression such as
// waiting for complete ICE gathering or a missed trickle candidate (seconds).
const FIRST_ACK_BOUND_MS = 3000;

test('two players in a room connect, see each other move, and get a first ack quickly', async () => {
  const a = await openPlayer('duo');
  await a.page.waitForFunction(() => window.ackwire?.me.id !== undefined, null, { timeout: 10000 });
  const b = await openPlayer('duo');
  const connectedWithin = 5000;
  for (const p of [a, b]) {
    await p.page.waitForFunction(
      () => [...window.ackwire.players.values()].some((pl) => pl.state === 'connected'),
      null, { timeout: connectedWithin },
    );
  }
  // Positions sent unreliably by one page move the dot on the other.
  const bId = await b.page.evaluate(() => window.ackwire.me.id);
  const seen = await a.page.waitForFunction((id) => {
    const p = window.ackwire.players.get(id);
    return p && p.x !== undefined && { x: p.x, y: p.y };
  }, bId, { timeout: 5000 }).then((h) => h.jsonValue());
  const actual = await b.page.evaluate(() => ({ x: window.ackwire.me.x, y: window.ackwire.me.y }));
  assert.ok(Math.abs(seen.x - actual.x) < 0.2 && Math.abs(seen.y - actual.y) < 0.2,
    `A sees B at ${JSON.stringify(seen)}, B is at ${JSON.stringify(actual)}`);

  // Time from opening the URL to the first packet the peer acknowledged (B joined second,
  // so its figure covers signalling, ICE, DTLS/SCTP and the first round trip).
  const firstAckMs = await b.page.waitForFunction(() => window.ackwire.metrics.firstAckMs, null, { timeout: 5000 })
    .then((h) => h.jsonValue());
  const openMs = await b.page.evaluate(() => window.ackwire.metrics.timeline.open);
  console.log(`time from opening the URL to the first acked packet: ${firstAckMs.toFixed(0)} ms (data channel open at ${openMs.toFixed(0)} ms)`);
  assert.ok(firstAckMs < FIRST_ACK_BOUND_MS, `first ack after ${firstAckMs} ms`);

  // The link table shows the core's stats for the other peer.
  await a.page.waitForFunction(() => {
    const row = document.querySelector('#peers tbody tr');
    return row && row.children[2].textContent.endsWith(' ms');
  }, null, { timeout: 5000 });
  const rows = await peersShown(a.page);
  assert.equal(rows.length, 1);
  assert.equal(rows[0].peer, String(bId));
  assert.equal(rows[0].cells[1], 'connected');
  assert.ok(parseFloat(rows[0].cells[2]) >= 0, `RTT shown: ${rows[0].cells[2]}`);
  // A clean loopback path is about a millisecond each way through Chromium's DTLS/SCTP, and
  // that is what both pages must read: each header says how long its ack waited for the
  // peer's next paced packet (up to 100 ms at the starting 10 Hz), and the RTT leaves it out.
  // Read once 60 packets have been acked, the 10 % average long settled.
  const settledRtt = (page, id) => page.waitForFunction((peer) => {
    const s = window.ackwire.players.get(peer)?.stats;
    return s && s.packets_acked >= 60 && { rtt: s.rtt_ms, jitter: s.jitter_ms };
  }, id, { timeout: 10000 }).then((h) => h.jsonValue());
  const aId = await a.page.evaluate(() => window.ackwire.me.id);
  const [onA, onB] = [await settledRtt(a.page, bId), await settledRtt(b.page, aId)];
  console.log(`clean loopback RTT read by the pages: ${onA.rtt.toFixed(2)} ms (jitter ${onA.jitter.toFixed(2)}) and ${onB.rtt.toFixed(2)} ms (jitter ${onB.jitter.toFixed(2)})`);
  // 2.6-2.7 ms on an idle machine, 8.2 ms seen with a CI run's builds beside it (fresh
  // caches, 2026-11-30); the bound leaves room for a loaded machine and still fails the
  // 30-100 ms a held ack would add.
  for (const { rtt } of [onA, onB]) assert.ok(rtt > 0 && rtt <= 20, `RTT on clean loopback ${rtt} ms`);
  // A reliable chat message arrives exactly once on the other page.
  const text = `hello from B ${Math.random().toString(36).slice(2)}`;
  await sayInChat(b.page, text);
  await a.page.waitForFunction((t) => window.ackwire.chat.some((m) => m.text === t), text, { timeout: 5000 });
  await reliableSettled(b, bId, a, aId);
  const copies = await a.page.evaluate((t) => window.ackwire.chat.filter((m) => m.text === t).length, text);
  assert.equal(copies, 1, 'chat delivered exactly once');
  await a.page.screenshot({ path: join(artifactsDir(), 'room.png'), fullPage: true });
  assert.deepEqual([...a.errors, ...b.errors], []);

  // Closing a page removes the peer from the other one.
  await b.page.context().close();
  await a.page.waitForFunction((id) => !window.ackwire.players.has(id), bId, { timeout: 5000 });
  await a.page.waitForSelector('#no-peers:not([hidden])', { timeout: 2000 });
  await a.page.context().close();
});

test('remote dots glide between updates (snapshot interpolation), or jump with each update when unticked; no console errors', async () => {
  const a = await openPlayer('glide');
  const aId = await a.page.waitForFunction(() => window.ackwire?.me.id, null, { timeout: 10000 }).then((h) => h.jsonValue());
  const b = await openPlayer('glide');
  const bId = await b.page.waitForFunction(() => window.ackwire?.me.id, null, { timeout: 10000 }).then((h) => h.jsonValue());
  await a.page.waitForFunction((peer) => window.ackwire.players.get(peer)?.drawn, bId, { timeout: 10000 });
  // Distinct positions of B's dot drawn on A's page over one second of animation frames.
  const drawnPerSecond = () => a.page.evaluate(async (peer) => {
    const seen = new Set();
    const end = performance.now() + 1000;
    while (performance.now() < end) {
      await new Promise((r) => requestAnimationFrame(r));
      const d = window.ackwire.players.get(peer)?.drawn;
      if (d) seen.add(`${d.x},${d.y}`);
    }
    return seen.size;
  }, bId);
  const smooth = await drawnPerSecond();
  const delay = await a.page.evaluate((peer) => window.ackwire.players.get(peer).delayMs, bId);
  await a.page.uncheck('#interpolate');
  const raw = await drawnPerSecond();
  const rate = await a.page.evaluate((peer) => window.ackwire.players.get(peer).stats?.send_rate_pps, bId);
  console.log(`B's dot on A's page: ${smooth} positions/s smooth (drawn ${delay?.toFixed(0)} ms late), ${raw} raw; links at ${rate} packets/s`);
  // Raw, the dot moves only when an update lands (at most the packet rate, 30/s); smooth, it
  // moves on (almost) every frame between them.
  assert.ok(raw <= 35, `${raw} raw positions in a second`);
  assert.ok(smooth >= 1.5 * raw, `smooth ${smooth} vs raw ${raw}`);
  assert.ok(delay >= 40 && delay <= 300, `drawn ${delay} ms late`);
  // The page names a favicon that is there (a browser asks for one, and logs a 404 for a
  // missing /favicon.ico), and nothing else failed either.
  const icon = await a.page.evaluate(() => fetch(document.querySelector('link[rel="icon"]').href).then((r) => r.status));
  assert.equal(icon, 200);
  assert.deepEqual([...a.consoleErrors, ...b.consoleErrors, ...a.errors, ...b.errors], []);
  assert.ok(aId !== bId);
});

test('the room page is painted once its join is in, and 400 ms after the navigation when no join comes', async () => {
  // Joined: the page and its sections are shown (room.js, `reveal`).
  const p = await openPlayer('painted');
  await p.page.waitForSelector('main.room', { state: 'visible', timeout: 10000 });
  assert.equal(await p.page.evaluate(() => getComputedStyle(document.documentElement).visibility), 'visible');
  assert.ok(await p.page.evaluate(() => window.ackwire.me.id > 0));
  assert.deepEqual([...p.errors, ...p.consoleErrors], []);
  await p.page.context().close();

  // No module, so no join: the head script alone shows the header, with its status, at 400 ms
  // (polled each frame: a page shown at once would be seen well before).
  const context = await env.browser.newContext();
  const page = await context.newPage();
  await page.route('**/room.js', (route) => route.abort());
  await page.goto(`${env.server.url}/room/unjoined`);
  const shownAt = await page.waitForFunction(
    () => getComputedStyle(document.documentElement).visibility === 'visible' && performance.now(),
    null, { polling: 'raf', timeout: 10000 },
  ).then((h) => h.jsonValue());
  assert.ok(shownAt >= 400, `shown at ${shownAt} ms`);
  assert.equal(await page.textContent('#status'), 'connecting…');
  assert.ok(await page.isVisible('#status'));
  assert.equal(await page.isVisible('main.room'), false);
  await context.close();
});

test('ten joins: where the time from opening the URL to the first acked packet goes (medians printed)', async () => {
  const steps = ['html', 'connect', 'socket', 'script', 'wasm', 'welcome', 'negotiating', 'open', 'connected', 'ack'];
  const runs = [];
  const joins = async (page) => page.evaluate(() => fetch('/metrics').then((r) => r.text()))
    .then((text) => Number(/^ackwire_signal_joins_total (\d+)/m.exec(text)?.[1] ?? 0));
  for (let i = 0; i < 10; i++) {
    const a = await openPlayer(`join-${i}`);
    await a.page.waitForFunction(() => window.ackwire?.me.id !== undefined, null, { timeout: 10000 });
    // Counted once the first page is in: its own join may reach the server after its load
    // event (the page's module opens the socket).
    const before = await joins(a.page);
    const b = await openPlayer(`join-${i}`);
    // Waited for on the first page: the first wait on a page injects Playwright's script
    // (~330 KB, ~10 ms of its main thread), which would land in the middle of the join.
    await a.page.waitForFunction(() => [...window.ackwire.links.values()].some((l) => l.state === 'connected'), null, { timeout: 10000 });
    // The second page's own clock: ms since its navigation started.
    runs.push(await b.page.waitForFunction(() => window.ackwire.metrics.timeline.ack && window.ackwire.metrics.timeline, null, { timeout: 10000 })
      .then((h) => h.jsonValue()));
    // The second page joined once: its driver took over the socket the page opened early,
    // with the join in its URL, instead of joining again on one of its own.
    assert.equal(await joins(a.page) - before, 1, 'joins while the second page came in');
    assert.deepEqual([...a.errors, ...b.errors], []);
    await a.page.context().close();
    await b.page.context().close();
  }
  const median = printJoinMedians('joining', runs, steps);
  // A wide bound, for a loaded CI machine (the goal, a first ack within 120 ms, is printed
  // above, not asserted): 300 ms idle, 1,225 ms seen in a CI run with fresh caches, its builds
  // beside it (2026-11-30). It fails a join that waits out a timeout of seconds; the medians
  // printed and `cargo xtask bench joins` show the finer regressions.
  assert.ok(median('ack') < 2500, `median first ack at ${median('ack')} ms`);
});

test('a room playing another game refuses the page, which says why; join() rejects with the server\'s code, and a joined room\'s bad calls throw typed errors', async () => {
  // Another game holds the room, joined through the same public API (from the front page).
  const chess = await openPage(env, '/');
  const held = await chess.page.evaluate(async () => {
    const { join } = await import('/ackwire.js');
    window.chess = await join(`${location.origin}/room/taken`, { app: 'chess', version: 1, channels: ['reliable-ordered'] });
    return window.chess.serverId;
  });
  assert.ok(held > 0, `chess joined as ${held}`);

  const p = await openPlayer('taken');
  await p.page.waitForSelector('#status[data-state="failed"]', { timeout: 10000 });
  const badge = await p.page.textContent('#status');
  const log = await p.page.evaluate(() => window.ackwire.log);
  console.log(`the refused page says: "${badge}"; its log: ${log.join(' | ')}`);
  assert.match(badge, /chess/);
  assert.ok(log.some((l) => l.includes('app_mismatch')), log.join('\n'));

  // The API: the server's code and words, for another version of the room's own game too.
  const refused = await chess.page.evaluate(async () => {
    const { join } = await import('/ackwire.js');
    try {
      await join(`${location.origin}/room/taken`, { app: 'chess', version: 2, channels: ['reliable-ordered'] });
      return 'joined';
    } catch (e) {
      return { code: e.code, message: e.message };
    }
  });
  assert.equal(refused.code, 'app_mismatch', JSON.stringify(refused));
  assert.match(refused.message, /chess/);

  // Every bad input to a joined room is an Error with a code, and nothing is sent.
  const codes = await chess.page.evaluate(() => {
    const r = window.chess;
    const code = (f) => { try { f(); return 'none'; } catch (e) { return e instanceof Error ? e.code : `not an Error: ${e}`; } };
    return {
      unknownPeer: code(() => r.send(999, 0, 'x')),
      badPayload: code(() => r.broadcast(0, { x: 1 })),
      unknownChannel: code(() => r.broadcast(5, 'x')),
      tooLarge: code(() => r.broadcast(0, new Uint8Array(r.maxMessageSize(0) + 1))),
      reliable: code(() => r.sendLatest(1, 0, 'x')),
      fine: code(() => r.broadcast(0, 'nobody hears this')),
    };
  });
  assert.deepEqual(codes, {
    unknownPeer: 'unknown_peer', badPayload: 'bad_payload', unknownChannel: 'unknown_channel',
    tooLarge: 'too_large', reliable: 'reliable', fine: 'none',
  });
  const closed = await chess.page.evaluate(async () => {
    await window.chess.close();
    try { window.chess.broadcast(0, 'x'); return 'sent'; } catch (e) { return e.code; }
  });
  assert.equal(closed, 'closed');
  assert.deepEqual([...chess.errors, ...p.errors], []);
  await chess.page.context().close();
  await p.page.context().close();
});
