// `make test-idb`, the cross-context part: several pages (tabs) and dedicated workers of one
// origin share one database in headless Chromium. Usage: node test.mjs <bundle dir>
import { serve, launch, openPage, inPage, inWorker, sleep, fail } from './lib.mjs';

const pkg = process.argv[2] ?? fail('usage: node test.mjs <wasm-bindgen bundle dir>');
const { server, url } = await serve(pkg);
const browser = await launch();
let passed = 0;
let failed = 0;
function check(what, ok, detail = '') {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
}
const db = `cross-${Date.now()}`;

try {
  const pages = [await openPage(browser, url), await openPage(browser, url)];
  const p0 = inPage(pages[0], 'page0');
  const p1 = inPage(pages[1], 'page1');
  const w = [await inWorker(pages[0], 'w0'), await inWorker(pages[0], 'w1'),
    await inWorker(pages[1], 'w2'), await inWorker(pages[1], 'w3')];
  const all = [p0, p1, ...w];

  // 1. Contention: every context takes three names at random for a few seconds.
  const names = ['c/a', 'c/b', 'c/c'];
  const durationMs = Number(process.env.ALK_CONTEND_MS ?? 4000);
  const results = await Promise.all(all.map((c) => c.run('contend',
    { db, me: c.label, names, durationMs, ttlMs: 10000, holdMs: 6, tryShare: 0.2 })));
  const recs = results.flatMap((r) => r.records);
  const probeOverlaps = results.reduce((s, r) => s + r.overlaps, 0);
  const busy = results.reduce((s, r) => s + r.busy, 0);
  const perContext = results.map((r, i) => `${all[i].label} ${r.records.length}`).join(', ');
  const acquires = recs.filter((r) => r.mode === 'acquire').length;
  console.log(`contention: ${all.length} contexts (2 pages, 4 dedicated workers), ${names.length} names, ` +
    `${durationMs} ms: ${recs.length} grants (${acquires} acquire, ${recs.length - acquires} try_lock; ` +
    `${busy} try_lock busy), per context: ${perContext}`);
  check('every context got grants', results.every((r) => r.records.length > 0));
  check('no overlap seen by the probe (a clock-free detector in another database)', probeOverlaps === 0, `${probeOverlaps} overlaps`);
  check('every release found its lease live', recs.every((r) => r.released));
  const tokens = recs.map((r) => r.token);
  check('tokens are unique across names and contexts', new Set(tokens).size === tokens.length);
  let clockOverlaps = 0;
  let orderBreaks = 0;
  let fifoPairs = 0;
  let fifoContended = 0;
  let fifoBreaks = 0;
  const MARGIN = 25; // ms between two arrivals for their order to count
  for (const name of names) {
    const byToken = recs.filter((r) => r.name === name).sort((a, b) => a.token - b.token);
    for (let i = 1; i < byToken.length; i++) {
      if (byToken[i - 1].tRel > byToken[i].tGot) clockOverlaps++;
      if (byToken[i - 1].tGot > byToken[i].tGot) orderBreaks++;
    }
    const acq = byToken.filter((r) => r.mode === 'acquire');
    for (const a of acq) {
      for (const b of acq) {
        if (a.tSent + MARGIN < b.tSent && a.tGot > b.tSent) {
          fifoPairs++;
          if (a.tGot > b.tSent + 1) fifoContended++;
          if (a.token > b.token) fifoBreaks++;
        }
      }
    }
  }
  check('no two leases of a name overlap in time (release started before the next grant)', clockOverlaps === 0, `${clockOverlaps} overlaps`);
  check('tokens strictly increase in grant order on every name', orderBreaks === 0, `${orderBreaks} out of order`);
  check('unbounded waiters are served in arrival order', fifoPairs > 0 && fifoBreaks === 0,
    `${fifoPairs} pairs of waiters that met in the queue, ${fifoBreaks} served out of order`);

  // 2. FIFO across contexts, exactly: five waiters arrive one by one while page0 holds.
  const first = await p0.run('hold', { db, name: 'fifo', me: 'page0', ttlMs: 30000 });
  const order = [w[0], p1, w[2], w[1], w[3]];
  for (const c of order) {
    await c.run('startWait', { db, name: 'fifo', me: c.label, ttlMs: 30000, holdMs: 20 });
    await sleep(150);
  }
  await p0.run('release', { name: 'fifo' });
  const served = await Promise.all(order.map((c) => c.run('finishWait', { name: 'fifo', me: c.label })));
  const servedOrder = [...served].sort((a, b) => a.token - b.token).map((r) => r.me);
  check('five waiters in four contexts are served in arrival order', servedOrder.join() === order.map((c) => c.label).join(),
    `served ${servedOrder.join(' -> ')}`);
  check('each hand-off has a larger token', served.every((r) => r.token > first.token) && served.every((r) => r.released));

  // 3. A holder worker terminated: its lease ends at once (its context's presence Web Lock is
  //    gone), long before its ttl, and a waiter in another page gets it.
  const victim = await inWorker(pages[0], 'victim');
  const held = await victim.run('hold', { db, name: 'f/terminated', me: 'victim', ttlMs: 10000 });
  await p1.run('startWait', { db, name: 'f/terminated', me: 'page1', ttlMs: 5000 });
  await sleep(200);
  const killedAt = await victim.terminate();
  const heir = await p1.run('finishWait', { name: 'f/terminated', me: 'page1' });
  check('terminated holder: the waiter in another page gets the name at once, long before the 10 s ttl',
    heir.token > held.token && heir.tGot < held.deadline - 5000,
    `granted ${(heir.tGot - killedAt).toFixed(1)} ms after the termination, ${(held.deadline - heir.tGot).toFixed(0)} ms before the lease's deadline`);

  // 4. A holder busy-looping past its ttl: another context takes over; the stalled one's late
  //    write is refused by the Fence and its release answers false. The ledger (and its Fence)
  //    lives in page0: the stalled worker w1 and page0 itself write to it.
  const stall = w[1].run('holdAndStall', { db, name: 'f/stalled', me: 'w1-stalled', ttlMs: 1000, stallMs: 2500 });
  await sleep(300);
  await p0.run('startWait', { db, name: 'f/stalled', me: 'page0-takeover', ttlMs: 5000, holdMs: 0 });
  const [stalled, takeover] = await Promise.all([stall,
    (async () => { await sleep(100); return p0.run('finishWait', { name: 'f/stalled', me: 'page0-takeover' }); })()]);
  check('stalled holder: another context took over while it was still stuck',
    takeover.token > stalled.got.token && takeover.tGot < stalled.stalledUntil && takeover.write === null,
    `takeover ${(takeover.tGot - stalled.got.deadline).toFixed(1)} ms after the stalled lease's deadline, ${(stalled.stalledUntil - takeover.tGot).toFixed(0)} ms before the stall ended`);
  check('stalled holder: its late write is refused by the Fence', typeof stalled.lateWrite === 'string', stalled.lateWrite);
  check('stalled holder: its late release answers false', stalled.released === false);

  // 5. A page closed while it waits: its ticket is skipped.
  const pages2 = await openPage(browser, url);
  const p2 = inPage(pages2, 'page2');
  const hb = 200;
  const h5 = await w[0].run('hold', { db, name: 'f/closed', me: 'w0', ttlMs: 20000, heartbeatMs: hb });
  await p2.run('startWait', { db, name: 'f/closed', me: 'page2', ttlMs: 20000, heartbeatMs: hb });
  await sleep(300);
  await w[3].run('startWait', { db, name: 'f/closed', me: 'w3', ttlMs: 20000, heartbeatMs: hb });
  await sleep(300);
  await pages2.close();
  const rel = await w[0].run('release', { name: 'f/closed' });
  const next = await w[3].run('finishWait', { name: 'f/closed', me: 'w3' });
  check('closed page: its ticket is skipped and the next waiter gets the name',
    rel.released && next.token > h5.token && next.tGot - rel.at < 3000,
    `granted ${(next.tGot - rel.at).toFixed(0)} ms after the release (heartbeat ${hb} ms: a ticket lives 3 heartbeats)`);
} catch (e) {
  check('the scenarios ran', false, String(e && e.stack || e));
} finally {
  await browser.close();
  server.close();
}
console.log(`idb cross-context: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
