// To judge, from the keyboard alone. The keys are the ones the page shows (#judge-keys: each
// <kbd data-action> rendered from benchwarmers_mcp/judge_keys.py's table, which bench judge reads
// too), never a list of this file's own: this file knows the actions only.
// A seat is a focusable section (.judge-seat); Useful and Not useful send its verdict form (the one
// every judging page uses: static/verdict.js) and move at once to the panel's next seat still owed,
// and after its last to the next panel (five presses a five-seat panel, six with next panel's).
"use strict";
(() => {
  const seats = () => [...document.querySelectorAll(".judge-seat")];
  const panels = () => [...document.querySelectorAll(".judge-panel")].filter((p) => p.querySelector(".judge-seat"));
  const current = () => document.querySelector(".judge-seat.current") || seats()[0] || null;
  const say = (text) => { const s = document.getElementById("judge-status"); if (s) s.textContent = text; };

  const show = (seat, focus = true) => {
    if (!seat) return;
    for (const other of document.querySelectorAll(".judge-seat.current")) other.classList.remove("current");
    seat.classList.add("current");
    if (!focus) return;
    seat.focus({ preventScroll: true });
    seat.scrollIntoView({ block: "nearest" });
  };

  const step = (by) => {
    const all = seats();
    const at = all.indexOf(current());
    show(all[Math.min(all.length - 1, Math.max(0, at + by))]);
  };

  const open = (seat) => !seat.dataset.sent;
  const nextOwed = (seat) => {
    const mine = [...seat.closest(".judge-panel").querySelectorAll(".judge-seat")];
    const at = mine.indexOf(seat);
    return [...mine.slice(at + 1), ...mine.slice(0, at)].find(open) || null;
  };

  const nextPanel = (from = current()) => {
    const all = panels();
    const at = from ? all.indexOf(from.closest(".judge-panel")) : -1;
    const panel = all[at + 1];
    if (!panel) { say("No more panels on this page: Older panels has the rest."); return false; }
    const mine = [...panel.querySelectorAll(".judge-seat")];
    show(mine.find(open) || mine[0]);
    return true;
  };

  const judge = (seat, useful) => {
    const form = seat.querySelector("form.verdict");
    const button = form && form.querySelector(`button[name='useful'][value='${useful}']`);
    if (!button || form.getAttribute("aria-busy") === "true") return;
    seat.dataset.sent = useful;
    form.requestSubmit(button);
    const next = nextOwed(seat);
    if (next) show(next);
    else if (nextPanel(seat)) say("That panel is judged: on to the next one.");
  };

  const ACTIONS = {
    next_seat: () => step(1),
    previous_seat: () => step(-1),
    useful: () => { const s = current(); if (s) judge(s, true); },
    not_useful: () => { const s = current(); if (s) judge(s, false); },
    note: () => {
      const s = current();
      const details = s && s.querySelector("details");
      if (!details) return;
      details.open = true;
      details.querySelector("textarea").focus();
    },
    next_panel: () => nextPanel(),
    quit: () => {  // leave the seats: the focus goes back to the page
      for (const other of document.querySelectorAll(".judge-seat.current")) other.classList.remove("current");
      document.getElementById("main").focus();
      say("Left the seats: any seat's key comes back.");
    },
    help: () => {
      const keys = document.getElementById("keys-h");
      keys.scrollIntoView({ block: "start" });
      say(document.getElementById("judge-keys").innerText.replace(/\s+/g, " ").trim());
    },
  };

  document.addEventListener("DOMContentLoaded", () => {
    const keys = new Map([...document.querySelectorAll("#judge-keys kbd[data-action]")]
      .map((k) => [k.textContent.trim(), k.dataset.action]));
    if (!keys.size) return;
    document.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
      const typing = event.target.closest && event.target.closest("input, textarea, select, [contenteditable]");
      if (typing) {
        const seat = typing.closest(".judge-seat");
        if (event.key === "Escape" && seat) { event.preventDefault(); show(seat); }
        return;
      }
      if (event.target.closest && event.target.closest("button, a, summary") && event.key === " ") return;
      const action = keys.get(event.key);
      if (!action || !ACTIONS[action]) return;
      event.preventDefault();
      ACTIONS[action]();
    });
    document.addEventListener("bw:judged", (event) => {
      const seat = event.target.closest(".judge-seat");
      if (seat) seat.dataset.judged = "";
    });
    // a verdict the server refused leaves its seat owed (its form says why), so moving on from
    // the seats before it comes back to it
    document.addEventListener("bw:failed", (event) => {
      const seat = event.target.closest(".judge-seat");
      if (seat) delete seat.dataset.sent;
    });
    document.addEventListener("click", (event) => {
      const seat = event.target.closest(".judge-seat");
      if (seat) show(seat, !event.target.closest("input, textarea, select, button, a, summary, label"));
    });
    show(current());
  });
})();
