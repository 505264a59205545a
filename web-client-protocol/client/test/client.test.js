// The client's protocol logic against a scripted WebSocket server over real sockets (test-support/websocket.js):
// the test plays the server, reads what the client sends and answers as the spec says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Presence, TablecastClient, TablecastError } from '../tablecast.js';
import { DEFAULT_RULES, section, row, snapshot, update } from '../test-support/fixtures.js';
import { NodeWebSocket, startPeer } from '../test-support/websocket.js';

const WELCOME = { server: { name: 'tablecast', version: '1.0.0', protocol: 1 }, limits: { maxMessageBytes: 1048576 } };

/** Starts a peer and a client wired to it; `t.after` cleans both up. */
async function setup(t, options = {}) {
  const peer = await startPeer();
  const client = new TablecastClient({
    url: peer.url,
    client: 'laptop-7f3a',
    WebSocket: NodeWebSocket,
    backoff: { initial: 5, max: 20, jitter: 0 },
    ...options,
  });
  const states = [];
  client.on('state', (detail) => states.push(detail.state));
  t.after(async () => {
    client.close();
    await peer.stop();
  });
  return { peer, client, states };
}

/** Accepts the next connection, checks its hello and answers welcome. */
async function accept(peer, clientId = 'laptop-7f3a') {
  const conn = await peer.connections.next();
  const hello = await conn.next();
  assert.equal(hello.type, 'hello');
  assert.equal(hello.client, clientId);
  conn.send({ type: 'welcome', ref: hello.ref, client: clientId, ...WELCOME });
  return { conn, hello };
}

/** Answers a subscribe with a snapshot (or the given catch-up) and `subscribed`. */
function serveSubscribe(conn, msg, { version, sections = [], catchUp, epoch = 'e1', presence = NOBODY }) {
  if (catchUp) catchUp.forEach((u) => conn.send(u));
  else conn.send(snapshot(version, sections, { table: msg.table, epoch }));
  conn.send({ type: 'subscribed', ref: msg.ref, table: msg.table, version, epoch, rules: DEFAULT_RULES, presence });
}

const NOBODY = { clients: [], viewers: 0, you: 'c1' };

const fruit = () => [section('s1', 'Fruit', null, ['apple', 'pear'])];

/** Connects and subscribes to table `t` at version 5 holding apple, pear. */
async function subscribed(t, options) {
  const env = await setup(t, options);
  env.client.connect();
  const { conn, hello } = await accept(env.peer);
  const replicaPromise = env.client.subscribe('t');
  const sub = await conn.next();
  assert.deepEqual(sub, { type: 'subscribe', table: 't', ref: sub.ref });
  serveSubscribe(conn, sub, { version: 5, sections: fruit() });
  const replica = await replicaPromise;
  return { ...env, conn, hello, replica };
}

test('hello carries the stable client id, name and token; state goes connecting → live', async (t) => {
  const { peer, client, states } = await setup(t, { name: 'Ana', token: 's3cret' });
  const welcomed = new Promise((resolve) => client.on('welcome', resolve));
  client.connect();
  const conn = await peer.connections.next();
  assert.equal(conn.request.headers['sec-websocket-protocol'], 'tablecast.v1');
  const hello = await conn.next();
  assert.deepEqual(hello, { type: 'hello', ref: hello.ref, client: 'laptop-7f3a', name: 'Ana', token: 's3cret' });
  conn.send({ type: 'welcome', ref: hello.ref, client: 'laptop-7f3a', ...WELCOME });
  assert.equal((await welcomed).server.protocol, 1);
  assert.deepEqual(states, ['connecting', 'live']);
  assert.equal(client.state, 'live');
});

test('subscribe loads the snapshot and keeps the replica in step with updates', async (t) => {
  const { client, conn, replica } = await subscribed(t);
  assert.deepEqual(replica.values(), [['apple', 'pear']]);
  assert.equal(replica.version, 5);
  assert.equal(replica.epoch, 'e1');
  assert.deepEqual(replica.rules, DEFAULT_RULES);
  assert.equal(client.replica('t'), replica);
  assert.deepEqual(client.subscriptions, ['t']);

  const seen = new Promise((resolve) => client.on('update', resolve));
  conn.send(update(6, { insertRows: [{ at: [0, 0], row: row('fig') }] }));
  const event = await seen;
  assert.equal(event.table, 't');
  assert.equal(event.replica, replica);
  assert.deepEqual(replica.values(), [['fig', 'apple', 'pear']]);
});

