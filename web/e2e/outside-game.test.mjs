// A game built outside this workspace exactly as the docs say: `cargo xtask` writes a crate
// beside a checkout (target/outside-game/), its manifest docs/api.md's "From Rust" block word
// for word and its main.rs the README's example (the room's URL read from its argument instead
// of written in), and builds it as any game's build would, with Cargo's `[patch]` read from the
// game's manifest alone. That program and a page on the JS API join one room; the link between
// them must carry the patched handshake (third_party/*/PATCHED.md): one ClientHello, answered
// by one ServerHello, no HelloVerifyRequest. A game built without the guide's `[patch]` block
// gets the crates.io handshake (a cookie exchange) and fails here. Run by `cargo xtask test`
// in a stage of its own, after the game's build (`cargo xtask e2e outside-game` alone).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { assertOneHandshake, captureUdp, storyOf } from './capture.mjs';
import { openPage, requireEnv, useServerAndBrowser } from './harness.mjs';

const env = useServerAndBrowser();

test('a game built outside the workspace as the guide says links with a page in one DTLS handshake', async () => {
  const url = `${env.server.url}/room/outside-game`;
  const capture = await captureUdp('outside-game');
  const game = spawn(requireEnv('ACKWIRE_OUTSIDE_GAME_BIN'), [url], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => game.once('exit', (code, signal) => resolve(`exited (${code ?? signal})`)));
  // The README's program prints each message it receives: "PEER on CHANNEL: [BYTES]".
  const lines = [];
  const replied = new Promise((resolve) => {
    createInterface({ input: game.stdout }).on('line', (line) => {
      lines.push(line);
      if (/ on 1: \[/.test(line)) resolve(line);
    });
  });
  try {
    const { page, errors } = await openPage(env, '/');
    // The README's JS snippet's application: the page answers the program's "hello".
    await page.evaluate(async (roomUrl) => {
      const { join } = await import('/ackwire.js');
      const room = await join(roomUrl, {
        app: 'pong', version: 1, channels: ['unreliable-sequenced', 'reliable-ordered'],
      });
      window.outside = { heard: [] };
      room.addEventListener('message', (e) => {
        window.outside.heard.push(e.text);
        room.send(e.peer, 1, 'hello back');
      });
    }, url);
    await page.waitForFunction(() => window.outside.heard.includes('hello'), null, { timeout: 20000 });
    const timeout = new Promise((resolve) => setTimeout(resolve, 10000, 'no reply within 10 s'));
    const reply = await Promise.race([replied, exited, timeout]);
    const expected = `[${[...new TextEncoder().encode('hello back')].join(', ')}]`;
    assert.ok(reply.endsWith(`on 1: ${expected}`), `the program printed the page's reply: ${reply}\n${lines.join('\n')}`);
    assert.deepEqual(errors, []);
  } finally {
    game.kill();
  }
  const messages = await capture.stop();
  const story = storyOf(messages);
  console.log(`outside-game:\n${story}`);
  assertOneHandshake({ messages, story });
});
