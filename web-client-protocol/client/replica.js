// Tablecast protocol v1: a local replica of one table, applying snapshots and updates with UIKit's index
// semantics (beginUpdates/endUpdates). It imports only the rows' flag defaults (rules.js); the client
// (tablecast.js) and the optimistic layer (optimistic.js) both build on it. The contract is ../README.md.
import { ROW_DEFAULTS } from './rules.js';

const clone = (value) => (value === undefined ? undefined : structuredClone(value));

const isIndex = (n) => Number.isInteger(n) && n >= 0;
const isIndexPath = (p) => Array.isArray(p) && p.length === 2 && isIndex(p[0]) && isIndex(p[1]);
const pathKey = (p) => `${p[0]},${p[1]}`;
const comparePaths = (a, b) => a[0] - b[0] || a[1] - b[1];

/**
 * Thrown by {@link Replica#apply} and {@link Replica#loadSnapshot} when the input does not fit the replica.
 * The replica is unchanged when this is thrown.
 */
export class ReplicaError extends Error {
  /**
   * @param {'version'|'table'|'out_of_range'|'invalid'} code why the input was refused
   * @param {string} message
   * @param {string} [at] the entry at fault, e.g. "deleteRows[1]"
   */
  constructor(code, message, at) {
    super(at ? `${at}: ${message}` : message);
    this.name = 'ReplicaError';
    this.code = code;
    this.at = at;
  }
}

/**
 * A client's copy of one table: version, epoch, rules and sections, kept in step by applying the server's
 * `update`s exactly as the protocol's "Applying an update to a replica" says. Pure: no I/O, no clock.
 *
 * Everything going in and coming out is deep-copied, so callers can neither change the replica by
 * mutating what they passed nor what they got back.
 */
export class Replica {
  /** @param {string} [table] the table's name; when set, updates for other tables are refused */
  constructor(table) {
    /** @type {string|undefined} */
    this.table = table;
    /** @type {number|null} version of the last applied snapshot or update; null before the first snapshot */
    this.version = null;
    /** @type {string|null} the table's epoch (one life of the table) */
    this.epoch = null;
    this._rules = null;
    this._sections = [];
    this._index = null; // lazily built id → position maps; dropped on every change
  }

  /** True once a snapshot has been loaded (the replica holds a table). */
  get loaded() {
    return this.version !== null;
  }

  /** @returns {object|null} a copy of the table's rules */
  get rules() {
    return clone(this._rules);
  }

  /** Replaces the rules (from `rules`, `subscribed`, `refreshed`); rules are not versioned. */
  setRules(rules) {
    this._rules = clone(rules);
  }

  /** @returns {Array<{id: string, header: string|null, footer: string|null, rows: Array<object>}>} a deep copy */
  get sections() {
    return clone(this._sections);
  }

  /** Number of sections. */
  get sectionCount() {
    return this._sections.length;
  }

  /** Number of rows in section `s` (throws a RangeError if there is no such section). */
  rowCount(s) {
    return this._sectionAt(s).rows.length;
  }

  /** @returns {object} a copy of the section at index `s`, rows included */
  section(s) {
    return clone(this._sectionAt(s));
  }

  /** @returns {object} a copy of the row at index path `[s, r]` */
  row(path) {
    const rows = this._sectionAt(path[0]).rows;
    if (!isIndex(path[1]) || path[1] >= rows.length) throw new RangeError(`no row at [${path}]`);
    return clone(rows[path[1]]);
  }

  /** @returns {[number, number]|null} the index path of the row with id `id`, or null */
  indexPathOfRow(id) {
    const found = this._ids().rows.get(id);
    return found ? [...found] : null;
  }

  /** @returns {number|null} the index of the section with id `id`, or null */
  indexOfSection(id) {
    const found = this._ids().sections.get(id);
    return found === undefined ? null : found;
  }

  /** @returns {object|null} a copy of the row with id `id`, or null */
  rowById(id) {
    const path = this.indexPathOfRow(id);
    return path ? this.row(path) : null;
  }

  /** @returns {object|null} a copy of the section with id `id`, or null */
  sectionById(id) {
    const s = this.indexOfSection(id);
    return s === null ? null : this.section(s);
  }

