// What a path really is, measured before it is used (delayed-path.mjs runs this in the
// namespaces at both ends):
//   node probe.mjs serve HOST PORT      a UDP echo and a TCP listener on HOST:PORT; prints `ready`
//   node probe.mjs probe HOST PORT N    N UDP echoes, then N TCP connects (one at a time);
//                                       prints {"udp": [ms...], "tcp": [ms...]}
import { createSocket } from 'node:dgram';
import { connect, createServer } from 'node:net';

const [mode, host, portText, countText] = process.argv.slice(2);
const port = Number(portText);

if (mode === 'serve') {
  const udp = createSocket('udp4');
  udp.on('message', (msg, from) => udp.send(msg, from.port, from.address));
  const tcp = createServer((socket) => socket.destroy());
  await Promise.all([
    new Promise((resolve) => udp.bind(port, host, resolve)),
    new Promise((resolve) => tcp.listen(port, host, resolve)),
  ]);
  console.log('ready');
  // Ends with the process that started it (stdin closes).
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
} else if (mode === 'probe') {
  const count = Number(countText);
  const udp = createSocket('udp4');
  await new Promise((resolve) => udp.bind(0, resolve));
  const echo = () => new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const timer = setTimeout(() => reject(new Error(`no UDP echo from ${host}:${port} within 2 s`)), 2000);
    udp.once('message', () => { clearTimeout(timer); resolve(Number(process.hrtime.bigint() - start) / 1e6); });
    udp.send('probe', port, host);
  });
  const connectTime = () => new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const socket = connect(port, host, () => { resolve(Number(process.hrtime.bigint() - start) / 1e6); socket.destroy(); });
    socket.on('error', reject);
  });
  const result = { udp: [], tcp: [] };
  for (let i = 0; i < count; i++) result.udp.push(await echo());
  for (let i = 0; i < count; i++) result.tcp.push(await connectTime());
  udp.close();
  console.log(JSON.stringify(result));
} else {
  console.error('usage: node probe.mjs serve HOST PORT | probe HOST PORT N');
  process.exit(2);
}
