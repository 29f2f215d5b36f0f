// The screens, rendered from the app's state: top bar, connection banner, lobby, waiting
// room, the race (board, HUD, live progress), countdown and results.
import { cardSvg } from "./cards.js";
import { dealingTable } from "./board.js";
import { focusIdentity, holdModal } from "./dialogs.js";
import { h, isLoopback, mount, withDealCode } from "./dom.js";
import { LANGUAGES, formatDuration, t } from "./i18n.js";
import { createForm, lobbyPanel, topPlusMe } from "./tournament.js";

// Line icons drawn as SVG (an emoji font is not on every device).
const ICONS = {
  soundOn: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M4 9h4l5-4v14l-5-4H4z"/><path d="M16.5 8.5a5 5 0 0 1 0 7M19 6a8.5 8.5 0 0 1 0 12"/></svg>',
  soundOff: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M4 9h4l5-4v14l-5-4H4z"/><path d="M17 9l5 6M22 9l-5 6"/></svg>',
  hint: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M9 18h6M10 21h4M12 3a6 6 0 0 0-3.5 10.9c.6.5 1 1.2 1 2.1h5c0-.9.4-1.6 1-2.1A6 6 0 0 0 12 3z"/></svg>',
};

const TIME_LIMITS = [null, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600];
const VARIANTS = ["N", "F", "O", "R"];

// --- top bar and banner -------------------------------------------------------------------------

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
      { class: "brand", href: "/", onclick: (e) => (e.preventDefault(), app.go("/")) },
      h("span", { class: "brand-mark", "aria-hidden": "true", html: cardSvg("AS") }),
      h("span", { class: "brand-name" }, t("app.title")),
    ),
    app.state.tournamentCode
      ? h("span", { class: "room-chip", "data-testid": "room-chip" }, h("span", { class: "chip-label" }, `${t("t.tournament")} `), h("b", {}, app.state.tournamentCode))
      : room
        ? h("span", { class: "room-chip", "data-testid": "room-chip" }, `${t("room.code")} `, h("b", {}, room.code))
        : null,
    h("span", { class: "spacer" }),
    app.state.player ? h("span", { class: "who" }, app.state.player.name) : null,
    h(
      "button",
      {
        type: "button",
        class: "icon-button",
        "aria-label": t("help.title"),
        title: t("help.title"),
        "data-testid": "help",
        onclick: () => app.showHowTo(),
      },
      "?",
    ),
    h(
      "button",
      {
        type: "button",
        class: "icon-button",
        "aria-label": t("sound.label"),
        "aria-pressed": app.soundOn ? "true" : "false",
        title: t("sound.label"),
        "data-testid": "sound",
        onclick: () => app.toggleSound(),
      },
      h("span", { class: "icon", html: app.soundOn ? ICONS.soundOn : ICONS.soundOff }),
    ),
    select,
  );
}

