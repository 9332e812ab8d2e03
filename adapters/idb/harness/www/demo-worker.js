// A demo worker: one candidate of the election (demo-common.js), named by its page.
import { candidate } from './demo-common.js';

self.onmessage = ({ data }) => {
  if (data?.me) candidate({ me: data.me }).catch((e) => postMessage({ error: String(e?.stack ?? e) }));
};
