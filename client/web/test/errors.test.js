// Every error code the server can send has its words in every language: the codes are
// read from the server's own table (wire/crescent_wire/errors.py, ERROR_MESSAGES), so a
// code added there without a translation here fails this test.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { LANGUAGES, has } from "../src/i18n.js";

const ERRORS_PY = new URL("../../../wire/crescent_wire/errors.py", import.meta.url);

/** The keys of `ERROR_MESSAGES: dict[str, str] = { ... }` in errors.py. */
export function serverErrorCodes(source) {
  const start = source.indexOf("ERROR_MESSAGES: dict[str, str] = {");
  assert.ok(start >= 0, "errors.py has no ERROR_MESSAGES table");
  const body = source.slice(start, source.indexOf("\n}\n", start));
  return [...body.matchAll(/^ {4}"([a-z_]+)":/gm)].map((m) => m[1]);
}

test("every server error code has a text in every language", () => {
  const codes = serverErrorCodes(readFileSync(ERRORS_PY, "utf8"));
  // The table was read (a broken parse would make this test pass vacuously).
  assert.ok(codes.length > 40, `only ${codes.length} codes read`);
  for (const code of ["bad_message", "day_not_ready", "cannot_remove_host", "too_many_subscriptions"]) assert.ok(codes.includes(code), code);
  const missing = LANGUAGES.flatMap(({ code: lang }) => codes.filter((code) => !has(lang, `error.${code}`)).map((code) => `${lang}: error.${code}`));
  assert.deepEqual(missing, []);
});
