// The account dialogs (docs/browser.md, "Accounts"): save my progress (a handle, then a
// passkey, then the ten recovery codes shown once), sign in (a passkey, the browser's
// passkey autofill, a link code, a recovery code; then a passkey for this device), and
// "you were signed out on this device". Each is one modal dialog (holdModal) whose steps
// replace its content: focus goes to the step's first field or its heading, never to
// <body>; refusals are shown in words beside the field, and read out (role=alert).
import {
  AccountError,
  addPasskey,
  addPasskeyProblem,
  callAccount,
  cleanCode,
  credentialJSON,
  creationOptions,
  handleLength,
  isCode,
  problemText,
  recoveryCodesFile,
  requestOptions,
} from "./account-api.js";
import { holdModal } from "./dialogs.js";
import { h, mount } from "./dom.js";
import { messageFor, t } from "./i18n.js";
import { load } from "./storage.js";

let counter = 0;

/** One account dialog: a title and a body that change step by step, a live status line. */
class Sheet {
  /**
   * @param {AccountDialogs} owner
   * @param {string} testid
   */
  constructor(owner, testid) {
    this.owner = owner;
    const titleId = `acct-title-${++counter}`;
    this.title = h("h2", { id: titleId, tabindex: "-1" });
    this.body = h("div", { class: "dialog-body" });
    this.dialog = h(
      "section",
      { class: "dialog modal account-dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": titleId, "data-testid": testid },
      this.title,
      this.body,
    );
    this.backdrop = h("div", { class: "overlay modal-backdrop" }, this.dialog);
    /** @type {{release: (to?: string|null) => boolean} | null} */
    this.modal = null;
    this.closed = false;
    this.busy = false;
    this.abort = new AbortController(); // the passkey prompts of this dialog
    /** @type {AbortController | null} the autofill's waiting passkey request */
    this.conditional = null;
    /** @type {() => void} */
    this.onEscape = () => this.close();
  }

  /**
   * Show a step: its title and content; focus goes to `focus`, else to the title (a
   * screen reader then reads the new step from its heading).
   * @param {string} title
   * @param {any[]} content
   * @param {HTMLElement | null} [focus]
   */
  step(title, content, focus) {
    if (this.closed) return;
    this.title.textContent = title;
    mount(this.body, content);
    const target = focus || this.title;
    if (!this.modal) {
      this.owner.ui.root().append(this.backdrop);
      this.modal = holdModal(this.dialog, { onEscape: () => this.onEscape(), focus: target });
    } else {
      target.focus({ preventScroll: true });
    }
  }

  /** @param {string | null} [to]  where focus goes (a test id's selector), else back */
  close(to) {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    this.backdrop.remove();
    const placed = this.modal ? this.modal.release(to) : false;
    if (!placed) this.owner.ui.app.feedback.scheduleKeepFocus();
    this.owner.forget(this);
  }
}

/**
 * A form's moving parts: its error line (tied to its fields by aria-describedby) and its
 * status line (what the page waits for).
 */
function formParts(idBase) {
  const error = h("p", { class: "error", id: `${idBase}-error`, role: "alert", "data-testid": "acct-error", hidden: true });
  const status = h("p", { class: "muted", role: "status", "data-testid": "acct-status" });
  return {
    error,
    status,
    errorId: error.id,
    /** @param {string | null} text @param {HTMLElement | null} [field] */
    fail(text, field) {
      status.textContent = "";
      error.textContent = text || "";
      error.hidden = !text;
      if (field) {
        field.setAttribute("aria-invalid", "true");
        field.focus({ preventScroll: true });
      }
    },
    /** @param {string} text */
    wait(text) {
      error.hidden = true;
      status.textContent = text;
    },
  };
}

/**
 * A labelled text field with an optional hint; `attrs` go on the input, which is
 * described by its hint and by its form's error line (`errorId`).
 * @param {string} id
 * @param {string} label
 * @param {Record<string, any>} attrs
 * @param {string | null} hint
 * @param {string} errorId
 */
