// Setting up: an endpoint is tried (POST /api/endpoint/try, nothing saved) before Save is offered;
// models are registered from what the endpoints serve (POST /api/candidates).
"use strict";
(() => {
  const bw = window.bw;
  const { el } = bw;

  // ---- Test, then Save ----
  const signature = (form) => JSON.stringify(bw.collect(form));

  bw.handlers.tested = (data, form) => {
    const result = form.querySelector("[data-test-result]");
    const save = form.querySelector("[data-save]");
    result.classList.toggle("ok", Boolean(data.ok));
    result.classList.toggle("err", !data.ok);
    if (data.ok) {
      const sample = (data.sample || []).slice(0, 5).join(", ");
      result.textContent = `Answered: ${data.served} model${data.served === 1 ? "" : "s"} served` +
        (sample ? ` (${sample}${data.served > 5 ? ", …" : ""})` : "") + ` in ${data.seconds} s.`;
      if (save) save.textContent = "Save";
    } else {
      result.textContent = `No answer: ${data.error}`;
      if (save) save.textContent = "Save anyway";
    }
    if (save) {
      save.disabled = false;
      form.dataset.tested = signature(form);
    }
  };

  document.addEventListener("input", (event) => {
    const form = event.target.closest("form[data-endpoint-form]");
    if (!form || !form.dataset.tested || signature(form) === form.dataset.tested) return;
    const save = form.querySelector("[data-save]");
    save.disabled = true;
    save.textContent = "Save";
    form.querySelector("[data-test-result]").textContent = "Changed since the test: test again.";
    delete form.dataset.tested;
  });

  bw.handlers.saved = () => { location.reload(); };

  // ---- candidates: what each endpoint serves, minus what is on the bench ----
  const picked = (form) => [...form.querySelectorAll("input[name='pick']:checked")];

  const updatePicked = (form) => {
    const n = picked(form).length;
    form.querySelector("[data-register]").disabled = n === 0;
    form.querySelector("[data-picked]").textContent = n ? `${n} selected` : "none selected";
  };

  const renderCandidates = (form, data) => {
    const list = form.querySelector("[data-candidate-list]");
    list.replaceChildren();
    const groups = new Map();
    for (const c of data.candidates) {
      if (!groups.has(c.endpoint)) groups.set(c.endpoint, []);
      groups.get(c.endpoint).push(c);
    }
    const preferred = form.dataset.defaultEndpoint;
    const order = [...groups.keys()].sort((a, b) => (a === preferred ? -1 : b === preferred ? 1 : a.localeCompare(b)));
    for (const endpoint of order) {
      const items = groups.get(endpoint);
      const box = el("fieldset", { class: "candidate-group" }, el("legend", { text: `Served by ${endpoint}` }));
      for (const c of items) {
        const input = el("input", { type: "checkbox", name: "pick", value: c.served, dataset: { endpoint: c.endpoint, alias: c.suggested || "" } });
        box.append(el("label", { class: "check", dataset: { served: c.served.toLowerCase() } }, input,
          ` ${c.served} `, el("span", { class: "muted", text: `as ${c.suggested}` })));
      }
      list.append(box);
    }
    for (const e of data.errors) {
      list.append(el("p", { class: "error", text: `${e.endpoint} did not answer: ${e.error}` }));
    }
    if (!data.candidates.length && !data.errors.length) {
      list.append(el("p", { class: "empty", text: "Everything the endpoints serve is on the bench already." }));
    }
    updatePicked(form);
  };

  const loadCandidates = async (form) => {
    try {
      renderCandidates(form, await bw.api("/api/candidates", { new: true }));
    } catch (error) {
      form.querySelector("[data-candidate-list]").replaceChildren(el("p", { class: "error", text: error.message }));
    }
  };

  document.addEventListener("change", (event) => {
    const form = event.target.closest("form[data-candidates]");
    if (form && event.target.name === "pick") updatePicked(form);
  });
  document.addEventListener("input", (event) => {
    if (event.target.dataset.candidateFilter === undefined) return;
    const form = event.target.closest("form[data-candidates]");
    const word = event.target.value.trim().toLowerCase();
    for (const label of form.querySelectorAll("label[data-served]")) label.hidden = Boolean(word) && !label.dataset.served.includes(word);
  });

  // one registration per model picked; the form's own POST never goes out
  bw.handlers.registerPicked = async (body, form) => {
    const chosen = picked(form);
    const failures = [];
    for (const input of chosen) {
      try {
        await bw.api("/api/model/register", { served: input.value, endpoint: input.dataset.endpoint });
      } catch (error) {
        failures.push(`${input.value}: ${error.message}`);
      }
    }
    if (failures.length) {
      bw.showError(form, failures.join("; "));
      await loadCandidates(form);
    } else {
      location.reload();
    }
    return false;
  };

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-list-candidates]");
    if (!button) return;
    const form = button.closest("form[data-candidates]");
    form.querySelector("[data-candidate-list]").replaceChildren(
      el("p", { class: "waiting", text: "Asking each endpoint what it serves…" }));
    loadCandidates(form);
  });

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("form[data-candidates='auto']").forEach(loadCandidates);
  });
})();
