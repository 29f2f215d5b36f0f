// The screens, rendered from the app's state: the top bar, the connection banner, and
// renderMain, which picks the screen (lobby, name gate, tournament form or page, Daily
// tab, waiting room, race); the lobby's screens are in lobby-views.js, the race's (board,
// HUD, live progress, countdown, results) in race-views.js.
import { cardSvg } from "./cards.js";
import { h, mount } from "./dom.js";
import { LANGUAGES, formatDuration, t } from "./i18n.js";
import { createForm } from "./tournament-form.js";
import { lobby, nameGate, waitingRoom } from "./lobby-views.js";
import { elapsedFor, myProgress, raceScreen, renderOverlay, tickCountdown, tickRacePanel, updateHud, updateRacePanel } from "./race-views.js";
import { ICONS } from "./icons.js";

/** @typedef {import("./app.js").App} App */

/**
 * What the views keep between renders: the screens' live elements, and the keys that say
 * whether a screen must be rebuilt (rebuilding would lose what the player is typing, or
 * move a button under a tap). One per app (`app.ui`).
 */
export function screenState() {
  return {
    /** @type {string | null} */ screenKey: null,
    /** @type {HTMLElement | null} */ statusEl: null,
    /** @type {HTMLElement | null} */ racePanelEl: null,
    /** @type {HTMLElement | null} */ hudEl: null,
    /** @type {HTMLElement | null} */ countdownEl: null,
    /** @type {string | null} */ overlayKey: null,
    /** @type {string | null} */ saidStatus: null,
    /** @type {{ release: (returnTo?: any) => boolean, returnTo: any } | null} */ resultsModal: null,
    /** @type {Record<string, any>} */ lobbyDraft: {},
    /** @type {Record<string, any>} */ tournamentDraft: {},
  };
}

// --- top bar and banner -------------------------------------------------------------------------

/** @param {Pick<App, "account" | "feedback" | "language" | "nav" | "setLanguage" | "state" | "topbar">} app */
export function renderTopbar(app) {
  const room = app.state.room;
  const select = h(
    "select",
    {
      class: "lang",
      "aria-label": t("lang.label"),
      "data-testid": "language",
      onchange: (e) => app.setLanguage(e.target.value),
    },
    LANGUAGES.map((lang) =>
      h("option", { value: lang.code, selected: lang.code === app.language }, lang.label),
    ),
  );
  mount(
    app.topbar,
    h(
      "a",
      { class: "brand", href: "/", onclick: (e) => (e.preventDefault(), app.nav.go("/")) },
      h("span", { class: "brand-mark", "aria-hidden": "true", html: cardSvg("AS") }),
      h("span", { class: "brand-name" }, t("app.title")),
    ),
    app.state.tournamentCode
      ? h("span", { class: "room-chip", "data-testid": "room-chip" }, h("span", { class: "chip-label" }, `${t("t.tournament")} `), h("b", {}, app.state.tournamentCode))
      : room
        ? h("span", { class: "room-chip", "data-testid": "room-chip" }, `${t("room.code")} `, h("b", {}, room.code))
        : null,
    h("span", { class: "spacer" }),
    app.state.player && !app.account.showsHandle ? h("span", { class: "who" }, app.state.player.name) : null,
    app.account.topbarItem(),
    h(
      "button",
      {
        type: "button",
        class: "icon-button",
        "aria-label": t("help.title"),
        title: t("help.title"),
        "data-testid": "help",
        onclick: () => app.feedback.showHowTo(),
      },
      "?",
    ),
    h(
      "button",
      {
        type: "button",
        class: "icon-button",
        "aria-label": t("sound.label"),
        "aria-pressed": app.feedback.soundOn ? "true" : "false",
        title: t("sound.label"),
        "data-testid": "sound",
        onclick: () => app.feedback.toggleSound(),
      },
      h("span", { class: "icon", html: app.feedback.soundOn ? ICONS.soundOn : ICONS.soundOff }),
    ),
    select,
  );
}

/** @param {Pick<App, "account" | "banner" | "conn" | "session" | "state">} app */
export function renderBanner(app) {
  const { net } = app.state;
  let content = null;
  if (net === "connecting") content = [t("net.connecting")];
  else if (net === "lost") content = [t("net.lost")];
  else if (net === "signed_out") content = app.account.bannerContent();
  else if (net === "unreachable") {
    const seconds = Math.max(0, Math.ceil((app.session.retryAt - Date.now()) / 1000));
    content = [
      t("net.unreachable", { s: seconds }),
      " ",
      h("button", { type: "button", class: "link", onclick: () => app.conn.retryNow() }, t("net.retryNow")),
    ];
  }
  app.banner.className = `banner ${content ? `show ${net}` : ""}`;
  app.banner.dataset.net = net;
  if (content) mount(app.banner, ...content);
  else app.banner.replaceChildren();
}

