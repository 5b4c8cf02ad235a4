/* Reloads the "why is it not moving?" panel of a running execution every 10 s. */
(function () {
  "use strict";
  var panel = document.getElementById("stuck-panel");
  if (!panel || panel.dataset.status !== "RUNNING") { return; }
  var url = panel.dataset.url;
  function reload() {
    fetch(url, { credentials: "same-origin" }).then(function (r) { return r.ok ? r.text() : null; }).then(function (html) {
      if (!html) { return; }
      var box = document.createElement("div");
      box.innerHTML = html;
      var fresh = box.querySelector("#stuck-panel");
      var current = document.getElementById("stuck-panel");
      if (fresh && current) { current.replaceWith(fresh); }
      if (fresh && fresh.dataset.status === "RUNNING") { setTimeout(reload, 10000); }
    }).catch(function () { setTimeout(reload, 30000); });
  }
  setTimeout(reload, 10000);
})();
