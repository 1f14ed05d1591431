// A browser joining a native shakes hands once. ICE's checks already proved the path before
// DTLS starts, so DTLS's own cookie exchange (HelloVerifyRequest, a round trip) protects
// nothing: the native answers the browser's offer as the DTLS server (`a=setup:passive`) and
// answers its ClientHello with the ServerHello flight (third_party/rtc-dtls/PATCHED.md). Seen
// on the wire: a capture of the namespace, read back as DTLS handshake messages (capture.mjs).
// Firefox needs the veth "LAN" firefox.test.mjs describes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertOneHandshake, captureUdp, storyOf } from './capture.mjs';
import { lanInNamespace, launchBrowser, launchFirefox, startServer } from './harness.mjs';
import { joinNative } from './native.mjs';

const env = {};

before(async () => {
  env.removeLan = lanInNamespace();
  env.server = await startServer();
});
after(async () => {
  await env.server?.stop();
  env.removeLan?.();
});

/** Joins `room` in `open(url)`'s page and a native, and returns the handshakes captured. */
async function handshakesOfAJoin(room, open) {
  const capture = await captureUdp(`dtls-${room}`);
  const url = `${env.server.url}/room/${room}`;
  const page = await open(url);
  const browserId = await page.value(() => window.ackwire?.me.id);
  const native = await joinNative(url);
  try {
    await native.waitFor('the link to the browser', (l) => native.linkState(l, browserId, 'connected'), 20000);
    await page.value((id) => window.ackwire.players.get(id)?.state === 'connected', native.id);
  } finally {
    await native.stop();
  }
  const messages = await capture.stop();
  const story = storyOf(messages);
  console.log(`${room}:\n${story}`);
  return { messages, story };
}

test('Chromium joining a native: one ClientHello, no HelloVerifyRequest', async () => {
  const chromium = await launchBrowser();
  try {
    const handshakes = await handshakesOfAJoin('dtls-chromium', async (url) => {
      const page = await (await chromium.newContext()).newPage();
      await page.goto(url);
      return { value: (fn, arg) => page.waitForFunction(fn, arg, { timeout: 20000 }).then((h) => h.jsonValue()) };
    });
    assertOneHandshake(handshakes);
  } finally {
    await chromium.close();
  }
});

test('Firefox joining a native: one ClientHello, no HelloVerifyRequest', async () => {
  const firefox = await launchFirefox();
  try {
    const handshakes = await handshakesOfAJoin('dtls-firefox', async (url) => {
      const page = await firefox.newPage();
      await page.goto(url);
      return { value: (fn, arg) => page.waitForFunction(fn, { timeout: 20000 }, arg).then((h) => h.jsonValue()) };
    });
    assertOneHandshake(handshakes);
  } finally {
    await firefox.close();
  }
});
