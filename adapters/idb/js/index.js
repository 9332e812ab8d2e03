// alkstore-idb: named locks shared by every tab, window and dedicated worker of an origin,
// kept in IndexedDB, with ttl leases and fencing tokens. The main entry, `AlkLocks`, is
// shaped like the Web Locks `LockManager` (`navigator.locks`): `request(name, options?,
// callback)` and `query()`. Below it, for leases held across callbacks: `tryLock`,
// `acquire`, `Lease`, `holder`, `forceRelease`, and `Fence` for the resource a lock guards.
//
// The engine is the Rust crate alkstore-idb, compiled to wasm (./wasm/, made by
// wasm-bindgen); this file adds the Web Locks rules: argument checks in the spec's order and
// the DOMException names they throw, AbortSignals, and the mapping of any DOMString name to
// an engine name.
import initWasm, { RawLocks, Fence } from './wasm/alkstore_idb.js';

export { Fence };

let loading = null;

/**
 * Loads the wasm module (once per context). `AlkLocks.open` calls it; call it first only to
 * load the `.wasm` from somewhere else than beside this file (a URL, a Response, bytes or a
 * WebAssembly.Module).
 */
export function init(wasm) {
  loading ??= initWasm(wasm === undefined ? undefined : { module_or_path: wasm });
  return loading;
}

/** A random id, in the shape of a Web Locks clientId. */
function randomId() {
  const c = globalThis.crypto;
  if (typeof c?.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** This context's id: the default owner of every lease it takes. */
export const contextId = randomId();

// ---- errors ---------------------------------------------------------------------------

const ENGINE_ERRORS = new Set(['InvalidNameError', 'ReservedNameError', 'InvalidOwnerError',
  'InvalidTtlError', 'ExpiredError', 'CapacityError', 'UnavailableError', 'LockError']);

/**
 * An error of the lock engine. Switch on `name`: `InvalidNameError`, `InvalidOwnerError`,
 * `InvalidTtlError` (`tooShortToKeepAlive` when the ttl is below twice the io timeout),
 * `ExpiredError` (the lease was lost: `token`, `deadline`), `UnavailableError` (IndexedDB
 * missing, blocked, failing or too slow).
 */
export class LockError extends Error {
  constructor(name, message, details = {}) {
    super(message);
    Object.defineProperty(this, 'name', { value: name, configurable: true, writable: true });
    for (const key of ['token', 'deadline', 'ttl', 'tooShortToKeepAlive']) {
      if (details[key] !== undefined) this[key] = details[key];
    }
  }
}

/** An error from the wasm side as a `LockError` (or a DOMException for a state error). */
function wrap(e) {
  if (e instanceof Error && !(e instanceof LockError)) {
    if (ENGINE_ERRORS.has(e.name)) return new LockError(e.name, e.message, e);
    if (e.name === 'InvalidStateError' && !(e instanceof DOMException)) {
      return new DOMException(e.message, 'InvalidStateError');
    }
  }
  return e;
}
const rethrow = (e) => { throw wrap(e); };

// ---- names ----------------------------------------------------------------------------
// Web Locks names are any DOMString; the engine's are non-empty UTF-8 without control
// characters, not starting with "alk:". A name the engine takes as it is goes as it is
// (so Rust code using alkstore-idb on the same database sees the same name); any other is
// sent as "%" followed by the name with "%", control characters and lone surrogates
// escaped (%XX, %uXXXX), and turned back by query(). Only names that are empty, start with
// "%" or "alk:" (any case), or hold control characters or lone surrogates are escaped.

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function toEngine(name) {
  if (name !== '' && name[0] !== '%' && !/^alk:/i.test(name) && !CONTROL.test(name) && !LONE.test(name)) {
    return name;
  }
  let out = '%';
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    const high = c >= 0xd800 && c <= 0xdbff;
    const low = c >= 0xdc00 && c <= 0xdfff;
    if (high && i + 1 < name.length && name.charCodeAt(i + 1) >= 0xdc00 && name.charCodeAt(i + 1) <= 0xdfff) {
      out += name[i] + name[i + 1];
      i++;
    } else if (high || low) {
      out += `%u${c.toString(16).padStart(4, '0')}`;
    } else if (c === 0x25 || c <= 0x1f || (c >= 0x7f && c <= 0x9f)) {
      out += `%${c.toString(16).padStart(2, '0')}`;
    } else {
      out += name[i];
    }
  }
  return out;
}

function fromEngine(name) {
  if (name[0] !== '%') return name;
  return name.slice(1).replace(/%u([0-9a-f]{4})|%([0-9a-f]{2})/g,
    (_, u, x) => String.fromCharCode(parseInt(u ?? x, 16)));
}

/** WebIDL's DOMString conversion: anything but a Symbol, as String() does. */
function domString(value, what) {
  if (typeof value === 'symbol') throw new TypeError(`${what} cannot be a Symbol`);
  return String(value);
}

/** A duration in ms: a finite number above zero (zero too with `zero`). */
function duration(value, what, zero = false) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (!zero && value === 0)) {
    throw new TypeError(`${what} must be a finite number of milliseconds${zero ? '' : ' above zero'}, not ${String(value)}`);
  }
  return value;
}

