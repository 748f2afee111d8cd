// "Sign in with ...": follows POST /api/connect/start's reply. A browser flow opens the provider's
// page (it comes back to /connect/callback, then /endpoints?signin=<id>); a device flow shows the
// code and the address to type it at, and waits on GET /api/connect/flow?wait= until it ends; a
// local one is done at once. Each ends on /endpoints?signin=<id>, which says how it went.
"use strict";
(() => {
  const bw = window.bw;
  const { el } = bw;
  const web = (address) => {
    try {
      const url = new URL(address);
      return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
    } catch { return null; }
  };
  const ended = (id) => location.assign("/endpoints?signin=" + encodeURIComponent(id));

  bw.handlers.signin = async (data, form) => {
    const status = form.querySelector("[data-signin-status]");
    const flow = data.flow || {};
    const opening = data.authorize_url && web(data.authorize_url);
    if (opening) {
      status.textContent = "Opening the provider's sign-in page…";
      location.assign(opening);
      return;
    }
    if (flow.status !== "pending" || !flow.user_code) { ended(flow.id); return; }
    const where = web(flow.verification_uri_complete || flow.verification_uri || "");
    const link = where ? el("a", { href: where, target: "_blank", rel: "noopener noreferrer" }, flow.verification_uri || where)
      : el("span", {}, flow.verification_uri || "");
    status.replaceChildren(
      el("p", {}, "Type this code at ", link, " (on any device):"),
      el("p", { class: "secret", "data-user-code": "" }, flow.user_code),
      el("p", { class: "muted" }, "Waiting for you to finish there…"));
    for (;;) {
      let now;
      try {
        now = (await bw.api(`/api/connect/flow?id=${encodeURIComponent(flow.id)}&wait=30`, undefined, "GET")).flow;
      } catch (error) {
        status.append(el("p", { class: "err" }, error.message));
        return;
      }
      if (now.status !== "pending") { ended(flow.id); return; }
    }
  };
})();
