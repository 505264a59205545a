// Drawing the page from the state: the presence list and the table view, each render from scratch (a presence
// change alone updates the list and the row badges in place, and what arrives while a pointer is down on the list
// waits for the press to end: see `renderPresenceChange` and `renderArrival`). The view
// is the predicted table (the replica plus this page's changes not yet answered, ../optimistic.md): a change
// shows at once, a refused one springs back, and a row settles where the server put it. What each row offers
// (delete, reorder, an insertion control) follows the table's rules (rules.js).
import { Replica } from './replica.js';
import { $, el, isItem, showError, valueText } from './dom.js';
import { canDelete, canEdit, canMove, isPlaceholder } from './rules.js';
import { SWIPE_WIDTH, client, rules, ui } from './state.js';

export function renderPresence() {
  const list = $('#presence');
  const rowText = (id) => {
    const row = ui.replica?.loaded ? ui.replica.rowById(id) : null;
    return row ? `on “${valueText(row.value).slice(0, 24)}”` : 'on a row';
  };
  // Keys, not client ids: another tab of this browser is someone else here.
  const { you, clients, viewers } = ui.presence;
  const people = clients.map((p) => {
    const text = `${p.name || p.client}${p.key === you ? ' (you)' : ''}${p.editing ? ' · editing' : ''}`
      + `${p.row ? ` · ${rowText(p.row)}` : ''}`;
    return el('li', { class: `badge${p.editing ? ' editing' : ''}${p.key === you ? ' me' : ''}`, title: text },
      el('span', { class: 'dot', 'aria-hidden': 'true' }), text);
  });
  const watching = viewers > 0 ? [el('li', { class: 'viewers', text: `+${viewers} watching` })] : [];
  list.replaceChildren(...people, ...watching);
}

/** Draws what arrived from the server, unless a pointer is down on the list: every row drawn again under a press
 *  puts a new element under the pointer before its release, and the click is lost. The press's end draws it
 *  (see `installGestures`). */
export function renderArrival() {
  if (ui.pressing) {
    ui.deferred = true;
    return;
  }
  render();
}

/** Presence alone changed: the list of people and each row's badges, in place. The rows are not drawn again, so a
 *  press under way (down on a row's button, up on it a moment later) is not lost to a new element under the pointer
 *  when someone else comes, goes or starts editing. */
export function renderPresenceChange() {
  renderPresence();
  for (const badges of $('#sections').querySelectorAll('.row .badges')) {
    badges.replaceChildren(...rowBadges(badges.closest('.row').dataset.id));
  }
}

function rowBadges(id) {
  return ui.presence.clients.filter((p) => p.row === id && p.key !== ui.presence.you).map((p) => {
    const name = p.name || p.client;
    const initials = name.split(/\s+/).map((w) => w[0]).join('').slice(0, 2).toUpperCase();
    return el('span', { class: 'row-badge', title: `${name} is editing this row`, 'aria-label': `${name} is editing this row`, text: initials });
  });
}

