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
 * handshake messages seen, in order: `{ type, from, to, time }` (`type` a name from the
 * table above, or the number; `time` in ms), first fragments only, so a message counts once
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
    for (const type of handshakeTypes(udp.payload)) {
      messages.push({ type: HANDSHAKE_TYPES[type] ?? type, from: udp.from, to: udp.to, time });
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
 * The handshake message types that start in a datagram's DTLS records (content type 22, epoch
 * 0: later epochs are encrypted). Anything else on the port (STUN, application data) is
 * skipped.
 */
function handshakeTypes(datagram) {
  const types = [];
  for (let at = 0; at + 13 <= datagram.length;) {
    const [content, major] = [datagram[at], datagram[at + 1]];
    if (major !== 0xfe || content < 20 || content > 23) break;
    const epoch = datagram.readUInt16BE(at + 3);
    const length = datagram.readUInt16BE(at + 11);
    const body = datagram.subarray(at + 13, at + 13 + length);
    if (content === 22 && epoch === 0 && body.length >= 12 && body.readUIntBE(6, 3) === 0) {
      types.push(body[0]);
    }
    at += 13 + length;
  }
  return types;
}

/** The handshake messages as lines: ms after the first, type, from → to. */
export function storyOf(messages) {
  return messages.map((m) => `${(m.time - messages[0].time).toFixed(1)} ms ${m.type} ${m.from} → ${m.to}`).join('\n');
}

/**
 * Holds a join's captured handshakes (`{ messages, story }`, the story printed in a failure) to
 * the patched one: one ClientHello, answered by one ServerHello, and no HelloVerifyRequest.
 */
export function assertOneHandshake({ messages, story }) {
  const count = (type) => messages.filter((m) => m.type === type).length;
  assert.equal(count('HelloVerifyRequest'), 0, `no cookie exchange:\n${story}`);
  assert.equal(count('ClientHello'), 1, `one ClientHello:\n${story}`);
  assert.equal(count('ServerHello'), 1, `one ServerHello:\n${story}`);
  const [hello] = messages.filter((m) => m.type === 'ClientHello');
  const [answer] = messages.filter((m) => m.type === 'ServerHello');
  assert.equal(answer.to, hello.from, 'the ServerHello answers the ClientHello');
}