export function renderBanner(app) {
  const { net } = app.state;
  let content = null;
  if (net === "connecting") content = [t("net.connecting")];
  else if (net === "lost") content = [t("net.lost")];
  else if (net === "unreachable") {
    const seconds = Math.max(0, Math.ceil((app.retryAt - Date.now()) / 1000));
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

export function renderMain(app) {
  const { roomCode, room, wantsName } = app.state;
  app.main.className = "main";
  renderOverlay(app);
  // A racer's race screen is exactly the viewport (see .race-mode in styles.css).
  const racer = !!room && app.phase() !== "waiting" && !!app.state.you && app.state.you.role === "racer";
  app.root.classList.toggle("race-mode", racer);
  // A tournament's page (kept, refreshed part by part); its round's board is the race below.
  if (app.state.tournamentCode && !(roomCode && room)) {
    app.screenKey = "tournament";
    const el = app.tournament.view();
    if (app.main.firstChild !== el || app.main.childNodes.length !== 1) mount(app.main, el);
    return;
  }
  // The lobby and the name form are rebuilt only when their words change, so what the
  // player is typing survives a welcome or a status change.
  if (!roomCode && app.state.tCreate) {
    const key = ["t-create", app.language, app.tournament.formError].join("|");
    if (key === app.screenKey && app.main.firstChild) return;
    app.screenKey = key;
    return mount(app.main, h("div", { class: "t-create-wrap" }, createForm(app)));
  }
  if (!roomCode && app.state.dailyOpen) {
    const key = ["daily", app.language].join("|");
    if (key === app.screenKey && app.main.firstChild) return;
    app.screenKey = key;
    return mount(app.main, app.daily.view());
  }
  if (!roomCode || (!room && wantsName)) {
    const key = [roomCode ? "gate" : "lobby", app.language, app.state.error].join("|");
    if (key === app.screenKey && app.main.firstChild) return;
    app.screenKey = key;
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
              h("button", { type: "button", class: "primary", "data-testid": "to-lobby", onclick: () => app.go("/") }, t("lobby.create")),
            ]
          : h("p", { class: "muted" }, t("net.connecting")),
      ),
    );
  }
  const phase = app.phase();
  if (phase === "waiting") {
    app.screenKey = null;
    return mount(app.main, waitingRoom(app));
  }
  // The race screen stays in place while the race goes on (a pointer pressed on a card
  // must find the same element when it is released); only its parts are refreshed.
  const key = [room.code, room.round, phase, app.state.you && app.state.you.role, !!app.state.view, app.language].join("|");
  if (key === app.screenKey && app.racePanelEl && app.main.contains(app.racePanelEl)) {
    updateHud(app);
    updateRacePanel(app);
    return;
  }
  app.screenKey = key;
  mount(app.main, raceScreen(app));
}

function lobby(app) {
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
    if (wanted && (!app.state.player || wanted !== app.state.player.name)) app.rename(wanted, then);
    else then();
  };
  // What the player chose survives a rebuild of the lobby (an error shown, the language
  // changed): a bad deal code stays in its field, to be corrected.
  const draft = (app.lobbyDraft = app.lobbyDraft || {});
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
    withName(() => app.createRoom(options));
  };
  const alone = (e) => {
    e.preventDefault();
    withName(() => app.playAlone({ ...dealOptions(), time_limit: null }));
  };
  const join = (as) => (e) => {
    e.preventDefault();
    const code = joinCode.value.trim().toUpperCase();
    if (!code) return joinCode.focus();
    withName(() => {
      history.pushState({}, "", `/r/${code}`);
      app.state.roomCode = code;
      app.joinRoom(code, as);
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
        h("button", { type: "button", class: "secondary", "data-testid": "how-to-play", onclick: () => app.showHowTo() }, t("help.title")),
        h("h2", { class: "alone-title" }, t("lobby.alone")),
        h("p", { class: "howto" }, t("lobby.aloneInfo")),
        h("button", { type: "button", class: "primary gold wide", "data-testid": "play-alone", onclick: alone }, t("lobby.aloneButton")),
        h("h2", { class: "alone-title" }, t("daily.title")),
        h("p", { class: "howto" }, t("daily.lobbyInfo")),
        h("button", { type: "button", class: "secondary wide", "data-testid": "open-daily", onclick: () => withName(() => app.go("/daily")) }, t("daily.open")),
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
function localName() {
  try {
    return localStorage.getItem("crescent.name") || "";
  } catch {
    return "";
  }
}

function field(label, ...controls) {
  const id = controls[0].id;
  return h("div", { class: "field" }, h("label", { for: id }, label), ...controls);
}

/** A visitor who came by link and has no name yet: ask for it before joining. */
function nameGate(app) {
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
    const then = () => app.joinRoom(app.state.roomCode, as);
    if (wanted) app.rename(wanted, then);
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

function roomSummary(room) {
  return [
    t(`variant.${room.variant}`),
    room.time_limit ? t("room.timeLimit", { t: formatDuration(room.time_limit * 1000) }) : t("room.noLimit"),
    t("room.round", { n: room.round }),
  ].join(" · ");
}

function waitingRoom(app) {
  const { room, player, you } = app.state;
  const me = room.players.find((p) => player && p.id === player.id);
  const racers = room.players.filter((p) => p.role === "racer");
  const spectators = room.players.filter((p) => p.role !== "racer");
  const isHost = player && room.host === player.id;
  const link = `${location.origin}${room.link || `/r/${room.code}`}`;
  const copy = h(
    "button",
    {
      type: "button",
      class: "secondary small",
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(link);
          copy.textContent = t("room.copied");
        } catch {
          linkInput.select();
        }
      },
    },
    t("room.copyLink"),
  );
  const linkInput = h("input", { class: "link-input", readonly: true, value: link, "aria-label": "link" });
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
      h("div", { class: "share" }, linkInput, copy),
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
              onclick: () => app.roomRequest({ t: "ready", ready: !me.ready }),
            },
            me.ready ? t("room.cancelReady") : t("room.imReady"),
          )
        : null,
      isHost
        ? h("button", { type: "button", class: "primary gold", "data-testid": "start", onclick: () => app.roomRequest({ t: "start" }) }, t("room.start"))
        : null,
      h("button", { type: "button", class: "ghost", "data-testid": "leave", onclick: () => app.leave() }, leaveLabel(app)),
    ),
    !isHost ? h("p", { class: "muted small" }, amRacer ? t("room.waitingHost") : t("room.watching")) : null,
  );
}

