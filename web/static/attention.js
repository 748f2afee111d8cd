// "Action needed" and the onboarding chip, on every page: after an action's form has posted, say
// what came of it (a retry that got no answer, an endpoint test) in the status line under the
// banner, which outlives the live refresh that redraws the banner itself.
"use strict";
(() => {
  const bw = window.bw;
  const said = (data, label) => {
    if (data.answered === false) {
      const probe = data.probe || (data.probes || [])[0] || {};
      return `${label}: no answer${probe.failure ? ` (${probe.failure})` : ""}${probe.detail ? `: ${probe.detail}` : ""}`;
    }
    if (data.answered === true) return `${label}: it answered${data.cleared ? "; its alert is cleared" : ""}.`;
    if (data.ok === false) return `${label}: ${data.error || "failed"}`;
    if (data.status === "running") return `${label}: started.`;
    if (Array.isArray(data.retired)) return `${label}: ${data.retired.length} retired.`;
    return `${label}: done.`;
  };
  bw.handlers.actionDone = (data, form, submitter) => {
    const box = document.getElementById("action-result");
    const button = submitter || form.querySelector("button[type=submit]");
    if (box) box.textContent = said(data || {}, button ? button.textContent.trim() : "Done");
  };
})();
