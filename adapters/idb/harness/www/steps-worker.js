// A dedicated worker of the scenarios: loads the page's own bundle and runs steps on request.
import init from './pkg/alkstore_idb_harness.js';
import * as steps from './steps.js';

globalThis.__wasm = await init();
self.onmessage = async ({ data }) => {
  try {
    postMessage({ id: data.id, value: await steps[data.fn](data.args) });
  } catch (e) {
    postMessage({ id: data.id, error: e && e.message ? `${e.message}` : (e && e.kind ? `${e.kind}: ${e.message}` : JSON.stringify(e)) });
  }
};
postMessage({ ready: true });