test('intents carry base and a fresh ref; ack resolves after the own update is applied', async (t) => {
  const { client, conn, replica } = await subscribed(t);
  const inserted = client.insert('t', { at: [0, 2], value: 'plum' });
  const moved = client.move('t', { from: [0, 0], to: [0, 1], row: 'apple' });
  const insert = await conn.next();
  const move = await conn.next();
  assert.deepEqual(insert, { type: 'insert', table: 't', base: 5, at: [0, 2], value: 'plum', ref: insert.ref });
  assert.deepEqual(move, { type: 'move', table: 't', base: 5, from: [0, 0], to: [0, 1], row: 'apple', ref: move.ref });
  assert.notEqual(insert.ref, move.ref);

  conn.send(update(6, { insertRows: [{ at: [0, 2], row: row('plum') }] }, { origin: { client: 'laptop-7f3a', ref: insert.ref } }));
  conn.send({ type: 'ack', ref: insert.ref, table: 't', version: 6, epoch: 'e1', created: ['plum'], resolved: [[0, 2]] });
  const ack = await inserted;
  assert.deepEqual(ack.created, ['plum']);
  assert.deepEqual(replica.values(), [['apple', 'pear', 'plum']], 'the own update is in the replica when the ack settles');

  conn.send({ type: 'error', ref: move.ref, code: 'conflict', message: 'row apple changed', at: 'row' });
  await assert.rejects(moved, (error) => {
    assert.ok(error instanceof TablecastError);
    assert.equal(error.code, 'conflict');
    assert.equal(error.message, 'row apple changed');
    assert.equal(error.at, 'row');
    return true;
  });
});

test('optimistic intents queued while one is in flight go as one batch when it is acked; each gets the ack', async (t) => {
  const { client, peer } = await setup(t);
  client.connect();
  const { conn } = await accept(peer);
  const subscribing = client.subscribe('t');
  serveSubscribe(conn, await conn.next(), { version: 5, sections: [section('s1', 'L', null, ['a', 'b', 'c', 'd', 'e'])] });
  await subscribing;
  const own = (ref) => ({ origin: { client: 'laptop-7f3a', ref } });
  // J three times on a, then an edit of b: the first move goes, the rest waits for its answer.
  const submitted = [0, 1, 2].map((r) => client.submit('t', { type: 'move', from: [0, r], to: [0, r + 1], row: 'a' }));
  submitted.push(client.submit('t', { type: 'edit', at: [0, 0], row: 'b', value: 'B' }));
  assert.deepEqual(client.predicted('t').sections[0].rows.map((r) => r.value), ['B', 'c', 'd', 'a', 'e']);
  const first = await conn.next();
  assert.deepEqual(first, { type: 'move', table: 't', base: 5, from: [0, 0], to: [0, 1], row: 'a', ref: first.ref });
  conn.send(update(6, { moveRows: [{ from: [0, 0], to: [0, 1] }] }, own(first.ref)));
  conn.send({ type: 'ack', ref: first.ref, table: 't', version: 6, epoch: 'e1', created: [] });
  const batch = await conn.next();
  assert.deepEqual(batch, {
    type: 'batch', table: 't', base: 6, ref: batch.ref,
    moveRows: [{ from: [0, 1], row: 'a', to: [0, 3] }], reloadRows: [{ at: [0, 0], row: 'b', value: 'B' }],
  });
  conn.send(update(7, { moveRows: [{ from: [0, 1], to: [0, 3] }], reloadRows: [{ at: [0, 0], value: 'B' }] }, own(batch.ref)));
  conn.send({ type: 'ack', ref: batch.ref, table: 't', version: 7, epoch: 'e1', created: [] });
  const answers = await Promise.all(submitted.map((s) => s.result));
  assert.deepEqual(answers.map((a) => a.version), [6, 7, 7, 7], 'every intent the batch carried gets its ack');
  // Each with its own part of it: where its move put the row, nothing for the edit.
  assert.deepEqual(answers.slice(1).map((a) => a.resolved), [[[0, 2]], [[0, 3]], []]);
  assert.deepEqual(client.replica('t').values(), [['B', 'c', 'd', 'a', 'e']]);
});

