// The demo page: a leader election a person can watch. Every tab of this page is a candidate
// and starts two dedicated workers that are candidates too; they all stand for `leader`
// through alkstore-idb's npm package (AlkLocks.request with a ttl), and the leader appends to
// a log fenced by its token. Close the leader's tab: another candidate takes over at once
// (the closed tab's presence lock is gone), with a larger token. Freeze the leader: its lease
// lapses at its ttl, another takes over, and its late write is refused by the log's fence.
// Each tab shows every candidate, the lock as query() sees it, the log and the story.
import { AlkLocks } from '/alk/index.js';
import { DB, NAME, TTL, FREEZE_MS, EVENTS, CONTROL, candidate, openLedger, readLedger } from './demo-common.js';

const n = Number(localStorage.getItem('alkstore-demo-tabs') ?? 0) + 1;
localStorage.setItem('alkstore-demo-tabs', String(n));
const TAB = `tab ${n}`;
const $ = (id) => document.getElementById(id);
$('me').textContent = TAB;
document.title = `${TAB}: alkstore-idb leader election`;
$('ttl').textContent = `${TTL / 1000} s`;
$('freeze').textContent = `Freeze the leader for ${FREEZE_MS / 1000} s`;

const clock = (at) => new Date(at).toISOString().slice(11, 23);
const story = [];
function tell(at, text, cls = '') {
  story.push(`${clock(at)}  ${text}`);
  const line = document.createElement('div');
  line.textContent = `${clock(at)}  ${text}`;
  if (cls) line.className = cls;
  $('log').append(line);
  $('log').scrollTop = $('log').scrollHeight;
}
const secs = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);
const tabOf = (who) => who.split(' · ')[0];

// What every candidate of every tab says (demo-common.js's `tell`).
const candidates = new Map(); // who -> { state, token }
const closed = new Map(); // tab -> when its page hid for good
const frozen = new Map(); // who -> { at, token }
let leader = null; // { who, token, at }
const outcome = { leaders: [], takeovers: [], refused: [], closed: [] };
function onEvent(e) {
  const c = candidates.get(e.who) ?? { state: '', token: null };
  candidates.set(e.who, c);
  switch (e.kind) {
    case 'waiting': c.state = 'waiting'; break;
    case 'leader': {
      c.token = e.token;
      if (closed.has(tabOf(e.who))) {
        // A worker of the closing tab, handed the lease as its page went: it dies with the
        // page, and the lease goes on at once as its presence lock goes.
        c.state = 'gone';
        tell(e.at, `${e.who} was handed the lease (token ${e.token}) as its tab closed: it goes with it`);
        break;
      }
      c.state = 'leader';
      outcome.leaders.push({ who: e.who, token: e.token, at: e.at });
      const prev = leader;
      leader = { who: e.who, token: e.token, at: e.at };
      if (!prev) { tell(e.at, `${e.who} is the leader, fencing token ${e.token}`, 'good'); break; }
      const larger = e.token > prev.token ? `token ${e.token} > ${prev.token}` : `token ${e.token}, NOT larger than ${prev.token}`;
      const t = { who: e.who, token: e.token, prev: prev.who, prevToken: prev.token, why: 'released', ms: null };
      if (closed.has(tabOf(prev.who))) {
        t.why = 'closed';
        t.ms = e.at - closed.get(tabOf(prev.who));
        tell(e.at, `${e.who} takes over ${secs(t.ms)} after ${tabOf(prev.who)} was closed (the ttl is ${secs(TTL)}): ${larger}`, 'good');
      } else if (frozen.has(prev.who)) {
        t.why = 'frozen';
        t.ms = e.at - frozen.get(prev.who).at;
        tell(e.at, `${e.who} takes over ${secs(t.ms)} after ${prev.who} froze: its lease lapsed at its ttl; ${larger}`, 'good');
      } else {
        tell(e.at, `${e.who} is the leader after ${prev.who}: ${larger}`, 'good');
      }
      outcome.takeovers.push(t);
      break;
    }
    case 'wrote': c.state = 'leader'; break;
    case 'freezing':
      c.state = 'frozen';
      frozen.set(e.who, { at: e.at, token: e.token });
      tell(e.at, `${e.who} freezes for ${secs(e.ms)} while leading (a long synchronous loop: no keep-alive)`, 'bad');
      break;
    case 'refused':
      c.state = 'fenced off';
      outcome.refused.push({ who: e.who, token: e.token, highest: e.highest, at: e.at });
      tell(e.at, `${e.who} wakes up and writes with its old token ${e.token}: REFUSED by the log's fence (highest ${e.highest})`, 'bad');
      break;
    case 'lost': c.state = 'fenced off'; tell(e.at, `${e.who} learns it lost the lease and stands again`); break;
    case 'stepped down': c.state = 'waiting'; break;
    case 'closing':
      closed.set(e.who, e.at);
      outcome.closed.push({ tab: e.who, at: e.at });
      for (const [who, x] of candidates) if (tabOf(who) === e.who) x.state = 'gone';
      tell(e.at, `${e.who} is closed${leader && tabOf(leader.who) === e.who ? ` (the leader's tab: ${leader.who})` : ''}`, 'bad');
      break;
  }
  render();
}
const events = new BroadcastChannel(EVENTS);
events.onmessage = ({ data }) => onEvent(data);
addEventListener('pagehide', (e) => {
  if (!e.persisted) events.postMessage({ kind: 'closing', who: TAB, at: Date.now() });
});

let held = null;
let log = null;
function render() {
  const rows = [...candidates].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }));
  $('candidates').innerHTML = rows.map(([who, c]) => {
    const here = tabOf(who) === TAB ? ' (this tab)' : '';
    return `<tr class="${c.state.replace(' ', '-')}"><td>${who}${here}</td><td class="state">${c.state}</td><td>${c.token ?? '-'}</td></tr>`;
  }).join('');
  if (held !== null) {
    const h = held.held.find((l) => l.name === NAME);
    $('holder').textContent = h ? h.owner : '-';
    $('token').textContent = h ? h.token : '-';
    $('left').textContent = h ? secs(Math.max(0, h.deadline - Date.now())) : '-';
    $('queue').textContent = held.pending.filter((p) => p.name === NAME).map((p) => p.owner).join(' → ') || '-';
  }
  if (log !== null) {
    $('highest').textContent = log.highest || '-';
    $('accepted').textContent = log.accepted;
    $('entries').innerHTML = log.entries.slice(-4).reverse().map((x) => `<tr><td>${clock(x.at)}</td><td>${x.who}</td><td>${x.token}</td><td class="good">accepted</td></tr>`).join('')
      + log.refused.slice(-2).reverse().map((x) => `<tr class="refused"><td>${clock(x.at)}</td><td>${x.who}</td><td>${x.token}</td><td>REFUSED</td></tr>`).join('');
  }
}

