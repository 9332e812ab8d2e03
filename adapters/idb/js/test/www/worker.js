// A dedicated worker of the package's tests: the same suite and steps as a page.
import { runAll } from './suite.js';
import * as steps from './cross.js';

self.addEventListener('error', (e) => postMessage({ uncaught: e.message }));
self.addEventListener('unhandledrejection', (e) => postMessage({ uncaught: `unhandled rejection: ${e.reason?.stack ?? e.reason}` }));

self.onmessage = async ({ data }) => {
  try {
    const value = data.fn === 'suite' ? await runAll(data.args) : await steps[data.fn](data.args);
    postMessage({ id: data.id, value });
  } catch (e) {
    postMessage({ id: data.id, error: String(e?.stack ?? e) });
  }
};
postMessage({ ready: true });