test('every intent kind is sent with the spec fields', async (t) => {
  const { client, conn } = await subscribed(t);
  const calls = [
    ['insert', { at: [0, 0], value: { n: 1 }, editable: false }],
    ['delete', { at: [0, 1], row: 'pear' }],
    ['move', { from: [0, 0], to: [0, 1] }],
    ['edit', { at: [0, 0], value: 'APPLE', row: 'apple' }],
    ['insertSection', { at: 1, header: 'Veg', footer: null, rows: [{ value: 'leek' }] }],
    ['deleteSection', { at: 0, section: 's1' }],
    ['moveSection', { from: 0, to: 1 }],
    ['editSection', { at: 0, header: null }],
    ['batch', { deleteRows: [{ at: [0, 0] }], insertRows: [{ at: [0, 0], value: 'x' }] }],
  ];
  for (const [kind, fields] of calls) {
    client[kind]('t', fields).catch(() => {});
    const sent = await conn.next();
    assert.deepEqual(sent, { type: kind, table: 't', base: 5, ...fields, ref: sent.ref }, kind);
  }
  // A caller's own base and ref win (e.g. a ref kept across a page reload).
  client.edit('t', { at: [0, 0], value: 1, base: 3, ref: 'mine-1' }).catch(() => {});
  assert.deepEqual(await conn.next(), { type: 'edit', table: 't', at: [0, 0], value: 1, base: 3, ref: 'mine-1' });
});

test('requests made before connecting wait; subscribing twice sends one subscribe and answers both', async (t) => {
  const { client, peer } = await setup(t);
  const first = client.subscribe('t');
  const second = client.subscribe('t');
  const listed = client.listTables();
  client.connect();
  const { conn } = await accept(peer);
  const sub = await conn.next();
  assert.equal(sub.type, 'subscribe');
  const list = await conn.next();
  assert.deepEqual(list, { type: 'listTables', ref: list.ref });
  assert.ok(await conn.inbox.quiet(50), 'one subscribe only');
  serveSubscribe(conn, sub, { version: 5, sections: fruit() });
  conn.send({ type: 'tables', ref: list.ref, tables: [] });
  const [a, b] = await Promise.all([first, second]);
  assert.equal(a, b);
  assert.deepEqual(a.values(), [['apple', 'pear']]);
  assert.equal(await client.subscribe('t'), a, 'already caught up: answered at once');
  assert.deepEqual(await listed, []);
});

test('intents on a table that is not subscribed have no base', async (t) => {
  const { client, peer } = await setup(t);
  client.connect();
  const { conn } = await accept(peer);
  client.delete('other', { at: [0, 0] }).catch(() => {});
  const sent = await conn.next();
  assert.deepEqual(sent, { type: 'delete', table: 'other', at: [0, 0], ref: sent.ref });
});

test('after a lost connection: same client id, resume with since+epoch, unacked intents re-sent with the same refs in order', async (t) => {
  const { client, peer, conn, replica, hello, states } = await subscribed(t);
  const first = client.insert('t', { at: [0, 0], value: 'fig' });
  const second = client.delete('t', { at: [0, 1], row: 'pear' });
  const sentFirst = await conn.next();
  const sentSecond = await conn.next();
  conn.drop();

  // Made while disconnected: queued, sent after the older ones.
  await new Promise((resolve) => client.on('state', (d) => d.state === 'reconnecting' && resolve()));
  const third = client.edit('t', { at: [0, 0], value: 'APPLE' });

  const { conn: again, hello: hello2 } = await accept(peer);
  assert.notEqual(hello2.ref, hello.ref);
  const resub = await again.next();
  assert.deepEqual(resub, { type: 'subscribe', table: 't', since: 5, epoch: 'e1', ref: resub.ref });
  const resent = [await again.next(), await again.next(), await again.next()];
  assert.deepEqual(resent.slice(0, 2), [sentFirst, sentSecond], 'same messages, same refs, same order');
  assert.deepEqual(resent[2], { type: 'edit', table: 't', base: 5, at: [0, 0], value: 'APPLE', ref: resent[2].ref });
  assert.ok(await again.inbox.quiet(50), 'nothing else is sent');

  // The server had committed the first intent before the drop: the catch-up brings it, and the retry is
  // answered with the original ack (deduplicated by client+ref).
  serveSubscribe(again, resub, {
    version: 6,
    catchUp: [update(6, { insertRows: [{ at: [0, 0], row: row('fig') }] }, { origin: { client: 'laptop-7f3a', ref: sentFirst.ref } })],
  });
  again.send({ type: 'ack', ref: sentFirst.ref, table: 't', version: 6, epoch: 'e1', created: ['fig'] });
  again.send(update(7, { deleteRows: [[0, 2]] }));
  again.send({ type: 'ack', ref: sentSecond.ref, table: 't', version: 7, epoch: 'e1' });
  again.send({ type: 'ack', ref: resent[2].ref, table: 't', version: 7, epoch: 'e1', noop: true });
  assert.equal((await first).version, 6);
  assert.equal((await second).version, 7);
  assert.equal((await third).noop, true);
  assert.deepEqual(replica.values(), [['fig', 'apple']]);
  assert.deepEqual(states, ['connecting', 'live', 'reconnecting', 'connecting', 'live']);
});

