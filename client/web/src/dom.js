// A tiny element builder: h("button", {class: "x", onclick: fn}, "text", child, …).
import { t } from "./i18n.js";

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value == null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "html") {
      el.innerHTML = value;
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child == null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces the children of `el`. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

/**
 * `text` (which contains `code`) with the deal code in a <code class="deal-code">: a deal
 * code is never broken across lines (its hyphens would otherwise allow it).
 */
export function withDealCode(text, code) {
  const at = text.indexOf(code);
  if (at < 0) return [text];
  return [text.slice(0, at), h("code", { class: "deal-code" }, code), text.slice(at + code.length)];
}

/** A page opened at 127.0.0.1 or localhost makes links that only work on this computer
 * (the waiting room and the tournament page both say so under their links). */
export function isLoopback(hostname) {
  return hostname === "localhost" || hostname === "[::1]" || /^127\./.test(hostname);
}

/**
 * A link to share: its read-only field and a Copy button, in a `.share` row. Copied, the
 * button says so; where the clipboard is refused, the field's text is selected instead.
 * @param {string} link
 * @param {Record<string, any>} inputAttrs
 * @param {Record<string, any>} buttonAttrs
 */
export function shareLink(link, inputAttrs, buttonAttrs) {
  const input = /** @type {HTMLInputElement} */ (h("input", { readonly: true, value: link, ...inputAttrs }));
  const copy = h(
    "button",
    {
      type: "button",
      ...buttonAttrs,
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(link);
          copy.textContent = t("room.copied");
        } catch {
          input.select();
        }
      },
    },
    t("room.copyLink"),
  );
  return h("div", { class: "share" }, input, copy);
}
