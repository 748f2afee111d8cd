// Verdicts on every page that judges (Ask, a panel, a route conversation, To judge): one form, one
// handler. The form is templates/_judging.html's verdict_form (Ask clones it from its <template>
// with bw.verdictForm); its reply sets the pressed button and says what was saved. A claim group's
// Real / False / Clear buttons ([data-claim-mark]) post to /api/claims, which marks the claim on
// every seat that made it; each of those seats' forms then holds its new real and false claims, so
// a verdict sent after it replaces nothing it did not mean to.
"use strict";
(() => {
  const bw = window.bw;
  let made = 0;

  // a fresh verdict form for a call, from the page's <template id="verdict-form">
  bw.verdictForm = (call) => {
    const n = ++made;
    const form = document.getElementById("verdict-form").content.firstElementChild.cloneNode(true);
    form.dataset.call = call;
    form.querySelector("input[name='call']").value = call;
    for (const node of form.querySelectorAll("[id]")) node.id = node.id.replace(/^tpl-/, `v${n}-`);
    for (const node of form.querySelectorAll("label[for]")) node.htmlFor = node.htmlFor.replace(/^tpl-/, `v${n}-`);
    return form;
  };

  const formsOf = (call) => [...document.querySelectorAll("form.verdict")].filter((f) => f.dataset.call === call);

  // the sidebar's count of seats owed a verdict (GET /api/inbox/count)
  bw.updateOwed = async () => {
    const badge = document.getElementById("badge-judge");
    if (!badge) return;
    try {
      const { owed } = await bw.api("/api/inbox/count", undefined, "GET");
      badge.textContent = owed ? String(owed) : "";
    } catch { /* the live refresh brings it */ }
  };

  bw.handlers.judged = (data, form, submitter) => {
    for (const button of form.querySelectorAll("button[name='useful']")) {
      button.setAttribute("aria-pressed", button === submitter ? "true" : "false");
    }
    const useful = data.recorded && data.recorded.useful;
    form.querySelector("[data-saved]").textContent =
      `Saved: ${useful ? "useful" : "not useful"}${data.written ? "" : " (unchanged)"}`;
    form.dispatchEvent(new CustomEvent("bw:judged", { bubbles: true, detail: data }));
    bw.updateOwed();
  };

  const showLists = (call, line) => {
    for (const form of formsOf(call)) {
      form.elements.real.value = (line.real || []).join("\n");
      form.elements.false.value = (line.false || []).join("\n");
    }
  };

  const showGroup = (group) => {
    for (const button of document.querySelectorAll(`[data-claim-mark][data-group="${CSS.escape(group.id)}"]`)) {
      button.setAttribute("aria-pressed", button.dataset.claimMark === group.judgement ? "true" : "false");
    }
    for (const chip of document.querySelectorAll(`[data-claim-state="${CSS.escape(group.id)}"]`)) {
      chip.textContent = group.judgement || "not marked";
      chip.className = `chip claim-state${{ false: " err", real: " ok", mixed: " warn" }[group.judgement] || ""}`;
    }
  };

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-claim-mark]");
    if (!button) return;
    event.preventDefault();
    const status = document.getElementById("claims-status");
    button.disabled = true;
    try {
      const data = await bw.api("/api/claims", { panel: button.dataset.panel, claim: button.dataset.group,
                                                   judgement: button.dataset.claimMark });
      for (const [call, line] of Object.entries(data.claim.verdicts || {})) showLists(call, line);
      showGroup(data.claim);
      if (status) {
        const seats = data.claim.seats.length;
        status.textContent = `Marked ${button.dataset.claimMark === "none" ? "unmarked" : button.dataset.claimMark} on ` +
          `${seats} seat${seats === 1 ? "" : "s"}${data.written.length ? "" : " (unchanged)"}.`;
      }
    } catch (error) {
      if (status) status.textContent = error.message;
    } finally {
      button.disabled = false;
    }
  });
})();
