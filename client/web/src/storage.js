// What the page remembers in localStorage (the token, the name, choices).
const STORAGE = {
  token: "crescent.token",
  handle: "crescent.handle", // the account this device is signed in to (beside its token)
  name: "crescent.name",
  lang: "crescent.lang",
  sound: "crescent.sound",
  noRedealConfirm: "crescent.noRedealConfirm",
};

export function load(key) {
  try {
    return localStorage.getItem(STORAGE[key]);
  } catch {
    return null;
  }
}

export function save(key, value) {
  try {
    if (value == null) localStorage.removeItem(STORAGE[key]);
    else localStorage.setItem(STORAGE[key], value);
  } catch {
    /* private mode: the page still works, it just forgets */
  }
}
