// ackwire for the browser: join a room, send to its players, hear what happens. The npm
// package `ackwire`'s JS part (its types: `ackwire.d.ts`, beside this file); its wasm part is
// the `ackwire-wasm` crate, bound into `./pkg/` (the signal server serves both: this file at
// /ackwire.js, the bundle at /pkg/; the package carries the same files, see xtask/src/npm.rs).
//
//   import { join } from 'ackwire';   // or '/ackwire.js' from the signal server
//   const room = await join(location.href, {
//     app: 'pong', version: 1, channels: ['unreliable-sequenced', 'reliable-ordered'],
//   });
//   room.addEventListener('connected', (e) => room.send(e.peer, 1, 'hi')); // once per connection
//   room.addEventListener('message', (e) => console.log(`peer ${e.peer} on ${e.channel}: ${e.text}`));
//
// Every error this API throws or rejects with is an `Error` with a string `code`:
//   joining:  the server's refusal (`app_mismatch`, `room_full`, `topology_mismatch`,
//             `host_taken`, `ticket_expired`, ... as docs/signalling.md lists them), `bad_url` (the
//             URL or the room's name), `invalid_app`, `invalid_config` (the emulation),
//             `bad_options` (the role, the ticket, `webRtc: false` but for a client),
//             `unsupported_browser` (no WebRTC, and not a host room's client),
//             `load_failed` (the wasm did not load);
//   sending:  `unknown_peer`, `not_connected`, `unknown_channel`, `too_large`, `reliable`
//             (sendLatest on a reliable channel), `full` (the peer's queue: try later),
//             `closed`, `bad_payload` (data neither a Uint8Array nor a string).
// Nothing is sent when a call throws.

/**
 * A channel's delivery: `unreliable` (once, maybe), `unreliable-sequenced` (newest wins, stale
 * ones dropped), `reliable-ordered` (exactly once, in order), `reliable-unordered` (exactly once).
 * @typedef {'unreliable' | 'unreliable-sequenced' | 'reliable-ordered' | 'reliable-unordered'} ChannelKind
 */

/**
 * Every link through the core's emulator, both directions: to try a game on a bad network.
 * @typedef {object} Emulation
 * @property {number} [latencyMs] one-way delay added to every datagram
 * @property {number} [jitterMs] each delay varies within latency ± jitter
 * @property {number} [lossPct] share of datagrams dropped, in percent
 * @property {number} [seed] the emulator's seed (default 1)
 */

/**
 * What a player is in its room: a mesh `peer` (every player links to every other), or in a
 * host room the one `host` (an authoritative server every client links to) or a `client`
 * (linked to the host alone). The room's first member fixes its topology.
 * @typedef {'peer' | 'host' | 'client'} Role
 */

/**
 * @typedef {object} JoinOptions
 * @property {string} app the application's id: 1-64 of A-Z a-z 0-9 - _; a room plays one
 * @property {number} version its protocol version: a room's members all play the same
 * @property {ChannelKind[]} channels its channels, by index (1 to 63)
 * @property {string} [room] the room's name, when `url` is a server's rather than a room page's
 * @property {Role} [role] `peer` (the default), or a host room's `host` or `client`
 * @property {string} [ticket] the join ticket the game's backend minted for this player, for a
 *   server that requires one (docs/deployment.md, "Join tickets")
 * @property {string} [hostIdentity] a client's host's identity (its join ticket's): a host of
 *   another gets no link (default: the first host with an identity is pinned)
 * @property {boolean} [relayOnly] ICE over TURN relays only: peers never learn this player's address
 * @property {boolean} [webTransport] `false`: a host room's client never links to its host over
 *   WebTransport (default true: when the host serves it and the browser has it)
 * @property {boolean} [webRtc] `false`: a host room's client never opens a WebRTC connection, and
 *   links to its host over WebTransport or the host's WebSocket alone, as a browser without
 *   WebRTC does (default true: when the browser has it); any other role rejects with `bad_options`
 * @property {boolean} [webSocket] `false`: a host room's client never links to its host over the
 *   host's WebSocket, the last resort (default true: when the host serves one and nothing else
 *   reaches it)
 * @property {number} [peerBudget] bytes of reliable messages kept per peer until it confirms them (default 4 MiB)
 * @property {number} [attemptTimeoutMs] a link not connected after this long is lost (reason
 *   `timeout`) and tried again (default 20000)
 * @property {Emulation} [emulation] emulate a bad network on every link
 */

/**
 * Why a link was last lost.
 * @typedef {object} Failure
 * @property {string} code stable: `ice_failed`, `timeout`, `channel_closed`, `idle_timeout`, `peer_closed`,
 *   `no_transport`, ...
 * @property {string} message what happened, in words a player understands
 */

