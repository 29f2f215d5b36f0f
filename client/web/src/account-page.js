// The account page at /me (docs/accounts.md; docs/browser.md "Accounts"): for a signed-in
// account its handle, passkeys (and "Add a passkey on this device"), the devices signed in (sign out one, the others, all), a
// one-time link code for another device, new recovery codes, Download my data and Delete
// my account; for a guest a word on what an account is and "Save my progress" (the sign-up
// dialog's, app.account, when the page has it). Everything goes through the HTTP routes of
// docs/protocol.md "Accounts" with this device's token. A device signed out elsewhere
// (close code 4011, or `session_revoked` at hello) forgets its token and goes on as a guest.
import { AccountError, addPasskey, addPasskeyProblem } from "./account-api.js";
import { holdModal } from "./dialogs.js";
import { h, mount } from "./dom.js";
import { formatDuration, messageFor, t } from "./i18n.js";
import { HISTORY_PATH } from "./history-page.js";
import { load, save } from "./storage.js";

export const ME_PATH = "/me";
const TICK_MS = 1000;

/**
 * An account route with this device's token: its status and JSON body (null if none).
 * @param {string} path
 * @param {{method?: string, body?: object}} [opts]
 */
export async function accountFetch(path, { method = "GET", body } = {}) {
  const token = load("token");
  /** @type {Record<string, string>} */
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body) headers["Content-Type"] = "application/json";
  try {
    const response = await fetch(path, { method, headers, body: body ? JSON.stringify(body) : undefined });
    const data = await response.json().catch(() => null);
    return { ok: response.ok, status: response.status, body: data };
  } catch {
    return { ok: false, status: 0, body: null };
  }
}

/** A date and time in the page's language, short. */
export function formatWhen(ms, language) {
  return new Date(ms).toLocaleString(language, { dateStyle: "medium", timeStyle: "short" });
}

/** A session's device label (the server's, docs/accounts.md: "Chrome on Android") in the
 * page's language. */
export function deviceName(label) {
  const match = /^(\S+) on (\S+)$/.exec(String(label || ""));
  if (match) return t("me.deviceOn", { browser: match[1], os: match[2] });
  return label && label !== "unknown device" ? label : t("me.unknownDevice");
}

export class AccountPage {
  /** @param {import("./app.js").App} app */
  constructor(app) {
    this.app = app;
    /** @type {"idle" | "loading" | "account" | "guest" | "off" | "error"} */
    this.status = "idle";
    /** @type {any} */
    this.me = null; // GET /api/me
    this.token = undefined; // the token `me` was loaded with
    this.error = null;
    /** @type {"signedOut" | "deleted" | null} */
    this.notice = null;
    /** @type {{code: string, expires_at: number} | null} */
    this.link = null;
    this.busy = false;
    /** @type {string | null} what to focus once the next load has rendered */
    this.focusAfterLoad = null;
    this.deleting = false; // a deletion asked, its answer not yet in
    /** @type {string | null} why the last "Add a passkey on this device" failed */
    this.passkeyProblem = null;
    this.version = 0;
    this.key = null;
    /** @type {HTMLElement | null} */
    this.el = null;
    this.timer = null;
  }

  changed() {
    this.version += 1;
    this.app.render();
  }

  /** Load the account for this device's token (again when the token changed). */
  open() {
    if (load("token") !== this.token) this.load();
  }

  async load() {
    const token = load("token");
    this.token = token;
    if (!token) {
      this.status = "guest";
      this.me = null;
      return;
    }
    if (this.status !== "account") this.status = "loading";
    const { ok, status, body } = await accountFetch("/api/me");
    if (token !== load("token")) return; // a newer token: its own load goes on
    this.error = null;
    this.me = ok ? body : null;
    if (ok) this.status = "account";
    else if (status === 401) this.status = "guest";
    else if (body && body.code === "accounts_off") this.status = "off";
    else {
      this.status = "error";
      this.error = body ? messageFor("error", body) : t("me.failed");
    }
    if (this.status !== "account") this.stopLink();
    this.changed();
    if (this.focusAfterLoad) this.focusLater(this.focusAfterLoad);
    this.focusAfterLoad = null;
  }

