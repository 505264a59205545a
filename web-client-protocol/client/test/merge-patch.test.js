// RFC 7386 merge patches in the JS client (../merge-patch.js), as the server applies them: the RFC's examples,
// and the undoing patch of random patches on random values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mergePatch, mergePatchUndoing, sameJSON } from '../merge-patch.js';

test('the examples of RFC 7386, appendix A', () => {
  const cases = [
    ['{"a":"b"}', '{"a":"c"}', '{"a":"c"}'], ['{"a":"b"}', '{"b":"c"}', '{"a":"b","b":"c"}'],
    ['{"a":"b"}', '{"a":null}', '{}'], ['{"a":"b","b":"c"}', '{"a":null}', '{"b":"c"}'],
    ['{"a":["b"]}', '{"a":"c"}', '{"a":"c"}'], ['{"a":"c"}', '{"a":["b"]}', '{"a":["b"]}'],
    ['{"a":{"b":"c"}}', '{"a":{"b":"d","c":null}}', '{"a":{"b":"d"}}'], ['{"a":[{"b":"c"}]}', '{"a":[1]}', '{"a":[1]}'],
    ['["a","b"]', '["c","d"]', '["c","d"]'], ['{"a":"b"}', '["c"]', '["c"]'], ['{"a":"foo"}', 'null', 'null'],
    ['{"a":"foo"}', '"bar"', '"bar"'], ['{"e":null}', '{"a":1}', '{"e":null,"a":1}'],
    ['[1,2]', '{"a":"b","c":null}', '{"a":"b"}'], ['{}', '{"a":{"bb":{"ccc":null}}}', '{"a":{"bb":{}}}'],
  ];
  for (const [target, patch, result] of cases) {
    assert.deepEqual(mergePatch(JSON.parse(target), JSON.parse(patch)), JSON.parse(result), `${target} + ${patch}`);
  }
});

test('the undoing patch restores the value and names only what the patch named', () => {
  let seed = 7;
  const random = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const value = (depth, nulls) => {
    switch (random(depth > 0 ? 10 : 5)) {
      case 0: return nulls ? null : false;
      case 1: return random(2) === 0;
      case 2: return random(4);
      case 3: return ['a', 'b'][random(2)];
      case 4: return [1];
      default: {
        const object = {};
        for (let i = random(4); i > 0; i -= 1) object[['title', 'done', 'qty', 'tags'][random(4)]] = value(depth - 1, nulls);
        return object;
      }
    }
  };
  for (let i = 0; i < 2000; i += 1) {
    const before = value(2, false);
    const patch = value(2, true);
    const undoing = mergePatchUndoing(before, patch);
    assert.notEqual(undoing, null, `${JSON.stringify(patch)} on ${JSON.stringify(before)}`);
    assert.ok(sameJSON(mergePatch(mergePatch(before, patch), undoing), before));
  }
  assert.equal(mergePatchUndoing({ a: null, b: 1 }, { a: 2 }), null);
  assert.deepEqual(mergePatchUndoing({ a: null, b: 1 }, { b: 2 }), { b: 1 });
});
