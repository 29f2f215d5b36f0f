// A tournament's page, drawn from its TournamentModel: the head, this visitor's panel,
// the running round's live top 10, the podium, the standings, each round's results, the
// exports; and the live strip of the race panel while a round is on the board. Each part
// is rebuilt only when what it shows has changed.
import { h, isLoopback, mount, shareLink, withDealCode } from "./dom.js";
import { formatDuration, t } from "./i18n.js";
import { limitLabel, scoreText, topPlusMe } from "./tournament-model.js";
import { replayLink } from "./replay-page.js";

const PODIUM = 3;
const REPLAY_TRIES = 10; // asks for a finished round's archived game, 2 s apart

export class TournamentPage {
  /** @param {import("./tournament.js").TournamentTab} tab */
  constructor(tab) {
    this.tab = tab;
    this.model = tab.model;
    this.reset();
  }

  reset() {
    /** @type {HTMLElement | null} */
    this.el = null;
    /** @type {Record<string, HTMLElement>} */
    this.parts = {};
    /** @type {Record<string, string>} */
    this.keys = {};
    /** @type {Map<number, string | null>} a finished round → its archived game (null: asking, or none) */
    this.replayIds = new Map();
    /** @type {Map<number, number>} */
    this.replayTries = new Map();
  }

  // --- rendering ---------------------------------------------------------------------------

  /** The page's element (kept, and refreshed part by part as data arrives). */
  view() {
    if (!this.el) {
      this.el = h("div", { class: "tournament", "data-testid": "tournament" });
      this.parts = {};
      for (const name of ["head", "me", "live", "podium", "standings", "rounds", "exports"]) {
        this.parts[name] = h("div", { class: `t-part t-${name}` });
      }
      mount(this.el, ...Object.values(this.parts));
      this.keys = {};
    }
    this.render();
    return this.el;
  }

  /** Rebuild a part only when what it shows has changed (a button never moves under a tap). */
  part(name, key, build) {
    const el = this.parts[name];
    if (!el) return;
    const full = `${this.tab.app.language}|${key}`;
    if (this.keys[name] === full) return;
    this.keys[name] = full;
    mount(el, build());
  }

  render() {
    if (!this.el) return;
    const snap = this.model.snap;
    if (!snap) {
      this.keys = {};
      for (const el of Object.values(this.parts)) el.replaceChildren();
      mount(
        this.parts.head,
        h(
          "section",
          { class: "panel narrow" },
          this.model.error
            ? [
                h("p", { class: "error", role: "alert", "data-testid": "t-error" }, this.model.error),
                h("button", { type: "button", class: "primary", "data-testid": "to-lobby", onclick: () => this.tab.app.nav.go("/") }, t("t.toLobby")),
              ]
            : h("p", { class: "muted" }, t("net.connecting")),
        ),
      );
      return;
    }
    this.renderHead();
    this.renderMe();
    this.renderLive();
    this.renderPodium();
    this.renderStandings();
    this.renderRounds();
    this.renderExports();
  }

  renderHead() {
    const snap = this.model.snap;
    const key = JSON.stringify([snap.name, snap.phase, snap.paused, snap.registration_open, snap.round, snap.current, snap.players, snap.spectators]);
    this.part("head", key, () => {
      const link = `${location.origin}/t/${snap.code}`;
      const settings = [
        t(`variant.${snap.variant}`),
        t("t.roundsCount", { n: snap.rounds }),
        t("t.perRound", { t: limitLabel(snap.time_limit) }),
        t(`t.scoring.${snap.scoring}`),
      ].join(" · ");
      return h(
        "section",
        { class: "panel t-header" },
        h("p", { class: "code-label" }, t("t.tournament"), " ", h("b", { class: "t-code", "data-testid": "t-code" }, snap.code)),
        h("h1", { "data-testid": "t-name" }, snap.name),
        h("p", { class: "muted small" }, t("t.hostedBy", { name: snap.host ? snap.host.name : "?" }), " · ", settings),
        h(
          "p",
          { class: "t-phase" },
          h("span", { class: `chip phase-${snap.phase}`, "data-testid": "t-phase" }, this.phaseText()),
          " ",
          h("span", { class: "muted small", "data-testid": "t-counts" }, t("t.counts", { players: snap.players, n: snap.max_players, s: t("t.watchingCount", { n: snap.spectators }) })),
        ),
        snap.phase !== "finished" ? shareLink(link, { class: "link-input", "aria-label": t("t.link"), "data-testid": "t-link" }, { class: "secondary small", "data-testid": "t-copy" }) : null,
        snap.phase !== "finished" && isLoopback(location.hostname) ? h("p", { class: "muted small", "data-testid": "local-only" }, t("room.localOnly")) : null,
      );
    });
  }