// The lock (query(): every context of the origin) and the log, 5 times a second. A frozen page
// must have no transaction in flight (it would hold IndexedDB for the whole origin): the page's
// candidate stops these polls and waits for the last one before it freezes.
const view = await AlkLocks.open(DB);
const ledger = await openLedger();
let polling = true;
let inFlight = Promise.resolve();
setInterval(() => {
  if (!polling) return;
  inFlight = Promise.all([view.query(), readLedger(ledger)])
    .then(([q, l]) => {
      held = q;
      log = l;
      // A tab opened after the election learns the leader and the queue from the lock itself.
      const h = q.held.find((x) => x.name === NAME);
      if (h && !leader) {
        leader = { who: h.owner, token: h.token, at: Date.now() };
        tell(leader.at, `${h.owner} is the leader, fencing token ${h.token} (as this tab opened)`, 'good');
      }
      for (const x of [...q.held, ...q.pending]) {
        if (x.name === NAME && !candidates.has(x.owner)) candidates.set(x.owner, { state: x.token ? 'leader' : 'waiting', token: x.token });
      }
      render();
    })
    .catch((e) => tell(Date.now(), `poll failed: ${e}`, 'bad'));
}, 200);

$('freeze').onclick = () => {
  const h = held?.held.find((l) => l.name === NAME);
  if (h) new BroadcastChannel(CONTROL).postMessage({ freeze: h.owner, ms: FREEZE_MS });
};

// This tab's candidates: the page itself first, then two dedicated workers.
candidate({
  me: TAB,
  quiesce: async () => { polling = false; await inFlight; },
  resume: () => { polling = true; },
}).catch((e) => tell(Date.now(), `${TAB}: ${e}`, 'bad'));
setTimeout(() => {
  for (const w of ['worker a', 'worker b']) {
    const worker = new Worker('./demo-worker.js', { type: 'module' });
    worker.onmessage = ({ data }) => { if (data.error) tell(Date.now(), `${TAB} · ${w}: ${data.error}`, 'bad'); };
    worker.postMessage({ me: `${TAB} · ${w}` });
  }
}, 300);
window.demo = { tab: TAB, story, outcome, candidates: () => Object.fromEntries([...candidates].map(([w, c]) => [w, c.state])) };