/** Leaving a practice game is going back to the lobby, not leaving a room of others. */
function leaveLabel(app) {
  return app.practice ? t("practice.toLobby") : t("room.leave");
}


function initials(name) {
  return (name || "?").trim().slice(0, 1).toUpperCase();
}

// --- the race -----------------------------------------------------------------------------------

function raceScreen(app) {
  const { you, view } = app.state;
  const racing = you && you.role === "racer";
  // The racer's screen is the viewport, nothing scrolls: the race panel (a strip on
  // phones), the HUD, the board filling what is left, and the game's status line.
  const layout = h("div", { class: `race-layout ${racing ? "racing" : "spectating"}` });
  // Focusable: the panel scrolls when its racers do not fit, and the keys scroll it too.
  app.racePanelEl = h("aside", { class: "race-panel", tabindex: "0", "data-testid": "race-panel", "aria-label": t("race.progress") });
  layout.append(app.racePanelEl);
  if (racing) {
    app.hudEl = h("div", { class: "hud", "data-testid": "hud" });
    app.statusEl = h("div", { class: "game-status", "data-testid": "game-status" });
    updateHud(app);
    layout.append(
      app.hudEl,
      h("div", { class: "board-wrap" }, view ? app.board.el : dealingTable()),
      app.statusEl,
    );
  } else {
    app.hudEl = null;
    app.statusEl = null;
  }
  updateRacePanel(app);
  return layout;
}

function myProgress(app) {
  const { player, progress } = app.state;
  return player ? progress.get(player.id) : null;
}

function elapsedFor(app, progress) {
  const room = app.state.room;
  if (!room || !room.start_at) return null;
  if (progress && progress.finished_ms != null) return progress.finished_ms;
  const result = (room.results || []).find((r) => progress && r.player === progress.player);
  if (result && result.time_ms != null) return result.time_ms;
  if (app.phase() === "finished") return null;
  const until = room.deadline ? Math.min(app.conn.serverNow(), room.deadline) : app.conn.serverNow();
  return Math.max(0, until - room.start_at);
}

