// The page's own deal algorithms and replay (src/replay.js) against engine.md's worked
// examples: the layouts the server deals, card for card.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";

import { ReplayGame, deal, sha256 } from "../src/replay.js";

const layout = (text) =>
  text
    .trim()
    .split("\n")
    .flatMap((line) => line.trim().split(/\s+(?=p\d)/))
    .map((part) => part.trim().split(/\s+/))
    .sort((a, b) => Number(a[0].slice(1)) - Number(b[0].slice(1)))
    .map((part) => part.slice(1));

test("CR1-N-AAAAAAB deals engine.md's layout", () => {
  const expected = layout(`
p1  QD 9C KC 7D 6D TS    p5  TS QH 4H 6H 6C 3C    p9  3H JD 4S 6H 3S JH    p13 8C 7H AH 9S 9D 3S
p2  9D 5D 7S TH 5D 7C    p6  3C KS JS 2C 5C 7H    p10 5S JD QS 4D 8S TC    p14 QD 5H AC 4C JS JH
p3  JC 6S TC 4S 8H 7S    p7  AD TD 7C 8C 9S QC    p11 6D 2C 9C JC 3H KD    p15 2S 2D 5H 9H 8D QH
p4  3D 8S AS 2H 9H 5S    p8  KH 4D 4H 2H 6S 6C    p12 2S 5C 8H 4C 7D QS    p16 TH 3D TD 2D QC 8D`);
  assert.deepEqual(deal("CR1-N-AAAAAAB").piles, expected);
});

test("CR2-N-00000000000000000000000001 deals engine.md's layout", () => {
  const expected = layout(`
p1  9D 6C QC TS TD 2C    p5  AD 3C QC JC 2S 9H    p9  5S 6S AH AS 5H JH    p13 KC 3C JD 3D 3H 2S
p2  2H QS QD JS 5D 9C    p6  8C 5C 7D 6H JD 8C    p10 9H 3S 8S 6C 8S 6D    p14 KS 3H 4C TC 2H 5S
p3  QD 7S 5C 8H JH 2C    p7  8H 4D 9D JC TH 5D    p11 7D 4H AC 7H 4S QS    p15 4C 2D QH 2D 7H 9C
p4  8D 3S 4D 7S 9S 7C    p8  TD TS 6S 7C KD 9S    p12 QH 3D 8D 4H 4S KH    p16 6D JS TC 6H TH 5H`);
  assert.deepEqual(deal("cr2-n-00000000000000000000000001").piles, expected);
});

test("sha256 agrees with node's for every length around a block's padding", () => {
  for (const n of [0, 1, 25, 55, 56, 63, 64, 65, 119, 120, 200]) {
    const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff);
    assert.equal(Buffer.from(sha256(bytes)).toString("hex"), createHash("sha256").update(bytes).digest("hex"));
  }
});

test("a move, an undo and a redeal replay as the rules say", () => {
  const game = new ReplayGame("CR1-N-AAAAAAB");
  game.apply("p1-p5"); // not a legal move (TS on TS): the replay applies what was recorded
  assert.deepEqual(game.piles[4].slice(-2), ["3C", "TS"]);
  assert.equal(game.moves, 1);
  game.apply("undo");
  assert.equal(game.moves, 0);
  assert.deepEqual(game.piles[0], ["QD", "9C", "KC", "7D", "6D", "TS"]);
  game.apply("redeal");
  assert.deepEqual(game.piles[0], ["9C", "KC", "7D", "6D", "TS", "QD"]);
  assert.equal(game.view().redeals_left, 2);
  assert.equal(game.foundationCount(), 8);
  game.apply("resign");
  assert.equal(game.view().status, "resigned");
});