  /** This device's account session ended (close 4011, or a hello refused with
   * `session_revoked` or `sign_in_required`). After a deletion the device goes on as a
   * new guest at once; otherwise the player chooses: sign in again, or play on as a new
   * guest (account.js's signed-out dialog). */
  sessionEnded(code = "session_revoked") {
    const deleted = this.notice === "deleted" || this.deleting;
    this.notice = deleted ? "deleted" : "signedOut";
    this.status = "guest";
    this.me = null;
    this.token = null;
    this.stopLink();
    this.changed();
    if (!deleted) return this.app.account.endSession(code);
    this.app.account.playAsNewGuest();
    // The new guest's welcome reloads the page (a new token): focus its title after that.
    if (this.app.state.meOpen) this.focusAfterLoad = "me-title";
  }

  /** The page learnt that this device is signed out (its own sign-out, a 401, or the
   * deletion): say so here; the server's close 4011 ends the connection's session. */
  signedOut() {
    if (this.notice !== "deleted") this.notice = "signedOut";
    this.status = "guest";
    this.me = null;
    this.token = null;
    this.stopLink();
    const text = t(this.notice === "deleted" ? "me.deleted" : "me.signedOut");
    this.app.feedback.announce(text);
    if (!this.app.state.meOpen) this.app.feedback.toast(text);
    this.changed();
  }

  /** One request at a time; a refusal shows on the page. */
  async run(work) {
    if (this.busy) return;
    this.busy = true;
    this.error = null;
    try {
      await work();
    } finally {
      this.busy = false;
      this.changed();
    }
  }

  fail(result) {
    if (result.status === 401) return this.signedOut();
    this.error = result.body ? messageFor("error", result.body) : t("me.failed");
    this.app.feedback.announce(this.error);
  }

  // --- passkeys ------------------------------------------------------------------------------

  /** Can this page make a passkey: `ok`, or why not (account.js support()). */
  passkeySupport() {
    const account = /** @type {any} */ (this.app).account;
    return account && typeof account.support === "function" ? account.support() : "unsupported";
  }

  /** "Add a passkey on this device": the sign-in dialog's ceremony (account-api.js
   * addPasskey); then the list again with the new one, said in the live region. A failure
   * is said in words beside the button, which keeps the focus. */
  async addPasskeyHere() {
    if (this.busy) return;
    this.busy = true;
    this.passkeyProblem = null;
    const status = this.el && this.el.querySelector("[data-testid=me-passkey-wait]");
    const problem = this.el && this.el.querySelector("[data-testid=me-passkey-problem]");
    if (problem) problem.remove();
    try {
      await addPasskey({ token: load("token"), onStep: (step) => status && (status.textContent = t(step === "create" ? "acct.form.waitCreate" : "acct.form.working")) });
    } catch (err) {
      this.busy = false;
      if (err instanceof AccountError && err.status === 401) return this.signedOut();
      this.passkeyProblem = addPasskeyProblem(err);
      this.changed();
      this.focusLater("me-add-passkey");
      return;
    }
    this.busy = false;
    this.focusAfterLoad = "me-add-passkey";
    await this.load();
    this.app.feedback.announce(t("acct.signin.passkeyAdded"));
  }

  // --- devices ------------------------------------------------------------------------------

  /** Sign out one session (its id), `others` or `all`. */
  revoke(which) {
    return this.run(async () => {
      const result = await accountFetch("/api/account/sessions/revoke", { method: "POST", body: { session: which } });
      if (!result.ok) return this.fail(result);
      const revoked = result.body.revoked || [];
      this.app.feedback.announce(t("me.signedOutCount", { n: revoked.length }));
      const mine = this.me && this.me.sessions.find((s) => s.current);
      if (which === "all" || (mine && revoked.includes(mine.id))) return this.signedOut();
      await this.load();
      this.focusLater("me-devices-title");
    });
  }

  async revokeAll() {
    const { value } = await this.app.feedback.dialog({
      title: t("me.signOutAllAsk"),
      body: [],
      testid: "me-signout-all-dialog",
      actions: [
        { label: t("me.cancel"), value: "no", kind: "ghost", testid: "me-cancel" },
        { label: t("me.signOut"), value: "yes", kind: "danger", testid: "me-signout-all-confirm" },
      ],
    });
    if (value === "yes") await this.revoke("all");
  }

  // --- link code ----------------------------------------------------------------------------

  linkCode() {
    return this.run(async () => {
      const result = await accountFetch("/api/account/link-code", { method: "POST" });
      if (!result.ok) return this.fail(result);
      this.link = result.body;
      this.stopLink();
      this.timer = setInterval(() => this.tickLink(), TICK_MS);
      this.focusLater("me-link-code");
    });
  }

  /** Seconds left on the code's countdown, on the server's clock. */
  linkLeftMs() {
    return this.link ? this.link.expires_at - this.app.conn.serverNow() : 0;
  }

