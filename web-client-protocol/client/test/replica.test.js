// The replica against the spec's worked examples, each expressed as the `update` a server sends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Replica, ReplicaError } from '../tablecast.js';
import { snapshot, update, section, row } from '../test-support/fixtures.js';

const states = () =>
  snapshot(7, [section('s1', null, null, ['Arizona', 'California', 'Delaware', 'New Jersey', 'Washington'])]);

// Sections A, B, C of rows a0…c2; section ids sA…, row ids are their values.
const threeByThree = (version = 3) =>
  snapshot(version, ['A', 'B', 'C'].map((name) => section(`s${name}`, name, null, [0, 1, 2].map((i) => `${name.toLowerCase()}${i}`))));

const replicaOf = (snap) => {
  const replica = new Replica(snap.table);
  replica.loadSnapshot(snap);
  return replica;
};

test('states list: deletes at old index paths, inserts at new ones', () => {
  const replica = replicaOf(states());
  replica.apply(update(8, {
    deleteRows: [[0, 2], [0, 4]],
    insertRows: [
      { at: [0, 0], row: row('Alaska') },
      { at: [0, 3], row: row('Georgia') },
      { at: [0, 5], row: row('Virginia') },
    ],
  }));
  assert.deepEqual(replica.values(), [['Alaska', 'Arizona', 'California', 'Georgia', 'New Jersey', 'Virginia']]);
  assert.equal(replica.version, 8);
  assert.deepEqual(replica.indexPathOfRow('Georgia'), [0, 3]);
  assert.equal(replica.indexPathOfRow('Delaware'), null);
});

test('three sections: delete a row, delete a section, insert a row at a new index path', () => {
  const replica = replicaOf(threeByThree());
  replica.apply(update(4, { deleteRows: [[0, 1]], deleteSections: [1], insertRows: [{ at: [1, 1], row: row('new') }] }));
  assert.deepEqual(replica.values(), [['a0', 'a2'], ['c0', 'new', 'c1', 'c2']]);
  assert.deepEqual(replica.sections.map((s) => s.header), ['A', 'C']);
  assert.equal(replica.indexOfSection('sB'), null);
  assert.equal(replica.indexOfSection('sC'), 1);
});

test('move section 0 to 2: A, B, C becomes B, C, A with rows travelling along', () => {
  const replica = replicaOf(threeByThree());
  replica.apply(update(4, { moveSections: [{ from: 0, to: 2 }] }));
  assert.deepEqual(replica.sections.map((s) => s.header), ['B', 'C', 'A']);
  assert.deepEqual(replica.values()[2], ['a0', 'a1', 'a2']);
});

test('row moves within a section, both directions', () => {
  const replica = replicaOf(threeByThree());
  replica.apply(update(4, { moveRows: [{ from: [0, 0], to: [0, 2] }] }));
  assert.deepEqual(replica.values()[0], ['a1', 'a2', 'a0']);
  replica.apply(update(5, { moveRows: [{ from: [0, 2], to: [0, 0] }] }));
  assert.deepEqual(replica.values()[0], ['a0', 'a1', 'a2']);
  // Two moves that swap the ends: sources old, destinations new.
  replica.apply(update(6, { moveRows: [{ from: [0, 0], to: [0, 2] }, { from: [0, 2], to: [0, 0] }] }));
  assert.deepEqual(replica.values()[0], ['a2', 'a1', 'a0']);
});

test('row moves across sections, with deletes and inserts in the same update', () => {
  const replica = replicaOf(threeByThree());
  replica.apply(update(4, {
    moveRows: [{ from: [0, 0], to: [2, 2] }, { from: [2, 0], to: [0, 0] }],
    deleteRows: [[1, 1]],
    insertRows: [{ at: [1, 0], row: row('b-new') }],
  }));
  assert.deepEqual(replica.values(), [['c0', 'a1', 'a2'], ['b-new', 'b0', 'b2'], ['c1', 'c2', 'a0']]);
  assert.deepEqual(replica.indexPathOfRow('a0'), [2, 2]);
});