/**
 * A link to one peer (a room has one per peer).
 * @typedef {object} LinkInfo
 * @property {number} id the peer, as this room knows it for its whole life (server restarts too)
 * @property {number | null} serverId the peer's id in the signalling server's current session
 * @property {'browser' | 'native'} kind
 * @property {'webrtc' | 'udp' | 'webtransport' | 'websocket'} transport
 * @property {'wanted' | 'negotiating' | 'open' | 'connected' | 'lost' | 'retrying' | 'gone'} state
 * @property {Failure | null} reason why it was last lost (kept until it connects again)
 * @property {string | null} ice the ICE connection state
 * @property {string | null} candidate the chosen path: `host`, `srflx`, `prflx` or `relay`
 * @property {number} attemptMs how long the current attempt took to connect, or has run
 * @property {number} attempts attempts since it last connected
 * @property {number | null} firstAckAt when its first packet was acknowledged (performance.now() ms)
 * @property {number} refused datagrams refused on it
 * @property {number} unconfirmed reliable messages sent and not yet confirmed
 * @property {object | null} stats the core's Stats, as JSON (rtt_ms, jitter_ms, loss_percent, mode, send_rate_pps, ...)
 */

/**
 * Another member's clock as this one reads it (a member's clock counts ms since its join()).
 * @typedef {object} ClockReading
 * @property {number} time that clock's time now, in ms
 * @property {number} uncertainty `time` is within this many ms of the truth (0 for a member's own clock)
 * @property {number} samples ping exchanges it rests on (at most 16)
 * @property {boolean} synced four exchanges came back (a member's own clock: always)
 * @property {number | null} driftPpm that clock's rate against ours in ppm (80: it gains 80 µs a second), once the last minute's pings pin it down; null until then (0 for a member's own clock)
 * @property {number} driftUncertaintyPpm the rate is within this many ppm of `driftPpm`; 100 around 0 while `driftPpm` is null (0 for a member's own clock)
 */

/** The bindings' `[time, uncertainty, samples, synced, driftPpm, driftUncertaintyPpm]` as a {@link ClockReading}. @returns {ClockReading | null} */
const clockReading = (r) => r ? {
  time: r[0], uncertainty: r[1], samples: r[2], synced: r[3] === 1,
  driftPpm: Number.isNaN(r[4]) ? null : r[4], driftUncertaintyPpm: r[5],
} : null;

/**
 * The events of a {@link Room}, by name, and what each carries besides `type`:
 * - `signalling`: `state` ('connecting' | 'joining' | 'joined' | 'reconnecting' | 'closed'), `detail`
 * - `joined`: `serverId`, `resumed` (again after a signalling server restart, with a new serverId)
 * - `refused`: `code`, `message`, `fatal` (a request the server refused; `fatal`: a join no retry
 *   cures, the room stopped)
 * - `peerjoin`: `peer`, `serverId`, `kind`, `role` ({@link Role}; a client hears of its host alone),
 *   `identity` (its join ticket's, or null without tickets)
 * - `hostrefused`: `serverId`, `identity`, `expected`: a client met a host of another identity
 *   than the one it holds its host to (`hostIdentity`, or the first host's); no link with it
 * - `peerleave`: `peer`, `serverId`, `reason` ('left' | 'lost' | 'not_back' | 'we_left'), `role`
 *   (a client whose host left or was lost stays in the room and links again when a host joins)
 * - `link`: `peer`, `link` ({@link LinkInfo}): a link changed state, or learned its path or first ack
 * - `connected`: `peer`: its link is connected, messages flow (once per connection)
 * - `disconnected`: `peer`, `reason` ({@link Failure}; `peer_closed` for a goodbye; null when the link went with its peer first):
 *   its connected link no longer is (once per `connected`)
 * - `message`: `peer`, `channel`, `data` (Uint8Array), `text` (`data` as UTF-8)
 * - `undelivered`: `peer`, `channel`, `data`, `text`: a reliable message whose peer left first
 * - `stats`: `links` ({@link LinkInfo}[]), every second
 * Events are delivered from the start of the join on, once `join()` has resolved.
 */
export class RoomEvent extends Event {
  /** @param {{ type: string }} fields */
  constructor(fields) {
    super(fields.type);
    for (const [key, value] of Object.entries(fields)) if (key !== 'type') this[key] = value;
  }

  /** A message's bytes as UTF-8 text (`undefined` for other events). */
  get text() {
    return this.data instanceof Uint8Array ? utf8.decode(this.data) : undefined;
  }
}

const utf8 = new TextDecoder();
const INTERNAL = Symbol('ackwire');
const START = Symbol('start');

/** An `Error` with a `code`. */
const codeError = (code, message) => Object.assign(new Error(message), { code });

let bindings;
/**
 * The wasm bindings, loaded and initialised once (a failed load is tried again next time).
 * The wasm compiles off the main thread as it downloads; it is instantiated once `ready()`
 * resolves. Instantiating takes the main thread for 15–25 ms (V8 compiles each function on
 * its first call), and a link's ICE gathering needs that thread several times over
 * (Chromium's permission checks, network list and socket each answer there): made before
 * the gathering has its first candidate, the room's construction holds the handshake back.
 */
