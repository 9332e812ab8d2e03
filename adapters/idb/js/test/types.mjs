// The types in index.d.ts against what the module does, in a page: every export declared
// and every declaration exported; each class's public members (instance and static) the
// same both ways; the objects query() and holder() answer carry exactly the fields of
// LockInfo, LockManagerSnapshot and LeaseInfo; Lease.renew() resolves with undefined (void).
// Read with the TypeScript compiler's parser (typescript from test/package-lock.json).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** What index.d.ts declares: { exports: {name: kind}, classes: {name: {instance, statics}}, interfaces: {name: {required, optional}} }. */
function declared(dts) {
  const ts = createRequire(path.join(here, 'package.json'))('typescript');
  const sf = ts.createSourceFile('index.d.ts', dts, ts.ScriptTarget.Latest, true);
  const has = (node, kind) => (ts.getModifiers?.(node) ?? node.modifiers ?? []).some((m) => m.kind === kind);
  const out = { exports: {}, classes: {}, interfaces: {} };
  for (const st of sf.statements) {
    if (ts.isClassDeclaration(st) && st.name) {
      const c = { instance: new Set(), statics: new Set(), optional: new Set() };
      for (const m of st.members) {
        if (ts.isConstructorDeclaration(m) || !m.name || has(m, ts.SyntaxKind.PrivateKeyword)) continue;
        const name = m.name.getText(sf);
        (has(m, ts.SyntaxKind.StaticKeyword) ? c.statics : c.instance).add(name);
        if (m.questionToken) c.optional.add(name);
      }
      out.classes[st.name.text] = c;
      out.exports[st.name.text] = 'class';
    } else if (ts.isFunctionDeclaration(st) && st.name) {
      out.exports[st.name.text] = 'function';
    } else if (ts.isVariableStatement(st)) {
      for (const d of st.declarationList.declarations) out.exports[d.name.getText(sf)] = 'value';
    } else if (ts.isInterfaceDeclaration(st)) {
      const i = { required: [], optional: [] };
      for (const m of st.members) if (m.name) (m.questionToken ? i.optional : i.required).push(m.name.getText(sf));
      out.interfaces[st.name.text] = i;
    }
  }
  return out;
}

/** Checks the package unpacked at `pkg` in `page` (served at /pkg/); records with `check`. */
export async function checkTypes({ pkg, page, db, check }) {
  const d = declared(fs.readFileSync(path.join(pkg, 'index.d.ts'), 'utf8'));
  const wanted = Object.fromEntries(Object.entries(d.classes).map(([k, c]) => [k, [...c.instance]]));
  const runtime = await page.evaluate(async ([db, wanted]) => {
    const m = await import('/pkg/index.js');
    const isClass = (v) => typeof v === 'function' && /^class\b/.test(Function.prototype.toString.call(v));
    const names = (o, skip) => Object.getOwnPropertyNames(o).filter((n) => !skip.includes(n) && !n.startsWith('__'));
    const classes = {};
    for (const [k, v] of Object.entries(m)) {
      if (!isClass(v)) continue;
      classes[k] = {
        instance: names(v.prototype, ['constructor']),
        statics: names(v, ['length', 'name', 'prototype']),
      };
    }
    const locks = await m.AlkLocks.open(db);
    const lease = await locks.tryLock('types/held', { ttl: 10000 });
    const waiting = locks.acquire('types/held', { wait: 5000 });
    await new Promise((r) => setTimeout(r, 100));
    const q = await locks.query();
    const renewed = await lease.renew();
    const holder = await locks.holder('types/held');
    await lease.release();
    await (await waiting)?.release();
    return {
      exports: Object.fromEntries(Object.entries(m).map(([k, v]) => [k, isClass(v) ? 'class' : typeof v === 'function' ? 'function' : 'value'])),
      classes,
      // Declared members found on the prototype chain (inherited ones included).
      inChain: Object.fromEntries(Object.entries(wanted).filter(([k]) => m[k]?.prototype).map(([k, ms]) => [k, ms.filter((x) => x in m[k].prototype)])),
      snapshot: Object.keys(q),
      held: Object.keys(q.held.find((h) => h.name === 'types/held') ?? {}),
      pending: Object.keys(q.pending.find((h) => h.name === 'types/held') ?? {}),
      holder: Object.keys(holder ?? {}),
      renewed: renewed === undefined,
    };
  }, [`${db}-types`, wanted]);
  const same = (a, b) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
  check('types: every export is declared in index.d.ts with its kind, and every declaration is exported',
    JSON.stringify(Object.entries(runtime.exports).sort()) === JSON.stringify(Object.entries(d.exports).sort()),
    `runtime ${JSON.stringify(runtime.exports)}, declared ${JSON.stringify(d.exports)}`);
  const problems = [];
  for (const [name, c] of Object.entries(d.classes)) {
    const r = runtime.classes[name];
    if (!r) continue;
    const found = new Set(runtime.inChain[name] ?? []);
    const missing = [...c.instance].filter((n) => !c.optional.has(n) && !found.has(n));
    const undeclared = r.instance.filter((n) => !c.instance.has(n));
    if (missing.length) problems.push(`${name} lacks ${missing.join(',')}`);
    if (undeclared.length) problems.push(`${name} has undeclared ${undeclared.join(',')}`);
    if (!same(r.statics, c.statics)) problems.push(`${name} statics: ${r.statics.join(',')} vs declared ${[...c.statics].join(',')}`);
  }
  check('types: each class\'s public members and statics are the declared ones, both ways', problems.length === 0, problems.join('; '));
  const fields = (i) => [...d.interfaces[i].required];
  check('types: query() answers LockManagerSnapshot, its entries LockInfo (held and pending), holder() LeaseInfo, exactly',
    same(runtime.snapshot, fields('LockManagerSnapshot')) && same(runtime.held, fields('LockInfo')) && same(runtime.pending, fields('LockInfo')) && same(runtime.holder, fields('LeaseInfo')),
    JSON.stringify({ snapshot: runtime.snapshot, held: runtime.held, pending: runtime.pending, holder: runtime.holder }));
  check('types: Lease.renew() resolves with undefined (Promise<void>)', runtime.renewed);
}
