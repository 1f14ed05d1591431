// e2e plumbing for native peers: runs `ackwire-peer join URL --json` (the binary from
// ACKWIRE_PEER_BIN) and reads its one-JSON-object-per-line stdout.
import { spawn } from 'node:child_process';
import { requireEnv as env } from './harness.mjs';

/**
 * Starts `ackwire-peer join url --json --bind 127.0.0.1:0 ...extra` (`command: 'host'`: the
 * demo's host-room relay instead; `bind`: another local address); resolves once it has been
 * welcomed. With `netns`, it runs in that network namespace (`ip netns exec`) with `join`'s
 * own defaults (every interface) instead of loopback.
 */
export async function joinNative(url, extra = [], { netns, command = 'join', bind = '127.0.0.1:0' } = {}) {
  // On this machine only (`join` binds every interface by default; the namespace has only lo).
  const args = [command, url, '--json', ...(netns ? [] : ['--bind', bind]), ...extra];
  const [program, argv] = netns
    ? ['ip', ['netns', 'exec', netns, env('ACKWIRE_PEER_BIN'), ...args]]
    : [env('ACKWIRE_PEER_BIN'), args];
  const child = spawn(program, argv, {
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'info', NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const native = {
    ...jsonLines(child),
    /** The stats entry for the link to `peer` (its current id) in a stats line. */
    link: (line, peer) => line.links?.find((l) => l.peer === peer),
    /** The stats entry for the room member's link `id` (stable across server restarts). */
    linkById: (line, id) => line.links?.find((l) => l.link === id),
    /** Whether `line` reports the link to `peer` entering `state`. */
    linkState: (line, peer, state) => line.type === 'link' && line.peer === peer && line.state === state,
  };
  const welcome = await native.waitFor('welcome', (l) => l.type === 'welcome', 15000);
  native.id = welcome.peer_id;
  return native;
}

/**
 * Reads `child`'s stdout as one JSON object per line (other lines are skipped); its stderr goes
 * to ours. `lines` holds what arrived, `waitFor` resolves on the first line a predicate takes,
 * `stop` ends the process with Ctrl-C (SIGINT) and `exited` resolves with its exit code.
 */
export function jsonLines(child) {
  const lines = [];
  const waiters = new Set();
  let buffered = '';
  child.stdout.on('data', (chunk) => {
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      let value;
      try { value = JSON.parse(line); } catch { continue; }
      lines.push(value);
      for (const w of waiters) w();
    }
  });
  child.stderr.on('data', (chunk) => process.stderr.write(`[native ${child.pid}] ${chunk}`));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    child,
    lines,
    /** Resolves with the first line (from `from` on) for which `pred` holds. */
    waitFor(what, pred, timeout = 10000, from = 0) {
      return new Promise((resolve, reject) => {
        let seen = from;
        const check = () => {
          for (; seen < lines.length; seen++) {
            if (pred(lines[seen])) { done(); resolve(lines[seen]); return; }
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`native ${child.pid}: no ${what} within ${timeout} ms; last lines: ${JSON.stringify(lines.slice(-3))}`));
        }, timeout);
        const done = () => { clearTimeout(timer); waiters.delete(check); };
        waiters.add(check);
        check();
      });
    },
    /**
     * Stops the program (Ctrl-C: it closes its links and leaves the room). One that is still
     * running 10 s later is killed and the call fails: a program deaf to Ctrl-C is a bug.
     */
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGINT');
      let timer;
      const late = new Promise((resolve) => { timer = setTimeout(resolve, 10000, 'late'); });
      const outcome = await Promise.race([exited, late]);
      clearTimeout(timer);
      if (outcome === 'late') {
        child.kill('SIGKILL');
        await exited;
        throw new Error(`native ${child.pid} did not stop within 10 s of Ctrl-C`);
      }
    },
    exited,
  };
}
