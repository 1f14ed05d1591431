// TypeScript declarations of ackwire's JavaScript API (`ackwire.js`), shipped in the npm
// package next to it. They follow the code: `web/ackwire.js` (join, Room, RoomEvent) and the
// bindings it wraps (`wasm/src/room.rs`: the events, links and error codes). A native test
// (`wasm/tests/declarations.rs`) holds the code lists below to the Rust they come from, and
// `cargo xtask types` type-checks an example and the READMEs' snippets against this file.
//
//   import { join } from 'ackwire';
//   const room = await join('https://play.example.org/room/lobby', {
//     app: 'pong', version: 1, channels: ['unreliable-sequenced', 'reliable-ordered'],
//   });
//   room.addEventListener('message', (e) => console.log(e.peer, e.channel, e.text));

/**
 * A channel's delivery: `unreliable` (once, maybe), `unreliable-sequenced` (newest wins, stale
 * ones dropped), `reliable-ordered` (exactly once, in order), `reliable-unordered` (exactly once).
 */
export type ChannelKind = 'unreliable' | 'unreliable-sequenced' | 'reliable-ordered' | 'reliable-unordered';

/** The kinds whose sends may replace what is not yet sent (`sendLatest`): the unreliable ones. */
export type LatestKind = 'unreliable' | 'unreliable-sequenced';

/**
 * The indexes of the channels in `C` whose kind is one of `K`. With the channels declared as
 * a literal list (`join(url, { channels: ['unreliable-sequenced', 'reliable-ordered'] })`, or a
 * constant declared `as const`), a call naming an undeclared channel, or one of a kind the
 * call does not take (`sendLatest` on a reliable channel), does not type-check; a list the
 * compiler cannot see (`ChannelKind[]`) takes any number, checked when called.
 */
export type ChannelIndex<C extends readonly ChannelKind[], K extends ChannelKind = ChannelKind> =
  number extends C['length']
    ? number
    : { [I in keyof C]: C[I] extends K ? (I extends `${infer N extends number}` ? N : never) : never }[number];

/** Every link through the core's emulator, both directions: to try a game on a bad network. */
export interface Emulation {
  /** One-way delay added to every datagram, in ms (0 or more). */
  latencyMs?: number;
  /** Each delay varies within latency ± jitter, in ms (0 or more). */
  jitterMs?: number;
  /** Share of datagrams dropped, in percent (0 or more). */
  lossPct?: number;
  /** The emulator's seed (default 1). */
  seed?: number;
}

/**
 * What a player is in its room: a mesh `peer` (every player links to every other: a few
 * players, no server), or in a host room the one `host` (an authoritative program every client
 * links to, usually a native server) or a `client` (linked to the host alone, and hearing of
 * no other client). The room's first member fixes its topology: a join of the other topology
 * is refused with `topology_mismatch`, a second host with `host_taken`.
 */
export type Role = 'peer' | 'host' | 'client';

