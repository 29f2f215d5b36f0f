// The pure parts of the account pages (src/account-api.js): base64url, the WebAuthn
// options and credentials as JSON, whether a page can use passkeys, the codes' forms,
// the routes' refusals in words, and the fetch wrapper.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AccountError,
  addPasskey,
  addPasskeyProblem,
  callAccount,
  cleanCode,
  creationOptions,
  credentialJSON,
  fromBase64url,
  handleLength,
  isCode,
  isIpAddress,
  passkeyFailure,
  passkeySupport,
  problemText,
  recoveryCodesFile,
  requestOptions,
  toBase64url,
} from "../src/account-api.js";
import * as i18n from "../src/i18n.js";

globalThis.document = { documentElement: {} };

test("base64url round-trips any bytes, without padding", () => {
  assert.equal(toBase64url(new Uint8Array([])), "");
  assert.equal(toBase64url(new Uint8Array([0xfb, 0xff])), "-_8");
  assert.equal(toBase64url(new TextEncoder().encode("hello")), "aGVsbG8");
  assert.deepEqual([...fromBase64url("-_8")], [0xfb, 0xff]);
  assert.deepEqual([...fromBase64url("aGVsbG8=")], [...new TextEncoder().encode("hello")]);
  for (let n = 0; n < 40; n++) {
    const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 97 + n * 31) % 256);
    const text = toBase64url(bytes.buffer);
    assert.match(text, /^[A-Za-z0-9_-]*$/);
    assert.deepEqual([...fromBase64url(text)], [...bytes]);
  }
});

test("the server's options become what navigator.credentials takes", () => {
  const made = creationOptions(
    {
      rp: { id: "localhost", name: "Crescent Race" },
      user: { id: "cGxheWVy", name: "Ada_42", displayName: "Ada_42" },
      challenge: "AAEC",
      pubKeyCredParams: [{ type: "public-key", alg: -7 }],
      excludeCredentials: [{ type: "public-key", id: "_w" }],
      authenticatorSelection: { residentKey: "required" },
    },
    null,
  );
  assert.deepEqual([...made.challenge], [0, 1, 2]);
  assert.equal(new TextDecoder().decode(made.user.id), "player");
  assert.equal(made.user.name, "Ada_42");
  assert.deepEqual([...made.excludeCredentials[0].id], [0xff]);
  assert.equal(made.authenticatorSelection.residentKey, "required");
  const asked = requestOptions({ challenge: "AAEC", rpId: "localhost", userVerification: "preferred" }, null);
  assert.deepEqual([...asked.challenge], [0, 1, 2]);
  assert.equal(asked.allowCredentials, undefined); // discoverable: no allow list
  // The browser's own parser wins where there is one.
  const PKC = { parseCreationOptionsFromJSON: () => "parsed", parseRequestOptionsFromJSON: () => "parsed too" };
  assert.equal(creationOptions({}, PKC), "parsed");
  assert.equal(requestOptions({}, PKC), "parsed too");
});

test("a credential becomes the JSON the server reads", () => {
  const bytes = (...b) => new Uint8Array(b).buffer;
  const registration = credentialJSON({
    id: "AQI",
    rawId: bytes(1, 2),
    type: "public-key",
    authenticatorAttachment: "platform",
    response: { clientDataJSON: bytes(123), attestationObject: bytes(0xa0), getTransports: () => ["internal"] },
    getClientExtensionResults: () => ({ credProps: { rk: true } }),
  });
  assert.deepEqual(registration, {
    id: "AQI",
    rawId: "AQI",
    type: "public-key",
    response: { clientDataJSON: "ew", attestationObject: "oA", transports: ["internal"] },
    clientExtensionResults: { credProps: { rk: true } },
    authenticatorAttachment: "platform",
  });
  const assertion = credentialJSON({
    id: "AQI",
    rawId: bytes(1, 2),
    type: "public-key",
    response: { clientDataJSON: bytes(123), authenticatorData: bytes(1), signature: bytes(2), userHandle: bytes(3) },
  });
  assert.deepEqual(assertion.response, { clientDataJSON: "ew", authenticatorData: "AQ", signature: "Ag", userHandle: "Aw" });
  assert.deepEqual(assertion.clientExtensionResults, {});
  assert.equal(credentialJSON({ toJSON: () => "own" }), "own");
});

