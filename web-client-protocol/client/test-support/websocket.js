// Just enough RFC 6455 for the client tests, over real sockets: a scripted server peer (node's http upgrade)
// and a browser-style WebSocket class for node versions without a WebSocket global. Text frames, close, ping;
// no fragmentation or extensions (neither side here sends them).
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { connect } from 'node:net';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const accept = (key) => createHash('sha1').update(key + GUID).digest('base64');

function encodeFrame(opcode, payload, masked) {
  const length = payload.length;
  const head = [0x80 | opcode];
  const maskBit = masked ? 0x80 : 0;
  if (length < 126) head.push(maskBit | length);
  else if (length < 65536) head.push(maskBit | 126, length >> 8, length & 0xff);
  else {
    head.push(maskBit | 127, 0, 0, 0, 0);
    for (let shift = 24; shift >= 0; shift -= 8) head.push((length >>> shift) & 0xff);
  }
  if (!masked) return Buffer.concat([Buffer.from(head), payload]);
  const mask = randomBytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i] ^= mask[i & 3];
  return Buffer.concat([Buffer.from(head), mask, body]);
}

/** Splits a byte stream into frames; calls onFrame(opcode, payload) for each complete one. */
function frameReader(onFrame) {
  let buffer = Buffer.alloc(0);
  return (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      if (buffer.length < 2) return;
      const opcode = buffer[0] & 0x0f;
      const masked = (buffer[1] & 0x80) !== 0;
      let length = buffer[1] & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (buffer.length < 4) return;
        length = buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (buffer.length < 10) return;
        length = Number(buffer.readBigUInt64BE(2));
        offset = 10;
      }
      const maskOffset = offset;
      if (masked) offset += 4;
      if (buffer.length < offset + length) return;
      const payload = Buffer.from(buffer.subarray(offset, offset + length));
      if (masked) for (let i = 0; i < payload.length; i++) payload[i] ^= buffer[maskOffset + (i & 3)];
      buffer = buffer.subarray(offset + length);
      onFrame(opcode, payload);
    }
  };
}

/** A queue whose next() waits for the next item, failing after a timeout so a broken test does not hang. */
class Inbox {
  constructor(what) {
    this.what = what;
    this.items = [];
    this.waiting = [];
  }

  push(item) {
    const waiter = this.waiting.shift();
    if (waiter) waiter(item);
    else this.items.push(item);
  }

