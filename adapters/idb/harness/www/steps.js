// What one context (a page or a dedicated worker) does for scenarios.mjs. Every step takes one
// object of arguments and answers plain data. Handles live in this context under a `key`.
import * as alk from './pkg/alkstore_idb_harness.js';

export * from './steps-raw.js';

const realNow = Date.now.bind(Date);
// Wall time in ms, immune to a Date.now override in this context.
export const wall = () => realNow();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const errText = (e) => (e && e.kind ? `${e.kind}: ${e.message}` : String(e && e.message || e));

const stores = new Map();
async function locks({ db, io = 1000, hb = 1000 }) {
  const key = `${db}/${io}/${hb}`;
  if (!stores.has(key)) stores.set(key, await alk.Locks.open(db, io, hb));
  return stores.get(key);
}
const held = new Map();
const pend = new Map();
const watches = new Map();

export async function open(a) {
  try { await locks(a); return { ok: true }; } catch (e) { return { error: errText(e) }; }
}

export async function tryLock(a) {
  const t0 = wall();
  try {
    const lock = await (await locks(a)).tryLock(a.name, a.owner, a.ttl);
    if (lock === null) return null;
    if (a.key) held.set(a.key, lock);
    return { token: lock.token, info: lock.info(), t0, t1: wall() };
  } catch (e) { return { error: errText(e), t0, t1: wall() }; }
}

// `n` try_lock + release cycles on `name`, each timed (ms), and a 10 ms timer's lateness
// measured alongside: what a context's own operations cost while something else loads it.
export async function cycleTimes(a) {
  const l = await locks(a);
  const cycles = [];
  const t0 = wall();
  const errors = [];
  for (let i = 0; i < a.n; i++) {
    const t = performance.now();
    try {
      const lock = await l.tryLock(a.name, a.owner, a.ttl);
      if (lock === null) throw new Error(`cycleTimes: ${a.name} busy`);
      await lock.release();
    } catch (e) {
      errors.push(errText(e));
    }
    cycles.push(performance.now() - t);
  }
  return { cycles, errors, t0, t1: wall() };
}

export async function tryLockDropped(a) {
  const l = await locks(a);
  return { ready: l.tryLockDropped(a.name, a.owner, a.ttl, a.polls) };
}

// Starts an acquire; its outcome is kept under `key` (acquireFinish).
export async function acquireStart(a) {
  const l = await locks(a);
  const tSent = wall();
  const p = l.acquirePending(a.name, a.owner, a.ttl, a.wait ?? undefined);
  const out = p.done.then((lock) => {
    const tGot = wall();
    if (lock === null) return { none: true, tSent, tGot };
    held.set(a.key, lock);
    return { token: lock.token, info: lock.info(), tSent, tGot };
  }, (e) => ({ error: errText(e), tSent, tGot: wall() }));
  pend.set(a.key, { p, out });
  await sleep(0);
  return { tSent };
}
export async function acquireFinish({ key }) { return await pend.get(key).out; }
export async function acquireCancel({ key }) { return { wasRunning: pend.get(key).p.cancel(), at: wall() }; }

export async function release({ key }) {
  const lock = held.get(key);
  held.delete(key);
  const at = wall();
  try { return { released: await lock.release(), at, done: wall() }; } catch (e) { return { error: errText(e), at }; }
}
export async function dropHandle({ key }) { held.get(key).dropHandle(); held.delete(key); return { at: wall() }; }
export async function detach({ key }) { held.get(key).detach(); held.delete(key); return { at: wall() }; }
export async function info({ key }) { return held.get(key).info(); }
export async function isHeld({ key }) {
  try { return { held: await held.get(key).isHeld(), at: wall() }; } catch (e) { return { error: errText(e), at: wall() }; }
}
export async function renew({ key, ttl }) {
  try { await held.get(key).renew(ttl); return { ok: true, info: held.get(key).info() }; } catch (e) { return { error: errText(e) }; }
}
export async function renewDropped({ key, ttl }) { return { pending: held.get(key).renewDropped(ttl) }; }

