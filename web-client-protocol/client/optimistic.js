// Optimistic edits and undo/redo for one table, as ../optimistic.md specifies: the confirmed table, at most one
// request in flight, the rest queued in id-anchored form and sent as one batch when it is answered, and the
// predicted table the page shows. Pure logic, no
// I/O; the vectors in ../vectors/optimistic/ (generated from the Swift engine) are its tests.
//
// What this port does not do, compared with the Swift engine (TableModel's OptimisticTable):
// - the in-flight intent is predicted by re-materializing its id-anchored form against the confirmed table, with
//   the engine's gap rule for row and section placements (what others put into the gap since its base stays
//   before it, what others moved out does not count: see gapPosition and sinceBase), not by a port of the
//   engine's index arithmetic; they agree on every vector;
// - of the table's rules only the limits maxSections and maxRowsPerSection are checked (not the canEdit/canMove
//   flags, `moves` or `reserveLastRow` retargeting): what the server refuses or retargets springs back or moves
//   at the ack;
// - a section reload that replaces rows (`editSection` with `rows`) is not predicted: submit() throws
//   `unsupported`, and the caller sends it as a plain request and waits for the ack.
import { Replica, ReplicaError } from './replica.js';
import { ROW_DEFAULTS, flagOf, rowContent } from './rules.js';
import { mergePatch, mergePatchUndoing, sameJSON } from './merge-patch.js';

// The lists of a committed batch; an intent may also have `patchRows` (merge patches, committed as reloads).
const LISTS = ['deleteSections', 'insertSections', 'reloadSections', 'moveSections', 'deleteRows', 'insertRows', 'reloadRows', 'moveRows'];
const INTENT_LISTS = [...LISTS, 'patchRows'];
const SINGLE = {
  insert: 'insertRows', delete: 'deleteRows', move: 'moveRows', edit: 'reloadRows', patch: 'patchRows',
  insertSection: 'insertSections', deleteSection: 'deleteSections', moveSection: 'moveSections', editSection: 'reloadSections',
};
const NAME_OF_LIST = Object.fromEntries(Object.entries(SINGLE).map(([name, list]) => [list, name]));
const FLAGS = Object.keys(ROW_DEFAULTS);

/** Thrown (and reported for refusals) like a server error: `code` is a wire error code. */
export class OptimisticError extends Error {
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.code = code;
    this.reason = message;
  }
}

const clone = (value) => structuredClone(value);
const isProvisional = (id) => typeof id === 'string' && id.startsWith('~');

function sectionContent(section) {
  return { header: section.header ?? null, footer: section.footer ?? null, rows: section.rows.map(rowContent) };
}

/** A wire intent (`{type, ...}`) as the lists of a client batch. */
function listsOf(intent) {
  const lists = Object.fromEntries(INTENT_LISTS.map((list) => [list, []]));
  if (intent.type === 'batch') {
    for (const list of INTENT_LISTS) lists[list] = clone(intent[list] ?? []);
  } else {
    const { type, base, table, ref, ...entry } = intent;
    if (!SINGLE[type]) throw new OptimisticError('unsupported', `${type} is not an edit intent`);
    lists[SINGLE[type]].push(clone(entry));
  }
  return lists;
}

/** Lists with one entry as that one-entry intent, others as a batch; null when empty. */
function intentOf(lists) {
  const entries = INTENT_LISTS.flatMap((list) => lists[list].map((entry) => [list, entry]));
  if (entries.length === 0) return null;
  if (entries.length === 1) return { type: NAME_OF_LIST[entries[0][0]], ...entries[0][1] };
  const batch = { type: 'batch' };
  for (const list of INTENT_LISTS) if (lists[list].length) batch[list] = lists[list];
  return batch;
}

/** Refuses a batch that makes a section, or the table, grow past the rules' limits (as the engine does). */
function checkLimits(before, after) {
  const { maxSections, maxRowsPerSection } = before.rules ?? {};
  if (maxSections !== undefined && after.sections.length > maxSections && after.sections.length > before.sections.length) {
    throw new OptimisticError('limit_exceeded', `the table would have ${after.sections.length} sections, more than the limit of ${maxSections}`);
  }
  if (maxRowsPerSection === undefined) return;
  const counts = new Map(before.sections.map((s) => [s.id, s.rows.length]));
  after.sections.forEach((s, i) => {
    if (s.rows.length > maxRowsPerSection && s.rows.length > (counts.get(s.id) ?? 0)) {
      throw new OptimisticError('limit_exceeded', `section ${i} would have ${s.rows.length} rows, more than the limit of ${maxRowsPerSection}`);
    }
  });
}

/** Applies a committed batch (wire lists) to a table object with the replica's UIKit semantics. */
function applyBatch(table, batch) {
  const replica = new Replica();
  replica.loadSnapshot({ version: table.version, rules: table.rules, sections: table.sections });
  replica.apply({ version: table.version + 1, ...batch });
  return { version: table.version + 1, rules: table.rules, sections: replica._sections };
}

/**
 * Resolves an intent made at `table`'s version into the committed batch, with `ids()` giving the ids it creates
 * (sections with their rows first, then rows, as the server orders `created`). Returns `{batch, created, patches}`;
 * `batch` is null when it changes nothing; `patches` maps a reload's `at` (as `s,r`) to the merge patch it came
 * from. Throws OptimisticError.
 */
