// The room soak: every reliable chat line said to the members of a room arrives at each of
// them exactly once, through loss, jitter, latency, a signal-server SIGKILL and restart, and a
// pulled cable. Three Chromium pages of the demo room (one clean, one at 5 % loss and 10 ms
// jitter, one at 40 ms latency: the core's emulator, both directions) and two native players
// (`ackwire-peer join --chat-every 2`); every member says a line every 2 s. At a third of the
// run the signal server is killed (SIGKILL: no goodbye to anyone) and started again on its
// port; at two thirds the clean page's cable is pulled for 15 s (past the core's 10 s idle
// timeout: its links are lost and come back). Then the lines stop, the room settles, and each
// member's count of every other member's lines is checked: 0 missing, 0 twice. Only a line a
// sender's broadcast refused (a full budget: printed) is exempt, and none is expected.
//
// `cargo xtask bench soak` runs it (release builds, under `unshare --net`, loopback only).
// ACKWIRE_SOAK_SECS: how long the members talk (600).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { launchBrowser, startServer } from './harness.mjs';
import { joinNative } from './native.mjs';

const SECS = Number(process.env.ACKWIRE_SOAK_SECS ?? 600);
assert.ok(SECS >= 60, 'ACKWIRE_SOAK_SECS: at least 60 (the outage alone takes 15 s)');
const EVERY_MS = 2000;
const ROOM = 'soak';
const OUTAGE_MS = 15000;
const LINE = /^line (\d+) from (.+)$/;

const t0 = Date.now();
const at = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
const log = (what) => console.log(`[soak ${at()}] ${what}`);

let server = await startServer(0, { quiet: true });
const port = server.port;
const browser = await launchBrowser();
const pages = [];
const natives = [];
try {
  for (const [label, query] of [['page clean', ''], ['page lossy', '?loss=5&jitter=10'], ['page far', '?latency=40']]) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${server.url}/room/${ROOM}${query}`);
    const id = await page.waitForFunction(() => window.ackwire?.me.id, null, { timeout: 15000 }).then((h) => h.jsonValue());
    pages.push({ label, page, errors, id });
  }
  for (let i = 0; i < 2; i++) {
    natives.push(await joinNative(`${server.url}/room/${ROOM}`, ['--chat-every', String(EVERY_MS / 1000)]));
  }
  // Everyone linked with everyone before the clock starts: 5 members, 20 directed links.
  for (const p of pages) {
    const others = [...pages.filter((q) => q !== p).map((q) => q.id), ...natives.map((n) => n.id)];
    await p.page.waitForFunction((ids) => ids.every((id) => window.ackwire.players.get(id)?.state === 'connected'), others, { timeout: 30000 });
  }
  log('5 members linked; every member says a line every 2 s');

  // The pages say their lines through the chat form, as a player does, numbered per page.
  for (const p of pages) {
    await p.page.evaluate(([label, every]) => {
      let n = 0;
      window.soakSaid = [];
      window.soakTimer = setInterval(() => {
        n += 1;
        const text = `line ${n} from ${label}`;
        window.soakSaid.push(text);
        document.getElementById('chat-input').value = text;
        document.getElementById('chat-form').requestSubmit();
      }, every);
    }, [p.label, EVERY_MS]);
  }

  await sleep(SECS * 1000 / 3);
  log('signal server: SIGKILL');
  await server.stop('SIGKILL');
  server = await startServer(port, { quiet: true });
  log('signal server: back on its port');

  await sleep(SECS * 1000 / 3);
  log(`${pages[0].label}: cable pulled for ${OUTAGE_MS / 1000} s`);
  await pages[0].page.evaluate(() => window.ackwire.client.setOutage(true));
  await sleep(OUTAGE_MS);
  await pages[0].page.evaluate(() => window.ackwire.client.setOutage(false));
  log(`${pages[0].label}: cable back`);

  await sleep(Math.max(0, SECS * 1000 / 3 - OUTAGE_MS));
  for (const p of pages) await p.page.evaluate(() => clearInterval(window.soakTimer));
  log('the pages stopped talking');

  // Who said what: the pages' own lists; the natives' `said` lines up to now (they go on
  // talking: what they say from here is checked for duplicates only), with any refusals.
  const said = new Map(); // sender label -> [text]
  for (const p of pages) said.set(p.label, await p.page.evaluate(() => window.soakSaid));
  const refusedShares = [];
  for (const p of pages) {
    const refusals = await p.page.evaluate(() => window.ackwire.log.map(String).filter((l) => /not sent/.test(l)));
    for (const l of refusals) refusedShares.push([p.label, l]);
  }
  for (const n of natives) {
    const label = `native ${n.child.pid}`;
    const lines = n.lines.filter((l) => l.type === 'said');
    said.set(label, lines.map((l) => l.text));
    for (const l of lines.filter((x) => x.refused?.length || x.error)) refusedShares.push([label, l]);
  }
  const members = [
    ...pages.map((p) => ({ label: p.label, member: p })),
    ...natives.map((n) => ({ label: `native ${n.child.pid}`, member: n })),
  ];
  // Each member's count of every line it heard.
  const heard = async (member) => {
    const texts = member.page
      ? await member.page.evaluate(() => window.ackwire.chat.map((m) => m.text))
      : member.lines.filter((l) => l.type === 'chat').map((l) => l.text);
    const counts = new Map();
    for (const t of texts.filter((x) => LINE.test(x))) counts.set(t, (counts.get(t) ?? 0) + 1);
    return counts;
  };
  const due = (label) => [...said].filter(([from]) => from !== label).flatMap(([, texts]) => texts);
  // Settle: every member has every line due to it, or a minute passes.
  const deadline = Date.now() + 60000;
  for (const { label, member } of members) {
    while (Date.now() < deadline) {
      const counts = await heard(member);
      if (due(label).every((t) => counts.has(t))) break;
      await sleep(500);
    }
  }
  log('settled');
  let owed = 0;
  let lost = 0;
  let twice = 0;
  for (const { label, member } of members) {
    const counts = await heard(member);
    const want = due(label);
    const missing = want.filter((t) => !counts.has(t));
    const dup = [...counts].filter(([, c]) => c > 1);
    owed += want.length;
    lost += missing.length;
    twice += dup.length;
    log(`${label}: ${want.length} lines due, ${want.length - missing.length} arrived, ${missing.length} missing, ${dup.length} twice${missing.length ? ` (first missing: ${missing.slice(0, 5).join('; ')})` : ''}${dup.length ? ` (twice: ${dup.slice(0, 5).map(([t]) => t).join('; ')})` : ''}`);
  }
  const errors = pages.flatMap((p) => p.errors.map((e) => `${p.label}: ${e}`));
  console.log(`soak: ${SECS} s, 3 Chromium pages (clean, 5 % loss + 10 ms jitter, 40 ms latency) and 2 natives, a line each every 2 s, the server SIGKILLed and restarted at ${Math.round(SECS / 3)} s, a cable pulled for ${OUTAGE_MS / 1000} s at ${Math.round(2 * SECS / 3)} s: ${owed} line deliveries due, ${lost} lost, ${twice} delivered twice; ${refusedShares.length} lines some peer refused; ${errors.length} page errors`);
  for (const [label, l] of refusedShares) console.log(`  refused: ${label}: ${JSON.stringify(l)}`);
  assert.equal(lost, 0, 'no line lost');
  assert.equal(twice, 0, 'no line twice');
  assert.equal(refusedShares.length, 0, 'no line refused');
  assert.deepEqual(errors, []);
} finally {
  for (const n of natives) await n.stop().catch(() => {});
  await browser.close();
  await server.stop();
}
