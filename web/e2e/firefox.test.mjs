// Firefox is a supported browser: stock Debian firefox-esr, driven over WebDriver BiDi by
// puppeteer-core (Playwright's Firefox needs a patched build of its own), in a room with a
// Chromium player and a native peer: every link opens, chat arrives exactly once, and the
// Firefox page's link table shows RTT, loss and mode.
//
// Firefox gathers no ICE candidates on a network with only `lo`: it uses the default-route
// interface. The test gives its namespace (made by `cargo xtask test`, loopback only) a veth
// "LAN" with a default route, in 10.99.0.0/16, which exists only inside that namespace
// (`lanInNamespace` in harness.mjs).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lanInNamespace, launchBrowser, launchFirefox, openPage, sayInChat, startServer } from './harness.mjs';
import { joinNative } from './native.mjs';

test('a Firefox player links with a Chromium player and a native peer, chats once, and sees its links measured', async () => {
  const removeLan = lanInNamespace();
  const server = await startServer();
  const chromium = await launchBrowser();
  const firefox = await launchFirefox();
  const room = 'firefox';
  const url = `${server.url}/room/${room}`;
  try {
    const ff = await firefox.newPage();
    const ffErrors = [];
    ff.on('pageerror', (err) => ffErrors.push(err.message));
    const opened = Date.now();
    await ff.goto(url);
    const myId = await ff.waitForFunction(() => window.ackwire?.me.id, { timeout: 10000 }).then((h) => h.jsonValue());
    const cr = await openPage({ server, browser: chromium }, `/room/${room}`);
    const crId = await cr.page.waitForFunction(() => window.ackwire?.me.id, null, { timeout: 10000 }).then((h) => h.jsonValue());
    const native = await joinNative(url);
    try {
      for (const other of [crId, native.id]) {
        await ff.waitForFunction((id) => window.ackwire.players.get(id)?.state === 'connected', { timeout: 20000 }, other);
        console.log(`Firefox ↔ peer ${other}: connected ${Date.now() - opened} ms after the Firefox page opened`);
      }
      await cr.page.waitForFunction((id) => window.ackwire.players.get(id)?.state === 'connected', myId, { timeout: 10000 });
      await native.waitFor('the native linked with Firefox', (l) => native.linkState(l, myId, 'connected'), 10000);

      // Chat from Chromium arrives once in Firefox.
      await sayInChat(cr.page, 'hello firefox');
      await ff.waitForFunction((t) => window.ackwire.chat.some((m) => m.text === t), { timeout: 5000 }, 'hello firefox');
      assert.equal(await ff.evaluate((t) => window.ackwire.chat.filter((m) => m.text === t).length, 'hello firefox'), 1);

      // Firefox's link table: RTT, loss and mode for the Chromium player, once acks flow.
      const row = await ff.waitForFunction((id) => {
        const r = document.querySelector(`#peers tbody tr[data-peer="${id}"]`);
        const cells = r && [...r.children].map((td) => td.textContent);
        return cells && cells[1] === 'connected' && /\d+(\.\d+)? ms/.test(cells.join(' ')) && cells;
      }, { timeout: 10000 }, crId).then((h) => h.jsonValue());
      console.log(`Firefox's row for the Chromium player: ${row.join(' | ')}`);
      assert.match(row.join(' '), /(good|bad)/);
      assert.deepEqual([...ffErrors, ...cr.errors], []);
    } finally {
      await native.stop();
    }
  } finally {
    await firefox.close();
    await chromium.close();
    await server.stop();
    removeLan();
  }
});