function owner(value, fallback) {
  return value === undefined ? fallback : domString(value, 'owner');
}

function isSignal(value) {
  return typeof AbortSignal !== 'undefined' && value instanceof AbortSignal;
}

function leaseInfo(info) {
  return info === null ? null : { ...info, name: fromEngine(info.name) };
}

const OPENING = Symbol('AlkLocks.open');
const DEFAULT_TTL = 30000;

// ---- AlkLocks ---------------------------------------------------------------------------

/**
 * Locks shared by every tab, window and dedicated worker of the origin that opens the same
 * database name. Shaped like `navigator.locks`: `request()` and `query()`.
 */
export class AlkLocks {
  #raw;
  #owner;

  /** Use `AlkLocks.open()`. */
  constructor(key, raw, defaultOwner) {
    if (key !== OPENING) throw new TypeError('use `await AlkLocks.open(name)` to get an AlkLocks');
    this.#raw = raw;
    this.#owner = defaultOwner;
  }

  /**
   * Opens (creating on first use) the IndexedDB database `database`. Options: `ioTimeout`
   * (ms, default 1000: the longest an operation may wait behind other contexts),
   * `heartbeat` (ms, default 1000: how often a waiter shows it is alive), `maxNameLength`
   * (bytes of UTF-8, default 1024), `owner` (default: this context's id), `wasm` (where to
   * load the .wasm from, for `init`). Rejects with an `UnavailableError` where IndexedDB is
   * missing or blocked.
   */
  static async open(database, options = {}) {
    const name = domString(database, 'the database name');
    const o = options ?? {};
    const io = duration(o.ioTimeout ?? 1000, 'ioTimeout');
    const heartbeat = duration(o.heartbeat ?? 1000, 'heartbeat');
    const maxNameLength = o.maxNameLength ?? 1024;
    if (!Number.isInteger(maxNameLength) || maxNameLength < 1 || maxNameLength > 2 ** 32 - 1) {
      throw new TypeError(`maxNameLength must be a positive integer, not ${String(maxNameLength)}`);
    }
    const me = owner(o.owner, contextId);
    await init(o.wasm);
    const raw = await RawLocks.open(name, io, heartbeat, maxNameLength).catch(rethrow);
    return new AlkLocks(OPENING, raw, me);
  }

