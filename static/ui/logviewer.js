/* The task panel's log viewer (apps/ui/tasklogs.py): search (lines containing the text,
   matches marked), wrap, copy, download and follow-live (new lines polled from
   logs.json?after=<last line id> every 2 s while the task runs; the view keeps to the
   bottom unless the reader scrolled up). Options (search, wrap, follow) persist per page
   across the panel's re-renders. Times follow the page's zone switch when present. */
(function () {
  "use strict";
  var POLL_MS = 2000;
  var options = { search: "", wrap: true, follow: true };
  var current = null;  // the mounted viewer: {el, taskId, lines, last, timer}

  function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]; }); }
  function fmt(ms) {
    if (window.conductorTime) { return window.conductorTime.formatWithZone(ms); }
    return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
  }
  function mark(text, q) {
    if (!q) { return esc(text); }
    var out = "", lower = text.toLowerCase(), at = 0, i;
    while ((i = lower.indexOf(q, at)) >= 0) { out += esc(text.slice(at, i)) + "<mark>" + esc(text.slice(i, i + q.length)) + "</mark>"; at = i + q.length; }
    return out + esc(text.slice(at));
  }
  function visible(v) {
    var q = options.search.toLowerCase();
    return v.lines.filter(function (l) { return !q || l.log.toLowerCase().indexOf(q) >= 0; });
  }
  function draw(v) {
    var pre = v.el.querySelector(".log-lines");
    var atBottom = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
    var q = options.search.toLowerCase();
    var shown = visible(v);
    pre.innerHTML = shown.map(function (l) {
      return '<span class="log-line" data-line="' + l.id + '"><time class="log-time" data-zone-suffix data-ms="' + l.createdTime + '">' + esc(fmt(l.createdTime)) + "</time>  " + mark(l.log, q) + "</span>";
    }).join("\n");
    pre.classList.toggle("nowrap-lines", !options.wrap);
    v.el.querySelector(".log-count").textContent = (q ? shown.length + " of " : "") + v.lines.length + " line" + (v.lines.length === 1 ? "" : "s") +
      (v.terminal ? "" : " · task running");
    if (options.follow && (atBottom || v.stick)) { pre.scrollTop = pre.scrollHeight; v.stick = false; }
  }
  function poll(v) {
    if (current !== v || !document.body.contains(v.el)) { stop(v); return; }
    if (!v.el.offsetParent && v.last) { schedule(v, POLL_MS, true); return; }  // panel or Logs closed: read when shown
    fetch(v.url + "?after=" + v.last, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (d) {
      if (current !== v) { return; }
      if (d.lines && d.lines.length) { v.lines = v.lines.concat(d.lines); v.last = d.last; }
      v.terminal = d.terminal;
      draw(v);
      schedule(v, d.more ? 0 : POLL_MS, d.more || !d.terminal);
    }).catch(function () { schedule(v, POLL_MS * 2, true); });
  }
  function schedule(v, ms, again) {
    stop(v);
    if (again && options.follow) { v.timer = setTimeout(function () { poll(v); }, ms); }
  }
  function stop(v) { if (v.timer) { clearTimeout(v.timer); v.timer = null; } }
  function copy(text, button) {
    function done(ok) { button.textContent = ok ? "Copied" : "Copy failed"; setTimeout(function () { button.textContent = "Copy"; }, 1500); }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(false); });
      return;
    }
    var area = document.createElement("textarea");
    area.value = text; area.setAttribute("readonly", ""); area.style.position = "fixed"; area.style.opacity = "0";
    document.body.appendChild(area); area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area); done(ok);
  }

  /** Build the viewer in ``el`` for one task: {taskId, url (logs.json), downloadUrl,
   * lines (the first lines, [{id?, log, createdTime}]), terminal}. */
  function mount(el, cfg) {
    var previous = current;
    if (previous) { stop(previous); }
    var v = { el: el, taskId: cfg.taskId, url: cfg.url, lines: [], last: 0, terminal: cfg.terminal, timer: null, stick: true };
    if (previous && previous.taskId === cfg.taskId) { v.lines = previous.lines; v.last = previous.last; }  // the panel redrawn: keep what was read
    current = v;
    el.innerHTML = '<div class="row log-tools">' +
      '<input type="search" class="log-search" placeholder="search the log" aria-label="Search the log" value="' + esc(options.search) + '">' +
      '<label class="check"><input type="checkbox" class="log-wrap"' + (options.wrap ? " checked" : "") + "> wrap</label>" +
      '<label class="check"><input type="checkbox" class="log-follow"' + (options.follow ? " checked" : "") + "> follow live</label>" +
      '<button type="button" class="log-copy">Copy</button>' +
      '<a class="button log-download" href="' + esc(cfg.downloadUrl) + '" download>Download</a>' +
      '<button type="button" class="link" data-zone-toggle>Times: UTC</button>' +
      '<span class="hint log-count"></span></div><pre class="json log-lines" tabindex="0"></pre>';
    el.querySelector(".log-search").addEventListener("input", function (ev) { options.search = ev.target.value; draw(v); });
    el.querySelector(".log-wrap").addEventListener("change", function (ev) { options.wrap = ev.target.checked; draw(v); });
    el.querySelector(".log-follow").addEventListener("change", function (ev) {
      options.follow = ev.target.checked;
      if (options.follow) { v.stick = true; poll(v); } else { stop(v); }
    });
    el.querySelector(".log-copy").addEventListener("click", function (ev) {
      copy(visible(v).map(function (l) { return fmt(l.createdTime) + "  " + l.log; }).join("\n"), ev.target);
    });
    draw(v);
    if (window.conductorTime) { window.conductorTime.apply(); }
    poll(v);  // the lines with their ids, then more while the task runs
  }
  window.ConductorLogViewer = { mount: mount };
})();