function resolve(table, intent, ids) {
  const lists = listsOf(intent);
  const label = (list, index) => (intent.type === 'batch' ? `${list}[${index}]` : intent.type);
  const row = (path, id, at) => {
    const found = Array.isArray(path) ? table.sections[path[0]]?.rows[path[1]] : undefined;
    if (!found) throw new OptimisticError('out_of_range', `${at}: row [${path}] does not exist`);
    if (id !== undefined && found.id !== id) throw new OptimisticError('conflict', `${at}: row [${path}] is ${found.id}, not ${id}`);
    return found;
  };
  const section = (index, id, at) => {
    const found = table.sections[index];
    if (!found) throw new OptimisticError('out_of_range', `${at}: section ${index} does not exist`);
    if (id !== undefined && found.id !== id) throw new OptimisticError('conflict', `${at}: section ${index} is ${found.id}, not ${id}`);
    return found;
  };
  const created = [];
  const next = () => {
    const id = ids();
    created.push(id);
    return id;
  };
  const batch = Object.fromEntries(LISTS.map((list) => [list, []]));
  lists.deleteSections.forEach((e, i) => {
    section(e.at, e.section, label('deleteSections', i));
    batch.deleteSections.push(e.at);
  });
  lists.reloadSections.forEach((e, i) => {
    if (e.rows !== undefined) throw new OptimisticError('unsupported', 'a section reload with rows is not predicted');
    const current = section(e.at, e.section, label('reloadSections', i));
    const header = 'header' in e ? e.header : current.header ?? null;
    const footer = 'footer' in e ? e.footer : current.footer ?? null;
    if (header !== (current.header ?? null) || footer !== (current.footer ?? null)) batch.reloadSections.push({ at: e.at, header, footer });
  });
  lists.moveSections.forEach((e, i) => {
    section(e.from, e.section, label('moveSections', i));
    batch.moveSections.push({ from: e.from, to: e.to });
  });
  lists.deleteRows.forEach((e, i) => {
    row(e.at, e.row, label('deleteRows', i));
    batch.deleteRows.push(e.at);
  });
  lists.reloadRows.forEach((e, i) => {
    const current = row(e.at, e.row, label('reloadRows', i));
    const same = sameJSON(current.value, e.value)
      && FLAGS.every((flag) => (e[flag] ?? flagOf(current, flag)) === flagOf(current, flag));
    if (same) return;
    const reload = { at: e.at, value: clone(e.value) };
    for (const flag of FLAGS) if (e[flag] !== undefined) reload[flag] = e[flag];
    batch.reloadRows.push(reload);
  });
  const patches = new Map();
  lists.patchRows.forEach((e, i) => {
    const current = row(e.at, e.row, label('patchRows', i));
    const value = mergePatch(current.value, e.patch);
    if (sameJSON(value, current.value)) return;
    batch.reloadRows.push({ at: e.at, value });
    patches.set(`${e.at}`, clone(e.patch));
  });
  lists.moveRows.forEach((e, i) => {
    row(e.from, e.row, label('moveRows', i));
    batch.moveRows.push({ from: e.from, to: e.to });
  });
  for (const e of lists.insertSections) {
    const id = next();
    batch.insertSections.push({
      at: e.at,
      section: { id, header: e.header ?? null, footer: e.footer ?? null, rows: (e.rows ?? []).map((r) => ({ id: next(), ...rowContent(r) })) },
    });
  }
  for (const e of lists.insertRows) batch.insertRows.push({ at: e.at, row: { id: next(), ...rowContent(e) } });
  const changes = batch.deleteSections.length + batch.insertSections.length + batch.reloadSections.length + batch.deleteRows.length
    + batch.insertRows.length + batch.reloadRows.length;
  const moves = batch.moveSections.some((m) => m.from !== m.to)
    || batch.moveRows.some((m) => m.from[0] !== m.to[0] || m.from[1] !== m.to[1]);
  return { batch: changes || moves ? batch : null, created, patches };
}

// Id-anchored intents (optimistic.md): rows and sections by id, placements after their nearest surviving
// predecessor. The shape mirrors Swift's AnchoredIntent.

const sectionPlacement = (table, index) => ({ predecessors: table.sections.slice(0, index).reverse().map((s) => s.id), order: [index] });
const rowPlacement = (table, [s, r]) => ({
  section: table.sections[s].id, predecessors: table.sections[s].rows.slice(0, r).reverse().map((row) => row.id), order: [s, r],
});

function emptyAnchored() {
  return Object.fromEntries(INTENT_LISTS.map((list) => [list, []]));
}

const createdOf = (anchored) => [...anchored.insertSections.flatMap((e) => [e.id, ...e.rowIDs]), ...anchored.insertRows.map((e) => e.id)];

function forward(batch, before, after, patches) {
  const a = emptyAnchored();
  a.deleteSections = batch.deleteSections.map((i) => before.sections[i].id);
  a.insertSections = batch.insertSections.map(({ at }) => {
    const s = after.sections[at];
    return { id: s.id, content: sectionContent(s), rowIDs: s.rows.map((r) => r.id), placement: sectionPlacement(after, at) };
  });
  a.reloadSections = batch.reloadSections.map((e) => ({ id: before.sections[e.at].id, header: e.header, footer: e.footer }));
  a.moveSections = batch.moveSections.map((e) => ({ id: before.sections[e.from].id, placement: sectionPlacement(after, e.to) }));
  a.deleteRows = batch.deleteRows.map(([s, r]) => before.sections[s].rows[r].id);
  a.insertRows = batch.insertRows.map(({ at }) => {
    const row = after.sections[at[0]].rows[at[1]];
    return { id: row.id, content: rowContent(row), placement: rowPlacement(after, at) };
  });
  for (const { at, ...rest } of batch.reloadRows) {
    const id = before.sections[at[0]].rows[at[1]].id;
    if (patches.has(`${at}`)) a.patchRows.push({ id, patch: clone(patches.get(`${at}`)) });
    else a.reloadRows.push({ id, ...clone(rest) });
  }
  a.moveRows = batch.moveRows.map((e) => ({ id: before.sections[e.from[0]].rows[e.from[1]].id, placement: rowPlacement(after, e.to) }));
  return a;
}

