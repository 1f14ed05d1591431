// A host room through the JS API and on the dashboard: one page joins as the host, two as its
// clients. Each client links to the host alone (its early socket's URL carries the role, and
// is adopted), the host to each client; the dashboard names the topology, marks the host in
// the centre of a star and draws a spoke per host↔client link, none between clients. Joins of
// the other topology, and a second host, are refused with their codes.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { artifactsDir, openPage, useServerAndBrowser } from './harness.mjs';

const env = useServerAndBrowser();
const APP = { app: 'star-test', version: 1, channels: ['reliable-ordered'] };

/** `join(room, { role })` on a fresh page: resolves with the JS error's code and message, or `null` once joined. */
function joinOn(p, room, role) {
  return p.page.evaluate(async ({ url, options }) => {
    const { join } = await import('/ackwire.js');
    try {
      const joined = await join(url, options);
      const player = { room: joined, joins: [], leaves: [], links: new Map() };
      window.player = player;
      joined.addEventListener('peerjoin', (e) => player.joins.push({ peer: e.peer, serverId: e.serverId, role: e.role }));
      joined.addEventListener('peerleave', (e) => player.leaves.push({ peer: e.peer, role: e.role, reason: e.reason }));
      joined.addEventListener('link', (e) => player.links.set(e.peer, e.link.state));
      return null;
    } catch (err) {
      return { code: err.code, message: err.message };
    }
  }, { url: `${env.server.url}/room/${room}`, options: { ...APP, role } });
}

/** A page joined to `room` as `role` (its player in `window.player`), with the sockets it opened. */
async function player(room, role) {
  const p = await openPage(env, '/');
  p.sockets = [];
  p.page.on('websocket', (ws) => p.sockets.push(ws.url()));
  const refused = await joinOn(p, room, role);
  assert.equal(refused, null, `${role ?? 'peer'} joins ${room}`);
  p.serverId = await p.page.evaluate(() => window.player.room.serverId);
  return p;
}

