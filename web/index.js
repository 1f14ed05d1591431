// Front page: room links, and proof that ackwire's WebAssembly loads here.
import init, { coreVersion } from '/pkg/ackwire_wasm.js';

document.getElementById('join-room').addEventListener('submit', (event) => {
  event.preventDefault();
  const room = new FormData(event.target).get('room').trim();
  if (room) window.location.href = `/room/${encodeURIComponent(room)}`;
});

async function main() {
  const status = document.getElementById('core-status');
  try {
    await init();
    document.getElementById('core-version').textContent = coreVersion();
    status.textContent = 'core loaded';
    status.dataset.state = 'ready';
  } catch (err) {
    status.textContent = `the core failed to load: ${err}`;
    status.dataset.state = 'failed';
  }
}

main();
