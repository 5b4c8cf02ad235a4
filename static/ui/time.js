/* Times shown in UTC or the browser's zone, switchable, the one switch of the whole UI
   (the top bar's button .tz-toggle, or any button with data-zone-toggle; the choice kept in
   localStorage under "conductor-web.tz").
   - Every element with data-ms (epoch ms) is written in the chosen zone, also elements
     added later (panels reloaded by script); one with data-zone-suffix also names the zone.
   - <input type="datetime-local" data-ms-target="id"> is read in the chosen zone into the
     hidden input named by data-ms-target (epoch ms), and shows that input's value.
   - Elements with data-zone-name show the zone's name.
   - Scripts that write times call window.conductorTime.format(ms) and redraw on the
     document's "conductor:timezone" event; window.conductorTime.set("utc"|"local") switches. */
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
  function toInput(ms, z) {  // a datetime-local field's value (minutes)
    return fmt(ms, z).slice(0, 16).replace(" ", "T");
  }
  function fromInput(value, z) {
    if (!value) { return ""; }
    var t = z === "utc" ? Date.parse(value + (value.length === 16 ? ":00" : "") + "Z") : new Date(value).getTime();
    return isNaN(t) ? "" : String(t);
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
        el.textContent = el.hasAttribute("data-zone-suffix") ? text + " " + zoneName(z) : text;
      }
      if (el.tagName === "TIME") { el.setAttribute("datetime", new Date(ms).toISOString()); }
      el.title = fmt(ms, z === "utc" ? "local" : "utc") + " " + zoneName(z === "utc" ? "local" : "utc");
    });
    if (root && root !== document) { return; }
    document.querySelectorAll(".tz-toggle, [data-zone-toggle]").forEach(function (b) {
      b.textContent = "Times: " + zoneName(z);
      b.setAttribute("aria-pressed", z === "local" ? "true" : "false");
      b.dataset.zone = z;
    });
    document.querySelectorAll("[data-zone-name]").forEach(function (el) { el.textContent = zoneName(z); });
    document.querySelectorAll("input[data-ms-target]").forEach(function (inp) {
      var hidden = document.getElementById(inp.getAttribute("data-ms-target"));
      if (hidden && hidden.value && !inp.dataset.touched) { inp.value = toInput(parseInt(hidden.value, 10), z); }
    });
  }
  function set(z) {
    try { localStorage.setItem(KEY, z === "local" ? "local" : "utc"); } catch (e) { /* private mode: this page only */ }
    document.querySelectorAll("input[data-ms-target]").forEach(function (inp) { delete inp.dataset.touched; });
    apply();
    document.dispatchEvent(new CustomEvent("conductor:timezone", { detail: { zone: zone() } }));
  }
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest ? ev.target.closest(".tz-toggle, [data-zone-toggle]") : null;
    if (b) { set(zone() === "utc" ? "local" : "utc"); }
  });
  document.addEventListener("input", function (ev) {
    var inp = ev.target;
    if (!inp.matches || !inp.matches("input[data-ms-target]")) { return; }
    inp.dataset.touched = "1";
    var hidden = document.getElementById(inp.getAttribute("data-ms-target"));
    if (hidden) { hidden.value = fromInput(inp.value, zone()); }
  });
  new MutationObserver(function (records) {
    records.forEach(function (r) { r.addedNodes.forEach(function (n) { if (n.querySelectorAll) { apply(n); } }); });
  }).observe(document.documentElement, { childList: true, subtree: true });
  window.conductorTime = {
    apply: apply, zone: zone, set: set, zoneName: function () { return zoneName(zone()); },
    format: function (ms) { return fmt(ms, zone()); },
    // the time followed by the zone's name (the log viewer's lines)
    formatWithZone: function (ms) { return fmt(ms, zone()) + " " + zoneName(zone()); },
  };
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", function () { apply(); }); }
  else { apply(); }
})();
