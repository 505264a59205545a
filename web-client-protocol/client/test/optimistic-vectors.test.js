// The shared optimistic-edit vectors (../../vectors/optimistic/*.json, generated from the Swift engine by
// OptimisticVectorTests) replayed on the JS OptimisticTable: after every step, what it sends and the predicted
// table it shows are the engine's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { OptimisticTable, OptimisticError } from '../optimistic.js';

const directory = new URL('../../vectors/optimistic/', import.meta.url);
const files = readdirSync(directory).filter((name) => name.endsWith('.json')).sort();

test('there are vectors', () => assert.ok(files.length >= 6));

for (const file of files) {
  const vector = JSON.parse(readFileSync(new URL(file, directory), 'utf8'));
  test(`${vector.name}: ${vector.description}`, () => {
    const table = new OptimisticTable(vector.table);
    vector.steps.forEach((step, index) => {
      const where = `${file} step ${index} (${step.step})`;
      let result;
      switch (step.step) {
        case 'submit':
          result = table.submit(step.intent);
          assert.equal(result.id, step.id, where);
          assert.deepEqual(result.send, step.send, where);
          break;
        case 'undo':
        case 'redo':
          if (step.error) {
            assert.throws(() => table[step.step](), (error) => error instanceof OptimisticError && error.code === step.error.code, where);
          } else {
            result = table[step.step]();
            assert.equal(result?.id ?? null, step.id, where);
            assert.deepEqual(result?.send ?? null, step.send, where);
          }
          break;
        case 'update':
          table.receive(step.batch, step.own);
          break;
        case 'ack':
        case 'error':
          result = step.step === 'ack' ? table.acknowledge(step.created) : table.refuse(step.error);
          assert.deepEqual(result.send, step.send, where);
          assert.deepEqual(result.accepted, step.accepted, where);
          assert.deepEqual(result.refused.map((r) => [r.id, r.code]), step.refused.map((r) => [r.id, r.code]), where);
          if (step.shares) assert.deepEqual(result.shares, step.shares, `${where}: shares`);
          break;
        default:
          assert.fail(`${where}: unknown step`);
      }
      assert.deepEqual(table.predicted.sections, step.predicted.sections, `${where}: predicted`);
      assert.equal(table.pendingCount, step.pending, `${where}: pending`);
    });
  });
}