  tickLink() {
    const left = this.linkLeftMs();
    const el = this.el && this.el.querySelector("[data-testid=me-link-countdown]");
    if (left <= 0) {
      this.stopLink();
      this.app.feedback.announce(t("me.linkExpired"));
      this.changed();
    } else if (el) el.textContent = t("me.linkValid", { t: formatDuration(left) });
  }

  stopLink() {
    clearInterval(this.timer);
    this.timer = null;
  }

  // --- recovery codes, my data, deletion -----------------------------------------------------

  async recoveryCodes() {
    const { value } = await this.app.feedback.dialog({
      title: t("me.recoveryNew"),
      body: [h("p", {}, t("me.recoveryAsk"))],
      testid: "me-recovery-ask",
      actions: [
        { label: t("me.cancel"), value: "no", kind: "ghost", testid: "me-cancel" },
        { label: t("me.recoveryMake"), value: "yes", kind: "primary", testid: "me-recovery-make" },
      ],
    });
    if (value !== "yes") return;
    /** @type {string[] | null} */
    let codes = null;
    await this.run(async () => {
      const result = await accountFetch("/api/account/recovery-codes", { method: "POST" });
      if (!result.ok) return this.fail(result);
      codes = result.body.codes;
    });
    if (codes) await this.showCodes(codes);
  }

