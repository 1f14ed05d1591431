// WebKit, the third engine: Debian's WebKitGTK (MiniBrowser through WebKitWebDriver, on a
// private Xvfb: webkit.mjs) opens the signal server's front page, runs the protocol core as
// WebAssembly and opens the signalling socket. What it lacks is asserted too, so a WebKitGTK
// that gains it shows up here: Debian's 2.50 is built without WebRTC (no RTCPeerConnection,
// even with `--enable-webrtc=true`), and WebTransport is a "testable" feature, off by default
// (MiniBrowser's `--features=+WebTransport` turns it on).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { startServer } from './harness.mjs';
import { launchWebKit } from './webkit.mjs';

const coreVersion = /^version = "([^"]+)"/m
  .exec(readFileSync(new URL('../../Cargo.toml', import.meta.url), 'utf8'))[1];

test('WebKitGTK loads the front page, runs the wasm core and opens the signalling socket', async () => {
  const server = await startServer();
  try {
    const webkit = await launchWebKit();
    try {
      console.log(`WebKitGTK ${webkit.capabilities.browserVersion}: launched (Xvfb, driver, session) in ${webkit.launchMs} ms`);
      const opened = Date.now();
      await webkit.goto(`${server.url}/`);
      const api = await webkit.evaluate(`return {
        WebAssembly: typeof WebAssembly, WebSocket: typeof WebSocket,
        RTCPeerConnection: typeof RTCPeerConnection, WebTransport: typeof WebTransport,
        secure: isSecureContext, ua: navigator.userAgent };`);
      console.log(`WebKit's page has: ${JSON.stringify(api)}`);
      assert.equal(api.WebAssembly, 'object');
      assert.equal(api.WebSocket, 'function');
      assert.equal(api.RTCPeerConnection, 'undefined');
      assert.equal(api.WebTransport, 'undefined');
      // 127.0.0.1 is a secure context: what WebTransport and crypto.subtle would need.
      assert.equal(api.secure, true);

      // The page instantiates the wasm core and shows the version that came out of it.
      const version = await webkit.waitFor(`const s = document.getElementById('core-status');
        return s?.dataset.state === 'ready' && document.getElementById('core-version').textContent;`);
      assert.equal(version, coreVersion);
      console.log(`the wasm core ran ${Date.now() - opened} ms after the page was asked for`);

      // The signalling socket (`/ws`, where web/ackwire.js joins rooms) opens from the page.
      const ws = await webkit.evaluateAsync(`const done = arguments[arguments.length - 1];
        const ws = new WebSocket(location.origin.replace(/^http/, 'ws') + '/ws');
        const timer = setTimeout(() => done('no open event after 5 s'), 5000);
        ws.onopen = () => { clearTimeout(timer); ws.close(); done('open'); };
        ws.onerror = () => { clearTimeout(timer); done('error'); };`);
      assert.equal(ws, 'open');
    } finally {
      await webkit.close();
    }
  } finally {
    await server.stop();
  }
});