function inverse(batch, before, provisional, patches) {
  const a = emptyAnchored();
  const renamed = new Map();
  const deletedSections = new Set(batch.deleteSections);
  for (const index of [...batch.deleteSections].sort((x, y) => x - y)) {
    const s = before.sections[index];
    renamed.set(s.id, provisional());
    for (const row of s.rows) renamed.set(row.id, provisional());
  }
  const deletedRows = batch.deleteRows.filter(([s]) => !deletedSections.has(s)).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  for (const [s, r] of deletedRows) renamed.set(before.sections[s].rows[r].id, provisional());
  const name = (id) => renamed.get(id) ?? id;
  const sPlace = (index) => {
    const p = sectionPlacement(before, index);
    return { predecessors: p.predecessors.map(name), order: p.order };
  };
  const rPlace = (path) => {
    const p = rowPlacement(before, path);
    return { section: name(p.section), predecessors: p.predecessors.map(name), order: p.order };
  };
  a.deleteSections = batch.insertSections.map((e) => e.section.id);
  a.insertSections = [...batch.deleteSections].sort((x, y) => x - y).map((index) => {
    const s = before.sections[index];
    return { id: name(s.id), content: sectionContent(s), rowIDs: s.rows.map((r) => name(r.id)), placement: sPlace(index) };
  });
  a.reloadSections = batch.reloadSections.map((e) => {
    const s = before.sections[e.at];
    return { id: s.id, header: s.header ?? null, footer: s.footer ?? null };
  });
  a.moveSections = batch.moveSections.map((e) => ({ id: before.sections[e.from].id, placement: sPlace(e.from) }));
  const insertedSections = new Set(batch.insertSections.map((e) => e.at));
  a.deleteRows = batch.insertRows.filter((e) => !insertedSections.has(e.at[0])).map((e) => e.row.id);
  a.insertRows = deletedRows.map((path) => {
    const row = before.sections[path[0]].rows[path[1]];
    return { id: name(row.id), content: rowContent(row), placement: rPlace(path) };
  });
  for (const e of batch.reloadRows) {
    const row = before.sections[e.at[0]].rows[e.at[1]];
    // A patch is undone by a patch of what it named, unless the old value has a null member it changed.
    const undoing = patches.has(`${e.at}`) ? mergePatchUndoing(row.value, patches.get(`${e.at}`)) : null;
    if (undoing !== null) {
      a.patchRows.push({ id: row.id, patch: undoing });
      continue;
    }
    const reload = { id: row.id, value: clone(row.value) };
    for (const flag of FLAGS) if (e[flag] !== undefined) reload[flag] = flagOf(row, flag);
    a.reloadRows.push(reload);
  }
  a.moveRows = batch.moveRows.map((e) => ({ id: before.sections[e.from[0]].rows[e.from[1]].id, placement: rPlace(e.from) }));
  return a;
}

function renaming(anchored, aliases) {
  if (aliases.size === 0) return anchored;
  const name = (id) => aliases.get(id) ?? id;
  const place = (p) => ({ ...p, ...(p.section !== undefined ? { section: name(p.section) } : {}), predecessors: p.predecessors.map(name) });
  return {
    deleteSections: anchored.deleteSections.map(name),
    insertSections: anchored.insertSections.map((e) => ({ ...e, id: name(e.id), rowIDs: e.rowIDs.map(name), placement: place(e.placement) })),
    reloadSections: anchored.reloadSections.map((e) => ({ ...e, id: name(e.id) })),
    moveSections: anchored.moveSections.map((e) => ({ ...e, id: name(e.id), placement: place(e.placement) })),
    deleteRows: anchored.deleteRows.map(name),
    insertRows: anchored.insertRows.map((e) => ({ ...e, id: name(e.id), placement: place(e.placement) })),
    reloadRows: anchored.reloadRows.map((e) => ({ ...e, id: name(e.id) })),
    moveRows: anchored.moveRows.map((e) => ({ ...e, id: name(e.id), placement: place(e.placement) })),
    patchRows: anchored.patchRows.map((e) => ({ ...e, id: name(e.id) })),
  };
}

const compareOrder = (x, y) => x[0] - y[0] || (x[1] ?? 0) - (y[1] ?? 0);
const position = (predecessors, list) => {
  for (const id of predecessors) {
    const index = list.indexOf(id);
    if (index >= 0) return index + 1;
  }
  return 0;
};

/**
 * The wire intent that does `anchored` to `table` (see optimistic.md); null when nothing is left. `since` (for
 * the in-flight intent) brings the engine's rule for gaps that others filled after its base: `successors` maps
 * each placed row to the rows that followed its gap at base, `moved` holds the rows others moved since; the
 * placement goes after everything placed into its gap since, i.e. before the first of its successors that is
 * still after it and did not move (else last).
 */
