// alkstore-idb: named locks shared by every tab, window and dedicated worker of an origin,
// kept in IndexedDB, with ttl leases and fencing tokens. The main entry, `AlkLocks`, is
// shaped like the Web Locks `LockManager` (`navigator.locks`): `request(name, options?,
// callback)` and `query()`. Below it, for leases held across callbacks: `tryLock`,
// `acquire`, `Lease`, `holder`, `forceRelease`, and `Fence` for the resource a lock guards.
//
// The engine is the Rust crate alkstore-idb, compiled to wasm (./wasm/, made by
// wasm-bindgen); this file and ./lib/ add the Web Locks rules: argument checks in the spec's
// order and the DOMException names they throw (here), AbortSignals, the mapping of any
// DOMString name to an engine name (lib/args.js), the errors (lib/errors.js), a granted
// request's run (lib/lock.js) and the lease API (lib/lease.js).
import initWasm, { RawLocks, Fence } from './wasm/alkstore_idb.js';
import { LockError, rethrow, wrap } from './lib/errors.js';
import {
  DEFAULT_TTL, OPENING, domString, duration, fromEngine, hasLoneSurrogate, isSignal, leaseInfo,
  owner, randomId, toEngine,
} from './lib/args.js';
import { Lock, held } from './lib/lock.js';
import { Lease } from './lib/lease.js';

export { Fence, Lease, Lock, LockError };

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

/** This context's id: the default owner of every lease it takes. */
export const contextId = randomId();

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
    if (hasLoneSurrogate(name)) throw new TypeError('the database name holds a lone surrogate (IndexedDB would take it, the engine cannot tell it from U+FFFD)');
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
    if (steal) raw = await this.#raw.steal(key, this.#owner, ttl).catch(rethrow);
    else if (ifAvailable) raw = await this.#raw.tryLock(key, this.#owner, ttl).catch(rethrow);
    else raw = await this.#waitFor(key, this.#owner, ttl, undefined, signal);
    if (raw === null) return await callback(null);
    return await held(raw, name, callback, keepAlive);
  }

  /**
   * Waits for `key` (at most `wait` ms when given): a RawLease, or null when the wait
   * elapsed. `signal` withdraws the request with its reason (unless it was granted first).
   */
  #waitFor(key, who, ttl, wait, signal) {
    return new Promise((resolve, reject) => {
      const pending = this.#raw.acquire(key, who, ttl, wait);
      const onAbort = () => {
        // Still waiting: its future is dropped (its ticket leaves the queue, a lease granted
        // to it meanwhile goes on) and `done` resolves with undefined.
        if (pending.cancel()) reject(signal.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = (then) => (value) => {
        signal?.removeEventListener('abort', onAbort);
        pending.free();
        then(value);
      };
      pending.done.then(settle((raw) => { if (raw !== undefined) resolve(raw); }), settle((e) => reject(wrap(e))));
    });
  }

  /**
   * `navigator.locks.query()`: `{ held, pending }`, each entry `{ name, mode, clientId,
   * owner, token, deadline }` (`clientId` is the owner; `token` and `deadline`, epoch ms,
   * are null for pending requests). Held in grant order, pending in request order, as Web
   * Locks list them: the order in which the requests were queued, across every name and
   * context (within one context, the order of the calls).
   */
  async query() {
    const s = await this.#raw.query().catch(rethrow);
    return {
      held: s.held.map((l) => ({ name: fromEngine(l.name), mode: 'exclusive', clientId: l.owner, owner: l.owner, token: l.token, deadline: l.deadline })),
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
    const raw = await this.#waitFor(toEngine(n), who, ttl, wait, o.signal);
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
