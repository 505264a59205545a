// The table-view rules as the page checks them (rules.js), against the server's rules in ../../README.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_RULES, ROW_DEFAULTS, canDelete, canEdit, canMove, endOfRows, flagOf, isPlaceholder, isReservedLastRow,
  mayMoveInto, rowContent,
} from '../rules.js';

// One section: a plain row, a locked one, an unmovable one, an insert placeholder, a none row, a plain last row.
const section = {
  id: 's1',
  rows: [
    { id: 'r1', value: 'plain' },
    { id: 'r2', value: 'locked', editable: false },
    { id: 'r3', value: 'pinned', movable: false },
    { id: 'r4', value: 'Add…', editingStyle: 'insert' },
    { id: 'r5', value: 'water', editingStyle: 'none' },
    { id: 'r6', value: 'last' },
  ],
};
const reserving = { ...DEFAULT_RULES, reserveLastRow: true };
const allowed = (rules, check) => section.rows.filter((row, r) => check(rules, section, r)).map((row) => row.id);

test('absent flags have their defaults, and content in the wire shape leaves defaults out', () => {
  assert.deepEqual(ROW_DEFAULTS, { editable: true, movable: true, editingStyle: 'delete' });
  assert.equal(flagOf({}, 'editable'), true);
  assert.equal(flagOf({ movable: false }, 'movable'), false);
  assert.equal(flagOf({}, 'editingStyle'), 'delete');
  assert.deepEqual(rowContent({ id: 'r1', value: { a: 1 }, editable: true, editingStyle: 'delete' }), { value: { a: 1 } });
  assert.deepEqual(rowContent({ id: 'r2', value: 'x', editable: false, movable: false, editingStyle: 'none' }),
    { value: 'x', editable: false, movable: false, editingStyle: 'none' });
  const value = { nested: [1] };
  assert.notEqual(rowContent({ value }).value, value, 'the value is a copy');
});

test('placeholders: an insert row anywhere, and the last row only while the rules reserve it', () => {
  assert.deepEqual(section.rows.filter((row, r) => isPlaceholder(DEFAULT_RULES, section, r)).map((row) => row.id), ['r4']);
  assert.deepEqual(section.rows.filter((row, r) => isPlaceholder(reserving, section, r)).map((row) => row.id), ['r4', 'r6']);
  assert.equal(isReservedLastRow(reserving, section, 5), true);
  assert.equal(isReservedLastRow(reserving, section, 4), false);
  assert.equal(isReservedLastRow(DEFAULT_RULES, section, 5), false);
});

test('delete: editable rows with the delete style that are not placeholders', () => {
  assert.deepEqual(allowed(DEFAULT_RULES, canDelete), ['r1', 'r3', 'r6']);
  assert.deepEqual(allowed(reserving, canDelete), ['r1', 'r3']);
});

test('move: movable rows that are not placeholders, unless the table allows no moves; none rows move', () => {
  assert.deepEqual(allowed(DEFAULT_RULES, canMove), ['r1', 'r2', 'r5', 'r6']);
  assert.deepEqual(allowed(reserving, canMove), ['r1', 'r2', 'r5']);
  assert.deepEqual(allowed({ ...DEFAULT_RULES, moves: 'withinSection' }, canMove), ['r1', 'r2', 'r5', 'r6']);
  assert.deepEqual(allowed({ ...DEFAULT_RULES, moves: 'none' }, canMove), []);
});

test('edit: every row but a locked one', () => {
  assert.deepEqual(section.rows.filter(canEdit).map((row) => row.id), ['r1', 'r3', 'r4', 'r5', 'r6']);
});

test('where rows may go: the moves rule across sections, and the end of a section under reserveLastRow', () => {
  const into = (moves) => [[0, 0], [0, 1], [1, 0]].map(([from, to]) => mayMoveInto({ ...DEFAULT_RULES, moves }, from, to));
  assert.deepEqual(into('any'), [true, true, true]);
  assert.deepEqual(into('withinSection'), [true, false, false]);
  assert.deepEqual(into('none'), [false, false, false]);
  assert.deepEqual([0, 1, 3].map((count) => endOfRows(DEFAULT_RULES, count)), [0, 1, 3]);
  assert.deepEqual([0, 1, 3].map((count) => endOfRows(reserving, count)), [0, 0, 2]);
});
