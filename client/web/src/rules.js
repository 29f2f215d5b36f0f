// Which places would accept a card, computed from the VIEW only to make tapping
// convenient (the card goes where it is the only fit). The server still judges every
// move: a move the client thinks fails is sent anyway, so the player sees the reason.

export const SUITS = ["S", "H", "D", "C"];
export const ASCENDING = ["as", "ah", "ad", "ac"];
export const DESCENDING = ["ds", "dh", "dd", "dc"];
export const FOUNDATIONS = [...ASCENDING, ...DESCENDING];
export const PILE_LIMIT = 13;
const RANKS = "A23456789TJQK";

/** "QS" → {rank: 12, suit: "S"}; null for no card. */
export function parseCard(code) {
  if (!code) return null;
  const rank = RANKS.indexOf(code[0]) + 1;
  const suit = code[code.length - 1];
  if (rank < 1 || !SUITS.includes(suit)) return null;
  return { rank, suit };
}

export function rankLabel(rank) {
  return rank === 10 ? "10" : RANKS[rank - 1];
}

export function isFoundation(place) {
  return FOUNDATIONS.includes(place);
}

export function foundationSuit(place) {
  return place[1].toUpperCase();
}

/** The place's {n, top} in the view. */
export function placeState(view, place) {
  if (place.startsWith("p")) return view.piles[Number(place.slice(1)) - 1];
  return view.foundations[place];
}

/** The card that would move from `place`, or null (empty pile, or a foundation's base). */
export function movableCard(view, place) {
  const state = placeState(view, place);
  if (!state || !state.top) return null;
  if (isFoundation(place) && state.n <= 1) return null; // bases never move
  return parseCard(state.top);
}

function pileAccepts(state, card) {
  const top = parseCard(state.top);
  if (!top || state.n >= PILE_LIMIT || top.suit !== card.suit) return false;
  const diff = (card.rank - top.rank + 13) % 13; // ranks wrap: K and A are adjacent
  return diff === 1 || diff === 12;
}

function foundationAccepts(place, state, card) {
  const top = parseCard(state.top);
  if (!top || foundationSuit(place) !== card.suit) return false;
  return place[0] === "a" ? card.rank === top.rank + 1 : card.rank === top.rank - 1;
}

/** Every place (piles p1…p16, then foundations) that would accept the top card of `from`. */
export function acceptingPlaces(view, variant, from) {
  const card = movableCard(view, from);
  if (!card) return [];
  const places = [];
  const fromFoundation = isFoundation(from);
  if (!fromFoundation || variant === "R") {
    view.piles.forEach((state, i) => {
      const place = `p${i + 1}`;
      if (place !== from && pileAccepts(state, card)) places.push(place);
    });
  }
  for (const place of FOUNDATIONS) {
    if (place !== from && foundationAccepts(place, view.foundations[place], card)) {
      places.push(place);
    }
  }
  return places;
}

/** The foundations of the card's suit that accept it (0, 1 or 2 of them). */
export function acceptingFoundations(view, from) {
  const card = movableCard(view, from);
  if (!card) return [];
  return FOUNDATIONS.filter(
    (place) => place !== from && foundationAccepts(place, view.foundations[place], card),
  );
}

/**
 * A move that makes progress, found from the visible top cards only (the hint when the
 * server has no solver to ask): a card to a foundation first, then a pile-to-pile move
 * that uncovers a card, then a redeal while one remains; null when nothing is left.
 * `avoid` is a move not to suggest (the reverse of the last one, so hints never undo
 * each other).
 * @param {any} view
 * @param {string} variant
 * @param {string|null} [avoid]
 * @returns {string|null}
 */
export function suggestMove(view, variant, avoid = null) {
  const piles = view.piles.map((_, i) => `p${i + 1}`);
  for (const from of piles) {
    const to = acceptingFoundations(view, from)[0];
    if (to) return `${from}-${to}`;
  }
  let best = null;
  let bestScore = -Infinity;
  for (const from of piles) {
    const n = placeState(view, from).n;
    if (n < 2) continue; // moving a lone card uncovers nothing, and empties the pile for good
    for (const to of acceptingPlaces(view, variant, from)) {
      const move = `${from}-${to}`;
      if (isFoundation(to) || move === avoid) continue;
      // Uncover the deepest pile first: its hidden cards are the ones most in the way.
      const score = n * 100 - placeState(view, to).n;
      if (score > bestScore) {
        best = move;
        bestScore = score;
      }
    }
  }
  if (best) return best;
  return view.redeals_left > 0 ? "redeal" : null;
}
