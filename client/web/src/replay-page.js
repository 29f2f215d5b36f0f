// The replay viewer at /g/<game id> (docs/browser.md, "Replays"): an archived game
// (GET /api/games/<id>.json, docs/replay.md) dealt again and replayed move by move with
// the page's own rules (replay.js): play/pause, step, speed, a scrubber, the move list,
// every racer's foundation count over time, and a share link.
import { Board } from "./board.js";
import { h, isLoopback, mount, shareLink, withDealCode } from "./dom.js";
import { formatDuration, t } from "./i18n.js";
import { ReplayGame } from "./replay.js";

export const SPEEDS = [1, 4, 16];
// A long think is shortened when played back (the pace still shows in the chart).
const LONGEST_PAUSE_MS = 3000;
const CHART_W = 320;
const CHART_H = 120;
const COLORS = ["#2563eb", "#dc2626", "#059669", "#9333ea", "#d97706", "#0891b2", "#be185d", "#4b5563"];

/** The game id in a /g/<id> path (docs/replay.md: 1–64 of A-Z a-z 0-9 _ . : -), or null. */
export function gameIdFromPath(pathname) {
  const match = /^\/g\/([A-Za-z0-9_.:-]{1,64})\/?$/.exec(pathname);
  return match ? match[1] : null;
}

/** A room round's archived game id (server/core/outbox.py game_id): code-round-start in base 36. */
export function roomGameId(room) {
  if (!room || room.start_at == null) return null;
  return `${room.code}-${room.round}-${Number(room.start_at).toString(36)}`;
}

/**
 * One racer's replay: the board after each action and their foundation count over time.
 * @param {string} deal
 * @param {{t: number, a: string}[]} actions
 */
export function replayRacer(deal, actions) {
  const game = new ReplayGame(deal);
  const views = [game.view()];
  const counts = [{ t: 0, n: game.foundationCount() }];
  for (const { t: at, a } of actions) {
    game.apply(a);
    views.push(game.view());
    counts.push({ t: at, n: game.foundationCount() });
  }
  return { views, counts };
}

export class ReplayPage {
  /** @param {import("./app.js").App} app */
  constructor(app) {
    this.app = app;
    this.board = new Board({ onAction: () => {}, onRefuse: () => {} });
    this.board.setFrozen(true);
    this.gameId = null;
    this.reset();
  }

  reset() {
    this.stop();
    this.doc = null;
    this.error = null; // "not_found" | "failed"
    this.racer = 0;
    this.step = 0; // actions applied
    this.speed = 1;
    this.playing = false;
    /** @type {{views: any[], counts: {t: number, n: number}[]}[]} */
    this.racers = [];
    /** @type {HTMLElement | null} */
    this.el = null;
  }

  open(gameId) {
    if (gameId === this.gameId && (this.doc || this.loading)) return;
    this.reset();
    this.gameId = gameId;
    this.load();
  }

  close() {
    this.reset();
    this.gameId = null;
  }

  async load() {
    const id = this.gameId;
    this.loading = true;
    try {
      const response = await fetch(`/api/games/${encodeURIComponent(id || "")}.json`);
      if (id !== this.gameId) return;
      if (response.status === 404) this.error = "not_found";
      else if (!response.ok) this.error = "failed";
      else {
        const doc = await response.json();
        if (id !== this.gameId) return;
        this.racers = doc.racers.map((r) => replayRacer(doc.deal, r.actions));
        this.doc = doc;
        this.error = null;
      }
    } catch {
      if (id === this.gameId) this.error = "failed";
    } finally {
      this.loading = false;
    }
    this.el = null;
    this.app.render();
  }

  get actions() {
    return this.doc ? this.doc.racers[this.racer].actions : [];
  }

  // --- playback ----------------------------------------------------------------------------

  stop() {
    clearTimeout(this.timer);
    this.timer = null;
  }

  togglePlay() {
    if (this.playing) this.pause();
    else this.play();
  }

  play() {
    if (this.step >= this.actions.length) this.step = 0;
    this.playing = true;
    this.scheduleNext();
    this.refresh();
  }

  pause() {
    this.playing = false;
    this.stop();
    this.refresh();
    this.app.feedback.announce(this.stepText());
  }

  scheduleNext() {
    this.stop();
    if (!this.playing) return;
    const actions = this.actions;
    if (this.step >= actions.length) {
      this.playing = false;
      this.refresh();
      this.app.feedback.announce(t("replay.ended"));
      return;
    }
    const before = this.step === 0 ? 0 : actions[this.step - 1].t;
    const wait = Math.min(Math.max(actions[this.step].t - before, 0), LONGEST_PAUSE_MS) / this.speed;
    this.timer = setTimeout(() => {
      this.step += 1;
      this.refresh();
      this.scheduleNext();
    }, wait);
  }

