/* Workflow graph drawn with cytoscape + the dagre layout (static/vendor).
 *
 * The server builds the elements (apps/ui/graph.py): nodes carry their runs per loop
 * scope in `iters`, loops list their iteration scopes in `scopes`. This file turns that
 * into what is shown: status colours, "N attempts" badges, dimmed paths that did not run,
 * the iteration picked for each DO_WHILE, and re-lays out only when the structure changed.
 */
(function () {
  "use strict";

  if (window.cytoscape && window.cytoscapeDagre) {
    window.cytoscape.use(window.cytoscapeDagre);
  }

  var STATUSES = JSON.parse(document.getElementById("conductor-statuses").textContent);
  var TERMINAL_WORKFLOW = STATUSES.terminalWorkflow;

  // Colours come from the page's CSS variables (static/ui/app.css), so the graph follows
  // the light or dark scheme and the status colours that pass WCAG AA with white text.
  function cssVar(name, fallback) {
    var v = window.getComputedStyle ? window.getComputedStyle(document.documentElement).getPropertyValue(name) : "";
    return (v || "").trim() || fallback;
  }
  var INK = cssVar("--ink", "#1d2330");
  var CARD = cssVar("--card", "#ffffff");
  var MUTED = cssVar("--muted", "#5d6675");
  var LINE = cssVar("--input-line", "#c6ccd6");
  var SUBTLE = cssVar("--subtle", "#f8fafc");
  var ACCENT = cssVar("--accent", "#1a5fd0");
  var OK = cssVar("--ok", "#067647"), RUN = cssVar("--run", "#175cd3"), SCHED = cssVar("--sched", "#6941c6");
  var FAIL = cssVar("--fail", "#b42318"), WARN = cssVar("--warn", "#b54708"), SKIP = cssVar("--skip", "#5d6675");
  var COLOURS = {
    COMPLETED: OK,
    COMPLETED_WITH_ERRORS: WARN,
    IN_PROGRESS: RUN,
    SCHEDULED: SCHED,
    FAILED: FAIL,
    FAILED_WITH_TERMINAL_ERROR: FAIL,
    TIMED_OUT: FAIL,
    TERMINATED: FAIL,
    CANCELED: WARN,
    SKIPPED: SKIP,
    PAUSED: WARN,
    RUNNING: RUN
  };

  function statusStyles() {
    var out = [];
    Object.keys(COLOURS).forEach(function (s) {
      out.push({
        selector: "node.st-" + s,
        style: { "background-color": COLOURS[s], "border-color": COLOURS[s], color: "#fff" }
      });
    });
    return out;
  }

  var STYLE = [
    { selector: "node", style: {
      shape: "round-rectangle", width: 210, height: "data(h)", label: "data(label)", "text-wrap": "wrap",
      "text-max-width": 196, "text-valign": "center", "text-halign": "center", "font-size": 12.5,
      "line-height": 1.25, "text-overflow-wrap": "anywhere",
      "font-family": "system-ui, sans-serif", "background-color": CARD, "border-width": 1.5,
      "border-color": MUTED, color: INK } },
    { selector: "node.kind-switch", style: { shape: "diamond", width: 170, height: 90, "text-max-width": 112 } },
    { selector: "node.kind-loop", style: { shape: "barrel", "border-width": 3, "border-style": "double" } },
    { selector: "node.kind-loopend", style: { shape: "rectangle", width: 150, height: 8, "background-color": MUTED,
      "border-width": 0, label: "" } },
    { selector: "node.kind-loopgroup", style: {
      shape: "round-rectangle", "background-color": SUBTLE, "background-opacity": 1, "border-style": "dashed",
      "border-color": MUTED, "border-width": 1.5, label: "data(label)", "text-valign": "top",
      "text-halign": "left", "text-margin-x": 8, "text-margin-y": 22, "text-justification": "left",
      "font-size": 11, color: MUTED, padding: 30 } },
    { selector: "node.kind-loopgroup.dimmed", style: { opacity: 0.5 } },
    { selector: "node.kind-sub", style: { "border-width": 4, "border-style": "double" } },
    { selector: "node.kind-terminate", style: { shape: "ellipse", width: 90, height: 90, "text-max-width": 80, "font-size": 10 } },
    { selector: "node.kind-start, node.kind-end", style: { shape: "ellipse", width: 44, height: 44, "font-size": 10,
      "background-color": SUBTLE } },
    { selector: "node.kind-dynamic", style: { shape: "round-octagon", width: 210, height: 70 } },
    { selector: "edge", style: {
      width: 2, "curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": MUTED,
      "target-arrow-color": MUTED, label: "data(label)", "font-size": 12, "text-background-color": CARD,
      "text-background-opacity": 1, "text-background-padding": 2, color: INK } },
    { selector: "edge.dimmed", style: { "line-color": LINE, "target-arrow-color": LINE, "line-style": "dashed", color: MUTED } },
    { selector: "node.dimmed", style: { opacity: 0.45 } }
  ].concat(statusStyles()).concat([
    // fork and join are bars with the label below them, on the canvas: ink, whatever the status
    { selector: "node.kind-fork, node.kind-join", style: {
      shape: "rectangle", width: 220, height: 12, "background-color": MUTED, "border-width": 0,
      "text-valign": "bottom", "text-margin-y": 4, color: INK, "font-size": 12 } },
    { selector: "node.kind-start, node.kind-end", style: { color: INK } },
    { selector: "node.kind-start.st-COMPLETED, node.kind-end.st-COMPLETED, node.kind-end.st-FAILED, node.kind-end.st-TERMINATED, node.kind-end.st-TIMED_OUT",
      style: { color: "#fff" } },
    // selection: a thick accent outline, the status colour stays readable
    { selector: "node:selected", style: { "overlay-opacity": 0, "border-width": 4, "border-color": ACCENT,
      "outline-width": 3, "outline-color": ACCENT, "outline-offset": 3 } },
    { selector: "node.kind-fork:selected, node.kind-join:selected", style: { "background-color": ACCENT } },
    // a definition diff's overlay: added and changed tasks
    { selector: "node.diff-added", style: { "border-width": 5, "border-color": OK, "border-style": "solid" } },
    { selector: "node.diff-changed", style: { "border-width": 5, "border-color": WARN, "border-style": "dashed" } },
    { selector: "node.diff-removed", style: { "border-width": 4, "border-color": FAIL, "border-style": "dotted", opacity: 0.75 } },
    { selector: "edge.diff-removed", style: { "line-style": "dashed", "line-color": FAIL, "target-arrow-color": FAIL, opacity: 0.75 } },
    { selector: "node.focused", style: { "overlay-color": ACCENT, "overlay-opacity": 0.18, "overlay-padding": 8 } }
  ]);

  /** A task node's height for its label: the lines it wraps to at ~7 px a character in a
   * 196 px line, so a long reference and its task name never overlap or spill out. */
  function labelHeight(label) {
    var lines = 0;
    String(label || "").split("\n").forEach(function (line) { lines += Math.max(1, Math.ceil(line.length * 7 / 196)); });
    return Math.max(64, lines * 16 + 26);
  }

  function scopeKey(scope) {
    return (scope || "").split("__").filter(Boolean).map(function (p) { return parseInt(p, 10) || 0; });
  }

  function iterationLabel(scope) {
    var parts = scopeKey(scope);
    return parts.length ? parts[parts.length - 1] : 0;
  }

  /** ConductorGraph(container, {onSelect(nodeView), workflowStatus}) */
  function ConductorGraph(container, opts) {
    this.opts = opts || {};
    this.container = container;
    this.graph = null;
    this.nodes = {};
    this.edges = {};
    this.selectedScope = {};
    this.workflowStatus = this.opts.workflowStatus || null;
    // the wheel scrolls the page; Ctrl/⌘ + wheel (or the +/− buttons and keys) zooms
    this.cy = window.cytoscape({
      container: container, style: STYLE, elements: [], minZoom: 0.05, maxZoom: 3,
      boxSelectionEnabled: false, autoungrabify: true, userZoomingEnabled: false
    });
    var self = this;
    container.addEventListener("wheel", function (ev) {
      if (!(ev.ctrlKey || ev.metaKey)) { return; }
      ev.preventDefault();
      var rect = container.getBoundingClientRect();
      self.zoomBy(ev.deltaY < 0 ? 1.15 : 1 / 1.15, { x: ev.clientX - rect.left, y: ev.clientY - rect.top });
    }, { passive: false });
    this.keyboard(container);
    this.cy.on("tap", "node", function (evt) {
      var id = evt.target.id();
      var data = self.nodes[id];
      if (!data) { return; }
      if (data.kind === "loopgroup" || data.kind === "loopend") { data = self.nodes[data.ref]; }
      if (data && self.opts.onSelect) { self.opts.onSelect(self.view(data.id)); }
    });
  }

  ConductorGraph.prototype.setWorkflowStatus = function (status) {
    this.workflowStatus = status;
  };

  /** Replace the whole graph (layout again). */
  ConductorGraph.prototype.setGraph = function (graph) {
    var self = this;
    this.graph = graph;
    this.nodes = {};
    this.edges = {};
    graph.nodes.forEach(function (n) { self.nodes[n.id] = n; });
    graph.edges.forEach(function (e) { self.edges[e.id] = e; });
    var elements = [];
    // parents first: cytoscape needs a compound parent before its children
    var ordered = graph.nodes.slice().sort(function (a, b) {
      return (a.kind === "loopgroup" ? 0 : 1) - (b.kind === "loopgroup" ? 0 : 1);
    });
    ordered.forEach(function (n) {
      var v = self.view(n.id);
      var data = { id: n.id, label: v.label, h: labelHeight(v.label) };
      if (n.parent) { data.parent = n.parent; }
      data.status = v.status;
      elements.push({ group: "nodes", data: data, classes: v.classes });
    });
    graph.edges.forEach(function (e) {
      elements.push({ group: "edges", data: { id: e.id, source: e.source, target: e.target, label: e.label || "" },
        classes: (self.edgeExecuted(e) ? "" : "dimmed") + (e.diff ? " diff-" + e.diff : "") });
    });
    this.cy.batch(function () {
      self.cy.elements().remove();
      self.cy.add(elements);
    });
    // edges out of a fork or a switch weigh more, so every branch starts on the row right
    // below it (dagre's ranker otherwise pulls a short branch down next to the join)
    this.cy.layout({ name: "dagre", rankDir: "TB", nodeSep: 30, rankSep: 36, edgeSep: 10, padding: 20,
      animate: false, fit: true,
      edgeWeight: function (edge) {
        var source = self.nodes[edge.data("source")];
        return source && ["fork", "switch", "dynamic"].indexOf(source.kind) >= 0 ? 20 : 1;
      } }).run();
    this.readable();
  };

  /** Zoom so labels stay readable: at most 1.2, at least 0.7 (then show the top of the
   * graph; "Fit" shows it all). */
  ConductorGraph.prototype.readable = function () {
    var cy = this.cy;
    if (cy.zoom() > 1.2) { cy.zoom(1.2); cy.center(); }
    if (cy.zoom() < 0.7) {
      var bb = cy.elements().boundingBox();
      cy.zoom(0.7);
      cy.pan({ x: cy.width() / 2 - (bb.x1 + bb.w / 2) * 0.7, y: 20 - bb.y1 * 0.7 });
    }
  };

  /** Merge changed node/edge data (same structure) and refresh the view. */
  ConductorGraph.prototype.update = function (nodes, edges) {
    var self = this;
    Object.keys(nodes || {}).forEach(function (id) { self.nodes[id] = nodes[id]; });
    Object.keys(edges || {}).forEach(function (id) { self.edges[id] = edges[id]; });
    if (this.graph) {
      this.graph.nodes = this.graph.nodes.map(function (n) { return self.nodes[n.id] || n; });
      this.graph.edges = this.graph.edges.map(function (e) { return self.edges[e.id] || e; });
    }
    this.refresh();
  };

  /** Recompute statuses, labels and dimming for every element. */
  ConductorGraph.prototype.refresh = function () {
    var self = this;
    this.cy.batch(function () {
      Object.keys(self.nodes).forEach(function (id) {
        var el = self.cy.getElementById(id);
        if (!el || el.empty()) { return; }
        var v = self.view(id);
        el.data("label", v.label);
        el.data("h", labelHeight(v.label));
        el.data("status", v.status);
        el.classes(v.classes);
      });
      Object.keys(self.edges).forEach(function (id) {
        var el = self.cy.getElementById(id);
        if (!el || el.empty()) { return; }
        el.classes(self.edgeExecuted(self.edges[id]) ? "" : "dimmed");
      });
    });
    if (this.focusedId) { this.cy.getElementById(this.focusedId).addClass("focused"); }
  };

  /** Scopes of a loop that belong to the iteration shown for its own enclosing loop. */
  ConductorGraph.prototype.scopesOf = function (loopId) {
    var loop = this.nodes[loopId];
    if (!loop) { return []; }
    var outer = loop.loop ? this.scopeOf(loop.loop) : "";
    return (loop.scopes || []).filter(function (s) { return !outer || s.indexOf(outer + "__") === 0; });
  };

  /** The scope shown for nodes of `loopId`: the picked one, else the latest. */
  ConductorGraph.prototype.scopeOf = function (loopId) {
    if (!loopId) { return ""; }
    var scopes = this.scopesOf(loopId);
    var picked = this.selectedScope[loopId];
    if (picked && scopes.indexOf(picked) >= 0) { return picked; }
    return scopes.length ? scopes[scopes.length - 1] : "";
  };

  ConductorGraph.prototype.selectScope = function (loopId, scope) {
    this.selectedScope[loopId] = scope;
    this.refresh();
  };

  /** What a node shows now: status, attempts (for the shown iteration), label, classes. */
  ConductorGraph.prototype.view = function (id) {
    var n = this.nodes[id];
    var preview = this.graph && this.graph.preview;
    var status = null, attempts = [], executed = true, label = n.title || "";
    if (n.kind === "loopgroup" || n.kind === "loopend") {
      var loopView = this.view(n.ref);
      status = n.kind === "loopgroup" ? null : loopView.status;
      executed = loopView.executed && (n.kind === "loopgroup" || STATUSES.terminalTask.indexOf(loopView.status) >= 0);
      if (n.kind === "loopgroup") { label = n.title; }
    } else if (n.kind === "start") {
      executed = !!n.executed;
      status = executed ? "COMPLETED" : null;
    } else if (n.kind === "end") {
      executed = this.workflowStatus ? TERMINAL_WORKFLOW.indexOf(this.workflowStatus) >= 0 : !!n.executed;
      status = executed ? (this.workflowStatus || n.status) : null;
    } else {
      attempts = (n.iters || {})[this.scopeOf(n.loop)] || [];
      status = attempts.length ? attempts[attempts.length - 1].status : null;
      executed = attempts.length > 0;
      if (attempts.length > 1 && n.kind !== "dynamic") { label += "\n" + attempts.length + " attempts"; }
      if (n.kind === "loop") {
        var scopes = this.scopesOf(id);
        if (scopes.length) {
          label += "\niteration " + iterationLabel(this.scopeOf(id)) + " of " + scopes.length;
        }
      }
      if (n.kind === "dynamic" && attempts.length) {
        var counts = attempts[attempts.length - 1].counts || {};
        label += "\n" + Object.keys(counts).sort().map(function (k) { return counts[k] + " " + k.toLowerCase(); }).join(", ");
      }
    }
    if (preview) { executed = true; status = null; }
    var classes = ["kind-" + n.kind];
    if (status) { classes.push("st-" + status); }
    if (!executed) { classes.push("dimmed"); }
    if (n.diff) { classes.push("diff-" + n.diff); }
    return { id: id, data: n, status: status, attempts: attempts, executed: executed, label: label,
      classes: classes.join(" "), scope: this.scopeOf(n.loop) };
  };

  ConductorGraph.prototype.edgeExecuted = function (e) {
    if (this.graph && this.graph.preview) { return true; }
    var s = this.view(e.source), t = this.view(e.target);
    if (!s.executed || !t.executed) { return false; }
    if (s.data.kind === "switch" && e.label) {
      var last = s.attempts[s.attempts.length - 1];
      var chosen = last ? last.case : null;
      if (chosen === null || chosen === undefined) { return false; }
      if (e.label === "default") { return (s.data.caseKeys || []).indexOf(String(chosen)) < 0; }
      return String(chosen) === e.label;
    }
    return true;
  };

  /** Show the whole graph, but never below a readable zoom (FIT_MIN_ZOOM): a tall graph
   * then shows its top, full width, and scrolls with the page's drag. */
  ConductorGraph.prototype.fit = function () {
    var cy = this.cy;
    cy.fit(undefined, 20);
    if (cy.zoom() < ConductorGraph.FIT_MIN_ZOOM) {
      var bb = cy.elements().boundingBox();
      var z = Math.min(ConductorGraph.FIT_MIN_ZOOM, Math.max(cy.zoom(), (cy.width() - 40) / Math.max(1, bb.w)));
      z = Math.max(z, ConductorGraph.FIT_MIN_ZOOM);
      cy.zoom(z);
      cy.pan({ x: cy.width() / 2 - (bb.x1 + bb.w / 2) * z, y: 20 - bb.y1 * z });
    }
    this.changed();
  };

  /** Zoom by ``factor`` around ``at`` (rendered position; default the centre). */
  ConductorGraph.prototype.zoomBy = function (factor, at) {
    var cy = this.cy;
    var level = Math.max(cy.minZoom(), Math.min(cy.maxZoom(), cy.zoom() * factor));
    cy.zoom({ level: level, renderedPosition: at || { x: cy.width() / 2, y: cy.height() / 2 } });
    this.changed();
  };

  /** The viewport (zoom and pan), to keep it across reloads. */
  ConductorGraph.prototype.viewport = function () {
    return { zoom: this.cy.zoom(), pan: this.cy.pan() };
  };

  ConductorGraph.prototype.setViewport = function (vp) {
    if (!vp || !vp.zoom) { return; }
    this.cy.viewport({ zoom: vp.zoom, pan: vp.pan });
  };

  ConductorGraph.prototype.changed = function () {
    if (this.opts.onViewport) { this.opts.onViewport(this.viewport()); }
  };

  /** Nodes a keyboard walks through: task nodes top to bottom, then left to right. */
  ConductorGraph.prototype.walkable = function () {
    var self = this;
    return this.cy.nodes().filter(function (n) {
      var data = self.nodes[n.id()];
      return !!data && ["loopgroup", "loopend"].indexOf(data.kind) < 0;
    }).sort(function (a, b) {
      var pa = a.position(), pb = b.position();
      return Math.abs(pa.y - pb.y) > 8 ? pa.y - pb.y : pa.x - pb.x;
    });
  };

  /** Keyboard access: the canvas takes focus (Tab); arrows move between nodes, Enter or
   * Space opens the focused node, + / − zoom, 0 fits. The focused node is announced in
   * the container's aria-label. */
  ConductorGraph.prototype.keyboard = function (container) {
    var self = this;
    container.setAttribute("tabindex", "0");
    container.setAttribute("role", "application");
    container.setAttribute("aria-roledescription", "workflow graph");
    container.setAttribute("aria-label", "Workflow graph: arrow keys move between tasks, Enter opens one, + and − zoom, 0 fits");
    this.focusedId = null;
    container.addEventListener("keydown", function (ev) {
      var nodes = self.walkable();
      if (!nodes.length) { return; }
      var ids = nodes.map(function (n) { return n.id(); });
      var i = ids.indexOf(self.focusedId);
      var key = ev.key;
      if (key === "ArrowDown" || key === "ArrowRight") { self.focus(ids[Math.min(ids.length - 1, i + 1)]); }
      else if (key === "ArrowUp" || key === "ArrowLeft") { self.focus(ids[Math.max(0, i < 0 ? 0 : i - 1)]); }
      else if (key === "Home") { self.focus(ids[0]); }
      else if (key === "End") { self.focus(ids[ids.length - 1]); }
      else if ((key === "Enter" || key === " ") && self.focusedId) {
        var data = self.nodes[self.focusedId];
        if (data && self.opts.onSelect) { self.opts.onSelect(self.view(data.id)); }
      }
      else if (key === "+" || key === "=") { self.zoomBy(1.2); }
      else if (key === "-") { self.zoomBy(1 / 1.2); }
      else if (key === "0") { self.fit(); }
      else { return; }
      ev.preventDefault();
    });
  };

  ConductorGraph.prototype.focus = function (id) {
    this.cy.nodes(".focused").removeClass("focused");
    this.focusedId = id;
    var el = this.cy.getElementById(id);
    if (!el || el.empty()) { return; }
    el.addClass("focused");
    var v = this.view(id);
    this.container.setAttribute("aria-label", "Workflow graph, focused: " + (v.label || id).replace(/\n/g, ", ") +
      (v.status ? ", " + v.status : ", not executed"));
    // keep the focused node in view
    var bb = el.renderedBoundingBox(), cy = this.cy;
    if (bb.y1 < 0 || bb.y2 > cy.height() || bb.x1 < 0 || bb.x2 > cy.width()) { cy.center(el); this.changed(); }
  };

  ConductorGraph.prototype.select = function (id) {
    this.cy.$(":selected").unselect();
    if (!id) { return; }
    var el = this.cy.getElementById(id);
    if (el && !el.empty()) { el.select(); }
  };

  /** Download the whole graph as a PNG (cytoscape's png()). */
  ConductorGraph.prototype.exportPng = function (filename) {
    var uri = this.cy.png({ full: true, scale: 2, bg: "#ffffff", output: "base64uri" });
    var a = document.createElement("a");
    a.href = uri;
    a.download = filename || "workflow.png";
    document.body.appendChild(a);
    a.click();
    a.remove();
    return uri;
  };

  ConductorGraph.FIT_MIN_ZOOM = 0.55;
  ConductorGraph.COLOURS = COLOURS;
  ConductorGraph.iterationLabel = iterationLabel;
  window.ConductorGraph = ConductorGraph;
})();
