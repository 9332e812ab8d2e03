// Contexts that go away or stop (terminated workers, pages navigated away, frozen pages),
// and IndexedDB failing under the store (deleted, upgraded elsewhere, foreign schema, quota).

export async function terminatedWorkers(env) {
  const { db, check, sleep } = env;
  const page = await env.page();
  const p = env.inPage(page, 'page');
  const other = env.inPage(await env.page(), 'other');
  // Mid-transaction: a worker cycling try_lock + release on one name (ttl 1.5 s) is
  // terminated at a random moment, five times; the name is free again within its ttl.
  const waits = [];
  for (let n = 0; n < 5; n++) {
    const w = await env.inWorker(page, `cycler${n}`);
    w.run('contend', { db, me: `cycler${n}`, names: ['tm'], durationMs: 5000, ttl: 1500, holdMs: 2, tryShare: 1 }).catch(() => {});
    await sleep(300 + Math.random() * 200);
    await w.terminate();
    const t0 = Date.now();
    await other.run('acquireStart', { db, name: 'tm', owner: 'other', ttl: 5000, wait: 4000, key: `tm${n}` });
    const g = await other.run('acquireFinish', { key: `tm${n}` });
    waits.push(g.token ? Date.now() - t0 : `${JSON.stringify(g)}`);
    if (g.token) await other.run('release', { key: `tm${n}` });
  }
  console.log(`   a worker terminated mid try_lock/release loop (ttl 1.5 s), 5 times: name free again after ${waits.join(', ')} ms`);
  check('a worker terminated mid-transaction leaves its name free within its ttl (+0.5 s)', waits.every((x) => typeof x === 'number' && x < 2000), waits.join(', '));
  // The head waiter's worker terminated: the next waiter is served once its ticket dies.
  await p.run('tryLock', { db, name: 'th', owner: 'page', ttl: 30000, key: 'th' });
  const w1 = await env.inWorker(page, 'head');
  await w1.run('acquireStart', { db, hb: 200, name: 'th', owner: 'head', ttl: 30000, key: 'h' });
  await sleep(100);
  await other.run('acquireStart', { db, hb: 200, name: 'th', owner: 'second', ttl: 30000, key: 's' });
  await sleep(100);
  await w1.terminate();
  await sleep(100);
  const rel = await p.run('release', { key: 'th' });
  const g = await Promise.race([other.run('acquireFinish', { key: 's' }), sleep(5000).then(() => null)]);
  console.log(`   head waiter's worker terminated 100 ms before the release (heartbeat 200 ms): the second waiter served ${g && g.tGot - rel.at} ms after the release`);
  check('a terminated head waiter is skipped within 3 heartbeats (+1 heartbeat)', g && g.token && g.tGot - rel.at < 900, JSON.stringify(g));
}

