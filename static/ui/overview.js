/* The Overview page (templates/ui/overview.html): fetches overview.json (apps/overview/selectors.py)
 * with the page's query string, draws one stacked bar chart per workflow and per task type with
 * Apache ECharts (static/vendor/echarts), and renders the same figures as tables (the charts'
 * text alternative). Every bar and every number opens the search of exactly what it counts: a bar
 * of interval [lo, hi) sets the search's window to lo .. hi - 1 ms.
 * Live: the figures are fetched again every refreshSeconds while "live" is checked.
 * Keyboard: a focused chart takes Left/Right (interval), Up/Down (series), Enter (open the search).
 * Nothing here changes state: only GET requests.
 * Tests read window.conductorOverview (charts by id, the last data, barPoint). */
(function () {
  "use strict";
  const config = JSON.parse(document.getElementById("ov-config").textContent);
  const form = document.getElementById("ov-controls");
  const tzSelect = document.getElementById("ov-tz");
  const live = document.getElementById("ov-live");
  const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  const css = getComputedStyle(document.documentElement);
  const colour = (name) => css.getPropertyValue(name).trim();
  const WF_SERIES = [
    ["COMPLETED", "completed", "--ok"], ["FAILED", "failed", "--fail"], ["TIMED_OUT", "timed out", "--warn"],
    ["TERMINATED", "terminated", "--skip"],
  ];
  const TASK_SERIES = [
    ["COMPLETED", "completed", "--ok"], ["FAILED", "failed", "--fail"],
    ["FAILED_WITH_TERMINAL_ERROR", "failed (terminal)", "--reason"], ["TIMED_OUT", "timed out", "--warn"],
  ];
  const state = { data: null, charts: {}, blocks: {}, timer: null, focus: {} };
  window.conductorOverview = state;

  tzSelect.value = window.conductorTime ? window.conductorTime.zone() : "utc";  // the UI's one zone switch (ui/time.js)

  // --- formatting ----------------------------------------------------------------------------
  const utc = () => tzSelect.value === "utc";
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  function parts(ms) {
    const d = new Date(ms);
    return utc()
      ? [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()]
      : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()];
  }
  function stamp(ms, withDate) {
    const [y, mo, d, h, mi, s] = parts(ms);
    const time = `${pad(h)}:${pad(mi)}${s ? ":" + pad(s) : ""}`;
    return withDate ? `${y}-${pad(mo)}-${pad(d)} ${time}` : time;
  }
  const zone = () => (utc() ? "UTC" : Intl.DateTimeFormat().resolvedOptions().timeZone || "local");
  function duration(ms) {
    if (ms === null || ms === undefined) return "–";
    if (ms < 1000) return `${ms} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
    if (ms < 3600000) return `${(ms / 60000).toFixed(1)} min`;
    if (ms < 86400000) return `${(ms / 3600000).toFixed(1)} h`;
    return `${(ms / 86400000).toFixed(1)} d`;
  }
  const iso = (ms) => new Date(ms).toISOString().slice(0, 23); // the search's UTC datetime-local text

  // --- the search of one bar -----------------------------------------------------------------
  /** The URL of a figure's search over the whole range, narrowed to interval [lo, lo + step). */
  function narrowed(url, kind, measure, lo) {
    const hi = lo + state.data.window.step;
    const u = new URL(url, location.href);
    if (kind === "task") {
      u.searchParams.set("query", `endTime>${lo - 1} AND endTime<${hi}`);
    } else {
      const which = measure === "started" ? "start" : "end";
      u.searchParams.set(`${which}_from`, iso(lo));
      u.searchParams.set(`${which}_to`, iso(hi - 1));
    }
    return u.pathname + u.search;
  }

  // --- DOM helpers (text only: names and reasons are never parsed as HTML) ----------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = v;
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  const link = (href, text, attrs) => el("a", Object.assign({ href, text: String(text) }, attrs || {}));
  const num = (value, href, attrs) => el("td", { class: "num" }, href ? link(href, value, attrs) : String(value));

  // --- charts --------------------------------------------------------------------------------
  function chartOption(row, kind, seriesDefs, title) {
    const w = state.data.window;
    const withDate = w.end - w.start > 86400000;
    const series = seriesDefs.map(([measure, label, cssVar]) => ({
      id: measure, name: label, type: "bar", stack: "ends", data: row.series[measure],
      itemStyle: { color: colour(cssVar) }, emphasis: { focus: "series" }, barCategoryGap: "15%",
    }));
    if (kind === "workflow") {
      series.push({ id: "started", name: "started", type: "line", data: row.series.started, symbolSize: 5,
        itemStyle: { color: colour("--run") }, lineStyle: { width: 1.5 } });
    }
    return {
      backgroundColor: "transparent",
      aria: { enabled: true, label: { description: `${title}: ${kind === "workflow" ? "executions started and ended" : "task attempts ended"} per interval of ${duration(w.step)}, ${zone()}.` } },
      animation: false,
      grid: { left: 40, right: 12, top: 28, bottom: 26 },
      legend: { top: 0, textStyle: { color: colour("--muted") }, itemWidth: 12, itemHeight: 8 },
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" } },
      xAxis: { type: "category", data: w.intervals.map((t) => stamp(t, withDate)),
        axisLabel: { color: colour("--muted") }, axisLine: { lineStyle: { color: colour("--line") } } },
      yAxis: { type: "value", minInterval: 1, axisLabel: { color: colour("--muted") },
        splitLine: { lineStyle: { color: colour("--row-line") } } },
      series,
    };
  }

  function tableOf(row, kind, seriesDefs) {
    const w = state.data.window;
    const withDate = w.end - w.start > 86400000;
    const defs = kind === "workflow" ? [["started", "started"], ...seriesDefs] : seriesDefs;
    const head = el("tr", {}, el("th", { scope: "col", text: `Interval start (${zone()})` }),
      ...defs.map(([, label]) => el("th", { scope: "col", class: "num", text: label })));
    const body = el("tbody");
    w.intervals.forEach((t, i) => {
      if (!defs.some(([m]) => row.series[m][i])) return;
      body.append(el("tr", {}, el("th", { scope: "row", text: stamp(t, withDate) }),
        ...defs.map(([m]) => num(row.series[m][i], row.series[m][i] ? narrowed(row.totalUrls[m], kind, m, t) : null))));
    });
    if (!body.children.length) body.append(el("tr", {}, el("td", { colspan: defs.length + 1, class: "empty", text: "Nothing in this range." })));
    return el("table", { class: "data ov-table" }, el("thead", {}, head), body);
  }

  /** The chart (and its table) of one workflow or task type: made once, kept across refreshes
   * (so keyboard focus and the table's open state stay), redrawn with each refresh's data. */
  function chartBlock(id, row, kind, seriesDefs, title) {
    let b = state.blocks[id];
    if (!b) {
      const box = el("div", { class: "ov-chart-box" });
      const chartEl = el("div", { class: "ov-chart", id: `chart-${id}`, tabindex: "0", role: "img",
        "aria-label": `${title}: chart. Arrow keys pick a bar, Enter opens its executions.` });
      const tableEl = el("div", { class: "ov-chart-table", hidden: true });
      const toggle = el("button", { type: "button", class: "link ov-toggle", "aria-expanded": "false",
        "aria-controls": `table-${id}`, text: "Table" });
      tableEl.id = `table-${id}`;
      toggle.addEventListener("click", () => {
        const show = tableEl.hidden;
        tableEl.hidden = !show;
        toggle.setAttribute("aria-expanded", String(show));
        toggle.textContent = show ? "Hide table" : "Table";
      });
      box.append(el("div", { class: "ov-chart-head" }, el("strong", { text: title }), toggle), chartEl, tableEl);
      b = state.blocks[id] = { box, chartEl, tableEl };
    }
    b.draw = () => {
      b.tableEl.replaceChildren(tableOf(row, kind, seriesDefs));
      let chart = state.charts[id];
      if (!chart) {
        chart = echarts.init(b.chartEl, dark ? "dark" : null, { renderer: "svg" });
        chart.on("click", (p) => {
          const r = chart.ovRow;
          const measure = p.seriesId;
          if (r.series[measure] && r.series[measure][p.dataIndex]) {
            location.href = narrowed(r.totalUrls[measure], kind, measure, state.data.window.intervals[p.dataIndex]);
          }
        });
        b.chartEl.addEventListener("keydown", (ev) => keyNav(ev, id, kind));
        b.chartEl.addEventListener("blur", () => {
          chart.dispatchAction({ type: "hideTip" });
          chart.dispatchAction({ type: "downplay" });
        });
        state.charts[id] = chart;
      }
      chart.ovRow = row;
      chart.setOption(chartOption(row, kind, seriesDefs, title), true);
    };
    return b;
  }

  /** Dispose of the charts not drawn by this refresh (a workflow gone from the range). */
  function dropStale(kept) {
    for (const id of Object.keys(state.blocks)) {
      if (kept.has(id)) continue;
      if (state.charts[id]) state.charts[id].dispose();
      delete state.charts[id];
      delete state.blocks[id];
    }
  }

  function keyNav(ev, id, kind) {
    const chart = state.charts[id];
    const row = chart.ovRow;
    const measures = chart.getOption().series.map((s) => s.id);
    const f = state.focus[id] || { i: state.data.window.intervals.length - 1, s: 0 };
    const n = state.data.window.intervals.length;
    if (ev.key === "ArrowLeft") f.i = Math.max(0, f.i - 1);
    else if (ev.key === "ArrowRight") f.i = Math.min(n - 1, f.i + 1);
    else if (ev.key === "ArrowUp") f.s = Math.min(measures.length - 1, f.s + 1);
    else if (ev.key === "ArrowDown") f.s = Math.max(0, f.s - 1);
    else if (ev.key === "Enter") {
      const m = measures[f.s];
      if (row.series[m][f.i]) location.href = narrowed(row.totalUrls[m], kind, m, state.data.window.intervals[f.i]);
      return;
    } else return;
    ev.preventDefault();
    state.focus[id] = f;
    chart.dispatchAction({ type: "showTip", seriesIndex: f.s, dataIndex: f.i });
    chart.dispatchAction({ type: "downplay" });
    chart.dispatchAction({ type: "highlight", seriesIndex: f.s, dataIndex: f.i });
  }

  /** Page coordinates of the middle of bar (measure, interval) of chart ``id`` (for tests). */
  state.barPoint = function (id, measure, index) {
    const chart = state.charts[id];
    const row = chart.ovRow;
    const order = chart.getOption().series.filter((s) => s.type === "bar").map((s) => s.id);
    let below = 0;
    for (const m of order) { if (m === measure) break; below += row.series[m][index]; }
    const mid = below + row.series[measure][index] / 2;
    const [x, y] = chart.convertToPixel({ seriesId: measure }, [index, mid]);
    const box = chart.getDom().getBoundingClientRect();
    return { x: box.left + x, y: box.top + y };
  };

  // --- sections --------------------------------------------------------------------------------
  const safeId = (s) => s.replace(/[^A-Za-z0-9_-]/g, "_");
  const pct = (r) => (r === null || r === undefined ? "–" : `${(100 * r).toFixed(r && r < 0.1 ? 1 : 0)} %`);

  function renderWorkflows(rows) {
    const root = document.getElementById("ov-workflows");
    const head = el("tr", {}, ...["Workflow", "started", "completed", "failed", "timed out", "terminated", "failure rate",
      "p50", "p95", "p99"].map((h, i) => el("th", { scope: "col", class: i ? "num" : null, text: h })));
    const body = el("tbody");
    const grid = el("div", { class: "ov-grid" });
    const blocks = [];
    for (const row of rows) {
      const title = row.version === null ? row.name : `${row.name} v${row.version}`;
      body.append(el("tr", { class: row.failed ? "failed" : null, "data-workflow": title },
        el("th", { scope: "row" }, title),
        ...["started", "COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED"].map((m) =>
          num(row.totals[m], row.totals[m] ? row.totalUrls[m] : null, { "data-measure": m })),
        num(pct(row.failureRate), row.failed ? row.failedUrl : null, { "data-measure": "failureRate" }),
        num(duration(row.p50)), num(duration(row.p95)), num(duration(row.p99))));
      const b = chartBlock(`wf-${safeId(title)}`, row, "workflow", WF_SERIES, title);
      state.kept.add(`wf-${safeId(title)}`);
      grid.append(b.box);
      blocks.push(b);
    }
    if (!rows.length) body.append(el("tr", {}, el("td", { colspan: 10, class: "empty", text: "No workflow started or ended in this range." })));
    root.replaceChildren(el("table", { class: "data", id: "ov-workflow-table" }, el("thead", {}, head), body), grid);
    blocks.forEach((b) => b.draw());
  }

  function renderTasks(rows) {
    const root = document.getElementById("ov-tasks");
    const head = el("tr", {}, ...["Task type", "queue depth", "oldest pending", "completed", "failed", "failed (terminal)",
      "timed out", "p95 worker lag", "p95 run time"].map((h, i) => el("th", { scope: "col", class: i ? "num" : null, text: h })));
    const body = el("tbody");
    const grid = el("div", { class: "ov-grid" });
    const blocks = [];
    for (const row of rows) {
      body.append(el("tr", { class: row.noPoller ? "warn" : null, "data-task": row.name },
        el("th", { scope: "row" }, row.name, row.noPoller ? el("span", { class: "badge ov-nopoller", text: " no poller" }) : null),
        num(row.depth, row.depth ? row.depthUrl : null, { "data-measure": "depth" }),
        num(duration(row.oldestPendingMs)),
        ...TASK_SERIES.map(([m]) => num(row.totals[m], row.totals[m] ? row.totalUrls[m] : null, { "data-measure": m })),
        num(duration(row.p95LagMs)), num(duration(row.p95RunMs))));
      if (Object.values(row.totals).some((n) => n)) {
        const b = chartBlock(`task-${safeId(row.name)}`, row, "task", TASK_SERIES, row.name);
        state.kept.add(`task-${safeId(row.name)}`);
        grid.append(b.box);
        blocks.push(b);
      }
    }
    if (!rows.length) body.append(el("tr", {}, el("td", { colspan: 9, class: "empty", text: "No task queued, polled or ended in this range." })));
    root.replaceChildren(el("table", { class: "data", id: "ov-task-table" }, el("thead", {}, head), body), grid);
    blocks.forEach((b) => b.draw());
  }

  function renderWorkers(rows) {
    const root = document.getElementById("ov-workers");
    const body = el("tbody");
    for (const row of rows) {
      const workers = row.workers.length ? row.workers : [null];
      workers.forEach((w, i) => {
        body.append(el("tr", { class: row.noPoller ? "warn" : null },
          i === 0 ? el("th", { scope: "row", rowspan: workers.length }, row.name,
            row.noPoller ? el("div", { class: "warning small", text: `${row.depth} waiting, no recent poll` }) : null) : null,
          el("td", { class: "mono", text: w ? (w.workerId || "(no id)") + (w.domain ? ` @${w.domain}` : "") : "never polled" }),
          el("td", { class: w && !w.recent ? "muted" : null, text: w ? `${stamp(w.lastPollTime, true)} (${duration(state.data.now - w.lastPollTime)} ago)` : "–" })));
      });
    }
    if (!rows.length) body.append(el("tr", {}, el("td", { colspan: 3, class: "empty", text: "No poll yet." })));
    root.replaceChildren(el("table", { class: "data", id: "ov-worker-table" },
      el("thead", {}, el("tr", {}, el("th", { text: "Queue" }), el("th", { text: "Worker id" }), el("th", { text: `Last poll (${zone()})` }))), body));
  }

  function renderEngine(e) {
    const root = document.getElementById("ov-engine");
    const rows = [
      ["Sweeper lag (oldest due decide)", duration(e.sweeperLagMs)],
      ["Sweeper's last tick", e.sweeperLastTickAgeMs === null ? "never" : `${duration(e.sweeperLastTickAgeMs)} ago`],
      ["Evaluations waiting (scripts, jq)", String(e.pendingEvaluations)],
      ["Status-listener notifications pending", `${e.listenerBacklog}${e.listenerOldestMs !== null ? `, oldest ${duration(e.listenerOldestMs)}` : ""}`],
      ["Event queue messages pending", `${e.eventBacklog}${e.eventOldestMs !== null ? `, oldest ${duration(e.eventOldestMs)}` : ""}`],
      ["Broker outbox (AMQP, NATS, Kafka) waiting", e.brokerBacklog.length ? e.brokerBacklog.map((b) =>
        `${b.broker} ${b.pending}${b.oldestMs !== null ? `, oldest ${duration(b.oldestMs)}` : ""}`).join("; ") : "0"],
    ];
    const table = el("table", { class: "kv", id: "ov-engine-table" },
      el("tbody", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", { scope: "row", text: k }), el("td", { class: "num", text: v })))));
    const firings = el("ul", { class: "ov-firings" }, ...e.nextFirings.map((f) =>
      el("li", {}, link(f.url, f.name), ` → ${f.workflowName} at ${stamp(f.nextRunTime, true)} ${zone()}`)));
    if (!e.nextFirings.length) firings.append(el("li", { class: "muted", text: "No schedule due." }));
    root.replaceChildren(table, el("h3", { text: "Next schedule firings" }), firings);
  }

  function renderReasons(rows) {
    const root = document.getElementById("ov-reasons");
    const body = el("tbody");
    for (const r of rows) {
      body.append(el("tr", {}, num(r.count, r.url, { "data-reason": r.key }),
        el("td", { class: "reason" }, link(r.url, r.key)),
        el("td", { text: r.workflows.map((w) => `${w.name} (${w.count})`).join(", ") })));
    }
    if (!rows.length) body.append(el("tr", {}, el("td", { colspan: 3, class: "empty", text: "No failure in this range." })));
    root.replaceChildren(el("table", { class: "data", id: "ov-reason-table" },
      el("thead", {}, el("tr", {}, el("th", { class: "num", text: "Executions" }), el("th", { text: "Reason" }), el("th", { text: "Workflows" }))), body));
  }

  function render() {
    const d = state.data;
    const focused = document.activeElement && document.activeElement.id; // kept across a refresh
    state.kept = new Set();
    const w = d.window;
    document.getElementById("ov-window").textContent =
      `${stamp(w.start, true)} – ${stamp(w.end, true)} ${zone()}, intervals of ${duration(w.step)}.`;
    renderWorkflows(d.workflows);
    renderTasks(d.tasks);
    renderWorkers(d.tasks.filter((t) => t.workers.length || t.noPoller));
    renderEngine(d.engine);
    renderReasons(d.reasons);
    dropStale(state.kept);
    if (focused && document.activeElement?.id !== focused) document.getElementById(focused)?.focus({ preventScroll: true });
    document.getElementById("ov-updated").textContent = `updated ${stamp(d.now, false)} ${zone()}`;
  }

  // --- data --------------------------------------------------------------------------------
  async function load() {
    let resp;
    try {
      resp = await fetch(config.dataUrl + location.search, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    } catch (err) { // the server restarting, the network gone: try again at the next refresh
      document.getElementById("ov-updated").textContent = "could not refresh (no answer)";
      return;
    }
    if (!resp.ok) {
      document.getElementById("ov-updated").textContent = `could not refresh (HTTP ${resp.status})`;
      return;
    }
    state.data = await resp.json();
    state.loads = (state.loads || 0) + 1;
    render();
  }
  function schedule() {
    clearInterval(state.timer);
    state.timer = live.checked ? setInterval(() => { if (!document.hidden) load(); }, config.refreshSeconds * 1000) : null;
  }

  // --- controls ------------------------------------------------------------------------------
  const custom = document.getElementById("ov-custom");
  const fromInput = document.getElementById("ov-from");
  const toInput = document.getElementById("ov-to");
  const toInputValue = (ms) => { const [y, mo, d, h, mi, s] = parts(ms); return `${y}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}`; };
  function fromInputValue(text) {
    const m = /^(\d+)-(\d+)-(\d+)T(\d+):(\d+)(?::(\d+))?/.exec(text || "");
    if (!m) return null;
    const a = m.slice(1).map((x) => Number(x || 0));
    return utc() ? Date.UTC(a[0], a[1] - 1, a[2], a[3], a[4], a[5]) : new Date(a[0], a[1] - 1, a[2], a[3], a[4], a[5]).getTime();
  }
  function fillCustom() {
    fromInput.value = toInputValue(Number(form.elements.from.value));
    toInput.value = toInputValue(Number(form.elements.to.value));
  }
  form.addEventListener("change", (ev) => {
    if (ev.target.name === "range") custom.hidden = ev.target.value !== "custom";
  });
  form.addEventListener("submit", () => {
    const custom = form.elements.range.value === "custom";
    form.elements.from.disabled = form.elements.to.disabled = !custom;
    if (custom) {
      form.elements.from.value = fromInputValue(fromInput.value) ?? form.elements.from.value;
      form.elements.to.value = fromInputValue(toInput.value) ?? form.elements.to.value;
    }
  });
  tzSelect.addEventListener("change", () => {
    if (window.conductorTime) window.conductorTime.set(tzSelect.value);  // redraws on its event
  });
  document.addEventListener("conductor:timezone", (ev) => {
    tzSelect.value = ev.detail.zone;
    fillCustom();
    if (state.data) render();
  });
  live.addEventListener("change", schedule);
  window.addEventListener("resize", () => Object.values(state.charts).forEach((c) => c.resize()));

  fillCustom();
  load().then(schedule);
})();
