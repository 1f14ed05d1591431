// Every call, event and error of ackwire's JS API, through the npm package by its name, as a
// TypeScript game would use them. `cargo xtask types` (a stage of `cargo xtask test`) runs
// `tsc --noEmit` on it against the package as assembled (its package.json's `exports` and
// `ackwire.d.ts`); nothing runs it. The `@ts-expect-error` lines are mistakes the
// declarations must refuse: one they let through fails the check too.
import {
  join,
  Room,
  RoomEvent,
  Snapshots,
  type ClockReading,
  type AckwireError,
  type ChannelKind,
  type ErrorCode,
  type Failure,
  type JoinError,
  type JoinErrorCode,
  type JoinOptions,
  type LinkInfo,
  type LinkState,
  type Payload,
  type PeerId,
  type Role,
  type RoomEventMap,
  type SendError,
  type SendErrorCode,
  type ServerErrorCode,
  type Stats,
} from 'ackwire';

const CHANNELS = ['unreliable-sequenced', 'reliable-ordered', 'reliable-unordered', 'unreliable'] as const;
const [STATE, EVENTS, CHAT, EFFECTS] = [0, 1, 2, 3];

const options: JoinOptions = {
  app: 'typed-pong',
  version: 3,
  channels: CHANNELS,
  room: 'lobby',
  relayOnly: false,
  emulation: { latencyMs: 40, jitterMs: 5, lossPct: 1, seed: 7 },
};
const kinds: readonly ChannelKind[] = options.channels;
// On a server that requires join tickets: the one the game's backend minted for this player.
const ticketed: JoinOptions = { ...options, role: 'client', ticket: 'v1.payload.tag' };
// @ts-expect-error a ticket is its text
const untyped: JoinOptions = { ...options, ticket: 42 };
// A client that links only with the host its backend named.
const pinned: JoinOptions = { ...ticketed, hostIdentity: 'host-eu-1' };

// @ts-expect-error: not a channel kind
const misspelt: JoinOptions = { app: 'x', version: 1, channels: ['reliable'] };
// @ts-expect-error: the version is a number
const unversioned: JoinOptions = { app: 'x', version: '1', channels: [] };
// A host room's client: it links to the host alone.
const client: JoinOptions = { ...options, room: 'arena', role: 'client' };
const roles: Role[] = ['peer', 'host', client.role ?? 'peer'];
// @ts-expect-error: a role is peer, host or client
const server: JoinOptions = { app: 'x', version: 1, channels: [], role: 'server' };
// @ts-expect-error: a Room comes from join()
new Room();

/** What the game shows for each peer. */
const players = new Map<PeerId, { state: LinkState; why?: Failure; rttMs?: number }>();

function show(link: LinkInfo): void {
  const stats: Stats | null = link.stats;
  players.set(link.id, {
    state: link.state,
    why: link.reason ?? undefined,
    rttMs: stats?.rtt_ms,
  });
  const path = `${link.kind} over ${link.transport} (${link.candidate ?? 'no path yet'}, ICE ${link.ice ?? '-'})`;
  const progress = `${link.attempts} attempts, ${link.attemptMs} ms, first ack at ${link.firstAckAt ?? '-'}`;
  const counts = `${link.refused} refused, ${link.unconfirmed} unconfirmed, server id ${link.serverId ?? '-'}`;
  console.log(path, progress, counts);
  if (stats) {
    const mode: 'good' | 'bad' = stats.mode;
    console.log(mode, stats.jitter_ms, stats.loss_percent, stats.loss_window_packets, stats.loss_cumulative_percent,
      stats.recovery_time_ms, stats.send_rate_pps, stats.packets_sent, stats.packets_received, stats.packets_acked,
      stats.packets_lost, stats.bytes_sent, stats.bytes_received, stats.header_bytes_sent,
      stats.packets_unauthenticated, stats.last_header_len, stats.messages_sent, stats.messages_resent,
      stats.messages_delivered, stats.messages_dropped_stale, stats.reliable_in_flight, stats.connection_state);
  }
  if (link.reason) {
    switch (link.reason.code) {
      case 'ice_failed':
      case 'timeout':
      case 'no_direct_path':
        console.warn(`this network may need a TURN server: ${link.reason.message}`);
        break;
      default:
        console.warn(link.reason.message);
    }
  }
}

