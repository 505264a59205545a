// Tablecast protocol v1 client: a local replica of a table and a reconnecting WebSocket client.
// One ES module, no dependencies, no build step; runs in browsers and in node (pass a WebSocket constructor).
// The contract is ../README.md; the index semantics are UIKit's beginUpdates/endUpdates.

import { OptimisticTable } from './optimistic.js';
import { Replica } from './replica.js';

/** Subprotocol name the server speaks. */
export const SUBPROTOCOL = 'tablecast.v1';

export { OptimisticTable, OptimisticError } from './optimistic.js';
export { Replica, ReplicaError } from './replica.js';

const clone = (value) => (value === undefined ? undefined : structuredClone(value));

/**
 * A request the server refused (an `error` message answering it), or one the client gave up on:
 * code `closed` when {@link TablecastClient#close} was called before the answer, `disconnected` when the
 * connection dropped after a non-idempotent request (createTable, dropTable) was sent and its outcome is unknown.
 */
/**
 * A table's presence as one subscriber sees it: the state of its catch-up (`presence` in `subscribed` or
 * `refreshed`) with every `presence` delta since applied. Entries are keyed by their connection's presence key,
 * so two tabs of one client are two entries; `you` is this connection's own key.
 */
export class Presence {
  /** @param {{you: string, clients: object[], viewers: number}} state the catch-up's `presence` */
  constructor(state) {
    this.you = state.you;
    /** @type {Map<string, object>} key → `{key, client, name, editing, row?}`, in the order they were listed */
    this.entries = new Map(state.clients.map((entry) => [entry.key, clone(entry)]));
    /** Subscribers that are not listed (anonymous watchers). */
    this.viewers = state.viewers;
  }

  /**
   * Applies a `presence` delta: `left` keys are removed, `joined` entries appended, `changed` ones replaced
   * where they are. Tolerant of overlap (a joined key already here is replaced, a changed one not here added).
   */
  apply(delta) {
    for (const key of delta.left) this.entries.delete(key);
    for (const entry of [...delta.joined, ...delta.changed]) this.entries.set(entry.key, clone(entry));
    this.viewers = delta.viewers;
  }

  /** Everyone listed, in order. */
  get clients() {
    return [...this.entries.values()].map(clone);
  }

  /** Everyone listed except this connection. */
  get others() {
    return this.clients.filter((entry) => entry.key !== this.you);
  }

  /** The state as the protocol writes it. */
  toJSON() {
    return { you: this.you, clients: this.clients, viewers: this.viewers };
  }
}

export class TablecastError extends Error {
  /**
   * @param {string} code the protocol's error code (`conflict`, `out_of_range`, …) or `closed`/`disconnected`
   * @param {string} message
   * @param {string} [at] the entry at fault, e.g. "moveRows[0]"
   */
  constructor(code, message, at) {
    super(message);
    this.name = 'TablecastError';
    this.code = code;
    this.at = at;
  }
}

/**
 * A small event emitter (on/off) so the library needs neither EventTarget subclassing nor CustomEvent.
 */
class Emitter {
  constructor() {
    this._listeners = new Map();
  }

  /**
   * Adds a listener.
   * @param {string} type event name
   * @param {(detail: any) => void} listener
   * @returns {() => void} a function that removes the listener
   */
  on(type, listener) {
    if (!this._listeners.has(type)) this._listeners.set(type, new Set());
    this._listeners.get(type).add(listener);
    return () => this.off(type, listener);
  }

  /** Removes a listener added with {@link Emitter#on}. */
  off(type, listener) {
    this._listeners.get(type)?.delete(listener);
  }

