// Hostile code on the same origin (forged BroadcastChannel messages, rows written straight
// into the object stores) and hostile lock names.
import { contextsFor, analyseGrants } from './shared.mjs';

// A documented limit, measured: a flood of BroadcastChannel messages (forged or not) is a
// flood of tasks in every context of the database, which delays their own operations and
// timers. A page times its own try_lock + release cycles and a 10 ms timer, quiet and under a
// flood from another page; the figures are printed, the check only asks that the page works
// again once the flood is over.
export async function channelFlood(env) {
  const { db, check } = env;
  const victim = env.inPage(await env.page(), 'victim');
  const hostile = env.inPage(await env.page(), 'hostile');
  await victim.run('open', { db });
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const max = (xs) => Math.max(...xs);
  const cycles = () => victim.run('cycleTimes', { db, name: 'flood', owner: 'v', ttl: 5000, n: 20 });
  const line = (r) => `median ${med(r.cycles).toFixed(1)} ms, max ${max(r.cycles).toFixed(0)} ms` +
    (r.errors.length ? `, ${r.errors.length} of ${r.cycles.length} answered ${r.errors[0].slice(0, 70)}` : '');
  const quiet = await cycles();
  const quietTimer = await victim.run('timerDrift', { ms: 10, n: 20 });
  for (const n of [2500, 25000]) {
    // n x 8 short messages, posted as fast as one page can (a sleep(0) every 50 x 8).
    const messages = ['n:flood', 'w:nobody', 't:1', '*', 'x', 'n:other', 'w:', 'n:'];
    const t0 = Date.now();
    const flood = hostile.run('bcFlood', { db, messages, n }).catch((e) => ({ sent: 0, error: String(e) }));
    const loaded = await cycles().catch((e) => ({ cycles: [0], errors: [String(e)] }));
    const loadedTimer = await victim.run('timerDrift', { ms: 10, n: 20 }).catch(() => [NaN]);
    const sent = await flood;
    console.log(`   flood of ${sent.sent} channel messages from another page (posted in ${Date.now() - t0} ms): ` +
      `the victim page's try_lock + release ${line(loaded)}; its 10 ms timer: median ${med(loadedTimer)} ms, max ${max(loadedTimer)} ms`);
  }
  console.log(`   quiet, the same page: try_lock + release ${line(quiet)}; its 10 ms timer: median ${med(quietTimer)} ms`);
  await new Promise((r) => setTimeout(r, 2000));
  const after = await cycles();
  check('after a channel flood, the flooded context works again (every cycle granted and released)', after.errors.length === 0, line(after));
}