  /** The owner of this object's leases unless a call names another: `clientId` in query(). */
  get clientId() { return this.#owner; }

  /** The IndexedDB database's name. */
  get database() { return this.#raw.databaseName; }

  /** The io timeout (ms); keeping a lease alive needs a ttl of at least twice this. */
  get ioTimeout() { return this.#raw.ioTimeout; }

  /**
   * `navigator.locks.request`, exclusive mode, plus `ttl` (ms, default 30000) and
   * `keepAlive` (default true: the lease is renewed while the callback runs). The callback
   * gets a `Lock` (`name`, `mode`, `token`, `deadline`, `owner`, `signal`) or `null`
   * (`ifAvailable` and the name is busy); the promise settles with the callback's result
   * once the lock is released, or rejects with an `AbortError` DOMException as soon as the
   * lease is lost (stolen, force-released, or lapsed), when `lock.signal` aborts too.
   */
  request(name, options, callback) {
    return this.#request(arguments.length, name, options, callback);
  }

  async #request(argc, name, options, callback) {
    // WebIDL: the overload by argument count, then each argument converted in order.
    if (argc < 2) throw new TypeError(`request() needs a name and a callback (${argc} given)`);
    if (argc === 2) {
      callback = options;
      options = undefined;
    }
    name = domString(name, 'the lock name');
    if (options !== undefined && options !== null && typeof options !== 'object' && typeof options !== 'function') {
      throw new TypeError('request() options must be an object');
    }
    const o = options ?? {};
    // Dictionary members, in lexicographic order as WebIDL reads them.
    const ifAvailable = Boolean(o.ifAvailable);
    const keepAlive = o.keepAlive === undefined ? true : Boolean(o.keepAlive);
    const mode = o.mode === undefined ? 'exclusive' : domString(o.mode, 'mode');
    if (mode !== 'exclusive' && mode !== 'shared') {
      throw new TypeError(`mode must be "exclusive" or "shared", not "${mode}"`);
    }
    const signal = o.signal;
    if (signal !== undefined && !isSignal(signal)) throw new TypeError('signal must be an AbortSignal');
    const steal = Boolean(o.steal);
    const ttl = duration(o.ttl === undefined ? DEFAULT_TTL : o.ttl, 'ttl');
    if (typeof callback !== 'function') throw new TypeError('request() callback must be a function');

    // The Web Locks request steps.
    if (typeof document !== 'undefined' && document.defaultView === null) {
      throw new DOMException('the document is not fully active', 'InvalidStateError');
    }
    if (name.startsWith('-')) throw new DOMException(`lock names starting with "-" are reserved: "${name}"`, 'NotSupportedError');
    if (steal && ifAvailable) throw new DOMException('steal and ifAvailable cannot be used together', 'NotSupportedError');
    if (steal && mode !== 'exclusive') throw new DOMException('steal needs mode "exclusive"', 'NotSupportedError');
    if (signal !== undefined && (steal || ifAvailable)) {
      throw new DOMException('signal cannot be used with steal or ifAvailable', 'NotSupportedError');
    }
    if (signal?.aborted) throw signal.reason;
    if (mode === 'shared') throw new DOMException('mode "shared" is not supported (yet) by alkstore-idb', 'NotSupportedError');
    if (keepAlive && ttl < 2 * this.ioTimeout) {
      throw new LockError('InvalidTtlError', `a ttl of ${ttl} ms cannot be kept alive: keepAlive needs at least twice the io timeout (${2 * this.ioTimeout} ms); use a longer ttl, a shorter ioTimeout or keepAlive: false`, { ttl, tooShortToKeepAlive: true });
    }

    // Sent before request() returns (no await above), so a query() right after sees it.
    const key = toEngine(name);
    let raw;
    if (steal) raw = await this.#steal(key, ttl);
    else if (ifAvailable) raw = await this.#raw.tryLock(key, this.#owner, ttl).catch(rethrow);
    else raw = await this.#waitFor(key, this.#owner, ttl, undefined, signal, true);
    if (raw === null) return await callback(null);
    return await held(raw, name, callback, keepAlive);
  }

  /** Takes `key` whoever holds it, ahead of its queue. */
  async #steal(key, ttl) {
    // A force-release hands the name to the first waiter (if any), so take it from each in
    // turn. Each force-release and tryLock are sent together (IndexedDB runs them in that
    // order, with nothing between), so a waiter handed the name on the way looks at its
    // lease only after the next force-release took it: it finds it lost and queues again
    // (see #waitFor), its callback never called.
    for (let i = 0; i < 1000; i++) {
      const ended = this.#raw.forceRelease(key);
      const taken = this.#raw.tryLock(key, this.#owner, ttl);
      await ended.catch(rethrow);
      const raw = await taken.catch(rethrow);
      if (raw !== null) return raw;
    }
    throw new LockError('UnavailableError', `steal: "${fromEngine(key)}" was taken back 1000 times in a row`);
  }

  /**
   * Waits for `key` (at most `wait` ms when given): a RawLease, or null when the wait
   * elapsed. `signal` withdraws the request with its reason. With `recheck`, a grant whose
   * lease is already gone (stolen on its way) queues again.
   */
  #waitFor(key, who, ttl, wait, signal, recheck) {
    return new Promise((resolve, reject) => {
      let pending = null;
      let abandoned = false;
      const onAbort = () => {
        abandoned = true;
        if (pending?.cancel()) reject(signal.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const attempt = () => {
        pending = this.#raw.acquire(key, who, ttl, wait);
        const p = pending;
        p.done.then(async (raw) => {
          const waited = p.waited;
          if (pending === p) pending = null; // finished: an abort from now on cancels nothing
          p.free();
          if (raw === undefined) return; // cancelled: rejected above
          // A lease handed over from the queue may have been taken by a steal's next
          // force-release before this context picked it up: look once (a grant in the first
          // transaction, the name free, needs no look).
          if (raw !== null && recheck && !abandoned && waited) {
            const live = await raw.isHeld().catch(() => true);
            if (!live) {
              raw.release().catch(() => {});
              raw.free();
              if (abandoned) reject(signal.reason);
              else attempt();
              return;
            }
          }
          signal?.removeEventListener('abort', onAbort);
          resolve(raw);
        }, (e) => {
          if (pending === p) pending = null;
          p.free();
          signal?.removeEventListener('abort', onAbort);
          reject(wrap(e));
        });
      };
      attempt();
    });
  }

  /**
   * `navigator.locks.query()`: `{ held, pending }`, each entry `{ name, mode, clientId,
   * owner, token, deadline }` (`clientId` is the owner; `token` and `deadline`, epoch ms,
   * are null for pending requests). Held in grant order; pending by name, each name's in
   * queue order (Web Locks list all pending requests in the order they were made).
   */
  async query() {
    const s = await this.#raw.snapshot().catch(rethrow);
    return {
      // Held in grant order (tokens increase with every grant), as Web Locks list them.
      held: s.held.sort((a, b) => a.token - b.token).map((l) => ({ name: fromEngine(l.name), mode: 'exclusive', clientId: l.owner, owner: l.owner, token: l.token, deadline: l.deadline })),
      pending: s.waiting.map((w) => ({ name: fromEngine(w.name), mode: 'exclusive', clientId: w.owner, owner: w.owner, token: null, deadline: null })),
    };
  }

  /**
   * Takes `name` if it is free: a `Lease`, or null when it is held or requests are queued
   * for it. Options: `ttl` (ms, default 30000), `owner` (default `clientId`).
   */
  async tryLock(name, options = {}) {
    const n = domString(name, 'the lock name');
    const o = options ?? {};
    const ttl = duration(o.ttl ?? DEFAULT_TTL, 'ttl');
    const who = owner(o.owner, this.#owner);
    const raw = await this.#raw.tryLock(toEngine(n), who, ttl).catch(rethrow);
    return raw === null ? null : new Lease(OPENING, raw, n);
  }

  /**
   * Waits for `name` in line behind the requests of every context: a `Lease`, or null when
   * `wait` (ms) elapsed first. Options: `ttl` (ms, default 30000), `wait` (default: no
   * limit; 0 answers as tryLock), `owner` (default `clientId`), `signal` (an AbortSignal
   * that withdraws the request, rejecting with its reason).
   */
  async acquire(name, options = {}) {
    const n = domString(name, 'the lock name');
    const o = options ?? {};
    const ttl = duration(o.ttl ?? DEFAULT_TTL, 'ttl');
    const wait = o.wait === undefined || o.wait === null || o.wait === Infinity ? undefined : duration(o.wait, 'wait', true);
    const who = owner(o.owner, this.#owner);
    if (o.signal !== undefined && !isSignal(o.signal)) throw new TypeError('signal must be an AbortSignal');
    if (o.signal?.aborted) throw o.signal.reason;
    const raw = await this.#waitFor(toEngine(n), who, ttl, wait, o.signal, false);
    return raw === null ? null : new Lease(OPENING, raw, n);
  }

  /** The live lease on `name` as `{ name, owner, token, deadline }`, or null. */
  async holder(name) {
    const n = domString(name, 'the lock name');
    return leaseInfo(await this.#raw.holder(toEngine(n)).catch(rethrow));
  }

  /**
   * Ends the live lease on `name` whoever holds it (an operator's tool) and returns it as
   * `{ name, owner, token, deadline }`, or null. Its holder's `lapsed()` and `keepAlive()`
   * resolve with an `ExpiredError` (a `request` callback's `lock.signal` aborts); the name
   * goes to the first waiter, with a larger token.
   */
  async forceRelease(name) {
    const n = domString(name, 'the lock name');
    return leaseInfo(await this.#raw.forceRelease(toEngine(n)).catch(rethrow));
  }
}

/** Runs a request's callback on a granted lease; settles as the Web Locks spec says. */
function held(raw, name, callback, keepAlive) {
  const controller = new AbortController();
  const lock = new Lock(OPENING, raw, name, controller.signal);
  return new Promise((resolve, reject) => {
    let settled = false;
    const lost = (why) => {
      const reason = wrap(why);
      lock[FREEZE]();
      controller.abort(reason);
      if (!settled) {
        settled = true;
        reject(new DOMException(`the lease on lock "${name}" was lost: ${reason?.message ?? reason}`, 'AbortError'));
      }
    };
    const watch = keepAlive ? raw.keepAlive(0) : raw.lapsed();
    watch.then((why) => { if (why !== null) lost(why); }, lost);
    let result;
    try {
      result = Promise.resolve(callback(lock));
    } catch (e) {
      result = Promise.reject(e);
    }
    const finish = async (ok, value) => {
      lock[FREEZE]();
      let live = true;
      if (!raw.released) live = await raw.release().catch(() => true);
      raw.free();
      if (settled) return;
      settled = true;
      if (!live) reject(new DOMException(`the lease on lock "${name}" was lost before the callback ended`, 'AbortError'));
      else if (ok) resolve(value);
      else reject(value);
    };
    result.then((v) => finish(true, v), (e) => finish(false, e));
  });
}

const FREEZE = Symbol('freeze');

/** The lock a `request` callback gets: Web Locks' `Lock` (`name`, `mode`) plus the lease. */
export class Lock {
  #raw;
  #name;
  #signal;
  #token;
  #owner;
  #deadline;

  /** Made by `AlkLocks.request`. */
  constructor(key, raw, name, signal) {
    if (key !== OPENING) throw new TypeError('Illegal constructor');
    this.#raw = raw;
    this.#name = name;
    this.#signal = signal;
    this.#token = raw.token;
    this.#owner = raw.owner;
    this.#deadline = raw.deadline;
  }

  /** The name, as requested. */
  get name() { return this.#name; }
  /** Always "exclusive" (shared mode does not exist yet). */
  get mode() { return 'exclusive'; }
  /** The fencing token: larger than every token granted before on this database, below 2^53. */
  get token() { return this.#token; }
  /** The owner (the AlkLocks' clientId). */
  get owner() { return this.#owner; }
  /** The lease's deadline (epoch ms), pushed out by keep-alive renewals. */
  get deadline() {
    if (this.#raw !== null) this.#deadline = this.#raw.deadline;
    return this.#deadline;
  }
  /** Aborts when the lease is lost (stolen, force-released, lapsed): stop writing. */
  get signal() { return this.#signal; }

  [FREEZE]() {
    if (this.#raw !== null) this.#deadline = this.#raw.deadline;
    this.#raw = null;
  }
}

/**
 * A lease held across callbacks (`tryLock`, `acquire`): release it with `release()`, or it
 * lapses at its deadline.
 */
export class Lease {
  #raw;
  #name;
  #token;
  #owner;
  #deadline;
  #ttl;
  #state = 'held'; // 'released' | 'detached'
  #chain = Promise.resolve();
  #controller = null;

  /** Made by `AlkLocks.tryLock` and `AlkLocks.acquire`. */
  constructor(key, raw, name) {
    if (key !== OPENING) throw new TypeError('Illegal constructor');
    this.#raw = raw;
    this.#name = name;
    this.#token = raw.token;
    this.#owner = raw.owner;
    this.#deadline = raw.deadline;
    this.#ttl = raw.ttl;
  }

  /** The lock's name. */
  get name() { return this.#name; }
  /** The owner the lease was granted to. */
  get owner() { return this.#owner; }
  /** The fencing token: larger than every token granted before on this database, below 2^53. */
  get token() { return this.#token; }
  /** The deadline (epoch ms) as of the last grant or renewal (keep-alive's included). */
  get deadline() {
    if (this.#state === 'held') this.#deadline = this.#raw.deadline;
    return this.#deadline;
  }
  /** The ttl (ms) of the last grant or renewal: what keepAlive renews to. */
  get ttl() {
    if (this.#state === 'held') this.#ttl = this.#raw.ttl;
    return this.#ttl;
  }
  /** Whether `release()` or `detach()` was called. */
  get released() { return this.#state !== 'held'; }

  /**
   * An AbortSignal that aborts when the lease is lost (its reason: the `LockError`), for
   * `fetch` and the like; it never aborts once released or detached. Watches the lease
   * (as `lapsed()`) from the first read on.
   */
  get signal() {
    if (this.#controller === null) {
      const controller = new AbortController();
      this.#controller = controller;
      if (this.#state === 'held') {
        this.lapsed().then((why) => { if (why !== null) controller.abort(why); }, () => {});
      }
    }
    return this.#controller.signal;
  }

  #gone() {
    return Promise.reject(new DOMException(`the lease on "${this.#name}" was ${this.#state} already`, 'InvalidStateError'));
  }

  /** Runs `op` after the renewals already asked for. */
  #serial(op) {
    const run = this.#chain.then(op);
    this.#chain = run.catch(() => {});
    return run;
  }

  /**
   * Resets the deadline to now + `ttl` (ms; default: the current ttl), keeping the token;
   * a running keepAlive goes on with the new ttl. Rejects with `ExpiredError` when the lease
   * was lost, `UnavailableError` when IndexedDB failed.
   */
  renew(ttl) {
    if (this.#state !== 'held') return this.#gone();
    let t;
    try {
      t = duration(ttl ?? this.ttl, 'ttl');
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#serial(() => (this.#state === 'held' ? this.#raw.renew(t).catch(rethrow) : this.#gone()));
  }

  /**
   * Releases the lease: true when it was live and is now free (or handed to the first
   * waiter), false when it had lapsed or was force-released (another holder may have
   * written since), or when it was released already. Stops keepAlive and lapsed (they
   * resolve with null).
   */
  release() {
    if (this.#state === 'released') return Promise.resolve(false);
    if (this.#state === 'detached') return this.#gone();
    return this.#serial(() => {
      if (this.#state === 'released') return false;
      this.#deadline = this.#raw.deadline;
      this.#ttl = this.#raw.ttl;
      this.#state = 'released';
      const out = this.#raw.release();
      this.#raw.free();
      this.#raw = null;
      return out.catch(rethrow);
    });
  }

  /** Gives up the handle without releasing: the lease runs to its deadline. */
  detach() {
    if (this.#state !== 'held') throw new DOMException(`the lease on "${this.#name}" was ${this.#state} already`, 'InvalidStateError');
    this.#deadline = this.#raw.deadline;
    this.#ttl = this.#raw.ttl;
    this.#state = 'detached';
    this.#raw.detach();
    this.#raw.free();
    this.#raw = null;
  }

  /**
   * Keeps the lease alive (renewing it to its ttl every `every` ms; default a third of the
   * ttl) until it is lost or released. Resolves with the `LockError` it was lost with
   * (`ExpiredError`, or `UnavailableError` when IndexedDB failed for good), or null once
   * `release()` or `detach()` stopped it. Rejects at once with `InvalidTtlError` when the
   * ttl is below twice the io timeout (a renewal might not finish in time).
   */
  keepAlive(options = {}) {
    if (this.#state !== 'held') return this.#gone();
    let every;
    try {
      every = duration((options ?? {}).every ?? 0, 'every', true);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#chain.then(() => (this.#state === 'held' ? this.#raw.keepAlive(every).then(wrapLost, rethrow) : this.#gone()));
  }

  /**
   * Resolves once the lease is no longer held, with the reason (`ExpiredError`), or with
   * null once `release()` or `detach()` stopped it.
   */
  lapsed() {
    if (this.#state !== 'held') return this.#gone();
    return this.#chain.then(() => (this.#state === 'held' ? this.#raw.lapsed().then(wrapLost, rethrow) : this.#gone()));
  }

  /** Whether the lease is still live (one transaction). */
  isHeld() {
    if (this.#state !== 'held') return Promise.resolve(false);
    return this.#serial(() => (this.#state === 'held' ? this.#raw.isHeld().catch(rethrow) : false));
  }
}

const wrapLost = (why) => (why === null ? null : wrap(why));
