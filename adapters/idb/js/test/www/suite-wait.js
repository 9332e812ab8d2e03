// Waiting requests: signal (aborting a wait) and steal (taking a held lock).
import { test, spec, assert, eq, rejects, sleep, never, deferred, until, heldNow } from './kit.js';

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
  // One transaction ends the holder's lease and grants the thief; the queue is served after.
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
