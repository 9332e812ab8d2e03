// The review's driver plumbing: a static server on 127.0.0.1:8800-8809 for review15/www and
// the bundle, headless Chromium (the harness's launch(): system Chromium, fresh profile),
// pages and their dedicated workers as contexts that run steps (www/steps.js).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from '../harness/lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm' };

export async function serve(pkgDir) {
  const www = path.join(here, 'www');
  const server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const root = rel.startsWith('/pkg/') ? pkgDir : www;
    const file = path.join(root, rel.startsWith('/pkg/') ? rel.slice(5) : rel);
    if (!path.resolve(file).startsWith(path.resolve(root)) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
    fs.createReadStream(file).pipe(res);
  });
  for (let p = 8800; p <= 8809; p++) {
    const ok = await new Promise((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(p, '127.0.0.1', () => resolve(true));
    });
    if (ok) return { server, url: `http://127.0.0.1:${p}` };
  }
  throw new Error('no free port among 8800-8809');
}

export const pageErrors = [];
export async function openPage(browser, url, file = 'review.html') {
  const page = await browser.context.newPage();
  page.on('pageerror', (e) => { pageErrors.push(e.message); console.error(`[page error] ${e.message}`); });
  page.on('console', (m) => { if (m.type() === 'error' || process.env.ALK_VERBOSE) console.error(`[console ${m.type()}] ${m.text()}`); });
  await page.goto(`${url}/${file}`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 30000 });
  return page;
}
export function inPage(page, label) {
  return { label, page, run: (fn, args = {}) => page.evaluate(([fn, args]) => window.run(fn, args), [fn, args]) };
}
export async function inWorker(page, label) {
  await page.evaluate((label) => window.spawn(label), label);
  return {
    label, page,
    run: (fn, args = {}) => page.evaluate(([l, fn, args]) => window.call(l, fn, args), [label, fn, args]),
    terminate: () => page.evaluate((l) => window.terminate(l), label),
  };
}
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let passed = 0;
let failed = 0;
export function check(what, ok, detail = '') {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
}
export const counts = () => ({ passed, failed });
export { launch };