export async function forgedMessages(env) {
  const { db, check, sleep } = env;
  const all = await contextsFor(env, 2, 2);
  const hostile = env.inPage(await env.page(), 'hostile');
  const names = ['f/a', 'f/b', 'f/c'];
  await all[0].run('open', { db }); // the engine creates the database (a raw open first would make an empty one)
  const flood = (async () => {
    const out = [];
    const end = Date.now() + 4500;
    while (Date.now() < end) {
      // Real ticket ids, read from the rows, plus garbage.
      const rows = await hostile.run('rawGet', { db, store: 'locks' }).catch(() => []);
      const ids = rows.flatMap((r) => (r.queue || []).map((t) => `w:${t.id}`).concat(r.lease ? [`w:${r.lease.grantee}`] : []));
      const messages = [...ids, ...names.map((n) => `n:${n}`), '*', 'w:', 'n:', ':', 'x:y', 'w:' + 'z'.repeat(100000), { w: 1 }, 42, null];
      out.push(await hostile.run('bcFlood', { db, messages, n: 20 }));
    }
    return out.reduce((s, r) => s + r.sent, 0);
  })();
  const results = await Promise.all(all.map((c) => c.run('contend',
    { db, me: c.label, names, durationMs: 5000, ttl: 10000, holdMs: 5, tryShare: 0.2, probe: true })));
  const sent = await flood;
  const recs = results.flatMap((r) => r.records);
  const errors = results.flatMap((r) => r.errors);
  console.log(`   ${sent} forged messages (real ticket ids, n:<name>, *, garbage, 100 kB strings, non-strings) during ${recs.length} grants`);
  check('forged channel messages: no error', errors.length === 0, errors.slice(0, 2).join(' | '));
  check('forged channel messages: every release found its lease live', recs.every((r) => r.released === true));
  check('forged channel messages: the probe saw no overlap', results.every((r) => r.overlaps === 0));
  analyseGrants(check, 'forged channel messages', recs, names);
  // A holder's keep_alive and lapsed() under forged n:<name> wake-ups keep the lease.
  const w = all[1];
  await w.run('tryLock', { db, name: 'kept', owner: 'w', ttl: 3000, key: 'k' });
  await w.run('keepAliveStart', { key: 'k', every: 0 });
  await w.run('lapsedStart', { key: 'k' });
  await hostile.run('bcFlood', { db, messages: ['n:kept', '*'], n: 400, everyMs: 10 });
  const ka = await w.run('watchResult', { key: 'k', kind: 'ka', ms: 10 });
  const la = await w.run('watchResult', { key: 'k', kind: 'lapsed', ms: 10 });
  const held = await w.run('isHeld', { key: 'k' });
  check('forged n:<name> and * for 4 s: keep_alive and lapsed() go on, the lease is kept', ka.outcome === 'pending' && la.outcome === 'pending' && held.held === true, `${ka.outcome} / ${la.outcome} / ${JSON.stringify(held)}`);
  // A waiter asleep (heartbeat 10 s, the holder's deadline 30 s away): a forged '*' (the test
  // clock's wake-all) wakes nobody outside test builds; its own w:<id> does (it steps, and
  // its heartbeat in the row moves).
  await all[2].run('tryLock', { db, name: 'star', owner: 'h', ttl: 30000, key: 's' });
  await all[3].run('acquireStart', { db, hb: 10000, name: 'star', owner: 'w', ttl: 30000, key: 'sw' });
  await sleep(300);
  const beat = async () => (await hostile.run('rawGet', { db, store: 'locks', key: 'star' })).queue[0];
  const t0 = await beat();
  await hostile.run('bcFlood', { db, messages: ['*'], n: 50 });
  await sleep(300);
  const t1 = await beat();
  await hostile.run('bcFlood', { db, messages: [`w:${t0.id}`], n: 1 });
  await sleep(300);
  const t2 = await beat();
  check("a forged '*' wakes no sleeper in a production build (the waiter's heartbeat untouched)", t1.heartbeatUntil === t0.heartbeatUntil, `${t0.heartbeatUntil} -> ${t1.heartbeatUntil}`);
  check("... while a w:<id> naming it does (the observation works)", t2.heartbeatUntil > t1.heartbeatUntil, `${t1.heartbeatUntil} -> ${t2.heartbeatUntil}`);
}