function loadBindings(ready) {
  bindings ??= (async () => {
    const url = new URL('./pkg/ackwire_wasm_bg.wasm', import.meta.url);
    // A server that does not say `application/wasm` fails this (as does a browser without
    // `compileStreaming`): the bindings' own load then falls back to compiling the bytes.
    const compiled = typeof WebAssembly.compileStreaming === 'function'
      ? WebAssembly.compileStreaming(fetch(url)).catch(() => undefined)
      : Promise.resolve(undefined);
    const m = await import(new URL('./pkg/ackwire_wasm.js', import.meta.url).href);
    const module = await compiled;
    await ready();
    await m.default(module ? { module_or_path: module } : undefined);
    return m;
  })().catch((err) => { bindings = undefined; throw err; });
  return bindings;
}

/**
 * How long the wasm waits for the server's first frame, then for the early links' first ICE
 * candidates (`loadBindings`, `early.gathering`).
 */
const GATHERING_WAIT_MS = 50;

/** `promise`, or `GATHERING_WAIT_MS` passed, whichever comes first. */
const bounded = (promise) => Promise.race([promise, new Promise((resolve) => setTimeout(resolve, GATHERING_WAIT_MS))]);

/**
 * Joins a room and resolves with it once the server took us in; rejects with an `Error`
 * whose `code` says why not (the server's refusal, such as `app_mismatch` when the room plays
 * another game, with the server's message). The join leaves at once, on a WebSocket opened
 * before the wasm has even loaded.
 * @param {string} url a room page's URL (`location.href` works), or a server's with `options.room`
 * @param {JoinOptions} options
 * @returns {Promise<Room>}
 */
export async function join(url, options) {
  const o = { ...options };
  const timeline = { start: performance.now() };
  let early;
  const loading = loadBindings(() => early?.gathering() ?? Promise.resolve());
  early = pageSocket(o, timeline) ?? openEarlySocket(url, o, timeline);
  let wasm;
  try {
    wasm = await loading;
  } catch (err) {
    early?.ws.close();
    early?.release();
    throw codeError('load_failed', `ackwire's WebAssembly did not load: ${err?.message ?? err}`);
  }
  timeline.wasm = performance.now();
  const room = new Room(INTERNAL, timeline);
  await room[START](wasm, url, { ...o, earlySocket: early });
  return room;
}

/** A room name: what the server takes (docs/signalling.md, "Names"). */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Whether this page opens WebRTC connections: the browser has them (WebKitGTK has none) and
 * `options.webRtc` is not `false`. As the driver decides (`ackwire/src/browser/mod.rs`).
 */
const webRtc = (o) => o.webRtc !== false && typeof globalThis.RTCPeerConnection === 'function';

/**
 * Opens the signalling socket with the join in its URL, for the driver to adopt once the
 * wasm is there: the welcome may be waiting by then. The query is the member's fresh join
 * (`UrlJoin`); should it ever differ, the driver closes this socket and joins on its own.
 * `undefined` when the options are not a join this can write (the wasm then says why).
 */
function openEarlySocket(url, o, timeline) {
  try {
    const u = new URL(url);
    const scheme = { 'http:': 'ws:', 'ws:': 'ws:', 'https:': 'wss:', 'wss:': 'wss:' }[u.protocol];
    const inPath = /^\/room\/([^/]+)/.exec(u.pathname)?.[1];
    const room = inPath ?? o.room;
    if (!scheme || !NAME.test(room ?? '') || (inPath && o.room && inPath !== o.room)) return undefined;
    if (typeof o.app !== 'string' || !Number.isInteger(o.version) || !Array.isArray(o.channels)) return undefined;
    if (o.role != null && !['peer', 'host', 'client'].includes(o.role)) return undefined;
    if (o.ticket != null && typeof o.ticket !== 'string') return undefined;
    // Without WebRTC only a host room's client can join: the driver refuses anyone else, and
    // a socket opened meanwhile would show the room a member that comes and goes.
    if (o.role !== 'client' && !webRtc(o)) return undefined;
    const instance = `b${Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, '0')).join('')}`;
    const join = new URLSearchParams({
      // The signalling protocol's version (ackwire_room::signalling::VERSION).
      version: '1', room, kind: 'browser', instance,
      app: o.app, app_version: String(o.version), channels: o.channels.join(','),
    });
    // A mesh peer's join names no role (`UrlJoin::query`); the ticket comes last.
    if (o.role === 'host' || o.role === 'client') join.set('role', o.role);
    if (o.ticket != null) join.set('ticket', o.ticket);
    const ws = new WebSocket(`${scheme}//${u.host}/ws?${join}`);
    timeline.connect = performance.now();
    ws.addEventListener('open', () => { timeline.socket = performance.now(); });
    return holder({ ws, instance, messages: [], opened: false }, o, timeline);
  } catch {
    return undefined;
  }
}

