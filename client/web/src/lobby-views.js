// The lobby's screens: the lobby (create, join, play alone, the daily and tournament
// panels), the name gate of a visitor who came by link, and the waiting room.
import { ME_PATH } from "./account-page.js";
import { HISTORY_PATH } from "./history-page.js";
import { cardSvg } from "./cards.js";
import { h, isLoopback, shareLink, withDealCode } from "./dom.js";
import { formatDuration, t } from "./i18n.js";
import { lobbyPanel } from "./tournament-form.js";


/** @typedef {import("./app.js").App} App */

export const TIME_LIMITS = [null, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600];

export const VARIANTS = ["N", "F", "O", "R"];

/** @param {Pick<App, "account" | "feedback" | "nav" | "render" | "session" | "state" | "ui">} app */
export function lobby(app) {
  const name = h("input", {
    id: "name",
    name: "name",
    maxlength: 24,
    autocomplete: "nickname",
    placeholder: t("lobby.namePlaceholder"),
    value: localName(),
    "data-testid": "name",
  });
  const dealMode = h(
    "select",
    { id: "deal-mode", "data-testid": "deal-mode" },
    h("option", { value: "random" }, t("lobby.dealRandom")),
    h("option", { value: "code" }, t("lobby.dealCode")),
  );
  const dealCode = h("input", {
    id: "deal-code",
    placeholder: t("lobby.dealCodePlaceholder"),
    maxlength: 32,
    autocapitalize: "characters",
    spellcheck: "false",
    hidden: true,
    "data-testid": "deal-code",
  });
  dealMode.addEventListener("change", () => {
    dealCode.hidden = dealMode.value !== "code";
    if (!dealCode.hidden) dealCode.focus();
  });
  const variant = h(
    "select",
    { id: "variant", "data-testid": "variant" },
    VARIANTS.map((v) => h("option", { value: v }, t(`variant.${v}`))),
  );
  const seats = h(
    "select",
    { id: "seats", "data-testid": "seats" },
    [2, 3, 4, 5, 6, 7, 8].map((n) => h("option", { value: n, selected: n === 4 }, String(n))),
  );
  const limit = h(
    "select",
    { id: "time-limit", "data-testid": "time-limit" },
    TIME_LIMITS.map((s) =>
      h(
        "option",
        { value: s ?? "", selected: s === 600 },
        s == null ? t("lobby.noLimit") : s < 60 ? `${s} s` : t("lobby.minutes", { n: s / 60 }),
      ),
    ),
  );
  const joinCode = h("input", {
    id: "join-code",
    maxlength: 6,
    placeholder: t("lobby.joinCodePlaceholder"),
    autocapitalize: "characters",
    spellcheck: "false",
    "data-testid": "join-code",
  });

  const withName = (then) => {
    const wanted = name.value.trim();
    if (wanted && (!app.state.player || wanted !== app.state.player.name)) app.session.rename(wanted, then);
    else then();
  };
  // What the player chose survives a rebuild of the lobby (an error shown, the language
  // changed): a bad deal code stays in its field, to be corrected.
  const draft = app.ui.lobbyDraft;
  const controls = { dealMode, dealCode, variant, seats, limit, joinCode };
  for (const [key, control] of Object.entries(controls)) {
    if (draft[key] != null) control.value = draft[key];
    const remember = () => (draft[key] = control.value);
    control.addEventListener("input", remember);
    control.addEventListener("change", remember);
  }
  dealCode.hidden = dealMode.value !== "code";
  const dealOptions = () => {
    const options = { variant: variant.value };
    if (dealMode.value === "code" && dealCode.value.trim()) options.deal = dealCode.value.trim().toUpperCase();
    return options;
  };
  const create = (e) => {
    e.preventDefault();
    const options = { ...dealOptions(), seats: Number(seats.value), time_limit: limit.value ? Number(limit.value) : null };
    withName(() => app.nav.createRoom(options));
  };
  const alone = (e) => {
    e.preventDefault();
    withName(() => app.nav.playAlone({ ...dealOptions(), time_limit: null }));
  };
  const join = (as) => (e) => {
    e.preventDefault();
    const code = joinCode.value.trim().toUpperCase();
    if (!code) return joinCode.focus();
    withName(() => {
      history.pushState({}, "", `/r/${code}`);
      app.state.roomCode = code;
      app.nav.joinRoom(code, as);
      app.render();
    });
  };

  return h(
    "div",
    { class: "lobby" },
    h(
      "section",
      { class: "hero" },
      h("div", { class: "hero-cards", "aria-hidden": "true" }, ["AS", "KH", "7D", "QC", "AH"].map((c, i) => h("span", { class: `card hero-card c${i}`, html: cardSvg(c) }))),
      h("h1", {}, t("app.title")),
      h("p", { class: "tagline" }, t("app.tagline")),
    ),
    app.state.error ? h("p", { class: "error", role: "alert", "data-testid": "error" }, app.state.error) : null,
    h(
      "div",
      { class: "lobby-grid" },
      h(
        "section",
        { class: "panel name-panel" },
        h("label", { for: "name" }, t("lobby.name")),
        name,
        h("p", { class: "howto" }, t("lobby.howTo")),
        h("button", { type: "button", class: "secondary", "data-testid": "how-to-play", onclick: () => app.feedback.showHowTo() }, t("help.title")),
        h("h2", { class: "alone-title" }, t("lobby.alone")),
        h("p", { class: "howto" }, t("lobby.aloneInfo")),
        h("button", { type: "button", class: "primary gold wide", "data-testid": "play-alone", onclick: alone }, t("lobby.aloneButton")),
        h("h2", { class: "alone-title" }, t("daily.title")),
        h("p", { class: "howto" }, t("daily.lobbyInfo")),
        h("button", { type: "button", class: "secondary wide", "data-testid": "open-daily", onclick: () => withName(() => app.nav.go("/daily")) }, t("daily.open")),
        h("p", {}, h("a", { href: HISTORY_PATH, "data-testid": "open-history", onclick: (e) => (e.preventDefault(), app.nav.go(HISTORY_PATH)) }, t("history.title"))),
        app.account.lobbyPanel(),
        h("p", {}, h("a", { href: ME_PATH, "data-testid": "open-me", onclick: (e) => (e.preventDefault(), app.nav.go(ME_PATH)) }, t("me.title"))),
      ),
      h(
        "form",
        { class: "panel", onsubmit: create, "data-testid": "create-form" },
        h("h2", {}, t("lobby.create")),
        field(t("lobby.deal"), dealMode, dealCode),
        field(t("lobby.variant"), variant),
        h("div", { class: "row2" }, field(t("lobby.seats"), seats), field(t("lobby.timeLimit"), limit)),
        h("button", { type: "submit", class: "primary", "data-testid": "create" }, t("lobby.createButton")),
      ),
      h(
        "form",
        { class: "panel", onsubmit: join("racer"), "data-testid": "join-form" },
        h("h2", {}, t("lobby.join")),
        field(t("lobby.joinCode"), joinCode),
        h(
          "div",
          { class: "buttons" },
          h("button", { type: "submit", class: "primary", "data-testid": "join" }, t("lobby.joinButton")),
          h("button", { type: "button", class: "secondary", onclick: join("spectator"), "data-testid": "watch" }, t("lobby.watchButton")),
        ),
      ),
    ),
    lobbyPanel(app, withName),
  );
}

