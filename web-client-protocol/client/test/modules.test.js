// The client's ES modules (the library and the page: every top-level file) import one another without a circle,
// and every name one imports from another is exported there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';

const folder = new URL('../', import.meta.url);
const modules = new Map(readdirSync(folder).filter((name) => name.endsWith('.js')).map((name) => {
  const source = readFileSync(new URL(name, folder), 'utf8');
  const imports = [...source.matchAll(/^import\s*(?:\{([^}]*)\}\s*from\s*)?'\.\/([\w.-]+)';/gm)]
    .map(([, names = '', from]) => ({ from, names: names.split(',').map((n) => n.trim().split(/\s+as\s+/)[0]).filter(Boolean) }));
  const exported = new Set([
    ...[...source.matchAll(/^export (?:async )?(?:function|const|let|class) ([\w$]+)/gm)].map((m) => m[1]),
    ...[...source.matchAll(/^export \{([^}]*)\} from/gm)].flatMap((m) => m[1].split(',').map((n) => n.trim().split(/\s+as\s+/).pop())),
  ]);
  return [name, { imports, exported }];
}));

test('every imported module is here and exports the names imported from it', () => {
  for (const [name, { imports }] of modules) {
    for (const { from, names } of imports) {
      assert.ok(modules.has(from), `${name} imports ./${from}, which is not in client/`);
      for (const imported of names) assert.ok(modules.get(from).exported.has(imported), `${name}: ./${from} does not export ${imported}`);
    }
  }
});

test('no module imports itself through others', () => {
  const done = new Set();
  const visit = (name, path) => {
    assert.ok(!path.includes(name), `import cycle: ${[...path, name].join(' → ')}`);
    if (done.has(name)) return;
    for (const { from } of modules.get(name).imports) visit(from, [...path, name]);
    done.add(name);
  };
  for (const name of modules.keys()) visit(name, []);
});
