// Misuse, as a web developer who read only the README would try it: options that throw,
// re-entrant requests, odd callbacks, bad owners and database names, look-alike signals,
// leases used after release, a callback that never settles, and many requests at once.
// The `spec` ones also run against navigator.locks: AlkLocks must answer as it does.
import { AlkLocks, Lock, LockError } from '/pkg/index.js';
import { env, test, spec, assert, eq, rejects, sleep, never, deferred, until, heldNow } from './kit.js';

spec('options whose getters throw reject request() with that very error, nothing requested', async ({ locks, name }) => {
  const boom = new Error('getter');
  for (const key of ['ifAvailable', 'mode', 'signal', 'steal']) {
    const options = { get [key]() { throw boom; } };
    await rejects(locks.request(name, options, () => {}), boom, `a throwing ${key} getter`);
  }
  eq(await heldNow(locks, name), null, 'nothing held');
});

spec('a callback asking for its own name with ifAvailable gets null; with steal, takes it from itself', async ({ locks, name }) => {
  const inner = await locks.request(name, () => locks.request(name, { ifAvailable: true }, (lock) => lock));
  eq(inner, null, 'ifAvailable inside the holder');
  let outer;
  const holding = locks.request(name, (lock) => { outer = lock; return never(); });
  holding.catch(() => {});
  await until(() => outer !== undefined, 5000, 'the grant');
  eq(await locks.request(name, { steal: true }, (lock) => lock.name), name, 'stolen from itself');
  await rejects(holding, 'AbortError', 'the first request');
});

spec('a callback that throws a non-Error, or returns a rejected thenable, rejects with that value', async ({ locks, name }) => {
  await rejects(locks.request(name, () => { throw 42; }), 42, 'a number thrown');
  const reason = { not: 'an error' };
  await rejects(locks.request(name, () => ({ then: (_, reject) => reject(reason) })), reason, 'a thenable rejecting');
  eq(await heldNow(locks, name), null, 'released');
});

spec('a look-alike or prototype-only AbortSignal is a TypeError', async ({ locks, name }) => {
  const fake = { aborted: false, reason: undefined, addEventListener() {}, removeEventListener() {}, throwIfAborted() {} };
  await rejects(locks.request(name, { signal: fake }, () => {}), TypeError, 'a look-alike');
  await rejects(locks.request(name, { signal: Object.create(AbortSignal.prototype) }, () => {}), TypeError, 'Object.create(AbortSignal.prototype)');
});

test('a Lock cannot be made by hand, and stays readable after its callback', async ({ locks, name }) => {
  let threw = null;
  try {
    new Lock();
  } catch (e) {
    threw = e;
  }
  assert(threw instanceof TypeError, 'new Lock() throws a TypeError');
  const lock = await locks.request(name, (l) => l);
  eq(lock.name, name, 'name after the callback');
  assert(Number.isSafeInteger(lock.token) && lock.deadline > 0, 'token and deadline after');
  assert(!lock.signal.aborted, 'a released lock\'s signal stays');
  eq(Object.prototype.toString.call(lock), '[object Lock]', 'toStringTag');
});

test('owners are checked when given: at open and per call, InvalidOwnerError before anything is held', async ({ db, locks, name }) => {
  for (const [bad, what] of [['', 'empty'], ['x'.repeat(257), '257 bytes'], ['é'.repeat(129), '258 bytes of UTF-8'], ['\uD800', 'a lone surrogate']]) {
    await rejects(AlkLocks.open(db, { owner: bad, ioTimeout: env.io }), 'InvalidOwnerError', `open with an owner ${what}`);
    await rejects(locks.tryLock(name, { owner: bad }), 'InvalidOwnerError', `tryLock with an owner ${what}`);
    await rejects(locks.acquire(name, { owner: bad }), 'InvalidOwnerError', `acquire with an owner ${what}`);
  }
  eq(await locks.holder(name), null, 'nothing held');
  const ok = await AlkLocks.open(db, { owner: 'é'.repeat(128), ioTimeout: env.io });
  eq(await ok.request(name, (lock) => lock.owner), 'é'.repeat(128), '256 bytes of UTF-8 is fine');
});

