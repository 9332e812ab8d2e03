// Contention with more contexts, names and tighter ttls than the project's harness uses:
// exclusion (from the engine's own grant times, and a clock-free probe), strictly increasing
// tokens, FIFO for unbounded waiters, futures dropped at random, snapshot consistency.

import { contextsFor as contexts, analyseGrants as analyse } from './shared.mjs';

export async function contendMany(env) {
  const { db, check } = env;
  const all = await contexts(env, 4, 3);
  const names = ['m/a', 'm/b', 'm/c', 'm/d', 'm/e', 'm/f'];
  const watcher = all[0];
  const snaps = watcher.run('snapshots', { db, durationMs: 7000, everyMs: 60 });
  const results = await Promise.all(all.slice(1).map((c) => c.run('contend',
    { db, me: c.label, names, durationMs: 8000, ttl: 10000, holdMs: 6, tryShare: 0.2, probe: true })));
  const recs = results.flatMap((r) => r.records);
  const errors = results.flatMap((r) => r.errors);
  console.log(`   ${all.length - 1} contending contexts (4 pages, 12 workers), ${names.length} names, 8 s: ${recs.length} grants, ` +
    `${results.reduce((s, r) => s + r.busy, 0)} busy, ${errors.length} errors ${errors.slice(0, 2).join(' | ')}; per context ${results.map((r) => r.records.length).join(',')}`);
  check('16 contexts: no error', errors.length === 0, errors.slice(0, 3).join(' | '));
  check('16 contexts: every release found its lease live', recs.every((r) => r.released === true));
  check('16 contexts: the clock-free probe saw no overlap', results.every((r) => r.overlaps === 0), `${results.reduce((s, r) => s + r.overlaps, 0)} overlaps`);
  analyse(check, '16 contexts', recs, names);
  // Snapshots taken meanwhile: each context does one thing at a time, so an owner appears at
  // most once per snapshot; every lease shown is one of the grants, live at that moment.
  const s = await snaps;
  let dupOwners = 0; let unknown = 0; let notLive = 0; let errs = 0;
  const notLiveWhy = [];
  const byToken = new Map(recs.map((r) => [r.token, r]));
  for (const snap of s) {
    if (snap.error) { errs++; continue; }
    const owners = [...snap.held.map((h) => h.owner), ...snap.waiting.map((w) => w.owner)];
    if (new Set(owners).size !== owners.length) dupOwners++;
    for (const h of snap.held) {
      const r = byToken.get(h.token);
      if (!r || r.name !== h.name || r.me !== h.owner) { unknown++; continue; }
      // IndexedDB orders transactions as the browser process receives their creation, and
      // on a loaded machine a worker's message can arrive some ms late: a release sent a few
      // ms before another context's snapshot may still come after it. 25 ms of slack there;
      // grants are on the engine's own clock, never ahead of Date.now().
      if (r.deadlineUs - r.ttlUs > snap.t1 + 1000 || r.tRel < snap.t0 - 25000) {
        notLive++;
        notLiveWhy.push(r.deadlineUs - r.ttlUs > snap.t1 + 1000
          ? `granted at ${r.deadlineUs - r.ttlUs}, after the snapshot ended (${snap.t1})`
          : `released from ${r.tRel}, before the snapshot began (${snap.t0})`);
      }
    }
  }
  console.log(`   ${s.length} snapshots meanwhile, ${s.reduce((n, x) => n + (x.waiting ? x.waiting.length : 0), 0)} waiters seen in all`);
  check('snapshots under contention: no owner twice (held + waiting)', dupOwners === 0, `${dupOwners} snapshots`);
  check('snapshots under contention: every lease shown is a grant live at that moment', unknown === 0 && notLive === 0 && errs === 0, `${unknown} unknown, ${notLive} not live, ${errs} errors; ${notLiveWhy.slice(0, 2).join('; ')}`);
}

export async function contendTightTtl(env) {
  const { db, check } = env;
  const all = await contexts(env, 3, 4);
  const names = ['t/a', 't/b', 't/c', 't/d', 't/e', 't/f', 't/g', 't/h'];
  const results = await Promise.all(all.map((c) => c.run('contend',
    { db, hb: 100, me: c.label, names, durationMs: 6000, ttl: 25, holdMs: 40, tryShare: 0.25 })));
  const recs = results.flatMap((r) => r.records);
  const errors = results.flatMap((r) => r.errors);
  const lapsed = recs.filter((r) => r.released === false).length;
  console.log(`   ${all.length} contexts, ${names.length} names, ttl 25 ms, holds up to 40 ms, heartbeat 100 ms: ${recs.length} grants (${lapsed} lapsed before their release), ${errors.length} errors`);
  check('tight ttls: no error', errors.length === 0, errors.slice(0, 3).join(' | '));
  analyse(check, 'tight ttls', recs, names, { fifo: false });
}

export async function contendWithDrops(env) {
  const { db, check, sleep } = env;
  const all = await contexts(env, 3, 3);
  const names = ['d/a', 'd/b', 'd/c'];
  const results = await Promise.all(all.map((c) => c.run('contend',
    { db, me: c.label, names, durationMs: 6000, ttl: 20000, holdMs: 5, tryShare: 0.1, cancelShare: 0.4, cancelMaxMs: 25 })));
  const recs = results.flatMap((r) => r.records);
  const cancelled = results.reduce((s, r) => s + r.cancelled, 0);
  const late = results.reduce((s, r) => s + r.cancelledLate, 0);
  console.log(`   ${all.length} contexts, acquires dropped at random (<25 ms): ${cancelled} dropped, ${late} resolved first; ${recs.length} grants`);
  check('dropped acquires: no error', results.every((r) => r.errors.length === 0), results.flatMap((r) => r.errors).slice(0, 3).join(' | '));
  analyse(check, 'dropped acquires', recs, names, { fifo: false });
  await sleep(300);
  const snap = await all[0].run('snapshot', { db });
  check('after the run (20 s ttls): no lease and no waiter left behind by a dropped acquire', snap.snap.held.length === 0 && snap.snap.waiting.length === 0,
    JSON.stringify(snap.snap).slice(0, 300));
}

export async function fifoExactMany(env) {
  const { db, check, sleep } = env;
  const all = await contexts(env, 3, 4);
  const holder = all[0];
  const first = await holder.run('tryLock', { db, name: 'fifo', owner: 'holder', ttl: 30000, key: 'h' });
  const order = all.slice(1);
  for (let i = 0; i < order.length; i++) {
    await order[i].run('acquireStart', { db, name: 'fifo', owner: order[i].label, ttl: 30000, key: 'f' });
    await sleep(40);
  }
  const snap = await holder.run('snapshot', { db });
  const queued = snap.snap.waiting.map((w) => w.owner).join();
  check('snapshot lists the 14 waiters in arrival order', queued === order.map((c) => c.label).join(), queued);
  await holder.run('release', { key: 'h' });
  const served = [];
  for (const c of order) {
    const g = await c.run('acquireFinish', { key: 'f' });
    served.push({ me: c.label, token: g.token });
    await c.run('release', { key: 'f' });
  }
  const byToken = [...served].sort((a, b) => a.token - b.token).map((s) => s.me).join();
  check('14 waiters in 14 contexts (3 pages, 12 workers) are served in arrival order', byToken === order.map((c) => c.label).join(), byToken);
  check('each with a larger token than the first holder', served.every((s) => s.token > first.token));
}
