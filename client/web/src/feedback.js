// What the page tells the player besides the screens: toasts, race news, the one polite
// live region, focus kept across redraws, sound, and the page's own dialogs.
import { focusByIdentity, focusIdentity, howToPlayBody, modalOpen, openDialog } from "./dialogs.js";
import { h } from "./dom.js";
import { playSound } from "./effects.js";
import { t } from "./i18n.js";
import { load, save } from "./storage.js";
import * as views from "./views.js";

export class Feedback {
  /** @param {import("./app.js").App} app */
  constructor(app) {
    this.app = app;
    this.modalOpen = false; // one of the page's dialogs is open
    this.toastTimer = null;
    this.toastScreen = null;
    this.keepFocusQueued = false;
    this.fallbackFocus = null;
    /** @type {HTMLElement | null} */
    this.lastFocused = null;
    this.lastFocusedId = null;
    // Where the player last was (by identity: the board and the HUD are redrawn), so a
    // redraw never leaves focus on <body>; see keepFocus.
    document.addEventListener("focusin", (e) => {
      const target = /** @type {HTMLElement} */ (e.target);
      this.lastFocused = target;
      this.lastFocusedId = focusIdentity(target);
    });
  }

  /** Say something to screen readers through the page's one polite live region. Each
   * message is a line of its own (a repeat is announced again); old lines go. */
  announce(text) {
    const app = this.app;
    const line = h("p", {}, text);
    app.announcer.append(line);
    while (app.announcer.childElementCount > 3) app.announcer.firstElementChild?.remove();
    setTimeout(() => line.remove(), 10000);
  }

  /**
   * Focus is never left on <body> by a redraw: the element the player was on is found
   * again by its identity (a place, a button's test id); when it is gone or cannot take
   * focus (a button now disabled), the board's place the player was at (or pile 1), else
   * the screen's first heading. Never while a dialog holds focus, never over an element
   * the player chose (only when what had focus left the page).
   */
  keepFocus() {
    const app = this.app;
    if (modalOpen()) return;
    const active = document.activeElement;
    // The screen's heading held focus only until the board came (the countdown).
    if (active && active === this.fallbackFocus && app.state.view && app.board.el.isConnected) {
      this.fallbackFocus = null;
      app.board.keys.focusPlace();
      return;
    }
    if (active && active !== document.body && active.isConnected) return;
    if (!this.lastFocused) return; // nothing had focus yet: the browser's own start
    if (this.lastFocused.isConnected && this.lastFocused !== document.body) return; // the player left it
    if (focusByIdentity(this.lastFocusedId)) return;
    if (app.state.view && app.board.el.isConnected && app.board.keys.focusPlace()) return;
    const heading = /** @type {HTMLElement|null} */ (app.main.querySelector("h1, h2"));
    if (heading) {
      heading.setAttribute("tabindex", "-1");
      heading.focus({ preventScroll: true });
      this.fallbackFocus = heading;
    }
  }

  scheduleKeepFocus() {
    if (this.keepFocusQueued) return;
    this.keepFocusQueued = true;
    queueMicrotask(() => {
      this.keepFocusQueued = false;
      this.keepFocus();
    });
  }

  /** @param {Parameters<typeof openDialog>[1]} options */
  async dialog(options) {
    this.modalOpen = true;
    try {
      return await openDialog(this.app.modalRoot, options);
    } finally {
      this.modalOpen = false;
      this.scheduleKeepFocus();
    }
  }

  showHowTo() {
    const closed = this.dialog({
      title: t("help.title"),
      body: howToPlayBody(),
      testid: "how-to",
      actions: [{ label: t("help.close"), value: "ok", kind: "primary", testid: "close-how-to" }],
    });
    // The dialog is mounted by now and focusing its Close button (at the bottom) scrolled
    // it there: a reader starts at the top, with the goal.
    const box = this.app.modalRoot.querySelector('[data-testid="how-to"]');
    if (box) box.scrollTop = 0;
    return closed;
  }

  toggleSound() {
    const on = load("sound") !== "1";
    save("sound", on ? "1" : null);
    if (on) this.sound("toast");
    views.renderTopbar(this.app);
  }

  get soundOn() {
    return load("sound") === "1";
  }

  /** @param {"move"|"refuse"|"win"|"toast"} kind */
  sound(kind) {
    if (this.soundOn) playSound(kind);
  }


  toast(text, kind = "info") {
    this.app.toastEl.textContent = text;
    this.app.toastEl.className = `toast show ${kind}`;
    this.placeToast();
    clearTimeout(this.toastTimer);
    this.toastTimer = setTimeout(() => this.hideToast(), 4000);
  }

  /** On the board the message sits on the felt inside the horseshoe, just above the
   * board's lower edge: the horseshoe is open at the bottom, so it covers no card, and it
   * stays clear of the HUD's buttons wherever the layout puts them. Elsewhere it keeps
   * its place in the stylesheet (bottom centre). */
  placeToast() {
    const app = this.app;
    const style = app.toastEl.style;
    style.left = style.bottom = style.maxWidth = "";
    if (!app.root.classList.contains("race-mode")) return;
    const wrap = app.main.querySelector(".board-wrap");
    const box = (/** @type {string} */ place) => app.main.querySelector(`[data-place="${place}"]`)?.getBoundingClientRect();
    const leftColumn = ["p1", "p2", "p3", "p4"].map(box);
    const rightColumn = ["p13", "p14", "p15", "p16"].map(box);
    if (!wrap || leftColumn.some((r) => !r) || rightColumn.some((r) => !r)) return;
    const left = Math.max(...leftColumn.map((r) => r.right));
    const right = Math.min(...rightColumn.map((r) => r.left));
    const bottom = Math.min(wrap.getBoundingClientRect().bottom, window.innerHeight);
    // The foundations are in the middle: the message stays below them.
    const foundations = [...app.main.querySelectorAll("[data-place]")].filter((el) => !/^p\d/.test(/** @type {HTMLElement} */ (el).dataset.place || ""));
    const top = Math.max(0, ...foundations.map((el) => el.getBoundingClientRect().bottom));
    if (right - left < 120 || bottom - top < 40) return;
    style.left = `${(left + right) / 2}px`;
    style.maxWidth = `${Math.floor(right - left - 8)}px`;
    style.bottom = `${Math.ceil(window.innerHeight - bottom + 6)}px`;
    // Too tall for the room below the foundations: the same words, smaller.
    app.toastEl.classList.toggle("tight", app.toastEl.getBoundingClientRect().height > bottom - top - 12);
  }

  hideToast() {
    this.app.toastEl.className = "toast";
  }

  /** A message about the board (a hint, a refusal) is gone once the results or the
   * waiting room show: it would cover them and no longer means anything there. */
  dismissToastOnNewScreen() {
    const app = this.app;
    const room = app.state.room;
    const phase = app.phase();
    const screen = !room ? "none" : phase === "waiting" ? "waiting" : phase === "finished" && !app.state.resultsHidden ? "results" : "board";
    if (screen !== this.toastScreen && (screen === "waiting" || screen === "results")) this.hideToast();
    this.toastScreen = screen;
  }

  /** Race news: a line at the top for a few seconds (several in a row stack up). */
  news(text) {
    const line = h("p", { class: "news-line" }, text);
    this.app.newsEl.append(line);
    this.announce(text);
    this.sound("toast");
    setTimeout(() => line.remove(), 6000);
  }
}
