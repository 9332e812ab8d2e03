// The demo page: four dedicated workers share invoice/1001 through alkstore-idb; each holds it
// for a moment and adds to the ledger with its fencing token; worker-3 stalls (a busy loop, no
// event loop) past its 1.5 s lease on its first turn. The ledger's Fence refuses its late
// write. The page shows holders, tokens and the ledger live, and tells the story.
import init, * as alk from './pkg/alkstore_idb_harness.js';

await init();
const DB = 'alkstore-demo';
const NAME = 'invoice/1001';
const WORKERS = ['worker-1', 'worker-2', 'worker-3', 'worker-4'];
const locks = await alk.Locks.open(DB, 1000, 250);
// The ledger stands for one resource that every tab writes to: its Fence learns the tokens
// accepted in other tabs of the demo too (over a BroadcastChannel of its own), so that a
// second tab's stale write is refused as it would be by a real shared store.
const fence = new alk.Fence();
const ledgerChannel = new BroadcastChannel('alkstore-demo-ledger');
ledgerChannel.onmessage = ({ data }) => {
  if (typeof data !== 'number') return;
  fence.check(data);
  // In two tabs the worker that takes over a stalled lease may be the other tab's.
  if (outcome.stalledToken !== null && outcome.takeover === null && data > outcome.stalledToken) {
    outcome.takeover = { me: 'a worker of another tab', token: data };
    tell(`a worker of another tab took over (token ${short(data)}): worker-3's lease lapsed at its ttl while worker-3 was stuck`);
  }
};
const t0 = performance.now();
const story = [];
const at = () => `${((performance.now() - t0) / 1000).toFixed(2)}s`;
const $ = (id) => document.getElementById(id);
function tell(text, cls = '') {
  story.push(`${at()}  ${text}`);
  const line = document.createElement('div');
  line.textContent = `${at()}  ${text}`;
  if (cls) line.className = cls;
  $('log').append(line);
  $('log').scrollTop = $('log').scrollHeight;
}
const short = (token) => `…${String(token).slice(-6)}`;

const ledger = { total: 0, highest: null, refused: 0 };
const rows = new Map();
function show(me, state, token, writes) {
  const r = rows.get(me) ?? { writes: 0 };
  Object.assign(r, { state, token: token ?? r.token, writes: writes ?? r.writes });
  rows.set(me, r);
  $('workers').innerHTML = WORKERS.map((w) => {
    const x = rows.get(w) ?? { state: 'idle', writes: 0 };
    return `<tr><td>${w}</td><td class="state ${x.state.replace(' ', '-')}">${x.state}</td><td>${x.token ? short(x.token) : '-'}</td><td>${x.writes}</td></tr>`;
  }).join('');
}

const outcome = { refusedWrite: null, lateRelease: null, stalledToken: null, takeover: null, turns: new Map() };
const workers = WORKERS.map((me) => {
  const worker = new Worker('./demo-worker.js', { type: 'module' });
  worker.onmessage = ({ data }) => {
    if (data.write) {
      const refused = fence.check(data.write.token);
      if (refused === null) {
        ledgerChannel.postMessage(data.write.token);
        ledger.total += data.write.amount;
        ledger.highest = data.write.token;
        show(me, 'holding', data.write.token, (rows.get(me)?.writes ?? 0) + 1);
        tell(`${me} adds ${data.write.amount} with token ${short(data.write.token)}: accepted (total ${ledger.total})`);
      } else {
        ledger.refused++;
        outcome.refusedWrite = { me, token: data.write.token, why: refused };
        show(me, 'refused');
        tell(`${me} wakes up and adds ${data.write.amount} with its old token ${short(data.write.token)}: REFUSED (${refused})`, 'bad');
      }
      worker.postMessage({ wrote: data.write.id, refused });
      return;
    }
    const e = data.event;
    if (!e) return;
    if (e.kind === 'waiting') { show(me, 'waiting'); }
    if (e.kind === 'granted') {
      outcome.turns.set(me, (outcome.turns.get(me) ?? 0) + 1);
      show(me, 'holding', e.token);
      tell(`${me} holds ${NAME} with fencing token ${short(e.token)} (ttl 1.5 s)`, 'good');
      if (outcome.stalledToken !== null && outcome.takeover === null && e.token > outcome.stalledToken) {
        outcome.takeover = { me, token: e.token };
        tell(`${me} took over: worker-3's lease lapsed at its ttl while worker-3 was stuck`);
      }
    }
    if (e.kind === 'stalling') {
      outcome.stalledToken = e.token;
      show(me, 'stalled', e.token);
      tell(`${me} stalls for ${e.ms / 1000} s inside its turn (a long computation: no event loop, no keep-alive)`, 'bad');
    }
    if (e.kind === 'released') {
      if (!e.released) {
        // It stays shown as fenced off while it backs off, until it waits again.
        show(me, 'fenced off');
        outcome.lateRelease = { me, released: e.released };
        tell(`${me}'s release answers false: its lease had lapsed, and it knows it`, 'bad');
        window.demoRefused = true;
      } else {
        show(me, 'idle');
        tell(`${me} releases ${NAME}`);
      }
    }
  };
  worker.postMessage({ start: { db: DB, name: NAME, me, stall: me === 'worker-3' } });
  return worker;
});
show('worker-1', 'idle');

// The lock as IndexedDB has it, for every context of this origin.
async function poll() {
  const snap = await locks.snapshot();
  const held = snap.held.find((l) => l.name === NAME);
  $('holder').textContent = held ? held.owner : '-';
  $('token').textContent = held ? short(held.token) : '-';
  $('left').textContent = held ? `${Math.max(0, held.deadline - Date.now()).toFixed(0)} ms` : '-';
  $('waiting').textContent = snap.waiting.filter((w) => w.name === NAME).map((w) => w.owner).join(' → ') || '-';
  $('total').textContent = ledger.total;
  $('highest').textContent = ledger.highest ? short(ledger.highest) : '-';
  $('refused').textContent = ledger.refused;
}
setInterval(() => poll().catch((e) => tell(`snapshot failed: ${e}`, 'bad')), 100);

tell(`4 dedicated workers start; each waits for ${NAME}, adds to the ledger twice with its token, and releases`);
const done = new Promise((resolve) => {
  const check = setInterval(() => {
    const everyone = WORKERS.every((w) => (outcome.turns.get(w) ?? 0) >= 1);
    if ((outcome.refusedWrite && outcome.lateRelease && outcome.takeover && everyone) || performance.now() - t0 > 20000) {
      clearInterval(check);
      resolve();
    }
  }, 100);
});
await done;
await new Promise((r) => setTimeout(r, 1000));
for (const w of workers) w.postMessage({ stop: true });
await new Promise((r) => setTimeout(r, 700));
await poll();
const ok = outcome.refusedWrite !== null && outcome.lateRelease !== null && outcome.takeover !== null
  && outcome.takeover.token > outcome.stalledToken && WORKERS.every((w) => (outcome.turns.get(w) ?? 0) >= 1);
tell(ok ? 'the stale write was refused by the Fence; every accepted write came from the live holder'
  : 'the demo did not reach its end within 20 s', ok ? 'good' : 'bad');
window.demoDone = { ok, story, total: ledger.total, refused: ledger.refused, outcome: {
  refusedWrite: outcome.refusedWrite, lateRelease: outcome.lateRelease, stalledToken: outcome.stalledToken,
  takeover: outcome.takeover, turns: Object.fromEntries(outcome.turns) } };