function startWatch(key, w, kind) {
  const t0 = wall();
  const out = w.done.then((r) => ({ outcome: typeof r === 'string' ? r : `${r.kind}: ${r.message}`, kind: r.kind ?? r, t0, at: wall() }),
    (e) => ({ outcome: `rejected: ${errText(e)}`, t0, at: wall() }));
  watches.set(`${key}/${kind}`, { w, out });
}
export async function keepAliveStart({ key, every }) { startWatch(key, held.get(key).keepAlive(every), 'ka'); return { at: wall() }; }
export async function lapsedStart({ key }) { startWatch(key, held.get(key).lapsed(), 'lapsed'); return { at: wall() }; }
export async function watchStop({ key, kind }) { watches.get(`${key}/${kind}`).w.stop(); return await watches.get(`${key}/${kind}`).out; }
// The outcome, or `pending` if it has not resolved within `ms`.
export async function watchResult({ key, kind, ms = 0 }) {
  const w = watches.get(`${key}/${kind}`);
  return await Promise.race([w.out, sleep(ms).then(() => ({ outcome: 'pending', at: wall() }))]);
}

export async function holder(a) {
  try { return { holder: await (await locks(a)).holder(a.name), at: wall() }; } catch (e) { return { error: errText(e), at: wall() }; }
}
export async function snapshot(a) {
  const t0 = wall();
  try { return { snap: await (await locks(a)).snapshot(), t0, t1: wall() }; } catch (e) { return { error: errText(e), t0, t1: wall() }; }
}
export async function forceRelease(a) {
  const at = wall();
  try { return { ended: await (await locks(a)).forceRelease(a.name), at, done: wall() }; } catch (e) { return { error: errText(e), at }; }
}
export async function withLock(a) {
  const t0 = wall();
  const r = await (await locks(a)).withLock(a.name, a.owner, a.ttl, a.keepAlive ?? undefined, a.wait ?? undefined, a.hold);
  return { ...r, error: r.error ? `${r.error.kind}: ${r.error.message}` : undefined, t0, t1: wall() };
}

// --- the clock of this context ------------------------------------------------------------
export async function shiftDateNow({ ms }) { Date.now = () => realNow() + ms; return { now: Date.now(), real: realNow() }; }
export async function restoreDateNow() { Date.now = realNow; return { now: Date.now() }; }

// --- a busy thread ------------------------------------------------------------------------
export async function busy({ ms }) { const until = wall() + ms; while (wall() < until) { /* stuck */ } return { at: wall() }; }

// --- contention ---------------------------------------------------------------------------
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
      if (entering) { if (inside !== undefined) overlap = 1; store.put({ name, token }); } else {
        if (inside === undefined || inside.token !== token) overlap = 1; store.delete(name);
      }
    };
    tx.oncomplete = () => resolve(overlap);
    tx.onabort = () => reject(tx.error);
  });
}

// Random names, acquire (unbounded, or cancelled at a random moment when `cancelShare`) or
// try_lock; each grant held `holdMs` at most, then released. With `probe`, a clock-free
// overlap detector (only meaningful when leases cannot lapse while held).
export async function contend(a) {
  const l = await locks(a);
  const probe = a.probe ? await probeDb(`${a.db}-probe`) : null;
  const records = [];
  const errors = [];
  let overlaps = 0; let busyN = 0; let cancelled = 0; let cancelledLate = 0;
  const end = wall() + a.durationMs;
  while (wall() < end) {
    const name = a.names[Math.floor(Math.random() * a.names.length)];
    const r = Math.random();
    const mode = r < a.tryShare ? 'try' : (r < a.tryShare + (a.cancelShare ?? 0) ? 'cancel' : 'acquire');
    const tSent = wall() * 1000;
    let lock;
    try {
      if (mode === 'try') lock = await l.tryLock(name, a.me, a.ttl);
      else {
        const p = l.acquirePending(name, a.me, a.ttl, undefined);
        if (mode === 'cancel') {
          const after = Math.random() * (a.cancelMaxMs ?? 30);
          const raced = await Promise.race([p.done.then((x) => ({ x })), sleep(after).then(() => null)]);
          if (raced === null) {
            if (p.cancel()) { cancelled++; await sleep(Math.random() * 3); continue; }
            cancelledLate++;
            lock = await p.done;
          } else lock = raced.x;
        } else lock = await p.done;
      }
    } catch (e) { errors.push(errText(e)); await sleep(5); continue; }
    if (lock === null) { busyN++; await sleep(Math.random() * 4); continue; }
    const tGot = wall() * 1000;
    const inf = lock.info();
    if (probe) overlaps += await probeTx(probe, name, lock.token, true);
    await sleep(Math.random() * a.holdMs);
    if (probe) overlaps += await probeTx(probe, name, lock.token, false);
    const tRel = wall() * 1000;
    let released;
    try { released = await lock.release(); } catch (e) { errors.push(errText(e)); released = null; }
    records.push({ name, me: a.me, mode, token: lock.token, deadlineUs: inf.deadlineUs, ttlUs: Math.round(a.ttl * 1000), tSent, tGot, tRel, released });
    await sleep(Math.random() * 3);
  }
  if (probe) probe.close();
  return { records, overlaps, busy: busyN, errors, cancelled, cancelledLate };
}

