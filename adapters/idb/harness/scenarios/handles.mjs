// The handle across contexts: holder(name) vs info(), force_release reaching keep_alive,
// lapsed and with_lock in another context, dropped futures (try_lock, renew, acquire).

// `holder(name)` in another context reports exactly the handle's `info()`, also after a
// renewal whose future was dropped once sent, and after keep_alive stopped mid-renewal.
export async function holderVsInfo(env) {
  const { db, check, sleep } = env;
  const page = await env.page();
  const p = env.inPage(page, 'page');
  const w = await env.inWorker(page, 'w');
  const g = await w.run('tryLock', { db, name: 'job', owner: 'w', ttl: 4000, key: 'k' });
  const same = (h, i) => h && i && h.owner === i.owner && h.token === i.token && h.deadlineUs === i.deadlineUs && h.name === i.name;
  let h = (await p.run('holder', { db, name: 'job' })).holder;
  check('holder() in a page = info() of the handle in a worker, right after the grant', same(h, g.info), `${JSON.stringify(h)} vs ${JSON.stringify(g.info)}`);
  await w.run('renew', { key: 'k', ttl: 6000 });
  h = (await p.run('holder', { db, name: 'job' })).holder;
  let i = await w.run('info', { key: 'k' });
  check('... after renew', same(h, i), `${JSON.stringify(h)} vs ${JSON.stringify(i)}`);
  // keep_alive renews every 2 s of a 6 s ttl: read both after a renewal.
  await w.run('keepAliveStart', { key: 'k', every: 300 });
  await sleep(2500);
  h = (await p.run('holder', { db, name: 'job' })).holder;
  i = await w.run('info', { key: 'k' });
  check('... while keep_alive renews', same(h, i), `${JSON.stringify(h)} vs ${JSON.stringify(i)}`);
  await w.run('watchStop', { key: 'k', kind: 'ka' });
  const r = await w.run('renewDropped', { key: 'k', ttl: 9000 });
  await sleep(300);
  h = (await p.run('holder', { db, name: 'job' })).holder;
  i = await w.run('info', { key: 'k' });
  console.log(`   renew(9 s) sent and its future dropped (pending: ${r.pending}): holder ${JSON.stringify(h)}, info ${JSON.stringify(i)}`);
  check('... after a renew whose future was dropped once sent (the renewal committed)', same(h, i),
    `holder's deadline ${h && h.deadlineUs} vs info's ${i.deadlineUs} (${h && (h.deadlineUs - i.deadlineUs) / 1000} ms apart): the handle never learns a renewal that committed`);
  // keep_alive stopped right after it sent a renewal.
  const g2 = await w.run('tryLock', { db, name: 'job2', owner: 'w', ttl: 2400, key: 'k2' });
  let mismatches = 0;
  for (let n = 0; n < 5; n++) {
    await w.run('keepAliveStart', { key: 'k2', every: 100 });
    await sleep(100 + Math.random() * 10);
    await w.run('watchStop', { key: 'k2', kind: 'ka' });
    await sleep(100);
    const hh = (await p.run('holder', { db, name: 'job2' })).holder;
    const ii = await w.run('info', { key: 'k2' });
    if (!same(hh, ii)) mismatches++;
  }
  check('... after keep_alive futures dropped at random moments (5 tries)', mismatches === 0, `${mismatches} of 5 differ`);
  void g2;
}

