// What several scenarios share: contexts, and the checks on a run's grants.

// `pages` pages, each with `workersPerPage` dedicated workers: all contexts.
export async function contextsFor(env, pages, workersPerPage) {
  const all = [];
  for (let p = 0; p < pages; p++) {
    const page = await env.page();
    all.push(env.inPage(page, `p${p}`));
    for (let w = 0; w < workersPerPage; w++) all.push(await env.inWorker(page, `p${p}w${w}`));
  }
  return all;
}

// The checks on the grants of a run. `recs`: { name, me, mode, token, deadlineUs, ttlUs,
// tSent, tGot, tRel, released } (times in µs of wall time, Date.now() based like the engine).
export function analyseGrants(check, label, recs, names, { fifo = true } = {}) {
  const tokens = recs.map((r) => r.token);
  check(`${label}: tokens unique across names and contexts`, new Set(tokens).size === tokens.length, `${tokens.length - new Set(tokens).size} duplicates`);
  let overlaps = 0; let order = 0; let fifoPairs = 0; let fifoBreaks = 0; let lapsedHolds = 0;
  const examples = [];
  for (const name of names) {
    const byToken = recs.filter((r) => r.name === name).sort((a, b) => a.token - b.token);
    for (let i = 1; i < byToken.length; i++) {
      const prev = byToken[i - 1]; const cur = byToken[i];
      const grant = cur.deadlineUs - cur.ttlUs;
      const prevGrant = prev.deadlineUs - prev.ttlUs;
      if (grant < prevGrant) order++;
      // The previous lease ended at its release (if it was still live then) or at its deadline.
      const end = prev.released === true ? prev.tRel : prev.deadlineUs;
      if (prev.released === false) lapsedHolds++;
      if (grant < end - (prev.released === true ? 1000 : 0)) {
        overlaps++;
        if (examples.length < 3) examples.push(`${name}: token ${prev.token} (${prev.me}, released ${prev.released}) ends ${end}, next ${cur.token} (${cur.me}) granted at ${grant}`);
      }
    }
    if (!fifo) continue;
    const acq = byToken.filter((r) => r.mode === 'acquire');
    for (const a of acq) {
      for (const b of acq) {
        if (a.tSent + 25000 < b.tSent && a.tGot > b.tSent + 25000) {
          fifoPairs++;
          if (a.token > b.token) { fifoBreaks++; if (examples.length < 6) examples.push(`FIFO ${name}: ${a.me} sent ${(b.tSent - a.tSent) / 1000} ms before ${b.me} but served after it`); }
        }
      }
    }
  }
  check(`${label}: no lease granted before the previous one of its name ended (release or deadline, engine's own times)`, overlaps === 0, `${overlaps} overlaps; ${examples.slice(0, 3).join('; ')}`);
  check(`${label}: tokens increase in grant order on every name`, order === 0, `${order} out of order`);
  if (fifo) check(`${label}: unbounded waiters served in arrival order`, fifoBreaks === 0, `${fifoPairs} pairs met in a queue, ${fifoBreaks} out of order ${examples.filter((e) => e.startsWith('FIFO')).slice(0, 2).join('; ')}`);
  return { lapsedHolds };
}

