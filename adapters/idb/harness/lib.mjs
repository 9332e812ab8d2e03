// Shared by test.mjs, bench.mjs and demo.mjs: a static server on 127.0.0.1 (ports 8790-8799)
// for www/ and the wasm-bindgen bundle, headless Chromium (playwright-core driving the system
// Chromium, a fresh profile per run), and handles on pages and their dedicated workers.
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.wasm': 'application/wasm', '.css': 'text/css', '.png': 'image/png', '.json': 'application/json' };

export function fail(message) {
  console.error(`idb harness: error: ${message}`);
  process.exit(1);
}

// Serves www/ at / and the bundle (`pkgDir`) at /pkg/, on the first free port of 8790-8799
// (or `port`; ALK_PORTS=first-last picks another range, e.g. while `make test-idb` runs on
// the default one). `mounts` serves more folders: { '/alk/': 'target/js/pkg' } (the demo's
// npm package). Resolves to { server, url }.
export async function serve(pkgDir, port, mounts = {}) {
  if (!fs.existsSync(path.join(pkgDir, 'alkstore_idb_harness.js'))) {
    fail(`no wasm-bindgen bundle in ${pkgDir}: build it first (scripts/idb-harness.sh does)`);
  }
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const rel = decodeURIComponent(url.pathname);
    const mount = Object.keys(mounts).find((m) => rel.startsWith(m));
    const file = mount
      ? path.join(mounts[mount], rel.slice(mount.length))
      : rel.startsWith('/pkg/')
        ? path.join(pkgDir, rel.slice(5))
        : path.join(here, 'www', rel === '/' ? 'demo.html' : rel);
    const root = mount ? mounts[mount] : rel.startsWith('/pkg/') ? pkgDir : path.join(here, 'www');
    if (!path.resolve(file).startsWith(path.resolve(root)) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
    fs.createReadStream(file).pipe(res);
  });
  const [first, last] = (process.env.ALK_PORTS ?? '8790-8799').split('-').map(Number);
  if (!(first > 0 && last >= first && last < 65536)) fail(`ALK_PORTS=${process.env.ALK_PORTS}: expected first-last, e.g. 8790-8799`);
  const ports = port ? [port] : Array.from({ length: last - first + 1 }, (_, i) => first + i);
  for (const p of ports) {
    const ok = await new Promise((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(p, '127.0.0.1', () => resolve(true));
    });
    if (ok) return { server, url: `http://127.0.0.1:${p}` };
  }
  fail(`no free port among ${ports.join(', ')}`);
}

// Headless Chromium with a fresh profile; `close()` removes it.
export async function launch() {
  const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
  if (!fs.existsSync(executablePath)) fail(`Chromium not found at ${executablePath}: run 'make setup' (as root)`);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'alkstore-idb-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    viewport: { width: 1100, height: 720 },
    args: ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-dev-shm-usage',
      '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

// A harness page (a tab) at `url`, with the console forwarded when ALK_VERBOSE is set.
export async function openPage(browser, url, file = 'harness.html') {
  const page = await browser.context.newPage();
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  if (process.env.ALK_VERBOSE) page.on('console', (m) => console.error(`[console] ${m.text()}`));
  await page.goto(`${url}/${file}`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 30000 });
  return page;
}

// A context that runs scenarios: the page itself, or one of its dedicated workers.
export function inPage(page, label) {
  return { label, run: (fn, args) => page.evaluate(([fn, args]) => window.run(fn, args), [fn, args]) };
}
export async function inWorker(page, label) {
  await page.evaluate((label) => window.spawn(label), label);
  return {
    label,
    run: (fn, args) => page.evaluate(([l, fn, args]) => window.call(l, fn, args), [label, fn, args]),
    terminate: () => page.evaluate((l) => window.terminate(l), label),
  };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
