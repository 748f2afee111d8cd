// Benchwarmers dashboard: the little JavaScript every page shares. No framework, no build step.
//  - forms with data-api post their fields as JSON to the admin API (same origin only), then
//    data-then says what follows: "refresh" (live regions), "reload", "close", "go:/path" or a
//    handler registered in bw.handlers; data-confirm asks first in a <dialog>;
//  - live pages (body[data-live]) listen to /api/events (server-sent events) and, on an event of
//    their kinds, fetch themselves again and swap each [data-region] the user is not working in;
//  - table filters ([data-table] controls), dialog openers ([data-open]), copy buttons ([data-copy]).
"use strict";
(() => {
  const bw = (window.bw = { handlers: {}, kinds: new Set() });

  // ---- the admin API ----
  class ApiError extends Error {
    constructor(message, status, data) { super(message); this.status = status; this.data = data; }
  }
  bw.ApiError = ApiError;

  bw.api = async (path, body, method = "POST") => {
    const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    let data = null;
    try { data = await res.json(); } catch { data = null; }
    if (!res.ok) {
      if (res.status === 401 && path.startsWith("/api/")) {
        location.assign("/login?next=" + encodeURIComponent(location.pathname + location.search));
      }
      const message = (data && data.error && data.error.message) || `${res.status} ${res.statusText}`;
      throw new ApiError(message, res.status, data);
    }
    return data || {};
  };

  // ---- DOM helpers ----
  bw.el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined && child !== false) {
        node.append(child instanceof Node ? child : document.createTextNode(String(child)));
      }
    }
    return node;
  };

  const errorBox = (form) => {
    let box = form.querySelector(".error");
    if (!box) {
      box = bw.el("p", { class: "error", role: "alert" });
      form.append(box);
    }
    return box;
  };
  bw.showError = (form, message) => { errorBox(form).textContent = message; };

  // ---- forms as JSON ----
  const cast = (raw, type, el) => {
    const value = typeof raw === "string" && type !== "raw" ? raw.trim() : raw;
    if (value === "") {
      if (el && el.dataset.empty === "null") return null;
      if (type === "lines" || type === "csv") return [];
      return el && el.dataset.empty === "keep" ? "" : undefined;
    }
    switch (type) {
      case "int": return Number.parseInt(value, 10);
      case "bool": return value === "true" ? true : value === "false" ? false : null;
      case "lines": return value.split("\n").map((s) => s.trim()).filter(Boolean);
      case "csv": return value.split(",").map((s) => s.trim()).filter(Boolean);
      default: return value;
    }
  };

  bw.collect = (form, submitter) => {
    const out = {};
    for (const el of form.elements) {
      if (!el.name || el.disabled || el.type === "submit" || el.type === "button" || el.type === "file") continue;
      if (el.closest("[data-skip]")) continue;
      const type = el.dataset.type || "";
      if (el.type === "checkbox") {
        if (type === "list") {
          out[el.name] = out[el.name] || [];
          if (el.checked) out[el.name].push(el.value);
        } else {
          out[el.name] = el.checked;
        }
        continue;
      }
      if (el.type === "radio") {
        if (el.checked) out[el.name] = cast(el.value, type, el);
        continue;
      }
      const value = cast(el.value, type, el);
      if (value !== undefined) out[el.name] = value;
    }
    // a list left empty is left out where its boxes say so (data-empty="omit": "none ticked" means "all")
    for (const box of form.querySelectorAll("input[type=checkbox][data-empty='omit']")) {
      if (Array.isArray(out[box.name]) && !out[box.name].length) delete out[box.name];
    }
    if (submitter && submitter.name) out[submitter.name] = cast(submitter.value, submitter.dataset.type || "", submitter);
    return out;
  };

  const setBusy = (form, busy) => {
    form.setAttribute("aria-busy", busy ? "true" : "false");
    for (const button of form.querySelectorAll("button")) {
      if (busy) {
        button.dataset.wasDisabled = button.disabled ? "1" : "";
        button.disabled = true;
      } else if (button.dataset.wasDisabled !== undefined) {
        button.disabled = button.dataset.wasDisabled === "1";
        delete button.dataset.wasDisabled;
      }
    }
  };

  bw.confirm = (text, label) => new Promise((resolve) => {
    const dialog = document.getElementById("confirm-dialog");
    document.getElementById("confirm-text").textContent = text;
    document.getElementById("confirm-ok").textContent = label || "Confirm";
    dialog.returnValue = "";
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
  });

  // "go:" goes only to a page of this server: another origin (a scheme, "//host", "/\\host") is ignored.
  const go = (target) => {
    const to = new URL(target, location.href);
    if (to.origin === location.origin && target.startsWith("/")) location.assign(to.href);
  };

  const follow = async (then, data, form, submitter, body) => {
    const note = form.querySelector("[data-saved]");
    if (note) note.textContent = "Saved.";
    for (const step of then.split(/\s+/).filter(Boolean)) {
      if (step === "refresh") await bw.refresh();
      else if (step === "reload") location.reload();
      else if (step === "close") { const d = form.closest("dialog"); if (d) d.close(); }
      else if (step === "reset") form.reset();
      else if (step.startsWith("go:")) go(step.slice(3));
      else if (bw.handlers[step]) await bw.handlers[step](data, form, submitter, body);
    }
  };

  document.addEventListener("submit", async (event) => {
    const form = event.target;
    const submitter = event.submitter;
    if (!(form instanceof HTMLFormElement) || form.method === "dialog") return;
    const path = (submitter && submitter.dataset.api) || form.dataset.api;
    if (!path) return;
    event.preventDefault();
    const ask = (submitter && submitter.dataset.confirm) || form.dataset.confirm;
    if (ask && !(await bw.confirm(ask, (submitter && submitter.dataset.confirmLabel) || form.dataset.confirmLabel))) return;
    errorBox(form).textContent = "";
    const body = bw.collect(form, submitter);
    const before = (submitter && submitter.dataset.before) || form.dataset.before;
    let data;
    setBusy(form, true);
    try {
      if (before && bw.handlers[before] && (await bw.handlers[before](body, form, submitter)) === false) return;
      data = await bw.api(path, body);
    } catch (error) {
      bw.showError(form, error.message);
      return;
    } finally {
      setBusy(form, false);
    }
    try {
      await follow((submitter && submitter.dataset.then) || form.dataset.then || "refresh", data, form, submitter, body);
    } catch (error) {
      bw.showError(form, error.message);
    }
  });

  // ---- dialogs and copy buttons ----
  document.addEventListener("click", (event) => {
    const opener = event.target.closest("[data-open]");
    if (opener) {
      const dialog = document.getElementById(opener.dataset.open);
      if (dialog) { event.preventDefault(); dialog.showModal(); }
      return;
    }
    const closer = event.target.closest("[data-close]");
    if (closer) {
      event.preventDefault();
      closer.closest("dialog").close();
      return;
    }
    const copier = event.target.closest("[data-copy]");
    if (copier) {
      const source = document.getElementById(copier.dataset.copy);
      if (source && navigator.clipboard) {
        navigator.clipboard.writeText(source.textContent.trim()).then(() => { copier.textContent = "Copied"; });
      }
    }
  });

  // ---- table filters: a search box, facet selects and "show ..." checkboxes per table ----
  bw.applyFilters = (tableId) => {
    const table = document.getElementById(tableId);
    if (!table) return;
    const controls = document.querySelectorAll(`[data-table="${tableId}"]`);
    const rows = table.querySelectorAll("tbody tr[data-search]");
    let shown = 0;
    for (const row of rows) {
      let visible = true;
      for (const control of controls) {
        if (control.dataset.filter !== undefined) {
          const words = control.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
          if (words.some((w) => !row.dataset.search.includes(w))) visible = false;
        } else if (control.dataset.facet) {
          if (control.value && row.dataset[control.dataset.facet] !== control.value) visible = false;
        } else if (control.dataset.show) {
          if (!control.checked && row.dataset[control.dataset.show] === "1") visible = false;
        }
      }
      row.hidden = !visible;
      if (visible) shown += 1;
    }
    const count = document.querySelector(`[data-count="${tableId}"]`);
    if (count) count.textContent = `${shown} of ${rows.length} shown`;
  };
  const refilterAll = () => {
    const ids = new Set([...document.querySelectorAll("[data-table]")].map((c) => c.dataset.table));
    ids.forEach(bw.applyFilters);
  };
  document.addEventListener("input", (event) => {
    const control = event.target.closest("[data-table]");
    if (control) bw.applyFilters(control.dataset.table);
  });

  // ---- live regions, refreshed when the server says something happened ----
  let refreshing = null;
  let again = false;
  let timer = null;
  const waiting = new Set();

  // a region is left alone while the user types in it or has a dialog open in it
  const inUse = (region) => {
    const active = document.activeElement;
    const typing = active && region.contains(active) && active.matches("input, textarea, select, [contenteditable]");
    return typing || region.querySelector("dialog[open]");
  };

  // the same control in the new region: by id, else by its tag and text
  const twin = (region, old) => {
    if (old.id) return region.querySelector(`#${CSS.escape(old.id)}`);
    const text = old.textContent.trim();
    return [...region.querySelectorAll(old.tagName)].find((n) => n.textContent.trim() === text) || null;
  };

  bw.refresh = async () => {
    if (refreshing) { again = true; return refreshing; }
    refreshing = (async () => {
      const res = await fetch(location.href, { credentials: "same-origin", cache: "no-store", headers: { Accept: "text/html" } });
      if (res.redirected && new URL(res.url).pathname === "/login") { location.assign(res.url); return; }
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      for (const fresh of doc.querySelectorAll("[data-region]")) {
        const old = document.getElementById(fresh.id);
        if (!old) continue;
        if (inUse(old)) { waiting.add(fresh.id); continue; }
        waiting.delete(fresh.id);
        const focused = old.contains(document.activeElement) ? document.activeElement : null;
        const node = document.adoptNode(fresh);
        old.replaceWith(node);
        if (focused) { const same = twin(node, focused); if (same) same.focus(); }
      }
      refilterAll();
      document.dispatchEvent(new CustomEvent("bw:refreshed"));
    })();
    try { await refreshing; } finally {
      refreshing = null;
      if (again) { again = false; bw.schedule(); }
    }
  };
  // a burst of events is one refresh, and a busy bench at most one a second
  let last = 0;
  bw.schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => { last = Date.now(); bw.refresh(); }, Math.max(200, 1000 - (Date.now() - last)));
  };
  document.addEventListener("focusout", () => { if (waiting.size) bw.schedule(); });
  document.addEventListener("close", () => { if (waiting.size) bw.schedule(); }, true);

  const liveStatus = (state, text) => {
    const status = document.getElementById("live-status");
    if (!status || status.dataset.state === state) return;
    status.dataset.state = state;
    status.textContent = text;
  };

  const startLive = () => {
    const kinds = (document.body.dataset.live || "").split(/\s+/).filter(Boolean);
    if (!kinds.length || !window.EventSource) return;
    kinds.forEach((k) => bw.kinds.add(k));
    const source = new EventSource("/api/events?after=" + encodeURIComponent(document.body.dataset.eventsAfter || "0"));
    let lost = null;
    source.addEventListener("ready", () => { clearTimeout(lost); liveStatus("live", "Live"); });
    source.addEventListener("reset", () => { clearTimeout(lost); liveStatus("live", "Live"); bw.schedule(); });
    for (const kind of ["seat", "panel", "verdict", "change", "alert", "route", "probe", "onboarding", "scheduler", "suggestion"]) {
      source.addEventListener(kind, (message) => {
        const detail = JSON.parse(message.data);
        document.dispatchEvent(new CustomEvent("bw:event", { detail }));
        if (bw.kinds.has(kind)) bw.schedule();
      });
    }
    source.addEventListener("error", () => {
      clearTimeout(lost);
      if (source.readyState === EventSource.CLOSED) { liveStatus("lost", "Live updates stopped: reload the page"); return; }
      // the server ends each stream after a while and the browser comes straight back:
      // only a reconnection that takes longer is worth saying
      lost = setTimeout(() => liveStatus("lost", "Reconnecting to live updates…"), 3000);
    });
    addEventListener("pagehide", () => source.close());
  };

  document.addEventListener("DOMContentLoaded", () => {
    refilterAll();
    startLive();
    const focus = document.querySelector("[data-autofocus]");
    if (focus) focus.focus();
  });
})();
