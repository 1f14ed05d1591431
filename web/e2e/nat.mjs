// Network topologies for e2e tests: homes behind symmetric NATs on a TEST-NET-3 "internet",
// all of it namespaces and links the test makes and removes (see nat.test.mjs).
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { inNs, namespaces, run } from './netns.mjs';

export { chromiumIn } from './netns.mjs';

export const PUBLIC = '203.0.113.1';
/** The internet's upstream router (see buildInternet). */
const UPSTREAM = '203.0.113.254';

/**
 * The internet: a bridge holding PUBLIC, and `count` homes, home k at 192.168.k.2 behind
 * router k (192.168.k.1 inside, 203.0.113.(10+k) outside). Returns the homes' namespace
 * names and a function that removes it all. `nat` is how the routers map flows out:
 * `symmetric` (a random public port for each flow) or `cone` (the home's own port kept for
 * every destination, so a STUN server's view of it is what other players can reach once
 * both have sent; replies only come in either way).
 */
export function buildInternet(count, { nat = 'symmetric' } = {}) {
  const tag = `ackw${process.pid}`;
  const made = namespaces(tag);
  const remove = () => {
    made.remove();
    try { run('ip', 'link', 'del', 'nat-inet'); } catch { /* already gone */ }
  };
  try {
    run('ip', 'link', 'add', 'nat-inet', 'type', 'bridge');
    run('ip', 'addr', 'add', `${PUBLIC}/24`, 'dev', 'nat-inet');
    run('ip', 'link', 'set', 'nat-inet', 'up');
    // The internet's default route: an upstream router that drops what it cannot route, as
    // the internet drops private addresses. Without it, a TURN server relaying toward a
    // peer's private host candidate gets ENETUNREACH, and coturn tears the whole allocation
    // down on a failed send.
    const upstream = made.add('up');
    run('ip', 'link', 'add', 'nat-up', 'type', 'veth', 'peer', 'name', 'nat-upb');
    run('ip', 'link', 'set', 'nat-upb', 'master', 'nat-inet');
    run('ip', 'link', 'set', 'nat-upb', 'up');
    run('ip', 'link', 'set', 'nat-up', 'netns', upstream);
    inNs(upstream, 'ip', 'addr', 'add', `${UPSTREAM}/24`, 'dev', 'nat-up');
    inNs(upstream, 'ip', 'link', 'set', 'nat-up', 'up');
    run('ip', 'route', 'add', 'default', 'via', UPSTREAM);
    const homes = [];
    for (let k = 1; k <= count; k++) {
      const router = made.add(`r${k}`);
      const home = made.add(`h${k}`);
      // The router's public side, on the internet's bridge.
      run('ip', 'link', 'add', `nat-w${k}`, 'type', 'veth', 'peer', 'name', `nat-wb${k}`);
      run('ip', 'link', 'set', `nat-wb${k}`, 'master', 'nat-inet');
      run('ip', 'link', 'set', `nat-wb${k}`, 'up');
      run('ip', 'link', 'set', `nat-w${k}`, 'netns', router);
      inNs(router, 'ip', 'addr', 'add', `203.0.113.${10 + k}/24`, 'dev', `nat-w${k}`);
      inNs(router, 'ip', 'link', 'set', `nat-w${k}`, 'up');
      // The home's LAN: one machine behind the router.
      run('ip', 'link', 'add', `nat-l${k}`, 'type', 'veth', 'peer', 'name', `nat-h${k}`);
      run('ip', 'link', 'set', `nat-l${k}`, 'netns', router);
      run('ip', 'link', 'set', `nat-h${k}`, 'netns', home);
      inNs(router, 'ip', 'addr', 'add', `192.168.${k}.1/24`, 'dev', `nat-l${k}`);
      inNs(router, 'ip', 'link', 'set', `nat-l${k}`, 'up');
      inNs(home, 'ip', 'addr', 'add', `192.168.${k}.2/24`, 'dev', `nat-h${k}`);
      inNs(home, 'ip', 'link', 'set', `nat-h${k}`, 'up');
      inNs(home, 'ip', 'route', 'add', 'default', 'via', `192.168.${k}.1`);
      // Each new flow out is masqueraded (see `nat`); only replies come in.
      inNs(router, 'sysctl', '-qw', 'net.ipv4.ip_forward=1');
      const mapping = nat === 'symmetric' ? ['--random-fully'] : [];
      inNs(router, 'iptables', '-t', 'nat', '-A', 'POSTROUTING', '-o', `nat-w${k}`, '-j', 'MASQUERADE', ...mapping);
      inNs(router, 'iptables', '-A', 'FORWARD', '-i', `nat-w${k}`, '-m', 'conntrack', '!', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'DROP');
      // Unsolicited packets to the router itself are dropped before conntrack confirms them:
      // a hole-punching packet that arrives before the home has sent its own would otherwise
      // leave an entry holding the home's public port, and the home's answer would go out on
      // another one (no NAT keeps a mapping that way on purpose).
      inNs(router, 'iptables', '-A', 'INPUT', '-i', `nat-w${k}`, '-m', 'conntrack', '--ctstate', 'NEW', '-j', 'DROP');
      homes.push(home);
    }
    return { homes, remove };
  } catch (e) {
    remove();
    throw e;
  }
}

/**
 * Firefox in network namespace `ns`, for `launchFirefox`: a wrapper to launch in its place,
 * and the port its WebDriver BiDi listens on inside `ns`, relayed from the same port on this
 * namespace's loopback (where puppeteer connects to the address Firefox prints). Each
 * connection is carried by a small node process inside `ns`.
 */
export async function firefoxIn(ns) {
  const dir = mkdtempSync(join(tmpdir(), 'ackwire-nat-'));
  const wrapper = join(dir, 'firefox');
  writeFileSync(wrapper, `#!/bin/sh\nexec ip netns exec ${ns} ${process.env.FIREFOX ?? '/usr/bin/firefox-esr'} "$@"\n`);
  chmodSync(wrapper, 0o755);
  const relay = createServer((outer) => {
    const pipe = `const s = require('net').connect(${relay.address().port}, '127.0.0.1');`
      + 'process.stdin.pipe(s); s.pipe(process.stdout); s.on("close", () => process.exit()); s.on("error", () => process.exit());';
    const inner = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', pipe], { stdio: ['pipe', 'pipe', 'ignore'] });
    outer.pipe(inner.stdin);
    inner.stdout.pipe(outer);
    outer.on('error', () => inner.kill());
    outer.on('close', () => inner.kill());
    inner.on('exit', () => outer.destroy());
  });
  await new Promise((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    path: wrapper,
    port: relay.address().port,
    remove: () => { relay.close(); rmSync(dir, { recursive: true, force: true }); },
  };
}