  /** @returns {Array<Array<*>>} the rows' values, section by section (handy for tests and simple views) */
  values() {
    return this._sections.map((section) => section.rows.map((row) => clone(row.value)));
  }

  /**
   * Replaces the whole replica with a `snapshot` message (or any object with its fields).
   * @param {{table?: string, version: number, epoch: string, rules?: object, sections: Array<object>}} snapshot
   */
  loadSnapshot(snapshot) {
    if (this.table !== undefined && snapshot.table !== undefined && snapshot.table !== this.table) {
      throw new ReplicaError('table', `snapshot of table ${snapshot.table} given to replica of ${this.table}`);
    }
    if (!isIndex(snapshot.version) || !Array.isArray(snapshot.sections)) {
      throw new ReplicaError('invalid', 'a snapshot needs a version and sections');
    }
    this._sections = clone(snapshot.sections);
    this.version = snapshot.version;
    this.epoch = snapshot.epoch ?? null;
    if (snapshot.rules !== undefined) this._rules = clone(snapshot.rules);
    this._index = null;
  }

  /**
   * Applies one `update` message: reloads at old index paths; takes out deleted and moved rows, then
   * deleted and moved sections, by descending old index; puts back sections, then rows, by ascending new
   * index. Refuses (throws {@link ReplicaError}, replica unchanged) an update whose version is not this
   * replica's version + 1, or whose index paths do not fit the table.
   * @param {object} update an `update` message; all eight lists may be absent (= empty)
   */
  apply(update) {
    if (!this.loaded) throw new ReplicaError('version', 'no snapshot loaded yet');
    if (this.table !== undefined && update.table !== undefined && update.table !== this.table) {
      throw new ReplicaError('table', `update of table ${update.table} given to replica of ${this.table}`);
    }
    if (update.version !== this.version + 1) {
      throw new ReplicaError('version', `update to version ${update.version} does not follow version ${this.version}`);
    }
    const list = (name) => {
      const value = update[name] ?? [];
      if (!Array.isArray(value)) throw new ReplicaError('invalid', `${name} is not a list`);
      return value;
    };
    // Work on copies of the containers (rows are shared until replaced) so a refusal leaves `this` untouched.
    const old = this._sections.map((section) => ({ ...section, rows: section.rows.slice() }));
    const oldRow = (path, at) => {
      if (!isIndexPath(path) || path[0] >= old.length || path[1] >= old[path[0]].rows.length) {
        throw new ReplicaError('out_of_range', `row [${path}] is not in the table before the update`, at);
      }
      return old[path[0]].rows[path[1]];
    };
    const oldSection = (s, at) => {
      if (!isIndex(s) || s >= old.length) {
        throw new ReplicaError('out_of_range', `section ${s} is not in the table before the update`, at);
      }
      return old[s];
    };

    // 1. Reloads, at old index paths.
    list('reloadSections').forEach((entry, i) => {
      const section = oldSection(entry.at, `reloadSections[${i}]`);
      section.header = entry.header ?? null;
      section.footer = entry.footer ?? null;
    });
    list('reloadRows').forEach((entry, i) => {
      const at = `reloadRows[${i}]`;
      const row = { ...oldRow(entry.at, at), value: clone(entry.value) };
      // A flag that is absent has its default; keep rows in that canonical shape (a flag set to it is removed).
      for (const [flag, byDefault] of Object.entries(ROW_DEFAULTS)) {
        if (entry[flag] === byDefault) delete row[flag];
        else if (entry[flag] !== undefined) row[flag] = entry[flag];
      }
      old[entry.at[0]].rows[entry.at[1]] = row;
    });

    // 2. Take out rows, then sections, by descending old index; moved ones are kept aside.
    const rowsOut = new Map(); // "s,r" → destination index path, or null for a delete
    const takeRowOut = (path, destination, at) => {
      oldRow(path, at);
      if (rowsOut.has(pathKey(path))) throw new ReplicaError('invalid', `row [${path}] is taken out twice`, at);
      rowsOut.set(pathKey(path), destination);
    };
    list('deleteRows').forEach((path, i) => takeRowOut(path, null, `deleteRows[${i}]`));
    list('moveRows').forEach((entry, i) => {
      if (!isIndexPath(entry.to)) throw new ReplicaError('out_of_range', `bad destination [${entry.to}]`, `moveRows[${i}]`);
      takeRowOut(entry.from, entry.to, `moveRows[${i}]`);
    });
    const rowsIn = []; // {at: [s, r], row}
    const rowPaths = [...rowsOut.keys()].map((key) => key.split(',').map(Number));
    for (const path of rowPaths.sort((a, b) => comparePaths(b, a))) {
      const [row] = old[path[0]].rows.splice(path[1], 1);
      const destination = rowsOut.get(pathKey(path));
      if (destination) rowsIn.push({ at: destination, row, source: `moveRows to [${destination}]` });
    }

    const sectionsOut = new Map(); // old index → destination index, or null for a delete
    const takeSectionOut = (s, destination, at) => {
      oldSection(s, at);
      if (sectionsOut.has(s)) throw new ReplicaError('invalid', `section ${s} is taken out twice`, at);
      sectionsOut.set(s, destination);
    };
    list('deleteSections').forEach((s, i) => takeSectionOut(s, null, `deleteSections[${i}]`));
    list('moveSections').forEach((entry, i) => {
      if (!isIndex(entry.to)) throw new ReplicaError('out_of_range', `bad destination ${entry.to}`, `moveSections[${i}]`);
      takeSectionOut(entry.from, entry.to, `moveSections[${i}]`);
    });
    const sectionsIn = []; // {at: s, section}
    for (const s of [...sectionsOut.keys()].sort((a, b) => b - a)) {
      const [section] = old.splice(s, 1);
      const destination = sectionsOut.get(s);
      if (destination !== null) sectionsIn.push({ at: destination, section, source: `moveSections to ${destination}` });
    }

    // 3. Put back sections, then rows, by ascending destination. Each lands exactly at its index only if
    // no two share a destination and none lies past the end (a gap), so both are refused.
    list('insertSections').forEach((entry, i) => {
      if (entry.section === null || typeof entry.section !== 'object' || !Array.isArray(entry.section.rows)) {
        throw new ReplicaError('invalid', 'an inserted section needs rows', `insertSections[${i}]`);
      }
      sectionsIn.push({ at: entry.at, section: clone(entry.section), source: `insertSections[${i}]` });
    });
    sectionsIn.sort((a, b) => a.at - b.at);
    sectionsIn.forEach((entry, i) => {
      if (!isIndex(entry.at) || entry.at > old.length) {
        throw new ReplicaError('out_of_range', `section ${entry.at} is not in the table after the update`, entry.source);
      }
      if (i > 0 && sectionsIn[i - 1].at === entry.at) {
        throw new ReplicaError('invalid', `two sections put at ${entry.at}`, entry.source);
      }
      old.splice(entry.at, 0, entry.section);
    });

    list('insertRows').forEach((entry, i) => {
      if (!isIndexPath(entry.at) || entry.row === null || typeof entry.row !== 'object') {
        throw new ReplicaError('invalid', 'an inserted row needs an index path and a row', `insertRows[${i}]`);
      }
      rowsIn.push({ at: entry.at, row: clone(entry.row), source: `insertRows[${i}]` });
    });
    rowsIn.sort((a, b) => comparePaths(a.at, b.at));
    rowsIn.forEach((entry, i) => {
      const [s, r] = entry.at;
      if (s >= old.length || r > old[s].rows.length) {
        throw new ReplicaError('out_of_range', `row [${entry.at}] is not in the table after the update`, entry.source);
      }
      if (i > 0 && comparePaths(rowsIn[i - 1].at, entry.at) === 0) {
        throw new ReplicaError('invalid', `two rows put at [${entry.at}]`, entry.source);
      }
      old[s].rows.splice(r, 0, entry.row);
    });

    // 4. Commit.
    this._sections = old;
    this.version = update.version;
    this._index = null;
  }

  _sectionAt(s) {
    if (!isIndex(s) || s >= this._sections.length) throw new RangeError(`no section ${s}`);
    return this._sections[s];
  }

  _ids() {
    if (!this._index) {
      const rows = new Map();
      const sections = new Map();
      this._sections.forEach((section, s) => {
        sections.set(section.id, s);
        section.rows.forEach((row, r) => rows.set(row.id, [s, r]));
      });
      this._index = { rows, sections };
    }
    return this._index;
  }
}
