// The account pages' pure helpers: profile addresses and device labels.
import assert from "node:assert/strict";
import { test } from "node:test";

globalThis.document = { documentElement: {} };
const { deviceName } = await import("../src/account-page.js");
const { handleFromPath } = await import("../src/profile-page.js");
const i18n = await import("../src/i18n.js");

test("a profile's handle comes from /u/<handle> only, decoded", () => {
  assert.equal(handleFromPath("/u/Ada_42"), "Ada_42");
  assert.equal(handleFromPath("/u/Zo%C3%AB_7/"), "Zoë_7");
  assert.equal(handleFromPath("/u/"), null);
  assert.equal(handleFromPath("/u/a/b"), null);
  assert.equal(handleFromPath("/u/%E0%A4%A"), null); // not UTF-8: no page, no exception
  assert.equal(handleFromPath("/me"), null);
});

test("a device label reads in the page's language", () => {
  i18n.setLanguage("sv");
  assert.equal(deviceName("Firefox on Linux"), "Firefox på Linux");
  assert.equal(deviceName("unknown device"), "En enhet");
  i18n.setLanguage("en");
  assert.equal(deviceName("Chrome on Android"), "Chrome on Android");
  assert.equal(deviceName("curl/8.5"), "curl/8.5");
  assert.equal(deviceName(""), "A device");
});