/** What {@link join} takes: the application every member of the room declares, and more. */
export interface JoinOptions<C extends readonly ChannelKind[] = readonly ChannelKind[]> {
  /** The application's id: 1-64 of A-Z a-z 0-9 - _; a room plays one. */
  app: string;
  /** Its protocol version, a whole number: a room's members all play the same. */
  version: number;
  /** Its channels, by index (1 to 63); the room's calls are typed by them ({@link ChannelIndex}). */
  channels: C;
  /** The room's name, when `url` is a server's rather than a room page's. */
  room?: string;
  /** What this player is in the room (default `peer`: a mesh). */
  role?: Role;
  /**
   * The join ticket the game's backend minted for this player (docs/deployment.md, "Join
   * tickets"), for a signal server that requires one: it names this room, role and
   * application. A refused one rejects the join with a `ticket_*` code; anything but a string
   * rejects it with `bad_options`. A page that opens its socket in its head
   * (`window.ackwireSocket`) puts the same ticket in that socket's URL.
   */
  ticket?: string;
  /**
   * A client of a host room: the identity its host must have (the host's join ticket's), for
   * a game whose backend told the player who hosts. Default: the first host with an identity
   * is pinned for the room's life. A host of another identity gets no link, and a
   * `hostrefused` event says why. Anything but a string rejects the join with `bad_options`.
   */
  hostIdentity?: string;
  /**
   * ICE over TURN relays only: peers never learn this player's address (the signal server
   * must hand out TURN servers, or no link connects). Default false.
   */
  relayOnly?: boolean;
  /**
   * A client of a host room links to its host over WebTransport (HTTP/3 datagrams) when the
   * host serves it and this browser has it, and over WebRTC when the session fails or takes
   * too long; `false`: never over WebTransport. Default true.
   */
  webTransport?: boolean;
  /**
   * WebRTC peer connections, when this browser has them (WebKitGTK has none); `false`: never,
   * as a browser without them: a host room's client then links to its host over WebTransport
   * or the host's WebSocket alone (with `webTransport: false` too, over the WebSocket alone).
   * Only a host room's client can be without WebRTC: `false` with any other role rejects the
   * join with `bad_options`, and a browser without it rejects with `unsupported_browser`.
   * Default true.
   */
  webRtc?: boolean;
  /**
   * A client of a host room links to its host over the host's WebSocket, the last resort,
   * when the host serves one and nothing else reaches it (no WebRTC here, or its WebRTC
   * attempt never opened: UDP blocked); `false`: never over a WebSocket. Default true.
   */
  webSocket?: boolean;
  /**
   * Bytes of reliable messages kept per peer until it confirms them (default 4 MiB, 4194304):
   * beyond, a send to that peer throws `full` (a broadcast lists it in `refused`). Anything
   * but a whole number of 1 or more rejects the join with `bad_options`.
   */
  peerBudget?: number;
  /**
   * A link not connected after this many milliseconds is lost, with reason `timeout` ("could
   * not connect within N s; this network may need a TURN server"), and tried again
   * (default 20000). Shorter tells a player sooner that a network has no path; a path that
   * takes longer to connect (a relay far away) never connects. Anything but a number of 1 or
   * more rejects the join with `bad_options`.
   */
  attemptTimeoutMs?: number;
  /**
   * Emulate a bad network on every link (absent, or all zero: a real link). A field that is
   * not a number of 0 or more rejects the join with `invalid_config`.
   */
  emulation?: Emulation | null;
}

/** A peer as this room knows it, for the room's whole life (server restarts too). */
export type PeerId = number;

/** A peer's id in the signalling server's current session (it changes when the server restarts). */
export type ServerId = number;

/** What kind of program a peer is. */
export type PeerKind = 'browser' | 'native';

/**
 * What carries a link: a WebRTC data channel, raw UDP between two natives, or between a
 * browser client and its host room's host WebTransport datagrams or a WebSocket (the last
 * resort: one TCP stream, so a lost segment holds back the packets behind it).
 */
export type TransportKind = 'webrtc' | 'udp' | 'webtransport' | 'websocket';

/**
 * Where a link is in its life: `wanted` (nothing started), `negotiating` (offer, answer, ICE),
 * `open` (the core's handshake runs), `connected` (messages flow: send), `lost` (see `reason`),
 * `retrying` (it tries again by itself), `gone` (the peer left).
 */
export type LinkState = 'wanted' | 'negotiating' | 'open' | 'connected' | 'lost' | 'retrying' | 'gone';

/** An ICE connection state, as WebRTC names them. */
export type IceState = 'new' | 'checking' | 'connected' | 'completed' | 'disconnected' | 'failed' | 'closed';

/** Why a link was last lost, as a stable code (`Failure::code` in the `ackwire` crate). */
export type FailureCode =
  | 'ice_failed'
  | 'timeout'
  | 'channel_closed'
  | 'transport'
  | 'idle_timeout'
  | 'peer_closed'
  | 'handshake_timeout'
  | 'restarted'
  | 'unencrypted'
  | 'key_refused'
  | 'keying'
  | 'protocol'
  | 'no_direct_path'
  | 'no_transport';