test('a resume whose epoch no longer matches gets a snapshot that replaces the replica in place', async (t) => {
  const { client, peer, conn, replica } = await subscribed(t);
  conn.close(1001);
  const { conn: again } = await accept(peer);
  const resub = await again.next();
  assert.equal(resub.since, 5);
  const snapshots = [];
  client.on('snapshot', (detail) => snapshots.push(detail.table));
  serveSubscribe(again, resub, { version: 0, epoch: 'e2', sections: [section('s9', null, null, ['new life'])] });
  await new Promise((resolve) => client.on('subscribed', resolve));
  assert.equal(client.replica('t'), replica);
  assert.equal(replica.epoch, 'e2');
  assert.deepEqual(replica.values(), [['new life']]);
  assert.deepEqual(snapshots, ['t']);
});

test('refresh sends since+epoch and resolves on refreshed; repeated updates are ignored', async (t) => {
  const { client, conn, replica } = await subscribed(t);
  const applied = new Promise((resolve) => client.on('update', resolve));
  conn.send(update(6, { deleteRows: [[0, 0]] }));
  await applied;
  const refreshed = client.refresh('t');
  const msg = await conn.next();
  assert.deepEqual(msg, { type: 'refresh', table: 't', since: 6, epoch: 'e1', ref: msg.ref });
  // The catch-up may repeat an update the subscription already delivered.
  conn.send(update(6, { deleteRows: [[0, 0]] }));
  conn.send(update(7, { reloadRows: [{ at: [0, 0], value: 'PEAR' }] }));
  conn.send({ type: 'refreshed', ref: msg.ref, table: 't', version: 7, epoch: 'e1', rules: { ...DEFAULT_RULES, moves: 'none' } });
  assert.equal(await refreshed, replica);
  assert.deepEqual(replica.values(), [['PEAR']]);
  assert.equal(replica.rules.moves, 'none');
});

test('refresh of a table that is not subscribed loads a snapshot', async (t) => {
  const { client, peer } = await setup(t);
  client.connect();
  const { conn } = await accept(peer);
  const refreshed = client.refresh('other');
  const msg = await conn.next();
  assert.deepEqual(msg, { type: 'refresh', table: 'other', ref: msg.ref });
  conn.send(snapshot(2, fruit(), { table: 'other' }));
  conn.send({ type: 'refreshed', ref: msg.ref, table: 'other', version: 2, epoch: 'e1', rules: DEFAULT_RULES });
  assert.deepEqual((await refreshed).values(), [['apple', 'pear']]);
});

test('a gap in versions makes the client reload the table instead of diverging', async (t) => {
  const { client, conn, replica } = await subscribed(t);
  const errors = [];
  client.on('error', (error) => errors.push(error));
  conn.send(update(7, { deleteRows: [[0, 0]] }));
  const msg = await conn.next();
  assert.deepEqual(msg, { type: 'refresh', table: 't', ref: msg.ref });
  assert.equal(errors.length, 1);
  conn.send(snapshot(7, [section('s1', 'Fruit', null, ['pear'])]));
  conn.send({ type: 'refreshed', ref: msg.ref, table: 't', version: 7, epoch: 'e1', rules: DEFAULT_RULES });
  conn.send(update(8, { deleteRows: [[0, 0]] }));
  await new Promise((resolve) => client.on('update', resolve));
  assert.deepEqual(replica.values(), [[]]);
  assert.equal(replica.version, 8);
});