  phaseText() {
    const snap = this.model.snap;
    const cur = snap.current;
    if (snap.phase === "finished") return t("t.phase.finished");
    if (cur && (snap.phase === "countdown" || snap.phase === "racing")) return t("t.phase.racing", { n: cur.round, of: snap.rounds });
    if (snap.paused) return t("t.phase.paused");
    if (snap.phase === "registration") return snap.registration_open ? t("t.phase.registration") : t("t.phase.registrationClosed");
    return t("t.phase.between", { n: snap.round, of: snap.rounds });
  }

  /** What this visitor can do: join, withdraw, the host's controls, and where the round is. */
  renderMe() {
    const snap = this.model.snap;
    const you = this.model.you || {};
    const app = this.tab.app;
    const cur = snap.current;
    const seated = !!cur && this.model.isPlayer && this.model.myStatus === "active" && this.model.notSeated !== cur.round;
    const key = JSON.stringify([
      snap.phase,
      snap.paused,
      snap.registration_open,
      snap.round,
      snap.players >= snap.max_players,
      cur && cur.round,
      you.role,
      you.row,
      you.also_player,
      this.model.myStatus,
      this.model.error,
      this.model.hostError,
      seated,
      this.model.notSeated,
      app.state.player && app.state.player.name,
      (this.model.rows || []).map((r) => [r.id, r.name, r.status]),
    ]);
    this.part("me", key, () => {
      const blocks = [];
      if (this.model.error) blocks.push(h("p", { class: "error", role: "alert", "data-testid": "t-error" }, this.model.error));
      if (this.model.isHost) blocks.push(this.tab.hostTools.hostPanel());
      if (snap.phase === "finished") {
        if (!this.model.isHost && this.model.isPlayer) blocks.push(h("section", { class: "panel t-me" }, this.youLine()));
        return blocks;
      }
      if (this.model.isPlayer || you.role === "player") blocks.push(this.playerPanel(seated));
      else if (!this.model.isHost) blocks.push(this.joinPanel());
      return blocks;
    });
  }

  youLine() {
    const row = this.model.you && this.model.you.row;
    if (!row) return null;
    return h(
      "p",
      { class: "t-you", "data-testid": "t-you" },
      row.rank != null ? t("t.yourRank", { rank: row.rank, n: this.model.snap.players }) : t(`t.status.${row.status}`),
      " · ",
      scoreText(row, this.model.snap.scoring),
    );
  }

  playerPanel(seated) {
    const snap = this.model.snap;
    const status = this.model.myStatus;
    const cur = snap.current;
    const app = this.tab.app;
    let next;
    if (status === "removed") next = t("t.youRemoved");
    else if (status === "withdrawn") next = t("t.youWithdrew");
    else if (cur && !seated) next = t("t.nextRoundYours");
    else if (cur) next = t("t.roundOn");
    else if (snap.paused) next = t("t.pausedWait");
    else if (snap.round >= snap.rounds) next = t("t.lastPlayed");
    else next = t("t.waitNext", { n: snap.round + 1, of: snap.rounds });
    return h(
      "section",
      { class: "panel t-me", "data-testid": "t-player" },
      h("h2", {}, status === "active" ? t("t.youPlay") : t(`t.status.${status || "active"}`)),
      this.youLine(),
      h("p", { class: "muted", "data-testid": "t-next" }, next),
      h(
        "div",
        { class: "buttons" },
        seated && cur && cur.room
          ? h("button", { type: "button", class: "primary gold", "data-testid": "t-to-board", onclick: () => this.tab.enterRound(cur) }, t("t.toBoard"))
          : null,
        status === "active"
          ? h("button", { type: "button", class: "ghost", "data-testid": "t-withdraw", onclick: () => this.tab.withdraw() }, t("t.withdraw"))
          : null,
        status === "withdrawn" && snap.registration_open
          ? h("button", { type: "button", class: "secondary", "data-testid": "t-join", onclick: () => this.tab.join("player") }, t("t.rejoin"))
          : null,
      ),
      app.state.notice ? h("p", { class: "notice small" }, app.state.notice) : null,
    );
  }

