// The board from the keyboard: every place is a button (Tab to it, Enter/Space taps it);
// the arrows go round the horseshoe (or, while a card is picked up, round the places
// that take it), 1–9 play the picked-up card to the n-th of those, F sends a card home.
import { ASCENDING, DESCENDING, acceptingPlaces, isFoundation, movableCard } from "./rules.js";

const FOUNDATION_ORDER = [...ASCENDING, ...DESCENDING];

/** A place's turn around the horseshoe: piles 1 → 16, then the foundations. */
function placeOrder(place) {
  return place[0] === "p" ? Number(place.slice(1)) : 17 + FOUNDATION_ORDER.indexOf(place);
}

export class BoardKeys {
  /** @param {import("./board.js").Board} board */
  constructor(board) {
    this.board = board;
  }

  /** The places that take the picked-up card, in the order the keys give them: the
   * foundations first (Enter twice sends a card home), then the piles 1 → 16. */
  targets() {
    const board = this.board;
    if (!board.view || !board.selected) return [];
    const fits = acceptingPlaces(board.view, board.variant, board.selected);
    return [...fits.filter(isFoundation), ...fits.filter((place) => !isFoundation(place))];
  }

  /** Focus a place (the one the player was last on, else pile 1); false if none. */
  focusPlace(place = this.board.lastPlace || "p1") {
    const el = /** @type {HTMLElement|null} */ (
      this.board.el.querySelector(`[data-place="${place}"]`) || this.board.el.querySelector("[data-place]")
    );
    if (!el) return false;
    el.focus({ preventScroll: true });
    return document.activeElement === el;
  }

  /** Key 1–9 while a card is picked up: play it to the n-th place that takes it. */
  pickTarget(n) {
    const board = this.board;
    if (!board.selected || !board.playable || board.busy) return false;
    const target = board.targetOrder[n - 1];
    if (!target) return false;
    const from = board.selected;
    board.select(null);
    board.move(from, target);
    return true;
  }

  /** Key F: the focused (or picked-up) card goes home, as if dropped on the foundations. */
  sendHome() {
    const board = this.board;
    if (!board.playable || board.busy) return;
    const active = /** @type {HTMLElement|null} */ (document.activeElement);
    const from = board.selected || (active && board.el.contains(active) ? active.dataset.place : null);
    if (!from || !movableCard(board.view, from)) return;
    if (board.selected) board.select(null);
    board.toFoundations(from, null);
  }

  /** Arrow keys: focus the next (+1) or previous (−1) place around the horseshoe. */
  focusNext(step) {
    const board = this.board;
    const targets = board.selected ? board.targetOrder : [];
    if (targets.length) {
      // A card is picked up: the arrows go round the places that take it.
      const active = /** @type {HTMLElement|null} */ (document.activeElement);
      const at = targets.indexOf((active && active.dataset.place) || "");
      const next = targets[(at + step + targets.length) % targets.length];
      const el = /** @type {HTMLElement|null} */ (board.el.querySelector(`[data-place="${next}"]`));
      if (el) el.focus();
      return !!el;
    }
    const places = /** @type {HTMLElement[]} */ ([...board.el.querySelectorAll("[data-place]")]);
    if (!places.length) return false;
    places.sort((a, b) => placeOrder(a.dataset.place) - placeOrder(b.dataset.place));
    const at = places.indexOf(/** @type {HTMLElement} */ (document.activeElement));
    const next = at < 0 ? places[0] : places[(at + step + places.length) % places.length];
    next.focus();
    return true;
  }
}
