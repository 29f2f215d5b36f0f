// Replaying an archived game (docs/replay.md) with the page's own rules: the deal
// algorithms CR1 and CR2 (docs/engine.md, "for reimplementation in any language") and
// the moves of rules.md. The replay viewer (replay-page.js) deals the game again and
// applies each racer's recorded actions; the server never sends the cards.
import { ASCENDING, DESCENDING, FOUNDATIONS, SUITS } from "./rules.js";

const RANKS = "A23456789TJQK";
const MASK64 = (1n << 64n) - 1n;
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** The 96 non-base cards in canonical order (engine.md step 1). */
export function canonicalCards() {
  const cards = [];
  for (const suit of SUITS) {
    for (let rank = 1; rank <= 13; rank++) {
      const card = RANKS[rank - 1] + suit;
      cards.push(card);
      if (rank !== 1 && rank !== 13) cards.push(card);
    }
  }
  return cards;
}

/** A deal code's parts: {version, variant, seed (BigInt)}; throws on a malformed code. */
export function parseDealCode(code) {
  const text = String(code).toUpperCase();
  let match = /^CR1-([NFOR])-([A-Z]{7})$/.exec(text);
  if (match) {
    let seed = 0n;
    for (const ch of match[2]) seed = seed * 26n + BigInt(ch.charCodeAt(0) - 65);
    return { version: 1, variant: match[1], seed };
  }
  match = /^CR2-([NFOR])-([0-9A-Z]{26})$/.exec(text);
  if (match) {
    let seed = 0n;
    for (const raw of match[2]) {
      const ch = raw === "O" ? "0" : raw === "I" || raw === "L" ? "1" : raw;
      const digit = CROCKFORD.indexOf(ch);
      if (digit < 0) throw new Error(`bad deal code ${code}`);
      seed = seed * 32n + BigInt(digit);
    }
    if (seed >= 1n << 130n) throw new Error(`bad deal code ${code}`);
    return { version: 2, variant: match[1], seed };
  }
  throw new Error(`bad deal code ${code}`);
}

/** CR1's generator: SplitMix64 seeded with seed + variant × 2^40. */
function splitMix(seed, variant) {
  let state = (seed + BigInt(variant.charCodeAt(0)) * (1n << 40n)) & MASK64;
  return () => {
    state = (state + 0x9e3779b97f4a7c15n) & MASK64;
    let z = state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
    return z ^ (z >> 31n);
  };
}

