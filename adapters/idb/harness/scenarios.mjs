// `make test-idb`, the scenarios: the engine under clocks stepped or skewed (one context, or
// all), handles and futures dropped at any point, heavier contention, contexts that go away,
// IndexedDB failing or changed under the store, and hostile same-origin code (forged rows and
// BroadcastChannel messages, hostile names), across pages and dedicated workers in headless
// Chromium. A fresh browser (and profile) per scenario. Pages on 127.0.0.1:8790-8799
// (ALK_PORTS to change). Usage: node scenarios.mjs <bundle dir> [scenario ...] (default: all).
// Each check prints `ok` or `FAIL`; the last line is "idb scenarios: N passed, M failed".
import { serve, launch, openPage, inPage, inWorker, sleep, check, counts, pageErrors } from './scenarios/env.mjs';
import * as clock from './scenarios/clock.mjs';
import * as handles from './scenarios/handles.mjs';
import * as contention from './scenarios/contention.mjs';
import * as faults from './scenarios/faults.mjs';
import * as hostile from './scenarios/hostile.mjs';

const SCENARIOS = { ...clock, ...handles, ...contention, ...faults, ...hostile };
const pkg = process.argv[2];
if (!pkg) { console.error('usage: node scenarios.mjs <bundle dir> [scenario ...]'); process.exit(2); }
const wanted = process.argv.slice(3);
for (const w of wanted) if (!(w in SCENARIOS)) { console.error(`no scenario ${w}; have: ${Object.keys(SCENARIOS).join(' ')}`); process.exit(2); }
const names = wanted.length ? wanted : Object.keys(SCENARIOS);

const { server, url } = await serve(pkg);
const t00 = Date.now();
for (const name of names) {
  // A browser per scenario: a fresh profile, so that no scenario sees another's databases.
  const browser = await launch();
  const env = {
    url, browser, check, sleep, db: `sc-${name}-${Date.now()}`,
    page: async () => openPage(browser, url),
    inPage, inWorker,
  };
  console.log(`\n== ${name}`);
  const t0 = Date.now();
  try {
    await SCENARIOS[name](env);
  } catch (e) {
    check(`${name}: the scenario ran to its end`, false, String(e && e.stack || e));
  } finally {
    await browser.close();
  }
  console.log(`(${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}
server.close();
check('no uncaught error (a wasm panic shows as one) in any page', pageErrors.length === 0, pageErrors.slice(0, 3).join(' | '));
const { passed, failed } = counts();
console.log(`\n${names.length} scenarios in ${((Date.now() - t00) / 1000).toFixed(0)} s`);
console.log(`idb scenarios: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
