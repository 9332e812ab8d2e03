// The engine's clock: Date.now() overridden in ONE context (the issue asks whether a step
// can be simulated that way), and the io_timeout's watchdog under a step.
const YEARS_300_MS = 300 * 365.25 * 86400e3;

// One context whose Date.now() is far in the future (a mis-set clock, or hostile code) makes
// one grant. Afterwards, with every clock right again, the database is still expected to
// keep exclusion and strictly increasing tokens (or to answer Unavailable): not to hand out
// leases that are dead at birth with equal tokens.
export async function clockFarFuture(env) {
  const { db, check } = env;
  const page = await env.page();
  const a = env.inPage(page, 'page');
  const x = await env.inWorker(page, 'x-future');
  const y = await env.inWorker(page, 'y');
  const before = await a.run('tryLock', { db, name: 'job', owner: 'a', ttl: 5000, key: 'before' });
  await a.run('release', { key: 'before' });
  await x.run('shiftDateNow', { ms: YEARS_300_MS });
  const xr = await x.run('tryLock', { db, name: 'elsewhere', owner: 'x', ttl: 1000, key: 'x' });
  await x.run('release', { key: 'x' });
  await x.run('restoreDateNow');
  const meta = await a.run('rawGet', { db, store: 'meta', key: 'clock' });
  console.log(`   x's grant: token ${xr && xr.token}; clock row now ${JSON.stringify(meta)}`);
  const ga = await a.run('tryLock', { db, name: 'job', owner: 'a', ttl: 30000, key: 'ga' });
  const gy = await y.run('tryLock', { db, name: 'job', owner: 'y', ttl: 30000, key: 'gy' });
  const heldA = ga && !ga.error ? await a.run('isHeld', { key: 'ga' }) : null;
  console.log(`   a: ${JSON.stringify(ga && ga.info)}\n   y: ${JSON.stringify(gy && gy.info)}\n   a.isHeld right after its grant: ${JSON.stringify(heldA)}`);
  const bothGranted = ga && !ga.error && gy && !gy.error;
  check('clock far ahead in one context, then right again: a second owner cannot take a name another holds (30 s ttl)',
    !bothGranted, bothGranted ? `both a and y were granted "job" (tokens ${ga.token} and ${gy.token})` : '');
  check('... and a fresh 30 s lease is live right after its grant', heldA === null || heldA.held === true, JSON.stringify(heldA));
  if (bothGranted) {
    check('... and tokens still strictly increase (a Fence refuses the older holder)', gy.token > ga.token,
      `a's token ${ga.token}, y's token ${gy.token}: a Fence (token >= highest) accepts both`);
  }
  check('tokens before the step are below the ones after it', !ga || ga.error || ga.token > before.token);
}

// One context whose Date.now() is BEHIND the others' (60 s). It takes a lease (2.5 s) and
// keeps it alive; another context waits for the name. Either the lease is kept (renewed) and
// the waiter waits, or the holder's keep_alive and lapsed() end when the lease is lost.
export async function clockBehindKeepAlive(env) {
  const { db, check, sleep } = env;
  const p1 = await env.page();
  const p2 = await env.page();
  const a = env.inPage(p1, 'page-a');
  const b = env.inPage(p2, 'page-b');
  const x = await env.inWorker(p1, 'x-behind');
  // Someone wrote the clock floor a moment ago (any grant does).
  await a.run('tryLock', { db, name: 'warm', owner: 'a', ttl: 1000, key: 'warm' });
  await a.run('release', { key: 'warm' });
  await x.run('shiftDateNow', { ms: -60000 });
  const got = await x.run('tryLock', { db, name: 'job', owner: 'x', ttl: 2500, key: 'x' });
  await x.run('keepAliveStart', { key: 'x', every: 0 });
  await x.run('lapsedStart', { key: 'x' });
  await b.run('acquireStart', { db, name: 'job', owner: 'b', ttl: 5000, key: 'b' });
  const bGot = await Promise.race([b.run('acquireFinish', { key: 'b' }), sleep(8000).then(() => null)]);
  const ka = await x.run('watchResult', { key: 'x', kind: 'ka', ms: 1500 });
  const lapsed = await x.run('watchResult', { key: 'x', kind: 'lapsed', ms: 10 });
  const held = await x.run('isHeld', { key: 'x' });
  const after = bGot && bGot.tGot ? (bGot.tGot - got.t1) : null;
  console.log(`   x granted token ${got.token} (deadline ${got.info && got.info.deadlineUs}); b granted ${bGot ? `after ${after} ms, token ${bGot.token}` : 'not within 8 s'}`);
  console.log(`   x's keep_alive: ${ka.outcome}; x's lapsed(): ${lapsed.outcome}; x.isHeld: ${JSON.stringify(held)}`);
  if (bGot && bGot.token) {
    check('clock behind in the holder\'s context: once another context took the name, the holder\'s keep_alive has ended',
      ka.outcome !== 'pending', `keep_alive still pending ${ka.at - bGot.tGot} ms after b's grant (it neither renewed nor reported the loss)`);
    check('... and its lapsed() has resolved', lapsed.outcome !== 'pending', `lapsed() still pending ${lapsed.at - bGot.tGot} ms after b's grant`);
  } else {
    check('clock behind in the holder\'s context: keep_alive kept the lease', held.held === true, JSON.stringify(held));
  }
  await x.run('restoreDateNow');
}

