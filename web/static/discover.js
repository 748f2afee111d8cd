// Discover: say what "Add" registered (the row itself then shows it on the bench, by a refresh).
"use strict";
(() => {
  window.bw.handlers.discoverAdded = (data) => {
    const said = document.getElementById("discover-said");
    const m = data.model || {};
    said.textContent = `Registered ${m.alias} (${data.served} on ${data.endpoint}, ${data.via}) from ${data.entry}.`
      + (data.note ? ` ${data.note}.` : "");
  };
})();
