// The board: 16 piles in a horseshoe (1–4 up the left, 5–12 across the top, 13–16 down the
// right), the 8 foundations in the centre (aces above, kings below), and every way to move
// a card: tap (the card goes where it is the only fit, else the pile is selected and the
// next tap picks the target), double-tap (to a foundation), drag-and-drop (board-drag.js),
// dropping anywhere on the foundation area, and the keyboard (board-keys.js: Tab to a
// place, Enter/Space to tap). What it draws: board-places.js, board-layout.js; its
// motion: board-motion.js.
import { holdModal } from "./dialogs.js";
import { h } from "./dom.js";
import { BoardDrag } from "./board-drag.js";
import { BoardKeys } from "./board-keys.js";
import { fly, measureMove, shake } from "./board-motion.js";
import { foundationButton, foundationChooser, pileButton } from "./board-places.js";
import {
  ASCENDING,
  DESCENDING,
  acceptingFoundations,
  acceptingPlaces,
  foundationSuit,
  isFoundation,
  movableCard,
  placeState,
} from "./rules.js";

export { dealingTable } from "./board-places.js";

const DOUBLE_TAP_MS = 380;

export class Board {
  /**
   * @param {object} opts
   * @param {(action: string) => void} opts.onAction  send a move (rules notation)
   * @param {(code: string) => void} opts.onRefuse  a move the page refuses by itself (a refusal code)
   */
  constructor({ onAction, onRefuse }) {
    this.onAction = onAction;
    this.onRefuse = onRefuse;
    /** Taps made while a move awaits the server: played in order once it is answered. */
    this.pendingTaps = [];
    this.view = null;
    this.variant = "N";
    this.selected = null;
    /** The places that take the picked-up card, in the keys' order (set at each redraw). */
    this.targetOrder = [];
    this.lastTap = { place: null, at: 0, moved: false, top: null };
    this.chooser = null;
    this.busy = false;
    this.el = h("div", { class: "table", "data-testid": "board" });
    this.drag = new BoardDrag(this);
    this.keys = new BoardKeys(this);
    this.el.addEventListener("click", (e) => this.click(e));
    /** The place the player was last on (the board is redrawn after every move). */
    this.lastPlace = null;
    /** Where focus goes at the next redraw (after a move: the place the card left). */
    this.focusAfter = null;
    this.el.addEventListener("focusin", (e) => {
      const place = /** @type {HTMLElement} */ (e.target).dataset.place;
      if (place) this.lastPlace = place;
    });
  }

  setView(view, variant) {
    this.view = view;
    this.variant = variant || "N";
    if (this.selected && !movableCard(view, this.selected)) this.selected = null;
    this.render();
  }

  setBusy(busy) {
    this.busy = busy;
    this.el.classList.toggle("busy", busy);
    // The reply's new view is drawn in the same task, right after: the queued taps are
    // played on it, not on the board they were made on.
    if (!busy && this.pendingTaps.length) queueMicrotask(() => this.drainTaps());
  }

  drainTaps() {
    while (this.pendingTaps.length && !this.busy) {
      const { place, at } = /** @type {{place: string, at: number}} */ (this.pendingTaps.shift());
      this.tap(place, at);
    }
    this.markQueued();
  }

  /** Forget the queued taps (a refused move: they were planned on a board that did not happen). */
  dropTaps() {
    const dropped = this.pendingTaps.length;
    this.pendingTaps = [];
    this.markQueued();
    return dropped;
  }

  markQueued() {
    const queued = new Set(this.pendingTaps.map((tap) => tap.place));
    this.el.querySelectorAll("[data-place]").forEach((el) => el.classList.toggle("queued", queued.has(/** @type {HTMLElement} */ (el).dataset.place || "")));
  }