/** Why a link was lost. */
export interface Failure {
  /** Stable, for programs. */
  code: FailureCode;
  /** What happened, in words a player understands. */
  message: string;
}

/** The core's congestion mode: 30 packets/s while `good`, 10 while `bad`. */
export type Mode = 'good' | 'bad';

/** The state of a link's core connection. */
export type ConnectionState = 'connecting' | 'connected' | 'closing' | 'closed';

/**
 * What a link's core connection measured: the core's `Stats` in its JSON form (snake_case, as
 * the dashboard and `ackwire-peer` print it). Times in ms.
 */
export interface Stats {
  /** Smoothed round-trip time (0 before the first ack). */
  rtt_ms: number;
  /** Smoothed deviation of RTT samples. */
  jitter_ms: number;
  /** Lost share of the last `loss_window_packets` resolved packets, in percent: what the mode reacts to. */
  loss_percent: number;
  /** How many resolved packets `loss_percent` covers. */
  loss_window_packets: number;
  /** Lost share of every packet resolved since the link started, in percent. */
  loss_cumulative_percent: number;
  /** The congestion mode. */
  mode: Mode;
  /** The current recovery time `t` (good conditions needed before `good`). */
  recovery_time_ms: number;
  /** Packets per second the link is paced to now. */
  send_rate_pps: number;
  /** How long until the link's next packet is due, in ms: a message sent now leaves by then. */
  next_packet_ms: number;
  /** Packets the bulk window lets be in flight now, while a reliable backlog runs ahead of the cadence (0 on a link that never had one). */
  bulk_window_packets: number;
  packets_sent: number;
  /** Received and accepted (duplicates, stale and malformed ones excluded). */
  packets_received: number;
  packets_acked: number;
  packets_lost: number;
  /** Datagram bytes sent, headers included. */
  bytes_sent: number;
  bytes_received: number;
  /** Header bytes among `bytes_sent`. */
  header_bytes_sent: number;
  /** Packets of an encrypted native link that failed to open (always 0 on WebRTC links). */
  packets_unauthenticated: number;
  /** Length of the last header sent (5 in steady state). */
  last_header_len: number;
  /** Messages accepted by send and sendLatest, less those sendLatest replaced before they went. */
  messages_sent: number;
  /** Reliable frames sent again because no ack came in time. */
  messages_resent: number;
  /** Messages handed to the application. */
  messages_delivered: number;
  /** Unreliable-sequenced messages dropped for arriving after a newer one. */
  messages_dropped_stale: number;
  /** Reliable message ids awaiting an ack. */
  reliable_in_flight: number;
  connection_state: ConnectionState | null;
}

/** A link to one peer (a room has one per peer). */
export interface LinkInfo {
  /** The peer, as this room knows it for its whole life. */
  id: PeerId;
  /** The peer's id in the signalling server's current session. */
  serverId: ServerId | null;
  kind: PeerKind;
  transport: TransportKind;
  state: LinkState;
  /** Why it was last lost (kept until it connects again). */
  reason: Failure | null;
  /** The ICE connection state (WebRTC links). */
  ice: IceState | null;
  /** The chosen path, as the browser names its candidate type: `host`, `srflx`, `prflx` or `relay`. */
  candidate: string | null;
  /** How long the current attempt took to connect, or has run, in ms. */
  attemptMs: number;
  /** Attempts since it last connected. */
  attempts: number;
  /** When its first packet was acknowledged (`performance.now()` ms). */
  firstAckAt: number | null;
  /** Datagrams refused on it. */
  refused: number;
  /** Reliable messages sent and not yet confirmed. */
  unconfirmed: number;
  /** The core's measurements, once the link has a connection. */
  stats: Stats | null;
}

/** The signalling connection: `connecting`, `joining`, `joined`, `reconnecting` or `closed`. */
export type SignallingState = 'connecting' | 'joining' | 'joined' | 'reconnecting' | 'closed';

