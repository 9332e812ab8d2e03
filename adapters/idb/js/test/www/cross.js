// Steps of the cross-context tests, run in whichever page or worker the driver picks. Each
// context keeps its AlkLocks per database, and its requests in flight per name.
import { AlkLocks } from '/pkg/index.js';

const stores = new Map();
const open = (db) => {
  if (!stores.has(db)) stores.set(db, AlkLocks.open(db, { ioTimeout: globalThis.alkIoTimeout ?? 1000 }));
  return stores.get(db);
};
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const inFlight = new Map();

/** This context's clientId on `db`. */
export async function clientId({ db }) {
  return (await open(db)).clientId;
}

/**
 * For `durationMs`, requests `names` at random (a share `ifAvailable`), holding each grant
 * `holdMs`: every grant as { name, token, tGot, tRel, mode } (epoch ms, sub-ms).
 */
export async function contend({ db, names, durationMs, holdMs, ifAvailableShare }) {
  const locks = await open(db);
  const records = [];
  let busy = 0;
  const end = Date.now() + durationMs;
  while (Date.now() < end) {
    const name = names[Math.floor(Math.random() * names.length)];
    const ifAvailable = Math.random() < ifAvailableShare;
    await locks.request(name, { ifAvailable }, async (lock) => {
      if (lock === null) {
        busy++;
        return;
      }
      const tGot = now();
      await sleep(holdMs);
      records.push({ name, token: lock.token, tGot, tRel: now(), mode: ifAvailable ? 'ifAvailable' : 'wait', aborted: lock.signal.aborted });
    });
  }
  return { records, busy };
}

/** Requests `name` with a callback that never ends; `outcome` reports what became of it. */
export async function hold({ db, name, ttl }) {
  const locks = await open(db);
  const state = { lock: null, rejected: null };
  const got = new Promise((resolve) => {
    state.promise = locks.request(name, ttl ? { ttl } : {}, (lock) => {
      state.lock = lock;
      resolve();
      return new Promise(() => {});
    }).catch((e) => { state.rejected = e.name; });
  });
  inFlight.set(name, state);
  await got;
  return { token: state.lock.token, owner: state.lock.owner, deadline: state.lock.deadline };
}

/** What became of `hold`'s request: { rejected (an error name), aborted, reason }. */
export async function outcome({ name, waitMs }) {
  const state = inFlight.get(name);
  const end = Date.now() + (waitMs ?? 0);
  while (!state.lock?.signal.aborted && Date.now() < end) await sleep(10);
  await sleep(10);
  return { rejected: state.rejected, aborted: state.lock.signal.aborted, reason: state.lock.signal.reason?.name ?? null };
}

/** Steals `name`: the thief's token, and what its callback saw. */
export async function steal({ db, name }) {
  const locks = await open(db);
  return locks.request(name, { steal: true }, (lock) => ({ token: lock.token, at: now() }));
}

/** query() here. */
export async function query({ db }) {
  return (await open(db)).query();
}

/** Starts a waiting request for `name` (abortable); `finishWait` reports its grant. */
export async function startWait({ db, name, holdMs }) {
  const locks = await open(db);
  const controller = new AbortController();
  const state = { controller };
  state.promise = locks.request(name, { signal: controller.signal }, async (lock) => {
    const got = { token: lock.token, tGot: now() };
    await sleep(holdMs ?? 0);
    return got;
  }).then((v) => ({ ok: v }), (e) => ({ error: e?.name ?? String(e), same: e === state.reason }));
  inFlight.set(`wait:${name}`, state);
  return true;
}

/** Aborts the request `startWait` made, with a reason of its own. */
export async function abortWait({ name }) {
  const state = inFlight.get(`wait:${name}`);
  state.reason = new Error('changed my mind');
  state.controller.abort(state.reason);
  return true;
}

/** The outcome of `startWait`'s request: { ok: { token, tGot } } or { error, same }. */
export async function finishWait({ name }) {
  return inFlight.get(`wait:${name}`).promise;
}

/** Releases `hold`'s lock by force (an operator in this context). */
export async function forceRelease({ db, name }) {
  return (await open(db)).forceRelease(name);
}

/** tryLock here: the token or null; the lease is kept for `releaseLease`. */
export async function tryLock({ db, name, ttl }) {
  const lease = await (await open(db)).tryLock(name, { ttl });
  if (lease) inFlight.set(`lease:${name}`, lease);
  return lease && { token: lease.token, owner: lease.owner };
}

/** Releases the lease `tryLock` took here. */
export async function releaseLease({ name }) {
  return inFlight.get(`lease:${name}`).release();
}

/**
 * Reads the signal of the lease `tryLock` took here for the first time: whether it is
 * aborted at once, and after up to `waitMs`, with its reason and how long that took (ms).
 */
