// The package's errors: `LockError` (the engine's, switch on `name`), and the mapping of the
// wasm side's plain `Error`s onto it (or onto a DOMException for a state error).

const ENGINE_ERRORS = new Set(['InvalidNameError', 'ReservedNameError', 'InvalidOwnerError',
  'InvalidTtlError', 'ExpiredError', 'CapacityError', 'UnavailableError', 'LockError']);

/**
 * An error of the lock engine. Switch on `name`: `InvalidNameError`, `InvalidOwnerError`,
 * `InvalidTtlError` (`tooShortToKeepAlive` when the ttl is below twice the io timeout),
 * `ExpiredError` (the lease was lost: `token`, `deadline`), `UnavailableError` (IndexedDB
 * missing, blocked, failing or too slow, or a name's queue full).
 */
export class LockError extends Error {
  /**
   * @param {string} name one of the names above
   * @param {string} message
   * @param {{ token?: number, deadline?: number, ttl?: number, tooShortToKeepAlive?: boolean }} [details]
   */
  constructor(name, message, details = {}) {
    super(message);
    Object.defineProperty(this, 'name', { value: String(name), configurable: true, writable: true });
    for (const key of ['token', 'deadline', 'ttl', 'tooShortToKeepAlive']) {
      if (details?.[key] !== undefined) this[key] = details[key];
    }
  }
}

// The engine's Rust names in its messages, as this package spells them.
const JS_NAMES = [[/\bkeep_alive\b/g, 'keepAlive'], [/\bio_timeout\b/g, 'ioTimeout'],
  [/\btry_lock\b/g, 'tryLock'], [/\bforce_release\b/g, 'forceRelease'], [/\bis_held\b/g, 'isHeld']];
const jsNames = (message) => JS_NAMES.reduce((m, [rust, js]) => m.replace(rust, js), String(message));

/** An error from the wasm side as a `LockError` (or a DOMException for a state error). */
export function wrap(e) {
  if (e instanceof Error && !(e instanceof LockError)) {
    if (ENGINE_ERRORS.has(e.name)) return new LockError(e.name, jsNames(e.message), e);
    if (e.name === 'InvalidStateError' && !(e instanceof DOMException)) {
      return new DOMException(e.message, 'InvalidStateError');
    }
  }
  return e;
}

/** Throws `e` wrapped: for `.catch(rethrow)`. */
export const rethrow = (e) => { throw wrap(e); };

/** A lease-lost outcome (null: stopped) wrapped. */
export const wrapLost = (why) => (why === null ? null : wrap(why));