/**
 * Why a peer is gone: it `left`, it was `lost` (its signalling dropped and it did not come
 * back), it was `not_back` after a signalling server restart, or `we_left`.
 */
export type GoneReason = 'left' | 'lost' | 'not_back' | 'we_left';

/**
 * The signal server's refusal codes (`ErrorCode` in docs/signalling.md): what `join()` rejects
 * with when the server refuses the join, and what a `refused` event carries. `unknown` is a
 * code from a later server that this version does not know (the message says what it is).
 */
export type ServerErrorCode =
  | 'malformed_message'
  | 'message_too_large'
  | 'rate_limited'
  | 'unsupported_version'
  | 'invalid_room_name'
  | 'invalid_instance'
  | 'room_full'
  | 'too_many_rooms'
  | 'invalid_join'
  | 'invalid_app'
  | 'app_mismatch'
  | 'topology_mismatch'
  | 'host_taken'
  | 'client_to_client'
  | 'not_joined'
  | 'already_joined'
  | 'unknown_peer'
  | 'peer_id_mismatch'
  | 'resume_rejected'
  | 'room_creation_limited'
  | 'peer_not_reading'
  | 'admin_token_required'
  | 'broker_unavailable'
  | 'ticket_missing'
  | 'ticket_expired'
  | 'ticket_invalid'
  | 'ticket_wrong_room'
  | 'ticket_wrong_role'
  | 'unknown';

/**
 * Why `join()` rejected: the server's refusal ({@link ServerErrorCode}), or before asking it:
 * `bad_url` (the URL names no room, or the room's name, from the URL or `options.room`, breaks
 * the name rule: 1-64 of A-Z a-z 0-9 - _), `invalid_app` (options.app, version or channels),
 * `invalid_config` (the emulation), `bad_options` (a `role` that is none of `peer`, `host`,
 * `client`, a `ticket` that is not a string, or `webRtc: false` for anyone but a host room's
 * client), `unsupported_browser` (no WebSocket, or no RTCPeerConnection and not a host room's
 * client), `load_failed` (the wasm did not load). `join_failed` is
 * the bindings' word for a kind of failure a later `ackwire` crate adds; this one has none.
 */
export type JoinErrorCode =
  | ServerErrorCode
  | 'bad_url'
  | 'invalid_app'
  | 'invalid_config'
  | 'bad_options'
  | 'unsupported_browser'
  | 'load_failed'
  | 'join_failed';

/**
 * Why a send (or `maxMessageSize`, `setOutage`) threw, or a broadcast refused one peer;
 * nothing was sent to it: `unknown_peer` (not one of this room's peers), `not_connected` (an
 * unreliable message while the peer's link is down; a reliable one is kept instead),
 * `unknown_channel`, `too_large`, `reliable` (sendLatest on a reliable channel), `full` (this
 * peer's budget is spent: 1,024 reliable messages on the channel, or `peerBudget` bytes, await
 * its confirmation; try later),
 * `closed` (the room was closed), `bad_payload` (data neither a Uint8Array nor a string).
 * `send_failed` is the bindings' word for a kind of failure a later `ackwire` crate adds;
 * this one has none.
 */
export type SendErrorCode =
  | 'unknown_peer'
  | 'not_connected'
  | 'unknown_channel'
  | 'too_large'
  | 'reliable'
  | 'full'
  | 'closed'
  | 'bad_payload'
  | 'send_failed';

/** Every `code` an error of this API carries. */
export type ErrorCode = JoinErrorCode | SendErrorCode;

/** The `Error`s this API throws or rejects with: a plain `Error` with a string `code`. */
export interface AckwireError<C extends ErrorCode = ErrorCode> extends Error {
  code: C;
}

/** What a broadcast did, peer by peer. */
export interface Broadcast {
  /** The peers it was queued for (on a reliable channel: kept for, whatever their link). */
  readonly sent: number;
  /** The peers that refused it, each with why (`full`: its queue waits for confirmations). */
  readonly refused: readonly { readonly peer: PeerId; readonly error: SendError }[];
}

