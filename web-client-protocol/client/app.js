// The Tablecast page: a list of tables and a live, shared table that behaves like an iOS table view. Plain ES
// modules over ./tablecast.js, no build step; every interaction has a pointer (mouse and touch) and a keyboard
// path. This entry point connects and wires the page's modules:
//   state.js     who this tab is, the client, and what the view shows (`ui`)
//   rules.js     what the table's rules let a row do (shared with the client library)
//   dom.js       building elements, values as text, error banners and announcements
//   render.js    the presence list and the table view, drawn from the state
//   actions.js   what the page does to the table (optimistic intents, undo, refresh, inline editors)
//   menu.js      the row menu: Copy and Paste
//   controls.js  the toolbar and the clicks and keys on the list of rows
//   gestures.js  swipe to delete, drag to reorder, pull to refresh, long press
//   home.js      the list of tables and the create form
//   routing.js   which view the location shows, and the History panel that follows it
import { TablecastClient } from './tablecast.js';
import { installControls } from './controls.js';
import { $, showError, showState } from './dom.js';
import { installGestures } from './gestures.js';
import { installHome, loadTables } from './home.js';
import { installMenu } from './menu.js';
import { renderArrival, renderPresenceChange } from './render.js';
import { historyPanel, route } from './routing.js';
import { client, clientId, identity, setClient, ui } from './state.js';

function makeClient() {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  // The token setting is asked for at every hello, and before a signed token expires (a page an app embeds may
  // keep identity.token fresh from its backend; a changed setting reconnects, below).
  const c = new TablecastClient({
    url: `${scheme}//${location.host}/`, client: clientId, name: identity.name, getToken: () => identity.token,
  });
  c.on('state', showState);
  c.on('error', showError);
  c.on('welcome', () => {
    if (!ui.table) loadTables();
  });
  const mine = (detail) => detail.table === ui.table;
  c.on('snapshot', (d) => mine(d) && renderArrival());
  c.on('update', (d) => mine(d) && renderArrival());
  c.on('update', (d) => mine(d) && historyPanel.changed());
  c.on('predicted', (d) => mine(d) && renderArrival());
  c.on('subscribed', (d) => mine(d) && renderArrival());
  c.on('rules', (d) => mine(d) && renderArrival());
  c.on('presence', (d) => {
    if (!mine(d)) return;
    ui.presence = { you: d.you, clients: d.clients, viewers: d.viewers };
    renderPresenceChange();
  });
  c.on('dropped', (d) => {
    if (!mine(d)) return;
    showError({ message: `The table “${d.table}” was dropped.`, code: 'dropped' });
    location.hash = '#/';
  });
  c.connect();
  return c;
}

// Name and token go out in hello: a change reconnects with them.
function reconnect() {
  client.close();
  setClient(makeClient());
}

function installIdentity() {
  $('#my-name').value = identity.name;
  $('#my-name').addEventListener('change', (event) => {
    const name = event.target.value.trim();
    if (!name || name === identity.name) return;
    identity.name = name;
    localStorage.tablecastName = name;
    reconnect();
  });
  $('#my-token').value = identity.token ?? '';
  $('#my-token').addEventListener('change', (event) => {
    identity.token = event.target.value.trim() || undefined;
    if (identity.token) localStorage.tablecastToken = identity.token;
    else delete localStorage.tablecastToken;
    reconnect();
  });
}

installHome();
installIdentity();
installMenu();
installControls();
installGestures();
historyPanel.mount($('#table .toolbar'), $('#table'), $('#scroller'));
setClient(makeClient());
window.tablecast = { get client() { return client; }, ui }; // for the console and the browser tests
window.addEventListener('hashchange', route);
route();