// force_release from another context: the holder's keep_alive and lapsed() end promptly with
// Expired, its release answers false, with_lock's body is dropped, and the head waiter gets it.
export async function forceReleaseAcross(env) {
  const { db, check, sleep } = env;
  const p1 = await env.page();
  const p2 = await env.page();
  const op = env.inPage(p2, 'operator');
  const w = await env.inWorker(p1, 'holder');
  const v = await env.inWorker(p1, 'waiter');
  const g = await w.run('tryLock', { db, name: 'job', owner: 'holder', ttl: 20000, key: 'k' });
  await w.run('keepAliveStart', { key: 'k', every: 5000 });
  await w.run('lapsedStart', { key: 'k' });
  await v.run('acquireStart', { db, name: 'job', owner: 'waiter', ttl: 20000, key: 'v' });
  await sleep(200);
  const fr = await op.run('forceRelease', { db, name: 'job' });
  const ka = await w.run('watchResult', { key: 'k', kind: 'ka', ms: 2000 });
  const la = await w.run('watchResult', { key: 'k', kind: 'lapsed', ms: 2000 });
  const vg = await Promise.race([v.run('acquireFinish', { key: 'v' }), sleep(3000).then(() => null)]);
  console.log(`   force_release at ${fr.at} ended ${JSON.stringify(fr.ended)}; keep_alive: ${ka.outcome} (+${ka.at - fr.done} ms); lapsed: ${la.outcome} (+${la.at - fr.done} ms); waiter +${vg && vg.tGot - fr.done} ms`);
  check('force_release returns the lease it ended', fr.ended && fr.ended.token === g.token && fr.ended.owner === 'holder');
  check('the holder\'s keep_alive (in a worker of another page) ends with Expired within 500 ms', ka.kind === 'Expired' && ka.at - fr.done < 500, `${ka.outcome} after ${ka.at - fr.done} ms`);
  check('the holder\'s lapsed() ends with Expired within 500 ms', la.kind === 'Expired' && la.at - fr.done < 500, `${la.outcome} after ${la.at - fr.done} ms`);
  check('the head waiter gets the name with a larger token within 500 ms', vg && vg.token > g.token && vg.tGot - fr.done < 500, JSON.stringify(vg));
  const rel = await w.run('release', { key: 'k' });
  check('the old holder\'s release answers false', rel.released === false, JSON.stringify(rel));
  // with_lock with keep_alive in a worker; force_release from the other page: the body is dropped.
  const wl = w.run('withLock', { db, name: 'wl', owner: 'holder', ttl: 20000, keepAlive: 5000, hold: 8000 });
  await sleep(400);
  const fr2 = await op.run('forceRelease', { db, name: 'wl' });
  const out = await wl;
  console.log(`   with_lock: ${JSON.stringify(out).slice(0, 300)}`);
  check('with_lock (keep_alive) in another context: a force_release drops the body and returns Expired promptly',
    out.error && out.error.startsWith('Expired') && !out.bodyEnded && out.t1 - fr2.done < 500, `${out.t1 - fr2.done} ms after the force_release`);
  const wl2 = w.run('withLock', { db, name: 'wl2', owner: 'holder', ttl: 20000, hold: 8000 });
  await sleep(400);
  const fr3 = await op.run('forceRelease', { db, name: 'wl2' });
  const out2 = await wl2;
  check('with_lock (no keep_alive: raced against lapsed) likewise', out2.error && out2.error.startsWith('Expired') && !out2.bodyEnded && out2.t1 - fr3.done < 500, `${out2.t1 - fr3.done} ms; ${JSON.stringify(out2).slice(0, 200)}`);
}

