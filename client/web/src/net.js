// The WebSocket session: binary msgpack frames, hello/welcome, request ids, the server's
// clock offset, heartbeats, and reconnecting with backoff after a dropped connection.
import { decode, encode } from "@msgpack/msgpack";

export const PROTOCOL_VERSIONS = [1];
const HEARTBEAT_MS = 15000;
const PONG_TIMEOUT_MS = 8000;
const REQUEST_TIMEOUT_MS = 15000;
const BACKOFF_MS = [400, 1000, 2000, 4000, 8000];
// The server closed the socket because its account session was signed out
// (docs/protocol.md, "Close codes"): reconnecting with that token would be refused.
export const CLOSE_SESSION_REVOKED = 4011;

/** A reply the server refused (`error`), or a request lost with its connection. */
export class RequestError extends Error {
  constructor(code, message, reply = null) {
    super(message || code);
    this.code = code;
    this.reply = reply;
  }
}

export function socketUrl(location) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}/ws`;
}

/**
 * Status values given to `onStatus`: "connecting" (first attempt), "online",
 * "lost" (was online, reconnecting), "unreachable" (attempts keep failing; `retryInMs`).
 */
export class Connection {
  constructor({ url, hello, onWelcome, onMessage, onStatus, onHelloError, onSignedOut = () => {} }) {
    this.url = url;
    this.hello = hello; // () => {token?, name?}
    this.onWelcome = onWelcome;
    this.onMessage = onMessage;
    this.onStatus = onStatus;
    this.onHelloError = onHelloError;
    this.onSignedOut = onSignedOut; // close 4011: this device's account session is over
    this.held = false; // no reconnecting until renew() (a signed-out device)
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map();
    this.clockOffset = 0; // server clock minus local clock, ms
    this.welcomed = false;
    this.everOnline = false;
    this.failures = 0;
    this.retryTimer = null;
    this.heartbeat = null;
    this.pongTimer = null;
  }

  start() {
    this.status("connecting");
    this.open();
  }

  /** The server's clock now, in ms since the epoch. */
  serverNow() {
    return Date.now() + this.clockOffset;
  }

  open() {
    clearTimeout(this.retryTimer);
    this.welcomed = false;
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch {
      this.scheduleRetry();
      return;
    }
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    ws.onopen = () => this.sayHello();
    ws.onmessage = (event) => this.receive(event.data);
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (event.code === CLOSE_SESSION_REVOKED) {
        this.hold();
        this.onSignedOut();
      } else this.dropped();
    };
  }

  sayHello() {
    const { token, name } = this.hello();
    const hello = { t: "hello", versions: PROTOCOL_VERSIONS };
    if (token) hello.token = token;
    if (name) hello.name = name;
    this.sentHelloAt = Date.now();
    this.sendRaw(hello);
  }

  /**
   * Stop: close the socket (if any) and do not reconnect until renew(). A signed-out
   * device holds: its token would be refused again and again.
   */
  hold() {
    this.held = true;
    clearTimeout(this.retryTimer);
    const ws = this.ws;
    this.ws = null;
    this.stopped();
    if (ws) ws.close();
  }

  /**
   * Say hello again with what hello() gives now (a sign-in's token, or none for a new
   * guest): on the socket whose hello was refused, else on a new connection (a socket
   * is one player).
   */
  renew() {
    const wasHeld = this.held;
    this.held = false;
    if (!this.ws) {
      this.failures = 0;
      if (wasHeld) this.status("connecting");
      this.open();
    } else if (!this.welcomed) {
      // Still connecting: its onopen says hello with the new token.
      if (this.ws.readyState === WebSocket.OPEN) this.sayHello();
    } else this.reconnect();
  }

  receive(data) {
    if (typeof data === "string") return; // the server only sends binary frames
    /** @type {any} */
    let msg;
    try {
      msg = decode(new Uint8Array(data));
    } catch {
      return;
    }
    if (!msg || typeof msg !== "object") return;
    if (msg.t === "welcome") {
      const now = Date.now();
      this.clockOffset = msg.server_time - Math.round((now + (this.sentHelloAt || now)) / 2);
      this.welcomed = true;
      this.everOnline = true;
      this.deliberate = false;
      this.failures = 0;
      this.startHeartbeat();
      this.status("online");
      this.onWelcome(msg);
      return;
    }
    if (!this.welcomed && msg.t === "error") {
      // bad_token / token_expired: the connection stays open; say hello again as a guest.
      const retry = this.onHelloError(msg);
      if (retry) this.sendRaw({ t: "hello", versions: PROTOCOL_VERSIONS, ...retry });
      return;
    }
    if (msg.t === "pong") {
      clearTimeout(this.pongTimer);
      if (typeof msg.server_time === "number" && this.pingSentAt) {
        const now = Date.now();
        this.clockOffset = msg.server_time - Math.round((now + this.pingSentAt) / 2);
      }
    }
    if (msg.id != null && this.pending.has(msg.id)) {
      const { resolve, reject, timer } = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      clearTimeout(timer);
      if (msg.t === "error") reject(new RequestError(msg.code, msg.message, msg));
      else resolve(msg);
      // Replies that also change state (room snapshots, acks) go to the app as well.
      if (msg.t !== "error") this.onMessage(msg, true);
      return;
    }
    this.onMessage(msg, false);
  }

  /** Sends a request and resolves with its reply (rejects with RequestError). */
  request(msg) {
    if (!this.ws || !this.welcomed) {
      return Promise.reject(new RequestError("offline", "not connected"));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new RequestError("timeout", "no reply"));
      }, REQUEST_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      this.sendRaw({ ...msg, id });
    });
  }

  sendRaw(msg) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(encode(msg));
  }

  get online() {
    return !!this.ws && this.welcomed;
  }

  startHeartbeat() {
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      if (!this.online) return;
      this.pingSentAt = Date.now();
      this.sendRaw({ t: "ping" });
      clearTimeout(this.pongTimer);
      // No pong: the connection is dead even if the socket has not noticed yet.
      this.pongTimer = setTimeout(() => this.ws && this.ws.close(), PONG_TIMEOUT_MS);
    }, HEARTBEAT_MS);
  }

  /** The socket is gone: no heartbeat, and every request waiting for a reply fails. */
  stopped() {
    clearInterval(this.heartbeat);
    clearTimeout(this.pongTimer);
    this.welcomed = false;
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(new RequestError("disconnected", "connection lost"));
    }
    this.pending.clear();
  }

  dropped() {
    const wasWelcomed = this.welcomed;
    this.stopped();
    if (this.held) return;
    if (this.deliberate && wasWelcomed) {
      this.open();
      return;
    }
    if (!wasWelcomed) this.failures += 1;
    this.scheduleRetry();
  }

  scheduleRetry() {
    const delay = BACKOFF_MS[Math.min(this.failures, BACKOFF_MS.length - 1)];
    const jittered = Math.round(delay * (0.8 + Math.random() * 0.4));
    if (this.everOnline && this.failures < 2) this.status("lost");
    else this.status("unreachable", jittered);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.open(), jittered);
  }

  retryNow() {
    if (this.ws || this.held) return;
    this.failures = 0;
    this.status(this.everOnline ? "lost" : "connecting");
    this.open();
  }

  /** Closes and reopens at once (to say hello with a new name): no "connection lost". */
  reconnect() {
    this.deliberate = true;
    if (this.ws) this.ws.close();
    else this.retryNow();
  }

  status(value, retryInMs = 0) {
    if (this.deliberate && value === "lost") return;
    this.onStatus(value, retryInMs);
  }
}
