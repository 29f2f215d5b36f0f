// The Daily tab (/daily): today's challenge and its commitment, the ranked attempt and
// practice, the live board, my streak, past days with their revealed deal and a check
// of the commitment. The attempt itself is a one-seat room: the race view plays it.
import { replayLink } from "./replay-page.js";
import { h, mount } from "./dom.js";
import { formatDuration, messageFor, t } from "./i18n.js";
import { RequestError } from "./net.js";

/** The command docs/daily.md gives for checking a revealed day by hand. */
export function verifyCommand(code, salt) {
  return `printf '%s' '${code}:${salt}' | sha256sum`;
}

/** SHA-256 of "code:salt" in hex, or null where the page has no WebCrypto (plain http). */
export async function commitmentOf(code, salt) {
  if (!globalThis.crypto || !crypto.subtle) return null;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${code}:${salt}`));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// While today's deal is still being certified the server answers `day_not_ready`
// (docs/protocol.md, "Daily challenge"): ask again after about 2 s, doubling up to 30 s.
export const PREPARING_FIRST_RETRY_MS = 2000;
export const PREPARING_MAX_RETRY_MS = 30000;

const REPLAYS_SHOWN = 5; // a revealed day's best attempts listed with their replays

/** The wait before the next try after `tries` answers of `day_not_ready` in a row (1, 2, …). */
export function preparingRetryMs(tries) {
  return Math.min(PREPARING_MAX_RETRY_MS, PREPARING_FIRST_RETRY_MS * 2 ** Math.max(0, tries - 1));
}

/** Is this failed request the server's `day_not_ready`? */
function notReady(err) {
  return err instanceof RequestError && !!err.reply && err.reply.code === "day_not_ready";
}

export class DailyTab {
  constructor(app) {
    this.app = app;
    this.info = null; // the `daily` reply
    this.board = null; // the latest `daily_board`
    this.me = null; // `daily_me`
    this.days = []; // `daily_days`
    /** @type {Map<string, any[]>} a revealed day → its best archived daily games (replays) */
    this.replays = new Map();
    this.late = false;
    this.checks = new Map(); // day → true (verified) | false | null (cannot check here)
    this.error = null;
    this.el = null;
    this.boardEl = null;
    this.preparing = false; // today's deal is still being certified: retrying
    this.preparingTries = 0;
    this.retryTimer = null;
    this.rankedRoom = null; // the code of the ranked attempt this page started
  }

  /** Load everything and watch the board (on opening the tab and after a reconnect). */
  async load() {
    const conn = this.app.conn;
    this.error = null;
    this.cancelRetry();
    try {
      const [info, me, days] = await Promise.all([
        conn.request({ t: "daily" }),
        conn.request({ t: "daily_me" }),
        conn.request({ t: "daily_days" }),
      ]);
      this.info = info;
      this.me = me;
      this.days = days.days || [];
      // A player whose identity is newer than the day is ranked on the late board.
      if (info.you && info.you.board) this.late = info.you.board === "late";
      await this.watch();
      this.preparing = false;
      this.preparingTries = 0;
      for (const day of this.days) if (day.code && !this.checks.has(day.day)) this.check(day);
      for (const day of this.days) if (day.code && !this.replays.has(day.day)) this.loadReplays(day);
    } catch (err) {
      if (notReady(err)) this.retryWhilePreparing();
      else this.error = err instanceof RequestError && err.reply ? messageFor("error", err.reply) : t("net.lost");
    }
    this.render();
  }

  /** Today is not certified yet: say so and load again by itself, backing off. */
  retryWhilePreparing() {
    this.preparing = true;
    this.preparingTries += 1;
    this.cancelRetry();
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      // Only while the tab is open; a reconnect loads it anyway (App.welcome).
      if (this.app.state.dailyOpen && this.app.conn.online) this.load();
    }, preparingRetryMs(this.preparingTries));
  }

  cancelRetry() {
    if (this.retryTimer != null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  async watch() {
    this.board = await this.app.conn.request({ t: "daily_board", watch: true, late: this.late, top: 10, around: 3 });
  }

  /** Leaving the tab: no more board pushes. */
  unwatch() {
    this.cancelRetry();
    if (this.app.conn.online) this.app.conn.request({ t: "daily_board", watch: false }).catch(() => {});
  }

  onBoard(msg) {
    if (!this.board || msg.day !== this.board.day || msg.board !== this.board.board) return;
    this.board = msg;
    this.renderBoard();
  }

  /** A revealed day's best archived attempts (GET /api/deals/<code>/games, best first). */
  async loadReplays(day) {
    this.replays.set(day.day, []);
    try {
      const response = await fetch(`/api/deals/${encodeURIComponent(day.code)}/games?limit=${REPLAYS_SHOWN * 4}`);
      if (!response.ok) return;
      const body = await response.json();
      // All of the page's daily rows: the disqualified are left out when shown.
      const games = body.rows.filter((g) => g.kind === "daily" && g.origin === day.day);
      this.replays.set(day.day, games);
      this.render();
    } catch {
      // No archive (or it does not answer): the day shows no replays.
    }
  }

  async check(day) {
    const digest = await commitmentOf(day.code, day.salt);
    this.checks.set(day.day, digest == null ? null : digest === day.commitment);
    this.render();
  }

  async play(practice) {
    const app = this.app;
    try {
      const reply = await app.conn.request({ t: "daily_start", practice, day: this.info && this.info.today.day });
      if (!practice) this.rankedRoom = reply.room.code;
      this.unwatch();
      history.pushState({}, "", reply.room.link || `/r/${reply.room.code}`);
      app.state.roomCode = reply.room.code;
      app.session.applySnapshot(reply);
    } catch (err) {
      if (notReady(err)) this.retryWhilePreparing();
      else this.error = err instanceof RequestError && err.reply ? messageFor("error", err.reply) : t("net.lost");
      this.render();
    }
  }

  /** Is this daily room today's ranked attempt (not a practice game of the deal)? The
   * room does not say; `daily` does (`you.attempt`), asked when this page did not start it. */
  async isRankedAttempt(roomCode) {
    if (roomCode === this.rankedRoom) return true;
    try {
      const info = await this.app.conn.request({ t: "daily" });
      return !!info.you && info.you.attempt === roomCode;
    } catch {
      return false;
    }
  }

  async toggleLate() {
    this.late = !this.late;
    await this.watch().catch(() => {});
    this.render();
  }

  /** The tab's element (kept, and refreshed in place as data arrives). */
  view() {
    this.el = this.el || h("div", { class: "daily", "data-testid": "daily" });
    this.render();
    return this.el;
  }

  render() {
    if (!this.el) return;
    const info = this.info;
    this.boardEl = h("section", { class: "panel daily-board", "data-testid": "daily-board" });
    mount(
      this.el,
      h("h1", {}, t("daily.title")),
      this.error ? h("p", { class: "error", role: "alert", "data-testid": "daily-error" }, this.error) : null,
      this.preparing
        ? h("p", { class: "muted", role: "status", "data-testid": "daily-preparing" }, t("daily.preparing"))
        : info
          ? this.today(info)
          : h("p", { class: "muted" }, t("net.connecting")),
      this.boardEl,
      this.streak(),
      this.past(),
    );
    this.renderBoard();
  }

  today(info) {
    const you = info.you || {};
    const played = !!you.attempt;
    return h(
      "section",
      { class: "panel daily-today" },
      h("h2", {}, t("daily.today", { day: info.today.day })),
      h("p", { class: "muted small" }, t("daily.rules", { m: Math.round(info.time_limit / 60) })),
      h("p", { class: "small" }, t("daily.commitment"), " ", h("code", { class: "hex", "data-testid": "commitment" }, info.today.commitment)),
      info.tomorrow
        ? h("p", { class: "small muted" }, t("daily.tomorrow", { day: info.tomorrow.day }), " ", h("code", { class: "hex", "data-testid": "commitment-tomorrow" }, info.tomorrow.commitment))
        : null,
      you.result ? h("p", { "data-testid": "daily-result" }, t("daily.yourResult", { rank: you.result.rank, what: rowText(you.result) })) : null,
      you.disqualified ? h("p", { class: "error", role: "status", "data-testid": "daily-disqualified-me" }, t("daily.youDisqualified", { reason: you.disqualified })) : null,
      h(
        "div",
        { class: "buttons" },
        !played
          ? h("button", { type: "button", class: "primary gold", "data-testid": "daily-play", onclick: () => this.play(false) }, t("daily.play"))
          : !you.finished
            ? h("button", { type: "button", class: "primary gold", "data-testid": "daily-resume", onclick: () => this.app.nav.go(`/r/${you.attempt}`) }, t("daily.resume"))
            : h("button", { type: "button", class: "secondary", "data-testid": "daily-practice", onclick: () => this.play(true) }, t("daily.practice")),
      ),
    );
  }

  renderBoard() {
    const el = this.boardEl;
    const board = this.board;
    if (!el) return;
    if (!board) return mount(el, h("h2", {}, t("daily.board")));
    const me = this.app.state.player && this.app.state.player.id;
    const table = (rows, testid) =>
      h(
        "table",
        { class: "daily-table", "data-testid": testid },
        h("tbody", {}, rows.map((r) => h("tr", { class: r.player === me ? "me" : "" }, h("td", { class: "rank" }, String(r.rank)), h("td", { class: "name-cell" }, r.name, this.reviewMark(r, board)), h("td", { class: "num" }, rowText(r))))),
      );
    const around = (board.around || []).filter((r) => !(board.top || []).some((x) => x.player === r.player));
    const guests = board.ranks === "accounts";
    mount(
      el,
      // With accounts the other board is the guests' (docs/daily.md, "Leaderboard").
      h("h2", {}, board.board === "late" ? t(guests ? "daily.guestBoard" : "daily.lateBoard") : t("daily.board")),
      board.board === "late" ? h("p", { class: "muted small", "data-testid": "daily-late-why" }, t(guests ? "daily.guestWhy" : "daily.lateWhy")) : null,
      h("p", { class: "small", "data-testid": "daily-rank" }, board.you ? t("daily.yourRank", { rank: board.you.rank, n: board.count }) : t("daily.count", { n: board.count })),
      board.top && board.top.length ? table(board.top, "daily-top") : h("p", { class: "muted small" }, t("daily.empty")),
      around.length ? [h("h3", {}, t("daily.aroundMe")), table(around, "daily-around")] : null,
      this.disqualifiedList(board.disqualified, board.reveal_at),
      h(
        "button",
        { type: "button", class: "ghost small", "data-testid": "daily-late", "aria-pressed": this.late ? "true" : "false", onclick: () => this.toggleLate() },
        this.late ? t("daily.showRanked") : t(guests ? "daily.showGuest" : "daily.showLate", { n: board.late_count }),
      ),
    );
  }

  /** A flagged row's mark: "under review" (or "reviewed"), a link to its replay once
   * the day is revealed (before, the replay is sealed with the deal). */
  reviewMark(row, board) {
    if (!row.review) return null;
    const text = row.review === "under_review" ? t("daily.underReview") : t("daily.confirmed");
    const cls = `review-mark ${row.review === "under_review" ? "pending" : "ok"}`;
    if (row.game && revealed(board.reveal_at)) return [" ", replayLink(this.app, row.game, text, "review-mark")];
    return [" ", h("span", { class: cls, "data-testid": "review-mark", title: row.review === "under_review" ? t("daily.replayAfterReveal") : "" }, text)];
  }

  /** The results an operator took off the board, each with its reason (shown to all). */
  disqualifiedList(rows, revealAt) {
    if (!rows || !rows.length) return null;
    return h(
      "div",
      { class: "small daily-disqualified", "data-testid": "daily-disqualified" },
      h("h3", {}, t("daily.disqualified")),
      h(
        "ul",
        {},
        rows.map((d) => h("li", {}, `${d.name}: ${d.reason}`, d.game && revealed(revealAt) ? [" · ", replayLink(this.app, d.game, t("replay.watch"), "disqualified-replay")] : null)),
      ),
    );
  }

  /** A revealed day's results under review, each one tap from its replay. */
  flaggedList(day) {
    const rows = (day.flagged || []).filter((f) => f.state === "under_review");
    if (!rows.length) return null;
    return h(
      "div",
      { class: "small daily-flagged", "data-testid": "daily-flagged" },
      h("h3", {}, t("daily.underReviewTitle")),
      h(
        "ul",
        {},
        rows.map((f) => h("li", {}, f.name, f.game ? [" · ", replayLink(this.app, f.game, t("replay.watch"), "flagged-replay")] : null)),
      ),
    );
  }

  streak() {
    const me = this.me;
    if (!me) return null;
    return h(
      "section",
      { class: "panel daily-me", "data-testid": "daily-me" },
      h("h2", {}, t("daily.me")),
      h(
        "p",
        {},
        t("daily.streak", { played: t("daily.streakPlayed", { n: me.streak_played }), won: t("daily.streakWon", { n: me.streak_won }) }),
        h("br"),
        me.best_time_ms != null ? t("daily.best", { t: formatDuration(me.best_time_ms) }) : t("daily.noBest"),
      ),
    );
  }

  /** A revealed day's best attempts, each with its replay. */
  replayList(day) {
    const off = new Set((day.disqualified || []).map((d) => d.player));
    const review = new Map((day.flagged || []).map((f) => [f.player, f.state]));
    const games = (this.replays.get(day.day) || []).filter((g) => !off.has(g.player)).slice(0, REPLAYS_SHOWN);
    if (!games.length) return null;
    const best = games[0];
    return [
      h(
        "ol",
        { class: "small daily-replays", "data-testid": "daily-replays" },
        games.map((g) =>
          h(
            "li",
            {},
            `${g.name}: ${rowText(g.result)} · `,
            replayLink(this.app, g.game, t("replay.watch"), "daily-replay"),
            review.get(g.player) === "under_review" ? [" ", h("span", { class: "review-mark pending" }, t("daily.underReview"))] : null,
          ),
        ),
      ),
      h("button", { type: "button", class: "secondary small", "data-testid": "race-best", onclick: () => this.raceBest(best) }, t("ghost.raceBest")),
    ];
  }

  /** "Race the best replay": a practice game on the day's deal with the best attempt as a ghost. */
  async raceBest(row) {
    try {
      const response = await fetch(`/api/games/${encodeURIComponent(row.game)}.json`);
      if (!response.ok) throw new Error(String(response.status));
      const doc = await response.json();
      const index = Math.max(0, doc.racers.findIndex((r) => r.player === row.player));
      this.unwatch();
      this.app.state.dailyOpen = false;
      this.app.ghost.start(doc, index);
    } catch {
      this.app.feedback.toast(t("replay.failed"), "refused");
    }
  }

  past() {
    return h(
      "section",
      { class: "panel daily-past", "data-testid": "daily-days" },
      h("h2", {}, t("daily.past")),
      this.days.length === 0 ? h("p", { class: "muted small" }, t("daily.noPast")) : null,
      this.days.map((day) => {
        const check = this.checks.get(day.day);
        return h(
          "div",
          { class: "daily-day", "data-testid": `day-${day.day}` },
          h("h3", {}, day.day),
          h("p", { class: "small" }, t("daily.commitment"), " ", h("code", { class: "hex" }, day.commitment)),
          day.code
            ? [
                h("p", { class: "small" }, t("daily.deal"), " ", h("code", { class: "hex deal-code", "data-testid": "daily-deal-code" }, day.code), " ", t("daily.salt"), " ", h("code", { class: "hex" }, day.salt)),
                this.replayList(day),
                this.flaggedList(day),
                this.disqualifiedList(day.disqualified, 0),
                h("p", { class: "small muted" }, t("daily.verifyHow")),
                h("pre", { class: "hex command" }, verifyCommand(day.code, day.salt)),
                h(
                  "p",
                  { class: `small verify ${check === true ? "ok" : check === false ? "bad" : ""}`, "data-testid": "verify" },
                  check === true ? t("daily.verified") : check === false ? t("daily.mismatch") : check === null ? t("daily.noCrypto") : "…",
                ),
              ]
            : h("p", { class: "small muted" }, t("daily.sealed")),
        );
      }),
    );
  }
}

/** Has the day been revealed (its games' replays readable)? */
function revealed(revealAt) {
  return revealAt != null && Date.now() >= revealAt;
}

function rowText(r) {
  if (r.status === "won") return `${formatDuration(r.time_ms)} · ${t("daily.moves", { n: r.moves })}`;
  return `${t(`status.${r.status}`)} · ${r.foundation}/104`;
}