export async function lateSignal({ name, waitMs }) {
  const lease = inFlight.get(`lease:${name}`);
  const t0 = now();
  const signal = lease.signal;
  const atOnce = signal.aborted;
  while (!signal.aborted && now() - t0 < waitMs) await sleep(5);
  return { atOnce, aborted: signal.aborted, reason: signal.reason?.name ?? null, ms: Math.round(now() - t0) };
}

/** An ifAvailable request here: whether it was granted. */
export async function ifAvailable({ db, name }) {
  return (await open(db)).request(name, { ifAvailable: true }, (lock) => lock !== null);
}

/** Imports the README's first example here (it runs at import). */
export async function readmeExample() {
  await import('/readme-example.js');
  return true;
}

/**
 * Per-call cost, uncontended, one after another: request() with an empty callback, and
 * tryLock + release, against navigator.locks.request (ms per call; medians of 3 runs of n).
 */
export async function measure({ db, n }) {
  const locks = await open(db);
  const time = async (fn) => {
    const runs = [];
    for (let r = 0; r < 3; r++) {
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await fn(i);
      runs.push((performance.now() - t0) / n);
    }
    return runs.sort((a, b) => a - b)[1];
  };
  return {
    request: await time(() => locks.request('m/request', () => {})),
    tryLock: await time(async () => (await locks.tryLock('m/try')).release()),
    webLocks: await time(() => navigator.locks.request('m/web', () => {})),
  };
}

/**
 * The presence locks on `db` (the engine's Web Lock per context, which tells a dead context
 * from a live one): how many `navigator.locks.query()` lists as held (it sees the whole
 * origin), and how many `locks.query()` lists (none: it shows leases and requests only).
 */
export async function presence({ db }) {
  const locks = await open(db);
  const web = await navigator.locks.query();
  const prefix = `alkstore:ctx:${db}:`;
  const q = await locks.query();
  return {
    webLocks: web.held.filter((l) => l.name.startsWith(prefix) && l.mode === 'exclusive').length,
    inQuery: [...q.held, ...q.pending].filter((e) => e.name.startsWith('alkstore:ctx:')).length,
  };
}

/** The io timeout of the AlkLocks this context opens from now on (ms). */
export async function configure({ ioTimeout }) {
  globalThis.alkIoTimeout = ioTimeout;
  return true;
}

/** Requests `name` with ifAvailable in a loop until `stopHammer`: every grant's token. */
export async function hammer({ db, name }) {
  const locks = await open(db);
  const state = { stop: false, grants: [], busy: 0 };
  inFlight.set(`hammer:${name}`, state);
  state.done = (async () => {
    while (!state.stop) {
      await locks.request(name, { ifAvailable: true }, async (lock) => {
        if (lock === null) {
          state.busy++;
          return;
        }
        state.grants.push({ token: lock.token, tGot: now() });
        await sleep(2);
      });
    }
  })();
  return true;
}

/** Stops `hammer`: { grants: [{ token, tGot }], busy }. */
export async function stopHammer({ name }) {
  const state = inFlight.get(`hammer:${name}`);
  state.stop = true;
  await state.done;
  return { grants: state.grants, busy: state.busy };
}

/** Steals `name` and holds it `holdMs`: { token, tGot, tRel }. */
export async function stealHold({ db, name, holdMs }) {
  const locks = await open(db);
  return locks.request(name, { steal: true }, async (lock) => {
    const tGot = now();
    await sleep(holdMs);
    return { token: lock.token, tGot, tRel: now() };
  });
}

/** The names and clientIds of query()'s pending entries for names starting with `prefix`. */
export async function pendingOf({ db, prefix }) {
  const q = await (await open(db)).query();
  return q.pending.filter((p) => p.name.startsWith(prefix)).map((p) => ({ name: p.name, clientId: p.clientId }));
}

/**
 * In a page: a request whose signal comes from an iframe's AbortController (another realm)
 * is taken as a signal, and aborting it withdraws the request with its reason.
 */
export async function crossRealmSignal({ db, name }) {
  const locks = await open(db);
  const frame = document.createElement('iframe');
  document.body.append(frame);
  const controller = new frame.contentWindow.AbortController();
  const lease = await locks.tryLock(name);
  const waiting = locks.request(name, { signal: controller.signal }, () => 'granted').then((v) => ({ v }), (e) => ({ e }));
  await sleep(100);
  const reason = new Error('from the iframe');
  controller.abort(reason);
  const out = await waiting;
  await lease.release();
  frame.remove();
  return { sameReason: out.e === reason, error: out.e ? String(out.e) : null, pending: (await locks.query()).pending.filter((p) => p.name === name).length };
}