function materialize(anchored, table, strict, since = null) {
  const count = INTENT_LISTS.reduce((n, list) => n + anchored[list].length, 0);
  const single = count === 1 ? NAME_OF_LIST[INTENT_LISTS.find((list) => anchored[list].length)] : null;
  const at = (list, index) => single ?? `${list}[${index}]`;
  const sectionIndex = new Map();
  const rowPath = new Map();
  table.sections.forEach((s, i) => {
    sectionIndex.set(s.id, i);
    s.rows.forEach((r, j) => rowPath.set(r.id, [i, j]));
  });
  const ref = (key, id) => (isProvisional(id) ? {} : { [key]: id });
  const gone = (where, what) => new OptimisticError('conflict', `${where}: ${what}`);
  const rowGone = (id) => (isProvisional(id) ? `row ${id} was not created (the intent inserting it was refused)` : `row ${id} has been deleted`);
  const lists = emptyAnchored();
  const removedSections = new Set();
  anchored.deleteSections.forEach((id, i) => {
    if (!sectionIndex.has(id)) {
      if (strict) throw gone(at('deleteSections', i), `section ${id} has been deleted`);
      return;
    }
    lists.deleteSections.push({ at: sectionIndex.get(id), ...ref('section', id) });
    removedSections.add(id);
  });
  anchored.reloadSections.forEach((e, i) => {
    if (!sectionIndex.has(e.id)) throw gone(at('reloadSections', i), `section ${e.id} has been deleted`);
    lists.reloadSections.push({ at: sectionIndex.get(e.id), ...ref('section', e.id), header: e.header, footer: e.footer });
  });
  const movedSectionFrom = anchored.moveSections.map((e, i) => {
    if (!sectionIndex.has(e.id)) throw gone(at('moveSections', i), `section ${e.id} has been deleted`);
    removedSections.add(e.id);
    return sectionIndex.get(e.id);
  });
  const removedRows = new Set();
  anchored.deleteRows.forEach((id, i) => {
    const path = rowPath.get(id);
    if (!path || removedSections.has(table.sections[path[0]].id)) {
      if (strict) throw gone(at('deleteRows', i), rowGone(id));
      return;
    }
    lists.deleteRows.push({ at: path, ...ref('row', id) });
    removedRows.add(id);
  });
  anchored.reloadRows.forEach(({ id, ...rest }, i) => {
    if (!rowPath.has(id)) throw gone(at('reloadRows', i), rowGone(id));
    lists.reloadRows.push({ at: rowPath.get(id), ...ref('row', id), ...clone(rest) });
  });
  anchored.patchRows.forEach(({ id, patch }, i) => {
    if (!rowPath.has(id)) throw gone(at('patchRows', i), rowGone(id));
    lists.patchRows.push({ at: rowPath.get(id), ...ref('row', id), patch: clone(patch) });
  });
  const movedRowFrom = anchored.moveRows.map((e, i) => {
    if (!rowPath.has(e.id)) throw gone(at('moveRows', i), rowGone(e.id));
    removedRows.add(e.id);
    return rowPath.get(e.id);
  });

  const sections = table.sections.map((s) => s.id).filter((id) => !removedSections.has(id));
  const sectionPlacements = [...anchored.insertSections, ...anchored.moveSections].map((e) => [e.id, e.placement])
    .sort((x, y) => compareOrder(x[1].order, y[1].order));
  for (const [id, placement] of sectionPlacements) sections.splice(gapPosition(id, placement, sections, since?.sections), 0, id);
  const finalSection = new Map(sections.map((id, i) => [id, i]));
  const rowPlacements = [...anchored.insertRows, ...anchored.moveRows].map((e) => [e.id, e.placement]);
  const finalRow = new Map();
  const targets = [...new Set(rowPlacements.map(([, p]) => p.section))];
  for (const target of targets) {
    const placements = rowPlacements.filter(([, p]) => p.section === target);
    if (!finalSection.has(target)) {
      const first = placements[0][0];
      const insertIndex = anchored.insertRows.findIndex((e) => e.id === first);
      const where = insertIndex >= 0 ? at('insertRows', insertIndex) : at('moveRows', anchored.moveRows.findIndex((e) => e.id === first));
      throw gone(where, `section ${target} has been deleted`);
    }
    const inserted = anchored.insertSections.find((e) => e.id === target);
    const rows = inserted ? [...inserted.rowIDs] : table.sections[sectionIndex.get(target)].rows.map((r) => r.id).filter((id) => !removedRows.has(id));
    for (const [id, placement] of [...placements].sort((x, y) => compareOrder(x[1].order, y[1].order))) {
      rows.splice(gapPosition(id, placement, rows, since?.rows), 0, id);
    }
    rows.forEach((id, i) => finalRow.set(id, [finalSection.get(target), i]));
  }
  lists.insertSections = anchored.insertSections.map((e) => {
    const entry = { at: finalSection.get(e.id) };
    if (e.content.header !== null) entry.header = e.content.header;
    if (e.content.footer !== null) entry.footer = e.content.footer;
    if (e.content.rows.length) entry.rows = clone(e.content.rows);
    return entry;
  });
  lists.moveSections = anchored.moveSections.map((e, i) => ({ from: movedSectionFrom[i], ...ref('section', e.id), to: finalSection.get(e.id) }));
  lists.insertRows = anchored.insertRows.map((e) => ({ at: finalRow.get(e.id), ...clone(e.content) }));
  lists.moveRows = anchored.moveRows.map((e, i) => ({ from: movedRowFrom[i], ...ref('row', e.id), to: finalRow.get(e.id) }));
  return intentOf(lists);
}

/**
 * Where `id` goes in `list` (ids): after its predecessors; with `gap` (the in-flight intent's, see sinceBase),
 * before the first of the items that followed its gap at base that is still after that point and was not moved
 * since (else last), so that what others put into the gap meanwhile stays before it.
 */
