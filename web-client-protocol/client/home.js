// The list of tables (`#/`): each with its version and how many are subscribed, and the form that creates one.
import { $, el, showError } from './dom.js';
import { act } from './actions.js';
import { TABLE_NAME, client, ui } from './state.js';

export async function loadTables() {
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

/** Handles the create form and the refresh button of the list. */
export function installHome() {
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
}