test('reloads of rows and sections address the old table, before deletes shift it', () => {
  const replica = replicaOf(threeByThree());
  replica.apply(update(4, {
    deleteRows: [[0, 0]],
    reloadRows: [{ at: [0, 2], value: 'a2!', editable: false }, { at: [2, 1], value: { n: 1 } }],
    deleteSections: [0],
    reloadSections: [{ at: 2, header: 'C!', footer: 'end' }],
  }));
  assert.deepEqual(replica.sections.map((s) => [s.header, s.footer]), [['B', null], ['C!', 'end']]);
  assert.deepEqual(replica.row([1, 1]), { id: 'c1', value: { n: 1 } });

  const other = replicaOf(threeByThree());
  other.apply(update(4, { deleteRows: [[0, 0]], reloadRows: [{ at: [0, 2], value: 'a2!', editable: false, movable: false }] }));
  assert.deepEqual(other.row([0, 1]), { id: 'a2', value: 'a2!', editable: false, movable: false });
  other.apply(update(5, { reloadRows: [{ at: [0, 1], value: 'a2', editable: true }] }));
  assert.deepEqual(other.row([0, 1]), { id: 'a2', value: 'a2', movable: false });
});

test('a reload sets and clears the editing style; absent keeps it', () => {
  const replica = replicaOf(threeByThree());
  replica.apply(update(4, { reloadRows: [{ at: [0, 1], value: 'Add', editingStyle: 'insert' }, { at: [0, 2], value: 'a2', editingStyle: 'none' }] }));
  assert.deepEqual(replica.row([0, 1]), { id: 'a1', value: 'Add', editingStyle: 'insert' });
  assert.deepEqual(replica.row([0, 2]), { id: 'a2', value: 'a2', editingStyle: 'none' });
  replica.apply(update(5, { reloadRows: [{ at: [0, 1], value: 'Add item' }, { at: [0, 2], value: 'a2', editingStyle: 'delete' }] }));
  assert.deepEqual(replica.row([0, 1]), { id: 'a1', value: 'Add item', editingStyle: 'insert' });
  assert.deepEqual(replica.row([0, 2]), { id: 'a2', value: 'a2' });
});

test('a reloaded row that is also moved keeps its new value', () => {
  const replica = replicaOf(threeByThree());
  replica.apply(update(4, { reloadRows: [{ at: [1, 0], value: 'B0' }], moveRows: [{ from: [1, 0], to: [0, 0] }] }));
  assert.deepEqual(replica.row([0, 0]), { id: 'b0', value: 'B0' });
});

test('combined moves of sections and rows in one update', () => {
  const replica = replicaOf(threeByThree());
  // Old: A(a0 a1 a2) B(b0 b1 b2) C(c0 c1 c2). Section C goes first, B is deleted, a new section D goes
  // last; a1 moves into C (which carries its rows) and c2 moves into A; a row is inserted into D.
  replica.apply(update(4, {
    moveSections: [{ from: 2, to: 0 }],
    deleteSections: [1],
    insertSections: [{ at: 2, section: section('sD', 'D', null, ['d0']) }],
    moveRows: [{ from: [0, 1], to: [0, 1] }, { from: [2, 2], to: [1, 0] }],
    insertRows: [{ at: [2, 0], row: row('d-first') }],
  }));
  assert.deepEqual(replica.sections.map((s) => s.header), ['C', 'A', 'D']);
  assert.deepEqual(replica.values(), [['c0', 'a1', 'c1'], ['c2', 'a0', 'a2'], ['d-first', 'd0']]);
});

test('insert a section between others and rows into it', () => {
  const replica = replicaOf(threeByThree());
  replica.apply(update(4, {
    insertSections: [{ at: 1, section: section('sN', 'N', 'n-footer', []) }],
    insertRows: [{ at: [1, 0], row: row('n0') }, { at: [2, 3], row: row('b3') }],
  }));
  assert.deepEqual(replica.values(), [['a0', 'a1', 'a2'], ['n0'], ['b0', 'b1', 'b2', 'b3'], ['c0', 'c1', 'c2']]);
});

test('an update that is not version + 1 is refused and changes nothing', () => {
  const replica = replicaOf(states());
  const before = replica.sections;
  for (const version of [7, 9, 6]) {
    assert.throws(() => replica.apply(update(version, { deleteRows: [[0, 0]] })), (e) => e instanceof ReplicaError && e.code === 'version');
  }
  assert.equal(replica.version, 7);
  assert.deepEqual(replica.sections, before);
  assert.throws(() => new Replica('states').apply(update(1, {})), ReplicaError);
});