export function render() {
  if (ui.drag) {
    ui.deferred = true;
    return;
  }
  const container = $('#sections');
  // The view is the predicted table: the replica plus this page's changes the server has not answered yet.
  const predicted = ui.source?.loaded ? client.predicted(ui.table) : undefined;
  if (predicted) {
    const view = new Replica();
    view.loadSnapshot({ version: predicted.version, epoch: ui.source.epoch, rules: predicted.rules, sections: predicted.sections });
    ui.replica = view;
  }
  const replica = ui.replica;
  $('#undo').disabled = !(ui.table && client.canUndo(ui.table));
  $('#redo').disabled = !(ui.table && client.canRedo(ui.table));
  const focused = document.activeElement;
  const focusKey = focused?.dataset?.focus;
  const caret = focused && 'selectionStart' in focused ? [focused.selectionStart, focused.selectionEnd] : null;

  $('#edit-toggle').textContent = ui.editing ? 'Done' : 'Edit';
  $('#edit-toggle').setAttribute('aria-pressed', String(ui.editing));
  $('#table').classList.toggle('editing', ui.editing);
  $('#add-section').hidden = !ui.editing;
  $('#add').hidden = ui.editing; // in editing mode rows are added by the insertion controls
  const deleteSelected = $('#delete-selected');
  deleteSelected.hidden = !ui.editing;

  if (!replica || !replica.loaded) {
    container.replaceChildren(el('p', { class: 'muted', text: ui.subscribeError ? 'This table cannot be shown.' : 'Loading…' }));
    $('#empty').hidden = true;
    return;
  }
  renderPresence();
  const sections = replica.sections;
  const ids = new Set(sections.flatMap((s) => s.rows.map((row) => row.id)));
  // Selected rows that are gone, or can no longer be deleted (an admin locked them), leave the selection.
  const deletable = new Set(sections.flatMap((section) => section.rows.filter((row, r) => canDelete(rules(), section, r)).map((row) => row.id)));
  for (const id of [...ui.selected]) if (!deletable.has(id)) ui.selected.delete(id);
  if (ui.revealed && !ids.has(ui.revealed)) ui.revealed = null;
  if (ui.inline?.kind === 'row' && !ids.has(ui.inline.id)) {
    ui.inline = null;
    showError({ message: 'The row you were editing was deleted by someone else.', code: 'conflict' });
  }
  deleteSelected.disabled = ui.selected.size === 0;
  deleteSelected.textContent = ui.selected.size ? `Delete selected (${ui.selected.size})` : 'Delete selected';

  container.replaceChildren(...sections.map((section, s) => renderSection(section, s)));
  const newAtTop = ui.inline?.kind === 'new' && ui.inline.id === null;
  if (newAtTop) container.append(newRowEditor(null));
  $('#empty').hidden = sections.some((section) => section.rows.length) || newAtTop || ui.editing;

  // Focus stays on the same control across renders; if that control is gone (its row was deleted) and focus
  // was in the list, it goes to the row remembered as the fallback.
  let key = focusKey;
  const inList = focused === document.body || (focused && !focused.isConnected) || container.contains(focused);
  if (ui.focusFallback && inList && (!key || !container.querySelector(`[data-focus="${CSS.escape(key)}"]`))) {
    key = ui.focusFallback;
    ui.focusFallback = null;
  }
  if (key) {
    const target = container.querySelector(`[data-focus="${CSS.escape(key)}"]`) ?? $(`[data-focus="${CSS.escape(key)}"]`);
    if (target && target !== document.activeElement) {
      target.focus({ preventScroll: true });
      if (caret && 'setSelectionRange' in target) {
        try {
          target.setSelectionRange(...caret);
        } catch { /* not a text input */ }
      }
    }
  }
}

function renderSection(section, s) {
  const headerId = `h-${section.id}`;
  const list = el('ul', { class: 'rows', role: 'list', 'aria-labelledby': headerId, 'data-s': s, 'data-section': section.id });
  const newHere = ui.inline?.kind === 'new' && ui.inline.id === section.id;
  // The new row's editor goes before the placeholder it was opened from (if still there), else last.
  const before = newHere && section.rows.some((row) => row.id === ui.inline.before) ? ui.inline.before : null;
  section.rows.forEach((row, r) => {
    if (before === row.id) list.append(newRowEditor(section));
    list.append(isPlaceholder(rules(), section, r) ? placeholderRow(section, row, s, r) : renderRow(section, row, s, r));
  });
  if (!section.rows.length && !newHere && !(ui.editing && !rules().reserveLastRow)) { // editing mode has 'Add row' there
    list.append(el('li', { class: 'empty-section', role: 'listitem', text: 'No rows' }));
  }
  if (newHere && !before) list.append(newRowEditor(section));
  else if (ui.editing && !rules().reserveLastRow) {
    list.append(el('li', { class: 'insert-control' },
      el('button', { type: 'button', class: 'insert', 'data-action': 'new-row', 'data-section': section.id, 'data-focus': `insert:${section.id}` },
        el('span', { class: 'plus', 'aria-hidden': 'true', text: '+' }), 'Add row')));
  }
  return el('section', { class: 'section', 'data-section': section.id },
    sectionText(section, s, 'header', headerId),
    ui.editing ? sectionTools(section, s) : null,
    list,
    sectionText(section, s, 'footer'));
}