export async function navigatedAway(env) {
  const { db, check, sleep, url } = env;
  const q = await env.page();
  const qc = env.inPage(q, 'q');
  const other = env.inPage(await env.page(), 'other');
  // Holding (2 s ttl, no keep-alive): the page navigates away (a page holding a Web Lock does
  // not enter Chromium's back/forward cache: it is gone); its lease ends at once.
  const g = await qc.run('tryLock', { db, name: 'nav', owner: 'q', ttl: 2000, key: 'n' });
  await q.goto('about:blank');
  const t0 = Date.now();
  await other.run('acquireStart', { db, name: 'nav', owner: 'other', ttl: 5000, key: 'n' });
  const got = await other.run('acquireFinish', { key: 'n' });
  const late = got.tGot - g.info.deadlineUs / 1000;
  console.log(`   page navigated away holding a 2 s lease: the waiter got it ${(got.tGot - t0).toFixed(0)} ms after the navigation (${-late.toFixed(0)} ms before its deadline)`);
  check('a page navigated away while holding: its lease goes to a waiter at once, long before its deadline', got.token > g.token && late < -1000, `${late} ms`);
  await other.run('release', { key: 'n' });
  // Waiting as head (heartbeat 200 ms), then navigated to another page of the origin; back.
  const q2 = await env.page();
  const q2c = env.inPage(q2, 'q2');
  await other.run('tryLock', { db, name: 'wait', owner: 'other', ttl: 30000, key: 'w' });
  await q2c.run('acquireStart', { db, hb: 200, name: 'wait', owner: 'q2', ttl: 30000, key: 'w' });
  await sleep(100);
  const third = await env.inWorker(await env.page(), 'third');
  await third.run('acquireStart', { db, hb: 200, name: 'wait', owner: 'third', ttl: 30000, key: 'w' });
  await sleep(100);
  await q2.goto(`${url}/steps.html?elsewhere`);
  await q2.waitForFunction(() => window.ready === true);
  await sleep(50);
  const rel = await other.run('release', { key: 'w' });
  const tg = await Promise.race([third.run('acquireFinish', { key: 'w' }), sleep(5000).then(() => null)]);
  console.log(`   head waiter's page navigated away: the next waiter (a worker) served ${tg && tg.tGot - rel.at} ms after the release`);
  check('a page navigated away while waiting: its ticket is skipped (within 3 heartbeats)', tg && tg.token && tg.tGot - rel.at < 900, JSON.stringify(tg));
  await q2.goBack();
  await sleep(500);
  const restored = await q2.evaluate(() => typeof window.run === 'function').catch(() => false);
  const snap = await other.run('snapshot', { db });
  console.log(`   back to the waiting page: restored from the back/forward cache: ${restored}; snapshot ${JSON.stringify(snap.snap)}`);
  check('after going back, the state is consistent (one holder)', snap.snap.held.filter((h) => h.name === 'wait').length <= 1);
}

// A holder in a hidden tab: Chrome aligns its timers to whole seconds (simulated by
// overriding setTimeout in the page). With the smallest ttl keep_alive accepts (2 s for the
// default 1 s io_timeout), is the lease kept?
export async function hiddenTabHolder(env) {
  const { db, check, sleep } = env;
  const q = await env.page();
  const qc = env.inPage(q, 'hidden-page');
  const other = env.inPage(await env.page(), 'other');
  await qc.run('throttleTimers', { alignMs: 1000 });
  const g = await qc.run('tryLock', { db, name: 'hid', owner: 'page', ttl: 2000, key: 'k' });
  await qc.run('keepAliveStart', { key: 'k', every: 0 });
  await other.run('acquireStart', { db, name: 'hid', owner: 'other', ttl: 5000, wait: 6000, key: 'p' });
  const o = await other.run('acquireFinish', { key: 'p' });
  const ka = await qc.run('watchResult', { key: 'k', kind: 'ka', ms: 10 });
  console.log(`   timers aligned to 1 s in the holder's page, ttl 2 s with keep_alive: the other context ${o.token ? `took over after ${o.tGot - g.t1} ms` : 'waited 6 s in vain'}; keep_alive: ${ka.outcome}`);
  check('a holder in a (simulated) hidden tab keeps a 2 s lease alive (renewals at whole seconds)', !o.token && ka.outcome === 'pending', JSON.stringify(o).slice(0, 120));
  // Intensive throttling (once a minute, after 5 min hidden), simulated with 10 s alignment:
  // the lease is lost (documented), and keep_alive must say so when it runs again.
  await qc.run('watchStop', { key: 'k', kind: 'ka' });
  await qc.run('release', { key: 'k' });
  await qc.run('throttleTimers', { alignMs: 10000 });
  const g2 = await qc.run('tryLock', { db, name: 'hid2', owner: 'page', ttl: 2000, key: 'k2' });
  await qc.run('keepAliveStart', { key: 'k2', every: 0 });
  await other.run('acquireStart', { db, name: 'hid2', owner: 'other', ttl: 5000, wait: 6000, key: 'q' });
  const o2 = await other.run('acquireFinish', { key: 'q' });
  const ka2 = await qc.run('watchResult', { key: 'k2', kind: 'ka', ms: 11000 });
  console.log(`   timers aligned to 10 s: takeover ${o2.token ? `after ${o2.tGot - g2.t1} ms` : 'none'}; the holder's keep_alive: ${ka2.outcome} (+${ka2.at - (o2.tGot || 0)} ms after the takeover)`);
  check('intensive throttling: the lease goes to another context (at the deadline after the last renewal)', !!o2.token);
  check('... and the throttled holder\'s keep_alive ends with Expired when its timer runs', ka2.kind === 'Expired', ka2.outcome);
  await qc.run('unthrottleTimers');
}

