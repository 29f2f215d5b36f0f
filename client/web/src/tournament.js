// Tournaments (/t/<code>): the create form, the host's management page, a player's and a
// spectator's view, the live standings of a round, each round's results and the final
// page with the podium. A round itself is played on the race board: when the snapshot's
// `current.room` appears, a registered player joins that race room as a racer and the app
// shows the board; the race panel then shows this tournament's live top 10 (`t_live`).
// The server decides everything; the page asks and displays (docs/browser.md).
import { h, isLoopback, mount, withDealCode } from "./dom.js";
import { formatDuration, messageFor, t } from "./i18n.js";
import { RequestError } from "./net.js";

export const T_TIME_LIMITS = [30, 60, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200];
const VARIANTS = ["N", "F", "O", "R"];
const PODIUM = 3;

/** The tournament code in a /t/<code> path, upper case, or null. */
export function tournamentCodeFromPath(pathname) {
  const match = /^\/t\/([Tt][23456789A-Za-z]{6})\/?$/.exec(pathname);
  return match ? match[1].toUpperCase() : null;
}

/** What a player typed as a tournament code: "tk7pq2x" → "TK7PQ2X"; six letters get the "T". */
export function normalizeTournamentCode(text) {
  const code = String(text || "").trim().toUpperCase().replace(/^\/?T\//, "");
  return /^[23456789A-Z]{6}$/.test(code) ? `T${code}` : code;
}

/** Deal codes typed one per line (or separated by commas / spaces). */
export function parseDeals(text) {
  return String(text || "")
    .split(/[\s,;]+/)
    .map((s) => s.trim().toUpperCase())
    .filter(Boolean);
}

/** A time limit as the form lists it: "30 s", "5 min", "2 h". */
export function limitLabel(seconds) {
  if (seconds < 60) return `${seconds} s`;
  if (seconds >= 3600 && seconds % 3600 === 0) return t("t.hours", { n: seconds / 3600 });
  return t("lobby.minutes", { n: seconds / 60 });
}

/** A standings row's score: points (placement) or the total time charged (time). */
export function scoreText(row, scoring) {
  if (scoring === "time") return row.total_ms != null ? formatDuration(row.total_ms) : "–";
  return t("t.points", { n: row.points ?? 0 });
}

/** The top rows and, when not among them, mine (as the live strip shows them). */
export function topPlusMe(top, me, myId) {
  const rows = [...(top || [])];
  if (me && !rows.some((r) => r.id === myId)) rows.push(me);
  return rows;
}

function errorText(err) {
  if (err instanceof RequestError && err.reply) return messageFor("error", err.reply);
  if (err && (err.code === "offline" || err.code === "disconnected")) return t("net.lost");
  if (err && err.code === "timeout") return t("t.noReply");
  return String((err && err.message) || err);
}

export class TournamentTab {
  constructor(app) {
    this.app = app;
    this.code = null;
    this.reset();
  }

  reset() {
    this.snap = null; // T of the latest snapshot
    this.you = null; // Y
    this.live = null; // the latest t_live of the running round
    this.results = new Map(); // round → t_results reply
    this.rows = null; // every standings row (t_standings), fetched when shown
    this.rowsVer = -1;
    this.showAll = false;
    this.error = null; // a message for the page (what to do next)
    this.hostError = null;
    this.notice = null;
    this.subscribed = false;
    this.intent = null; // "player" | "spectator": what the lobby asked for
    this.notSeated = 0; // a round this player is not seated in (joined during it)
    this.joining = null; // the race room being joined
    this.openRounds = new Set(); // rounds whose results the reader opened
    this.el = null;
    this.parts = {};
    this.keys = {};
  }

  /** The page is at /t/<code>: start over for another tournament. */
  open(code) {
    if (code === this.code) return;
    this.code = code;
    this.reset();
  }

  /** Leaving the page: no more pushes for this connection. */
  close() {
    if (this.code && this.subscribed && this.app.conn.online) {
      this.app.conn.request({ t: "t_unwatch", tournament: this.code }).catch(() => {});
    }
    this.subscribed = false;
    this.code = null;
    this.reset();
  }

  get isHost() {
    return !!this.you && this.you.role === "host";
  }

  /** Registered to play (also the host who joined as a player), and not removed. */
  get isPlayer() {
    const you = this.you;
    return !!you && (you.role === "player" || !!you.also_player);
  }

  get myStatus() {
    const you = this.you;
    return (you && (you.status || (you.row && you.row.status))) || null;
  }

  get myId() {
    return this.app.state.player && this.app.state.player.id;
  }

  /** Is `roomCode` this tournament's running round (the board shows its live panel)? */
  ownsRoom(roomCode) {
    const cur = this.snap && this.snap.current;
    return !!roomCode && ((!!cur && cur.room === roomCode) || this.roundRooms.has(roomCode));
  }

  get roundRooms() {
    this._rooms = this._rooms || new Set();
    return this._rooms;
  }

  // --- loading and subscribing ------------------------------------------------------------------

  /** On opening the page and after every reconnect: the snapshot, then the pushes. */
  async load() {
    const conn = this.app.conn;
    const code = this.code;
    if (!code || !conn.online) return;
    this.subscribed = false;
    this.error = null;
    try {
      const got = await conn.request({ t: "t_get", tournament: code });
      if (code !== this.code) return;
      this.onSnapshot(got);
      const you = got.you || {};
      const finished = got.tournament && got.tournament.phase === "finished";
      let as = null;
      if (you.role === "player" && this.myStatus === "active") as = "player";
      else if (you.role === "host" && you.also_player && this.myStatus === "active") as = "player";
      else if (!finished) as = this.intent === "player" && you.role === "none" ? "player" : "spectator";
      this.intent = null;
      if (as) await this.join(as, { quiet: as === "spectator" });
    } catch (err) {
      if (code !== this.code) return;
      this.error = errorText(err);
      this.render();
    }
  }

  /** `t_join`: register as a player, or watch; either way this connection gets the pushes. */
  async join(as, { quiet = false } = {}) {
    this.error = null;
    try {
      // A spectator who joins to play is no longer counted among the spectators.
      if (as === "player" && this.subscribed && this.you && this.you.role === "spectator") {
        await this.app.conn.request({ t: "t_unwatch", tournament: this.code });
        this.subscribed = false;
      }
      const reply = await this.app.conn.request({ t: "t_join", tournament: this.code, as });
      this.subscribed = true;
      this.onSnapshot(reply);
    } catch (err) {
      // Watching is a convenience: a refusal of it leaves the snapshot on the page.
      if (!quiet) this.error = errorText(err);
      this.render();
    }
  }

  /** The lobby's "Create": a new tournament; the creator is subscribed to it. */
  async create(options) {
    const app = this.app;
    this.formError = null;
    try {
      const reply = await app.conn.request({ t: "t_create", ...options });
      const code = reply.tournament.code;
      app.state.tCreate = false;
      history.pushState({}, "", `/t/${code}`);
      app.state.tournamentCode = code;
      this.open(code);
      this.subscribed = true;
      this.onSnapshot(reply);
      app.render();
    } catch (err) {
      this.formError = errorText(err);
      app.render();
    }
  }

  async refresh() {
    try {
      await this.app.conn.request({ t: "t_get", tournament: this.code });
    } catch {
      /* the next push brings it */
    }
  }

  // --- server messages -------------------------------------------------------------------------

  onSnapshot(msg) {
    const snap = msg.tournament;
    if (!snap || snap.code !== this.code) return;
    if (this.snap && snap.ver < this.snap.ver) return;
    const before = this.snap;
    if (before && before.ver !== snap.ver) this.hostError = null; // the tournament moved on
    this.snap = snap;
    this.you = msg.you || { role: "none" };
    if (snap.current && snap.current.room) this.roundRooms.add(snap.current.room);
    if (!snap.current || (this.live && this.live.round !== snap.current.round)) this.live = null;
    // A round that has just ended: its results, open on the page.
    const rounds = snap.finished_rounds || [];
    const last = rounds[rounds.length - 1];
    if (last && (!before || (before.finished_rounds || []).length < rounds.length)) {
      this.openRounds.add(last.round);
      this.loadResults(last.round);
    }
    if (snap.phase === "finished") for (const r of rounds) this.loadResults(r.round);
    if (this.isHost || this.showAll || snap.phase === "finished") this.loadRows();
    this.syncRound();
    this.render();
  }

  onLive(msg) {
    const cur = this.snap && this.snap.current;
    if (msg.tournament !== this.code || !cur || msg.round !== cur.round) return;
    this.live = msg;
    this.renderLive();
    if (this.app.state.room && this.ownsRoom(this.app.state.room.code)) this.app.updateRacePanel();
  }

  async loadResults(round) {
    if (this.results.has(round)) return;
    this.results.set(round, null); // asked
    try {
      const reply = await this.app.conn.request({ t: "t_results", tournament: this.code, round });
      this.results.set(round, reply);
    } catch {
      this.results.delete(round); // asked again with the next snapshot
    }
    this.renderRounds();
  }

  async loadRows() {
    const ver = this.snap ? this.snap.ver : 0;
    if (this.rowsLoading || this.rowsVer === ver) return;
    this.rowsLoading = true;
    try {
      const reply = await this.app.conn.request({ t: "t_standings", tournament: this.code });
      this.rows = reply.rows || [];
      this.rowsVer = ver;
    } catch {
      /* the next snapshot asks again */
    } finally {
      this.rowsLoading = false;
    }
    this.render();
    // The tournament changed while we asked: ask once more.
    if (this.snap && this.snap.ver !== this.rowsVer && (this.isHost || this.showAll || this.snap.phase === "finished")) this.loadRows();
  }

  // --- the round's board ---------------------------------------------------------------------

  /** A registered, active player and a round under way: to the board (once per round). */
  syncRound() {
    const app = this.app;
    const snap = this.snap;
    const cur = snap && snap.current;
    if (snap && snap.phase === "finished" && app.state.roomCode && this.ownsRoom(app.state.roomCode)) {
      this.backToTournament();
      return;
    }
    if (!cur || !cur.room || !this.isPlayer || this.myStatus !== "active") return;
    if (this.notSeated === cur.round || app.state.roomCode === cur.room || this.joining === cur.room) return;
    this.enterRound(cur);
  }

  /** Join the round's race room as a racer (seated by the server at the round's start). */
  async enterRound(cur) {
    const app = this.app;
    this.joining = cur.room;
    app.state.roomCode = cur.room;
    app.state.room = null;
    app.state.you = null;
    app.state.resultsHidden = false;
    app.setView(null, 0);
    app.resetActions();
    try {
      await app.conn.request({ t: "join", room: cur.room, as: "racer" });
    } catch (err) {
      // Joined during this round: registered for the next one, no seat in this one.
      if (app.state.roomCode === cur.room) {
        app.state.roomCode = null;
        app.state.room = null;
      }
      this.notSeated = cur.round;
      if (!(err instanceof RequestError && err.reply)) this.notSeated = 0; // lost: try again
    } finally {
      this.joining = null;
    }
    app.render();
  }

  /** Back from the board (or its results) to the tournament's page. */
  backToTournament() {
    const app = this.app;
    app.state.roomCode = null;
    app.state.room = null;
    app.state.you = null;
    app.setView(null, 0);
    app.resetActions();
    app.render();
  }

  /** After a reconnect, in the middle of a round: the board again. */
  rejoinRound() {
    const app = this.app;
    const code = app.state.roomCode;
    if (code) app.conn.request({ t: "join", room: code, as: "racer" }).catch(() => this.backToTournament());
  }

  // --- player and host actions ---------------------------------------------------------------

  async withdraw() {
    const answer = await this.app.dialog({
      title: t("t.withdrawConfirm"),
      body: [h("p", {}, t("t.withdrawText"))],
      testid: "confirm-withdraw",
      actions: [
        { label: t("game.cancel"), value: "no", kind: "ghost", testid: "confirm-no" },
        { label: t("t.withdraw"), value: "yes", kind: "danger", testid: "confirm-yes" },
      ],
    });
    if (answer.value !== "yes") return;
    try {
      await this.app.conn.request({ t: "t_withdraw", tournament: this.code });
      await this.refresh();
    } catch (err) {
      this.error = errorText(err);
      this.render();
    }
  }

  async host(op, player = null) {
    this.hostError = null;
    try {
      await this.app.conn.request({ t: "t_host", tournament: this.code, op, player });
      await this.refresh(); // at once, not at the next (throttled) push
    } catch (err) {
      this.hostError = errorText(err);
    }
    this.render();
  }

  async confirmHost(op, { title, text, yes, player = null }) {
    const answer = await this.app.dialog({
      title,
      body: [h("p", {}, text)],
      testid: `confirm-${op}`,
      actions: [
        { label: t("game.cancel"), value: "no", kind: "ghost", testid: "confirm-no" },
        { label: yes, value: "yes", kind: "danger", testid: "confirm-yes" },
      ],
    });
    if (answer.value === "yes") await this.host(op, player);
  }

  removePlayer(row) {
    return this.confirmHost("remove", {
      title: t("t.removeConfirm", { name: row.name }),
      text: t("t.removeText"),
      yes: t("t.remove"),
      player: row.id,
    });
  }

  endTournament() {
    return this.confirmHost("end", { title: t("t.endConfirm"), text: t("t.endText"), yes: t("t.end") });
  }

  // --- rendering ---------------------------------------------------------------------------

  /** The page's element (kept, and refreshed part by part as data arrives). */
  view() {
    if (!this.el) {
      this.el = h("div", { class: "tournament", "data-testid": "tournament" });
      this.parts = {};
      for (const name of ["head", "me", "live", "podium", "standings", "rounds", "exports"]) {
        this.parts[name] = h("div", { class: `t-part t-${name}` });
      }
      mount(this.el, ...Object.values(this.parts));
      this.keys = {};
    }
    this.render();
    return this.el;
  }

  /** Rebuild a part only when what it shows has changed (a button never moves under a tap). */
  part(name, key, build) {
    const el = this.parts[name];
    if (!el) return;
    const full = `${this.app.language}|${key}`;
    if (this.keys[name] === full) return;
    this.keys[name] = full;
    mount(el, build());
  }

  render() {
    if (!this.el) return;
    const snap = this.snap;
    if (!snap) {
      this.keys = {};
      for (const el of Object.values(this.parts)) el.replaceChildren();
      mount(
        this.parts.head,
        h(
          "section",
          { class: "panel narrow" },
          this.error
            ? [
                h("p", { class: "error", role: "alert", "data-testid": "t-error" }, this.error),
                h("button", { type: "button", class: "primary", "data-testid": "to-lobby", onclick: () => this.app.go("/") }, t("t.toLobby")),
              ]
            : h("p", { class: "muted" }, t("net.connecting")),
        ),
      );
      return;
    }
    this.renderHead();
    this.renderMe();
    this.renderLive();
    this.renderPodium();
    this.renderStandings();
    this.renderRounds();
    this.renderExports();
  }

  renderHead() {
    const snap = this.snap;
    const key = JSON.stringify([snap.name, snap.phase, snap.paused, snap.registration_open, snap.round, snap.current, snap.players, snap.spectators]);
    this.part("head", key, () => {
      const link = `${location.origin}/t/${snap.code}`;
      const linkInput = h("input", { class: "link-input", readonly: true, value: link, "aria-label": t("t.link"), "data-testid": "t-link" });
      const copy = h(
        "button",
        {
          type: "button",
          class: "secondary small",
          "data-testid": "t-copy",
          onclick: async () => {
            try {
              await navigator.clipboard.writeText(link);
              copy.textContent = t("room.copied");
            } catch {
              /** @type {HTMLInputElement} */ (linkInput).select();
            }
          },
        },
        t("room.copyLink"),
      );
      const settings = [
        t(`variant.${snap.variant}`),
        t("t.roundsCount", { n: snap.rounds }),
        t("t.perRound", { t: limitLabel(snap.time_limit) }),
        t(`t.scoring.${snap.scoring}`),
      ].join(" · ");
      return h(
        "section",
        { class: "panel t-header" },
        h("p", { class: "code-label" }, t("t.tournament"), " ", h("b", { class: "t-code", "data-testid": "t-code" }, snap.code)),
        h("h1", { "data-testid": "t-name" }, snap.name),
        h("p", { class: "muted small" }, t("t.hostedBy", { name: snap.host ? snap.host.name : "?" }), " · ", settings),
        h(
          "p",
          { class: "t-phase" },
          h("span", { class: `chip phase-${snap.phase}`, "data-testid": "t-phase" }, this.phaseText()),
          " ",
          h("span", { class: "muted small", "data-testid": "t-counts" }, t("t.counts", { players: snap.players, n: snap.max_players, s: t("t.watchingCount", { n: snap.spectators }) })),
        ),
        snap.phase !== "finished" ? h("div", { class: "share" }, linkInput, copy) : null,
        snap.phase !== "finished" && isLoopback(location.hostname) ? h("p", { class: "muted small", "data-testid": "local-only" }, t("room.localOnly")) : null,
      );
    });
  }

  phaseText() {
    const snap = this.snap;
    const cur = snap.current;
    if (snap.phase === "finished") return t("t.phase.finished");
    if (cur && (snap.phase === "countdown" || snap.phase === "racing")) return t("t.phase.racing", { n: cur.round, of: snap.rounds });
    if (snap.paused) return t("t.phase.paused");
    if (snap.phase === "registration") return snap.registration_open ? t("t.phase.registration") : t("t.phase.registrationClosed");
    return t("t.phase.between", { n: snap.round, of: snap.rounds });
  }

  /** What this visitor can do: join, withdraw, the host's controls, and where the round is. */
  renderMe() {
    const snap = this.snap;
    const you = this.you || {};
    const app = this.app;
    const cur = snap.current;
    const seated = !!cur && this.isPlayer && this.myStatus === "active" && this.notSeated !== cur.round;
    const key = JSON.stringify([
      snap.phase,
      snap.paused,
      snap.registration_open,
      snap.round,
      snap.players >= snap.max_players,
      cur && cur.round,
      you.role,
      you.row,
      you.also_player,
      this.myStatus,
      this.error,
      this.hostError,
      seated,
      this.notSeated,
      app.state.player && app.state.player.name,
      (this.rows || []).map((r) => [r.id, r.name, r.status]),
    ]);
    this.part("me", key, () => {
      const blocks = [];
      if (this.error) blocks.push(h("p", { class: "error", role: "alert", "data-testid": "t-error" }, this.error));
      if (this.isHost) blocks.push(this.hostPanel());
      if (snap.phase === "finished") {
        if (!this.isHost && this.isPlayer) blocks.push(h("section", { class: "panel t-me" }, this.youLine()));
        return blocks;
      }
      if (this.isPlayer || you.role === "player") blocks.push(this.playerPanel(seated));
      else if (!this.isHost) blocks.push(this.joinPanel());
      return blocks;
    });
  }

  youLine() {
    const row = this.you && this.you.row;
    if (!row) return null;
    return h(
      "p",
      { class: "t-you", "data-testid": "t-you" },
      row.rank != null ? t("t.yourRank", { rank: row.rank, n: this.snap.players }) : t(`t.status.${row.status}`),
      " · ",
      scoreText(row, this.snap.scoring),
    );
  }

  playerPanel(seated) {
    const snap = this.snap;
    const status = this.myStatus;
    const cur = snap.current;
    const app = this.app;
    let next;
    if (status === "removed") next = t("t.youRemoved");
    else if (status === "withdrawn") next = t("t.youWithdrew");
    else if (cur && !seated) next = t("t.nextRoundYours");
    else if (cur) next = t("t.roundOn");
    else if (snap.paused) next = t("t.pausedWait");
    else if (snap.round >= snap.rounds) next = t("t.lastPlayed");
    else next = t("t.waitNext", { n: snap.round + 1, of: snap.rounds });
    return h(
      "section",
      { class: "panel t-me", "data-testid": "t-player" },
      h("h2", {}, status === "active" ? t("t.youPlay") : t(`t.status.${status || "active"}`)),
      this.youLine(),
      h("p", { class: "muted", "data-testid": "t-next" }, next),
      h(
        "div",
        { class: "buttons" },
        seated && cur && cur.room
          ? h("button", { type: "button", class: "primary gold", "data-testid": "t-to-board", onclick: () => this.enterRound(cur) }, t("t.toBoard"))
          : null,
        status === "active"
          ? h("button", { type: "button", class: "ghost", "data-testid": "t-withdraw", onclick: () => this.withdraw() }, t("t.withdraw"))
          : null,
        status === "withdrawn" && snap.registration_open
          ? h("button", { type: "button", class: "secondary", "data-testid": "t-join", onclick: () => this.join("player") }, t("t.rejoin"))
          : null,
      ),
      app.state.notice ? h("p", { class: "notice small" }, app.state.notice) : null,
    );
  }

  joinPanel() {
    const snap = this.snap;
    const app = this.app;
    const open = snap.registration_open;
    const full = snap.players >= snap.max_players;
    const name = h("input", {
      id: "t-join-name",
      maxlength: 24,
      autocomplete: "nickname",
      placeholder: t("lobby.namePlaceholder"),
      value: app.localName(),
      "data-testid": "name",
    });
    const go = (e) => {
      e.preventDefault();
      const wanted = /** @type {HTMLInputElement} */ (name).value.trim();
      const then = () => this.join("player");
      if (wanted && (!app.state.player || wanted !== app.state.player.name)) app.rename(wanted, then);
      else then();
    };
    return h(
      "form",
      { class: "panel t-join", onsubmit: go, "data-testid": "t-join-form" },
      h("h2", {}, t("t.joinTitle")),
      h("p", { class: "muted small" }, open ? (snap.round > 0 ? t("t.lateJoin") : t("t.joinInfo")) : t("t.closedInfo")),
      h("div", { class: "field" }, h("label", { for: "t-join-name" }, t("lobby.name")), name),
      h(
        "div",
        { class: "buttons" },
        h("button", { type: "submit", class: "primary", "data-testid": "t-join", disabled: !open || full }, t("t.joinButton")),
      ),
      full && open ? h("p", { class: "muted small" }, t("t.fullInfo")) : null,
      this.you && this.you.role === "spectator" ? h("p", { class: "muted small", "data-testid": "t-watching" }, t("t.watching")) : null,
    );
  }

  hostPanel() {
    const snap = this.snap;
    const cur = snap.current;
    const running = !!cur;
    const finished = snap.phase === "finished";
    const noMore = snap.round >= snap.rounds;
    const button = (testid, label, onclick, { kind = "secondary", disabled = false } = {}) =>
      h("button", { type: "button", class: kind === "gold" ? "primary gold" : kind, "data-testid": testid, disabled, onclick }, label);
    const rows = this.rows || [];
    const active = rows.filter((r) => r.status === "active").length;
    const withdrawn = rows.filter((r) => r.status === "withdrawn").length;
    const removed = rows.filter((r) => r.status === "removed").length;
    return h(
      "section",
      { class: "panel t-host", "data-testid": "t-host" },
      h("h2", {}, t("t.hostTitle")),
      this.hostError ? h("p", { class: "error", role: "alert", "data-testid": "t-host-error" }, this.hostError) : null,
      finished
        ? h("p", { class: "muted" }, t("t.hostFinished"))
        : [
            h(
              "div",
              { class: "buttons t-host-buttons" },
              button("t-start", noMore ? t("t.noMoreRounds") : t("t.startRound", { n: snap.round + 1 }), () => this.host("start_round"), {
                kind: "gold",
                disabled: running || snap.paused || noMore,
              }),
              // Pausing holds back the next round's start (docs/tournaments.md): it means
              // something only between two rounds, so it is offered only then.
              snap.paused
                ? button("t-resume", t("t.resume"), () => this.host("resume"), { disabled: running })
                : snap.round >= 1 && !noMore && !running
                  ? button("t-pause", t("t.pause"), () => this.host("pause"))
                  : null,
              snap.registration_open
                ? button("t-close-reg", t("t.closeRegistration"), () => this.host("close_registration"))
                : button("t-open-reg", t("t.openRegistration"), () => this.host("open_registration")),
              button("t-end", t("t.end"), () => this.endTournament(), { kind: "danger" }),
            ),
            running ? h("p", { class: "muted small" }, t("t.hostRunning")) : null,
            !this.isPlayer && snap.registration_open
              ? h("p", { class: "small" }, button("t-play-too", t("t.playToo"), () => this.join("player"), { kind: "ghost" }))
              : null,
          ],
      h(
        "h3",
        {},
        t("t.registered"),
        " ",
        h("span", { class: "muted small", "data-testid": "t-reg-counts" }, t("t.regCounts", { a: t("t.regActive", { n: active }), w: t("t.regWithdrawn", { n: withdrawn }), r: t("t.regRemoved", { n: removed }) })),
      ),
      rows.length === 0
        ? h("p", { class: "muted small" }, t("t.nobodyYet"))
        : h(
            "ul",
            { class: "t-reg", "data-testid": "t-reg" },
            rows.map((r) =>
              h(
                "li",
                { class: `t-reg-row status-${r.status}`, "data-player": r.id },
                h("span", { class: "avatar", "aria-hidden": "true" }, (r.name || "?").slice(0, 1).toUpperCase()),
                h("span", { class: "pname", title: r.name }, r.name),
                r.id === this.myId ? h("span", { class: "tag you" }, t("room.you")) : null,
                r.status !== "active" ? h("span", { class: `tag ${r.status === "removed" ? "off" : ""}` }, t(`t.status.${r.status}`)) : null,
                h("span", { class: "spacer" }),
                // The host cannot remove themself (withdrawing is how a host stops playing).
                r.status === "active" && !finished && r.id !== this.myId
                  ? h(
                      "button",
                      { type: "button", class: "ghost small", "data-testid": "t-remove", "aria-label": t("t.removeName", { name: r.name }), onclick: () => this.removePlayer(r) },
                      t("t.remove"),
                    )
                  : null,
              ),
            ),
          ),
    );
  }

  /** The running round: its clock and the live top 10 (+ me, + counts). */
  renderLive() {
    const snap = this.snap;
    if (!snap || !this.parts.live) return;
    const cur = snap.current;
    const live = this.live;
    const key = cur ? [cur.round, cur.room, live ? JSON.stringify([live.top, live.you, live.racing, live.finished]) : ""].join("|") : "none";
    this.part("live", key, () => {
      if (!cur) return null;
      return h(
        "section",
        { class: "panel t-live", "data-testid": "t-live" },
        h(
          "div",
          { class: "panel-head" },
          h("h2", {}, t("t.liveTitle", { n: cur.round, of: snap.rounds })),
          h("span", { class: "time-left t-clock", "data-testid": "t-clock" }, this.clockText()),
        ),
        live ? liveTable(live, this.myId, "t-live-table") : h("p", { class: "muted small" }, t("t.liveSoon")),
        live ? h("p", { class: "muted small", "data-testid": "t-live-counts" }, liveCounts(live)) : null,
      );
    });
  }

  clockText() {
    const cur = this.snap && this.snap.current;
    if (!cur) return "";
    const now = this.app.conn.serverNow();
    if (cur.start_at && now < cur.start_at) return t("t.startsIn", { s: Math.ceil((cur.start_at - now) / 1000) });
    return t("race.timeLeft", { t: formatDuration(Math.max(0, (cur.deadline || now) - now)) });
  }

  /** Four times a second: the round's clock. */
  tick() {
    if (!this.el) return;
    const clock = this.el.querySelector(".t-clock");
    if (clock) clock.textContent = this.clockText();
  }

  renderPodium() {
    const snap = this.snap;
    const top = (snap.standings || []).filter((r) => r.rank != null).slice(0, PODIUM);
    const key = snap.phase === "finished" ? JSON.stringify(top) : "";
    this.part("podium", key, () => {
      if (snap.phase !== "finished") return null;
      const order = [1, 0, 2].map((i) => top[i]).filter(Boolean);
      return h(
        "section",
        { class: "panel t-final", "data-testid": "t-final" },
        h("h2", {}, t("t.finalTitle")),
        top.length === 0
          ? h("p", { class: "muted" }, t("t.noWinner"))
          : h(
              "ol",
              { class: "podium", "data-testid": "podium" },
              order.map((r) =>
                h(
                  "li",
                  { class: `podium-step p${r.rank}`, "data-testid": `podium-${r.rank}` },
                  h("span", { class: `medal m${r.rank}` }, String(r.rank)),
                  h("span", { class: "podium-name" }, r.name),
                  h("span", { class: "podium-score" }, scoreText(r, snap.scoring)),
                  h("span", { class: "podium-block", "aria-hidden": "true" }),
                ),
              ),
            ),
        snap.finished_at ? h("p", { class: "muted small" }, t("t.endedAt", { when: new Date(snap.finished_at).toLocaleString() })) : null,
      );
    });
  }

  renderStandings() {
    const snap = this.snap;
    const all = (this.showAll || snap.phase === "finished") && this.rows;
    const rows = all ? this.rows : snap.standings || [];
    const myRow = this.you && this.you.row;
    const key = JSON.stringify([rows, myRow, snap.phase, snap.round, !!all, this.showAll, snap.players]);
    this.part("standings", key, () => {
      const shown = [...rows];
      if (!all && myRow && !shown.some((r) => r.id === myRow.id)) shown.push(myRow);
      const provisional = !!snap.current && snap.round > 1;
      return h(
        "section",
        { class: "panel t-standings", "data-testid": "t-standings" },
        h(
          "h2",
          {},
          snap.phase === "finished" ? t("t.finalStandings") : t("t.standings"),
          provisional ? h("span", { class: "muted small" }, ` ${t("t.afterRound", { n: snap.round - 1 })}`) : null,
        ),
        shown.length === 0 ? h("p", { class: "muted small" }, t("t.nobodyYet")) : standingsTable(shown, snap.scoring, this.myId),
        !all && snap.players > (snap.standings || []).length
          ? h("button", { type: "button", class: "ghost small", "data-testid": "t-show-all", onclick: () => ((this.showAll = true), this.loadRows(), this.render()) }, t("t.showAll", { n: snap.players }))
          : null,
        snap.scoring === "placement" ? h("p", { class: "muted small" }, t("t.placementHow")) : h("p", { class: "muted small" }, t("t.timeHow")),
      );
    });
  }

  renderRounds() {
    const snap = this.snap;
    if (!snap || !this.parts.rounds) return;
    const rounds = snap.finished_rounds || [];
    const loaded = rounds.map((r) => (this.results.get(r.round) ? 1 : 0)).join("");
    const key = JSON.stringify([rounds, loaded, [...this.openRounds]]);
    this.part("rounds", key, () => {
      if (!rounds.length) return null;
      return h(
        "section",
        { class: "panel t-rounds", "data-testid": "t-rounds" },
        h("h2", {}, t("t.roundResults")),
        [...rounds].reverse().map((r) => {
          const details = h(
            "details",
            { class: "t-round", "data-round": r.round, "data-testid": `t-round-${r.round}`, open: this.openRounds.has(r.round) },
            h(
              "summary",
              {},
              h("b", {}, t("room.round", { n: r.round })),
              " · ",
              this.roundOutcome(r),
              h("span", { class: "muted small" }, ` · ${t("t.racers", { n: r.racers })}`),
            ),
            this.roundTable(r.round),
          );
          details.addEventListener("toggle", () => {
            if (details.open) {
              this.openRounds.add(r.round);
              this.loadResults(r.round);
            } else this.openRounds.delete(r.round);
          });
          return details;
        }),
      );
    });
  }

  /** "won by Ada" only for a racer who finished the round: place 1 of a round nobody
   * finished (everyone resigned, stuck or out of time) won nothing. The round's results,
   * once loaded, say whether place 1 finished; before that the summary's winner is
   * trusted only when it says it finished or does not say. */
  roundOutcome(summary) {
    const res = this.results.get(summary.round);
    const first = res && res.rows && res.rows[0];
    const winner = res ? (first && first.finished ? first : null) : summary.winner && summary.winner.finished !== false ? summary.winner : null;
    return winner ? t("t.roundWinner", { name: winner.name }) : t("t.noRoundWinner");
  }

  roundTable(round) {
    const res = this.results.get(round);
    if (!res) return h("p", { class: "muted small" }, "…");
    const scoring = this.snap.scoring;
    const me = this.myId;
    return [
      res.deal ? h("p", { class: "muted small" }, withDealCode(t("race.dealWas", { code: res.deal }), res.deal)) : null,
      h(
        "table",
        { class: "t-table", "data-testid": "t-results-table" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col", class: "rank" }, t("race.rank")),
            h("th", { scope: "col" }, t("race.player")),
            h("th", { scope: "col", class: "num" }, t("race.cards")),
            h("th", { scope: "col", class: "num" }, t("race.time")),
            h("th", { scope: "col", class: "num" }, scoring === "time" ? t("t.charged") : t("t.pointsCol")),
          ),
        ),
        h(
          "tbody",
          {},
          (res.rows || []).map((row) =>
            h(
              "tr",
              { class: row.id === me ? "me" : "" },
              h("td", { class: "rank" }, row.place != null ? String(row.place) : "–"),
              h("td", { class: "name-cell" }, row.name),
              h("td", { class: "num" }, `${row.foundation}/104`),
              h("td", { class: "num" }, row.finished ? formatDuration(row.time_ms) : t("t.notFinished")),
              h("td", { class: "num" }, scoring === "time" ? formatDuration(row.time_charged_ms) : String(row.points ?? 0)),
            ),
          ),
        ),
      ),
    ];
  }

  renderExports() {
    const snap = this.snap;
    this.part("exports", `${snap.code}|${snap.phase}|${snap.round}`, () => {
      if (snap.round === 0 && snap.phase !== "finished") return null;
      return h(
        "p",
        { class: "t-exports small" },
        t("t.export"),
        " ",
        h("a", { href: `/api/tournaments/${snap.code}.json`, download: `${snap.code}.json`, "data-testid": "t-json" }, "JSON"),
        " · ",
        h("a", { href: `/api/tournaments/${snap.code}.csv`, download: `${snap.code}.csv`, "data-testid": "t-csv" }, "CSV"),
        snap.phase === "finished" ? h("span", { class: "muted" }, ` · ${t("t.retention")}`) : null,
      );
    });
  }

  /** The race panel while this tournament's round is on the board: the live strip. */
  racePanel(el, { over, left, onToggle, expanded, showResults }) {
    const snap = this.snap;
    const live = this.live;
    const me = this.myId;
    const round = snap && snap.current ? snap.current.round : snap ? snap.round : 0;
    const top = live ? live.top || [] : [];
    const mine = live && live.you;
    // The strip: the leaders and me (phones); the list: top 10, me, and the counts.
    const strip = topPlusMe(top.slice(0, 3), mine, me);
    el.classList.toggle("expanded", expanded);
    mount(
      el,
      h(
        "div",
        { class: "panel-head" },
        h("h2", {}, snap ? t("t.roundShort", { n: round, of: snap.rounds }) : t("race.progress")),
        left != null ? h("span", { class: "time-left", "data-testid": "time-left" }, t("race.timeLeft", { t: formatDuration(left) })) : null,
        h(
          "ol",
          { class: "standings", "aria-hidden": "true", "data-testid": "t-strip" },
          strip.map((r) =>
            h(
              "li",
              { class: `standing ${r.id === me ? "me" : ""} ${r.finished ? "status-won" : ""}` },
              h("span", { class: "standing-rank" }, `#${r.place}`),
              h("span", { class: "standing-name", title: r.name }, r.name),
              h("b", { class: "standing-home", title: t("strip.cardsHome", { n: r.foundation }) }, t("race.foundation", { n: r.foundation })),
              r.finished ? h("span", { class: "dot won" }) : null,
            ),
          ),
        ),
        h(
          "button",
          { type: "button", class: "panel-toggle", "aria-expanded": expanded ? "true" : "false", "aria-label": t("race.showAll"), "data-testid": "panel-toggle", onclick: onToggle },
          h("span", { "aria-hidden": "true" }, expanded ? "▴" : "▾"),
        ),
      ),
      h(
        "div",
        { class: "panel-details" },
        snap ? h("p", { class: "muted small" }, snap.name) : null,
        live ? liveTable(live, me, "t-race-live") : h("p", { class: "muted small" }, t("t.liveSoon")),
        live ? h("p", { class: "muted small" }, liveCounts(live)) : null,
      ),
      over ? showResults : null,
    );
  }
}