// A context whose Date.now() is AHEAD (60 s) takes a name whose 30 s lease another context
// keeps alive: nothing can tell its clock from one that is right while the holder's stopped
// (documented: a forward step ends leases early). What must hold: its token is larger (a
// Fence refuses the old holder), the old holder learns at once (lapsed() and keep_alive end
// with Expired, told over the BroadcastChannel), and the database does not stall afterwards.
export async function clockAheadOneContext(env) {
  const { db, check, sleep } = env;
  const page = await env.page();
  const a = env.inPage(page, 'page-a');
  const x = await env.inWorker(page, 'x-ahead');
  const y = await env.inWorker(page, 'y');
  const ga = await a.run('tryLock', { db, name: 'job', owner: 'a', ttl: 30000, key: 'a' });
  await a.run('keepAliveStart', { key: 'a', every: 0 });
  await a.run('lapsedStart', { key: 'a' });
  await x.run('shiftDateNow', { ms: 60000 });
  const gx = await x.run('tryLock', { db, name: 'job', owner: 'x', ttl: 30000, key: 'x' });
  await x.run('restoreDateNow');
  const lapsed = await a.run('watchResult', { key: 'a', kind: 'lapsed', ms: 1500 });
  const ka = await a.run('watchResult', { key: 'a', kind: 'ka', ms: 500 });
  console.log(`   a holds "job" (30 s, keep_alive); x (+60 s) try_lock: ${gx ? `granted token ${gx.token}` : 'busy'}; a's lapsed() within 1.5 s: ${lapsed.outcome}; a's keep_alive: ${ka.outcome}`);
  if (gx && gx.token) {
    check('a context whose clock is 60 s ahead took over a live lease (a forward step ends leases early, as documented): with a larger token, so a Fence refuses the old holder',
      gx.token > ga.token, `${gx.token} vs ${ga.token}`);
    check('... and the old holder learns at once: lapsed() ends with Expired within 1.5 s', lapsed.kind === 'Expired', lapsed.outcome);
    check('... and so does its keep_alive', ka.kind === 'Expired', ka.outcome);
  } else {
    check('a context whose clock is 60 s ahead left the live lease alone', lapsed.outcome === 'pending', lapsed.outcome);
  }
  // A dead holder's name after the step: a 1 s lease, never released.
  const gy = await y.run('tryLock', { db, name: 'short', owner: 'y', ttl: 1000, key: 'y' });
  await y.run('detach', { key: 'y' });
  await sleep(3000);
  const again = await a.run('tryLock', { db, name: 'short', owner: 'a', ttl: 1000, key: 'a2' });
  console.log(`   after the step: a 1 s lease (token ${gy && gy.token}) left to lapse; 3 s later try_lock: ${again ? 'granted' : 'busy'}`);
  check('after one context ran 60 s ahead, a 1 s lease still lapses at its ttl (not 60 s later)', again !== null,
    'busy 3 s after a 1 s lease: every lease in the database stalls until real time catches up with the floor');
}

