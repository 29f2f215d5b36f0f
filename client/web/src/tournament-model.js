// A tournament page's data, with no DOM: the latest snapshot and live standings, the
// loaded round results and rows, and what this visitor is in it. Also the pure helpers
// (codes from paths and typing, deal lists, scores, the live strip's rows).
import { formatDuration, messageFor, t } from "./i18n.js";
import { RequestError } from "./net.js";

/** The tournament code in a /t/<code> path, upper case, or null. */
export function tournamentCodeFromPath(pathname) {
  const match = /^\/t\/([Tt][23456789A-Za-z]{6})\/?$/.exec(pathname);
  return match ? match[1].toUpperCase() : null;
}

/** What a player typed as a tournament code: "tk7pq2x" → "TK7PQ2X"; six letters get the "T". */
export function normalizeTournamentCode(text) {
  const code = String(text || "").trim().toUpperCase().replace(/^\/?T\//, "");
  return /^[23456789A-Z]{6}$/.test(code) ? `T${code}` : code;
}

/** Deal codes typed one per line (or separated by commas / spaces). */
export function parseDeals(text) {
  return String(text || "")
    .split(/[\s,;]+/)
    .map((s) => s.trim().toUpperCase())
    .filter(Boolean);
}

/** A time limit as the form lists it: "30 s", "5 min", "2 h". */
export function limitLabel(seconds) {
  if (seconds < 60) return `${seconds} s`;
  if (seconds >= 3600 && seconds % 3600 === 0) return t("t.hours", { n: seconds / 3600 });
  return t("lobby.minutes", { n: seconds / 60 });
}

/** A standings row's score: points (placement) or the total time charged (time). */
export function scoreText(row, scoring) {
  if (scoring === "time") return row.total_ms != null ? formatDuration(row.total_ms) : "–";
  return t("t.points", { n: row.points ?? 0 });
}

/** The top rows and, when not among them, mine (as the live strip shows them). */
export function topPlusMe(top, me, myId) {
  const rows = [...(top || [])];
  if (me && !rows.some((r) => r.id === myId)) rows.push(me);
  return rows;
}

/** A failed request in words for the page. */
export function errorText(err) {
  if (err instanceof RequestError && err.reply) return messageFor("error", err.reply);
  if (err && (err.code === "offline" || err.code === "disconnected")) return t("net.lost");
  if (err && err.code === "timeout") return t("t.noReply");
  return String((err && err.message) || err);
}

export class TournamentModel {
  /** @param {() => string | null} playerId this visitor's player id (once welcomed) */
  constructor(playerId) {
    this.playerId = playerId;
    this.code = null;
    this.formError = null; // the lobby's create form: what to fix
    this.rowsLoading = false;
    this._rooms = new Set(); // every round room of the tournaments shown on this page
    this.reset();
  }

  reset() {
    this.snap = null; // T of the latest snapshot
    this.you = null; // Y
    this.live = null; // the latest t_live of the running round
    this.results = new Map(); // round → t_results reply
    this.rows = null; // every standings row (t_standings), fetched when shown
    this.rowsVer = -1;
    this.showAll = false;
    this.error = null; // a message for the page (what to do next)
    this.hostError = null;
    this.notice = null;
    this.subscribed = false;
    this.intent = null; // "player" | "spectator": what the lobby asked for
    this.notSeated = 0; // a round this player is not seated in (joined during it)
    this.joining = null; // the race room being joined
    this.openRounds = new Set(); // rounds whose results the reader opened
  }

  get isHost() {
    return !!this.you && this.you.role === "host";
  }

  /** Registered to play (also the host who joined as a player), and not removed. */
  get isPlayer() {
    const you = this.you;
    return !!you && (you.role === "player" || !!you.also_player);
  }

  get myStatus() {
    const you = this.you;
    return (you && (you.status || (you.row && you.row.status))) || null;
  }

  get myId() {
    return this.playerId();
  }

  /** Is `roomCode` this tournament's running round (the board shows its live panel)? */
  ownsRoom(roomCode) {
    const cur = this.snap && this.snap.current;
    return !!roomCode && ((!!cur && cur.room === roomCode) || this.roundRooms.has(roomCode));
  }

  get roundRooms() {
    this._rooms = this._rooms || new Set();
    return this._rooms;
  }
}