/**
 * Another member's clock, as this one reads it: a member's clock counts milliseconds since
 * its `join()` (its driver's time).
 */
export interface ClockReading {
  /** That clock's time now, in ms. */
  readonly time: number;
  /** `time` is within this many ms of the truth: half the round trip of the pings it rests on, and the drift since (0 for a member's own clock). */
  readonly uncertainty: number;
  /** Ping exchanges the reading rests on (at most 16). */
  readonly samples: number;
  /** Four exchanges came back: the reading is as good as the path allows (a member's own clock: always). */
  readonly synced: boolean;
  /** That clock's rate against ours, in parts per million (80: it gains 80 µs a second on ours; negative: it runs slow), once the pings of the last minute pin it down; `null` until then, or after its clock jumped (0 for a member's own clock). */
  readonly driftPpm: number | null;
  /** The rate is within this many ppm of `driftPpm`, the drift `uncertainty` allows for: 100 around 0 while `driftPpm` is `null` (0 for a member's own clock). */
  readonly driftUncertaintyPpm: number;
}

/**
 * A client's buffer of the host's tick-stamped states, drawn between the two around a render
 * time behind the host's clock (`room.clock()`), at a delay that follows how late states
 * arrive (the 90th percentile of the last 64, plus one tick) and never runs backwards: the
 * Rust `ackwire::sync::Snapshots`, for states that are arrays of numbers.
 */
export class Snapshots {
  /** `tickMs`: the host's tick in ms (tick `n` ends at `(n + 1) × tickMs` on its clock); throws a `RangeError` unless above 0. */
  constructor(tickMs: number);
  /** A state for `tick` arrived when the host's clock read `arrivedMs`; `false` for a duplicate or one older than every state kept. */
  push(tick: number, arrivedMs: number, state: readonly number[]): boolean;
  /** The state to draw when the host's clock reads `nowMs` (interpolated; the nearest outside the states kept); `null` before any. */
  sample(nowMs: number): number[] | null;
  /** How far behind the host's clock states are drawn now, in ms. */
  readonly delay: number;
  /** Draws that found no state after the render time. */
  readonly held: number;
  /** Draws between two states (interpolated): most of them, on a path the delay suits. */
  readonly between: number;
}

/** What a peer's channel takes now: sends within both figures are taken. */
export interface SendCapacity {
  /** More messages (a reliable channel keeps at most 1,024 unconfirmed). */
  readonly messages: number;
  /** More bytes. */
  readonly bytes: number;
}

/** What `join()` rejects with. */
export type JoinError = AckwireError<JoinErrorCode>;

/** What `send`, `sendLatest`, `broadcast`, `broadcastLatest`, `sendCapacity`, `maxMessageSize` and `setOutage` throw. */
export type SendError = AckwireError<SendErrorCode>;

/**
 * The events of a {@link Room}: an `Event` with the fields of its kind (see {@link RoomEventMap}).
 */
export declare class RoomEvent extends Event {
  /** Every field but `type` becomes a property of the event. */
  constructor(fields: { type: string; [field: string]: unknown });
  /** A message's bytes as UTF-8 text (`undefined` for other events). */
  readonly text: string | undefined;
}

/** The connection to the signal server changed. */
export interface SignallingEvent extends RoomEvent {
  readonly type: 'signalling';
  readonly state: SignallingState;
  /** Why, when there is a reason (a refusal, a dropped socket). */
  readonly detail: string | null;
}

/** The server took us in (again after it restarted: `resumed`, with a new `serverId`). */
export interface JoinedEvent extends RoomEvent {
  readonly type: 'joined';
  readonly serverId: ServerId;
  readonly resumed: boolean;
}

