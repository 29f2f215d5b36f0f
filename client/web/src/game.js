// This racer's game on the board: actions queued and sent one at a time with their seq,
// replies and refusals, the questions before a redeal or a resign, practice help (hints,
// auto-finish, "was it winnable?") and the keyboard.
import { cardName, cardText } from "./cards.js";
import { h } from "./dom.js";
import { celebrate } from "./effects.js";
import { messageFor, t } from "./i18n.js";
import { RequestError } from "./net.js";
import { placeState, suggestMove } from "./rules.js";
import { modalOpen } from "./dialogs.js";
import { load, save } from "./storage.js";
import * as views from "./views.js";

/** "p3-ad" → "p3-ad" reversed ("ad-p3"), the move that would take it back. */
function reverseMove(action) {
  const match = /^([a-z]+\d*)-([a-z]+\d*)$/.exec(action || "");
  return match ? `${match[2]}-${match[1]}` : null;
}

/** A place as the player reads it: "pile 4", "ascending hearts". */
function placeName(place) {
  if (place[0] === "p") return t("game.pile", { n: place.slice(1) });
  const suit = t(`suit.${place[1].toUpperCase()}`);
  return t(place[0] === "a" ? "game.foundationUp" : "game.foundationDown", { suit });
}

export class GameController {
  /** @param {import("./app.js").App} app */
  constructor(app) {
    this.app = app;
    /** @type {{queue: string[], inflight: any, lastAcked: number}} */
    this.actions = { queue: [], inflight: null, lastAcked: 0 };
    this.viewRound = 0;
    this.finishing = false; // practice: every remaining card can go home (the server says)
    this.autoFinishing = false;
    this.lastPlayed = null;
    this.askingView = false;
    this.viewAskedAt = 0;
  }

  // --- actions in the race ------------------------------------------------------------------

  resetActions() {
    this.actions = { queue: [], inflight: null, lastAcked: 0 };
    this.app.board.setBusy(false);
  }

  setView(view, round) {
    const app = this.app;
    const before = app.state.view;
    if (view && view.status === "won" && before && before.status === "playing" && this.viewRound === round) {
      celebrate(app.effectsRoot);
      app.feedback.sound("win");
    }
    app.state.view = view;
    this.finishing = false; // the server says again, with the next hint
    this.viewRound = round;
    const room = app.state.room;
    app.board.setView(view, room ? room.variant : "N");
    if (!view) app.board.cancel();
  }

  /** At the start the game is ours to see: ask for a fresh snapshot carrying `you.game`
   * (a racer without a view yet; at most every 400 ms, one request at a time). */
  askForViewAtStart(room) {
    const app = this.app;
    if (app.state.view || !app.state.you || app.state.you.role !== "racer" || !app.conn.online) return;
    const now = Date.now();
    if (this.askingView || (this.viewAskedAt && now - this.viewAskedAt <= 400)) return;
    this.viewAskedAt = now;
    this.askingView = true;
    app.nav.joinRoom(room.code, "racer").finally(() => (this.askingView = false));
  }

  /** Queue an action; one is in flight at a time, each with the next seq. */
  act(action) {
    const room = this.app.state.room;
    if (!room || !this.app.state.view) return;
    this.actions.queue.push(action);
    this.pump();
  }

  pump() {
    if (this.actions.inflight || this.actions.queue.length === 0 || !this.app.conn.online) return;
    const action = this.actions.queue.shift();
    this.actions.inflight = { action, seq: this.actions.lastAcked + 1, round: this.app.state.room.round };
    this.sendInflight();
  }

  async sendInflight() {
    const app = this.app;
    const inflight = this.actions.inflight;
    const room = app.state.room;
    if (!inflight || !room) return;
    if (!app.conn.online) {
      inflight.lost = true; // goes out after the reconnect's snapshot
      return;
    }
    inflight.lost = false;
    app.board.setBusy(true);
    try {
      const reply = await app.conn.request({ t: "act", room: room.code, seq: inflight.seq, action: inflight.action });
      this.actionReply(reply);
    } catch (err) {
      if (err.code === "disconnected" || err.code === "offline" || err.code === "timeout") {
        inflight.lost = true; // resent after the reconnect, if it was not stored
        // No reply for that long: treat the connection as dead and start over.
        if (err.code === "timeout") app.conn.reconnect();
        return;
      }
      if (this.actions.inflight === inflight) this.actions.inflight = null;
      this.actions.queue = [];
      app.board.setBusy(false);
      app.feedback.toast(err.reply ? messageFor("error", err.reply) : String(err.message));
    }
  }

