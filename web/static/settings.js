// Settings: a new gateway key is shown once, here, and nowhere else.
"use strict";
(() => {
  window.bw.handlers.keyMade = (data, form) => {
    document.getElementById("new-key-value").textContent = data.key;
    document.getElementById("new-key-shown").hidden = false;
    form.elements.name.value = "";
  };
})();
