// The accounts' HTTP routes (docs/protocol.md, "Accounts") as the page calls them, and the
// pure parts of passkeys in a browser: base64url, the WebAuthn options and credentials
// as JSON, whether this page can use passkeys at all, the codes' forms, and the one
// ceremony that adds a passkey on this device (the sign-in dialog's and /me's). No DOM
// here (client/web/test/account.test.js runs it in Node).
import { messageFor, t } from "./i18n.js";

/** A refusal of an account route ({code, message}), or `network` when there was no answer. */
export class AccountError extends Error {
  /**
   * @param {string} code
   * @param {string} [message]
   * @param {number} [status]
   */
  constructor(code, message, status = 0) {
    super(message || code);
    this.code = code;
    this.status = status;
  }
}

/**
 * Call an account route: a JSON body (POST) or none (GET), the player's token as a bearer
 * token. Resolves with the answer's JSON; rejects with an AccountError.
 * @param {string} path
 * @param {{method?: string, body?: object, token?: string|null, fetch?: typeof fetch}} [opts]
 * @returns {Promise<any>}
 */
export async function callAccount(path, { method, body, token, fetch: fetchFn = fetch } = {}) {
  /** @type {Record<string, string>} */
  const headers = { Accept: "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetchFn(path, { method: method || (body ? "POST" : "GET"), headers, body: body ? JSON.stringify(body) : undefined });
  } catch {
    throw new AccountError("network", "no answer");
  }
  /** @type {any} */
  let answer;
  try {
    answer = await response.json();
  } catch {
    answer = null; // not JSON: a proxy's error page, say
  }
  if (!response.ok) {
    const code = answer && typeof answer.code === "string" ? answer.code : response.status >= 500 ? "internal_error" : "network";
    throw new AccountError(code, answer && answer.message, response.status);
  }
  return answer;
}

// --- base64url ----------------------------------------------------------------------------------

