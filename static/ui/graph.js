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

  // Conductor UI's status colours.
  var COLOURS = {
    COMPLETED: "#41b957",
    COMPLETED_WITH_ERRORS: "#fba404",
    IN_PROGRESS: "#1f83db",
    SCHEDULED: "#1f83db",
    FAILED: "#ff3b30",
    FAILED_WITH_TERMINAL_ERROR: "#ff3b30",
    TIMED_OUT: "#ff3b30",
    TERMINATED: "#ff3b30",
    CANCELED: "#fba404",
    SKIPPED: "#a8a8a8",
    PAUSED: "#fba404",
    RUNNING: "#1f83db"
  };

  function statusStyles() {
    var out = [];
    Object.keys(COLOURS).forEach(function (s) {
      out.push({
        selector: "node.st-" + s,
        style: { "background-color": COLOURS[s], "border-color": COLOURS[s], color: s === "SKIPPED" ? "#222" : "#fff" }
      });
    });
    return out;
  }

  var STYLE = [
    { selector: "node", style: {
      shape: "round-rectangle", width: 200, height: 58, label: "data(label)", "text-wrap": "wrap",
      "text-max-width": 190, "text-valign": "center", "text-halign": "center", "font-size": 13,
      "font-family": "system-ui, sans-serif", "background-color": "#ffffff", "border-width": 1.5,
      "border-color": "#8a8f98", color: "#1d2330" } },
    { selector: "node.kind-fork, node.kind-join", style: {
      shape: "rectangle", width: 220, height: 12, "background-color": "#4b5563", "border-width": 0,
      "text-valign": "bottom", "text-margin-y": 4, color: "#1d2330", "font-size": 12 } },
    { selector: "node.kind-fork.st-COMPLETED, node.kind-join.st-COMPLETED", style: { color: "#1d2330" } },
    { selector: "node.kind-switch", style: { shape: "diamond", width: 150, height: 80, "text-max-width": 110 } },
    { selector: "node.kind-loop", style: { shape: "barrel", "border-width": 3, "border-style": "double" } },
    { selector: "node.kind-loopend", style: { shape: "rectangle", width: 150, height: 8, "background-color": "#4b5563",
      "border-width": 0, label: "" } },
    { selector: "node.kind-loopgroup", style: {
      shape: "round-rectangle", "background-color": "#f2f5fa", "background-opacity": 1, "border-style": "dashed",
      "border-color": "#7c8aa5", "border-width": 1.5, label: "data(label)", "text-valign": "top",
      "text-halign": "center", "font-size": 11, color: "#4b5563", padding: 14 } },
    { selector: "node.kind-loopgroup.dimmed", style: { opacity: 0.5 } },
    { selector: "node.kind-sub", style: { "border-width": 4, "border-style": "double" } },
    { selector: "node.kind-terminate", style: { shape: "ellipse", width: 84, height: 84, "text-max-width": 76, "font-size": 10 } },
    { selector: "node.kind-start, node.kind-end", style: { shape: "ellipse", width: 44, height: 44, "font-size": 10,
      "background-color": "#e5e7eb" } },
    { selector: "node.kind-dynamic", style: { shape: "round-octagon", width: 200, height: 64 } },
    { selector: "edge", style: {
      width: 2, "curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": "#5b6472",
      "target-arrow-color": "#5b6472", label: "data(label)", "font-size": 12, "text-background-color": "#ffffff",
      "text-background-opacity": 1, "text-background-padding": 2, color: "#374151" } },
    { selector: "edge.dimmed", style: { "line-color": "#cfd4dc", "target-arrow-color": "#cfd4dc", "line-style": "dashed", color: "#9aa1ad" } },
    { selector: "node.dimmed", style: { opacity: 0.45 } },
    { selector: "node:selected", style: { "overlay-color": "#f59e0b", "overlay-opacity": 0.25, "overlay-padding": 6 } }
  ].concat(statusStyles());

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
    this.cy = window.cytoscape({
      container: container, style: STYLE, elements: [], wheelSensitivity: 0.3, minZoom: 0.05, maxZoom: 3,
      boxSelectionEnabled: false, autoungrabify: true
    });
    var self = this;
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
      var data = { id: n.id, label: v.label };
      if (n.parent) { data.parent = n.parent; }
      data.status = v.status;
      elements.push({ group: "nodes", data: data, classes: v.classes });
    });
    graph.edges.forEach(function (e) {
      elements.push({ group: "edges", data: { id: e.id, source: e.source, target: e.target, label: e.label || "" },
        classes: self.edgeExecuted(e) ? "" : "dimmed" });
    });
    this.cy.batch(function () {
      self.cy.elements().remove();
      self.cy.add(elements);
    });
    this.cy.layout({ name: "dagre", rankDir: "TB", nodeSep: 30, rankSep: 36, edgeSep: 10, padding: 20,
      animate: false, fit: true }).run();
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
        el.data("status", v.status);
        el.classes(v.classes);
      });
      Object.keys(self.edges).forEach(function (id) {
        var el = self.cy.getElementById(id);
        if (!el || el.empty()) { return; }
        el.classes(self.edgeExecuted(self.edges[id]) ? "" : "dimmed");
      });
    });
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

  ConductorGraph.prototype.fit = function () { this.cy.fit(undefined, 20); };

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

  ConductorGraph.COLOURS = COLOURS;
  ConductorGraph.iterationLabel = iterationLabel;
  window.ConductorGraph = ConductorGraph;
})();