/**
 * The socket the page opened from its HTML, if it did (`window.ackwireSocket`, docs/api.md,
 * "Cold start": two round trips sooner than from this module); the driver adopts it like its
 * own early socket, or, should its join differ from this one, closes it and joins anew. A page
 * joining with a ticket puts it in that socket's URL itself (`ticket=...`, the same one it
 * passes as `options.ticket`): the join is the same only with it.
 */
function pageSocket(o, timeline) {
  const early = globalThis.ackwireSocket;
  if (early === undefined) return undefined;
  delete globalThis.ackwireSocket;
  if (!(early?.ws instanceof WebSocket) || typeof early.instance !== 'string' || !Array.isArray(early.messages)) return undefined;
  timeline.connect = early.connect;
  if (early.openedAt !== undefined) timeline.socket = early.openedAt;
  else early.ws.addEventListener('open', () => { timeline.socket = performance.now(); });
  return holder({ ws: early.ws, instance: early.instance, messages: early.messages, opened: early.ws.readyState === WebSocket.OPEN }, o, timeline);
}

/** The early socket's holder for the driver: its frames kept, its links started, a certificate made. */
function holder(early, o, timeline) {
  earlyLinks(early, o, timeline);
  for (const text of early.messages) early.see(text);
  // The driver replaces these handlers when it adopts the socket.
  early.ws.onopen = () => { early.opened = true; };
  early.ws.onmessage = (m) => { early.see(m.data); early.messages.push(m.data); };
  // The DTLS certificate for this room's links, made now: a link's first offer would
  // otherwise wait for one.
  if (webRtc(o)) {
    RTCPeerConnection.generateCertificate({ name: 'ECDSA', namedCurve: 'P-256' })
      .then((c) => { early.certificate = c; }, () => {});
  }
  return early;
}

/** How many datagrams a WebTransport session keeps until they are read (`ackwire/src/browser/webtransport.rs`). */
const DATAGRAMS_QUEUED = 256;

/**
 * The links a page starts while its wasm loads (docs/api.md, "Cold start"), by the room
 * member's roles (`room/src/member/roles.rs`): a browser offers to a native, and answers the
 * browsers already in the room, which offer to a newcomer. So once the welcome names natives,
 * each gets its peer connection, made as the driver makes one (`ackwire/src/browser/webrtc.rs`:
 * the one pre-negotiated data channel, the welcome's ICE servers, this page's certificate),
 * and its offer; an offer from a browser the welcome named gets its connection and answer.
 * Answers and candidates are applied here, and every frame still goes to the member. When the
 * member opens its link to that peer the driver adopts the live connection (`claim`); it then
 * skips the description this page already applied. What no member claims is closed
 * (`release`). Everything else about links stays the member's. The roles are the same in a
 * host room, which only narrows who is named: a client's welcome names the host alone (one
 * link, offered to a native host or answered to a browser host), a host's every client.
 * A client whose welcome names a host that serves WebTransport dials it instead (as the
 * member would, `room/src/member/webtransport.rs`): its token goes to the host at once, and the
 * driver adopts the session (`claimSession`) when the member dials. A page without WebRTC
 * (`webRtc`) starts no peer connection; nor does it dial a host's WebSocket early: the last
 * resort waits for the member.
 */
