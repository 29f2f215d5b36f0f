// Every language has every key of the English table, and the refusal texts of rules.md.
import assert from "node:assert/strict";
import { test } from "node:test";

import { LANGUAGES, messageFor, t } from "../src/i18n.js";
import * as i18n from "../src/i18n.js";

globalThis.document = { documentElement: {} };

test("Swedish refusals use the wording of rules.md (seed 000)", () => {
  i18n.setLanguage("sv");
  assert.equal(messageFor("refuse", { code: "wrong_suit" }), "Måste vara i samma färg");
  assert.equal(messageFor("refuse", { code: "pile_full" }), "Den här högen är full; välj en annan plats");
  assert.equal(t("game.redeal"), "Omfördela");
  assert.equal(t("game.noRedeals"), "Inga omfördelningar kvar");
  // An unknown code falls back to the server's Swedish text, then its English one.
  assert.equal(messageFor("refuse", { code: "new_code", message: "New", message_sv: "Ny" }), "Ny");
  i18n.setLanguage("nl");
  assert.equal(t("game.redeal"), "Schudden");
  assert.equal(messageFor("refuse", { code: "new_code", message: "New", message_sv: "Ny" }), "New");
  i18n.setLanguage("en");
  assert.equal(messageFor("refuse", { code: "wrong_rank" }), "Must be one rank higher or lower");
  assert.equal(t("game.cards", { n: 6 }), "6 cards");
});

test("every language has every key", () => {
  assert.deepEqual(LANGUAGES.map((l) => l.code), ["en", "sv", "nl"]);
  // t() falls back to English silently, so a missing key would go unseen on the page.
  for (const { code } of LANGUAGES) {
    for (const key of i18n.KEYS) assert.ok(i18n.has(code, key), `${code} lacks ${key}`);
  }
});

test("a count meeting a noun goes through Intl.PluralRules, in every language", () => {
  // Every plural entry has each form its language's rules can ask for.
  for (const { code } of LANGUAGES) {
    i18n.setLanguage(code);
    const categories = new Intl.PluralRules(code).resolvedOptions().pluralCategories;
    for (const key of i18n.KEYS) {
      for (const n of [0, 1, 2, 5, 21, 100]) {
        const text = t(key, { n });
        assert.ok(!text.includes("[object"), `${code} ${key}`);
      }
      if (i18n.isPlural(key)) {
        for (const category of categories) assert.ok(i18n.hasForm(code, key, category), `${code} ${key} lacks "${category}"`);
      }
    }
  }
  i18n.setLanguage("en");
  assert.equal(t("game.cards", { n: 1 }), "1 card");
  assert.equal(t("game.cards", { n: 0 }), "0 cards");
  assert.equal(t("t.points", { n: 1 }), "1 point");
  assert.equal(t("t.roundsCount", { n: 1 }), "1 round");
  assert.equal(t("daily.moves", { n: 1 }), "1 move");
  assert.equal(t("strip.cardsHome", { n: 8 }), "8 cards home");
  assert.equal(t("room.seatsInfo", { taken: 1, n: 1 }), "1 of 1 seat taken");
  i18n.setLanguage("sv");
  assert.equal(t("t.regRemoved", { n: 1 }), "1 borttagen");
  assert.equal(t("t.regRemoved", { n: 2 }), "2 borttagna");
  i18n.setLanguage("nl");
  assert.equal(t("game.cards", { n: 1 }), "1 kaart");
  assert.equal(t("t.liveRacing", { n: 1 }), "1 speelt");
  assert.equal(t("t.liveRacing", { n: 3 }), "3 spelen");
  i18n.setLanguage("en");
});

test("no count in the tables is followed by a noun outside a plural entry", () => {
  // "{n} cards" as a plain string would read "1 cards": such an entry must be plural.
  // Units (s, min, h) and "{n}/104" are not nouns that change.
  const nounAfterCount = /\{(n|count|got|a|w|r|f|s|played|won|seats|max)\} (?!s\b|min\b|h\b|u\b|p\b|·|of\b|av\b|van\b|kvar\b|left\b|starten\b)[a-zåäöé]/i;
  // In a plural entry the form follows {n}; any other count in it must not meet a noun.
  const otherCountNoun = new RegExp(nounAfterCount.source.replace("(n|", "("), "i");
  for (const { code } of LANGUAGES) {
    for (const key of i18n.KEYS) {
      const text = i18n.rawText(code, key);
      const pattern = i18n.isPlural(key) ? otherCountNoun : nounAfterCount;
      assert.ok(!pattern.test(text), `${code} ${key}: "${text}" needs plural forms`);
    }
  }
});