test('subscribe to a missing table rejects; unsubscribe, listTables and admin requests settle by ref', async (t) => {
  const { client, conn } = await subscribed(t);
  const missing = client.subscribe('nope');
  const sub = await conn.next();
  conn.send({ type: 'error', ref: sub.ref, code: 'no_such_table', message: 'no table nope' });
  await assert.rejects(missing, { name: 'TablecastError', code: 'no_such_table' });
  assert.deepEqual(client.subscriptions, ['t']);

  const list = client.listTables();
  const created = client.createTable('groceries', { rules: { moves: 'withinSection' } });
  const rules = client.setRules('t', { reserveLastRow: true });
  const dropped = client.dropTable('old');
  const unsub = client.unsubscribe('t');
  const sent = [];
  for (let i = 0; i < 5; i++) sent.push(await conn.next());
  assert.deepEqual(sent.map(({ ref, ...rest }) => rest), [
    { type: 'listTables' },
    { type: 'createTable', table: 'groceries', rules: { moves: 'withinSection' } },
    { type: 'setRules', table: 't', rules: { reserveLastRow: true } },
    { type: 'dropTable', table: 'old' },
    { type: 'unsubscribe', table: 't' },
  ]);
  conn.send({ type: 'tables', ref: sent[0].ref, tables: [{ table: 't', version: 5, epoch: 'e1', subscribers: 1 }] });
  conn.send({ type: 'ack', ref: sent[1].ref, table: 'groceries', version: 0, epoch: 'g1' });
  conn.send({ type: 'ack', ref: sent[2].ref, table: 't', version: 5, epoch: 'e1' });
  conn.send({ type: 'error', ref: sent[3].ref, code: 'forbidden', message: 'admin only' });
  conn.send({ type: 'unsubscribed', ref: sent[4].ref, table: 't' });
  assert.deepEqual(await list, [{ table: 't', version: 5, epoch: 'e1', subscribers: 1 }]);
  assert.equal((await created).epoch, 'g1');
  assert.equal((await rules).version, 5);
  await assert.rejects(dropped, { code: 'forbidden', message: 'admin only' });
  assert.equal((await unsub).table, 't');
  assert.deepEqual(client.subscriptions, []);
});

test('a createTable whose answer was lost is rejected as disconnected, not retried', async (t) => {
  const { client, peer } = await setup(t);
  client.connect();
  const { conn } = await accept(peer);
  const created = client.createTable('groceries');
  await conn.next();
  conn.drop();
  await assert.rejects(created, { code: 'disconnected' });
  const { conn: again } = await accept(peer);
  assert.ok(await again.inbox.quiet(50));
});

test('presence is sent once subscribed, re-sent after a reconnect, and received as events', async (t) => {
  const { client, peer, conn } = await subscribed(t);
  client.setEditing('t', true);
  client.beginEditingRow('t', 'apple');
  client.beginEditingRow('t', 'pear');
  client.endEditingRow('t', 'pear');
  assert.deepEqual(
    [await conn.next(), await conn.next(), await conn.next(), await conn.next()],
    [
      { type: 'editing', table: 't', on: true },
      { type: 'beginEditingRow', table: 't', row: 'apple' },
      { type: 'beginEditingRow', table: 't', row: 'pear' },
      { type: 'endEditingRow', table: 't', row: 'pear' },
    ],
  );
  const me = { key: 'c1', client: 'laptop-7f3a', name: 'Ana', editing: true, row: 'apple' };
  const seen = new Promise((resolve) => client.on('presence', resolve));
  conn.send({ type: 'presence', table: 't', joined: [me], changed: [], left: [], viewers: 0 });
  assert.deepEqual(await seen, { table: 't', you: 'c1', clients: [me], viewers: 0, joined: [me], changed: [], left: [] });
  assert.deepEqual(client.presence('t'), { you: 'c1', clients: [me], viewers: 0 });

  conn.drop();
  const { conn: again } = await accept(peer);
  const resub = await again.next();
  assert.ok(await again.inbox.quiet(50), 'presence waits for the subscription');
  serveSubscribe(again, resub, { version: 5, catchUp: [] });
  assert.deepEqual([await again.next(), await again.next()], [
    { type: 'editing', table: 't', on: true },
    { type: 'beginEditingRow', table: 't', row: 'apple' },
  ]);
});

test('rules and dropped messages', async (t) => {
  const { client, conn, replica } = await subscribed(t);
  const rules = new Promise((resolve) => client.on('rules', resolve));
  conn.send({ type: 'rules', table: 't', rules: { ...DEFAULT_RULES, moves: 'none' } });
  assert.equal((await rules).rules.moves, 'none');
  assert.equal(replica.rules.moves, 'none');
  const dropped = new Promise((resolve) => client.on('dropped', resolve));
  conn.send({ type: 'dropped', table: 't' });
  assert.deepEqual(await dropped, { table: 't' });
  assert.deepEqual(client.subscriptions, []);
});