// A page that blocks its thread right after sending a transaction: every context of the
// origin waits (documented); their operations answer Unavailable at their io_timeout, and a
// keep_alive elsewhere gives up on the first refused renewal.
export async function stalledPage(env) {
  const { db, check, sleep } = env;
  const q = await env.page();
  const qc = env.inPage(q, 'stalling-page');
  const p2 = await env.page();
  const other = env.inPage(p2, 'other');
  const kw = await env.inWorker(p2, 'keeper');
  const k = await kw.run('tryLock', { db, name: 'kept', owner: 'keeper', ttl: 9000, key: 'k' });
  await kw.run('keepAliveStart', { key: 'k', every: 1000 });
  const stall = qc.run('sendThenBusy', { db, name: 'x', owner: 'q', ttl: 5000, ms: 3000 });
  await sleep(200);
  const t = await other.run('tryLock', { db, name: 'y', owner: 'o', ttl: 5000 });
  const s = await stall;
  const ka = await kw.run('watchResult', { key: 'k', kind: 'ka', ms: 10 });
  const h = await other.run('holder', { db, name: 'kept' });
  console.log(`   page stalled 3 s after sending: another context's try_lock answered ${t.error ? t.error.slice(0, 60) : 'a grant'} after ${t.t1 - t.t0} ms; the keep_alive elsewhere: ${ka.outcome.slice(0, 90)}; the kept lease: ${h.holder ? 'still held' : 'free'}`);
  check('other contexts answer Unavailable at their io_timeout while a page stalls inside a transaction', t.error && t.error.startsWith('Unavailable') && t.t1 - t.t0 < 1600);
  check('a keep_alive in another context survives a 3 s stall of one page (ttl 9 s, renewing every 1 s, io_timeout 1 s): "no lease is lost"', ka.outcome === 'pending',
    `keep_alive ended with ${ka.outcome.slice(0, 60)}... while its lease had ${h.holder ? ((h.holder.deadlineUs / 1000 - ka.at) / 1000).toFixed(1) : '?'} s left (holder after the stall: ${h.holder ? h.holder.owner : 'none'})`);
  void s; void k;
}