function textField(id, label, attrs, hint, errorId) {
  const hintId = hint ? `${id}-hint` : null;
  const input = /** @type {HTMLInputElement} */ (
    h("input", { id, type: "text", spellcheck: "false", autocapitalize: "none", "aria-describedby": [hintId, errorId].filter(Boolean).join(" "), ...attrs })
  );
  input.addEventListener("input", () => input.removeAttribute("aria-invalid"));
  return {
    input,
    el: h("div", { class: "field" }, h("label", { for: id }, label), input, hint ? h("p", { class: "howto small", id: hintId }, hint) : null),
  };
}

/** Offer `text` as a file to download (the browser's own download, no server). */
function saveTextFile(filename, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/plain;charset=utf-8" }));
  const link = h("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

/**
 * @param {string} label
 * @param {string} testid
 * @param {(() => any) | null} onclick
 * @returns {HTMLButtonElement}
 */
const button = (label, testid, onclick, kind = "secondary", type = "button") =>
  /** @type {HTMLButtonElement} */ (h("button", { type, class: kind, "data-testid": testid, onclick }, label));

export class AccountDialogs {
  /** @param {import("./account.js").AccountUi} ui */
  constructor(ui) {
    this.ui = ui;
    /** @type {Set<Sheet>} */
    this.open = new Set();
  }

  /** @param {string} testid */
  sheet(testid) {
    const sheet = new Sheet(this, testid);
    this.open.add(sheet);
    return sheet;
  }

  /** @param {Sheet} sheet */
  forget(sheet) {
    this.open.delete(sheet);
  }

  closeAll() {
    for (const sheet of [...this.open]) sheet.close();
  }

  /** Why this page cannot use passkeys, in words, or null when it can. */
  noPasskeysText() {
    const why = this.ui.support();
    if (why === "ok") return null;
    const host = location.hostname;
    const rp = this.ui.config ? this.ui.config.rpId : "";
    const detail = why === "ip_address" ? t("acct.nopk.ip", { host }) : why === "other_host" ? t("acct.nopk.host", { host, rp }) : why === "unsupported" ? t("acct.nopk.browser") : null;
    return [detail, t("acct.nopk.text")].filter(Boolean).join(" ");
  }

  // --- save my progress ------------------------------------------------------------------------

  save() {
    this.closeAll();
    const sheet = this.sheet("acct-save-dialog");
    const noPasskeys = this.noPasskeysText();
    if (noPasskeys) {
      sheet.step(t("acct.save.title"), [
        h("p", { class: "notice", "data-testid": "acct-no-passkeys" }, noPasskeys),
        h("p", {}, t("acct.save.noPasskeys")),
        h("div", { class: "buttons" }, button(t("acct.signin.useLink"), "acct-use-link", () => this.signIn("link"), "primary"), button(t("acct.form.cancel"), "acct-cancel", () => sheet.close())),
      ]);
      return;
    }
    const id = `acct-handle-${counter}`;
    const parts = formParts(`${id}-form`);
    const handle = textField(id, t("acct.form.handle"), { autocomplete: "username", maxlength: 40, "data-testid": "acct-handle" }, t("acct.save.handleHint"), parts.errorId);
    const form = h(
      "form",
      { novalidate: true, onsubmit: (/** @type {Event} */ e) => (e.preventDefault(), this.createAccount(sheet, handle.input, parts)) },
      h("p", {}, t("acct.save.intro")),
      handle.el,
      parts.error,
      parts.status,
      h(
        "div",
        { class: "buttons" },
        button(t("acct.save.haveAccount"), "acct-have-account", () => this.signIn(), "ghost"),
        button(t("acct.form.cancel"), "acct-cancel", () => sheet.close()),
        button(t("acct.save.create"), "acct-create", null, "primary", "submit"),
      ),
    );
    sheet.step(t("acct.save.title"), [form], handle.input);
  }

  /**
   * @param {Sheet} sheet
   * @param {HTMLInputElement} field
   * @param {ReturnType<typeof formParts>} parts
   */
  async createAccount(sheet, field, parts) {
    if (sheet.busy) return;
    const handle = field.value.normalize("NFKC").trim();
    const length = handleLength(handle);
    if (length < 3 || length > 20) return parts.fail(messageFor("error", { code: "bad_handle" }), field);
    const token = load("token");
    if (!token) return parts.fail(messageFor("error", { code: "not_authenticated" }), field);
    sheet.busy = true;
    let answer;
    try {
      parts.wait(t("acct.form.working"));
      const started = await callAccount("/api/account/start", { body: { handle }, token });
      parts.wait(t("acct.form.waitCreate"));
      const credential = await navigator.credentials.create({ publicKey: creationOptions(started.options), signal: sheet.abort.signal });
      parts.wait(t("acct.form.working"));
      answer = await callAccount("/api/account/finish", { body: { handle, response: credentialJSON(credential) }, token });
    } catch (err) {
      sheet.busy = false;
      if (sheet.closed) return;
      const onHandle = err instanceof AccountError && ["bad_handle", "handle_reserved", "handle_taken", "bad_field"].includes(err.code);
      parts.fail(problemText(err), onHandle ? field : null);
      if (!onHandle) sheet.title.focus({ preventScroll: true });
      return;
    }
    sheet.busy = false;
    this.ui.applySignIn(answer);
    await this.recoveryCodes(sheet, answer);
  }

  /**
   * The ten recovery codes, shown once: copy, download as .txt, and "I have saved them"
   * before the dialog closes.
   * @param {Sheet} sheet
   * @param {{token: string, handle: string}} account
   */
  async recoveryCodes(sheet, account) {
    const parts = formParts(`acct-codes-${counter}`);
    sheet.step(t("acct.codes.title"), [h("p", {}, t("acct.codes.made", { handle: account.handle })), parts.status]);
    parts.wait(t("acct.codes.making"));
    sheet.onEscape = () => {};
    /** @type {string[]} */
    let codes;
    try {
      codes = (await callAccount("/api/account/recovery-codes", { body: {}, token: account.token })).codes;
    } catch (err) {
      sheet.onEscape = () => sheet.close('[data-testid="account-link"]');
      sheet.step(t("acct.codes.title"), [
        h("p", {}, t("acct.codes.made", { handle: account.handle })),
        h("p", { class: "error", role: "alert", "data-testid": "acct-error" }, problemText(err)),
        h("p", {}, t("acct.codes.later")),
        h("div", { class: "buttons" }, button(t("acct.codes.close"), "codes-close", () => sheet.close('[data-testid="account-link"]'), "primary")),
      ]);
      return;
    }
    const copied = h("p", { class: "muted", role: "status", "data-testid": "codes-copied" });
    const check = /** @type {HTMLInputElement} */ (h("input", { type: "checkbox", id: `acct-codes-saved-${counter}`, "data-testid": "codes-saved" }));
    const close = button(t("acct.codes.close"), "codes-close", () => sheet.close('[data-testid="account-link"]'), "primary");
    close.disabled = true;
    check.addEventListener("change", () => (close.disabled = !check.checked));
    // Escape closes only once the codes are kept: otherwise it points at the box.
    sheet.onEscape = () => (check.checked ? sheet.close('[data-testid="account-link"]') : check.focus());
    const copy = async () => {
      try {
        await navigator.clipboard.writeText(codes.join("\n"));
        copied.textContent = t("acct.codes.copied");
      } catch {
        copied.textContent = t("acct.codes.copyFailed");
      }
    };
    const words = { title: t("acct.codes.fileTitle"), how: t("acct.codes.fileHow") };
    const download = () => saveTextFile("crescent-recovery-codes.txt", recoveryCodesFile({ handle: account.handle, site: location.host, codes, made: new Date(), words }));
    const list = h("ol", { class: "recovery-codes", "data-testid": "recovery-codes" }, codes.map((code) => h("li", {}, h("code", {}, code))));
    sheet.step(
      t("acct.codes.title"),
      [
        h("p", {}, t("acct.codes.made", { handle: account.handle })),
        h("p", {}, t("acct.codes.intro")),
        list,
        h("div", { class: "buttons" }, button(t("acct.codes.copy"), "codes-copy", copy), button(t("acct.codes.download"), "codes-download", download)),
        copied,
        h("label", { class: "check", for: check.id }, check, " ", t("acct.codes.savedThem")),
        h("p", { class: "howto small" }, t("acct.codes.savedFirst")),
        h("div", { class: "buttons" }, close),
      ],
    );
  }

  // --- sign in ---------------------------------------------------------------------------------

  /** @param {"choose" | "link" | "recovery"} [start] */
  signIn(start = "choose") {
    this.closeAll();
    const sheet = this.sheet("acct-signin-dialog");
    if (start === "link") this.linkStep(sheet);
    else if (start === "recovery") this.recoveryStep(sheet);
    else this.chooseStep(sheet);
  }

  /** The ways in: a passkey (a button, and the browser's autofill), a link code, a recovery code. */
  chooseStep(sheet) {
    const parts = formParts(`acct-signin-${counter}`);
    const noPasskeys = this.noPasskeysText();
    const others = h(
      "div",
      { class: "buttons" },
      button(t("acct.signin.useLink"), "acct-use-link", () => this.linkStep(sheet), noPasskeys ? "primary" : "secondary"),
      button(t("acct.signin.useRecovery"), "acct-use-recovery", () => this.recoveryStep(sheet)),
      button(t("acct.form.cancel"), "acct-cancel", () => sheet.close()),
    );
    if (noPasskeys) {
      sheet.step(t("acct.signin.title"), [h("p", { class: "notice", "data-testid": "acct-no-passkeys" }, noPasskeys), others], /** @type {HTMLElement} */ (others.firstChild));
      return;
    }
    const passkey = button(t("acct.signin.passkey"), "acct-passkey", () => this.passkeySignIn(sheet, parts), "primary");
    const autofill = textField(`acct-autofill-${counter}`, t("acct.signin.autofillLabel"), { autocomplete: "username webauthn", "data-testid": "acct-autofill" }, t("acct.signin.autofillHint"), parts.errorId);
    autofill.el.hidden = true;
    sheet.step(
      t("acct.signin.title"),
      [h("p", {}, t("acct.signin.intro")), autofill.el, parts.error, parts.status, h("div", { class: "buttons" }, passkey), h("h3", {}, t("acct.signin.otherWays")), others],
      passkey,
    );
    this.autofill(sheet, parts, autofill.el);
  }

  /**
   * The browser's passkey autofill (conditional mediation): where the browser says it can,
   * the handle field offers this site's passkeys, and choosing one signs in. It waits in
   * the background until then, and stops when the dialog moves on.
   * @param {Sheet} sheet
   * @param {ReturnType<typeof formParts>} parts
   * @param {HTMLElement} field
   */
  async autofill(sheet, parts, field) {
    const PKC = /** @type {any} */ (window.PublicKeyCredential);
    try {
      if (!PKC || !PKC.isConditionalMediationAvailable || !(await PKC.isConditionalMediationAvailable())) return;
    } catch {
      return;
    }
    if (sheet.closed || !field.isConnected) return;
    field.hidden = false;
    const waiting = new AbortController();
    sheet.conditional = waiting;
    sheet.abort.signal.addEventListener("abort", () => waiting.abort());
    let chosen = false; // a passkey was chosen in the autofill: this request is the dialog's now
    try {
      const started = await callAccount("/api/sign-in/start", { body: {} });
      if (waiting.signal.aborted) return;
      const credential = await navigator.credentials.get(/** @type {any} */ ({ publicKey: requestOptions(started.options), mediation: "conditional", signal: waiting.signal }));
      if (!credential || waiting.signal.aborted || sheet.busy) return;
      chosen = sheet.busy = true;
      parts.wait(t("acct.form.working"));
      const answer = await callAccount("/api/sign-in/finish", { body: { response: credentialJSON(credential) } });
      this.signedIn(sheet, answer);
    } catch (err) {
      if (chosen) sheet.busy = false;
      // Stopped because the player chose another way (or closed the dialog): nothing to say.
      if (waiting.signal.aborted || (err && err.name === "AbortError")) return;
      if (field.isConnected) parts.fail(problemText(err));
    }
  }

  /**
   * @param {Sheet} sheet
   * @param {ReturnType<typeof formParts>} parts
   */
  async passkeySignIn(sheet, parts) {
    if (sheet.busy) return;
    sheet.busy = true;
    // One passkey request at a time: the autofill's waiting one goes first.
    if (sheet.conditional) sheet.conditional.abort();
    try {
      parts.wait(t("acct.form.working"));
      const started = await callAccount("/api/sign-in/start", { body: {} });
      parts.wait(t("acct.form.waitGet"));
      const credential = await navigator.credentials.get({ publicKey: requestOptions(started.options), signal: sheet.abort.signal });
      parts.wait(t("acct.form.working"));
      const answer = await callAccount("/api/sign-in/finish", { body: { response: credentialJSON(credential) } });
      this.signedIn(sheet, answer);
    } catch (err) {
      sheet.busy = false;
      if (!sheet.closed) parts.fail(problemText(err));
    }
  }

  /** Signed in with a passkey: the dialog's work is done. */
  signedIn(sheet, answer) {
    sheet.busy = false;
    this.ui.applySignIn(answer);
    sheet.close('[data-testid="account-link"]');
    this.ui.app.feedback.toast(t("acct.signin.welcome", { handle: answer.handle }));
  }

  /** @param {Sheet} sheet */
  linkStep(sheet) {
    if (sheet.conditional) sheet.conditional.abort();
    const id = `acct-link-${++counter}`;
    const parts = formParts(`${id}-form`);
    const code = textField(id, t("acct.signin.linkCode"), { autocomplete: "one-time-code", autocapitalize: "characters", maxlength: 12, "data-testid": "acct-link-code" }, null, parts.errorId);
    const submit = async (/** @type {Event} */ e) => {
      e.preventDefault();
      if (sheet.busy) return;
      if (!isCode(code.input.value, 8)) return parts.fail(messageFor("error", { code: "bad_link_code" }), code.input);
      await this.codeSignIn(sheet, parts, code.input, "/api/sign-in/link-code", { code: cleanCode(code.input.value) }, "link");
    };
    this.codeStep(sheet, { title: t("acct.signin.linkTitle"), intro: t("acct.signin.linkIntro"), submitId: "acct-link-submit" }, submit, parts, [code]);
  }

  /** @param {Sheet} sheet */
  recoveryStep(sheet) {
    if (sheet.conditional) sheet.conditional.abort();
    const id = `acct-recovery-${++counter}`;
    const parts = formParts(`${id}-form`);
    const handle = textField(`${id}-handle`, t("acct.form.handle"), { autocomplete: "username", maxlength: 40, "data-testid": "acct-recovery-handle" }, null, parts.errorId);
    const code = textField(`${id}-code`, t("acct.signin.recoveryCode"), { autocomplete: "off", autocapitalize: "characters", maxlength: 16, "data-testid": "acct-recovery-code" }, t("acct.signin.recoveryCodeHint"), parts.errorId);
    const submit = async (/** @type {Event} */ e) => {
      e.preventDefault();
      if (sheet.busy) return;
      const name = handle.input.value.normalize("NFKC").trim();
      const length = handleLength(name);
      if (length < 3 || length > 20) return parts.fail(messageFor("error", { code: "bad_handle" }), handle.input);
      if (!isCode(code.input.value, 10)) return parts.fail(messageFor("error", { code: "bad_recovery_code" }), code.input);
      await this.codeSignIn(sheet, parts, code.input, "/api/sign-in/recovery", { handle: name, code: cleanCode(code.input.value) }, "recovery");
    };
    this.codeStep(sheet, { title: t("acct.signin.recoveryTitle"), intro: t("acct.signin.recoveryIntro"), submitId: "acct-recovery-submit" }, submit, parts, [handle, code]);
  }

  /**
   * The form of a code sign-in step: its intro, fields, error and status, back and submit;
   * the first field's input takes the focus.
   * @param {Sheet} sheet
   * @param {{ title: string, intro: string, submitId: string }} texts
   * @param {(e: Event) => Promise<void>} submit
   * @param {ReturnType<typeof formParts>} parts
   * @param {ReturnType<typeof textField>[]} fields
   */
  codeStep(sheet, texts, submit, parts, fields) {
    const back = button(t("acct.signin.back"), "acct-back", () => this.chooseStep(sheet));
    const send = button(t("acct.signin.submit"), texts.submitId, null, "primary", "submit");
    const form = h("form", { novalidate: true, onsubmit: submit }, h("p", {}, texts.intro), ...fields.map((f) => f.el), parts.error, parts.status, h("div", { class: "buttons" }, back, send));
    sheet.step(texts.title, [form], fields[0].input);
  }

  /**
   * A link code or a recovery code: sign in, then offer this device its own passkey.
   * @param {Sheet} sheet
   * @param {ReturnType<typeof formParts>} parts
   * @param {HTMLInputElement} field
   * @param {string} path
   * @param {object} body
   * @param {"link" | "recovery"} how
   */
  async codeSignIn(sheet, parts, field, path, body, how) {
    sheet.busy = true;
    parts.wait(t("acct.form.working"));
    let answer;
    try {
      answer = await callAccount(path, { body });
    } catch (err) {
      sheet.busy = false;
      if (sheet.closed) return;
      const onCode = err instanceof AccountError && /code/.test(err.code);
      parts.fail(problemText(err), onCode ? field : null);
      if (!onCode) sheet.title.focus({ preventScroll: true });
      return;
    }
    sheet.busy = false;
    this.ui.applySignIn(answer);
    this.afterCodeStep(sheet, answer, how);
  }

  /**
   * Signed in by a code: say so, and offer a passkey on this device (next time it signs
   * in by itself); after a recovery code, that the code is used up.
   * @param {Sheet} sheet
   * @param {{token: string, handle: string}} answer
   * @param {"link" | "recovery"} how
   */
  afterCodeStep(sheet, answer, how) {
    const parts = formParts(`acct-after-${++counter}`);
    const canAdd = this.ui.support() === "ok";
    const done = button(t(canAdd ? "acct.signin.notNow" : "acct.form.done"), "acct-done", () => sheet.close('[data-testid="account-link"]'), canAdd ? "secondary" : "primary");
    const add = canAdd ? button(t("acct.signin.addPasskey"), "acct-add-passkey", () => this.addPasskey(sheet, parts), "primary") : null;
    sheet.onEscape = () => sheet.close('[data-testid="account-link"]');
    sheet.step(
      t("acct.signin.doneTitle"),
      [
        h("p", { "data-testid": "acct-signed-in" }, t("acct.signin.as", { handle: answer.handle })),
        how === "recovery" ? h("p", {}, t("acct.signin.recoveryUsed")) : null,
        canAdd ? h("p", {}, t("acct.signin.addPasskeyOffer")) : null,
        parts.error,
        parts.status,
        h("div", { class: "buttons" }, done, add),
      ],
      add || done,
    );
  }

  /**
   * A passkey for this device, on an account signed in by a code.
   * @param {Sheet} sheet
   * @param {ReturnType<typeof formParts>} parts
   */
  async addPasskey(sheet, parts) {
    if (sheet.busy) return;
    sheet.busy = true;
    try {
      await addPasskey({ token: load("token"), signal: sheet.abort.signal, onStep: (step) => parts.wait(t(step === "create" ? "acct.form.waitCreate" : "acct.form.working")) });
    } catch (err) {
      sheet.busy = false;
      if (!sheet.closed) parts.fail(addPasskeyProblem(err));
      return;
    }
    sheet.busy = false;
    const close = button(t("acct.form.done"), "acct-done", () => sheet.close('[data-testid="account-link"]'), "primary");
    sheet.step(t("acct.signin.doneTitle"), [h("p", { "data-testid": "acct-passkey-added" }, t("acct.signin.passkeyAdded")), h("div", { class: "buttons" }, close)], close);
  }

  // --- signed out ------------------------------------------------------------------------------

  /**
   * This device was signed out (4011, or a refused hello): say so in plain words and
   * offer the ways on. Escape leaves the choice to the banner.
   * @param {string} code
   */
  signedOut(code) {
    this.closeAll();
    const sheet = this.sheet("acct-signed-out");
    const handle = this.ui.handle;
    const text = code === "sign_in_required" ? t("acct.out.guest") : handle ? t("acct.out.revoked", { handle }) : t("acct.out.revokedAnon");
    const signIn = button(t("acct.signin.button"), "acct-signed-out-signin", () => this.signIn(), "primary");
    sheet.step(
      t("acct.out.title"),
      [h("p", {}, text), h("div", { class: "buttons" }, button(t("acct.out.newGuest"), "acct-new-guest", () => this.ui.playAsNewGuest()), signIn)],
      signIn,
    );
  }
}
