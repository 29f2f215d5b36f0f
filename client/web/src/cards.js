// Playing cards drawn as SVG by the page itself (no image sets): suit shapes are paths in
// one sprite; each card is a 100×140 viewBox with corner indices, real pip layouts for
// 2–10, a large pip for the ace and a framed letter for the court cards. A second, compact
// face (big index, big suit) is shown instead when the card is small (phones).
import { t } from "./i18n.js";
import { parseCard, rankLabel } from "./rules.js";

const SVG_NS = "http://www.w3.org/2000/svg";

const SUIT_PATHS = {
  H: "M50 92C22 68 2 50 2 29 2 13 14 2 28 2c10 0 18 6 22 14C54 8 62 2 72 2c14 0 26 11 26 27 0 21-20 39-48 63z",
  D: "M50 2 88 50 50 98 12 50z",
  S: "M50 2c6 16 48 38 48 62 0 15-11 25-24 25-9 0-16-4-20-11 1 11 5 18 13 22H33c8-4 12-11 13-22-4 7-11 11-20 11C13 89 2 79 2 64 2 40 44 18 50 2z",
  C: "M50 4a21 21 0 0 1 17 34 21 21 0 1 1-13 30c1 12 5 21 14 28H32c9-7 13-16 14-28a21 21 0 1 1-13-30A21 21 0 0 1 50 4z",
};

/** Inserts the suit sprite once; cards refer to it with <use>. */
export function installCardSprite() {
  if (document.getElementById("card-sprite")) return;
  const sprite = document.createElementNS(SVG_NS, "svg");
  sprite.id = "card-sprite";
  sprite.setAttribute("aria-hidden", "true");
  sprite.style.display = "none";
  sprite.innerHTML = Object.entries(SUIT_PATHS)
    .map(([suit, d]) => `<symbol id="suit-${suit}" viewBox="0 0 100 100"><path d="${d}"/></symbol>`)
    .join("");
  document.body.prepend(sprite);
}

const PIP_ROWS_3 = [28, 70, 112];
const PIP_ROWS_4 = [28, 56, 84, 112];
const L = 32;
const C = 50;
const R = 68;

/** Pip centres for the number cards, as [x, y] in the 100×140 card. */
const PIP_LAYOUTS = {
  2: [[C, 28], [C, 112]],
  3: [[C, 28], [C, 70], [C, 112]],
  4: [[L, 28], [R, 28], [L, 112], [R, 112]],
  5: [[L, 28], [R, 28], [C, 70], [L, 112], [R, 112]],
  6: PIP_ROWS_3.flatMap((y) => [[L, y], [R, y]]),
  7: [...PIP_ROWS_3.flatMap((y) => [[L, y], [R, y]]), [C, 49]],
  8: [...PIP_ROWS_3.flatMap((y) => [[L, y], [R, y]]), [C, 49], [C, 91]],
  9: [...PIP_ROWS_4.flatMap((y) => [[L, y], [R, y]]), [C, 70]],
  10: [...PIP_ROWS_4.flatMap((y) => [[L, y], [R, y]]), [C, 42], [C, 98]],
};

const COURT_NAMES = { 11: "J", 12: "Q", 13: "K" };

function pip(suit, x, y, size) {
  const half = size / 2;
  // Pips in the lower half are upside down, as on printed cards.
  const flip = y > 70 ? ` transform="rotate(180 ${x} ${y})"` : "";
  return `<use href="#suit-${suit}" x="${x - half}" y="${y - half}" width="${size}" height="${size}"${flip}/>`;
}

function centre(card) {
  const { rank, suit } = card;
  if (rank === 1) return pip(suit, 50, 70, suit === "D" ? 40 : 46);
  if (rank <= 10) return PIP_LAYOUTS[rank].map(([x, y]) => pip(suit, x, y, 17)).join("");
  const letter = COURT_NAMES[rank];
  return (
    `<rect class="court-frame" x="23" y="17" width="54" height="106" rx="4"/>` +
    `<text class="court-letter" x="50" y="74" text-anchor="middle">${letter}</text>` +
    pip(suit, 50, 98, 22) +
    `<path class="court-crown" d="M36 34l5 8 9-10 9 10 5-8v12H36z"/>`
  );
}

function index(card) {
  const label = rankLabel(card.rank);
  const narrow = label === "10" ? ' textLength="22" lengthAdjust="spacingAndGlyphs"' : "";
  return (
    `<text class="index-rank" x="12" y="25" text-anchor="middle"${narrow}>${label}</text>` +
    `<use href="#suit-${card.suit}" x="5" y="30" width="14" height="14"/>`
  );
}

/** The SVG markup of a face-up card ("QS", "TH", …). */
export function cardSvg(code) {
  const card = parseCard(code);
  if (!card) return "";
  const colour = card.suit === "H" || card.suit === "D" ? "red" : "black";
  const label = rankLabel(card.rank);
  return (
    `<svg class="card-face ${colour}" viewBox="0 0 100 140" aria-hidden="true">` +
    `<rect class="card-paper" x="1" y="1" width="98" height="138" rx="8"/>` +
    `<g class="full">${index(card)}<g transform="rotate(180 50 70)">${index(card)}</g>${centre(card)}</g>` +
    `<g class="compact"><text class="compact-rank" x="8" y="52">${label}</text>` +
    `<use href="#suit-${card.suit}" x="40" y="66" width="54" height="54"/></g>` +
    `</svg>`
  );
}

/** The back of a card: a lattice on deep red with a crescent moon in a gold ring. */
export function cardBackSvg() {
  return (
    `<svg class="card-back" viewBox="0 0 100 140" aria-hidden="true">` +
    `<defs><pattern id="lattice" width="10" height="10" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
    `<rect width="10" height="10" fill="#8e1f2b"/><path d="M0 5h10M5 0v10" stroke="#b8394a" stroke-width="1.6"/></pattern></defs>` +
    `<rect x="1" y="1" width="98" height="138" rx="8" fill="#fffdf7" stroke="#c8bea8" stroke-width="1.5"/>` +
    `<rect x="7" y="7" width="86" height="126" rx="5" fill="url(#lattice)"/>` +
    `<circle cx="50" cy="70" r="19" fill="#8e1f2b" stroke="#e8c26a" stroke-width="2.5"/>` +
    `<path d="M56 58a13 13 0 1 0 0 24a10 10 0 1 1 0-24z" fill="#f3d27c"/>` +
    `</svg>`
  );
}

/** "QS" → "Q♠" for text (logs, messages, the foundation chooser). */
export function cardText(code) {
  const card = parseCard(code);
  if (!card) return "";
  return rankLabel(card.rank) + { S: "♠", H: "♥", D: "♦", C: "♣" }[card.suit];
}

export function isRed(code) {
  const card = parseCard(code);
  return !!card && (card.suit === "H" || card.suit === "D");
}

/** "QH" → "Queen of hearts", in the page's language (for screen readers). */
export function cardName(code) {
  const card = parseCard(code);
  if (!card) return "";
  return t("card.name", { rank: t(`rank.${card.rank}`), suit: t(`suit.${card.suit}`) });
}
