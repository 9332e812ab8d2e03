// The package's own suite, run unchanged in a window and in a dedicated worker: the Web
// Locks spec's rules for `request` and `query` in exclusive mode (modelled on the Web
// Platform Tests' web-locks tests: argument checks and their order, the DOMException names,
// callback results, ifAvailable, signal, steal, names, the query snapshot), then what
// AlkLocks adds (ttl, keep-alive, tokens, lock.signal) and the lease API below it
// (tryLock, acquire, Lease, holder, forceRelease, Fence).
import { AlkLocks, Fence, Lease, Lock, LockError, contextId } from '/pkg/index.js';

const tests = [];
// The io timeout of every AlkLocks the tests open (runAll sets it).
let io = 1000;
const test = (name, fn) => tests.push({ name, fn });
// A test of the Web Locks spec alone (request, query, exclusive mode): also run, as a
// control, against the browser's own navigator.locks.
const spec = (name, fn) => tests.push({ name, fn, spec: true });

// ---- assertions -------------------------------------------------------------------------

class AssertionError extends Error {}
function assert(ok, message) {
  if (!ok) throw new AssertionError(message);
}
function eq(actual, expected, what) {
  if (!Object.is(actual, expected)) {
    throw new AssertionError(`${what}: expected ${show(expected)}, got ${show(actual)}`);
  }
}
function show(v) {
  try {
    return typeof v === 'string' ? JSON.stringify(v) : String(v);
  } catch {
    return typeof v;
  }
}
// Awaits `promise` and checks that it rejects: with a TypeError (kind TypeError), a
// DOMException or LockError of that name (a string ending in "Error"), or that very value
// (anything else).
async function rejects(promise, kind, what) {
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
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const never = () => new Promise(() => {});
// A promise and its resolve function.
function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}
// Waits until `cond()` holds (polled), at most `ms`.
async function until(cond, ms, what) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new AssertionError(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

// The held entry of `name` in query(), or null: works on navigator.locks too.
async function heldNow(locks, name) {
  return (await locks.query()).held.find((h) => h.name === name) ?? null;
}

// ---- request: argument checks, in the spec's order --------------------------------------

spec('request() with no argument or only a name rejects with TypeError', async ({ locks }) => {
  await rejects(locks.request(), TypeError, 'request()');
  await rejects(locks.request('x'), TypeError, "request('x')");
});

spec('request() rejects a callback that is not callable with TypeError (both overloads)', async ({ locks, name }) => {
  for (const bad of [undefined, null, 123, 'not a function', {}, new Date(), Promise.resolve(), [1]]) {
    await rejects(locks.request(name, bad), TypeError, `callback ${show(bad)}`);
    await rejects(locks.request(name, {}, bad), TypeError, `callback ${show(bad)} after options`);
  }
});

spec('request() rejects an options argument that is not a dictionary with TypeError', async ({ locks, name }) => {
  for (const bad of [1, 'exclusive', true]) {
    await rejects(locks.request(name, bad, () => {}), TypeError, `options ${show(bad)}`);
  }
  // null and undefined are the empty dictionary.
  eq(await locks.request(name, null, () => 'n'), 'n', 'options null');
  eq(await locks.request(name, undefined, () => 'u'), 'u', 'options undefined');
});

spec('request() rejects a mode other than "exclusive" or "shared" with TypeError', async ({ locks, name }) => {
  for (const mode of ['', 'EXCLUSIVE', 'Exclusive', 'exclusive ', 'read', null, 1]) {
    await rejects(locks.request(name, { mode }, () => {}), TypeError, `mode ${show(mode)}`);
  }
});

spec('request() rejects a signal that is not an AbortSignal with TypeError', async ({ locks, name }) => {
  for (const signal of [null, 1, {}, new AbortController()]) {
    await rejects(locks.request(name, { signal }, () => {}), TypeError, `signal ${show(signal)}`);
  }
});

spec('request() rejects a Symbol name with TypeError and converts other names to strings', async ({ locks, name }) => {
  await rejects(locks.request(Symbol('x'), () => {}), TypeError, 'a Symbol name');
  eq(await locks.request(12345, (lock) => lock.name), '12345', 'a number name');
  eq(await locks.request({ toString: () => `${name}/obj` }, (lock) => lock.name), `${name}/obj`, 'an object name');
});

spec('request() refuses names starting with "-" with NotSupportedError', async ({ locks, name }) => {
  for (const n of ['-', '-x', `-${name}`, '--']) {
    await rejects(locks.request(n, () => {}), 'NotSupportedError', `name ${show(n)}`);
    await rejects(locks.request(n, { ifAvailable: true }, () => {}), 'NotSupportedError', `name ${show(n)}, ifAvailable`);
  }
  eq(await locks.request(` -${name}`, (lock) => lock.name), ` -${name}`, 'a name with "-" after a space');
  eq(await locks.request(`${name}-`, (lock) => lock.name), `${name}-`, 'a name ending in "-"');
});

spec('request() refuses steal with ifAvailable, steal with shared, signal with steal or ifAvailable: NotSupportedError', async ({ locks, name }) => {
  const signal = new AbortController().signal;
  await rejects(locks.request(name, { steal: true, ifAvailable: true }, () => {}), 'NotSupportedError', 'steal + ifAvailable');
  await rejects(locks.request(name, { steal: true, mode: 'shared' }, () => {}), 'NotSupportedError', 'steal + shared');
  await rejects(locks.request(name, { signal, steal: true }, () => {}), 'NotSupportedError', 'signal + steal');
  await rejects(locks.request(name, { signal, ifAvailable: true }, () => {}), 'NotSupportedError', 'signal + ifAvailable');
});

spec('request() with an aborted signal rejects with the signal\'s reason, the lock untouched', async ({ locks, name }) => {
  const c = new AbortController();
  c.abort();
  const e = await rejects(locks.request(name, { signal: c.signal }, () => {}), 'AbortError', 'aborted without a reason');
  assert(e === c.signal.reason, 'the rejection is the signal\'s own reason');
  const reason = { custom: 'reason' };
  let called = false;
  await rejects(locks.request(name, { signal: AbortSignal.abort(reason) }, () => { called = true; }), reason, 'aborted with a reason');
  assert(!called, 'the callback is not called');
  eq(await heldNow(locks, name), null, 'holder');
});

spec('argument checks come in order: TypeError before NotSupportedError before the signal\'s reason', async ({ locks }) => {
  const aborted = AbortSignal.abort('why');
  await rejects(locks.request('-x', {}, 'not callable'), TypeError, "'-x' with a bad callback");
  await rejects(locks.request('-x', { mode: 'bogus' }, () => {}), TypeError, "'-x' with a bad mode");
  await rejects(locks.request('-x', { signal: aborted }, () => {}), 'NotSupportedError', "'-x' with an aborted signal");
  await rejects(locks.request('x', { steal: true, ifAvailable: true, signal: aborted }, () => {}), 'NotSupportedError', 'steal + ifAvailable with an aborted signal');
  await rejects(locks.request('x', { mode: 'shared', signal: aborted }, () => {}), 'why', 'shared with an aborted signal');
});

test('mode "shared" is refused with NotSupportedError (not yet supported)', async ({ locks, name }) => {
  await rejects(locks.request(name, { mode: 'shared' }, () => {}), 'NotSupportedError', 'shared');
  await rejects(locks.request(name, { mode: 'shared', ifAvailable: true }, () => {}), 'NotSupportedError', 'shared + ifAvailable');
  eq(await locks.request(name, { mode: 'exclusive' }, (lock) => lock.mode), 'exclusive', 'exclusive');
});

spec('request() returns a promise even for bad arguments (never throws)', async ({ locks }) => {
  let p;
  try {
    p = locks.request();
  } catch (e) {
    throw new AssertionError(`request() threw synchronously: ${e}`);
  }
  assert(p instanceof Promise, 'a promise');
  await p.catch(() => {});
});

// ---- request: grants and results ----------------------------------------------------------

test('the callback gets a Lock with name, mode, token, owner, deadline and a live signal', async ({ locks, name }) => {
  const t0 = Date.now();
  const got = await locks.request(name, (lock) => ({
    lock, isLock: lock instanceof Lock, name: lock.name, mode: lock.mode, token: lock.token,
    owner: lock.owner, deadline: lock.deadline, aborted: lock.signal.aborted, isSignal: lock.signal instanceof AbortSignal,
  }));
  assert(got.isLock, 'a Lock');
  eq(got.name, name, 'name');
  eq(got.mode, 'exclusive', 'mode');
  assert(Number.isSafeInteger(got.token) && got.token > 0, `token ${got.token} is a safe integer`);
  eq(got.owner, locks.clientId, 'owner');
  eq(locks.clientId, contextId, 'clientId is the context id');
  assert(got.deadline >= t0 + 29000 && got.deadline <= Date.now() + 31000, `deadline ${got.deadline - t0} ms ahead`);
  assert(got.isSignal && !got.aborted, 'the signal is an AbortSignal, not aborted');
  assert(!got.lock.signal.aborted, 'releasing does not abort the signal');
});

spec('the callback is called later, never inside request()', async ({ locks, name }) => {
  let called = false;
  const p = locks.request(name, () => { called = true; });
  assert(!called, 'not called synchronously');
  await p;
  assert(called, 'called');
});

spec('the promise resolves with the callback\'s result, or its promise\'s', async ({ locks, name }) => {
  eq(await locks.request(name, () => 42), 42, 'a value');
  eq(await locks.request(name, async () => { await sleep(5); return 'later'; }), 'later', 'a promise');
  eq(await locks.request(name, () => undefined), undefined, 'undefined');
  const obj = {};
  eq(await locks.request(name, () => obj), obj, 'the very object');
  eq(await locks.request(name, () => ({ then: (resolve) => setTimeout(() => resolve('thenable'), 5) })), 'thenable', 'a thenable');
  let heldWhileThenable = null;
  await locks.request(name, () => ({ then: (resolve) => { heldNow(locks, name).then((h) => { heldWhileThenable = h !== null; resolve(); }); } }));
  eq(heldWhileThenable, true, 'held until the thenable settles');
});

spec('a callback that throws or rejects rejects the promise with that error, and releases', async ({ locks, name }) => {
  const error = new Error('boom');
  await rejects(locks.request(name, () => { throw error; }), error, 'throws');
  await rejects(locks.request(name, () => Promise.reject(error)), error, 'rejects');
  eq(await heldNow(locks, name), null, 'released');
});

spec('the promise settles after the lock is released', async ({ locks, name }) => {
  await locks.request(name, () => 'x');
  eq(await heldNow(locks, name), null, 'after a result');
  await locks.request(name, () => { throw new Error('x'); }).catch(() => {});
  eq(await heldNow(locks, name), null, 'after an error');
  eq(await locks.request(name, { ifAvailable: true }, (lock) => lock !== null), true, 'free again');
});

spec('requests for one name are granted one at a time, in order', async ({ locks, name }) => {
  const order = [];
  const a = locks.request(name, async () => { order.push('a+'); await sleep(50); order.push('a-'); });
  const b = locks.request(name, async () => { order.push('b+'); await sleep(20); order.push('b-'); });
  const c = locks.request(name, async () => { order.push('c+'); order.push('c-'); });
  await Promise.all([a, b, c]);
  eq(order.join(' '), 'a+ a- b+ b- c+ c-', 'order');
});

spec('requests for different names do not wait for each other', async ({ locks, name }) => {
  const inner = await locks.request(`${name}/1`, () => locks.request(`${name}/2`, (lock) => lock.name));
  eq(inner, `${name}/2`, 'nested');
});

test('tokens strictly increase from grant to grant', async ({ locks, name }) => {
  let last = 0;
  for (let i = 0; i < 5; i++) {
    const token = await locks.request(i % 2 ? name : `${name}/other`, (lock) => lock.token);
    assert(token > last, `token ${token} after ${last}`);
    last = token;
  }
});

// ---- ifAvailable --------------------------------------------------------------------------

spec('ifAvailable: a busy name calls back with null at once, and the result propagates', async ({ locks, name }) => {
  const release = deferred();
  const holding = locks.request(name, () => release.promise);
  await until(async () => (await heldNow(locks, name)) !== null, 5000, 'the grant');
  const t = Date.now();
  const got = await locks.request(name, { ifAvailable: true }, (lock) => (lock === null ? 'null' : 'lock'));
  eq(got, 'null', 'called back with null');
  assert(Date.now() - t < 2000, 'without waiting');
  const error = new Error('n');
  await rejects(locks.request(name, { ifAvailable: true }, () => { throw error; }), error, 'a null callback that throws');
  release.resolve('done');
  eq(await holding, 'done', 'the holder');
});

spec('ifAvailable: a free name calls back with a lock', async ({ locks, name }) => {
  const got = await locks.request(name, { ifAvailable: true }, (lock) => lock && lock.name);
  eq(got, name, 'granted');
});

spec('ifAvailable: a name with a queued request is not available', async ({ locks, name }) => {
  const release = deferred();
  const first = locks.request(name, () => release.promise);
  const second = locks.request(name, () => 'second');
  await until(async () => (await locks.query()).pending.some((p) => p.name === name), 5000, 'the queued request');
  eq(await locks.request(name, { ifAvailable: true }, (lock) => lock), null, 'busy');
  release.resolve();
  await first;
  eq(await second, 'second', 'the queued one');
});

// ---- signal -------------------------------------------------------------------------------

spec('signal: aborting a waiting request rejects with the reason and leaves the queue', async ({ locks, name }) => {
  const release = deferred();
  const holding = locks.request(name, () => release.promise);
  const c = new AbortController();
  let called = false;
  const waiting = locks.request(name, { signal: c.signal }, () => { called = true; });
  await until(async () => (await locks.query()).pending.some((p) => p.name === name), 5000, 'the queued request');
  const reason = new Error('stop waiting');
  c.abort(reason);
  await rejects(waiting, reason, 'the waiting request');
  eq((await locks.query()).pending.filter((p) => p.name === name).length, 0, 'pending after the abort');
  release.resolve();
  await holding;
  assert(!called, 'the aborted callback never ran');
  eq(await locks.request(name, { ifAvailable: true }, (lock) => lock !== null), true, 'free after');
});

spec('signal: aborting after the grant changes nothing', async ({ locks, name }) => {
  const c = new AbortController();
  const got = await locks.request(name, { signal: c.signal }, async () => {
    c.abort();
    await sleep(20);
    return 'ok';
  });
  eq(got, 'ok', 'the result');
});

spec('signal: the default reason is an AbortError DOMException', async ({ locks, name }) => {
  const release = deferred();
  const holding = locks.request(name, () => release.promise);
  const c = new AbortController();
  const waiting = locks.request(name, { signal: c.signal }, () => {});
  await sleep(30);
  c.abort();
  await rejects(waiting, 'AbortError', 'the waiting request');
  release.resolve();
  await holding;
});

// ---- steal --------------------------------------------------------------------------------

spec('steal: a free name is granted', async ({ locks, name }) => {
  eq(await locks.request(name, { steal: true }, (lock) => lock.name), name, 'granted');
});

test('steal: the holder\'s promise rejects with AbortError, its signal aborts, the thief gets a larger token', async ({ locks, name }) => {
  let victim;
  const holding = locks.request(name, (lock) => { victim = lock; return never(); });
  holding.catch(() => {}); // handled below: no unhandled-rejection report meanwhile
  await until(async () => victim !== undefined, 5000, 'the grant');
  const token = await locks.request(name, { steal: true }, (lock) => lock.token);
  assert(token > victim.token, `thief token ${token} > ${victim.token}`);
  await rejects(holding, 'AbortError', 'the holder\'s request');
  await until(() => victim.signal.aborted, 3000, 'the victim\'s signal');
  eq(victim.signal.reason?.name, 'ExpiredError', 'the victim\'s signal reason');
});

spec('steal: goes ahead of queued requests, which are all granted after it', async ({ locks, name }) => {
  // The engine has no atomic steal: AlkLocks force-releases the holder and takes the name,
  // force-releasing in turn a waiter the name was handed to meanwhile, which queues again.
  const order = [];
  const holding = locks.request(name, () => never());
  holding.catch(() => {}); // handled below: no unhandled-rejection report meanwhile
  await until(async () => (await heldNow(locks, name)) !== null, 5000, 'the grant');
  const queued = [1, 2].map((i) => locks.request(name, () => { order.push(`q${i}`); return `q${i}`; })
    .then((v) => v, (e) => e.name));
  await until(async () => (await locks.query()).pending.filter((p) => p.name === name).length === 2, 5000, 'two queued');
  const thief = await locks.request(name, { steal: true }, (lock) => { order.push('thief'); return lock !== null; });
  eq(thief, true, 'the thief was granted');
  await rejects(holding, 'AbortError', 'the holder');
  const outcomes = await Promise.all(queued);
  eq(outcomes.join(), 'q1,q2', 'both queued requests were granted');
  eq(order[0], 'thief', `the thief ran first (${order.join(' ')})`);
  eq(await heldNow(locks, name), null, 'free at the end');
});

spec('steal: a request queued behind the holder is not granted before the thief, then is (WPT: released promise deferred)', async ({ locks, name }) => {
  locks.request(name, () => never()).catch(() => {});
  await until(async () => (await heldNow(locks, name)) !== null, 5000, 'the grant');
  let granted = false;
  const queued = locks.request(name, () => { granted = true; });
  await until(async () => (await locks.query()).pending.some((p) => p.name === name), 5000, 'the queued request');
  const seen = await locks.request(name, { steal: true }, () => granted);
  eq(seen, false, 'the queued request granted before the thief');
  await queued;
  assert(granted, 'the queued request is granted after');
});

spec('steal: the last thief wins; the first one\'s promise rejects with AbortError', async ({ locks, name }) => {
  locks.request(name, () => never()).catch(() => {});
  await until(async () => (await heldNow(locks, name)) !== null, 5000, 'the grant');
  const first = locks.request(name, { steal: true }, () => never());
  first.catch(() => {});
  const second = locks.request(name, { steal: true }, (lock) => lock !== null);
  const granted = await second;
  await rejects(first, 'AbortError', 'the first thief');
  eq(granted, true, 'the second thief was granted');
});

spec('signal: aborted right after request() returns, before any grant: AbortError, the name left free', async ({ locks, name }) => {
  const c = new AbortController();
  let called = false;
  const p = locks.request(name, { signal: c.signal }, () => { called = true; });
  c.abort();
  await rejects(p, 'AbortError', 'the request');
  await sleep(50);
  assert(!called, 'the callback never ran');
  eq(await heldNow(locks, name), null, 'holder');
  eq((await locks.query()).pending.filter((e) => e.name === name).length, 0, 'pending');
});

// The spec keeps held locks in an ordered set (grant order); Chromium's navigator.locks
// lists them by name, so this one is not run as a control.
test('query() lists held locks in grant order', async ({ locks, name }) => {
  const names = [`${name}/z`, `${name}/a`, `${name}/m`];
  const nested = (i) => (i === names.length ? locks.query() : locks.request(names[i], () => nested(i + 1)));
  const q = await nested(0);
  eq(q.held.filter((h) => names.includes(h.name)).map((h) => h.name).join(), names.join(), 'order');
});

// ---- names --------------------------------------------------------------------------------

test('any DOMString is a name: empty, control characters, lone surrogates, "alk:", "%"', async ({ db, label, name }) => {
  const locks = await AlkLocks.open(`${db}/${label}`, { ioTimeout: io }); // these names are the same in every context
  const names = ['', 'a', '\u0000', '\u0001x', 'a\nb', '\u0085', '\uD800', '\uDC00', '\uDC00\uD800', '\uD83D\uDE00',
    'alk:x', 'ALK:y', '%', '%41', `%${name}`, `${name}%`, 'x'.repeat(500)];
  for (const n of names) {
    const seen = await locks.request(n, async (lock) => {
      const q = await locks.query();
      return { name: lock.name, inQuery: q.held.some((h) => h.name === n && h.token === lock.token) };
    });
    eq(seen.name, n, `lock.name for ${show(n)}`);
    assert(seen.inQuery, `query() shows ${show(n)} as held`);
  }
});

test('names that differ only in lone surrogates or escapes are different locks', async ({ db, label }) => {
  const locks = await AlkLocks.open(`${db}/${label}`, { ioTimeout: io }); // these names are the same in every context
  const pairs = [['\uD800', '\uDC00'], ['\uD800', '\uFFFD'], ['%', ''], ['%41', 'A'], ['alk:x', '%alk:x'], ['\u0000', '%00']];
  for (const [a, b] of pairs) {
    const other = await locks.request(a, () => locks.request(b, { ifAvailable: true }, (lock) => lock && lock.name));
    eq(other, b, `${show(b)} is free while ${show(a)} is held`);
  }
});

// ---- query --------------------------------------------------------------------------------

spec('query() returns { held, pending } arrays', async ({ locks }) => {
  const q = await locks.query();
  assert(Array.isArray(q.held) && Array.isArray(q.pending), 'two arrays');
});

test('query() on a fresh database is empty', async ({ db }) => {
  const fresh = await AlkLocks.open(`${db}-fresh-${Math.random()}`, { ioTimeout: io });
  const q = await fresh.query();
  eq(q.held.length + q.pending.length, 0, 'entries');
});

test('query() reports a held lock with name, mode, clientId, owner, token and deadline', async ({ locks, name }) => {
  const entry = await locks.request(name, async (lock) => {
    const q = await locks.query();
    const found = q.held.filter((h) => h.name === name);
    eq(found.length, 1, 'entries for the name');
    eq(found[0].token, lock.token, 'token');
    eq(found[0].deadline, lock.deadline, 'deadline');
    return found[0];
  });
  eq(entry.mode, 'exclusive', 'mode');
  eq(typeof entry.clientId, 'string', 'clientId');
  eq(entry.clientId, locks.clientId, 'clientId');
  eq(entry.owner, locks.clientId, 'owner');
  const keys = Object.keys(entry).sort().join();
  eq(keys, 'clientId,deadline,mode,name,owner,token', 'keys');
  eq((await locks.query()).held.filter((h) => h.name === name).length, 0, 'gone once released');
});

test('query() reports pending requests in order, with null token and deadline', async ({ locks, name }) => {
  const release = deferred();
  const holding = locks.request(name, () => release.promise);
  const waits = [locks.request(name, () => 1), locks.request(name, () => 2)];
  // Sent before request() returned: the next query sees both.
  const q = await locks.query();
  const held = q.held.filter((h) => h.name === name);
  const pending = q.pending.filter((p) => p.name === name);
  eq(held.length, 1, 'held');
  eq(pending.length, 2, 'pending');
  for (const p of pending) {
    eq(p.mode, 'exclusive', 'mode');
    eq(p.clientId, locks.clientId, 'clientId');
    eq(p.token, null, 'token');
    eq(p.deadline, null, 'deadline');
  }
  release.resolve();
  await holding;
  eq((await Promise.all(waits)).join(), '1,2', 'results');
});

spec('query() reports held locks of several names', async ({ locks, name }) => {
  const names = [`${name}/a`, `${name}/b`, `${name}/c`];
  const nested = (i) => (i === names.length
    ? locks.query()
    : locks.request(names[i], () => nested(i + 1)));
  const q = await nested(0);
  for (const n of names) assert(q.held.some((h) => h.name === n), `${n} held`);
});

spec('query() can observe a deadlock', async ({ locks, name }) => {
  const [a, b] = [`${name}/a`, `${name}/b`];
  const gotA = deferred();
  const gotB = deferred();
  const c1 = new AbortController();
  const c2 = new AbortController();
  const p1 = locks.request(a, async () => { gotA.resolve(); await gotB.promise; return locks.request(b, { signal: c1.signal }, () => {}); });
  const p2 = locks.request(b, async () => { gotB.resolve(); await gotA.promise; return locks.request(a, { signal: c2.signal }, () => {}); });
  await until(async () => (await locks.query()).pending.filter((p) => p.name === a || p.name === b).length === 2, 5000, 'the deadlock');
  const q = await locks.query();
  assert(q.held.some((h) => h.name === a) && q.held.some((h) => h.name === b), 'both held');
  c1.abort();
  await rejects(p1, 'AbortError', 'the first');
  await p2;
});

// ---- what AlkLocks adds: ttl, keep-alive, lock.signal -------------------------------------

test('ttl: a ttl too short to keep alive is refused at once with InvalidTtlError', async ({ locks, name }) => {
  const e = await rejects(locks.request(name, { ttl: 2 * io - 1 }, () => {}), 'InvalidTtlError', `ttl ${2 * io - 1} with a ${io} ms io timeout`);
  eq(e.tooShortToKeepAlive, true, 'tooShortToKeepAlive');
  for (const ttl of [0, -1, NaN, Infinity, '1000']) {
    await rejects(locks.request(name, { ttl }, () => {}), TypeError, `ttl ${show(ttl)}`);
  }
  eq(await locks.request(name, { ttl: 300, keepAlive: false }, (lock) => lock !== null), true, 'a short ttl without keep-alive');
});

test('keep-alive: the lease outlives its ttl while the callback runs', async ({ locks, name }) => {
  const out = await locks.request(name, { ttl: 2 * io }, async (lock) => {
    const first = lock.deadline;
    await sleep(3 * io);
    const h = await locks.holder(name);
    return { first, later: lock.deadline, aborted: lock.signal.aborted, token: h?.token, mine: lock.token };
  });
  assert(!out.aborted, 'not aborted');
  eq(out.token, out.mine, 'still the holder after 1.5 ttl');
  assert(out.later > out.first, 'the deadline moved');
});

test('without keep-alive the lease lapses at its ttl: lock.signal aborts and the promise rejects with AbortError', async ({ locks, name }) => {
  let lock;
  let ended = false;
  const p = locks.request(name, { ttl: 300, keepAlive: false }, async (l) => { lock = l; await sleep(3000); ended = true; return 'late'; });
  p.catch(() => {}); // handled below: no unhandled-rejection report meanwhile
  await rejects(p, 'AbortError', 'the request');
  assert(!ended, 'rejected before the callback ended');
  assert(lock.signal.aborted, 'lock.signal aborted');
  eq(lock.signal.reason.name, 'ExpiredError', 'reason');
  assert(lock.signal.reason instanceof LockError, 'a LockError');
});

test('forceRelease ends a request\'s lease: its signal aborts and its promise rejects with AbortError', async ({ locks, name }) => {
  let lock;
  const p = locks.request(name, (l) => { lock = l; return never(); });
  p.catch(() => {}); // handled below: no unhandled-rejection report meanwhile
  await until(async () => lock !== undefined, 5000, 'the grant');
  const ended = await locks.forceRelease(name);
  eq(ended.token, lock.token, 'ended token');
  eq(ended.name, name, 'ended name');
  await rejects(p, 'AbortError', 'the request');
  await until(() => lock.signal.aborted, 3000, 'the signal');
});

// ---- tryLock, acquire, Lease --------------------------------------------------------------

test('tryLock: a Lease, then null while held, release true, then false', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { ttl: 5000 });
  assert(lease instanceof Lease, 'a Lease');
  eq(lease.name, name, 'name');
  eq(lease.owner, locks.clientId, 'owner defaults to the clientId');
  eq(lease.ttl, 5000, 'ttl');
  assert(Number.isSafeInteger(lease.token), 'token');
  assert(Math.abs(lease.deadline - (Date.now() + 5000)) < 1000, 'deadline');
  eq(await locks.tryLock(name), null, 'busy');
  eq((await locks.holder(name)).token, lease.token, 'holder');
  eq(await lease.release(), true, 'release');
  eq(lease.released, true, 'released');
  eq(await lease.release(), false, 'release again');
  eq(await locks.holder(name), null, 'holder after');
});