export function updateHud(app) {
  if (!app.hudEl) return;
  const room = app.state.room;
  // Before the racer's own game arrives (the countdown) the HUD shows the starting
  // counters, every button disabled.
  const view = app.state.view || {
    redeals_left: room && room.variant === "F" ? 4 : 3,
    moves: 0,
    undo_left: 0,
    status: "dealing",
  };
  // Once the race is over (its deadline, or every racer done) nothing more can be played.
  const raceOn = app.phase() === "racing";
  app.board.setFrozen(!raceOn);
  const playing = view.status === "playing" && raceOn;
  const redealLabel =
    view.redeals_left > 0
      ? [h("span", {}, t("game.redeal")), h("span", { class: "badge", "data-testid": "redeals-left" }, t("game.redealsLeft", { n: view.redeals_left }))]
      : [h("span", {}, t("game.noRedeals"))];
  mount(
    app.hudEl,
    h(
      "button",
      {
        type: "button",
        class: "hud-button redeal",
        "data-testid": "redeal",
        "aria-keyshortcuts": "R",
        disabled: !playing || view.redeals_left <= 0,
        onclick: () => app.redeal(),
      },
      h("span", { class: "icon", "aria-hidden": "true" }, "⟳"),
      redealLabel,
    ),
    h(
      "button",
      {
        type: "button",
        class: "hud-button undo",
        "data-testid": "undo",
        "aria-keyshortcuts": "U",
        disabled: !raceOn || !(playing || view.status === "locked") || view.undo_left <= 0,
        onclick: () => app.undo(),
      },
      h("span", { class: "icon", "aria-hidden": "true" }, "↶"),
      t("game.undo"),
    ),
    h("span", { class: "stat" }, h("span", { class: "stat-label" }, t("game.moves")), h("b", { "data-testid": "moves" }, String(view.moves))),
    h("span", { class: "stat" }, h("span", { class: "stat-label" }, t("game.time")), h("b", { class: "my-time", "data-testid": "time" }, formatDuration(elapsedFor(app, myProgress(app))))),
    h("span", { class: "spacer" }),
    app.practice
      ? h(
          "button",
          { type: "button", class: "hud-button hint", "data-testid": "hint", "aria-keyshortcuts": "H", disabled: !playing, onclick: () => app.hint() },
          h("span", { class: "icon", html: ICONS.hint }),
          t("game.hint"),
        )
      : null,
    app.practice && app.finishing && playing
      ? h("button", { type: "button", class: "hud-button finish", "data-testid": "auto-finish", onclick: () => app.autoFinish() }, t("game.autoFinish"))
      : null,
    h("button", { type: "button", class: "hud-button ghost resign", "data-testid": "resign", disabled: !playing, onclick: () => app.resign() }, app.practice ? t("practice.giveUp") : t("game.resign")),
  );
  renderGameStatus(app);
  app.scheduleKeepFocus(); // a button with focus was just replaced
}

function renderGameStatus(app) {
  const { view } = app.state;
  if (!app.statusEl) return;
  if (!view) {
    app.statusEl.className = "game-status";
    app.statusEl.replaceChildren();
    return;
  }
  const phase = app.phase();
  let content = null;
  let words = null;
  if (view.status === "won") content = h("p", { class: "won" }, "★ ", (words = t("game.won")), " ★");
  else if (view.status === "locked") {
    const canUndo = view.undo_left > 0 && phase === "racing";
    content = h(
      "p",
      { class: "locked" },
      (words = canUndo ? t("game.lockedUndo") : t("game.locked")),
      canUndo ? [" ", h("button", { type: "button", class: "secondary small", onclick: () => app.undo() }, t("game.undo"))] : null,
    );
  } else if (view.status === "resigned") content = h("p", { class: "resigned" }, (words = t("game.resigned")));
  const waiting = view.status !== "playing" && phase === "racing" ? h("p", { class: "muted small" }, t("game.waitingResults")) : null;
  app.statusEl.className = `game-status ${content ? "show" : ""} ${view.status}`;
  // The game's end is said once through the page's live region.
  const said = words && `${app.viewRound}:${view.status}`;
  if (said && app.saidStatus !== said) app.announce(words);
  app.saidStatus = said || app.saidStatus;
  mount(app.statusEl, content, waiting);
}

function sortedRacers(app) {
  const { room, progress } = app.state;
  const racers = room.players.filter((p) => p.role === "racer" || progress.has(p.id));
  return racers
    .map((p) => ({ p, pr: progress.get(p.id) }))
    .sort((a, b) => {
      const fa = a.pr ? a.pr.foundation : 8;
      const fb = b.pr ? b.pr.foundation : 8;
      return fb - fa || (a.pr ? a.pr.moves : 0) - (b.pr ? b.pr.moves : 0);
    });
}

/** A racer's status for display: `timeout` from the server, and also a racer still
 * "playing" in the results of a race that is over (its deadline passed). */
export function shownStatus(status, raceOver) {
  return status === "playing" && raceOver ? "timeout" : status;
}