/** The server refused a request; with a refusal no retry can cure, signalling goes `closed`. */
export interface RefusedEvent extends RoomEvent {
  readonly type: 'refused';
  readonly code: ServerErrorCode;
  readonly message: string;
  /**
   * The room stopped: a join refused for a reason no retry cures (another app or version in
   * the room, a bad name or ticket, the host's seat taken); `signalling` goes `closed` next.
   * `false`: it tries again by itself (a full room, a busy server), or one request was refused.
   */
  readonly fatal: boolean;
}

/** A program instance we had not met entered the room (a host room's client hears of its host alone). */
export interface PeerJoinEvent extends RoomEvent {
  readonly type: 'peerjoin';
  readonly peer: PeerId;
  readonly serverId: ServerId;
  readonly kind: PeerKind;
  /** A mesh `peer`, or a host room's `host` or `client`. */
  readonly role: Role;
  /** Who the game's backend says it is (its join ticket's identity); null without tickets. */
  readonly identity: string | null;
}

/**
 * A client met a host whose identity is not the one it holds its host to (`hostIdentity`, or
 * the first host's): no link is made with it; a host of the expected identity is linked with
 * when it joins.
 */
export interface HostRefusedEvent extends RoomEvent {
  readonly type: 'hostrefused';
  readonly serverId: ServerId;
  /** The refused host's identity; null when the server gave it none. */
  readonly identity: string | null;
  /** The identity this client holds its host to. */
  readonly expected: string;
}

/**
 * A peer is gone for good. A client whose `host` left (`left`) or was lost (`lost`) stays in
 * the room, and links again when a host joins.
 */
export interface PeerLeaveEvent extends RoomEvent {
  readonly type: 'peerleave';
  readonly peer: PeerId;
  readonly serverId: ServerId | null;
  readonly reason: GoneReason;
  /** What it was in the room. */
  readonly role: Role;
}

/** A link changed state, or learned its path or its first ack. */
export interface LinkEvent extends RoomEvent {
  readonly type: 'link';
  readonly peer: PeerId;
  readonly link: LinkInfo;
}

/**
 * A peer's link is connected: messages flow. Once per connection, after its `link` event: a
 * game that only needs to know when it can send listens to this and `disconnected` alone.
 */
export interface ConnectedEvent extends RoomEvent {
  readonly type: 'connected';
  readonly peer: PeerId;
}

/**
 * A peer's connected link no longer is: lost (it recovers by itself while the peer is in the
 * room, and `connected` comes again) or gone (the peer left: `peerleave` follows). Once per
 * `connected`.
 */
export interface DisconnectedEvent extends RoomEvent {
  readonly type: 'disconnected';
  readonly peer: PeerId;
  /** Why it was lost (`peer_closed`: the peer said goodbye); `null` when the link went with its peer before any failure (the server said it left first, or this room left). */
  readonly reason: Failure | null;
}

/** A message from a peer, with its channel's promise. */
export interface RoomMessageEvent extends RoomEvent {
  readonly type: 'message';
  readonly peer: PeerId;
  readonly channel: number;
  readonly data: Uint8Array;
  /** `data` as UTF-8 text. */
  readonly text: string;
}

/** A reliable message whose peer left before confirming it: it may or may not have arrived. */
export interface UndeliveredEvent extends RoomEvent {
  readonly type: 'undelivered';
  readonly peer: PeerId;
  readonly channel: number;
  readonly data: Uint8Array;
  /** `data` as UTF-8 text. */
  readonly text: string;
}

/** Every link with its measurements, once a second. */
export interface StatsEvent extends RoomEvent {
  readonly type: 'stats';
  readonly links: LinkInfo[];
}

/** The events of a {@link Room} by name: what `addEventListener` hands each listener. */
export interface RoomEventMap {
  signalling: SignallingEvent;
  joined: JoinedEvent;
  refused: RefusedEvent;
  peerjoin: PeerJoinEvent;
  peerleave: PeerLeaveEvent;
  hostrefused: HostRefusedEvent;
  link: LinkEvent;
  connected: ConnectedEvent;
  disconnected: DisconnectedEvent;
  message: RoomMessageEvent;
  undelivered: UndeliveredEvent;
  stats: StatsEvent;
}