test('tryLock and acquire take an owner; bad input is a LockError with a name to switch on', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { owner: 'worker-7' });
  eq(lease.owner, 'worker-7', 'owner');
  eq((await locks.holder(name)).owner, 'worker-7', 'holder owner');
  await lease.release();
  await rejects(locks.tryLock(name, { owner: '' }), 'InvalidOwnerError', 'empty owner');
  await rejects(locks.tryLock('x'.repeat(2000)), 'InvalidNameError', 'a name over 1024 bytes');
  await rejects(locks.tryLock(name, { ttl: 0 }), TypeError, 'ttl 0');
});

test('acquire: waits for a release; a bounded wait resolves with null', async ({ locks, name }) => {
  const first = await locks.acquire(name, { ttl: 5000 });
  const t = Date.now();
  eq(await locks.acquire(name, { wait: 200 }), null, 'wait 200 ms');
  assert(Date.now() - t >= 190, 'waited');
  eq(await locks.acquire(name, { wait: 0 }), null, 'wait 0');
  const second = locks.acquire(name, { ttl: 5000 });
  await sleep(50);
  await first.release();
  const lease = await second;
  assert(lease.token > first.token, 'a larger token');
  await lease.release();
});

test('acquire: a signal withdraws the request with its reason', async ({ locks, name }) => {
  const holder = await locks.tryLock(name);
  const c = new AbortController();
  const waiting = locks.acquire(name, { signal: c.signal });
  await sleep(50);
  c.abort('enough');
  await rejects(waiting, 'enough', 'the reason');
  await rejects(locks.acquire(name, { signal: AbortSignal.abort('already') }), 'already', 'an aborted signal');
  await holder.release();
  eq((await locks.query()).pending.filter((p) => p.name === name).length, 0, 'nothing pending');
});

