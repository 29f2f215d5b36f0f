// The host's tools on a tournament's page: start, pause and resume rounds, open and close
// registration, remove a player, end the tournament (each asked first where it cannot be
// undone), and the registered players' list.
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { errorText } from "./tournament-model.js";

export class TournamentHostTools {
  /** @param {import("./tournament.js").TournamentTab} tab */
  constructor(tab) {
    this.tab = tab;
    this.model = tab.model;
  }

  async host(op, player = null) {
    this.model.hostError = null;
    try {
      await this.tab.app.conn.request({ t: "t_host", tournament: this.model.code, op, player });
      await this.tab.refresh(); // at once, not at the next (throttled) push
    } catch (err) {
      this.model.hostError = errorText(err);
    }
    this.tab.page.render();
  }

  async confirmHost(op, { title, text, yes, player = null }) {
    const answer = await this.tab.app.feedback.dialog({
      title,
      body: [h("p", {}, text)],
      testid: `confirm-${op}`,
      actions: [
        { label: t("game.cancel"), value: "no", kind: "ghost", testid: "confirm-no" },
        { label: yes, value: "yes", kind: "danger", testid: "confirm-yes" },
      ],
    });
    if (answer.value === "yes") await this.host(op, player);
  }

  removePlayer(row) {
    return this.confirmHost("remove", {
      title: t("t.removeConfirm", { name: row.name }),
      text: t("t.removeText"),
      yes: t("t.remove"),
      player: row.id,
    });
  }

  endTournament() {
    return this.confirmHost("end", { title: t("t.endConfirm"), text: t("t.endText"), yes: t("t.end") });
  }

  hostPanel() {
    const snap = this.model.snap;
    const cur = snap.current;
    const running = !!cur;
    const finished = snap.phase === "finished";
    const noMore = snap.round >= snap.rounds;
    const button = (testid, label, onclick, { kind = "secondary", disabled = false } = {}) =>
      h("button", { type: "button", class: kind === "gold" ? "primary gold" : kind, "data-testid": testid, disabled, onclick }, label);
    const rows = this.model.rows || [];
    const active = rows.filter((r) => r.status === "active").length;
    const withdrawn = rows.filter((r) => r.status === "withdrawn").length;
    const removed = rows.filter((r) => r.status === "removed").length;
    return h(
      "section",
      { class: "panel t-host", "data-testid": "t-host" },
      h("h2", {}, t("t.hostTitle")),
      this.model.hostError ? h("p", { class: "error", role: "alert", "data-testid": "t-host-error" }, this.model.hostError) : null,
      finished
        ? h("p", { class: "muted" }, t("t.hostFinished"))
        : [
            h(
              "div",
              { class: "buttons t-host-buttons" },
              button("t-start", noMore ? t("t.noMoreRounds") : t("t.startRound", { n: snap.round + 1 }), () => this.host("start_round"), {
                kind: "gold",
                disabled: running || snap.paused || noMore,
              }),
              // Pausing holds back the next round's start (docs/tournaments.md): it means
              // something only between two rounds, so it is offered only then.
              snap.paused
                ? button("t-resume", t("t.resume"), () => this.host("resume"), { disabled: running })
                : snap.round >= 1 && !noMore && !running
                  ? button("t-pause", t("t.pause"), () => this.host("pause"))
                  : null,
              snap.registration_open
                ? button("t-close-reg", t("t.closeRegistration"), () => this.host("close_registration"))
                : button("t-open-reg", t("t.openRegistration"), () => this.host("open_registration")),
              button("t-end", t("t.end"), () => this.endTournament(), { kind: "danger" }),
            ),
            running ? h("p", { class: "muted small" }, t("t.hostRunning")) : null,
            !this.model.isPlayer && snap.registration_open
              ? h("p", { class: "small" }, button("t-play-too", t("t.playToo"), () => this.tab.join("player"), { kind: "ghost" }))
              : null,
          ],
      h(
        "h3",
        {},
        t("t.registered"),
        " ",
        h("span", { class: "muted small", "data-testid": "t-reg-counts" }, t("t.regCounts", { a: t("t.regActive", { n: active }), w: t("t.regWithdrawn", { n: withdrawn }), r: t("t.regRemoved", { n: removed }) })),
      ),
      rows.length === 0
        ? h("p", { class: "muted small" }, t("t.nobodyYet"))
        : h(
            "ul",
            { class: "t-reg", "data-testid": "t-reg" },
            rows.map((r) =>
              h(
                "li",
                { class: `t-reg-row status-${r.status}`, "data-player": r.id },
                h("span", { class: "avatar", "aria-hidden": "true" }, (r.name || "?").slice(0, 1).toUpperCase()),
                h("span", { class: "pname", title: r.name }, r.name),
                r.id === this.model.myId ? h("span", { class: "tag you" }, t("room.you")) : null,
                r.status !== "active" ? h("span", { class: `tag ${r.status === "removed" ? "off" : ""}` }, t(`t.status.${r.status}`)) : null,
                h("span", { class: "spacer" }),
                // The host cannot remove themself (withdrawing is how a host stops playing).
                r.status === "active" && !finished && r.id !== this.model.myId
                  ? h(
                      "button",
                      { type: "button", class: "ghost small", "data-testid": "t-remove", "aria-label": t("t.removeName", { name: r.name }), onclick: () => this.removePlayer(r) },
                      t("t.remove"),
                    )
                  : null,
              ),
            ),
          ),
    );
  }
}
