// What a `request` callback gets (`Lock`) and how a granted request runs: the callback
// under a lease kept alive (or watched), the promise settled as the Web Locks spec says.
import { LockError, wrap } from './errors.js';
import { OPENING } from './args.js';

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

  get [Symbol.toStringTag]() { return 'Lock'; }

  [FREEZE]() {
    if (this.#raw !== null) this.#deadline = this.#raw.deadline;
    this.#raw = null;
  }
}

/**
 * Runs a request's `callback` on the granted lease `raw` (kept alive with `keepAlive`, else
 * watched until it lapses): resolves with the callback's result once the lease is released,
 * rejects with its error, or with an `AbortError` as soon as the lease is lost (when
 * `lock.signal` aborts too).
 */
export function held(raw, name, callback, keepAlive) {
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
      if (!live) {
        // The release found the lease gone before a watch told of it (stolen or
        // force-released just before the callback ended): the signal says so too.
        if (!controller.signal.aborted) {
          controller.abort(new LockError('ExpiredError', `the lease on lock "${name}" (fencing token ${lock.token}) was lost before the callback ended`, { token: lock.token }));
        }
        reject(new DOMException(`the lease on lock "${name}" was lost before the callback ended`, 'AbortError'));
      }
      else if (ok) resolve(value);
      else reject(value);
    };
    result.then((v) => finish(true, v), (e) => finish(false, e));
  });
}
