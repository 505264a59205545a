// A section reload that replaces the rows reaches replicas as deleteRows + insertRows (+ the header reload), in
// the lists they already apply: the recorded transcript's updates, applied to its snapshot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Replica } from '../tablecast.js';

const transcript = new URL('../../examples/section-reload.jsonl', import.meta.url);
const received = readFileSync(transcript, 'utf8').split('\n').filter((line) => line.startsWith('a< '))
  .map((line) => JSON.parse(line.slice(3)));

test('the section-reload transcript applies to a replica', () => {
  const replica = new Replica('trip');
  replica.loadSnapshot(received.find((message) => message.type === 'snapshot'));
  const updates = received.filter((message) => message.type === 'update');
  assert.equal(updates.length, 3);
  for (const update of updates) replica.apply(update);
  assert.equal(replica.version, 3);
  assert.deepEqual(replica.values(), [['passport'], ['tent', 'stove', 'headlamp'], []]);
  assert.deepEqual(replica.sections.map((section) => section.header), ['Documents', 'Packing list', 'Food']);
  assert.deepEqual(replica.sections[1].rows.map((row) => row.id), ['r6', 'r7', 'r8']);
});
