// A dedicated worker of the harness: loads the page's own bundle and runs scenarios on request.
import init from './pkg/alkstore_idb_harness.js';
import * as scenarios from './cross.js';

await init();
let nextWrite = 0;
const writes = new Map();
const env = {
  // The ledger lives in the page: ask it, and wait for its answer.
  ledgerWrite: (token, who) => new Promise((resolve) => {
    const id = nextWrite++;
    writes.set(id, resolve);
    postMessage({ write: { id, token, who } });
  }),
};
self.onmessage = async ({ data }) => {
  if ('wrote' in data) { writes.get(data.wrote)(data.refused); writes.delete(data.wrote); return; }
  try {
    postMessage({ id: data.id, value: await scenarios[data.fn](env, data.args) });
  } catch (e) {
    postMessage({ id: data.id, error: String(e && e.stack || e) });
  }
};
postMessage({ ready: true });
