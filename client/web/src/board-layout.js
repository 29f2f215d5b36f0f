// Where the board puts each pile: the horseshoe's grid cells in the wide (10 × 4) and the
// tall (6 × 6) layouts and the arc that makes it read as a crescent. The stylesheet picks
// a layout by the shape of the space the board has (a container query).

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

/** The sides sit this much (in card widths) below the top row; the grid keeps room for it. */
const SIDE_DROP = 0.4;

/** How far a pile sits below its row, in card widths: the horseshoe's top row curves down
 * at its ends and the sides lean in, so the layout reads as a crescent. */
function arcOffset(n) {
  const top = [0.2, 0.08, 0.02, 0, 0, 0.02, 0.08, 0.2];
  if (n >= 5 && n <= 12) return top[n - 5];
  return SIDE_DROP;
}

/** The inline style placing pile `n` in both layouts. */
export function pileStyle(n) {
  const [col, row] = pileCell(n);
  const [tallCol, tallRow] = tallCell(n);
  return `--c:${col};--r:${row};--tc:${tallCol};--tr:${tallRow};--arc:${arcOffset(n)}`;
}
