// The harness page: loads the bundle, runs scenarios for the driver (window.run), starts
// dedicated workers that load the same bundle (window.spawn) and keeps the fenced ledger that
// workers write to.
import init, * as alk from './pkg/alkstore_idb_harness.js';
import * as scenarios from './cross.js';

await init();
const ledger = new alk.Fence();
window.ledgerLog = [];
function ledgerWrite(token, who) {
  const refused = ledger.check(token);
  window.ledgerLog.push({ who, token, refused, at: scenarios.now() });
  return refused;
}
const env = { ledgerWrite: async (token, who) => ledgerWrite(token, who) };

window.run = (fn, args) => scenarios[fn](env, args);
window.alk = alk;

const workers = new Map();
let nextCall = 0;
window.spawn = (label) => new Promise((resolve, reject) => {
  const worker = new Worker('./worker.js', { type: 'module' });
  const calls = new Map();
  worker.onmessage = ({ data }) => {
    if (data.ready) { workers.set(label, { worker, calls }); resolve(label); return; }
    if (data.write) { worker.postMessage({ wrote: data.write.id, refused: ledgerWrite(data.write.token, data.write.who) }); return; }
    const call = calls.get(data.id);
    calls.delete(data.id);
    if ('error' in data) call.reject(new Error(`${label}: ${data.error}`)); else call.resolve(data.value);
  };
  worker.onerror = (e) => reject(new Error(`${label}: ${e.message}`));
});
window.call = (label, fn, args) => new Promise((resolve, reject) => {
  const { worker, calls } = workers.get(label);
  const id = nextCall++;
  calls.set(id, { resolve, reject });
  worker.postMessage({ id, fn, args });
});
// Terminates the worker; answers when (this page's clock, ms since the epoch).
window.terminate = (label) => { const at = scenarios.now(); workers.get(label).worker.terminate(); workers.delete(label); return at; };
window.ready = true;
