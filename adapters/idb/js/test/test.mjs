// `make test-js`: the npm package's tests in headless Chromium, run on the package as
// `npm pack` made it. Usage: node test.mjs <tarball>
//   1. the suite (test/www/suite.js: the Web Locks rules for request and query, what
//      AlkLocks adds, the lease API) in a window and in a dedicated worker, at once; then its
//      tests of the spec alone against Chromium's own navigator.locks, as a control;
//   2. across contexts (2 pages, 4 dedicated workers): contention on request(), FIFO, steal,
//      query() of other contexts' locks, signal, ifAvailable.
// Serves on 127.0.0.1:8800-8809 only (ALK_JS_PORTS=first-last picks another range); drives
// the system Chromium with playwright-core from the idb harness (make idb-setup), in a fresh
// profile removed afterwards. Prints "idb js: N passed, 0 failed" last; exits 1 on failure.
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const fail = (message) => {
  console.error(`idb js: error: ${message}`);
  process.exit(1);
};
const tarball = process.argv[2] ?? fail('usage: node test.mjs <alkstore-idb-x.y.z.tgz>');
if (!fs.existsSync(tarball)) fail(`no ${tarball}: run 'make js' first`);
const harness = path.join(here, '..', '..', 'harness');
let chromium;
try {
  ({ chromium } = createRequire(path.join(harness, 'package.json'))('playwright-core'));
} catch {
  fail("playwright-core missing: run 'make idb-setup' (npm ci in adapters/idb/harness)");
}

// The package as a user gets it: the tarball unpacked.
const unpacked = fs.mkdtempSync(path.join(os.tmpdir(), 'alkstore-idb-pkg-'));
execFileSync('tar', ['-xzf', tarball, '-C', unpacked]);
const pkg = path.join(unpacked, 'package');
const www = path.join(here, 'www');

// The README's first example, as a module importing the package by URL.
const readme = fs.readFileSync(path.join(pkg, 'README.md'), 'utf8');
const example = (/```js\n([\s\S]*?)```/.exec(readme) ?? fail('no js example in the README'))[1]
  .replace("from 'alkstore-idb'", "from '/pkg/index.js'");
const flushes = [];

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };
const server = http.createServer((req, res) => {
  const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (rel === '/readme-example.js') {
    res.writeHead(200, { 'content-type': 'text/javascript', 'cache-control': 'no-store' }).end(example);
    return;
  }
  if (rel === '/outbox/flush' && req.method === 'POST') {
    flushes.push(req.headers['fencing-token']);
    res.writeHead(204).end();
    return;
  }
  const [root, file] = rel.startsWith('/pkg/') ? [pkg, path.join(pkg, rel.slice(5))] : [www, path.join(www, rel === '/' ? 'index.html' : rel)];
  if (!path.resolve(file).startsWith(path.resolve(root)) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    res.writeHead(404).end('not found');
    return;
  }
  res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
  fs.createReadStream(file).pipe(res);
});
const [first, last] = (process.env.ALK_JS_PORTS ?? '8800-8809').split('-').map(Number);
let url = null;
for (let p = first; p <= last && !url; p++) {
  const ok = await new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(p, '127.0.0.1', () => resolve(true));
  });
  if (ok) url = `http://127.0.0.1:${p}`;
}
if (!url) fail(`no free port among ${first}-${last}`);

const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
if (!fs.existsSync(executablePath)) fail(`Chromium not found at ${executablePath}: run 'make setup' (as root)`);
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'alkstore-idb-js-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  args: ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-dev-shm-usage',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});

let passed = 0;
let failed = 0;
function check(what, ok, detail = '') {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function openPage() {
  const page = await context.newPage();
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  if (process.env.ALK_VERBOSE) page.on('console', (m) => console.error(`[console] ${m.text()}`));
  await page.goto(`${url}/index.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 30000 });
  return page;
}
const inPage = (page, label) => ({ label, run: (fn, args) => page.evaluate(([fn, args]) => window.run(fn, args), [fn, args]) });
async function inWorker(page, label) {
  await page.evaluate((l) => window.spawn(l), label);
  return { label, run: (fn, args) => page.evaluate(([l, fn, args]) => window.call(l, fn, args), [label, fn, args]) };
}

const db = `js-${Date.now()}`;
// The io timeout every AlkLocks of the tests opens with: 2 s by default, so that a machine
// busy with other builds does not turn a slow transaction into a failure.
const ioTimeout = Number(process.env.ALK_JS_IO_TIMEOUT ?? 2000);
const only = process.env.ALK_JS_ONLY;
try {
  const pages = [await openPage(), await openPage()];
  const p0 = inPage(pages[0], 'page0');
  const p1 = inPage(pages[1], 'page1');
  const w = [await inWorker(pages[0], 'w0'), await inWorker(pages[0], 'w1'),
    await inWorker(pages[1], 'w2'), await inWorker(pages[1], 'w3')];
  for (const c of [p0, p1, ...w]) await c.run('configure', { ioTimeout });

  // 1. The suite, in a window and in a dedicated worker at once.
  const [inWindow, inDedicated] = await Promise.all([
    p0.run('suite', { db, label: 'window', only, ioTimeout }),
    w[2].run('suite', { db, label: 'worker', only, ioTimeout }),
  ]);
  for (const [where, results] of [['window', inWindow], ['dedicated worker', inDedicated]]) {
    for (const r of results) check(`${where}: ${r.name}`, r.ok, r.ok ? '' : r.error);
  }

  // The control: the tests of the spec alone, against the browser's own navigator.locks.
  const control = await p1.run('suite', { db, label: 'control', only, control: true });
  for (const r of control) check(`navigator.locks (control): ${r.name}`, r.ok, r.ok ? '' : r.error);
  if (only) throw null;

  // 0. The README's first example, in a page and in a dedicated worker.
  for (const c of [p1, w[3]]) {
    let outcome = 'ran';
    try {
      await c.run('readmeExample', {});
    } catch (e) {
      outcome = String(e?.message ?? e);
    }
    check(`the README's first example runs in ${c === p1 ? 'a page' : 'a dedicated worker'}`, outcome === 'ran', outcome);
  }
  check('the README\'s example sent its fencing token with each write', flushes.length === 2 && flushes.every((t) => /^[0-9]+$/.test(t)) && Number(flushes[1]) > Number(flushes[0]),
    `tokens ${flushes.join(', ')}`);

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
  // No atomic steal in the engine: a request queued behind the holder is handed the lock on
  // the way and may finish before the thief takes it, or be stolen from (AbortError).
  const after = await p1.run('finishWait', { name: 'x/query' });
  check('steal across contexts: the queued request is granted (after the thief, or handed the lock on the way) or stolen from',
    (after.ok && after.ok.token !== thief.token) || after.error === 'AbortError',
    `${after.ok ? `granted ${after.ok.token > thief.token ? 'after' : 'before'} the thief` : after.error}`);

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
} catch (e) {
  if (e !== null) check('the tests ran', false, String(e?.stack ?? e));
} finally {
  // Uncaught errors and unhandled rejections in any page or worker fail the run.
  const uncaught = [];
  for (const page of context.pages()) uncaught.push(...await page.evaluate(() => window.uncaught ?? []).catch(() => []));
  check('no uncaught error or unhandled rejection in any page or worker', uncaught.length === 0, uncaught.join('\n'));
  await context.close().catch(() => {});
  fs.rmSync(profile, { recursive: true, force: true });
  fs.rmSync(unpacked, { recursive: true, force: true });
  server.close();
}
console.log(`idb js: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