/** CR2's stream: SHA-256(key ‖ block number) in counter mode, four outputs a block. */
function sha256Stream(seed, variant) {
  const key = new Uint8Array(25);
  key.set([67, 82, 50, variant.charCodeAt(0)]); // "CR2" + variant
  let rest = seed;
  for (let i = 20; i >= 4; i--) {
    key[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  let block = 0;
  let words = [];
  return () => {
    if (!words.length) {
      key[21] = (block >>> 24) & 0xff;
      key[22] = (block >>> 16) & 0xff;
      key[23] = (block >>> 8) & 0xff;
      key[24] = block & 0xff;
      block += 1;
      const digest = sha256(key);
      words = [0, 8, 16, 24].map((at) => digest.slice(at, at + 8).reduce((acc, b) => (acc << 8n) | BigInt(b), 0n));
    }
    return /** @type {bigint} */ (words.shift());
  };
}

/** The deal's starting position: {piles: [[cards bottom→top] × 16], foundations, redeals_left}. */
export function deal(code) {
  const { version, variant, seed } = parseDealCode(code);
  const next = version === 1 ? splitMix(seed, variant) : sha256Stream(seed, variant);
  const uniform = (n) => {
    const big = BigInt(n);
    const limit = (1n << 64n) - ((1n << 64n) % big);
    for (;;) {
      const x = next();
      if (x < limit) return Number(x % big);
    }
  };
  const cards = canonicalCards();
  for (let i = 95; i >= 1; i--) {
    const j = uniform(i + 1);
    [cards[i], cards[j]] = [cards[j], cards[i]];
  }
  const piles = [];
  for (let p = 0; p < 16; p++) piles.push(cards.slice(p * 6, p * 6 + 6));
  const foundations = {};
  ASCENDING.forEach((place) => (foundations[place] = [`A${place[1].toUpperCase()}`]));
  DESCENDING.forEach((place) => (foundations[place] = [`K${place[1].toUpperCase()}`]));
  return { variant, piles, foundations, redeals_left: variant === "F" ? 4 : 3 };
}

/**
 * One racer's game replayed: the position after each of their actions. Actions are
 * applied as recorded (the server judged them when they were played): a move takes the
 * top card of its source to its target, `redeal` turns every pile of two or more over by
 * one, `undo` takes back the last move since the last redeal, `resign` ends the game.
 */
export class ReplayGame {
  constructor(code) {
    const start = deal(code);
    this.variant = start.variant;
    this.piles = start.piles;
    this.foundations = start.foundations;
    this.redealsLeft = start.redeals_left;
    this.moves = 0;
    this.history = []; // moves since the last redeal, for undo: [from, to]
    this.status = "playing";
  }

  place(name) {
    return name.startsWith("p") ? this.piles[Number(name.slice(1)) - 1] : this.foundations[name];
  }

  apply(action) {
    if (action === "resign") {
      this.status = "resigned";
    } else if (action === "redeal") {
      this.piles = this.piles.map((pile) => (pile.length >= 2 ? [...pile.slice(1), pile[0]] : pile));
      this.redealsLeft -= 1;
      this.history = [];
    } else if (action === "undo") {
      const last = this.history.pop();
      if (last) {
        const [from, to] = last;
        this.place(from).push(this.place(to).pop());
        this.moves -= 1;
      }
    } else {
      const [from, to] = action.split("-");
      const source = this.place(from);
      const target = this.place(to);
      if (!source || !target || !source.length) throw new Error(`cannot replay ${action}`);
      target.push(source.pop());
      this.moves += 1;
      this.history.push([from, to]);
      if (this.history.length > 100) this.history.shift();
      if (this.foundationCount() === 104) this.status = "won";
    }
  }

  /** Cards on the foundations, the 8 bases included (104: won). */
  foundationCount() {
    return FOUNDATIONS.reduce((sum, place) => sum + this.foundations[place].length, 0);
  }

  /** The position as the board draws it (the server's VIEW shape; every card shown). */
  view() {
    const top = (cards) => (cards.length ? cards[cards.length - 1] : null);
    const foundations = {};
    for (const place of FOUNDATIONS) foundations[place] = { n: this.foundations[place].length, top: top(this.foundations[place]) };
    return {
      piles: this.piles.map((cards) => ({ n: cards.length, top: top(cards), cards: [...cards] })),
      foundations,
      redeals_left: this.redealsLeft,
      moves: this.moves,
      status: this.status,
    };
  }
}

// --- SHA-256 (FIPS 180-4): the browser's crypto.subtle is async and missing on a page
// served over plain http from another address, so the page carries its own.
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** SHA-256 of `bytes` (a Uint8Array) as a Uint8Array of 32. */
export function sha256(bytes) {
  const bitLength = bytes.length * 8;
  const padded = new Uint8Array(Math.ceil((bytes.length + 9) / 64) * 64);
  padded.set(bytes);
  padded[bytes.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 4, bitLength >>> 0);
  view.setUint32(padded.length - 8, Math.floor(bitLength / 2 ** 32));
  const hash = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const w = new Uint32Array(64);
  const rotr = (x, n) => (x >>> n) | (x << (32 - n));
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + i * 4);
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    let [a, b, c, d, e, f, g, hh] = hash;
    for (let i = 0; i < 64; i++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    const add = [a, b, c, d, e, f, g, hh];
    for (let i = 0; i < 8; i++) hash[i] = (hash[i] + add[i]) >>> 0;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) outView.setUint32(i * 4, hash[i]);
  return out;
}
