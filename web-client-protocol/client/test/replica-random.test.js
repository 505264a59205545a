// Random tables and random valid updates: the replica must end where the update says each row goes.
// Seed: TABLECAST_SEED=<n> to replay; the seed is printed on failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Replica } from '../tablecast.js';
import { snapshot, update } from '../test-support/fixtures.js';

/** mulberry32: a small seeded PRNG, so that a failure can be replayed. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Everything the generator needs: a PRNG and fresh ids. */
function world(seed) {
  const random = prng(seed);
  let next = 0;
  return {
    int: (n) => Math.floor(random() * n), // 0 ≤ i < n
    chance: (p) => random() < p,
    id: (prefix) => `${prefix}${next++}`,
  };
}

function randomTable(w) {
  return Array.from({ length: w.int(5) }, () => {
    const id = w.id('s');
    return { id, header: w.chance(0.5) ? `h-${id}` : null, footer: null, rows: Array.from({ length: w.int(6) }, () => newRow(w)) };
  });
}

const newRow = (w) => {
  const id = w.id('r');
  return { id, value: `v-${id}` };
};

const insertAt = (w, list, item) => {
  const at = w.int(list.length + 1);
  list.splice(at, 0, item);
};

/**
 * Picks deletes, moves, reloads and inserts for `old` and returns the update plus the table it must produce,
 * built by placing every surviving, moved and new section and row at a random final position.
 */
function randomUpdate(w, old, version) {
  const lists = { deleteSections: [], insertSections: [], reloadSections: [], moveSections: [], deleteRows: [], insertRows: [], reloadRows: [], moveRows: [] };
  const fate = old.map(() => (w.chance(0.15) ? 'delete' : w.chance(0.2) ? 'move' : 'keep'));

  // Rows: in sections that survive, each row is kept, deleted, moved (placed later) or reloaded.
  const movedRows = []; // {from, row}
  const remaining = old.map(() => []);
  old.forEach((section, s) => {
    if (fate[s] === 'delete') return;
    section.rows.forEach((row, r) => {
      const roll = w.int(10);
      if (roll === 0) lists.deleteRows.push([s, r]);
      else if (roll === 1) movedRows.push({ from: [s, r], row });
      else if (roll === 2) {
        const value = `${row.value}+`;
        lists.reloadRows.push({ at: [s, r], value });
        remaining[s].push({ ...row, value });
      } else remaining[s].push(row);
    });
  });

  // Sections: kept ones in their order; moved and new ones at random final positions.
  const final = [];
  const placed = []; // {section, from?} for moved and new sections
  old.forEach((section, s) => {
    if (fate[s] === 'delete') {
      lists.deleteSections.push(s);
      return;
    }
    let header = section.header;
    if (fate[s] === 'keep' && w.chance(0.15)) {
      header = `${section.id}-renamed`;
      lists.reloadSections.push({ at: s, header, footer: section.footer });
    }
    const survivor = { ...section, header, rows: remaining[s] };
    if (fate[s] === 'keep') final.push(survivor);
    else placed.push({ section: survivor, from: s });
  });
  for (let n = w.int(3); n > 0; n--) {
    const id = w.id('s');
    placed.push({ section: { id, header: `new-${id}`, footer: null, rows: Array.from({ length: w.int(3) }, () => newRow(w)) }, fresh: true });
  }
  for (const entry of placed) insertAt(w, final, entry.section);
  for (const entry of placed) {
    const to = final.indexOf(entry.section);
    if (entry.fresh) lists.insertSections.push({ at: to, section: structuredClone(entry.section) });
    else lists.moveSections.push({ from: entry.from, to });
  }

  // Rows into the final sections: moved rows and new rows at random final positions.
  if (final.length > 0) {
    const arriving = [...movedRows.map((m) => ({ ...m })), ...Array.from({ length: w.int(4) }, () => ({ row: newRow(w) }))];
    for (const entry of arriving) {
      entry.section = final[w.int(final.length)];
      insertAt(w, entry.section.rows, entry.row);
    }
    for (const entry of arriving) {
      const to = [final.indexOf(entry.section), entry.section.rows.indexOf(entry.row)];
      if (entry.from) lists.moveRows.push({ from: entry.from, to });
      else lists.insertRows.push({ at: to, row: entry.row });
    }
  } else {
    // Nowhere to move rows to: delete them instead.
    for (const m of movedRows) lists.deleteRows.push(m.from);
  }
  shuffleLists(w, lists); // the order of entries inside the lists does not matter
  return { message: update(version, structuredClone(lists)), expected: structuredClone(final) };
}

function shuffleLists(w, lists) {
  for (const list of Object.values(lists)) {
    for (let i = list.length - 1; i > 0; i--) {
      const j = w.int(i + 1);
      [list[i], list[j]] = [list[j], list[i]];
    }
  }
}

/**
 * The naive reference: arrays of arrays of row ids, deletes (and move sources) descending, then inserts (and
 * move destinations) ascending, sections before rows. Written apart from the library on purpose.
 */
function reference(oldIds, msg) {
  const sections = oldIds.map((rows, s) => ({ key: `old${s}`, rows: [...rows] }));
  const rowOut = [...msg.deleteRows, ...msg.moveRows.map((m) => m.from)].sort((a, b) => b[0] - a[0] || b[1] - a[1]);
  const movedRow = new Map(msg.moveRows.map((m) => [`${m.from}`, sections[m.from[0]].rows[m.from[1]]]));
  for (const [s, r] of rowOut) sections[s].rows.splice(r, 1);
  const byOld = [...sections];
  const sectionOut = [...msg.deleteSections, ...msg.moveSections.map((m) => m.from)].sort((a, b) => b - a);
  for (const s of sectionOut) sections.splice(s, 1);
  const sectionIn = [
    ...msg.insertSections.map((e) => ({ at: e.at, section: { rows: e.section.rows.map((r) => r.id) } })),
    ...msg.moveSections.map((m) => ({ at: m.to, section: byOld[m.from] })),
  ].sort((a, b) => a.at - b.at);
  for (const { at, section } of sectionIn) sections.splice(at, 0, section);
  const rowIn = [
    ...msg.insertRows.map((e) => ({ at: e.at, id: e.row.id })),
    ...msg.moveRows.map((m) => ({ at: m.to, id: movedRow.get(`${m.from}`) })),
  ].sort((a, b) => a.at[0] - b.at[0] || a.at[1] - b.at[1]);
  for (const { at, id } of rowIn) sections[at[0]].rows.splice(at[1], 0, id);
  return sections.map((s) => s.rows);
}

const ids = (sections) => sections.map((s) => s.rows.map((r) => r.id));

test('random valid updates: replica, naive reference and the intended table agree', () => {
  const seed = Number(process.env.TABLECAST_SEED ?? Date.now() % 2 ** 31);
  const w = world(seed);
  let step = 'start';
  try {
    for (let t = 0; t < 300; t++) {
      const replica = new Replica('t');
      let table = randomTable(w);
      let version = w.int(100);
      replica.loadSnapshot(snapshot(version, table));
      for (let u = 0; u < 8; u++) {
        step = `table ${t}, update ${u}`;
        const { message, expected } = randomUpdate(w, table, ++version);
        assert.deepEqual(reference(ids(table), message), ids(expected), 'naive reference');
        replica.apply(message);
        assert.deepEqual(replica.sections, expected, 'replica');
        assert.equal(replica.version, version);
        table = expected;
      }
    }
  } catch (error) {
    console.error(`random replica test failed at ${step}; replay with TABLECAST_SEED=${seed}`);
    throw error;
  }
});