  /** Go to the position after `step` actions (a pause while playing is not needed). */
  goTo(step, { announce = true } = {}) {
    this.step = Math.max(0, Math.min(step, this.actions.length));
    if (this.playing) this.scheduleNext();
    this.refresh();
    if (announce) this.app.feedback.announce(this.stepText());
  }

  setSpeed(speed) {
    this.speed = speed;
    if (this.playing) this.scheduleNext();
    this.refresh();
  }

  setRacer(index) {
    this.racer = index;
    this.step = 0;
    this.playing = false;
    this.stop();
    this.el = null;
    this.app.render();
  }

  stepText() {
    const n = this.actions.length;
    if (this.step === 0) return t("replay.atStart", { n });
    const action = this.actions[this.step - 1];
    return t("replay.atMove", { k: this.step, n, move: actionText(action.a), time: formatDuration(action.t) });
  }

  // --- rendering ---------------------------------------------------------------------------

  /** The page's element: built once per game (and racer, language), refreshed in place. */
  view() {
    const key = [this.gameId, this.racer, this.app.language, !!this.doc, this.error].join("|");
    if (this.el && this.key === key) {
      this.refresh();
      return this.el;
    }
    this.key = key;
    this.el = this.build();
    this.refresh();
    return this.el;
  }

  build() {
    if (!this.doc) {
      const text = this.error === "not_found" ? t("replay.notAvailable") : this.error ? t("replay.failed") : t("replay.loading");
      return h(
        "section",
        { class: "panel narrow replay-missing", "data-testid": "replay" },
        h("h1", {}, t("replay.title")),
        h("p", { "data-testid": "replay-message", role: this.error ? "alert" : null }, text),
        this.error
          ? h("button", { type: "button", class: "secondary", "data-testid": "replay-retry", onclick: () => ((this.error = null), (this.el = null), this.app.render(), this.load()) }, t("replay.retry"))
          : null,
        h("p", {}, h("a", { href: "/", onclick: (e) => (e.preventDefault(), this.app.nav.go("/")) }, t("replay.toLobby"))),
      );
    }
    const doc = this.doc;
    this.parts = {
      status: h("p", { class: "replay-step", "data-testid": "replay-step" }),
      play: h("button", { type: "button", class: "primary", "data-testid": "replay-play", onclick: () => this.togglePlay() }),
      back: h("button", { type: "button", class: "secondary", "data-testid": "replay-back", onclick: () => this.goTo(this.step - 1) }, t("replay.back")),
      forward: h("button", { type: "button", class: "secondary", "data-testid": "replay-forward", onclick: () => this.goTo(this.step + 1) }, t("replay.forward")),
      scrubber: h("input", {
        type: "range",
        id: "replay-scrubber",
        min: 0,
        max: this.actions.length,
        step: 1,
        value: 0,
        "data-testid": "replay-scrubber",
        oninput: (e) => this.goTo(Number(e.target.value), { announce: false }),
        onchange: (e) => this.goTo(Number(e.target.value)),
      }),
      speeds: SPEEDS.map((speed) =>
        h("button", { type: "button", class: "ghost small speed", "data-speed": speed, "data-testid": `replay-speed-${speed}`, onclick: () => this.setSpeed(speed) }, `${speed}×`),
      ),
      moves: h("ol", { class: "replay-moves", "data-testid": "replay-moves" }),
    };
    const p = this.parts;
    this.moveButtons = this.actions.map((action, i) =>
      h(
        "li",
        {},
        h(
          "button",
          { type: "button", class: "ghost small move", "data-step": i + 1, onclick: () => this.goTo(i + 1) },
          h("span", { class: "move-no" }, `${i + 1}.`),
          " ",
          actionText(action.a),
          " ",
          h("span", { class: "muted" }, formatDuration(action.t)),
        ),
      ),
    );
    mount(p.moves, this.moveButtons);
    const racerPicker =
      doc.racers.length > 1
        ? h(
            "label",
            { class: "replay-racer" },
            t("replay.racer"),
            " ",
            h(
              "select",
              { "data-testid": "replay-racer", onchange: (e) => this.setRacer(Number(e.target.value)) },
              doc.racers.map((r, i) => h("option", { value: i, selected: i === this.racer }, r.name)),
            ),
          )
        : null;
    const result = doc.racers[this.racer].result;
    return h(
      "div",
      { class: "replay", "data-testid": "replay" },
      h(
        "section",
        { class: "panel replay-head" },
        h("h1", {}, t("replay.title")),
        h("p", { class: "muted small", "data-testid": "replay-deal" }, withDealCode(t("replay.deal", { code: doc.deal, kind: t(`replay.kind.${doc.kind}`) }), doc.deal)),
        h("p", { class: "small" }, h("b", {}, doc.racers[this.racer].name), " · ", t(`status.${result.status}`), " · ", t("replay.result", { n: result.foundation, moves: result.moves, time: formatDuration(result.time_ms) })),
        racerPicker,
      ),
      h("div", { class: "replay-board", "data-testid": "replay-board" }, this.board.el),
      h(
        "section",
        { class: "panel replay-controls", "aria-label": t("replay.controls") },
        p.status,
        h("div", { class: "buttons" }, p.back, p.play, p.forward),
        h("label", { for: "replay-scrubber", class: "small" }, t("replay.scrubber")),
        p.scrubber,
        h("div", { class: "speeds", role: "group", "aria-label": t("replay.speed") }, h("span", { class: "small", "aria-hidden": "true" }, t("replay.speed")), " ", p.speeds),
      ),
      h("section", { class: "panel replay-chart" }, h("h2", {}, t("replay.chart")), this.chart()),
      h("section", { class: "panel replay-list" }, h("h2", { id: "replay-moves-title" }, t("replay.moves")), h("nav", { "aria-labelledby": "replay-moves-title" }, p.moves)),
      h(
        "section",
        { class: "panel replay-ghost" },
        h("h2", {}, t("ghost.title")),
        h("p", { class: "small muted" }, t("ghost.help", { name: doc.racers[this.racer].name })),
        h("button", { type: "button", class: "primary", "data-testid": "race-ghost", onclick: () => this.app.ghost.start(doc, this.racer) }, t("ghost.race", { name: doc.racers[this.racer].name })),
      ),
      h("section", { class: "panel replay-share" }, h("h2", {}, t("replay.share")), this.shareRow()),
    );
  }