  /** Light up a suggested move's source and target for a moment. */
  hint(action) {
    const match = /^([a-z]+\d*)-([a-z]+\d*)$/.exec(action || "");
    this.el.querySelectorAll(".hinted").forEach((el) => el.classList.remove("hinted"));
    if (!match) return;
    for (const place of [match[1], match[2]]) {
      const el = this.el.querySelector(`[data-place="${place}"]`);
      if (el) el.classList.add("hinted");
    }
    clearTimeout(this.hintTimer);
    this.hintTimer = setTimeout(() => this.el.querySelectorAll(".hinted").forEach((el) => el.classList.remove("hinted")), 3000);
  }

  /** After the race (deadline or everyone done) nothing on the board can be moved. */
  setFrozen(frozen) {
    if (frozen === this.frozen) return;
    this.frozen = frozen;
    if (frozen) this.cancel();
    this.el.classList.toggle("frozen", frozen);
  }

  get playable() {
    return !!this.view && this.view.status === "playing" && !this.frozen;
  }

  render() {
    const view = this.view;
    if (!view) {
      this.el.replaceChildren();
      return;
    }
    this.closeChooser();
    // Focus is kept by the place's name, not its element (every element is new).
    const active = /** @type {HTMLElement|null} */ (document.activeElement);
    const hadFocus = !!active && this.el.contains(active);
    const keep = this.focusAfter || (hadFocus && active ? active.dataset.place : null);
    this.focusAfter = null;
    const order = this.selected ? this.keys.targets() : [];
    this.targetOrder = order;
    const look = { variant: this.variant, selected: this.selected, targets: this.selected ? new Set(order) : null, order };
    const crescent = h("div", { class: "crescent" });
    view.piles.forEach((pile, i) => crescent.append(pileButton(`p${i + 1}`, pile, look)));
    const area = h("div", { class: "foundation-area", "data-area": "foundations" });
    for (const row of [ASCENDING, DESCENDING]) {
      const line = h("div", { class: "foundation-row" });
      for (const place of row) line.append(foundationButton(place, view.foundations[place], look));
      area.append(line);
    }
    crescent.append(area);
    this.el.replaceChildren(crescent);
    if (keep && (hadFocus || document.activeElement === document.body || !document.activeElement)) {
      const el = /** @type {HTMLElement|null} */ (this.el.querySelector(`[data-place="${keep}"]`));
      if (el) el.focus({ preventScroll: true });
    }
    this.markQueued();
    this.el.classList.toggle("finished", view.status !== "playing");
    this.el.classList.toggle("variant-O", this.variant === "O");
  }

  // --- taps -------------------------------------------------------------------------------

  click(event) {
    if (this.drag.suppressClick) {
      this.drag.suppressClick = false;
      return;
    }
    const placeEl = event.target.closest("[data-place]");
    if (placeEl && this.el.contains(placeEl)) {
      this.tap(placeEl.dataset.place);
      return;
    }
    if (event.target.closest("[data-area=foundations]")) this.tapFoundationArea();
  }

  /**
   * @param {string} place
   * @param {number} [at]  when the tap was made (a queued tap keeps its time)
   */
  tap(place, at = performance.now()) {
    if (!this.playable) return;
    if (this.busy) {
      // A move is on its way to the server: this tap waits for its answer.
      this.pendingTaps.push({ place, at });
      this.markQueued();
      return;
    }
    const last = this.lastTap;
    const top = (placeState(this.view, place) || {}).top || null;
    // A second tap on the same card soon after is a double-tap; on a new card (the one
    // an auto-move uncovered, once the page shows it) it is a tap of its own.
    const isDouble = last.place === place && last.top === top && at - last.at < DOUBLE_TAP_MS;
    this.lastTap = { place, at, moved: false, top };
    if (isDouble) {
      // The first tap already moved the card (it had one fit): this tap belongs to it.
      if (last.moved) return;
      this.doubleTap(place);
      return;
    }
    if (this.selected) {
      const from = this.selected;
      this.select(null);
      if (from !== place) this.move(from, place);
      return;
    }
    if (!movableCard(this.view, place)) {
      // A foundation's base never moves: say so rather than do nothing.
      if (isFoundation(place)) this.onRefuse("base_locked");
      return;
    }
    const fits = acceptingPlaces(this.view, this.variant, place);
    if (fits.length === 1) {
      this.lastTap.moved = true;
      this.move(place, fits[0]);
    } else {
      this.select(place);
    }
  }

