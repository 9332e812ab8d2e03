// What AlkLocks adds to Web Locks (ttl, keep-alive, lock.signal) and the lease API below
// request (tryLock, acquire, Lease, holder, forceRelease, Fence).
import { AlkLocks, Fence, Lease, LockError } from '/pkg/index.js';
import { env, test, assert, eq, show, rejects, sleep, never, until, deferred } from './kit.js';

// ---- what AlkLocks adds: ttl, keep-alive, lock.signal -------------------------------------

test('ttl: a ttl too short to keep alive is refused at once with InvalidTtlError', async ({ locks, name }) => {
  const e = await rejects(locks.request(name, { ttl: 2 * env.io - 1 }, () => {}), 'InvalidTtlError', `ttl ${2 * env.io - 1} with a ${env.io} ms io timeout`);
  eq(e.tooShortToKeepAlive, true, 'tooShortToKeepAlive');
  for (const ttl of [0, -1, NaN, Infinity, '1000']) {
    await rejects(locks.request(name, { ttl }, () => {}), TypeError, `ttl ${show(ttl)}`);
  }
  eq(await locks.request(name, { ttl: 300, keepAlive: false }, (lock) => lock !== null), true, 'a short ttl without keep-alive');
});

test('keep-alive: the lease outlives its ttl while the callback runs', async ({ locks, name }) => {
  const out = await locks.request(name, { ttl: 2 * env.io }, async (lock) => {
    const first = lock.deadline;
    await sleep(3 * env.io);
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
  const short = await locks.tryLock(name, { ttl: 1.5 * env.io });
  const e = await rejects(short.keepAlive(), 'InvalidTtlError', `ttl ${1.5 * env.io} with a ${env.io} ms io timeout`);
  eq(e.tooShortToKeepAlive, true, 'tooShortToKeepAlive');
  await short.release();
  const lease = await locks.tryLock(name, { ttl: 2 * env.io });
  const alive = lease.keepAlive();
  await sleep(2.6 * env.io);
  eq(await lease.isHeld(), true, 'held past its ttl');
  await lease.renew(2.5 * env.io); // a renew while keepAlive runs: it goes on
  await sleep(300);
  eq(await lease.release(), true, 'released');
  eq(await alive, null, 'keepAlive resolves with null');
});

test('Lease.keepAlive and lapsed resolve with ExpiredError when the lease is lost', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { ttl: 3 * env.io });
  const alive = lease.keepAlive({ every: env.io / 2 });
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

test('Lease.signal first read after a forceRelease aborts within one look, and a late lapsed() resolves at once', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { ttl: 20000 });
  await locks.forceRelease(name);
  await sleep(300);
  const signal = lease.signal; // first read, after the loss
  await until(() => signal.aborted, 3000, 'the signal read late to abort (not at the old deadline, 20 s on)');
  eq(signal.reason?.name, 'ExpiredError', 'reason');
  const second = await locks.tryLock(name, { ttl: 20000 });
  await locks.forceRelease(name);
  await sleep(300);
  const why = await Promise.race([second.lapsed(), sleep(3000).then(() => 'still waiting')]);
  eq(why?.name, 'ExpiredError', 'lapsed() called after the forceRelease');
  const third = await locks.tryLock(name, { ttl: 20000 });
  await locks.forceRelease(name);
  await sleep(300);
  const kept = await Promise.race([third.keepAlive({ every: 9000 }), sleep(3000).then(() => 'still waiting')]);
  eq(kept?.name, 'ExpiredError', 'keepAlive() called after the forceRelease');
  assert(third.signal.aborted, 'the signal first read after keepAlive found the loss is aborted at once');
});

test('Lease.signal first read after the deadline passed is aborted at once', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { ttl: 200 });
  await sleep(400);
  const signal = lease.signal;
  assert(signal.aborted, 'aborted at the first read');
  eq(signal.reason?.name, 'ExpiredError', 'reason');
  assert(signal.reason instanceof LockError, 'a LockError');
  const fresh = await locks.tryLock(name, { ttl: 20000 });
  assert(!fresh.signal.aborted, 'a live lease\'s signal read at once');
  await sleep(300);
  assert(!fresh.signal.aborted, 'still live after its first look');
  eq(await fresh.release(), true, 'release');
});