export function updateRacePanel(app) {
  const el = app.racePanelEl;
  const { room, player } = app.state;
  if (!el || !room) return;
  const phase = app.phase();
  const over = phase === "finished";
  const left = room.deadline && phase === "racing" ? Math.max(0, room.deadline - app.conn.serverNow()) : null;
  if (app.tournamentRound) {
    // 200 racers: no per-racer list, the tournament's live top 10 (+ me, + counts).
    app.tournament.racePanel(el, {
      over,
      left,
      expanded: !!app.state.panelOpen,
      onToggle: () => {
        app.state.panelOpen = !app.state.panelOpen;
        updateRacePanel(app);
      },
      showResults: h("button", { type: "button", class: "secondary small show-results", "data-testid": "show-results", onclick: () => ((app.state.resultsHidden = false), app.render()) }, t("race.results")),
    });
    return;
  }
  const racers = sortedRacers(app);
  const rows = racers.map(({ p, pr }) => {
    const status = shownStatus(pr ? pr.status : p.connected === false ? "disconnected" : "playing", over);
    const foundation = pr ? pr.foundation : 8;
    const pct = Math.round((foundation / 104) * 100);
    return h(
      "li",
      { class: `racer status-${status} ${player && p.id === player.id ? "me" : ""}`, "data-player": p.id, "data-testid": "racer" },
      h(
        "div",
        { class: "racer-head" },
        h("span", { class: "avatar", "aria-hidden": "true" }, initials(p.name)),
        h("span", { class: "pname", title: p.name }, p.name, player && p.id === player.id ? h("span", { class: "muted" }, ` (${t("room.you")})`) : null),
        h("span", { class: `chip ${status}`, "data-testid": "racer-status" }, t(`status.${status}`)),
      ),
      h("div", { class: "bar", role: "progressbar", "aria-label": p.name, "aria-valuemin": 8, "aria-valuemax": 104, "aria-valuenow": foundation }, h("span", { style: `width:${pct}%` })),
      h(
        "div",
        { class: "racer-stats" },
        h("span", { "data-testid": "racer-foundation" }, `${t("race.cards")}: ${t("race.foundation", { n: foundation })}`),
        h("span", {}, `${t("race.moves")}: ${pr ? pr.moves : 0}`),
        h("span", { class: "racer-time", "data-player-time": p.id }, formatDuration(elapsedFor(app, pr || { player: p.id }))),
      ),
    );
  });
  // The strip shown on phones instead of the list: each racer's place and cards home, in
  // words ("#1 Ada 34/104"; alone: "Ada · 8 cards home"). Your own entry comes first and
  // its name is never cut; another's may be (down to a few letters, with the whole name
  // in its title); the strip wraps rather than cut an entry off.
  const ranked = racers.map((racer, i) => ({ ...racer, rank: i + 1 }));
  const mine = ranked.filter(({ p }) => player && p.id === player.id);
  const standings = h(
    "ol",
    { class: `standings ${app.practice ? "solo" : ""}`, "aria-hidden": "true" },
    [...mine, ...ranked.filter((r) => !mine.includes(r))].map(({ p, pr, rank }) => {
      const status = shownStatus(pr ? pr.status : "playing", over);
      const home = pr ? pr.foundation : 8;
      return h(
        "li",
        { class: `standing status-${status} ${player && p.id === player.id ? "me" : ""}` },
        app.practice ? null : h("span", { class: "standing-rank" }, `#${rank}`),
        h("span", { class: "standing-name", title: p.name }, p.name),
        app.practice
          ? h("span", { class: "standing-home", "data-testid": "strip-home" }, t("strip.cardsHome", { n: home }))
          : h("b", { class: "standing-home", title: t("strip.cardsHome", { n: home }) }, t("race.foundation", { n: home })),
        status !== "playing" ? h("span", { class: `dot ${status}`, title: t(`status.${status}`) }) : null,
      );
    }),
  );
  const expanded = !!app.state.panelOpen;
  el.classList.toggle("expanded", expanded);
  mount(
    el,
    h(
      "div",
      { class: "panel-head" },
      h("h2", {}, app.practice ? t("race.practice") : t("race.progress")),
      left != null ? h("span", { class: "time-left", "data-testid": "time-left" }, t("race.timeLeft", { t: formatDuration(left) })) : null,
      standings,
      h(
        "button",
        {
          type: "button",
          class: "panel-toggle",
          "aria-expanded": expanded ? "true" : "false",
          "aria-label": t("race.showAll"),
          "data-testid": "panel-toggle",
          onclick: () => {
            app.state.panelOpen = !app.state.panelOpen;
            updateRacePanel(app);
          },
        },
        h("span", { "aria-hidden": "true" }, expanded ? "▴" : "▾"),
      ),
    ),
    h(
      "div",
      { class: "panel-details" },
      app.state.you && app.state.you.role !== "racer"
        ? h("p", { class: "notice small", "data-testid": "watching" }, app.state.notice || t("room.watching"))
        : null,
      h("p", { class: "muted small" }, roomSummary(room)),
      h("ol", { class: "racers" }, rows),
      spectatorLine(room),
      app.canEndRace()
        ? h("button", { type: "button", class: "ghost small end-race", "data-testid": "end-race", onclick: () => app.endRace() }, t("race.end"))
        : null,
    ),
    over
      ? h("button", { type: "button", class: "secondary small show-results", "data-testid": "show-results", onclick: () => ((app.state.resultsHidden = false), app.render()) }, t("race.results"))
      : null,
  );
}

