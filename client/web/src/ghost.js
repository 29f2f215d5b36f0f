// The ghost race (docs/browser.md, "Ghost race"): from a replay, a practice game on the
// same deal whose race panel shows the replay's racer as a rival, live (their foundation
// count at the same time after the start); afterwards, where you left their line, and
// both curves in one chart.
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { actionText, foundationChart, replayRacer } from "./replay-page.js";

export class Ghost {
  /** @param {import("./app.js").App} app */
  constructor(app) {
    this.app = app;
    /** @type {null | {game: string, deal: string, name: string, actions: {t: number, a: string}[], counts: {t: number, n: number}[]}} */
    this.active = null;
    /** The comparison after the game: the practice game's own replay, once archived. */
    this.compared = null; // {game, state: "loading" | "done" | "failed", counts, diverged}
  }

  /** Race `doc`'s racer `index` (an archived game, docs/replay.md) in a practice game. */
  start(doc, index) {
    const racer = doc.racers[index];
    this.active = { game: doc.id, deal: doc.deal, name: racer.name, actions: racer.actions, counts: replayRacer(doc.deal, racer.actions).counts };
    this.compared = null;
    const app = this.app;
    app.replay.close();
    app.state.replayId = null;
    app.nav.playAlone({ deal: doc.deal, variant: doc.variant, time_limit: null });
  }

  /** The ghost racing in the room on the screen: a practice game on its deal. */
  inRoom() {
    const room = this.app.state.room;
    return this.active && room && this.app.practice && room.deal === this.active.deal ? this.active : null;
  }

  /** The ghost's foundation count `ms` after the start. */
  countAt(ms) {
    const counts = this.active ? this.active.counts : [];
    let n = 8;
    for (const point of counts) {
      if (point.t > ms) break;
      n = point.n;
    }
    return n;
  }

  /** The ghost's row in the race panel (kept current by tick). */
  panelRow(elapsedMs) {
    const ghost = this.active;
    if (!ghost) return null;
    const n = this.countAt(elapsedMs);
    const name = t("ghost.name", { name: ghost.name });
    return h(
      "li",
      { class: "racer ghost", "data-testid": "ghost" },
      h("div", { class: "racer-head" }, h("span", { class: "avatar", "aria-hidden": "true" }, "👻"), h("span", { class: "pname", title: name }, name)),
      h("div", { class: "bar", role: "progressbar", "aria-label": name, "aria-valuemin": 8, "aria-valuemax": 104, "aria-valuenow": n }, h("span", { style: `width:${Math.round((n / 104) * 100)}%` })),
      h("div", { class: "racer-stats" }, h("span", { "data-testid": "ghost-foundation" }, `${t("race.cards")}: ${t("race.foundation", { n })}`)),
    );
  }

  /** Four times a second: the ghost's row follows the clock. */
  tick(panel, elapsedMs) {
    const row = panel.querySelector("[data-testid=ghost]");
    if (!row || !this.active) return;
    const n = this.countAt(elapsedMs);
    const bar = row.querySelector(".bar");
    if (bar && bar.getAttribute("aria-valuenow") !== String(n)) {
      bar.setAttribute("aria-valuenow", String(n));
      const fill = /** @type {HTMLElement | null} */ (bar.firstElementChild);
      if (fill) fill.style.width = `${Math.round((n / 104) * 100)}%`;
      const text = row.querySelector("[data-testid=ghost-foundation]");
      if (text) text.textContent = `${t("race.cards")}: ${t("race.foundation", { n })}`;
    }
  }

  /** After the game: read its replay (once archived) and find where it left the ghost's line. */
  compare(gameId) {
    if (!this.active || (this.compared && this.compared.game === gameId)) return;
    this.compared = { game: gameId, state: "loading", counts: null, diverged: null };
    const compared = this.compared;
    fetch(`/api/games/${encodeURIComponent(gameId)}.json`)
      .then((response) => (response.ok ? response.json() : Promise.reject(new Error(String(response.status)))))
      .then((doc) => {
        const mine = doc.racers[0].actions;
        compared.counts = replayRacer(doc.deal, mine).counts;
        compared.name = doc.racers[0].name;
        compared.diverged = divergence(mine, this.active ? this.active.actions : []);
        compared.state = "done";
      })
      .catch(() => (compared.state = "failed"))
      .finally(() => this.app.render());
  }

  /** The results dialog's part: where you diverged, and both curves. */
  resultsPart() {
    const ghost = this.active;
    const compared = this.compared;
    if (!ghost || !compared || compared.state !== "done") return null;
    const d = compared.diverged;
    const text =
      d.at == null
        ? t("ghost.followed", { n: d.length })
        : d.ghost
          ? t("ghost.diverged", { k: d.at + 1, mine: actionText(d.mine), theirs: actionText(d.ghost), name: ghost.name })
          : t("ghost.beyond", { k: d.at + 1, name: ghost.name });
    return h(
      "div",
      { class: "ghost-compare", "data-testid": "ghost-compare" },
      h("h3", {}, t("ghost.compareTitle")),
      h("p", { class: "small", "data-testid": "ghost-diverged" }, text),
      foundationChart([
        { name: compared.name, counts: compared.counts },
        { name: t("ghost.name", { name: ghost.name }), counts: ghost.counts },
      ]).el,
    );
  }
}

/**
 * Where `mine` first left `ghost`'s line: {at: the index of my first action that is not
 * the ghost's at the same place (null: none), mine, ghost (its action there, or null when
 * it had none), length}. A final resign is not a move of the line.
 */
export function divergence(mine, ghost) {
  const moves = (actions) => actions.map((x) => x.a).filter((a) => a !== "resign");
  const a = moves(mine);
  const b = moves(ghost);
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return { at: i, mine: a[i], ghost: b[i] ?? null, length: a.length };
  }
  return { at: null, mine: null, ghost: null, length: a.length };
}
