// The application: one connection, the room the page is in, and this racer's game.
// Server messages update `state`; the views render from it. The server decides everything
// (moves, times, results); the page only asks and displays.
import { Board } from "./board.js";
import { h, mount } from "./dom.js";
import { getLanguage, messageFor, onLanguageChange, setLanguage, t } from "./i18n.js";
import { Connection, RequestError, socketUrl } from "./net.js";
import * as views from "./views.js";

const STORAGE = {
  token: "crescent.token",
  name: "crescent.name",
  lang: "crescent.lang",
};

export function load(key) {
  try {
    return localStorage.getItem(STORAGE[key]);
  } catch {
    return null;
  }
}

export function save(key, value) {
  try {
    if (value == null) localStorage.removeItem(STORAGE[key]);
    else localStorage.setItem(STORAGE[key], value);
  } catch {
    /* private mode: the page still works, it just forgets */
  }
}

/** The join code in a /r/<code> path, upper case, or null. */
export function codeFromPath(pathname) {
  const match = /^\/r\/([23456789A-Za-z]{6})\/?$/.exec(pathname);
  return match ? match[1].toUpperCase() : null;
}

export class App {
  constructor(root) {
    this.root = root;
    this.state = {
      net: "connecting",
      player: null,
      roomCode: codeFromPath(location.pathname),
      room: null, // the room snapshot's `room`, kept current with events
      you: null, // {role, game, last_seq}
      progress: new Map(), // player id → PROGRESS
      view: null,
      error: null, // a message for the lobby / room screen
      joinAs: "racer",
      wantsName: false,
      resultsHidden: false,
      notice: null,
    };
    this.actions = { queue: [], inflight: null, lastAcked: 0 };
    this.viewRound = 0;
    this.board = new Board({ onAction: (action) => this.act(action) });
    this.conn = new Connection({
      url: socketUrl(location),
      hello: () => ({ token: load("token"), name: this.pendingName || load("name") }),
      onWelcome: (msg) => this.welcome(msg),
      onMessage: (msg, isReply) => this.message(msg, isReply),
      onStatus: (status, retryInMs) => this.netStatus(status, retryInMs),
      onHelloError: (msg) => this.helloError(msg),
    });
    onLanguageChange(() => this.render());
    window.addEventListener("popstate", () => this.route(location.pathname));
    document.addEventListener("keydown", (e) => this.keydown(e));
    setInterval(() => this.tick(), 250);
  }

  start() {
    this.layout();
    this.render();
    this.conn.start();
  }

  layout() {
    this.topbar = h("header", { class: "topbar" });
    this.banner = h("div", { class: "banner", role: "status", "aria-live": "polite" });
    this.main = h("main", { class: "main" });
    this.toastEl = h("div", { class: "toast", role: "alert", "aria-live": "assertive", "data-testid": "toast" });
    this.overlay = h("div", { class: "overlay-root" });
    mount(this.root, this.topbar, this.banner, this.main, this.toastEl, this.overlay);
  }

  // --- connection ---------------------------------------------------------------------------

  netStatus(status, retryInMs) {
    const wasOnline = this.state.net === "online";
    this.state.net = status;
    this.retryAt = Date.now() + retryInMs;
    if (wasOnline && status !== "online") this.board.setBusy(false);
    this.renderBanner();
  }

  helloError(msg) {
    // A forged, damaged or expired token: forget it and come back as a new guest.
    if (msg.code === "bad_token" || msg.code === "token_expired") {
      save("token", null);
      const name = load("name");
      return name ? { name } : {};
    }
    if (msg.code === "bad_name") {
      save("name", null);
      return {};
    }
    this.state.error = messageFor("error", msg);
    this.render();
    return null;
  }

  async welcome(msg) {
    save("token", msg.token);
    this.pendingName = null;
    this.state.player = msg.player;
    if (this.afterWelcome) {
      const next = this.afterWelcome;
      this.afterWelcome = null;
      next();
    } else if (this.state.roomCode && (this.state.room || !this.state.wantsName)) {
      await this.joinRoom(this.state.roomCode, this.state.joinAs);
    }
    this.render();
  }