  joinPanel() {
    const snap = this.model.snap;
    const app = this.tab.app;
    const open = snap.registration_open;
    const full = snap.players >= snap.max_players;
    const name = h("input", {
      id: "t-join-name",
      maxlength: 24,
      autocomplete: "nickname",
      placeholder: t("lobby.namePlaceholder"),
      value: app.nav.localName(),
      "data-testid": "name",
    });
    const go = (e) => {
      e.preventDefault();
      const wanted = /** @type {HTMLInputElement} */ (name).value.trim();
      const then = () => this.tab.join("player");
      if (wanted && (!app.state.player || wanted !== app.state.player.name)) app.session.rename(wanted, then);
      else then();
    };
    return h(
      "form",
      { class: "panel t-join", onsubmit: go, "data-testid": "t-join-form" },
      h("h2", {}, t("t.joinTitle")),
      h("p", { class: "muted small" }, open ? (snap.round > 0 ? t("t.lateJoin") : t("t.joinInfo")) : t("t.closedInfo")),
      h("div", { class: "field" }, h("label", { for: "t-join-name" }, t("lobby.name")), name),
      h(
        "div",
        { class: "buttons" },
        h("button", { type: "submit", class: "primary", "data-testid": "t-join", disabled: !open || full }, t("t.joinButton")),
      ),
      full && open ? h("p", { class: "muted small" }, t("t.fullInfo")) : null,
      this.model.you && this.model.you.role === "spectator" ? h("p", { class: "muted small", "data-testid": "t-watching" }, t("t.watching")) : null,
    );
  }

  /** The running round: its clock and the live top 10 (+ me, + counts). */
  renderLive() {
    const snap = this.model.snap;
    if (!snap || !this.parts.live) return;
    const cur = snap.current;
    const live = this.model.live;
    const key = cur ? [cur.round, cur.room, live ? JSON.stringify([live.top, live.you, live.racing, live.finished]) : ""].join("|") : "none";
    this.part("live", key, () => {
      if (!cur) return null;
      return h(
        "section",
        { class: "panel t-live", "data-testid": "t-live" },
        h(
          "div",
          { class: "panel-head" },
          h("h2", {}, t("t.liveTitle", { n: cur.round, of: snap.rounds })),
          h("span", { class: "time-left t-clock", "data-testid": "t-clock" }, this.clockText()),
        ),
        live ? liveTable(live, this.model.myId, "t-live-table") : h("p", { class: "muted small" }, t("t.liveSoon")),
        live ? h("p", { class: "muted small", "data-testid": "t-live-counts" }, liveCounts(live)) : null,
      );
    });
  }

  clockText() {
    const cur = this.model.snap && this.model.snap.current;
    if (!cur) return "";
    const now = this.tab.app.conn.serverNow();
    if (cur.start_at && now < cur.start_at) return t("t.startsIn", { s: Math.ceil((cur.start_at - now) / 1000) });
    return t("race.timeLeft", { t: formatDuration(Math.max(0, (cur.deadline || now) - now)) });
  }

  /** Four times a second: the round's clock. */
  tick() {
    if (!this.el) return;
    const clock = this.el.querySelector(".t-clock");
    if (clock) clock.textContent = this.clockText();
  }