function spectatorLine(room) {
  const watching = room.players.filter((p) => p.role === "spectator");
  if (!watching.length) return null;
  return h("p", { class: "muted small" }, `${t("room.spectators")}: `, watching.map((p) => p.name).join(", "));
}

// --- overlays: countdown, results -----------------------------------------------------------

function renderOverlay(app) {
  const phase = app.phase();
  const room = app.state.room;
  // Rebuilt only when what it shows changes, so a button is never swapped under a click.
  const key = room
    ? [room.code, room.round, phase, room.start_at, app.state.resultsHidden, (room.results || []).length, room.host, app.language].join("|")
    : "";
  if (key === app.overlayKey && (key === "" || app.overlay.isConnected)) return;
  app.overlayKey = key;
  // The results dialog is modal; a rebuilt one keeps focus on the same button and still
  // returns it, on close, to where it was before the results first opened.
  const before = app.resultsModal;
  const focusedIn = before && app.overlay.contains(document.activeElement) ? focusIdentity(/** @type {HTMLElement} */ (document.activeElement)) : null;
  app.resultsModal = null;
  if (room && phase === "countdown") {
    app.countdownEl = h("div", { class: "countdown-number", "data-testid": "countdown" }, "");
    mount(app.overlay, h("div", { class: "overlay countdown" }, h("div", { class: "countdown-box" }, h("p", {}, t("countdown.title")), app.countdownEl)));
    tickCountdown(app);
    return;
  }
  app.countdownEl = null;
  if (room && phase === "finished" && room.results && !app.state.resultsHidden) {
    if (before) before.release();
    mount(app.overlay, resultsDialog(app));
    const dialog = /** @type {HTMLElement} */ (app.overlay.querySelector("[data-testid=results]"));
    const focus = /** @type {HTMLElement|null} */ ((focusedIn && dialog.querySelector(focusedIn)) || dialog.querySelector(".buttons .primary") || dialog.querySelector(".close-x"));
    const modal = holdModal(dialog, { focus, onEscape: () => ((app.state.resultsHidden = true), app.render()) });
    app.resultsModal = { release: modal.release, returnTo: before ? before.returnTo : modal.returnTo };
    return;
  }
  app.overlay.replaceChildren();
  // Closed (✕ or Esc): focus to the button that opens the results again, else back.
  if (before) before.release(app.state.resultsHidden ? '[data-testid="show-results"]' : before.returnTo);
}

