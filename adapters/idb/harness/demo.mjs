// `make demo-web`: serves the demo page on 127.0.0.1 (8790-8799), runs it in headless
// Chromium, prints what happened and checks the outcome (the stalled worker's late write was
// refused by the Fence, its release answered false, another worker took over with a larger
// token). Usage: node demo.mjs <bundle dir> [--screenshot file.png] [--two-tabs] [--serve]
// --two-tabs then runs it in two tabs at once, as the page invites (eight workers, one lock,
// one ledger), and checks that each tab tells a true story. With --serve the page stays served
// for a browser of your own until Ctrl-C.
import { serve, launch, sleep, fail } from './lib.mjs';

const pkg = process.argv[2] ?? fail('usage: node demo.mjs <bundle dir> [--screenshot file.png] [--two-tabs] [--serve]');
const shotAt = process.argv.indexOf('--screenshot');
const screenshot = shotAt > 0 ? process.argv[shotAt + 1] : null;
const twoTabs = process.argv.includes('--two-tabs');
const keep = process.argv.includes('--serve');
const { server, url } = await serve(pkg);

async function openDemo(browser) {
  const page = await browser.context.newPage();
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  await page.goto(`${url}/demo.html`);
  return page;
}

let ok = false;
let browser = await launch();
try {
  const page = await openDemo(browser);
  // The picture: just after the stale write was refused and its release answered false,
  // while the others carry on.
  await page.waitForFunction(() => window.demoRefused === true, null, { timeout: 60000 });
  await sleep(60);
  if (screenshot) {
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(`(screenshot saved to ${screenshot})`);
  }
  await page.waitForFunction(() => window.demoDone !== undefined, null, { timeout: 60000 });
  const done = await page.evaluate(() => window.demoDone);
  console.log(`demo-web: four dedicated workers share invoice/1001 in headless Chromium\n`);
  for (const line of done.story) console.log(`  ${line}`);
  const o = done.outcome;
  console.log(`\n  turns: ${Object.entries(o.turns).map(([w, n]) => `${w} ${n}`).join(', ')}; ledger total ${done.total}, ${done.refused} refused write(s)`);
  ok = done.ok;
} finally {
  await browser.close();
}
if (ok && twoTabs) {
  // The same page in two tabs at once: their eight workers queue for the one lock.
  browser = await launch();
  try {
    const pages = [await openDemo(browser)];
    await sleep(300);
    pages.push(await openDemo(browser));
    for (const [i, page] of pages.entries()) {
      await page.waitForFunction(() => window.demoDone !== undefined, null, { timeout: 60000 });
      const d = await page.evaluate(() => window.demoDone);
      const stale = d.story.filter((l) => /worker-3 wakes up/.test(l));
      console.log(`  two tabs, tab ${i + 1}: ${d.ok ? 'ok' : 'FAILED'}, ${d.refused} refused; ${stale.join(' | ') || d.story.at(-1)}`);
      ok &&= d.ok && d.refused >= 1 && stale.every((l) => /REFUSED/.test(l));
    }
  } finally {
    await browser.close();
  }
}
console.log(ok ? '\ndemo-web: ok (stale write refused, late release false, takeover with a larger token)' : '\ndemo-web: FAILED');
if (keep) {
  console.log(`\nThe demo page is served at ${url}/demo.html (open it in two tabs); Ctrl-C to stop.`);
  await new Promise(() => {});
}
server.close();
process.exit(ok ? 0 : 1);
