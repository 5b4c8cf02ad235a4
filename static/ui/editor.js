/* Definition editor (templates/ui/definition_edit.html): Ace (static/vendor/ace) edits the
 * JSON with syntax highlighting; every change is checked by the server (apps/ui/views.py
 * definition_check, the validation of POST /api/metadata/workflow) and Conductor's
 * validationErrors are listed with the field named and marked in the gutter; the graph
 * preview (graph.js) is redrawn from the server's elements. Save posts to definition_save:
 * a new version by default, "overwrite" only where no execution ran on the version.
 */
(function () {
  "use strict";

  var root = document.getElementById("definition-editor");
  if (!root || !window.ace) { return; }
  var kind = root.dataset.kind;
  var csrf = root.querySelector("input[name=csrfmiddlewaretoken]").value;
  var statusEl = document.getElementById("editor-status");
  var errorsEl = document.getElementById("editor-errors");
  var PREFIX = kind === "task" ? "registerTaskDef.arg0[0]" : "create.workflowDef";

  window.ace.config.set("basePath", root.dataset.aceBase);
  var editor = window.ace.edit("editor", {
    mode: "ace/mode/json", tabSize: 2, useSoftTabs: true, showPrintMargin: false, fontSize: 13,
    minLines: 20
  });
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  if (dark) { editor.setTheme("ace/theme/tomorrow_night"); }
  editor.session.setValue(document.getElementById("editor-initial").value);
  // syntax and definition errors both come from the server (one list, one set of markers)
  editor.session.setOption("useWorker", false);

  var graph = null;
  if (kind === "workflow" && window.ConductorGraph) {
    graph = new window.ConductorGraph(document.getElementById("graph"), {});
    graph.setGraph(JSON.parse(document.getElementById("graph-data").textContent));
    window.conductorGraph = graph;
  }

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  /** Where each value of the JSON text starts: {"tasks[1].name": row (0-based), ...}.
   * A small recursive reader of text that JSON.parse accepted. */
  function valueRows(text) {
    var rows = {}, i = 0, row = 0;
    function ws() {
      while (i < text.length && /\s/.test(text[i])) { if (text[i] === "\n") { row++; } i++; }
    }
    function str() {
      var start = ++i;
      while (i < text.length && text[i] !== '"') { if (text[i] === "\\") { i++; } i++; }
      var raw = text.slice(start, i); i++;
      try { return JSON.parse('"' + raw + '"'); } catch (e) { return raw; }
    }
    function value(path) {
      ws(); rows[path] = row;
      var c = text[i];
      if (c === "{") {
        i++; ws();
        if (text[i] === "}") { i++; return; }
        for (;;) {
          ws(); var keyRow = row; var key = str(); ws(); i++; // ':'
          var p = path ? path + "." + key : key;
          value(p); rows[p] = Math.min(rows[p], keyRow); ws();
          if (text[i] === ",") { i++; continue; }
          i++; return;
        }
      } else if (c === "[") {
        i++; ws();
        if (text[i] === "]") { i++; return; }
        for (var k = 0; ; k++) {
          value(path + "[" + k + "]"); ws();
          if (text[i] === ",") { i++; continue; }
          i++; return;
        }
      } else if (c === '"') {
        str();
      } else {
        while (i < text.length && /[^,\]\}\s]/.test(text[i])) { i++; }
      }
    }
    value("");
    return rows;
  }

  /** The editor row of a validationErrors path (the longest prefix found), or null. */
  function rowOf(path, rows) {
    var m = /^line (\d+), column (\d+)$/.exec(path);
    if (m) { return parseInt(m[1], 10) - 1; }
    if (!rows) { return null; }
    var p = path.indexOf(PREFIX) === 0 ? path.slice(PREFIX.length).replace(/^\./, "") : path;
    while (p) {
      if (Object.prototype.hasOwnProperty.call(rows, p)) { return rows[p]; }
      var cut = Math.max(p.lastIndexOf("."), p.lastIndexOf("["));
      p = cut > 0 ? p.slice(0, cut) : "";
    }
    return rows[""] !== undefined ? rows[""] : null;
  }

  function showErrors(message, errors, text) {
    var rows = null;
    try { JSON.parse(text); rows = valueRows(text); } catch (e) { rows = null; }
    var annotations = [];
    errorsEl.innerHTML = (message ? '<li class="error-message">' + esc(message) + "</li>" : "") + errors.map(function (e) {
      var row = rowOf(String(e.path || ""), rows);
      if (row !== null) {
        annotations.push({ row: row, column: 0, type: "error", text: (e.path || "") + ": " + e.message });
      }
      return '<li class="error"' + (row !== null ? ' data-row="' + row + '"' : "") + '><code class="path">' +
        esc(e.path || "") + "</code> " + esc(e.message || "") + (row !== null ? ' <span class="hint">(line ' + (row + 1) + ")</span>" : "") + "</li>";
    }).join("");
    editor.session.setAnnotations(annotations);
    errorsEl.querySelectorAll("li[data-row]").forEach(function (li) {
      li.onclick = function () { editor.gotoLine(parseInt(li.dataset.row, 10) + 1, 0, true); editor.focus(); };
    });
  }

  function setStatus(text, ok) {
    statusEl.textContent = text;
    statusEl.className = "badge " + (ok ? "st-COMPLETED" : "st-FAILED");
    root.dataset.valid = ok ? "1" : "0";
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(body)
    }).then(function (r) { return r.json().then(function (d) { return { status: r.status, body: d }; }); });
  }

  function updateSaveChoices(d) {
    var next = document.getElementById("next-version");
    if (next && d.nextVersion) { next.textContent = "v" + d.nextVersion; }
    var overwrite = document.getElementById("overwrite");
    if (!overwrite) { return; }
    var version = root.dataset.baseVersion;
    var hint = document.getElementById("overwrite-hint");
    overwrite.disabled = d.usedBy > 0;
    if (overwrite.disabled && overwrite.checked) {
      overwrite.checked = false;
      root.querySelector("input[value=new_version]").checked = true;
    }
    hint.textContent = d.usedBy > 0 ? "v" + version + " is used by " + d.usedBy + " execution" + (d.usedBy === 1 ? "" : "s") +
      ": it cannot be overwritten" : "no execution ran on v" + version;
  }

  /** "against vN: added a, b · changed c · removed d" under the preview. */
  function showChanges(c) {
    var el = document.getElementById("preview-changes");
    if (!el) { return; }
    var parts = [["added", c.added], ["changed", c.changed], ["removed", c.removed]].filter(function (p) { return p[1].length; });
    el.innerHTML = parts.length ? "Against v" + esc(root.dataset.baseVersion) + ": " + parts.map(function (p) {
      return '<span class="badge diff-' + p[0] + '">' + p[0] + "</span> " + p[1].map(function (r) { return "<code>" + esc(r) + "</code>"; }).join(" ");
    }).join(" · ") : "No task changed from v" + esc(root.dataset.baseVersion) + ".";
  }

  var seq = 0, timer = null;
  function check() {
    var text = editor.getValue(), mine = ++seq;
    root.dataset.checked = "0";
    var body = { text: text };
    if (root.dataset.baseName) { body.baseName = root.dataset.baseName; body.baseVersion = parseInt(root.dataset.baseVersion, 10); }
    post(root.dataset.checkUrl, body).then(function (res) {
      if (mine !== seq) { return; }  // a newer check is on its way
      var d = res.body, errors = d.validationErrors || [];
      if (res.status !== 200) {
        setStatus("invalid JSON", false);
        showErrors("", errors.length ? errors : [{ path: "", message: d.message }], text);
      } else {
        setStatus(errors.length ? errors.length + " error" + (errors.length === 1 ? "" : "s") : "valid", !errors.length);
        showErrors("", errors, text);
        if (graph && d.graph) { graph.setGraph(d.graph); }
        if (d.changes) { showChanges(d.changes); }
        if (kind === "workflow") { updateSaveChoices(d); }
      }
      root.dataset.checked = "1";
    }).catch(function () { if (mine === seq) { setStatus("could not check", false); } });
  }
  editor.session.on("change", function () {
    setStatus("checking…", false);
    clearTimeout(timer);
    timer = setTimeout(check, 300);
  });
  check();

  // leaving with unsaved changes asks first
  var savedText = editor.getValue(), leaving = false;
  window.addEventListener("beforeunload", function (ev) {
    if (!leaving && editor.getValue() !== savedText) { ev.preventDefault(); ev.returnValue = ""; }
  });

  document.getElementById("save-definition").addEventListener("click", function () {
    var picked = root.querySelector("input[name=save-mode]:checked");
    var text = editor.getValue();
    post(root.dataset.saveUrl, { text: text, mode: picked ? picked.value : "new_version", base: root.dataset.base })
      .then(function (res) {
        if (res.status === 200) { leaving = true; window.location.href = res.body.url; return; }
        setStatus("not saved", false);
        showErrors(res.body.message, res.body.validationErrors || [], text);
      })
      .catch(function () { setStatus("not saved: the server did not answer", false); });
  });

  window.conductorEditor = { editor: editor, check: check };
})();
