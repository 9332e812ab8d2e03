// The package's tests across contexts (2 pages and 4 dedicated workers, driven by test.mjs):
// contention on request(), query() of other contexts' locks and its order, steal in one
// transaction, FIFO, signal, ifAvailable, presence, a closed page and a terminated worker
// taken over at once, and what a call costs.

/** Runs the scenarios; `check(what, ok, detail)` records each outcome. */
export async function runScenarios({ pages, p0, p1, w, db, ioTimeout, check, sleep, openPage, inPage, inWorker }) {
  // 2. Contention: six contexts request three names for a few seconds.
  const all = [p0, p1, ...w];
  const names = ['c/a', 'c/b', 'c/c'];
  const durationMs = Number(process.env.ALK_CONTEND_MS ?? 4000);
  const results = await Promise.all(all.map((c) => c.run('contend', { db, names, durationMs, holdMs: 4, ifAvailableShare: 0.25 })));
  const recs = results.flatMap((r) => r.records);
  console.log(`contention: ${all.length} contexts (2 pages, 4 dedicated workers), ${names.length} names, ${durationMs} ms: ` +
    `${recs.length} grants (${recs.filter((r) => r.mode === 'wait').length} waited, ${recs.filter((r) => r.mode === 'ifAvailable').length} ifAvailable; ` +
    `${results.reduce((s, r) => s + r.busy, 0)} ifAvailable busy), per context: ${results.map((r, i) => `${all[i].label} ${r.records.length}`).join(', ')}`);
  check('contention: every context got grants', results.every((r) => r.records.length > 0));
  const tokens = recs.map((r) => r.token);
  check('contention: tokens are unique across names and contexts', new Set(tokens).size === tokens.length);
  check('contention: tokens are safe integers', tokens.every(Number.isSafeInteger));
  check('contention: no lease was lost (no lock.signal aborted)', recs.every((r) => !r.aborted));
  let overlaps = 0;
  let outOfOrder = 0;
  for (const name of names) {
    const byToken = recs.filter((r) => r.name === name).sort((a, b) => a.token - b.token);
    for (let i = 1; i < byToken.length; i++) {
      if (byToken[i - 1].tRel > byToken[i].tGot + 1) overlaps++;
      if (byToken[i - 1].tGot > byToken[i].tGot) outOfOrder++;
    }
  }
  check('contention: no two callbacks on a name overlap in time', overlaps === 0, `${overlaps} overlaps`);
  check('contention: tokens increase in grant order on every name', outOfOrder === 0, `${outOfOrder} out of order`);

  // 3. query() sees another context's held lock and pending request, with their clientIds.
  const ids = await Promise.all(all.map((c) => c.run('clientId', { db })));
  check('each context has a clientId of its own', new Set(ids).size === ids.length, ids.join(' '));
  const held = await w[0].run('hold', { db, name: 'x/query' });
  await p1.run('startWait', { db, name: 'x/query' });
  await sleep(100);
  const q = await p0.run('query', { db });
  const h = q.held.find((e) => e.name === 'x/query');
  const pend = q.pending.filter((e) => e.name === 'x/query');
  check('query() in one page shows a worker\'s lock and another page\'s request, by clientId',
    h?.clientId === ids[2] && h?.token === held.token && pend.length === 1 && pend[0].clientId === ids[1],
    JSON.stringify({ held: h, pending: pend }));

  // 4. A page steals the worker's lock: the worker's request rejects with AbortError and its
  //    lock.signal aborts; the waiting page gets it after the thief, with a larger token.
  const thief = await p0.run('steal', { db, name: 'x/query' });
  const victim = await w[0].run('outcome', { name: 'x/query', waitMs: 3000 });
  check('steal across contexts: the thief gets a larger token', thief.token > held.token, `${thief.token} > ${held.token}`);
  check('steal across contexts: the holder\'s request rejects with AbortError and its signal aborts',
    victim.rejected === 'AbortError' && victim.aborted && victim.reason === 'ExpiredError', JSON.stringify(victim));
  // The steal is one transaction: the request queued behind the holder is served after the
  // thief, with a larger token (never handed the name on the way).
  const after = await p1.run('finishWait', { name: 'x/query' });
  check('steal across contexts: the queued request is granted after the thief, with a larger token',
    after.ok && after.ok.token > thief.token, after.ok ? `${after.ok.token} > ${thief.token}` : after.error);

  // 5. FIFO across contexts: five requests arrive one by one while a worker holds.
  const first0 = await w[1].run('tryLock', { db, name: 'x/fifo', ttl: 30000 });
  const order = [w[0], p1, w[2], p0, w[3]];
  for (const c of order) {
    await c.run('startWait', { db, name: 'x/fifo', holdMs: 10 });
    await sleep(120);
  }
  await w[1].run('releaseLease', { name: 'x/fifo' });
  const served = await Promise.all(order.map((c) => c.run('finishWait', { name: 'x/fifo' })));
  const servedOrder = order.map((c, i) => ({ label: c.label, token: served[i].ok?.token ?? Infinity }))
    .sort((a, b) => a.token - b.token).map((s) => s.label);
  check('five requests in five contexts are granted in arrival order', servedOrder.join() === order.map((c) => c.label).join() && first0 !== null,
    servedOrder.join(' -> '));

  // 6. A signal aborts a worker's wait on a page's lock; an ifAvailable elsewhere sees it busy.
  await p0.run('tryLock', { db, name: 'x/signal', ttl: 30000 });
  await w[3].run('startWait', { db, name: 'x/signal' });
  await sleep(100);
  check('ifAvailable in a worker while a page holds: null', (await w[1].run('ifAvailable', { db, name: 'x/signal' })) === false);
  await w[3].run('abortWait', { name: 'x/signal' });
  const aborted = await w[3].run('finishWait', { name: 'x/signal' });
  const q2 = await p1.run('query', { db });
  check('signal in a worker: its wait rejects with the signal\'s reason and leaves the queue',
    aborted.same === true && !q2.pending.some((e) => e.name === 'x/signal'), JSON.stringify(aborted));
  await p0.run('releaseLease', { name: 'x/signal' });
  check('ifAvailable in a worker after the release: granted', (await w[1].run('ifAvailable', { db, name: 'x/signal' })) === true);

  // 6b. A lease's signal first read after another context force-released it aborts within
  //     one look (not at the old deadline, 30 s on).
  await w[0].run('tryLock', { db, name: 'x/late-signal', ttl: 30000 });
  await p1.run('forceRelease', { db, name: 'x/late-signal' });
  await sleep(300);
  const late = await w[0].run('lateSignal', { name: 'x/late-signal', waitMs: 3000 });
  check('a lease force-released from another context: its signal, first read later, aborts with ExpiredError',
    late.aborted && late.reason === 'ExpiredError', JSON.stringify(late));

  // 7. The engine's presence locks, seen from the package: every context holds one Web Lock
  //    on the database for its life (navigator.locks.query() lists it, locks.query() does
  //    not), and a request held by a page that is closed is taken over at once by a request
  //    waiting in another page, long before its ttl, with a larger token.
  const seen = await Promise.all([p0, w[1]].map((c) => c.run('presence', { db })));
  check(`presence: navigator.locks.query() lists a presence Web Lock for each of the ${all.length} contexts; locks.query() lists none`,
    seen.every((x) => x.webLocks >= all.length && x.inQuery === 0), JSON.stringify(seen));
  const doomed = await openPage();
  const d = inPage(doomed, 'doomed page');
  await d.run('configure', { ioTimeout });
  const deadTtl = 30000;
  const dead = await d.run('hold', { db, name: 'x/dead', ttl: deadTtl });
  await p1.run('startWait', { db, name: 'x/dead' });
  await sleep(200);
  const closedAt = Date.now();
  await doomed.close();
  const heir = await p1.run('finishWait', { name: 'x/dead' });
  const takeover = heir.ok ? Math.round(heir.ok.tGot - closedAt) : NaN;
  check(`a request held by a closed page is granted to another page's waiting request at once (ttl ${deadTtl} ms), with a larger token`,
    heir.ok && takeover < 5000 && heir.ok.token > dead.token, heir.ok ? `${takeover} ms after page.close(), token ${heir.ok.token} > ${dead.token}` : heir.error);

  // 8. What a call costs (printed, not asserted).
  for (const c of [p0, w[0]]) {
    const m = await c.run('measure', { db, n: 50 });
    console.log(`cost in ${c === p0 ? 'a window' : 'a dedicated worker'}, uncontended, ms per call: request() ${m.request.toFixed(2)}, ` +
      `tryLock + release ${m.tryLock.toFixed(2)}, navigator.locks.request ${m.webLocks.toFixed(2)}`);
  }

  // 9. query() across contexts: requests made one after the other in five contexts on three
  //    names are listed in the order they were made (each made once the one before showed in
  //    query(): the order the engine can know), not by name, with their clientIds.
  const idOf = new Map(all.map((c, i) => [c, ids[i]]));
  for (const n of ['q/a', 'q/b', 'q/c']) await w[3].run('tryLock', { db, name: n, ttl: 30000 });
  const made = [[p0, 'q/b'], [w[1], 'q/a'], [p1, 'q/c'], [w[2], 'q/a'], [w[0], 'q/c'], [p1, 'q/b']];
  for (const [i, [c, n]] of made.entries()) {
    await c.run('startWait', { db, name: n, holdMs: 5 });
    const deadline = Date.now() + 10000;
    while ((await w[3].run('pendingOf', { db, prefix: 'q/' })).length < i + 1 && Date.now() < deadline) await sleep(20);
  }
  const listed = await w[3].run('pendingOf', { db, prefix: 'q/' });
  const expected = made.map(([c, n]) => ({ name: n, clientId: idOf.get(c) }));
  check('query() lists the pending requests of five contexts on three names in the order they were made, with their clientIds',
    JSON.stringify(listed) === JSON.stringify(expected), listed.map((e) => e.name).join(' '));
  for (const n of ['q/a', 'q/b', 'q/c']) await w[3].run('releaseLease', { name: n });
  const drained = await Promise.all(made.map(([c, n]) => c.run('finishWait', { name: n })));
  check('... and each of them is granted once the names are released', drained.every((d) => d.ok), JSON.stringify(drained.filter((d) => !d.ok)));

  // 10. steal is one transaction: in each round a worker holds the name, two other contexts
  //     (in even rounds) wait for it, two more ask for it with ifAvailable in a loop, and a
  //     page steals it. Nobody gets it between the holder and the thief, the waiters are
  //     served after the thief (never handed the name on the way), the holder is told.
  const rounds = 6;
  const bad = [];
  for (let r = 0; r < rounds; r++) {
    const name = `x/steal/${r}`;
    const victim = await w[0].run('hold', { db, name });
    const waiters = r % 2 === 0 ? [p1, w[1]] : [];
    for (const [i, c] of waiters.entries()) {
      await c.run('startWait', { db, name, holdMs: 5 });
      const deadline = Date.now() + 10000;
      while ((await p0.run('pendingOf', { db, prefix: name })).length < i + 1 && Date.now() < deadline) await sleep(20);
    }
    await Promise.all([w[2], w[3]].map((c) => c.run('hammer', { db, name })));
    await sleep(50);
    const thief = await p0.run('stealHold', { db, name, holdMs: 100 });
    const told = await w[0].run('outcome', { name, waitMs: 3000 });
    const served = await Promise.all(waiters.map((c) => c.run('finishWait', { name })));
    const hammered = await Promise.all([w[2], w[3]].map((c) => c.run('stopHammer', { name })));
    const grants = [...served.map((s) => s.ok), ...hammered.flatMap((h) => h.grants)];
    if (!(thief.token > victim.token)) bad.push(`round ${r}: thief token ${thief.token} <= ${victim.token}`);
    if (!(told.rejected === 'AbortError' && told.aborted && told.reason === 'ExpiredError')) bad.push(`round ${r}: holder ${JSON.stringify(told)}`);
    if (served.some((s) => !s.ok)) bad.push(`round ${r}: a waiter was not granted: ${JSON.stringify(served)}`);
    const early = grants.filter((g) => g && (g.token < thief.token || g.tGot < thief.tRel - 1));
    if (early.length) bad.push(`round ${r}: ${early.length} grants before the thief's release: ${JSON.stringify(early)}`);
    if (served.length === 2 && !(served[0].ok?.token < served[1].ok?.token)) bad.push(`round ${r}: waiters out of order`);
  }
  check(`steal across contexts, ${rounds} rounds: the thief's grant comes right after the holder's, the holder rejects with AbortError, waiters are served after the thief in order, ifAvailable in other contexts never gets it in between`,
    bad.length === 0, bad.join('; '));

  // 11. A worker terminated while its request's callback runs: another context's waiting
  //     request gets the name at once, long before the ttl, with a larger token.
  await pages[1].evaluate((l) => window.spawn(l), 'doomed-w');
  const doomedW = { label: 'doomed-w', run: (fn, args) => pages[1].evaluate(([fn, args]) => window.call('doomed-w', fn, args), [fn, args]) };
  await doomedW.run('configure', { ioTimeout });
  const heldW = await doomedW.run('hold', { db, name: 'x/dead-worker', ttl: 30000 });
  await p0.run('startWait', { db, name: 'x/dead-worker' });
  await sleep(200);
  const killedAt = Date.now();
  await pages[1].evaluate((l) => window.terminate(l), 'doomed-w');
  const heirW = await p0.run('finishWait', { name: 'x/dead-worker' });
  const afterW = heirW.ok ? Math.round(heirW.ok.tGot - killedAt) : NaN;
  check('a request held by a worker terminated mid-callback is granted to a page\'s waiting request at once (ttl 30000 ms), with a larger token',
    heirW.ok && afterW < 5000 && heirW.ok.token > heldW.token, heirW.ok ? `${afterW} ms after terminate(), token ${heirW.ok.token} > ${heldW.token}` : heirW.error);

  // 12. A signal from another realm (an iframe's AbortController) is an AbortSignal.
  const realm = await p0.run('crossRealmSignal', { db, name: 'x/realm' });
  check('a signal from an iframe\'s AbortController aborts a waiting request with its reason',
    realm.sameReason && realm.pending === 0, JSON.stringify(realm));
}