function gapPosition(id, placement, list, gap) {
  const at = position(placement.predecessors, list);
  const successors = gap?.successors.get(id);
  if (!successors) return at;
  const next = successors.filter((s) => !gap.moved.has(s)).map((s) => list.indexOf(s)).find((index) => index >= at);
  return next ?? list.length;
}

/**
 * What the in-flight intent's placements had after their gaps at base (the confirmed table it was sent at), for
 * rows and for sections; `moved` collects what others move while it is in flight (see receive).
 */
function sinceBase(anchored, base, after) {
  const successorsIn = (ids, placedEntries) => {
    const known = new Set(ids(base));
    const placed = new Set(placedEntries.map((e) => e.id));
    return (list, id) => list.slice(list.indexOf(id) + 1).filter((other) => known.has(other) && !placed.has(other));
  };
  const rows = new Map();
  const rowAfter = successorsIn((t) => t.sections.flatMap((s) => s.rows.map((r) => r.id)), [...anchored.insertRows, ...anchored.moveRows]);
  for (const { id } of [...anchored.insertRows, ...anchored.moveRows]) {
    const section = after.sections.find((s) => s.rows.some((r) => r.id === id));
    if (section) rows.set(id, rowAfter(section.rows.map((r) => r.id), id));
  }
  const sections = new Map();
  const sectionIDs = (t) => t.sections.map((s) => s.id);
  const sectionAfter = successorsIn(sectionIDs, [...anchored.insertSections, ...anchored.moveSections]);
  for (const { id } of [...anchored.insertSections, ...anchored.moveSections]) {
    if (sectionIDs(after).includes(id)) sections.set(id, sectionAfter(sectionIDs(after), id));
  }
  return { rows: { successors: rows, moved: new Set() }, sections: { successors: sections, moved: new Set() } };
}

/** Whether two plain JSON values (tables, rows) are equal. */
function same(a, b) {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a).filter((k) => a[k] !== undefined);
  if (keys.length !== Object.keys(b).filter((k) => b[k] !== undefined).length) return false;
  return keys.every((k) => same(a[k], b[k]));
}

const canonicalRow = (row) => ({ id: row.id, ...rowContent(row) });
const canonicalSections = (table) => table.sections.map((s) => ({ id: s.id, header: s.header ?? null, footer: s.footer ?? null, rows: s.rows.map(canonicalRow) }));

/**
 * The wire lists at `start`'s version that turn `start` into `target` (the queue's net effect, see optimistic.md
 * "Sending the queue"), moving what `roles` says was moved, and the ids they create in the server's order; null
 * when a row of a deleted section survives or an inserted section holds a row that was there before.
 */
function netBatch(start, target, roles) {
  const targetSection = new Map();
  const targetRow = new Map();
  target.sections.forEach((s, i) => {
    targetSection.set(s.id, i);
    s.rows.forEach((r, j) => targetRow.set(r.id, [i, j]));
  });
  const lists = emptyAnchored();
  const kept = new Set();
  for (const [s, section] of start.sections.entries()) {
    if (!targetSection.has(section.id)) {
      if (section.rows.some((r) => targetRow.has(r.id))) return null;
      lists.deleteSections.push({ at: s, section: section.id });
      continue;
    }
    const t = targetSection.get(section.id);
    if (roles.movedSections.has(section.id)) lists.moveSections.push({ from: s, section: section.id, to: t });
    const now = target.sections[t];
    if ((now.header ?? null) !== (section.header ?? null) || (now.footer ?? null) !== (section.footer ?? null)) {
      lists.reloadSections.push({ at: s, section: section.id, header: now.header ?? null, footer: now.footer ?? null });
    }
    for (const [r, row] of section.rows.entries()) {
      const path = targetRow.get(row.id);
      if (!path) {
        lists.deleteRows.push({ at: [s, r], row: row.id });
        continue;
      }
      kept.add(row.id);
      if (roles.movedRows.has(row.id)) lists.moveRows.push({ from: [s, r], row: row.id, to: path });
      const current = target.sections[path[0]].rows[path[1]];
      if (!same(canonicalRow(current), canonicalRow(row))) {
        const reload = { at: [s, r], row: row.id, value: clone(current.value) };
        for (const flag of FLAGS) if (flagOf(current, flag) !== flagOf(row, flag)) reload[flag] = flagOf(current, flag);
        lists.reloadRows.push(reload);
      }
    }
  }
  const startSections = new Set(start.sections.map((s) => s.id));
  const createdSections = [];
  const createdRows = [];
  for (const [t, section] of target.sections.entries()) {
    if (!startSections.has(section.id)) {
      if (section.rows.some((r) => kept.has(r.id))) return null;
      const entry = { at: t };
      if ((section.header ?? null) !== null) entry.header = section.header;
      if ((section.footer ?? null) !== null) entry.footer = section.footer;
      if (section.rows.length) entry.rows = section.rows.map(rowContent);
      lists.insertSections.push(entry);
      createdSections.push(section.id, ...section.rows.map((r) => r.id));
      continue;
    }
    for (const [r, row] of section.rows.entries()) {
      if (kept.has(row.id)) continue;
      lists.insertRows.push({ at: [t, r], ...rowContent(row) });
      createdRows.push(row.id);
    }
  }
  return { lists, provisional: [...createdSections, ...createdRows] };
}

/**
 * Where the sections and rows `anchored` inserts or moves (ids through `name`) are in `table`, as an ack's
 * `resolved` says: section indexes, then row paths, inserts before moves; one not there is left out.
 */