  showCodes(codes) {
    const copy = h("button", { type: "button", class: "secondary", "data-testid": "me-recovery-copy" }, t("me.copy"));
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(codes.join("\n"));
        copy.textContent = t("me.copied");
      } catch {
        /* no clipboard here: the codes are on the screen to write down */
      }
    });
    return this.app.feedback.dialog({
      title: t("me.recoveryShown"),
      body: [h("p", {}, t("me.recoveryOnce")), h("ol", { class: "recovery-codes", "data-testid": "me-recovery-codes" }, codes.map((code) => h("li", {}, h("code", {}, code)))), copy],
      testid: "me-recovery-dialog",
      actions: [{ label: t("me.saved"), value: "ok", kind: "primary", testid: "me-recovery-done" }],
    });
  }

  download() {
    return this.run(async () => {
      const token = load("token");
      const response = await fetch("/api/account/data", { headers: { Authorization: `Bearer ${token}` } }).catch(() => null);
      if (!response || !response.ok) {
        return this.fail({ status: response ? response.status : 0, body: response ? await response.json().catch(() => null) : null });
      }
      const url = URL.createObjectURL(await response.blob());
      const link = h("a", { href: url, download: "crescent-my-data.json", hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      this.app.feedback.announce(t("me.downloaded"));
    });
  }

  /** A modal asking for the handle typed out; Delete for good, then this page is a guest's. */
  confirmDelete() {
    const handle = this.me.handle;
    const root = this.app.modalRoot;
    const input = h("input", { id: "me-delete-handle", type: "text", autocomplete: "off", autocapitalize: "none", spellcheck: "false", "data-testid": "me-delete-input" });
    const problem = h("p", { class: "error", role: "alert", "data-testid": "me-delete-problem" });
    /** @type {{release: (to?: string|null) => boolean} | null} */
    let modal = null;
    const close = (to = null) => {
      root.replaceChildren();
      if (modal) modal.release(to);
    };
    const same = (/** @type {string} */ text) => text.trim().normalize("NFKC").toLowerCase() === handle.normalize("NFKC").toLowerCase();
    const submit = async (/** @type {Event} */ event) => {
      event.preventDefault();
      if (!same(/** @type {HTMLInputElement} */ (input).value)) {
        problem.textContent = t("me.deleteMismatch", { handle });
        return input.focus();
      }
      // The server closes this device's socket (4011) as it deletes, maybe before its
      // answer arrives: sessionEnded must know that it is a deletion.
      this.deleting = true;
      const result = await accountFetch("/api/account", { method: "DELETE" });
      this.deleting = false;
      if (!result.ok) {
        problem.textContent = result.body ? messageFor("error", result.body) : t("me.failed");
        return;
      }
      this.notice = "deleted";
      save("name", null); // the new guest does not go on under the account's name
      close();
      this.signedOut();
      this.focusLater("me-title");
    };
    const form = h(
      "form",
      { class: "dialog modal", "aria-labelledby": "me-delete-title", "data-testid": "me-delete-dialog", onsubmit: submit },
      h("h2", { id: "me-delete-title" }, t("me.deleteTitle")),
      h("div", { class: "dialog-body" }, h("p", {}, t("me.deleteInfo")), h("label", { for: "me-delete-handle" }, t("me.deleteType", { handle })), input, problem),
      h(
        "div",
        { class: "buttons" },
        h("button", { type: "button", class: "ghost", "data-testid": "me-delete-cancel", onclick: () => close() }, t("me.cancel")),
        h("button", { type: "submit", class: "danger", "data-testid": "me-delete-confirm" }, t("me.deleteConfirm")),
      ),
    );
    const backdrop = h("div", { class: "overlay modal-backdrop" }, form);
    mount(root, backdrop);
    modal = holdModal(form, { onEscape: () => close(), focus: input });
  }

  /** Focus an element of the page once it is drawn (headings take focus by script only). */
  focusLater(testid) {
    setTimeout(() => {
      const el = /** @type {HTMLElement | null} */ (document.querySelector(`[data-testid="${testid}"]`));
      if (!el) return;
      if (!el.matches("button, a, input")) el.setAttribute("tabindex", "-1");
      el.focus();
    });
  }

  // --- the page -------------------------------------------------------------------------------

  view() {
    this.open();
    const key = [this.app.language, this.version, this.status].join("|");
    if (this.el && key === this.key) return this.el;
    this.key = key;
    const el = h(
      "section",
      { class: "panel account", "data-testid": "me", "aria-busy": this.busy ? "true" : "false" },
      h("h1", { "data-testid": "me-title" }, t("me.title")),
      this.notice ? h("p", { class: "notice", "data-testid": "me-notice" }, t(this.notice === "deleted" ? "me.deleted" : "me.signedOut")) : null,
      this.error ? h("p", { class: "error", role: "alert", "data-testid": "me-error" }, this.error) : null,
      this.status === "account" ? this.accountParts() : this.otherParts(),
    );
    if (this.el && this.el.parentNode) this.el.replaceWith(el);
    this.el = el;
    return el;
  }

  otherParts() {
    const go = (/** @type {string} */ path, /** @type {string} */ text, /** @type {string} */ testid) =>
      h("a", { href: path, "data-testid": testid, onclick: (e) => (e.preventDefault(), this.app.nav.go(path)) }, text);
    const account = /** @type {any} */ (this.app).account;
    const canSave = this.status === "guest" && account && typeof account.openSave === "function";
    if (this.status === "loading" || this.status === "idle") return h("p", { class: "muted" }, t("me.loading"));
    return [
      this.status === "off" ? h("p", { "data-testid": "me-off" }, t("me.off")) : null,
      this.status === "guest" ? h("p", { "data-testid": "me-guest" }, t("me.guest")) : null,
      canSave ? h("button", { type: "button", class: "primary", "data-testid": "me-save", onclick: () => account.openSave() }, t("me.save")) : null,
      h("p", {}, go(HISTORY_PATH, t("history.title"), "me-games")),
    ];
  }

  accountParts() {
    const me = this.me;
    const lang = this.app.language;
    const go = (/** @type {string} */ path, /** @type {string} */ text, /** @type {string} */ testid) =>
      h("a", { href: path, "data-testid": testid, onclick: (e) => (e.preventDefault(), this.app.nav.go(path)) }, text);
    const part = (/** @type {string} */ id, /** @type {string} */ title, ...body) =>
      h("section", { class: "account-part", "aria-labelledby": id }, h("h2", { id, "data-testid": id }, title), ...body);
    return [
      h("p", { "data-testid": "me-handle" }, t("me.signedInAs", { handle: me.handle })),
      h("p", { class: "account-links" }, go(HISTORY_PATH, t("history.title"), "me-games"), go(`/u/${encodeURIComponent(me.handle)}`, t("me.profileLink"), "me-profile")),
      part("me-passkeys-title", t("me.passkeys"), h("p", { class: "muted small" }, t("me.passkeysInfo")), this.passkeyList(lang), ...this.addPasskeyParts()),
      part("me-devices-title", t("me.devices"), ...this.sessionParts(lang)),
      part("me-link-title", t("me.link"), ...this.linkParts()),
      part(
        "me-recovery-title",
        t("me.recovery"),
        h("p", { class: "muted small" }, t("me.recoveryInfo")),
        h("button", { type: "button", class: "secondary", "data-testid": "me-recovery", onclick: () => this.recoveryCodes() }, t("me.recoveryNew")),
      ),
      part("me-data-title", t("me.data"), h("p", { class: "muted small" }, t("me.dataInfo")), h("button", { type: "button", class: "secondary", "data-testid": "me-download", onclick: () => this.download() }, t("me.download"))),
      part("me-delete-title-part", t("me.delete"), h("p", { class: "muted small" }, t("me.deleteInfo")), h("button", { type: "button", class: "danger", "data-testid": "me-delete", onclick: () => this.confirmDelete() }, t("me.delete"))),
    ];
  }

  passkeyList(lang) {
    return h(
      "ul",
      { class: "account-list", "data-testid": "me-passkeys" },
      this.me.passkeys.map((key, i) =>
        h(
          "li",
          { "data-testid": "me-passkey" },
          h("b", {}, t("me.passkey", { k: i + 1 })),
          h("span", { class: "small muted" }, [t("me.added", { when: formatWhen(key.created_at, lang) }), key.last_used_at ? t("me.lastUsed", { when: formatWhen(key.last_used_at, lang) }) : t("me.neverUsed"), key.backed_up ? t("me.synced") : null].filter(Boolean).join(" · ")),
        ),
      ),
    );
  }

  /** The button that adds a passkey on this device, or where this page cannot make one,
   * why (the dialogs' words). */
  addPasskeyParts() {
    if (this.passkeySupport() !== "ok") {
      const account = /** @type {any} */ (this.app).account;
      const why = account && account.dialogs ? account.dialogs.noPasskeysText() : t("acct.nopk.browser");
      return [h("p", { class: "muted small", "data-testid": "me-no-passkeys" }, why)];
    }
    const problem = this.passkeyProblem;
    return [
      h("p", { class: "muted small", "data-testid": "me-passkey-wait" }),
      problem ? h("p", { class: "error", id: "me-passkey-problem", role: "alert", "data-testid": "me-passkey-problem" }, problem) : null,
      h(
        "button",
        { type: "button", class: "secondary", "data-testid": "me-add-passkey", "aria-describedby": problem ? "me-passkey-problem" : null, onclick: () => this.addPasskeyHere() },
        t("acct.signin.addPasskey"),
      ),
    ];
  }

  sessionParts(lang) {
    const sessions = this.me.sessions;
    const rows = sessions.map((s) => {
      const name = deviceName(s.device);
      return h(
        "li",
        { "data-testid": "me-session", "data-current": s.current ? "true" : "false" },
        h("b", {}, name, s.current ? ` (${t("me.thisDevice")})` : ""),
        h("span", { class: "small muted" }, `${t("me.signedInWhen", { when: formatWhen(s.created_at, lang) })} · ${t("me.lastSeen", { when: formatWhen(s.last_seen_at, lang) })}`),
        h("button", { type: "button", class: "secondary small", "data-testid": "me-session-signout", "aria-label": t("me.signOutDevice", { device: s.current ? t("me.thisDevice") : name }), onclick: () => this.revoke(s.id) }, t("me.signOut")),
      );
    });
    return [
      h("ul", { class: "account-list", "data-testid": "me-sessions" }, rows),
      h(
        "div",
        { class: "buttons" },
        sessions.length > 1 ? h("button", { type: "button", class: "secondary", "data-testid": "me-signout-others", onclick: () => this.revoke("others") }, t("me.signOutOthers")) : null,
        h("button", { type: "button", class: "secondary", "data-testid": "me-signout-all", onclick: () => this.revokeAll() }, t("me.signOutAll")),
      ),
    ];
  }

  linkParts() {
    const live = this.link && this.linkLeftMs() > 0;
    const code = live ? this.link.code : "";
    const shown = code ? `${code.slice(0, 4)}-${code.slice(4)}` : "";
    return [
      h("p", { class: "muted small" }, t("me.linkInfo")),
      live
        ? h(
            "div",
            { class: "link-code-box" },
            h("p", { class: "link-code", "data-testid": "me-link-code", "data-code": code }, h("span", { "aria-hidden": "true" }, shown), h("span", { class: "sr-only" }, t("me.linkSpoken", { code: code.split("").join(" ") }))),
            h("p", { class: "small", "data-testid": "me-link-countdown" }, t("me.linkValid", { t: formatDuration(this.linkLeftMs()) })),
          )
        : this.link
          ? h("p", { class: "small", "data-testid": "me-link-expired" }, t("me.linkExpired"))
          : null,
      h("button", { type: "button", class: "secondary", "data-testid": "me-link", onclick: () => this.linkCode() }, this.link ? t("me.linkAgain") : t("me.linkShow")),
    ];
  }
}