  _emit(type, detail) {
    for (const listener of [...(this._listeners.get(type) ?? [])]) {
      try {
        listener(detail);
      } catch (error) {
        // A throwing listener must not break the protocol state machine; report it out of band.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}

function randomId(length) {
  const alphabet = '0123456789abcdefghijklmnopqrstuvwxyz';
  const bytes = new Uint8Array(length);
  if (globalThis.crypto?.getRandomValues) globalThis.crypto.getRandomValues(bytes);
  else for (let i = 0; i < length; i++) bytes[i] = Math.floor(Math.random() * 256);
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
}

/**
 * The `exp` of a signed token (JWT), seconds since the Unix epoch; undefined for any other token. Read without
 * checking the signature: the server checks it, the client only needs to know when to ask for a new one.
 */
function tokenExpiry(token) {
  const payload = typeof token === 'string' ? token.split('.')[1] : undefined;
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/')));
    return typeof claims?.exp === 'number' ? claims.exp : undefined;
  } catch {
    return undefined;
  }
}

const OPEN = 1;

// Requests whose retry after a lost connection is safe: edit intents are deduplicated by client+ref,
// the others read or set state idempotently. createTable and dropTable are not, so they are retried only
// if they never left this client.
const NOT_RETRIED = new Set(['createTable', 'dropTable']);

/**
 * A Tablecast protocol v1 client: connects, says hello with a stable client id, keeps subscribed tables'
 * replicas in step, turns intents into promises settled by `ack`/`error`, and reconnects with exponential
 * backoff, resuming subscriptions (since + epoch) and re-sending every unacknowledged intent with its
 * original ref, in the original order, so the server applies each exactly once.
 *
 * Events (listen with `on(type, listener)`):
 * - `state` `{state, delay?, attempt?}`: `connecting`, `live` (welcome received), `reconnecting` (with the
 *   delay in ms before the next attempt and the attempt number), `closed`.
 * - `welcome` the server's `welcome` message.
 * - `snapshot` `{table, replica}`: a replica was replaced by a snapshot.
 * - `update` `{table, update, replica}`: an update was applied (`update` is the server's message).
 * - `subscribed` `{table, replica}`: a (re)subscription's catch-up is complete.
 * - `presence` `{table, you, clients, viewers, joined, changed, left}`: who is on a subscribed table now (this
 *   connection's key, the listed entries, the number of unlisted viewers), after a catch-up's state (the delta
 *   lists empty) or a delta (what it changed).
 * - `rules` `{table, rules}`; `dropped` `{table}`.
 * - `error` a {@link TablecastError} not tied to a pending promise (a refused presence message, a failed
 *   re-subscription, an update the replica could not apply, an unparsable message, a refused token refresh, a
 *   subscription the server ended because the token no longer lets it read the table: code `forbidden`, with
 *   `table`, the table then no longer subscribed).
 * - `token` `{expires}`: the server accepted a refreshed token (see `getToken`).
 */
export class TablecastClient extends Emitter {
  /**
   * @param {object} options
   * @param {string|string[]} options.url the server's WebSocket address, e.g. `ws://127.0.0.1:8080/`; or several
   *   (an array, or comma-separated): nodes sharing one database, tried in turn, one more after each lost
   *   connection, resuming subscriptions there with since/epoch
   * @param {string} [options.client] stable client id (1–64 characters) that makes retries idempotent; keep it
   *   across page loads (e.g. in localStorage) to keep that guarantee across reloads. Default: a random id.
   * @param {string} [options.name] name shown to other people in presence; without one this connection is not
   *   listed (it counts among a table's viewers) until it sends presence
   * @param {string} [options.token] access token
   * @param {() => (string|Promise<string>)} [options.getToken] called for the token of every hello instead of
   *   `token`, and again a while before a signed token (JWT) expires (a quarter of its life, at most a minute),
   *   whose answer replaces it on the open connection (`refreshToken`); a connection the server closes because
   *   its token ended (4001) reconnects, asking for a fresh one
   * @param {Function} [options.WebSocket] WebSocket constructor (default `globalThis.WebSocket`)
   * @param {{initial?: number, max?: number, factor?: number, jitter?: number}} [options.backoff] reconnect
   *   delays in ms: `initial` (500) × `factor` (2) per attempt, capped at `max` (30000), each reduced by a
   *   random fraction up to `jitter` (0.5) so that many clients do not come back in step
   * @param {() => number} [options.random] source of [0, 1) numbers for the jitter (default Math.random)
   */
  constructor(options) {
    super();
    if (!options?.url) throw new TypeError('TablecastClient needs a url');
    /** Every server to try, in order. */
    this.urls = (Array.isArray(options.url) ? options.url : options.url.split(',')).map((u) => u.trim()).filter(Boolean);
    if (this.urls.length === 0) throw new TypeError('TablecastClient needs a url');
    /** The server connected to (or tried) now. */
    this.url = this.urls[0];
    /** The stable client id sent in `hello`. */
    this.clientId = options.client ?? `web-${randomId(12)}`;
    this.name = options.name;
    this.token = options.token;
    this._getToken = options.getToken;
    this._refreshTimer = null;
    /** The ref and token of the refreshToken awaiting its ack. */
    this._refreshing = null;
    this._WebSocket = options.WebSocket ?? globalThis.WebSocket;
    if (typeof this._WebSocket !== 'function') throw new TypeError('no WebSocket constructor: pass options.WebSocket');
    this.backoff = { initial: 500, max: 30000, factor: 2, jitter: 0.5, ...options.backoff };
    this._random = options.random ?? Math.random;

    /** @type {'idle'|'connecting'|'live'|'reconnecting'|'closed'} */
    this.state = 'idle';
    /** The last `welcome` message, or null. */
    this.welcome = null;
    this._ws = null;
    this._attempt = 0;
    this._retryTimer = null;
    // Refs are unique across sessions of one client id: the server remembers client+ref pairs.
    this._refPrefix = randomId(8);
    this._refCount = 0;
    this._helloRef = null;
    /** @type {Map<string, {msg: object|Function, kind: string, resolve: Function, reject: Function, sent: boolean}>} */
    this._pending = new Map(); // in creation order: re-sent in that order
    // catchingUp: a subscribe was sent (ref) and its `subscribed` has not arrived yet.
    /** @type {Map<string, {replica: Replica, subscribed: boolean, catchingUp: boolean, ref: string|null, waiters: Array}>} */
    this._tables = new Map();
    this._presence = new Map(); // table → {editing: boolean, rows: Set<string>}, re-sent after resubscribing
    this._presenceSeen = new Map(); // table → Presence, for subscribed tables once caught up
  }

  // ---- connection ----

  /** Opens the connection (and keeps it open, reconnecting, until {@link TablecastClient#close}). */
  connect() {
    if (this.state === 'connecting' || this.state === 'live' || this.state === 'reconnecting') return;
    this._attempt = 0;
    this._open();
  }

  /**
   * Closes the connection and stops reconnecting. Pending requests are rejected with code `closed`;
   * subscriptions are kept, so a later {@link TablecastClient#connect} resumes them.
   */
  close() {
    if (this._retryTimer !== null) clearTimeout(this._retryTimer);
    this._retryTimer = null;
    this._stopRefreshing();
    const ws = this._ws;
    this._ws = null;
    if (ws) ws.close(1000);
    this._setState({ state: 'closed' });
    const closed = () => new TablecastError('closed', 'the client was closed');
    for (const entry of this._pending.values()) entry.reject(closed());
    this._pending.clear();
    for (const table of this._tables.values()) {
      for (const waiter of table.waiters.splice(0)) waiter.reject(closed());
    }
  }

  _open() {
    this._setState({ state: 'connecting' });
    let ws;
    try {
      ws = new this._WebSocket(this.url, SUBPROTOCOL);
    } catch (error) {
      this._emit('error', new TablecastError('disconnected', `cannot open ${this.url}: ${error.message}`));
      this._scheduleReconnect();
      return;
    }
    this._ws = ws;
    ws.onopen = async () => {
      if (this._ws !== ws) return;
      if (this._getToken) {
        try {
          this.token = await this._getToken();
        } catch (error) {
          if (this._ws !== ws) return;
          this._emit('error', new TablecastError('unauthorized', `getToken failed: ${error?.message ?? error}`));
          ws.close(1000); // reconnects, with backoff, and asks again
          return;
        }
        if (this._ws !== ws) return;
      }
      this._helloRef = this._nextRef();
      const hello = { type: 'hello', ref: this._helloRef, client: this.clientId };
      if (this.name !== undefined) hello.name = this.name;
      if (this.token !== undefined) hello.token = this.token;
      this._sendNow(hello);
    };
    ws.onmessage = (event) => {
      if (this._ws !== ws) return;
      this._receive(event.data);
    };
    ws.onclose = () => {
      if (this._ws !== ws) return;
      this._ws = null;
      this._lost();
    };
  }

  _lost() {
    this.welcome = null;
    this._stopRefreshing();
    for (const [ref, entry] of this._pending) {
      if (entry.kind === 'unsubscribe') {
        // A closed connection ends its subscriptions: the unsubscribe is done.
        this._pending.delete(ref);
        entry.resolve({ type: 'unsubscribed', table: entry.msg.table });
      } else if (entry.sent && NOT_RETRIED.has(entry.kind)) {
        this._pending.delete(ref);
        entry.reject(new TablecastError('disconnected', `the connection dropped before ${entry.kind} was answered`));
      } else {
        entry.sent = false;
      }
    }
    this._scheduleReconnect();
  }

  _scheduleReconnect() {
    this.url = this.urls[(this.urls.indexOf(this.url) + 1) % this.urls.length];
    const { initial, max, factor, jitter } = this.backoff;
    const full = Math.min(max, initial * factor ** this._attempt);
    const delay = Math.round(full * (1 - jitter * this._random()));
    this._attempt += 1;
    this._setState({ state: 'reconnecting', delay, attempt: this._attempt });
    this._retryTimer = setTimeout(() => {
      this._retryTimer = null;
      this._open();
    }, delay);
  }

  _setState(detail) {
    this.state = detail.state;
    this._emit('state', detail);
  }

  _live(welcome) {
    this.welcome = welcome;
    this._attempt = 0;
    this._setState({ state: 'live' });
    this._emit('welcome', welcome);
    this._scheduleRefresh();
    // Subscriptions first, so that re-sent intents are rebased against a table we are caught up on.
    for (const [table, entry] of this._tables) {
      if (entry.subscribed) this._sendSubscribe(table, entry);
    }
    for (const [ref, entry] of this._pending) this._transmit(ref, entry);
  }

  // ---- token refresh ----

  /** Asks getToken for a fresh token a while before the current one's `exp` (a JWT's), and sends it. */
  _scheduleRefresh() {
    this._stopRefreshing();
    const expires = this._getToken ? tokenExpiry(this.token) : undefined;
    if (expires === undefined) return;
    const remaining = expires * 1000 - Date.now();
    const delay = Math.max(0, remaining - Math.min(60000, remaining / 4));
    this._refreshTimer = setTimeout(() => this._refreshToken(), delay);
  }

  async _refreshToken() {
    this._refreshTimer = null;
    const ws = this._ws;
    let token;
    try {
      token = await this._getToken();
    } catch (error) {
      // The server closes the connection when the token ends; reconnecting asks again.
      this._emit('error', new TablecastError('unauthorized', `getToken failed: ${error?.message ?? error}`));
      return;
    }
    if (this._ws !== ws || this.state !== 'live') return;
    // Nothing newer: the server closes the connection when the token ends, and reconnecting asks again.
    if (token === undefined || token === this.token) return;
    this._refreshing = { ref: this._nextRef(), token };
    this._sendNow({ type: 'refreshToken', token, ref: this._refreshing.ref });
  }

  _stopRefreshing() {
    if (this._refreshTimer !== null) clearTimeout(this._refreshTimer);
    this._refreshTimer = null;
    this._refreshing = null;
  }

  // ---- sending ----

  _nextRef() {
    this._refCount += 1;
    return `${this._refPrefix}-${this._refCount}`;
  }

  _sendNow(msg) {
    if (!this._ws || this._ws.readyState !== OPEN) return false;
    this._ws.send(JSON.stringify(msg));
    return true;
  }

  _transmit(ref, entry) {
    if (this.state !== 'live' || entry.sent) return;
    const msg = typeof entry.msg === 'function' ? entry.msg() : entry.msg;
    const text = JSON.stringify({ ...msg, ref });
    const limit = this.welcome?.limits?.maxMessageBytes;
    // Sending an oversized message would make the server close the connection (1009) on every retry.
    if (limit && new TextEncoder().encode(text).length > limit) {
      this._pending.delete(ref);
      entry.reject(new TablecastError('limit_exceeded', `${msg.type} is larger than the server's ${limit} bytes`));
      return;
    }
    if (this._ws?.readyState === OPEN) {
      this._ws.send(text);
      entry.sent = true;
    }
  }

  /**
   * Sends a request with an automatic ref (unless `msg.ref` is given) and returns a promise settled by its
   * response. While not live, the request waits and is sent once the connection is live.
   */
  _request(kind, msg) {
    const given = typeof msg === 'object' ? msg.ref : undefined;
    const ref = given ?? this._nextRef();
    return new Promise((resolve, reject) => {
      const entry = { kind, msg, resolve, reject, sent: false };
      this._pending.set(ref, entry);
      this._transmit(ref, entry);
    });
  }

  _intent(type, table, fields) {
    const msg = { type, table, ...clone(fields) };
    const replica = this._tables.get(table);
    if (msg.base === undefined && replica?.subscribed && replica.replica.loaded) msg.base = replica.replica.version;
    return this._request(type, msg);
  }

  // ---- tables and subscriptions ----

  _table(table) {
    let entry = this._tables.get(table);
    if (!entry) {
      entry = { replica: new Replica(table), subscribed: false, catchingUp: false, ref: null, waiters: [] };
      this._tables.set(table, entry);
    }
    return entry;
  }

  _resume(table, type) {
    const replica = this._table(table).replica;
    const msg = { type, table };
    if (replica.loaded) {
      msg.since = replica.version;
      msg.epoch = replica.epoch;
    }
    return msg;
  }

  _sendSubscribe(table, entry) {
    entry.catchingUp = true;
    entry.ref = this._nextRef();
    this._sendNow({ ...this._resume(table, 'subscribe'), ref: entry.ref });
  }

  /**
   * Subscribes to a table. The returned replica is the same object for the life of the subscription, kept in
   * step with every update, resumed (since + epoch) after reconnects and replaced in place by snapshots.
   * @param {string} table
   * @returns {Promise<Replica>} resolved when the catch-up is complete (`subscribed`), rejected by an `error`
   */
  subscribe(table) {
    const entry = this._table(table);
    return new Promise((resolve, reject) => {
      entry.waiters.push({ resolve, reject });
      if (entry.subscribed) {
        // Already subscribed: answer once the current catch-up is complete (at once if it is).
        if (!entry.catchingUp) entry.waiters.pop().resolve(entry.replica);
        return;
      }
      entry.subscribed = true;
      entry.catchingUp = true;
      if (this.state === 'live') this._sendSubscribe(table, entry);
    });
  }

  /** The replica of a table this client subscribed to or refreshed, or undefined. */
  replica(table) {
    return this._tables.get(table)?.replica;
  }

  /** Tables this client is subscribed to. */
  get subscriptions() {
    return [...this._tables].filter(([, entry]) => entry.subscribed).map(([table]) => table);
  }

  /**
   * Ends a subscription (and this client's presence on the table).
   * @returns {Promise<object>} the `unsubscribed` message (or `{table}` at once when not connected)
   */
  unsubscribe(table) {
    const entry = this._tables.get(table);
    this._presence.delete(table);
    this._presenceSeen.delete(table);
    if (entry) {
      entry.subscribed = false;
      entry.catchingUp = false;
      for (const waiter of entry.waiters.splice(0)) waiter.reject(new TablecastError('closed', `unsubscribed from ${table}`));
    }
    if (this.state !== 'live') return Promise.resolve({ table });
    return this._request('unsubscribe', { type: 'unsubscribe', table });
  }

  /**
   * Pull-to-refresh: catches the table's replica up (updates since its version, or a snapshot) without
   * needing a subscription.
   * @returns {Promise<Replica>} resolved when `refreshed` arrives
   */
  refresh(table) {
    this._table(table);
    // Built when sent, so that a refresh re-sent after a reconnect resumes from the replica's version then.
    return this._request('refresh', () => this._resume(table, 'refresh')).then(() => this._tables.get(table).replica);
  }

  /**
   * Who is on a subscribed table: `{you, clients, viewers}` (before its catch-up: no key, nobody, 0).
   */
  presence(table) {
    return this._presenceSeen.get(table)?.toJSON() ?? { you: null, clients: [], viewers: 0 };
  }

  _loadPresence(msg) {
    const entry = this._tables.get(msg.table);
    if (!entry?.subscribed || !msg.presence) return;
    const presence = new Presence(msg.presence);
    this._presenceSeen.set(msg.table, presence);
    this._emit('presence', { table: msg.table, ...presence.toJSON(), joined: [], changed: [], left: [] });
  }

  // ---- edit intents: each returns a promise of the `ack`, rejected with a TablecastError by an `error` ----
  // `fields` are the intent's fields as in the protocol; `base` defaults to the subscribed replica's version
  // and `ref` to a fresh one.

  /** Inserts a row: `{at: [s, r], value, editable?, movable?, editingStyle?}`. @returns {Promise<object>} the ack */
  insert(table, fields) {
    return this._intent('insert', table, fields);
  }

  /** Deletes a row: `{at: [s, r], row?}`. @returns {Promise<object>} the ack */
  delete(table, fields) {
    return this._intent('delete', table, fields);
  }

  /** Moves a row: `{from: [s, r], to: [s, r], row?}`. @returns {Promise<object>} the ack */
  move(table, fields) {
    return this._intent('move', table, fields);
  }

  /** Replaces a row's value: `{at: [s, r], value, row?}`. @returns {Promise<object>} the ack */
  edit(table, fields) {
    return this._intent('edit', table, fields);
  }

  /**
   * Changes some fields of a row's value with a JSON merge patch, merged into the value the row has when the server
   * commits it: `{at: [s, r], patch, row?}`. @returns {Promise<object>} the ack
   */
  patch(table, fields) {
    return this._intent('patch', table, fields);
  }

  /** Inserts a section: `{at: s, header?, footer?, rows?}`. @returns {Promise<object>} the ack */
  insertSection(table, fields) {
    return this._intent('insertSection', table, fields);
  }

  /** Deletes a section: `{at: s, section?}`. @returns {Promise<object>} the ack */
  deleteSection(table, fields) {
    return this._intent('deleteSection', table, fields);
  }

  /** Moves a section: `{from: s, to: s, section?}`. @returns {Promise<object>} the ack */
  moveSection(table, fields) {
    return this._intent('moveSection', table, fields);
  }

  /** Changes a section's header/footer (absent keeps, null removes) and, with `rows`, replaces all its rows:
   * `{at: s, header?, footer?, rows?: [{value, editable?, movable?}], section?}`. */
  editSection(table, fields) {
    return this._intent('editSection', table, fields);
  }

  /**
   * beginUpdates/endUpdates: `{deleteSections?, insertSections?, reloadSections?, moveSections?, deleteRows?,
   * insertRows?, reloadRows?, moveRows?, patchRows?}` with UIKit index semantics. @returns {Promise<object>} the ack
   */
  batch(table, fields) {
    return this._intent('batch', table, fields);
  }

  // ---- optimistic edits (../optimistic.md, ./optimistic.js) ----

  /**
   * Applies an intent (`{type, ...fields}`, made against {@link TablecastClient#predicted}) to the predicted table
   * at once (a `predicted` event follows before this returns) and sends it when its turn comes (one request in flight
   * per table; what is queued meanwhile goes as one batch when it is answered). Throws an OptimisticError when it cannot apply to the prediction (nothing changes).
   * @returns {{id: number, result: Promise<object|null>}} `result`: the ack (null when it changed nothing),
   *   rejected with the server's TablecastError (or an OptimisticError when, queued, what it named was deleted)
   */
  submit(table, intent) {
    return this._optimistic(table, (optimistic) => optimistic.submit(intent));
  }

  /** {@link TablecastClient#submit} and wait: @returns {Promise<object|null>} the ack */
  perform(table, intent) {
    return this.submit(table, intent).result;
  }

  /**
   * Undoes this client's last change on the table (a new intent everyone sees). @returns {Promise<boolean>}
   * false when there is nothing to undo; rejected (OptimisticError `conflict`, nothing touched) when the step
   * cannot be undone because someone else deleted what it changed.
   */
  async undo(table) {
    const pending = this._optimistic(table, (optimistic) => optimistic.undo());
    if (!pending) return false;
    await pending.result;
    return true;
  }

  /** Redoes the last undone change; like {@link TablecastClient#undo}. */
  async redo(table) {
    const pending = this._optimistic(table, (optimistic) => optimistic.redo());
    if (!pending) return false;
    await pending.result;
    return true;
  }

  /** The table as this client shows it (`{version, rules, sections}`): the replica plus its pending intents. */
  predicted(table) {
    const entry = this._tables.get(table);
    if (!entry?.replica.loaded) return undefined;
    return entry.optimistic?.predicted ?? { version: entry.replica.version, rules: entry.replica.rules, sections: clone(entry.replica._sections) };
  }

  /** Whether there is a change of this client's to undo / redo on the table. */
  canUndo(table) { return this._tables.get(table)?.optimistic?.canUndo ?? false; }
  canRedo(table) { return this._tables.get(table)?.optimistic?.canRedo ?? false; }

  _optimistic(table, body) {
    const entry = this._tables.get(table);
    if (!entry?.subscribed || !entry.replica.loaded) throw new TablecastError('no_such_table', `not subscribed to ${table}`);
    entry.optimistic ??= new OptimisticTable({ version: entry.replica.version, rules: entry.replica.rules, sections: entry.replica._sections });
    entry.answers ??= new Map();
    const submission = body(entry.optimistic);
    if (!submission) return null;
    const result = new Promise((resolve, reject) => entry.answers.set(submission.id, { resolve, reject }));
    result.catch(() => {}); // a refusal is also reported as an `intentRefused` event
    if (submission.settled) this._answerLocal(entry, submission.id, null);
    if (submission.send) this._sendOptimistic(table, entry, submission.send);
    this._emit('predicted', { table, predicted: entry.optimistic.predicted });
    return { id: submission.id, result };
  }

  _answerLocal(entry, id, ack, error) {
    const answer = entry.answers.get(id);
    if (!answer) return;
    entry.answers.delete(id);
    if (error) answer.reject(error);
    else answer.resolve(ack);
  }

  _sendOptimistic(table, entry, send) {
    const ref = this._nextRef();
    entry.inFlightRef = ref;
    this._request(send.intent.type, { ...send.intent, table, ref }).then(
      (ack) => this._optimisticOutcome(table, entry, entry.optimistic.acknowledge(ack.created ?? []), ack),
      (error) => this._optimisticOutcome(table, entry, entry.optimistic.refuse(error), null, error),
    );
  }

  _optimisticOutcome(table, entry, outcome, ack, serverError) {
    entry.inFlightRef = null;
    if (outcome.send) this._sendOptimistic(table, entry, outcome.send);
    // The intents the request carried (one, or a queue sent as one batch) get the server's answer; the others
    // were settled or refused locally.
    const answered = new Set(outcome.answered);
    const answer = (id) => (outcome.shares?.[id] ? { ...ack, ...outcome.shares[id] } : ack);
    outcome.accepted.forEach((id) => this._answerLocal(entry, id, answered.has(id) ? answer(id) : null));
    outcome.refused.forEach((refusal) => {
      const error = answered.has(refusal.id) && serverError ? serverError : new TablecastError(refusal.code, refusal.message);
      this._emit('intentRefused', { table, intent: refusal.intent, code: error.code, message: error.message });
      this._answerLocal(entry, refusal.id, null, error);
    });
    this._emit('predicted', { table, predicted: entry.optimistic.predicted });
  }

  // ---- administration ----

  /** Creates a table: `{sections?, rules?}` (admin). @returns {Promise<object>} the ack `{table, version, epoch}` */
  createTable(table, fields = {}) {
    return this._request('createTable', { type: 'createTable', table, ...clone(fields) });
  }

  /** Drops a table (admin). @returns {Promise<object>} the ack */
  dropTable(table) {
    return this._request('dropTable', { type: 'dropTable', table });
  }

  /** Changes some of a table's rules (admin). @returns {Promise<object>} the ack */
  setRules(table, rules) {
    return this._request('setRules', { type: 'setRules', table, rules: clone(rules) });
  }

  /** @returns {Promise<Array<{table, version, epoch, subscribers}>>} the server's tables */
  listTables() {
    return this._request('listTables', { type: 'listTables' }).then((msg) => msg.tables);
  }

  // ---- history (read role) ----

  /**
   * A page of a table's history: the kept changes with versions in `from`…`to` (default: the oldest kept to the
   * latest), at most `limit` (default 100), `order` 'newest' (default) or 'oldest' first. For the next page, call
   * again with `to: page.next` (newest first) or `from: page.next` (oldest first); no `next`, no more pages.
   * Rejects with `pruned` (naming the oldest kept version) for a version the server no longer keeps.
   * @returns {Promise<{table, epoch, version, oldest, next?, entries: Array<{version, time, origin, ...}>}>}
   */
  history(table, { from, to, limit, order } = {}) {
    const msg = { type: 'history', table };
    if (from !== undefined) msg.from = from;
    if (to !== undefined) msg.to = to;
    if (limit !== undefined) msg.limit = limit;
    if (order !== undefined) msg.order = order;
    return this._request('history', msg);
  }

  /**
   * The table as it was at `version` (with its current rules), as a new `Replica` that nothing keeps in step:
   * it does not subscribe and leaves the table's own replica alone. Rejects with `pruned` or `out_of_range`.
   * @returns {Promise<Replica>}
   */
  tableAt(table, version) {
    return this._request('snapshotAt', { type: 'snapshotAt', table, version }).then((msg) => {
      const replica = new Replica(table);
      replica.loadSnapshot(msg);
      return replica;
    });
  }

  // ---- presence: fire and forget (the server answers only failures, reported as `error` events) ----
  // Remembered per table and re-sent after a resubscription, since the server clears presence on disconnect.

  _presenceOf(table) {
    if (!this._presence.has(table)) this._presence.set(table, { editing: false, rows: new Set() });
    return this._presence.get(table);
  }

  _sendPresence(msg) {
    const entry = this._tables.get(msg.table);
    // Presence needs the subscription in place; until it is, the remembered state is sent on `subscribed`.
    if (this.state === 'live' && entry?.subscribed && !entry.catchingUp) this._sendNow(msg);
  }

  /** Enters or leaves editing mode on a subscribed table (`setEditing:animated:`). */
  setEditing(table, on) {
    this._presenceOf(table).editing = Boolean(on);
    this._sendPresence({ type: 'editing', table, on: Boolean(on) });
  }

  /** Announces a swipe or an edit in progress on a row (by id). */
  beginEditingRow(table, row) {
    this._presenceOf(table).rows.add(row);
    this._sendPresence({ type: 'beginEditingRow', table, row });
  }

  /** Announces that the swipe or edit on a row ended. */
  endEditingRow(table, row) {
    this._presenceOf(table).rows.delete(row);
    this._sendPresence({ type: 'endEditingRow', table, row });
  }

  _restorePresence(table) {
    const presence = this._presence.get(table);
    if (!presence) return;
    if (presence.editing) this._sendPresence({ type: 'editing', table, on: true });
    for (const row of presence.rows) this._sendPresence({ type: 'beginEditingRow', table, row });
  }

  // ---- receiving ----

  _receive(data) {
    let msg;
    try {
      if (typeof data !== 'string') throw new Error('a binary frame');
      msg = JSON.parse(data);
      if (msg === null || typeof msg !== 'object' || typeof msg.type !== 'string') throw new Error('no type');
    } catch (error) {
      this._emit('error', new TablecastError('bad_request', `unreadable message from the server: ${error.message}`));
      return;
    }
    const handler = this._handlers[msg.type];
    // Unknown types are ignored so that a newer server can add messages.
    if (handler) handler.call(this, msg);
  }

  _settle(ref, value) {
    const entry = ref === undefined ? undefined : this._pending.get(ref);
    if (!entry) return false;
    this._pending.delete(ref);
    entry.resolve(value);
    return true;
  }

  _resync(table, reason) {
    // The replica can no longer follow the stream: forget it and ask for a snapshot.
    const entry = this._tables.get(table);
    this._emit('error', new TablecastError('internal', `${table}: ${reason.message}; reloading the table`));
    entry.replica.version = null;
    entry.replica.epoch = null;
    if (this.state === 'live') this._sendNow({ type: 'refresh', table, ref: this._nextRef() });
  }

  _caughtUp(msg) {
    const entry = this._tables.get(msg.table);
    if (!entry) return null;
    entry.replica.setRules(msg.rules);
    if (entry.replica.version !== msg.version || entry.replica.epoch !== msg.epoch) {
      this._resync(msg.table, new Error(`catch-up ended at version ${entry.replica.version}, not ${msg.version}`));
    }
    return entry;
  }
}

TablecastClient.prototype._handlers = {
  welcome(msg) {
    if (msg.ref === undefined || msg.ref === this._helloRef) this._live(msg);
  },
  snapshot(msg) {
    // A historical snapshot answers tableAt and never touches the table's replica.
    if (msg.historical) {
      this._settle(msg.ref, msg);
      return;
    }
    const entry = this._tables.get(msg.table);
    if (!entry) return;
    entry.replica.loadSnapshot(msg);
    entry.optimistic?.replaceConfirmed({ version: msg.version, rules: entry.replica.rules, sections: msg.sections });
    this._emit('snapshot', { table: msg.table, replica: entry.replica });
  },
  update(msg) {
    const entry = this._tables.get(msg.table);
    // Before a snapshot, or already applied (a refresh's catch-up can repeat live updates): nothing to do.
    if (!entry || !entry.replica.loaded || msg.version <= entry.replica.version) return;
    try {
      entry.replica.apply(msg);
      if (entry.optimistic) {
        const own = msg.origin?.client === this.clientId && msg.origin?.ref !== undefined && msg.origin.ref === entry.inFlightRef;
        entry.optimistic.receive(msg, own);
      }
    } catch (error) {
      this._resync(msg.table, error);
      return;
    }
    this._emit('update', { table: msg.table, update: msg, replica: entry.replica });
    if (entry.optimistic) this._emit('predicted', { table: msg.table, predicted: entry.optimistic.predicted });
  },
  subscribed(msg) {
    const entry = this._tables.get(msg.table);
    if (!entry || !entry.subscribed || msg.ref !== entry.ref) return;
    entry.catchingUp = false;
    this._caughtUp(msg);
    for (const waiter of entry.waiters.splice(0)) waiter.resolve(entry.replica);
    this._emit('subscribed', { table: msg.table, replica: entry.replica });
    this._loadPresence(msg);
    this._restorePresence(msg.table);
  },
  refreshed(msg) {
    this._caughtUp(msg);
    this._loadPresence(msg);
    this._settle(msg.ref, msg);
  },
  unsubscribed(msg) {
    if (msg.ref === undefined && msg.reason !== undefined) {
      // The server ended the subscription: the connection's token no longer lets it read the table.
      const entry = this._tables.get(msg.table);
      this._tables.delete(msg.table);
      this._presence.delete(msg.table);
      this._presenceSeen.delete(msg.table);
      const error = new TablecastError('forbidden', msg.reason);
      error.table = msg.table;
      for (const waiter of entry?.waiters.splice(0) ?? []) waiter.reject(error);
      this._emit('error', error);
      return;
    }
    this._settle(msg.ref, msg);
  },
  tables(msg) {
    this._settle(msg.ref, msg);
  },
  changes(msg) {
    this._settle(msg.ref, msg);
  },
  ack(msg) {
    if (this._refreshing && msg.ref === this._refreshing.ref) {
      this.token = this._refreshing.token;
      this._refreshing = null;
      this._emit('token', { expires: msg.expires });
      this._scheduleRefresh();
      return;
    }
    this._settle(msg.ref, msg);
  },
  error(msg) {
    const error = new TablecastError(msg.code, msg.message, msg.at);
    error.ref = msg.ref;
    if (msg.ref !== undefined && msg.ref === this._helloRef) {
      // Refused hello (e.g. a bad token): retrying would be refused again.
      this._emit('error', error);
      this.close();
      return;
    }
    if (this._refreshing && msg.ref === this._refreshing.ref) {
      // The connection keeps its token until the server closes it (4001); reconnecting asks for a new one.
      this._refreshing = null;
      this._emit('error', error);
      return;
    }
    const pending = msg.ref === undefined ? undefined : this._pending.get(msg.ref);
    if (pending) {
      this._pending.delete(msg.ref);
      pending.reject(error);
      return;
    }
    for (const [table, entry] of this._tables) {
      if (entry.catchingUp && entry.ref === msg.ref) {
        entry.subscribed = false;
        entry.catchingUp = false;
        for (const waiter of entry.waiters.splice(0)) waiter.reject(error);
        error.table = table;
      }
    }
    this._emit('error', error);
  },
  presence(msg) {
    // Deltas apply to the state of the subscription's catch-up; none may arrive before it.
    const presence = this._presenceSeen.get(msg.table);
    if (!presence) return;
    presence.apply(msg);
    this._emit('presence', {
      table: msg.table, ...presence.toJSON(), joined: clone(msg.joined), changed: clone(msg.changed), left: [...msg.left],
    });
  },
  rules(msg) {
    this._tables.get(msg.table)?.replica.setRules(msg.rules);
    this._tables.get(msg.table)?.optimistic?.setRules(msg.rules);
    this._emit('rules', { table: msg.table, rules: clone(msg.rules) });
  },
  dropped(msg) {
    const entry = this._tables.get(msg.table);
    this._tables.delete(msg.table);
    this._presence.delete(msg.table);
    this._presenceSeen.delete(msg.table);
    if (entry) {
      for (const waiter of entry.waiters.splice(0)) waiter.reject(new TablecastError('no_such_table', `${msg.table} was dropped`));
    }
    this._emit('dropped', { table: msg.table });
  },
};