function earlyLinks(early, o, timeline) {
  const links = new Map();
  const sessions = new Map();
  const browsers = new Set();
  let iceServers = [];
  const send = (frame) => { if (early.ws.readyState === WebSocket.OPEN) early.ws.send(JSON.stringify(frame)); };
  let linking = true;
  // The server's first frame (the welcome, or a refusal) names the links to start here, so the
  // wasm waits for it, 50 ms at most: compiled before the welcome came, it was instantiated
  // with no link started, and the member made them after its construction (2 joins in 10 in a
  // run of `cargo xtask bench joins`; a page with no early links acked its first packet ~12 ms
  // later in an A/B on loopback). A socket that closes has none to wait for.
  let heard;
  const answered = new Promise((resolve) => { heard = resolve; });
  if (early.ws.readyState >= WebSocket.CLOSING) heard();
  early.ws.addEventListener('close', () => heard());
  /** The peer connection to `peer`, at once (the driver may claim it any time from now on). */
  const connect = (peer) => {
    // Once the wasm is being instantiated, new links are the member's, a moment away.
    if (!linking) throw new Error('the member makes this link');
    const config = { iceServers };
    if (early.certificate) config.certificates = [early.certificate];
    if (o.relayOnly) config.iceTransportPolicy = 'relay';
    const pc = new RTCPeerConnection(config);
    const channel = pc.createDataChannel('ackwire', { ordered: false, maxRetransmits: 0, negotiated: true, id: 0 });
    channel.binaryType = 'arraybuffer';
    pc.onicecandidate = ({ candidate: c }) => {
      if (c) send({ type: 'signal', to: peer, data: { candidate: c.candidate, sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex } });
    };
    const link = { pc, channel, settled: Promise.resolve(), error: null, described: false, received: [] };
    // Its first local candidate, or the bound: what the wasm's instantiation waits for. A
    // relay-only link's first candidate is a TURN allocation away: not waited for.
    timeline.linked ??= performance.now();
    link.gathered = o.relayOnly ? Promise.resolve() : bounded(new Promise((resolve) => {
      pc.addEventListener('icecandidate', () => { timeline.gathered ??= performance.now(); resolve(); }, { once: true });
    }));
    // A peer whose end is up starts its handshake: kept for the member, as the socket's frames are.
    channel.onmessage = (e) => link.received.push(e.data);
    links.set(peer, link);
    return link;
  };
  /** Our description of `kind` for `peer`, relayed at once, then set here. */
  const describe = async (peer, { pc }, kind) => {
    const description = await (kind === 'offer' ? pc.createOffer() : pc.createAnswer());
    const applied = pc.setLocalDescription(description);
    send({ type: 'signal', to: peer, data: { sdp: { type: kind, sdp: description.sdp } } });
    timeline[kind] ??= performance.now();
    await applied;
  };
  const later = (link, step) => {
    link.settled = link.settled.then(step).catch((err) => { link.error ??= `early link: ${err?.message ?? err}`; });
  };
  /** A WebTransport session to the host `peer` serving `service`, and its token sent. */
  const dial = (peer, service) => {
    const token = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
    const url = `${service.url}?token=${token}`;
    const hashes = (service.cert_hashes ?? []).map((h) => ({ algorithm: 'sha-256', value: new Uint8Array(h.match(/../g).map((b) => parseInt(b, 16))) }));
    const wt = new WebTransport(url, hashes.length ? { serverCertificateHashes: hashes } : {});
    // The host connects as the session opens (docs/wire.md): its first packets wait here
    // until the driver reads them, and a queue of one (the default) would keep the last alone.
    wt.datagrams.incomingHighWaterMark = DATAGRAMS_QUEUED;
    // Heard by the driver once it adopts the session; until then a refusal must not go unheard.
    wt.ready.then(() => { timeline.ready ??= performance.now(); }, () => {});
    wt.closed.catch(() => {});
    send({ type: 'signal', to: peer, data: { webtransport: token } });
    timeline.offer ??= performance.now();
    sessions.set(peer, { wt, url });
  };
  const dials = (peer) => peer.role === 'host' && typeof peer.webtransport?.url === 'string'
    && o.role === 'client' && o.webTransport !== false && typeof globalThis.WebTransport === 'function';
  /** Sees a frame before the member does (it gets every one). */
  early.see = (text) => {
    timeline.heard ??= performance.now();
    heard();
    if (early.released) return;
    let frame;
    try { frame = JSON.parse(text); } catch { return; }
    if (frame?.type === 'welcome' && Array.isArray(frame.peers)) {
      for (const peer of frame.peers) {
        if (!Number.isInteger(peer?.id) || sessions.has(peer.id) || !dials(peer)) continue;
        try {
          dial(peer.id, peer.webtransport);
        } catch {
          // The member's own attempt will say why.
        }
      }
    }
    if (!webRtc(o)) return;
    if (frame?.type === 'welcome' && Array.isArray(frame.peers)) {
      iceServers = frame.ice_servers ?? [];
      for (const peer of frame.peers) {
        if (!Number.isInteger(peer?.id) || links.has(peer.id) || sessions.has(peer.id)) continue;
        if (peer.kind === 'browser') {
          browsers.add(peer.id);
        } else if (peer.kind === 'native') {
          try {
            const link = connect(peer.id);
            later(link, () => describe(peer.id, link, 'offer'));
          } catch {
            // The member's own attempt will say why.
          }
        }
      }
      return;
    }
    if (frame?.type !== 'signal') return;
    const { sdp, candidate, sdpMid, sdpMLineIndex } = frame.data ?? {};
    let link = links.get(frame.from);
    if (!link && sdp?.type === 'offer' && browsers.delete(frame.from)) {
      try {
        link = connect(frame.from);
      } catch {
        return;
      }
      link.described = true;
      later(link, async () => {
        await link.pc.setRemoteDescription(sdp);
        await describe(frame.from, link, 'answer');
      });
    } else if (link && sdp?.type === 'answer' && !link.described) {
      link.described = true;
      later(link, () => link.pc.setRemoteDescription(sdp));
    } else if (link && typeof candidate === 'string') {
      // A candidate the browser cannot use (another address family) is not fatal.
      later(link, () => link.pc.addIceCandidate({ candidate, sdpMid, sdpMLineIndex }).catch(() => {}));
    }
  };
  /**
   * Resolves once the server's first frame came and every link it started has its first local
   * candidate, each wait with its bound (`loadBindings`); no link starts here after that.
   */
  early.gathering = async () => {
    await bounded(answered);
    let waited;
    do {
      waited = [...links.values()];
      await Promise.all(waited.map((l) => l.gathered));
    } while (links.size > waited.length);
    linking = false;
  };
  /**
   * The driver adopts the link to `peer`: `{ pc, channel, settled, error, described, received }`
   * (`described`: this page set the peer's description; `received`: the channel's messages
   * so far), or none.
   */
  early.claim = (peer) => {
    const link = links.get(peer);
    links.delete(peer);
    return link;
  };
  /** The driver adopts the WebTransport session to `peer`: `{ wt, url }` (its token sent), or none. */
  early.claimSession = (peer) => {
    const session = sessions.get(peer);
    if (session) timeline.claimed ??= performance.now();
    sessions.delete(peer);
    return session;
  };
  /** No member will claim a link any more: close those left. */
  early.release = () => {
    early.released = true;
    for (const link of links.values()) link.settled.then(() => { link.channel.close(); link.pc.close(); });
    links.clear();
    for (const { wt } of sessions.values()) { try { wt.close(); } catch { /* already closed */ } }
    sessions.clear();
  };
  return early;
}