// Futures dropped at every await point: try_lock never polled / polled once; acquire
// cancelled before its first step answers, while queued, right when handed the lease.
export async function droppedFutures(env) {
  const { db, check, sleep } = env;
  const page = await env.page();
  const p = env.inPage(page, 'page');
  const w = await env.inWorker(page, 'w');
  for (const polls of [0, 1, 2]) {
    const name = `try-${polls}`;
    await w.run('tryLockDropped', { db, name, owner: 'w', ttl: 30000, polls });
    await sleep(100);
    const h = await p.run('holder', { db, name });
    check(`try_lock dropped after ${polls} poll(s): the lease it was granted is given back`, h.holder === null, JSON.stringify(h.holder));
  }
  // acquire cancelled before its first step answered (name free: the step grants).
  const c1 = await w.run('acquireDroppedAtOnce', { db, name: 'acq-free', owner: 'w', ttl: 30000 });
  await sleep(150);
  const h1 = await p.run('holder', { db, name: 'acq-free' });
  check('acquire on a free name, dropped before its answer: nothing kept', h1.holder === null || !c1.wasRunning, `${JSON.stringify(h1.holder)} (was running: ${c1.wasRunning})`);
  // acquire queued, then dropped; then the holder releases: the next waiter is served at once.
  await p.run('tryLock', { db, name: 'q', owner: 'p', ttl: 30000, key: 'hq' });
  await w.run('acquireStart', { db, name: 'q', owner: 'w-dropped', ttl: 30000, key: 'a2' });
  await sleep(100);
  const w2 = await env.inWorker(page, 'w2');
  await w2.run('acquireStart', { db, name: 'q', owner: 'w2', ttl: 30000, key: 'a3' });
  await sleep(100);
  await w.run('acquireCancel', { key: 'a2' });
  await sleep(100);
  const snap = await p.run('snapshot', { db });
  check('a dropped queued acquire leaves the queue', snap.snap.waiting.filter((x) => x.name === 'q').map((x) => x.owner).join() === 'w2', JSON.stringify(snap.snap.waiting));
  const rel = await p.run('release', { key: 'hq' });
  const g3 = await Promise.race([w2.run('acquireFinish', { key: 'a3' }), sleep(2000).then(() => null)]);
  check('... and the next waiter is served at the release', g3 && g3.token && g3.tGot - rel.at < 300, JSON.stringify(g3));
  // acquire dropped right as the lease is handed to it (the release and the drop race).
  let leaked = 0;
  for (let n = 0; n < 8; n++) {
    const name = `race-${n}`;
    await p.run('tryLock', { db, name, owner: 'p', ttl: 30000, key: `h${n}` });
    await w.run('acquireStart', { db, name, owner: 'w', ttl: 30000, key: `r${n}` });
    await sleep(50);
    const relP = p.run('release', { key: `h${n}` });
    await sleep(n);
    await w.run('acquireCancel', { key: `r${n}` });
    await relP;
    await sleep(150);
    const h = await p.run('holder', { db, name });
    const fin = await w.run('acquireFinish', { key: `r${n}` });
    if (h.holder !== null && !(fin && fin.token)) leaked++;
    if (fin && fin.token) await w.run('release', { key: `r${n}` });
  }
  check('an acquire dropped while it is handed the lease gives it back (8 races)', leaked === 0, `${leaked} leases left held by a dropped acquire`);
}

// keep_alive's refusal and lapsed's reason, across contexts.
export async function keepAliveRules(env) {
  const { db, check, sleep } = env;
  const page = await env.page();
  const w = await env.inWorker(page, 'w');
  await w.run('open', { db, io: 1000 });
  await w.run('tryLock', { db, io: 1000, name: 'short', owner: 'w', ttl: 1999, key: 's' });
  await w.run('keepAliveStart', { key: 's', every: 0 });
  const r = await w.run('watchResult', { key: 's', kind: 'ka', ms: 200 });
  check('keep_alive on a ttl below 2 x io_timeout resolves at once with InvalidTtl', r.kind === 'InvalidTtl' && r.at - r.t0 < 100, r.outcome);
  await w.run('tryLock', { db, io: 1000, name: 'ok', owner: 'w', ttl: 2000, key: 'o' });
  await w.run('keepAliveStart', { key: 'o', every: 60000 });
  await sleep(3500);
  const h = await w.run('isHeld', { key: 'o' });
  check('keep_alive with an interval above half the ttl (60 s on 2 s) still keeps the lease (clamped to ttl/2)', h.held === true, JSON.stringify(h));
  await w.run('watchStop', { key: 'o', kind: 'ka' });
  await w.run('tryLock', { db, io: 1000, name: 'lap', owner: 'w', ttl: 700, key: 'l' });
  await w.run('lapsedStart', { key: 'l' });
  const l = await w.run('watchResult', { key: 'l', kind: 'lapsed', ms: 2000 });
  check('lapsed() resolves at the deadline with Expired', l.kind === 'Expired' && l.at - l.t0 >= 650 && l.at - l.t0 < 1200, `${l.outcome} after ${l.at - l.t0} ms`);
}