  /** Bring the controls, the board and the move list up to the current step. */
  refresh() {
    if (!this.el || !this.doc || !this.parts) return;
    const p = this.parts;
    const racer = this.racers[this.racer];
    this.board.setView(racer.views[this.step], this.doc.variant);
    p.status.textContent = this.stepText();
    p.play.textContent = this.playing ? t("replay.pause") : t("replay.play");
    p.play.setAttribute("aria-pressed", this.playing ? "true" : "false");
    /** @type {HTMLButtonElement} */ (p.back).disabled = this.step === 0;
    /** @type {HTMLButtonElement} */ (p.forward).disabled = this.step >= this.actions.length;
    const scrubber = /** @type {HTMLInputElement} */ (p.scrubber);
    scrubber.value = String(this.step);
    scrubber.setAttribute("aria-valuetext", this.stepText());
    for (const button of p.speeds) button.setAttribute("aria-pressed", Number(button.dataset.speed) === this.speed ? "true" : "false");
    const previous = p.moves.querySelector("[aria-current]");
    if (previous) previous.removeAttribute("aria-current");
    const current = this.moveButtons[this.step - 1];
    if (current) {
      const button = /** @type {HTMLElement} */ (current.firstChild);
      button.setAttribute("aria-current", "step");
      if (this.playing) current.scrollIntoView({ block: "nearest" });
    }
    this.moveChartMarker();
  }

  /** Every racer's foundation count (8 … 104) over the race's time, one line each. */
  chart() {
    const series = this.doc.racers.map((r, i) => ({ name: r.name, counts: this.racers[i].counts, result: r.result }));
    const chart = foundationChart(series, this.racer);
    this.chartScale = chart.scale;
    return chart.el;
  }

  moveChartMarker() {
    const marker = this.el && this.el.querySelector("[data-testid=chart-now]");
    if (!marker || !this.chartScale) return;
    const at = this.step === 0 ? 0 : this.actions[this.step - 1].t;
    const x = this.chartScale.x(at);
    marker.setAttribute("x1", x);
    marker.setAttribute("x2", x);
  }

  shareRow() {
    const link = `${location.origin}/g/${this.gameId}`;
    return [
      shareLink(
        link,
        { type: "text", "aria-label": t("replay.shareLabel"), "data-testid": "replay-link", onfocus: (e) => e.target.select() },
        { class: "secondary", "data-testid": "replay-copy" },
      ),
      isLoopback(location.hostname) ? h("p", { class: "muted small", "data-testid": "local-only" }, t("replay.localOnly")) : null,
    ];
  }
}