/** Sends, telling apart each reason a send can be refused; `true` if it went. */
function trySend(room: Room, peer: PeerId, channel: number, data: Payload): boolean {
  try {
    room.send(peer, channel, data);
    return true;
  } catch (err) {
    const code: SendErrorCode = (err as SendError).code;
    switch (code) {
      case 'full': // backpressure: try again next frame
      case 'not_connected': // wait for the next `link` event saying `connected`
        return false;
      case 'unknown_peer':
      case 'unknown_channel':
      case 'too_large':
      case 'reliable':
      case 'closed':
      case 'bad_payload':
      case 'send_failed':
        throw err;
      default: {
        // Every code is handled above: a code added to the declarations fails here.
        const unhandled: never = code;
        throw unhandled;
      }
    }
  }
}

async function play(url: string): Promise<Room | undefined> {
  let room: Room;
  try {
    room = await join(url, options);
  } catch (err) {
    const { code, message } = err as JoinError;
    const server: ServerErrorCode | undefined = code === 'app_mismatch' || code === 'room_full'
      || code === 'topology_mismatch' || code === 'host_taken' || code === 'client_to_client' ? code : undefined;
    // A ticket the server refused: the backend mints another (docs/deployment.md).
    const ticket: ServerErrorCode | undefined = code === 'ticket_missing' || code === 'ticket_expired'
      || code === 'ticket_invalid' || code === 'ticket_wrong_room' || code === 'ticket_wrong_role' ? code : undefined;
    if (ticket) console.error('ask the backend for a new ticket', ticket);
    const local: JoinErrorCode[] = ['bad_url', 'invalid_app', 'invalid_config', 'bad_options', 'unsupported_browser', 'load_failed', 'join_failed'];
    console.error(server ?? (local.includes(code) ? 'cannot join' : code), message);
    return undefined;
  }

  room.addEventListener('signalling', (e) => console.log(e.state, e.detail?.length));
  room.addEventListener('joined', (e) => console.log(`server id ${e.serverId}`, e.resumed ? 'resumed' : 'fresh'));
  room.addEventListener('refused', (e) => {
    const code: ServerErrorCode = e.code;
    console.warn(code, e.message);
  });
  room.addEventListener('peerjoin', (e) => console.log(`peer ${e.peer} (server id ${e.serverId}) is a ${e.kind} ${e.role}`, e.identity ?? 'open room'));
  room.addEventListener('hostrefused', (e) => {
    const expected: string = e.expected;
    console.warn(`host ${e.serverId} is ${e.identity ?? 'nobody the backend named'}, not ${expected}`);
  });
  room.addEventListener('peerleave', (e) => {
    const why: 'left' | 'lost' | 'not_back' | 'we_left' = e.reason;
    players.delete(e.peer);
    if (e.role === 'host') console.log('the host is away: waiting for it to come back');
    console.log(e.serverId, why);
  });
  room.addEventListener('link', (e) => {
    show(e.link);
    if (e.peer !== e.link.id) throw new Error('one id per peer');
    if (e.link.state === 'connected') trySend(room, e.peer, CHAT, `hello, ${e.peer}`);
  });
  const onMessage = (e: RoomEventMap['message']): void => {
    const bytes: Uint8Array = e.data;
    if (e.channel === STATE) console.log(new Float32Array(bytes.buffer, bytes.byteOffset, 2));
    else console.log(e.peer, e.text.toUpperCase());
  };
  room.addEventListener('message', onMessage);
  room.addEventListener('undelivered', (e) => console.warn(`never confirmed by ${e.peer} on ${e.channel}: ${e.text}`));
  room.addEventListener('stats', (e) => e.links.forEach(show));
  // Any event, as a plain RoomEvent (a message's text, or undefined).
  room.addEventListener('custom', (e) => console.log(e instanceof RoomEvent ? e.text : e.type));
  // @ts-expect-error: a message event is no joined event
  room.addEventListener('message', (e: RoomEventMap['joined']) => console.log(e.resumed));
  // @ts-expect-error: a link event has no data
  room.addEventListener('link', (e) => console.log(e.data));

  const position = new Float32Array([0.5, 0.25]);
  room.sendLatest(1, STATE, new Uint8Array(position.buffer));
  const reached: number = room.broadcastLatest(STATE, new Uint8Array(position.buffer)).sent;
  const told = room.broadcast(EVENTS, 'goal');
  for (const { peer, error } of told.refused) console.log(peer, error.code === 'full');
  // @ts-expect-error: a broadcast reports each peer, not a count
  const count: number = room.broadcast(EVENTS, 'goal');
  room.broadcast(EFFECTS, new Uint8Array([1, 2, 3]));
  // @ts-expect-error: data is a Uint8Array or a string
  room.broadcast(EVENTS, { goal: true });
  // @ts-expect-error: a channel is its index
  room.send(1, 'chat', 'hi');
  // @ts-expect-error: broadcast sends to every peer; send names one
  room.send(CHAT, 'hi');

  const biggest: number = room.maxMessageSize(STATE);
  const links: LinkInfo[] = room.links();
  const peers: LinkInfo[] = room.peers;
  const me: number | undefined = room.serverId;
  const host: PeerId | null = room.host;
  if (host !== null) trySend(room, host, CHAT, 'hello, host');
  const signalling: 'connecting' | 'joining' | 'joined' | 'reconnecting' | 'closed' = room.signalling;
  const { start, connect, socket, wasm, welcome, connected } = room.timeline;
  console.log(kinds, reached, told, count, biggest, links.length, peers.length, me, signalling,
    start, connect, socket, wasm, welcome, connected);
  // The host's clock, the tick an input is stamped with, and the host's states drawn between two.
  const clock: ClockReading | null = room.clock();
  const inputTick: number | null = room.inputTick(1000 / 30);
  const states = new Snapshots(1000 / 30);
  if (clock?.synced) states.push(7, clock.time, [320, 240]);
  const drawn: number[] | null = clock && states.sample(clock.time);
  const share: number = states.between / Math.max(1, states.between + states.held);
  console.log(inputTick, drawn, share, states.delay);
  room.setOutage(true);
  room.setOutage(false);
  room.removeEventListener('message', onMessage);

  const event = new RoomEvent({ type: 'message', peer: 1, channel: 0, data: new Uint8Array() });
  console.log(event.type, event.text);
  return room;
}

