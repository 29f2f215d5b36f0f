// Tournaments (/t/<code>): the create form, the host's management page, a player's and a
// spectator's view, the live standings of a round, each round's results and the final
// page with the podium. A round itself is played on the race board: when the snapshot's
// `current.room` appears, a registered player joins that race room as a racer and the app
// shows the board; the race panel then shows this tournament's live top 10 (`t_live`).
// The server decides everything; the page asks and displays (docs/browser.md).
//
// TournamentTab (here) asks the server and keeps the page in step; its data is a
// TournamentModel (tournament-model.js, no DOM), drawn by TournamentPage
// (tournament-page.js) with the host's tools (tournament-host.js); the lobby's panel
// and create form are in tournament-form.js.
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { RequestError } from "./net.js";
import { TournamentHostTools } from "./tournament-host.js";
import { TournamentModel, errorText } from "./tournament-model.js";
import { TournamentPage } from "./tournament-page.js";

export { limitLabel, normalizeTournamentCode, parseDeals, scoreText, topPlusMe, tournamentCodeFromPath } from "./tournament-model.js";

export class TournamentTab {
  /** @param {import("./app.js").App} app */
  constructor(app) {
    this.app = app;
    this.model = new TournamentModel(() => app.state.player && app.state.player.id);
    this.page = new TournamentPage(this);
    this.hostTools = new TournamentHostTools(this);
  }

  /** Start over: no data, a fresh page element. */
  reset() {
    this.model.reset();
    this.page.reset();
  }

  /** The page is at /t/<code>: start over for another tournament. */
  open(code) {
    if (code === this.model.code) return;
    this.model.code = code;
    this.reset();
  }

  /** Leaving the page: no more pushes for this connection. */
  close() {
    if (this.model.code && this.model.subscribed && this.app.conn.online) {
      this.app.conn.request({ t: "t_unwatch", tournament: this.model.code }).catch(() => {});
    }
    this.model.subscribed = false;
    this.model.code = null;
    this.reset();
  }

  // --- loading and subscribing ------------------------------------------------------------------

  /** On opening the page and after every reconnect: the snapshot, then the pushes. */
  async load() {
    const conn = this.app.conn;
    const code = this.model.code;
    if (!code || !conn.online) return;
    this.model.subscribed = false;
    this.model.error = null;
    try {
      const got = await conn.request({ t: "t_get", tournament: code });
      if (code !== this.model.code) return;
      this.onSnapshot(got);
      const you = got.you || {};
      const finished = got.tournament && got.tournament.phase === "finished";
      let as = null;
      if (you.role === "player" && this.model.myStatus === "active") as = "player";
      else if (you.role === "host" && you.also_player && this.model.myStatus === "active") as = "player";
      else if (!finished) as = this.model.intent === "player" && you.role === "none" ? "player" : "spectator";
      this.model.intent = null;
      if (as) await this.join(as, { quiet: as === "spectator" });
    } catch (err) {
      if (code !== this.model.code) return;
      this.model.error = errorText(err);
      this.page.render();
    }
  }

  /** `t_join`: register as a player, or watch; either way this connection gets the pushes. */
  async join(as, { quiet = false } = {}) {
    this.model.error = null;
    try {
      // A spectator who joins to play is no longer counted among the spectators.
      if (as === "player" && this.model.subscribed && this.model.you && this.model.you.role === "spectator") {
        await this.app.conn.request({ t: "t_unwatch", tournament: this.model.code });
        this.model.subscribed = false;
      }
      const reply = await this.app.conn.request({ t: "t_join", tournament: this.model.code, as });
      this.model.subscribed = true;
      this.onSnapshot(reply);
    } catch (err) {
      // Watching is a convenience: a refusal of it leaves the snapshot on the page.
      if (!quiet) this.model.error = errorText(err);
      this.page.render();
    }
  }

  /** The lobby's "Create": a new tournament; the creator is subscribed to it. */
  async create(options) {
    const app = this.app;
    this.model.formError = null;
    try {
      const reply = await app.conn.request({ t: "t_create", ...options });
      const code = reply.tournament.code;
      app.state.tCreate = false;
      history.pushState({}, "", `/t/${code}`);
      app.state.tournamentCode = code;
      this.open(code);
      this.model.subscribed = true;
      this.onSnapshot(reply);
      app.render();
    } catch (err) {
      this.model.formError = errorText(err);
      app.render();
    }
  }

  async refresh() {
    try {
      await this.app.conn.request({ t: "t_get", tournament: this.model.code });
    } catch {
      /* the next push brings it */
    }
  }

  // --- server messages -------------------------------------------------------------------------