test('a lease lost with its deleted database says so: UnavailableError, for lock.signal and lapsed()', async ({ name }) => {
  const db = `alk-deleted-${Math.random().toString(36).slice(2)}`;
  const locks = await AlkLocks.open(db, { ioTimeout: env.io });
  const lease = await locks.tryLock(name, { ttl: 20000 });
  const lapsed = lease.lapsed();
  let signal = null;
  const request = locks.request(`${name}/r`, { ttl: 20000 }, (lock) => {
    signal = lock.signal;
    return new Promise(() => {});
  });
  await until(() => signal !== null, 3000, 'the request granted');
  await new Promise((resolve, reject) => {
    const req = indexedDB.deleteDatabase(db);
    req.onsuccess = resolve;
    req.onerror = () => reject(req.error);
  });
  const why = await Promise.race([lapsed, sleep(5000).then(() => 'still waiting')]);
  eq(why?.name, 'UnavailableError', 'lapsed()');
  assert(why instanceof LockError && /deleted or upgraded/.test(why.message), `says so: ${why?.message}`);
  await rejects(request, 'AbortError', 'the request');
  eq(signal.reason?.name, 'UnavailableError', 'lock.signal.reason');
  eq(lease.signal.reason?.name, 'UnavailableError', 'lease.signal.reason (first read after)');
  await lease.release();
});

test('messages use the package\'s names: keepAlive and ioTimeout, a string ttl quoted', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { ttl: 500 });
  const e = await rejects(lease.keepAlive(), 'InvalidTtlError', 'keepAlive on a 500 ms ttl');
  assert(!/keep_alive|io_timeout/.test(e.message) && /keepAlive/.test(e.message), `no Rust names: ${e.message}`);
  await lease.release();
  const t = await rejects(locks.tryLock(name, { ttl: '5000' }), TypeError, 'a string ttl');
  assert(t.message.includes('"5000"'), `the string quoted: ${t.message}`);
});

test('a stolen request whose callback ends before it learns of the steal: its lock.signal aborts too', async ({ locks, name }) => {
  for (let round = 0; round < 5; round++) {
    const stolen = deferred();
    let lock = null;
    const victim = locks.request(name, { ttl: 20000 }, async (l) => {
      lock = l;
      await stolen.promise; // ends at once once the thief runs, racing the news of the steal
    });
    await until(() => lock !== null, 3000, 'the victim granted');
    const thief = locks.request(name, { steal: true }, () => stolen.resolve());
    await rejects(victim, 'AbortError', `round ${round}: the victim`);
    await thief;
    assert(lock.signal.aborted, `round ${round}: the victim's lock.signal aborted once its promise rejected`);
    eq(lock.signal.reason?.name, 'ExpiredError', `round ${round}: reason`);
  }
});

test('renew refuses a ttl a running keepAlive could not keep, and the keepAlive goes on', async ({ locks, name }) => {
  const lease = await locks.tryLock(name, { ttl: 5 * env.io });
  let ended = false;
  const alive = lease.keepAlive();
  alive.then(() => { ended = true; });
  await rejects(lease.renew(env.io / 2), 'InvalidTtlError', 'renew below twice the io timeout');
  await sleep(env.io);
  assert(!ended, 'the keepAlive still runs');
  eq(await lease.isHeld(), true, 'still held');
  await lease.renew(4 * env.io); // a ttl it can keep is fine
  eq(await lease.release(), true, 'release');
  eq(await alive, null, 'the keepAlive stopped by the release');
  const bare = await locks.tryLock(name, { ttl: 5 * env.io });
  await bare.renew(env.io / 2); // without a keepAlive, a short ttl is the caller's choice
  eq(await bare.release(), true, 'release');
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
