// `make demo-web`: the leader election, headless. Serves the demo page on 127.0.0.1
// (8790-8799) with the npm package (`make js`, target/js/pkg) at /alk/, opens it in three
// tabs (each tab and its two dedicated workers are candidates), then closes the leader's tab
// and freezes the next leader, and checks the story: the closed tab's successor took over well
// before the ttl with a larger token; the frozen leader's successor took over at the ttl with a
// larger token; the frozen leader's late write was refused by the log's fence.
// Usage: node demo.mjs <bundle dir> [--package dir] [--screenshot file.png] [--serve]
// With --serve the page stays served for a browser of your own until Ctrl-C.
import path from 'node:path';
import fs from 'node:fs';
import { serve, launch, sleep, fail } from './lib.mjs';

const usage = 'usage: node demo.mjs <bundle dir> [--package dir] [--screenshot file.png] [--serve]';
const arg = (flag) => { const i = process.argv.indexOf(flag); return i > 0 ? process.argv[i + 1] : null; };
const pkg = process.argv[2] ?? fail(usage);
const alk = path.resolve(arg('--package') ?? 'target/js/pkg');
if (!fs.existsSync(path.join(alk, 'index.js'))) fail(`no npm package in ${alk}: build it with 'make js'`);
const screenshot = arg('--screenshot');
const keep = process.argv.includes('--serve');
const TTL = 4000; // as in www/demo-common.js
const { server, url } = await serve(pkg, undefined, { '/alk/': alk });

const checks = [];
const check = (ok, what) => { checks.push(ok); console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${what}`); };
let ok = false;
const browser = await launch();
try {
  const tabs = [];
  const open = async () => {
    const page = await browser.context.newPage();
    page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
    if (process.env.ALK_VERBOSE) page.on('console', (m) => console.error(`[console] ${m.text()}`));
    await page.goto(`${url}/demo.html`);
    await page.waitForFunction(() => window.demo !== undefined, null, { timeout: 30000 });
    tabs.push(page);
    return page;
  };
  const state = (page) => page.evaluate(() => ({ ...window.demo, candidates: window.demo.candidates() }));
  // Tab 1 leads first; tabs 2 and 3 queue behind it and its workers.
  const tab1 = await open();
  await tab1.waitForFunction(() => window.demo.outcome.leaders[0]?.who === 'tab 1', null, { timeout: 30000 });
  await sleep(500);
  await open();
  await sleep(500);
  const watcher = await open();
  await watcher.waitForFunction(() => Object.keys(window.demo.candidates()).length >= 9, null, { timeout: 30000 });
  await sleep(1200);
  // The leader's tab is closed.
  const first = (await state(tab1)).outcome.leaders[0];
  const closedAt = Date.now();
  await tab1.close();
  await watcher.waitForFunction(() => window.demo.outcome.takeovers.some((t) => t.why === 'closed'), null, { timeout: 30000 });
  await sleep(1500);
  // The new leader freezes (the button of the watching tab).
  await watcher.click('#freeze');
  await watcher.waitForFunction(() => window.demo.outcome.refused.length > 0, null, { timeout: 30000 });
  await sleep(400);
  if (screenshot) {
    await watcher.screenshot({ path: screenshot, fullPage: true });
    console.log(`(screenshot saved to ${screenshot})`);
  }
  const s = await state(watcher);
  console.log('demo-web: a leader election between 3 tabs and their 6 dedicated workers, in headless Chromium (tab 3\'s story)\n');
  for (const line of s.story) console.log(`  ${line}`);
  console.log('');
  const closed = s.outcome.takeovers.find((t) => t.why === 'closed');
  const frozen = s.outcome.takeovers.find((t) => t.why === 'frozen');
  const refused = s.outcome.refused[0];
  const driverMs = closed ? s.outcome.leaders.find((l) => l.who === closed.who && l.token === closed.token).at - closedAt : NaN;
  check(first?.who === 'tab 1', `tab 1 led first (token ${first?.token})`);
  check(closed && closed.prev === 'tab 1' && !closed.who.startsWith('tab 1') && closed.token > closed.prevToken,
    `tab 1 closed: ${closed?.who} took over with a larger token (${closed?.token} > ${closed?.prevToken})`);
  check(closed && closed.ms !== null && closed.ms < TTL / 4 && driverMs < TTL / 4,
    `... ${closed?.ms} ms after tab 1's pagehide, ${driverMs} ms after page.close(), well before the ttl (${TTL} ms)`);
  check(frozen && frozen.prev === closed?.who && frozen.token > frozen.prevToken && frozen.ms >= TTL * 0.9,
    `${frozen?.prev} froze: ${frozen?.who} took over ${frozen?.ms} ms later (its lease lapsed at its ttl) with a larger token (${frozen?.token} > ${frozen?.prevToken})`);
  check(refused && refused.who === frozen?.prev && refused.token === frozen?.prevToken && refused.highest >= frozen?.token,
    `${refused?.who}'s late write with token ${refused?.token} was refused by the log's fence (highest ${refused?.highest})`);
  ok = checks.length === 5 && checks.every(Boolean);
} finally {
  await browser.close();
}
console.log(ok ? '\ndemo-web: ok (the closed leader\'s tab taken over at once with a larger token; the frozen leader fenced off)' : '\ndemo-web: FAILED');
if (keep) {
  console.log(`\nThe demo page is served at ${url}/demo.html: open it in several tabs, close the leader's, freeze a leader; Ctrl-C to stop.`);
  await new Promise(() => {});
}
server.close();
process.exit(ok ? 0 : 1);
