// The scenarios' plumbing: pages (steps.html) and their dedicated workers as contexts that run
// steps (www/steps.js), page errors collected (a wasm panic shows as one), and the checks.
// Serving and the browser are lib.mjs's (127.0.0.1:8790-8799, a fresh Chromium profile).
export { serve, launch, sleep } from '../lib.mjs';

export const pageErrors = [];
export async function openPage(browser, url, file = 'steps.html') {
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

let passed = 0;
let failed = 0;
export function check(what, ok, detail = '') {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
}
export const counts = () => ({ passed, failed });
