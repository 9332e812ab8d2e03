// `make test-idb`, the liveness part: contexts that die (a tab closed, a dedicated worker
// terminated, a waiter's worker terminated, a tab closed right after sending acquire on a free
// name), ALK_KILLS times each (default 20), in headless Chromium. Prints, per kind, the time
// from the death to the grant in another context (median, p95, max), and checks only generous
// bounds: every takeover well before the ttl (10 s; ALK_LIVE_TTL_MS to change). Usage:
// node liveness.mjs <bundle dir>. Last line: "idb liveness: N passed, M failed".
import { performance } from 'node:perf_hooks';
import { serve, launch, openPage, inPage, inWorker, sleep, fail } from './lib.mjs';

const pkg = process.argv[2] ?? fail('usage: node liveness.mjs <wasm-bindgen bundle dir>');
const KILLS = Number(process.env.ALK_KILLS ?? 20);
const TTL = Number(process.env.ALK_LIVE_TTL_MS ?? 10000);
const BOUND = TTL / 2; // "well before the ttl"
const { server, url } = await serve(pkg);
const browser = await launch();
let passed = 0;
let failed = 0;
function check(what, ok, detail = '') {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
}
// Wall-clock ms with sub-ms precision, on the same base as the pages' `timeOrigin + now()`.
const nowNode = () => performance.timeOrigin + performance.now();
const db = `live-${Date.now()}`;

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
  return { n: s.length, median: at(0.5), p95: at(0.95), max: s[s.length - 1] };
}
const fmt = (x) => `${x.toFixed(1)} ms`;
// In a page about to be closed: its `pagehide` (the start of its teardown) stamped into
// localStorage under `key`, read back by another page after the takeover.
const stampPagehide = (page, key) => page.evaluate((key) => addEventListener('pagehide',
  () => localStorage.setItem(key, String(performance.timeOrigin + performance.now()))), key);
const readStamp = (page, key) => page.evaluate((key) => Number(localStorage.getItem(key)) || null, key);
function report(kind, xs) {
  const st = stats(xs);
  console.log(`${kind}: ${st.n} kills, median ${fmt(st.median)}, p95 ${fmt(st.p95)}, max ${fmt(st.max)} (ttl ${TTL} ms)`);
  return st;
}