test('a database name with a lone surrogate is a TypeError (the engine could not tell it from U+FFFD)', async ({ db }) => {
  await rejects(AlkLocks.open(`${db}\uD800`), TypeError, 'a lone surrogate');
  await rejects(AlkLocks.open(Symbol('db')), TypeError, 'a Symbol');
});

test('a Lease used after release or detach: InvalidStateError DOMExceptions, release answers false', async ({ locks, name }) => {
  const lease = await locks.tryLock(name);
  eq(await lease.release(), true, 'release');
  eq(await lease.release(), false, 'release again');
  for (const [what, call] of [['renew', () => lease.renew()], ['keepAlive', () => lease.keepAlive()], ['lapsed', () => lease.lapsed()]]) {
    await rejects(call(), 'InvalidStateError', `${what} after release`);
  }
  eq(await lease.isHeld(), false, 'isHeld after release');
  let threw = null;
  try {
    lease.detach();
  } catch (e) {
    threw = e;
  }
  assert(threw instanceof DOMException && threw.name === 'InvalidStateError', 'detach after release');
  const other = await locks.tryLock(name);
  other.detach();
  await rejects(other.release(), 'InvalidStateError', 'release after detach');
  await locks.forceRelease(name);
});

test('concurrent renewals of one lease run one after the other, the last one wins', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { ttl: 5000 });
  const before = lease.deadline;
  await Promise.all([lease.renew(6000), lease.renew(7000), lease.renew(20000)]);
  eq(lease.ttl, 20000, 'ttl');
  assert(lease.deadline >= before + 14000, `deadline moved by the last one (${lease.deadline - before} ms)`);
  eq((await locks.holder(name)).deadline, lease.deadline, 'what the database holds');
  eq(await lease.release(), true, 'release');
});

test('a callback that never settles keeps its lease past its ttl; steal takes it and the request rejects', async ({ locks, name }) => {
  let lock;
  const holding = locks.request(name, { ttl: 2 * env.io }, (l) => { lock = l; return never(); });
  holding.catch(() => {});
  await until(() => lock !== undefined, 5000, 'the grant');
  await sleep(3 * env.io);
  eq((await locks.holder(name))?.token, lock.token, 'still held after 1.5 ttl');
  assert(!lock.signal.aborted, 'not aborted');
  const thief = await locks.request(name, { steal: true }, (l) => l.token);
  assert(thief > lock.token, 'the thief has a larger token');
  await rejects(holding, 'AbortError', 'the request that never settled');
  await until(() => lock.signal.aborted, 3000, 'its signal');
});

test('300 requests for one name at once: 256 wait and are granted in request order, the rest are refused at once', async ({ locks, name }) => {
  const release = deferred();
  const first = locks.request(name, () => release.promise);
  const order = [];
  const rest = [];
  for (let i = 0; i < 300; i++) {
    rest.push(locks.request(name, () => { order.push(i); }).then(() => 'granted', (e) => e));
  }
  await until(async () => (await locks.query()).pending.filter((p) => p.name === name).length === 256, 45000, '256 pending');
  release.resolve();
  await first;
  const outcomes = await Promise.all(rest);
  const refused = outcomes.filter((o) => o !== 'granted');
  eq(outcomes.filter((o) => o === 'granted').length, 256, 'granted');
  assert(refused.every((e) => e instanceof LockError && e.name === 'UnavailableError' && /256 waiters/.test(e.message)),
    `the others refused with UnavailableError naming the limit: ${refused[0]?.name}: ${refused[0]?.message}`);
  assert(order.every((v, i) => i === 0 || v > order[i - 1]), 'granted in the order they were made');
  eq(await heldNow(locks, name), null, 'free at the end');
});

test('500 requests for 500 names at once, on the default io timeout: every one granted, none times out', async ({ db, label, name }) => {
  const quick = await AlkLocks.open(`${db}/${label}/burst`);
  const names = Array.from({ length: 500 }, (_, i) => `${name}/${i}`);
  const outcomes = await Promise.all(names.map((n) => quick.request(n, (lock) => lock.name).catch((e) => e)));
  const failed = outcomes.filter((o, i) => o !== names[i]);
  eq(failed.length, 0, `failed requests (the first: ${failed[0]?.name}: ${failed[0]?.message})`);
  eq((await quick.query()).held.length, 0, 'all released');
});
