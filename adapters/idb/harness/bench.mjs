// `make bench-idb`: try_lock + release on alkstore-idb against, in the same run and context,
// a minimal hand-written IndexedDB lease cycle (the floor of this design) and
// navigator.locks.request(name, { ifAvailable: true }), in a window and in a dedicated worker;
// then the wake-up latency from a release in one context to the grant in another.
// Usage: node bench.mjs <bundle dir>. Prints a markdown table; asserts nothing about speed.
import { serve, launch, openPage, inPage, inWorker, sleep, fail } from './lib.mjs';

const pkg = process.argv[2] ?? fail('usage: node bench.mjs <wasm-bindgen bundle dir>');
const n = Number(process.env.ALK_BENCH_N ?? 100);
const rounds = Number(process.env.ALK_BENCH_ROUNDS ?? 12);
const wakes = Number(process.env.ALK_BENCH_WAKES ?? 30);
const { server, url } = await serve(pkg);
const browser = await launch();
const db = `bench-${Date.now()}`;
const f = (ms) => (ms * 1000).toFixed(0);
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];

async function wakeLatency(holder, waiter, name) {
  const lat = [];
  for (let i = 0; i < wakes; i++) {
    await holder.run('hold', { db, name, me: holder.label, ttlMs: 30000 });
    await waiter.run('startWait', { db, name, me: waiter.label, ttlMs: 30000, holdMs: 0 });
    await sleep(30);
    const rel = await holder.run('release', { name });
    const got = await waiter.run('finishWait', { name, me: waiter.label });
    lat.push(got.tGot - rel.at);
  }
  return lat;
}

try {
  const page = await openPage(browser, url);
  const win = inPage(page, 'window');
  const worker = await inWorker(page, 'worker');
  const rows = [];
  for (const [where, ctx] of [['window', win], ['dedicated worker', worker]]) {
    const r = await ctx.run('bench', { db, n, rounds });
    const med = (xs) => pct(xs, 0.5);
    const ratios = r.idb.map((x, i) => x / r.hand[i]);
    rows.push({ where, idb: med(r.idb), hand: med(r.hand), webLocks: med(r.webLocks),
      ratio: med(ratios), best: Math.min(...r.idb) / Math.min(...r.hand), webRatio: med(r.idb.map((x, i) => x / r.webLocks[i])) });
  }
  const w2p = await wakeLatency(worker, win, 'wake/w2p');
  const p2w = await wakeLatency(win, worker, 'wake/p2w');
  const lines = [
    `alkstore-idb benchmark (headless Chromium; ${rounds} interleaved rounds of ${n} cycles; µs per try_lock + release, median round)`,
    '| context | alkstore-idb | hand-written IndexedDB cycle | navigator.locks ifAvailable | vs hand-written, median of rounds (target <= 1.3x) | best vs best | vs navigator.locks |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.where} | ${f(r.idb)} | ${f(r.hand)} | ${f(r.webLocks)} | ${r.ratio.toFixed(2)}x | ${r.best.toFixed(2)}x | ${r.webRatio.toFixed(1)}x |`),
    '',
    `cross-context wake-up: release in one context -> grant in the other (${wakes} hand-offs each; ms)`,
    '| direction | median | p90 | max |',
    '| --- | ---: | ---: | ---: |',
    ...[['worker releases, window waits', w2p], ['window releases, worker waits', p2w]]
      .map(([d, xs]) => `| ${d} | ${pct(xs, 0.5).toFixed(2)} | ${pct(xs, 0.9).toFixed(2)} | ${Math.max(...xs).toFixed(2)} |`),
  ];
  console.log(lines.join('\n'));
} finally {
  await browser.close();
  server.close();
}