// The io_timeout's watchdog measures time with Date.now(): a backward step while a
// transaction waits (behind another context's) delays the Unavailable by the step.
export async function watchdogClockStep(env) {
  const { db, check } = env;
  const page = await env.page();
  const h = env.inPage(page, 'hostile');
  const x = await env.inWorker(page, 'x');
  await x.run('open', { db, io: 500 });
  // Control: no step.
  await h.run('rawStallStart', { db, ms: 3000 });
  const control = await x.run('tryLockThenShift', { db, io: 500, name: 'job', owner: 'x', ttl: 5000, shiftMs: 0 });
  await h.run('rawStallFinish');
  console.log(`   control: ${JSON.stringify(control)} after ${control.t1 - control.t0} ms`);
  check('a transaction stuck behind another context\'s ends at the io_timeout (500 ms) with Unavailable',
    control.error && control.error.startsWith('Unavailable') && control.t1 - control.t0 < 1500, `${control.t1 - control.t0} ms`);
  await h.run('rawStallStart', { db, ms: 4000 });
  const stepped = await x.run('tryLockThenShift', { db, io: 500, name: 'job', owner: 'x', ttl: 5000, shiftMs: -3600e3, afterMs: 50 });
  const stall = await h.run('rawStallFinish');
  console.log(`   with Date.now stepping back 1 h in x 50 ms in: ${JSON.stringify(stepped)} after ${stepped.t1 - stepped.t0} ms (the stall ended after ${stall.t1 - stall.t0} ms)`);
  check('... still at the io_timeout when the clock steps back meanwhile', stepped.t1 - stepped.t0 < 1500,
    `answered after ${stepped.t1 - stepped.t0} ms (${stepped.error ? stepped.error.slice(0, 40) : stepped.got ? 'granted' : 'busy'}): the watchdog re-armed for the 1 h step`);
}

// A real system clock step back (NTP), simulated in every context at once: it comes while a
// holder's thread is busy and its lease has just been taken over by another context. When
// the holder runs again, do its keep_alive and lapsed() report the loss?
export async function globalStepBack(env) {
  const { db, check, sleep } = env;
  const p1 = await env.page();
  const p2 = await env.page();
  const a = env.inPage(p1, 'page-a');
  const b = env.inPage(p2, 'page-b');
  const h = await env.inWorker(p1, 'holder');
  const g = await h.run('tryLock', { db, name: 'job', owner: 'h', ttl: 2000, key: 'k' });
  await h.run('keepAliveStart', { key: 'k', every: 0 });
  await h.run('lapsedStart', { key: 'k' });
  await b.run('acquireStart', { db, name: 'job', owner: 'b', ttl: 30000, key: 'b' });
  // The holder's thread is busy for 3 s (no renewal); the clock steps back 20 s at +2.5 s.
  await h.run('busyThenShift', { ms: 3000, shiftMs: -20000 });
  const got = await b.run('acquireFinish', { key: 'b' });
  const lateBy = got.tGot - g.t1;
  await sleep(Math.max(0, 2500 - (Date.now() - g.t1)));
  await a.run('shiftDateNow', { ms: -20000 });
  await b.run('shiftDateNow', { ms: -20000 });
  await sleep(Math.max(0, 3300 - (Date.now() - g.t1)));
  const ka = await h.run('watchResult', { key: 'k', kind: 'ka', ms: 2000 });
  const la = await h.run('watchResult', { key: 'k', kind: 'lapsed', ms: 10 });
  const held = await h.run('isHeld', { key: 'k' });
  console.log(`   b took over ${lateBy} ms after h's grant (token ${got.token} > ${g.token}); clock stepped back 20 s everywhere while h was busy; 2 s after h resumed: keep_alive ${ka.outcome}, lapsed() ${la.outcome}, isHeld ${JSON.stringify(held.held)}`);
  check('after a 20 s step back, a holder whose lease was taken over is told by keep_alive', ka.outcome !== 'pending', 'keep_alive pending: it neither renews nor reports until the clock catches up (~20 s)');
  check('... and by lapsed()', la.outcome !== 'pending', 'lapsed() pending although isHeld() answers false');
  for (const c of [a, b, h]) await c.run('restoreDateNow');
}
