// A lease held across callbacks: what `tryLock` and `acquire` return.
import { rethrow, wrapLost } from './errors.js';
import { OPENING, duration } from './args.js';

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
  #lost = null; // the LockError a watch or the signal found the lease lost with

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
   * `fetch` and the like; it never aborts once released or detached. Read late, it is
   * already aborted when the loss is known here (a renewal, `isHeld`, `keepAlive` or
   * `lapsed` found it, or the deadline passed), and it looks at the database at once on
   * its first read, so a loss elsewhere (a `forceRelease`) aborts it within one
   * transaction; from then on it watches the lease (as `lapsed()`).
   */
  get signal() {
    if (this.#controller === null) {
      const controller = new AbortController();
      this.#controller = controller;
      if (this.#state === 'held') {
        const known = this.#lost ?? wrapLost(this.#raw.knownLost());
        if (known !== null) {
          this.#lost = known;
          controller.abort(known);
        } else {
          // One look first: a loss this context was not told of (or was told of before
          // anything watched) shows at once; then the watch.
          this.isHeld().catch(() => true)
            .then(() => (this.#state === 'held' ? this.lapsed() : null))
            .then((why) => { if (why !== null) controller.abort(why); }, () => {});
        }
      }
    }
    return this.#controller.signal;
  }

  /** Remembers the reason a watch resolved with (null: stopped), and passes it on. */
  #note = (why) => {
    if (why !== null && this.#lost === null) this.#lost = why;
    if (why !== null && this.#controller !== null && !this.#controller.signal.aborted) this.#controller.abort(why);
    return why;
  };

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
   * Keeps the lease alive (renewing it to its ttl every `every` ms; default, and for 0, a
   * third of the ttl; above half the ttl, half) until it is lost or released: a lease from
   * tryLock or acquire is renewed only while a keepAlive runs. Resolves with the `LockError` it was lost with
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
    return this.#chain.then(() => (this.#state === 'held' ? this.#raw.keepAlive(every).then(wrapLost, rethrow).then(this.#note) : this.#gone()));
  }

  /**
   * Resolves once the lease is no longer held, with the reason (`ExpiredError`, or
   * `UnavailableError` when it went with its database), or with null once `release()` or
   * `detach()` stopped it. Called after a loss, it resolves within one transaction.
   */
  lapsed() {
    if (this.#state !== 'held') return this.#gone();
    return this.#chain.then(() => (this.#state === 'held' ? this.#raw.lapsed().then(wrapLost, rethrow).then(this.#note) : this.#gone()));
  }

  /** Whether the lease is still live (one transaction). */
  isHeld() {
    if (this.#state !== 'held') return Promise.resolve(false);
    return this.#serial(() => (this.#state === 'held' ? this.#raw.isHeld().catch(rethrow) : false));
  }
}