// The database deleted (site data cleared, hostile code) while a context holds a lease.
export async function deletedUnderHolder(env) {
  const { db, check, sleep } = env;
  const page = await env.page();
  const h = env.inPage(page, 'hostile');
  const a = await env.inWorker(page, 'holder');
  const b = env.inPage(await env.page(), 'other');
  const g = await a.run('tryLock', { db, name: 'job', owner: 'a', ttl: 20000, key: 'k' });
  await a.run('lapsedStart', { key: 'k' });
  await a.run('keepAliveStart', { key: 'k', every: 3000 });
  await b.run('open', { db });
  const del = await h.run('rawDeleteDb', { db });
  const gb = await b.run('tryLock', { db, name: 'job', owner: 'b', ttl: 20000, key: 'k' });
  const la = await a.run('watchResult', { key: 'k', kind: 'lapsed', ms: 1000 });
  const ka = await a.run('watchResult', { key: 'k', kind: 'ka', ms: 3500 });
  console.log(`   deleted: ${JSON.stringify(del)}; b's try_lock: ${gb ? `granted, token ${gb.token} (a's ${g.token})` : 'busy'}; a's lapsed() after 1 s: ${la.outcome}; a's keep_alive: ${ka.outcome}`);
  check('after the database was deleted, a new grant has a larger token than the lost lease', !gb || gb.token > g.token);
  if (gb && gb.token) {
    check('the holder whose lease vanished with the database is told by lapsed() (another context holds the name)', la.outcome !== 'pending', `lapsed() still pending 1 s after b's grant (resolves only at the 20 s deadline)`);
    check('... and by keep_alive at its next renewal, saying the lease went with its database', ka.kind === 'Unavailable' && /gone with its database/.test(ka.outcome), ka.outcome);
    check('... lapsed() says so too (not "released or force-released before its deadline")', la.kind === 'Unavailable' && /deleted or upgraded/.test(la.outcome), la.outcome);
  }
}

// Another connection upgrades the database (version 2, adding a store of its own; then
// version 3, dropping ours); databases of our name made by other code.
export async function schemaChanges(env) {
  const { db, check } = env;
  const page = await env.page();
  const h = env.inPage(page, 'hostile');
  const a = await env.inWorker(page, 'a');
  const g = await a.run('tryLock', { db, name: 'job', owner: 'a', ttl: 20000, key: 'k' });
  await a.run('keepAliveStart', { key: 'k', every: 1000 });
  const up = await h.run('rawUpgrade', { db, version: 2 });
  const t = await a.run('tryLock', { db, name: 'other', owner: 'a', ttl: 5000, key: 'o' });
  const ka = await a.run('watchResult', { key: 'k', kind: 'ka', ms: 2500 });
  const held = await a.run('isHeld', { key: 'k' });
  console.log(`   upgraded to v2 elsewhere (our stores kept): ${JSON.stringify(up)}; try_lock: ${JSON.stringify(t).slice(0, 100)}; keep_alive: ${ka.outcome}; isHeld ${JSON.stringify(held)}`);
  check('after an upgrade elsewhere that kept our stores, the store goes on at the new version (a grant, not an error)', t && t.token > g.token, JSON.stringify(t));
  check('... and the holder keeps its lease (keep_alive renewing, isHeld true)', ka.outcome === 'pending' && held.held === true, `${ka.outcome}; ${JSON.stringify(held)}`);
  const drop = await h.run('rawDropStores', { db, version: 3 });
  const ka2 = await a.run('watchResult', { key: 'k', kind: 'ka', ms: 1500 });
  const t2 = await a.run('tryLock', { db, name: 'job', owner: 'b', ttl: 5000, key: 'j' });
  console.log(`   v3 elsewhere dropped our stores: ${JSON.stringify(drop)}; the holder's keep_alive: ${ka2.outcome}; try_lock on its name: ${JSON.stringify(t2).slice(0, 100)}`);
  check('... an upgrade that drops our stores: the holder learns its lease is gone with its database (keep_alive says so)', ka2.kind === 'Unavailable' && /gone with its database/.test(ka2.outcome), ka2.outcome);
  check('... and the stores are made again (a grant with a larger token)', t2 && t2.token > g.token, JSON.stringify(t2));
  // Databases of our name made by other code, at version 1.
  const cases = [
    ['no stores', [], true],
    ['locks keyed by id, no meta', [{ name: 'locks', keyPath: 'id' }], false],
    ['locks and meta without key paths', [{ name: 'locks' }, { name: 'meta' }], false],
    ['meta keyed by id', [{ name: 'locks', keyPath: 'name' }, { name: 'meta', keyPath: 'id' }], false],
  ];
  for (const [label, stores, usable] of cases) {
    const fdb = `${db}-foreign-${label.replace(/\W+/g, '-')}`;
    await h.run('rawForeign', { db: fdb, stores });
    const o = await a.run('open', { db: fdb });
    const r = await a.run('tryLock', { db: fdb, name: 'job', owner: 'a', ttl: 5000 });
    const s = await a.run('snapshot', { db: fdb });
    console.log(`   foreign schema (${label}): open ${JSON.stringify(o)}; try_lock ${JSON.stringify(r).slice(0, 200)}; snapshot ${JSON.stringify(s).slice(0, 120)}`);
    if (usable) {
      check(`an empty database of our name (${label}, as indexedDB.open(name) makes): our stores are made with the next version, and it works`, o.ok && r && r.token > 0, JSON.stringify(r));
    } else {
      check(`foreign schema (${label}): Unavailable, saying the database was not made by alkstore-idb, not a grant and not a panic`,
        o.error && /not made by alkstore-idb/.test(o.error) && r && r.error && !r.token, `${o.error}; ${JSON.stringify(r).slice(0, 100)}`);
    }
  }
}

// The origin's storage quota exhausted (Chrome: Storage.overrideQuotaForOrigin).
export async function quotaExceeded(env) {
  const { db, check, url } = env;
  const page = await env.page();
  const a = env.inPage(page, 'a');
  const cdp = await env.browser.context.newCDPSession(page);
  await a.run('open', { db });
  const g = await a.run('tryLock', { db, name: 'job', owner: 'a', ttl: 20000, key: 'k' });
  await cdp.send('Storage.overrideQuotaForOrigin', { origin: url, quotaSize: 1 });
  const filler = JSON.stringify(await a.run('rawFill', { db: `${db}-filler`, mb: 4 }));
  const t = await a.run('tryLock', { db, name: 'other', owner: 'a', ttl: 5000, key: 'o' });
  const r = await a.run('renew', { key: 'k', ttl: 20000 });
  const rel = await a.run('release', { key: 'k' });
  console.log(`   quota 0: ${filler}; try_lock ${JSON.stringify(t).slice(0, 200)}; renew ${JSON.stringify(r).slice(0, 200)}; release ${JSON.stringify(rel).slice(0, 200)}`);
  if (!filler.includes('error')) {
    console.log('   (not simulated: Chromium accepted a 4 MB write under a 1-byte quota override; nothing checked)');
  } else {
    check('with the quota exhausted, writes answer Unavailable or succeed, never panic', [t, r, rel].every((x) => x && (x.error ? x.error.startsWith('Unavailable') : true)));
  }
  await cdp.send('Storage.overrideQuotaForOrigin', { origin: url });
  const t2 = await a.run('tryLock', { db, name: 'after', owner: 'a', ttl: 5000, key: 'z' });
  check('quota back: the store works again', t2 && t2.token, JSON.stringify(t2));
}

// Memory and row growth under churn: the queue of a name held for long keeps the tickets of
// contexts that went away; rows of names whose holder went away stay.
export async function rowGrowth(env) {
  const { db, check, sleep } = env;
  const page = await env.page();
  const leader = env.inPage(page, 'leader');
  await leader.run('tryLock', { db, name: 'leader', owner: 'leader', ttl: 3000, key: 'l' });
  await leader.run('keepAliveStart', { key: 'l', every: 0 });
  const N = 24;
  for (let i = 0; i < N; i++) {
    const w = await env.inWorker(page, `tab${i}`);
    await w.run('acquireStart', { db, hb: 100, name: 'leader', owner: `tab${i}`, ttl: 3000, key: 'x' });
    await w.terminate();
  }
  const live = await env.inWorker(page, 'live-waiter');
  await live.run('acquireStart', { db, hb: 100, name: 'leader', owner: 'live', ttl: 3000, key: 'x' });
  await sleep(3000); // many renewals and heartbeats later
  const row = await leader.run('rawGet', { db, store: 'locks', key: 'leader' });
  const snap = await leader.run('snapshot', { db });
  console.log(`   a leader kept alive; ${N} waiters' workers terminated; 3 s later: the row's queue holds ${row.queue.length} tickets, snapshot shows ${snap.snap.waiting.length} waiter(s)`);
  check('tickets of contexts that went away are pruned while the name stays held', row.queue.length <= 2,
    `${row.queue.length} tickets in the row (${row.queue.length - snap.snap.waiting.length} dead), read and rewritten by every renewal and heartbeat`);
  // Names whose holder went away (detached, 100 ms leases).
  for (let i = 0; i < 30; i++) {
    await leader.run('tryLock', { db, name: `gone/${i}`, owner: 'x', ttl: 100, key: 'g' });
    await leader.run('detach', { key: 'g' });
  }
  await sleep(500);
  const rows = await leader.run('rawGet', { db, store: 'locks' });
  console.log(`   30 names whose 100 ms leases lapsed unreleased: ${rows.filter((r) => r.name.startsWith('gone/')).length} rows remain until something touches them`);
  await leader.run('snapshot', { db });
  const rows2 = await leader.run('rawGet', { db, store: 'locks' });
  check('rows of lapsed, unused names are cleaned by snapshot()', rows2.filter((r) => r.name.startsWith('gone/')).length === 0);
}

// Memory under churn: wasm memory and the JS heap of a context after many cycles.
export async function memoryChurn(env) {
  const { db, check } = env;
  const page = await env.page();
  const p = env.inPage(page, 'page');
  const cdp = await env.browser.context.newCDPSession(page);
  await p.run('churn', { db, me: 'p', rounds: 300 });
  await cdp.send('HeapProfiler.collectGarbage');
  const m0 = await p.run('memory');
  await p.run('churn', { db, me: 'p', rounds: 3000 });
  await cdp.send('HeapProfiler.collectGarbage');
  const m1 = await p.run('memory');
  const rows = await p.run('rawGet', { db, store: 'locks' });
  console.log(`   3000 rounds (try_lock, a dropped queued acquire, keep_alive and lapsed started and stopped, release): wasm ${m0.wasmBytes} -> ${m1.wasmBytes} bytes, JS heap ${m0.jsHeap} -> ${m1.jsHeap}; rows left ${rows.length}`);
  check('no growth of wasm memory under churn', m1.wasmBytes <= m0.wasmBytes + 65536 * 2, `${m1.wasmBytes - m0.wasmBytes} bytes more`);
  check('the JS heap stays within 2 MB under churn', m1.jsHeap - m0.jsHeap < 2e6, `${m1.jsHeap - m0.jsHeap} bytes more`);
  check('no rows left behind by the churn', rows.length === 0, `${rows.length} rows`);
}

// A bounded wait while another context stalls the origin: the answer comes by wait + io_timeout.
export async function boundedWaitUnderStall(env) {
  const { db, check, sleep } = env;
  const page = await env.page();
  const h = env.inPage(page, 'hostile');
  const w = await env.inWorker(page, 'w');
  const o = env.inPage(await env.page(), 'holder');
  await o.run('tryLock', { db, name: 'job', owner: 'o', ttl: 30000, key: 'k' });
  await w.run('acquireStart', { db, io: 1000, name: 'job', owner: 'w', ttl: 5000, wait: 800, key: 'a' });
  await sleep(300);
  await h.run('rawStallStart', { db, ms: 4000 });
  const r = await w.run('acquireFinish', { key: 'a' });
  await h.run('rawStallFinish');
  console.log(`   acquire(wait 800 ms, io_timeout 1 s), the origin stalled from +300 ms for 4 s: ${r.error ? r.error.slice(0, 70) : r.none ? 'None' : 'granted'} after ${r.tGot - r.tSent} ms`);
  check('a bounded wait answers by wait + io_timeout (1.8 s) even when the origin stalls', r.tGot - r.tSent <= 1900, `${r.tGot - r.tSent} ms`);
}

// The connection closed under the store (another connection's upgrade, aborted: the data
// stays): a handle dropped then, or a release whose future is dropped, still releases?
export async function dropWhileClosed(env) {
  const { db, check, sleep } = env;
  const page = await env.page();
  const h = env.inPage(page, 'hostile');
  const a = await env.inWorker(page, 'a');
  const b = env.inPage(await env.page(), 'b');
  await a.run('tryLock', { db, name: 'job', owner: 'a', ttl: 60000, key: 'k' });
  const up = await h.run('rawAbortedUpgrade', { db, version: 2 });
  await sleep(100);
  await a.run('dropHandle', { key: 'k' });
  await sleep(500);
  const hold = await b.run('holder', { db, name: 'job' });
  console.log(`   upgrade elsewhere, aborted (${JSON.stringify(up)}); then a's handle dropped: holder 0.5 s later ${JSON.stringify(hold.holder)}`);
  check('an IdbLock dropped while the connection was closed under the store releases (the docs: "the release transaction is sent at once")',
    hold.holder === null, `"job" stays held by ${hold.holder && hold.holder.owner} until its 60 s deadline: the release was never sent`);
  const g = await a.run('tryLock', { db, name: 'job', owner: 'a', ttl: 60000, key: 'k2' });
  check('the store works again after the close (opened again by the next operation)', g === null || (g && !g.error), JSON.stringify(g).slice(0, 120));
}