function placements(anchored, table, name = (id) => id) {
  const sectionIndex = new Map();
  const rowPath = new Map();
  table.sections.forEach((s, i) => {
    sectionIndex.set(s.id, i);
    s.rows.forEach((r, j) => rowPath.set(r.id, [i, j]));
  });
  const found = (map, entries) => entries.map((e) => map.get(name(e.id))).filter((at) => at !== undefined);
  return [...found(sectionIndex, [...anchored.insertSections, ...anchored.moveSections]),
    ...found(rowPath, [...anchored.insertRows, ...anchored.moveRows])];
}

/** A wire intent without provisional ids in its refs (the server knows only real ones). */
function withoutProvisionalIDs(intent) {
  const lists = listsOf(intent);
  for (const list of INTENT_LISTS) {
    for (const entry of lists[list]) {
      if (isProvisional(entry.row)) delete entry.row;
      if (isProvisional(entry.section)) delete entry.section;
    }
  }
  return intent.type === 'batch' ? { type: 'batch', ...Object.fromEntries(INTENT_LISTS.filter((l) => lists[l].length).map((l) => [l, lists[l]])) } : intentOf(lists);
}

/** Per-table optimistic state; see optimistic.md. Tables are `{version, rules, sections}` as in a snapshot. */
export class OptimisticTable {
  static defaultPendingLimit = 1000;

  constructor(table, { pendingLimit = OptimisticTable.defaultPendingLimit } = {}) {
    this.confirmed = { version: table.version, rules: clone(table.rules ?? {}), sections: clone(table.sections) };
    this.predicted = this.confirmed;
    this.pendingLimit = pendingLimit;
    this._inFlight = null; // {id, intent (with base), members, provisional, anchored, landed, since}
    this._queue = []; // {id, submitted, anchored, solo}
    this._undo = [];
    this._redo = [];
    this._nextLocal = 1;
    this._nextProvisional = 1;
  }

  get pendingCount() { return this._queue.length + (this._inFlight ? this._inFlight.members.length : 0); }
  get canUndo() { return this._undo.length > 0; }
  get canRedo() { return this._redo.length > 0; }
  /** The in-flight intent `{id, intent}` to send again after a reconnect (same ref). */
  get inFlight() { return this._inFlight && { id: this._inFlight.id, intent: this._inFlight.intent }; }

  _provisional() { return `~${this._nextProvisional++}`; }

  /** Submits a wire intent made against `predicted`; returns `{id, send, settled}`. Throws OptimisticError. */
  submit(intent) { return this._submit(intent, 'change'); }

  /** Undoes the last change: `null` when there is none; throws OptimisticError `conflict` when it cannot. */
  undo() { return this._step(this._undo, 'undo'); }
  redo() { return this._step(this._redo, 'redo'); }

  _step(stack, verb) {
    const step = stack.pop();
    if (!step) return null;
    try {
      const intent = materialize(step.inverse, this.predicted, true);
      if (!intent) throw new OptimisticError('conflict', 'nothing is left to change');
      return this._submit(intent, verb);
    } catch (error) {
      if (!(error instanceof OptimisticError)) throw error;
      throw new OptimisticError(error.code, `${verb}: cannot ${verb}: ${error.reason}`);
    }
  }

  _submit(intent, role) {
    if (this.pendingCount >= this.pendingLimit) {
      throw new OptimisticError('limit_exceeded', `${intent.type}: ${this.pendingLimit} intents are already waiting for the server`);
    }
    const id = this._nextLocal++;
    const sent = withoutProvisionalIDs(intent);
    const before = this.predicted;
    const { batch, created, patches } = resolve(before, sent, () => this._provisional());
    if (!batch) return { id, send: null, settled: true };
    const after = applyBatch(before, batch);
    checkLimits(before, after);
    const undone = inverse(batch, before, () => this._provisional(), patches);
    if (role === 'change') {
      this._undo.push({ source: id, inverse: undone });
      this._redo = [];
    } else (role === 'undo' ? this._redo : this._undo).push({ source: id, inverse: undone });
    this.predicted = after;
    const anchored = forward(batch, before, after, patches);
    const member = { id, submitted: intent, anchored, solo: false };
    if (!this._inFlight && this._queue.length === 0) {
      this._inFlight = {
        id, intent: { ...sent, base: this.confirmed.version }, members: [member], provisional: created, anchored, landed: false,
        since: sinceBase(anchored, this.confirmed, after),
      };
      return { id, send: { id, intent: this._inFlight.intent }, settled: false };
    }
    this._queue.push(member);
    return { id, send: null, settled: false };
  }

  /** Replaces the confirmed table (a fresh snapshot); pending intents stay. */
  replaceConfirmed(table) {
    this.confirmed = { version: table.version, rules: clone(table.rules ?? {}), sections: clone(table.sections) };
    this._predict();
  }

  /** Follows a change of the rules. */
  setRules(rules) {
    this.confirmed = { ...this.confirmed, rules: clone(rules) };
    this._predict();
  }

