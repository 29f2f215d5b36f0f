// The lobby's tournament panel (create one, or join / watch one by its code) and the
// create form.
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { limitLabel, normalizeTournamentCode, parseDeals } from "./tournament-model.js";

export const T_TIME_LIMITS = [30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200];
const VARIANTS = ["N", "F", "O", "R"];

/** The lobby's tournament form: name, rounds, deals, variant, time limit, players, scoring. */
/** @param {Pick<import("./app.js").App, "tournament" | "ui" | "nav" | "state" | "render" | "session">} app */
export function createForm(app) {
  const tab = app.tournament;
  const draft = app.ui.tournamentDraft;
  const input = (attrs) => h("input", attrs);
  const yourName = input({ id: "t-host-name", maxlength: 24, autocomplete: "nickname", placeholder: t("lobby.namePlaceholder"), value: app.nav.localName(), "data-testid": "name" });
  const name = input({ id: "t-name", maxlength: 40, required: true, placeholder: t("t.namePlaceholder"), "data-testid": "t-name-input" });
  const rounds = h("select", { id: "t-rounds", "data-testid": "t-rounds" }, Array.from({ length: 20 }, (_, i) => h("option", { value: i + 1, selected: i + 1 === 3 }, String(i + 1))));
  const dealMode = h(
    "select",
    { id: "t-deal-mode", "data-testid": "t-deal-mode" },
    h("option", { value: "random" }, t("t.dealsRandom")),
    h("option", { value: "codes" }, t("t.dealsCodes")),
  );
  const deals = h("textarea", { id: "t-deals", rows: 3, spellcheck: "false", autocapitalize: "characters", placeholder: t("t.dealsPlaceholder"), hidden: true, "data-testid": "t-deals" });
  const variant = h("select", { id: "t-variant", "data-testid": "t-variant" }, VARIANTS.map((v) => h("option", { value: v }, t(`variant.${v}`))));
  const limit = h("select", { id: "t-limit", "data-testid": "t-limit" }, T_TIME_LIMITS.map((s) => h("option", { value: s, selected: s === 300 }, limitLabel(s))));
  const maxPlayers = input({ id: "t-max", type: "number", min: 2, max: 200, value: 50, inputmode: "numeric", "data-testid": "t-max" });
  const scoring = h(
    "select",
    { id: "t-scoring", "data-testid": "t-scoring" },
    h("option", { value: "placement" }, t("t.scoring.placement")),
    h("option", { value: "time" }, t("t.scoring.time")),
  );
  const scoringHelp = h("p", { class: "muted small", "data-testid": "t-scoring-help" });
  const controls = { name, rounds, dealMode, deals, variant, limit, maxPlayers, scoring };
  for (const [key, control] of Object.entries(controls)) {
    if (draft[key] != null) /** @type {HTMLInputElement} */ (control).value = draft[key];
    const remember = () => (draft[key] = /** @type {HTMLInputElement} */ (control).value);
    control.addEventListener("input", remember);
    control.addEventListener("change", remember);
  }
  const sync = () => {
    deals.hidden = dealMode.value !== "codes";
    scoringHelp.textContent = scoring.value === "time" ? t("t.timeHow") : t("t.placementHow");
  };
  dealMode.addEventListener("change", () => {
    sync();
    if (!deals.hidden) deals.focus();
  });
  scoring.addEventListener("change", sync);
  sync();
  const submit = (e) => {
    e.preventDefault();
    const n = Number(rounds.value);
    const max = Number(/** @type {HTMLInputElement} */ (maxPlayers).value);
    const title = /** @type {HTMLInputElement} */ (name).value.trim();
    let problem = null;
    let chosen = null;
    if (!title) problem = t("t.needName");
    else if (!Number.isInteger(max) || max < 2 || max > 200) problem = t("t.badMax");
    else if (dealMode.value === "codes") {
      chosen = parseDeals(/** @type {HTMLTextAreaElement} */ (deals).value);
      if (chosen.length !== n) problem = t("t.dealCount", { n, got: chosen.length });
    }
    if (problem) {
      tab.model.formError = problem;
      app.render();
      return;
    }
    const options = { name: title, rounds: n, deals: chosen, variant: variant.value, time_limit: Number(limit.value), max_players: max, scoring: scoring.value };
    const wanted = /** @type {HTMLInputElement} */ (yourName).value.trim();
    const then = () => tab.create(options);
    if (wanted && (!app.state.player || wanted !== app.state.player.name)) app.session.rename(wanted, then);
    else then();
  };
  const field = (label, ...els) => h("div", { class: "field" }, h("label", { for: els[0].id }, label), ...els);
  return h(
    "form",
    { class: "panel t-create", onsubmit: submit, "data-testid": "t-create-form" },
    h("h1", {}, t("t.createTitle")),
    h("p", { class: "muted small" }, t("t.createInfo")),
    field(t("lobby.name"), yourName),
    field(t("t.name"), name),
    h("div", { class: "row2" }, field(t("t.rounds"), rounds), field(t("t.timeLimit"), limit)),
    field(t("t.deals"), dealMode, deals),
    field(t("lobby.variant"), variant),
    h("div", { class: "row2" }, field(t("t.maxPlayers"), maxPlayers), field(t("t.scoring"), scoring)),
    scoringHelp,
    tab.model.formError ? h("p", { class: "error", role: "alert", "data-testid": "t-form-error" }, tab.model.formError) : null,
    h(
      "div",
      { class: "buttons" },
      h("button", { type: "submit", class: "primary gold", "data-testid": "t-create" }, t("t.createButton")),
      h("button", { type: "button", class: "ghost", "data-testid": "t-cancel", onclick: () => ((app.state.tCreate = false), app.render()) }, t("game.cancel")),
    ),
  );
}

/** The lobby's tournament panel: create one, or join / watch one by its code. */
/** @param {Pick<import("./app.js").App, "nav" | "state" | "render">} app */
export function lobbyPanel(app, withName) {
  const code = h("input", {
    id: "t-join-code",
    maxlength: 7,
    placeholder: "TK7PQ2X",
    autocapitalize: "characters",
    spellcheck: "false",
    "data-testid": "t-join-code",
  });
  const go = (as) => (e) => {
    e.preventDefault();
    const value = normalizeTournamentCode(/** @type {HTMLInputElement} */ (code).value);
    if (!value) return code.focus();
    withName(() => app.nav.openTournament(value, as));
  };
  return h(
    "section",
    { class: "panel t-lobby", "data-testid": "t-lobby" },
    h("h2", {}, t("t.lobbyTitle")),
    h("p", { class: "howto" }, t("t.lobbyInfo")),
    h("button", { type: "button", class: "primary gold wide", "data-testid": "t-open-create", onclick: () => withName(() => ((app.state.tCreate = true), app.render())) }, t("t.createTitle")),
    h(
      "form",
      { class: "t-join-code", onsubmit: go("player") },
      h("div", { class: "field" }, h("label", { for: "t-join-code" }, t("t.code")), code),
      h(
        "div",
        { class: "buttons" },
        h("button", { type: "submit", class: "primary", "data-testid": "t-join-by-code" }, t("lobby.joinButton")),
        h("button", { type: "button", class: "secondary", "data-testid": "t-watch-by-code", onclick: go("spectator") }, t("lobby.watchButton")),
      ),
    ),
  );
}
