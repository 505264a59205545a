// The Tablecast page: a list of tables and a live, shared table that behaves like an iOS table view.
// Plain ES module over ./tablecast.js; no build step. Every interaction has a pointer (mouse and touch) and a
// keyboard path. The view is drawn from the predicted table (the replica plus this page's changes not yet
// answered, ../optimistic.md): a change shows at once, a refused one springs back, and a row settles where the
// server put it.
import { Replica, TablecastClient } from './tablecast.js';
import { HistoryPanel } from './history.js';
import {
  DEFAULT_RULES, canDelete, canEdit, canMove, endOfRows, isPlaceholder, mayMoveInto,
} from './rules.js';

const $ = (selector, root = document) => root.querySelector(selector);
const TABLE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const SWIPE_WIDTH = 96; // px the row slides to uncover its Delete button
const PULL_THRESHOLD = 64; // px of pull that triggers a refresh
const LONG_PRESS_MS = 500; // a touch held this long without moving opens the row menu

function randomId() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  return Array.from({ length: 4 }, () => Math.random().toString(36).slice(2, 8)).join('');
}

// A stable id per browser tab (kept across reloads, so re-sent intents stay idempotent); a name per browser.
const params = new URLSearchParams(location.search);
const clientId = (sessionStorage.tablecastId ??= `web-${randomId()}`.slice(0, 64));
let myName = params.get('name') || localStorage.tablecastName || `Guest ${Math.floor(100 + Math.random() * 900)}`;
let myToken = localStorage.tablecastToken || undefined; // only for servers started with --tokens

const ui = {
  table: null, // name of the open table
  replica: null,
  subscribeError: null,
  source: null, // the subscribed replica (what the server confirmed); `replica` is the predicted view drawn
  editing: false,
  selected: new Set(), // row ids
  revealed: null, // row id whose Delete button is uncovered
  inline: null, // {kind: 'row'|'header'|'footer'|'new', id, draft}
  drag: null,
  deferred: false, // a render was skipped during a drag
  presence: { you: null, clients: [], viewers: 0 }, // this connection's key, who is listed, how many only watch
  resolved: new Map(), // row id → "s,r" where the server put this page's last move of it
  confirmSection: null, // section id whose delete is waiting for its confirmation
  clipboard: null, // {value} copied with the row menu
  menu: null, // row id the open row menu is about
};

let client = null;

