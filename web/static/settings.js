// Settings: a new gateway key is shown once, here, and nowhere else.
"use strict";
(() => {
  window.bw.handlers.keyMade = (data, form) => {
    document.getElementById("new-key-value").textContent = data.key;
    document.getElementById("new-key-shown").hidden = false;
    form.elements.name.value = "";
  };
})();
// Settings: a job's times go to the scheduler as {"times": {job: "HH:MM, ..."}}; empty is its default (null).
(() => {
  window.bw.handlers.schedulerTimes = (body) => {
    body.times = { [body.job]: body.at ? body.at : null };
    delete body.job;
    delete body.at;
  };
})();