try {
  const pages = [await openPage(browser, url), await openPage(browser, url)];
  const p0 = inPage(pages[0], 'page0');
  const p1 = inPage(pages[1], 'page1');
  const wA = await inWorker(pages[1], 'wA');
  const ids = await Promise.all([p0, wA].map((c) => c.run('contextId', { db }).catch((e) => `none (${e.message.slice(0, 60)})`)));
  check('every context holds a presence lock (a context id)', ids.every((id) => typeof id === 'string' && !id.startsWith('none')), ids.join(', '));

  // 1. The holder's tab is closed; a waiter in another tab takes over.
  const tab = [];
  const tabHide = [];
  let tabOk = true;
  for (let i = 0; i < KILLS; i++) {
    const name = `tab/${i}`;
    const hp = await openPage(browser, url);
    const h = inPage(hp, `holder${i}`);
    const held = await h.run('hold', { db, name, me: `holder${i}`, ttlMs: TTL });
    await p1.run('startWait', { db, name, me: 'page1', ttlMs: TTL });
    await stampPagehide(hp, `hide/${name}`);
    await sleep(100);
    const t0 = nowNode();
    await hp.close();
    const got = await p1.run('finishWait', { name, me: 'page1' });
    tab.push(got.tGot - t0);
    const hidden = await readStamp(pages[1], `hide/${name}`);
    if (hidden) tabHide.push(got.tGot - hidden);
    tabOk &&= got.token > held.token && got.tGot - t0 < BOUND;
  }
  const tabSt = report('takeover after the holder\'s tab closed (from page.close())', tab);
  if (tabHide.length) report('takeover after the holder\'s tab closed (from its pagehide)', tabHide);
  check(`holder's tab closed (${KILLS} times): a waiter in another tab gets the name well before the ttl`, tabOk, `max ${fmt(tabSt.max)}`);

  // 2. The holder's dedicated worker is terminated; a worker of another tab takes over.
  const worker = [];
  let workerOk = true;
  for (let i = 0; i < KILLS; i++) {
    const name = `worker/${i}`;
    const v = await inWorker(pages[0], `victim${i}`);
    const held = await v.run('hold', { db, name, me: `victim${i}`, ttlMs: TTL });
    await wA.run('startWait', { db, name, me: 'wA', ttlMs: TTL });
    await sleep(100);
    const killedAt = await v.terminate();
    const got = await wA.run('finishWait', { name, me: 'wA' });
    worker.push(got.tGot - killedAt);
    workerOk &&= got.token > held.token && got.tGot - killedAt < BOUND;
  }
  const workerSt = report('takeover after the holder\'s worker was terminated', worker);
  check(`holder's worker terminated (${KILLS} times): a worker of another tab gets the name well before the ttl`, workerOk, `max ${fmt(workerSt.max)}`);

  // 3. The head waiter's worker is terminated, and the holder releases at once: the next
  //    waiter is served without waiting for the dead one's heartbeats. Beside it, the same
  //    hand-off without a dead waiter.
  const dead = [];
  const plain = [];
  let deadOk = true;
  for (let i = 0; i < KILLS; i++) {
    const name = `dw/${i}`;
    const held = await p0.run('hold', { db, name, me: 'page0', ttlMs: TTL });
    const d = await inWorker(pages[0], `dead${i}`);
    await d.run('startWait', { db, name, me: `dead${i}`, ttlMs: TTL });
    await sleep(100);
    await p1.run('startWait', { db, name, me: 'page1', ttlMs: TTL });
    await sleep(100);
    await d.terminate();
    const rel = await p0.run('release', { name });
    const got = await p1.run('finishWait', { name, me: 'page1' });
    dead.push(got.tGot - rel.at);
    deadOk &&= rel.released && got.token > held.token && got.tGot - rel.at < BOUND;
    // The same without the dead waiter.
    const name2 = `plain/${i}`;
    await p0.run('hold', { db, name: name2, me: 'page0', ttlMs: TTL });
    await p1.run('startWait', { db, name: name2, me: 'page1', ttlMs: TTL });
    await sleep(100);
    const rel2 = await p0.run('release', { name: name2 });
    const got2 = await p1.run('finishWait', { name: name2, me: 'page1' });
    plain.push(got2.tGot - rel2.at);
  }
  const deadSt = report('next waiter served after a release, a dead waiter at the head', dead);
  report('next waiter served after a release, no dead waiter (for comparison)', plain);
  check(`dead head waiter (${KILLS} times): the next waiter is served well before the ttl, without waiting for heartbeats`, deadOk, `max ${fmt(deadSt.max)}`);

  // 4. A tab sends acquire on a free name and is closed 1-20 ms later (its grant may or may
  //    not have committed): another tab then gets the name at once.
  const closed = [];
  const closedHide = [];
  let closedOk = true;
  for (let i = 0; i < KILLS; i++) {
    const name = `ca/${i}`;
    const xp = await openPage(browser, url);
    const x = inPage(xp, `x${i}`);
    await x.run('sendAcquire', { db, name, me: `x${i}`, ttlMs: TTL });
    await stampPagehide(xp, `hide/${name}`);
    await sleep(1 + Math.floor(Math.random() * 20));
    const t0 = nowNode();
    await xp.close();
    await p1.run('startWait', { db, name, me: 'page1', ttlMs: TTL });
    const got = await p1.run('finishWait', { name, me: 'page1' });
    closed.push(got.tGot - t0);
    const hidden = await readStamp(pages[1], `hide/${name}`);
    if (hidden) closedHide.push(got.tGot - hidden);
    closedOk &&= got.tGot - t0 < BOUND;
  }
  const closedSt = report('grant after a tab closed 1-20 ms after sending acquire on a free name (from page.close())', closed);
  if (closedHide.length) report('... the same, from its pagehide', closedHide);
  check(`tab closed right after sending acquire (${KILLS} times): another tab gets the name well before the ttl`, closedOk, `max ${fmt(closedSt.max)}`);
} catch (e) {
  check('the liveness runs ran', false, String(e && e.stack || e));
} finally {
  await browser.close();
  server.close();
}
console.log(`idb liveness: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