// --- main ---------------------------------------------------------------------------------------

/** @param {App} app */
export function renderMain(app) {
  const { roomCode, room, wantsName } = app.state;
  app.main.className = "main";
  renderOverlay(app);
  // A racer's race screen is exactly the viewport (see .race-mode in styles.css).
  const racer = !!room && app.phase() !== "waiting" && !!app.state.you && app.state.you.role === "racer";
  app.root.classList.toggle("race-mode", racer);
  // The replay viewer (kept while the same game is shown, refreshed in place).
  if (app.state.replayId) {
    app.ui.screenKey = "replay";
    const el = app.replay.view();
    if (app.main.firstChild !== el || app.main.childNodes.length !== 1) mount(app.main, el);
    return;
  }
  if (app.state.meOpen || app.state.profileHandle) {
    app.ui.screenKey = "account";
    if (app.state.profileHandle) app.profile.open(app.state.profileHandle);
    const el = app.state.meOpen ? app.me.view() : app.profile.view();
    if (app.main.firstChild !== el || app.main.childNodes.length !== 1) mount(app.main, el);
    return;
  }
  if (app.state.historyOpen) {
    app.ui.screenKey = "history";
    const el = app.history.view();
    if (app.main.firstChild !== el || app.main.childNodes.length !== 1) mount(app.main, el);
    return;
  }
  // A tournament's page (kept, refreshed part by part); its round's board is the race below.
  if (app.state.tournamentCode && !(roomCode && room)) {
    app.ui.screenKey = "tournament";
    const el = app.tournament.page.view();
    if (app.main.firstChild !== el || app.main.childNodes.length !== 1) mount(app.main, el);
    return;
  }
  // The lobby and the name form are rebuilt only when their words change, so what the
  // player is typing survives a welcome or a status change.
  if (!roomCode && app.state.tCreate) {
    const key = ["t-create", app.language, app.tournament.model.formError].join("|");
    if (key === app.ui.screenKey && app.main.firstChild) return;
    app.ui.screenKey = key;
    return mount(app.main, h("div", { class: "t-create-wrap" }, createForm(app)));
  }
  if (!roomCode && app.state.dailyOpen) {
    const key = ["daily", app.language].join("|");
    if (key === app.ui.screenKey && app.main.firstChild) return;
    app.ui.screenKey = key;
    return mount(app.main, app.daily.view());
  }
  if (!roomCode || (!room && wantsName)) {
    const key = [roomCode ? "gate" : "lobby", app.language, app.state.error, app.account.key].join("|");
    if (key === app.ui.screenKey && app.main.firstChild) return;
    app.ui.screenKey = key;
    return mount(app.main, roomCode ? nameGate(app) : lobby(app));
  }
  if (!room) {
    return mount(
      app.main,
      h(
        "section",
        { class: "panel narrow" },
        app.state.error
          ? [
              h("p", { class: "error", role: "alert" }, app.state.error),
              h("button", { type: "button", class: "primary", "data-testid": "to-lobby", onclick: () => app.nav.go("/") }, t("lobby.create")),
            ]
          : h("p", { class: "muted" }, t("net.connecting")),
      ),
    );
  }
  const phase = app.phase();
  if (phase === "waiting") {
    app.ui.screenKey = null;
    return mount(app.main, waitingRoom(app));
  }
  // The race screen stays in place while the race goes on (a pointer pressed on a card
  // must find the same element when it is released); only its parts are refreshed.
  const key = [room.code, room.round, phase, app.state.you && app.state.you.role, !!app.state.view, app.language].join("|");
  if (key === app.ui.screenKey && app.ui.racePanelEl && app.main.contains(app.ui.racePanelEl)) {
    updateHud(app);
    updateRacePanel(app);
    return;
  }
  app.ui.screenKey = key;
  mount(app.main, raceScreen(app));
}

/** Four times a second: clocks, countdown, time left. */
/** @param {Pick<App, "conn" | "ghost" | "main" | "phase" | "state" | "ui">} app */
export function tick(app) {
  tickCountdown(app);
  const room = app.state.room;
  if (!room) return;
  const mine = app.main.querySelector(".my-time");
  if (mine) mine.textContent = formatDuration(elapsedFor(app, myProgress(app)));
  if (app.phase() === "racing") tickRacePanel(app);
}

export { shownStatus, updateHud, updateRacePanel } from "./race-views.js";
