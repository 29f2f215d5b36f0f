// The application: one connection, the room the page is in, and this racer's game.
// Server messages update `state`; the views render from it. The server decides everything
// (moves, times, results); the page only asks and displays. The work is done by the
// app's parts: Session (session.js), Navigation (navigation.js), GameController
// (game.js) and Feedback (feedback.js); the App holds the state and renders.
import { AccountUi } from "./account.js";
import { Board } from "./board.js";
import { DailyTab } from "./daily.js";
import { Feedback } from "./feedback.js";
import { GameController } from "./game.js";
import { h, mount } from "./dom.js";
import { getLanguage, messageFor, onLanguageChange, setLanguage, t } from "./i18n.js";
import { Navigation, codeFromPath, pageOf } from "./navigation.js";
import { Connection, socketUrl } from "./net.js";
import { Ghost } from "./ghost.js";
import { HistoryPage } from "./history-page.js";
import { AccountPage } from "./account-page.js";
import { ProfilePage } from "./profile-page.js";
import { ReplayPage } from "./replay-page.js";
import { Session } from "./session.js";
import { load, save } from "./storage.js";
import { TournamentTab } from "./tournament.js";
import * as views from "./views.js";

export { codeFromPath, load, save };

export class App {
  constructor(root) {
    this.root = root;
    const { page, param } = pageOf(location.pathname);
    this.state = {
      net: "connecting",
      player: null,
      roomCode: page === "room" ? param : null,
      room: null, // the room snapshot's `room`, kept current with events
      you: null, // {role, game, last_seq}
      progress: new Map(), // player id → PROGRESS
      view: null,
      error: null, // a message for the lobby / room screen
      joinAs: "racer",
      wantsName: false,
      resultsHidden: false,
      notice: null,
      dailyOpen: page === "daily",
      tournamentCode: page === "tournament" ? param : null,
      replayId: page === "replay" ? param : null, // the archived game the replay viewer shows
      historyOpen: page === "history", // the player's games (/me/games)
      meOpen: page === "me", // the account page (/me)
      profileHandle: page === "profile" ? param : null, // a public profile (/u/<handle>)
      tCreate: false, // the lobby shows the tournament form
    };
    // The app's parts, each with one job (they reach each other through the app):
    this.session = new Session(this); // the connection and the room's state from the server
    this.nav = new Navigation(this); // the page's address, the lobby's room requests
    this.game = new GameController(this); // this racer's game: actions, practice help, dialogs
    this.feedback = new Feedback(this); // toasts, news, the live region, focus, sound, dialogs
    this.ui = views.screenState(); // what the views keep between renders
    this.daily = new DailyTab(this);
    this.tournament = new TournamentTab(this);
    if (this.state.tournamentCode) this.tournament.open(this.state.tournamentCode);
    this.replay = new ReplayPage(this); // the replay viewer at /g/<id>
    this.history = new HistoryPage(this); // the player's games at /me/games
    this.me = new AccountPage(this); // the account page at /me; a device signed out
    this.profile = new ProfilePage(this); // a public profile at /u/<handle>
    this.ghost = new Ghost(this); // a replay raced as a rival in a practice game
    this.account = new AccountUi(this); // save my progress, sign in, signed out (account.js)
    if (this.state.replayId) this.replay.open(this.state.replayId);
    this.board = new Board({
      onAction: (action) => this.game.act(action),
      onRefuse: (code) => this.feedback.toast(messageFor("refuse", { code }), "refused"),
    });
    this.conn = new Connection({
      url: socketUrl(location),
      hello: () => ({ token: load("token"), name: this.session.pendingName || load("name") }),
      onWelcome: (msg) => this.session.welcome(msg),
      onMessage: (msg, isReply) => this.session.message(msg, isReply),
      onStatus: (status, retryInMs) => this.session.netStatus(status, retryInMs),
      onHelloError: (msg) => this.session.helloError(msg),
      onSignedOut: (code) => this.me.sessionEnded(code), // close 4011
    });
    onLanguageChange(() => this.render());
    window.addEventListener("popstate", () => this.nav.route(location.pathname));
    document.addEventListener("keydown", (e) => this.game.keydown(e));
    setInterval(() => this.tick(), 250);
  }

  start() {
    this.layout();
    this.render();
    this.conn.start();
    this.account.loadConfig();
  }

  layout() {
    this.topbar = h("header", { class: "topbar" });
    this.banner = h("div", { class: "banner" });
    this.main = h("main", { class: "main" });
    this.toastEl = h("div", { class: "toast", role: "alert", "aria-live": "assertive", "data-testid": "toast" });
    // Race news (another racer won or finished, time's up), shown at the top; screen
    // readers hear it from the announcer.
    this.newsEl = h("div", { class: "news", "data-testid": "news" });
    // The page's one polite live region: each move, race news, the connection (sr-only).
    this.announcer = h("div", { class: "sr-only", role: "status", "aria-live": "polite", "data-testid": "announcer" });
    this.overlay = h("div", { class: "overlay-root" });
    this.modalRoot = h("div", { class: "modal-root" });
    this.effectsRoot = h("div", { class: "effects-root" });
    mount(this.root, this.topbar, this.banner, this.main, this.toastEl, this.newsEl, this.announcer, this.overlay, this.modalRoot, this.effectsRoot);
  }

  updateRacePanel() {
    views.updateRacePanel(this);
  }

  /** Is the room on the screen a round of the tournament this page shows? */
  get tournamentRound() {
    const room = this.state.room;
    return !!this.state.tournamentCode && !!room && this.tournament.model.ownsRoom(room.code);
  }

  /** A room of one seat is a solo practice game: hints and auto-finish are allowed
   * (not in a daily challenge room, sealed until the day is revealed). */
  get practice() {
    return !!this.state.room && this.state.room.seats === 1 && !this.dailyRoom && !this.tournamentRound;
  }

  get dailyRoom() {
    return !!this.state.room && this.state.room.sealed_until != null;
  }


  /** The room's phase now: a countdown turns into the race at start_at (server clock). */
  phase() {
    const room = this.state.room;
    if (!room) return null;
    if (room.phase === "countdown" && room.start_at && this.conn.serverNow() >= room.start_at) return "racing";
    return room.phase;
  }

  tick() {
    const room = this.state.room;
    if (room) {
      const phase = this.phase();
      if (phase !== this.renderedPhase) this.render();
      if (phase === "racing") this.game.askForViewAtStart(room);
    }
    views.tick(this);
    if (this.state.tournamentCode && !this.state.room) this.tournament.page.tick();
    if (this.state.net === "unreachable") this.renderBanner();
  }

  renderBanner() {
    views.renderBanner(this);
  }

  render() {
    const phase = this.phase();
    // The start is news too (the countdown's "Go!" is not heard).
    if (phase === "racing" && this.renderedPhase === "countdown") this.feedback.announce(t("say.started"));
    this.renderedPhase = phase;
    this.feedback.dismissToastOnNewScreen();
    const room = this.state.room;
    const tsnap = this.state.tournamentCode && this.tournament.model.snap;
    document.title = this.state.replayId
      ? `${t("replay.title")} · ${t("app.title")}`
      : tsnap ? `${tsnap.name} · ${t("app.title")}` : room ? `${room.code} · ${t("app.title")}` : t("app.title");
    views.renderTopbar(this);
    this.renderBanner();
    views.renderMain(this);
    this.feedback.scheduleKeepFocus();
  }

  setLanguage(code) {
    save("lang", code);
    setLanguage(code);
  }

  get language() {
    return getLanguage();
  }
}