test('Lease.renew moves the deadline and keeps the token; a lost lease rejects with ExpiredError', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { ttl: 1000 });
  const before = lease.deadline;
  await lease.renew(10000);
  assert(lease.deadline > before + 8000, 'deadline moved');
  eq(lease.ttl, 10000, 'ttl');
  eq((await locks.holder(name)).token, lease.token, 'same token');
  await locks.forceRelease(name);
  const e = await rejects(lease.renew(), 'ExpiredError', 'renew after a force-release');
  eq(e.token, lease.token, 'the error names the token');
  eq(await lease.isHeld(), false, 'isHeld');
  eq(await lease.release(), false, 'release of a lost lease');
});

test('Lease.keepAlive: refused at once for a short ttl; renews; resolves with null on release', async ({ locks, name }) => {
  const short = await locks.tryLock(name, { ttl: 1.5 * io });
  const e = await rejects(short.keepAlive(), 'InvalidTtlError', `ttl ${1.5 * io} with a ${io} ms io timeout`);
  eq(e.tooShortToKeepAlive, true, 'tooShortToKeepAlive');
  await short.release();
  const lease = await locks.tryLock(name, { ttl: 2 * io });
  const alive = lease.keepAlive();
  await sleep(2.6 * io);
  eq(await lease.isHeld(), true, 'held past its ttl');
  await lease.renew(2.5 * io); // a renew while keepAlive runs: it goes on
  await sleep(300);
  eq(await lease.release(), true, 'released');
  eq(await alive, null, 'keepAlive resolves with null');
});

