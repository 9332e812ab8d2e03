// The hostile same-origin code of the scenarios: raw IndexedDB (rows and stores written by
// hand, stalls, deletions, upgrades) and raw BroadcastChannel messages. Re-exported by
// steps.js, so every step here runs in pages and workers alike.
const realNow = Date.now.bind(Date);
const wall = () => realNow();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// --- raw IndexedDB and BroadcastChannel (hostile same-origin code) ---------------------------
function rawOpen(db, version) {
  return new Promise((resolve, reject) => {
    const req = version === undefined ? indexedDB.open(db) : indexedDB.open(db, version);
    req.onupgradeneeded = (ev) => { if (globalThis.__onUpgrade) globalThis.__onUpgrade(req.result, ev); };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => { globalThis.__blocked = (globalThis.__blocked ?? 0) + 1; };
  });
}
export async function rawGet({ db, store, key }) {
  const d = await rawOpen(db);
  try {
    return await new Promise((resolve, reject) => {
      const tx = d.transaction(store, 'readonly');
      const r = key === undefined ? tx.objectStore(store).getAll() : tx.objectStore(store).get(key);
      r.onsuccess = () => resolve(r.result ?? null);
      tx.onabort = () => reject(tx.error);
    });
  } finally { d.close(); }
}
export async function rawPut({ db, store, value }) {
  const d = await rawOpen(db);
  try {
    return await new Promise((resolve, reject) => {
      const tx = d.transaction(store, 'readwrite');
      tx.objectStore(store).put(value);
      tx.oncomplete = () => resolve({ ok: true });
      tx.onabort = () => reject(tx.error);
    });
  } finally { d.close(); }
}
export async function rawDeleteRow({ db, store, key }) {
  const d = await rawOpen(db);
  try {
    return await new Promise((resolve, reject) => {
      const tx = d.transaction(store, 'readwrite');
      tx.objectStore(store).delete(key);
      tx.oncomplete = () => resolve({ ok: true });
      tx.onabort = () => reject(tx.error);
    });
  } finally { d.close(); }
}
export async function rawDeleteDb({ db }) {
  const at = wall();
  return await new Promise((resolve) => {
    const req = indexedDB.deleteDatabase(db);
    req.onsuccess = () => resolve({ ok: true, at, done: wall() });
    req.onerror = () => resolve({ error: String(req.error), at });
    req.onblocked = () => { globalThis.__delBlocked = true; };
  });
}
// Opens `db` at `version` (an upgrade from another connection), adding store `extra`.
export async function rawUpgrade({ db, version, keepOpen }) {
  globalThis.__onUpgrade = (d) => { if (!d.objectStoreNames.contains('extra')) d.createObjectStore('extra'); };
  try {
    const d = await rawOpen(db, version);
    globalThis.__onUpgrade = null;
    if (keepOpen) globalThis.__kept = d; else d.close();
    return { ok: true, version: d.version };
  } catch (e) { return { error: String(e) }; }
}
// Opens `db` at `version` (an upgrade from another connection) dropping our stores.
export async function rawDropStores({ db, version }) {
  globalThis.__onUpgrade = (d) => { for (const s of ['locks', 'meta']) if (d.objectStoreNames.contains(s)) d.deleteObjectStore(s); };
  try {
    const d = await rawOpen(db, version);
    globalThis.__onUpgrade = null;
    d.close();
    return { ok: true, version: d.version };
  } catch (e) { return { error: String(e) }; }
}
// A foreign database of the same name: version 1, other stores.
export async function rawForeign({ db, stores }) {
  globalThis.__onUpgrade = (d) => { for (const s of stores) d.createObjectStore(s.name, s.keyPath ? { keyPath: s.keyPath } : undefined); };
  const d = await rawOpen(db, 1);
  globalThis.__onUpgrade = null;
  d.close();
  return { ok: true };
}
// Keeps a readwrite transaction over both stores open for `ms` without blocking the thread
// (a chain of reads): every other transaction of the origin waits behind it.
export async function rawStall({ db, ms }) {
  const d = await rawOpen(db);
  const t0 = wall();
  return await new Promise((resolve) => {
    const tx = d.transaction(['locks', 'meta'], 'readwrite');
    const s = tx.objectStore('meta');
    let n = 0;
    const again = () => { n++; if (wall() - t0 < ms) s.get('clock').onsuccess = again; };
    again();
    tx.oncomplete = () => { d.close(); resolve({ t0, t1: wall(), reads: n }); };
    tx.onabort = () => { d.close(); resolve({ t0, t1: wall(), aborted: String(tx.error) }); };
  });
}
let stallDone = null;
export async function rawStallStart(a) { stallDone = rawStall(a); await sleep(20); return { at: wall() }; }
export async function rawStallFinish() { return await stallDone; }

export async function bcFlood({ db, messages, n, everyMs = 0 }) {
  const bc = new BroadcastChannel(`alkstore-idb:${db}`);
  let sent = 0;
  for (let i = 0; i < n; i++) {
    for (const m of messages) { bc.postMessage(m); sent++; }
    if (everyMs) await sleep(everyMs); else if (i % 50 === 0) await sleep(0);
  }
  bc.close();
  return { sent };
}
// Listens to the channel for `ms` and returns what it heard.
export async function bcListen({ db, ms }) {
  const bc = new BroadcastChannel(`alkstore-idb:${db}`);
  const heard = [];
  bc.onmessage = (e) => heard.push(typeof e.data === 'string' ? e.data : typeof e.data);
  await sleep(ms);
  bc.close();
  return heard;
}
export async function visibility() { return { state: typeof document === 'undefined' ? 'worker' : document.visibilityState, hidden: typeof document === 'undefined' ? null : document.hidden }; }
export async function timerDrift({ ms, n }) {
  const out = [];
  for (let i = 0; i < n; i++) { const t = wall(); await sleep(ms); out.push(wall() - t); }
  return out;
}

// Writes `mb` MB into a scratch database (to test the quota).
export async function rawFill({ db, mb }) {
  globalThis.__onUpgrade = (d) => { if (!d.objectStoreNames.contains('x')) d.createObjectStore('x'); };
  const d = await rawOpen(db, 1);
  globalThis.__onUpgrade = null;
  try {
    return await new Promise((resolve) => {
      const tx = d.transaction('x', 'readwrite');
      tx.objectStore('x').put(new Uint8Array(mb << 20).map((_, i) => i & 255), `k${Math.random()}`);
      tx.oncomplete = () => resolve({ ok: true });
      tx.onabort = () => resolve({ error: String(tx.error) });
    });
  } finally { d.close(); }
}

// Another connection asks for version `version` and aborts its own upgrade: every open
// connection got `versionchange` (alkstore-idb closes its own), the database stays as it was.
export async function rawAbortedUpgrade({ db, version }) {
  return await new Promise((resolve) => {
    const req = indexedDB.open(db, version);
    req.onupgradeneeded = () => req.transaction.abort();
    req.onsuccess = () => { req.result.close(); resolve({ upgraded: true }); };
    req.onerror = () => resolve({ aborted: String(req.error) });
  });
}
