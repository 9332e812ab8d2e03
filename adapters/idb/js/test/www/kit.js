// What the suite's modules share: the test registry (`test`, and `spec` for a test of the
// Web Locks spec alone, also run against the browser's own navigator.locks as a control),
// the io timeout the tests run with, and the assertions.
import { LockError } from '/pkg/index.js';

export const tests = [];
/** The io timeout of every AlkLocks the tests open (runAll sets it). */
export const env = { io: 1000 };
export const test = (name, fn) => tests.push({ name, fn });
export const spec = (name, fn) => tests.push({ name, fn, spec: true });

// ---- assertions -------------------------------------------------------------------------

export class AssertionError extends Error {}
export function assert(ok, message) {
  if (!ok) throw new AssertionError(message);
}
export function eq(actual, expected, what) {
  if (!Object.is(actual, expected)) {
    throw new AssertionError(`${what}: expected ${show(expected)}, got ${show(actual)}`);
  }
}
export function show(v) {
  try {
    return typeof v === 'string' ? JSON.stringify(v) : String(v);
  } catch {
    return typeof v;
  }
}
// Awaits `promise` and checks that it rejects: with a TypeError (kind TypeError), a
// DOMException or LockError of that name (a string ending in "Error"), or that very value
// (anything else).
export async function rejects(promise, kind, what) {
  assert(promise instanceof Promise, `${what}: expected a promise, got ${show(promise)}`);
  let error;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  if (error === undefined) throw new AssertionError(`${what}: resolved, expected a rejection`);
  if (kind === TypeError) {
    assert(error instanceof TypeError, `${what}: expected a TypeError, got ${error?.name}: ${error?.message}`);
  } else if (typeof kind === 'string' && kind.endsWith('Error')) {
    assert(error?.name === kind, `${what}: expected ${kind}, got ${error?.name}: ${error?.message}`);
    if (['NotSupportedError', 'AbortError', 'InvalidStateError'].includes(kind)) {
      assert(error instanceof DOMException, `${what}: expected a DOMException, got ${error?.constructor?.name}`);
    } else {
      assert(error instanceof LockError, `${what}: expected a LockError, got ${error?.constructor?.name}`);
    }
  } else {
    assert(error === kind, `${what}: expected the very reason given, got ${show(error)}`);
  }
  return error;
}
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const never = () => new Promise(() => {});
// A promise and its resolve function.
export function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}
// Waits until `cond()` holds (polled), at most `ms`.
export async function until(cond, ms, what) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new AssertionError(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

// The held entry of `name` in query(), or null: works on navigator.locks too.
export async function heldNow(locks, name) {
  return (await locks.query()).held.find((h) => h.name === name) ?? null;
}