  /** Rename: say hello again on a fresh connection with the token and the new name. */
  rename(name, then) {
    save("name", name);
    this.pendingName = name;
    this.afterWelcome = then;
    this.conn.reconnect();
  }

  // --- server messages ----------------------------------------------------------------------

  message(msg, isReply) {
    switch (msg.t) {
      case "room":
        this.applySnapshot(msg);
        break;
      case "event":
        this.applyEvent(msg);
        break;
      case "events":
        for (const ev of msg.events || []) this.applyEvent(ev);
        break;
      case "progress":
        this.applyProgress(msg);
        break;
      case "ack":
      case "refused":
        if (!isReply) this.actionReply(msg); // replies are handled by act()
        break;
      case "error":
        if (msg.code === "rate_limited") this.toast(messageFor("error", msg));
        break;
      default:
        break;
    }
  }

  applySnapshot(msg) {
    const room = msg.room;
    if (!room || (this.state.roomCode && room.code !== this.state.roomCode)) return;
    const you = msg.you || { role: "spectator", game: null, last_seq: 0 };
    const sameRound = this.state.room && this.state.room.round === room.round;
    this.state.room = room;
    this.state.you = you;
    this.state.progress = new Map();
    for (const p of room.players || []) if (p.progress) this.state.progress.set(p.id, p.progress);
    if (!sameRound) this.resetActions();
    this.actions.lastAcked = Math.max(you.last_seq || 0, sameRound ? this.actions.lastAcked : 0);
    if (you.game) this.setView(you.game, room.round);
    else if (!sameRound) this.setView(null, room.round);
    if (room.phase === "finished" && !sameRound) this.state.resultsHidden = false;
    this.render();
    // An action whose reply was lost with the connection: the snapshot's last_seq says
    // whether it was stored; if not, it goes out again with the same seq.
    const inflight = this.actions.inflight;
    if (inflight && inflight.lost) {
      if (inflight.seq > (you.last_seq || 0)) {
        this.sendInflight();
        return;
      }
      this.actions.inflight = null;
      this.board.setBusy(false);
    }
    this.pump(); // taps made while offline went into the queue
  }

  applyEvent(ev) {
    const room = this.state.room;
    if (!room || ev.room !== room.code || ev.ver <= room.ver) return;
    if (ev.ver > room.ver + 1) {
      // Remember how far the room has got: a sync already under way may have been
      // answered before this event, and must then go again.
      this.gapSeen = Math.max(this.gapSeen || 0, ev.ver);
      this.sync();
      return;
    }
    room.ver = ev.ver;
    const players = room.players;
    switch (ev.kind) {
      case "joined": {
        const p = ev.player;
        const existing = players.find((x) => x.id === p.id);
        if (existing) Object.assign(existing, p, { connected: true });
        else players.push({ ready: false, connected: true, progress: null, ...p });
        break;
      }
      case "left": {
        room.players = players.filter((x) => x.id !== ev.player);
        break;
      }
      case "ready": {
        const p = players.find((x) => x.id === ev.player);
        if (p) p.ready = ev.ready;
        break;
      }
      case "connected": {
        const p = players.find((x) => x.id === ev.player);
        if (p) p.connected = ev.connected;
        break;
      }
      case "host":
        room.host = ev.player;
        break;
      case "countdown":
        room.phase = "countdown";
        room.start_at = ev.start_at;
        room.deadline = ev.deadline;
        room.round = ev.round ?? room.round;
        room.results = null;
        this.state.progress = new Map();
        this.resetActions();
        this.setView(null, room.round);
        break;
      case "finished":
        room.phase = "finished";
        room.results = ev.results;
        room.deal = ev.deal;
        this.state.resultsHidden = false;
        break;
      case "rematch":
        room.phase = ev.phase || "waiting";
        room.round = ev.round;
        room.results = null;
        room.deal = null;
        room.start_at = null;
        room.deadline = null;
        for (const p of players) p.ready = false;
        this.state.progress = new Map();
        this.resetActions();
        this.setView(null, room.round);
        break;
      default:
        break;
    }
    this.render();
  }