/** States a {@link Snapshots} keeps (two seconds at 60 a second), and lateness samples. */
const KEPT_STATES = 120, LATENESS_KEPT = 64;

/**
 * A client's buffer of the host's states, each stamped with the tick it shows, drawn at a
 * render time behind the host's clock (`room.clock()`): between the two states around it, so
 * motion is smooth whatever the arrivals' jitter, gaps and reordering. The delay is the 90th
 * percentile of the last 64 states' lateness (the host's clock at arrival, less the end of the
 * state's tick) plus one tick, moving a tenth of the way per state; the render time never
 * runs backwards. The Rust `ackwire::sync::Snapshots`, for states that are arrays of numbers.
 */
export class Snapshots {
  #tickMs;
  /** @type {[number, number[]][]} by tick, oldest first */
  #states = [];
  /** @type {number[]} */
  #lateness = [];
  #delay;
  /** @type {number | null} */
  #drawn = null;
  #held = 0;
  #between = 0;

  /** @param {number} tickMs the host's tick, in ms (tick `n` ends at `(n + 1) × tickMs` on its clock) */
  constructor(tickMs) {
    if (!(tickMs > 0)) throw new RangeError('a tick must last some time');
    this.#tickMs = tickMs;
    this.#delay = 2 * tickMs;
  }