// Rows written straight into the stores.
export async function forgedRows(env) {
  const { db, check } = env;
  const page = await env.page();
  const h = env.inPage(page, 'hostile');
  const a = await env.inWorker(page, 'a');
  const b = await env.inWorker(page, 'b');
  await a.run('open', { db });
  const now = Date.now() * 1000;
  // 1. The token counter at its ceiling: every grant gets the same token.
  const MAX = 2 ** 53 - 1;
  await h.run('rawPut', { db, store: 'meta', value: { key: 'clock', token: MAX - 1, floor: now } });
  const t1 = await a.run('tryLock', { db, name: 'c', owner: 'a', ttl: 100, key: 'c1' });
  await a.run('release', { key: 'c1' });
  const t2 = await b.run('tryLock', { db, name: 'c', owner: 'b', ttl: 100, key: 'c2' });
  await b.run('release', { key: 'c2' });
  const t3 = await a.run('tryLock', { db, name: 'c', owner: 'a', ttl: 100, key: 'c3' });
  console.log(`   clock row forged to token 2^53-2: grants get tokens ${t1.token}, ${t2.token}, ${t3.token && t3.token}`);
  check('a counter at its ceiling: the engine refuses (Unavailable) rather than granting equal tokens',
    !(t2.token && t3.token && t3.token <= t2.token), `tokens ${t1.token}, ${t2.token}, ${t3.token}: equal tokens pass a Fence`);
  check('... with a reason saying so', [t2, t3].some((t) => t && t.error && /ceiling/.test(t.error)), `${JSON.stringify(t2)} ${JSON.stringify(t3)}`);
  // The clock row put back (as deleting the database would), so that the rows below decide.
  await h.run('rawPut', { db, store: 'meta', value: { key: 'clock', token: 0, floor: 0 } });
  // 2. Odd but well-typed rows: no panic, a clear answer.
  const cases = {
    'lease deadline at 2^53-1': { name: 'r1', lease: { owner: 'x', token: 1, deadline: MAX, ttl: 1, grantee: '', claimed: true, pickupBy: 0 }, queue: [] },
    'duplicate ticket ids': { name: 'r2', lease: { owner: 'x', token: 1, deadline: 0, ttl: 1, grantee: '', claimed: true, pickupBy: 0 },
      queue: [{ id: 't', owner: 'o1', ttl: 1e6, waitUntil: 0, heartbeatUntil: MAX }, { id: 't', owner: 'o2', ttl: 1e6, waitUntil: 0, heartbeatUntil: MAX }] },
    '20000 tickets': { name: 'r3', lease: { owner: 'x', token: 1, deadline: now + 60e6, ttl: 1, grantee: '', claimed: true, pickupBy: 0 },
      queue: Array.from({ length: 20000 }, (_, i) => ({ id: `t${i}`, owner: `o${i}`, ttl: 1e6, waitUntil: 0, heartbeatUntil: now + 60e6 })) },
    'negative number': { name: 'r4', lease: { owner: 'x', token: -1, deadline: 0, ttl: 1, grantee: '', claimed: true, pickupBy: 0 }, queue: [] },
    'NaN': { name: 'r5', queue: [{ id: 't', owner: 'o', ttl: NaN, waitUntil: 0, heartbeatUntil: 0 }] },
    'lease null, no queue': { name: 'r6', lease: null },
    'unclaimed hand-off, pickup 0': { name: 'r7', lease: { owner: 'x', token: 5, deadline: MAX, ttl: 1, grantee: 'g', claimed: false, pickupBy: 0 }, queue: [] },
    'lone surrogate in the name': { name: 'r8\uD800', lease: { owner: 'x\uDC00', token: 1, deadline: 0, ttl: 1, grantee: '', claimed: true, pickupBy: 0 },
      queue: [{ id: 't', owner: 'o\uD800', ttl: 1e6, waitUntil: 0, heartbeatUntil: MAX }] },
  };
  for (const [label, row] of Object.entries(cases)) {
    await h.run('rawPut', { db, store: 'locks', value: row });
    const t0 = Date.now();
    const r = await a.run('tryLock', { db, name: row.name, owner: 'a', ttl: 5000, key: `x-${row.name}` });
    const s = await a.run('snapshot', { db });
    const dt = Date.now() - t0;
    console.log(`   ${label}: try_lock ${r === null ? 'busy' : r.error ? r.error.slice(0, 110) : `granted ${r.token}`}; snapshot ${s.error ? s.error.slice(0, 80) : `${s.snap.held.length} held, ${s.snap.waiting.length} waiting`} (${dt} ms)`);
    check(`forged row (${label}): an answer, no panic`, r === null || r.error || r.token);
    if (label === '20000 tickets') {
      check('a forged queue longer than a queue can be is refused as a row alkstore-idb did not write', r && r.error && /at most 256/.test(r.error), JSON.stringify(r).slice(0, 160));
    }
    await h.run('rawDeleteRow', { db, store: 'locks', key: row.name });
    if (r && r.token) await a.run('release', { key: `x-${row.name}` });
  }
  const rows = await h.run('rawGet', { db, store: 'locks' });
  console.log(`   rows left: ${JSON.stringify(rows.map((r) => r.name))}`);
  check('a forged row under a name with a lone surrogate does not make the engine write rows under another name', rows.length === 0, JSON.stringify(rows.map((r) => r.name)));
}