/**
 * When each step of joining happened, in `performance.now()` ms; and when the first link
 * reached each {@link LinkState} (`open`, `connected`, ...).
 */
export interface JoinTimeline extends Partial<Record<LinkState, number>> {
  /** `join()` was called. */
  start: number;
  /** The signalling socket started opening (when `join()` could open it before the wasm loaded). */
  connect?: number;
  /** That socket opened. */
  socket?: number;
  /**
   * The server's first frame on that socket (the welcome, or a refusal) reached this script.
   * The wasm waits for it (50 ms at most), as the links it names start before the wasm.
   */
  heard?: number;
  /** The first offer left, made before the wasm loaded (to a native the welcome named). */
  offer?: number;
  /** The first answer left, made before the wasm loaded (to a browser already in the room). */
  answer?: number;
  /** The first of those links was made. */
  linked?: number;
  /**
   * The first of those links had its first local ICE candidate. The wasm is instantiated only
   * then (or 50 ms after the link was made): its instantiation would hold back the gathering,
   * which needs the page's main thread.
   */
  gathered?: number;
  /** A WebTransport session dialed before the wasm loaded (to a host) was ready. */
  ready?: number;
  /** The driver adopted that session. */
  claimed?: number;
  /** The wasm loaded. */
  wasm?: number;
  /** The server's welcome: joined. */
  welcome?: number;
}

/** A message's bytes, or text sent as UTF-8. */
export type Payload = Uint8Array | string;

/**
 * A room as one player sees it: send to its peers, hear what happens (an `EventTarget`; see
 * {@link RoomEventMap}). It runs by itself: links are set up, kept, measured and recovered
 * whether or not the page calls in. Rooms come from {@link join}. Every method that sends
 * throws a {@link SendError}, and then nothing was sent.
 */
