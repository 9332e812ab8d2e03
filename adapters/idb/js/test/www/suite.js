// The package's own suite, run unchanged in a window and in a dedicated worker: the Web
// Locks spec's rules for `request` and `query` in exclusive mode (modelled on the Web
// Platform Tests' web-locks tests: argument checks and their order, the DOMException names,
// callback results, ifAvailable, signal, steal, names, the query snapshot and its order),
// then what AlkLocks adds (ttl, keep-alive, tokens, lock.signal), the lease API below it
// (tryLock, acquire, Lease, holder, forceRelease, Fence), and misuse (suite-hostile.js).
// Each module registers its tests in kit.js's list when imported, in this order.
import { AlkLocks } from '/pkg/index.js';
import { AssertionError, env, sleep, tests } from './kit.js';
import './suite-request.js';
import './suite-wait.js';
import './suite-query.js';
import './suite-lease.js';
import './suite-hostile.js';

// ---- the runner ---------------------------------------------------------------------------

/**
 * Runs every test (or those whose name includes `only`) on database `db` with this io
 * timeout (ms; the ttls of the keep-alive tests follow it): [{ name, ok, error, ms }].
 * With `control`, runs the tests of the spec alone against the browser's navigator.locks.
 */
export async function runAll({ db, label, only, ioTimeout, control }) {
  env.io = ioTimeout ?? 1000;
  const locks = control ? navigator.locks : await AlkLocks.open(db, { ioTimeout: env.io });
  const results = [];
  for (const [i, t] of tests.entries()) {
    if (only && !t.name.includes(only)) continue;
    if (control && !t.spec) continue;
    const name = `${label}/t${i}`;
    const t0 = performance.now();
    try {
      await Promise.race([
        t.fn({ locks, name, db, label }),
        // Generous: a loaded machine (make test runs this beside compilers and the other
        // browser suite) makes the 300-request test take several times its usual 2-4 s.
        sleep(60000).then(() => { throw new AssertionError('timed out after 60 s'); }),
      ]);
      results.push({ name: t.name, ok: true, ms: performance.now() - t0 });
    } catch (e) {
      results.push({ name: t.name, ok: false, error: String(e?.stack ?? e), ms: performance.now() - t0 });
    }
  }
  return results;
}