/** "3 racing · 1 finished", each count with its own plural. */
function liveCounts(live) {
  return t("t.liveCounts", { r: t("t.liveRacing", { n: live.racing }), f: t("t.liveFinished", { n: live.finished }) });
}

function liveTable(live, me, testid) {
  const rows = topPlusMe(live.top, live.you, me);
  return h(
    "table",
    { class: "t-table t-live-rows", "data-testid": testid },
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          { class: `${r.id === me ? "me" : ""} ${r.finished ? "done" : ""}`, "data-player": r.id },
          h("td", { class: "rank" }, String(r.place)),
          h("td", { class: "name-cell", title: r.name }, r.name),
          h("td", { class: "num", "data-testid": "live-cards" }, `${r.foundation}/104`),
          h("td", { class: "num", "data-testid": "live-moves" }, t("daily.moves", { n: r.moves })),
          h("td", { class: "num" }, r.finished ? formatDuration(r.time_ms) : "…"),
        ),
      ),
    ),
  );
}

function standingsTable(rows, scoring, me) {
  return h(
    "table",
    { class: "t-table", "data-testid": "t-standings-table" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col", class: "rank" }, t("race.rank")),
        h("th", { scope: "col" }, t("race.player")),
        h("th", { scope: "col", class: "num" }, scoring === "time" ? t("t.totalTime") : t("t.pointsCol")),
        h("th", { scope: "col", class: "num", title: t("t.roundsWonLong") }, t("t.roundsWon")),
        h("th", { scope: "col", class: "num", title: t("t.playedLong") }, t("t.played")),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          { class: `${r.id === me ? "me" : ""} status-${r.status}`, "data-player": r.id },
          h("td", { class: "rank" }, r.rank != null ? String(r.rank) : "–"),
          h("td", { class: "name-cell" }, r.name, r.status !== "active" ? h("span", { class: "tag" }, t(`t.status.${r.status}`)) : null),
          h("td", { class: "num", "data-testid": "t-score" }, scoring === "time" ? (r.total_ms != null ? formatDuration(r.total_ms) : "–") : String(r.points ?? 0)),
          h("td", { class: "num" }, String(r.rounds_won ?? 0)),
          h("td", { class: "num" }, String(r.rounds_played ?? 0)),
        ),
      ),
    ),
  );
}

