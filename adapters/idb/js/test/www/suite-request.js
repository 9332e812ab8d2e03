// The Web Locks spec's rules for request() in exclusive mode, modelled on the Web Platform
// Tests' web-locks tests: argument checks and their order, the DOMException names, callback
// results, ifAvailable.
import { Lock, contextId } from '/pkg/index.js';
import { test, spec, AssertionError, assert, eq, show, rejects, sleep, never, deferred, until, heldNow } from './kit.js';

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
