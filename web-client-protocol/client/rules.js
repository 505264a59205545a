// The table-view delegate's decisions as the server takes them (../README.md, "Table-view rules the server
// enforces"): a row's flags and their defaults, add-item placeholders, and what may be edited, deleted and moved
// where. The one copy of these rules in JavaScript: the page asks it what to offer, the replica and the
// optimistic layer take the flag defaults from it. Pure functions, no imports. The server's copy is TableModel's
// Table+Permissions.swift; where they disagree, the server refuses and the page's prediction springs back.

/** A table's rules before the server has sent them (those of a new table). */
export const DEFAULT_RULES = Object.freeze({ moves: 'any', reserveLastRow: false, deleteConfirmationTitle: 'Delete' });

/** A row's flags and their values when absent: the wire, and rows in their canonical shape, leave defaults out. */
export const ROW_DEFAULTS = Object.freeze({ editable: true, movable: true, editingStyle: 'delete' });

/** The row's flag `name` (`editable`, `movable` or `editingStyle`), its default when absent. */
export function flagOf(row, name) {
  return row[name] ?? ROW_DEFAULTS[name];
}

/** A row's content in the wire's shape: its value and only the flags that differ from their defaults. */
export function rowContent(row) {
  const out = { value: structuredClone(row.value) };
  for (const name of Object.keys(ROW_DEFAULTS)) if (flagOf(row, name) !== ROW_DEFAULTS[name]) out[name] = row[name];
  return out;
}

/** Whether row `r` is the last of its section while the rules reserve that row as an add-item placeholder. */
export function isReservedLastRow(rules, section, r) {
  return Boolean(rules.reserveLastRow) && r === section.rows.length - 1;
}

/** An add-item placeholder: the reserved last row, or a row whose editingStyle is insert (wherever it is). */
export function isPlaceholder(rules, section, r) {
  return isReservedLastRow(rules, section, r) || section.rows[r]?.editingStyle === 'insert';
}

/** Whether the row's value may be edited (canEditRow); only an admin's change of its flags unlocks it. */
export function canEdit(row) {
  return flagOf(row, 'editable');
}

/** Whether row `r` of `section` may be deleted: editable, with the delete editing style, not a placeholder. */
export function canDelete(rules, section, r) {
  const row = section.rows[r];
  return canEdit(row) && flagOf(row, 'editingStyle') === 'delete' && !isPlaceholder(rules, section, r);
}

/** Whether row `r` of `section` may be moved: the table allows moves, the row is movable, not a placeholder. */
export function canMove(rules, section, r) {
  return rules.moves !== 'none' && flagOf(section.rows[r], 'movable') && !isPlaceholder(rules, section, r);
}

/** Whether a row may be moved from section `from` into section `to` (`moves`: any, withinSection or none). */
export function mayMoveInto(rules, from, to) {
  if (rules.moves === 'none') return false;
  return rules.moves !== 'withinSection' || from === to;
}

/** Where a row added at the end of a section of `count` rows lands: before the reserved last row, if any. */
export function endOfRows(rules, count) {
  return rules.reserveLastRow && count > 0 ? count - 1 : count;
}