  /** Applies a committed batch (an update's lists); `own`: its origin is the in-flight intent's ref. */
  receive(batch, own = false) {
    if (this._inFlight && !own && !this._inFlight.landed) {
      for (const move of batch.moveRows ?? []) {
        const row = this.confirmed.sections[move.from[0]]?.rows[move.from[1]];
        if (row) this._inFlight.since?.rows.moved.add(row.id);
      }
      for (const move of batch.moveSections ?? []) {
        const section = this.confirmed.sections[move.from];
        if (section) this._inFlight.since?.sections.moved.add(section.id);
      }
    }
    if (own && this._inFlight && !this._inFlight.landed) {
      // The server numbers what an intent creates consecutively, in the order of `created`: the ids follow
      // from the first one the update carries.
      this._inFlight.landed = true;
      const numbers = [...(batch.insertSections ?? []).flatMap((e) => [e.section.id, ...e.section.rows.map((r) => r.id)]),
        ...(batch.insertRows ?? []).map((e) => e.row.id)].map((id) => Number(id.slice(1)));
      if (numbers.length) {
        const first = Math.min(...numbers);
        const anchored = this._inFlight.anchored;
        const kinds = [...anchored.insertSections.flatMap((e) => ['s', ...e.rowIDs.map(() => 'r')]), ...anchored.insertRows.map(() => 'r')];
        this._rename(new Map(this._inFlight.provisional.map((id, i) => [id, `${kinds[i]}${first + i}`])));
      }
    }
    this.confirmed = applyBatch(this.confirmed, batch);
    this._predict();
  }

  /**
   * The in-flight request was committed with `created` ids: every intent it carries is accepted. Returns
   * `{accepted, refused, answered, shares, send}`; `answered` lists the intents the server's answer is about, and
   * for a batch of queued intents `shares` maps each to its part of the ack `{created, resolved}` (the ids it
   * created, where what it inserted or moved is: sections then rows, inserts then moves).
   */
  acknowledge(created) {
    const flight = this._inFlight;
    if (!flight) return { accepted: [], refused: [], answered: [], shares: {}, send: null };
    this._inFlight = null;
    const aliases = new Map(flight.provisional.map((id, i) => [id, created[i]]));
    this._rename(aliases);
    const ids = flight.members.map((m) => m.id);
    const shares = flight.members.length > 1 ? this._shares(flight.members, aliases) : {};
    const outcome = { accepted: ids, refused: [], answered: [...ids], shares, send: null };
    this._advance(outcome);
    this._predict();
    return outcome;
  }

  /**
   * The in-flight request was refused (`{code, message}`). One intent is refused; a queue sent as one batch
   * committed nothing, so its intents go back to the queue to be sent one at a time and answered on their own.
   */
  refuse(error) {
    const flight = this._inFlight;
    if (!flight) return { accepted: [], refused: [], answered: [], shares: {}, send: null };
    this._inFlight = null;
    const outcome = { accepted: [], refused: [], answered: [], shares: {}, send: null };
    if (flight.members.length > 1) {
      this._queue.unshift(...flight.members.map((m) => ({ ...m, solo: true })));
    } else {
      this._dropSteps(flight.id);
      outcome.refused.push({ id: flight.id, intent: flight.members[0].submitted, code: error.code, message: error.message });
      outcome.answered.push(flight.id);
    }
    this._advance(outcome);
    this._predict();
    return outcome;
  }

  _advance(outcome) {
    while (!this._inFlight && this._queue.length) {
      const first = this._queue.shift();
      let intent;
      try {
        intent = materialize(first.anchored, this.confirmed, false);
      } catch (error) {
        if (!(error instanceof OptimisticError)) throw error;
        this._dropSteps(first.id);
        outcome.refused.push({ id: first.id, intent: first.submitted, code: error.code, message: error.reason });
        continue;
      }
      if (!intent) {
        this._dropSteps(first.id);
        outcome.accepted.push(first.id);
        continue;
      }
      const combined = first.solo ? null : this._combine(first, intent, outcome);
      if (combined && !combined.intent) {
        outcome.accepted.push(...combined.members.map((m) => m.id));
        continue;
      }
      const members = combined ? combined.members : [first];
      const sent = combined ? combined.intent : intent;
      const ids = combined ? combined.provisional : createdOf(first.anchored);
      let n = 0;
      let batch = null;
      let patches = new Map();
      try {
        ({ batch, patches } = resolve(this.confirmed, sent, () => ids[n++]));
      } catch (error) {
        // Only a lone intent can fail here: a combination was checked.
        if (!(error instanceof OptimisticError)) throw error;
        this._dropSteps(first.id);
        outcome.refused.push({ id: first.id, intent: first.submitted, code: error.code, message: error.reason });
        continue;
      }
      const after = batch ? applyBatch(this.confirmed, batch) : null;
      const anchored = combined && batch ? forward(batch, this.confirmed, after, patches) : first.anchored;
      this._inFlight = {
        id: first.id, intent: { ...sent, base: this.confirmed.version }, members, provisional: ids, anchored,
        landed: false, since: batch ? sinceBase(anchored, this.confirmed, after) : null,
      };
      outcome.send = { id: first.id, intent: this._inFlight.intent };
    }
  }