test('an error without a pending request is an error event', async (t) => {
  const { client, conn } = await subscribed(t);
  const seen = new Promise((resolve) => client.on('error', resolve));
  client.beginEditingRow('t', 'ghost');
  await conn.next();
  conn.send({ type: 'error', code: 'bad_request', message: 'no row ghost' });
  const error = await seen;
  assert.ok(error instanceof TablecastError);
  assert.equal(error.code, 'bad_request');
});

test('close rejects pending requests and stops reconnecting', async (t) => {
  const { client, conn, peer, states } = await subscribed(t);
  const pending = client.insert('t', { at: [0, 0], value: 'x' });
  await conn.next();
  client.close();
  await assert.rejects(pending, { code: 'closed' });
  await conn.closed;
  await assert.rejects(peer.connections.next(100), /no connection/);
  assert.equal(states.at(-1), 'closed');
});

test('a refused hello closes the client instead of retrying forever', async (t) => {
  const { client, peer, states } = await setup(t, { token: 'wrong' });
  const errors = [];
  client.on('error', (error) => errors.push(error));
  client.connect();
  const conn = await peer.connections.next();
  const hello = await conn.next();
  conn.send({ type: 'error', ref: hello.ref, code: 'unauthorized', message: 'bad token' });
  await conn.closed;
  assert.equal(errors[0].code, 'unauthorized');
  assert.deepEqual(states, ['connecting', 'closed']);
});

/** The next `type` event of `client`. */
function nextEvent(client, type) {
  return new Promise((resolve) => {
    const off = client.on(type, (detail) => {
      off();
      resolve(detail);
    });
  });
}