  actionReply(msg) {
    const app = this.app;
    const inflight = this.actions.inflight;
    if (!inflight || msg.seq !== inflight.seq) {
      if (msg.t === "ack" && msg.view && msg.seq >= this.actions.lastAcked) {
        this.actions.lastAcked = msg.seq;
        this.setView(msg.view, this.viewRound);
      }
      return;
    }
    this.actions.inflight = null;
    app.board.setBusy(false);
    if (msg.t === "ack") {
      this.actions.lastAcked = Math.max(this.actions.lastAcked, msg.seq);
      const said = this.moveWords(inflight.action, msg.view);
      if (msg.view) {
        const flight = app.board.measureMove(inflight.action);
        this.setView(msg.view, this.viewRound);
        app.board.fly(flight);
      }
      if (said) app.feedback.announce(said);
      if (app.toastEl.classList.contains("refused")) app.feedback.hideToast();
      app.feedback.sound("move");
      this.lastPlayed = inflight.action;
      views.updateHud(this.app);
      this.pump();
      if (this.autoFinishing) this.autoFinishStep();
    } else {
      // A refused action does not use up its seq; what was queued after it is dropped,
      // since it was planned on a board that did not happen.
      this.actions.queue = [];
      const dropped = app.board.dropTaps();
      app.feedback.toast(messageFor("refuse", msg) + (dropped ? ` ${t("game.tapsDropped", { n: dropped })}` : ""), "refused");
      app.board.shake(inflight.action);
      app.feedback.sound("refuse");
      this.autoFinishing = false;
    }
  }

  /** A played action in words for the announcer ("Seven of hearts to pile 4"), from the
   * board before it (the card) and the view after it (redeals left). */
  moveWords(action, after) {
    if (action === "undo") return t("say.undone");
    if (action === "redeal") {
      const left = after ? after.redeals_left : 0;
      return left ? t("say.redealt", { n: left }) : t("say.redealtLast");
    }
    if (action === "resign") return null;
    const match = /^([a-z]+\d*)-([a-z]+\d*)$/.exec(action || "");
    const top = match && this.app.state.view && (placeState(this.app.state.view, match[1]) || {}).top;
    if (!match || !top) return null;
    const to = match[2];
    const target =
      to[0] === "p"
        ? t("say.toPile", { n: to.slice(1) })
        : t(to[0] === "a" ? "say.toFoundationUp" : "say.toFoundationDown", { suit: t(`suit.${to[1].toUpperCase()}`) });
    return t("say.move", { card: cardName(top), to: target });
  }

  /** A redeal cannot be undone: the page asks first, unless told not to ask again. */
  async redeal() {
    if (!this.canPlay() || this.app.feedback.modalOpen) return;
    if (load("noRedealConfirm") !== "1") {
      const answer = await this.app.feedback.dialog({
        title: t("confirm.redealTitle"),
        body: [h("p", {}, t("confirm.redealText"))],
        checkbox: t("confirm.dontAsk"),
        testid: "confirm-redeal",
        actions: [
          { label: t("game.cancel"), value: "no", kind: "ghost", testid: "confirm-no" },
          { label: t("game.redeal"), value: "yes", kind: "gold", testid: "confirm-yes" },
        ],
      });
      if (answer.value !== "yes") return;
      if (answer.checked) save("noRedealConfirm", "1");
    }
    if (this.canPlay()) this.act("redeal");
  }

  canPlay() {
    const app = this.app;
    return app.phase() === "racing" && !!app.state.view && app.state.view.status === "playing";
  }

  // --- practice: hints and auto-finish (solo rooms only; the server refuses them in races) ---

  async hint() {
    const app = this.app;
    if (!app.practice || !this.canPlay()) return;
    const room = app.state.room;
    let action;
    let finishing = false;
    try {
      const reply = await app.conn.request({ t: "hint", room: room.code });
      action = reply.action ?? null;
      finishing = !!reply.finishing;
    } catch (err) {
      // No solver on this server yet (unknown_type): a move that makes progress, found
      // from the cards on the table.
      if (!(err instanceof RequestError) || !err.reply) return;
      action = suggestMove(app.state.view, room.variant, reverseMove(this.lastPlayed));
    }
    this.finishing = finishing;
    views.updateHud(this.app);
    this.showHint(action);
  }

  showHint(action) {
    const app = this.app;
    const view = app.state.view;
    if (!action) return app.feedback.toast(t("hint.none"));
    if (action === "redeal") return app.feedback.toast(t("hint.redeal"));
    const [from, to] = action.split("-");
    app.board.hint(action);
    app.feedback.toast(t("hint.move", { card: cardText(placeState(view, from).top), from: placeName(from), to: placeName(to) }), "hint");
  }