/** The lobby's tournament form: name, rounds, deals, variant, time limit, players, scoring. */
export function createForm(app) {
  const tab = app.tournament;
  const draft = (app.tDraft = app.tDraft || {});
  const input = (attrs) => h("input", attrs);
  const yourName = input({ id: "t-host-name", maxlength: 24, autocomplete: "nickname", placeholder: t("lobby.namePlaceholder"), value: app.localName(), "data-testid": "name" });
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
      tab.formError = problem;
      app.render();
      return;
    }
    const options = { name: title, rounds: n, deals: chosen, variant: variant.value, time_limit: Number(limit.value), max_players: max, scoring: scoring.value };
    const wanted = /** @type {HTMLInputElement} */ (yourName).value.trim();
    const then = () => tab.create(options);
    if (wanted && (!app.state.player || wanted !== app.state.player.name)) app.rename(wanted, then);
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
    tab.formError ? h("p", { class: "error", role: "alert", "data-testid": "t-form-error" }, tab.formError) : null,
    h(
      "div",
      { class: "buttons" },
      h("button", { type: "submit", class: "primary gold", "data-testid": "t-create" }, t("t.createButton")),
      h("button", { type: "button", class: "ghost", "data-testid": "t-cancel", onclick: () => ((app.state.tCreate = false), app.render()) }, t("game.cancel")),
    ),
  );
}

/** The lobby's tournament panel: create one, or join / watch one by its code. */
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
    withName(() => app.openTournament(value, as));
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
