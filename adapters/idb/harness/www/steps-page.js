// A page of the scenarios: runs steps for the driver (window.run) and starts dedicated workers
// that load the same bundle (window.spawn); each worker runs the same steps (window.call).
import init from './pkg/alkstore_idb_harness.js';
import * as steps from './steps.js';

globalThis.__wasm = await init();
window.run = (fn, args) => steps[fn](args);
const workers = new Map();
let nextCall = 0;
window.spawn = (label) => new Promise((resolve, reject) => {
  const worker = new Worker('./steps-worker.js', { type: 'module' });
  const calls = new Map();
  worker.onmessage = ({ data }) => {
    if (data.ready) { workers.set(label, { worker, calls }); resolve(label); return; }
    const call = calls.get(data.id);
    calls.delete(data.id);
    if ('error' in data) call.reject(new Error(`${label}: ${data.error}`)); else call.resolve(data.value);
  };
  worker.onerror = (e) => reject(new Error(`${label}: ${e.message}`));
});
window.call = (label, fn, args) => new Promise((resolve, reject) => {
  const w = workers.get(label);
  if (!w) { reject(new Error(`no worker ${label}`)); return; }
  const id = nextCall++;
  w.calls.set(id, { resolve, reject });
  w.worker.postMessage({ id, fn, args });
});
window.terminate = (label) => { workers.get(label).worker.terminate(); workers.delete(label); };
window.ready = true;
