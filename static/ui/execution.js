/* Execution page: live header, graph, task list, timeline, summary and payloads.
 *
 * Live protocol (apps/ui/consumers.py): the WebSocket sends a "snapshot", then "delta"s,
 * each with a seq one higher than the last; on a gap we ask for a "resync". If the
 * WebSocket cannot be used, the page polls live.json?marker=... instead and keeps trying
 * to reconnect the socket.
 */
(function () {
  "use strict";

  var root = document.getElementById("execution");
  if (!root) { return; }
  var cfg = {
    workflowId: root.dataset.workflowId,
    wsPath: root.dataset.wsPath,
    liveUrl: root.dataset.liveUrl,
    pollMs: Math.max(500, parseInt(root.dataset.pollMs, 10) || 1000),
    canOperate: root.dataset.canOperate === "1"
  };
  var TASKS_PER_PAGE = 50;
  var TIMELINE_ROWS_PER_PAGE = 60;
  var STATUS_SETS = JSON.parse(document.getElementById("conductor-statuses").textContent);
  var TERMINAL = STATUS_SETS.terminalWorkflow;

  var state = null;       // the current snapshot
  var seq = 0;
  var ws = null;
  var wsOpen = false;
  var pollTimer = null;
  var reconnectTimer = null;
  var taskPage = 1;
  var timelinePage = 1;
  var panelNode = null;   // id of the node in the task panel
  var panelTaskId = null; // task shown in the panel
  var panelRowKey = null; // last known row of that task (to refresh on change)
  var activeTab = "graph";
  var timelineZoom = 1;
  var dynFilter = "";
  var TABS = ["graph", "tasks", "timeline", "summary", "data", "json", "history"];
  if (document.getElementById("tab-agent")) { TABS.splice(1, 0, "agent"); }  // a compiled agent's execution (apps/ui/agent_run.py)
  var agentMarker = null;   // the live marker the Agent tab was last drawn at
  var agentLoading = false;
  // the view state in the URL (tab, node, task, iteration per loop), restored on load
  var initial = new URLSearchParams(location.search);
  var viewportKey = "conductor-graph-viewport:" + cfg.workflowId;
  // History (apps/ui/history.py): the moment shown (an event's seq) or null for live
  var pastSeq = /^\d+$/.test(initial.get("at") || "") ? parseInt(initial.get("at"), 10) : null;
  var pastTime = null;
  var momentRequest = 0;  // the latest moment asked for: an older answer arriving late is dropped
  var liveMarker = null;  // the marker of the last live snapshot (polling asks with it, also while in the past)
  var transport = { text: "connecting…", cls: "" };  // the live badge's state, shown again back in the present
  var historyEvents = [];
  var historyLoading = null;

  var graph = new window.ConductorGraph(document.getElementById("graph"), {
    workflowStatus: root.dataset.status,
    onSelect: function (view) { openPanel(view.id); },
    onViewport: function (vp) {
      try { sessionStorage.setItem(viewportKey, JSON.stringify(vp)); } catch (e) { /* storage off */ }
    }
  });
  graph.cy.on("dragfree viewport", function () { if (graphReady) { graph.changed(); } });
  var graphReady = false;
  window.conductorGraph = graph;
  window.conductorLive = { state: function () { return state; }, seq: function () { return seq; },
    mode: function () { return wsOpen ? "websocket" : (pollTimer ? "polling" : "connecting"); },
    moment: function () { return pastSeq; },
    // feed a message as if it came from the socket (used by the browser tests)
    inject: function (msg) { onMessage(msg); } };

  // --- helpers -------------------------------------------------------------------------
  function $(id) { return document.getElementById(id); }
  function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function fmtTime(ms) {
    if (!ms) { return ""; }
    if (window.conductorTime) { return window.conductorTime.format(ms); }  // UTC or the browser's zone
    var d = new Date(ms);
    return d.toISOString().replace("T", " ").slice(0, 19);
  }
  function fmtDuration(ms) {
    if (ms === null || ms === undefined || ms < 0) { return ""; }
    if (ms < 1000) { return ms + " ms"; }
    var s = ms / 1000;
    if (s < 60) { return s.toFixed(1) + " s"; }
    var m = Math.floor(s / 60);
    if (m < 60) { return m + "m " + Math.floor(s % 60) + "s"; }
    var h = Math.floor(m / 60);
    return h + "h " + (m % 60) + "m";
  }
  function statusBadge(s) { return s ? '<span class="status st-' + esc(s) + '">' + esc(s) + "</span>" : ""; }
  function execUrl(id) { return "/execution/" + encodeURIComponent(id); }
  function taskUrl(taskId) { return execUrl(cfg.workflowId) + "/task/" + encodeURIComponent(taskId) + ".json"; }
  /** "Now" of the view: the moment shown, or the present. */
  function nowMs() { return pastSeq !== null && pastTime ? pastTime : Date.now(); }
  function setLive(text, cls) {
    transport = { text: text, cls: cls || "" };
    renderBadge();
  }
  /** The badge beside the status: the transport of live updates, or the moment of history shown. */
  function renderBadge() {
    var el = $("live-state");
    var past = pastSeq !== null;
    el.textContent = past ? "history · #" + pastSeq : transport.text;
    el.className = "live " + (past ? "past" : transport.cls);
    el.title = past ? "a moment of history: live updates wait for \"Back to live\"" : "live updates";
  }

  // --- applying snapshots and deltas --------------------------------------------------------
  function applySnapshot(snap) {
    var first = !state;
    if (pastSeq === null) { liveMarker = snap.marker; }
    var structureChanged = !state || state.graph.signature !== snap.graph.signature;
    state = snap;
    graph.setWorkflowStatus(snap.header.status);
    if (structureChanged) { graph.setGraph(snap.graph); } else { graph.update(indexById(snap.graph.nodes), indexById(snap.graph.edges)); }
    if (first) { restoreView(); }
    renderAll();
  }

  /** The first snapshot: go back to the view the URL (and this tab's session) describes. */
  function restoreView() {
    (initial.get("iter") || "").split(",").forEach(function (pair) {
      var i = pair.lastIndexOf(":");
      if (i > 0) { graph.selectScope(pair.slice(0, i), pair.slice(i + 1)); }
    });
    try {
      var vp = JSON.parse(sessionStorage.getItem(viewportKey) || "null");
      if (vp) { graph.setViewport(vp); }
    } catch (e) { /* nothing kept */ }
    graphReady = true;
    var tab = initial.get("tab");
    if (TABS.indexOf(tab) >= 0) { showTab(tab, true); }
    var task = initial.get("task");
    var node = initial.get("node");
    if (task && rowOf(task)) { openTaskById(task, true); }
    else if (node && graph.nodes[node]) { openPanel(node); }
  }

  /** Write the view state into the URL (no new history entry). */
  function writeUrl() {
    var q = new URLSearchParams(location.search);
    ["tab", "node", "task", "iter", "at"].forEach(function (k) { q.delete(k); });
    if (activeTab !== "graph") { q.set("tab", activeTab); }
    if (pastSeq !== null) { q.set("at", String(pastSeq)); }
    if (panelNode && !$("task-panel").hidden) { q.set("node", panelNode); }
    if (panelTaskId && panelNode && !$("task-panel").hidden) { q.set("task", panelTaskId); }
    var iters = Object.keys(graph.selectedScope).filter(function (k) { return graph.selectedScope[k]; })
      .map(function (k) { return k + ":" + graph.selectedScope[k]; });
    if (iters.length) { q.set("iter", iters.join(",")); }
    var text = q.toString();
    var url = location.pathname + (text ? "?" + text : "");
    if (url !== location.pathname + location.search) { history.replaceState(null, "", url); }
  }

  function indexById(list) {
    var out = {};
    list.forEach(function (x) { out[x.id] = x; });
    return out;
  }

  function applyDelta(d) {
    if (!state) { return; }
    if (d.header) { state.header = d.header; graph.setWorkflowStatus(d.header.status); }
    if (d.payloads) { state.payloads = d.payloads; }
    if (d.marker) { state.marker = d.marker; liveMarker = d.marker; }
    if (d.graph) {
      state.graph = d.graph;
      graph.setGraph(d.graph);
    } else if (d.nodes || d.edges || d.header) {
      if (d.nodes) { state.graph.nodes = state.graph.nodes.map(function (n) { return d.nodes[n.id] || n; }); }
      if (d.edges) { state.graph.edges = state.graph.edges.map(function (e) { return d.edges[e.id] || e; }); }
      graph.update(d.nodes || {}, d.edges || {});
    }
    if (d.tasks || d.removed) {
      var rows = {};
      state.tasks.forEach(function (r) { rows[r.taskId] = r; });
      (d.tasks || []).forEach(function (r) { rows[r.taskId] = r; });
      (d.removed || []).forEach(function (id) { delete rows[id]; });
      state.tasks = Object.keys(rows).map(function (k) { return rows[k]; }).sort(function (a, b) { return a.seq - b.seq; });
    }
    renderAll();
  }

  function onMessage(msg) {
    if (pastSeq !== null && (msg.type === "snapshot" || msg.type === "delta")) {
      seq = msg.seq;  // the past stays on screen; "Back to live" fetches the present again
      return;
    }
    if (msg.type === "snapshot") {
      seq = msg.seq;
      applySnapshot(msg.data);
    } else if (msg.type === "delta") {
      if (msg.seq !== seq + 1) {
        // a message was missed: ask for the whole view again
        if (ws && wsOpen) { ws.send(JSON.stringify({ type: "resync" })); }
        return;
      }
      seq = msg.seq;
      applyDelta(msg.data);
    } else if (msg.type === "gone") {
      seq = msg.seq;
      setLive("execution removed", "gone");
    }
  }

  // --- transport: WebSocket, else polling -------------------------------------------------------
  function connect() {
    if (!("WebSocket" in window)) { startPolling(); return; }
    var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + cfg.wsPath;
    try {
      ws = new WebSocket(url);
    } catch (e) {
      startPolling();
      return;
    }
    var opened = false;
    ws.onopen = function () { opened = true; wsOpen = true; stopPolling(); setLive("live", "on"); };
    ws.onmessage = function (ev) {
      try { onMessage(JSON.parse(ev.data)); } catch (e) { if (window.console) { console.error(e); } }
    };
    ws.onclose = function () {
      wsOpen = false;
      ws = null;
      startPolling();
      clearTimeout(reconnectTimer);
      reconnectTimer = setTimeout(connect, opened ? 2000 : 10000);
    };
    ws.onerror = function () { /* onclose follows */ };
  }

  function startPolling() {
    if (pollTimer) { return; }
    setLive("live (polling)", "poll");
    var tick = function () {
      var url = cfg.liveUrl + (liveMarker ? "?marker=" + encodeURIComponent(liveMarker) : "");
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.json(); })
        .then(function (msg) {
          if (msg.type === "snapshot" && pastSeq === null) { applySnapshot(msg.data); }
          else if (msg.type === "snapshot") { liveMarker = msg.data.marker; }  // "Back to live" fetches the present
          else if (msg.type === "gone") { setLive("execution removed", "gone"); }
        })
        .catch(function () { setLive("offline, retrying", "off"); })
        .then(function () { if (pollTimer) { pollTimer = setTimeout(tick, cfg.pollMs); } });
    };
    pollTimer = setTimeout(tick, 0);
  }

  function stopPolling() {
    if (pollTimer) { clearTimeout(pollTimer); pollTimer = null; }
  }

  // --- rendering ---------------------------------------------------------------------------------
  function renderAll() {
    if (pastSeq === null && activeTab === "history" && historyEvents.length) { loadHistory(); }  // new events
    renderHeader();
    renderTasks();
    renderTimeline();
    renderSummary();
    renderPayloads();
    refreshPanel();
    if (activeTab === "agent") { loadAgent(); }
  }
  document.addEventListener("conductor:timezone", function () { if (state) { renderAll(); } });  // static/ui/time.js

  function renderHeader() {
    var h = state.header;
    var st = $("wf-status");
    st.textContent = h.status;
    st.className = "status st-" + h.status;
    root.dataset.status = h.status;
    renderBadge();
    $("wf-version").textContent = "v" + h.version;
    var def = $("definition-link");
    def.textContent = h.name + " v" + h.version;
    def.href = def.href.replace(/\/\d+$/, "/" + h.version);
    $("wf-correlation").textContent = h.correlationId || "—";
    $("wf-start").textContent = fmtTime(h.createTime) || "—";
    renderRerun(h);
    $("wf-end").textContent = fmtTime(h.endTime) || "—";
    var end = h.endTime || nowMs();
    $("wf-duration").textContent = fmtDuration(end - h.createTime);
    $("wf-task-count").textContent = String(h.taskCount);
    $("wf-reason").textContent = h.reason || "";
    $("wf-reason-box").hidden = !h.reason;
    var failed = $("wf-failed-task");
    failed.hidden = !h.failedTask;
    if (h.failedTask) {
      $("wf-failed-ref").textContent = h.failedTask.ref;
      $("wf-failed-ref").dataset.openTask = h.failedTask.taskId;
    }
    var menu = $("actions-menu");
    if (menu) {
      var any = false;
      menu.querySelectorAll("a[data-action]").forEach(function (a) {
        var allowed = h.allowedActions.indexOf(a.dataset.action) >= 0;
        a.hidden = !allowed;
        any = any || allowed;
      });
      var none = menu.querySelector("[data-none]");
      if (none) { none.hidden = any; }
      menu.hidden = pastSeq !== null;  // actions act on the present, not on a moment of history
    }
  }

  /** "Rerun of <another execution>", or when this one was rerun or restarted in place, when
   * (with a link to that moment of its history); hidden otherwise. */
  function renderRerun(h) {
    var box = $("wf-rerun-box");
    var dd = $("wf-rerun");
    if (h.reRunFromWorkflowId && h.reRunFromWorkflowId !== h.workflowId) {
      $("wf-rerun-label").textContent = "Rerun of";
      dd.innerHTML = '<a class="mono" href="' + execUrl(h.reRunFromWorkflowId) + '">' + esc(h.reRunFromWorkflowId) + "</a>";
    } else if (h.rerun) {
      var restart = h.rerun.action === "restart";
      $("wf-rerun-label").textContent = restart ? "Restarted" : "Rerun";
      dd.innerHTML = (restart ? "restarted" : "rerun") + " at " + esc(fmtTime(h.rerun.time)) + ' (<a href="?tab=history&amp;at=' +
        h.rerun.seq + '" data-moment="' + h.rerun.seq + '" data-moment-tab="history">see history</a>)';
    }
    box.hidden = !(h.reRunFromWorkflowId && h.reRunFromWorkflowId !== h.workflowId) && !h.rerun;
  }

  function filteredTasks() {
    var text = ($("task-filter").value || "").toLowerCase();
    var status = $("task-status").value;
    return state.tasks.filter(function (t) {
      if (status && t.status !== status) { return false; }
      if (!text) { return true; }
      return (t.ref + " " + t.type + " " + t.taskId + " " + (t.name || "")).toLowerCase().indexOf(text) >= 0;
    });
  }

  function pager(el, page, pages, onPage) {
    el.innerHTML = "";
    if (pages <= 1) { return; }
    var prev = document.createElement("button");
    prev.type = "button"; prev.textContent = "← Previous"; prev.disabled = page <= 1;
    prev.onclick = function () { onPage(page - 1); };
    var next = document.createElement("button");
    next.type = "button"; next.textContent = "Next →"; next.disabled = page >= pages;
    next.onclick = function () { onPage(page + 1); };
    var label = document.createElement("span");
    label.textContent = "Page " + page + " of " + pages;
    el.appendChild(prev); el.appendChild(label); el.appendChild(next);
  }

  function renderTasks() {
    var sel = $("task-status");
    var seen = {};
    state.tasks.forEach(function (t) { seen[t.status] = true; });
    var current = sel.value;
    var options = '<option value="">any</option>' + Object.keys(seen).sort().map(function (s) {
      return '<option value="' + esc(s) + '"' + (s === current ? " selected" : "") + ">" + esc(s) + "</option>";
    }).join("");
    if (sel.innerHTML !== options) { sel.innerHTML = options; }
    var rows = filteredTasks();
    var pages = Math.max(1, Math.ceil(rows.length / TASKS_PER_PAGE));
    taskPage = Math.min(taskPage, pages);
    var slice = rows.slice((taskPage - 1) * TASKS_PER_PAGE, taskPage * TASKS_PER_PAGE);
    $("task-count").textContent = rows.length + " of " + state.tasks.length + " task executions";
    $("task-table").querySelector("tbody").innerHTML = slice.map(function (t) {
      var dur = t.end && t.start ? fmtDuration(t.end - t.start) : "";
      var sub = t.subWorkflowId ? ' <a href="' + execUrl(t.subWorkflowId) + '" title="sub-workflow">↗ child</a>' : "";
      return '<tr data-task-id="' + esc(t.taskId) + '"><td>' + t.seq + '</td><td class="mono"><a href="#" data-open-task="' +
        esc(t.taskId) + '">' + esc(t.ref) + "</a>" + sub + "</td><td>" + esc(t.type) + "</td><td>" + statusBadge(t.status) +
        "</td><td>" + (t.retryCount + 1) + "</td><td class=\"nowrap\">" + fmtTime(t.scheduled) + "</td><td class=\"nowrap\">" +
        fmtTime(t.start) + "</td><td class=\"nowrap\">" + fmtTime(t.end) + "</td><td>" + dur + "</td><td>" + esc(t.workerId || "") +
        '</td><td class="reason">' + esc(t.reason || "") + "</td></tr>";
    }).join("") || '<tr><td colspan="11" class="empty">No tasks.</td></tr>';
    pager($("task-pager"), taskPage, pages, function (p) { taskPage = p; renderTasks(); });
  }

  function renderTimeline() {
    if (activeTab !== "timeline") { return; }
    var byRef = {};
    var order = [];
    state.tasks.forEach(function (t) {
      if (!byRef[t.ref]) { byRef[t.ref] = []; order.push(t.ref); }
      byRef[t.ref].push(t);
    });
    var h = state.header;
    var t0 = h.createTime;
    var now = nowMs();
    var t1 = h.endTime || now;
    state.tasks.forEach(function (t) { t1 = Math.max(t1, t.end || (t.start ? now : t.scheduled)); });
    if ($("tl-runs-only").checked) {
      var firstRun = null;
      state.tasks.forEach(function (t) { if (t.start && (firstRun === null || t.start < firstRun)) { firstRun = t.start; } });
      if (firstRun !== null && firstRun < t1) { t0 = firstRun; }
    }
    var span = Math.max(1, t1 - t0);
    var pages = Math.max(1, Math.ceil(order.length / TIMELINE_ROWS_PER_PAGE));
    timelinePage = Math.min(timelinePage, pages);
    var refs = order.slice((timelinePage - 1) * TIMELINE_ROWS_PER_PAGE, timelinePage * TIMELINE_ROWS_PER_PAGE);
    function pct(ms) { return Math.max(0, Math.min(100, (ms - t0) / span * 100)); }
    var html = '<div class="tl-axis"><span>' + fmtTime(t0) + "</span><span>" + fmtDuration(span) + "</span><span>" +
      fmtTime(t1) + "</span></div>";
    html += refs.map(function (ref) {
      var bars = byRef[ref].map(function (t) {
        var sched = t.scheduled || t.start || t0;
        var start = t.start || (t.end ? t.end : now);
        var end = t.end || now;
        var wait = '<span class="tl-wait" style="left:' + pct(sched) + "%;width:" + Math.max(0.2, pct(start) - pct(sched)) + '%"></span>';
        var run = t.start ? '<span class="tl-run st-' + esc(t.status) + '" style="left:' + pct(start) + "%;width:" +
          Math.max(0.3, pct(end) - pct(start)) + '%"></span>' : "";
        var title = "attempt " + (t.retryCount + 1) + " · " + t.status + "\nscheduled " + fmtTime(t.scheduled) +
          "\nstarted " + fmtTime(t.start) + "\nended " + fmtTime(t.end);
        return '<span class="tl-attempt" title="' + esc(title) + '" data-open-task="' + esc(t.taskId) + '">' + wait + run + "</span>";
      }).join("");
      return '<div class="tl-row"><div class="tl-label mono" title="' + esc(ref) + '">' + esc(ref) +
        (byRef[ref].length > 1 ? ' <span class="badge">' + byRef[ref].length + "</span>" : "") + '</div><div class="tl-track">' + bars + "</div></div>";
    }).join("");
    $("timeline").innerHTML = '<div class="tl-inner" style="width:' + (timelineZoom * 100) + '%">' + html + "</div>";
    $("tl-zoom-level").textContent = timelineZoom + "×";
    pager($("timeline-pager"), timelinePage, pages, function (p) { timelinePage = p; renderTimeline(); });
  }

  function renderSummary() {
    if (activeTab !== "summary") { return; }
    var h = state.header;
    var counts = {};
    state.tasks.forEach(function (t) { counts[t.status] = (counts[t.status] || 0) + 1; });
    var refs = {};
    state.tasks.forEach(function (t) { refs[t.ref] = true; });
    var rows = [
      ["Status", statusBadge(h.status)],
      ["Workflow", esc(h.name) + " v" + h.version],
      ["Workflow id", '<span class="mono">' + esc(h.workflowId) + "</span>"],
      ["Correlation id", esc(h.correlationId || "—")],
      ["Priority", esc(h.priority)],
      ["Created by", esc(h.createdBy || "—")],
      ["Started", fmtTime(h.createTime)],
      ["Updated", fmtTime(h.updateTime)],
      ["Ended", fmtTime(h.endTime) || "—"],
      ["Duration", fmtDuration((h.endTime || nowMs()) - h.createTime)],
      ["Task executions", state.tasks.length + " (" + Object.keys(refs).length + " references)"],
      ["By status", Object.keys(counts).sort().map(function (s) { return statusBadge(s) + " " + counts[s]; }).join(" ")],
      ["Failed references", esc((h.failedReferenceTaskNames || []).join(", ") || "—")],
      ["Reason", esc(h.reason || "—")]
    ];
    if (h.parentWorkflowId) { rows.push(["Parent", '<a class="mono" href="' + execUrl(h.parentWorkflowId) + '">' + esc(h.parentWorkflowId) + "</a>"]); }
    $("summary").innerHTML = '<table class="kv">' + rows.map(function (r) {
      return "<tr><th>" + r[0] + "</th><td>" + r[1] + "</td></tr>";
    }).join("") + "</table>";
  }

  function renderPayloads() {
    if (activeTab !== "data") { return; }
    ["input", "output", "variables"].forEach(function (k) {
      var p = state.payloads[k];
      var pre = $("payload-" + k);
      if (pre.textContent !== p.text) { pre.textContent = p.text; }
      pre.classList.toggle("unknown", !!p.unknown);
      var note = document.querySelector('[data-trunc="' + k + '"]');
      note.hidden = !p.truncated;
      note.textContent = p.truncated ? "Showing the first " + p.text.length + " of " + p.size + " characters: download for the whole payload." : "";
    });
  }

  // --- task panel -------------------------------------------------------------------------------
  function openPanel(nodeId, taskId) {
    panelNode = nodeId;
    panelTaskId = taskId || null;
    panelRowKey = null;
    graph.select(nodeId);
    var panel = $("task-panel");
    if (panel.hidden) { panel.hidden = false; graph.cy.resize(); }
    renderPanel(true);
    writeUrl();
  }

  function refreshPanel() {
    if (!panelNode || $("task-panel").hidden) { return; }
    renderPanel(false);
  }

  function rowOf(taskId) {
    for (var i = 0; i < state.tasks.length; i++) { if (state.tasks[i].taskId === taskId) { return state.tasks[i]; } }
    return null;
  }

  function renderPanel(force) {
    var view = graph.view(panelNode);
    var n = view.data;
    $("panel-title").textContent = (n.ref || n.id) + (n.type ? " · " + n.type : "");
    var pickers = $("panel-pickers");
    var html = "";
    // iteration picker: the loop this node belongs to, or the loop node itself
    var loopId = n.kind === "loop" ? n.id : n.loop;
    if (loopId) {
      var scopes = graph.scopesOf(loopId);
      if (scopes.length) {
        var current = graph.scopeOf(loopId);
        html += '<label>Iteration <select id="pick-iteration">' + scopes.map(function (s) {
          return '<option value="' + esc(s) + '"' + (s === current ? " selected" : "") + ">" +
            window.ConductorGraph.iterationLabel(s) + (s.split("__").length > 2 ? " (" + esc(s) + ")" : "") + "</option>";
        }).join("") + "</select></label>";
        html += iterationStrip(loopId, scopes, current);
      }
    }
    var attempts = view.attempts || [];
    if (n.kind === "dynamic") {
      attempts = [];
    }
    if (!panelTaskId || !attempts.some(function (a) { return a.taskId === panelTaskId; })) {
      if (n.kind !== "dynamic" || !panelTaskId) {
        panelTaskId = attempts.length ? attempts[attempts.length - 1].taskId : (n.kind === "dynamic" ? panelTaskId : null);
      }
    }
    if (attempts.length > 1) {
      html += '<label>Attempt <select id="pick-attempt">' + attempts.map(function (a, i) {
        return '<option value="' + esc(a.taskId) + '"' + (a.taskId === panelTaskId ? " selected" : "") + ">" + (i + 1) +
          " · " + esc(a.status) + "</option>";
      }).join("") + "</select></label>";
    }
    if (pickers.innerHTML !== html) {
      pickers.innerHTML = html;
      var it = $("pick-iteration");
      if (it) { it.onchange = function () { graph.selectScope(loopId, it.value); panelTaskId = null; renderPanel(true); writeUrl(); }; }
      bindStrip(loopId);
      var at = $("pick-attempt");
      if (at) { at.onchange = function () { panelTaskId = at.value; renderPanel(true); writeUrl(); }; }
    }
    var body = $("panel-body");
    if (n.kind === "dynamic") {
      var members = n.members || [];
      var statuses = {};
      members.forEach(function (m) { statuses[m.status] = (statuses[m.status] || 0) + 1; });
      if (dynFilter && !statuses[dynFilter]) { dynFilter = ""; }
      var shown = members.filter(function (m) { return !dynFilter || m.status === dynFilter; });
      var failedMembers = members.filter(function (m) { return isFailure(m.status); });
      var list = '<p class="hint">' + members.length + ' dynamically forked tasks.</p>' +
        '<div class="strip" id="member-strip" role="group" aria-label="Members by status">' + members.map(function (m) {
          return '<button type="button" class="cell st-' + esc(m.status) + (m.taskId === panelTaskId ? " current" : "") +
            '" data-open-task="' + esc(m.taskId) + '" title="' + esc(m.ref) + ": " + esc(m.status) + '" aria-label="' +
            esc(m.ref) + " " + esc(m.status) + '"></button>';
        }).join("") + "</div>" + (failedMembers.length ? '<p><a href="#" data-open-task="' + esc(failedMembers[0].taskId) +
          '" id="first-failed-member">first failed member (' + failedMembers.length + " failed)</a></p>" : "") +
        '<label class="dyn-filter">Status <select id="dyn-status"><option value="">any (' + members.length + ")</option>" +
        Object.keys(statuses).sort().map(function (st) {
          return '<option value="' + esc(st) + '"' + (st === dynFilter ? " selected" : "") + ">" + esc(st) + " (" + statuses[st] + ")</option>";
        }).join("") + '</select></label><div class="dyn-members" id="dyn-members"><table class="data small"><tbody>' +
        shown.map(function (m) {
          return '<tr' + (m.taskId === panelTaskId ? ' class="warn"' : "") + '><td class="mono"><a href="#" data-open-task="' +
            esc(m.taskId) + '">' + esc(m.ref) + "</a></td><td>" + statusBadge(m.status) + "</td></tr>";
        }).join("") + "</tbody></table></div>";
      if (!panelTaskId) { body.innerHTML = list; bindDynFilter(); return; }
      body.dataset.members = list;
    }
    if (!panelTaskId) {
      var skip = "";
      if (cfg.canOperate && state.header.status === "RUNNING" && n.ref && ["start", "end", "loopend", "loopgroup"].indexOf(n.kind) < 0) {
        skip = '<p><a class="button back-here" href="' + execUrl(cfg.workflowId) + "/task-action/skip?ref=" + encodeURIComponent(n.ref) + '">Skip this task</a></p>';
      }
      body.innerHTML = '<p class="hint">' + (n.kind === "start" || n.kind === "end" ? "" : "Not executed" +
        (n.loop ? " in this iteration" : "") + ".") + "</p>" + skip;
      return;
    }
    var row = rowOf(panelTaskId);
    var key = row ? JSON.stringify(row) : "none";
    if (!force && key === panelRowKey) { return; }
    panelRowKey = key;
    if (pastSeq !== null) {
      body.innerHTML = '<p class="hint" id="panel-past">This task execution as it was at the moment of history shown' +
        " (" + esc(fmtTime(pastTime)) + "); its payloads and actions are on the live view.</p>" +
        (row ? summaryTable({ status: row.status, taskId: row.taskId, referenceTaskName: row.ref, taskDefName: row.name,
          taskType: row.type, retryCount: row.retryCount, iteration: row.iteration, scheduledTime: row.scheduled,
          startTime: row.start, endTime: row.end, workerId: row.workerId, pollCount: row.pollCount,
          reasonForIncompletion: row.reason, subWorkflowId: row.subWorkflowId }) : '<p class="hint">Not scheduled yet at this moment.</p>');
      return;
    }
    var requested = panelTaskId;
    fetch(taskUrl(panelTaskId), { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (d) {
      if (requested !== panelTaskId) { return; }
      // the chosen member's details first, the member list (scrolling on its own) below
      body.innerHTML = panelHtml(d) + (n.kind === "dynamic" ? '<h3 class="small">All members</h3>' + (body.dataset.members || "") : "");
      mountLogs(d);
      if (n.kind === "dynamic") { bindDynFilter(); }
      body.scrollTop = 0;
      $("task-panel").scrollTop = 0;
    }).catch(function () { body.innerHTML = '<p class="error">Could not load the task.</p>'; });
  }

  // worst first (apps/engine/status.py): a strip cell shows the worst status of its iteration or member
  var SEVERITY = STATUS_SETS.taskSeverity;
  function worst(statuses) {
    var best = null;
    statuses.forEach(function (st) {
      var i = SEVERITY.indexOf(st);
      if (i >= 0 && (best === null || i < SEVERITY.indexOf(best))) { best = st; }
    });
    return best;
  }
  function isFailure(st) { return STATUS_SETS.stripFailure.indexOf(st) >= 0; }

  /** One cell per iteration of a DO_WHILE, coloured by the worst status of the tasks that
   * ran in it; a click picks that iteration; "next failure" jumps to the next failed one. */
  function iterationStrip(loopId, scopes, current) {
    var members = state.graph.nodes.filter(function (x) { return x.loop === loopId; });
    var cells = scopes.map(function (scope) {
      var st = worst(members.map(function (m) {
        var runs = (m.iters || {})[scope] || [];
        return runs.length ? runs[runs.length - 1].status : null;
      }).filter(Boolean));
      return { scope: scope, status: st };
    });
    var failures = cells.filter(function (c) { return isFailure(c.status); }).length;
    return '<div class="strip" id="iteration-strip" role="group" aria-label="Iterations by status">' + cells.map(function (c) {
      return '<button type="button" class="cell st-' + esc(c.status || "none") + (c.scope === current ? " current" : "") +
        '" data-scope="' + esc(c.scope) + '" data-status="' + esc(c.status || "") + '" title="iteration ' + window.ConductorGraph.iterationLabel(c.scope) + ": " +
        esc(c.status || "not run") + '" aria-label="iteration ' + window.ConductorGraph.iterationLabel(c.scope) + " " +
        esc(c.status || "not run") + '"></button>';
    }).join("") + "</div>" + (failures ? '<button type="button" class="link" id="next-failure">next failed iteration (' +
      failures + ")</button>" : "");
  }

  function bindStrip(loopId) {
    var strip = $("iteration-strip");
    if (!strip) { return; }
    function pick(scope) { graph.selectScope(loopId, scope); panelTaskId = null; renderPanel(true); writeUrl(); }
    strip.querySelectorAll("button.cell").forEach(function (b) { b.onclick = function () { pick(b.dataset.scope); }; });
    var next = $("next-failure");
    if (next) {
      next.onclick = function () {
        var cells = Array.prototype.slice.call(strip.querySelectorAll("button.cell"));
        var at = cells.findIndex(function (b) { return b.classList.contains("current"); });
        for (var k = 1; k <= cells.length; k++) {
          var c = cells[(at + k) % cells.length];
          if (isFailure(c.dataset.status)) { pick(c.dataset.scope); return; }
        }
      };
    }
  }

  function bindDynFilter() {
    var sel = $("dyn-status");
    if (sel) { sel.onchange = function () { dynFilter = sel.value; renderPanel(true); }; }
  }

  function pre(p, url) {
    var note = p.truncated ? '<p class="hint">Showing ' + p.text.length + " of " + p.size + ' characters. <a href="' + url + '">Download all</a></p>' : "";
    return note + '<pre class="json">' + esc(p.text) + "</pre>";
  }

  // LLM and MCP tasks: the conversation, tool calls, answer and token usage (d.ai).
  function aiHtml(a) {
    var rows = [];
    function kv(k, v) { if (v !== null && v !== undefined && v !== "") { rows.push("<tr><th>" + k + "</th><td>" + v + "</td></tr>"); } }
    if (a.kind === "llm") {
      kv("Model", esc((a.provider || "?") + " / " + (a.model || "?")) + (a.jsonOutput ? " · JSON output" : ""));
      if (a.tokens) { kv("Tokens", esc(String(a.tokens.prompt)) + " prompt + " + esc(String(a.tokens.completion)) + " completion = <b>" + esc(String(a.tokens.total)) + "</b>"); }
      kv("Finish", a.finishReason ? esc(a.finishReason) : "");
      kv("Tools offered", (a.tools || []).map(esc).join(", "));
      var msgs = (a.messages || []).map(function (m) {
        return '<div class="ai-msg ai-' + esc(m.role) + '"><span class="ai-role">' + esc(m.role) + '</span><pre>' + esc(m.text) + "</pre></div>";
      }).join("");
      var calls = (a.toolCalls || []).length ? '<table class="data small"><thead><tr><th>Tool call</th><th>Arguments</th></tr></thead><tbody>' +
        a.toolCalls.map(function (c) { return '<tr><td class="mono">' + esc(c.name) + '</td><td><pre class="json">' + esc(JSON.stringify(c.arguments, null, 2)) + "</pre></td></tr>"; }).join("") + "</tbody></table>" : "";
      var answer = a.result !== null && a.result !== undefined ? '<div class="ai-msg ai-assistant"><span class="ai-role">answer</span><pre>' + esc(a.result) + "</pre></div>" : "";
      return '<table class="kv small">' + rows.join("") + "</table>" + msgs + calls + answer;
    }
    kv("Server", a.server ? '<span class="mono">' + esc(a.server) + "</span>" : "");
    kv("Tool", a.method ? '<span class="mono">' + esc(a.method) + "</span>" : "");
    kv("Tools listed", (a.tools || []).map(esc).join(", "));
    if (a.isError !== null && a.isError !== undefined) { kv("Tool error", a.isError ? "yes" : "no"); }
    var args = a.arguments ? '<pre class="json">' + esc(JSON.stringify(a.arguments, null, 2)) + "</pre>" : "";
    var content = (a.content || []).map(function (c) { return '<pre class="json">' + esc(c) + "</pre>"; }).join("");
    return '<table class="kv small">' + rows.join("") + "</table>" + args + content;
  }

  function summaryTable(t) {
    var sub = t.subWorkflowId ? '<tr><th>Sub-workflow</th><td><a class="mono" href="' + execUrl(t.subWorkflowId) + '" id="open-child">' + esc(t.subWorkflowId) + " ↗</a></td></tr>" : "";
    return '<table class="kv small">' +
      "<tr><th>Status</th><td>" + statusBadge(t.status) + "</td></tr>" +
      '<tr><th>Task id</th><td class="mono">' + esc(t.taskId) + "</td></tr>" +
      '<tr><th>Reference</th><td class="mono">' + esc(t.referenceTaskName) + "</td></tr>" +
      "<tr><th>Task name</th><td>" + esc(t.taskDefName) + " (" + esc(t.taskType) + ")</td></tr>" +
      "<tr><th>Attempt</th><td>" + (t.retryCount + 1) + (t.retriedTaskId ? ' (retry of <span class="mono">' + esc(t.retriedTaskId) + "</span>)" : "") + "</td></tr>" +
      (t.iteration ? "<tr><th>Iteration</th><td>" + t.iteration + "</td></tr>" : "") +
      "<tr><th>Scheduled</th><td>" + fmtTime(t.scheduledTime) + "</td></tr>" +
      "<tr><th>Started</th><td>" + fmtTime(t.startTime) + "</td></tr>" +
      "<tr><th>Ended</th><td>" + fmtTime(t.endTime) + "</td></tr>" +
      "<tr><th>Worker</th><td>" + esc(t.workerId || "—") + " · polled " + (t.pollCount || 0) + "×</td></tr>" +
      (t.domain ? "<tr><th>Domain</th><td>" + esc(t.domain) + "</td></tr>" : "") +
      (t.reasonForIncompletion ? '<tr><th>Reason</th><td class="reason">' + esc(t.reasonForIncompletion) + "</td></tr>" : "") +
      sub + "</table>";
  }

  function isTerminalTask(st) { return STATUS_SETS.terminalTask.indexOf(st) >= 0; }
  /** The log viewer of the task shown (static/ui/logviewer.js): follows new lines while it runs. */
  function mountLogs(d) {
    var el = $("log-viewer");
    if (!el || !window.ConductorLogViewer) { return; }
    var base = taskUrl(d.task.taskId).replace(/\.json$/, "");
    window.ConductorLogViewer.mount(el, { taskId: d.task.taskId, url: base + "/logs.json", downloadUrl: base + "/logs.txt",
      terminal: isTerminalTask(d.task.status) });
  }

  function panelHtml(d) {
    var t = d.task;
    var labels = { rerun: "Rerun from this task", skip: "Skip", complete_task: "Complete", fail_task: "Fail" };
    var actions = (d.actions || []).map(function (a) {
      return '<a class="button' + (a === "fail_task" ? " danger" : "") + '" data-task-action="' + a + '" href="' + esc(d.actionUrls[a]) + '">' + labels[a] + "</a>";
    }).join(" ");
    var summary = summaryTable(t);
    var logs = '<div class="log-viewer" id="log-viewer"></div>';
    var polls = (d.pollData || []).length ? '<table class="data small"><tbody>' + d.pollData.map(function (p) {
      return '<tr><td class="mono">' + esc(p.workerId || "") + "</td><td>" + fmtTime(p.lastPollTime) + "</td></tr>";
    }).join("") + "</tbody></table>" : '<p class="hint">No poll data (system task or no worker has polled).</p>';
    return (actions ? '<div class="row actions">' + actions + "</div>" : "") +
      '<details open><summary>Summary</summary>' + summary + "</details>" +
      (d.ai ? '<details open id="ai-panel"><summary>' + (d.ai.kind === "llm" ? "Conversation" : "MCP call") + "</summary>" + aiHtml(d.ai) + "</details>" : "") +
      '<details open><summary>Input</summary>' + pre(d.input, d.downloads.input) + "</details>" +
      '<details open><summary>Output</summary>' + pre(d.output, d.downloads.output) + "</details>" +
      '<details id="log-details"' + (d.logCount || !isTerminalTask(t.status) ? " open" : "") + "><summary>Logs (" + (d.logCount || 0) + ")</summary>" + logs + "</details>" +
      '<details><summary>WorkflowTask definition</summary><pre class="json">' + esc(JSON.stringify(d.workflowTask, null, 2)) + "</pre></details>" +
      "<details><summary>Poll data</summary>" + polls + "</details>" +
      '<p><a href="' + d.downloads.json + '">Task JSON</a></p>';
  }

  function openTaskById(taskId, keepTab) {
    var row = rowOf(taskId);
    if (!row) { return; }
    // find the node showing this task's reference
    var nodeId = null;
    state.graph.nodes.forEach(function (n) {
      Object.keys(n.iters || {}).forEach(function (scope) {
        (n.iters[scope] || []).forEach(function (a) {
          if (a.taskId === taskId) { nodeId = n.id; if (n.loop) { graph.selectScope(n.loop, scope); } }
        });
      });
    });
    if (!keepTab) { showTab("graph"); }
    if (nodeId) { openPanel(nodeId, taskId); }
    else {
      var dyn = state.graph.nodes.filter(function (n) { return n.kind === "dynamic" && (n.members || []).some(function (m) { return m.taskId === taskId; }); })[0];
      if (dyn) { openPanel(dyn.id, taskId); }
    }
  }

  // --- tabs and controls ------------------------------------------------------------------------
  function showTab(name, quiet) {
    activeTab = name;
    document.querySelectorAll(".tabs button").forEach(function (b) {
      var on = b.dataset.tab === name;
      b.classList.toggle("active", on);
      b.setAttribute("aria-selected", on ? "true" : "false");
      b.tabIndex = on ? 0 : -1;
    });
    document.querySelectorAll("section.tab").forEach(function (s) { s.hidden = s.id !== "tab-" + name; });
    if (!quiet || graphReady) { writeUrl(); }
    if (state) {
      if (name === "timeline") { renderTimeline(); }
      if (name === "summary") { renderSummary(); }
      if (name === "data") { renderPayloads(); }
      if (name === "graph") { graph.cy.resize(); }
    }
    if (name === "agent") { loadAgent(); }
    if (name === "history") { loadHistory(); }
  }

  // --- the Agent tab: the run of a compiled agent as a conversation (apps/ui/agent_run.py) ----------
  /** Fetch agent.json when the live marker moved since the last drawing (one request at a time). */
  function loadAgent() {
    var section = $("tab-agent");
    if (!section || agentLoading) { return; }
    var marker = liveMarker || "";
    if (agentMarker !== null && agentMarker === marker) { return; }
    agentLoading = true;
    fetch(section.dataset.agentUrl, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(function (d) { agentMarker = marker; renderAgent(d); })
      .catch(function () { $("agent-run").innerHTML = '<p class="hint">Could not load the agent run.</p>'; })
      .then(function () {
        agentLoading = false;
        if (activeTab === "agent" && (liveMarker || "") !== agentMarker && agentMarker !== null) { loadAgent(); }
      });
  }

  function fmtTokens(t) {
    if (!t) { return ""; }
    var parts = [];
    if (t.prompt !== null && t.prompt !== undefined) { parts.push(esc(t.prompt) + " prompt"); }
    if (t.completion !== null && t.completion !== undefined) { parts.push(esc(t.completion) + " completion"); }
    if (t.total !== null && t.total !== undefined) { parts.push(esc(t.total) + " total"); }
    return parts.length ? '<span class="tok" data-tokens>' + parts.join(" · ") + " tokens</span>" : "";
  }

  function agentMsg(cls, role, body, extra) {
    return '<div class="ai-msg ai-' + cls + '" data-entry="' + cls.split(" ")[0] + '"><div class="ai-role">' + role + (extra || "") +
      "</div>" + body + "</div>";
  }
  function agentPre(text) { return "<pre>" + esc(text) + "</pre>"; }
  function taskLink(taskId, label) {
    return taskId ? ' <a href="#" class="mono" data-open-task="' + esc(taskId) + '">' + esc(label || "task") + "</a>" : "";
  }

  function agentEntry(e) {
    switch (e.kind) {
      case "model":
        return agentMsg("assistant", "model · turn " + esc(e.turn) + (e.model ? " · " + esc(e.model) : ""),
          (e.text ? agentPre(e.text) : (e.toolCalls || []).length ? "" : '<p class="hint">' + (STATUS_SETS.terminalTask.indexOf(e.status) >= 0 ? "no text" : "thinking…") + "</p>") +
          ((e.toolCalls || []).length ? '<ul class="agent-tools">' + e.toolCalls.map(function (c) {
            return '<li>asks for <code>' + esc(c.name) + "</code>" + agentPre(c.arguments) + "</li>";
          }).join("") + "</ul>" : ""),
          statusBadge(e.status) + fmtTokens(e.tokens) + (e.finishReason ? ' <span class="tok">' + esc(e.finishReason) + "</span>" : "") +
          taskLink(e.taskId, "LLM task"));
      case "tool":
        return agentMsg("tool", "tool call · <code>" + esc(e.name) + "</code>",
          '<div class="agent-args"><span class="hint">arguments</span>' + agentPre(e.args === null ? "" : e.args) + "</div>" +
          '<div class="agent-result"><span class="hint">result</span>' + agentPre(e.result === null ? "" : e.result) + "</div>",
          taskLink(e.taskId, "task"));
      case "human":
        return agentMsg("human", "human step · <code>" + esc(e.name) + "</code>",
          '<span class="hint">question</span>' + agentPre(e.question) +
          (e.answer !== null && e.answer !== undefined ? '<span class="hint">answer</span>' + agentPre(e.answer)
            : '<p class="hint">waiting for an answer (<code>POST /api/agent/{id}/respond</code>)</p>'),
          statusBadge(e.status) + taskLink(e.taskId, "task"));
      case "guardrail":
        return agentMsg("guardrail" + (e.passed ? "" : " failed"), "guardrail · <code>" + esc(e.name) + "</code> · " +
          (e.passed ? "passed" : e.retry ? "rejected, the model answers again" : e.review ? "rejected, a person reviews it" : "failed"), e.message ? agentPre(e.message) : "");
      case "handoff":
        return agentMsg("handoff", "handoff to <code>" + esc(e.target) + "</code>",
          e.executionId ? '<p>sub-agent execution <a class="mono" data-handoff href="' + execUrl(e.executionId) + '">' + esc(e.executionId) + "</a></p>"
            : '<p class="hint">the sub-agent is starting</p>', statusBadge(e.status));
      case "done":
        return agentMsg("done", "final answer", agentPre(e.answer));
      case "error":
        return agentMsg("error", "the run ended without an answer", agentPre(e.reason));
      default:
        return "";
    }
  }

  function renderAgent(d) {
    var tk = d.tokens || {};
    $("agent-tokens").innerHTML =
      '<div><dt>Status</dt><dd>' + statusBadge(d.status) + "</dd></div>" +
      '<div><dt>Model turns</dt><dd id="agent-turns">' + (d.entries || []).filter(function (e) { return e.kind === "model"; }).length + "</dd></div>" +
      '<div><dt>Prompt tokens</dt><dd id="agent-prompt-tokens">' + esc(tk.prompt) + "</dd></div>" +
      '<div><dt>Completion tokens</dt><dd id="agent-completion-tokens">' + esc(tk.completion) + "</dd></div>" +
      '<div><dt>Total tokens</dt><dd id="agent-total-tokens">' + esc(tk.total) + "</dd></div>";
    var html = "";
    if (d.instructions) { html += '<details class="ai-msg ai-system"><summary class="ai-role">instructions</summary>' + agentPre(d.instructions) + "</details>"; }
    if (d.prompt !== null && d.prompt !== undefined) { html += agentMsg("user", "user prompt", agentPre(d.prompt)); }
    html += (d.entries || []).map(agentEntry).join("");
    if (!(d.entries || []).length) { html += '<p class="hint">No model turn yet.</p>'; }
    $("agent-run").innerHTML = html;
  }

  // --- history: the events, and the execution as it was at any of them ------------------------
  /** Fetch the events not loaded yet (all of them the first time), then redraw the list. */
  function loadHistory() {
    if (historyLoading) { return historyLoading; }
    var after = historyEvents.length ? historyEvents[historyEvents.length - 1].seq : 0;
    var pages = 0;
    function page(a) {
      return fetch(execUrl(cfg.workflowId) + "/history.json?after=" + a, { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (d) {
          historyEvents = historyEvents.concat(d.events || []);
          pages += 1;
          if (d.next && pages < 50) { return page(d.next); }
        });
    }
    historyLoading = page(after).then(renderHistory, function () {
      $("history-note").textContent = "Could not load the history.";
    }).then(function () { historyLoading = null; });
    return historyLoading;
  }

  function indexOfSeq(n) {
    for (var i = 0; i < historyEvents.length; i++) { if (historyEvents[i].seq === n) { return i; } }
    return -1;
  }

  function renderHistory() {
    var range = $("moment-range");
    var count = historyEvents.length;
    range.max = String(Math.max(0, count - 1));
    range.disabled = !count;
    var i = pastSeq !== null ? indexOfSeq(pastSeq) : count - 1;
    range.value = String(Math.max(0, i));
    var shown = historyEvents[Math.max(0, i)];
    if (shown) { range.setAttribute("aria-valuetext", momentLabel(shown)); }
    $("moment-prev").disabled = !count || i <= 0;
    $("moment-next").disabled = !count || i < 0 || i >= count - 1;
    $("moment-live").disabled = pastSeq === null;
    $("history-note").textContent = count ? count + " events" + (pastSeq === null ? "; showing the present." : "; showing event #" + pastSeq + ".")
      : "No history recorded for this execution.";
    $("history-table").querySelector("tbody").innerHTML = historyEvents.map(function (e) {
      var current = e.seq === pastSeq;
      var task = e.taskId ? '<a href="#" class="mono" data-moment="' + e.seq + '" data-moment-task="' + esc(e.taskId) + '">' +
        esc((e.data && e.data.ref) || e.taskId) + "</a>" : "";
      var by = e.data && e.data.by ? ' <span class="hint">' + esc(e.data.by) + "</span>" : "";
      return '<tr data-seq="' + e.seq + '" class="kind-' + esc(e.kind.replace(".", "-")) + (current ? " current" : "") + '"' +
        (current ? ' aria-current="true"' : "") + '><td><a href="#" data-moment="' + e.seq + '">#' + e.seq + "</a></td><td class=\"nowrap\">" +
        esc(fmtMoment(e.time)) + '</td><td><span class="mono small">' + esc(e.kind) + "</span></td><td>" + esc(e.text) + by +
        "</td><td>" + task + "</td></tr>";
    }).join("");
    var row = $("history-table").querySelector("tr.current");
    if (row && row.scrollIntoView) { row.scrollIntoView({ block: "nearest" }); }
  }

  function fmtMoment(ms) { return fmtTime(ms) + "." + String(ms % 1000).padStart(3, "0"); }
  function momentLabel(e) { return "#" + e.seq + " · " + fmtMoment(e.time) + " · " + e.text; }

  function showBanner(ev) {
    var banner = $("moment-banner");
    banner.hidden = pastSeq === null;
    if (pastSeq === null || !ev) { return; }
    $("moment-title").textContent = "Viewing history at " + fmtMoment(ev.time) + ", seq " + ev.seq + ".";
    $("moment-text").textContent = "Just after: " + ev.text + ". Live updates wait until you go back to live.";
  }

  /** Show the execution as it was just after event ``n`` (graph, task list, timeline,
   * header); then() runs once it is drawn. */
  function showMoment(n, then) {
    var ticket = ++momentRequest;
    return fetch(execUrl(cfg.workflowId) + "/at.json?seq=" + n, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error("no such moment"); } return r.json(); })
      .then(function (msg) {
        if (ticket !== momentRequest) { return; }  // a later moment (or the present) was asked for since
        pastSeq = n;
        pastTime = msg.data.event ? msg.data.event.time : null;
        root.classList.add("in-past");
        applySnapshot(msg.data);
        showBanner(msg.data.event);
        if (historyEvents.length) { renderHistory(); }
        if (then) { then(); }
        writeUrl();
      })
      .catch(function () { if (ticket === momentRequest) { backToLive(); } });
  }

  function backToLive() {
    momentRequest += 1;
    pastSeq = null;
    pastTime = null;
    root.classList.remove("in-past");
    showBanner(null);
    renderBadge();
    writeUrl();
    if (ws && wsOpen) { ws.send(JSON.stringify({ type: "resync" })); }
    fetch(cfg.liveUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (msg) { if (msg.type === "snapshot" && pastSeq === null) { applySnapshot(msg.data); } });
    historyEvents = [];
    if (activeTab === "history") { loadHistory(); } else { renderHistory(); }
  }

  function stepMoment(delta) {
    if (!historyEvents.length) { return; }
    var i = pastSeq !== null ? indexOfSeq(pastSeq) : historyEvents.length - 1;
    var j = Math.max(0, Math.min(historyEvents.length - 1, i + delta));
    showMoment(historyEvents[j].seq);
  }

  document.querySelectorAll(".tabs button").forEach(function (b) {
    b.addEventListener("click", function () { showTab(b.dataset.tab); });
    // WAI-ARIA tabs: arrows, Home and End move between tabs
    b.addEventListener("keydown", function (ev) {
      var i = TABS.indexOf(b.dataset.tab), next = null;
      if (ev.key === "ArrowRight") { next = TABS[(i + 1) % TABS.length]; }
      else if (ev.key === "ArrowLeft") { next = TABS[(i + TABS.length - 1) % TABS.length]; }
      else if (ev.key === "Home") { next = TABS[0]; }
      else if (ev.key === "End") { next = TABS[TABS.length - 1]; }
      if (next) { ev.preventDefault(); showTab(next); $("tabbtn-" + next).focus(); }
    });
  });
  $("panel-close").addEventListener("click", function () {
    $("task-panel").hidden = true; panelNode = null; panelTaskId = null; graph.select(null); graph.cy.resize(); writeUrl();
  });
  $("fit-graph").addEventListener("click", function () { graph.fit(); });
  $("zoom-in").addEventListener("click", function () { graph.zoomBy(1.2); });
  $("zoom-out").addEventListener("click", function () { graph.zoomBy(1 / 1.2); });
  $("tl-zoom-in").addEventListener("click", function () { timelineZoom = Math.min(64, timelineZoom * 2); renderTimeline(); });
  $("tl-zoom-out").addEventListener("click", function () { timelineZoom = Math.max(1, timelineZoom / 2); renderTimeline(); });
  $("tl-runs-only").addEventListener("change", function () { renderTimeline(); });
  // actions come back to this page as it is now (tab, task, iteration in the URL)
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("a[data-action], a[data-task-action], a.back-here") : null;
    if (!a) { return; }
    var url = new URL(a.href, location.href);
    url.searchParams.set("back", location.pathname + location.search);
    a.href = url.pathname + url.search;
  }, true);
  $("export-png").addEventListener("click", function () { graph.exportPng(cfg.workflowId + ".png"); });
  $("task-filter").addEventListener("input", function () { taskPage = 1; renderTasks(); });
  $("task-status").addEventListener("change", function () { taskPage = 1; renderTasks(); });
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("[data-open-task]") : null;
    if (a) { ev.preventDefault(); openTaskById(a.dataset.openTask); }
  });
  $("moment-prev").addEventListener("click", function () { stepMoment(-1); });
  $("moment-next").addEventListener("click", function () { stepMoment(1); });
  $("moment-live").addEventListener("click", backToLive);
  $("moment-back").addEventListener("click", backToLive);
  $("moment-range").addEventListener("input", function () {
    var e = historyEvents[parseInt($("moment-range").value, 10)];
    if (e) { $("history-note").textContent = momentLabel(e); $("moment-range").setAttribute("aria-valuetext", momentLabel(e)); }
  });
  $("moment-range").addEventListener("change", function () {
    var e = historyEvents[parseInt($("moment-range").value, 10)];
    if (e) { showMoment(e.seq); }
  });
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("[data-moment]") : null;
    if (!a) { return; }
    ev.preventDefault();
    var taskId = a.dataset.momentTask;
    if (a.dataset.momentTab) { showTab(a.dataset.momentTab); }
    showMoment(parseInt(a.dataset.moment, 10), taskId ? function () {
      if (rowOf(taskId)) { openTaskById(taskId); }
    } : null);
  });
  $("json-load").addEventListener("click", function () {
    var limit = 200000;
    fetch($("json-download").href + "?preview=" + limit, { credentials: "same-origin" }).then(function (r) {
      var total = parseInt(r.headers.get("X-Total-Chars"), 10) || 0;
      return r.text().then(function (text) { return { text: text, total: total }; });
    }).then(function (res) {
      $("json-view").textContent = res.text;
      var note = $("json-note");
      note.hidden = res.total <= res.text.length;
      note.textContent = "Showing the first " + res.text.length + " of " + res.total + " characters: download for the whole document.";
    });
  });

  // the tab in the URL shows at once; the task panel and iterations wait for the first snapshot
  if (TABS.indexOf(initial.get("tab")) >= 0) { showTab(initial.get("tab"), true); }

  // the canvas fills the window below its top, so it ends above the fold
  function sizeGraph() {
    var el = $("graph");
    var top = el.getBoundingClientRect().top + window.scrollY;
    var height = Math.max(360, Math.min(1200, window.innerHeight - top - 28));
    if (Math.abs(el.offsetHeight - height) > 2) { el.style.height = height + "px"; graph.cy.resize(); }
  }
  sizeGraph();
  window.addEventListener("resize", sizeGraph);

  // a moment of history in the URL (?at=<seq>) is drawn first; live updates wait for "Back to live"
  if (pastSeq !== null) { showMoment(pastSeq).then(connect); } else { connect(); }
  if (activeTab === "history" && pastSeq === null) { loadHistory(); }
})();