/** Channels typed by their declared kinds: with a literal layout a wrong channel does not compile. */
async function typed(url: string): Promise<Room> {
  const pong = await join(url, {
    app: 'pong',
    version: 1,
    channels: ['unreliable-sequenced', 'unreliable-sequenced', 'reliable-ordered'],
  });
  pong.sendLatest(1, 0, 'input');
  pong.broadcastLatest(1, 'state');
  pong.send(1, 2, 'goal');
  // @ts-expect-error: sendLatest replaces what is not yet sent: an unreliable channel's call
  pong.sendLatest(1, 2, 'goal');
  // @ts-expect-error: channel 3 is not declared
  pong.send(1, 3, 'x');
  // The frame loop's drain: a channel's messages, oldest first, then null.
  for (let m = pong.receive(1); m; m = pong.receive(1)) console.log(m.peer, m.data.length, m.text);
  // @ts-expect-error: receive names a declared channel
  pong.receive(5);
  // A room of any layout takes any index, checked when called.
  const untyped: Room = pong;
  untyped.send(1, 7, 'refused at run time: unknown_channel');
  return untyped;
}

async function main(): Promise<void> {
  void typed;
  const room = await play('https://play.example.org/room/lobby');
  if (!room) return;
  await room.close();
  try {
    room.broadcast(0, 'too late');
  } catch (err) {
    const e: AckwireError = err as AckwireError;
    const code: ErrorCode = e.code;
    if (code !== 'closed') throw e;
  }
}

void main();
void [misspelt, unversioned, roles, server];
