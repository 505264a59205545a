// What the page does to the table: each action changes the state and sends intents optimistically (the view shows
// a change at once; a refused one springs back, ../optimistic.md), then redraws. Where a row goes when it is
// added or moved follows the table's rules (rules.js), as the server would place it.
import { $, announce, isItem, parseValue, showError, valueText } from './dom.js';
import { render } from './render.js';
import { endOfRows, mayMoveInto } from './rules.js';
import { client, rowInfo, rules, ui } from './state.js';

export const act = (promise) => promise.catch((error) => {
  showError(error);
  render(); // a refused change springs back: the view is the prediction without it
  return null;
});

/** Sends an edit intent optimistically: the view shows it at once (see ../optimistic.md); the promise is its ack. */
export function optimistic(type, fields) {
  try {
    return client.perform(ui.table, { type, ...fields });
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Undo / redo of this page's own changes (Ctrl/Cmd-Z, Shift-Ctrl/Cmd-Z, the toolbar buttons). */
export function undoRedo(verb) {
  if (!ui.table || !ui.replica?.loaded) return;
  let promise;
  try {
    promise = client[verb](ui.table);
  } catch (error) {
    promise = Promise.reject(error);
  }
  act(promise.then((done) => announce(done ? `${verb === 'undo' ? 'Undid' : 'Redid'} the last change.` : `Nothing to ${verb}.`)));
}

/** Ticks or unticks an item's `done` with a patch of that field alone, so a concurrent change of another stays. */
export function toggleDone(id) {
  const info = rowInfo(id);
  if (!info || !isItem(info.row.value)) return;
  const done = info.row.value.done !== true;
  act(optimistic('patch', { at: info.path, row: id, patch: { done } }).then((ack) => {
    if (ack) announce(`${done ? 'Ticked' : 'Unticked'} “${valueText(info.row.value)}”.`);
  }));
}

export function reveal(id) {
  if (ui.revealed === id) return;
  if (ui.revealed) client.endEditingRow(ui.table, ui.revealed);
  ui.revealed = id;
  if (id) client.beginEditingRow(ui.table, id);
  render();
}

/** Where keyboard focus goes when the focused row disappears: the next row, else the previous one. */
function focusFallback(ids) {
  const rows = [...$('#sections').querySelectorAll('.row[tabindex="0"]')];
  const gone = new Set(ids);
  const at = rows.findIndex((r) => gone.has(r.dataset.id));
  const rest = rows.filter((r) => !gone.has(r.dataset.id));
  const next = rows.slice(at + 1).find((r) => !gone.has(r.dataset.id)) ?? rest[rest.length - 1];
  ui.focusFallback = next ? `row:${next.dataset.id}` : null;
}

export function deleteRow(id) {
  const info = rowInfo(id);
  if (!info) return;
  if (document.activeElement?.closest?.(`.row[data-id="${CSS.escape(id)}"]`)) focusFallback([id]);
  ui.revealed = null;
  client.endEditingRow(ui.table, id);
  act(optimistic('delete', { at: info.path, row: id }).then((ack) => {
    if (ack) announce(`Deleted “${valueText(info.row.value)}”.`);
  }));
}

export function startInline(kind, id, draft, before = null) {
  finishInline(true); // moving to another editor commits the open one, as leaving it does
  if (kind === 'new' && !before && id !== null) {
    const rows = ui.replica.sectionById(id)?.rows ?? [];
    before = rows[endOfRows(rules(), rows.length)]?.id ?? null; // new rows go before the reserved last row
  }
  ui.inline = { kind, id, draft, before };
  if (kind === 'row') client.beginEditingRow(ui.table, id);
  render();
  document.querySelector('[data-inline]')?.focus();
  document.querySelector('[data-inline]')?.select?.();
}

export function finishInline(commit) {
  const inline = ui.inline;
  if (!inline) return;
  ui.inline = null;
  const table = ui.table;
  if (inline.kind === 'row') {
    client.endEditingRow(table, inline.id);
    const info = rowInfo(inline.id);
    if (commit && info && inline.draft !== valueText(info.row.value)) {
      // An item's text is its title: only that field changes, whatever others change in the others meanwhile.
      act(isItem(info.row.value)
        ? optimistic('patch', { at: info.path, row: inline.id, patch: { title: inline.draft } })
        : optimistic('edit', { at: info.path, row: inline.id, value: parseValue(inline.draft, info.row.value) }));
    }
  } else if (inline.kind === 'header' || inline.kind === 'footer') {
    const s = ui.replica.indexOfSection(inline.id);
    const text = inline.draft.trim();
    if (commit && s !== null && (ui.replica.section(s)[inline.kind] ?? '') !== text) {
      act(optimistic('editSection', { at: s, section: inline.id, [inline.kind]: text || null }));
    }
  } else if (inline.kind === 'new' && commit && inline.draft.trim()) {
    const value = inline.draft.trim();
    const s = inline.id === null ? null : ui.replica.indexOfSection(inline.id);
    if (s === null) {
      act(optimistic('insertSection', { at: ui.replica.sectionCount, header: null, footer: null, rows: [{ value }] }));
    } else {
      const count = ui.replica.rowCount(s);
      const before = inline.before && ui.replica.indexPathOfRow(inline.before);
      const at = before ?? [s, endOfRows(rules(), count)];
      act(optimistic('insert', { at, value }).then((ack) => ack && flash(ack.created?.[0])));
      // Stay in the editor for the next row, as a list app does.
      ui.inline = { kind: 'new', id: inline.id, draft: '', before: inline.before };
    }
  }
  render();
}

export function flash(id) {
  if (!id) return;
  const row = $(`.row[data-id="${CSS.escape(id)}"]`);
  if (!row) return;
  row.classList.remove('settled');
  void row.offsetWidth;
  row.classList.add('settled');
}

export function toggleSelect(id) {
  if (ui.selected.has(id)) ui.selected.delete(id);
  else ui.selected.add(id);
  render();
}

export function setEditing(on) {
  finishInline(true);
  ui.editing = on;
  ui.confirmSection = null;
  ui.selected.clear();
  if (ui.revealed) reveal(null);
  client.setEditing(ui.table, on);
  render();
}

/** The destination of a row moved one place up (-1) or down (+1), following the table's rules. */
export function neighbourDestination(id, step) {
  const info = rowInfo(id);
  if (!info) return null;
  const [s, r] = info.path;
  const last = endOfRows(rules(), ui.replica.rowCount(s)) - 1; // the last place a moved row may take
  if (step < 0 && r > 0) return [s, r - 1];
  if (step > 0 && r < last) return [s, r + 1];
  const next = s + step;
  if (!mayMoveInto(rules(), s, next) || next < 0 || next >= ui.replica.sectionCount) return null;
  if (step > 0) return [next, 0];
  return [next, endOfRows(rules(), ui.replica.rowCount(next))];
}

/** Moves a row; `from` defaults to where the view has it now. */
export function moveRow(id, to, from = rowInfo(id)?.path) {
  if (!from || !to || (from[0] === to[0] && from[1] === to[1])) return;
  act(optimistic('move', { from, to, row: id }).then((ack) => {
    if (!ack) return;
    // Where the server put the row (after rebase and retargeting), kept on the row for tools and tests.
    if (ack.resolved?.[0]) ui.resolved.set(id, ack.resolved[0].join(','));
    render();
    flash(id);
    const at = ack.resolved?.[0];
    const row = ui.replica.rowById(id);
    if (at && row) announce(`Moved “${valueText(row.value)}” to row ${at[1] + 1} of section ${at[0] + 1}.`);
  }));
}

/** Moves a section one place up (-1) or down (+1); focus stays on the control, which moves with it (or on the
 *  other one, when the section reached the end and this one is now disabled). */
export function moveSection(id, step) {
  const from = ui.replica.indexOfSection(id);
  if (from === null || from + step < 0 || from + step >= ui.replica.sectionCount) return;
  act(optimistic('moveSection', { from, to: from + step, section: id }).then((ack) => {
    if (!ack) return;
    const section = ui.replica.sectionById(id);
    const at = ui.replica.indexOfSection(id);
    if (at !== null) announce(`Moved ${section?.header ?? 'the section'} to position ${at + 1}.`);
    const control = $(`[data-focus="move-section-${step < 0 ? 'up' : 'down'}:${CSS.escape(id)}"]`);
    const other = $(`[data-focus="move-section-${step < 0 ? 'down' : 'up'}:${CSS.escape(id)}"]`);
    if (control?.disabled && (document.activeElement === document.body || document.activeElement === control)) other?.focus();
  }));
}

export function deleteSection(id) {
  const at = ui.replica.indexOfSection(id);
  ui.confirmSection = null;
  if (at === null) return render();
  const name = ui.replica.section(at).header ?? `Section ${at + 1}`;
  act(optimistic('deleteSection', { at, section: id }).then((ack) => {
    if (ack) announce(`Deleted ${name}.`);
  }));
  render();
}

export async function refresh() {
  if (!ui.table || ui.refreshing) return;
  ui.refreshing = true;
  const pull = $('#pull');
  pull.classList.add('refreshing');
  pull.style.height = '';
  $('.pull-text', pull).textContent = 'Refreshing…';
  $('#refresh').setAttribute('aria-busy', 'true');
  try {
    await act(client.refresh(ui.table));
  } finally {
    ui.refreshing = false;
    pull.classList.remove('refreshing');
    $('.pull-text', pull).textContent = 'Pull to refresh';
    $('#refresh').removeAttribute('aria-busy');
    render();
  }
}

/** Opens the new-row editor at the end of the last section (or of a new one, in an empty table). */
export function addRow() {
  if (!ui.replica?.loaded) return;
  const count = ui.replica.sectionCount;
  startInline('new', count ? ui.replica.section(count - 1).id : null, '');
}

export function addSection() {
  if (!ui.replica?.loaded) return;
  const at = ui.replica.sectionCount;
  act(optimistic('insertSection', { at, header: `Section ${at + 1}`, footer: null, rows: [] }));
}

/** Deletes the rows selected in editing mode, in one batch. */
export function deleteSelected() {
  const deleteRows = [...ui.selected].map((id) => ({ id, info: rowInfo(id) })).filter((x) => x.info)
    .map(({ id, info }) => ({ at: info.path, row: id }));
  if (!deleteRows.length) return;
  ui.selected.clear();
  act(optimistic('batch', { deleteRows }).then((ack) => {
    if (ack) announce(`Deleted ${deleteRows.length} rows.`);
  }));
  render();
}
