// Discover: say what "Add" did (queued for onboarding, or registered at once); the row itself then
// shows it waiting in the queue or on the bench, by a refresh.
"use strict";
(() => {
  window.bw.handlers.discoverAdded = (data) => {
    const said = document.getElementById("discover-said");
    const how = `${data.served} on ${data.endpoint}, ${data.via}`;
    if (data.queued) {
      const mode = (data.item && data.item.mode) || "full";
      said.textContent = `Queued ${how} (${mode}) from ${data.entry}: it is checked, registered with the catalog's facts`
        + ` and probed${mode === "full" ? ", then run through the suite" : ""}. bench onboarding follows it.`;
    } else {
      said.textContent = `Registered ${(data.model || {}).alias} (${how}) from ${data.entry}.`;
    }
    if (data.note) said.textContent += ` ${data.note}.`;
  };
})();
