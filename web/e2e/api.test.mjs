// The public API end to end, as two games would use it: a page on the JS package
// (web/ackwire.js) and a native program on the `ackwire` crate (ackwire/examples/exchange.rs)
// exchange their own numbered messages on all four kinds of channel, with 10 % of the
// datagrams lost each way (the native emulates it on its links): on both sides every reliable
// message arrives once (and in order on the ordered channel), sequenced ones never go back,
// latest-value ones are replaced yet the last one arrives. A program declaring another
// application is refused, with the reason in its output. The page reads the reliable-ordered
// channel with `receive()`, a frame loop's drain, and the others as events.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { openPage, requireEnv, useServerAndBrowser } from './harness.mjs';
import { jsonLines } from './native.mjs';

const env = useServerAndBrowser();
const COUNT = 150;
const CHANNELS = ['unreliable', 'unreliable-sequenced', 'reliable-ordered', 'reliable-unordered'];
const range = (n) => Array.from({ length: n }, (_, i) => i);

function exchange(room, extra = []) {
  const url = `${env.server.url}/room/${room}`;
  const child = spawn(requireEnv('ACKWIRE_EXCHANGE_BIN'),
    [url, '--count', String(COUNT), '--loss', '10', '--duration', '90', ...extra],
    { env: { ...process.env, RUST_LOG: 'info', NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  return jsonLines(child);
}

/** What each channel promises, checked on what one side received. */
function checkPromises(side, received) {
  const [unreliable, sequenced, ordered, unordered] = received;
  assert.deepEqual(ordered, range(COUNT), `${side}: reliable-ordered, each once, in order`);
  assert.deepEqual([...unordered].sort((a, b) => a - b), range(COUNT), `${side}: reliable-unordered, each once`);
  // The sender repeats its last value at the end: equal payloads, each a newer message.
  assert.ok(sequenced.every((n, i) => i === 0 || n >= sequenced[i - 1]), `${side}: sequenced never older after newer: ${sequenced}`);
  const values = new Set(sequenced).size;
  assert.ok(values < COUNT, `${side}: latest values replaced (${values} of ${COUNT} values arrived)`);
  assert.equal(sequenced.at(-1), COUNT - 1, `${side}: the newest value arrives`);
  assert.equal(new Set(unreliable).size, unreliable.length, `${side}: unreliable, never twice`);
  assert.ok(unreliable.length < COUNT, `${side}: 10 % loss loses unreliable messages (${unreliable.length} of ${COUNT})`);
}

test('a page and a native program exchange their own messages with each channel kind\'s promise under 10 % loss', async () => {
  const native = exchange('exchange');
  try {
    await native.waitFor('joined', (l) => l.type === 'joined', 15000);
    const { page, errors } = await openPage(env, '/');
    await page.evaluate(async ({ url, count, channels }) => {
      const { join } = await import('/ackwire.js');
      const room = await join(url, { app: 'ackwire-exchange', version: 1, channels });
      const received = [[], [], [], []];
      window.exchange = { room, received, leaked: 0 };
      const number = (data) => new DataView(data.buffer, data.byteOffset, 4).getUint32(0, true);
      // The ordered channel is read as a frame loop would, with receive(): from its first
      // call on, that channel's messages wait there and are never dispatched as events.
      room.receive(2);
      setInterval(() => {
        for (let m = room.receive(2); m; m = room.receive(2)) received[2].push(number(m.data));
      }, 16);
      room.addEventListener('message', (e) => {
        if (e.channel === 2) window.exchange.leaked += 1;
        else received[e.channel].push(number(e.data));
      });
      const bytes = (n) => new Uint8Array(new Uint32Array([n]).buffer);
      room.addEventListener('link', async (e) => {
        if (e.link.state !== 'connected' || window.exchange.started) return;
        window.exchange.started = true;
        for (let i = 0; i < count; i++) {
          room.send(e.peer, 2, bytes(i));
          room.send(e.peer, 3, bytes(i));
          room.send(e.peer, 0, bytes(i));
          room.sendLatest(e.peer, 1, bytes(i));
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        // The newest value, again and again: it arrives despite the loss.
        setInterval(() => room.sendLatest(e.peer, 1, bytes(count - 1)), 25);
      });
    }, { url: `${env.server.url}/room/exchange`, count: COUNT, channels: CHANNELS });

    // The page's side: every reliable message in, and the newest sequenced one.
    await page.waitForFunction((count) => {
      const r = window.exchange?.received;
      return r && r[2].length === count && r[3].length === count && r[1].at(-1) === count - 1;
    }, COUNT, { timeout: 40000 });
    const pageReceived = await page.evaluate(() => window.exchange.received);
    checkPromises('page', pageReceived);
    assert.equal(await page.evaluate(() => window.exchange.leaked), 0, 'a channel read with receive() dispatches no message event');

    // The native's side, from its `received` lines (one per channel, every second).
    const done = (l) => l.type === 'received' && l.channel === 1 && l.numbers.at(-1) === COUNT - 1;
    await native.waitFor('the newest sequenced value', done, 40000);
    const full = (channel) => (l) => l.type === 'received' && l.channel === channel && l.numbers.length === COUNT;
    await native.waitFor('every reliable-ordered message', full(2), 40000);
    await native.waitFor('every reliable-unordered message', full(3), 40000);
    const latest = (channel) => native.lines.findLast((l) => l.type === 'received' && l.channel === channel).numbers;
    checkPromises('native', [latest(0), latest(1), latest(2), latest(3)]);
    console.log(`page got ${pageReceived[0].length} unreliable and ${pageReceived[1].length} sequenced of ${COUNT}; `
      + `the native ${latest(0).length} and ${latest(1).length}`);
    assert.deepEqual(errors, []);
    await page.evaluate(() => window.exchange.room.close());
  } finally {
    await native.stop();
  }
});

test('a program declaring another application is refused with the reason in its output', async () => {
  const first = exchange('mismatch');
  try {
    await first.waitFor('joined', (l) => l.type === 'joined', 15000);
    const other = exchange('mismatch', ['--app', 'other-game']);
    const refused = await other.waitFor('a refusal', (l) => l.type === 'refused', 15000);
    assert.equal(refused.code, 'app_mismatch');
    assert.match(refused.message, /ackwire-exchange v1/);
    assert.match(refused.message, /other-game v1/);
    assert.equal(await other.exited, 1, 'it exits, failed');
    assert.ok(!other.lines.some((l) => l.type === 'link'), 'it never linked');
  } finally {
    await first.stop();
  }
});
