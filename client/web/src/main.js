// Entry point: pick the language, draw the card sprite, start the app.
import "./styles.css";
import { App, load } from "./app.js";
import { installCardSprite } from "./cards.js";
import { pickLanguage, setLanguage } from "./i18n.js";

setLanguage(pickLanguage(load("lang"), navigator.languages || [navigator.language]));
installCardSprite();
const app = new App(document.getElementById("app"));
// A visitor who comes by link with no name yet is asked for one before joining.
app.state.wantsName = !!app.state.roomCode && !load("name");
app.start();
// For debugging in the browser console and for the end-to-end tests' diagnostics.
/** @type {any} */ (window).crescent = app;
