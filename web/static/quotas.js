// Quotas: the "Set a limit" form names its subject in one picker; the admin API wants
// {"connection": name} or {"model": alias} and the limit by its own name.
"use strict";
(() => {
  window.bw.handlers.limitBody = (body) => {
    const [scope, subject] = String(body.subject).split(/:(.*)/s);
    body[scope] = subject;
    body[body.limit] = body.value;
    delete body.subject;
    delete body.limit;
    delete body.value;
  };
})();
