// Shared by the demo page (demo.js) and its workers (demo-worker.js): the election's settings,
// the leader's log (a fenced store of its own in IndexedDB) and a candidate's loop.
// Written against the npm package alkstore-idb (`make js`), served at /alk/.
import { AlkLocks } from '/alk/index.js';

export const DB = 'alkstore-demo';
export const NAME = 'leader';
export const TTL = 4000; // the leader's lease; renewed every ttl/3 while it runs
export const FREEZE_MS = 6000; // a frozen leader's stall: longer than its ttl
export const WRITE_EVERY = 500; // the leader appends to its log this often
export const EVENTS = 'alkstore-demo-events'; // what every candidate tells every tab
export const CONTROL = 'alkstore-demo-control'; // the freeze button's orders

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The resource the leader writes to: one row in a database of its own, holding the highest
// token accepted beside the data and compared in the same readwrite transaction as the write
// (what a `Fence` does in one context, for every tab and worker of the origin).
const LEDGER = 'alkstore-demo-ledger';
export function openLedger() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open(LEDGER, 1);
    r.onupgradeneeded = () => r.result.createObjectStore('ledger');
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}
const empty = () => ({ highest: 0, accepted: 0, entries: [], refused: [] });
// Appends `entry` ({ who, token, n, at }) if its token is at or above the highest accepted;
// otherwise records it as refused. Resolves to { accepted, highest }.
export function writeLedger(db, entry) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction('ledger', 'readwrite');
    const store = tx.objectStore('ledger');
    let answer;
    store.get('log').onsuccess = (e) => {
      const log = e.target.result ?? empty();
      const highest = log.highest;
      if (entry.token >= highest) {
        log.highest = entry.token;
        log.accepted++;
        log.entries = [...log.entries, entry].slice(-6);
        answer = { accepted: true, highest: entry.token };
      } else {
        log.refused = [...log.refused, { ...entry, highest }].slice(-6);
        answer = { accepted: false, highest };
      }
      store.put(log, 'log');
    };
    tx.oncomplete = () => resolve(answer);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error('ledger transaction aborted'));
  });
}
export function readLedger(db) {
  return new Promise((resolve, reject) => {
    const r = db.transaction('ledger', 'readonly').objectStore('ledger').get('log');
    r.onsuccess = () => resolve(r.result ?? empty());
    r.onerror = () => reject(r.error);
  });
}

// One candidate (the page itself or a worker): stands for `leader` with locks.request; while
// it leads, appends to the log with its token every WRITE_EVERY ms (keep-alive renews its
// lease meanwhile). Told to freeze, it waits for a renewal to commit (so that no transaction
// of its is in flight), blocks its thread for FREEZE_MS (past its ttl), then makes the write
// it was about to make, with its old token. `quiesce` (the page's) stops and drains its other
// IndexedDB work first; `resume` restarts it.
export async function candidate({ me, quiesce = async () => {}, resume = () => {} }) {
  const events = new BroadcastChannel(EVENTS);
  const tell = (e) => events.postMessage({ ...e, who: me, at: Date.now() });
  let freeze = 0;
  const control = new BroadcastChannel(CONTROL);
  control.onmessage = ({ data }) => { if (data?.freeze === me) freeze = data.ms; };
  const locks = await AlkLocks.open(DB, { owner: me });
  const ledger = await openLedger();
  for (;;) {
    tell({ kind: 'waiting' });
    let writing = null; // the write in flight, awaited before telling a lost lease
    try {
      await locks.request(NAME, { ttl: TTL }, async (lock) => {
        tell({ kind: 'leader', token: lock.token, deadline: lock.deadline });
        let n = 0;
        while (!lock.signal.aborted) {
          if (freeze) {
            const ms = freeze;
            freeze = 0;
            await quiesce();
            const renewed = lock.deadline;
            while (lock.deadline === renewed && !lock.signal.aborted) await sleep(5);
            tell({ kind: 'freezing', token: lock.token, ms });
            const until = performance.now() + ms;
            while (performance.now() < until) { /* frozen: no event loop, no keep-alive */ }
            resume();
          }
          writing = writeLedger(ledger, { who: me, token: lock.token, n: ++n, at: Date.now() });
          const r = await writing;
          if (!r.accepted) {
            tell({ kind: 'refused', token: lock.token, highest: r.highest });
            return;
          }
          tell({ kind: 'wrote', token: lock.token, n });
          await sleep(WRITE_EVERY);
        }
      });
      tell({ kind: 'stepped down' });
    } catch (e) {
      if (e?.name !== 'AbortError') throw e;
      // The promise rejects as soon as the lease is lost, while the callback may still be
      // finishing a write it sent before it could know: tell that first.
      await writing?.catch(() => {});
      await sleep(0);
      tell({ kind: 'lost', why: e.message });
    }
    await sleep(1500); // a leader that lost its lease stands again a little later
  }
}
