// The win celebration (cards cascading down the screen) and the optional sounds (off by
// default; the player turns them on in the top bar). Both respect the player's wishes:
// no motion with prefers-reduced-motion, no sound unless asked for.
import { cardSvg } from "./cards.js";
import { h } from "./dom.js";

export function reducedMotion() {
  return window.matchMedia("(prefers-reduced-motion: reduce)").matches;
}

const CASCADE = ["AS", "KH", "QD", "JC", "AH", "KS", "QC", "JD", "AD", "KC", "QH", "JS"];

/**
 * Cards bounce down from the foundations' row across the screen, as in the old desktop
 * patience; with reduced motion, a still fan of the four aces instead. The layer removes
 * itself after a few seconds or on a tap.
 * @param {HTMLElement} root
 */
export function celebrate(root) {
  const layer = h("div", { class: "celebration", "data-testid": "celebration", "aria-hidden": "true" });
  const still = reducedMotion();
  layer.classList.toggle("still", still);
  const width = window.innerWidth;
  const height = window.innerHeight;
  CASCADE.forEach((code, i) => {
    const card = h("span", { class: "card cascade-card", html: cardSvg(code) });
    layer.append(card);
    if (still) return;
    const x0 = width * (0.2 + 0.6 * ((i * 37) % 12) / 12);
    const dir = i % 2 ? 1 : -1;
    const frames = [];
    // A card falls, bounces a little lower each time, and drifts sideways off the screen.
    for (let step = 0; step <= 24; step++) {
      const p = step / 24;
      const x = x0 + dir * p * width * 0.7;
      const bounce = Math.abs(Math.cos(p * Math.PI * 3.5)) * (1 - p) * height * 0.75;
      const y = height * 0.92 - bounce - 60;
      frames.push({ transform: `translate(${x}px, ${y}px) rotate(${dir * p * 200}deg)` });
    }
    card.animate(frames, { duration: 2600 + i * 90, delay: i * 140, easing: "linear", fill: "both" });
  });
  const remove = () => layer.remove();
  layer.addEventListener("click", remove);
  root.append(layer);
  setTimeout(remove, still ? 2500 : 5200);
  return layer;
}

/** @type {AudioContext|null} */
let audio = null;

/**
 * A short tone (move, refusal, win) made with WebAudio: no sound files to ship.
 * @param {"move"|"refuse"|"win"|"toast"} kind
 */
export function playSound(kind) {
  try {
    audio = audio || new AudioContext();
    const notes = { move: [660], refuse: [220, 180], win: [523, 659, 784, 1047], toast: [880, 660] }[kind];
    notes.forEach((freq, i) => {
      const osc = /** @type {AudioContext} */ (audio).createOscillator();
      const gain = /** @type {AudioContext} */ (audio).createGain();
      const at = /** @type {AudioContext} */ (audio).currentTime + i * 0.11;
      osc.type = kind === "refuse" ? "square" : "triangle";
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.0001, at);
      gain.gain.exponentialRampToValueAtTime(0.12, at + 0.01);
      gain.gain.exponentialRampToValueAtTime(0.0001, at + 0.16);
      osc.connect(gain).connect(/** @type {AudioContext} */ (audio).destination);
      osc.start(at);
      osc.stop(at + 0.18);
    });
  } catch {
    /* no audio on this browser: the game is the same without */
  }
}
