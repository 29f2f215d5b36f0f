// Where the page is (/, /r/<code>, /daily, /t/<code>, /g/<id>, /me, /u/<handle>) and the lobby's room requests:
// create, join, play alone, rematch, leave. New pages go in PAGES.
import { RequestError } from "./net.js";
import { messageFor, t } from "./i18n.js";
import { load } from "./storage.js";
import { ME_PATH } from "./account-page.js";
import { HISTORY_PATH } from "./history-page.js";
import { handleFromPath } from "./profile-page.js";
import { gameIdFromPath } from "./replay-page.js";
import { tournamentCodeFromPath } from "./tournament.js";

/** The join code in a /r/<code> path, upper case, or null. */
export function codeFromPath(pathname) {
  const match = /^\/r\/([23456789A-Za-z]{6})\/?$/.exec(pathname);
  return match ? match[1].toUpperCase() : null;
}

/**
 * The pages by address, first match wins: a page's name and what its path says.
 * @type {{ page: string, match: (pathname: string) => string | boolean | null }[]}
 */
export const PAGES = [
  { page: "room", match: codeFromPath },
  { page: "daily", match: (pathname) => pathname === "/daily" },
  { page: "tournament", match: tournamentCodeFromPath },
  { page: "replay", match: gameIdFromPath },
  { page: "history", match: (pathname) => pathname === HISTORY_PATH },
  { page: "me", match: (pathname) => pathname === ME_PATH },
  { page: "profile", match: handleFromPath },
];

/** The page at `pathname` and its parameter (a code), or the lobby. */
export function pageOf(pathname) {
  for (const { page, match } of PAGES) {
    const found = match(pathname);
    if (found) return { page, param: typeof found === "string" ? found : null };
  }
  return { page: "lobby", param: null };
}

export class Navigation {
  /** @param {import("./app.js").App} app */
  constructor(app) {
    this.app = app;
    this.pendingIntent = null; // "player" | "spectator": how the lobby opened a tournament
  }

  // --- rooms --------------------------------------------------------------------------------

  route(pathname) {
    const app = this.app;
    const { page, param } = pageOf(pathname);
    const code = page === "room" ? param : null;
    const daily = page === "daily";
    const tcode = page === "tournament" ? param : null;
    const replayId = page === "replay" ? param : null;
    if (replayId) app.replay.open(replayId);
    else if (app.state.replayId) app.replay.close();
    app.state.replayId = replayId;
    app.state.historyOpen = page === "history";
    app.state.meOpen = page === "me";
    app.state.profileHandle = page === "profile" ? param : null;
    if (app.state.dailyOpen && !daily) app.daily.unwatch();
    app.state.dailyOpen = daily;
    if (daily && app.conn.online) app.daily.load();
    if (app.state.tournamentCode && app.state.tournamentCode !== tcode) app.tournament.close();
    const newTournament = !!tcode && tcode !== app.tournament.model.code;
    app.state.tournamentCode = tcode;
    app.state.tCreate = false;
    if (tcode) app.tournament.open(tcode);
    if (newTournament) app.tournament.model.intent = this.pendingIntent || null;
    this.pendingIntent = null;
    if (newTournament && app.conn.online) app.tournament.load();
    app.state.roomCode = code;
    app.state.room = null;
    app.state.you = null;
    app.state.error = null;
    app.game.setView(null, 0);
    app.game.resetActions();
    if (code && app.conn.online) this.joinRoom(code, "racer");
    app.render();
  }

  go(pathname) {
    if (location.pathname !== pathname) history.pushState({}, "", pathname);
    this.route(pathname);
  }

  /** From the lobby: a tournament by its code, to play in (`player`) or to watch. */
  openTournament(code, as) {
    this.app.state.error = null;
    this.app.tournament.close();
    this.pendingIntent = as;
    this.go(`/t/${code}`);
  }

  /** The name this browser chose (a guest name the server made up is not one). */
  localName() {
    return load("name") || "";
  }

  async createRoom(options) {
    const app = this.app;
    app.state.error = null;
    try {
      const reply = await app.conn.request({ t: "create_room", ...options });
      history.pushState({}, "", reply.room.link || `/r/${reply.room.code}`);
      app.state.roomCode = reply.room.code;
      app.session.applySnapshot(reply);
    } catch (err) {
      this.showError(err);
    }
  }

  /** Solo practice: a room of one seat, readied at once (the race starts by itself). */
  async playAlone(options) {
    await this.createRoom({ ...options, seats: 1 });
    if (this.app.state.room && this.app.state.room.seats === 1) await this.roomRequest({ t: "ready", ready: true });
  }

  /** A new round; alone, it starts at once. */
  async rematch() {
    await this.roomRequest({ t: "rematch" });
    if (this.app.practice && this.app.state.room.phase === "waiting") await this.roomRequest({ t: "ready", ready: true });
  }

  async joinRoom(code, as = "racer") {
    const app = this.app;
    app.state.error = null;
    app.state.joinAs = as;
    try {
      await app.conn.request({ t: "join", room: code, as });
    } catch (err) {
      if (as === "racer" && (err.code === "room_full" || err.code === "already_started")) {
        app.state.notice = t("room.spectatorJoined");
        return this.joinRoom(code, "spectator");
      }
      this.showError(err);
    }
  }

  async roomRequest(msg) {
    const room = this.app.state.room;
    if (!room) return;
    try {
      await this.app.conn.request({ ...msg, room: room.code });
    } catch (err) {
      this.showError(err);
    }
  }

  showError(err) {
    const app = this.app;
    if (err instanceof RequestError && err.reply) app.state.error = messageFor("error", err.reply);
    else if (err && err.code === "offline") app.state.error = t("net.lost");
    else app.state.error = String(err && err.message);
    app.render();
  }

  leave() {
    const app = this.app;
    if (app.tournamentRound) return app.tournament.backToTournament();
    const room = app.state.room;
    if (room) app.conn.request({ t: "leave", room: room.code }).catch(() => {});
    this.go("/");
  }
}