  renderPodium() {
    const snap = this.model.snap;
    const top = (snap.standings || []).filter((r) => r.rank != null).slice(0, PODIUM);
    const key = snap.phase === "finished" ? JSON.stringify(top) : "";
    this.part("podium", key, () => {
      if (snap.phase !== "finished") return null;
      const order = [1, 0, 2].map((i) => top[i]).filter(Boolean);
      return h(
        "section",
        { class: "panel t-final", "data-testid": "t-final" },
        h("h2", {}, t("t.finalTitle")),
        top.length === 0
          ? h("p", { class: "muted" }, t("t.noWinner"))
          : h(
              "ol",
              { class: "podium", "data-testid": "podium" },
              order.map((r) =>
                h(
                  "li",
                  { class: `podium-step p${r.rank}`, "data-testid": `podium-${r.rank}` },
                  h("span", { class: `medal m${r.rank}` }, String(r.rank)),
                  h("span", { class: "podium-name" }, r.name),
                  h("span", { class: "podium-score" }, scoreText(r, snap.scoring)),
                  h("span", { class: "podium-block", "aria-hidden": "true" }),
                ),
              ),
            ),
        snap.finished_at ? h("p", { class: "muted small" }, t("t.endedAt", { when: new Date(snap.finished_at).toLocaleString() })) : null,
      );
    });
  }

  renderStandings() {
    const snap = this.model.snap;
    const all = (this.model.showAll || snap.phase === "finished") && this.model.rows;
    const rows = all ? this.model.rows : snap.standings || [];
    const myRow = this.model.you && this.model.you.row;
    const key = JSON.stringify([rows, myRow, snap.phase, snap.round, !!all, this.model.showAll, snap.players]);
    this.part("standings", key, () => {
      const shown = [...rows];
      if (!all && myRow && !shown.some((r) => r.id === myRow.id)) shown.push(myRow);
      const provisional = !!snap.current && snap.round > 1;
      return h(
        "section",
        { class: "panel t-standings", "data-testid": "t-standings" },
        h(
          "h2",
          {},
          snap.phase === "finished" ? t("t.finalStandings") : t("t.standings"),
          provisional ? h("span", { class: "muted small" }, ` ${t("t.afterRound", { n: snap.round - 1 })}`) : null,
        ),
        shown.length === 0 ? h("p", { class: "muted small" }, t("t.nobodyYet")) : standingsTable(shown, snap.scoring, this.model.myId),
        !all && snap.players > (snap.standings || []).length
          ? h("button", { type: "button", class: "ghost small", "data-testid": "t-show-all", onclick: () => ((this.model.showAll = true), this.tab.loadRows(), this.render()) }, t("t.showAll", { n: snap.players }))
          : null,
        snap.scoring === "placement" ? h("p", { class: "muted small" }, t("t.placementHow")) : h("p", { class: "muted small" }, t("t.timeHow")),
      );
    });
  }

  renderRounds() {
    const snap = this.model.snap;
    if (!snap || !this.parts.rounds) return;
    const rounds = snap.finished_rounds || [];
    const loaded = rounds.map((r) => (this.model.results.get(r.round) ? 1 : 0)).join("");
    const key = JSON.stringify([rounds, loaded, [...this.model.openRounds], [...this.replayIds]]);
    this.part("rounds", key, () => {
      if (!rounds.length) return null;
      return h(
        "section",
        { class: "panel t-rounds", "data-testid": "t-rounds" },
        h("h2", {}, t("t.roundResults")),
        [...rounds].reverse().map((r) => {
          const details = h(
            "details",
            { class: "t-round", "data-round": r.round, "data-testid": `t-round-${r.round}`, open: this.model.openRounds.has(r.round) },
            h(
              "summary",
              {},
              h("b", {}, t("room.round", { n: r.round })),
              " · ",
              this.roundOutcome(r),
              h("span", { class: "muted small" }, ` · ${t("t.racers", { n: r.racers })}`),
            ),
            this.roundTable(r.round),
          );
          details.addEventListener("toggle", () => {
            if (details.open) {
              this.model.openRounds.add(r.round);
              this.tab.loadResults(r.round);
            } else this.model.openRounds.delete(r.round);
          });
          return details;
        }),
      );
    });
  }

  /** "won by Ada" only for a racer who finished the round: place 1 of a round nobody
   * finished (everyone resigned, stuck or out of time) won nothing. The round's results,
   * once loaded, say whether place 1 finished; before that the summary's winner is
   * trusted only when it says it finished or does not say. */
  roundOutcome(summary) {
    const res = this.model.results.get(summary.round);
    const first = res && res.rows && res.rows[0];
    const winner = res ? (first && first.finished ? first : null) : summary.winner && summary.winner.finished !== false ? summary.winner : null;
    return winner ? t("t.roundWinner", { name: winner.name }) : t("t.noRoundWinner");
  }