/** An unsigned stand-in for a signed token (the client only reads its `exp`; the server checks signatures). */
function jwt(claims) {
  const part = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}.c2ln`;
}

test('getToken gives each hello its token, refreshes it before exp, and again after a 4001 close', async (t) => {
  const now = Date.now() / 1000;
  const tokens = [
    jwt({ sub: 'ana', exp: now + 1.2 }), jwt({ sub: 'ana', exp: now + 3600 }), jwt({ sub: 'ana', exp: now + 7200 }),
  ];
  let asked = 0;
  const { client, peer } = await setup(t, { getToken: async () => tokens[asked++] });
  const refreshed = [];
  client.on('token', (detail) => refreshed.push(detail));
  client.connect();
  const { conn, hello } = await accept(peer);
  assert.equal(hello.token, tokens[0]);
  // A quarter of its 1.2 s life before exp, the client sends the next token.
  const refresh = await conn.next(2000);
  assert.deepEqual(refresh, { type: 'refreshToken', token: tokens[1], ref: refresh.ref });
  conn.send({ type: 'ack', ref: refresh.ref, expires: Math.floor(now + 3600) });
  await nextEvent(client, 'token');
  assert.deepEqual(refreshed, [{ expires: Math.floor(now + 3600) }]);
  assert.equal(client.token, tokens[1]);
  // The server ends the connection (say, the token was revoked): the next hello asks for a fresh one.
  conn.close(4001);
  const again = await accept(peer);
  assert.equal(again.hello.token, tokens[2]);
  assert.equal(asked, 3);
});

test('a refused refresh is an error event; the connection keeps its token', async (t) => {
  const tokens = [jwt({ sub: 'ana', exp: Date.now() / 1000 + 0.4 }), jwt({ sub: 'bo', exp: Date.now() / 1000 + 60 })];
  let asked = 0;
  const { client, peer } = await setup(t, { getToken: () => tokens[asked++] });
  const errors = [];
  client.on('error', (error) => errors.push(error));
  client.connect();
  const { conn } = await accept(peer);
  const refresh = await conn.next(2000);
  assert.equal(refresh.type, 'refreshToken');
  conn.send({ type: 'error', ref: refresh.ref, code: 'unauthorized', message: 'token refused: another user' });
  await nextEvent(client, 'error');
  assert.equal(errors[0].code, 'unauthorized');
  assert.equal(client.token, tokens[0]);
  assert.equal(client.state, 'live');
});

test('a subscription the server ends for the token is an error event and no longer subscribed', async (t) => {
  const { client, conn } = await subscribed(t);
  const errors = [];
  client.on('error', (error) => errors.push(error));
  const reason = "the connection's token no longer lets it read table 't'";
  conn.send({ type: 'unsubscribed', table: 't', reason });
  await nextEvent(client, 'error');
  assert.equal(errors[0].code, 'forbidden');
  assert.equal(errors[0].message, reason);
  assert.equal(errors[0].table, 't');
  assert.equal(client.replica('t'), undefined);
});

test('reconnect delays grow by the factor up to the max, less the jitter', async (t) => {
  // A port nobody listens on: every attempt fails at once.
  const { peer } = await setup(t);
  const url = peer.url;
  await peer.stop();
  const rolls = [0, 0.5, 1, 0.5, 0.5];
  const client = new TablecastClient({
    url,
    WebSocket: NodeWebSocket,
    backoff: { initial: 4, factor: 3, max: 40, jitter: 0.5 },
    random: () => rolls.shift() ?? 0,
  });
  const delays = [];
  const done = new Promise((resolve) =>
    client.on('state', (detail) => {
      if (detail.state !== 'reconnecting') return;
      delays.push([detail.attempt, detail.delay]);
      if (delays.length === 5) resolve();
    }),
  );
  client.connect();
  await done;
  client.close();
  // 4, 12, 36, 40 (max), 40, each times (1 - 0.5 × roll).
  assert.deepEqual(delays, [[1, 4], [2, 9], [3, 18], [4, 30], [5, 30]]);
});

test('the library runs on the platform WebSocket too', { skip: !globalThis.WebSocket && 'no WebSocket global (node --experimental-websocket)' }, async (t) => {
  const { peer, client } = await setup(t, { WebSocket: globalThis.WebSocket });
  client.connect();
  const { conn } = await accept(peer);
  const replicaPromise = client.subscribe('t');
  serveSubscribe(conn, await conn.next(), { version: 1, sections: fruit() });
  assert.deepEqual((await replicaPromise).values(), [['apple', 'pear']]);
});

test('several urls: after a lost connection the client moves to the next node and resumes with since+epoch', async (t) => {
  const peer = await startPeer();
  const other = await startPeer();
  const client = new TablecastClient({
    url: `${peer.url}, ${other.url}`, client: 'laptop-7f3a', WebSocket: NodeWebSocket,
    backoff: { initial: 5, max: 20, jitter: 0 },
  });
  t.after(async () => {
    client.close();
    await peer.stop();
    await other.stop();
  });
  client.connect();
  const { conn } = await accept(peer);
  const replicaPromise = client.subscribe('t');
  const sub = await conn.next();
  serveSubscribe(conn, sub, { version: 5, sections: fruit() });
  const replica = await replicaPromise;
  conn.drop();
  const { conn: again } = await accept(other);
  assert.equal(client.url, other.url);
  const resub = await again.next();
  assert.deepEqual(resub, { type: 'subscribe', table: 't', since: 5, epoch: 'e1', ref: resub.ref });
  serveSubscribe(again, resub, { version: 6, catchUp: [update(6, { deleteRows: [[0, 0]] })] });
  await new Promise((resolve) => client.on('subscribed', resolve));
  assert.deepEqual(replica.values(), [['pear']]);
});

test('presence: the catch-up brings the state, deltas change only what they name', async (t) => {
  const ana = { key: 'c1', client: 'ana', name: 'Ana', editing: false };
  const bo = { key: 'c2', client: 'bo', name: 'Bo', editing: false };
  const boTab2 = { key: 'c5', client: 'bo', name: 'Bo', editing: false };
  const env = await setup(t);
  env.client.connect();
  const { conn } = await accept(env.peer);
  const events = [];
  env.client.on('presence', (detail) => events.push(detail));
  const subscribing = env.client.subscribe('t');
  const sub = await conn.next();
  serveSubscribe(conn, sub, { version: 5, sections: fruit(), presence: { clients: [ana, bo], viewers: 3, you: 'c9' } });
  await subscribing;
  assert.deepEqual(events.shift(), {
    table: 't', you: 'c9', clients: [ana, bo], viewers: 3, joined: [], changed: [], left: [],
  });
  const next = () => new Promise((resolve) => {
    const off = env.client.on('presence', (detail) => {
      off();
      resolve(detail);
    });
  });
  // Two tabs of one client are two entries; a change replaces its entry in place; a leave removes one key.
  const deltas = [
    { type: 'presence', table: 't', joined: [boTab2], changed: [], left: [], viewers: 4 },
    { type: 'presence', table: 't', joined: [], changed: [{ ...bo, editing: true, row: 'r2' }], left: ['c1'], viewers: 4 },
    { type: 'presence', table: 't', joined: [], changed: [], left: [], viewers: 2 },
  ];
  for (const delta of deltas) {
    const seen = next();
    conn.send(delta);
    await seen;
  }
  assert.deepEqual(env.client.presence('t'), {
    you: 'c9', clients: [{ ...bo, editing: true, row: 'r2' }, boTab2], viewers: 2,
  });
  assert.deepEqual(events.at(-2).left, ['c1']);
  assert.deepEqual(events.at(-1).clients.map((entry) => entry.key), ['c2', 'c5']);
  // A refresh's state replaces what the deltas built.
  const refreshing = env.client.refresh('t');
  const refresh = await conn.next();
  conn.send({
    type: 'refreshed', ref: refresh.ref, table: 't', version: 5, epoch: 'e1', rules: DEFAULT_RULES,
    presence: { clients: [ana], viewers: 0, you: 'c9' },
  });
  await refreshing;
  assert.deepEqual(env.client.presence('t'), { you: 'c9', clients: [ana], viewers: 0 });
});

test('Presence applies deltas in order and keeps its own copies', () => {
  const entry = (key, extra = {}) => ({ key, client: key, name: key.toUpperCase(), editing: false, ...extra });
  const state = { you: 'a', clients: [entry('a'), entry('b')], viewers: 1 };
  const presence = new Presence(state);
  state.clients[0].name = 'changed outside';
  presence.apply({ joined: [entry('c')], changed: [entry('a', { editing: true })], left: ['b'], viewers: 7 });
  presence.apply({ joined: [], changed: [entry('c', { row: 'r1' })], left: ['nobody'], viewers: 6 });
  assert.deepEqual(presence.toJSON(), {
    you: 'a', clients: [entry('a', { editing: true }), entry('c', { row: 'r1' })], viewers: 6,
  });
  assert.deepEqual(presence.others, [entry('c', { row: 'r1' })]);
  const before = presence.clients;
  before[0].name = 'mutated copy';
  assert.equal(presence.clients[0].name, 'A');
});

test('history sends its range and settles with the changes page; the next page is asked with to: next', async (t) => {
  const { client, conn } = await subscribed(t);
  const first = client.history('t', { limit: 2 });
  const request = await conn.next();
  assert.deepEqual(request, { type: 'history', table: 't', limit: 2, ref: request.ref });
  const entry = (version, name) => ({
    ...update(version, {}), time: 1795425355000 + version, origin: { client: `c-${name}`, name },
  });
  const strip = ({ type, table, ...rest }) => rest;
  conn.send({
    type: 'changes', ref: request.ref, table: 't', epoch: 'e1', version: 5, oldest: 0, next: 3,
    entries: [strip(entry(5, 'Ana')), strip(entry(4, 'Bo'))],
  });
  const page = await first;
  assert.deepEqual(page.entries.map((e) => [e.version, e.origin.name]), [[5, 'Ana'], [4, 'Bo']]);
  assert.equal(page.next, 3);

  const second = client.history('t', { to: page.next, limit: 2, order: 'oldest', from: 1 });
  const again = await conn.next();
  assert.deepEqual(again, { type: 'history', table: 't', from: 1, to: 3, limit: 2, order: 'oldest', ref: again.ref });
  conn.send({ type: 'error', ref: again.ref, code: 'pruned', message: "table 't' keeps its history from version 2 on" });
  await assert.rejects(second, (error) => error instanceof TablecastError && error.code === 'pruned');
});

test('tableAt resolves with a replica of the past table and leaves the subscribed replica alone', async (t) => {
  const { client, conn, replica } = await subscribed(t);
  const past = client.tableAt('t', 3);
  const request = await conn.next();
  assert.deepEqual(request, { type: 'snapshotAt', table: 't', version: 3, ref: request.ref });
  conn.send({ ...snapshot(3, [section('s1', 'Fruit', null, ['apple'])], { table: 't', epoch: 'e1' }), historical: true, ref: request.ref });
  const then = await past;
  assert.deepEqual(then.values(), [['apple']]);
  assert.equal(then.version, 3);
  assert.notEqual(then, replica);
  assert.deepEqual(replica.values(), [['apple', 'pear']], 'the live replica is untouched');
  assert.equal(replica.version, 5);
  assert.equal(client.replica('t'), replica);
});
