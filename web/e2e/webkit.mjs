// WebKit, the third browser engine: Debian's WebKitGTK (its MiniBrowser) driven by
// WebKitWebDriver (webkit2gtk-driver) over plain W3C WebDriver, HTTP and JSON, with node's
// own `fetch`. playwright-core's WebKit needs Playwright's patched build, and this driver
// speaks no WebDriver BiDi (a session asking for `webSocketUrl` is refused), so neither
// puppeteer nor playwright can drive it. WebKitGTK draws into an X display even when no one
// looks: a private Xvfb, on a unix socket only (`-nolisten tcp`), so it runs in the
// loopback-only namespace of `cargo xtask test`; it needs no D-Bus session bus there.
//
// The page's console is not captured: the driver has no log endpoint and no BiDi, and
// MiniBrowser's `--enable-write-console-messages-to-stdout` prints nothing in automation
// mode (outside it, the messages go to stderr). A test reads what it needs with `evaluate`.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

/** Where Debian's libwebkit2gtk-4.1-0 puts MiniBrowser (`dpkg -S MiniBrowser`). */
export const MINIBROWSER = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';

/** A TCP port free on loopback right now (the driver binds it a moment later). */
const freeTcpPort = () => new Promise((resolve, reject) => {
  const s = createServer();
  s.once('error', reject);
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

/**
 * Rejects with `what` and the end of the process's stderr if `child` exits before `promise`
 * settles. Its stderr is read for as long as it runs (a full pipe would stall it).
 */
function unlessExited(child, what, promise) {
  let log = '';
  child.stderr.on('data', (chunk) => { log = (log + chunk).slice(-4000); });
  return Promise.race([promise, new Promise((_, reject) => {
    child.once('error', (err) => reject(new Error(`cannot run ${what} (\`cargo xtask setup\` installs it): ${err.message}`)));
    child.once('exit', (code, signal) => reject(new Error(`${what} exited (${code ?? signal}) while starting:\n${log}`)));
  })]);
}

/**
 * Starts Xvfb on a display number it picks itself (`-displayfd`: it writes the number it
 * bound to fd 3, so tests running at once never race for one), resolves with ":N".
 */
async function startXvfb(procs) {
  const xvfb = spawn('Xvfb', ['-displayfd', '3', '-screen', '0', '1280x800x24', '-nolisten', 'tcp'],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe'], detached: true });
  procs.push(xvfb);
  const display = new Promise((resolve) => {
    let out = '';
    xvfb.stdio[3].on('data', (chunk) => { out += chunk; if (out.includes('\n')) resolve(`:${out.trim()}`); });
  });
  return unlessExited(xvfb, 'Xvfb', display);
}

/** One WebDriver command; the driver's error (`{ error, message }`) becomes a thrown Error. */
async function command(base, method, path, body, signal) {
  const res = await fetch(base + path, {
    method,
    signal,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok || json.value?.error) {
    throw new Error(`WebKitWebDriver ${method} ${path}: ${json.value?.error ?? res.status}: ${json.value?.message ?? ''}`);
  }
  return json.value;
}

/**
 * Launches WebKitGTK's MiniBrowser through WebKitWebDriver, with `args` besides
 * `--automation` (MiniBrowser's own options and WebKitSettings, e.g. `--features=+WebTransport`).
 * `headlessDisplay`: true (default) starts a private Xvfb; a string (":1") uses that
 * display; false uses $DISPLAY. Resolves with the session: `goto`, `evaluate`,
 * `evaluateAsync`, `screenshot`, `waitFor`, `close`; `launchMs` is how long the launch took.
 */
export async function launchWebKit({ headlessDisplay = true, args = [] } = {}) {
  const started = Date.now();
  // Every process started here, each a process group leader (`detached`), so `close` ends
  // MiniBrowser and its web and network processes with the driver even when the session
  // never got to say goodbye.
  const procs = [];
  // Not in our process group, they would outlive this process should it end without `close`
  // (an uncaught error): killed on `exit`, whose handlers may only do synchronous work.
  const orphans = () => procs.forEach((p) => { try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ } });
  process.once('exit', orphans);
  let base;
  let sessionId;
  const close = async () => {
    if (sessionId) {
      // Ends MiniBrowser cleanly; a dead or stuck driver must not keep close() waiting.
      await command(base, 'DELETE', `/session/${sessionId}`, undefined, AbortSignal.timeout(5000)).catch(() => {});
      sessionId = undefined;
    }
    for (const p of procs.reverse()) {
      if (p.exitCode !== null || p.signalCode !== null) continue;
      const exited = new Promise((resolve) => p.once('exit', resolve));
      try { process.kill(-p.pid, 'SIGTERM'); } catch { /* already gone */ }
      let timer;
      await Promise.race([exited, new Promise((r) => { timer = setTimeout(r, 3000); })]);
      clearTimeout(timer);
      try { process.kill(-p.pid, 'SIGKILL'); } catch { /* already gone */ }
    }
    procs.length = 0;
    process.off('exit', orphans);
  };
  try {
    const display = headlessDisplay === true ? await startXvfb(procs)
      : headlessDisplay || process.env.DISPLAY;
    if (!display) throw new Error('launchWebKit: no X display (headlessDisplay false and no $DISPLAY)');
    const port = await freeTcpPort();
    base = `http://127.0.0.1:${port}`;
    const driver = spawn('WebKitWebDriver', [`--port=${port}`, '--host=127.0.0.1'], {
      env: { ...process.env, DISPLAY: display },
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    procs.push(driver);
    // Ready once /status says so; the driver has no other signal (it prints nothing).
    await unlessExited(driver, 'WebKitWebDriver', (async () => {
      const deadline = Date.now() + 15000;
      for (;;) {
        const status = await command(base, 'GET', '/status').catch(() => null);
        if (status?.ready) return;
        if (Date.now() > deadline) throw new Error(`WebKitWebDriver on ${base} not ready after 15 s`);
        await new Promise((r) => setTimeout(r, 50));
      }
    })());
    // A MiniBrowser that dies at start (a bad option, a missing library) leaves the driver
    // waiting for it forever: the session gets 30 s (it takes ~0.3 s).
    const session = await command(base, 'POST', '/session', {
      capabilities: {
        alwaysMatch: {
          browserName: 'MiniBrowser',
          'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation', ...args] },
        },
      },
    }, AbortSignal.timeout(30000)).catch((err) => {
      throw err.name === 'TimeoutError' ? new Error(`MiniBrowser did not start in 30 s (${MINIBROWSER} ${args.join(' ')})`) : err;
    });
    sessionId = session.sessionId;
    const at = (path) => `/session/${sessionId}${path}`;
    const webkit = {
      capabilities: session.capabilities,
      launchMs: Date.now() - started,
      /** Navigates and resolves once the page has loaded (pageLoadStrategy "normal"). */
      goto: (url) => command(base, 'POST', at('/url'), { url }),
      /** Runs `body` (a function body: `return ...`) in the page with `arguments` = `args`. */
      evaluate: (body, ...args) => command(base, 'POST', at('/execute/sync'), { script: body, args }),
      /**
       * Runs `body` with `args` and one more argument, the callback it calls with its result
       * (`arguments[arguments.length - 1](value)`); the session's script timeout, 30 s, applies.
       */
      evaluateAsync: (body, ...args) => command(base, 'POST', at('/execute/async'), { script: body, args }),
      /** The window as a PNG, base64 (W3C "Take Screenshot"). */
      screenshot: () => command(base, 'GET', at('/screenshot')),
      /** Polls `body` (with `args`) until it returns something truthy, which it resolves with. */
      async waitFor(body, { timeout = 10000, interval = 50 } = {}, ...args) {
        const deadline = Date.now() + timeout;
        for (;;) {
          const value = await webkit.evaluate(body, ...args);
          if (value) return value;
          if (Date.now() > deadline) throw new Error(`WebKit: not true after ${timeout} ms: ${body}`);
          await new Promise((r) => setTimeout(r, interval));
        }
      },
      close,
    };
    return webkit;
  } catch (err) {
    await close();
    throw err;
  }
}
