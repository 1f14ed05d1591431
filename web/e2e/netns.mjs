// Network namespaces for tests and benches: named namespaces, veth pairs between them,
// programs run inside them. Every namespace is made by the caller and removed by it (nat.mjs's
// small internet, delayed-path.mjs's delayed path); addresses exist only inside them.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Runs a program to completion (stderr kept for the error); throws on failure. */
export const run = (program, ...args) => execFileSync(program, args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** `run` inside network namespace `ns`. */
export const inNs = (ns, program, ...args) => run('ip', 'netns', 'exec', ns, program, ...args);

/** Starts `program` inside network namespace `ns` (`ip netns exec` execs it: same pid). */
export const spawnIn = (ns, program, args = [], options = {}) => spawn('ip', ['netns', 'exec', ns, program, ...args], options);

/**
 * A set of named namespaces, each `${tag}-${name}` with loopback up; `remove()` deletes every
 * one made (and with them the veths inside), whatever state they are in.
 */
export function namespaces(tag) {
  const made = [];
  return {
    add(name) {
      const ns = `${tag}-${name}`;
      run('ip', 'netns', 'add', ns);
      made.push(ns);
      inNs(ns, 'ip', 'link', 'set', 'lo', 'up');
      return ns;
    },
    remove() {
      for (const ns of made.splice(0)) { try { run('ip', 'netns', 'del', ns); } catch { /* already gone */ } }
    },
  };
}

/**
 * A veth pair made here and moved into the namespaces: `a` into `nsA`, `b` into `nsB`, both
 * up. Names are per namespace, so callers run inside a namespace of their own (`cargo xtask`
 * runs them under `unshare --net`) and never meet another run's.
 */
export function veth(a, nsA, b, nsB) {
  run('ip', 'link', 'add', a, 'type', 'veth', 'peer', 'name', b);
  run('ip', 'link', 'set', a, 'netns', nsA);
  run('ip', 'link', 'set', b, 'netns', nsB);
  inNs(nsA, 'ip', 'link', 'set', a, 'up');
  inNs(nsB, 'ip', 'link', 'set', b, 'up');
}

/** Chromium in network namespace `ns`: a wrapper playwright launches in its place. */
export function chromiumIn(ns) {
  const dir = mkdtempSync(join(tmpdir(), 'ackwire-netns-'));
  const wrapper = join(dir, 'chromium');
  writeFileSync(wrapper, `#!/bin/sh\nexec ip netns exec ${ns} ${process.env.CHROMIUM ?? '/usr/bin/chromium'} "$@"\n`);
  chmodSync(wrapper, 0o755);
  return { path: wrapper, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
