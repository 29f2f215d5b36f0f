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