  onSnapshot(msg) {
    const snap = msg.tournament;
    if (!snap || snap.code !== this.model.code) return;
    if (this.model.snap && snap.ver < this.model.snap.ver) return;
    const before = this.model.snap;
    if (before && before.ver !== snap.ver) this.model.hostError = null; // the tournament moved on
    this.model.snap = snap;
    this.model.you = msg.you || { role: "none" };
    if (snap.current && snap.current.room) this.model.roundRooms.add(snap.current.room);
    if (!snap.current || (this.model.live && this.model.live.round !== snap.current.round)) this.model.live = null;
    // A round that has just ended: its results, open on the page.
    const rounds = snap.finished_rounds || [];
    const last = rounds[rounds.length - 1];
    if (last && (!before || (before.finished_rounds || []).length < rounds.length)) {
      this.model.openRounds.add(last.round);
      this.loadResults(last.round);
    }
    if (snap.phase === "finished") for (const r of rounds) this.loadResults(r.round);
    if (this.model.isHost || this.model.showAll || snap.phase === "finished") this.loadRows();
    this.syncRound();
    this.page.render();
  }

  onLive(msg) {
    const cur = this.model.snap && this.model.snap.current;
    if (msg.tournament !== this.model.code || !cur || msg.round !== cur.round) return;
    this.model.live = msg;
    this.page.renderLive();
    if (this.app.state.room && this.model.ownsRoom(this.app.state.room.code)) this.app.updateRacePanel();
  }

  async loadResults(round) {
    if (this.model.results.has(round)) return;
    this.model.results.set(round, null); // asked
    try {
      const reply = await this.app.conn.request({ t: "t_results", tournament: this.model.code, round });
      this.model.results.set(round, reply);
    } catch {
      this.model.results.delete(round); // asked again with the next snapshot
    }
    this.page.renderRounds();
  }

  async loadRows() {
    const ver = this.model.snap ? this.model.snap.ver : 0;
    if (this.model.rowsLoading || this.model.rowsVer === ver) return;
    this.model.rowsLoading = true;
    try {
      const reply = await this.app.conn.request({ t: "t_standings", tournament: this.model.code });
      this.model.rows = reply.rows || [];
      this.model.rowsVer = ver;
    } catch {
      /* the next snapshot asks again */
    } finally {
      this.model.rowsLoading = false;
    }
    this.page.render();
    // The tournament changed while we asked: ask once more.
    if (this.model.snap && this.model.snap.ver !== this.model.rowsVer && (this.model.isHost || this.model.showAll || this.model.snap.phase === "finished")) this.loadRows();
  }

  // --- the round's board ---------------------------------------------------------------------

  /** A registered, active player and a round under way: to the board (once per round). */
  syncRound() {
    const app = this.app;
    const snap = this.model.snap;
    const cur = snap && snap.current;
    if (snap && snap.phase === "finished" && app.state.roomCode && this.model.ownsRoom(app.state.roomCode)) {
      this.backToTournament();
      return;
    }
    if (!cur || !cur.room || !this.model.isPlayer || this.model.myStatus !== "active") return;
    if (this.model.notSeated === cur.round || app.state.roomCode === cur.room || this.model.joining === cur.room) return;
    this.enterRound(cur);
  }

  /** Join the round's race room as a racer (seated by the server at the round's start). */
  async enterRound(cur) {
    const app = this.app;
    this.model.joining = cur.room;
    app.state.roomCode = cur.room;
    app.state.room = null;
    app.state.you = null;
    app.state.resultsHidden = false;
    app.game.setView(null, 0);
    app.game.resetActions();
    try {
      await app.conn.request({ t: "join", room: cur.room, as: "racer" });
    } catch (err) {
      // Joined during this round: registered for the next one, no seat in this one.
      if (app.state.roomCode === cur.room) {
        app.state.roomCode = null;
        app.state.room = null;
      }
      this.model.notSeated = cur.round;
      if (!(err instanceof RequestError && err.reply)) this.model.notSeated = 0; // lost: try again
    } finally {
      this.model.joining = null;
    }
    app.render();
  }

  /** Back from the board (or its results) to the tournament's page. */
  backToTournament() {
    const app = this.app;
    app.state.roomCode = null;
    app.state.room = null;
    app.state.you = null;
    app.game.setView(null, 0);
    app.game.resetActions();
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
    const answer = await this.app.feedback.dialog({
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
      await this.app.conn.request({ t: "t_withdraw", tournament: this.model.code });
      await this.refresh();
    } catch (err) {
      this.model.error = errorText(err);
      this.page.render();
    }
  }
}
