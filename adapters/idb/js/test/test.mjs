// `make test-js`: the npm package's tests in headless Chromium, run on the package as
// `npm pack` made it. Usage: node test.mjs <tarball>
//   1. the suite (test/www/suite.js: the Web Locks rules for request and query, what
//      AlkLocks adds, the lease API) in a window and in a dedicated worker, at once; then its
//      tests of the spec alone against Chromium's own navigator.locks, as a control;
//   2. across contexts (2 pages, 4 dedicated workers; scenarios.mjs): contention on
//      request(), FIFO, steal (in one transaction), query() of other contexts' locks and its
//      order, signal, ifAvailable, a closed page and a terminated worker taken over at once;
//   3. the types in index.d.ts against what the module exports (types.mjs).
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
import { runScenarios } from './scenarios.mjs';
import { checkTypes } from './types.mjs';

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

  // The README stands alone in the tarball: every link and image is absolute (https) or an
  // anchor of one of its own headings, and it names no repository file or make target.
  const slug = (h) => h.trim().toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-');
  const anchors = new Set([...readme.matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1])));
  const badLinks = [...readme.matchAll(/\]\(([^)\s]*)\)/g)].map((m) => m[1])
    .filter((t) => !/^https:\/\//.test(t) && !(t.startsWith('#') && anchors.has(t.slice(1))));
  check('the package README links only to the web and to its own headings', badLinks.length === 0, badLinks.join(', '));
  const maintainer = [...readme.matchAll(/make test[-\w]*|issue \d+|harness\//g)].map((m) => m[0]);
  check('the package README holds no maintainers\' test notes', maintainer.length === 0, maintainer.join(', '));

  // The types against the module, in a page.
  await checkTypes({ pkg, page: pages[0], db, check });

  // 2-12. Across contexts (scenarios.mjs).
  await runScenarios({ pages, p0, p1, w, db, ioTimeout, check, sleep, openPage, inPage, inWorker });
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