function valueText(value) {
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

function parseValue(text, old) {
  if (typeof old === 'string' || old === undefined) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('data-') || key.startsWith('aria-') || key === 'role') node.setAttribute(key, value);
    else if (value === true) node.setAttribute(key, '');
    else node[key] = value;
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

// ---------------------------------------------------------------- errors and connection state

function showError(error) {
  if (!error) return;
  const text = error.message || String(error);
  const banners = $('#banners');
  // The same message twice (a refused subscription is both a rejected promise and an error event) shows once.
  if ([...banners.querySelectorAll('.banner-text')].some((shown) => shown.textContent === text)) return;
  const banner = el('div', { class: 'banner', role: 'alert' },
    el('span', { class: 'banner-text', text }),
    error.code ? el('code', { class: 'banner-code', text: error.code }) : null,
    el('button', { type: 'button', class: 'banner-close', 'aria-label': 'Dismiss', text: '×' }));
  banner.querySelector('.banner-close').addEventListener('click', () => banner.remove());
  banners.append(banner);
  while (banners.children.length > 3) banners.firstElementChild.remove();
}

/** Tells screen readers what a keyboard action did (a polite live region). */
function announce(text) {
  $('#announce').textContent = text;
}

const act = (promise) => promise.catch((error) => {
  showError(error);
  render(); // a refused change springs back: the view is the prediction without it
  return null;
});

/** Sends an edit intent optimistically: the view shows it at once (see ../optimistic.md); the promise is its ack. */
function optimistic(type, fields) {
  try {
    return client.perform(ui.table, { type, ...fields });
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Undo / redo of this page's own changes (Ctrl/Cmd-Z, Shift-Ctrl/Cmd-Z, the toolbar buttons). */
function undoRedo(verb) {
  if (!ui.table || !ui.replica?.loaded) return;
  let promise;
  try {
    promise = client[verb](ui.table);
  } catch (error) {
    promise = Promise.reject(error);
  }
  act(promise.then((done) => announce(done ? `${verb === 'undo' ? 'Undid' : 'Redid'} the last change.` : `Nothing to ${verb}.`)));
}

function showState({ state, delay }) {
  const conn = $('#conn');
  conn.dataset.state = state;
  conn.textContent = {
    idle: 'Offline', connecting: 'Connecting…', live: 'Live', closed: 'Closed',
    reconnecting: `Reconnecting${delay ? ` in ${Math.max(1, Math.round(delay / 1000))} s` : '…'}`,
  }[state] ?? state;
}

// ---------------------------------------------------------------- client

function makeClient() {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const c = new TablecastClient({ url: `${scheme}//${location.host}/`, client: clientId, name: myName, token: myToken });
  c.on('state', showState);
  c.on('error', showError);
  c.on('welcome', () => {
    if (!ui.table) loadTables();
  });
  const mine = (detail) => detail.table === ui.table;
  c.on('snapshot', (d) => mine(d) && render());
  c.on('update', (d) => mine(d) && render());
  c.on('update', (d) => mine(d) && historyPanel.changed());
  c.on('predicted', (d) => mine(d) && render());
  c.on('subscribed', (d) => mine(d) && render());
  c.on('rules', (d) => mine(d) && render());
  c.on('presence', (d) => {
    if (!mine(d)) return;
    ui.presence = { you: d.you, clients: d.clients, viewers: d.viewers };
    renderPresence();
    render();
  });
  c.on('dropped', (d) => {
    if (!mine(d)) return;
    showError({ message: `The table “${d.table}” was dropped.`, code: 'dropped' });
    location.hash = '#/';
  });
  c.connect();
  return c;
}

// ---------------------------------------------------------------- routing

function route() {
  const hash = location.hash.match(/^#\/table\/(.+)$/);
  let name = hash ? decodeURIComponent(hash[1]) : null;
  if (!hash && params.get('table')) {
    name = params.get('table');
    history.replaceState(null, '', `${location.pathname}#/table/${encodeURIComponent(name)}`);
  }
  if (name !== null && !TABLE_NAME.test(name)) {
    showError({ message: `“${name}” is not a table name.`, code: 'bad_request' });
    name = null;
  }
  if (name !== ui.table || !ui.routed) openTable(name);
  ui.routed = true;
}

function openTable(name) {
  const previous = ui.table;
  if (previous) {
    if (ui.editing) client.setEditing(previous, false);
    if (ui.inline?.kind === 'row' || ui.revealed) client.endEditingRow(previous, ui.inline?.id ?? ui.revealed);
    act(client.unsubscribe(previous));
  }
  Object.assign(ui, {
    table: name, replica: null, source: null, subscribeError: null, editing: false, selected: new Set(),
    revealed: null, inline: null, drag: null, presence: { you: null, clients: [], viewers: 0 }, confirmSection: null,
  });
  closeMenu();
  historyPanel.setTable(name);
  $('#home').hidden = name !== null;
  $('#table').hidden = name === null;
  $('#back').hidden = name === null;
  $('#title').textContent = name ?? 'Tablecast';
  document.title = name ? `${name} · Tablecast` : 'Tablecast';
  if (name === null) {
    loadTables();
    return;
  }
  renderPresence();
  render();
  client.subscribe(name).then((replica) => {
    if (ui.table !== name) return;
    ui.source = replica;
    render();
  }, (error) => {
    if (ui.table !== name) return;
    ui.subscribeError = error;
    showError(error);
    render();
  });
}

// ---------------------------------------------------------------- the list of tables

async function loadTables() {
  if (ui.table || client.state !== 'live') return;
  const tables = await act(client.listTables());
  if (!tables || ui.table) return;
  const list = $('#tables');
  list.replaceChildren(...tables
    .sort((a, b) => a.table.localeCompare(b.table))
    .map((t) => el('li', {},
      el('a', { href: `#/table/${encodeURIComponent(t.table)}`, text: t.table }),
      el('span', { class: 'meta', text: `v${t.version} · ${t.subscribers} here` }))));
  if (!tables.length) list.append(el('li', { class: 'muted', text: 'No tables yet: create one above.' }));
}

$('#create-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = $('#create-name');
  const name = input.value.trim();
  if (!TABLE_NAME.test(name)) {
    showError({ message: `“${name}” is not a table name.`, code: 'bad_request' });
    return;
  }
  const ack = await act(client.createTable(name, { sections: [{ header: null, footer: null, rows: [] }] }));
  if (ack) {
    input.value = '';
    location.hash = `#/table/${encodeURIComponent(name)}`;
  }
});
$('#tables-refresh').addEventListener('click', loadTables);
// Name and token go out in hello: a change reconnects with them.
function reconnect() {
  client.close();
  client = makeClient();
}
$('#my-name').value = myName;
$('#my-name').addEventListener('change', (event) => {
  const name = event.target.value.trim();
  if (!name || name === myName) return;
  myName = name;
  localStorage.tablecastName = name;
  reconnect();
});
$('#my-token').value = myToken ?? '';
$('#my-token').addEventListener('change', (event) => {
  myToken = event.target.value.trim() || undefined;
  if (myToken) localStorage.tablecastToken = myToken;
  else delete localStorage.tablecastToken;
  reconnect();
});

// ---------------------------------------------------------------- presence

function renderPresence() {
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

function rowBadges(id) {
  return ui.presence.clients.filter((p) => p.row === id && p.key !== ui.presence.you).map((p) => {
    const name = p.name || p.client;
    const initials = name.split(/\s+/).map((w) => w[0]).join('').slice(0, 2).toUpperCase();
    return el('span', { class: 'row-badge', title: `${name} is editing this row`, 'aria-label': `${name} is editing this row`, text: initials });
  });
}

// ---------------------------------------------------------------- rendering the table

/** The open table's rules, as the view shows them. */
const rules = () => ui.replica?.rules ?? DEFAULT_RULES;

function render() {
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
    editingInline
      ? el('input', { class: 'inline', value: ui.inline.draft, 'data-inline': 'row', 'data-focus': `edit:${row.id}`, 'aria-label': `Edit ${text}` })
      : el('span', { class: 'value', text }),
    el('span', { class: 'badges' }, rowBadges(row.id)),
    ui.editing && canMove(rules(), section, r) ? el('button', {
      type: 'button', class: 'handle', 'data-action': 'handle', 'data-focus': `handle:${row.id}`,
      'aria-label': `Reorder ${text}: drag it, or press Alt with the up or down arrow on the row`, tabIndex: -1,
    }, el('span', { 'aria-hidden': 'true', text: '≡' })) : null);
  return el('li', {
    class: `row${row.id.startsWith('~') ? ' pending' : ''}${revealed ? ' revealed' : ''}${selected ? ' selected' : ''}${editable ? '' : ' locked'}${deletable ? '' : ' undeletable'}`,
    role: 'listitem', tabIndex: 0, 'data-id': row.id, 'data-s': s, 'data-r': r, 'data-focus': `row:${row.id}`,
    'data-resolved': ui.resolved.get(row.id),
    'aria-label': `${text}${editable ? '' : ', locked'}${selected ? ', selected' : ''}`,
  },
  deletable ? el('button', {
    type: 'button', class: 'swipe-delete', 'data-action': 'delete', 'data-focus': `delete:${row.id}`,
    tabIndex: revealed ? 0 : -1, 'aria-hidden': revealed ? undefined : 'true',
    text: rules().deleteConfirmationTitle || 'Delete',
  }) : null,
  content);
}

// ---------------------------------------------------------------- actions

function rowInfo(id) {
  const path = ui.replica?.indexPathOfRow(id);
  if (!path) return null;
  return { path, row: ui.replica.row(path), section: ui.replica.section(path[0]) };
}

function reveal(id) {
  if (ui.revealed === id) return;
  if (ui.revealed) client.endEditingRow(ui.table, ui.revealed);
  ui.revealed = id;
  if (id) client.beginEditingRow(ui.table, id);
  render();
}

/** Where keyboard focus goes when the focused row disappears: the next row, else the previous one. */
function focusFallback(ids) {
  const rows = [...sections.querySelectorAll('.row[tabindex="0"]')];
  const gone = new Set(ids);
  const at = rows.findIndex((r) => gone.has(r.dataset.id));
  const rest = rows.filter((r) => !gone.has(r.dataset.id));
  const next = rows.slice(at + 1).find((r) => !gone.has(r.dataset.id)) ?? rest[rest.length - 1];
  ui.focusFallback = next ? `row:${next.dataset.id}` : null;
}

function deleteRow(id) {
  const info = rowInfo(id);
  if (!info) return;
  if (document.activeElement?.closest?.(`.row[data-id="${CSS.escape(id)}"]`)) focusFallback([id]);
  ui.revealed = null;
  client.endEditingRow(ui.table, id);
  act(optimistic('delete', { at: info.path, row: id }).then((ack) => {
    if (ack) announce(`Deleted “${valueText(info.row.value)}”.`);
  }));
}

function startInline(kind, id, draft, before = null) {
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

function finishInline(commit) {
  const inline = ui.inline;
  if (!inline) return;
  ui.inline = null;
  const table = ui.table;
  if (inline.kind === 'row') {
    client.endEditingRow(table, inline.id);
    const info = rowInfo(inline.id);
    if (commit && info && inline.draft !== valueText(info.row.value)) {
      act(optimistic('edit', { at: info.path, row: inline.id, value: parseValue(inline.draft, info.row.value) }));
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

function flash(id) {
  if (!id) return;
  const row = $(`.row[data-id="${CSS.escape(id)}"]`);
  if (!row) return;
  row.classList.remove('settled');
  void row.offsetWidth;
  row.classList.add('settled');
}

function toggleSelect(id) {
  if (ui.selected.has(id)) ui.selected.delete(id);
  else ui.selected.add(id);
  render();
}

function setEditing(on) {
  finishInline(true);
  ui.editing = on;
  ui.confirmSection = null;
  ui.selected.clear();
  if (ui.revealed) reveal(null);
  client.setEditing(ui.table, on);
  render();
}

/** The destination of a row moved one place up (-1) or down (+1), following the table's rules. */
function neighbourDestination(id, step) {
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
function moveRow(id, to, from = rowInfo(id)?.path) {
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
function moveSection(id, step) {
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

function deleteSection(id) {
  const at = ui.replica.indexOfSection(id);
  ui.confirmSection = null;
  if (at === null) return render();
  const name = ui.replica.section(at).header ?? `Section ${at + 1}`;
  act(optimistic('deleteSection', { at, section: id }).then((ack) => {
    if (ack) announce(`Deleted ${name}.`);
  }));
  render();
}

// ---------------------------------------------------------------- the row menu: Copy and Paste

/** Opens the row menu (right click, long press, the context-menu key or Shift+F10) at a point on the screen. */
function openMenu(id, x, y) {
  const info = rowInfo(id);
  if (!info) return;
  finishInline(true);
  if (ui.revealed) reveal(null);
  ui.menu = id;
  const menu = $('#row-menu');
  $('[data-menu="paste"]', menu).disabled = !ui.clipboard;
  $('[data-menu="paste"]', menu).textContent = ui.clipboard ? `Paste “${valueText(ui.clipboard.value).slice(0, 24)}”` : 'Paste';
  menu.hidden = false;
  const box = menu.getBoundingClientRect();
  menu.style.left = `${Math.max(4, Math.min(x, innerWidth - box.width - 4))}px`;
  menu.style.top = `${Math.max(4, Math.min(y, innerHeight - box.height - 4))}px`;
  $('[data-menu="copy"]', menu).focus();
}

function closeMenu(restoreFocus = false) {
  const id = ui.menu;
  ui.menu = null;
  $('#row-menu').hidden = true;
  if (restoreFocus && id) $(`[data-focus="row:${CSS.escape(id)}"]`)?.focus();
}

/** Copies the row's value (only the value: the row's flags are an admin's to set). */
function copyRow(id) {
  const info = rowInfo(id);
  if (!info) return;
  ui.clipboard = { value: info.row.value };
  navigator.clipboard?.writeText(valueText(info.row.value)).catch(() => {}); // for other apps too, when allowed
  announce(`Copied “${valueText(info.row.value)}”.`);
}

/** Pastes the copied value as a new row after this one (before it when it is an add-item placeholder). */
function pasteAfter(id) {
  const info = rowInfo(id);
  if (!info || !ui.clipboard) return;
  const [s, r] = info.path;
  const at = [s, isPlaceholder(rules(), info.section, r) ? r : r + 1];
  act(optimistic('insert', { at, value: ui.clipboard.value }).then((ack) => {
    if (!ack) return;
    flash(ack.created?.[0]);
    announce(`Pasted “${valueText(ui.clipboard.value)}”.`);
  }));
}

$('#row-menu').addEventListener('click', (event) => {
  const item = event.target.closest('[data-menu]');
  if (!item || item.disabled) return;
  const id = ui.menu;
  closeMenu(true);
  if (item.dataset.menu === 'copy') copyRow(id);
  else pasteAfter(id);
});
$('#row-menu').addEventListener('keydown', (event) => {
  const items = [...$('#row-menu').querySelectorAll('[data-menu]:not(:disabled)')];
  const i = items.indexOf(document.activeElement);
  if (event.key === 'Escape' || event.key === 'Tab') {
    event.preventDefault();
    closeMenu(true);
  } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
    event.preventDefault();
    items[(i + (event.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length]?.focus();
  }
});
document.addEventListener('pointerdown', (event) => {
  if (ui.menu && !event.target.closest('#row-menu')) closeMenu();
}, true);

async function refresh() {
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
$('#add').addEventListener('click', () => {
  if (!ui.replica?.loaded) return;
  const count = ui.replica.sectionCount;
  startInline('new', count ? ui.replica.section(count - 1).id : null, '');
});
$('#add-section').addEventListener('click', () => {
  if (!ui.replica?.loaded) return;
  const at = ui.replica.sectionCount;
  act(optimistic('insertSection', { at, header: `Section ${at + 1}`, footer: null, rows: [] }));
});
$('#delete-selected').addEventListener('click', () => {
  const deleteRows = [...ui.selected].map((id) => ({ id, info: rowInfo(id) })).filter((x) => x.info)
    .map(({ id, info }) => ({ at: info.path, row: id }));
  if (!deleteRows.length) return;
  ui.selected.clear();
  act(optimistic('batch', { deleteRows }).then((ack) => {
    if (ack) announce(`Deleted ${deleteRows.length} rows.`);
  }));
  render();
});

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

// ---------------------------------------------------------------- pointer gestures: swipe, drag, pull

const scroller = $('#scroller');
let gesture = null;

scroller.addEventListener('pointerdown', (event) => {
  ui.gestureEnded = null; // a new press: whatever click follows is its own
  if (event.button !== 0 || gesture) return;
  const handle = event.target.closest('.handle');
  if (handle) {
    startDrag(event, handle);
    return;
  }
  if (event.target.closest('input, button')) return;
  const row = event.target.closest('.row[data-id]:not(.placeholder):not(.undeletable)');
  const g = {
    kind: 'pending', pointerId: event.pointerId, type: event.pointerType, x: event.clientX, y: event.clientY,
    row, start: row && ui.revealed === row.dataset.id ? -SWIPE_WIDTH : 0, target: event.target,
  };
  gesture = g;
  // A finger held still on a row opens the row menu (long press), where no contextmenu event comes.
  const pressed = event.target.closest('.row[data-id]');
  if (event.pointerType === 'touch' && pressed) {
    setTimeout(() => {
      if (gesture !== g || g.kind !== 'pending') return;
      gesture = null;
      ui.gestureEnded = { at: performance.now() };
      openMenu(pressed.dataset.id, g.x, g.y);
    }, LONG_PRESS_MS);
  }
});

scroller.addEventListener('pointermove', (event) => {
  if (ui.drag) {
    moveDrag(event);
    return;
  }
  if (!gesture || event.pointerId !== gesture.pointerId) return;
  const dx = event.clientX - gesture.x;
  const dy = event.clientY - gesture.y;
  if (gesture.kind === 'pending') {
    if (gesture.row && Math.abs(dx) > 8 && Math.abs(dx) > Math.abs(dy) && !ui.editing) {
      gesture.kind = 'swipe';
      if (ui.revealed && ui.revealed !== gesture.row.dataset.id) reveal(null);
      gesture.row = $(`.row[data-id="${CSS.escape(gesture.row.dataset.id)}"]`);
      gesture.content = $('.row-content', gesture.row);
      gesture.row.classList.add('swiping');
      scroller.setPointerCapture(event.pointerId);
    } else if (gesture.type !== 'touch' && dy > 8 && dy > Math.abs(dx) && scroller.scrollTop <= 0) {
      gesture.kind = 'pull';
      scroller.setPointerCapture(event.pointerId);
    } else if (Math.abs(dx) > 8 || Math.abs(dy) > 8) {
      // A drag that is neither a swipe nor a pull (a row that cannot be deleted) is not a tap either.
      if (gesture.type !== 'touch') ui.gestureEnded = { at: performance.now() };
      gesture = null;
      return;
    }
  }
  if (gesture.kind === 'swipe') {
    const offset = Math.max(-SWIPE_WIDTH * 1.6, Math.min(0, gesture.start + dx));
    gesture.offset = offset;
    gesture.content.style.transform = `translateX(${offset}px)`;
  } else if (gesture.kind === 'pull') {
    showPull(dy);
  }
});

function endGesture(event, cancelled) {
  if (ui.drag) {
    endDrag(event, cancelled);
    return;
  }
  if (!gesture || event.pointerId !== gesture.pointerId) return;
  const g = gesture;
  gesture = null;
  if (g.kind === 'swipe') {
    const id = g.row.dataset.id;
    if (g.type !== 'touch') ui.gestureEnded = { at: performance.now() }; // a finger sends no click
    g.row.classList.remove('swiping');
    const open = !cancelled && g.offset < -SWIPE_WIDTH / 2;
    g.content.style.transform = '';
    if (open) reveal(id);
    else if (ui.revealed === id) reveal(null);
    else render();
  } else if (g.kind === 'pull') {
    ui.gestureEnded = { at: performance.now() };
    releasePull(!cancelled && event.clientY - g.y);
  }
}
scroller.addEventListener('pointerup', (event) => endGesture(event, false));
scroller.addEventListener('pointercancel', (event) => endGesture(event, true));

// Touch pulls: the scroller pans vertically natively (touch-action: pan-y), so pointer events stop at the
// pan's start; touch events go on, and at the top of the list a downward pan becomes a pull instead.
let touchPull = null;
scroller.addEventListener('touchstart', (event) => {
  if (event.touches.length === 1 && scroller.scrollTop <= 0 && !ui.drag) touchPull = { y: event.touches[0].clientY, pulling: false };
}, { passive: true });
scroller.addEventListener('touchmove', (event) => {
  if (!touchPull || ui.drag || gesture?.kind === 'swipe') return;
  const dy = event.touches[0].clientY - touchPull.y;
  if (dy > 8 && scroller.scrollTop <= 0) {
    touchPull.pulling = true;
    touchPull.dy = dy;
    if (event.cancelable) event.preventDefault();
    showPull(dy);
  }
}, { passive: false });
scroller.addEventListener('touchend', () => {
  if (touchPull?.pulling) releasePull(touchPull.dy);
  touchPull = null;
});

function showPull(dy) {
  const pull = $('#pull');
  if (ui.refreshing) return;
  const height = Math.min(96, dy * 0.6);
  pull.style.height = `${height}px`;
  pull.classList.toggle('armed', dy * 0.6 >= PULL_THRESHOLD * 0.6 && dy >= PULL_THRESHOLD);
  $('.pull-text', pull).textContent = dy >= PULL_THRESHOLD ? 'Release to refresh' : 'Pull to refresh';
}

function releasePull(dy) {
  const pull = $('#pull');
  pull.classList.remove('armed');
  pull.style.height = '';
  if (dy >= PULL_THRESHOLD) refresh();
}

// Drag to reorder, by the handle. The row follows the pointer; a line shows where it will go; on release a
// move intent is sent and the row is drawn where the server's update put it.
function startDrag(event, handle) {
  const row = handle.closest('.row');
  const info = rowInfo(row.dataset.id);
  if (!info) return;
  event.preventDefault();
  scroller.setPointerCapture(event.pointerId);
  const rect = row.getBoundingClientRect();
  ui.drag = { id: row.dataset.id, from: [Number(row.dataset.s), Number(row.dataset.r)], pointerId: event.pointerId, y: event.clientY, row, height: rect.height, gap: null };
  row.classList.add('dragging');
  sections.classList.add('drag-active');
  client.beginEditingRow(ui.table, row.dataset.id);
}

function dropGap(y) {
  const drag = ui.drag;
  const lists = [...sections.querySelectorAll('ul.rows')];
  let best = null;
  for (const list of lists) {
    const s = Number(list.dataset.s);
    if (!mayMoveInto(rules(), drag.from[0], s)) continue;
    const rect = list.getBoundingClientRect();
    const distance = y < rect.top ? rect.top - y : y > rect.bottom ? y - rect.bottom : 0;
    if (!best || distance < best.distance) best = { list, s, distance };
  }
  if (!best) return null;
  const rows = [...best.list.querySelectorAll('.row[data-id]')].filter((r) => r.dataset.id !== drag.id);
  const movable = rows.filter((r) => !r.classList.contains('placeholder'));
  for (const r of movable) {
    const rect = r.getBoundingClientRect();
    if (y < rect.top + rect.height / 2) return { s: best.s, r: Number(r.dataset.r), before: r, list: best.list };
  }
  // After the last movable row: before the section's last row if it is a placeholder, else the end of the section.
  const placeholder = rows[rows.length - 1]?.classList.contains('placeholder') ? rows[rows.length - 1] : null;
  if (placeholder) return { s: best.s, r: Number(placeholder.dataset.r), before: placeholder, list: best.list };
  return { s: best.s, r: best.list.querySelectorAll('.row[data-id]').length, before: null, list: best.list };
}

function moveDrag(event) {
  const drag = ui.drag;
  if (event.pointerId !== drag.pointerId) return;
  drag.row.style.transform = `translateY(${event.clientY - drag.y}px)`;
  for (const marked of sections.querySelectorAll('.drop-before, .drop-end')) marked.classList.remove('drop-before', 'drop-end');
  drag.gap = dropGap(event.clientY);
  if (drag.gap?.before) drag.gap.before.classList.add('drop-before');
  else if (drag.gap) drag.gap.list.classList.add('drop-end');
  // Scroll when dragging near the edges of the scroller.
  const box = scroller.getBoundingClientRect();
  if (event.clientY < box.top + 24) scroller.scrollTop -= 12;
  else if (event.clientY > box.bottom - 24) scroller.scrollTop += 12;
}

function endDrag(event, cancelled) {
  const drag = ui.drag;
  if (event.pointerId !== drag.pointerId) return;
  ui.drag = null;
  drag.row.classList.remove('dragging');
  sections.classList.remove('drag-active');
  drag.row.style.transform = '';
  for (const marked of sections.querySelectorAll('.drop-before, .drop-end')) marked.classList.remove('drop-before', 'drop-end');
  client.endEditingRow(ui.table, drag.id);
  const gap = cancelled ? null : drag.gap;
  if (gap) {
    // The drop is "right after the row above the gap" in the view the drag started on (it was not redrawn
    // meanwhile); placed in the table as predicted now, by id, so that others' changes during the drag are
    // respected (after the nearest row above that is still there).
    const section = ui.replica.section(gap.s);
    const above = section.rows.slice(0, gap.r).map((r) => r.id).filter((id) => id !== drag.id).reverse();
    const now = client.predicted(ui.table);
    const s = now.sections.findIndex((candidate) => candidate.id === section.id);
    const from = s < 0 ? null : now.sections.flatMap((sec, i) => sec.rows.map((r, j) => (r.id === drag.id ? [i, j] : null))).find(Boolean);
    if (s >= 0 && from) {
      const rows = now.sections[s].rows.map((r) => r.id).filter((id) => id !== drag.id);
      const after = above.map((id) => rows.indexOf(id)).find((index) => index >= 0);
      moveRow(drag.id, [s, after === undefined ? 0 : after + 1], from);
    }
  }
  ui.deferred = false;
  render();
}

// ---------------------------------------------------------------- start

const historyPanel = new HistoryPanel({
  client: () => client, el, showError, onRestored: (name) => { location.hash = `#/table/${encodeURIComponent(name)}`; },
});
historyPanel.mount($('#table .toolbar'), $('#table'), $('#scroller'));
client = makeClient();
window.tablecast = { get client() { return client; }, ui }; // for the console and the browser tests
window.addEventListener('hashchange', route);
route();
