// Arguments as WebIDL and the engine take them: DOMString conversions, durations, owners,
// AbortSignals, and the mapping of any DOMString lock name to an engine name and back.
import { LockError } from './errors.js';

/** The key that lets the package's own code make its classes (their constructors are private). */
export const OPENING = Symbol('alkstore-idb');

/** The default ttl (ms) of a lease. */
export const DEFAULT_TTL = 30000;

/** The longest owner, in bytes of UTF-8 (the engine's default). */
const MAX_OWNER_BYTES = 256;

/** WebIDL's DOMString conversion: anything but a Symbol, as String() does. */
export function domString(value, what) {
  if (typeof value === 'symbol') throw new TypeError(`${what} cannot be a Symbol`);
  return String(value);
}

/** A duration in ms: a finite number above zero (zero too with `zero`). */
export function duration(value, what, zero = false) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (!zero && value === 0)) {
    throw new TypeError(`${what} must be a finite number of milliseconds${zero ? '' : ' above zero'}, not ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`);
  }
  return value;
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether `s` holds a lone surrogate (which no UTF-8 string, hence no engine string, can). */
export const hasLoneSurrogate = (s) => LONE.test(s);

/**
 * An owner: `fallback` when undefined, else a string that is not empty, at most 256 bytes
 * of UTF-8 and without lone surrogates (which would come back from the engine as U+FFFD, a
 * different owner); else an `InvalidOwnerError`, before anything is sent.
 */
export function owner(value, fallback) {
  if (value === undefined) return fallback;
  const o = domString(value, 'owner');
  const bytes = new TextEncoder().encode(o).length;
  if (o === '' || bytes > MAX_OWNER_BYTES || hasLoneSurrogate(o)) {
    const why = o === '' ? 'is empty' : hasLoneSurrogate(o) ? 'holds a lone surrogate' : `is ${bytes} bytes of UTF-8 (at most ${MAX_OWNER_BYTES})`;
    throw new LockError('InvalidOwnerError', `invalid owner: it ${why}`);
  }
  return o;
}

const abortedGetter = typeof AbortSignal === 'undefined' ? null
  : Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')?.get;

/**
 * Whether `value` is an AbortSignal, as WebIDL tells it: by its brand, so that a signal
 * from another realm (an iframe's) counts and a look-alike object does not.
 */
export function isSignal(value) {
  if (abortedGetter == null || value === null || typeof value !== 'object') return false;
  try {
    abortedGetter.call(value);
    return true;
  } catch {
    return false;
  }
}

// ---- names ----------------------------------------------------------------------------
// Web Locks names are any DOMString; the engine's are non-empty UTF-8 without control
// characters, not starting with "alk:". A name the engine takes as it is goes as it is
// (so Rust code using alkstore-idb on the same database sees the same name); any other is
// sent as "%" followed by the name with "%", control characters and lone surrogates
// escaped (%XX, %uXXXX), and turned back by query(). Only names that are empty, start with
// "%" or "alk:" (any case), or hold control characters or lone surrogates are escaped.

/** A Web Locks name as the engine's name. */
export function toEngine(name) {
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

/** An engine name as the Web Locks name it stands for. */
export function fromEngine(name) {
  if (name[0] !== '%') return name;
  return name.slice(1).replace(/%u([0-9a-f]{4})|%([0-9a-f]{2})/g,
    (_, u, x) => String.fromCharCode(parseInt(u ?? x, 16)));
}

/** A lease record from the engine with its name turned back. */
export function leaseInfo(info) {
  return info === null ? null : { ...info, name: fromEngine(info.name) };
}

/** A random id, in the shape of a Web Locks clientId. */
export function randomId() {
  const c = globalThis.crypto;
  if (typeof c?.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
