// The page's side of accounts (docs/accounts.md, docs/browser.md "Accounts"): whether the
// server keeps accounts and which name its passkeys are for, who is signed in on this
// device (the handle beside the token), the top bar's entry, the lobby's panel, taking a
// sign-in's token (the socket says hello again with it: no reload), and this device being
// signed out (close 4011, or a hello refused with session_revoked or sign_in_required).
// The dialogs themselves are in account-dialogs.js.
import { AccountDialogs } from "./account-dialogs.js";
import { callAccount, passkeySupport } from "./account-api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { load, save } from "./storage.js";

/** Where the account page is (built apart: the /me page). */
export const ACCOUNT_PATH = "/me";

export class AccountUi {
  /** @param {import("./app.js").App} app */
  constructor(app) {
    this.app = app;
    /** @type {{rpId: string} | false | null} null: not known yet; false: no accounts here */
    this.config = null;
    this.loading = false;
    /** @type {string | null} why this device is signed out (a hello code), or null */
    this.signedOut = null;
    this.dialogs = new AccountDialogs(this);
    /** @type {HTMLElement | null} */
    this.rootEl = null;
  }

  /** Ask the server once whether it keeps accounts, and its passkeys' name. */
  async loadConfig() {
    if (this.config !== null || this.loading) return;
    this.loading = true;
    try {
      const answer = await callAccount("/api/account/config");
      this.config = { rpId: String(answer.rp_id || "") };
    } catch (err) {
      // accounts_off: no database. No answer: asked again at the next welcome.
      if (err.code !== "network" && err.code !== "internal_error") this.config = false;
    } finally {
      this.loading = false;
    }
    this.app.render();
  }

  /** Does this server keep accounts? */
  get on() {
    return !!this.config;
  }

  /** The handle this device is signed in as, or null (a guest). */
  get handle() {
    return load("handle");
  }

  /** Can this page make and use passkeys: `ok` or why not (account-api.js passkeySupport). */
  support() {
    return passkeySupport({
      secure: !!window.isSecureContext,
      webauthn: typeof window.PublicKeyCredential === "function" && !!navigator.credentials,
      hostname: location.hostname,
      rpId: this.config ? this.config.rpId : null,
    });
  }

  /** Where the dialogs go: after the page's own modal root (both can be open at once). */
  root() {
    if (!this.rootEl || !this.rootEl.isConnected) {
      this.rootEl = h("div", { class: "account-root" });
      this.app.root.append(this.rootEl);
    }
    return this.rootEl;
  }

  /** What a rebuild of the lobby depends on. */
  get key() {
    return [this.on, this.handle, this.signedOut].join(":");
  }

  // --- what the page shows -------------------------------------------------------------------

  /** Does the top bar show this device's handle (instead of the player's name)? */
  get showsHandle() {
    return this.on && !!this.handle && !this.signedOut;
  }

  /** The top bar's entry: the handle (a link to the account page), or a guest's way in. */
  topbarItem() {
    if (!this.on) return null;
    const handle = this.handle;
    if (this.showsHandle) {
      return h(
        "a",
        {
          class: "acct-handle",
          href: ACCOUNT_PATH,
          "aria-label": t("acct.top.yourAccount", { handle }),
          title: t("acct.top.yourAccount", { handle }),
          "data-testid": "account-link",
          onclick: (/** @type {MouseEvent} */ e) => (e.preventDefault(), this.app.nav.go(ACCOUNT_PATH)),
        },
        handle,
      );
    }
    if (this.signedOut) {
      return h("button", { type: "button", class: "secondary acct-top", "data-testid": "acct-signin-top", onclick: () => this.dialogs.signIn() }, t("acct.signin.button"));
    }
    return h("button", { type: "button", class: "secondary acct-top", "data-testid": "acct-save-top", onclick: () => this.dialogs.save() }, t("acct.save.top"));
  }

  /** The lobby's lines about this player's progress: save it, sign in, or who is signed in. */
  lobbyPanel() {
    if (!this.on) return null;
    const handle = this.handle;
    if (this.showsHandle) {
      return h(
        "div",
        { class: "acct-panel", "data-testid": "acct-panel" },
        h("h2", { class: "alone-title" }, t("acct.panel.title")),
        h("p", { class: "howto" }, t("acct.panel.signedIn", { handle })),
        h("p", {}, h("a", { href: ACCOUNT_PATH, onclick: (/** @type {MouseEvent} */ e) => (e.preventDefault(), this.app.nav.go(ACCOUNT_PATH)) }, t("acct.panel.accountPage"))),
      );
    }
    return h(
      "div",
      { class: "acct-panel", "data-testid": "acct-panel" },
      h("h2", { class: "alone-title" }, t("acct.panel.title")),
      h("p", { class: "howto" }, t("acct.panel.guest")),
      h(
        "div",
        { class: "buttons" },
        h("button", { type: "button", class: "primary", "data-testid": "acct-save", onclick: () => this.dialogs.save() }, t("acct.save.button")),
        h("button", { type: "button", class: "secondary", "data-testid": "acct-signin", onclick: () => this.dialogs.signIn() }, t("acct.signin.button")),
      ),
    );
  }

  /** The banner while this device is signed out: what happened, and the two ways on. */
  bannerContent() {
    return [
      t("acct.out.banner"),
      " ",
      h("button", { type: "button", class: "link", "data-testid": "banner-signin", onclick: () => this.dialogs.signIn() }, t("acct.signin.button")),
      " · ",
      h("button", { type: "button", class: "link", "data-testid": "banner-new-guest", onclick: () => this.playAsNewGuest() }, t("acct.out.newGuest")),
    ];
  }

  // --- signing in and out ----------------------------------------------------------------------

  /**
   * A sign-in answer (account made, passkey, link code, recovery code): keep its token
   * and the handle, and say hello again with them at once, so the player, the name and
   * the daily state on the page are the account's without a reload.
   * @param {{token: string, player: {id: string, name: string}, handle: string}} answer
   */
  applySignIn(answer) {
    const app = this.app;
    save("token", answer.token);
    save("handle", answer.handle);
    // The next hello carries this name: the account's, not the guest name typed here.
    save("name", answer.player.name);
    app.session.pendingName = null;
    this.signedOut = null;
    app.state.player = answer.player;
    app.state.error = null;
    app.conn.renew();
    app.feedback.announce(t("acct.signin.welcome", { handle: answer.handle }));
    app.render();
  }

  /**
   * This device's account session is over: the server closed the socket with 4011, or
   * refused the hello (`session_revoked`; `sign_in_required`: a guest token of a player
   * who made an account since). The connection holds (no reconnecting with a dead
   * token); the player chooses: sign in again, or play on as a new guest.
   * @param {string} code
   */
  endSession(code) {
    const app = this.app;
    const first = !this.signedOut;
    this.signedOut = code;
    app.conn.hold();
    app.state.net = "signed_out";
    app.board.setBusy(false);
    app.render();
    if (first) {
      app.feedback.announce(t("acct.out.title"));
      this.dialogs.signedOut(code);
    }
  }

  /** Forget the account's token here and come back as a new guest (with the local name). */
  playAsNewGuest() {
    const handle = this.handle;
    save("token", null);
    save("handle", null);
    // The account's name was kept for its hellos; a new guest does not take it.
    if (handle && load("name") === handle) save("name", null);
    this.signedOut = null;
    this.dialogs.closeAll();
    this.app.state.player = null;
    this.app.conn.renew();
    this.app.render();
  }

  /** The saved token was refused as forged or expired: the handle goes with it. */
  forget() {
    save("handle", null);
  }
}