function resultsDialog(app) {
  const { room, player } = app.state;
  const isHost = player && room.host === player.id;
  const tRound = app.tournamentRound;
  const me = player && room.results.find((r) => r.player === player.id);
  // A tournament round has up to 200 racers: the first ten and me (the page has them all).
  const withId = (r) => ({ ...r, id: r.player });
  const results = tRound ? topPlusMe(room.results.slice(0, 10).map(withId), me && withId(me), player && player.id) : room.results;
  return h(
    "div",
    { class: "overlay" },
    h(
      "section",
      { class: "dialog results", role: "dialog", "aria-modal": "true", "aria-labelledby": "results-title", "data-testid": "results" },
      h("h2", { id: "results-title" }, t("race.results")),
      h(
        "table",
        {},
        h(
          "thead",
          {},
          h("tr", {}, [
            h("th", { scope: "col", class: "rank" }, t("race.rank")),
            h("th", { scope: "col" }, t("race.player")),
            h("th", { scope: "col" }, t("race.status")),
            h("th", { scope: "col", class: "num" }, t("race.cards")),
            h("th", { scope: "col", class: "num moves-col" }, t("race.moves")),
            h("th", { scope: "col", class: "num" }, t("race.time")),
          ]),
        ),
        h(
          "tbody",
          {},
          results.map((r) =>
            h(
              "tr",
              { class: `${player && r.player === player.id ? "me" : ""} rank-${r.rank}` },
              h("td", { class: "rank" }, h("span", { class: `medal m${r.rank}` }, String(r.rank))),
              h("td", { class: "name-cell", title: r.name }, r.name),
              h("td", {}, h("span", { class: `chip ${shownStatus(r.status, true)}` }, t(`status.${shownStatus(r.status, true)}`))),
              h("td", { class: "num" }, `${r.foundation}/104`),
              h("td", { class: "num moves-col" }, String(r.moves)),
              h("td", { class: "num" }, formatDuration(r.time_ms)),
            ),
          ),
        ),
      ),
      room.deal ? h("p", { class: "muted small", "data-testid": "deal-was" }, withDealCode(t("race.dealWas", { code: room.deal }), room.deal)) : null,
      app.dailyRoom && !room.deal ? null : winnableRow(app),
      h(
        "div",
        { class: "buttons" },
        tRound
          ? h("button", { type: "button", class: "primary gold", "data-testid": "to-tournament", onclick: () => app.tournament.backToTournament() }, t("t.backToTournament"))
          : app.dailyRoom
          ? h("button", { type: "button", class: "primary gold", "data-testid": "to-daily", onclick: () => app.go("/daily") }, t("daily.back"))
          : isHost
          ? h("button", { type: "button", class: "primary gold", "data-testid": "rematch", onclick: () => app.rematch() }, room.seats === 1 ? t("race.again") : t("race.rematch"))
          : h("p", { class: "muted small rematch-wait" }, t("race.rematchWait")),
        tRound ? null : h("button", { type: "button", class: "ghost", "data-testid": "leave", onclick: () => app.leave() }, leaveLabel(app)),
        h("button", { type: "button", class: "ghost close-x", "data-testid": "close-results", "aria-label": t("help.close"), onclick: () => ((app.state.resultsHidden = true), app.render()) }, "✕"),
      ),
    ),
  );
}

/** "Was it winnable?": asks the server's solver about the revealed deal. */
function winnableRow(app) {
  const out = h("span", { class: "muted small", "data-testid": "winnable-result" }, "");
  const button = h("button", { type: "button", class: "ghost small", "data-testid": "winnable" }, t("race.winnable"));
  button.addEventListener("click", () => app.askWinnable(button, out));
  return h("p", { class: "winnable" }, button, " ", out);
}

function tickCountdown(app) {
  const room = app.state.room;
  if (!app.countdownEl || !room || !room.start_at) return;
  const ms = room.start_at - app.conn.serverNow();
  app.countdownEl.textContent = ms > 0 ? String(Math.ceil(ms / 1000)) : t("countdown.go");
}

/** Four times a second: clocks, countdown, time left. */
export function tick(app) {
  tickCountdown(app);
  const room = app.state.room;
  if (!room) return;
  const mine = app.main.querySelector(".my-time");
  if (mine) mine.textContent = formatDuration(elapsedFor(app, myProgress(app)));
  if (app.phase() === "racing") tickRacePanel(app);
}

/** The clocks in the race panel move on; the rest is redrawn only when it changes (a
 * button rebuilt four times a second could lose a tap). */
function tickRacePanel(app) {
  const el = app.racePanelEl;
  const room = app.state.room;
  if (!el || !room) return;
  const left = el.querySelector(".time-left");
  if (left && room.deadline) left.textContent = t("race.timeLeft", { t: formatDuration(Math.max(0, room.deadline - app.conn.serverNow())) });
  for (const span of el.querySelectorAll("[data-player-time]")) {
    const id = span.getAttribute("data-player-time");
    span.textContent = formatDuration(elapsedFor(app, app.state.progress.get(id) || { player: id }));
  }
}
