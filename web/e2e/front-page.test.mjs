// The front page, served by the real signal server, runs the protocol core as WebAssembly.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { artifactsDir, openPage, useServerAndBrowser } from './harness.mjs';

const coreVersion = /^version = "([^"]+)"/m
  .exec(readFileSync(new URL('../../Cargo.toml', import.meta.url), 'utf8'))[1];

const env = useServerAndBrowser();

test('front page loads the wasm core and shows its version', async () => {
  const { page, errors } = await openPage(env, '/');
  await page.locator('#core-status[data-state="ready"]').waitFor({ timeout: 10000 });
  // The version string comes out of the WebAssembly module, not the page.
  assert.equal(await page.textContent('#core-version'), coreVersion);
  await page.screenshot({ path: join(artifactsDir(), 'front-page.png'), fullPage: true });
  assert.deepEqual(errors, []);
});

test('the server answers /healthz and serves the wasm bundle with the wasm mime type', async () => {
  const health = await fetch(env.server.url + '/healthz');
  assert.equal(health.status, 200);
  const wasm = await fetch(env.server.url + '/pkg/ackwire_wasm_bg.wasm');
  assert.equal(wasm.status, 200);
  assert.equal(wasm.headers.get('content-type'), 'application/wasm');
  const magic = new Uint8Array(await wasm.arrayBuffer()).slice(0, 4);
  assert.deepEqual([...magic], [0x00, 0x61, 0x73, 0x6d]);
});
