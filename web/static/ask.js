// Ask: POST /api/ask answers with server-sent events (panel, seat..., merged, done); each seat's
// section is added the moment its event arrives, its answer as markdown (static/markdown.js), with its
// verdict form (static/verdict.js: POST /api/verdict) and a link to the panel's own page.
"use strict";
(() => {
  const bw = window.bw;
  const { el } = bw;
  const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
  const MAX_TEXT = 2_000_000;
  let chosen = [];

  const readFile = (file) => new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onerror = () => reject(new Error(`could not read ${file.name}`));
    if (IMAGE_TYPES.has(file.type)) {
      reader.onload = () => resolve({ name: file.name, image: reader.result });
      reader.readAsDataURL(file);
    } else {
      if (file.size > MAX_TEXT) { reject(new Error(`${file.name} is over 2 MB of text`)); return; }
      reader.onload = () => {
        if (String(reader.result).includes("\u0000")) reject(new Error(`${file.name} is neither text nor a PNG, JPEG, GIF or WebP image`));
        else resolve({ name: file.name, text: reader.result });
      };
      reader.readAsText(file);
    }
  });

  const showFiles = () => {
    const list = document.getElementById("ask-file-list");
    list.replaceChildren(...chosen.map((f) => el("li", { text: `${f.name} (${Math.max(1, Math.round(f.size / 1024))} KB)` })));
  };

  // ---- one seat: its answer (bw.markdown) and its verdict form (bw.verdictForm, static/verdict.js) ----
  const seatSection = (seat, title) => {
    const id = `seat-${seat.call.replace(/[^A-Za-z0-9_-]/g, "_")}`;
    const ok = seat.status === "ok";
    const answered = seat.status === "ok" || seat.status === "empty";
    const body = ok ? seat.answer : seat.status === "empty"
      ? "Empty reply: usually the model's token budget ran out (a reasoning model spent it thinking)."
      : `Error: ${seat.error || seat.status}`;
    return el("section", { class: `seat${title ? " merged" : ""}`, "aria-labelledby": `${id}-h`, id, "data-call": seat.call },
      el("h3", { id: `${id}-h`, text: `${title || seat.seat} · ${seat.alias}` }),
      el("p", { class: "meta" },
        el("code", { text: seat.call }),
        el("span", { class: `chip ${ok ? "ok" : answered ? "warn" : "err"}`, text: seat.status }),
        el("span", { text: `${seat.seconds.toFixed(1)} s` }),
        seat.tokens_out ? el("span", { text: `${seat.tokens_in} in / ${seat.tokens_out} out tokens` }) : null,
        seat.simulated ? el("span", { class: "chip", text: "simulated" }) : null),
      ok ? el("div", { class: "answer md" }, bw.markdown(body)) : el("div", { class: "answer err", text: body }),
      answered ? bw.verdictForm(seat.call) : null);
  };

  // ---- the panel as it arrives ----
  const state = { waiting: new Map() };

  const showWaiting = () => {
    const names = [...state.waiting.values()];
    document.getElementById("panel-waiting").textContent = names.length ? `Waiting for ${names.join(", ")}…` : "";
  };

  const on = {
    panel(data) {
      const panel = document.getElementById("panel");
      panel.hidden = false;
      document.getElementById("panel-heading").replaceChildren(
        el("a", { href: `/panels/${encodeURIComponent(data.panel)}`, text: `Panel ${data.panel}` }), ` · ${data.collection}`);
      const skipped = (data.skipped || []).map((s) => `${s.alias} (${s.why})`).join("; ");
      document.getElementById("panel-meta").textContent =
        `${data.seats.length} seat${data.seats.length === 1 ? "" : "s"}, explorer shape ${data.shape} (${data.shape_by}), ` +
        `${data.reply === "merged" ? "merged reply" : "every answer"}${skipped ? ` · not asked: ${skipped}` : ""}`;
      state.waiting = new Map(data.seats.map((s) => [s.key, `${s.seat} · ${s.alias}`]));
      showWaiting();
    },
    seat(data) {
      if (data.key === "merger") return; // the merged event carries it
      state.waiting.delete(data.key);
      showWaiting();
      document.getElementById("seats").append(seatSection(data));
    },
    merged(data) {
      const slot = document.getElementById("merged-slot");
      if (data.answer !== null && data.merger) slot.replaceChildren(seatSection(data.merger, "merged answer"));
      else slot.replaceChildren(el("p", { class: "hint", text: `No merged answer: ${data.note}. Every answer is below.` }));
    },
    done(data) {
      const usage = data.usage || {};
      document.getElementById("ask-status").textContent =
        `Done: ${usage.input_tokens || 0} tokens in, ${usage.output_tokens || 0} out.`;
    },
    error(data) { bw.showError(document.getElementById("ask-form"), data.message); },
  };

  const readEvents = async (response) => {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let event = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).trim());
        }
        if (data.length && on[event]) on[event](JSON.parse(data.join("\n")));
      }
    }
  };

  const ask = async (form) => {
    const button = document.getElementById("ask-button");
    const status = document.getElementById("ask-status");
    bw.showError(form, "");
    const prompt = form.elements.prompt.value.trim();
    if (!prompt) { bw.showError(form, "Write a prompt first."); form.elements.prompt.focus(); return; }
    button.disabled = true;
    status.textContent = "Asking…";
    try {
      const files = await Promise.all(chosen.map(readFile));
      const body = { collection: form.elements.collection.value, prompt, files };
      if (form.elements.merged.checked) body.reply = "merged";
      document.getElementById("seats").replaceChildren();
      document.getElementById("merged-slot").replaceChildren();
      const response = await fetch("/api/ask", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" }, body: JSON.stringify(body),
      });
      if (!response.ok) {
        let message = `${response.status} ${response.statusText}`;
        try { message = (await response.json()).error.message; } catch { /* not JSON */ }
        if (response.status === 401) location.assign("/login?next=/ask");
        throw new Error(message);
      }
      status.textContent = "Seats are answering…";
      await readEvents(response);
    } catch (error) {
      bw.showError(form, error.message);
      status.textContent = "";
    } finally {
      button.disabled = false;
    }
  };

  document.addEventListener("DOMContentLoaded", () => {
    const form = document.getElementById("ask-form");
    if (!form) return;
    form.addEventListener("submit", (event) => { event.preventDefault(); ask(form); });
    form.elements.prompt.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); ask(form); }
    });
    document.getElementById("ask-files").addEventListener("change", (event) => {
      chosen = [...event.target.files];
      showFiles();
    });
  });
})();