test('bad index paths are refused and leave the replica unchanged', () => {
  const bad = {
    'delete past the end': { deleteRows: [[0, 3]] },
    'delete in a missing section': { deleteRows: [[3, 0]] },
    'reload past the end': { reloadRows: [{ at: [2, 3], value: 1 }] },
    'reload a missing section': { reloadSections: [{ at: 3, header: null, footer: null }] },
    'delete a missing section': { deleteSections: [3] },
    'insert with a gap': { insertRows: [{ at: [0, 4], row: row('x') }] },
    'insert after the deletes shrank the section': { deleteRows: [[0, 0]], insertRows: [{ at: [0, 3], row: row('x') }] },
    'insert into a deleted section': { deleteSections: [2], insertRows: [{ at: [2, 0], row: row('x') }] },
    'move past the end': { moveRows: [{ from: [0, 0], to: [1, 4] }] },
    'move from nowhere': { moveRows: [{ from: [0, 5], to: [1, 0] }] },
    'section insert with a gap': { insertSections: [{ at: 4, section: section('sX', null, null, []) }] },
    'section move past the end': { moveSections: [{ from: 0, to: 3 }] },
    'two rows at one place': { insertRows: [{ at: [0, 1], row: row('x') }, { at: [0, 1], row: row('y') }] },
    'insert and move to one place': { insertRows: [{ at: [0, 0], row: row('x') }], moveRows: [{ from: [1, 0], to: [0, 0] }] },
    'a row deleted twice': { deleteRows: [[0, 0], [0, 0]] },
    'a row deleted and moved': { deleteRows: [[0, 0]], moveRows: [{ from: [0, 0], to: [0, 1] }] },
    'a section deleted and moved': { deleteSections: [0], moveSections: [{ from: 0, to: 1 }] },
    'a negative index': { deleteRows: [[0, -1]] },
    'a malformed index path': { deleteRows: [[0]] },
  };
  for (const [name, lists] of Object.entries(bad)) {
    const replica = replicaOf(threeByThree());
    const before = replica.sections;
    // Every refused update here also reloads a row, to show that partial work is not kept either.
    assert.throws(() => replica.apply(update(4, { reloadRows: [{ at: [0, 0], value: 'changed' }], ...lists })), ReplicaError, name);
    assert.equal(replica.version, 3, name);
    assert.deepEqual(replica.sections, before, name);
  }
});

test('state goes in and comes out deep-copied', () => {
  const snap = states();
  const replica = replicaOf(snap);
  snap.sections[0].rows[0].value = 'mutated input';
  const value = { tags: ['a'] };
  const insert = update(8, { insertRows: [{ at: [0, 0], row: { id: 'x', value } }] });
  replica.apply(insert);
  value.tags.push('mutated after apply');
  const out = replica.sections;
  out[0].rows[0].value.tags.push('mutated output');
  replica.row([0, 0]).value.tags.push('mutated row');
  assert.deepEqual(replica.row([0, 0]).value, { tags: ['a'] });
  assert.equal(replica.row([0, 1]).value, 'Arizona');
  const rules = replica.rules;
  rules.moves = 'none';
  assert.equal(replica.rules.moves, 'any');
});

test('lookups by id and position', () => {
  const replica = replicaOf(threeByThree());
  assert.equal(replica.sectionCount, 3);
  assert.equal(replica.rowCount(1), 3);
  assert.deepEqual(replica.rowById('b2'), { id: 'b2', value: 'b2' });
  assert.equal(replica.sectionById('sC').header, 'C');
  assert.equal(replica.rowById('zz'), null);
  assert.throws(() => replica.row([0, 3]), RangeError);
  assert.throws(() => replica.section(3), RangeError);
});

test('a snapshot or update for another table is refused', () => {
  const replica = replicaOf(states());
  assert.throws(() => replica.loadSnapshot({ ...states(), table: 'other' }), ReplicaError);
  assert.throws(() => replica.apply({ ...update(8, {}), table: 'other' }), ReplicaError);
  assert.equal(replica.version, 7);
});