test('Lease.keepAlive and lapsed resolve with ExpiredError when the lease is lost', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { ttl: 3 * io });
  const alive = lease.keepAlive({ every: io / 2 });
  const lapsed = lease.lapsed();
  await locks.forceRelease(name);
  const [a, b] = await Promise.all([alive, lapsed]);
  eq(a?.name, 'ExpiredError', 'keepAlive');
  eq(b?.name, 'ExpiredError', 'lapsed');
  assert(a instanceof LockError, 'a LockError');
  const short = await locks.tryLock(name, { ttl: 150 });
  eq((await short.lapsed())?.name, 'ExpiredError', 'lapsed at the deadline');
  assert(Date.now() >= short.deadline - 50, `not before the deadline (${short.deadline - Date.now()} ms early)`);
});

test('Lease.signal aborts when the lease is lost, and never once released', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { ttl: 10000 });
  const signal = lease.signal;
  assert(signal instanceof AbortSignal && !signal.aborted, 'a live AbortSignal');
  eq(lease.signal, signal, 'the same signal every time');
  await locks.forceRelease(name);
  await until(() => signal.aborted, 3000, 'the abort');
  eq(signal.reason?.name, 'ExpiredError', 'reason');
  const other = await locks.tryLock(name, { ttl: 300 });
  const kept = other.signal;
  eq(await other.release(), true, 'release');
  await sleep(400);
  assert(!kept.aborted, 'a released lease\'s signal stays');
});