/** Editing mode's section controls: move up / down (moveSection:toSection:) and delete (deleteSections), the
 *  delete after a confirmation that names the section and counts its rows. */
function sectionTools(section, s) {
  const name = section.header ?? `Section ${s + 1}`;
  if (ui.confirmSection === section.id) {
    const count = section.rows.length;
    return el('div', { class: 'section-tools confirm', role: 'group', 'aria-label': `Delete ${name}?` },
      el('span', { class: 'confirm-text', text: `Delete “${name}” and its ${count} row${count === 1 ? '' : 's'}?` }),
      el('button', {
        type: 'button', class: 'danger', 'data-action': 'delete-section-confirmed', 'data-section': section.id,
        'data-focus': `delete-section-confirmed:${section.id}`, text: rules().deleteConfirmationTitle || 'Delete',
      }),
      el('button', {
        type: 'button', 'data-action': 'delete-section-cancel', 'data-section': section.id,
        'data-focus': `delete-section-cancel:${section.id}`, text: 'Cancel',
      }));
  }
  const count = ui.replica.sectionCount;
  return el('div', { class: 'section-tools', role: 'group', 'aria-label': `${name}: section actions` },
    el('button', {
      type: 'button', 'data-action': 'move-section-up', 'data-section': section.id, disabled: s === 0,
      'data-focus': `move-section-up:${section.id}`, 'aria-label': `Move ${name} up`, text: '↑',
    }),
    el('button', {
      type: 'button', 'data-action': 'move-section-down', 'data-section': section.id, disabled: s === count - 1,
      'data-focus': `move-section-down:${section.id}`, 'aria-label': `Move ${name} down`, text: '↓',
    }),
    el('button', {
      type: 'button', class: 'danger', 'data-action': 'delete-section', 'data-section': section.id,
      'data-focus': `delete-section:${section.id}`, 'aria-label': `Delete ${name}`, text: 'Delete section',
    }));
}

function sectionText(section, s, kind, id) {
  const value = section[kind];
  const tag = kind === 'header' ? 'h2' : 'p';
  if (ui.inline?.kind === kind && ui.inline.id === section.id) {
    return el(tag, { class: `section-${kind}`, id },
      el('input', {
        class: 'inline', value: ui.inline.draft, 'data-focus': `${kind}:${section.id}`, 'data-inline': kind,
        'aria-label': `Section ${s + 1} ${kind}`, placeholder: kind === 'header' ? 'Header' : 'Footer',
      }));
  }
  if (value === null && !ui.editing) {
    return kind === 'header' ? el('h2', { class: 'section-header empty-header visually-hidden', id, text: `Section ${s + 1}` }) : null;
  }
  return el(tag, { class: `section-${kind}${value === null ? ' empty-header' : ''}`, id },
    el('button', {
      type: 'button', class: 'text-button', 'data-action': `edit-${kind}`, 'data-section': section.id,
      'data-focus': `${kind}-button:${section.id}`,
      'aria-label': value === null ? `Add a ${kind} to section ${s + 1}` : `${value} (edit ${kind})`,
      text: value ?? (kind === 'header' ? '+ Header' : '+ Footer'),
    }));
}

function newRowEditor(section) {
  return el('li', { class: 'row new-row' }, el('div', { class: 'row-content' },
    el('span', { class: 'plus', 'aria-hidden': 'true', text: '+' }),
    el('input', {
      class: 'inline', value: ui.inline.draft, placeholder: 'New row', 'data-inline': 'new',
      'data-focus': `new:${section?.id ?? ''}`, 'aria-label': 'New row (Enter adds, Escape cancels)',
    })));
}

