// The table view's controls: the toolbar, undo and redo keys, and the clicks, keys and focus changes on the list
// of rows (pointer gestures are gestures.js). Each handler finds what was hit and calls an action; what a row
// allows (editing, deleting, moving) is asked of rules.js.
import { $, valueText } from './dom.js';
import {
  addRow, addSection, deleteRow, deleteSection, deleteSelected, finishInline, moveRow, moveSection, neighbourDestination,
  refresh, reveal, setEditing, startInline, toggleDone, toggleSelect, undoRedo,
} from './actions.js';
import { openMenu } from './menu.js';
import { render } from './render.js';
import { canDelete, canEdit, canMove } from './rules.js';
import { client, rowInfo, rules, ui } from './state.js';

/** Listens on the toolbar, the document (undo and redo keys) and the list of rows. */
export function installControls() {
  $('#edit-toggle').addEventListener('click', () => setEditing(!ui.editing));
  $('#refresh').addEventListener('click', refresh);
  $('#undo').addEventListener('click', () => undoRedo('undo'));
  $('#redo').addEventListener('click', () => undoRedo('redo'));
  document.addEventListener('keydown', (event) => {
    if (!(event.ctrlKey || event.metaKey) || event.altKey || event.key.toLowerCase() !== 'z') return;
    // In a text field the browser's own undo edits the text.
    if (event.target.closest?.('input, textarea, [contenteditable]')) return;
    event.preventDefault();
    undoRedo(event.shiftKey ? 'redo' : 'undo');
  });
  $('#add').addEventListener('click', addRow);
  $('#add-section').addEventListener('click', addSection);
  $('#delete-selected').addEventListener('click', deleteSelected);

  const sections = $('#sections');

  sections.addEventListener('click', (event) => {
    const target = event.target.closest('[data-action]');
    const row = event.target.closest('.row[data-id]');
    const id = row?.dataset.id;
    // The click a mouse may send at the end of a swipe or a pull (no press in between) is not a tap; a click
    // from the keyboard (detail 0) always counts.
    const gestureEnd = ui.gestureEnded;
    ui.gestureEnded = null;
    if (gestureEnd && event.detail > 0 && performance.now() - gestureEnd.at < 1000) {
      event.preventDefault();
      return;
    }
    if (!target) {
      // A tap on a revealed row closes it, as on iOS; otherwise a tap on a row's text edits it in place.
      if (ui.revealed && !event.target.closest('input')) reveal(null);
      else if (event.target.closest('.value') && id) {
        const info = rowInfo(id);
        if (info && canEdit(info.row)) startInline('row', id, valueText(info.row.value));
      }
      return;
    }
    const sectionId = target.dataset.section;
    switch (target.dataset.action) {
      case 'delete': deleteRow(id); break;
      case 'reveal': reveal(ui.revealed === id ? null : id); break;
      case 'select': toggleSelect(id); break;
      case 'toggle-done': toggleDone(id); break;
      case 'new-row': startInline('new', sectionId, '', target.dataset.before ?? null); break;
      case 'move-section-up':
      case 'move-section-down': moveSection(sectionId, target.dataset.action === 'move-section-up' ? -1 : 1); break;
      case 'delete-section':
        ui.confirmSection = sectionId;
        render();
        $(`[data-focus="delete-section-confirmed:${CSS.escape(sectionId)}"]`)?.focus();
        break;
      case 'delete-section-cancel':
        ui.confirmSection = null;
        render();
        $(`[data-focus="delete-section:${CSS.escape(sectionId)}"]`)?.focus();
        break;
      case 'delete-section-confirmed': deleteSection(sectionId); break;
      case 'edit-header':
      case 'edit-footer': {
        const kind = target.dataset.action.slice(5);
        const s = ui.replica.indexOfSection(sectionId);
        startInline(kind, sectionId, ui.replica.section(s)[kind] ?? '');
        break;
      }
      default: break;
    }
  });

  sections.addEventListener('contextmenu', (event) => {
    const row = event.target.closest('.row[data-id]');
    if (!row || event.target.closest('input')) return;
    event.preventDefault();
    openMenu(row.dataset.id, event.clientX, event.clientY);
  });

  sections.addEventListener('input', (event) => {
    if (event.target.dataset.inline && ui.inline) ui.inline.draft = event.target.value;
  });

  sections.addEventListener('focusout', (event) => {
    // Leaving an inline editor commits it (unless it is being re-rendered, or focus went to another editor).
    const input = event.target;
    if (!input.dataset?.inline || !ui.inline || !input.isConnected) return;
    setTimeout(() => {
      if (ui.inline && !document.activeElement?.dataset?.inline && document.hasFocus()) {
        if (ui.inline.kind === 'new') {
          if (!ui.inline.draft.trim()) {
            ui.inline = null;
            render();
          }
        } else finishInline(true);
      }
    }, 0);
  });

  sections.addEventListener('keydown', (event) => {
    const input = event.target.closest('[data-inline]');
    if (input) {
      if (event.key === 'Enter') {
        event.preventDefault();
        finishInline(true);
        if (ui.inline?.kind === 'new') $('[data-inline]')?.focus();
      } else if (event.key === 'Escape') {
        event.preventDefault();
        const kind = ui.inline?.kind;
        const id = ui.inline?.id;
        ui.inline = null;
        if (kind === 'row') client.endEditingRow(ui.table, id);
        render();
        $(`[data-focus="row:${CSS.escape(id ?? '')}"]`)?.focus();
      }
      return;
    }
    const handle = event.target.closest('.handle');
    const row = event.target.closest('.row[data-id]:not(.placeholder)');
    if (!row) return;
    const id = row.dataset.id;
    const info = rowInfo(id);
    if (!info) return;
    const onRow = event.target === row;
    const moveKey = (event.key === 'ArrowUp' || event.key === 'ArrowDown') && (event.altKey || handle);
    if (moveKey) {
      event.preventDefault();
      if (canMove(rules(), info.section, info.path[1])) moveRow(id, neighbourDestination(id, event.key === 'ArrowUp' ? -1 : 1));
      return;
    }
    if (!onRow) {
      if (event.key === 'Escape' && ui.revealed) {
        reveal(null);
        row.focus();
      }
      return;
    }
    if (event.key === 'ContextMenu' || (event.key === 'F10' && event.shiftKey)) {
      event.preventDefault();
      const box = row.getBoundingClientRect();
      openMenu(id, box.left + 16, box.bottom - 8);
      return;
    }
    switch (event.key) {
      case 'Enter':
      case 'F2':
        event.preventDefault();
        if (canEdit(info.row)) startInline('row', id, valueText(info.row.value));
        break;
      case 'Delete':
      case 'Backspace':
        event.preventDefault();
        if (!canDelete(rules(), info.section, info.path[1])) break;
        reveal(id);
        $(`[data-focus="delete:${CSS.escape(id)}"]`)?.focus();
        break;
      case 'Escape':
        if (ui.revealed) reveal(null);
        break;
      case ' ':
        if (ui.editing && canDelete(rules(), info.section, info.path[1])) {
          event.preventDefault();
          toggleSelect(id);
        }
        break;
      case 'ArrowDown':
      case 'ArrowUp': {
        event.preventDefault();
        const rows = [...sections.querySelectorAll('.row[tabindex="0"]')];
        const i = rows.indexOf(row) + (event.key === 'ArrowDown' ? 1 : -1);
        rows[i]?.focus();
        break;
      }
      default: break;
    }
  });
}
