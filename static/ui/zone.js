/* Times in UTC or the browser's zone, switchable (the choice kept in localStorage).
   Every <time data-ms="epoch ms"> is written in the zone chosen; a button with
   data-zone-toggle switches; <input type="datetime-local" data-ms-target="id"> fields
   are read in that zone into the hidden input named by data-ms-target (epoch ms). */
(function () {
  "use strict";
  var KEY = "conductor-web.zone";
  function mode() { try { return localStorage.getItem(KEY) === "local" ? "local" : "utc"; } catch (e) { return "utc"; } }
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function fmt(ms, m) {
    var d = new Date(ms);
    if (m === "utc") { return d.toISOString().replace("T", " ").slice(0, 19) + " UTC"; }
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" +
      pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + " " + (Intl.DateTimeFormat().resolvedOptions().timeZone || "local");
  }
  function toInput(ms, m) {
    var d = new Date(ms);
    if (m === "utc") { return d.toISOString().slice(0, 16); }
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T" + pad(d.getHours()) + ":" + pad(d.getMinutes());
  }
  function fromInput(value, m) {
    if (!value) { return ""; }
    var t = m === "utc" ? Date.parse(value + (value.length === 16 ? ":00" : "") + "Z") : new Date(value).getTime();
    return isNaN(t) ? "" : String(t);
  }
  function render() {
    var m = mode();
    document.querySelectorAll("time[data-ms]").forEach(function (el) {
      var ms = parseInt(el.getAttribute("data-ms"), 10);
      if (ms > 0) { el.textContent = fmt(ms, m); el.setAttribute("datetime", new Date(ms).toISOString()); }
    });
    document.querySelectorAll("[data-zone-toggle]").forEach(function (b) {
      b.textContent = m === "utc" ? "Times: UTC (switch to browser zone)" : "Times: browser zone (switch to UTC)";
    });
    document.querySelectorAll("input[data-ms-target]").forEach(function (inp) {
      var hidden = document.getElementById(inp.getAttribute("data-ms-target"));
      if (hidden && hidden.value && !inp.dataset.touched) { inp.value = toInput(parseInt(hidden.value, 10), m); }
    });
    document.querySelectorAll("[data-zone-name]").forEach(function (el) {
      el.textContent = m === "utc" ? "UTC" : (Intl.DateTimeFormat().resolvedOptions().timeZone || "browser zone");
    });
  }
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("[data-zone-toggle]");
    if (!b) { return; }
    try { localStorage.setItem(KEY, mode() === "utc" ? "local" : "utc"); } catch (e) { /* private mode */ }
    document.querySelectorAll("input[data-ms-target]").forEach(function (inp) { delete inp.dataset.touched; });
    render();
  });
  document.addEventListener("input", function (ev) {
    var inp = ev.target;
    if (!inp.matches || !inp.matches("input[data-ms-target]")) { return; }
    inp.dataset.touched = "1";
    var hidden = document.getElementById(inp.getAttribute("data-ms-target"));
    if (hidden) { hidden.value = fromInput(inp.value, mode()); }
  });
  window.conductorZone = { mode: mode, fmt: function (ms) { return fmt(ms, mode()); }, render: render };
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", render); } else { render(); }
})();
