// The page's own dialogs (never the browser's confirm box): a question with buttons, an
// optional "don't ask again" box, and the "How to play" page. One question at a time; Escape
// or the backdrop closes it as "no". Every dialog (these, the results, the foundation
// chooser) is modal through holdModal: the rest of the page is inert, focus moves in, Tab
// stays inside, and focus goes back where it was (found again by its identity) on close.
import { h, mount } from "./dom.js";
import { t } from "./i18n.js";

let counter = 0;

/**
 * @typedef {object} DialogAction
 * @property {string} label
 * @property {string} value      what the dialog resolves to when this button is chosen
 * @property {string} [kind]     button class: primary, gold, ghost, danger
 * @property {string} [testid]
 */

/**
 * Opens a modal dialog in `root`; resolves with the chosen action's value, or null.
 * @param {HTMLElement} root
 * @param {object} opts
 * @param {string} opts.title
 * @param {Array<Node|string|null>} opts.body
 * @param {DialogAction[]} opts.actions
 * @param {string} [opts.testid]
 * @param {string} [opts.checkbox]  label of a checkbox; its state is in `checked` of the result
 * @returns {Promise<{value: string|null, checked: boolean}>}
 */
export function openDialog(root, { title, body, actions, testid, checkbox }) {
  const titleId = `dialog-title-${++counter}`;
  return new Promise((resolve) => {
    const box = checkbox ? h("input", { type: "checkbox", id: `${titleId}-check`, "data-testid": "dont-ask" }) : null;
    /** @type {{release: (to?: string|null) => boolean}|null} */
    let modal = null;
    /** @param {string|null} value */
    const close = (value) => {
      root.replaceChildren();
      if (modal) modal.release();
      resolve({ value, checked: !!(box && /** @type {HTMLInputElement} */ (box).checked) });
    };
    const buttons = actions.map((action) =>
      h(
        "button",
        {
          type: "button",
          class: action.kind === "gold" ? "primary gold" : action.kind || "secondary",
          "data-testid": action.testid,
          onclick: () => close(action.value),
        },
        action.label,
      ),
    );
    const dialog = h(
      "section",
      { class: "dialog modal", role: "dialog", "aria-modal": "true", "aria-labelledby": titleId, "data-testid": testid || "dialog" },
      h("h2", { id: titleId }, title),
      h("div", { class: "dialog-body" }, body),
      box ? h("label", { class: "check", for: box.id }, box, " ", checkbox) : null,
      h("div", { class: "buttons" }, buttons),
    );
    const backdrop = h("div", { class: "overlay modal-backdrop" }, dialog);
    backdrop.addEventListener("click", (event) => {
      if (event.target === backdrop) close(null);
    });
    mount(root, backdrop);
    const primary = buttons.find((b) => !b.classList.contains("ghost")) || buttons[0];
    // Escape is always safe here: it answers "no" (nothing happens).
    modal = holdModal(dialog, { onEscape: () => close(null), focus: primary });
  });
}

/** The rules in short, for a newcomer: what to do, how to move, the race. */
export function howToPlayBody() {
  const section = (/** @type {string} */ key) => [h("h3", {}, t(`help.${key}Title`)), h("p", {}, t(`help.${key}`))];
  return [
    ...section("goal"),
    ...section("moves"),
    ...section("redeal"),
    ...section("input"),
    ...section("keys"),
    ...section("race"),
    ...section("alone"),
  ];
}

// --- modality ---------------------------------------------------------------------------------

/** The open modal dialogs, the newest last (a question can open over the results). */
/** @type {Array<{dialog: HTMLElement}>} */
const held = [];

/** A stable name for a focusable element (the board is redrawn after every move, the HUD
 * after every ack): its place or its test id, so focus can go back to its successor. */
export function focusIdentity(el) {
  if (!el || !(el instanceof HTMLElement)) return null;
  if (el.dataset.place) return `[data-place="${el.dataset.place}"]`;
  if (el.dataset.testid) return `[data-testid="${el.dataset.testid}"]`;
  if (el.id) return `#${CSS.escape(el.id)}`;
  return null;
}

