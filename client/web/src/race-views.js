// The race screen: the board, the HUD, the race panel (a strip on phones) with live
// progress, the game's status line, the countdown and the results.
import { dealingTable } from "./board.js";
import { focusIdentity, holdModal } from "./dialogs.js";
import { h, mount, withDealCode } from "./dom.js";
import { formatDuration, t } from "./i18n.js";
import { topPlusMe } from "./tournament-model.js";
import { initials, leaveLabel, roomSummary } from "./lobby-views.js";
import { ICONS } from "./icons.js";
import { archiveState, replayLink, roomGameId } from "./replay-page.js";

/** @typedef {import("./app.js").App} App */

// --- the race -----------------------------------------------------------------------------------

/** @param {Pick<App, "ghost" | "board" | "conn" | "feedback" | "game" | "phase" | "practice" | "render" | "state" | "tournament" | "tournamentRound" | "ui">} app */
export function raceScreen(app) {
  const { you, view } = app.state;
  const racing = you && you.role === "racer";
  // The racer's screen is the viewport, nothing scrolls: the race panel (a strip on
  // phones), the HUD, the board filling what is left, and the game's status line.
  const layout = h("div", { class: `race-layout ${racing ? "racing" : "spectating"}` });
  // Focusable: the panel scrolls when its racers do not fit, and the keys scroll it too.
  app.ui.racePanelEl = h("aside", { class: "race-panel", tabindex: "0", "data-testid": "race-panel", "aria-label": t("race.progress") });
  layout.append(app.ui.racePanelEl);
  if (racing) {
    app.ui.hudEl = h("div", { class: "hud", "data-testid": "hud" });
    app.ui.statusEl = h("div", { class: "game-status", "data-testid": "game-status" });
    updateHud(app);
    layout.append(
      app.ui.hudEl,
      h("div", { class: "board-wrap" }, view ? app.board.el : dealingTable()),
      app.ui.statusEl,
    );
  } else {
    app.ui.hudEl = null;
    app.ui.statusEl = null;
  }
  updateRacePanel(app);
  return layout;
}

/** @param {Pick<App, "state">} app */
export function myProgress(app) {
  const { player, progress } = app.state;
  return player ? progress.get(player.id) : null;
}

/** @param {Pick<App, "conn" | "phase" | "state">} app */
export function elapsedFor(app, progress) {
  const room = app.state.room;
  if (!room || !room.start_at) return null;
  if (progress && progress.finished_ms != null) return progress.finished_ms;
  const result = (room.results || []).find((r) => progress && r.player === progress.player);
  if (result && result.time_ms != null) return result.time_ms;
  if (app.phase() === "finished") return null;
  const until = room.deadline ? Math.min(app.conn.serverNow(), room.deadline) : app.conn.serverNow();
  return Math.max(0, until - room.start_at);
}

/** @param {Pick<App, "board" | "conn" | "feedback" | "game" | "phase" | "practice" | "state" | "ui">} app */
export function updateHud(app) {
  if (!app.ui.hudEl) return;
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
    app.ui.hudEl,
    h(
      "button",
      {
        type: "button",
        class: "hud-button redeal",
        "data-testid": "redeal",
        "aria-keyshortcuts": "R",
        disabled: !playing || view.redeals_left <= 0,
        onclick: () => app.game.redeal(),
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
        onclick: () => app.game.undo(),
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
          { type: "button", class: "hud-button hint", "data-testid": "hint", "aria-keyshortcuts": "H", disabled: !playing, onclick: () => app.game.hint() },
          h("span", { class: "icon", html: ICONS.hint }),
          t("game.hint"),
        )
      : null,
    app.practice && app.game.finishing && playing
      ? h("button", { type: "button", class: "hud-button finish", "data-testid": "auto-finish", onclick: () => app.game.autoFinish() }, t("game.autoFinish"))
      : null,
    h("button", { type: "button", class: "hud-button ghost resign", "data-testid": "resign", disabled: !playing, onclick: () => app.game.resign() }, app.practice ? t("practice.giveUp") : t("game.resign")),
  );
  renderGameStatus(app);
  app.feedback.scheduleKeepFocus(); // a button with focus was just replaced
}

/** @param {Pick<App, "feedback" | "game" | "phase" | "state" | "ui">} app */
export function renderGameStatus(app) {
  const { view } = app.state;
  if (!app.ui.statusEl) return;
  if (!view) {
    app.ui.statusEl.className = "game-status";
    app.ui.statusEl.replaceChildren();
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
      canUndo ? [" ", h("button", { type: "button", class: "secondary small", onclick: () => app.game.undo() }, t("game.undo"))] : null,
    );
  } else if (view.status === "resigned") content = h("p", { class: "resigned" }, (words = t("game.resigned")));
  const waiting = view.status !== "playing" && phase === "racing" ? h("p", { class: "muted small" }, t("game.waitingResults")) : null;
  app.ui.statusEl.className = `game-status ${content ? "show" : ""} ${view.status}`;
  // The game's end is said once through the page's live region.
  const said = words && `${app.game.viewRound}:${view.status}`;
  if (said && app.ui.saidStatus !== said) app.feedback.announce(words);
  app.ui.saidStatus = said || app.ui.saidStatus;
  mount(app.ui.statusEl, content, waiting);
}

