// A player's public profile at /u/<handle> (docs/accounts.md "The public profile";
// GET /api/u/<handle>, docs/protocol.md "Accounts"): the daily record (streaks, best times,
// the latest days), the finished tournaments with the place, the recent archived games
// each with a link to its replay. An unknown or deleted handle: a page that says so.
import { h, withDealCode } from "./dom.js";
import { formatDuration, messageFor, t } from "./i18n.js";
import { replayLink } from "./replay-page.js";

/** The handle in a /u/<handle> path (as typed: the server compares handles by key), or null. */
export function handleFromPath(pathname) {
  const match = /^\/u\/([^/]{1,100})\/?$/.exec(pathname);
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return null;
  }
}

export class ProfilePage {
  /** @param {import("./app.js").App} app */
  constructor(app) {
    this.app = app;
    this.handle = null;
    /** @type {"loading" | "found" | "missing" | "error"} */
    this.status = "loading";
    /** @type {any} */
    this.profile = null;
    this.error = null;
    this.key = null;
    /** @type {HTMLElement | null} */
    this.el = null;
  }

  /** Show `handle`'s profile (loaded once per handle). */
  open(handle) {
    if (handle === this.handle) return;
    this.handle = handle;
    this.status = "loading";
    this.profile = null;
    this.load(handle);
  }

  async load(handle) {
    let status = 0;
    let body = null;
    try {
      const response = await fetch(`/api/u/${encodeURIComponent(handle)}`);
      status = response.status;
      body = await response.json().catch(() => null);
    } catch {
      /* offline: said below */
    }
    if (handle !== this.handle) return;
    this.profile = status === 200 ? body : null;
    if (status === 200) this.status = "found";
    else if (status === 404) this.status = "missing";
    else {
      this.status = "error";
      this.error = body ? messageFor("error", body) : t("profile.failed");
    }
    this.app.render();
  }

  view() {
    const key = [this.app.language, this.handle, this.status].join("|");
    if (this.el && key === this.key) return this.el;
    this.key = key;
    const el = h("section", { class: "panel account profile", "data-testid": "profile" }, this.parts());
    if (this.el && this.el.parentNode) this.el.replaceWith(el);
    this.el = el;
    return el;
  }

  parts() {
    if (this.status === "loading") return [h("h1", {}, this.handle), h("p", { class: "muted" }, t("replay.loading"))];
    if (this.status === "missing") {
      return [h("h1", {}, t("profile.missingTitle")), h("p", { "data-testid": "profile-missing" }, t("profile.missing", { handle: this.handle }))];
    }
    if (this.status === "error") return [h("h1", {}, this.handle), h("p", { class: "error", role: "alert" }, this.error)];
    const profile = this.profile;
    const lang = this.app.language;
    return [
      h("h1", { "data-testid": "profile-handle" }, profile.handle),
      h("p", { class: "muted" }, t("profile.since", { when: new Date(profile.created_at).toLocaleDateString(lang, { dateStyle: "medium" }) })),
      this.daily(profile.daily, lang),
      profile.tournaments ? this.tournaments(profile.tournaments, lang) : null,
      profile.recent_games ? this.games(profile.recent_games, lang) : null,
    ];
  }

  daily(daily, lang) {
    const played = daily && daily.days_played;
    return h(
      "section",
      { class: "account-part", "aria-labelledby": "profile-daily", "data-testid": "profile-daily" },
      h("h2", { id: "profile-daily" }, t("daily.title")),
      !played
        ? h("p", { class: "muted" }, t("profile.noDaily"))
        : [
            h("p", {}, t("daily.streak", { played: t("daily.streakPlayed", { n: daily.streak_played }), won: t("daily.streakWon", { n: daily.streak_won }) })),
            h("p", {}, t("profile.days", { played: daily.days_played, won: daily.days_won })),
            h("p", {}, daily.best_times.length ? t("profile.bestTimes", { list: daily.best_times.map(formatDuration).join(", ") }) : t("daily.noBest")),
            h(
              "ol",
              { class: "account-list" },
              daily.history.map((row) =>
                h(
                  "li",
                  { "data-testid": "profile-day" },
                  new Date(`${row.day}T12:00:00Z`).toLocaleDateString(lang, { dateStyle: "medium" }),
                  " · ",
                  t(`status.${row.status}`),
                  row.status === "won" ? ` · ${formatDuration(row.time_ms)}` : ` · ${row.foundation}/104`,
                ),
              ),
            ),
          ],
    );
  }

  tournaments(rows, lang) {
    return listPart({ id: "profile-tournaments", title: t("profile.tournaments"), listClass: "account-list", empty: t("profile.noTournaments") }, rows, (row) =>
      h(
        "li",
        { "data-testid": "profile-tournament" },
        h("a", { href: `/t/${row.code}`, onclick: (e) => (e.preventDefault(), this.app.nav.go(`/t/${row.code}`)) }, row.name),
        h("span", { class: "small muted" }, `· ${t("profile.place", { rank: row.place, count: row.players })} · ${new Date(row.ended_at).toLocaleDateString(lang, { dateStyle: "medium" })}`),
      ),
    );
  }

  games(rows, lang) {
    return listPart({ id: "profile-games", title: t("profile.games"), sectionClass: "replay-history", empty: t("profile.noGames") }, rows, (game) => {
      const r = game.result;
      return h(
        "li",
        { "data-testid": "profile-game" },
        h("p", { class: "small" }, new Date(game.ended_at).toLocaleString(lang), " · ", t(`replay.kind.${game.kind}`), " · ", withDealCode(game.deal, game.deal)),
        h("p", { class: "small muted" }, `#${r.rank} · `, t(`status.${r.status}`), " · ", t("replay.result", { n: r.foundation, moves: r.moves, time: formatDuration(r.time_ms) })),
        replayLink(this.app, game.game),
      );
    });
  }
}

/**
 * A part of the profile: its heading, then the list of `rows` (each an `li` from `item`),
 * or the `empty` note when there are none.
 * @param {{ id: string, title: string, empty: string, sectionClass?: string, listClass?: string }} part
 * @param {any[]} rows
 * @param {(row: any) => HTMLElement} item
 */
function listPart(part, rows, item) {
  return h(
    "section",
    { class: part.sectionClass ? `account-part ${part.sectionClass}` : "account-part", "aria-labelledby": part.id },
    h("h2", { id: part.id }, part.title),
    rows.length ? h("ol", { class: part.listClass }, rows.map(item)) : h("p", { class: "muted" }, part.empty),
  );
}
