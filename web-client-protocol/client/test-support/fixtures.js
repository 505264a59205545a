// Builders for protocol messages shared by the tests in ../test/.

export const DEFAULT_RULES = {
  moves: 'any',
  reserveLastRow: false,
  deleteConfirmationTitle: 'Delete',
  maxSections: 10000,
  maxRowsPerSection: 100000,
  maxValueBytes: 65536,
};

/** A row whose id is its value (tests use distinct string values). */
export const row = (value) => ({ id: String(value), value });

/** A Section whose rows' ids are their values. */
export const section = (id, header, footer, values) => ({ id, header, footer, rows: values.map(row) });

/** A `snapshot` message. */
export const snapshot = (version, sections, { table = 't', epoch = 'e1', rules = DEFAULT_RULES } = {}) => ({
  type: 'snapshot',
  table,
  version,
  epoch,
  rules,
  sections,
});

/** An `update` message with all eight lists present, as the server sends it. */
export const update = (version, lists = {}, { table = 't', origin = { client: 'server-test' } } = {}) => ({
  type: 'update',
  table,
  version,
  origin,
  deleteSections: [],
  insertSections: [],
  reloadSections: [],
  moveSections: [],
  deleteRows: [],
  insertRows: [],
  reloadRows: [],
  moveRows: [],
  ...lists,
});
