// The page's own dialogs (never the browser's confirm box): a question with buttons, an
// optional "don't ask again" box, and the "How to play" page. One dialog at a time; Escape
// or the backdrop closes it as "no". Focus moves into the dialog and back where it was.
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
  const previous = /** @type {HTMLElement|null} */ (document.activeElement);
  const titleId = `dialog-title-${++counter}`;
  return new Promise((resolve) => {
    const box = checkbox ? h("input", { type: "checkbox", id: `${titleId}-check`, "data-testid": "dont-ask" }) : null;
    /** @param {string|null} value */
    const close = (value) => {
      root.replaceChildren();
      document.removeEventListener("keydown", onKey, true);
      if (previous && previous.isConnected) previous.focus();
      resolve({ value, checked: !!(box && /** @type {HTMLInputElement} */ (box).checked) });
    };
    /** @param {KeyboardEvent} event */
    const onKey = (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        close(null);
      } else if (event.key === "Tab") {
        // Keep Tab inside the dialog.
        const focusable = [...dialog.querySelectorAll("button, input, a[href]")];
        const first = /** @type {HTMLElement} */ (focusable[0]);
        const last = /** @type {HTMLElement} */ (focusable[focusable.length - 1]);
        if (event.shiftKey && document.activeElement === first) {
          event.preventDefault();
          last.focus();
        } else if (!event.shiftKey && document.activeElement === last) {
          event.preventDefault();
          first.focus();
        }
      }
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
    document.addEventListener("keydown", onKey, true);
    const primary = buttons.find((b) => !b.classList.contains("ghost")) || buttons[0];
    primary.focus();
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
    ...section("race"),
    ...section("alone"),
  ];
}