/** An add-item placeholder: its insertion control adds a row just before it. */
function placeholderRow(section, row, s, r) {
  return el('li', { class: 'row placeholder', role: 'listitem', 'data-id': row.id, 'data-s': s, 'data-r': r },
    el('div', { class: 'row-content' },
      el('button', {
        type: 'button', class: 'insert', 'data-action': 'new-row', 'data-section': section.id, 'data-before': row.id,
        'data-focus': `insert:${row.id}`,
      }, el('span', { class: 'plus', 'aria-hidden': 'true', text: '+' }), valueText(row.value) || 'Add item')));
}

function renderRow(section, row, s, r) {
  const text = valueText(row.value);
  const revealed = ui.revealed === row.id;
  const editingInline = ui.inline?.kind === 'row' && ui.inline.id === row.id;
  const editable = canEdit(row);
  const deletable = canDelete(rules(), section, r);
  const selected = ui.selected.has(row.id);
  const content = el('div', { class: 'row-content', style: revealed ? `transform: translateX(-${SWIPE_WIDTH}px)` : '' },
    ui.editing && deletable ? el('input', {
      type: 'checkbox', class: 'select', checked: selected, 'data-action': 'select', tabIndex: -1,
      'aria-label': `Select ${text}`,
    }) : null,
    ui.editing && !deletable ? el('span', { class: 'no-control', 'aria-hidden': 'true' }) : null,
    ui.editing && deletable ? el('button', {
      type: 'button', class: 'minus', 'data-action': 'reveal', tabIndex: -1, 'aria-label': `Show delete for ${text}`,
    }, el('span', { 'aria-hidden': 'true', text: '−' })) : null,
    doneBox(row, text, editable),
    editingInline
      ? el('input', { class: 'inline', value: ui.inline.draft, 'data-inline': 'row', 'data-focus': `edit:${row.id}`, 'aria-label': `Edit ${text}` })
      : itemText(row.value, text),
    el('span', { class: 'badges' }, rowBadges(row.id)),
    ui.editing && canMove(rules(), section, r) ? el('button', {
      type: 'button', class: 'handle', 'data-action': 'handle', 'data-focus': `handle:${row.id}`,
      'aria-label': `Reorder ${text}: drag it, or press Alt with the up or down arrow on the row`, tabIndex: -1,
    }, el('span', { 'aria-hidden': 'true', text: '≡' })) : null);
  const done = isItem(row.value) && row.value.done === true;
  return el('li', {
    class: `row${done ? ' done' : ''}${row.id.startsWith('~') ? ' pending' : ''}${revealed ? ' revealed' : ''}${selected ? ' selected' : ''}${editable ? '' : ' locked'}${deletable ? '' : ' undeletable'}`,
    role: 'listitem', tabIndex: 0, 'data-id': row.id, 'data-s': s, 'data-r': r, 'data-focus': `row:${row.id}`,
    'data-resolved': ui.resolved.get(row.id),
    'aria-label': `${text}${done ? ', done' : ''}${editable ? '' : ', locked'}${selected ? ', selected' : ''}`,
  },
  deletable ? el('button', {
    type: 'button', class: 'swipe-delete', 'data-action': 'delete', 'data-focus': `delete:${row.id}`,
    tabIndex: revealed ? 0 : -1, 'aria-hidden': revealed ? undefined : 'true',
    text: rules().deleteConfirmationTitle || 'Delete',
  }) : null,
  content);
}

/** An item's `done` mark (a boolean field): a checkbox that patches just that field, outside editing mode. */
function doneBox(row, text, editable) {
  if (ui.editing || !isItem(row.value) || typeof row.value.done !== 'boolean') return null;
  return el('input', {
    type: 'checkbox', class: 'done-box', checked: row.value.done, disabled: !editable, 'data-action': 'toggle-done',
    'data-focus': `done:${row.id}`, 'aria-label': `${text}: done`,
  });
}

/** A row's text: an item's title, with its `note` as a subtitle; any other value as text. */
function itemText(value, text) {
  if (!isItem(value) || typeof value.note !== 'string') return el('span', { class: 'value', text });
  return el('span', { class: 'value' }, el('span', { class: 'title', text }), el('span', { class: 'note', text: value.note }));
}