  applyProgress(msg) {
    const room = this.state.room;
    if (!room || msg.room !== room.code || msg.round !== room.round) return;
    for (const racer of msg.racers || []) this.state.progress.set(racer.player, racer);
    views.updateRacePanel(this);
  }

  async sync() {
    const room = this.state.room;
    if (!room || this.syncing) return;
    this.syncing = true;
    try {
      for (let tries = 0; tries < 5; tries++) {
        await this.conn.request({ t: "sync", room: room.code, since: room.ver });
        if (this.state.room !== room || room.ver >= (this.gapSeen || 0)) break;
      }
    } catch {
      /* the next event or reconnect tries again */
    } finally {
      this.syncing = false;
    }
  }

  // --- rooms --------------------------------------------------------------------------------

  route(pathname) {
    const code = codeFromPath(pathname);
    this.state.roomCode = code;
    this.state.room = null;
    this.state.you = null;
    this.state.error = null;
    this.setView(null, 0);
    this.resetActions();
    if (code && this.conn.online) this.joinRoom(code, "racer");
    this.render();
  }

  go(pathname) {
    if (location.pathname !== pathname) history.pushState({}, "", pathname);
    this.route(pathname);
  }

  async createRoom(options) {
    this.state.error = null;
    try {
      const reply = await this.conn.request({ t: "create_room", ...options });
      history.pushState({}, "", reply.room.link || `/r/${reply.room.code}`);
      this.state.roomCode = reply.room.code;
      this.applySnapshot(reply);
    } catch (err) {
      this.showError(err);
    }
  }

  async joinRoom(code, as = "racer") {
    this.state.error = null;
    this.state.joinAs = as;
    try {
      await this.conn.request({ t: "join", room: code, as });
    } catch (err) {
      if (as === "racer" && (err.code === "room_full" || err.code === "already_started")) {
        this.state.notice = t("room.spectatorJoined");
        return this.joinRoom(code, "spectator");
      }
      this.showError(err);
    }
  }

  async roomRequest(msg) {
    const room = this.state.room;
    if (!room) return;
    try {
      await this.conn.request({ ...msg, room: room.code });
    } catch (err) {
      this.showError(err);
    }
  }

  showError(err) {
    if (err instanceof RequestError && err.reply) this.state.error = messageFor("error", err.reply);
    else if (err && err.code === "offline") this.state.error = t("net.lost");
    else this.state.error = String(err && err.message);
    this.render();
  }

  leave() {
    const room = this.state.room;
    if (room) this.conn.request({ t: "leave", room: room.code }).catch(() => {});
    this.go("/");
  }

  // --- actions in the race ------------------------------------------------------------------

  resetActions() {
    this.actions = { queue: [], inflight: null, lastAcked: 0 };
    this.board.setBusy(false);
  }

  setView(view, round) {
    this.state.view = view;
    this.viewRound = round;
    const room = this.state.room;
    this.board.setView(view, room ? room.variant : "N");
    if (!view) this.board.cancel();
  }

  /** Queue an action; one is in flight at a time, each with the next seq. */
  act(action) {
    const room = this.state.room;
    if (!room || !this.state.view) return;
    this.actions.queue.push(action);
    this.pump();
  }

  pump() {
    if (this.actions.inflight || this.actions.queue.length === 0 || !this.conn.online) return;
    const action = this.actions.queue.shift();
    this.actions.inflight = { action, seq: this.actions.lastAcked + 1, round: this.state.room.round };
    this.sendInflight();
  }

  async sendInflight() {
    const inflight = this.actions.inflight;
    const room = this.state.room;
    if (!inflight || !room) return;
    if (!this.conn.online) {
      inflight.lost = true; // goes out after the reconnect's snapshot
      return;
    }
    inflight.lost = false;
    this.board.setBusy(true);
    try {
      const reply = await this.conn.request({ t: "act", room: room.code, seq: inflight.seq, action: inflight.action });
      this.actionReply(reply);
    } catch (err) {
      if (err.code === "disconnected" || err.code === "offline" || err.code === "timeout") {
        inflight.lost = true; // resent after the reconnect, if it was not stored
        // No reply for that long: treat the connection as dead and start over.
        if (err.code === "timeout") this.conn.reconnect();
        return;
      }
      if (this.actions.inflight === inflight) this.actions.inflight = null;
      this.actions.queue = [];
      this.board.setBusy(false);
      this.toast(err.reply ? messageFor("error", err.reply) : String(err.message));
    }
  }

