// A demo worker: waits for the lock, adds to the ledger twice with its token, releases, rests,
// and again; `stall` makes its first turn a 2.5 s busy loop past its 1.5 s lease.
import init, * as alk from './pkg/alkstore_idb_harness.js';

// Messages may come before the bundle is loaded: the handler is set at once and waits for it.
const loaded = init();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let stopped = false;
let nextWrite = 0;
const writes = new Map();
const write = (token, amount) => new Promise((resolve) => {
  const id = nextWrite++;
  writes.set(id, resolve);
  postMessage({ write: { id, token, amount } });
});
const event = (e) => postMessage({ event: e });

self.onmessage = async ({ data }) => {
  if (data.stop) { stopped = true; return; }
  if ('wrote' in data) { writes.get(data.wrote)(data.refused); writes.delete(data.wrote); return; }
  await loaded;
  const { db, name, me, stall } = data.start;
  const locks = await alk.Locks.open(db, 1000, 250);
  let stallNext = stall;
  while (!stopped) {
    event({ kind: 'waiting' });
    const lock = await locks.acquire(name, me, 1500);
    if (stopped) { await lock.release(); break; }
    event({ kind: 'granted', token: lock.token });
    if (stallNext) {
      stallNext = false;
      event({ kind: 'stalling', token: lock.token, ms: 2500 });
      const until = performance.now() + 2500;
      while (performance.now() < until) { /* stuck: no event loop */ }
      await write(lock.token, 100);
    } else {
      await sleep(150);
      await write(lock.token, 10);
      await sleep(150);
      await write(lock.token, 10);
    }
    const released = await lock.release();
    event({ kind: 'released', released });
    // A worker that learns it was fenced off backs off a little longer before it waits again.
    await sleep(released ? 200 + Math.random() * 200 : 1500);
  }
};