const NAMES = [
  '𝄞'.repeat(64), // 256 bytes
  'é'.repeat(128), // 256 bytes, 2-byte chars
  'a"b\'c`d', 'back\\slash', 'n:x', 'w:y', '*', ':', 'a:b:c', '\u202ertl', 'zero\u200bwidth',
  'e\u0301', '\u00e9', '👩‍👩‍👧', '\uffff', '\ufeffbom', ' ', '\u00a0nbsp', '\u{10ffff}',
];

export async function hostileNames(env) {
  const { db, check, sleep } = env;
  const page = await env.page();
  const p = env.inPage(page, 'page');
  const w = await env.inWorker(page, 'worker');
  const owner = 'ow"n\\er ✓ 𝄞';
  const bad = [];
  for (const name of NAMES) {
    const g = await w.run('tryLock', { db, name, owner, ttl: 30000, key: name });
    if (!g || g.error) { bad.push(`${JSON.stringify(name)}: ${g && g.error}`); continue; }
    const h = (await p.run('holder', { db, name })).holder;
    if (!h || h.name !== name || h.owner !== owner || h.token !== g.token || h.deadlineUs !== g.info.deadlineUs) bad.push(`${JSON.stringify(name)} holder ${JSON.stringify(h)}`);
  }
  check(`${NAMES.length} hostile names (256-byte multibyte, quotes, ':', '*', NFC/NFD, RTL, U+FFFF, U+10FFFF): granted in a worker, holder() in the page matches exactly`, bad.length === 0, bad.slice(0, 3).join('; '));
  const snap = (await p.run('snapshot', { db })).snap;
  const shown = snap.held.map((h) => h.name);
  check('snapshot shows every hostile name exactly, once', NAMES.every((n) => shown.filter((s) => s === n).length === 1) && shown.length === NAMES.length, `${shown.length} shown`);
  const sorted = [...shown].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  check('... sorted by name (UTF-8 byte order, as Rust orders strings)', JSON.stringify(sorted) === JSON.stringify(shown));
  // Wake-ups over the channel route by name: a waiter (heartbeat 10 s, holder's ttl 30 s) is
  // woken by the release, and a keep_alive by a force_release, for each name.
  const slow = [];
  for (const name of ['n:x', 'a:b:c', '*', 'e\u0301', '𝄞'.repeat(64)]) {
    await p.run('acquireStart', { db, hb: 10000, name, owner: 'waiter', ttl: 30000, key: `w-${name}` });
    await sleep(100);
    const rel = await w.run('release', { key: name });
    const g = await Promise.race([p.run('acquireFinish', { key: `w-${name}` }), sleep(3000).then(() => null)]);
    if (!g || !g.token || g.tGot - rel.at > 300) slow.push(`${JSON.stringify(name)}: ${g ? g.tGot - rel.at : 'none'} ms`);
    await p.run('keepAliveStart', { key: `w-${name}`, every: 10000 });
    const fr = await w.run('forceRelease', { db, name });
    const ka = await p.run('watchResult', { key: `w-${name}`, kind: 'ka', ms: 1000 });
    if (ka.kind !== 'Expired' || ka.at - fr.done > 300) slow.push(`${JSON.stringify(name)} keep_alive after force_release: ${ka.outcome}`);
  }
  check('wake-ups route by name for names with ":", "*", NFD, 256 bytes (release -> waiter, force_release -> keep_alive, < 300 ms)', slow.length === 0, slow.join('; '));
  const tooLong = await w.run('tryLock', { db, name: `${'𝄞'.repeat(64)}a`, owner, ttl: 1000 });
  check('a 257-byte name is refused with InvalidName', tooLong && tooLong.error && tooLong.error.startsWith('InvalidName'), JSON.stringify(tooLong));
}
