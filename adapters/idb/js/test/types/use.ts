// A consumer of the package, type-checked (never run) by make test-js against the
// index.d.ts in the packed tarball: the types of the README's calls compile under strict.
import { AlkLocks, Fence, Lease, Lock, LockError, contextId, init } from 'alkstore-idb';

async function main(): Promise<void> {
  const locks = await AlkLocks.open('my-app', { ioTimeout: 500 });
  const n: number = await locks.request('a', (lock) => lock.token);
  const s: string | null = await locks.request('a', { ifAvailable: true }, (lock) => (lock ? lock.name : null));
  const b: boolean = await locks.request('a', { ttl: 5000, signal: new AbortController().signal }, async (lock: Lock) => {
    lock.signal.addEventListener('abort', () => {});
    return lock.deadline > 0;
  });
  const q = await locks.query();
  const tokens: (number | null)[] = q.held.map((h) => h.token).concat(q.pending.map((p) => p.token));
  const lease: Lease | null = await locks.acquire('b', { ttl: 3000, wait: 100, owner: 'me' });
  if (lease) {
    const signal: AbortSignal = lease.signal;
    const lost: LockError | null = await lease.keepAlive({ every: 500 });
    if (lost && lost.name === 'ExpiredError') console.log(lost.token);
    await lease.renew();
    const ok: boolean = await lease.release();
    console.log(ok);
  }
  const info = await locks.holder('b');
  if (info) console.log(info.owner, info.deadline);
  const fence = new Fence();
  const fine: boolean = fence.check(3);
  console.log(n, s, b, tokens, fine, fence.highest, contextId, locks.clientId);
  await init();
}

// Misuse the types refuse, as the code refuses it at run time (each line must not compile).
async function misuse(locks: AlkLocks): Promise<void> {
  // @ts-expect-error mode is 'exclusive' or 'shared'
  await locks.request('a', { mode: 'read' }, () => 0);
  // @ts-expect-error with ifAvailable the callback may get null
  await locks.request('a', { ifAvailable: true }, (lock: Lock) => lock.name);
  // @ts-expect-error a callback is required
  await locks.request('a');
  // @ts-expect-error the constructor is private: AlkLocks.open
  new AlkLocks();
  // @ts-expect-error a Lock is made by request()
  new Lock();
  const lease = await locks.tryLock('a');
  // @ts-expect-error the token is read-only
  if (lease) lease.token = 1;
  // @ts-expect-error ttl is a number of ms
  await locks.tryLock('a', { ttl: '1000' });
  console.log(new LockError('ExpiredError', 'lost', { token: 1 }).token);
}
main();
void misuse;