  /**
   * A state for tick `tick` arrived when the host's clock read `arrivedMs` (`room.clock().time`).
   * A duplicate, or a state older than every one kept, is dropped (`false`).
   * @param {number} tick @param {number} arrivedMs @param {number[]} state @returns {boolean}
   */
  push(tick, arrivedMs, state) {
    const states = this.#states;
    let at = states.findIndex(([t]) => t >= tick);
    if (at === -1) at = states.length;
    if (states[at]?.[0] === tick || (at === 0 && states.length === KEPT_STATES)) return false;
    states.splice(at, 0, [tick, state]);
    if (states.length > KEPT_STATES) states.shift();
    this.#lateness.push(Math.max(0, arrivedMs - (tick + 1) * this.#tickMs));
    if (this.#lateness.length > LATENESS_KEPT) this.#lateness.shift();
    const sorted = [...this.#lateness].sort((a, b) => a - b);
    const target = sorted[Math.min(Math.floor((sorted.length * 9) / 10), sorted.length - 1)] + this.#tickMs;
    this.#delay += (target - this.#delay) / 10;
    return true;
  }

  /**
   * The state to draw when the host's clock reads `nowMs`: at `nowMs - delay` (never before the
   * last render time), between the two states around it; the nearest one before the first or
   * after the last (no extrapolation); `null` before any state.
   * @param {number} nowMs @returns {number[] | null}
   */
  sample(nowMs) {
    const at = Math.max(nowMs - this.#delay, this.#drawn ?? -Infinity);
    this.#drawn = at;
    const states = this.#states;
    if (states.length === 0) return null;
    const end = (/** @type {number} */ tick) => (tick + 1) * this.#tickMs;
    let after = states.findIndex(([t]) => end(t) > at);
    if (after === -1) after = states.length;
    if (after === 0) return states[0][1];
    if (after === states.length) {
      this.#held += 1;
      return states[after - 1][1];
    }
    const [t0, from] = states[after - 1];
    const [t1, to] = states[after];
    this.#between += 1;
    const f = (at - end(t0)) / (end(t1) - end(t0));
    return from.map((v, i) => v + (to[i] - v) * f);
  }

  /** How far behind the host's clock states are drawn now, in ms. @type {number} */
  get delay() { return this.#delay; }

  /** Draws that found no state after the render time (the newest was held). @type {number} */
  get held() { return this.#held; }

  /** Draws between two states (interpolated): most of them, on a path the delay suits. @type {number} */
  get between() { return this.#between; }
}

/**
 * A room as one player sees it: send to its peers, hear what happens (an `EventTarget`; see
 * {@link RoomEvent} for the events). It runs by itself: links are set up, kept, measured and
 * recovered whether or not the page calls in. Rooms come from {@link join}.
 */
export class Room extends EventTarget {
  #handle;
  #timeline;
  /** Events until the page could listen (see `#goLive`); `null` after. */
  #queue = [];
  /** Per channel read with `receive`: its messages, oldest first (see `receive`). */
  #inboxes = new Map();
  #closing;

  /** @private */
  constructor(key, timeline) {
    if (key !== INTERNAL) throw new TypeError('a Room comes from join()');
    super();
    this.#timeline = timeline;
  }

  /** Starts the wasm room; resolves once joined, rejects if refused first. */
  [START](wasm, url, options) {
    return new Promise((resolve, reject) => {
      let joined = false;
      const onEvent = (fields) => {
        const event = new RoomEvent(fields);
        if (!joined && fields.type === 'refused') {
          this.close();
          reject(codeError(fields.code, fields.message));
          return;
        }
        if (!joined && fields.type === 'joined') {
          joined = true;
          this.#timeline.welcome = performance.now();
          resolve();
          this.#goLive();
        }
        // The first link to reach each state, for the join's timeline.
        if (fields.type === 'link') this.#timeline[fields.link.state] ??= performance.now();
        const inbox = fields.type === 'message' ? this.#inboxes.get(fields.channel) : undefined;
        if (inbox) inbox.push(event);
        else if (this.#queue) this.#queue.push(event);
        else this.dispatchEvent(event);
      };
      try {
        this.#handle = new wasm.WasmRoom(url, { ...options, onEvent });
      } catch (err) {
        options.earlySocket?.ws.close();
        options.earlySocket?.release();
        reject(err);
      }
    });
  }

  /**
   * Delivers the queued events in a task of their own: after `join()`'s caller, resumed in a
   * microtask, had the chance to add its listeners. (A message channel's task, since a
   * background tab's timers wait up to a second.)
   */
  #goLive() {
    const { port1, port2 } = new MessageChannel();
    port1.onmessage = () => {
      port1.close();
      const queued = this.#queue;
      this.#queue = null;
      for (const event of queued) this.dispatchEvent(event);
    };
    port2.postMessage(null);
  }

  /**
   * Sends `data` to `peer` on `channel`, as the channel promises: once on an unreliable one;
   * exactly once (in order, if ordered) on a reliable one, across lost links too, or handed
   * back as an `undelivered` event if the peer leaves first.
   * @param {number} peer a peer's `id`
   * @param {number} channel an index into the app's channels
   * @param {Uint8Array | string} data bytes, or text sent as UTF-8
   */
  send(peer, channel, data) { this.#handle.send(peer ?? null, channel, data, false); }

  /**
   * Sends `data` on an unreliable channel in place of what it holds for `peer` and has not
   * sent yet: call it every frame with the newest state; each packet carries the newest.
   * @param {number} peer @param {number} channel @param {Uint8Array | string} data
   */
  sendLatest(peer, channel, data) { this.#handle.send(peer ?? null, channel, data, true); }

  /**
   * {@link send} to every peer: on a reliable channel every peer in the room (kept for those
   * whose link is down), on an unreliable one every connected peer. Each peer's outcome is its
   * own: one peer's full queue refuses it for that peer alone.
   * @param {number} channel @param {Uint8Array | string} data
   * @returns {Broadcast} how many peers took it, and who refused it and why
   */
  broadcast(channel, data) { return this.#handle.send(undefined, channel, data, false); }

  /**
   * {@link sendLatest} to every connected peer.
   * @param {number} channel @param {Uint8Array | string} data
   * @returns {Broadcast} how many peers took it, and who refused it and why
   */
  broadcastLatest(channel, data) { return this.#handle.send(undefined, channel, data, true); }

  /**
   * The oldest message that arrived on `channel` (a `message` event: `peer`, `channel`,
   * `data`, `text`), or `null`; never waits. From a channel's first `receive`, its messages
   * wait here and are no longer dispatched as `message` events (those not yet dispatched
   * included), so a frame loop drains the channels it reads and hears the rest as events.
   * Throws `unknown_channel` for a channel the app did not declare.
   * @param {number} channel @returns {RoomEvent | null}
   */
  receive(channel) {
    let inbox = this.#inboxes.get(channel);
    if (!inbox) {
      this.maxMessageSize(channel); // throws `unknown_channel` for an undeclared one
      const mine = (e) => e.type === 'message' && e.channel === channel;
      inbox = this.#queue?.filter(mine) ?? [];
      if (this.#queue) this.#queue = this.#queue.filter((e) => !mine(e));
      this.#inboxes.set(channel, inbox);
    }
    return inbox.shift() ?? null;
  }

  /** Every link (one per peer) with its state, path and stats. @returns {LinkInfo[]} */
  links() { return this.#handle.links(); }

  /** The room's peers: their links, as {@link links} gives them. @type {LinkInfo[]} */
  get peers() { return this.#handle.links(); }

  /**
   * The room's clock now, read alike by every member: the host's in a host room, in a mesh
   * the clock of the member the server numbered first among this one and its linked peers.
   * Exact there; elsewhere an estimate within `uncertainty` ms, `synced` about half a second
   * after the link connects. `null` until the first exchange with that member came back.
   * @returns {ClockReading | null}
   */
  clock() { return clockReading(this.#handle.clock(undefined)); }

  /** `peer`'s clock now, as this member estimates it; `null` before it is known. @param {number} peer @returns {ClockReading | null} */
  peerClock(peer) { return clockReading(this.#handle.clock(peer)); }

  /**
   * In a host room, the tick to stamp the input a client sends now so that it reaches the
   * host before the host simulates that tick: the host's clock, plus the wait for the link's
   * next packet (`next_packet_ms`), half its RTT, twice its jitter and the clock's
   * uncertainty, rounded up to the next tick of `tickMs`. `null` in a mesh, on the host,
   * without a host, and until its clock is synced.
   * @param {number} tickMs @returns {number | null}
   */
  inputTick(tickMs) {
    const clock = this.clock();
    const stats = this.host === null ? null : this.links().find((l) => l.id === this.host)?.stats;
    if (!clock?.synced || !stats || !(tickMs > 0)) return null;
    const ahead = stats.next_packet_ms + stats.rtt_ms / 2 + 2 * stats.jitter_ms + clock.uncertainty;
    return Math.floor((clock.time + ahead) / tickMs) + 1;
  }

  /** Our id in the signalling server's current session (it changes when the server restarts). @type {number | undefined} */
  get serverId() { return this.#handle.serverId; }

  /**
   * In a host room, the host's `id` while it is in the room (a client's one peer); `null` in
   * a mesh, on the host itself, and while the room has no host (a client links to the next
   * host that joins, without joining again).
   * @type {number | null}
   */
  get host() { return this.#handle.host ?? null; }

  /** The signalling connection: 'connecting', 'joining', 'joined', 'reconnecting' or 'closed'. @type {string} */
  get signalling() { return this.#handle.signalling; }

  /**
   * Frames from the signalling server this room could not read (a later server's frame
   * types, a dashboard's, broken JSON): each was refused and logged on the console, never
   * dropped unseen. A count that grows: the server speaks a newer schema than this build.
   * @type {number}
   */
  get unreadableFrames() { return this.#handle.unreadableFrames; }

  /**
   * When each step of joining happened, in performance.now() ms: `start` (join() called),
   * `connect` (socket opening), `socket` (open), `heard` (the server's first frame on it),
   * `offer` and `answer` (the first made before
   * the wasm loaded), `linked` and `gathered` (that link made, and its first local candidate),
   * `ready` and `claimed` (a WebTransport session dialed early: ready, adopted), `wasm`
   * (loaded), `welcome` (joined).
   * @type {Record<string, number>}
   */
  get timeline() { return { ...this.#timeline }; }

  /**
   * The largest message `channel` takes, in bytes; throws `unknown_channel` for a channel the
   * app did not declare. @param {number} channel @returns {number}
   */
  maxMessageSize(channel) { return this.#handle.maxMessageSize(channel); }

  /**
   * How much `send` to `peer` on `channel` takes now before it throws `full`: `messages` and
   * `bytes` (on a reliable channel what the peer's copies may still hold, each message
   * counting up to 5 bytes more; on an unreliable one the room in the link's queue). Throws as
   * `send` does. @param {number} peer @param {number} channel
   * @returns {{ messages: number, bytes: number }}
   */
  sendCapacity(peer, channel) { return this.#handle.sendCapacity(peer, channel); }

  /**
   * Pulls (`true`) or plugs back this player's network cable for its links (signalling stays
   * up): links go quiet, are lost after the idle timeout, and recover once plugged back.
   * @param {boolean} on
   */
  setOutage(on) { this.#handle.setOutage(Boolean(on)); }

  /**
   * Leaves the room: links say goodbye, the server hears it, and reliable messages peers
   * never confirmed come back as `undelivered` events. Calls after it throw `closed`.
   * @returns {Promise<void>}
   */
  close() {
    this.#closing ??= this.#handle ? this.#handle.close() : Promise.resolve();
    return this.#closing;
  }
}
