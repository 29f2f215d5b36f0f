// What the board draws: a pile's and a foundation's button (its card, its count, its
// name for a screen reader, the number key that plays there while a card is picked up),
// the face-down table of the countdown, and the chooser asking which foundation takes a
// card when both of its suit do.
import { cardBackSvg, cardName, cardSvg, cardText, isRed } from "./cards.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { pileStyle } from "./board-layout.js";
import { foundationSuit } from "./rules.js";

/**
 * How the board looks at one redraw.
 * @typedef {object} Look
 * @property {string} variant  the game's variant ("O" shows the cards below the top)
 * @property {string|null} selected  the picked-up place
 * @property {Set<string>|null} targets  the places that take the picked-up card
 * @property {string[]} order  those places in the order the number keys give them
 */

/** ", choice 2" in a target's name while a card is picked up (the key that plays there). */
function choiceWords(order, place) {
  const at = order.indexOf(place);
  return at >= 0 && at < 9 ? t("kb.choice", { n: at + 1 }) : "";
}

/** The number drawn on a target while a card is picked up: the key that plays there. */
function choiceBadge(order, place) {
  const at = order.indexOf(place);
  return at >= 0 && at < 9 ? h("span", { class: "choice-key", "aria-hidden": "true" }, String(at + 1)) : null;
}

/** The classes a place has at this redraw. */
function placeClasses(place, kind, look) {
  const classes = ["place", ...kind];
  if (look.selected === place) classes.push("selected");
  if (look.targets && look.targets.has(place)) classes.push("target");
  return classes;
}

/**
 * @param {string} place  "p1" … "p16"
 * @param {{n: number, top: string|null, cards?: string[]}} pile
 * @param {Look} look
 */
export function pileButton(place, pile, look) {
  const n = pile.n;
  const count = t("game.cards", { n });
  let label = pile.top
    ? t("card.onPile", { card: cardName(pile.top), n: place.slice(1), count })
    : t("card.emptyPile", { n: place.slice(1) });
  const open = look.variant === "O" && Array.isArray(pile.cards) && pile.cards.length > 1;
  // Open Crescent shows the cards below: a screen reader hears them too, top first.
  if (open) label += `; ${pile.cards.slice(0, -1).reverse().map(cardName).join(", ")}`;
  label += choiceWords(look.order, place);
  const classes = placeClasses(place, ["pile"], look);
  if (n === 0) classes.push("is-empty");
  const depth = Math.min(Math.max(n - 1, 0), 4);
  const below = open
    ? h(
        "span",
        { class: "fan", "data-testid": "fan", "aria-hidden": "true" },
        pile.cards.slice(0, -1).map((c) => h("span", { class: `fan-card ${isRed(c) ? "red" : "black"}` }, cardText(c))),
      )
    : null;
  return h(
    "button",
    {
      type: "button",
      class: classes.join(" "),
      style: pileStyle(Number(place.slice(1))),
      "data-place": place,
      "data-top": pile.top || "",
      "data-count": n,

      "aria-pressed": look.selected === place ? "true" : "false",
    },
    // The name a screen reader says is the button's own text (not an aria-label, so the
    // card's drawn index is not "visible text missing from the name").
    h("span", { class: "sr-only" }, label),
    h(
      "span",
      { class: "slot", style: `--depth:${depth}`, "aria-hidden": "true" },
      n > 1 && look.variant !== "O" ? h("span", { class: "under" }) : null,
      pile.top ? h("span", { class: "card", html: cardSvg(pile.top) }) : h("span", { class: "empty-slot" }),
    ),
    choiceBadge(look.order, place),
    below,
    h(
      "span",
      { class: "caption", "aria-hidden": "true" },
      h("span", { class: "pile-no" }, place.slice(1)),
      h("span", { class: "count", "data-testid": "count" }, String(n)),
    ),
  );
}

/**
 * @param {string} place  "as" … "dc"
 * @param {{n: number, top: string}} state
 * @param {Look} look
 */