// Snapshots every `everyMs` for `durationMs`.
export async function snapshots(a) {
  const l = await locks(a);
  const out = [];
  const end = wall() + a.durationMs;
  while (wall() < end) {
    const t0 = wall() * 1000;
    try { const s = await l.snapshot(); out.push({ t0, t1: wall() * 1000, held: s.held, waiting: s.waiting }); } catch (e) { out.push({ error: errText(e) }); }
    await sleep(a.everyMs);
  }
  return out;
}

// try_lock, then (while its transaction waits) this context's Date.now steps by `shiftMs`.
export async function tryLockThenShift(a) {
  const l = await locks(a);
  const t0 = wall();
  const p = l.tryLock(a.name, a.owner, a.ttl);
  await sleep(a.afterMs ?? 50);
  Date.now = () => realNow() + a.shiftMs;
  try {
    const lock = await p;
    if (lock && a.key) held.set(a.key, lock);
    return { got: lock !== null, t0, t1: wall() };
  } catch (e) { return { error: errText(e), t0, t1: wall() }; } finally { Date.now = realNow; }
}

// acquire on a name, dropped in the same turn (before its first step has answered).
export async function acquireDroppedAtOnce(a) {
  const l = await locks(a);
  const p = l.acquirePending(a.name, a.owner, a.ttl, undefined);
  const was = p.cancel();
  p.done.catch(() => {});
  return { wasRunning: was };
}

// Chrome's timer throttling of hidden tabs, simulated: every setTimeout of this context fires
// at the next multiple of `alignMs` of wall time (at least its delay later).
const realSetTimeout = globalThis.setTimeout.bind(globalThis);
export async function throttleTimers({ alignMs }) {
  globalThis.setTimeout = (fn, delay = 0, ...rest) => {
    const due = wall() + Math.max(0, Number(delay) || 0);
    const aligned = Math.ceil(due / alignMs) * alignMs;
    return realSetTimeout(fn, aligned - wall(), ...rest);
  };
  return { ok: true };
}
export async function unthrottleTimers() { globalThis.setTimeout = realSetTimeout; return { ok: true }; }

// Sends a transaction (a try_lock), then blocks this thread for `ms` before it can run its
// success handler: the transaction stays open meanwhile.
export async function sendThenBusy(a) {
  const l = await locks(a);
  const p = l.tryLock(a.name, a.owner, a.ttl);
  const t0 = wall();
  while (wall() < t0 + a.ms) { /* stuck right after sending */ }
  const t1 = wall();
  try { const lock = await p; if (lock && a.key) held.set(a.key, lock); return { got: lock !== null, t0, t1, t2: wall() }; } catch (e) { return { error: errText(e), t0, t1, t2: wall() }; }
}

// Blocks this thread for `ms` (a long computation), then this context's clock steps by
// `shiftMs` (a system clock step that happened meanwhile). Returns at once; the busy loop
// runs in the next task.
export async function busyThenShift({ ms, shiftMs }) {
  setTimeout(() => {
    const until = wall() + ms;
    while (wall() < until) { /* stuck */ }
    Date.now = () => realNow() + shiftMs;
  }, 0);
  return { at: wall() };
}

export async function memory() {
  return { wasmBytes: globalThis.__wasm.memory.buffer.byteLength, jsHeap: globalThis.performance && performance.memory ? performance.memory.usedJSHeapSize : null };
}
// `rounds` rounds of churn on fresh names: try_lock + release, acquire dropped while queued,
// keep_alive and lapsed started and stopped, a snapshot.
export async function churn(a) {
  const l = await locks(a);
  for (let r = 0; r < a.rounds; r++) {
    const name = `churn/${a.me}/${r % 50}`;
    const lock = await l.tryLock(name, a.me, 5000);
    const p = l.acquirePending(name, `${a.me}-w`, 5000, undefined);
    await sleep(0);
    p.cancel();
    p.done.catch(() => {});
    const ka = lock.keepAlive(0);
    const la = lock.lapsed();
    await sleep(0);
    ka.stop(); la.stop();
    await ka.done; await la.done;
    await lock.release();
    if (r % 100 === 0) await l.snapshot();
  }
  return { ok: true };
}
