// Routing: `#/` shows the list of tables, `#/table/NAME` (or `?table=NAME`) one live table. Opening a table
// leaves the previous one (its presence, its subscription) and starts the view afresh.
import { $, showError, el } from './dom.js';
import { act } from './actions.js';
import { HistoryPanel } from './history.js';
import { loadTables } from './home.js';
import { closeMenu } from './menu.js';
import { render, renderPresence } from './render.js';
import { TABLE_NAME, client, params, ui } from './state.js';

export const historyPanel = new HistoryPanel({
  client: () => client, el, showError, onRestored: (name) => { location.hash = `#/table/${encodeURIComponent(name)}`; },
});

export function route() {
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