export function foundationButton(place, state, look) {
  const ascending = place[0] === "a";
  const suit = foundationSuit(place);
  const label = t("card.onFoundation", {
    card: cardName(state.top),
    place: t(ascending ? "game.foundationUp" : "game.foundationDown", { suit: t(`suit.${suit}`) }),
    count: t("game.cards", { n: state.n }),
  }) + choiceWords(look.order, place);
  const classes = placeClasses(place, ["foundation", ascending ? "up" : "down"], look);
  if (state.n >= 13) classes.push("complete");
  return h(
    "button",
    {
      type: "button",
      class: classes.join(" "),
      "data-place": place,
      "data-top": state.top || "",
      "data-count": state.n,

    },
    h("span", { class: "sr-only" }, label),
    h("span", { class: "slot", "aria-hidden": "true" }, state.top ? h("span", { class: "card", html: cardSvg(state.top) }) : null),
    choiceBadge(look.order, place),
    h(
      "span",
      { class: "caption", "aria-hidden": "true" },
      h("span", { class: "dir", "aria-hidden": "true" }, ascending ? "▲" : "▼"),
      h("span", { class: "count" }, String(state.n)),
    ),
  );
}

/**
 * The dialog asking which of its suit's two foundations takes `card`.
 * @param {{card: string, places: string[], tops: Record<string, string>, onChoose: (place: string) => void, onCancel: () => void}} opts
 * @returns {{el: HTMLElement, first: HTMLElement}}
 */
export function foundationChooser({ card, places, tops, onChoose, onCancel }) {
  const buttons = places.map((place) => {
    const ascending = place[0] === "a";
    return h(
      "button",
      { type: "button", class: "choice", "data-choice": place, onclick: () => onChoose(place) },
      h("span", { class: "choice-dir" }, ascending ? `▲ ${t("game.up")}` : `▼ ${t("game.down")}`),
      h("span", { class: "card mini", html: cardSvg(tops[place]) }),
    );
  });
  const el = h(
    "div",
    { class: "chooser", role: "dialog", "aria-label": t("game.which"), "data-testid": "chooser" },
    h("div", { class: "chooser-title" }, t("game.which"), " ", h("b", {}, cardText(card))),
    h("div", { class: "chooser-buttons" }, buttons),
    h("button", { type: "button", class: "ghost", onclick: onCancel }, t("game.cancel")),
  );
  return { el, first: buttons[0] };
}

/**
 * The table before the racer's own game arrives (the countdown): every pile dealt face
 * down, 6 cards each, and the eight bases, which are the same in every deal. No card of
 * the deal is shown, and nothing here can be tapped.
 */
export function dealingTable() {
  const crescent = h("div", { class: "crescent" });
  const back = cardBackSvg();
  for (let n = 1; n <= 16; n++) {
    crescent.append(
      h(
        "div",
        {
          class: "place pile dealt",
          style: `${pileStyle(n)};--deal:${n}`,
        },
        h("span", { class: "slot", style: "--depth:4" }, h("span", { class: "under" }), h("span", { class: "card", html: back })),
        h("span", { class: "caption", "aria-hidden": "true" }, h("span", { class: "pile-no" }, String(n)), h("span", { class: "count" }, "6")),
      ),
    );
  }
  const area = h("div", { class: "foundation-area" });
  for (const row of [["AS", "AH", "AD", "AC"], ["KS", "KH", "KD", "KC"]]) {
    area.append(
      h(
        "div",
        { class: "foundation-row" },
        row.map((card) => h("div", { class: `place foundation ${card[0] === "A" ? "up" : "down"}` }, h("span", { class: "slot" }, h("span", { class: "card", html: cardSvg(card) })), h("span", { class: "caption", "aria-hidden": "true" }, h("span", { class: "dir" }, card[0] === "A" ? "▲" : "▼"), h("span", { class: "count" }, "1")))),
      ),
    );
  }
  crescent.append(area);
  return h("div", { class: "table dealing", "aria-hidden": "true" }, crescent);
}
