/* Times shown in UTC or the browser's zone, switchable (the top bar's button; remembered
   in localStorage). Every element with data-ms (epoch ms) is written in the chosen zone;
   elements added later (panels reloaded by script) too; scripts that write times call
   window.conductorTime.format(ms) and redraw on the document's "conductor:timezone" event. */
(function () {
  "use strict";
  var KEY = "conductor-web.tz";
  function zone() { try { return localStorage.getItem(KEY) === "local" ? "local" : "utc"; } catch (e) { return "utc"; } }
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function fmt(ms, z) {
    var d = new Date(ms);
    if (z === "utc") {
      return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " +
        pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds());
    }
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }
  function zoneName(z) {
    if (z === "utc") { return "UTC"; }
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || "local"; } catch (e) { return "local"; }
  }
  function apply(root) {
    var z = zone();
    (root || document).querySelectorAll("[data-ms]").forEach(function (el) {
      var ms = parseInt(el.getAttribute("data-ms"), 10);
      if (!ms || ms <= 0) { return; }
      var text = fmt(ms, z);
      if (el.classList.contains("when-ms")) {  // a table cell: date and clock each on one line
        var parts = text.split(" ");
        el.innerHTML = '<span class="nowrap">' + parts[0] + '</span> <span class="nowrap">' + parts[1] + "</span>";
      } else {
        el.textContent = text;
      }
      el.title = fmt(ms, z === "utc" ? "local" : "utc") + " " + zoneName(z === "utc" ? "local" : "utc");
    });
    document.querySelectorAll(".tz-toggle").forEach(function (b) {
      b.textContent = "Times: " + zoneName(z);
      b.setAttribute("aria-pressed", z === "local" ? "true" : "false");
      b.dataset.zone = z;
    });
  }
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest ? ev.target.closest(".tz-toggle") : null;
    if (!b) { return; }
    try { localStorage.setItem(KEY, zone() === "utc" ? "local" : "utc"); } catch (e) { /* private mode: this page only */ }
    apply();
    document.dispatchEvent(new CustomEvent("conductor:timezone", { detail: { zone: zone() } }));
  });
  new MutationObserver(function (records) {
    records.forEach(function (r) { r.addedNodes.forEach(function (n) { if (n.querySelectorAll) { apply(n); } }); });
  }).observe(document.documentElement, { childList: true, subtree: true });
  // format(ms): the time in the chosen zone, for pages that write times from script (execution.js)
  window.conductorTime = { apply: apply, zone: zone, format: function (ms) { return fmt(ms, zone()); } };
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", function () { apply(); }); }
  else { apply(); }
})();