test('Lease.detach leaves the lease to its deadline', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { ttl: 300 });
  lease.detach();
  eq(lease.released, true, 'released');
  eq((await locks.holder(name))?.token, lease.token, 'still held');
  await rejects(lease.release(), 'InvalidStateError', 'release after detach');
  await sleep(400);
  eq(await locks.holder(name), null, 'lapsed');
});

test('forceRelease and holder report leases, null for a free name', async ({ locks, name }) => {
  eq(await locks.forceRelease(name), null, 'free');
  eq(await locks.holder(name), null, 'free');
  const lease = await locks.tryLock(name, { owner: 'op' });
  const info = await locks.holder(name);
  eq(Object.keys(info).sort().join(), 'deadline,name,owner,token', 'keys');
  eq(info.owner, 'op', 'owner');
  const ended = await locks.forceRelease(name);
  eq(ended.token, lease.token, 'token');
  eq(await lease.release(), false, 'the old holder\'s release');
});

// ---- Fence --------------------------------------------------------------------------------

test('Fence: accepts tokens at or above the highest, refuses lower ones', async ({ locks, name }) => {
  const fence = new Fence();
  eq(fence.highest, undefined, 'highest at first');
  const a = await locks.tryLock(name);
  await locks.forceRelease(name);
  const b = await locks.tryLock(name);
  eq(fence.check(b.token), true, 'the new holder');
  eq(fence.check(a.token), false, 'the stale holder');
  eq(fence.check(b.token), true, 'the new holder again');
  eq(fence.highest, b.token, 'highest');
  await b.release();
  const restored = new Fence(41);
  eq(restored.check(40), false, 'restored');
  eq(restored.check(41), true, 'restored');
  for (const bad of [-1, 1.5, 2 ** 53, NaN]) {
    let threw = null;
    try {
      fence.check(bad);
    } catch (e) {
      threw = e;
    }
    assert(threw instanceof TypeError, `check(${bad}) throws a TypeError`);
  }
});

