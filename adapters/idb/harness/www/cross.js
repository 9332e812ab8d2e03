// What one context (a page or a dedicated worker) does in a cross-context scenario. Loaded by
// page.js and worker.js alike; `env` gives what differs: how to write to the fenced ledger
// (kept by the first page) and how to busy-loop.
import * as alk from './pkg/alkstore_idb_harness.js';

export const now = () => performance.timeOrigin + performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let stores = new Map();
async function locks(db, heartbeatMs = 1000) {
  const key = `${db}/${heartbeatMs}`;
  if (!stores.has(key)) stores.set(key, await alk.Locks.open(db, 1000, heartbeatMs));
  return stores.get(key);
}

// A clock-free overlap detector, in a database of its own: whoever enters a name's critical
// section and finds someone inside, or leaves and finds someone else's mark, counts an overlap.
function probeDb(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => req.result.createObjectStore('inside', { keyPath: 'name' });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}
function probeTx(db, name, token, entering) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction('inside', 'readwrite');
    const store = tx.objectStore('inside');
    let overlap = 0;
    const get = store.get(name);
    get.onsuccess = () => {
      const inside = get.result;
      if (entering) {
        if (inside !== undefined) overlap = 1;
        store.put({ name, token });
      } else {
        if (inside === undefined || inside.token !== token) overlap = 1;
        store.delete(name);
      }
    };
    tx.oncomplete = () => resolve(overlap);
    tx.onabort = () => reject(tx.error);
  });
}

// Several contexts take `names` at random for `durationMs`: unbounded acquire mostly, try_lock
// sometimes; each grant is held for a random while, inside the probe, then released.
export async function contend(env, { db, me, names, durationMs, ttlMs, holdMs, tryShare }) {
  const l = await locks(db);
  const probe = await probeDb(`${db}-probe`);
  const records = [];
  let overlaps = 0;
  let busy = 0;
  const end = Date.now() + durationMs;
  while (Date.now() < end) {
    const name = names[Math.floor(Math.random() * names.length)];
    const mode = Math.random() < tryShare ? 'try' : 'acquire';
    const pending = mode === 'try' ? l.tryLock(name, me, ttlMs) : l.acquire(name, me, ttlMs);
    const tSent = now();
    const lock = await pending;
    if (lock === null) {
      busy++;
      await sleep(Math.random() * 4);
      continue;
    }
    const tGot = now();
    overlaps += await probeTx(probe, name, lock.token, true);
    await sleep(Math.random() * holdMs);
    overlaps += await probeTx(probe, name, lock.token, false);
    const tRel = now();
    const released = await lock.release();
    records.push({ name, me, mode, token: lock.token, tSent, tGot, tRel, released });
    await sleep(Math.random() * 3);
  }
  probe.close();
  return { records, overlaps, busy };
}

// Holds `name` (try_lock) and reports the lease; it keeps it until told to release.
const held = new Map();
export async function hold(env, { db, name, me, ttlMs, heartbeatMs }) {
  const l = await locks(db, heartbeatMs);
  const lock = await l.tryLock(name, me, ttlMs);
  if (lock === null) throw new Error(`${me}: ${name} is busy`);
  held.set(name, lock);
  return { token: lock.token, deadline: lock.deadline, at: now() };
}
export async function release(env, { name }) {
  const lock = held.get(name);
  held.delete(name);
  const t = now();
  return { released: await lock.release(), at: t };
}

// Waits for `name` without limit; holds it `holdMs`, releases, and reports.
export async function waitFor(env, { db, name, me, ttlMs, holdMs = 0, heartbeatMs }) {
  const l = await locks(db, heartbeatMs);
  const pending = l.acquire(name, me, ttlMs);
  const tSent = now();
  const lock = await pending;
  const tGot = now();
  const write = await env.ledgerWrite(lock.token, me);
  await sleep(holdMs);
  const released = await lock.release();
  return { me, token: lock.token, tSent, tGot, write, released };
}

// Starts waiting for `name` and returns at once (the wait goes on in this context).
const waits = new Map();
export async function startWait(env, args) {
  waits.set(args.name + '/' + args.me, waitFor(env, args));
  await sleep(0);
  return { at: now() };
}
export async function finishWait(env, { name, me }) {
  return await waits.get(name + '/' + me);
}

