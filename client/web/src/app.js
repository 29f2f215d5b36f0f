// The application: one connection, the room the page is in, and this racer's game.
// Server messages update `state`; the views render from it. The server decides everything
// (moves, times, results); the page only asks and displays.
import { Board } from "./board.js";
import { DailyTab } from "./daily.js";
import { cardName, cardText } from "./cards.js";
import { focusByIdentity, focusIdentity, howToPlayBody, modalOpen, openDialog } from "./dialogs.js";
import { h, mount } from "./dom.js";
import { celebrate, playSound } from "./effects.js";
import { formatDuration, getLanguage, messageFor, onLanguageChange, setLanguage, t } from "./i18n.js";
import { placeState, suggestMove } from "./rules.js";
import { Connection, RequestError, socketUrl } from "./net.js";
import { TournamentTab, tournamentCodeFromPath } from "./tournament.js";
import * as views from "./views.js";

const STORAGE = {
  token: "crescent.token",
  name: "crescent.name",
  lang: "crescent.lang",
  sound: "crescent.sound",
  noRedealConfirm: "crescent.noRedealConfirm",
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

/** "p3-ad" → "p3-ad" reversed ("ad-p3"), the move that would take it back. */
function reverseMove(action) {
  const match = /^([a-z]+\d*)-([a-z]+\d*)$/.exec(action || "");
  return match ? `${match[2]}-${match[1]}` : null;
}

/** A place as the player reads it: "pile 4", "ascending hearts". */
function placeName(place) {
  if (place[0] === "p") return t("game.pile", { n: place.slice(1) });
  const suit = t(`suit.${place[1].toUpperCase()}`);
  return t(place[0] === "a" ? "game.foundationUp" : "game.foundationDown", { suit });
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
      dailyOpen: location.pathname === "/daily",
      tournamentCode: tournamentCodeFromPath(location.pathname),
      tCreate: false, // the lobby shows the tournament form
    };
    this.daily = new DailyTab(this);
    this.tournament = new TournamentTab(this);
    if (this.state.tournamentCode) this.tournament.open(this.state.tournamentCode);
    this.actions = { queue: [], inflight: null, lastAcked: 0 };
    this.viewRound = 0;
    this.board = new Board({
      onAction: (action) => this.act(action),
      onRefuse: (code) => this.toast(messageFor("refuse", { code }), "refused"),
    });
    /** Race news already told (round:player:status), so a resync never tells it twice. */
    this.told = new Set();
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
    // Where the player last was (by identity: the board and the HUD are redrawn), so a
    // redraw never leaves focus on <body>; see keepFocus.
    document.addEventListener("focusin", (e) => {
      const target = /** @type {HTMLElement} */ (e.target);
      this.lastFocused = target;
      this.lastFocusedId = focusIdentity(target);
    });
    setInterval(() => this.tick(), 250);
  }

  start() {
    this.layout();
    this.render();
    this.conn.start();
  }

  layout() {
    this.topbar = h("header", { class: "topbar" });
    this.banner = h("div", { class: "banner" });
    this.main = h("main", { class: "main" });
    this.toastEl = h("div", { class: "toast", role: "alert", "aria-live": "assertive", "data-testid": "toast" });
    // Race news (another racer won or finished, time's up), shown at the top; screen
    // readers hear it from the announcer.
    this.newsEl = h("div", { class: "news", "data-testid": "news" });
    // The page's one polite live region: each move, race news, the connection (sr-only).
    this.announcer = h("div", { class: "sr-only", role: "status", "aria-live": "polite", "data-testid": "announcer" });
    this.overlay = h("div", { class: "overlay-root" });
    this.modalRoot = h("div", { class: "modal-root" });
    this.effectsRoot = h("div", { class: "effects-root" });
    mount(this.root, this.topbar, this.banner, this.main, this.toastEl, this.newsEl, this.announcer, this.overlay, this.modalRoot, this.effectsRoot);
  }

  // --- connection ---------------------------------------------------------------------------

  netStatus(status, retryInMs) {
    const wasOnline = this.state.net === "online";
    this.state.net = status;
    this.retryAt = Date.now() + retryInMs;
    if (wasOnline && status !== "online") this.board.setBusy(false);
    if (status === "lost" && wasOnline) this.announce(t("net.lost"));
    else if (status === "online" && this.saidLost) this.announce(t("say.online"));
    this.saidLost = status !== "online" && (wasOnline || this.saidLost);
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
    } else if (this.state.tournamentCode) {
      // A round's board stays: back into its room, then the tournament's pushes again.
      if (this.state.roomCode) this.tournament.rejoinRound();
      await this.tournament.load();
    } else if (this.state.roomCode && (this.state.room || !this.state.wantsName)) {
      await this.joinRoom(this.state.roomCode, this.state.joinAs);
    } else if (this.state.dailyOpen) {
      this.daily.load();
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
      case "daily_board":
        if (!isReply) this.daily.onBoard(msg);
        break;
      case "tournament":
        this.tournament.onSnapshot(msg);
        break;
      case "t_live":
        this.tournament.onLive(msg);
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
        this.raceFinished(ev.results);
        break;
      case "rematch":
        room.phase = ev.phase || "waiting";
        room.round = ev.round;
        room.results = null;
        room.deal = null;
        room.deal_known = !!ev.deal_known;
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
    for (const racer of msg.racers || []) {
      const before = this.state.progress.get(racer.player);
      if ((!before || before.status === "playing") && racer.status !== "playing") this.racerFinished(racer);
      this.state.progress.set(racer.player, racer);
    }
    views.updateRacePanel(this);
  }

  /** Tell everyone in the room when another racer wins or is done ("Ada won in 3:02"). */
  racerFinished(racer) {
    const room = this.state.room;
    const me = this.state.player && this.state.player.id;
    if (!room || racer.player === me || racer.status === "disconnected") return;
    const key = `${room.round}:${racer.player}:${racer.status}`;
    if (this.told.has(key)) return;
    this.told.add(key);
    const who = room.players.find((p) => p.id === racer.player);
    const name = who ? who.name : "?";
    const time = formatDuration(racer.finished_ms);
    const text =
      racer.status === "won"
        ? t("news.won", { name, t: time })
        : racer.status === "timeout"
          ? t("news.timeout", { name })
          : t(`news.${racer.status}`, { name, n: racer.foundation });
    this.news(text);
  }

  /** The race is over: say why when the clock ended it. */
  raceFinished(results) {
    const room = this.state.room;
    if (!room) return;
    const key = `${room.round}:end`;
    if (this.told.has(key)) return;
    this.told.add(key);
    const timedOut = (results || []).some((r) => r.status === "playing" || r.status === "timeout");
    const first = (results || [])[0];
    if (timedOut) this.news(t("news.timesUp"));
    else if (first && first.status === "won" && room.seats > 1) this.news(t("news.winner", { name: first.name }));
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
    const daily = !code && pathname === "/daily";
    const tcode = tournamentCodeFromPath(pathname);
    if (this.state.dailyOpen && !daily) this.daily.unwatch();
    this.state.dailyOpen = daily;
    if (daily && this.conn.online) this.daily.load();
    if (this.state.tournamentCode && this.state.tournamentCode !== tcode) this.tournament.close();
    const newTournament = !!tcode && tcode !== this.tournament.code;
    this.state.tournamentCode = tcode;
    this.state.tCreate = false;
    if (tcode) this.tournament.open(tcode);
    if (newTournament) this.tournament.intent = this.pendingIntent || null;
    this.pendingIntent = null;
    if (newTournament && this.conn.online) this.tournament.load();
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

  /** From the lobby: a tournament by its code, to play in (`player`) or to watch. */
  openTournament(code, as) {
    this.state.error = null;
    this.tournament.close();
    this.pendingIntent = as;
    this.go(`/t/${code}`);
  }

  /** The name this browser chose (a guest name the server made up is not one). */
  localName() {
    return load("name") || "";
  }

  updateRacePanel() {
    views.updateRacePanel(this);
  }

  /** Is the room on the screen a round of the tournament this page shows? */
  get tournamentRound() {
    const room = this.state.room;
    return !!this.state.tournamentCode && !!room && this.tournament.ownsRoom(room.code);
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

  /** Solo practice: a room of one seat, readied at once (the race starts by itself). */
  async playAlone(options) {
    await this.createRoom({ ...options, seats: 1 });
    if (this.state.room && this.state.room.seats === 1) await this.roomRequest({ t: "ready", ready: true });
  }

  /** A new round; alone, it starts at once. */
  async rematch() {
    await this.roomRequest({ t: "rematch" });
    if (this.practice && this.state.room.phase === "waiting") await this.roomRequest({ t: "ready", ready: true });
  }

  /** A room of one seat is a solo practice game: hints and auto-finish are allowed
   * (not in a daily challenge room, sealed until the day is revealed). */
  get practice() {
    return !!this.state.room && this.state.room.seats === 1 && !this.dailyRoom && !this.tournamentRound;
  }

  get dailyRoom() {
    return !!this.state.room && this.state.room.sealed_until != null;
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
    if (this.tournamentRound) return this.tournament.backToTournament();
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
    const before = this.state.view;
    if (view && view.status === "won" && before && before.status === "playing" && this.viewRound === round) {
      celebrate(this.effectsRoot);
      this.sound("win");
    }
    this.state.view = view;
    this.finishing = false; // the server says again, with the next hint
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
      const said = this.moveWords(inflight.action, msg.view);
      if (msg.view) {
        const flight = this.board.measureMove(inflight.action);
        this.setView(msg.view, this.viewRound);
        this.board.fly(flight);
      }
      if (said) this.announce(said);
      if (this.toastEl.classList.contains("refused")) this.hideToast();
      this.sound("move");
      this.lastPlayed = inflight.action;
      views.updateHud(this);
      this.pump();
      if (this.autoFinishing) this.autoFinishStep();
    } else {
      // A refused action does not use up its seq; what was queued after it is dropped,
      // since it was planned on a board that did not happen.
      this.actions.queue = [];
      const dropped = this.board.dropTaps();
      this.toast(messageFor("refuse", msg) + (dropped ? ` ${t("game.tapsDropped", { n: dropped })}` : ""), "refused");
      this.board.shake(inflight.action);
      this.sound("refuse");
      this.autoFinishing = false;
    }
  }

  /** A played action in words for the announcer ("Seven of hearts to pile 4"), from the
   * board before it (the card) and the view after it (redeals left). */
  moveWords(action, after) {
    if (action === "undo") return t("say.undone");
    if (action === "redeal") {
      const left = after ? after.redeals_left : 0;
      return left ? t("say.redealt", { n: left }) : t("say.redealtLast");
    }
    if (action === "resign") return null;
    const match = /^([a-z]+\d*)-([a-z]+\d*)$/.exec(action || "");
    const top = match && this.state.view && (placeState(this.state.view, match[1]) || {}).top;
    if (!match || !top) return null;
    const to = match[2];
    const target =
      to[0] === "p"
        ? t("say.toPile", { n: to.slice(1) })
        : t(to[0] === "a" ? "say.toFoundationUp" : "say.toFoundationDown", { suit: t(`suit.${to[1].toUpperCase()}`) });
    return t("say.move", { card: cardName(top), to: target });
  }

  /** Say something to screen readers through the page's one polite live region. Each
   * message is a line of its own (a repeat is announced again); old lines go. */
  announce(text) {
    const line = h("p", {}, text);
    this.announcer.append(line);
    while (this.announcer.childElementCount > 3) this.announcer.firstElementChild?.remove();
    setTimeout(() => line.remove(), 10000);
  }

  /**
   * Focus is never left on <body> by a redraw: the element the player was on is found
   * again by its identity (a place, a button's test id); when it is gone or cannot take
   * focus (a button now disabled), the board's place the player was at (or pile 1), else
   * the screen's first heading. Never while a dialog holds focus, never over an element
   * the player chose (only when what had focus left the page).
   */
  keepFocus() {
    if (modalOpen()) return;
    const active = document.activeElement;
    // The screen's heading held focus only until the board came (the countdown).
    if (active && active === this.fallbackFocus && this.state.view && this.board.el.isConnected) {
      this.fallbackFocus = null;
      this.board.focusPlace();
      return;
    }
    if (active && active !== document.body && active.isConnected) return;
    if (!this.lastFocused) return; // nothing had focus yet: the browser's own start
    if (this.lastFocused.isConnected && this.lastFocused !== document.body) return; // the player left it
    if (focusByIdentity(this.lastFocusedId)) return;
    if (this.state.view && this.board.el.isConnected && this.board.focusPlace()) return;
    const heading = /** @type {HTMLElement|null} */ (this.main.querySelector("h1, h2"));
    if (heading) {
      heading.setAttribute("tabindex", "-1");
      heading.focus({ preventScroll: true });
      this.fallbackFocus = heading;
    }
  }

  scheduleKeepFocus() {
    if (this.keepFocusQueued) return;
    this.keepFocusQueued = true;
    queueMicrotask(() => {
      this.keepFocusQueued = false;
      this.keepFocus();
    });
  }

  /** A redeal cannot be undone: the page asks first, unless told not to ask again. */
  async redeal() {
    if (!this.canPlay() || this.modalOpen) return;
    if (load("noRedealConfirm") !== "1") {
      const answer = await this.dialog({
        title: t("confirm.redealTitle"),
        body: [h("p", {}, t("confirm.redealText"))],
        checkbox: t("confirm.dontAsk"),
        testid: "confirm-redeal",
        actions: [
          { label: t("game.cancel"), value: "no", kind: "ghost", testid: "confirm-no" },
          { label: t("game.redeal"), value: "yes", kind: "gold", testid: "confirm-yes" },
        ],
      });
      if (answer.value !== "yes") return;
      if (answer.checked) save("noRedealConfirm", "1");
    }
    if (this.canPlay()) this.act("redeal");
  }

  canPlay() {
    return this.phase() === "racing" && !!this.state.view && this.state.view.status === "playing";
  }

  /** @param {Parameters<typeof openDialog>[1]} options */
  async dialog(options) {
    this.modalOpen = true;
    try {
      return await openDialog(this.modalRoot, options);
    } finally {
      this.modalOpen = false;
      this.scheduleKeepFocus();
    }
  }

  showHowTo() {
    const closed = this.dialog({
      title: t("help.title"),
      body: howToPlayBody(),
      testid: "how-to",
      actions: [{ label: t("help.close"), value: "ok", kind: "primary", testid: "close-how-to" }],
    });
    // The dialog is mounted by now and focusing its Close button (at the bottom) scrolled
    // it there: a reader starts at the top, with the goal.
    const box = this.modalRoot.querySelector('[data-testid="how-to"]');
    if (box) box.scrollTop = 0;
    return closed;
  }

  toggleSound() {
    const on = load("sound") !== "1";
    save("sound", on ? "1" : null);
    if (on) this.sound("toast");
    views.renderTopbar(this);
  }

  get soundOn() {
    return load("sound") === "1";
  }

  /** @param {"move"|"refuse"|"win"|"toast"} kind */
  sound(kind) {
    if (this.soundOn) playSound(kind);
  }

  // --- practice: hints and auto-finish (solo rooms only; the server refuses them in races) ---

  async hint() {
    if (!this.practice || !this.canPlay()) return;
    const room = this.state.room;
    let action;
    let finishing = false;
    try {
      const reply = await this.conn.request({ t: "hint", room: room.code });
      action = reply.action ?? null;
      finishing = !!reply.finishing;
    } catch (err) {
      // No solver on this server yet (unknown_type): a move that makes progress, found
      // from the cards on the table.
      if (!(err instanceof RequestError) || !err.reply) return;
      action = suggestMove(this.state.view, room.variant, reverseMove(this.lastPlayed));
    }
    this.finishing = finishing;
    views.updateHud(this);
    this.showHint(action);
  }

  showHint(action) {
    const view = this.state.view;
    if (!action) return this.toast(t("hint.none"));
    if (action === "redeal") return this.toast(t("hint.redeal"));
    const [from, to] = action.split("-");
    this.board.hint(action);
    this.toast(t("hint.move", { card: cardText(placeState(view, from).top), from: placeName(from), to: placeName(to) }), "hint");
  }

  /** The results' "Was it winnable?": the solver's answer for the revealed deal. */
  async askWinnable(button, out) {
    const room = this.state.room;
    if (!room) return;
    button.disabled = true;
    out.textContent = t("winnable.asking");
    try {
      const reply = await this.conn.request({ t: "winnable", room: room.code });
      out.textContent =
        reply.result === "won" ? t("winnable.won", { n: (reply.line || []).length }) : t(`winnable.${reply.result === "impossible" ? "impossible" : "unknown"}`);
    } catch (err) {
      out.textContent = err instanceof RequestError && err.reply ? messageFor("error", err.reply) : t("net.lost");
      button.disabled = false;
    }
    this.announce(out.textContent || "");
  }

  /** Every remaining card can go home by foundation moves alone: play them one by one. */
  autoFinish() {
    if (!this.practice || !this.finishing || !this.canPlay()) return;
    this.autoFinishing = true;
    this.autoFinishStep();
  }

  async autoFinishStep() {
    if (!this.autoFinishing || !this.canPlay() || this.actions.inflight) {
      if (!this.canPlay()) this.autoFinishing = false;
      return;
    }
    try {
      const reply = await this.conn.request({ t: "hint", room: this.state.room.code });
      if (!reply.action || !reply.finishing) {
        this.autoFinishing = false;
        return;
      }
      this.act(reply.action);
    } catch {
      this.autoFinishing = false;
    }
  }

  undo() {
    const status = this.state.view && this.state.view.status;
    if (this.phase() === "racing" && (status === "playing" || status === "locked")) this.act("undo");
  }

  async resign() {
    if (!this.canPlay() || this.modalOpen) return;
    // A practice game is nobody's race, and the daily ranked attempt is one try of the
    // day: giving either up says so in its own words.
    const words = this.practice
      ? { title: "practice.giveUpConfirm", text: "practice.giveUpText", yes: "practice.giveUp" }
      : this.dailyRoom && (await this.daily.isRankedAttempt(this.state.room.code))
        ? { title: "daily.giveUpConfirm", text: "daily.giveUpText", yes: "daily.giveUp" }
        : { title: "game.resignConfirm", text: "confirm.resignText", yes: "game.resign" };
    const answer = await this.dialog({
      title: t(words.title),
      body: [h("p", {}, t(words.text))],
      testid: "confirm-resign",
      actions: [
        { label: t("game.cancel"), value: "no", kind: "ghost", testid: "confirm-no" },
        { label: t(words.yes), value: "yes", kind: "danger", testid: "confirm-yes" },
      ],
    });
    if (answer.value === "yes" && this.canPlay()) this.act("resign");
  }

  /** The host ends the race for everyone (after confirming): ranked as at a deadline. */
  async endRace() {
    if (this.modalOpen || !this.canEndRace()) return;
    const answer = await this.dialog({
      title: t("race.endConfirm"),
      body: [h("p", {}, t("confirm.endRaceText"))],
      testid: "confirm-end-race",
      actions: [
        { label: t("game.cancel"), value: "no", kind: "ghost", testid: "confirm-no" },
        { label: t("race.end"), value: "yes", kind: "danger", testid: "confirm-yes" },
      ],
    });
    if (answer.value === "yes" && this.canEndRace()) await this.roomRequest({ t: "end_race" });
  }

  /** Only the host, during a race with other seats (a practice game has resign). */
  canEndRace() {
    const { room, player } = this.state;
    return !!room && !!player && room.host === player.id && !this.practice && this.phase() === "racing";
  }

  /**
   * The keyboard (docs/browser.md, "Keyboard"): arrows walk the places (while a card is
   * picked up, only the places that take it), Enter/Space taps, F sends the focused card
   * home, 1–9 pick the n-th place that takes the picked-up card, R redeal, U undo,
   * H hint (practice), Esc cancels.
   */
  keydown(event) {
    const tag = (event.target && event.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (!this.state.view || this.modalOpen || modalOpen()) return;
    const key = event.key.toLowerCase();
    if (key === "r") {
      event.preventDefault();
      this.redeal();
    } else if (key === "u") {
      event.preventDefault();
      this.undo();
    } else if (key === "h" && this.practice) {
      event.preventDefault();
      this.hint();
    } else if (key === "f") {
      event.preventDefault();
      this.board.sendHome();
    } else if (/^[1-9]$/.test(key) && this.board.pickTarget(Number(key))) {
      event.preventDefault();
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
    if (this.state.tournamentCode && !this.state.room) this.tournament.tick();
    if (this.state.net === "unreachable") this.renderBanner();
  }

  // --- rendering ----------------------------------------------------------------------------

  toast(text, kind = "info") {
    this.toastEl.textContent = text;
    this.toastEl.className = `toast show ${kind}`;
    this.placeToast();
    clearTimeout(this.toastTimer);
    this.toastTimer = setTimeout(() => this.hideToast(), 4000);
  }

  /** On the board the message sits on the felt inside the horseshoe, just above the
   * board's lower edge: the horseshoe is open at the bottom, so it covers no card, and it
   * stays clear of the HUD's buttons wherever the layout puts them. Elsewhere it keeps
   * its place in the stylesheet (bottom centre). */
  placeToast() {
    const style = this.toastEl.style;
    style.left = style.bottom = style.maxWidth = "";
    if (!this.root.classList.contains("race-mode")) return;
    const wrap = this.main.querySelector(".board-wrap");
    const box = (/** @type {string} */ place) => this.main.querySelector(`[data-place="${place}"]`)?.getBoundingClientRect();
    const leftColumn = ["p1", "p2", "p3", "p4"].map(box);
    const rightColumn = ["p13", "p14", "p15", "p16"].map(box);
    if (!wrap || leftColumn.some((r) => !r) || rightColumn.some((r) => !r)) return;
    const left = Math.max(...leftColumn.map((r) => r.right));
    const right = Math.min(...rightColumn.map((r) => r.left));
    const bottom = Math.min(wrap.getBoundingClientRect().bottom, window.innerHeight);
    // The foundations are in the middle: the message stays below them.
    const foundations = [...this.main.querySelectorAll("[data-place]")].filter((el) => !/^p\d/.test(/** @type {HTMLElement} */ (el).dataset.place || ""));
    const top = Math.max(0, ...foundations.map((el) => el.getBoundingClientRect().bottom));
    if (right - left < 120 || bottom - top < 40) return;
    style.left = `${(left + right) / 2}px`;
    style.maxWidth = `${Math.floor(right - left - 8)}px`;
    style.bottom = `${Math.ceil(window.innerHeight - bottom + 6)}px`;
    // Too tall for the room below the foundations: the same words, smaller.
    this.toastEl.classList.toggle("tight", this.toastEl.getBoundingClientRect().height > bottom - top - 12);
  }

  hideToast() {
    this.toastEl.className = "toast";
  }

  /** A message about the board (a hint, a refusal) is gone once the results or the
   * waiting room show: it would cover them and no longer means anything there. */
  dismissToastOnNewScreen() {
    const room = this.state.room;
    const phase = this.phase();
    const screen = !room ? "none" : phase === "waiting" ? "waiting" : phase === "finished" && !this.state.resultsHidden ? "results" : "board";
    if (screen !== this.toastScreen && (screen === "waiting" || screen === "results")) this.hideToast();
    this.toastScreen = screen;
  }

  /** Race news: a line at the top for a few seconds (several in a row stack up). */
  news(text) {
    const line = h("p", { class: "news-line" }, text);
    this.newsEl.append(line);
    this.announce(text);
    this.sound("toast");
    setTimeout(() => line.remove(), 6000);
  }

  renderBanner() {
    views.renderBanner(this);
  }

  render() {
    const phase = this.phase();
    // The start is news too (the countdown's "Go!" is not heard).
    if (phase === "racing" && this.renderedPhase === "countdown") this.announce(t("say.started"));
    this.renderedPhase = phase;
    this.dismissToastOnNewScreen();
    const room = this.state.room;
    const tsnap = this.state.tournamentCode && this.tournament.snap;
    document.title = tsnap ? `${tsnap.name} · ${t("app.title")}` : room ? `${room.code} · ${t("app.title")}` : t("app.title");
    views.renderTopbar(this);
    this.renderBanner();
    views.renderMain(this);
    this.scheduleKeepFocus();
  }

  setLanguage(code) {
    save("lang", code);
    setLanguage(code);
  }

  get language() {
    return getLanguage();
  }
}
