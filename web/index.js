// Front page: room links, and proof that the protocol core runs here as WebAssembly.
import init, { coreVersion, decodeHeader, encodeHeader, sequenceDistance } from '/pkg/ackwire_wasm.js';

document.getElementById('join-room').addEventListener('submit', (event) => {
  event.preventDefault();
  const room = new FormData(event.target).get('room').trim();
  if (room) window.location.href = `/room/${encodeURIComponent(room)}`;
});

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
const show = (id, text) => { document.getElementById(id).textContent = text; };

async function main() {
  const status = document.getElementById('core-status');
  try {
    await init();
    // docs/wire.md, second worked example: ack 4656 sent as its low byte, held 1 ms.
    const bytes = encodeHeader(4660, 4656, false, 0xffff7ffb, 1.0);
    const decoded = decodeHeader(bytes);
    const ack = decoded.ackFull ? `ack ${decoded.ack}` : `ack low byte 0x${decoded.ack.toString(16).toUpperCase()}`;
    show('core-version', coreVersion());
    show('header-bytes', hex(bytes));
    show('header-decoded',
      `seq ${decoded.sequence}, ${ack}, bits 0x${decoded.ackBits.toString(16).toUpperCase()}, held ${decoded.ackDelayMs} ms, ${decoded.len} bytes`);
    show('seq-distance', String(sequenceDistance(65535, 0)));
    status.textContent = 'core loaded';
    status.dataset.state = 'ready';
  } catch (err) {
    status.textContent = `the core failed to load: ${err}`;
    status.dataset.state = 'failed';
  }
}

main();