/** The name this browser chose (a guest name the server made up is not one). */
export function localName() {
  try {
    return localStorage.getItem("crescent.name") || "";
  } catch {
    return "";
  }
}

export function field(label, ...controls) {
  const id = controls[0].id;
  return h("div", { class: "field" }, h("label", { for: id }, label), ...controls);
}

/** A visitor who came by link and has no name yet: ask for it before joining. */
/** @param {Pick<App, "nav" | "render" | "session" | "state">} app */
export function nameGate(app) {
  const name = h("input", {
    id: "name",
    maxlength: 24,
    placeholder: t("lobby.namePlaceholder"),
    value: localName(),
    "data-testid": "name",
    autofocus: true,
  });
  const go = (as) => (e) => {
    e.preventDefault();
    const wanted = name.value.trim();
    app.state.wantsName = false;
    const then = () => app.nav.joinRoom(app.state.roomCode, as);
    if (wanted) app.session.rename(wanted, then);
    else then();
    app.render();
  };
  return h(
    "form",
    { class: "panel narrow", onsubmit: go("racer"), "data-testid": "name-gate" },
    h("h2", {}, `${t("lobby.join")}: ${app.state.roomCode}`),
    field(t("lobby.name"), name),
    h(
      "div",
      { class: "buttons" },
      h("button", { type: "submit", class: "primary", "data-testid": "join" }, t("lobby.joinButton")),
      h("button", { type: "button", class: "secondary", onclick: go("spectator"), "data-testid": "watch" }, t("lobby.watchButton")),
    ),
  );
}

