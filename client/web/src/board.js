// The board: 16 piles in a horseshoe (1–4 up the left, 5–12 across the top, 13–16 down the
// right), the 8 foundations in the centre (aces above, kings below), and every way to move
// a card: tap (the card goes where it is the only fit, else the pile is selected and the
// next tap picks the target), double-tap (to a foundation), drag-and-drop, dropping anywhere
// on the foundation area, and the keyboard (Tab to a place, Enter/Space to tap).
import { cardBackSvg, cardName, cardSvg, cardText, isRed } from "./cards.js";
import { holdModal } from "./dialogs.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
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

const DOUBLE_TAP_MS = 380;
const FOUNDATION_ORDER = [...ASCENDING, ...DESCENDING];
const DRAG_THRESHOLD_PX = 6;

/** Grid cell (column, row) of each pile in the wide 10 × 4 horseshoe (an arc). */
function pileCell(n) {
  if (n <= 4) return [1, 5 - n]; // 1 at the bottom left, 4 at the top of the left side
  if (n <= 12) return [n - 3, 1]; // 5…12 across the top, left to right
  return [10, n - 12]; // 13 at the top of the right side, 16 at the bottom
}

/** Grid cell of each pile in the tall 6 × 6 horseshoe (portrait screens): five piles up
 * each side and six across the top, the foundations inside. */
function tallCell(n) {
  if (n <= 5) return [1, 7 - n]; // 1 at the bottom left, 5 just below the top row
  if (n <= 11) return [n - 5, 1]; // 6…11 across the top
  return [6, n - 10]; // 12 below the top right corner, 16 at the bottom right
}

/** The inline style placing pile `n` in both layouts; the stylesheet picks one by the
 * shape of the space the board has (a container query). */
