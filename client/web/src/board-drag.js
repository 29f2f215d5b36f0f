// Drag and drop on the board: a card pressed and moved past a few pixels follows the
// pointer (a ghost of it), the places that take it light up, and where it is let go
// decides the move: a place, or anywhere on the foundation area (the foundation of its
// suit that takes it). A press that does not move is a tap: the click handler takes it.
import { h } from "./dom.js";
import { acceptingPlaces, isFoundation, movableCard } from "./rules.js";

const DRAG_THRESHOLD_PX = 6;

export class BoardDrag {
  /** @param {import("./board.js").Board} board */
  constructor(board) {
    this.board = board;
    /** The drag under way, if any. */
    this.active = null;
    /** A drag just ended: the click its pointerup makes is not a tap. */
    this.suppressClick = false;
    this.onMove = (e) => this.pointerMove(e);
    this.onUp = (e) => this.pointerUp(e);
    board.el.addEventListener("pointerdown", (e) => this.pointerDown(e));
  }

  pointerDown(event) {
    const board = this.board;
    if (event.button !== 0 || !board.playable || board.busy) return;
    const placeEl = event.target.closest("[data-place]");
    if (!placeEl) return;
    const place = placeEl.dataset.place;
    if (!movableCard(board.view, place)) return;
    const cardEl = placeEl.querySelector(".slot .card");
    if (!cardEl) return;
    this.active = { place, placeEl, cardEl, x: event.clientX, y: event.clientY, ghost: null, pointerId: event.pointerId };
    window.addEventListener("pointermove", this.onMove);
    window.addEventListener("pointerup", this.onUp);
    window.addEventListener("pointercancel", this.onUp);
  }

  pointerMove(event) {
    const drag = this.active;
    if (!drag || event.pointerId !== drag.pointerId) return;
    if (!drag.ghost) {
      if (Math.hypot(event.clientX - drag.x, event.clientY - drag.y) < DRAG_THRESHOLD_PX) return;
      this.lift(drag);
    }
    event.preventDefault();
    drag.ghost.style.transform = `translate(${event.clientX - drag.dx}px, ${event.clientY - drag.dy}px) rotate(3deg)`;
    const over = this.dropTarget(event.clientX, event.clientY);
    const el = this.board.el;
    el.querySelectorAll(".drop-over").forEach((place) => place.classList.remove("drop-over"));
    if (over.el) over.el.classList.add("drop-over");
  }

  /** The card leaves its place: its ghost follows the pointer, the places that take it light up. */
  lift(drag) {
    const board = this.board;
    const rect = drag.cardEl.getBoundingClientRect();
    drag.dx = drag.x - rect.left;
    drag.dy = drag.y - rect.top;
    drag.ghost = h("div", { class: "drag-ghost", html: drag.cardEl.innerHTML });
    drag.ghost.style.width = `${rect.width}px`;
    drag.ghost.style.height = `${rect.height}px`;
    document.body.append(drag.ghost);
    drag.placeEl.classList.add("dragging");
    board.selected = null;
    board.el.querySelectorAll(".selected").forEach((el) => el.classList.remove("selected"));
    const fits = new Set(acceptingPlaces(board.view, board.variant, drag.place));
    board.el.querySelectorAll("[data-place]").forEach((el) => el.classList.toggle("target", fits.has(/** @type {HTMLElement} */ (el).dataset.place)));
  }

  dropTarget(x, y) {
    const under = document.elementFromPoint(x, y);
    if (!under || !this.board.el.contains(under)) return { el: null };
    const placeEl = /** @type {HTMLElement|null} */ (under.closest("[data-place]"));
    const area = under.closest("[data-area=foundations]");
    if (placeEl) return { el: placeEl, place: placeEl.dataset.place, area: !!area };
    if (area) return { el: area, place: null, area: true };
    return { el: null };
  }

  pointerUp(event) {
    const drag = this.active;
    if (!drag || event.pointerId !== drag.pointerId) return;
    window.removeEventListener("pointermove", this.onMove);
    window.removeEventListener("pointerup", this.onUp);
    window.removeEventListener("pointercancel", this.onUp);
    this.active = null;
    if (!drag.ghost) return; // a plain tap: the click handler takes it
    drag.ghost.remove();
    this.suppressClick = true;
    setTimeout(() => (this.suppressClick = false), 0);
    const over = event.type === "pointerup" ? this.dropTarget(event.clientX, event.clientY) : { el: null };
    const board = this.board;
    board.render();
    if (!over.el || over.place === drag.place) return;
    if (over.area && (over.place === null || isFoundation(over.place))) {
      board.toFoundations(drag.place, over.place);
    } else if (over.place) {
      board.move(drag.place, over.place);
    }
  }
}