/** base64url (no padding) of bytes. @param {ArrayBuffer|Uint8Array} data */
export function toBase64url(data) {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  let binary = "";
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The bytes of base64url text (padding optional). @param {string} text */
export function fromBase64url(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

// --- WebAuthn options and credentials as JSON ---------------------------------------------------

/** @param {any[]|undefined} list */
function descriptors(list) {
  return list && list.map((d) => ({ ...d, id: fromBase64url(d.id) }));
}

/**
 * The server's PublicKeyCredentialCreationOptions JSON as navigator.credentials.create()
 * takes it (the browser's own parseCreationOptionsFromJSON when it has one).
 * @param {any} json
 * @param {any} [PKC]  PublicKeyCredential (tests pass none)
 */
export function creationOptions(json, PKC = globalThis.PublicKeyCredential) {
  if (PKC && typeof PKC.parseCreationOptionsFromJSON === "function") return PKC.parseCreationOptionsFromJSON(json);
  return {
    ...json,
    challenge: fromBase64url(json.challenge),
    user: { ...json.user, id: fromBase64url(json.user.id) },
    excludeCredentials: descriptors(json.excludeCredentials),
  };
}

/**
 * The server's PublicKeyCredentialRequestOptions JSON as navigator.credentials.get() takes it.
 * @param {any} json
 * @param {any} [PKC]
 */
export function requestOptions(json, PKC = globalThis.PublicKeyCredential) {
  if (PKC && typeof PKC.parseRequestOptionsFromJSON === "function") return PKC.parseRequestOptionsFromJSON(json);
  return { ...json, challenge: fromBase64url(json.challenge), allowCredentials: descriptors(json.allowCredentials) };
}

/**
 * A credential from create() or get() as the JSON the server reads (the browser's own
 * toJSON() when it has one): binary fields in base64url.
 * @param {any} credential
 */
export function credentialJSON(credential) {
  if (typeof credential.toJSON === "function") return credential.toJSON();
  const r = credential.response;
  /** @type {Record<string, any>} */
  const response = { clientDataJSON: toBase64url(r.clientDataJSON) };
  if (r.attestationObject) {
    response.attestationObject = toBase64url(r.attestationObject);
    if (typeof r.getTransports === "function") response.transports = r.getTransports();
  } else {
    response.authenticatorData = toBase64url(r.authenticatorData);
    response.signature = toBase64url(r.signature);
    if (r.userHandle) response.userHandle = toBase64url(r.userHandle);
  }
  return {
    id: credential.id,
    rawId: toBase64url(credential.rawId),
    type: credential.type,
    response,
    clientExtensionResults: typeof credential.getClientExtensionResults === "function" ? credential.getClientExtensionResults() : {},
    authenticatorAttachment: credential.authenticatorAttachment ?? undefined,
  };
}

/**
 * What a failed navigator.credentials call means to the player: `cancelled` (closed the
 * prompt or it timed out: NotAllowedError), `exists` (this device has a passkey of this
 * account already: InvalidStateError), `aborted`, `security` (the page's address cannot
 * hold this site's passkeys), else `failed`.
 * @param {any} err
 */
export function passkeyFailure(err) {
  const name = err && err.name;
  if (name === "NotAllowedError") return "cancelled";
  if (name === "InvalidStateError") return "exists";
  if (name === "AbortError") return "aborted";
  if (name === "SecurityError") return "security";
  return "failed";
}

// --- a passkey on this device ---------------------------------------------------------------------

/**
 * Add a passkey on this device to the account signed in here (docs/accounts.md, "add a
 * passkey"): the server's options, the browser's prompt, the server's check. The sign-in
 * dialog (after a link or recovery code) and the account page (/me) both call this.
 * `onStep` hears `working` (the server) and `create` (the device's own prompt) as it
 * goes. Resolves with the server's answer once it keeps the passkey; rejects with an
 * AccountError or the browser's error (addPasskeyProblem says either in words).
 * @param {{token: string|null, signal?: AbortSignal, onStep?: (step: "working" | "create") => void, credentials?: {create: (options: any) => Promise<any>}, fetch?: typeof fetch}} opts
 */
export async function addPasskey({ token, signal, onStep = () => {}, credentials = globalThis.navigator && navigator.credentials, fetch: fetchFn = fetch }) {
  onStep("working");
  const started = await callAccount("/api/account/passkeys/start", { body: {}, token, fetch: fetchFn });
  onStep("create");
  const credential = await credentials.create({ publicKey: creationOptions(started.options), signal });
  onStep("working");
  return callAccount("/api/account/passkeys/finish", { body: { response: credentialJSON(credential) }, token, fetch: fetchFn });
}

// --- can this page use passkeys? ---------------------------------------------------------------

/** Is `hostname` an IPv4 or IPv6 address (never a WebAuthn relying party id)? */
export function isIpAddress(hostname) {
  const host = String(hostname).replace(/^\[|\]$/g, "");
  if (host.includes(":")) return true; // IPv6 (a domain name has no colon)
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host);
}

/** Is `hostname` the relying party id or one of its subdomains? */
export function onRelyingParty(hostname, rpId) {
  const host = String(hostname).toLowerCase().replace(/\.$/, "");
  const rp = String(rpId).toLowerCase();
  return host === rp || host.endsWith(`.${rp}`);
}

/**
 * Can this page make and use passkeys: `ok`, or why not: `insecure` (plain http on a
 * LAN address: no secure context), `unsupported` (no WebAuthn in this browser),
 * `ip_address` (an address is never a relying party id), `other_host` (the server's
 * passkeys are for another name: `rpId`, when known).
 * @param {{secure: boolean, webauthn: boolean, hostname: string, rpId?: string|null}} page
 */
export function passkeySupport({ secure, webauthn, hostname, rpId }) {
  if (!secure) return "insecure";
  if (!webauthn) return "unsupported";
  if (isIpAddress(hostname)) return "ip_address";
  if (rpId && !onRelyingParty(hostname, rpId)) return "other_host";
  return "ok";
}

// --- handles and codes ---------------------------------------------------------------------------

/** A handle as the server compares its length: NFKC, trimmed, in characters. */
export function handleLength(text) {
  return [...String(text).normalize("NFKC").trim()].length;
}

const CODE_SYMBOLS = "23456789ABCDEFGHJKMNPQRSTWXYZ";

/** A typed link or recovery code as the server reads it: upper case, no spaces or hyphens. */
export function cleanCode(text) {
  return String(text).toUpperCase().replace(/[\s-]+/g, "");
}

/** Does `text` read as a code of `length` symbols of the codes' alphabet? */
export function isCode(text, length) {
  const clean = cleanCode(text);
  return clean.length === length && [...clean].every((c) => CODE_SYMBOLS.includes(c));
}

/**
 * The recovery codes as a text file to keep (Download): who, where, the codes, and how
 * to use one.
 * @param {{handle: string, site: string, codes: string[], made: Date, words: {title: string, how: string}}} what
 */
export function recoveryCodesFile({ handle, site, codes, made, words }) {
  const lines = [words.title, "", `${handle} · ${site} · ${made.toISOString().slice(0, 10)}`, "", ...codes.map((code, i) => `${String(i + 1).padStart(2)}. ${code}`), "", words.how, ""];
  return lines.join("\n");
}

// --- words --------------------------------------------------------------------------------------

/**
 * What went wrong, in the player's words with a next step: an account route's refusal
 * (its code's text, docs/accounts.md "Error codes"), no answer, or the browser's passkey
 * prompt failing (passkeyFailure).
 * @param {any} err
 */
export function problemText(err) {
  if (err instanceof AccountError) {
    if (err.code === "network") return t("acct.fail.network");
    if (err.code === "rate_limited") return t("acct.fail.rateLimited");
    return messageFor("error", { code: err.code, message: err.message });
  }
  return t(`acct.fail.${passkeyFailure(err)}`);
}

/**
 * Why adding a passkey on this device failed, with what to do next: the account has as
 * many as it may (`too_many_passkeys`), the passkey is registered already
 * (`credential_taken`), else as problemText.
 * @param {any} err
 */
export function addPasskeyProblem(err) {
  if (err instanceof AccountError && err.code === "too_many_passkeys") return t("acct.add.tooMany");
  if (err instanceof AccountError && err.code === "credential_taken") return t("acct.add.taken");
  return problemText(err);
}