/** @param {Pick<App, "state">} app */
export function sortedRacers(app) {
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

/** @param {Pick<App, "feedback" | "ghost" | "conn" | "game" | "phase" | "practice" | "render" | "state" | "tournament" | "tournamentRound" | "ui">} app */
export function updateRacePanel(app) {
  // Every progress frame rebuilds the panel, after a race's end too: a button of it that
  // had focus (Results, once the results were closed; the panel's toggle) is replaced.
  app.feedback.scheduleKeepFocus();
  const el = app.ui.racePanelEl;
  const { room, player } = app.state;
  if (!el || !room) return;
  const phase = app.phase();
  const over = phase === "finished";
  const left = room.deadline && phase === "racing" ? Math.max(0, room.deadline - app.conn.serverNow()) : null;
  if (app.tournamentRound) {
    // 200 racers: no per-racer list, the tournament's live top 10 (+ me, + counts).
    app.tournament.page.racePanel(el, {
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
  const endRace = app.game.canEndRace() ? endRaceButton(app) : null;
  const head = h(
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
  );
  const details = h(
    "div",
    { class: "panel-details" },
    app.state.you && app.state.you.role !== "racer"
      ? h("p", { class: "notice small", "data-testid": "watching" }, app.state.notice || t("room.watching"))
      : null,
    h("p", { class: "muted small" }, roomSummary(room)),
    h("ol", { class: "racers" }, rows, app.ghost.inRoom() ? app.ghost.panelRow(ghostElapsed(app)) : null),
    spectatorLine(room),
  );
  const results = over
    ? h("button", { type: "button", class: "secondary small show-results", "data-testid": "show-results", onclick: () => ((app.state.resultsHidden = false), app.render()) }, t("race.results"))
    : null;
  const shown = endRace ? endRace.parentElement : null;
  if (endRace && shown && shown.parentElement === el && shown.classList.contains("panel-details")) {
    // The button stays in the page: a button taken out between a tap's press and its
    // release gets no click, even when put back at once, and this panel is rebuilt with
    // every progress frame. What is around it is replaced.
    for (const node of [...shown.childNodes]) if (node !== endRace) node.remove();
    endRace.before(...details.childNodes);
    for (const node of [...el.childNodes]) if (node !== shown) node.remove();
    el.insertBefore(head, shown);
    if (results) el.append(results);
  } else {
    if (endRace) details.append(endRace);
    mount(el, head, details, results);
  }
}

/** The host's "End race": one element for the page, reused by every rebuild of the panel
 * (a new one each time would lose a tap whose release comes after a rebuild). */
function endRaceButton(app) {
  const ui = app.ui;
  if (!ui.endRaceEl) {
    ui.endRaceEl = /** @type {HTMLButtonElement} */ (h("button", { type: "button", class: "ghost small end-race", "data-testid": "end-race", onclick: () => app.game.endRace() }));
  }
  ui.endRaceEl.textContent = t("race.end"); // the language may have changed
  return ui.endRaceEl;
}

/** The race's time for the ghost: since the start, stopped when my game ended. */
function ghostElapsed(app) {
  const room = app.state.room;
  if (!room || !room.start_at) return 0;
  const ms = elapsedFor(app, myProgress(app) || { player: app.state.player && app.state.player.id });
  return ms == null ? 0 : ms;
}

export function spectatorLine(room) {
  const watching = room.players.filter((p) => p.role === "spectator");
  if (!watching.length) return null;
  return h("p", { class: "muted small" }, `${t("room.spectators")}: `, watching.map((p) => p.name).join(", "));
}

/** The clocks in the race panel move on; the rest is redrawn only when it changes (a
 * button rebuilt four times a second could lose a tap). */
/** @param {Pick<App, "ghost" | "conn" | "phase" | "state" | "ui">} app */
export function tickRacePanel(app) {
  const el = app.ui.racePanelEl;
  const room = app.state.room;
  if (!el || !room) return;
  if (app.ghost.inRoom()) app.ghost.tick(el, ghostElapsed(app));
  const left = el.querySelector(".time-left");
  if (left && room.deadline) left.textContent = t("race.timeLeft", { t: formatDuration(Math.max(0, room.deadline - app.conn.serverNow())) });
  for (const span of el.querySelectorAll("[data-player-time]")) {
    const id = span.getAttribute("data-player-time");
    span.textContent = formatDuration(elapsedFor(app, app.state.progress.get(id) || { player: id }));
  }
}

// --- overlays: countdown, results -----------------------------------------------------------

/** @param {Pick<App, "ghost" | "conn" | "dailyRoom" | "game" | "language" | "nav" | "overlay" | "phase" | "practice" | "render" | "state" | "tournament" | "tournamentRound" | "ui">} app */
export function renderOverlay(app) {
  const phase = app.phase();
  const room = app.state.room;
  // Rebuilt only when what it shows changes, so a button is never swapped under a click.
  const key = room
    ? [room.code, room.round, phase, room.start_at, app.state.resultsHidden, (room.results || []).length, room.host, app.language, replayState(app), app.ghost.compared ? app.ghost.compared.state : ""].join("|")
    : "";
  if (key === app.ui.overlayKey && (key === "" || app.overlay.isConnected)) return;
  app.ui.overlayKey = key;
  // The results dialog is modal; a rebuilt one keeps focus on the same button and still
  // returns it, on close, to where it was before the results first opened.
  const before = app.ui.resultsModal;
  const focusedIn = before && app.overlay.contains(document.activeElement) ? focusIdentity(/** @type {HTMLElement} */ (document.activeElement)) : null;
  app.ui.resultsModal = null;
  if (room && phase === "countdown") {
    app.ui.countdownEl = h("div", { class: "countdown-number", "data-testid": "countdown" }, "");
    mount(app.overlay, h("div", { class: "overlay countdown" }, h("div", { class: "countdown-box" }, h("p", {}, t("countdown.title")), app.ui.countdownEl)));
    tickCountdown(app);
    return;
  }
  app.ui.countdownEl = null;
  if (room && phase === "finished" && room.results && !app.state.resultsHidden) {
    if (before) before.release();
    mount(app.overlay, resultsDialog(app));
    const dialog = /** @type {HTMLElement} */ (app.overlay.querySelector("[data-testid=results]"));
    const focus = /** @type {HTMLElement|null} */ ((focusedIn && dialog.querySelector(focusedIn)) || dialog.querySelector(".buttons .primary") || dialog.querySelector(".close-x"));
    const modal = holdModal(dialog, { focus, onEscape: () => ((app.state.resultsHidden = true), app.render()) });
    app.ui.resultsModal = { release: modal.release, returnTo: before ? before.returnTo : modal.returnTo };
    return;
  }
  app.overlay.replaceChildren();
  // Closed (✕ or Esc): focus to the button that opens the results again, else back.
  if (before) before.release(app.state.resultsHidden ? '[data-testid="show-results"]' : before.returnTo);
}

/** @param {Pick<App, "ghost" | "dailyRoom" | "game" | "nav" | "practice" | "render" | "state" | "tournament" | "tournamentRound">} app */
export function resultsDialog(app) {
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
      replayState(app) === "ready" ? h("p", { class: "small" }, replayLink(app, roomGameId(room))) : null,
      replayState(app) === "ready" && app.ghost.inRoom() ? (app.ghost.compare(roomGameId(room)), app.ghost.resultsPart()) : null,
      h(
        "div",
        { class: "buttons" },
        tRound
          ? h("button", { type: "button", class: "primary gold", "data-testid": "to-tournament", onclick: () => app.tournament.backToTournament() }, t("t.backToTournament"))
          : app.dailyRoom
          ? h("button", { type: "button", class: "primary gold", "data-testid": "to-daily", onclick: () => app.nav.go("/daily") }, t("daily.back"))
          : isHost
          ? h("button", { type: "button", class: "primary gold", "data-testid": "rematch", onclick: () => app.nav.rematch() }, room.seats === 1 ? t("race.again") : t("race.rematch"))
          : h("p", { class: "muted small rematch-wait" }, t("race.rematchWait")),
        tRound ? null : h("button", { type: "button", class: "ghost", "data-testid": "leave", onclick: () => app.nav.leave() }, leaveLabel(app)),
        h("button", { type: "button", class: "ghost close-x", "data-testid": "close-results", "aria-label": t("help.close"), onclick: () => ((app.state.resultsHidden = true), app.render()) }, "✕"),
      ),
    ),
  );
}

/** The finished round's archived game, once its deal is revealed: "ready" when its replay
 * can be read, else "waiting", "missing" or "" (nothing to replay yet). */
function replayState(app) {
  const room = app.state.room;
  if (!room || app.phase() !== "finished" || !room.deal || !room.results) return "";
  const id = roomGameId(room);
  return id ? archiveState(id, () => app.render()) : "";
}

/** "Was it winnable?": asks the server's solver about the revealed deal. */
/** @param {Pick<App, "game">} app */
export function winnableRow(app) {
  const out = h("span", { class: "muted small", "data-testid": "winnable-result" }, "");
  const button = h("button", { type: "button", class: "ghost small", "data-testid": "winnable" }, t("race.winnable"));
  button.addEventListener("click", () => app.game.askWinnable(button, out));
  return h("p", { class: "winnable" }, button, " ", out);
}

/** @param {Pick<App, "conn" | "state" | "ui">} app */
export function tickCountdown(app) {
  const room = app.state.room;
  if (!app.ui.countdownEl || !room || !room.start_at) return;
  const ms = room.start_at - app.conn.serverNow();
  app.ui.countdownEl.textContent = ms > 0 ? String(Math.ceil(ms / 1000)) : t("countdown.go");
}
