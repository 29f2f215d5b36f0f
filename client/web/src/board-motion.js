// The board's motion: a moved card glides from where it was to its new place, a refused
// one shakes its head; nothing moves for a player who asked for reduced motion.

const MOVE_ACTION = /^([a-z]+\d*)-([a-z]+\d*)$/;

function reducedMotion() {
  return window.matchMedia("(prefers-reduced-motion: reduce)").matches;
}

/** The drawn card of a place, if any. */
function cardAt(boardEl, place) {
  return boardEl.querySelector(`[data-place="${place}"] .slot .card`);
}

/** Where the card of a move action is now (before the new view is drawn), or null. */
export function measureMove(boardEl, action) {
  const match = MOVE_ACTION.exec(action || "");
  if (!match) return null;
  const card = cardAt(boardEl, match[1]);
  if (!card) return null;
  return { to: match[2], rect: card.getBoundingClientRect() };
}

/** The moved card glides from where it was (``measureMove``) to its new place (FLIP). */
export function fly(boardEl, flight) {
  if (!flight || reducedMotion()) return;
  const card = cardAt(boardEl, flight.to);
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
export function shake(boardEl, action) {
  const match = /^([a-z]+\d*)-/.exec(action || "");
  const card = match && cardAt(boardEl, match[1]);
  if (!card || reducedMotion()) return;
  card.animate(
    [0, -6, 6, -4, 4, 0].map((x) => ({ transform: `translateX(${x}px)` })),
    { duration: 320, easing: "ease-in-out" },
  );
}