  doubleTap(place) {
    this.select(null);
    if (!movableCard(this.view, place)) return;
    const foundations = acceptingFoundations(this.view, place);
    const fits = acceptingPlaces(this.view, this.variant, place);
    const target = foundations[0] || fits[0];
    if (target) this.move(place, target);
  }

  tapFoundationArea() {
    if (!this.playable || this.busy || !this.selected) return;
    const from = this.selected;
    this.select(null);
    this.toFoundations(from, null);
  }

  /** Pick up a card (or put it down with null). With focus on the board, focus goes to
   * the first place that takes the card (Enter plays there, arrows and 1–9 choose another);
   * putting it down brings focus back to its pile. */
  select(place) {
    const from = this.selected;
    this.selected = place;
    const inBoard = this.el.contains(document.activeElement);
    this.render();
    if (!inBoard) return;
    const target = place ? this.targetOrder[0] || place : from;
    const el = target ? /** @type {HTMLElement|null} */ (this.el.querySelector(`[data-place="${target}"]`)) : null;
    if (el && document.activeElement !== el) el.focus({ preventScroll: true });
  }

  /** Where the card of a move action is now (before the new view is drawn), or null. */
  measureMove(action) {
    return measureMove(this.el, action);
  }

  /** The moved card glides to its new place (see board-motion.js). */
  fly(flight) {
    fly(this.el, flight);
  }

  /** A refused move: the card shakes its head where it stands. */
  shake(action) {
    this.focusAfter = null;
    shake(this.el, action);
  }

  cancel() {
    this.dropTaps();
    this.closeChooser();
    if (this.selected) this.select(null);
  }

  /** Send a move; focus (if on the board) goes back to the place the card left. */
  move(from, to) {
    if (this.el.contains(document.activeElement) || document.activeElement === document.body) this.focusAfter = from;
    this.onAction(`${from}-${to}`);
  }

  /**
   * A card dropped on the foundation area goes to the foundation of its suit that accepts
   * it; where both accept, the player is asked. `dropped` is the foundation under the
   * pointer, if any: an accepting foundation under the pointer decides by itself.
   */
  toFoundations(from, dropped) {
    const card = movableCard(this.view, from);
    if (!card) return;
    const fits = acceptingFoundations(this.view, from);
    if (dropped && fits.includes(dropped)) return this.move(from, dropped);
    if (fits.length === 1) return this.move(from, fits[0]);
    if (fits.length === 2) return this.openChooser(from, fits);
    // Nothing accepts: send it anyway, so the server gives the reason.
    const fallback =
      dropped || [...ASCENDING, ...DESCENDING].find((f) => foundationSuit(f) === card.suit && f !== from);
    if (fallback) this.move(from, fallback);
  }

  openChooser(from, places) {
    this.closeChooser();
    const tops = Object.fromEntries(places.map((place) => [place, this.view.foundations[place].top]));
    const chooser = foundationChooser({
      card: placeState(this.view, from).top,
      places,
      tops,
      onChoose: (place) => {
        this.closeChooser();
        this.move(from, place);
      },
      onCancel: () => this.closeChooser(),
    });
    this.chooser = chooser.el;
    this.el.append(chooser.el);
    this.chooserModal = holdModal(chooser.el, { onEscape: () => this.closeChooser(), focus: chooser.first });
  }

  closeChooser() {
    if (this.chooser) this.chooser.remove();
    this.chooser = null;
    const modal = this.chooserModal;
    this.chooserModal = null;
    if (modal) modal.release();
  }
}
