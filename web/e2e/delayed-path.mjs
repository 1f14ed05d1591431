// A path with a fixed added delay, without netem (the kernels here have no sch_netem):
//
//   client ns               router ns                           server ns
//   dp-c 198.51.100.1 ── dp-rc [delay_bridge.py] dp-rs ── dp-s 198.51.100.2
//
// One Ethernet segment (TEST-NET-2, only inside these namespaces) cut in two by a router
// namespace where delay_bridge.py forwards each frame between its two veths after a fixed
// delay each way, set at any time with `setDelay`. Everything is made here and removed by
// `remove()` (the namespaces, with their veths, and the processes started in them).
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { inNs, namespaces, spawnIn, veth } from './netns.mjs';

const here = dirname(fileURLToPath(import.meta.url));
export const CLIENT_ADDR = '198.51.100.1';
export const SERVER_ADDR = '198.51.100.2';
/** The probe's port in the server namespace (nothing else listens there on it). */
const PROBE_PORT = 9;

/** Waits for a line `pred` takes on `child`'s stdout; rejects if it exits first. */
function lineFrom(child, lines, what, pred = () => true, timeout = 15000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { cleanup(); reject(new Error(`no ${what} within ${timeout} ms`)); }, timeout);
    const onLine = (line) => { if (pred(line)) { cleanup(); resolve(line); } };
    const onExit = (code) => { cleanup(); reject(new Error(`${what}: process exited (${code})`)); };
    const cleanup = () => { clearTimeout(timer); lines.off('line', onLine); child.off('exit', onExit); };
    lines.on('line', onLine);
    child.on('exit', onExit);
  });
}

/** Starts `program args` in `ns` with a line reader on its stdout; stderr passes through. */
function start(ns, program, args) {
  const child = spawnIn(ns, program, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  return { child, lines };
}

/**
 * Builds the path (no delay yet) and starts the bridge and the probe's echo. Namespace names
 * start with `tag`, so a caller that dies can have them swept (`cargo xtask` does).
 */
export async function buildDelayedPath(tag = `ackd${process.pid}`) {
  const made = namespaces(tag);
  const started = [];
  const remove = async () => {
    for (const { child } of started.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        child.stdin?.end(); // the bridge and the echo end when their stdin closes
        const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
        await exited;
        clearTimeout(timer);
      }
    }
    made.remove();
  };
  try {
    const client = made.add('client');
    const router = made.add('router');
    const server = made.add('server');
    veth('dp-c', client, 'dp-rc', router);
    veth('dp-s', server, 'dp-rs', router);
    for (const [ns, dev] of [[client, 'dp-c'], [router, 'dp-rc'], [router, 'dp-rs'], [server, 'dp-s']]) {
      // Real frames of at most the MTU with real checksums: with the veths' offloads on, TCP
      // would hand the bridge 64 KB super-frames with checksums left to fill in, which it
      // cannot send on.
      inNs(ns, 'ethtool', '-K', dev, 'tx', 'off', 'rx', 'off', 'tso', 'off', 'gso', 'off', 'gro', 'off');
      // IPv4 only: no router advertisements, DAD or link-local chatter through the bridge.
      inNs(ns, 'sysctl', '-qw', `net.ipv6.conf.${dev}.disable_ipv6=1`);
    }
    // The bridge sees every frame, whatever its destination MAC.
    inNs(router, 'ip', 'link', 'set', 'dp-rc', 'promisc', 'on');
    inNs(router, 'ip', 'link', 'set', 'dp-rs', 'promisc', 'on');
    inNs(client, 'ip', 'addr', 'add', `${CLIENT_ADDR}/24`, 'dev', 'dp-c');
    inNs(server, 'ip', 'addr', 'add', `${SERVER_ADDR}/24`, 'dev', 'dp-s');
    // A default route on each end, as a real machine has (browsers pick the address of
    // their default route for ICE); the other end forwards nothing, so nothing goes further.
    inNs(client, 'ip', 'route', 'add', 'default', 'via', SERVER_ADDR);
    inNs(server, 'ip', 'route', 'add', 'default', 'via', CLIENT_ADDR);

    const bridge = start(router, process.env.PYTHON ?? '/usr/bin/python3', [join(here, 'delay_bridge.py'), 'dp-rc', 'dp-rs']);
    started.push(bridge);
    await lineFrom(bridge.child, bridge.lines, 'bridge ready', (l) => l === 'ready');
    const echo = start(server, process.execPath, [join(here, 'probe.mjs'), 'serve', SERVER_ADDR, String(PROBE_PORT)]);
    started.push(echo);
    await lineFrom(echo.child, echo.lines, 'probe echo ready', (l) => l === 'ready');

    let delayMs = 0;
    return {
      client,
      server,
      get delayMs() { return delayMs; },
      /** Sets the delay each way for frames from now on. */
      setDelay(ms) { delayMs = ms; bridge.child.stdin.write(`delay ${ms}\n`); },
      /** `count` UDP echoes and TCP connects from the client to the server, in ms. */
      async probe(count = 20) {
        const p = start(client, process.execPath, [join(here, 'probe.mjs'), 'probe', SERVER_ADDR, String(PROBE_PORT), String(count)]);
        const line = await lineFrom(p.child, p.lines, 'probe result', (l) => l.startsWith('{'), 60000);
        return JSON.parse(line);
      },
      /** The bridge's own account: per delay, frames forwarded and how late they left. */
      async stats() {
        const line = lineFrom(bridge.child, bridge.lines, 'bridge stats', (l) => l.startsWith('{'));
        bridge.child.stdin.write('stats\n');
        return JSON.parse(await line);
      },
      remove,
    };
  } catch (e) {
    await remove();
    throw e;
  }
}
