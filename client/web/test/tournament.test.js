// The tournament page's pure helpers: codes from paths and typing, deal lists, the live strip.
import assert from "node:assert/strict";
import { test } from "node:test";

globalThis.document = { documentElement: {} };

const { limitLabel, normalizeTournamentCode, parseDeals, scoreText, topPlusMe, tournamentCodeFromPath } = await import("../src/tournament.js");
const i18n = await import("../src/i18n.js");

test("a tournament code comes from /t/<code> only", () => {
  assert.equal(tournamentCodeFromPath("/t/TK7PQ2X"), "TK7PQ2X");
  assert.equal(tournamentCodeFromPath("/t/tk7pq2x/"), "TK7PQ2X");
  assert.equal(tournamentCodeFromPath("/t/K7PQ2X"), null); // a room code has no "T"
  assert.equal(tournamentCodeFromPath("/r/TK7PQ2X"), null);
  assert.equal(tournamentCodeFromPath("/t/TK7PQ2X1"), null);
  assert.equal(tournamentCodeFromPath("/t/TK1PQ2X"), null); // 1 is not in the alphabet
});

test("what a player types becomes a code", () => {
  assert.equal(normalizeTournamentCode(" tk7pq2x "), "TK7PQ2X");
  assert.equal(normalizeTournamentCode("k7pq2x"), "TK7PQ2X"); // six letters: the T is added
  assert.equal(normalizeTournamentCode("/t/TK7PQ2X"), "TK7PQ2X");
  assert.equal(normalizeTournamentCode(""), "");
});

test("deal codes one per line, or separated by commas or spaces", () => {
  assert.deepEqual(parseDeals("cr1-n-aaaaaab\n\nCR1-N-AAAAAAC, CR1-N-AAAAAAD  "), ["CR1-N-AAAAAAB", "CR1-N-AAAAAAC", "CR1-N-AAAAAAD"]);
  assert.deepEqual(parseDeals("   "), []);
});

test("the live strip is the top rows plus mine when I am not among them", () => {
  const top = [{ id: "a", place: 1 }, { id: "b", place: 2 }];
  assert.deepEqual(topPlusMe(top, { id: "c", place: 17 }, "c").map((r) => r.place), [1, 2, 17]);
  assert.deepEqual(topPlusMe(top, { id: "b", place: 2 }, "b").map((r) => r.id), ["a", "b"]);
  assert.deepEqual(topPlusMe(top, null, "z").length, 2);
});

test("scores and time limits read as the page shows them", () => {
  i18n.setLanguage("en");
  assert.equal(scoreText({ points: 7 }, "placement"), "7 points");
  assert.equal(scoreText({ points: 1 }, "placement"), "1 point");
  assert.equal(scoreText({ total_ms: 1_083_000 }, "time"), "18:03");
  assert.equal(limitLabel(30), "30 s");
  assert.equal(limitLabel(300), "5 min");
  assert.equal(limitLabel(7200), "2 h");
  i18n.setLanguage("sv");
  assert.equal(scoreText({ points: 7 }, "placement"), "7 poäng");
  i18n.setLanguage("nl");
  assert.equal(scoreText({ points: 1 }, "placement"), "1 punt");
  assert.equal(scoreText({ points: 0 }, "placement"), "0 punten");
  i18n.setLanguage("en");
});
