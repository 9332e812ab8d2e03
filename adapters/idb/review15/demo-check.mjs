// Review of issue 15: the demo page (harness/www/demo.html), served here on 127.0.0.1:8801,
// once in one tab (as `make demo-web` runs it) and in two tabs at once, as the page invites
// ("Open this page in a second tab: its workers queue for the same lock").
// Usage: node demo-check.mjs <harness bundle dir> [screenshot.png]
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from '../harness/lib.mjs';
import { check, counts, sleep } from './driver.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = process.argv[2];
const www = path.join(here, '..', 'harness', 'www');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm' };
const server = http.createServer((req, res) => {
  const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const file = rel.startsWith('/pkg/') ? path.join(pkg, rel.slice(5)) : path.join(www, rel);
  if (!fs.existsSync(file) || fs.statSync(file).isDirectory()) { res.writeHead(404).end(); return; }
  res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(8801, '127.0.0.1', r));
const url = 'http://127.0.0.1:8801/demo.html';

async function run(tabs) {
  const browser = await launch();
  try {
    const pages = [];
    for (let i = 0; i < tabs; i++) {
      const page = await browser.context.newPage();
      page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
      await page.goto(url);
      pages.push(page);
      await sleep(300);
    }
    const done = [];
    for (const page of pages) {
      await page.waitForFunction(() => window.demoDone !== undefined, null, { timeout: 60000 });
      done.push(await page.evaluate(() => window.demoDone));
    }
    if (tabs === 1 && process.argv[3]) await pages[0].screenshot({ path: process.argv[3] });
    return done;
  } finally { await browser.close(); }
}

const one = await run(1);
console.log(one[0].story.map((l) => `   ${l}`).join('\n'));
check('the demo in one tab: ok (stale write refused, late release false, takeover with a larger token)', one[0].ok, JSON.stringify(one[0].outcome));
const two = await run(2);
two.forEach((d, i) => {
  const accepted = d.story.filter((l) => /wakes up and adds 100 .*accepted|adds 100 with token .*accepted/.test(l));
  console.log(`   tab ${i + 1}: ok ${d.ok}, ${d.refused} refused; ${d.story.filter((l) => /worker-3/.test(l)).slice(0, 4).join(' | ')}`);
  check(`the demo in two tabs at once (as the page invites): tab ${i + 1} tells a true story (the stale write refused)`, d.ok && d.refused >= 1,
    `ok ${d.ok}, refused ${d.refused}; ${accepted.join(' | ') || (d.story.at(-1))}`);
});
server.close();
const { passed, failed } = counts();
console.log(`demo-check: ${passed} held, ${failed} failed`);
process.exit(failed ? 1 : 0);
