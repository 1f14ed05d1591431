// A tcpdump of the test's namespace (every interface, UDP only), read back as the DTLS
// handshake messages it carried. `cargo xtask setup` installs tcpdump; the e2e runs as root in
// its own network namespace, so the capture sees only the test's traffic.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { artifactsDir } from './harness.mjs';

/** DTLS handshake message types (RFC 6347 §4.3.2) by number. */
const HANDSHAKE_TYPES = {
  1: 'ClientHello', 2: 'ServerHello', 3: 'HelloVerifyRequest', 11: 'Certificate', 12: 'ServerKeyExchange',
  13: 'CertificateRequest', 14: 'ServerHelloDone', 15: 'CertificateVerify', 16: 'ClientKeyExchange', 20: 'Finished',
};

/**
 * Starts capturing; resolves once tcpdump listens. `stop()` ends it and resolves with the DTLS
 * handshake messages seen, in order: `{ type, seq, cookie, from, to, time }` (`type` a name
 * from the table above, or the number; `seq` the handshake's message_seq; `cookie` a
 * ClientHello's cookie length; `time` in ms), first fragments only, so a message counts once
 * per time it was sent.
 */
export async function captureUdp(name) {
  const file = join(artifactsDir(), `${name}.pcap`);
  rmSync(file, { force: true });
  // Packets handed over at once (not in blocks), and a buffer no join fills: a message
  // missing from the capture would read as one never sent.
  const child = spawn('tcpdump', ['-i', 'any', '-n', '-U', '--immediate-mode', '-B', '8192', '-w', file, 'udp'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise((resolve, reject) => {
    let said = '';
    child.stderr.on('data', (chunk) => {
      said += chunk;
      if (said.includes('listening on')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`tcpdump exited (${code}): ${said}`)));
  });
  return {
    async stop() {
      child.kill('SIGINT');
      await exited;
      return dtlsHandshakes(readFileSync(file));
    },
  };
}

/** The DTLS handshake messages in a pcap file's UDP datagrams. */
export function dtlsHandshakes(pcap) {
  const little = pcap.readUInt32LE(0) === 0xa1b2c3d4 || pcap.readUInt32LE(0) === 0xa1b23c4d;
  const u32 = (at) => (little ? pcap.readUInt32LE(at) : pcap.readUInt32BE(at));
  const linkType = u32(20);
  // Where the IP header starts: Ethernet (1), Linux cooked v1 (113) and v2 (276).
  const linkHeader = { 1: 14, 113: 16, 276: 20 }[linkType];
  if (linkHeader === undefined) throw new Error(`pcap link type ${linkType}`);
  const messages = [];
  for (let at = 24; at + 16 <= pcap.length;) {
    const time = u32(at) * 1000 + u32(at + 4) / 1000;
    const captured = u32(at + 8);
    const frame = pcap.subarray(at + 16, at + 16 + captured);
    at += 16 + captured;
    const udp = udpOf(frame.subarray(linkHeader));
    if (!udp) continue;
    for (const { type, seq, cookie } of handshakeMessages(udp.payload)) {
      messages.push({ type: HANDSHAKE_TYPES[type] ?? type, seq, cookie, from: udp.from, to: udp.to, time });
    }
  }
  return messages;
}

function udpOf(ip) {
  if (ip.length < 1) return null;
  let header;
  let src;
  let dst;
  if (ip[0] >> 4 === 4) {
    if (ip[9] !== 17) return null;
    header = (ip[0] & 0x0f) * 4;
    src = [...ip.subarray(12, 16)].join('.');
    dst = [...ip.subarray(16, 20)].join('.');
  } else if (ip[0] >> 4 === 6) {
    if (ip[6] !== 17) return null;
    header = 40;
    src = ip.subarray(8, 24).toString('hex');
    dst = ip.subarray(24, 40).toString('hex');
  } else {
    return null;
  }
  const udp = ip.subarray(header);
  if (udp.length < 8) return null;
  return {
    from: `${src}:${udp.readUInt16BE(0)}`,
    to: `${dst}:${udp.readUInt16BE(2)}`,
    payload: udp.subarray(8, udp.readUInt16BE(4)),
  };
}

/**
 * The handshake messages that start in a datagram's DTLS records (content type 22, epoch 0:
 * later epochs are encrypted): each one's type, message_seq and, for a ClientHello, its
 * cookie's length (after the version, the random and the session id). Anything else on the
 * port (STUN, application data) is skipped.
 */
function handshakeMessages(datagram) {
  const found = [];
  for (let at = 0; at + 13 <= datagram.length;) {
    const [content, major] = [datagram[at], datagram[at + 1]];
    if (major !== 0xfe || content < 20 || content > 23) break;
    const epoch = datagram.readUInt16BE(at + 3);
    const length = datagram.readUInt16BE(at + 11);
    const body = datagram.subarray(at + 13, at + 13 + length);
    if (content === 22 && epoch === 0 && body.length >= 12 && body.readUIntBE(6, 3) === 0) {
      const session = 12 + 2 + 32;
      const cookie = body[0] === 1 && body.length > session ? body[session + 1 + body[session]] : undefined;
      found.push({ type: body[0], seq: body.readUInt16BE(4), cookie });
    }
    at += 13 + length;
  }
  return found;
}

/** The handshake messages as lines: ms after the first, type (and message_seq past 0), from → to. */
export function storyOf(messages) {
  return messages.map((m) => `${(m.time - messages[0].time).toFixed(1)} ms ${m.type}${m.seq ? ` (message_seq ${m.seq})` : ''} ${m.from} → ${m.to}`).join('\n');
}

/**
 * Holds a join's captured handshakes (`{ messages, story }`, the story printed in a failure) to
 * the patched one: no HelloVerifyRequest, one ClientHello, answered by a ServerHello that is
 * the server's first message. A ClientHello may be sent more than once (Chromium re-sends its
 * first flight ~50 ms after it, and a debug build's answer on a loaded machine has come after
 * that: 75 ms, 2026-12-01), and so may the answer to it; a cookie exchange is told apart by
 * what it changes: the second ClientHello has the next message_seq and carries the cookie, and
 * the ServerHello comes after the HelloVerifyRequest's sequence number.
 */
export function assertOneHandshake({ messages, story }) {
  const all = (type) => messages.filter((m) => m.type === type);
  assert.equal(all('HelloVerifyRequest').length, 0, `no cookie exchange:\n${story}`);
  const hellos = all('ClientHello');
  assert.ok(hellos.length >= 1, `a ClientHello:\n${story}`);
  for (const hello of hellos) {
    assert.deepEqual(
      [hello.seq, hello.cookie, hello.from, hello.to],
      [0, 0, hellos[0].from, hellos[0].to],
      `one ClientHello (its first flight, without a cookie, from one address to one):\n${story}`,
    );
  }
  const answers = all('ServerHello');
  assert.ok(answers.length >= 1, `a ServerHello:\n${story}`);
  for (const answer of answers) {
    assert.equal(answer.to, hellos[0].from, `the ServerHello answers the ClientHello:\n${story}`);
    assert.equal(answer.seq, 0, `the ServerHello is the server's first message:\n${story}`);
  }
}
