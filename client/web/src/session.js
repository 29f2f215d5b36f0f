// The connection's side of the app: the hello and its errors, the server's messages and
// the room they describe (snapshots, versioned events, progress), race news from them.
import { formatDuration, messageFor, t } from "./i18n.js";
import { load, save } from "./storage.js";
import * as views from "./views.js";

export class Session {
  /** @param {import("./app.js").App} app */
  constructor(app) {
    this.app = app;
    this.pendingName = null; // a new name on its way in the next hello
    this.afterWelcome = null; // what to do once welcomed again (after a rename)
    this.retryAt = 0; // when the connection is tried again (the banner counts down)
    this.saidLost = false;
    this.syncing = false;
    this.gapSeen = 0; // the highest room version seen beyond a gap
    /** Race news already told (round:player:status), so a resync never tells it twice. */
    this.told = new Set();
  }

  // --- connection ---------------------------------------------------------------------------

  netStatus(status, retryInMs) {
    const app = this.app;
    const wasOnline = app.state.net === "online";
    app.state.net = status;
    this.retryAt = Date.now() + retryInMs;
    if (wasOnline && status !== "online") app.board.setBusy(false);
    if (status === "lost" && wasOnline) app.feedback.announce(t("net.lost"));
    else if (status === "online" && this.saidLost) app.feedback.announce(t("say.online"));
    this.saidLost = status !== "online" && (wasOnline || this.saidLost);
    app.renderBanner();
  }

  helloError(msg) {
    // A forged, damaged or expired token: forget it and come back as a new guest.
    if (msg.code === "bad_token" || msg.code === "token_expired") {
      save("token", null);
      this.app.account.forget();
      const name = load("name");
      return name ? { name } : {};
    }
    if (msg.code === "bad_name") {
      save("name", null);
      return {};
    }
    // This device's account session is over: no hello again with that token; the
    // player chooses (sign in, or play on as a new guest).
    if (msg.code === "session_revoked" || msg.code === "sign_in_required") {
      this.app.me.sessionEnded(msg.code);
      return null;
    }
    this.app.state.error = messageFor("error", msg);
    this.app.render();
    return null;
  }

  async welcome(msg) {
    const app = this.app;
    save("token", msg.token);
    this.pendingName = null;
    app.state.player = msg.player;
    app.account.loadConfig(); // not known yet if the first ask got no answer
    if (this.afterWelcome) {
      const next = this.afterWelcome;
      this.afterWelcome = null;
      next();
    } else if (app.state.tournamentCode) {
      // A round's board stays: back into its room, then the tournament's pushes again.
      if (app.state.roomCode) app.tournament.rejoinRound();
      await app.tournament.load();
    } else if (app.state.roomCode && (app.state.room || !app.state.wantsName)) {
      await app.nav.joinRoom(app.state.roomCode, app.state.joinAs);
    } else if (app.state.dailyOpen) {
      app.daily.load();
    }
    app.render();
  }

  /** Rename: say hello again on a fresh connection with the token and the new name. */
  rename(name, then) {
    save("name", name);
    this.pendingName = name;
    this.afterWelcome = then;
    this.app.conn.reconnect();
  }

  // --- server messages ----------------------------------------------------------------------

  message(msg, isReply) {
    const app = this.app;
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
        if (!isReply) app.game.actionReply(msg); // replies are handled by act()
        break;
      case "daily_board":
        if (!isReply) app.daily.onBoard(msg);
        break;
      case "tournament":
        app.tournament.onSnapshot(msg);
        break;
      case "t_live":
        app.tournament.onLive(msg);
        break;
      case "error":
        if (msg.code === "rate_limited") app.feedback.toast(messageFor("error", msg));
        break;
      default:
        break;
    }
  }

  applySnapshot(msg) {
    const app = this.app;
    const room = msg.room;
    if (!room || (app.state.roomCode && room.code !== app.state.roomCode)) return;
    const you = msg.you || { role: "spectator", game: null, last_seq: 0 };
    const sameRound = app.state.room && app.state.room.round === room.round;
    app.state.room = room;
    app.state.you = you;
    app.state.progress = new Map();
    for (const p of room.players || []) if (p.progress) app.state.progress.set(p.id, p.progress);
    if (!sameRound) app.game.resetActions();
    app.game.actions.lastAcked = Math.max(you.last_seq || 0, sameRound ? app.game.actions.lastAcked : 0);
    if (you.game) app.game.setView(you.game, room.round);
    else if (!sameRound) app.game.setView(null, room.round);
    if (room.phase === "finished" && !sameRound) app.state.resultsHidden = false;
    app.render();
    // An action whose reply was lost with the connection: the snapshot's last_seq says
    // whether it was stored; if not, it goes out again with the same seq.
    const inflight = app.game.actions.inflight;
    if (inflight && inflight.lost) {
      if (inflight.seq > (you.last_seq || 0)) {
        app.game.sendInflight();
        return;
      }
      app.game.actions.inflight = null;
      app.board.setBusy(false);
    }
    app.game.pump(); // taps made while offline went into the queue
  }

  applyEvent(ev) {
    const app = this.app;
    const room = app.state.room;
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
        app.state.progress = new Map();
        app.game.resetActions();
        app.game.setView(null, room.round);
        break;
      case "finished":
        room.phase = "finished";
        room.results = ev.results;
        room.deal = ev.deal;
        app.state.resultsHidden = false;
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
        app.state.progress = new Map();
        app.game.resetActions();
        app.game.setView(null, room.round);
        break;
      default:
        break;
    }
    app.render();
  }

  applyProgress(msg) {
    const app = this.app;
    const room = app.state.room;
    if (!room || msg.room !== room.code || msg.round !== room.round) return;
    for (const racer of msg.racers || []) {
      const before = app.state.progress.get(racer.player);
      if ((!before || before.status === "playing") && racer.status !== "playing") this.racerFinished(racer);
      app.state.progress.set(racer.player, racer);
    }
    views.updateRacePanel(this.app);
  }

  /** Tell everyone in the room when another racer wins or is done ("Ada won in 3:02"). */
  racerFinished(racer) {
    const app = this.app;
    const room = app.state.room;
    const me = app.state.player && app.state.player.id;
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
    app.feedback.news(text);
  }

  /** The race is over: say why when the clock ended it. */
  raceFinished(results) {
    const app = this.app;
    const room = app.state.room;
    if (!room) return;
    const key = `${room.round}:end`;
    if (this.told.has(key)) return;
    this.told.add(key);
    const timedOut = (results || []).some((r) => r.status === "playing" || r.status === "timeout");
    const first = (results || [])[0];
    if (timedOut) app.feedback.news(t("news.timesUp"));
    else if (first && first.status === "won" && room.seats > 1) app.feedback.news(t("news.winner", { name: first.name }));
  }

  async sync() {
    const app = this.app;
    const room = app.state.room;
    if (!room || this.syncing) return;
    this.syncing = true;
    try {
      for (let tries = 0; tries < 5; tries++) {
        await app.conn.request({ t: "sync", room: room.code, since: room.ver });
        if (app.state.room !== room || room.ver >= (this.gapSeen || 0)) break;
      }
    } catch {
      /* the next event or reconnect tries again */
    } finally {
      this.syncing = false;
    }
  }
}