/**
 * One small SVG chart of foundation counts (8 … 104) over time, one step line per series
 * ({name, counts: [{t, n}], result?}), the `bold` one thicker, with a marker line
 * (`data-testid=chart-now`) and a legend. Returns the element; `.scale` maps ms to x.
 * @param {{name: string, counts: {t: number, n: number}[], result?: any}[]} series
 * @param {number} [bold]
 */
export function foundationChart(series, bold = 0) {
  const end = Math.max(1, ...series.map((s) => s.counts[s.counts.length - 1].t));
  const x = (ms) => ((ms / end) * (CHART_W - 30) + 28).toFixed(1);
  const y = (n) => (CHART_H - 14 - ((n - 8) / 96) * (CHART_H - 22)).toFixed(1);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", `0 0 ${CHART_W} ${CHART_H}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("class", "foundation-chart");
  svg.setAttribute("data-testid", "replay-chart");
  const last = (s) => s.counts[s.counts.length - 1];
  const summary = series.map((s) => t("replay.chartRacer", { name: s.name, n: last(s).n, time: formatDuration(s.result ? s.result.time_ms : last(s).t) })).join("; ");
  svg.setAttribute("aria-label", `${t("replay.chart")}: ${summary}`);
  const lines = [
    `<line x1="28" y1="${y(8)}" x2="${CHART_W - 2}" y2="${y(8)}" class="axis"/>`,
    `<line x1="28" y1="${y(104)}" x2="28" y2="${y(8)}" class="axis"/>`,
    `<text x="24" y="${Number(y(104)) + 4}" class="tick" text-anchor="end">104</text>`,
    `<text x="24" y="${y(8)}" class="tick" text-anchor="end">8</text>`,
    `<text x="${CHART_W - 2}" y="${CHART_H - 2}" class="tick" text-anchor="end">${formatDuration(end)}</text>`,
  ];
  series.forEach((s, i) => {
    let points = "";
    let previous = 8;
    for (const { t: at, n } of s.counts) {
      points += `${x(at)},${y(previous)} ${x(at)},${y(n)} `; // a step line: counts change at an action
      previous = n;
    }
    points += `${x(end)},${y(previous)}`;
    lines.push(`<polyline points="${points}" fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="${i === bold ? 2.5 : 1.5}" />`);
  });
  lines.push(`<line class="now" data-testid="chart-now" x1="28" x2="28" y1="${y(104)}" y2="${y(8)}" />`);
  svg.innerHTML = lines.join("");
  const legend = h(
    "ul",
    { class: "chart-legend", "aria-hidden": "true" },
    series.map((s, i) => h("li", {}, h("span", { class: "swatch", style: `background:${COLORS[i % COLORS.length]}` }), s.name)),
  );
  return { el: h("div", {}, svg, legend), scale: { end, x } };
}

/** An action as the move list shows it: "p3 → ad", "Redeal", "Undo", "Resign". */
export function actionText(action) {
  if (action === "redeal" || action === "undo" || action === "resign") return t(`replay.action.${action}`);
  return action.replace("-", " → ");
}

// --- is a game archived yet? (the results dialog shows its replay link once it is) ----------

const ARCHIVE_POLL_MS = 1000;
const ARCHIVE_POLL_TRIES = 30;
/** @type {Map<string, "waiting" | "ready" | "missing">} */
const archived = new Map();

/**
 * Whether the archived game `id` can be read: "ready", "waiting" (asked once a second,
 * `onChange` called when the answer changes) or "missing" (not archived after 30 tries:
 * a server without an archive, or a deal still sealed).
 */
export function archiveState(id, onChange) {
  const known = archived.get(id);
  if (known) return known;
  archived.set(id, "waiting");
  const ask = async (tries) => {
    let ok;
    try {
      ok = (await fetch(`/api/games/${encodeURIComponent(id)}.json`, { method: "HEAD" })).ok;
    } catch {
      ok = false;
    }
    if (ok || tries <= 1) {
      archived.set(id, ok ? "ready" : "missing");
      onChange();
    } else setTimeout(() => ask(tries - 1), ARCHIVE_POLL_MS);
  };
  ask(ARCHIVE_POLL_TRIES);
  return "waiting";
}

/** A link to a game's replay that the page follows itself. */
export function replayLink(app, id, text = t("replay.watch"), testid = "watch-replay") {
  return h("a", { href: `/g/${id}`, class: "replay-link", "data-testid": testid, onclick: (e) => (e.preventDefault(), app.nav.go(`/g/${id}`)) }, text);
}