  next(timeoutMs = 2000) {
    if (this.items.length) return Promise.resolve(this.items.shift());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(done), 1);
        reject(new Error(`no ${this.what} within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = (item) => {
        clearTimeout(timer);
        resolve(item);
      };
      this.waiting.push(done);
    });
  }

  /** Resolves true if nothing arrives within `ms` (the item, if one does, stays queued). */
  async quiet(ms = 100) {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return this.items.length === 0;
  }
}

/** One accepted WebSocket connection, seen from the server side. */
class PeerConnection {
  constructor(socket, request) {
    this.socket = socket;
    this.request = request;
    this.inbox = new Inbox('client message');
    this.closed = new Promise((resolve) => socket.once('close', resolve));
    socket.on('data', frameReader((opcode, payload) => {
      if (opcode === 0x1) this.inbox.push(JSON.parse(payload.toString('utf8')));
      else if (opcode === 0x8) {
        if (!socket.destroyed) socket.end(encodeFrame(0x8, payload.subarray(0, 2), false));
      } else if (opcode === 0x9) socket.write(encodeFrame(0xa, payload, false));
    }));
    socket.on('error', () => {});
  }

  /** The next message the client sent, parsed. */
  next(timeoutMs) {
    return this.inbox.next(timeoutMs);
  }

  /** Sends one message (an object, as JSON in a text frame). */
  send(message) {
    this.socket.write(encodeFrame(0x1, Buffer.from(JSON.stringify(message)), false));
  }

  /** Closes cleanly with a close code. */
  close(code = 1000) {
    const payload = Buffer.alloc(2);
    payload.writeUInt16BE(code);
    this.socket.end(encodeFrame(0x8, payload, false));
  }

  /** Drops the TCP connection without a close frame, as a lost network would. */
  drop() {
    this.socket.destroy();
  }
}

/**
 * Starts a WebSocket server on 127.0.0.1 that hands each accepted connection to the test.
 * @returns {Promise<{url: string, connections: Inbox, stop: () => Promise<void>}>}
 */
export async function startPeer() {
  const connections = new Inbox('connection');
  const sockets = new Set();
  const server = createServer((request, response) => response.writeHead(426).end());
  server.on('upgrade', (request, socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    const protocols = (request.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    const lines = [
      'HTTP/1.1 101 Switching Protocols',
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Accept: ${accept(request.headers['sec-websocket-key'])}`,
    ];
    if (protocols.includes('tablecast.v1')) lines.push('Sec-WebSocket-Protocol: tablecast.v1');
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    connections.push(new PeerConnection(socket, request));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `ws://127.0.0.1:${server.address().port}/`,
    connections,
    stop: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A browser-style WebSocket client (constructor(url, protocols), readyState, send, close, onopen, onmessage,
 * onclose, onerror) for node without a WebSocket global. ws:// only.
 */
export class NodeWebSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSING = 2;
  static CLOSED = 3;

  constructor(url, protocols = []) {
    const { hostname, port, pathname, search } = new URL(url);
    this.url = url;
    this.readyState = NodeWebSocket.CONNECTING;
    this.protocol = '';
    this.onopen = this.onmessage = this.onclose = this.onerror = null;
    const key = randomBytes(16).toString('base64');
    const wanted = [protocols].flat();
    const socket = connect(Number(port || 80), hostname);
    this._socket = socket;
    let head = Buffer.alloc(0);
    let closeCode = 1006;
    const read = frameReader((opcode, payload) => {
      if (opcode === 0x1) this.onmessage?.({ data: payload.toString('utf8') });
      else if (opcode === 0x8) {
        closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
        if (this.readyState === NodeWebSocket.OPEN) socket.end(encodeFrame(0x8, payload.subarray(0, 2), true));
        this.readyState = NodeWebSocket.CLOSING;
      }
    });
    socket.on('connect', () => {
      const lines = [
        `GET ${pathname}${search} HTTP/1.1`,
        `Host: ${hostname}:${port}`,
        'Upgrade: websocket',
        'Connection: Upgrade',
        `Sec-WebSocket-Key: ${key}`,
        'Sec-WebSocket-Version: 13',
      ];
      if (wanted.length) lines.push(`Sec-WebSocket-Protocol: ${wanted.join(', ')}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    socket.on('data', (chunk) => {
      if (this.readyState !== NodeWebSocket.CONNECTING) return read(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const text = head.subarray(0, end).toString('latin1');
      const ok = /^HTTP\/1\.1 101/.test(text) && text.includes(`Sec-WebSocket-Accept: ${accept(key)}`);
      if (!ok) return socket.destroy();
      this.protocol = /Sec-WebSocket-Protocol: (.*)/i.exec(text)?.[1].trim() ?? '';
      this.readyState = NodeWebSocket.OPEN;
      this.onopen?.({});
      return read(head.subarray(end + 4));
    });
    socket.on('error', () => this.onerror?.({}));
    socket.on('close', () => {
      this.readyState = NodeWebSocket.CLOSED;
      this.onclose?.({ code: closeCode, wasClean: closeCode !== 1006 });
    });
  }

  send(text) {
    if (this.readyState !== NodeWebSocket.OPEN) throw new Error('WebSocket is not open');
    this._socket.write(encodeFrame(0x1, Buffer.from(text, 'utf8'), true));
  }

  close(code = 1000) {
    if (this.readyState === NodeWebSocket.OPEN) {
      const payload = Buffer.alloc(2);
      payload.writeUInt16BE(code);
      this._socket.end(encodeFrame(0x8, payload, true));
    } else this._socket.destroy();
    this.readyState = NodeWebSocket.CLOSING;
  }
}