test('AlkLocks: the constructor is private; open checks its options', async ({ db }) => {
  let threw = null;
  try {
    new AlkLocks();
  } catch (e) {
    threw = e;
  }
  assert(threw instanceof TypeError, 'new AlkLocks() throws');
  await rejects(AlkLocks.open(db, { ioTimeout: 0 }), TypeError, 'ioTimeout 0');
  await rejects(AlkLocks.open(db, { maxNameLength: 0 }), TypeError, 'maxNameLength 0');
  const other = await AlkLocks.open(db, { owner: 'someone' });
  eq(other.clientId, 'someone', 'owner');
  eq(other.database, db, 'database');
});

// ---- the runner ---------------------------------------------------------------------------

/**
 * Runs every test (or those whose name includes `only`) on database `db` with this io
 * timeout (ms; the ttls of the keep-alive tests follow it): [{ name, ok, error, ms }].
 * With `control`, runs the tests of the spec alone against the browser's navigator.locks.
 */
export async function runAll({ db, label, only, ioTimeout, control }) {
  io = ioTimeout ?? 1000;
  const locks = control ? navigator.locks : await AlkLocks.open(db, { ioTimeout: io });
  const results = [];
  for (const [i, t] of tests.entries()) {
    if (only && !t.name.includes(only)) continue;
    if (control && !t.spec) continue;
    const name = `${label}/t${i}`;
    const t0 = performance.now();
    try {
      await Promise.race([
        t.fn({ locks, name, db, label }),
        sleep(20000).then(() => { throw new AssertionError('timed out after 20 s'); }),
      ]);
      results.push({ name: t.name, ok: true, ms: performance.now() - t0 });
    } catch (e) {
      results.push({ name: t.name, ok: false, error: String(e?.stack ?? e), ms: performance.now() - t0 });
    }
  }
  return results;
}