  /** The round's replay link, once the archive has the round (found on its deal's board:
   * the tournament's game on that deal). */
  roundReplay(round, deal) {
    if (!this.replayIds.has(round)) {
      this.replayIds.set(round, null);
      const code = this.model.snap.code;
      fetch(`/api/deals/${encodeURIComponent(deal)}/games?limit=100`)
        .then((response) => (response.ok ? response.json() : { rows: [] }))
        .then((body) => {
          const game = body.rows.find((g) => g.kind === "tournament" && g.origin === code);
          if (!game) {
            // Not archived yet (the write follows the round's end): ask again, a few times.
            const tries = (this.replayTries.get(round) || 0) + 1;
            this.replayTries.set(round, tries);
            if (tries < REPLAY_TRIES) setTimeout(() => (this.replayIds.delete(round), (this.keys.rounds = ""), this.render()), 2000);
            return;
          }
          this.replayIds.set(round, game.game);
          this.render();
        })
        .catch(() => {});
    }
    const id = this.replayIds.get(round);
    return id ? h("p", { class: "small" }, replayLink(this.tab.app, id, t("replay.watch"), "t-round-replay")) : null;
  }

  roundTable(round) {
    const res = this.model.results.get(round);
    if (!res) return h("p", { class: "muted small" }, "…");
    const scoring = this.model.snap.scoring;
    const me = this.model.myId;
    return [
      res.deal ? h("p", { class: "muted small" }, withDealCode(t("race.dealWas", { code: res.deal }), res.deal)) : null,
      res.deal ? this.roundReplay(round, res.deal) : null,
      h(
        "table",
        { class: "t-table", "data-testid": "t-results-table" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col", class: "rank" }, t("race.rank")),
            h("th", { scope: "col" }, t("race.player")),
            h("th", { scope: "col", class: "num" }, t("race.cards")),
            h("th", { scope: "col", class: "num" }, t("race.time")),
            h("th", { scope: "col", class: "num" }, scoring === "time" ? t("t.charged") : t("t.pointsCol")),
          ),
        ),
        h(
          "tbody",
          {},
          (res.rows || []).map((row) =>
            h(
              "tr",
              { class: row.id === me ? "me" : "" },
              h("td", { class: "rank" }, row.place != null ? String(row.place) : "–"),
              h("td", { class: "name-cell" }, row.name),
              h("td", { class: "num" }, `${row.foundation}/104`),
              h("td", { class: "num" }, row.finished ? formatDuration(row.time_ms) : t("t.notFinished")),
              h("td", { class: "num" }, scoring === "time" ? formatDuration(row.time_charged_ms) : String(row.points ?? 0)),
            ),
          ),
        ),
      ),
    ];
  }

  renderExports() {
    const snap = this.model.snap;
    this.part("exports", `${snap.code}|${snap.phase}|${snap.round}`, () => {
      if (snap.round === 0 && snap.phase !== "finished") return null;
      return h(
        "p",
        { class: "t-exports small" },
        t("t.export"),
        " ",
        h("a", { href: `/api/tournaments/${snap.code}.json`, download: `${snap.code}.json`, "data-testid": "t-json" }, "JSON"),
        " · ",
        h("a", { href: `/api/tournaments/${snap.code}.csv`, download: `${snap.code}.csv`, "data-testid": "t-csv" }, "CSV"),
        snap.phase === "finished" ? h("span", { class: "muted" }, ` · ${t("t.retention")}`) : null,
      );
    });
  }

  /** The race panel while this tournament's round is on the board: the live strip. */
  racePanel(el, { over, left, onToggle, expanded, showResults }) {
    const snap = this.model.snap;
    const live = this.model.live;
    const me = this.model.myId;
    const round = snap && snap.current ? snap.current.round : snap ? snap.round : 0;
    const top = live ? live.top || [] : [];
    const mine = live && live.you;
    // The strip: the leaders and me (phones); the list: top 10, me, and the counts.
    const strip = topPlusMe(top.slice(0, 3), mine, me);
    el.classList.toggle("expanded", expanded);
    mount(
      el,
      h(
        "div",
        { class: "panel-head" },
        h("h2", {}, snap ? t("t.roundShort", { n: round, of: snap.rounds }) : t("race.progress")),
        left != null ? h("span", { class: "time-left", "data-testid": "time-left" }, t("race.timeLeft", { t: formatDuration(left) })) : null,
        h(
          "ol",
          { class: "standings", "aria-hidden": "true", "data-testid": "t-strip" },
          strip.map((r) =>
            h(
              "li",
              { class: `standing ${r.id === me ? "me" : ""} ${r.finished ? "status-won" : ""}` },
              h("span", { class: "standing-rank" }, `#${r.place}`),
              h("span", { class: "standing-name", title: r.name }, r.name),
              h("b", { class: "standing-home", title: t("strip.cardsHome", { n: r.foundation }) }, t("race.foundation", { n: r.foundation })),
              r.finished ? h("span", { class: "dot won" }) : null,
            ),
          ),
        ),
        h(
          "button",
          { type: "button", class: "panel-toggle", "aria-expanded": expanded ? "true" : "false", "aria-label": t("race.showAll"), "data-testid": "panel-toggle", onclick: onToggle },
          h("span", { "aria-hidden": "true" }, expanded ? "▴" : "▾"),
        ),
      ),
      h(
        "div",
        { class: "panel-details" },
        snap ? h("p", { class: "muted small" }, snap.name) : null,
        live ? liveTable(live, me, "t-race-live") : h("p", { class: "muted small" }, t("t.liveSoon")),
        live ? h("p", { class: "muted small" }, liveCounts(live)) : null,
      ),
      over ? showResults : null,
    );
  }
}

