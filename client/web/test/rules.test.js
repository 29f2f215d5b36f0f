// Unit tests of the page's pure logic (node's own test runner: `npm test`).
import assert from "node:assert/strict";
import { test } from "node:test";

import { acceptingFoundations, acceptingPlaces, movableCard, parseCard } from "../src/rules.js";
import { formatDuration, pickLanguage } from "../src/i18n.js";

function view({ piles = {}, foundations = {} } = {}) {
  const base = { as: "AS", ah: "AH", ad: "AD", ac: "AC", ds: "KS", dh: "KH", dd: "KD", dc: "KC" };
  const all = {};
  for (const [place, top] of Object.entries(base)) all[place] = { n: 1, top };
  for (const [place, state] of Object.entries(foundations)) all[place] = state;
  return {
    piles: Array.from({ length: 16 }, (_, i) => piles[`p${i + 1}`] || { n: 0, top: null }),
    foundations: all,
    redeals_left: 3,
    moves: 0,
    undo_left: 0,
    status: "playing",
  };
}

test("cards parse from the notation", () => {
  assert.deepEqual(parseCard("QS"), { rank: 12, suit: "S" });
  assert.deepEqual(parseCard("TH"), { rank: 10, suit: "H" });
  assert.equal(parseCard(null), null);
  assert.equal(parseCard("ZZ"), null);
});

test("a pile takes the same suit one rank up or down, wrapping K–A, at most 13 cards", () => {
  const v = view({ piles: { p1: { n: 3, top: "AS" }, p2: { n: 6, top: "KS" }, p3: { n: 13, top: "2S" }, p4: { n: 2, top: "KH" } } });
  // A♠ on pile 1: K♠ (wrap) accepts; 2♠ would but pile 3 is full; K♥ is the wrong suit;
  // the ascending spades foundation (A♠) does not take a second ace.
  assert.deepEqual(acceptingPlaces(v, "N", "p1"), ["p2"]);
  // K♠ goes onto A♠ (wrap) and nowhere else: the descending spades foundation shows K♠.
  assert.deepEqual(acceptingPlaces(v, "N", "p2"), ["p1"]);
});

test("an empty pile takes nothing and has nothing to move", () => {
  const v = view({ piles: { p1: { n: 1, top: "2S" } } });
  assert.equal(movableCard(v, "p5"), null);
  assert.deepEqual(acceptingPlaces(v, "N", "p1"), ["as"]);
});

test("foundation cards move between foundations; back to a pile only in variant R", () => {
  const v = view({
    piles: { p1: { n: 2, top: "4H" } },
    foundations: { ah: { n: 3, top: "3H" }, dh: { n: 10, top: "4H" } },
  });
  // 3♥ on the ascending hearts: onto 4♥ of the descending one, or pile 1 in variant R.
  assert.deepEqual(acceptingPlaces(v, "N", "ah"), ["dh"]);
  assert.deepEqual(acceptingPlaces(v, "R", "ah"), ["p1", "dh"]);
  // Bases never move.
  assert.equal(movableCard(v, "as"), null);
  assert.deepEqual(acceptingPlaces(v, "N", "as"), []);
});

test("both foundations of a suit may accept one card: the drop asks", () => {
  const v = view({
    piles: { p9: { n: 4, top: "7D" } },
    foundations: { ad: { n: 6, top: "6D" }, dd: { n: 6, top: "8D" } },
  });
  assert.deepEqual(acceptingFoundations(v, "p9"), ["ad", "dd"]);
  const one = view({ piles: { p9: { n: 4, top: "7D" } }, foundations: { ad: { n: 6, top: "6D" } } });
  assert.deepEqual(acceptingFoundations(one, "p9"), ["ad"]);
});

test("no wrap on foundations", () => {
  const v = view({
    piles: { p1: { n: 1, top: "AS" }, p2: { n: 1, top: "KH" } },
    foundations: { as: { n: 13, top: "KS" }, dh: { n: 13, top: "AH" } },
  });
  assert.deepEqual(acceptingFoundations(v, "p1"), []);
  assert.deepEqual(acceptingFoundations(v, "p2"), []);
});

test("the language comes from the browser, a saved choice wins", () => {
  assert.equal(pickLanguage(null, ["sv-SE", "en"]), "sv");
  assert.equal(pickLanguage(null, ["nl-BE"]), "nl");
  assert.equal(pickLanguage(null, ["fr-FR", "de"]), "en");
  assert.equal(pickLanguage("nl", ["sv-SE"]), "nl");
  assert.equal(pickLanguage("xx", ["sv"]), "sv");
});

test("durations read as m:ss or h:mm:ss", () => {
  assert.equal(formatDuration(0), "0:00");
  assert.equal(formatDuration(83_400), "1:23");
  assert.equal(formatDuration(3_723_000), "1:02:03");
  assert.equal(formatDuration(null), "–");
});

test("the fallback hint: a foundation move first, then a pile move that uncovers a card", async () => {
  const { suggestMove } = await import("../src/rules.js");
  const pile = (n, top) => ({ n, top });
  const base = {
    as: pile(1, "AS"), ah: pile(1, "AH"), ad: pile(1, "AD"), ac: pile(1, "AC"),
    ds: pile(1, "KS"), dh: pile(1, "KH"), dd: pile(1, "KD"), dc: pile(1, "KC"),
  };
  const piles = Array.from({ length: 16 }, () => pile(6, "9C"));
  piles[2] = pile(6, "2H"); // p3 → ah
  assert.equal(suggestMove({ piles, foundations: base, redeals_left: 3 }, "N"), "p3-ah");
  piles[2] = pile(6, "5D");
  piles[4] = pile(3, "6D"); // p3 → p5 (and p5 → p3): the deeper pile goes first
  assert.equal(suggestMove({ piles, foundations: base, redeals_left: 3 }, "N"), "p3-p5");
  assert.equal(suggestMove({ piles, foundations: base, redeals_left: 3 }, "N", "p3-p5"), "p5-p3");
  piles[4] = pile(6, "JH");
  assert.equal(suggestMove({ piles, foundations: base, redeals_left: 3 }, "N"), "redeal");
  assert.equal(suggestMove({ piles, foundations: base, redeals_left: 0 }, "N"), null);
});