  /** The results' "Was it winnable?": the solver's answer for the revealed deal. */
  async askWinnable(button, out) {
    const app = this.app;
    const room = app.state.room;
    if (!room) return;
    button.disabled = true;
    out.textContent = t("winnable.asking");
    try {
      const reply = await app.conn.request({ t: "winnable", room: room.code });
      out.textContent =
        reply.result === "won" ? t("winnable.won", { n: (reply.line || []).length }) : t(`winnable.${reply.result === "impossible" ? "impossible" : "unknown"}`);
    } catch (err) {
      out.textContent = err instanceof RequestError && err.reply ? messageFor("error", err.reply) : t("net.lost");
      button.disabled = false;
    }
    app.feedback.announce(out.textContent || "");
  }

  /** Every remaining card can go home by foundation moves alone: play them one by one. */
  autoFinish() {
    if (!this.app.practice || !this.finishing || !this.canPlay()) return;
    this.autoFinishing = true;
    this.autoFinishStep();
  }

  async autoFinishStep() {
    if (!this.autoFinishing || !this.canPlay() || this.actions.inflight) {
      if (!this.canPlay()) this.autoFinishing = false;
      return;
    }
    try {
      const reply = await this.app.conn.request({ t: "hint", room: this.app.state.room.code });
      if (!reply.action || !reply.finishing) {
        this.autoFinishing = false;
        return;
      }
      this.act(reply.action);
    } catch {
      this.autoFinishing = false;
    }
  }

  undo() {
    const app = this.app;
    const status = app.state.view && app.state.view.status;
    if (app.phase() === "racing" && (status === "playing" || status === "locked")) this.act("undo");
  }

  async resign() {
    const app = this.app;
    if (!this.canPlay() || app.feedback.modalOpen) return;
    // A practice game is nobody's race, and the daily ranked attempt is one try of the
    // day: giving either up says so in its own words.
    const words = app.practice
      ? { title: "practice.giveUpConfirm", text: "practice.giveUpText", yes: "practice.giveUp" }
      : app.dailyRoom && (await app.daily.isRankedAttempt(app.state.room.code))
        ? { title: "daily.giveUpConfirm", text: "daily.giveUpText", yes: "daily.giveUp" }
        : { title: "game.resignConfirm", text: "confirm.resignText", yes: "game.resign" };
    const answer = await app.feedback.dialog({
      title: t(words.title),
      body: [h("p", {}, t(words.text))],
      testid: "confirm-resign",
      actions: [
        { label: t("game.cancel"), value: "no", kind: "ghost", testid: "confirm-no" },
        { label: t(words.yes), value: "yes", kind: "danger", testid: "confirm-yes" },
      ],
    });
    if (answer.value === "yes" && this.canPlay()) this.act("resign");
  }

  /** The host ends the race for everyone (after confirming): ranked as at a deadline. */
  async endRace() {
    const app = this.app;
    if (app.feedback.modalOpen || !this.canEndRace()) return;
    const answer = await app.feedback.dialog({
      title: t("race.endConfirm"),
      body: [h("p", {}, t("confirm.endRaceText"))],
      testid: "confirm-end-race",
      actions: [
        { label: t("game.cancel"), value: "no", kind: "ghost", testid: "confirm-no" },
        { label: t("race.end"), value: "yes", kind: "danger", testid: "confirm-yes" },
      ],
    });
    if (answer.value === "yes" && this.canEndRace()) await app.nav.roomRequest({ t: "end_race" });
  }

  /** Only the host, during a race with other seats (a practice game has resign). */
  canEndRace() {
    const app = this.app;
    const { room, player } = app.state;
    return !!room && !!player && room.host === player.id && !app.practice && app.phase() === "racing";
  }

  /**
   * The keyboard (docs/browser.md, "Keyboard"): arrows walk the places (while a card is
   * picked up, only the places that take it), Enter/Space taps, F sends the focused card
   * home, 1–9 pick the n-th place that takes the picked-up card, R redeal, U undo,
   * H hint (practice), Esc cancels.
   */
  keydown(event) {
    const app = this.app;
    const tag = (event.target && event.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (!app.state.view || app.feedback.modalOpen || modalOpen()) return;
    const key = event.key.toLowerCase();
    if (key === "r") {
      event.preventDefault();
      this.redeal();
    } else if (key === "u") {
      event.preventDefault();
      this.undo();
    } else if (key === "h" && app.practice) {
      event.preventDefault();
      this.hint();
    } else if (key === "f") {
      event.preventDefault();
      app.board.keys.sendHome();
    } else if (/^[1-9]$/.test(key) && app.board.keys.pickTarget(Number(key))) {
      event.preventDefault();
    } else if (key === "escape") {
      app.board.cancel();
    } else if (key.startsWith("arrow") && app.board.keys.focusNext(key === "arrowright" || key === "arrowdown" ? 1 : -1)) {
      event.preventDefault();
    }
  }
}