export function roomSummary(room) {
  return [
    t(`variant.${room.variant}`),
    room.time_limit ? t("room.timeLimit", { t: formatDuration(room.time_limit * 1000) }) : t("room.noLimit"),
    t("room.round", { n: room.round }),
  ].join(" · ");
}

/** @param {Pick<App, "nav" | "practice" | "state">} app */
export function waitingRoom(app) {
  const { room, player, you } = app.state;
  const me = room.players.find((p) => player && p.id === player.id);
  const racers = room.players.filter((p) => p.role === "racer");
  const spectators = room.players.filter((p) => p.role !== "racer");
  const isHost = player && room.host === player.id;
  const link = `${location.origin}${room.link || `/r/${room.code}`}`;
  const amRacer = you && you.role === "racer";
  return h(
    "section",
    { class: "panel waiting", "data-testid": "waiting-room" },
    app.state.notice ? h("p", { class: "notice" }, app.state.notice) : null,
    h(
      "div",
      { class: "code-block" },
      h("div", { class: "code-label" }, t("room.code")),
      h("div", { class: "code", "data-testid": "room-code" }, room.code),
      shareLink(link, { class: "link-input", "aria-label": "link" }, { class: "secondary small" }),
      isLoopback(location.hostname) ? h("p", { class: "muted small", "data-testid": "local-only" }, t("room.localOnly")) : null,
    ),
    h("p", { class: "muted" }, roomSummary(room)),
    room.deal_known && room.deal
      ? h("p", { class: "muted known-deal", "data-testid": "known-deal" }, withDealCode(t("room.knownDeal", { code: room.deal }), room.deal))
      : room.deal ? h("p", { class: "muted" }, `${t("lobby.dealCode")}: `, h("code", { class: "deal-code" }, room.deal)) : null,
    h("h2", {}, t("room.players"), h("span", { class: "muted small" }, ` ${t("room.seatsInfo", { taken: racers.length, n: room.seats })}`)),
    h(
      "ul",
      { class: "players", "data-testid": "players" },
      racers.map((p) =>
        h(
          "li",
          { class: `player ${p.ready ? "is-ready" : ""} ${p.connected === false ? "offline" : ""}`, "data-player": p.id },
          h("span", { class: "avatar", "aria-hidden": "true" }, initials(p.name)),
          h("span", { class: "pname", title: p.name }, p.name),
          p.id === room.host ? h("span", { class: "tag host" }, t("room.host")) : null,
          player && p.id === player.id ? h("span", { class: "tag you" }, t("room.you")) : null,
          p.connected === false ? h("span", { class: "tag off" }, t("room.offline")) : null,
          h("span", { class: `ready-mark ${p.ready ? "yes" : "no"}` }, p.ready ? `✓ ${t("room.ready")}` : t("room.notReady")),
        ),
      ),
      Array.from({ length: Math.max(0, room.seats - racers.length) }, () => h("li", { class: "player open-seat" }, h("span", { class: "avatar", "aria-hidden": "true" }, "?"), h("span", { class: "pname muted" }, "…"))),
    ),
    spectators.length
      ? h("p", { class: "muted" }, `${t("room.spectators")}: `, spectators.map((p) => p.name).join(", "))
      : null,
    app.state.error ? h("p", { class: "error", role: "alert" }, app.state.error) : null,
    h(
      "div",
      { class: "buttons" },
      amRacer && me
        ? h(
            "button",
            {
              type: "button",
              class: me.ready ? "secondary" : "primary",
              "data-testid": "ready",
              onclick: () => app.nav.roomRequest({ t: "ready", ready: !me.ready }),
            },
            me.ready ? t("room.cancelReady") : t("room.imReady"),
          )
        : null,
      isHost
        ? h("button", { type: "button", class: "primary gold", "data-testid": "start", onclick: () => app.nav.roomRequest({ t: "start" }) }, t("room.start"))
        : null,
      h("button", { type: "button", class: "ghost", "data-testid": "leave", onclick: () => app.nav.leave() }, leaveLabel(app)),
    ),
    !isHost ? h("p", { class: "muted small" }, amRacer ? t("room.waitingHost") : t("room.watching")) : null,
  );
}

/** Leaving a practice game is going back to the lobby, not leaving a room of others. */
/** @param {Pick<App, "practice">} app */
export function leaveLabel(app) {
  return app.practice ? t("practice.toLobby") : t("room.leave");
}

export function initials(name) {
  return (name || "?").trim().slice(0, 1).toUpperCase();
}