test("passkeys only where the page is secure, has WebAuthn, and is at the server's name", () => {
  const page = { secure: true, webauthn: true, hostname: "localhost", rpId: "localhost" };
  assert.equal(passkeySupport(page), "ok");
  assert.equal(passkeySupport({ ...page, rpId: null }), "ok"); // not known yet
  assert.equal(passkeySupport({ ...page, secure: false, hostname: "192.168.1.20" }), "insecure");
  assert.equal(passkeySupport({ ...page, webauthn: false }), "unsupported");
  assert.equal(passkeySupport({ ...page, hostname: "127.0.0.1" }), "ip_address");
  assert.equal(passkeySupport({ ...page, hostname: "[::1]" }), "ip_address");
  assert.equal(passkeySupport({ ...page, hostname: "crescent.example", rpId: "crescent.example" }), "ok");
  assert.equal(passkeySupport({ ...page, hostname: "www.crescent.example", rpId: "crescent.example" }), "ok");
  assert.equal(passkeySupport({ ...page, hostname: "notcrescent.example", rpId: "crescent.example" }), "other_host");
  assert.equal(passkeySupport({ ...page, hostname: "laptop.local", rpId: "localhost" }), "other_host");
  for (const host of ["10.0.0.1", "192.168.1.20", "::1", "[fe80::1]"]) assert.ok(isIpAddress(host), host);
  for (const host of ["localhost", "crescent.example", "1.example", "a1.2.3.4"]) assert.ok(!isIpAddress(host), host);
});

test("codes are read as the server reads them; handles counted after NFKC", () => {
  assert.equal(cleanCode(" abcd-ef 23 "), "ABCDEF23");
  assert.ok(isCode("k7pq-2xmn", 8));
  assert.ok(!isCode("K7PQ2XM", 8));
  assert.ok(!isCode("K7PQ2XM0", 8)); // 0 is not in the alphabet
  assert.ok(isCode("ABCDE-23456", 10));
  assert.equal(handleLength("  Ａda "), 3);
  assert.equal(handleLength("Zoë_42"), 6);
  const file = recoveryCodesFile({
    handle: "Ada_42",
    site: "localhost:8080",
    codes: ["AAAAA-BBBBB", "CCCCC-DDDDD"],
    made: new Date("2026-12-01T10:00:00Z"),
    words: { title: "Recovery codes", how: "Each works once." },
  });
  assert.equal(file, "Recovery codes\n\nAda_42 · localhost:8080 · 2026-12-01\n\n 1. AAAAA-BBBBB\n 2. CCCCC-DDDDD\n\nEach works once.\n");
});

// Every refusal the save, sign-in, link-code, recovery and add-passkey routes can answer
// (docs/protocol.md "Accounts"; docs/accounts.md "Error codes").
const ROUTE_CODES = [
  "not_authenticated", "bad_token", "token_expired", "not_signed_in", "accounts_off", "bad_field", "internal_error",
  "bad_handle", "handle_reserved", "handle_taken", "account_exists", "no_account",
  "bad_response", "unknown_challenge", "challenge_expired", "challenge_replayed", "wrong_ceremony", "wrong_origin",
  "wrong_rp_id", "user_not_present", "unknown_credential", "credential_taken", "too_many_passkeys",
  "sign_count_regressed", "bad_signature", "bad_attestation",
  "bad_link_code", "link_code_unknown", "link_code_expired", "link_code_used", "bad_recovery_code",
]; // prettier-ignore

test("every refusal of the account routes, and every passkey failure, has words in every language", () => {
  for (const { code: lang } of i18n.LANGUAGES) {
    i18n.setLanguage(lang);
    const seen = new Set();
    for (const code of ROUTE_CODES) {
      assert.ok(i18n.has(lang, `error.${code}`), `${lang} error.${code}`);
      const text = problemText(new AccountError(code, "server words"));
      assert.ok(text && text !== code && text !== "server words", `${lang} ${code}`);
    }
    for (const code of ["network", "rate_limited"]) seen.add(problemText(new AccountError(code, "x")));
    for (const name of ["NotAllowedError", "InvalidStateError", "AbortError", "SecurityError", "TypeError"]) {
      seen.add(problemText({ name }));
    }
    assert.equal(seen.size, 7, `${lang}: each failure has its own words`);
    for (const text of seen) assert.ok(!text.startsWith("acct."), `${lang}: ${text}`);
  }
  i18n.setLanguage("en");
  assert.equal(passkeyFailure({ name: "NotAllowedError" }), "cancelled");
  assert.equal(problemText({ name: "NotAllowedError" }), "The passkey prompt was closed or timed out. Try again when you are ready.");
  assert.equal(problemText(new AccountError("link_code_used")), "That link code was used already; make a new one on your signed-in device");
});

