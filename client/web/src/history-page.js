// A player's games at /me/games (docs/browser.md, "Replays"): their archived games,
// newest first (GET /api/players/<id>/games, docs/archive.md), each a link to its
// replay; "Load more" follows the keyset cursor the server returns (`next`).
import { h, withDealCode } from "./dom.js";
import { formatDuration, messageFor, t } from "./i18n.js";
import { replayLink } from "./replay-page.js";

export const HISTORY_PATH = "/me/games";
const PAGE_SIZE = 20;

export class HistoryPage {
  /** @param {import("./app.js").App} app */
  constructor(app) {
    this.app = app;
    this.reset();
  }

  reset() {
    this.player = null;
    /** @type {any[]} */
    this.games = [];
    this.next = null;
    this.done = false;
    this.loading = false;
    this.error = null;
    /** @type {HTMLElement | null} */
    this.el = null;
    this.key = null;
  }

  /** Load the first page for the player this page knows (after the welcome). */
  open() {
    const player = this.app.state.player;
    if (!player || player.id === this.player) return;
    this.reset();
    this.player = player.id;
    this.loadMore();
  }

  async loadMore() {
    if (this.loading || this.done || !this.player) return;
    const player = this.player;
    this.loading = true;
    this.error = null;
    // ?limit=N in the page's address asks for smaller pages (1–100; tests, slow links).
    const asked = Math.trunc(Number(new URLSearchParams(location.search).get("limit")));
    const size = asked >= 1 && asked <= 100 ? asked : PAGE_SIZE;
    const query = new URLSearchParams({ limit: String(size) });
    if (this.next) query.set("before", this.next);
    const firstNew = this.games.length;
    try {
      const response = await fetch(`/api/players/${encodeURIComponent(player)}/games?${query}`);
      const body = await response.json();
      if (player !== this.player) return;
      if (!response.ok) this.error = messageFor("error", body);
      else {
        this.games.push(...body.games);
        this.next = body.next;
        this.done = !body.next;
      }
    } catch {
      this.error = t("history.failed");
    } finally {
      this.loading = false;
    }
    this.app.render();
    // "Load more": focus goes to the first game it brought (the button may be gone).
    if (firstNew > 0 && this.el) {
      const link = /** @type {HTMLElement | null} */ (this.el.querySelectorAll("[data-testid=history-game] a")[firstNew]);
      if (link) link.focus();
    }
  }

  view() {
    this.open();
    const key = [this.app.language, this.player, this.games.length, this.loading, this.done, this.error].join("|");
    if (this.el && key === this.key) return this.el;
    this.key = key;
    const rows = this.games.map((game) => {
      const r = game.result;
      return h(
        "li",
        { "data-testid": "history-game" },
        h("p", { class: "small" }, new Date(game.ended_at).toLocaleString(this.app.language), " · ", t(`replay.kind.${game.kind}`), " · ", withDealCode(game.deal, game.deal)),
        h("p", { class: "small muted" }, `#${r.rank} · `, t(`status.${r.status}`), " · ", t("replay.result", { n: r.foundation, moves: r.moves, time: formatDuration(r.time_ms) })),
        replayLink(this.app, game.game),
      );
    });
    const el = h(
      "section",
      { class: "panel replay-history", "data-testid": "history" },
      h("h1", {}, t("history.title")),
      !this.player ? h("p", { class: "muted" }, t("net.connecting")) : null,
      this.error ? h("p", { class: "error", role: "alert" }, this.error) : null,
      this.player && this.done && !this.games.length ? h("p", { class: "muted", "data-testid": "history-empty" }, t("history.empty")) : null,
      rows.length ? h("ol", {}, rows) : null,
      this.player && !this.done
        ? h("button", { type: "button", class: "secondary", "data-testid": "history-more", disabled: this.loading, onclick: () => this.loadMore() }, this.loading ? t("replay.loading") : t("history.loadMore"))
        : null,
    );
    if (this.el && this.el.parentNode) this.el.replaceWith(el);
    this.el = el;
    return el;
  }
}