// Takes `name`, then blocks its thread (no await) for `stallMs`, past its ttl; then writes to
// the ledger with its old token and releases.
export async function holdAndStall(env, { db, name, me, ttlMs, stallMs }) {
  const l = await locks(db);
  const lock = await l.tryLock(name, me, ttlMs);
  if (lock === null) throw new Error(`${me}: ${name} is busy`);
  const got = { token: lock.token, deadline: lock.deadline, at: now() };
  env.report?.({ kind: 'holding', me, token: lock.token });
  const until = now() + stallMs;
  while (now() < until) { /* a stuck computation: no event loop */ }
  const lateWrite = await env.ledgerWrite(lock.token, me);
  const released = await lock.release();
  return { got, lateWrite, released, stalledUntil: now() };
}

// Opens the store and sends an acquire for `name` without waiting for its answer (the
// context is about to be closed or terminated): answers when it was sent.
const sent = [];
export async function sendAcquire(env, { db, name, me, ttlMs, heartbeatMs }) {
  const l = await locks(db, heartbeatMs);
  const at = now();
  sent.push(l.acquire(name, me, ttlMs));
  return { at };
}

// This context's id in the database's rows (null without Web Locks).
export async function contextId(env, { db, heartbeatMs }) {
  return (await locks(db, heartbeatMs)).contextId();
}

export async function holder(env, { db, name }) {
  return await (await locks(db)).holder(name);
}

// --- benchmark -------------------------------------------------------------------------------

// A minimal hand-written IndexedDB lease cycle, the floor of this design: try_lock is one
// readwrite transaction that reads the lease and the token counter and writes both; release is
// one that reads the lease and deletes it if the token matches.
function handDb(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => {
      req.result.createObjectStore('leases', { keyPath: 'name' });
      req.result.createObjectStore('meta', { keyPath: 'key' });
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}
function handTryLock(db, name, owner, ttlMs) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(['leases', 'meta'], 'readwrite');
    const leases = tx.objectStore('leases');
    const meta = tx.objectStore('meta');
    const counter = meta.get('token');
    const lease = leases.get(name);
    let token = null;
    lease.onsuccess = () => {
      const t = Date.now();
      if (lease.result && lease.result.deadline > t) return;
      token = (counter.result ? counter.result.value : 0) + 1;
      meta.put({ key: 'token', value: token });
      leases.put({ name, owner, token, deadline: t + ttlMs });
    };
    tx.oncomplete = () => resolve(token);
    tx.onabort = () => reject(tx.error);
  });
}
function handRelease(db, name, token) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(['leases'], 'readwrite');
    const leases = tx.objectStore('leases');
    const lease = leases.get(name);
    let released = false;
    lease.onsuccess = () => {
      if (lease.result && lease.result.token === token) {
        released = lease.result.deadline > Date.now();
        leases.delete(name);
      }
    };
    tx.oncomplete = () => resolve(released);
    tx.onabort = () => reject(tx.error);
  });
}

async function timeIt(n, cycle) {
  const t0 = now();
  for (let i = 0; i < n; i++) await cycle(i);
  return (now() - t0) / n;
}

// ms per try_lock + release for alkstore-idb, the hand-written cycle and navigator.locks in
// this context, interleaved round by round (the order rotates), so that a slow moment of the
// machine hits all three alike. Returns every round's figures.
export async function bench(env, { db, n, rounds }) {
  const l = await locks(db);
  const hand = await handDb(`${db}-hand`);
  const name = `bench/${Math.random()}`;
  const runs = {
    idb: async () => (await alk.benchCycles(l, name, n)) / n,
    hand: () => timeIt(n, async () => {
      const token = await handTryLock(hand, name, 'bench', 30000);
      if (token === null || !(await handRelease(hand, name, token))) throw new Error('hand cycle refused');
    }),
    webLocks: () => timeIt(n, () => navigator.locks.request(name, { ifAvailable: true }, (lock) => {
      if (lock === null) throw new Error('web lock busy');
    })),
  };
  const out = { idb: [], hand: [], webLocks: [] };
  const order = Object.keys(runs);
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < order.length; k++) {
      const key = order[(r + k) % order.length];
      out[key].push(await runs[key]());
    }
  }
  hand.close();
  return out;
}

// Wake-up latency: the other context waits; this one holds, then releases; the waiter reports
// when its grant arrived. `role` is 'holder' or 'waiter'.
export async function wakeHolder(env, { db, name, me }) {
  const l = await locks(db);
  const lock = await l.tryLock(name, me, 30000);
  if (lock === null) throw new Error('wake: busy');
  held.set(name, lock);
  return lock.token;
}