function pileStyle(n) {
  const [col, row] = pileCell(n);
  const [tallCol, tallRow] = tallCell(n);
  return `--c:${col};--r:${row};--tc:${tallCol};--tr:${tallRow};--arc:${arcOffset(n)}`;
}

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
    this.lastTap = { place: null, at: 0, moved: false, top: null };
    this.drag = null;
    this.chooser = null;
    this.busy = false;
    this.el = h("div", { class: "table", "data-testid": "board" });
    this.el.addEventListener("pointerdown", (e) => this.pointerDown(e));
    this.el.addEventListener("click", (e) => this.click(e));
    /** The place the player was last on (the board is redrawn after every move). */
    this.lastPlace = null;
    /** Where focus goes at the next redraw (after a move: the place the card left). */
    this.focusAfter = null;
    this.el.addEventListener("focusin", (e) => {
      const place = /** @type {HTMLElement} */ (e.target).dataset.place;
      if (place) this.lastPlace = place;
    });
    this.onMove = (e) => this.pointerMove(e);
    this.onUp = (e) => this.pointerUp(e);
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
    const order = this.selected ? this.keyTargets() : [];
    const targets = this.selected ? new Set(order) : null;
    this.targetOrder = order;
    const crescent = h("div", { class: "crescent" });
    view.piles.forEach((pile, i) => {
      crescent.append(this.renderPile(`p${i + 1}`, pile, targets));
    });
    const area = h("div", { class: "foundation-area", "data-area": "foundations" });
    for (const row of [ASCENDING, DESCENDING]) {
      const line = h("div", { class: "foundation-row" });
      for (const place of row) line.append(this.renderFoundation(place, view.foundations[place], targets));
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

  renderPile(place, pile, targets) {
    const n = pile.n;
    const count = t("game.cards", { n });
    let label = pile.top
      ? t("card.onPile", { card: cardName(pile.top), n: place.slice(1), count })
      : t("card.emptyPile", { n: place.slice(1) });
    // Open Crescent shows the cards below: a screen reader hears them too, top first.
    if (this.variant === "O" && Array.isArray(pile.cards) && pile.cards.length > 1) {
      label += `; ${pile.cards.slice(0, -1).reverse().map(cardName).join(", ")}`;
    }
    label += this.choiceWords(place);
    const classes = ["place", "pile"];
    if (this.selected === place) classes.push("selected");
    if (targets && targets.has(place)) classes.push("target");
    if (n === 0) classes.push("is-empty");
    const depth = Math.min(Math.max(n - 1, 0), 4);
    const below =
      this.variant === "O" && Array.isArray(pile.cards) && pile.cards.length > 1
        ? h(
            "span",
            { class: "fan", "data-testid": "fan", "aria-hidden": "true" },
            pile.cards.slice(0, -1).map((c) => h("span", { class: `fan-card ${isRed(c) ? "red" : "black"}` }, cardText(c))),
          )
        : null;
    return h(
      "button",
      {
        type: "button",
        class: classes.join(" "),
        style: pileStyle(Number(place.slice(1))),
        "data-place": place,
        "data-top": pile.top || "",
        "data-count": n,

        "aria-pressed": this.selected === place ? "true" : "false",
      },
      // The name a screen reader says is the button's own text (not an aria-label, so the
      // card's drawn index is not "visible text missing from the name").
      h("span", { class: "sr-only" }, label),
      h(
        "span",
        { class: "slot", style: `--depth:${depth}`, "aria-hidden": "true" },
        n > 1 && this.variant !== "O" ? h("span", { class: "under" }) : null,
        pile.top ? h("span", { class: "card", html: cardSvg(pile.top) }) : h("span", { class: "empty-slot" }),
      ),
      this.choiceBadge(place),
      below,
      h(
        "span",
        { class: "caption", "aria-hidden": "true" },
        h("span", { class: "pile-no" }, place.slice(1)),
        h("span", { class: "count", "data-testid": "count" }, String(n)),
      ),
    );
  }

  renderFoundation(place, state, targets) {
    const ascending = place[0] === "a";
    const suit = foundationSuit(place);
    const label = t("card.onFoundation", {
      card: cardName(state.top),
      place: t(ascending ? "game.foundationUp" : "game.foundationDown", { suit: t(`suit.${suit}`) }),
      count: t("game.cards", { n: state.n }),
    }) + this.choiceWords(place);
    const classes = ["place", "foundation", ascending ? "up" : "down"];
    if (this.selected === place) classes.push("selected");
    if (targets && targets.has(place)) classes.push("target");
    if (state.n >= 13) classes.push("complete");
    return h(
      "button",
      {
        type: "button",
        class: classes.join(" "),
        "data-place": place,
        "data-top": state.top || "",
        "data-count": state.n,

      },
      h("span", { class: "sr-only" }, label),
      h("span", { class: "slot", "aria-hidden": "true" }, state.top ? h("span", { class: "card", html: cardSvg(state.top) }) : null),
      this.choiceBadge(place),
      h(
        "span",
        { class: "caption", "aria-hidden": "true" },
        h("span", { class: "dir", "aria-hidden": "true" }, ascending ? "▲" : "▼"),
        h("span", { class: "count" }, String(state.n)),
      ),
    );
  }

  /** The places that take the picked-up card, in the order the keys give them: the
   * foundations first (Enter twice sends a card home), then the piles 1 → 16. */
  keyTargets() {
    if (!this.view || !this.selected) return [];
    const fits = acceptingPlaces(this.view, this.variant, this.selected);
    return [...fits.filter(isFoundation), ...fits.filter((place) => !isFoundation(place))];
  }

  /** ", choice 2" in a target's name while a card is picked up (the key that plays there). */
  choiceWords(place) {
    const at = (this.targetOrder || []).indexOf(place);
    return at >= 0 && at < 9 ? t("kb.choice", { n: at + 1 }) : "";
  }

  /** The number drawn on a target while a card is picked up: the key that plays there. */
  choiceBadge(place) {
    const at = (this.targetOrder || []).indexOf(place);
    return at >= 0 && at < 9 ? h("span", { class: "choice-key", "aria-hidden": "true" }, String(at + 1)) : null;
  }

  /** Focus a place (the one the player was last on, else pile 1); false if none. */
  focusPlace(place = this.lastPlace || "p1") {
    const el = /** @type {HTMLElement|null} */ (
      this.el.querySelector(`[data-place="${place}"]`) || this.el.querySelector("[data-place]")
    );
    if (!el) return false;
    el.focus({ preventScroll: true });
    return document.activeElement === el;
  }

  /** Key 1–9 while a card is picked up: play it to the n-th place that takes it. */
  pickTarget(n) {
    if (!this.selected || !this.playable || this.busy) return false;
    const target = (this.targetOrder || [])[n - 1];
    if (!target) return false;
    const from = this.selected;
    this.select(null);
    this.move(from, target);
    return true;
  }

  /** Key F: the focused (or picked-up) card goes home, as if dropped on the foundations. */
  sendHome() {
    if (!this.playable || this.busy) return;
    const active = /** @type {HTMLElement|null} */ (document.activeElement);
    const from = this.selected || (active && this.el.contains(active) ? active.dataset.place : null);
    if (!from || !movableCard(this.view, from)) return;
    if (this.selected) this.select(null);
    this.toFoundations(from, null);
  }

  // --- taps -------------------------------------------------------------------------------

  click(event) {
    if (this.suppressClick) {
      this.suppressClick = false;
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
    const target = place ? (this.targetOrder || [])[0] || place : from;
    const el = target ? /** @type {HTMLElement|null} */ (this.el.querySelector(`[data-place="${target}"]`)) : null;
    if (el && document.activeElement !== el) el.focus({ preventScroll: true });
  }

  /** Where the card of a move action is now (before the new view is drawn), or null. */
  measureMove(action) {
    const match = /^([a-z]+\d*)-([a-z]+\d*)$/.exec(action || "");
    if (!match) return null;
    const card = this.el.querySelector(`[data-place="${match[1]}"] .slot .card`);
    if (!card) return null;
    return { to: match[2], rect: card.getBoundingClientRect() };
  }

  /** The moved card glides from where it was to its new place (FLIP), unless the
   * player asked for reduced motion. */
  fly(flight) {
    if (!flight || window.matchMedia("(prefers-reduced-motion: reduce)").matches) return;
    const card = this.el.querySelector(`[data-place="${flight.to}"] .slot .card`);
    if (!card) return;
    const now = card.getBoundingClientRect();
    const dx = flight.rect.left - now.left;
    const dy = flight.rect.top - now.top;
    if (Math.abs(dx) + Math.abs(dy) < 2) return;
    const place = card.closest(".place");
    place.classList.add("landing"); // above its neighbours while it flies
    const animation = card.animate(
      [{ transform: `translate(${dx}px, ${dy}px) scale(1.06)` }, { transform: "translate(0, 0) scale(1)" }],
      { duration: 200, easing: "cubic-bezier(.2,.7,.3,1)" },
    );
    animation.onfinish = animation.oncancel = () => place.classList.remove("landing");
  }

  /** A refused move: the card shakes its head where it stands. */
  shake(action) {
    this.focusAfter = null;
    const match = /^([a-z]+\d*)-/.exec(action || "");
    const card = match && this.el.querySelector(`[data-place="${match[1]}"] .slot .card`);
    if (!card || window.matchMedia("(prefers-reduced-motion: reduce)").matches) return;
    card.animate(
      [0, -6, 6, -4, 4, 0].map((x) => ({ transform: `translateX(${x}px)` })),
      { duration: 320, easing: "ease-in-out" },
    );
  }

  /** Arrow keys: focus the next (+1) or previous (−1) place around the horseshoe. */
  focusNext(step) {
    const targets = this.selected ? this.targetOrder || [] : [];
    if (targets.length) {
      // A card is picked up: the arrows go round the places that take it.
      const active = /** @type {HTMLElement|null} */ (document.activeElement);
      const at = targets.indexOf((active && active.dataset.place) || "");
      const next = targets[(at + step + targets.length) % targets.length];
      const el = /** @type {HTMLElement|null} */ (this.el.querySelector(`[data-place="${next}"]`));
      if (el) el.focus();
      return !!el;
    }
    const places = [...this.el.querySelectorAll("[data-place]")];
    if (!places.length) return false;
    const order = (el) => {
      const place = el.dataset.place;
      return place[0] === "p" ? Number(place.slice(1)) : 17 + FOUNDATION_ORDER.indexOf(place);
    };
    places.sort((a, b) => order(a) - order(b));
    const at = places.indexOf(document.activeElement);
    const next = at < 0 ? places[0] : places[(at + step + places.length) % places.length];
    next.focus();
    return true;
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
    const card = placeState(this.view, from).top;
    const buttons = places.map((place) => {
      const ascending = place[0] === "a";
      return h(
        "button",
        {
          type: "button",
          class: "choice",
          "data-choice": place,
          onclick: () => {
            this.closeChooser();
            this.move(from, place);
          },
        },
        h("span", { class: "choice-dir" }, ascending ? `▲ ${t("game.up")}` : `▼ ${t("game.down")}`),
        h("span", { class: "card mini", html: cardSvg(this.view.foundations[place].top) }),
      );
    });
    this.chooser = h(
      "div",
      { class: "chooser", role: "dialog", "aria-label": t("game.which"), "data-testid": "chooser" },
      h("div", { class: "chooser-title" }, t("game.which"), " ", h("b", {}, cardText(card))),
      h("div", { class: "chooser-buttons" }, buttons),
      h("button", { type: "button", class: "ghost", onclick: () => this.closeChooser() }, t("game.cancel")),
    );
    this.el.append(this.chooser);
    const chooser = this.chooser;
    this.chooserModal = holdModal(chooser, { onEscape: () => this.closeChooser(), focus: buttons[0] });
  }

  closeChooser() {
    if (this.chooser) this.chooser.remove();
    this.chooser = null;
    const modal = this.chooserModal;
    this.chooserModal = null;
    if (modal) modal.release();
  }

  // --- drag and drop ------------------------------------------------------------------------

  pointerDown(event) {
    if (event.button !== 0 || !this.playable || this.busy) return;
    const placeEl = event.target.closest("[data-place]");
    if (!placeEl) return;
    const place = placeEl.dataset.place;
    if (!movableCard(this.view, place)) return;
    const cardEl = placeEl.querySelector(".slot .card");
    if (!cardEl) return;
    this.drag = { place, placeEl, cardEl, x: event.clientX, y: event.clientY, ghost: null, pointerId: event.pointerId };
    window.addEventListener("pointermove", this.onMove);
    window.addEventListener("pointerup", this.onUp);
    window.addEventListener("pointercancel", this.onUp);
  }

  pointerMove(event) {
    const drag = this.drag;
    if (!drag || event.pointerId !== drag.pointerId) return;
    if (!drag.ghost) {
      if (Math.hypot(event.clientX - drag.x, event.clientY - drag.y) < DRAG_THRESHOLD_PX) return;
      const rect = drag.cardEl.getBoundingClientRect();
      drag.dx = drag.x - rect.left;
      drag.dy = drag.y - rect.top;
      drag.ghost = h("div", { class: "drag-ghost", html: drag.cardEl.innerHTML });
      drag.ghost.style.width = `${rect.width}px`;
      drag.ghost.style.height = `${rect.height}px`;
      document.body.append(drag.ghost);
      drag.placeEl.classList.add("dragging");
      this.selected = null;
      this.el.querySelectorAll(".selected").forEach((el) => el.classList.remove("selected"));
      const fits = new Set(acceptingPlaces(this.view, this.variant, drag.place));
      this.el.querySelectorAll("[data-place]").forEach((el) => el.classList.toggle("target", fits.has(el.dataset.place)));
    }
    event.preventDefault();
    drag.ghost.style.transform = `translate(${event.clientX - drag.dx}px, ${event.clientY - drag.dy}px) rotate(3deg)`;
    const over = this.dropTarget(event.clientX, event.clientY);
    this.el.querySelectorAll(".drop-over").forEach((el) => el.classList.remove("drop-over"));
    if (over.el) over.el.classList.add("drop-over");
  }

  dropTarget(x, y) {
    const under = document.elementFromPoint(x, y);
    if (!under || !this.el.contains(under)) return { el: null };
    const placeEl = /** @type {HTMLElement|null} */ (under.closest("[data-place]"));
    const area = under.closest("[data-area=foundations]");
    if (placeEl) return { el: placeEl, place: placeEl.dataset.place, area: !!area };
    if (area) return { el: area, place: null, area: true };
    return { el: null };
  }

  pointerUp(event) {
    const drag = this.drag;
    if (!drag || event.pointerId !== drag.pointerId) return;
    window.removeEventListener("pointermove", this.onMove);
    window.removeEventListener("pointerup", this.onUp);
    window.removeEventListener("pointercancel", this.onUp);
    this.drag = null;
    if (!drag.ghost) return; // a plain tap: the click handler takes it
    drag.ghost.remove();
    this.suppressClick = true;
    setTimeout(() => (this.suppressClick = false), 0);
    const over = event.type === "pointerup" ? this.dropTarget(event.clientX, event.clientY) : { el: null };
    this.render();
    if (!over.el || over.place === drag.place) return;
    if (over.area && (over.place === null || isFoundation(over.place))) {
      this.toFoundations(drag.place, over.place);
    } else if (over.place) {
      this.move(drag.place, over.place);
    }
  }
}

/**
 * The table before the racer's own game arrives (the countdown): every pile dealt face
 * down, 6 cards each, and the eight bases, which are the same in every deal. No card of
 * the deal is shown, and nothing here can be tapped.
 */
export function dealingTable() {
  const crescent = h("div", { class: "crescent" });
  const back = cardBackSvg();
  for (let n = 1; n <= 16; n++) {
    crescent.append(
      h(
        "div",
        {
          class: "place pile dealt",
          style: `${pileStyle(n)};--deal:${n}`,
        },
        h("span", { class: "slot", style: "--depth:4" }, h("span", { class: "under" }), h("span", { class: "card", html: back })),
        h("span", { class: "caption", "aria-hidden": "true" }, h("span", { class: "pile-no" }, String(n)), h("span", { class: "count" }, "6")),
      ),
    );
  }
  const area = h("div", { class: "foundation-area" });
  for (const row of [["AS", "AH", "AD", "AC"], ["KS", "KH", "KD", "KC"]]) {
    area.append(
      h(
        "div",
        { class: "foundation-row" },
        row.map((card) => h("div", { class: `place foundation ${card[0] === "A" ? "up" : "down"}` }, h("span", { class: "slot" }, h("span", { class: "card", html: cardSvg(card) })), h("span", { class: "caption", "aria-hidden": "true" }, h("span", { class: "dir" }, card[0] === "A" ? "▲" : "▼"), h("span", { class: "count" }, "1")))),
      ),
    );
  }
  crescent.append(area);
  return h("div", { class: "table dealing", "aria-hidden": "true" }, crescent);
}

/** How far a pile sits below its row, in card widths: the horseshoe's top row curves down
 * at its ends and the sides lean in, so the layout reads as a crescent. */
function arcOffset(n) {
  const top = [0.2, 0.08, 0.02, 0, 0, 0.02, 0.08, 0.2];
  if (n >= 5 && n <= 12) return top[n - 5];
  return SIDE_DROP;
}

/** The sides sit this much (in card widths) below the top row; the grid keeps room for it. */
const SIDE_DROP = 0.4;