test('a host room: clients link to the host alone, and the dashboard draws the star with the host in its centre', async () => {
  const dash = await openPage(env, '/room/star/dashboard', { width: 1400, height: 900 });
  const host = await player('star', 'host');
  const clients = [await player('star', 'client'), await player('star', 'client')];
  const clientIds = clients.map((c) => c.serverId).sort((a, b) => a - b);

  for (const c of clients) {
    // Its one peer is the host, linked, and `room.host` names it.
    const seen = await c.page.waitForFunction(() => {
      const { room, joins, links } = window.player;
      return room.host !== null && links.get(room.host) === 'connected'
        && { host: room.host, joins, links: room.links().map((l) => ({ id: l.id, serverId: l.serverId })) };
    }, null, { timeout: 20000 }).then((h) => h.jsonValue());
    assert.deepEqual(seen.joins.map((j) => [j.serverId, j.role]), [[host.serverId, 'host']], 'a client hears of the host alone');
    assert.deepEqual(seen.links, [{ id: seen.host, serverId: host.serverId }], 'one link: to the host');
    // One socket: the early one, its URL's join as the client's (role=client), adopted.
    const sockets = c.sockets.filter((u) => new URL(u).pathname === '/ws');
    assert.equal(sockets.length, 1, sockets.join('\n'));
    assert.equal(new URL(sockets[0]).searchParams.get('role'), 'client');
  }
  // The host hears of every client, as clients, and links to each.
  const joins = await host.page.waitForFunction((n) => {
    const { joins, links } = window.player;
    return joins.length === n && joins.every((j) => links.get(j.peer) === 'connected') && joins;
  }, clients.length, { timeout: 20000 }).then((h) => h.jsonValue());
  assert.deepEqual(joins.map((j) => j.role), ['client', 'client']);
  assert.deepEqual(joins.map((j) => j.serverId).sort((a, b) => a - b), clientIds);

  // The dashboard: the topology named, the star drawn once every directed link reports
  // connected (host → client and client → host for each client: four table rows).
  const shown = await dash.page.waitForFunction((n) => {
    const figure = document.querySelector('figure.star[data-room="star"]');
    const spokes = [...(figure?.querySelectorAll('line.spoke') ?? [])].map((l) => ({
      host: Number(l.dataset.host), client: Number(l.dataset.client), state: l.dataset.state,
    }));
    const rows = [...document.querySelectorAll('#matrix tbody tr')].map((r) => ({
      link: r.dataset.link, who: r.children[0].textContent, state: r.children[2].textContent,
    }));
    const done = spokes.length === n && spokes.every((s) => s.state === 'connected')
      && rows.length === 2 * n && rows.every((r) => r.state === 'connected');
    return done && {
      spokes, rows,
      topology: figure.dataset.topology,
      header: document.getElementById('topology').textContent,
      caption: figure.querySelector('figcaption').textContent,
      nodes: [...figure.querySelectorAll('.node')].map((g) => ({
        peer: Number(g.dataset.peer), role: g.dataset.role,
        at: [g.querySelector('circle').getAttribute('cx'), g.querySelector('circle').getAttribute('cy')],
      })),
      centre: figure.querySelector('svg').viewBox.baseVal.width / 2,
      grid: document.querySelector('table.grid[data-room="star"]') !== null,
      snapshotTopology: window.ackwireDashboard.rooms.get('star')?.topology,
    };
  }, clients.length, { timeout: 20000 }).then((h) => h.jsonValue());
  assert.equal(shown.topology, 'host');
  assert.equal(shown.snapshotTopology, 'host');
  assert.equal(shown.header, '· host room');
  assert.equal(shown.caption, `host room · host ${host.serverId} · 2 clients`);
  assert.equal(shown.grid, false, 'a host room is a star, not a grid');
  // The host marked, in the centre; the clients around it.
  const hostNode = shown.nodes.find((n) => n.role === 'host');
  assert.equal(hostNode.peer, host.serverId);
  assert.deepEqual(hostNode.at, [String(shown.centre), String(shown.centre)]);
  assert.deepEqual(shown.nodes.filter((n) => n.role === 'client').map((n) => n.peer).sort((a, b) => a - b), clientIds);
  // One spoke per client, each to the host: no link between clients, here or in the table.
  assert.deepEqual(shown.spokes.map((s) => s.client).sort((a, b) => a - b), clientIds);
  assert.ok(shown.spokes.every((s) => s.host === host.serverId), JSON.stringify(shown.spokes));
  const expected = clientIds.flatMap((c) => [`star/${host.serverId}→${c}`, `star/${c}→${host.serverId}`]).sort();
  assert.deepEqual(shown.rows.map((r) => r.link).sort(), expected);
  for (const r of shown.rows) assert.match(r.who, new RegExp(`(^|→ )${host.serverId} \\(host\\)`), r.who);
  await dash.page.screenshot({ path: join(artifactsDir(), 'dashboard-host.png'), fullPage: true });

  // A client that leaves: its spoke and node go; the host hears it left, as a client.
  const [leaving, staying] = clients;
  await leaving.page.evaluate(() => window.player.room.close());
  await dash.page.waitForFunction((gone) => {
    const figure = document.querySelector('figure.star[data-room="star"]');
    return figure && !figure.querySelector(`[data-peer="${gone}"], [data-client="${gone}"]`)
      && figure.querySelectorAll('line.spoke').length === 1;
  }, leaving.serverId, { timeout: 10000 });
  const left = await host.page.waitForFunction(() => window.player.leaves[0], null, { timeout: 10000 })
    .then((h) => h.jsonValue());
  assert.deepEqual([left.role, left.reason], ['client', 'left']);
  // The other client never knew it.
  assert.deepEqual(await staying.page.evaluate(() => window.player.leaves), []);

  for (const p of [host, ...clients, dash]) assert.deepEqual([...p.errors], [], p.page.url());
  for (const p of [host, ...clients, dash]) await p.page.context().close();
});

test('joins of the other topology are refused: a client into a mesh, a peer into a host room, a second host', async () => {
  const mesh = await player('meshy');
  const host = await player('hosted', 'host');
  const stranger = await openPage(env, '/');
  const client = await joinOn(stranger, 'meshy', 'client');
  assert.equal(client?.code, 'topology_mismatch', JSON.stringify(client));
  const peer = await joinOn(stranger, 'hosted', 'peer');
  assert.equal(peer?.code, 'topology_mismatch', JSON.stringify(peer));
  const second = await joinOn(stranger, 'hosted', 'host');
  assert.equal(second?.code, 'host_taken', JSON.stringify(second));
  // A role the API does not know is refused before anything is sent.
  const bad = await joinOn(stranger, 'hosted', 'server');
  assert.equal(bad?.code, 'bad_options', JSON.stringify(bad));
  for (const p of [mesh, host, stranger]) assert.deepEqual(p.errors, []);
  for (const p of [mesh, host, stranger]) await p.page.context().close();
});