  /**
   * `first` (materialized as `intent`) and the queued intents after it that combine with it (optimistic.md,
   * "Sending the queue"), taken off the queue: `{intent, members, provisional}` (`intent` null when together they
   * change nothing); null when none joins it or the combination does not check out (the queue is as it was).
   */
  _combine(first, intent, outcome) {
    if (!this._queue.length || this._queue[0].solo) return null;
    const start = this.confirmed;
    const original = new Set(start.sections.flatMap((s) => [s.id, ...s.rows.map((r) => r.id)]));
    const roles = { movedRows: new Set(), reloadedRows: new Set(), movedSections: new Set(), reloadedSections: new Set() };
    let table = start;
    const extend = (next, created) => {
      let n = 0;
      let after = table;
      let batch;
      let patches;
      try {
        ({ batch, patches } = resolve(table, next, () => created[n++]));
        // A merge patch goes alone: in a batch it would become the value it merged to, overwriting what others
        // patch meanwhile.
        if (patches.size) return false;
        if (batch) {
          after = applyBatch(table, batch);
          checkLimits(table, after);
        }
      } catch (error) {
        if (error instanceof OptimisticError || error instanceof ReplicaError) return false;
        throw error;
      }
      if (!batch) return true;
      const ids = (list) => new Set(list.filter((id) => original.has(id)));
      const rowID = ([s, r]) => table.sections[s].rows[r].id;
      const found = {
        movedRows: ids(batch.moveRows.map((m) => rowID(m.from))),
        reloadedRows: ids(batch.reloadRows.map((e) => rowID(e.at))),
        movedSections: ids(batch.moveSections.map((m) => table.sections[m.from].id)),
        reloadedSections: ids(batch.reloadSections.map((e) => table.sections[e.at].id)),
      };
      const clash = (a, b) => [...found[a]].some((id) => roles[b].has(id));
      if (clash('movedRows', 'reloadedRows') || clash('reloadedRows', 'movedRows')
        || clash('movedSections', 'reloadedSections') || clash('reloadedSections', 'movedSections')) return false;
      for (const key of Object.keys(roles)) for (const id of found[key]) roles[key].add(id);
      table = after;
      return true;
    };
    if (!extend(intent, createdOf(first.anchored))) return null;
    const steps = [placements(first.anchored, table)];
    const members = [first];
    const settled = [];
    while (this._queue.length && !this._queue[0].solo) {
      const next = this._queue[0];
      let materialized;
      try {
        materialized = materialize(next.anchored, table, false);
      } catch (error) {
        if (!(error instanceof OptimisticError)) throw error;
        break;
      }
      if (!materialized) {
        this._queue.shift();
        this._dropSteps(next.id);
        settled.push(next.id);
        continue;
      }
      if (!extend(materialized, createdOf(next.anchored))) break;
      steps.push(placements(next.anchored, table));
      members.push(this._queue.shift());
    }
    outcome.accepted.push(...settled);
    const net = members.length > 1 ? netBatch(start, table, roles) : null;
    const combined = net && intentOf(net.lists);
    let checks = Boolean(net) && !combined && same(canonicalSections(start), canonicalSections(table));
    if (combined) {
      try {
        let n = 0;
        const { batch } = resolve(start, combined, () => net.provisional[n++]);
        checks = Boolean(batch) && same(canonicalSections(applyBatch(start, batch)), canonicalSections(table));
      } catch (error) {
        if (!(error instanceof OptimisticError) && !(error instanceof ReplicaError)) throw error;
      }
    }
    if (!checks) {
      this._queue.unshift(...members.slice(1));
      return null;
    }
    members.forEach((m, i) => { m.expected = { step: steps[i], final: placements(m.anchored, table) }; });
    return { intent: combined, members, provisional: net.provisional };
  }

  /**
   * Each member's part of the ack of the batch it was sent in, from the confirmed table, which holds the batch:
   * where the member itself put what it inserted or moved when the batch landed as expected, else where it is
   * (see optimistic.md, "Sending the queue").
   */
  _shares(members, aliases) {
    const shares = {};
    for (const { id, anchored, expected } of members) {
      let resolved = placements(anchored, this.confirmed, (p) => aliases.get(p) ?? p);
      if (expected && same(resolved, expected.final)) resolved = expected.step;
      shares[id] = { created: createdOf(anchored).map((p) => aliases.get(p)).filter((real) => real !== undefined), resolved };
    }
    return shares;
  }

  /** Whether the in-flight request still applies to the confirmed table. */
  _rebases(flight) {
    try {
      const intent = materialize(flight.anchored, this.confirmed, false, flight.since);
      if (!intent) return true;
      const ids = createdOf(flight.anchored);
      let n = 0;
      const { batch } = resolve(this.confirmed, intent, () => ids[n++]);
      if (batch) checkLimits(this.confirmed, applyBatch(this.confirmed, batch));
      return true;
    } catch (error) {
      if (!(error instanceof OptimisticError) && !(error instanceof ReplicaError)) throw error;
      return false;
    }
  }

  _dropSteps(id) {
    this._undo = this._undo.filter((s) => s.source !== id);
    this._redo = this._redo.filter((s) => s.source !== id);
  }

  _rename(aliases) {
    if (aliases.size === 0) return;
    for (const q of this._queue) q.anchored = renaming(q.anchored, aliases);
    for (const s of this._undo) s.inverse = renaming(s.inverse, aliases);
    for (const s of this._redo) s.inverse = renaming(s.inverse, aliases);
  }

  _predict() {
    let table = this.confirmed;
    const flight = this._inFlight && !this._inFlight.landed ? this._inFlight : null;
    const pending = [...(flight ? [flight] : []), ...this._queue];
    if (flight && flight.members.length > 1 && !this._rebases(flight)) {
      // A batch that no longer rebases will be refused and its intents sent one at a time: predicted so.
      pending.splice(0, 1, ...flight.members);
    }
    for (const entry of pending) {
      try {
        const intent = materialize(entry.anchored, table, false, entry === this._inFlight ? entry.since : null);
        if (!intent) continue;
        const ids = createdOf(entry.anchored);
        let n = 0;
        const { batch } = resolve(table, intent, () => ids[n++]);
        if (!batch) continue;
        const after = applyBatch(table, batch);
        checkLimits(table, after);
        table = after;
      } catch (error) {
        if (!(error instanceof OptimisticError) && !(error instanceof ReplicaError)) throw error;
      }
    }
    this.predicted = table;
  }
}
