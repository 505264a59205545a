// The page's state: who this tab is, the connection, and what the table view shows and is doing. Every page
// module reads and changes this one `ui` object; the view is redrawn from it (render.js).
import { DEFAULT_RULES } from './rules.js';

export const TABLE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const SWIPE_WIDTH = 96; // px the row slides to uncover its Delete button

function randomId() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  return Array.from({ length: 4 }, () => Math.random().toString(36).slice(2, 8)).join('');
}

// A stable id per browser tab (kept across reloads, so re-sent intents stay idempotent); a name per browser.
export const params = new URLSearchParams(location.search);
export const clientId = (sessionStorage.tablecastId ??= `web-${randomId()}`.slice(0, 64));
export const identity = {
  name: params.get('name') || localStorage.tablecastName || `Guest ${Math.floor(100 + Math.random() * 900)}`,
  token: localStorage.tablecastToken || undefined, // only for servers started with --tokens
};

export const ui = {
  table: null, // name of the open table
  replica: null,
  subscribeError: null,
  source: null, // the subscribed replica (what the server confirmed); `replica` is the predicted view drawn
  editing: false,
  selected: new Set(), // row ids
  revealed: null, // row id whose Delete button is uncovered
  inline: null, // {kind: 'row'|'header'|'footer'|'new', id, draft}
  drag: null,
  deferred: false, // a render was skipped during a drag or a press
  pressing: false, // a pointer is down on the list: what arrives is drawn once it is up (see renderArrival)
  presence: { you: null, clients: [], viewers: 0 }, // this connection's key, who is listed, how many only watch
  resolved: new Map(), // row id → "s,r" where the server put this page's last move of it
  confirmSection: null, // section id whose delete is waiting for its confirmation
  clipboard: null, // {value} copied with the row menu
  menu: null, // row id the open row menu is about
  routed: false, // the first route() opens its table even when it is none
  focusFallback: null, // data-focus key focus goes to when its control is gone after a render
  gestureEnded: null, // {at} when a swipe, pull or long press ended: the click after it is not a tap
  refreshing: false, // a refresh is under way
};

/** The TablecastClient; a new one replaces it when the name or token changes (app.js). */
export let client = null;

export function setClient(replacement) {
  client = replacement;
}

/** The open table's rules, as the view shows them. */
export const rules = () => ui.replica?.rules ?? DEFAULT_RULES;

/** Where the view has a row: `{path, row, section}`, or null when it is not there. */
export function rowInfo(id) {
  const path = ui.replica?.indexPathOfRow(id);
  if (!path) return null;
  return { path, row: ui.replica.row(path), section: ui.replica.section(path[0]) };
}