  actionReply(msg) {
    const inflight = this.actions.inflight;
    if (!inflight || msg.seq !== inflight.seq) {
      if (msg.t === "ack" && msg.view && msg.seq >= this.actions.lastAcked) {
        this.actions.lastAcked = msg.seq;
        this.setView(msg.view, this.viewRound);
      }
      return;
    }
    this.actions.inflight = null;
    this.board.setBusy(false);
    if (msg.t === "ack") {
      this.actions.lastAcked = Math.max(this.actions.lastAcked, msg.seq);
      if (msg.view) {
        const flight = this.board.measureMove(inflight.action);
        this.setView(msg.view, this.viewRound);
        this.board.fly(flight);
      }
      this.hideToast();
      views.updateHud(this);
      this.pump();
    } else {
      // A refused action does not use up its seq; what was queued after it is dropped,
      // since it was planned on a board that did not happen.
      this.actions.queue = [];
      this.toast(messageFor("refuse", msg), "refused");
      this.board.shake(inflight.action);
    }
  }

  redeal() {
    if (this.phase() === "racing" && this.state.view && this.state.view.status === "playing") this.act("redeal");
  }

  undo() {
    const status = this.state.view && this.state.view.status;
    if (this.phase() === "racing" && (status === "playing" || status === "locked")) this.act("undo");
  }

  resign() {
    if (this.phase() === "racing" && this.state.view && this.state.view.status === "playing" && confirm(t("game.resignConfirm"))) this.act("resign");
  }

  keydown(event) {
    const tag = (event.target && event.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (!this.state.view) return;
    const key = event.key.toLowerCase();
    if (key === "r") {
      event.preventDefault();
      this.redeal();
    } else if (key === "u") {
      event.preventDefault();
      this.undo();
    } else if (key === "escape") {
      this.board.cancel();
    } else if (key.startsWith("arrow") && this.board.focusNext(key === "arrowright" || key === "arrowdown" ? 1 : -1)) {
      event.preventDefault();
    }
  }

  // --- time ---------------------------------------------------------------------------------

  /** The room's phase now: a countdown turns into the race at start_at (server clock). */
  phase() {
    const room = this.state.room;
    if (!room) return null;
    if (room.phase === "countdown" && room.start_at && this.conn.serverNow() >= room.start_at) return "racing";
    return room.phase;
  }

  tick() {
    const room = this.state.room;
    if (room) {
      const phase = this.phase();
      if (phase !== this.renderedPhase) this.render();
      // At the start the game is ours to see: ask for a fresh snapshot carrying `you.game`.
      if (phase === "racing" && !this.state.view && this.state.you && this.state.you.role === "racer" && this.conn.online) {
        const now = Date.now();
        if (!this.askingView && (!this.viewAskedAt || now - this.viewAskedAt > 400)) {
          this.viewAskedAt = now;
          this.askingView = true;
          this.joinRoom(room.code, "racer").finally(() => (this.askingView = false));
        }
      }
    }
    views.tick(this);
    if (this.state.net === "unreachable") this.renderBanner();
  }

  // --- rendering ----------------------------------------------------------------------------

  toast(text, kind = "info") {
    this.toastEl.textContent = text;
    this.toastEl.className = `toast show ${kind}`;
    clearTimeout(this.toastTimer);
    this.toastTimer = setTimeout(() => this.hideToast(), 4000);
  }

  hideToast() {
    this.toastEl.className = "toast";
  }

  renderBanner() {
    views.renderBanner(this);
  }

  render() {
    this.renderedPhase = this.phase();
    const room = this.state.room;
    document.title = room ? `${room.code} · ${t("app.title")}` : t("app.title");
    views.renderTopbar(this);
    this.renderBanner();
    views.renderMain(this);
  }

  setLanguage(code) {
    save("lang", code);
    setLanguage(code);
  }

  get language() {
    return getLanguage();
  }
}