/** Focus the element now carrying `identity`, if it is there and can take focus. */
export function focusByIdentity(identity) {
  if (!identity) return false;
  const el = /** @type {HTMLElement|null} */ (document.querySelector(identity));
  if (!el || el.closest("[inert]")) return false;
  el.focus({ preventScroll: true });
  return document.activeElement === el;
}

/** The focusable parts of a dialog, in order. */
function focusables(dialog) {
  return /** @type {HTMLElement[]} */ (
    [...dialog.querySelectorAll("button, input, select, textarea, a[href], [tabindex]")].filter(
      (el) => !(/** @type {any} */ (el).disabled) && el.getAttribute("tabindex") !== "-1" && el.getClientRects().length > 0,
    )
  );
}

/**
 * Make `dialog` (already in the page) modal: everything else on the page is inert (no
 * focus, no clicks, hidden from screen readers) except the live regions, focus moves in,
 * Tab and Shift+Tab wrap inside, Escape calls `onEscape` (if given). `release()` undoes it
 * and puts focus back where it was before (by identity: that element may have been
 * redrawn meanwhile); it returns whether it could.
 * @param {HTMLElement} dialog
 * @param {{onEscape?: () => void, focus?: HTMLElement|null}} [opts]
 */
export function holdModal(dialog, { onEscape, focus } = {}) {
  dialog.setAttribute("role", "dialog");
  dialog.setAttribute("aria-modal", "true");
  const returnTo = focusIdentity(/** @type {HTMLElement} */ (document.activeElement));
  /** @type {HTMLElement[]} */
  const inerted = [];
  /** @type {HTMLElement[]} */
  const revived = [];
  // Every sibling of the dialog and of each of its ancestors, up to <body>, goes inert;
  // an ancestor an earlier dialog made inert (a question over the results) comes back.
  for (let el = dialog; el && el !== document.body; el = /** @type {HTMLElement} */ (el.parentElement)) {
    if (el.inert) {
      el.inert = false;
      revived.push(el);
    }
    const parent = el.parentElement;
    if (!parent) break;
    for (const sibling of parent.children) {
      if (sibling === el || !(sibling instanceof HTMLElement) || sibling.inert) continue;
      if (sibling.matches("[aria-live], [role=alert], [role=status], script")) continue;
      sibling.inert = true;
      inerted.push(sibling);
    }
  }
  /** @param {KeyboardEvent} event */
  const onKey = (event) => {
    if (held[held.length - 1]?.dialog !== dialog) return;
    if (event.key === "Escape" && onEscape) {
      event.preventDefault();
      event.stopPropagation();
      onEscape();
    } else if (event.key === "Tab") {
      const items = focusables(dialog);
      if (!items.length) return event.preventDefault();
      const first = items[0];
      const last = items[items.length - 1];
      const inside = dialog.contains(document.activeElement);
      if (event.shiftKey && (document.activeElement === first || !inside)) {
        event.preventDefault();
        last.focus();
      } else if (!event.shiftKey && (document.activeElement === last || !inside)) {
        event.preventDefault();
        first.focus();
      }
    }
  };
  document.addEventListener("keydown", onKey, true);
  held.push({ dialog });
  const target = focus || focusables(dialog)[0];
  if (target) target.focus({ preventScroll: true });
  let released = false;
  return {
    /** @param {string|null} [to]  where focus goes instead of where it was */
    release(to) {
      if (released) return false;
      released = true;
      const at = held.findIndex((entry) => entry.dialog === dialog);
      if (at >= 0) held.splice(at, 1);
      document.removeEventListener("keydown", onKey, true);
      for (const el of inerted) el.inert = false;
      for (const el of revived) el.inert = true;
      return focusByIdentity(to || returnTo) || (!!to && focusByIdentity(returnTo));
    },
    returnTo,
  };
}

/** Is a modal dialog open (keys meant for the board wait)? */
export function modalOpen() {
  return held.length > 0;
}
