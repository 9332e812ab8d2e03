// A page of the package's tests: runs the suite or a cross-context step here, and spawns
// dedicated workers that run them there. The Node driver calls window.run / window.call.
import { runAll } from './suite.js';
import * as steps from './cross.js';

// Uncaught errors and unhandled rejections here and in this page's workers: the driver
// fails the run when any happened.
window.uncaught = [];
window.addEventListener('error', (e) => window.uncaught.push(`page: ${e.message}`));
window.addEventListener('unhandledrejection', (e) => window.uncaught.push(`page: unhandled rejection: ${e.reason?.stack ?? e.reason}`));

const workers = new Map();
let nextId = 0;
const waiting = new Map();

window.run = (fn, args) => (fn === 'suite' ? runAll(args) : steps[fn](args));

window.spawn = (label) => new Promise((resolve, reject) => {
  const worker = new Worker('./worker.js', { type: 'module' });
  worker.onmessage = ({ data }) => {
    if (data.uncaught) {
      window.uncaught.push(`worker ${label}: ${data.uncaught}`);
      return;
    }
    if (data.ready) {
      workers.set(label, worker);
      resolve();
      return;
    }
    const w = waiting.get(data.id);
    waiting.delete(data.id);
    if ('error' in data) w.reject(new Error(data.error));
    else w.resolve(data.value);
  };
  worker.onerror = (e) => reject(new Error(`worker ${label}: ${e.message}`));
});

window.call = (label, fn, args) => new Promise((resolve, reject) => {
  const id = nextId++;
  waiting.set(id, { resolve, reject });
  workers.get(label).postMessage({ id, fn, args });
});

window.terminate = (label) => {
  workers.get(label).terminate();
  workers.delete(label);
};

window.ready = true;