// `Room` alone is a room of any layout (`any`): what a helper taking any room names, and
// what every typed room is assignable to.
export declare class Room<C extends readonly ChannelKind[] = any> extends EventTarget {
  private constructor();
  /**
   * Sends `data` to `peer` on `channel`, as the channel promises: once on an unreliable one;
   * exactly once (in order, if ordered) on a reliable one, across lost links too, or handed
   * back as an `undelivered` event if the peer leaves first.
   */
  send(peer: PeerId, channel: ChannelIndex<C>, data: Payload): void;
  /**
   * Sends `data` on an unreliable channel in place of what it holds for `peer` and has not
   * sent yet: call it every frame with the newest state; each packet carries the newest.
   */
  sendLatest(peer: PeerId, channel: ChannelIndex<C, LatestKind>, data: Payload): void;
  /**
   * {@link send} to every peer: on a reliable channel every peer in the room (kept for those
   * whose link is down), on an unreliable one every connected peer. Each peer's outcome is its
   * own: one peer's full queue (`full`) refuses it for that peer alone, and the others get it.
   * Throws only when it goes to nobody (a bad channel, size or payload, a closed room).
   */
  broadcast(channel: ChannelIndex<C>, data: Payload): Broadcast;
  /** {@link sendLatest} to every connected peer. */
  broadcastLatest(channel: ChannelIndex<C, LatestKind>, data: Payload): Broadcast;
  /**
   * The oldest message that arrived on `channel` (a `message` event: `peer`, `channel`,
   * `data`, `text`), or `null`; never waits. A frame loop drains the channels it reads each
   * frame (`for (let m; (m = room.receive(0));) ...`) and hears the rest as events: from a
   * channel's first `receive`, its messages wait here and are no longer dispatched as
   * `message` events, so neither takes what the other should. Each channel's promise holds
   * as in the events (in order on an ordered channel); a channel read here must be read.
   * Throws `unknown_channel` for a channel the app did not declare.
   */
  receive(channel: ChannelIndex<C>): RoomEventMap['message'] | null;
  /** Every link (one per peer) with its state, path and stats; none once closed. */
  links(): LinkInfo[];
  /**
   * The room's clock now, read alike by every member: the host's in a host room; in a mesh,
   * the clock of the member the server numbered first among this one and those it is linked
   * with. Exact on that member, elsewhere an estimate within its `uncertainty`. `null` until
   * the first exchange with that member came back (docs/api.md, "Clocks").
   */
  clock(): ClockReading | null;
  /** `peer`'s clock now, as this member estimates it; `null` before it is known. Throws `unknown_peer` for what is not a peer id. */
  peerClock(peer: PeerId): ClockReading | null;
  /**
   * In a host room, the tick (of `tickMs` on the host's clock) to stamp the input a client
   * sends now so that it reaches the host before the host simulates that tick: the wait for
   * the link's next packet, half its RTT, twice its jitter and the clock's uncertainty ahead.
   * `null` in a mesh, on the host, without a host, and until its clock is synced.
   */
  inputTick(tickMs: number): number | null;
  /** The room's peers: their links, as {@link links} gives them. */
  readonly peers: LinkInfo[];
  /** Our id in the signalling server's current session, once joined (it changes when the server restarts). */
  readonly serverId: ServerId | undefined;
  /**
   * In a host room, the host's id while it is in the room (a client's one peer); `null` in a
   * mesh, on the host itself, and while the room has no host (a client links to the next host
   * that joins, without joining again).
   */
  readonly host: PeerId | null;
  /** The signalling connection's state. */
  readonly signalling: SignallingState;
  /**
   * Frames from the signalling server this room could not read (a later server's frame types,
   * a dashboard's, broken JSON), each refused and logged on the console, never dropped unseen.
   */
  readonly unreadableFrames: number;
  /** When each step of joining happened. */
  readonly timeline: JoinTimeline;
  /**
   * The largest message `channel` takes, in bytes: one packet's worth (1,169 bytes by default)
   * on an unreliable channel, 262,139 on a reliable one. Throws `unknown_channel` for a
   * channel the app did not declare.
   */
  maxMessageSize(channel: ChannelIndex<C>): number;
  /**
   * How much `send` to `peer` on `channel` takes now before it throws `full`: on a reliable
   * channel what the peer's copies may still hold (kept whatever the link's state; each
   * message counts up to 5 bytes more than its data), on an unreliable one the room in the
   * link's queue (`not_connected` while the link is down). Throws as `send` does otherwise.
   */
  sendCapacity(peer: PeerId, channel: ChannelIndex<C>): SendCapacity;
  /**
   * Pulls (`true`) or plugs back this player's network cable for its links (signalling stays
   * up): links go quiet, are lost after the idle timeout, and recover once plugged back.
   */
  setOutage(on: boolean): void;
  /**
   * Leaves the room: links say goodbye, the server hears it, and reliable messages peers
   * never confirmed come back as `undelivered` events. Calls after it throw `closed`.
   */
  close(): Promise<void>;

  addEventListener<K extends keyof RoomEventMap>(
    type: K,
    listener: (this: Room, event: RoomEventMap[K]) => unknown,
    options?: boolean | AddEventListenerOptions,
  ): void;
  addEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject | null,
    options?: boolean | AddEventListenerOptions,
  ): void;
  removeEventListener<K extends keyof RoomEventMap>(
    type: K,
    listener: (this: Room, event: RoomEventMap[K]) => unknown,
    options?: boolean | EventListenerOptions,
  ): void;
  removeEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject | null,
    options?: boolean | EventListenerOptions,
  ): void;
}

/**
 * Joins a room and resolves with it once the server took us in; rejects with a
 * {@link JoinError} whose `code` says why not (the server's refusal, such as `app_mismatch`
 * when the room plays another game, with the server's message).
 * @param url a room page's URL (`location.href` works), or a server's with `options.room`
 */
export declare function join<const C extends readonly ChannelKind[]>(url: string, options: JoinOptions<C>): Promise<Room<C>>;