/** "3 racing · 1 finished", each count with its own plural. */
function liveCounts(live) {
  return t("t.liveCounts", { r: t("t.liveRacing", { n: live.racing }), f: t("t.liveFinished", { n: live.finished }) });
}

function liveTable(live, me, testid) {
  const rows = topPlusMe(live.top, live.you, me);
  return h(
    "table",
    { class: "t-table t-live-rows", "data-testid": testid },
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          { class: `${r.id === me ? "me" : ""} ${r.finished ? "done" : ""}`, "data-player": r.id },
          h("td", { class: "rank" }, String(r.place)),
          h("td", { class: "name-cell", title: r.name }, r.name),
          h("td", { class: "num", "data-testid": "live-cards" }, `${r.foundation}/104`),
          h("td", { class: "num", "data-testid": "live-moves" }, t("daily.moves", { n: r.moves })),
          h("td", { class: "num" }, r.finished ? formatDuration(r.time_ms) : "…"),
        ),
      ),
    ),
  );
}

function standingsTable(rows, scoring, me) {
  return h(
    "table",
    { class: "t-table", "data-testid": "t-standings-table" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col", class: "rank" }, t("race.rank")),
        h("th", { scope: "col" }, t("race.player")),
        h("th", { scope: "col", class: "num" }, scoring === "time" ? t("t.totalTime") : t("t.pointsCol")),
        h("th", { scope: "col", class: "num", title: t("t.roundsWonLong") }, t("t.roundsWon")),
        h("th", { scope: "col", class: "num", title: t("t.playedLong") }, t("t.played")),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          { class: `${r.id === me ? "me" : ""} status-${r.status}`, "data-player": r.id },
          h("td", { class: "rank" }, r.rank != null ? String(r.rank) : "–"),
          h("td", { class: "name-cell" }, r.name, r.status !== "active" ? h("span", { class: "tag" }, t(`t.status.${r.status}`)) : null),
          h("td", { class: "num", "data-testid": "t-score" }, scoring === "time" ? (r.total_ms != null ? formatDuration(r.total_ms) : "–") : String(r.points ?? 0)),
          h("td", { class: "num" }, String(r.rounds_won ?? 0)),
          h("td", { class: "num" }, String(r.rounds_played ?? 0)),
        ),
      ),
    ),
  );
}