test("callAccount sends the token and a JSON body, and turns refusals into coded errors", async () => {
  const calls = [];
  const answer = (status, body) => async (path, init) => {
    calls.push({ path, init });
    return { ok: status < 400, status, json: async () => body };
  };
  const ok = await callAccount("/api/account/start", { body: { handle: "Ada" }, token: "tok", fetch: answer(200, { options: {} }) });
  assert.deepEqual(ok, { options: {} });
  assert.equal(calls[0].init.method, "POST");
  assert.equal(calls[0].init.headers.Authorization, "Bearer tok");
  assert.equal(calls[0].init.body, '{"handle":"Ada"}');
  await callAccount("/api/account/config", { fetch: answer(200, {}) });
  assert.equal(calls[1].init.method, "GET");
  assert.equal(calls[1].init.headers.Authorization, undefined);
  await assert.rejects(callAccount("/api/sign-in/link-code", { body: { code: "X" }, fetch: answer(400, { code: "bad_link_code", message: "no" }) }), (err) => err instanceof AccountError && err.code === "bad_link_code" && err.status === 400);
  await assert.rejects(callAccount("/x", { fetch: answer(502, null) }), (err) => err.code === "internal_error");
  const down = async () => {
    throw new TypeError("Failed to fetch");
  };
  await assert.rejects(callAccount("/x", { fetch: down }), (err) => err.code === "network");
});

test("addPasskey asks the server, then the device, then the server again, and says each step", async () => {
  const calls = [];
  const steps = [];
  const fetchFn = async (path, init) => {
    calls.push({ path, body: JSON.parse(init.body), auth: init.headers.Authorization });
    const body = path.endsWith("/start") ? { options: { challenge: "AAEC", user: { id: "AQ", name: "Ada" }, excludeCredentials: [{ type: "public-key", id: "Ag" }] } } : { ok: true };
    return { ok: true, status: 200, json: async () => body };
  };
  const made = { id: "cred", rawId: new Uint8Array([9]), type: "public-key", response: { clientDataJSON: new Uint8Array([1]), attestationObject: new Uint8Array([2]) } };
  const seen = [];
  const credentials = { create: async (options) => (seen.push(options), made) };
  const answer = await addPasskey({ token: "tok", onStep: (s) => steps.push(s), credentials, fetch: fetchFn });
  assert.deepEqual(answer, { ok: true });
  assert.deepEqual(steps, ["working", "create", "working"]);
  assert.deepEqual(calls.map((c) => c.path), ["/api/account/passkeys/start", "/api/account/passkeys/finish"]);
  assert.ok(calls.every((c) => c.auth === "Bearer tok"));
  assert.deepEqual([...seen[0].publicKey.excludeCredentials[0].id], [2]);
  assert.equal(calls[1].body.response.id, "cred");
  assert.equal(calls[1].body.response.response.attestationObject, "Ag");
  // The device's prompt closed: the browser's error goes on to the caller, nothing is finished.
  const closed = { create: async () => Promise.reject(Object.assign(new Error("no"), { name: "NotAllowedError" })) };
  await assert.rejects(addPasskey({ token: "tok", credentials: closed, fetch: fetchFn }), (err) => addPasskeyProblem(err) === problemText(err) && /Try again/.test(addPasskeyProblem(err)));
  assert.equal(calls.length, 3);
});

test("addPasskeyProblem says what to do next when the account has its 20 or the passkey is taken", () => {
  i18n.setLanguage("en");
  assert.match(addPasskeyProblem(new AccountError("too_many_passkeys", "x", 409)), /20 passkeys.*link code/);
  assert.match(addPasskeyProblem(new AccountError("credential_taken", "x", 409)), /Try again/);
  assert.equal(addPasskeyProblem(new AccountError("network")), problemText(new AccountError("network")));
});
